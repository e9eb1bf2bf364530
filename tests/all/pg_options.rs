//! Ray's placement-group options (issue 17 item 3), each rule worked by hand: per-bundle
//! label selectors (`bundle_label_selector`), fallback options (`fallback_strategy`), the alpha
//! `topology_strategy` (STRICT_PACK into one domain of a label, the node-level strategy under
//! `ray.io/node-id`), re-placement inside the domain after a node failure, the infeasible
//! cases, the validation Ray does, and what `explain` says.

use orrery::scenario::workload::{LabelConstraint, parse_label_op};
use orrery::sim::{SimConfig, simulate};
use std::collections::BTreeMap;
use std::process::Command;

/// An 8-GPU node type labelled `pool: P`.
fn gpu8(name: &str, pool: &str) -> String {
    format!(
        "node {name} {{\n  cpu sockets 2, cores 64\n  memory 1 TiB\n  device H100_SXM x 8 link switch\n  labels {{ \"pool\": \"{pool}\" }}\n}}\n"
    )
}

/// A workload `w` with placement group `pg` (head `head`, block `body`) and a long training
/// job on it, so the group lives through the run.
fn workload(head: &str, body: &str) -> String {
    format!(
        "workload w {{\n  placement_group pg {head} {{\n{body}  }}\n  training t on pg steps 200 {{\n    compute 1 PFLOP per device bf16\n  }}\n}}\n"
    )
}

