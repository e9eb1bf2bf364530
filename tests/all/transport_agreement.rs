//! One transport model (issue 40): `orrery transports`' table and the simulation price the same
//! transfer by the same plan, so a lone fetch on an idle cluster takes exactly the table's time
//! under every transport; a transport that cannot move data between two ends is unavailable in
//! both, and the work that needed it fails — nothing is priced by a fallback formula.

use orrery::experiment::transports::compare_workload;
use orrery::load_str;
use orrery::scenario::Spec;
use orrery::sim::{SimConfig, simulate};
use orrery::transport::compare;

/// Two DGX H100 nodes (`a0`, `a1`) on one leaf-spine fabric; a producer pinned to `a0` writes
/// `bytes` from its GPU, a consumer pinned to `to` reads it on its GPU. Each runs 1 s.
fn pair(bytes: &str, to: &str, transport: &str) -> Spec {
    let text = format!(
        "cluster c {{\n  node dgx_h100 x 2 name a\n  fabric leaf_spine\n}}\nworkload w {{\n{transport}  tasks make x 1 {{\n    resources {{ GPU: 1 }}\n    strategy node_affinity(a0)\n    duration 1 s\n    output {bytes}\n  }}\n  tasks use x 1 after make {{\n    resources {{ GPU: 1 }}\n    strategy node_affinity({to})\n    duration 1 s\n  }}\n}}\n"
    );
    let l = load_str("pair.orr", &text);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

/// For sizes on both sides of the object store's inline limit and of the staged transports'
/// chunking: the consumer's run time minus its 1 s is the table's time for the same pair
/// (a0.d0 → a1.d0) and size, to the simulation's 1 ns clock, for every transport; NVLink P2P
/// is unavailable in both.
#[test]
fn a_lone_fetch_takes_the_tables_time_under_every_transport() {
    for (text, bytes) in [("64 KiB", 65536.0), ("4 MiB", 4194304.0), ("256 MB", 256e6)] {
        let s = pair(text, "a1", "");
        let table = compare::compare(&s, &[bytes], &[((0, 0), (1, 0))]).unwrap();
        let w = compare_workload(&s, 1, &Default::default(), &Default::default());
        assert_eq!(w.rows.len(), table.pairs[0].cells.len());
        for row in &w.rows {
            let cell = table.pairs[0]
                .cells
                .iter()
                .find(|c| c.transport == row.transport)
                .unwrap();
            match cell.breakdown {
                Some(b) => {
                    assert!(row.available(), "{text} {}: {:?}", row.transport, row);
                    let fetch = row.run_mean[1].1 - 1.0;
                    assert!(
                        (fetch - b.secs).abs() < 2e-9,
                        "{text} {}: simulated {fetch} s, table {} s",
                        row.transport,
                        b.secs
                    );
                    // The producer's 1 s, then the consumer's fetch and its 1 s.
                    let makespan = row.makespan.unwrap();
                    assert!((makespan - (2.0 + fetch)).abs() < 2e-9, "{makespan}");
                }
                None => {
                    // The table says why; the run failed the consumer for the same reason.
                    let why = cell.error.as_deref().unwrap();
                    assert_eq!(row.transport, "nvlink_p2p");
                    assert_eq!((row.makespan, row.speedup), (None, None));
                    assert_eq!(row.transfers_unavailable, 1);
                    assert!(
                        row.unavailable.iter().any(|u| u.contains(why)),
                        "{why} not in {:?}",
                        row.unavailable
                    );
                }
            }
        }
    }
}

#[test]
fn a_task_whose_transport_cannot_reach_its_inputs_fails_and_says_why() {
    let r = simulate(
        &pair("256 MB", "a1", "  transport nvlink_p2p\n"),
        &SimConfig::default(),
    );
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let f = &r.metrics.failures;
    assert_eq!((f.tasks_failed, f.transfers_unavailable), (1, 1));
    assert_eq!(r.metrics.tasks[1].completed, 0);
    assert!(r.network_models.iter().any(|m| !m.on_graph
        && m.text
            == "object fetch w.use: transport nvlink_p2p: unavailable (nvlink_p2p: CUDA IPC / NVLink P2P reaches devices of one node only); the work that needed it fails"));
    // Its GPU is free again at once: the run ends when the producer and the failed attempt
    // did, 1 s in, not after a formula's transfer time.
    assert!(
        (r.metrics.makespan - 1.0).abs() < 1e-9,
        "{}",
        r.metrics.makespan
    );
    // On the producer's node the same transport moves it, and nothing fails.
    let r = simulate(
        &pair("256 MB", "a0", "  transport nvlink_p2p\n"),
        &SimConfig::default(),
    );
    let f = &r.metrics.failures;
    assert_eq!((f.tasks_failed, f.transfers_unavailable), (0, 0));
    assert_eq!(r.metrics.tasks[1].completed, 1);
}

#[test]
fn an_actor_call_whose_tensor_cannot_reach_its_receiver_fails() {
    let text = "cluster c {\n  node dgx_h100 x 2 name a\n  fabric leaf_spine\n}\nworkload w {\n  transport nvlink_p2p\n  actor s x 1 {\n    resources { GPU: 1 }\n    strategy node_affinity(a0)\n    calls 3\n    call_duration 1 s\n    tensor 1 GB to r\n  }\n  actor r x 1 {\n    resources { GPU: 1 }\n    strategy node_affinity(a1)\n    calls 1\n    call_duration 1 s\n  }\n}\n";
    let l = load_str("t.orr", text);
    assert!(!l.has_errors(), "{}", l.render(false));
    let r = simulate(&l.spec.unwrap(), &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let a = &r.metrics.actors[0];
    assert_eq!((a.calls_done, a.calls_failed, a.tensors), (0, 3, 0));
    assert_eq!(r.metrics.failures.transfers_unavailable, 3);
}

/// A service's request bodies are host memory: a device-only transport on its workload does
/// not carry them; Ray's object store does, priced by its own plan, and every request is
/// served.
#[test]
fn service_payloads_move_through_the_object_store_under_a_device_only_transport() {
    let text = "cluster c {\n  node dgx_h100 x 2 name a\n  fabric leaf_spine\n}\nworkload w {\n  transport nccl\n  service s {\n    replicas 2\n    resources { GPU: 8 }\n    service_time 10 ms\n    request 1 MiB\n    response 1 MiB\n    arrival poisson 20 /s\n  }\n}";
    let l = load_str("t.orr", text);
    assert!(!l.has_errors(), "{}", l.render(false));
    let config = SimConfig {
        horizon: Some(10_000_000_000),
        ..Default::default()
    };
    let r = simulate(&l.spec.unwrap(), &config);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.metrics.failures.transfers_unavailable, 0);
    assert_eq!(r.metrics.failures.requests_lost, 0);
    let sv = &r.metrics.services[0];
    assert!(sv.served > 100 && sv.arrived - sv.served < 5, "{sv:?}");
    assert!(
        r.network_models
            .iter()
            .any(|m| m.on_graph && m.text.contains("move through Ray's object store")),
        "{:?}",
        r.network_models
    );
}

#[test]
fn a_transfer_between_nodes_without_nics_names_its_ends_in_words() {
    // Two nodes with no NIC (as an import makes of a pod with no instance type): no route
    // between them, and the reason names the nodes and the places, not the graph's Debug text.
    let text = "node pod {\n  cpu sockets 1, cores 4, threads 8\n  memory 32 GiB\n}\ncluster c {\n  node pod x 2 name a\n  fabric leaf_spine\n}\nworkload w {\n  tasks make x 1 {\n    resources { CPU: 1 }\n    strategy node_affinity(a0)\n    duration 1 s\n    output 64 MiB\n  }\n  tasks use x 1 after make {\n    resources { CPU: 1 }\n    strategy node_affinity(a1)\n    duration 1 s\n  }\n}\n";
    let l = load_str("nonic.orr", text);
    assert!(!l.has_errors(), "{}", l.render(false));
    let r = simulate(&l.spec.unwrap(), &SimConfig::default());
    assert_eq!(r.metrics.failures.transfers_unavailable, 1);
    let why: Vec<&str> = r
        .network_models
        .iter()
        .filter(|m| m.text.contains("unavailable"))
        .map(|m| m.text.as_str())
        .collect();
    assert!(
        why.iter()
            .any(|t| t
                .contains("no route from a0's host memory (NUMA 0) to a1's host memory (NUMA 0)")),
        "{why:?}"
    );
    assert!(why.iter().all(|t| !t.contains("Root {")), "{why:?}");
}
