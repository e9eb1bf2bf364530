//! The roofline compute model against its closed forms (compute-bound, memory-bound, the
//! crossover at the ridge point, launch overhead), its parameters from a calibration profile
//! or the defaults, the `compute ... memory ... kernels` syntax, and the simulation using it.

use orrery::compute::{
    DEFAULT_COMPUTE_EFFICIENCY, DEFAULT_LAUNCH_OVERHEAD, DEFAULT_MEMORY_EFFICIENCY, ModelSource,
    Roofline, Work, roofline,
};
use orrery::load_str;
use orrery::scenario::Spec;
use orrery::sim::{SimConfig, simulate};

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-9)
}

/// H200 datasheet figures: 989 TFLOPS dense bf16, 4.8 TB/s.
fn h200() -> Roofline {
    Roofline::datasheet(989e12, 4.8e12)
}

#[test]
fn compute_bound_work_takes_its_flop_at_the_compute_rate() {
    let r = h200();
    // 1 PFLOP over 1 GB: 1,000,000 FLOP/byte, far above the ridge.
    let w = Work {
        flop: 1e15,
        bytes: 1e9,
        kernels: 0.0,
    };
    let expect = 1e15 / (989e12 * 0.75);
    assert!(close(r.secs(&w, 1.0), expect), "{}", r.secs(&w, 1.0));
    // Two devices halve it.
    assert!(close(r.secs(&w, 2.0), expect / 2.0));
}

#[test]
fn memory_bound_work_takes_its_bytes_at_the_memory_rate() {
    let r = h200();
    // 1 TFLOP over 1 TB: 1 FLOP/byte, far below the ridge.
    let w = Work {
        flop: 1e12,
        bytes: 1e12,
        kernels: 0.0,
    };
    let expect = 1e12 / (4.8e12 * 0.85);
    assert!(close(r.secs(&w, 1.0), expect), "{}", r.secs(&w, 1.0));
    assert!(close(r.secs(&w, 4.0), expect / 4.0));
}

#[test]
fn compute_and_memory_cross_at_the_ridge_point() {
    let r = h200();
    let ridge = 989e12 * 0.75 / (4.8e12 * 0.85);
    assert!(close(r.ridge_point(), ridge), "{}", r.ridge_point());
    let bytes = 1e11;
    let at = |intensity: f64| {
        r.secs(
            &Work {
                flop: intensity * bytes,
                bytes,
                kernels: 0.0,
            },
            1.0,
        )
    };
    let memory_time = bytes / (4.8e12 * 0.85);
    // Below the ridge the time does not depend on the FLOP; above, it grows with them.
    assert!(close(at(ridge * 0.5), memory_time));
    assert!(close(at(ridge * 0.9), memory_time));
    assert!(close(at(ridge), memory_time));
    assert!(close(at(ridge * 2.0), 2.0 * memory_time));
    assert!(at(ridge * 1.01) > memory_time);
}

#[test]
fn launch_overhead_is_per_kernel_and_not_divided_among_devices() {
    let r = h200();
    let w = |kernels: f64| Work {
        flop: 1e15,
        bytes: 0.0,
        kernels,
    };
    let base = r.secs(&w(0.0), 2.0);
    assert!(close(
        r.secs(&w(12.0), 2.0),
        base + 12.0 * DEFAULT_LAUNCH_OVERHEAD
    ));
    // Tiny work is all launch overhead.
    let tiny = Work {
        flop: 1.0,
        bytes: 1.0,
        kernels: 1000.0,
    };
    assert!((r.secs(&tiny, 8.0) - 1000.0 * 5e-6).abs() < 1e-9);
    assert_eq!(DEFAULT_LAUNCH_OVERHEAD, 5e-6);
}

#[test]
fn no_devices_or_no_figures_take_no_time() {
    let w = Work {
        flop: 1e12,
        bytes: 1e9,
        kernels: 0.0,
    };
    assert_eq!(h200().secs(&w, 0.0), 0.0);
    assert_eq!(Roofline::datasheet(0.0, 0.0).secs(&w, 1.0), 0.0);
}

