//! Training as Megatron-LM runs it (issue 39, item 2): fp8 only on the linear GEMMs, context
//! parallelism, uneven pipeline stages and `overlap tp_comm`, each checked against its closed
//! form, worked out here from the model's shape (never from the code under test), and each
//! wrong input a located error.

use orrery::compute::kernels::kernel_rates;
use orrery::load_str;
use orrery::model::memory::{layer_activation_bytes, layer_activation_bytes_with, stage_params};
use orrery::model::ops::{
    Kernel, layer_kernels, layer_kernels_with, output_kernels, output_kernels_with,
};
use orrery::model::{
    Among, Attention, CommOp, Layout, Recompute, Schedule, Setup, Sharding, Split, StepWork,
    catalog, check_with, per_rank_with, stage_layers, step_work_with, training_widths,
};
use orrery::scenario::Spec;
use orrery::sim::{RunResult, SimConfig, simulate};

fn layout(tp: u32, sp: bool, pp: u32, dp: u32) -> Layout {
    Layout {
        tp,
        sp,
        pp,
        schedule: Schedule::OneFOneB,
        dp,
        sharding: Sharding::None,
        ep: 1,
        recompute: Recompute::None,
        attention: Attention::Flash,
        global_batch: 8 * u64::from(dp),
        micro_batch: 2,
    }
}

fn narrow() -> Setup {
    Setup {
        narrow_gemm_bytes: Some(1.0),
        ..Setup::default()
    }
}

#[test]
fn fp8_runs_only_the_four_linear_gemms_narrow_reading_their_inputs_at_one_byte() {
    let m = catalog::find("llama3_70b").unwrap();
    let l = layout(4, true, 1, 1);
    let wide = layer_kernels(&m, &l, 2.0);
    let fp8 = layer_kernels_with(&m, &l, &narrow(), 2.0);
    let (t, bs, h) = (4.0, 2.0 * 8192.0, 8192.0);
    let (q, kv, ffn) = (8192.0 / t, 8.0 / t * 128.0, 28672.0 / t);
    // (m, n, k) of each linear of the block: the rank's heads, its key/value heads, its FFN.
    let shape = |name: &str| match name {
        "query" => Some((bs, h, q)),
        "key" | "value" => Some((bs, h, kv)),
        "attn_out" => Some((bs, q, h)),
        "ffn_gate_up" => Some((bs, h, 2.0 * ffn)),
        "ffn_down" => Some((bs, ffn, h)),
        _ => None,
    };
    // TransformerEngine's fused cast + transpose: each quantized operand read at 2 bytes and
    // written twice at 1. Forward: the projection's and FC2's inputs; backward: every linear
    // layer's output gradient (a sequence slice for the row-parallel ones, gathered after).
    let casts = |ks: &[Kernel]| -> Vec<f64> {
        ks.iter()
            .filter(|k| k.name == "fp8_cast")
            .map(|k| k.bytes)
            .collect()
    };
    assert_eq!(casts(&fp8.forward), [bs * q * 4.0, bs * ffn * 4.0]);
    assert_eq!(
        casts(&fp8.backward),
        [
            bs * (q + 2.0 * kv) * 4.0,
            bs * h / t * 4.0,
            bs * 2.0 * ffn * 4.0,
            bs * h / t * 4.0
        ]
    );
    assert!(casts(&wide.forward).is_empty() && casts(&wide.backward).is_empty());
    let no_cast = |ks: &[Kernel]| -> Vec<Kernel> {
        ks.iter()
            .filter(|k| k.name != "fp8_cast")
            .copied()
            .collect()
    };
    for (a, b) in [
        (no_cast(&wide.forward), no_cast(&fp8.forward)),
        (no_cast(&wide.backward), no_cast(&fp8.backward)),
    ] {
        assert_eq!(a.len(), b.len());
        for (w, n) in a.iter().zip(&b) {
            match shape(n.name) {
                Some((mm, nn, kk)) => {
                    assert!(n.narrow, "{}", n.name);
                    assert_eq!(n.flop, w.flop, "{}", n.name);
                    assert_eq!(n.flop, 2.0 * mm * nn * kk);
                    // Both operands at 1 byte, the result at 2.
                    assert_eq!(n.bytes, mm * nn + nn * kk + 2.0 * mm * kk, "{}", n.name);
                }
                None => assert_eq!(
                    n,
                    &Kernel {
                        narrow: false,
                        ..*w
                    },
                    "{} stays 16-bit",
                    n.name
                ),
            }
        }
    }
    let narrow_names: Vec<&str> = fp8
        .forward
        .iter()
        .filter(|k| k.narrow)
        .map(|k| k.name)
        .collect();
    assert_eq!(
        narrow_names,
        [
            "query",
            "key",
            "value",
            "attn_out",
            "ffn_gate_up",
            "ffn_down"
        ]
    );
    // A layer keeps its four linear inputs at 1 byte (TransformerEngine saves them
    // quantized), the norms' inputs, Q, K, V, SwiGLU's gate and up at 2; with `sp` the
    // sequence-wide ones are split over tp too.
    let (qd, kvd, f) = (8192.0, 1024.0, 28672.0);
    let keep = bs * (2.0 * 2.0 * h + h + h) / t
        + bs * (2.0 * (qd + kvd) + 2.0 * kvd + qd + (2.0 * 2.0 + 1.0) * f) / t;
    assert_eq!(layer_activation_bytes_with(&m, &l, &narrow(), 2.0), keep);
    // With `sp` the all-gathers carry the quantized bytes, the reduce-scatters 16 bits.
    let wide_w = step_work_with(&m, &l, &Setup::default(), 2.0).unwrap();
    let fp8_w = step_work_with(&m, &l, &narrow(), 2.0).unwrap();
    for (a, b) in wide_w.per_microbatch.iter().zip(&fp8_w.per_microbatch) {
        assert_eq!(a.count, b.count);
        let w = if b.op == CommOp::AllGather { 1.0 } else { 2.0 };
        assert_eq!(b.bytes, bs * h * w, "{:?}", b.op);
        assert_eq!(a.bytes, bs * h * 2.0);
    }
    // The output layer is never narrow.
    assert_eq!(
        output_kernels_with(&m, &l, &narrow(), 2.0),
        output_kernels(&m, &l, 2.0)
    );
    // fp8 training keeps 16-bit elements everywhere else.
    assert_eq!(training_widths("fp8"), (2.0, Some(1.0)));
    assert_eq!(training_widths("bf16"), (2.0, None));
    assert_eq!(training_widths("fp32"), (4.0, None));
}

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn errors(src: &str) -> String {
    let l = load_str("t.orr", src);
    assert!(l.has_errors(), "expected an error");
    l.render(false)
}

