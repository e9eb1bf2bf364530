//! The device timeline (what each device did when) and its Perfetto trace, against runs
//! worked out by hand.

use orrery::sim::timeline::SpanKind;
use orrery::sim::{SimConfig, simulate};
use orrery::spec::{Spec, load_str};

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn cfg() -> SimConfig {
    SimConfig {
        timeline: true,
        ..Default::default()
    }
}

#[test]
fn tasks_steps_and_failures_land_on_the_right_devices() {
    // One DGX H100 (n0) and a second (n1, head). Two 1-GPU tasks of 10 s on n0; a training
    // job on all 8 GPUs of n1 with 3 steps of compute + allreduce; n0 crashes at 5 s, so the
    // tasks' spans end there and n0's devices are failed from 5 s to the end of the run.
    let s = spec(
        "cluster c {\n  node dgx_h100 x 2\n  head n1\n}\nworkload w {\n  tasks t x 2 {\n    resources { GPU: 1 }\n    duration 10 s\n    retries 0\n    strategy node_affinity(n0)\n  }\n  placement_group pg strategy STRICT_PACK {\n    bundle { GPU: 8 }\n  }\n  training job on pg steps 3 {\n    compute 100 TFLOP per device bf16\n    allreduce 1 GB algo ring\n  }\n}\nfailures {\n  at 5 s kill node n0\n}\n",
    );
    let r = simulate(&s, &cfg());
    let t = &r.timeline;
    assert_eq!(t.devices.len(), 16);
    assert_eq!(t.devices[0], "n0.d0");
    assert_eq!(t.devices[9], "n1.d1");
    // n0.d0 ran a task from 0 to the crash at 5 s, then failed until the end.
    let d0 = t.of_device(0);
    assert_eq!(d0[0].0, SpanKind::Compute);
    assert_eq!((d0[0].1, d0[0].2), (0.0, 5.0), "{d0:?}");
    assert_eq!(d0[0].3, "w.t");
    let failed: Vec<_> = d0.iter().filter(|s| s.0 == SpanKind::Failed).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].1, 5.0);
    assert_eq!(failed[0].2, r.metrics.horizon);
    // n1's GPUs: 3 × (compute, communication), back to back, compute = 100 TFLOP / (989 × 0.75).
    let d8 = t.of_device(8);
    let kinds: Vec<_> = d8.iter().map(|s| s.0).collect();
    assert_eq!(
        kinds,
        [SpanKind::Compute, SpanKind::Communication].repeat(3),
        "{d8:?}"
    );
    let compute = 100e12 / (989e12 * 0.75);
    assert!((d8[0].2 - d8[0].1 - compute).abs() < 2e-9);
    for w in d8.windows(2) {
        assert!((w[0].2 - w[1].1).abs() < 1e-12, "gap in {d8:?}");
    }
    // Every device of n1 has the same spans (one record per step covers all 8).
    assert_eq!(t.of_device(15).len(), 6);
    // Without asking, nothing is recorded.
    assert!(
        simulate(&s, &SimConfig::default())
            .timeline
            .spans
            .is_empty()
    );
}

#[test]
fn the_perfetto_trace_has_one_event_per_device_and_span() {
    let s = spec(
        "cluster c {\n  node dgx_h100 x 1\n}\nworkload w {\n  tasks t x 3 {\n    resources { GPU: 2 }\n    duration 1 s\n  }\n}\n",
    );
    let r = simulate(&s, &cfg());
    let json = orrery::trace::perfetto(&r.timeline, "header");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let spans: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
    // 3 tasks × 2 GPUs, each 1 s = 1e6 µs, on node 0, threads = device indices.
    assert_eq!(spans.len(), 6);
    assert!(
        spans
            .iter()
            .all(|e| e["dur"].as_f64() == Some(1e6) && e["pid"] == 0)
    );
    let mut tids: Vec<u64> = spans.iter().map(|e| e["tid"].as_u64().unwrap()).collect();
    tids.sort_unstable();
    tids.dedup();
    assert_eq!(tids, vec![0, 1, 2, 3, 4, 5]);
    assert!(
        ev.iter()
            .any(|e| e["ph"] == "M" && e["args"]["name"] == "n0.d7")
    );
    assert_eq!(v["metadata"]["events"], 6);
    assert_eq!(v["metadata"]["truncated"], false);
}