#[test]
fn without_memory_or_kernels_the_compute_only_closed_form_holds() {
    let s = spec("");
    let c = orrery::scenario::workload::Compute {
        flop: orrery::units::Flop(1e15),
        dtype: "bf16".into(),
        memory: None,
        kernels: 0,
    };
    let t = orrery::sim::models::compute_secs(&s, "H100_SXM", &c, 1.0, 1.0);
    assert_eq!(t, 1e15 / (989e12 * 0.75));
    assert_eq!(
        DEFAULT_COMPUTE_EFFICIENCY,
        orrery::sim::models::DEFAULT_EFFICIENCY
    );
    let r = roofline(&s, "H100_SXM", "bf16").unwrap();
    assert_eq!(r.compute_source.to_string(), "datasheet default 0.75");
    assert_eq!(r.memory_source.to_string(), "datasheet default 0.85");
    assert_eq!(r.memory_efficiency, DEFAULT_MEMORY_EFFICIENCY);
    // A service batch multiplies the FLOP, not the memory traffic or the kernels.
    let c = orrery::scenario::workload::Compute {
        memory: Some(orrery::units::Bytes(3_350_000_000_000)),
        kernels: 10,
        ..c
    };
    let t8 = orrery::sim::models::compute_secs(&s, "H100_SXM", &c, 8.0, 1.0);
    let expect = (8e15_f64 / (989e12 * 0.75)).max(3.35e12 / (3.35e12 * 0.85)) + 10.0 * 5e-6;
    assert!(close(t8, expect), "{t8} vs {expect}");
}

const H200_NODE: &str = "cluster c {\n  node hgx_h200 x 1\n}\n";

#[test]
fn profile_efficiencies_replace_the_defaults_per_dtype() {
    let s = spec(&format!(
        "calibration h200_datasheet\n{H200_NODE}workload w {{\n  tasks t x 1 {{\n    resources {{ GPU: 1 }}\n    compute 1 TFLOP fp16\n  }}\n}}\n"
    ));
    assert_eq!(
        s.accelerators["H200"].profile.as_deref(),
        Some("h200_datasheet")
    );
    let r = roofline(&s, "H200", "bf16").unwrap();
    assert_eq!(r.compute_efficiency, 0.794);
    assert_eq!(r.memory_efficiency, 0.85);
    assert_eq!(r.launch_overhead, 5e-6);
    assert_eq!(r.peak_flops, 989e12);
    assert_eq!(
        r.compute_source.to_string(),
        "calibration h200_datasheet v1"
    );
    assert!(matches!(
        r.compute_source,
        ModelSource::Calibration {
            version: 1,
            source: orrery::profile::Source::Datasheet,
            ..
        }
    ));
    // The profile's fp8 figure (cuBLASLt 8192^3, Azure ND H200 v5) replaces the default too.
    assert_eq!(
        roofline(&s, "H200", "fp8").unwrap().compute_efficiency,
        0.657
    );
    // It has no fp16 figure: the default compute efficiency, the profile's memory.
    let r = roofline(&s, "H200", "fp16").unwrap();
    assert_eq!(r.compute_efficiency, 0.75);
    assert_eq!(r.compute_source.to_string(), "datasheet default 0.75");
    assert_eq!(r.memory_source.to_string(), "calibration h200_datasheet v1");
    assert_eq!(
        orrery::compute::model_sources(&s),
        vec![
            "H200 fp16: compute datasheet default 0.75, memory calibration h200_datasheet v1"
                .to_string()
        ]
    );
    // Other accelerators keep the defaults.
    let r = roofline(&s, "H100_SXM", "bf16").unwrap();
    assert_eq!(r.compute_source.to_string(), "datasheet default 0.75");
}

#[test]
fn an_accelerator_block_names_its_profile() {
    let s = spec("accelerator my_h100 from H100_SXM {\n  profile h100_sxm_datasheet\n}\n");
    let r = roofline(&s, "my_h100", "bf16").unwrap();
    assert_eq!(
        r.compute_source.to_string(),
        "calibration h100_sxm_datasheet v1"
    );
    assert_eq!(r.memory_bw, 3.35e12);
    // The catalog entry it derives from is untouched.
    let r = roofline(&s, "H100_SXM", "bf16").unwrap();
    assert_eq!(r.compute_source.to_string(), "datasheet default 0.75");
    // A profile of another device is allowed, with a warning.
    let l = load_str(
        "t.orr",
        "accelerator my_h200 from H200 {\n  profile h100_sxm_datasheet\n}\n",
    );
    assert!(!l.has_errors());
    let out = l.render(false);
    assert!(
        out.contains("warning")
            && out.contains("t.orr:2:11")
            && out.contains("describes accelerator `H100_SXM`"),
        "{out}"
    );
}