fn run(s: &Spec) -> RunResult {
    let r = simulate(s, &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    r
}

/// `nodes` DGX H100 nodes; one job over all their GPUs with `body`.
fn scenario(nodes: u32, body: &str) -> String {
    format!(
        "cluster c {{\n  rack r0 {{\n    node dgx_h100 x {nodes}\n  }}\n  fabric fat_tree\n}}\n\n\
         workload job {{\n  placement_group pg strategy PACK {{\n    bundle {{ GPU: 8 }} x {nodes}\n  }}\n\
           training t on pg steps 2 {{\n{body}  }}\n}}\n"
    )
}

fn work(s: &Spec) -> StepWork {
    let mt = s.workloads[0].training[0].model.as_ref().unwrap();
    step_work_with(
        &mt.model,
        &mt.layout,
        &mt.setup,
        training_widths(&mt.dtype).0,
    )
    .unwrap()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-30)
}

#[test]
fn an_fp8_step_prices_the_narrow_gemms_at_fp8_and_every_other_kernel_at_bf16() {
    let s = spec(&scenario(
        1,
        "    model llama3_8b\n    parallel tp 8 sp\n    attention flash\n    batch global 16 micro 1\n    precision fp8\n",
    ));
    let w = work(&s);
    let (bf16, fp8) = (
        kernel_rates(&s, "H100_SXM", "bf16").unwrap(),
        kernel_rates(&s, "H100_SXM", "fp8").unwrap(),
    );
    let secs = |ks: &[Kernel]| -> f64 {
        ks.iter()
            .map(|k| {
                let r = if k.narrow { &fp8 } else { &bf16 };
                r.secs(k.engine, k.flop, k.bytes)
            })
            .sum()
    };
    let l = &w.layer;
    let slot =
        f64::from(w.layers_per_stage) * (secs(&l.forward) + secs(&l.backward)) + secs(&w.output);
    let expect = w.microbatches as f64 * slot + secs(&[w.optimizer]);
    let t = &run(&s).metrics.training[0];
    assert!(
        close(t.compute_time / 2.0, expect, 1e-6),
        "{} vs {expect}",
        t.compute_time / 2.0
    );
    // Narrow GEMMs are faster than the same job in bf16, everything else the same.
    let all_bf16 = w.microbatches as f64
        * (f64::from(w.layers_per_stage)
            * l.forward
                .iter()
                .chain(&l.backward)
                .map(|k| bf16.secs(k.engine, k.flop, k.bytes))
                .sum::<f64>()
            + secs(&w.output));
    assert!(expect < all_bf16);
}

