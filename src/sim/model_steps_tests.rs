//! Tests of `model_steps`: rank groups, overlapped collectives' exposed time, repeats.

use super::*;
use crate::compute::kernels::KernelRates;
use crate::model::{Recompute, Schedule, Sharding};

fn layout(tp: u32, dp: u32, pp: u32) -> Layout {
    Layout {
        tp,
        sp: false,
        pp,
        schedule: Schedule::OneFOneB,
        dp,
        sharding: Sharding::None,
        ep: 1,
        recompute: Recompute::None,
        attention: crate::model::Attention::Unfused,
        global_batch: 8,
        micro_batch: 1,
    }
}

#[test]
fn ranks_are_tensor_innermost_then_data_then_pipeline() {
    let l = layout(2, 2, 2);
    assert_eq!(
        groups(&l, Among::Tensor),
        vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]
    );
    assert_eq!(
        groups(&l, Among::Data),
        vec![vec![0, 2], vec![1, 3], vec![4, 6], vec![5, 7]]
    );
    assert_eq!(
        stage_pairs(&l),
        vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]
    );
}

#[test]
fn expert_groups_split_the_data_dimension() {
    let mut l = layout(1, 4, 1);
    l.ep = 2;
    assert_eq!(groups(&l, Among::Expert), vec![vec![0, 1], vec![2, 3]]);
    assert_eq!(groups(&l, Among::ExpertData), vec![vec![0, 2], vec![1, 3]]);
}

/// A pricing without a graph: every collective in closed form, `secs(op, bytes)`.
fn pricing<'a>(ranks: &'a [Rank], closed: &'a dyn Fn(Op, f64, &[Rank]) -> f64) -> Pricing<'a> {
    Pricing {
        graph: None,
        ranks,
        closed,
        net_share: 1.0,
    }
}

fn flat_rates() -> Rates {
    use crate::compute::kernels::Curve;
    use crate::compute::roofline::ModelSource;
    let k = |peak: f64| KernelRates {
        matrix_peak: peak,
        matrix: Curve::flat(1.0),
        vector: None,
        memory_bw: 1e12,
        memory: Curve::flat(1.0),
        launch_overhead: 0.0,
        compute_source: ModelSource::DatasheetDefault { efficiency: 1.0 },
        memory_source: ModelSource::DatasheetDefault { efficiency: 1.0 },
    };
    Rates {
        base: k(1e15),
        narrow: Some(k(2e15)),
    }
}

#[test]
fn overlapped_tensor_collectives_expose_only_what_exceeds_their_gemm() {
    let m = crate::model::catalog::find("llama3_8b").unwrap();
    let mut l = layout(8, 1, 1);
    l.sp = true;
    l.attention = crate::model::Attention::Flash;
    let setup = crate::model::Setup {
        tp_comm_overlap: true,
        ..Default::default()
    };
    let work = crate::model::step_work_with(&m, &l, &setup, 2.0).unwrap();
    assert!(work.tp_comm_overlap);
    // An all-gather takes 1 ns per 2 bytes, a reduce-scatter 1 ns per byte.
    let closed = |op: Op, bytes: f64, _: &[Rank]| match op {
        Op::AllGather => bytes * 0.5e-9,
        _ => bytes * 1e-9,
    };
    let ranks: Vec<Rank> = (0..8).map(|d| (0, d)).collect();
    let rates = flat_rates();
    let e = exposed_secs(
        &mut Vec::new(),
        &pricing(&ranks, &closed),
        &l,
        &work,
        &rates,
    )
    .unwrap();
    let bytes = 8192.0 * 4096.0 * 2.0;
    let (ag, rs) = (bytes * 0.5e-9, bytes * 1e-9);
    let gemm = |names: &[&str]| -> f64 {
        work.layer
            .forward
            .iter()
            .filter(|k| names.contains(&k.name))
            .map(|k| k.flop / 1e15 + k.bytes / 1e12)
            .sum()
    };
    let (qkv, out, up, down) = (
        gemm(&["query", "key", "value"]),
        gemm(&["attn_out"]),
        gemm(&["ffn_gate_up"]),
        gemm(&["ffn_down"]),
    );
    let x = |c: f64, g: f64| (c - g).max(0.0);
    let forward = x(ag, qkv) + x(rs, out) + x(ag, up) + x(rs, down);
    let backward = x(ag, out) + x(ag, down) + x(ag, qkv) + x(rs, qkv) + x(ag, up) + x(rs, up);
    assert!(forward > 0.0 && backward > 0.0, "{forward} {backward}");
    assert!(
        (e.forward - forward).abs() <= 1e-15 * forward,
        "{e:?} {forward}"
    );
    assert!(
        (e.backward - backward).abs() <= 1e-15 * backward,
        "{e:?} {backward}"
    );
    // Without `overlap tp_comm` nothing is exposed this way: the collectives are rounds.
    let plain = crate::model::step_work_with(&m, &l, &Default::default(), 2.0).unwrap();
    let none = exposed_secs(
        &mut Vec::new(),
        &pricing(&ranks, &closed),
        &l,
        &plain,
        &rates,
    )
    .unwrap();
    assert_eq!(none, Exposed::default());
}