#[test]
fn a_memory_bound_task_runs_for_its_bytes_plus_launches_in_the_simulation() {
    // 1 TFLOP over 480 GB on one H200 with the datasheet profile: memory-bound.
    let s = spec(&format!(
        "calibration h200_datasheet\n{H200_NODE}workload w {{\n  tasks t x 1 {{\n    resources {{ GPU: 1 }}\n    compute 1 TFLOP bf16 memory 480 GB kernels 100\n  }}\n}}\n"
    ));
    let r = simulate(&s, &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let expect = 480e9 / (4.8e12 * 0.85) + 100.0 * 5e-6;
    let got = r.metrics.tasks[0].run_time.mean;
    assert!((got - expect).abs() < 2e-9, "{got} vs {expect}");
    assert_eq!(
        r.model_sources,
        vec![
            "H200 bf16: compute calibration h200_datasheet v1, memory calibration h200_datasheet v1"
                .to_string()
        ]
    );
    // Without the profile: the default efficiencies.
    let s = spec(&format!(
        "{H200_NODE}workload w {{\n  tasks t x 1 {{\n    resources {{ GPU: 1 }}\n    compute 1 TFLOP bf16 memory 480 GB kernels 100\n  }}\n}}\n"
    ));
    let r = simulate(&s, &SimConfig::default());
    let got = r.metrics.tasks[0].run_time.mean;
    assert!(
        (got - (480e9 / (4.8e12 * 0.85) + 100.0 * 5e-6)).abs() < 2e-9,
        "{got}"
    );
    assert_eq!(
        r.model_sources,
        vec![
            "H200 bf16: compute datasheet default 0.75, memory datasheet default 0.85".to_string()
        ]
    );
}

#[test]
fn the_shipped_profile_scenario_runs_and_reports_its_source() {
    let l = orrery::load_file(std::path::Path::new("scenarios/h200_roofline.orr")).unwrap();
    assert!(!l.has_errors(), "{}", l.render(false));
    let s = l.spec.unwrap();
    assert!(s.profiles.contains_key("h200_datasheet"));
    // The profile is one of the scenario's sources: its figures are in the scenario hash.
    assert!((0..l.sources.len()).any(|i| l.sources.file(i).name.ends_with("h200_datasheet.toml")));
    let r = simulate(
        &s,
        &SimConfig {
            seed: 1,
            horizon: Some(60 * 1_000_000_000),
            ..Default::default()
        },
    );
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(
        r.model_sources,
        vec![
            "H200 bf16: compute calibration h200_datasheet v1, memory calibration h200_datasheet v1"
                .to_string()
        ]
    );
    // Prefill on 2 devices is compute-bound: 280 TFLOP at 2 × 989 TFLOPS × 0.794, plus 200
    // launches.
    let prefill = &r.metrics.tasks[0];
    assert_eq!(prefill.completed, 64);
    let expect = 280e12 / (989e12 * 0.794 * 2.0) + 200.0 * 5e-6;
    assert!(
        (prefill.run_time.mean - expect).abs() < 2e-9,
        "{} vs {expect}",
        prefill.run_time.mean
    );
    // Decode is memory-bound: every batch takes at least 35 TB / (2 × 4.8 TB/s × 0.85).
    let decode = &r.metrics.services[0];
    assert!(decode.served > 0);
    assert!(
        decode.latency.p50 >= 35e12 / (2.0 * 4.8e12 * 0.85),
        "{}",
        decode.latency.p50
    );
}

#[test]
fn old_compute_forms_stay_valid() {
    let s = spec(
        "workload w {\n  tasks t x 1 {\n    resources { GPU: 1 }\n    compute 30 TFLOP fp16\n  }\n}\n",
    );
    let c = s.workloads[0].tasks[0].compute.clone().unwrap();
    assert_eq!(
        (c.flop.0, c.dtype.as_str(), c.memory, c.kernels),
        (30e12, "fp16", None, 0)
    );
}

const NEW_SYNTAX: &str = "calibration h200_datasheet

accelerator my_h100 from H100_SXM {
  profile h100_sxm_datasheet
}

workload w {
  tasks t x 2 {
    resources { GPU: 1 }
    compute 40 TFLOP bf16 memory 200 GB kernels 12
  }
  placement_group pg strategy PACK {
    bundle { GPU: 8 }
  }
  training job on pg steps 10 {
    compute 1.2 PFLOP per device bf16 memory 3 TB kernels 2000
  }
  service s {
    replicas 1
    resources { GPU: 1 }
    arrival poisson 1 /s
    compute 2 TFLOP per request fp8 kernels 300 memory 140 GB
  }
}
";

#[test]
fn the_new_syntax_survives_fmt_and_means_the_same() {
    let (tree, diags) = orrery::syntax::parse(NEW_SYNTAX, 0);
    assert!(diags.is_empty(), "{diags:?}");
    let text = orrery::syntax::fmt::format(&tree).unwrap();
    assert_eq!(text, NEW_SYNTAX, "the example is canonical");
    let (again, _) = orrery::syntax::parse(&text, 0);
    assert_eq!(again.without_spans(), tree.without_spans());
    let s = spec(&text);
    let w = &s.workloads[0];
    let t = w.tasks[0].compute.as_ref().unwrap();
    assert_eq!(
        (t.flop.0, t.memory.map(|b| b.0), t.kernels),
        (40e12, Some(200_000_000_000), 12)
    );
    let j = w.training[0].compute.as_ref().unwrap();
    assert_eq!(
        (j.flop.0, j.memory.map(|b| b.0), j.kernels),
        (1.2e15, Some(3_000_000_000_000), 2000)
    );
    // Options in any order.
    let v = w.services[0].compute.as_ref().unwrap();
    assert_eq!(
        (v.dtype.as_str(), v.memory.map(|b| b.0), v.kernels),
        ("fp8", Some(140_000_000_000), 300)
    );
}

#[test]
fn bad_compute_options_are_located() {
    let task = |c: &str| {
        let src = format!(
            "workload w {{\n  tasks t x 1 {{\n    resources {{ GPU: 1 }}\n    {c}\n  }}\n}}\n"
        );
        let l = load_str("s.orr", &src);
        assert!(l.has_errors(), "expected errors for `{c}`");
        l.render(false)
    };
    let out = task("compute 40 TFLOP bf16 memory 3 TB/s");
    assert!(
        out.contains("s.orr:4:34: expected bytes, found bandwidth"),
        "{out}"
    );
    let out = task("compute 40 TFLOP bf16 kernels 1.5");
    assert!(
        out.contains("s.orr:4:35") && out.contains("whole number"),
        "{out}"
    );
    let out = task("compute 40 TFLOP bf16 memroy 200 GB");
    assert!(
        out.contains("s.orr:4:27") && out.contains("did you mean `memory`?"),
        "{out}"
    );
    let out = task("compute 40 TFLOP bf16 memory");
    assert!(out.contains("`memory` needs a value after it"), "{out}");
}

/// Model-level work says which compute model it runs on too: a training job by its
/// precision, an LLM service by its weights' dtype and, under fp8, the 16-bit attention.
#[test]
fn model_level_work_names_its_compute_model() {
    let s = orrery::load_str(
        "t.orr",
        "cluster c {\n  node dgx_h100 x 1\n}\n\
         workload w {\n  service chat {\n    model llama3_8b\n    precision fp8\n    resources { GPU: 1 }\n    arrival poisson 1 /s\n    prompt tokens fixed 8\n    output tokens fixed 8\n  }\n}\n",
    )
    .spec
    .unwrap();
    assert_eq!(
        orrery::compute::model_sources(&s),
        vec![
            "H100_SXM bf16: compute datasheet default 0.75, memory datasheet default 0.85"
                .to_string(),
            "H100_SXM fp8: compute datasheet default 0.75, memory datasheet default 0.85"
                .to_string(),
        ]
    );
}

/// Work whose time the scenario declares names that as its compute model, group by group:
/// a task's `duration`, an actor's `call_duration`, a service's `service_time`. Past eight
/// groups, a count.
#[test]
fn work_with_declared_times_names_them_as_its_compute_model() {
    let s = orrery::load_str(
        "t.orr",
        "cluster c {\n  node dgx_h100 x 1\n}\n\
         workload w {\n  tasks a x 2 {\n    resources { GPU: 1 }\n    duration 250 ms\n  }\n  actor p x 1 {\n    resources { GPU: 1 }\n    calls 2\n    call_duration 3 s\n  }\n  service s {\n    resources { GPU: 1 }\n    arrival poisson 1 /s\n    service_time 20 ms exponential\n  }\n}\n",
    )
    .spec
    .unwrap();
    assert_eq!(
        orrery::compute::model_sources(&s),
        vec![
            "w.a: declared duration 250 ms per task (no roofline)".to_string(),
            "w.p: declared call_duration 3 s per call (no roofline)".to_string(),
            "w.s: declared service_time, exponential with mean 20 ms per batch (no roofline)"
                .to_string(),
        ]
    );
    let groups: String = (0..10)
        .map(|i| format!("  tasks t{i} x 1 {{\n    duration 1 s\n  }}\n"))
        .collect();
    let s = orrery::load_str("t.orr", &format!("workload w {{\n{groups}}}\n"))
        .spec
        .unwrap();
    let m = orrery::compute::model_sources(&s);
    assert_eq!(m.len(), 9, "{m:?}");
    assert_eq!(m[8], "and 2 more groups with declared times (no roofline)");
}
