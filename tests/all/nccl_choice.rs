//! A training job's collectives run with the algorithm and protocol NCCL would pick for their
//! size (`network::collective::tuning`, NCCL 2.30.7 `src/graph/tuning.cc`), or the ones the
//! scenario fixes with `algo` / `proto`, and are priced with that protocol's latencies and
//! bandwidth. One DGX H100 node, 8 ranks: NCCL's per-GPU NVLink figure 370.8 GB/s.

use orrery::load_str;
use orrery::network::collective::{self as coll, Algorithm, Op, Options};
use orrery::network::{FlowNet, Graph};
use orrery::scenario::Spec;
use orrery::sim::{SimConfig, simulate};

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn job(node: &str, coll: &str) -> String {
    format!(
        "cluster c {{\n  node {node} x 1\n}}\nworkload w {{\n  placement_group pg strategy STRICT_PACK {{\n    \
         bundle {{ GPU: 8 }}\n  }}\n  training t on pg steps 4 {{\n    compute 1 TFLOP per device bf16\n    \
         {coll}\n  }}\n}}\n"
    )
}

/// (communication seconds per step, the collective's note, whether on the graph).
fn comm(src: &str) -> (f64, String, bool) {
    let s = spec(src);
    let r = simulate(&s, &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let t = &r.metrics.training[0];
    let m = r
        .network_models
        .iter()
        .find(|m| m.text.starts_with("collective"))
        .expect("a collective note");
    (
        t.communication_time / t.steps_done as f64,
        m.text.clone(),
        m.on_graph,
    )
}

fn close(a: f64, b: f64) -> bool {
    // The engine's clock is in nanoseconds.
    (a - b).abs() < 2e-9 * 4.0
}

#[test]
fn without_algo_a_large_allreduce_runs_nvls_and_a_small_one_ring_ll() {
    let gib = 1024f64.powi(3);
    let (big, note, on) = comm(&job("dgx_h100", "allreduce 1 GiB"));
    assert!(on && note.contains("nvls simple"), "{note}");
    // The same as the collective model's NVLS on an idle network.
    let s = spec(&job("dgx_h100", "allreduce 1 GiB"));
    let g = Graph::build(&s);
    let ranks: Vec<_> = (0..8).map(|d| (0, d)).collect();
    let want = coll::simulate(
        &g,
        &FlowNet::new(g.capacity.clone()),
        Op::AllReduce,
        Algorithm::InSwitch,
        &ranks,
        gib,
        &Options::default(),
    )
    .unwrap()
    .secs;
    assert!(close(big, want), "{big} vs {want}");
    // 1 KiB: ring LL, 6.6 µs + 14 × 0.6 µs + 2·7/8 KiB at LL's 141 GB/s.
    let (small, note, _) = comm(&job("dgx_h100", "allreduce 1 KiB"));
    assert!(note.contains("ring ll"), "{note}");
    let want = 6.6e-6 + 14.0 * 0.6e-6 + 2.0 * 7.0 / 8.0 * 1024.0 / 141e9;
    assert!(close(small, want), "{small} vs {want}");
}

#[test]
fn algo_and_proto_fix_what_nccl_would_pick() {
    let n = 64.0 * 1024.0 * 1024.0;
    // Ring Simple: 8.4 µs + 14 × 3.4 µs + 2·7/8·n / 370.8 GB/s.
    let (simple, note, _) = comm(&job("dgx_h100", "allreduce 64 MiB algo ring proto simple"));
    assert!(note.contains("ring simple"), "{note}");
    let want = 8.4e-6 + 14.0 * 3.4e-6 + 2.0 * 7.0 / 8.0 * n / 370.8e9;
    assert!(close(simple, want), "{simple} vs {want}");
    // Ring LL128: 14 µs + 14 × 1.9 µs, 0.92 of the bandwidth.
    let (ll128, note, _) = comm(&job("dgx_h100", "allreduce 64 MiB algo ring proto ll128"));
    assert!(note.contains("ring ll128"), "{note}");
    let want = 14e-6 + 14.0 * 1.9e-6 + 2.0 * 7.0 / 8.0 * n / (370.8e9 * 0.92);
    assert!(close(ll128, want), "{ll128} vs {want}");
    // `algo ring` alone: NCCL's protocol for the ring at 64 MiB is Simple.
    let (ring, note, _) = comm(&job("dgx_h100", "allreduce 64 MiB algo ring"));
    assert!(note.contains("ring simple"), "{note}");
    assert!(close(ring, simple));
}

#[test]
fn nvls_with_ll_is_an_error_and_proto_without_nccl_is_priced_in_closed_form() {
    let l = load_str(
        "t.orr",
        &job("dgx_h100", "allreduce 1 GiB algo nvls proto ll"),
    );
    assert!(l.has_errors());
    let e = l.render(false);
    assert!(e.contains("NCCL runs NVLS with Simple only"), "{e}");
    // Hierarchical and all-to-all run Simple too: another protocol is a located error.
    for (stmt, what) in [
        ("allreduce 1 GiB proto ll hierarchical", "`hierarchical`"),
        ("alltoall 1 GiB proto ll128", "`alltoall`"),
    ] {
        let l = load_str("t.orr", &job("dgx_h100", stmt));
        let e = l.render(false);
        assert!(
            l.has_errors() && e.contains(what) && e.contains("t.orr:10:5"),
            "{e}"
        );
    }
    let l = load_str("t.orr", &job("dgx_h100", "allreduce 1 GiB proto ll256"));
    assert!(l.has_errors());
    // AMD devices have no NCCL model: ring Simple by default, a protocol is closed form.
    let (_, note, on) = comm(&job("mi300x_8", "allreduce 1 GiB"));
    assert!(on && note.contains("ring simple"), "{note}");
    let (_, note, on) = comm(&job("mi300x_8", "allreduce 1 GiB proto ll"));
    assert!(!on && note.contains("no NCCL tuning model"), "{note}");
}