#[test]
fn context_parallelism_divides_a_ranks_tokens_and_sends_kv_chunks_round_a_ring() {
    let m = catalog::find("llama3_8b").unwrap();
    let mut l = layout(2, true, 1, 2);
    l.sharding = Sharding::Zero1;
    let one = step_work_with(&m, &l, &Setup::default(), 2.0).unwrap();
    let cp = Setup {
        cp: 2,
        ..Setup::default()
    };
    let two = step_work_with(&m, &l, &cp, 2.0).unwrap();
    // A rank's FLOP and tensor-parallel messages cover seq / cp tokens.
    assert_eq!(two.forward_flop, one.forward_flop / 2.0);
    assert_eq!(two.edge_flop, one.edge_flop / 2.0);
    for (a, b) in one.per_microbatch.iter().zip(&two.per_microbatch) {
        assert_eq!(b.bytes, a.bytes / 2.0);
        assert_eq!(b.count, a.count);
    }
    // One ring step: the rank's K and V for its b·s/cp tokens on its key/value heads,
    // b = 2, s = 8192, kv_heads 8 over tp 2, head_dim 128, 2 bytes.
    assert_eq!(two.cp, 2);
    assert_eq!(
        two.cp_step_bytes,
        2.0 * (2.0 * 8192.0 / 2.0) * (8.0 / 2.0 * 128.0) * 2.0
    );
    assert_eq!(one.cp_step_bytes, 0.0);
    // Gradients reduced over dp × cp = 4 ranks, the optimizer updating a quarter.
    let grads: Vec<_> = two
        .per_iteration
        .iter()
        .filter(|c| c.among == Among::Data)
        .collect();
    assert_eq!(grads[0].op, CommOp::ReduceScatter);
    assert_eq!(grads[0].bytes, one.per_iteration[0].bytes);
    assert_eq!(two.optimizer.flop, one.optimizer.flop / 2.0);
    // Activations per layer halve (fused attention keeps no s × s term).
    assert_eq!(
        layer_activation_bytes_with(&m, &l, &cp, 2.0),
        layer_activation_bytes(&m, &l, 2.0) / 2.0
    );
    let (m1, m2) = (
        per_rank_with(&m, &l, &Setup::default(), 2.0).unwrap(),
        per_rank_with(&m, &l, &cp, 2.0).unwrap(),
    );
    assert_eq!(m2.weights_bytes, m1.weights_bytes);
    assert_eq!(m2.optimizer_bytes, m1.optimizer_bytes / 2.0);
    assert_eq!(m2.activations_bytes, m1.activations_bytes / 2.0);
}

#[test]
fn context_parallelism_needs_fused_attention_and_whole_chunks() {
    let m = catalog::find("llama3_8b").unwrap();
    let mut l = layout(1, false, 1, 1);
    let cp = |n| Setup {
        cp: n,
        ..Setup::default()
    };
    assert!(check_with(&m, &l, &cp(4)).is_ok());
    // 8192 tokens are not 2 × 3 chunks.
    assert!(check_with(&m, &l, &cp(3)).unwrap_err().contains("2 × cp"));
    l.attention = Attention::Unfused;
    assert!(
        check_with(&m, &l, &cp(2))
            .unwrap_err()
            .contains("fused attention")
    );
}

#[test]
fn uneven_stages_take_what_they_are_given_and_the_middle_splits_the_rest() {
    let m = catalog::find("llama3_70b").unwrap(); // 80 layers
    let mut l = layout(8, true, 4, 1);
    let s = |f: Option<u32>, t: Option<u32>| Setup {
        first_stage: f,
        last_stage: t,
        ..Setup::default()
    };
    assert_eq!(stage_layers(&m, &l, &Setup::default()), (20, 20, 20));
    assert_eq!(stage_layers(&m, &l, &s(Some(18), Some(18))), (18, 22, 18));
    assert_eq!(stage_layers(&m, &l, &s(Some(26), None)), (26, 18, 18));
    assert_eq!(
        check_with(&m, &l, &s(Some(18), Some(18)))
            .unwrap()
            .layers_per_stage,
        22
    );
    // Interleaved 2: each given stage whole chunks, and 80 − 18 − 20 = 42 layers are 21 per
    // middle stage, not whole chunks.
    l.schedule = Schedule::Interleaved(2);
    l.global_batch = 32;
    assert!(check_with(&m, &l, &s(Some(20), Some(20))).is_ok());
    assert!(
        check_with(&m, &l, &s(Some(19), Some(19)))
            .unwrap_err()
            .contains("multiple of interleave")
    );
    assert!(
        check_with(&m, &l, &s(Some(18), Some(20)))
            .unwrap_err()
            .contains("middle stages")
    );
    // A middle stage of 22 layers holds more than the first (18 and the embedding): its
    // gradients are the ones reduced.
    let mut dp2 = layout(8, true, 4, 2);
    dp2.global_batch = 16;
    let even = s(Some(18), Some(18));
    let split = check_with(&m, &dp2, &even).unwrap();
    let w = step_work_with(&m, &dp2, &even, 2.0).unwrap();
    let middle = stage_params(&m, &dp2, &split, 1);
    let first = stage_params(
        &m,
        &dp2,
        &Split {
            layers_per_stage: 18,
            ..split
        },
        0,
    );
    assert!(middle.dense > first.dense);
    assert_eq!(w.per_iteration[0].bytes, middle.dense * 4.0);
    // Two stages: the given ones must take every layer.
    let mut two = layout(8, true, 2, 1);
    two.global_batch = 16;
    assert_eq!(stage_layers(&m, &two, &s(Some(30), Some(50))), (30, 0, 50));
    assert!(check_with(&m, &two, &s(Some(30), Some(49))).is_err());
}

