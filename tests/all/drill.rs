//! Failure drills against closed forms: steady-state availability of an alternating renewal
//! process (MTBF / (MTBF + MTTR), whatever the distributions), expected work lost per failure
//! with periodic checkpoints (≈ τ/2), byte-identical results across thread counts, variants
//! side by side, the confidence interval, and the `orrery drill` command line.

use orrery::experiment::drill::{
    Aggregate, DrillConfig, DrillReport, csv_files, run_drill, to_json,
};
use orrery::load_str;
use orrery::scenario::Spec;
use std::process::{Command, Output};

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

/// Every drill here also checks that no run broke the simulator's invariants (a drill
/// reports them, and the binary exits 1 on any).
fn drill(s: &Spec, seeds: u64, threads: usize) -> DrillReport {
    let r = run_drill(
        s,
        &DrillConfig {
            seeds: Some((1..=seeds).collect()),
            threads,
            ..Default::default()
        },
    );
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    r
}

const CPU_NODE: &str = "node cpu8 {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}\n";

/// Steady-state availability of an alternating renewal process is E[up] / (E[up] + E[down])
/// (renewal-reward theorem), so it depends on the means only: 10 / (10 + 2) = 5/6 for
/// exponential, Weibull(0.8) and lognormal(σ = 1) up and repair times alike.
///
/// 20 nodes × 2,000 h × 3 seeds ≈ 10,000 up/down cycles per variant; the estimate's standard
/// error is ~0.3% of the mean for the exponential case and ~0.5% for the heavier-tailed ones.
/// Measured (seeds 1..3): 0.004% (exponential), 0.41% (Weibull up, lognormal repair) and 0.21%
/// (lognormal up, Weibull repair) off 5/6; the tolerance is 2%.
#[test]
fn steady_state_availability_is_mtbf_over_mtbf_plus_mttr_for_any_distribution() {
    let s = spec(&format!(
        "{CPU_NODE}cluster c {{\n  node cpu8 x 21\n}}\n\
         failures exponential {{\n  random node mtbf 10 h repair 2 h\n}}\n\
         failures weibull_up_lognormal_repair {{\n  random node mtbf 10 h weibull(shape 0.8) repair 2 h lognormal(sigma 1)\n}}\n\
         failures lognormal_up_weibull_repair {{\n  random node mtbf 10 h lognormal(sigma 1) repair 2 h weibull(shape 0.8)\n}}\n\
         experiment e {{\n  horizon 2000 h\n}}\n"
    ));
    let r = drill(&s, 3, 2);
    // 20 workers fail and recover; the head (n0) is outside `random node`.
    let expected = (20.0 * 10.0 / 12.0 + 1.0) / 21.0;
    let names: Vec<&str> = r.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "exponential",
            "weibull_up_lognormal_repair",
            "lognormal_up_weibull_repair"
        ]
    );
    for v in &r.variants {
        let a = v.aggregate("node_availability").unwrap();
        assert_eq!(a.n, 3);
        let mean = a.mean.unwrap();
        let err = (mean - expected).abs() / expected;
        eprintln!(
            "{}: availability {mean:.5} vs {expected:.5}: {:.3}% off",
            v.name,
            err * 100.0
        );
        assert!(
            err < 0.02,
            "{}: availability {mean:.5} vs {expected:.5} ({:.2}% off)",
            v.name,
            err * 100.0
        );
        // About 2000 h / 12 h × 20 nodes = 3,333 failures per seed.
        let failures = v.aggregate("node_failures").unwrap().mean.unwrap();
        assert!(
            (failures - 3333.0).abs() / 3333.0 < 0.05,
            "{}: {failures} failures per run",
            v.name
        );
        // Every crash is declared dead after Ray's 5 missed checks × 3 s.
        assert_eq!(v.aggregate("time_to_detect_s").unwrap().mean, Some(15.0));
    }
    // No training and no services: those metrics are left out, not reported as zeros.
    assert!(!r.metrics.iter().any(|m| m == "goodput"));
    assert!(!r.metrics.iter().any(|m| m == "slo_violation_fraction"));
}

