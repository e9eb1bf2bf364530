//! Model-level training jobs in the simulation (issue 12): the iteration's compute is the
//! sum of the kernels `model::step_work` lists, each priced by `compute::kernels`, stretched
//! by the pipeline bubble, plus the optimizer step; its
//! traffic runs on the run's network over the ranks the placement gave; the memory it
//! needs is checked at `check` and reaches placement. Expected values are worked out from
//! the model library and the roofline, never from the simulation under test.

use orrery::compute::kernels::kernel_rates;
use orrery::load_str;
use orrery::model::ops::Kernel;
use orrery::model::{StepWork, dtype_bytes, step_work};
use orrery::scenario::Spec;
use orrery::sim::{RunResult, SimConfig, simulate};

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn run(s: &Spec) -> RunResult {
    let r = simulate(s, &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(
        r.network_models.iter().all(|m| m.on_graph),
        "{:?}",
        r.network_models
    );
    r
}

/// `nodes` DGX H100 nodes in one rack; a group of `bundles` bundles of `per` GPUs placed
/// with `strategy`; one job training `model` with `layout` and `batch`.
fn scenario(nodes: u32, bundles: u32, per: u32, strategy: &str, body: &str) -> String {
    format!(
        "cluster c {{\n  rack r0 {{\n    node dgx_h100 x {nodes}\n  }}\n  fabric leaf_spine\n}}\n\n\
         workload job {{\n  placement_group pg strategy {strategy} {{\n    bundle {{ GPU: {per} }} x {bundles}\n  }}\n\
           training t on pg steps 2 {{\n{body}  }}\n}}\n"
    )
}

fn work(s: &Spec) -> StepWork {
    let mt = s.workloads[0].training[0]
        .model
        .as_ref()
        .expect("a model job");
    step_work(&mt.model, &mt.layout, dtype_bytes(&mt.dtype)).expect("a layout that divides")
}

/// One microbatch slot of the slowest stage on one H100, and the optimizer step: the sum of
/// their kernels' times at the H100's default rates (compute plus memory time per kernel).
fn slot(s: &Spec, w: &StepWork) -> (f64, f64) {
    let r = kernel_rates(s, "H100_SXM", "bf16").expect("bf16 peak");
    let sum = |ks: &[Kernel]| -> f64 { ks.iter().map(|k| r.secs(k.engine, k.flop, k.bytes)).sum() };
    let l = &w.layer;
    let layer = sum(&l.forward) + sum(&l.backward) + sum(&l.recompute);
    // The last stage, with the output layer, is the slowest.
    let stage = f64::from(w.layers_per_stage) * layer + sum(&w.output);
    (stage, sum(&[w.optimizer]))
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-30)
}

#[test]
fn compute_is_the_roofline_of_the_derived_work_times_the_microbatches() {
    let s = spec(&scenario(
        1,
        1,
        8,
        "STRICT_PACK",
        "    model llama3_8b\n    parallel tp 8\n    batch global 4 micro 1\n",
    ));
    let w = work(&s);
    let r = run(&s);
    let t = &r.metrics.training[0];
    assert_eq!(t.steps_done, 2);
    let (stage, optimizer) = slot(&s, &w);
    let expect = w.microbatches as f64 * stage + optimizer;
    // Nanosecond rounding of the simulated clock only.
    assert!(
        close(t.compute_time / 2.0, expect, 1e-6),
        "{} vs {expect}",
        t.compute_time / 2.0
    );
    assert_eq!(t.bubble_time, 0.0);
    // Tensor-parallel traffic ran on the node's NVLink.
    assert!(t.communication_time > 0.0, "{t:?}");
    let tokens = t.tokens_per_s.expect("tokens/s of a model job");
    assert!(close(tokens, w.tokens / t.step_time, 1e-12), "{tokens}");
    let mfu = t.mfu.expect("MFU of a model job");
    assert!(
        close(mfu, w.model_flop / (t.step_time * 8.0 * 989e12), 1e-12),
        "{mfu}"
    );
    assert!(mfu > 0.0 && mfu < 1.0, "{mfu}");
}

#[test]
fn the_pipeline_bubble_is_p_minus_one_microbatch_slots() {
    // pp 2, 4 microbatches: the iteration is 4 + 1 slots, one of them bubble.
    let s = spec(&scenario(
        2,
        2,
        8,
        "STRICT_SPREAD",
        "    model llama3_8b\n    parallel tp 8 pp 2\n    batch global 4 micro 1\n",
    ));
    let w = work(&s);
    assert_eq!(w.microbatches, 4);
    let r = run(&s);
    let t = &r.metrics.training[0];
    let (slot, optimizer) = slot(&s, &w);
    assert!(
        close(t.compute_time / 2.0, 5.0 * slot + optimizer, 1e-6),
        "{t:?}"
    );
    assert!(close(t.bubble_time / 2.0, slot, 1e-6), "{t:?}");
}