#[test]
fn the_context_ring_exposes_each_send_beyond_its_attention_step() {
    let m = crate::model::catalog::find("llama3_8b").unwrap();
    let mut l = layout(1, 1, 1);
    l.attention = crate::model::Attention::Flash;
    let setup = crate::model::Setup {
        cp: 4,
        ..Default::default()
    };
    let work = crate::model::step_work_with(&m, &l, &setup, 2.0).unwrap();
    // The sim's rank layout has dp × cp replicas.
    let sim = Layout { dp: 4, ..l.clone() };
    assert_eq!(context_groups(&sim, 4), vec![vec![0, 1, 2, 3]]);
    // A send of n bytes takes n / 1 GB/s: far longer than an attention step.
    let closed = |_: Op, bytes: f64, _: &[Rank]| bytes * 1e-9;
    let ranks: Vec<Rank> = (0..4).map(|d| (0, d)).collect();
    let e = exposed_secs(
        &mut Vec::new(),
        &pricing(&ranks, &closed),
        &sim,
        &work,
        &flat_rates(),
    )
    .unwrap();
    let core = |ks: &[Kernel]| -> f64 {
        ks.iter()
            .filter(|k| k.name == "flash_attention")
            .map(|k| k.flop / 1e15 + k.bytes / 1e12)
            .sum()
    };
    // b·s/cp = 2048 tokens, 8 key/value heads of 128, K and V, 2 bytes.
    let send = 2.0 * 2048.0 * 1024.0 * 2.0 * 1e-9;
    let forward = 3.0 * (send - core(&work.layer.forward) / 4.0);
    let backward = 3.0 * (2.0 * send - core(&work.layer.backward) / 4.0);
    assert!(
        (e.forward - forward).abs() <= 1e-12 * forward,
        "{e:?} {forward}"
    );
    assert!(
        (e.backward - backward).abs() <= 1e-12 * backward,
        "{e:?} {backward}"
    );
}

#[test]
fn groups_of_a_context_parallel_layout_put_cp_between_tp_and_dp() {
    // tp 2, cp 2, dp 2: ranks t + 2·(c + 2·d).
    let sim = Layout {
        dp: 4,
        ..layout(2, 1, 1)
    };
    assert_eq!(
        context_groups(&sim, 2),
        vec![vec![0, 2], vec![1, 3], vec![4, 6], vec![5, 7]]
    );
    assert_eq!(
        groups(&sim, Among::Data),
        vec![vec![0, 2, 4, 6], vec![1, 3, 5, 7]]
    );
}

#[test]
fn repeats_scale_bytes_and_alpha_and_groups_run_at_once() {
    let r = |a: f64, b: f64| Round {
        alpha: a,
        chains: vec![collective::Chain {
            path: vec![0],
            bytes: b,
        }],
    };
    let both = concurrent(vec![vec![r(1.0, 10.0)], vec![r(2.0, 20.0)]]);
    assert_eq!(both.len(), 1);
    assert_eq!(both[0].alpha, 2.0);
    assert_eq!(both[0].chains.len(), 2);
    let x = repeated(both, 3.0);
    assert_eq!(x[0].alpha, 6.0);
    assert_eq!(x[0].chains[1].bytes, 60.0);
}