#[test]
fn the_slowest_stage_sets_the_pipelines_pace() {
    // pp 4 with stages of 18, 22, 22, 18 layers: a middle stage is slowest.
    let body = |stages: &str| {
        format!(
            "    model llama3_70b\n    parallel tp 8 sp pp 4{stages}\n    attention flash\n    recompute selective\n    batch global 8 micro 1\n"
        )
    };
    let s = spec(&scenario(4, &body(" first_stage 18 last_stage 18")));
    let w = work(&s);
    assert_eq!(
        (
            w.first_stage_layers,
            w.layers_per_stage,
            w.last_stage_layers
        ),
        (18, 22, 18)
    );
    let r = kernel_rates(&s, "H100_SXM", "bf16").unwrap();
    let sum = |ks: &[Kernel]| -> f64 { ks.iter().map(|k| r.secs(k.engine, k.flop, k.bytes)).sum() };
    let l = &w.layer;
    let layer = sum(&l.forward) + sum(&l.backward) + sum(&l.recompute);
    let slot = (22.0 * layer).max(18.0 * layer + sum(&w.output));
    let stretch = 1.0 + 3.0 / w.microbatches as f64;
    let expect = w.microbatches as f64 * stretch * slot + sum(&[w.optimizer]);
    let t = &run(&s).metrics.training[0];
    assert!(
        close(t.compute_time / 2.0, expect, 1e-6),
        "{} vs {expect}",
        t.compute_time / 2.0
    );
}

#[test]
fn bad_settings_are_located_errors() {
    let job = |parallel: &str, extra: &str| {
        scenario(
            1,
            &format!(
                "    model llama3_8b\n    parallel {parallel}\n{extra}    batch global 8 micro 1\n"
            ),
        )
    };
    // Line 14 is `parallel`, line 15 the statement after it.
    let e = errors(&job("tp 2 cp 4", ""));
    assert!(
        e.contains("t.orr:14:") && e.contains("needs `attention flash`"),
        "{e}"
    );
    let e = errors(&job("tp 2 cp 3", "    attention flash\n"));
    assert!(
        e.contains("t.orr:14:") && e.contains("2 × cp = 6 chunks"),
        "{e}"
    );
    let e = errors(&job("tp 8", "    overlap tp_comm\n"));
    assert!(
        e.contains("t.orr:15:") && e.contains("needs `tp` above 1 and `sp`"),
        "{e}"
    );
    let e = errors(&job("tp 8 sp", "    overlap tp_comm tp_comm\n"));
    assert!(e.contains("t.orr:15:") && e.contains("named twice"), "{e}");
    let e = errors(&job("tp 8 sp", "    overlap tp_comm bucket 5\n"));
    assert!(
        e.contains("t.orr:15:") && e.contains("needs `grad_reduce`"),
        "{e}"
    );
    let e = errors(&job("tp 8 first_stage 4", ""));
    assert!(
        e.contains("t.orr:14:") && e.contains("needs `pp` of at least 2"),
        "{e}"
    );
    let e = errors(&job("tp 4 pp 2 first_stage 10 last_stage 10", ""));
    assert!(
        e.contains("t.orr:14:") && e.contains("leaving 12 for the 0 stages"),
        "{e}"
    );
    let e = errors(&job("tp 2 pp 4 first_stage 7 last_stage 6", ""));
    assert!(
        e.contains("t.orr:14:") && e.contains("do not split evenly"),
        "{e}"
    );
    // The devices count the context-parallel ranks.
    let e = errors(&job("tp 8 cp 2", "    attention flash\n"));
    assert!(e.contains("tp 8 × cp 2 × pp 1 × dp 1 = 16 devices"), "{e}");
}

#[test]
fn bad_settings_exit_2_with_the_location() {
    let dir = std::env::temp_dir().join(format!("orrery-megatron-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.orr");
    std::fs::write(
        &f,
        scenario(
            1,
            "    model llama3_8b\n    parallel tp 2 cp 4\n    batch global 8 micro 1\n",
        ),
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_orrery"))
        .arg("check")
        .arg(&f)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string() + &String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.orr:14:"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
