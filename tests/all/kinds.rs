//! Each kind of work in its own unit (`orrery::experiment::kinds`), the drill's paired no-failure baseline,
//! and the shipped scenarios' headlines, against hand computation.

use orrery::experiment::drill::{Aggregate, DrillConfig, run_drill};
use orrery::experiment::kinds::figures;
use orrery::experiment::measure::ClusterFigures;
use orrery::scenario::Spec;
use orrery::sim::{SimConfig, simulate};
use orrery::{load_file, load_str};
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::collections::BTreeMap;
use std::path::Path;

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn value(v: &[(orrery::experiment::kinds::Column, Option<f64>)], key: &str) -> Option<f64> {
    v.iter()
        .find(|(c, _)| c.key == key)
        .unwrap_or_else(|| panic!("no column {key}"))
        .1
}

/// One GPU replica on n0, requests at 0.5, 1.5, ..., 99.5 s taking 10 ms each; n0 dies at 30 s
/// and the only other node (the head, no GPU) cannot take the replica. So 30 requests are
/// served, all within 50 ms, and the 70 that arrive afterwards never are: attainment of both
/// SLOs is exactly 30 / 100 (not 30 / 30, as counting served requests only would say), both
/// are missed, and the failure costs exactly −0.7 against the no-failure baseline (100 / 100).
const DYING_SERVICE: &str = "node cpu8 {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}\n\
    cluster c {\n  node dgx_h100 x 1\n  node cpu8 x 1\n  head n1\n}\n\
    workload w {\n  service s {\n    replicas 1\n    resources { GPU: 1 }\n    arrival trace \"a.csv\"\n    service_time 10 ms\n    slo p50 50 ms\n    slo p99 50 ms\n  }\n}\n\
    failures {\n  at 30 s kill node n0\n}\n\
    experiment e {\n  horizon 100 s\n}\n";

fn arrivals() -> BTreeMap<String, orrery::scenario::arrivals::Trace> {
    BTreeMap::from([(
        "a.csv".to_string(),
        (0..100).map(|i| i as f64 + 0.5).collect::<Vec<_>>().into(),
    )])
}

#[test]
fn slo_attainment_counts_every_request_that_arrived_and_was_not_served() {
    let s = spec(DYING_SERVICE);
    let r = simulate(
        &s,
        &SimConfig {
            traces: arrivals(),
            ..Default::default()
        },
    );
    let sv = &r.metrics.services[0];
    assert_eq!((sv.arrived, sv.served), (100, 30));
    assert_eq!(sv.served_within_slo, vec![30, 30]);
    assert!(
        sv.slo
            .iter()
            .all(|(_, _, measured, met)| *measured <= 0.05 && !met)
    );
    assert!((sv.slo_violation_fraction - 0.7).abs() < 1e-12);
    let v = figures(&ClusterFigures::of(&s), &r.metrics);
    assert_eq!(value(&v, "w.s.slo_p50_attainment"), Some(0.3));
    assert_eq!(value(&v, "w.s.slo_p99_attainment"), Some(0.3));
    assert_eq!(value(&v, "w.s.served_per_s"), Some(0.3));

    let d = run_drill(
        &s,
        &DrillConfig {
            seeds: Some(vec![1, 2]),
            threads: 1,
            traces: arrivals(),
            ..Default::default()
        },
    );
    assert_eq!(d.baselines.len(), 1);
    let base = &d.baselines[0];
    assert_eq!(base.name, "no_failures");
    let attained = base.aggregate("w.s.slo_p99_attainment").unwrap();
    assert_eq!(attained.mean, Some(1.0));
    let v = &d.variants[0];
    assert_eq!(v.baseline.as_deref(), Some("no_failures"));
    let cost = v.cost_of("w.s.slo_p99_attainment").unwrap();
    assert_eq!((cost.n, cost.mean), (2, Some(-0.7)));
    assert_eq!(v.cost_of("w.s.served").unwrap().mean, Some(-70.0));
    // The window and why, in the report and the table.
    assert_eq!(v.window.seconds, Some(100.0));
    assert_eq!(v.window.source, "experiment e");
    assert!(orrery::experiment::drill::table(&d).contains("window: 100 s (experiment e)"));
}