/// A job on one DGX H100 (8 GPUs, STRICT_PACK), 10 s steps, a checkpoint every τ = 10 min
/// (1 GB at 5 GB/s: a 0.2 s write), node MTBF 10 h (exponential), repair 1 h, 3 spare nodes.
///
/// Expected work lost per failure, per device. After each (re)start at R the job completes
/// checkpoints at R + k(τ + c) (c = 0.2 s write; 10 s steps divide τ). A failure of the job's
/// node comes after A ~ Exp(λ), λ = 1/MTBF, from R (memoryless), and loses the work since the
/// last completed checkpoint: A mod (τ + c). For periodic renewal points,
///   E[A mod T] = 1/λ − T / (e^{λT} − 1) ≈ T/2 − λT²/12,
/// so with T = 600.2 s and 1/λ = 36,000 s: 300.1 − 0.83 = 299.3 s (τ/2 = 300 s; a failure
/// during the 0.2 s write loses nothing, a < 0.1 s effect). Lost device-hours / job stops / 8
/// devices must be within 15% of that; measured on seeds 1..6 (308 job stops): 303.4 s, 1.4%
/// off (the standard error of a mean of ~300 uniform(0, τ) losses is ~3.3%).
#[test]
fn lost_work_per_failure_is_half_the_checkpoint_interval() {
    let s = spec(
        "cluster c {\n  node dgx_h100 x 4\n  head n3\n}\n\
         workload w {\n  placement_group pg strategy STRICT_PACK {\n    bundle { GPU: 8 }\n  }\n  \
         training t on pg steps 100000000 {\n    compute 7.4175 PFLOP per device bf16\n    checkpoint every 10 min size 1 GB\n  }\n}\n\
         failures {\n  random node mtbf 10 h repair 1 h\n}\n\
         experiment e {\n  horizon 500 h\n}\n",
    );
    let r = drill(&s, 6, 2);
    assert_eq!(r.variants.len(), 1);
    let v = &r.variants[0];
    assert_eq!(v.name, "all");
    // Work thrown away only: the stall while the job recovers is counted apart.
    let lost_h: f64 = v.values("lost_work_device_hours").iter().sum();
    let stops: u64 = v.runs.iter().map(|r| r.job_stops).sum();
    assert!(stops > 150, "only {stops} job stops");
    let per_stop_s = lost_h * 3600.0 / stops as f64 / 8.0;
    let (tau, c, mtbf) = (600.0f64, 0.2, 36_000.0);
    let t = tau + c;
    let expected = mtbf - t / ((t / mtbf).exp() - 1.0);
    assert!((expected - 299.3).abs() < 0.1, "{expected}");
    let err = (per_stop_s - expected).abs() / expected;
    eprintln!(
        "lost {per_stop_s:.2} s per failure per device vs {expected:.2} s: {:.2}% off, {stops} stops",
        err * 100.0
    );
    assert!(
        err < 0.15,
        "lost {per_stop_s:.1} s per failure per device vs {expected:.1} s ({:.1}% off, {stops} stops)",
        err * 100.0
    );
    // The job did restart (spares take the bundle) and kept making progress.
    let recover = v.aggregate("time_to_recover_s").unwrap();
    assert!(
        recover.n == 6 && recover.mean.unwrap() >= 15.0,
        "{recover:?}"
    );
    let goodput = v.aggregate("w.t.goodput").unwrap().mean.unwrap();
    assert!(goodput > 0.9 && goodput < 1.0, "goodput {goodput}");
}

/// One-minute steps (the drill-level tests need failures, not many steps).
const TRAINING_TWO_VARIANTS: &str = "cluster c {\n  node dgx_h100 x 4\n  head n3\n}\n\
     workload w {\n  placement_group pg strategy STRICT_PACK {\n    bundle { GPU: 8 }\n  }\n  \
     training t on pg steps 100000000 {\n    compute 44.505 PFLOP per device bf16\n    checkpoint every 10 min size 1 GB\n  }\n}\n\
     failures flaky {\n  random node mtbf 10 h repair 1 h\n}\n\
     failures sturdy {\n  random node mtbf 100 h weibull(shape 0.8) repair 1 h lognormal(sigma 1)\n}\n\
     experiment e {\n  horizon 100 h\n}\n";