#[test]
fn the_trace_carries_args_counters_and_transfer_arrows() {
    // 24 producers then 5 consumers of their 1 GiB outputs on two 8-GPU nodes: tasks queue
    // (a scheduler counter), consumers fetch from the other node (send/fetch slices with an
    // arrow between them), and the fetches load the network (link-class counters).
    let s = spec(
        "cluster c {\n  node dgx_h100 x 2\n  fabric leaf_spine\n}\nworkload w {\n  tasks a x 24 {\n    resources { GPU: 1 }\n    duration 1 s\n    output 1 GiB\n  }\n  tasks b x 5 after a {\n    resources { GPU: 1 }\n    duration 1 s\n  }\n}\n",
    );
    let r = simulate(&s, &cfg());
    let json = orrery::trace::perfetto(&r.timeline, "header");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let x: Vec<_> = ev
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "compute")
        .collect();
    // Back-to-back tasks of a group on one device share a span: the producers' spans add up
    // to their 24 s.
    let a: f64 = x
        .iter()
        .filter(|e| e["args"]["work"] == "w.a")
        .map(|e| e["dur"].as_f64().unwrap())
        .sum();
    assert!((a - 24e6).abs() < 1e-3, "{a}");
    assert!(
        x.iter()
            .all(|e| e["args"]["devices"] == 1 && e["args"]["kind"] == "compute")
    );
    assert!(x.iter().any(|e| e["args"]["work"] == "w.b"));
    // Every fetch is a send on its source, a fetch on its consumer and an arrow between them.
    let fetches: Vec<_> = ev.iter().filter(|e| e["name"] == "fetch").collect();
    assert!(
        !fetches.is_empty(),
        "no cross-node fetch: {:?} {:?}",
        r.metrics.fetches,
        r.metrics.links
    );
    for f in &fetches {
        assert!(f["args"]["bytes"].as_f64().unwrap() > 0.0);
        assert!(f["args"]["task"].as_str().unwrap().starts_with("w.b["));
        assert!(f["args"]["transport"].is_string());
        assert_ne!(f["args"]["from"], f["args"]["to"]);
    }
    let starts: Vec<_> = ev.iter().filter(|e| e["ph"] == "s").collect();
    let ends: Vec<_> = ev.iter().filter(|e| e["ph"] == "f").collect();
    assert_eq!((starts.len(), ends.len()), (fetches.len(), fetches.len()));
    for (s, f) in starts.iter().zip(&ends) {
        assert_eq!(s["id"], f["id"]);
        assert_ne!(s["pid"], f["pid"], "an arrow goes from one node to another");
        assert_eq!(f["bp"], "e");
    }
    // Counters: the scheduler's queue went above zero, and the NIC class carried traffic.
    let counter = |name: &str| -> Vec<f64> {
        ev.iter()
            .filter(|e| e["ph"] == "C" && e["name"] == name)
            .map(|e| {
                e["args"]
                    .as_object()
                    .unwrap()
                    .values()
                    .next()
                    .unwrap()
                    .as_f64()
                    .unwrap()
            })
            .collect()
    };
    assert!(counter("scheduler queue").iter().any(|n| *n >= 8.0));
    let nic = counter("link utilisation: nic");
    assert!(nic.iter().any(|u| *u > 0.0) && nic.iter().all(|u| (0.0..=1.0).contains(u)));
    // run.json's link metrics: the NIC class carried the fetches' wire shares (a fetch's
    // flow carries its wire bandwidth-seconds, at most its bytes, over at most two NIC links).
    let fetched: f64 = fetches
        .iter()
        .map(|f| f["args"]["bytes"].as_f64().unwrap())
        .sum();
    let m = &r.metrics.links["nic"];
    assert!(
        m.link_bytes > 0.0 && m.link_bytes <= 2.0 * fetched,
        "{} vs {fetched}",
        m.link_bytes
    );
    assert!(m.peak_utilization > 0.0 && m.peak_utilization <= 1.0);
}