/// Failures that never fire within the window: every run equals its baseline run, seed for
/// seed, so every cost is exactly 0.
#[test]
fn a_variant_whose_failures_never_fire_costs_nothing() {
    let s = spec(&DYING_SERVICE.replace("at 30 s kill", "at 200 s kill"));
    let d = run_drill(
        &s,
        &DrillConfig {
            seeds: Some(vec![1, 2]),
            threads: 2,
            traces: arrivals(),
            ..Default::default()
        },
    );
    let (base, v) = (&d.baselines[0], &d.variants[0]);
    for (a, b) in v.runs.iter().zip(&base.runs) {
        assert_eq!(a.values, b.values);
    }
    for c in &v.cost {
        assert!(c.mean.is_none_or(|m| m == 0.0), "{c:?}");
    }
}

/// A 10 s step (7.4175 PFLOP per device at 989 TFLOPS × 0.75, one node: no communication),
/// 10 steps, no horizon: the window is the job's 100 s. The node costs 16 $/h and draws 8 kW,
/// and the job holds all 8 of its GPUs, so by hand: 360 steps/h, 16 $/h × 100 s / 3600 / 10
/// steps = 0.0444 $ a step and 8 kW × 100 s / 3600 / 10 = 0.0222 kWh a step.
#[test]
fn training_step_time_and_cost_per_step_by_hand() {
    let s = spec(
        "node box from dgx_h100 {\n  price 16 $/h\n  power 8 kW\n}\n\
         cluster c {\n  node box x 1\n}\n\
         workload w {\n  placement_group pg strategy PACK {\n    bundle { GPU: 8 }\n  }\n  \
         training t on pg steps 10 {\n    compute 7.4175 PFLOP per device bf16\n  }\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    let fig = ClusterFigures::of(&s);
    assert_eq!(fig.devices, 8);
    let v = figures(&fig, &r.metrics);
    let near = |key: &str, want: f64| {
        let got = value(&v, key).unwrap();
        assert!((got - want).abs() < 1e-6 * want, "{key}: {got} vs {want}");
    };
    near("w.t.step_time_s", 10.0);
    // Steps per hour of the job running, and the steps the window holds apart.
    near("w.t.steps_per_h", 360.0);
    near("w.t.steps_done", 10.0);
    // Runtime goodput: 10 kept steps × 10 s over the job's 100 s, nothing lost.
    near("w.t.goodput", 1.0);
    near("w.t.usd_per_step", 16.0 * 100.0 / 3600.0 / 10.0);
    near("w.t.kwh_per_step", 8.0 * 100.0 / 3600.0 / 10.0);
    // Nothing is added across kinds.
    assert!(v.iter().all(|(c, _)| !c.key.contains("throughput")));
    assert!(v.iter().all(|(c, _)| c.kind == "training"));
}

#[test]
fn a_model_job_reports_tokens_mfu_and_dollars_per_million_tokens() {
    let s = spec(
        "node box from dgx_h100 {\n  price 16 $/h\n  power 8 kW\n}\n\
         cluster c {\n  node box x 1\n}\n\
         workload w {\n  placement_group pg strategy PACK {\n    bundle { GPU: 8 }\n  }\n  \
         training t on pg steps 10 {\n    model llama3_8b\n    parallel tp 8\n    batch global 4 micro 1\n  }\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    let fig = ClusterFigures::of(&s);
    let v = figures(&fig, &r.metrics);
    let t = &r.metrics.training[0];
    let step = value(&v, "w.t.step_time_s").unwrap();
    // 4 samples of 8,192 tokens per step.
    let tokens = 4.0 * 8192.0;
    let near = |key: &str, want: f64| {
        let got = value(&v, key).unwrap();
        assert!((got - want).abs() < 1e-9 * want, "{key}: {got} vs {want}");
    };
    near("w.t.tokens_per_s", tokens / step);
    near("w.t.mfu", t.mfu.unwrap());
    let usd = value(&v, "w.t.usd_per_step").unwrap();
    near("w.t.usd_per_m_tokens", usd / tokens * 1e6);
    // A job declared by its FLOP has no tokens: no such columns.
    let flop = spec(
        "cluster c {\n  node dgx_h100 x 1\n}\n\
         workload w {\n  placement_group pg strategy PACK {\n    bundle { GPU: 8 }\n  }\n  \
         training t on pg steps 2 {\n    compute 1 PFLOP per device bf16\n  }\n}\n",
    );
    let r = simulate(&flop, &SimConfig::default());
    let v = figures(&ClusterFigures::of(&flop), &r.metrics);
    assert!(
        v.iter()
            .all(|(c, _)| !c.key.contains("tokens") && !c.key.ends_with("mfu"))
    );
}

/// The cost of a variant is the mean of its per-seed differences from the baseline, with the
/// paired t interval; and the baseline is the scenario with its failure blocks removed, run
/// on the same seeds.
#[test]
fn the_failure_cost_is_the_paired_per_seed_difference() {
    let src = "cluster c {\n  node dgx_h100 x 4\n  head n3\n}\n\
        workload w {\n  placement_group pg strategy STRICT_PACK {\n    bundle { GPU: 8 }\n  }\n  \
        training t on pg steps 100000000 {\n    compute 44.505 PFLOP per device bf16\n    checkpoint every 10 min size 1 GB\n  }\n}\n\
        failures flaky {\n  random node mtbf 10 h repair 1 h\n}\n\
        experiment e {\n  horizon 50 h\n}\n";
    let s = spec(src);
    let d = run_drill(
        &s,
        &DrillConfig {
            seeds: Some(vec![1, 2, 3, 4]),
            threads: 2,
            ..Default::default()
        },
    );
    let (base, v) = (&d.baselines[0], &d.variants[0]);
    let quiet = spec(&src.replace(
        "failures flaky {\n  random node mtbf 10 h repair 1 h\n}\n",
        "",
    ));
    for (run, seed) in base.runs.iter().zip(1..) {
        let m = simulate(
            &quiet,
            &SimConfig {
                seed,
                ..Default::default()
            },
        )
        .metrics;
        assert_eq!(
            run.values["w.t.steps_per_h"],
            Some(3600.0 / m.training[0].step_time)
        );
        assert_eq!(
            run.values["w.t.steps_done"],
            Some(m.training[0].steps_done as f64)
        );
    }
    for key in ["w.t.steps_done", "lost_device_hours", "w.t.goodput"] {
        let diffs: Vec<f64> = v
            .runs
            .iter()
            .zip(&base.runs)
            .map(|(a, b)| {
                assert_eq!(a.seed, b.seed);
                a.values[key].unwrap() - b.values[key].unwrap()
            })
            .collect();
        let n = diffs.len() as f64;
        let mean = diffs.iter().sum::<f64>() / n;
        let sd = (diffs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let t = StudentsT::new(0.0, 1.0, n - 1.0)
            .unwrap()
            .inverse_cdf(0.975);
        let c: &Aggregate = v.cost_of(key).unwrap();
        assert!((c.mean.unwrap() - mean).abs() < 1e-9, "{key}");
        assert!(
            (c.ci_low.unwrap() - (mean - t * sd / n.sqrt())).abs() < 1e-9,
            "{key}"
        );
        assert!(
            (c.ci_high.unwrap() - (mean + t * sd / n.sqrt())).abs() < 1e-9,
            "{key}"
        );
    }
    // Failures cost steps and device-hours, and the stall is part of the lost device-hours.
    assert!(v.cost_of("w.t.steps_done").unwrap().mean.unwrap() < 0.0);
    for r in &v.runs {
        let lost = r.values["lost_device_hours"].unwrap();
        let parts =
            r.values["lost_work_device_hours"].unwrap() + r.values["stalled_device_hours"].unwrap();
        assert!((lost - parts).abs() < 1e-9);
        assert!(r.job_stops == 0 || r.values["stalled_device_hours"].unwrap() > 0.0);
    }
}

/// The shipped H100-vs-MI300X comparison: the step times differ (they tied as summed work
/// units per hour before), each scenario's window says where it came from.
#[test]
fn h100_vs_mi300x_compare_shows_different_step_times() {
    let entry = |f: &str| {
        let l = load_file(Path::new(f)).unwrap();
        orrery::experiment::compare::Entry {
            name: f.into(),
            file: f.into(),
            scenario_hash: orrery::scenario_hash(&l.sources),
            spec: l.spec.unwrap(),
            traces: Default::default(),
            empirical: Default::default(),
            failure_block: None,
            horizon: None,
        }
    };
    let r = orrery::experiment::compare::compare(
        &[
            entry("scenarios/h100_vs_mi300x/h100.orr"),
            entry("scenarios/h100_vs_mi300x/mi300x.orr"),
        ],
        &[1],
        1,
        None,
    );
    let k = r
        .columns
        .iter()
        .position(|c| c.key == "pretrain_13b.llm.step_time_s")
        .unwrap();
    let (h, m) = (
        r.rows[0].metrics[k].mean.unwrap(),
        r.rows[1].metrics[k].mean.unwrap(),
    );
    assert!(h > 1.1 * m, "H100 {h} s vs MI300X {m} s");
    assert!(r.columns.iter().all(|c| !c.key.contains("throughput")));
    assert_eq!(r.rows[0].window.source, "default for services");
    assert_eq!(r.schema_version, 4);
    let json = &orrery::experiment::compare::files(&r)[1].1;
    assert!(json.contains("\"key\": \"pretrain_13b.llm.usd_per_step\""));
}

/// The shipped failure drill: the serving rack loses power at 6 h and the service has nowhere
/// to go, so the requests of the rest of the window are never served and its p99 SLO is not
/// attained (6 h of 6.25 h served at best: 96% < 99%).
#[test]
fn failure_drill_misses_its_p99_slo() {
    let l = load_file(Path::new("scenarios/failure_drill.orr")).unwrap();
    let s = l.spec.unwrap();
    let r = simulate(
        &s,
        &SimConfig {
            seed: 1,
            horizon: Some(6 * 3600 * orrery::engine::SEC + 900 * orrery::engine::SEC),
            failure_block: Some("drill".into()),
            ..Default::default()
        },
    );
    let v = figures(&ClusterFigures::of(&s), &r.metrics);
    let attained = value(&v, "chat_8b.chat.slo_p99_attainment").unwrap();
    assert!(attained < 0.97, "p99 attainment {attained}");
    let sv = &r.metrics.services[0];
    assert!(!sv.slo.iter().find(|(p, ..)| p == "p99").unwrap().3);
}

/// Table cells carry each key's unit: rates per second (`tasks.per_s` included) and per hour,
/// times scaled to a readable unit, fractions as percentages.
#[test]
fn table_cells_carry_the_unit_of_their_key() {
    use orrery::experiment::kinds::cell;
    assert_eq!(cell("tasks.per_s", 0.2, None), "0.2/s");
    assert_eq!(cell("w.s.served_per_s", 20.0, Some(0.5)), "20/s ± 0.5/s");
    assert_eq!(cell("w.j.steps_per_h", 383.0, Some(0.0)), "383/h ± 0/h");
    assert_eq!(cell("tasks.makespan_s", 0.2, None), "200 ms");
    assert_eq!(cell("w.j.goodput", 0.5, None), "50%");
}

/// A drill charges only the work a failure touched: a node killed under one job costs it steps
/// and goodput, while job `b`, on other nodes with no network to share, keeps its step time,
/// steps and goodput to the last digit (its cost is exactly 0).
#[test]
fn a_drill_charges_only_the_work_a_failure_touched() {
    let src = "cluster c {\n  node dgx_h100 x 3\n  head n2\n}\n\
        workload w {\n  placement_group pa strategy STRICT_PACK {\n    bundle { GPU: 8 }\n  }\n  \
        placement_group pb strategy STRICT_PACK {\n    bundle { GPU: 8 }\n  }\n  \
        training a on pa steps 100000 {\n    compute 7.4175 PFLOP per device bf16\n    checkpoint every 10 min size 1 GB\n  }\n  \
        training b on pb steps 100000 {\n    compute 7.4175 PFLOP per device bf16\n  }\n}\n\
        failures one {\n  at 30 min kill node n1\n}\n\
        experiment e {\n  horizon 2 h\n}\n";
    let s = spec(src);
    let d = run_drill(
        &s,
        &DrillConfig {
            seeds: Some(vec![1, 2]),
            threads: 1,
            ..Default::default()
        },
    );
    let (base, v) = (&d.baselines[0], &d.variants[0]);
    for (b, r) in base.runs.iter().zip(&v.runs) {
        assert_eq!(b.seed, r.seed);
        let lost = |job: &str| {
            r.values[&format!("w.{job}.steps_done")] < b.values[&format!("w.{job}.steps_done")]
        };
        // Exactly one job lost steps: the one on n1.
        let (hit, spared) = match (lost("a"), lost("b")) {
            (true, false) => ("a", "b"),
            (false, true) => ("b", "a"),
            other => panic!("seed {}: {other:?}", r.seed),
        };
        for metric in ["steps_per_h", "steps_done", "goodput", "step_time_s"] {
            let key = format!("w.{spared}.{metric}");
            assert_eq!(r.values[&key], b.values[&key], "seed {}: {key}", r.seed);
        }
        let key = format!("w.{hit}.goodput");
        assert!(r.values[&key] < b.values[&key], "seed {}: {key}", r.seed);
    }
}