/// The same drill with 1 and with 4 threads: identical JSON and CSV, byte for byte.
#[test]
fn results_do_not_depend_on_the_thread_count() {
    let s = spec(TRAINING_TWO_VARIANTS);
    let h = orrery::report::Header {
        orrery: "test".into(),
        scenario: "t.orr".into(),
        scenario_hash: "0".into(),
        seed: 1,
        policy: None,
        failures: None,
        horizon: None,
        model_sources: Vec::new(),
        network_models: Vec::new(),
        timeline_limits: Vec::new(),
        tiers: Vec::new(),
    };
    let one = drill(&s, 8, 1);
    let four = drill(&s, 8, 4);
    assert_eq!(to_json(&h, &one), to_json(&h, &four));
    assert_eq!(csv_files(&one), csv_files(&four));
    // And the runs are really different from each other (the seeds matter).
    let v = &one.variants[0];
    assert_eq!(
        v.runs.iter().map(|r| r.seed).collect::<Vec<_>>(),
        (1..=8).collect::<Vec<_>>()
    );
    let lost = v.values("lost_device_hours");
    assert!(lost.iter().any(|x| *x != lost[0]), "{lost:?}");
    // The timeline holds every run's failures, in time order within a run.
    let files = csv_files(&one);
    let timeline = &files.iter().find(|(n, _)| *n == "timeline.csv").unwrap().1;
    assert!(timeline.starts_with("variant,seed,time_s,kind,subject\n"));
    assert!(timeline.contains(",crash,") && timeline.contains(",job_stopped,w.t"));
    for r in &v.runs {
        assert!(r.timeline.windows(2).all(|w| w[0].time <= w[1].time));
    }
}

/// Two failure blocks side by side: ten times the MTBF, about a tenth of the failures and less
/// lost work, with confidence intervals that do not overlap. (The job's node fails only ~once
/// per run in the sturdy variant, so the ratio of lost work itself is too noisy to pin down.)
#[test]
fn variants_side_by_side_order_lost_work_by_mtbf() {
    let s = spec(TRAINING_TWO_VARIANTS);
    let r = drill(&s, 8, 2);
    let names: Vec<&str> = r.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["flaky", "sturdy"]);
    let lost = |i: usize| {
        r.variants[i]
            .aggregate("lost_device_hours")
            .unwrap()
            .clone()
    };
    let (flaky, sturdy) = (lost(0), lost(1));
    assert!(
        flaky.ci_low.unwrap() > sturdy.ci_high.unwrap(),
        "flaky {flaky:?} vs sturdy {sturdy:?}"
    );
    // 3 failing nodes (the head n3 is outside `random node`): 3 × 100 h / (10 h + 1 h) ≈ 27
    // failures vs 3 × 100 / 101 ≈ 3.
    let failures = |i: usize| {
        r.variants[i]
            .aggregate("node_failures")
            .unwrap()
            .mean
            .unwrap()
    };
    assert!((failures(0) - 27.3).abs() < 5.0, "{}", failures(0));
    assert!((failures(1) - 3.0).abs() < 2.0, "{}", failures(1));
    eprintln!(
        "failures {} vs {}; lost {flaky:?} vs {sturdy:?}",
        failures(0),
        failures(1)
    );
    // Availability follows MTBF / (MTBF + MTTR) in each.
    let avail = |i: usize| {
        r.variants[i]
            .aggregate("node_availability")
            .unwrap()
            .mean
            .unwrap()
    };
    assert!(avail(0) < avail(1));
    assert!((avail(0) - 10.0 / 11.0).abs() < 0.03, "{}", avail(0));
}