fn spec(src: &str) -> orrery::scenario::Spec {
    let l = orrery::load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

/// The group's state, nodes at creation, nodes at the end, option and domain.
struct Pg {
    state: String,
    created: Vec<String>,
    end: Vec<String>,
    option: Option<usize>,
    domain: Option<String>,
    rescheduled: u64,
}

fn run(src: &str) -> Pg {
    let s = spec(src);
    let r = simulate(
        &s,
        &SimConfig {
            seed: 1,
            ..Default::default()
        },
    );
    let g = &r.metrics.placement_groups[0];
    Pg {
        state: g.state.clone(),
        created: g.nodes_at_creation.clone(),
        end: g.nodes.clone(),
        option: g.option,
        domain: g.domain.clone(),
        rescheduled: r.metrics.failures.bundles_rescheduled,
    }
}

fn orrery(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Writes `src` to a fresh folder and returns the file's path.
fn file(name: &str, src: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-pgopt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("s.orr");
    std::fs::write(&f, src).unwrap();
    f
}

#[test]
fn selector_values_as_ray_writes_them_and_exists() {
    let labels: BTreeMap<String, String> = [("pool".to_string(), "a".to_string())].into();
    let m = |key: &str, v: &str| {
        LabelConstraint {
            key: key.into(),
            op: parse_label_op(v).unwrap(),
        }
        .matches(&labels)
    };
    assert!(m("pool", "a") && !m("pool", "b"));
    assert!(m("pool", "!b") && !m("pool", "!a"));
    assert!(m("pool", "in(b, a)") && !m("pool", "in(b, c)"));
    assert!(m("pool", "!in(b, c)") && !m("pool", "!in(a)"));
    // A key the node lacks: `!v` and `!in` pass (Ray's NOT_IN on a missing key), `v` fails.
    assert!(m("zone", "!a") && m("zone", "!in(a)") && !m("zone", "a"));
    assert!(m("pool", "exists()") && !m("zone", "exists()"));
    assert!(m("zone", "!exists()") && !m("pool", "!exists()"));
    assert!(parse_label_op("exists(a)").is_none() && parse_label_op("in()").is_none());
}

#[test]
fn each_bundle_goes_where_its_own_selector_allows() {
    // Two 8-GPU nodes, n0 in pool a, n1 in pool b. Without selectors PACK puts both 4-GPU
    // bundles on the first (emptiest, lowest id) node; with them, bundle 1 (pool b) must go
    // to n1 and bundle 2 (pool a) to n0.
    let base = format!(
        "{}{}cluster c {{\n  node ga x 1\n  node gb x 1\n}}\n",
        gpu8("ga", "a"),
        gpu8("gb", "b")
    );
    let plain = run(&(base.clone() + &workload("strategy PACK", "    bundle { GPU: 4 } x 2\n")));
    assert_eq!(plain.created, ["n0", "n0"]);
    let body = "    bundle { GPU: 4 } label_selector { \"pool\": \"b\" }\n    bundle { GPU: 4 } label_selector { \"pool\": \"!b\" }\n";
    let g = run(&(base.clone() + &workload("strategy PACK", body)));
    assert_eq!(g.state, "created");
    assert_eq!(g.created, ["n1", "n0"]);
    assert_eq!(g.option, Some(0));
    // STRICT_PACK: one node must pass every bundle's selector; none does, so it can never be
    // placed, and `check` says which rule.
    let strict = base + &workload("strategy STRICT_PACK", body);
    let f = file("strict", &strict);
    let (code, _, err) = orrery(&["check", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("can never be placed"), "{err}");
}

#[test]
fn a_selector_no_node_passes_is_an_error_at_that_bundle() {
    let src = format!(
        "{}cluster c {{\n  node ga x 2\n}}\n{}",
        gpu8("ga", "a"),
        workload(
            "strategy PACK",
            "    bundle { GPU: 8 }\n    bundle { GPU: 8 } label_selector { \"pool\": \"in(b, c)\" }\n"
        )
    );
    let f = file("nosel", &src);
    let (code, _, err) = orrery(&["check", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "bundle 2 of 2 has the label selector pool in (b, c), which no eligible node passes"
        ),
        "{err}"
    );
    // Located at the second bundle's map (line 13 of the file: 6 node lines, 3 cluster lines,
    // then the workload's head, the group's head and the first bundle).
    assert!(err.contains("s.orr:13:12"), "{err}");
}

#[test]
fn fallbacks_are_tried_in_order_and_the_first_that_fits_is_taken() {
    let base = format!("{}cluster c {{\n  node ga x 2\n}}\n", gpu8("ga", "a"));
    // The group's own bundle asks 16 GPUs on one node: infeasible on 8-GPU nodes. Fallback 1
    // selects a pool no node is in: infeasible too. Fallback 2 (two 8-GPU bundles) fits.
    let body = "    bundle { GPU: 16 }\n    fallback {\n      bundle { GPU: 8 } x 2 label_selector { \"pool\": \"z\" }\n    }\n    fallback {\n      bundle { GPU: 8 } x 2\n    }\n";
    let g = run(&(base.clone() + &workload("strategy SPREAD", body)));
    assert_eq!(g.state, "created");
    assert_eq!(g.option, Some(2));
    assert_eq!(g.created, ["n0", "n1"]);
    // The own bundles first: when they fit, no fallback is used.
    let body = "    bundle { GPU: 8 }\n    fallback {\n      bundle { GPU: 4 } x 2\n    }\n";
    assert_eq!(
        run(&(base.clone() + &workload("strategy PACK", body))).option,
        Some(0)
    );
    // None fits: infeasible, and `check` says so, naming the fallbacks.
    let body = "    bundle { GPU: 16 }\n    fallback {\n      bundle { GPU: 8 } x 3 label_selector { \"pool\": \"a\" }\n    }\n";
    let f = file("nofb", &(base + &workload("strategy STRICT_SPREAD", body)));
    let (code, _, err) = orrery(&["check", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("none of its 1 fallback option can be placed either"),
        "{err}"
    );
}

/// Racks `r0` (1 node), `r1` and `r2` (2 nodes each) of 8-GPU nodes.
fn racks() -> String {
    format!(
        "{}cluster c {{\n  rack r0 {{\n    node ga x 1\n  }}\n  rack r[1..2] {{\n    node ga x 2\n  }}\n}}\n",
        gpu8("ga", "a")
    )
}

#[test]
fn topology_strategy_packs_the_group_into_the_first_domain_that_holds_it() {
    // Two 8-GPU bundles, one per node (STRICT_SPREAD under ray.io/node-id), all in one rack:
    // r0 has one node, so it cannot; r1 (the next value) can: r1.n0 and r1.n1.
    let head =
        "topology_strategy { \"orrery.io/rack\": STRICT_PACK, \"ray.io/node-id\": STRICT_SPREAD }";
    let g = run(&(racks() + &workload(head, "    bundle { GPU: 8 } x 2\n")));
    assert_eq!(g.state, "created");
    assert_eq!(g.created, ["r1.n0", "r1.n1"]);
    assert_eq!(g.domain.as_deref(), Some("orrery.io/rack=r1"));
    // Plain STRICT_SPREAD spans racks: the emptiest nodes by id, r0.n0 then r1.n0.
    let g = run(&(racks() + &workload("strategy STRICT_SPREAD", "    bundle { GPU: 8 } x 2\n")));
    assert_eq!(g.created, ["r0.n0", "r1.n0"]);
    assert_eq!(g.domain, None);
    // The node-level strategy defaults to PACK: one 8-GPU bundle and two 4-GPU bundles fit
    // r0's single node? No: 16 GPUs. r1: bundle 1 (8 GPUs, sorted first) on r1.n0, the two
    // 4-GPU bundles packed onto r1.n1.
    let head = "topology_strategy { \"orrery.io/rack\": STRICT_PACK }";
    let g = run(&(racks() + &workload(head, "    bundle { GPU: 4 } x 2\n    bundle { GPU: 8 }\n")));
    assert_eq!(g.created, ["r1.n1", "r1.n1", "r1.n0"]);
}

#[test]
fn a_group_no_domain_can_hold_is_infeasible_though_the_cluster_could() {
    // Three bundles, one per node, in one rack: no rack has three nodes (the cluster has five).
    let head =
        "topology_strategy { \"orrery.io/rack\": STRICT_PACK, \"ray.io/node-id\": STRICT_SPREAD }";
    let f = file(
        "nodom",
        &(racks() + &workload(head, "    bundle { GPU: 8 } x 3\n")),
    );
    let (code, _, err) = orrery(&["check", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("packs all 3 bundles into one domain of `orrery.io/rack` (STRICT_SPREAD inside it), and no domain can hold them: r0 (1 node), r1 (2 nodes), r2 (2 nodes)"),
        "{err}"
    );
    // A label no node has: infeasible, said plainly.
    let head = "topology_strategy { \"rack_id\": STRICT_PACK }";
    let f = file(
        "nolabel",
        &(racks() + &workload(head, "    bundle { GPU: 8 }\n")),
    );
    let (code, _, err) = orrery(&["check", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no eligible node has that label"), "{err}");
}

#[test]
fn gpu_domain_labels_follow_the_scale_up_topology() {
    // An NVSwitch node is its own NVLink domain; a PCIe-only node has none; TPU slice hosts
    // share their slice's.
    let src = "node nv {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  device H100_SXM x 8 link switch\n}\nnode pcie {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  device L4 x 2 link none\n}\ncluster c {\n  rack r0 {\n    node nv x 1\n    node pcie x 1 name p\n  }\n  slice s[0..1] node tpu_v5p_host topology 2x2x4\n}\n";
    let st = orrery::placement::ClusterState::from_spec(&spec(src));
    let label = |n: &str, k: &str| {
        let id = st.nodes.iter().position(|x| x.name() == n).unwrap();
        st.nodes[id].labels().get(k).cloned()
    };
    assert_eq!(
        label("r0.n0", "ray.io/gpu-domain").as_deref(),
        Some("r0.n0")
    );
    assert_eq!(label("r0.p0", "ray.io/gpu-domain"), None);
    assert_eq!(label("r0.p0", "orrery.io/rack").as_deref(), Some("r0"));
    assert_eq!(label("s1.h3", "ray.io/gpu-domain").as_deref(), Some("s1"));
}

/// Racks r0 and r1 of `per` nodes each, a two-bundle group one per node (inside one rack when
/// `topology`), and `at 10 s kill node KILL` (never r0.n0: the first node is Ray's head, whose
/// loss takes the whole cluster).
fn drill(per: usize, topology: bool, kill: &str) -> Pg {
    let head = if topology {
        "topology_strategy { \"orrery.io/rack\": STRICT_PACK, \"ray.io/node-id\": STRICT_SPREAD }"
    } else {
        "strategy STRICT_SPREAD"
    };
    let src = format!(
        "{}cluster c {{\n  rack r[0..1] {{\n    node ga x {per}\n  }}\n}}\n{}failures f {{\n  at 10 s kill node {kill}\n}}\n",
        gpu8("ga", "a"),
        workload(head, "    bundle { GPU: 8 } x 2\n")
    );
    run(&src)
}

#[test]
fn after_a_failure_lost_bundles_stay_in_the_groups_domain() {
    // Three nodes a rack: the group takes r0.n0 and r0.n1; r0.n1 dies; its bundle goes to
    // r0.n2, the one node of r0 holding no bundle of the group.
    let g = drill(3, true, "r0.n1");
    assert_eq!(g.created, ["r0.n0", "r0.n1"]);
    assert_eq!(g.end, ["r0.n0", "r0.n2"]);
    assert_eq!(g.rescheduled, 1);
    // Two a rack: r0 has no room left, so the bundle waits, though r1 is empty.
    let g = drill(2, true, "r0.n1");
    assert_eq!(g.created, ["r0.n0", "r0.n1"]);
    assert_eq!(g.rescheduled, 0);
    assert_eq!(g.end, ["r0.n0", "r0.n1"]);
    // Without the topology strategy, the same nodes at first (the emptiest, lowest ids), but
    // the lost bundle moves to any node holding none of the group's bundles: r1.n0, in the
    // other rack.
    let g = drill(2, false, "r0.n1");
    assert_eq!(g.created, ["r0.n0", "r0.n1"]);
    assert_eq!(g.end, ["r0.n0", "r1.n0"]);
    assert_eq!(g.rescheduled, 1);
}

#[test]
fn ray_validation_of_the_topology_strategy() {
    let cases = [
        (
            "strategy PACK topology_strategy { \"orrery.io/rack\": STRICT_PACK }",
            "`strategy` and `topology_strategy` cannot both be specified",
        ),
        (
            "topology_strategy { \"orrery.io/rack\": PACK }",
            "only STRICT_PACK is supported for topology label `orrery.io/rack`",
        ),
        (
            "topology_strategy { \"orrery.io/rack\": STRICT_PACK, \"ray.io/gpu-domain\": STRICT_PACK }",
            "a topology strategy takes one topology label (besides `ray.io/node-id`)",
        ),
        (
            "topology_strategy { \"ray.io/node-id\": CLOSE }",
            "placement group strategy",
        ),
    ];
    for (i, (head, want)) in cases.iter().enumerate() {
        let f = file(
            &format!("val{i}"),
            &(racks() + &workload(head, "    bundle { GPU: 8 }\n")),
        );
        let (code, _, err) = orrery(&["check", f.to_str().unwrap()]);
        assert_eq!(code, 2, "{head}: {err}");
        assert!(err.contains(want), "{head}: {err}");
    }
}

#[test]
fn explain_says_which_option_domain_and_selector_decided() {
    let head =
        "topology_strategy { \"orrery.io/rack\": STRICT_PACK, \"ray.io/node-id\": STRICT_SPREAD }";
    let body = "    bundle { GPU: 8 } x 3\n    fallback {\n      bundle { GPU: 8 } x 2 label_selector { \"pool\": \"a\" }\n    }\n";
    let f = file("explain", &(racks() + &workload(head, body)));
    let (code, out, err) = orrery(&["explain", f.to_str().unwrap(), "w.pg"]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "fallback strategy: the group's own bundles are tried first",
        "topology strategy: no domain of orrery.io/rack could ever hold the group: infeasible",
        "fallback strategy: option 1 is tried",
        "topology strategy: the group goes into orrery.io/rack = r1",
        "fallback strategy: option 1 is placed",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    // Nodes outside the chosen domain are listed with the reason.
    assert!(out.contains("r0.n0"), "{out}");
}

/// Two 8-GPU nodes, n0 in pool a and n1 in pool b.
fn two_pools() -> String {
    format!(
        "{}{}cluster c {{\n  node ga x 1\n  node gb x 1\n}}\n",
        gpu8("ga", "a"),
        gpu8("gb", "b")
    )
}

#[test]
fn per_bundle_selectors_that_lowest_id_ties_would_block_are_placed_as_ray_can() {
    // Bundle 1 passes both pools, bundle 2 only pool a. Both nodes score the same for bundle
    // 1 (Ray takes whichever its hash order gives first); the lowest id, n0, would leave
    // bundle 2 no node. A matching exists (1 -> n1, 2 -> n0): `check` accepts the group, and
    // the run places it so, under each strategy that gives bundles their own nodes.
    let body = "    bundle { GPU: 8 } label_selector { \"pool\": \"in(a, b)\" }\n    bundle { GPU: 8 } label_selector { \"pool\": \"a\" }\n";
    for strategy in ["STRICT_SPREAD", "SPREAD", "PACK"] {
        let src = two_pools() + &workload(&format!("strategy {strategy}"), body);
        let f = file(&format!("ties-{strategy}"), &src);
        let (code, _, err) = orrery(&["check", f.to_str().unwrap()]);
        assert_eq!(code, 0, "{strategy}: {err}");
        assert!(!err.contains("warning"), "{strategy}: {err}");
        let g = run(&src);
        assert_eq!(g.state, "created", "{strategy}");
        assert_eq!(g.created, ["n1", "n0"], "{strategy}");
        let (code, out, err) = orrery(&["explain", f.to_str().unwrap(), "w.pg"]);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains(
                "n0 scores the same and has a lower id, but would leave a later bundle no node"
            ),
            "{strategy}: {out}"
        );
    }
    // Without the selectors the lowest id is kept: n0 then n1.
    let plain = two_pools() + &workload("strategy STRICT_SPREAD", "    bundle { GPU: 8 } x 2\n");
    assert_eq!(run(&plain).created, ["n0", "n1"]);
}

#[test]
fn a_strict_spread_group_no_matching_can_place_is_infeasible_naming_the_bundles() {
    // Three bundles of pool a on two pool-a nodes (and one pool-b node): each bundle alone
    // fits, and the group has no more bundles than nodes, but no assignment gives each its own.
    let src = format!(
        "{}{}cluster c {{\n  node ga x 2\n  node gb x 1\n}}\n{}",
        gpu8("ga", "a"),
        gpu8("gb", "b"),
        workload(
            "strategy STRICT_SPREAD",
            "    bundle { GPU: 8 } x 3 label_selector { \"pool\": \"a\" }\n"
        )
    );
    let f = file("nomatch", &src);
    let (code, _, err) = orrery(&["check", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("STRICT_SPREAD needs a different node for each of its 3 bundles, and no assignment gives each its own: bundles 1-3 can go only to n0, n1 (2 nodes for 3 bundles, by their label selectors and resources)"),
        "{err}"
    );
    // Located at the first of those bundles: line 19 (two node types of six lines, the cluster
    // of four, the workload and the group heads).
    assert!(err.contains("s.orr:19:12"), "{err}");
}

#[test]
fn where_scores_decide_rays_greedy_stands_and_the_group_waits() {
    // n0 (pool a) has 8 GPUs, n1 (pool b) 4. Bundle 1 (any pool) scores best on n0 (half of
    // it left free, against none of n1), so Ray's greedy gives it n0, and bundle 2 (pool a
    // only) finds no node: Ray's SchedulingResult::Failed, retried; on an idle cluster it
    // stays so. An assignment exists (1 -> n1, 2 -> n0), so `check` does not refuse it: it
    // warns, and the run keeps the group pending.
    let gpu4 = "node gb {\n  cpu sockets 2, cores 64\n  memory 1 TiB\n  device H100_SXM x 4 link switch\n  labels { \"pool\": \"b\" }\n}\n";
    let src = format!(
        "{}{gpu4}cluster c {{\n  node ga x 1\n  node gb x 1\n}}\n{}",
        gpu8("ga", "a"),
        workload(
            "strategy STRICT_SPREAD",
            "    bundle { GPU: 4 } label_selector { \"pool\": \"in(a, b)\" }\n    bundle { GPU: 4 } label_selector { \"pool\": \"a\" }\n"
        )
    );
    let f = file("scores", &src);
    let (code, _, err) = orrery(&["check", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning") && err.contains("is not placed on the idle cluster by Ray's greedy strategy, though its bundles could all be placed"),
        "{err}"
    );
    let g = run(&src);
    assert_eq!(g.state, "pending");
    let (code, out, err) = orrery(&["explain", f.to_str().unwrap(), "w.pg"]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "outcome   pending",
        "STRICT_SPREAD: bundle 1 goes to n0 (score 0.5000)",
        "STRICT_SPREAD: bundle 2 fits no node that holds no bundle of the group yet",
        "an assignment of its bundles to nodes exists: it stays pending (Ray's SchedulingResult::Failed",
    ] {
        assert!(out.contains(want), "want {want:?} in\n{out}");
    }
}