#[test]
fn tensor_parallelism_across_nodes_pays_the_network() {
    let body = "    model llama3_8b\n    parallel tp 8\n    batch global 4 micro 1\n";
    let inside = run(&spec(&scenario(8, 1, 8, "STRICT_PACK", body)));
    let across = run(&spec(&scenario(8, 8, 1, "STRICT_SPREAD", body)));
    let (a, b) = (&inside.metrics.training[0], &across.metrics.training[0]);
    // Same work, so the same compute.
    assert!(close(a.compute_time, b.compute_time, 1e-9));
    // NVLink (450 GB/s per direction on a DGX H100) against one 400G NIC per GPU.
    assert!(
        b.communication_time > 4.0 * a.communication_time,
        "inside {} s, across {} s",
        a.communication_time,
        b.communication_time
    );
}

#[test]
fn a_model_that_does_not_fit_is_a_located_error_with_its_breakdown() {
    let src = scenario(
        1,
        1,
        8,
        "STRICT_PACK",
        "    model llama3_405b\n    parallel tp 8\n    batch global 8 micro 1\n",
    );
    let l = load_str("t.orr", &src);
    assert!(l.has_errors());
    let text = l.render(false);
    assert!(text.contains("t.orr:13:5"), "{text}");
    for part in [
        "weights",
        "gradients",
        "optimizer state",
        "activations",
        "more than the 79.6 GiB of the largest device",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
}

#[test]
fn a_job_that_fits_carries_its_memory_to_placement() {
    let s = spec(&scenario(
        1,
        1,
        8,
        "STRICT_PACK",
        "    model llama3_8b\n    parallel tp 8\n    batch global 4 micro 1\n",
    ));
    let mt = s.workloads[0].training[0].model.as_ref().unwrap();
    let need = orrery::model::per_rank(&mt.model, &mt.layout, 2.0)
        .unwrap()
        .total_bytes();
    let dm = s.workloads[0].placement_group_device_memory("pg").unwrap();
    assert_eq!(dm.0, need.ceil() as u64);
}

#[test]
fn per_microbatch_traffic_is_stretched_by_the_bubble() {
    // pp 2 over two nodes on an idle network: each microbatch's tensor-parallel and pipeline
    // traffic takes the same time c whatever m (its α and bytes scale with the calls), so a
    // step's communication is c (m + p - 1): 5c for 4 microbatches and 9c for 8, a ratio of
    // 5/9 (4/8 if the bubble did not stretch it).
    let comm = |global: u32| {
        let s = spec(&scenario(
            2,
            2,
            8,
            "STRICT_SPREAD",
            &format!(
                "    model llama3_8b\n    parallel tp 8 pp 2\n    batch global {global} micro 1\n"
            ),
        ));
        let t = &run(&s).metrics.training[0];
        t.communication_time / t.steps_done as f64
    };
    let (four, eight) = (comm(4), comm(8));
    assert!(close(four / eight, 5.0 / 9.0, 1e-6), "{four} / {eight}");
}

/// `attention flash` is faster than the unfused kernels at a long sequence (no s × s scores
/// through memory), and an unknown kind is a located error.
#[test]
fn fused_attention_is_a_layout_choice() {
    let job = |attention: &str| {
        format!(
            "cluster c {{\n  node dgx_h100 x 1\n}}\nworkload w {{\n  placement_group pg strategy PACK {{\n    bundle {{ GPU: 8 }}\n  }}\n  training t on pg steps 2 {{\n    model llama3_8b\n    parallel tp 8\n{attention}    batch global 8 micro 1\n  }}\n}}\n"
        )
    };
    let step = |src: String| {
        let l = orrery::load_str("t.orr", &src);
        assert!(!l.has_errors(), "{}", l.render(false));
        let r = orrery::sim::simulate(l.spec.as_ref().unwrap(), &orrery::sim::SimConfig::default());
        r.metrics.training[0].step_time
    };
    let unfused = step(job(""));
    assert_eq!(unfused, step(job("    attention unfused\n")));
    let flash = step(job("    attention flash\n"));
    assert!(flash < unfused, "{flash} vs {unfused}");
    let l = orrery::load_str("t.orr", &job("    attention fast\n"));
    assert!(l.has_errors());
    let text = l.render(false);
    assert!(
        text.contains("t.orr:11:15") && text.contains("did you mean `flash`"),
        "{text}"
    );
}
