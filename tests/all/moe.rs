//! scenarios/moe_training.orr's claim: Mixtral 8x7B's expert all-to-alls across two nodes
//! cost what the 400G NICs give, inside one node what NVLink gives. The expert traffic is
//! isolated by training the same model with top-1 instead of top-2 routing on the same
//! placement: parameters, and so every other collective, are the same, and each all-to-all
//! carries half the bytes, so the exposed communication drops by exactly the all-to-alls'
//! half volume at the bottleneck bandwidth (their α cancels).

use orrery::load_str;
use orrery::sim::{SimConfig, simulate};

const ALPHA_NET: f64 = 14e-6;
const ALPHA_NVLINK: f64 = 3.4e-6;
const NIC: f64 = 50e9;
/// What a collective gets over an H100's NVLink: NCCL's 20.6 GB/s per link × 18 (the
/// catalog's `collective`; line rate 450 GB/s).
const NVLINK: f64 = 370.8e9;
/// All-to-alls per step: 2 per layer per pass (forward, backward, recomputed forward), 32
/// layers, one microbatch.
const CALLS: f64 = 2.0 * 3.0 * 32.0;
/// Bytes per GPU per all-to-all with top-2: 32,768 tokens x 4,096 x 2 experts x 2 B.
const BYTES: f64 = 32768.0 * 4096.0 * 2.0 * 2.0;

/// Exposed communication per step of the `packed` and `spread` jobs.
fn exposed(text: &str) -> (f64, f64) {
    let l = load_str("scenarios/moe_training.orr", text);
    assert!(!l.has_errors(), "{}", l.render(false));
    let r = simulate(l.spec.as_ref().unwrap(), &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(r.network_models.iter().all(|m| m.on_graph));
    let t = &r.metrics.training;
    let per = |i: usize| t[i].exposed_comm_time / t[i].steps_done as f64;
    assert_eq!(
        (t[0].workload.as_str(), t[1].workload.as_str()),
        ("packed", "spread")
    );
    (per(0), per(1))
}

/// A pairwise all-to-all over 8 ranks: 7 steps, each α and n/8 at β.
fn alltoall(bytes: f64, alpha: f64, beta: f64) -> f64 {
    7.0 * alpha + 7.0 / 8.0 * bytes / beta
}

#[test]
fn expert_all_to_alls_cost_the_nics_across_nodes_and_nvlink_inside() {
    let text = std::fs::read_to_string("scenarios/moe_training.orr").unwrap();
    let (packed, spread) = exposed(&text);
    let top1 = format!(
        "model mixtral_top1 from mixtral_8x7b {{\n  moe experts 8 top_k 1\n}}\n{}",
        text.replace("model mixtral_8x7b", "model mixtral_top1")
    );
    let (packed1, spread1) = exposed(&top1);
    let half = BYTES / 2.0;
    let across = CALLS * 7.0 / 8.0 * half / NIC;
    let inside = CALLS * 7.0 / 8.0 * half / NVLINK;
    let rel = |a: f64, b: f64| (a - b).abs() / b;
    assert!(
        rel(spread - spread1, across) < 1e-6,
        "{} vs {across}",
        spread - spread1
    );
    assert!(
        rel(packed - packed1, inside) < 1e-6,
        "{} vs {inside}",
        packed - packed1
    );
    // The all-to-alls in full (α included) make up the difference between the placements,
    // but for the data-parallel rings over four nodes instead of two (the scenario says).
    let ep = CALLS * (alltoall(BYTES, ALPHA_NET, NIC) - alltoall(BYTES, ALPHA_NVLINK, NVLINK));
    let rest = (spread - packed) - ep;
    assert!(
        rest > 0.0 && rest < 0.05,
        "spread - packed = {} s, all-to-alls {ep} s",
        spread - packed
    );
}
