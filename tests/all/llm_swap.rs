//! Swap preemption of an LLM service (`preempt swap`) against a hand-worked schedule: which
//! sequence is preempted, how many KV blocks move each way, and the time the copies add
//! (blocks × block bytes / the device's PCIe bandwidth) inside the iterations that move them.

use orrery::compute::roofline;
use orrery::load_str;
use orrery::model::serving::{BatchShape, iteration_phases};
use orrery::scenario::Spec;
use orrery::sim::{SimConfig, simulate};
use std::collections::BTreeMap;

fn spec(fraction: f64) -> Spec {
    let src = format!(
        "cluster c {{\n  node dgx_h100 x 1\n  fabric single_switch\n}}\n\n\
         workload w {{\n  service chat {{\n    model llama3_8b\n    resources {{ GPU: 1 }}\n    arrival trace \"a.csv\"\n    prompt tokens fixed 32\n    output tokens fixed 40\n    engine max_seqs 2 kv_block 16 memory_fraction {fraction} preempt swap\n  }}\n}}\n"
    );
    let l = load_str("t.orr", &src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

/// Two requests of 32 prompt and 40 output tokens at t = 0 on a pool of exactly 6 blocks of
/// 16 tokens, by hand:
/// 1. both prefill (2 blocks each), then decode together; at 33 tokens each takes a third
///    block (the pool is full);
/// 2. at 49 tokens A (admitted first) needs a fourth: B, the most recently admitted, is
///    preempted — its 3 blocks copied to host memory in that iteration — and A decodes alone;
/// 3. B cannot come back while A holds 4–5 blocks (it needs 4 of the 6), so it waits until A's
///    40th token frees them; its 3 blocks (48 cached tokens) are copied back in the iteration
///    that resumes it, and it decodes alone to its 40th token.
#[test]
fn swap_preemption_moves_the_blocks_by_hand_and_pays_their_pcie_time() {
    let probe = spec(0.9);
    let llm = probe.workloads[0].services[0].llm.as_ref().unwrap();
    let f = llm.footprint();
    let h100 = &probe.accelerators["H100_SXM"];
    let mem = h100.memory.0 as f64;
    let bb = f.block_bytes(16);
    // A memory fraction that leaves exactly 6 blocks (half a block of slack).
    let fraction = (f.weights_bytes + f.reserve_bytes + 6.5 * bb) / mem;
    assert_eq!(f.kv_blocks(mem, fraction, 16), 6);
    let s = spec(fraction);
    let llm = s.workloads[0].services[0].llm.as_ref().unwrap();
    let pcie = h100
        .pcie
        .expect("H100 SXM states its PCIe link")
        .bandwidth()
        .0;
    let r = roofline(&s, "H100_SXM", "bf16").unwrap();
    // Each iteration's seconds, as the clock keeps them (whole ns): roofline + copies.
    let iter = |seqs: &[(u64, u64)], moved_blocks: u64| {
        let mut b = BatchShape::default();
        for &(n, c) in seqs {
            b.add(n, c, true);
        }
        let secs = orrery::compute::iteration_secs(
            &r,
            &r,
            &llm.engine,
            1,
            &iteration_phases(&llm.model, 1, &f, &b),
            &b,
            true,
        ) + moved_blocks as f64 * bb / pcie;
        (secs * 1e9).round() / 1e9
    };
    let mut t = iter(&[(32, 0), (32, 0)], 0);
    // Decodes together with 32..=47 tokens cached (generated 1..=16).
    for c in 32..48 {
        t += iter(&[(1, c), (1, c)], 0);
    }
    // A at 48 cached needs a fourth block: B swapped out (3 blocks), A decodes alone.
    t += iter(&[(1, 48)], 3);
    for c in 49..71 {
        t += iter(&[(1, c)], 0);
    }
    let a_done = t;
    // B resumes with 48 cached tokens (3 blocks copied back), decodes its 17th..40th tokens.
    t += iter(&[(1, 48)], 3);
    for c in 49..71 {
        t += iter(&[(1, c)], 0);
    }
    let b_done = t;

    let cfg = SimConfig {
        horizon: Some(60_000_000_000),
        traces: BTreeMap::from([("a.csv".to_string(), vec![0.0, 0.0].into())]),
        ..SimConfig::default()
    };
    let run = simulate(&s, &cfg);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
    let m = &run.metrics.llm_services[0];
    assert_eq!(m.kv_blocks, 6);
    assert_eq!((m.finished, m.preemptions), (2, 1));
    assert!(
        (m.e2e.max - b_done).abs() < 1e-9,
        "{} vs {b_done}",
        m.e2e.max
    );
    // The mean e2e is (A + B) / 2.
    let mean = (a_done + b_done) / 2.0;
    assert!((m.e2e.mean - mean).abs() < 1e-9, "{} vs {mean}", m.e2e.mean);
    // Without the copies the same schedule would end 6 blocks' PCIe time earlier.
    assert!(6.0 * bb / pcie > 1e-6);
}