/// mean ± t(0.975, n−1) · s / √n, against tabulated t quantiles.
#[test]
fn confidence_interval_uses_students_t() {
    let a = Aggregate::of("x", &[1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!((a.n, a.mean), (5, Some(3.0)));
    let sd = 2.5f64.sqrt();
    assert!((a.std.unwrap() - sd).abs() < 1e-12);
    // t(0.975, 4) = 2.776445 (tables).
    let half = 2.776_445 * sd / 5f64.sqrt();
    assert!((a.half_width().unwrap() - half).abs() < 1e-5, "{a:?}");
    // t(0.975, 1) = 12.706205.
    let b = Aggregate::of("x", &[0.0, 2.0]);
    assert!((b.half_width().unwrap() - 12.706_205).abs() < 1e-5, "{b:?}");
    // One value: a mean, no spread; none: nothing.
    let c = Aggregate::of("x", &[7.0]);
    assert_eq!((c.mean, c.std, c.ci_low), (Some(7.0), None, None));
    assert_eq!(Aggregate::of("x", &[]).mean, None);
}

fn orrery(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn tmp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("orrery-drill-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn drill_command_prints_a_table_and_writes_its_files() {
    let dir = tmp_dir("cli");
    let file = dir.join("two.orr");
    std::fs::write(&file, TRAINING_TWO_VARIANTS).unwrap();
    let out = dir.join("out");
    let f = file.to_str().unwrap();
    let o = orrery(&[
        "drill",
        f,
        "--seeds",
        "3",
        "--threads",
        "2",
        "--horizon",
        "20 h",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // No progress bar when stderr is not a terminal.
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let first = stdout.lines().next().unwrap();
    assert!(
        first.starts_with("orrery ")
            && first.contains(" · hash ")
            && first.ends_with(" · seeds 1..3"),
        "{first}"
    );
    assert!(
        stdout.contains("flaky") && stdout.contains("sturdy"),
        "{stdout}"
    );
    assert!(
        stdout.contains("lost device-hours") && stdout.contains(" ± "),
        "{stdout}"
    );
    for name in [
        "drill.json",
        "drill.csv",
        "cost.csv",
        "per_seed.csv",
        "timeline.csv",
    ] {
        assert!(out.join(name).exists(), "{name} missing");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("drill.json")).unwrap()).unwrap();
    assert_eq!(json["header"]["seeds"], serde_json::json!([1, 2, 3]));
    assert_eq!(json["header"]["scenario_hash"].as_str().unwrap().len(), 16);
    assert_eq!(json["drill"]["variants"][1]["name"], "sturdy");
    let csv = std::fs::read_to_string(out.join("drill.csv")).unwrap();
    assert!(csv.starts_with("variant,horizon_s,horizon_source,metric,n,mean,std,ci_low,ci_high\n"));
    // The window and why: `--horizon 20 h`.
    assert!(
        csv.contains("\nflaky,72000,--horizon,lost_device_hours,3,"),
        "{csv}"
    );
    assert!(stdout.contains("window: 20 h (--horizon)"), "{stdout}");
    assert_eq!(
        json["schema_version"],
        orrery::experiment::drill::SCHEMA_VERSION
    );
    let lost = &json["drill"]["variants"][0]["aggregates"]["lost_device_hours"];
    assert_eq!(lost["n"], 3);
    assert!(lost["mean"].is_number(), "{lost}");
    assert_eq!(json["drill"]["variants"][0]["horizon_s"], 72000.0);
    assert_eq!(json["drill"]["variants"][0]["horizon_source"], "--horizon");
    // The baseline and the two variants, three seeds each.
    let per_seed = std::fs::read_to_string(out.join("per_seed.csv")).unwrap();
    assert_eq!(per_seed.lines().count(), 1 + 3 * 3);
    assert!(per_seed.contains("\nno_failures,1,0,"), "{per_seed}");
    // Same drill, one thread: the same files.
    let out1 = dir.join("out1");
    let o = orrery(&[
        "drill",
        f,
        "--seeds",
        "3",
        "--threads",
        "1",
        "--horizon",
        "20 h",
        "--out",
        out1.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    for name in [
        "drill.json",
        "drill.csv",
        "cost.csv",
        "per_seed.csv",
        "timeline.csv",
    ] {
        assert_eq!(
            std::fs::read(out.join(name)).unwrap(),
            std::fs::read(out1.join(name)).unwrap(),
            "{name}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn drill_command_rejects_bad_input_with_exit_2() {
    let dir = tmp_dir("bad");
    let good = dir.join("good.orr");
    std::fs::write(&good, TRAINING_TWO_VARIANTS).unwrap();
    let bad = dir.join("bad.orr");
    std::fs::write(&bad, "cluster c {\n  node dgx_h1000 x 4\n}\n").unwrap();
    let g = good.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["drill", "/nonexistent/x.orr"], "error: "),
        (vec!["drill", bad.to_str().unwrap()], "bad.orr:2:"),
        (
            vec!["drill", g, "--seeds", "0"],
            "--seeds must be at least 1",
        ),
        (
            vec!["drill", g, "--threads", "0"],
            "--threads must be at least 1",
        ),
        (vec!["drill", g, "--horizon", "12 GB"], "--horizon"),
    ];
    for (args, msg) in cases {
        let o = orrery(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(msg), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Recovery policies side by side: the same cluster and failures with checkpoints every 10 min
/// and every 60 min. Under the τ/2 rule the rarer checkpoints lose about six times the work per
/// failure; over 6 seeds the intervals do not overlap. The command line runs both files
/// together and writes one side-by-side report.
#[test]
fn scenarios_side_by_side_compare_checkpoint_intervals() {
    let scenario = |every: u32| {
        format!(
            "cluster c {{\n  node dgx_h100 x 4\n  head n3\n}}\nworkload w {{\n  placement_group pg strategy STRICT_PACK {{\n    bundle {{ GPU: 8 }}\n  }}\n  training t on pg steps 100000000 {{\n    compute 44.505 PFLOP per device bf16\n    checkpoint every {every} min size 1 GB\n  }}\n}}\nfailures {{\n  random node mtbf 10 h repair 1 h\n}}\nexperiment e {{\n  horizon 100 h\n}}\n"
        )
    };
    let reports: Vec<(String, DrillReport)> = [10, 60]
        .iter()
        .map(|m| (format!("ckpt{m}"), drill(&spec(&scenario(*m)), 6, 2)))
        .collect();
    let r = orrery::experiment::drill::merge(reports);
    let names: Vec<&str> = r.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["ckpt10", "ckpt60"]);
    let lost = |i: usize| {
        r.variants[i]
            .aggregate("lost_device_hours")
            .unwrap()
            .clone()
    };
    assert!(
        lost(1).ci_low.unwrap() > lost(0).ci_high.unwrap(),
        "{:?} vs {:?}",
        lost(0),
        lost(1)
    );

    let dir = tmp_dir("side");
    let (a, b) = (dir.join("ckpt10.orr"), dir.join("ckpt60.orr"));
    std::fs::write(&a, scenario(10)).unwrap();
    std::fs::write(&b, scenario(60)).unwrap();
    let out = dir.join("out");
    let o = orrery(&[
        "drill",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--seeds",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("drill.csv")).unwrap();
    assert!(csv.contains("ckpt10,") && csv.contains("ckpt60,"), "{csv}");
    assert!(String::from_utf8_lossy(&o.stdout).contains(" vs "));
}

/// Ray's DEFAULT and the topology-aware policy on the same work in one run: `--policies`
/// makes each policy a variant; `run --policy` imposes one and says so in the header.
#[test]
fn policies_side_by_side_on_the_same_work() {
    let dir = tmp_dir("policies");
    let file = dir.join("quick.orr");
    std::fs::write(&file, orrery::DEFAULT_SCENARIO.1).unwrap();
    let out = dir.join("out");
    let f = file.to_str().unwrap();
    let o = orrery(&[
        "drill",
        f,
        "--seeds",
        "2",
        "--policies",
        "ray_default,topology_aware",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("drill.csv")).unwrap();
    assert!(
        csv.contains("\nray_default,") && csv.contains("\ntopology_aware,"),
        "{csv}"
    );
    let o = orrery(&[
        "run",
        f,
        "--policy",
        "topology_aware",
        "--out",
        dir.join("run").to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("policy topology_aware"));
    assert_eq!(
        orrery(&["run", f, "--policy", "fastest"]).status.code(),
        Some(2)
    );
}
