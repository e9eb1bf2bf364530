//! Tenant transport rules on collectives (issue 41): a tenant that may not use RDMA runs its
//! training jobs' inter-node collective hops over NCCL's socket transport, at
//! `SOCKET_SHARE` of the NICs' line rate, and the run says so; a tenant that allows neither
//! `nccl` nor `tcp` cannot declare a job with collectives.

use orrery::load_str;
use orrery::network::collective::SOCKET_SHARE;
use orrery::sim::{SimConfig, simulate};

/// One training job of 16 H100s on two DGX nodes (one bundle of 8 on each), all-reducing
/// `msg` per step, under tenant `t` with `rules`.
fn scenario(rules: &str, msg: &str) -> String {
    format!(
        "cluster c {{\n  rack r0 {{\n    node dgx_h100 x 2\n  }}\n}}\ntenant t {{\n{rules}}}\n\
         workload w tenant t {{\n  placement_group pg strategy STRICT_SPREAD {{\n    \
         bundle {{ GPU: 8 }} x 2\n  }}\n  training tr on pg steps 3 {{\n    allreduce {msg} algo ring proto simple\n  }}\n}}\n"
    )
}

fn run(rules: &str, msg: &str) -> (f64, Vec<String>, Vec<String>) {
    let l = load_str("t.orr", &scenario(rules, msg));
    assert!(!l.has_errors(), "{}", l.render(false));
    let r = simulate(
        &l.spec.unwrap(),
        &SimConfig {
            record: true,
            ..Default::default()
        },
    );
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let t = &r.metrics.training[0];
    assert_eq!((t.steps_done, t.nodes), (3, 2));
    (
        t.communication_time,
        r.network_models.iter().map(|m| m.to_string()).collect(),
        r.transfers.iter().map(|x| x.transport.clone()).collect(),
    )
}

/// A 16-rank ring all-reduce of 4 GiB across two DGX H100s is bound by the NICs (8 × 400G
/// per node against 8 × 18 NVLinks): over sockets its bandwidth term takes 1 / SOCKET_SHARE
/// as long, its latency the same; the note names the tenant and the rule, and the replay
/// record says `tcp`, never `nccl`.
#[test]
fn a_no_rdma_tenants_collectives_cross_nodes_over_sockets() {
    let (open, open_notes, open_moves) = run("  priority 0\n", "4 GiB");
    let (locked, notes, moves) = run("  no_rdma\n", "4 GiB");
    let ratio = locked / open;
    assert!(
        (ratio - 1.0 / SOCKET_SHARE).abs() < 0.02 / SOCKET_SHARE,
        "{locked} s over sockets vs {open} s over verbs: {ratio}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("tenant `t` (`no_rdma`)") && n.contains("NCCL's socket transport")),
        "{notes:#?}"
    );
    assert!(
        !open_notes.iter().any(|n| n.contains("socket")),
        "{open_notes:#?}"
    );
    assert!(
        !moves.is_empty() && moves.iter().all(|m| m == "tcp"),
        "{moves:?}"
    );
    assert!(open_moves.iter().all(|m| m == "nccl"), "{open_moves:?}");
}

/// An allow-list with `tcp` but not `nccl` runs sockets too; one with `nccl` runs verbs.
#[test]
fn an_allow_list_picks_the_collectives_transport() {
    let (verbs, _, _) = run("  transports [object_store, nccl]\n", "4 GiB");
    let (open, _, _) = run("  priority 0\n", "4 GiB");
    let (sockets, notes, _) = run("  transports [object_store, tcp]\n", "4 GiB");
    assert_eq!(verbs, open);
    assert!(sockets > 2.0 * open, "{sockets} vs {open}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("`transports` without `nccl`")),
        "{notes:#?}"
    );
}

/// A job on one node uses no NIC: the rules change nothing and say nothing.
#[test]
fn a_job_inside_one_node_is_not_affected() {
    let one = |rules: &str| {
        let text = scenario(rules, "1 GiB")
            .replace("STRICT_SPREAD", "STRICT_PACK")
            .replace("bundle { GPU: 8 } x 2", "bundle { GPU: 4 } x 2");
        let l = load_str("t.orr", &text);
        assert!(!l.has_errors(), "{}", l.render(false));
        let r = simulate(&l.spec.unwrap(), &SimConfig::default());
        (
            r.metrics.training[0].communication_time,
            r.network_models
                .iter()
                .any(|m| m.to_string().contains("socket")),
        )
    };
    let (open, _) = one("  priority 0\n");
    let (locked, noted) = one("  no_rdma\n");
    assert_eq!(open, locked);
    assert!(!noted);
}

/// Neither `nccl` nor `tcp` allowed: the training statement is an error, pointing at the
/// tenant's rule.
#[test]
fn a_tenant_that_allows_neither_nccl_nor_tcp_cannot_run_collectives() {
    let l = load_str(
        "t.orr",
        &scenario("  no_rdma\n  transports [object_store, gloo]\n", "1 GiB"),
    );
    assert!(l.has_errors());
    let out = l.render(false);
    assert!(
        out.contains(
            "t.orr:14:3: training `tr` runs collectives with NCCL: tenant `t` has `no_rdma`"
        ) && out.contains("`tcp` (NCCL's socket transport) is not among its transports"),
        "{out}"
    );
    assert!(out.contains("the tenant's rule"), "{out}");
}
