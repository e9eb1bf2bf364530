//! Every shipped scenario answers the question its header asks (issue 40): each test runs the
//! command the header names (`orrery run`, `sweep`, `drill`, `compare`) and reads the answer
//! from the files it wrote — training.csv, placement_groups.csv, run.json, summary.csv,
//! drill.csv, compare.csv, report.md — checking it against a closed form where one exists and
//! against the figure the header states, as printed (`answers::states`), so that neither the
//! simulation nor the header can drift from the other. This file: the training and fabric
//! scenarios and the failure drills; `scenario_answers_serving.rs`: the serving ones.

use super::answers::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Every scenario file shipped, and the test of this file or `scenario_answers_serving.rs`
/// that reads its answer.
const ANSWERED: &[(&str, &str)] = &[
    ("dragonfly.orr", "dragonfly_answer"),
    ("failure_drill.orr", "failure_drill_answer"),
    ("h100_vs_mi300x/h100.orr", "h100_vs_mi300x_answer"),
    ("h100_vs_mi300x/mi300x.orr", "h100_vs_mi300x_answer"),
    ("h100_vs_mi300x/workload.orr", "h100_vs_mi300x_answer"),
    ("h200_roofline.orr", "h200_roofline_answer"),
    ("heterogeneous_fleet.orr", "heterogeneous_fleet_answer"),
    ("korthikanti/175b.orr", "korthikanti_answers"),
    ("korthikanti/1t.orr", "korthikanti_answers"),
    ("korthikanti/22b.orr", "korthikanti_answers"),
    ("korthikanti/530b.orr", "korthikanti_answers"),
    (
        "llama70b_hardware_mix/b200.orr",
        "llama70b_hardware_mix_answer",
    ),
    (
        "llama70b_hardware_mix/h100.orr",
        "llama70b_hardware_mix_answer",
    ),
    (
        "llama70b_hardware_mix/h200.orr",
        "llama70b_hardware_mix_answer",
    ),
    (
        "llama70b_hardware_mix/mi300x.orr",
        "llama70b_hardware_mix_answer",
    ),
    (
        "llama70b_hardware_mix/workload.orr",
        "llama70b_hardware_mix_answer",
    ),
    ("llm_disaggregated.orr", "llm_disaggregated_answer"),
    ("llm_pipeline.orr", "llm_pipeline_answer"),
    ("llm_serving.orr", "llm_serving_answer"),
    ("llm_trace_replay/replay.orr", "llm_trace_replay_answer"),
    ("mixed_inference.orr", "mixed_inference_answer"),
    ("moe_training.orr", "moe_training_answer"),
    ("quickstart.orr", "quickstart_answer"),
    ("rail_planes.orr", "rail_planes_answer"),
    ("shared_fabric.orr", "shared_fabric_answer"),
    ("sweep_fabric.orr", "sweep_fabric_answer"),
    ("torus_3d.orr", "torus_3d_answer"),
    ("tpu_slices.orr", "tpu_slices_answer"),
    ("tpu_slices/job.orr", "tpu_slices_answer"),
    ("tpu_slices/no_spare.orr", "tpu_slices_answer"),
];

#[test]
fn every_shipped_scenario_states_its_question_and_has_an_answer_test() {
    let files: Vec<String> = orr_files(Path::new("scenarios"))
        .iter()
        .map(|p| {
            p.strip_prefix("scenarios")
                .unwrap()
                .display()
                .to_string()
                .trim_start_matches('/')
                .to_string()
        })
        .collect();
    let mut files = files;
    files.sort();
    let mut listed: Vec<String> = ANSWERED.iter().map(|(f, _)| f.to_string()).collect();
    listed.sort();
    assert_eq!(
        files, listed,
        "a scenario was added or removed: list it in ANSWERED with the test of its answer"
    );
    let tests = std::fs::read_to_string("tests/all/scenario_answers.rs").unwrap()
        + &std::fs::read_to_string("tests/all/scenario_answers_serving.rs").unwrap();
    for (f, test) in ANSWERED {
        let h = header(&format!("scenarios/{f}"));
        assert!(
            h.contains("Question"),
            "scenarios/{f} does not start with a comment stating its question:\n{h}"
        );
        assert!(
            tests.contains(&format!("fn {test}()")),
            "no test {test} for scenarios/{f}"
        );
    }
}

/// Communication per step (s) of each training job in `out`'s training.csv, by workload.
fn comm(out: &Path) -> BTreeMap<String, f64> {
    csv(&out.join("training.csv"))
        .iter()
        .map(|r| {
            let steps = num(r, "steps_done");
            assert!(steps > 0.0, "{r:?}");
            (
                r["workload"].clone(),
                num(r, "communication_time_s") / steps,
            )
        })
        .collect()
}

/// Each job's mean communication per step from its wall time: end − start − compute −
/// checkpoint writes, over its steps (every step counts, whatever network share it got).
fn wall_comm(out: &Path) -> BTreeMap<String, f64> {
    csv(&out.join("training.csv"))
        .iter()
        .map(|r| {
            let c = num(r, "finished_s")
                - num(r, "started_s")
                - num(r, "compute_time_s")
                - num(r, "checkpoint_time_s");
            (r["workload"].clone(), c / num(r, "steps_done"))
        })
        .collect()
}

/// `text` with `from` replaced (which must be there), as a scenario file in a fresh folder.
fn variant(name: &str, text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} is not in the scenario");
    let d = dir(&format!("{name}-src"));
    let f = d.join(format!("{name}.orr"));
    std::fs::write(&f, text.replacen(from, to, 1)).unwrap();
    f.display().to_string()
}

#[test]
fn quickstart_answer() {
    // The policy sweep (one seed): the placements, the communication per step and the
    // makespans, from report.md and summary.csv.
    let f = "scenarios/quickstart.orr";
    let out = dir("quickstart");
    orrery(&[
        "sweep",
        f,
        "--seeds",
        "1",
        "--out",
        &out.display().to_string(),
        "--no-plots",
    ]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for said in [
        "`pretrain.gang` was placed on 2 racks (r0.n2 r0.n3 r1.n0 r1.n1) with policy=ray_default, and on 1 rack (r1.n0 r1.n1 r1.n2 r1.n3) with policy=topology_aware.",
        "`pretrain.llm` communicated 0.342 s per step",
        "and 0.284 s per step",
    ] {
        assert!(md.contains(said), "report.md does not say {said:?}:\n{md}");
    }
    says(f, "r0.n2 r0.n3 r1.n0 r1.n1");
    let s = csv(&out.join("summary.csv"));
    let makespan = |p: &str| num(row(&s, "policy", p), "makespan_s_mean");
    let gained = makespan("ray_default") - makespan("topology_aware");
    assert!((80.0..130.0).contains(&gained), "{gained}");
    says(f, "It finishes about 100 s earlier.");
    // Before the failure at 40 min: 0.34 s against 0.24 s, the 105 ms of the rings' 5.25 GB
    // per NIC at a 200G uplink's 25 GB/s instead of the NIC's 50 GB/s.
    let before = |p: &str| {
        comm(&run(
            &format!("quickstart-{p}"),
            f,
            &["--policy", p, "--horizon", "39 min"],
        ))["pretrain"]
    };
    let (ray, topo) = (before("ray_default"), before("topology_aware"));
    states(f, ray, "0.34 s under Ray's placement");
    states(f, topo, "0.24 s per step under `topology_aware`");
    let extra = 5.25e9 / 25e9 - 5.25e9 / 50e9;
    assert!(((ray - topo) - extra).abs() < 0.02 * extra, "{ray} {topo}");
}

#[test]
fn dragonfly_answer() {
    let f = "scenarios/dragonfly.orr";
    let c = comm(&run("dragonfly", f, &[]));
    // 2·31/32·8 GB at a 200 GB/s local link, and at a 50 GB/s global link, plus latency.
    let ring = |bw: f64| 2.0 * 31.0 / 32.0 * 8e9 / bw;
    assert!(c["in_group"] > ring(200e9) && c["in_group"] < 1.01 * ring(200e9));
    assert!(c["across_groups"] > ring(50e9) && c["across_groups"] < 1.01 * ring(50e9));
    states(f, c["in_group"] * 1e3, "in_group 77.8 ms");
    states(f, c["across_groups"] * 1e3, "across_groups 310.3 ms");
    let check = orrery(&["check", "--json", f]);
    let v: serde_json::Value = serde_json::from_str(&check).unwrap();
    assert_eq!(
        v["scenarios"][0]["summary"]["bisection_bytes_per_s"],
        1.6e12
    );
    says(f, "bisection 1.6 TB/s per direction");
}

#[test]
fn torus_3d_answer() {
    let f = "scenarios/torus_3d.orr";
    let c = comm(&run("torus", f, &[]));
    let ring = 2.0 * 31.0 / 32.0 * 8e9 / 100e9;
    assert!(c["line"] > ring && c["line"] < 1.01 * ring, "{c:?}");
    assert!((c["shuffled"] / c["line"] - 2.0).abs() < 0.01, "{c:?}");
    states(f, c["line"] * 1e3, "line 155.3 ms");
    states(f, c["shuffled"] * 1e3, "shuffled 310.3 ms");
    // What to change: ECMP spreads the shuffled ring's two-hop steps.
    let text = std::fs::read_to_string(f).unwrap();
    let ecmp = variant("torus-ecmp", &text, "    routing dimension_order\n", "");
    let e = comm(&run("torus-ecmp", &ecmp, &[]));
    states(f, e["shuffled"] * 1e3, "both ways round (233 ms)");
    let v: serde_json::Value = serde_json::from_str(&orrery(&["check", "--json", f])).unwrap();
    assert_eq!(
        v["scenarios"][0]["summary"]["bisection_bytes_per_s"],
        3.2e12
    );
}

#[test]
fn rail_planes_answer() {
    let f = "scenarios/rail_planes.orr";
    let out = run("rail", f, &[]);
    let r = json(&out.join("run.json"));
    let fm = &r["metrics"]["failures"];
    let kinds: Vec<&str> = fm["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds[0], "switch_down");
    assert_eq!(kinds.iter().filter(|k| **k == "nic_down").count(), 8);
    assert_eq!(kinds.iter().filter(|k| **k == "job_stopped").count(), 1);
    // The cost: the work since the last checkpoint (written every 5 s) on 32 GPUs, and a
    // slower step on seven planes.
    let lost = fm["lost_work_device_hours"].as_f64().unwrap();
    assert!(lost > 0.0 && lost <= 32.0 * 5.0 / 3600.0, "{lost}");
    let text = std::fs::read_to_string(f).unwrap();
    let healthy = variant(
        "rail-healthy",
        &text,
        "  at 10 s down switch plane3 for 20 s\n",
        "",
    );
    let h = comm(&run("rail-healthy", &healthy, &[]))["llm"];
    let ring = 2.0 * 31.0 / 32.0 * 8e9 / (8.0 * 50e9);
    assert!(h > ring && h < 1.02 * ring, "{h}");
    states(f, h * 1e3, "39.0 ms");
    let down = variant(
        "rail-down",
        &text,
        "at 10 s down switch plane3 for 20 s",
        "at 0 s down switch plane3",
    );
    let d = comm(&run("rail-down", &down, &[]))["llm"];
    assert!(d >= 2.0 * ring, "{d}");
    states(f, d * 1e3, "the flow model gives 89 ms");
    let mixed = comm(&out)["llm"];
    assert!(mixed > h && mixed < d, "{mixed}");
}

#[test]
fn shared_fabric_answer() {
    let f = "scenarios/shared_fabric.orr";
    let text = std::fs::read_to_string(f).unwrap();
    // The other job's training removed: its `training` block dropped, its group kept.
    let without = |name: &str| {
        let head = format!("  training {name} on ");
        let (mut out, mut skipping) = (String::new(), false);
        for line in text.lines() {
            if line.starts_with(&head) {
                skipping = true;
            } else if skipping {
                skipping = line != "  }";
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
        let d = dir(&format!("shared-no-{name}"));
        let p = d.join("shared.orr");
        std::fs::write(&p, out).unwrap();
        p.display().to_string()
    };
    let both = wall_comm(&run("shared", f, &[]));
    let packed = wall_comm(&run("shared-packed", f, &["--policy", "topology_aware"]));
    let lang = wall_comm(&run("shared-lang", &without("vit"), &[]))["lang_pretrain"];
    let vision = wall_comm(&run("shared-vision", &without("llm"), &[]))["vision_pretrain"];
    // The header's table: spread together, spread with the other job's training removed,
    // rack-packed.
    let ms = |x: f64, d: usize| fixed(x * 1e3, d);
    says(
        f,
        &format!(
            "lang {} ms {} ms {} ms",
            ms(both["lang_pretrain"], 0),
            ms(lang, 0),
            ms(packed["lang_pretrain"], 1)
        ),
    );
    says(
        f,
        &format!(
            "vision {} ms {} ms {} ms",
            ms(both["vision_pretrain"], 0),
            ms(vision, 0),
            ms(packed["vision_pretrain"], 1)
        ),
    );
    assert!(both["lang_pretrain"] > lang && both["vision_pretrain"] > vision);
    // Packed, the ring closed form: NCCL's path latency plus 30/16 of a channel's bytes at a
    // NIC's 50 GB/s.
    let ring = |n: f64| 8.4e-6 + 28.0 * 3.4e-6 + 2.0 * 14e-6 + 30.0 / 16.0 * (n / 8.0) / 50e9;
    assert!(
        (packed["lang_pretrain"] - ring(8e9)).abs() < 1e-6,
        "{packed:?}"
    );
    assert!(
        (packed["vision_pretrain"] - ring(4e9)).abs() < 1e-6,
        "{packed:?}"
    );
}

#[test]
fn sweep_fabric_answer() {
    // The sweep's 8 GB cells: communication (step time less the 134.8 ms of compute) doubles
    // from 1:1 to 2:1 and doubles again to 4:1.
    let f = "scenarios/sweep_fabric.orr";
    let out = dir("sweep-fabric");
    orrery(&[
        "sweep",
        f,
        "--seeds",
        "1",
        "--out",
        &out.display().to_string(),
        "--no-plots",
    ]);
    let s = csv(&out.join("summary.csv"));
    let compute = 100e12 / (989e12 * 0.75);
    let comm = |ratio: &str, size: &str| {
        let r = s
            .iter()
            .find(|r| {
                r["cluster.lab.fabric.oversubscription"] == ratio
                    && r["workload.train.training.llm.allreduce"] == size
            })
            .unwrap();
        num(r, "step_time_s_mean") - compute
    };
    let (c1, c2, c4) = (
        comm("1:1", "8 GB"),
        comm("2:1", "8 GB"),
        comm("4:1", "8 GB"),
    );
    assert!(
        (c2 / c1 - 2.0).abs() < 0.03 && (c4 / c1 - 4.0).abs() < 0.06,
        "{c1} {c2} {c4}"
    );
    says(
        f,
        &format!(
            "(8 GB: about {}, {} and {} ms a step)",
            fixed(c1 * 1e3, 0),
            fixed(c2 * 1e3, 0),
            fixed(c4 * 1e3, 0)
        ),
    );
    states(f, compute * 1e3, "compute stays 135 ms");
    // With 1 GB the fabric matters less: 4:1 costs a smaller share of the step.
    let share = |size: &str| comm("4:1", size) / comm("1:1", size);
    assert!(share("1 GB") < share("8 GB"));
}

#[test]
fn heterogeneous_fleet_answer() {
    let f = "scenarios/heterogeneous_fleet.orr";
    let out = run("hetero", f, &[]);
    let pgs = csv(&out.join("placement_groups.csv"));
    let nodes = |w: &str| row(&pgs, "workload", w)["nodes"].clone();
    assert_eq!(
        row(&pgs, "workload", "packed")["domain"],
        "ray.io/gpu-domain=nvl0"
    );
    assert!(nodes("packed").split(' ').all(|n| n.starts_with("nvl0.")));
    let split = nodes("split");
    assert_eq!(
        split.split(' ').filter(|n| n.starts_with("nvl1.")).count(),
        8
    );
    assert_eq!(
        split.split(' ').filter(|n| n.starts_with("nvl2.")).count(),
        8
    );
    assert!(nodes("tpu_job").split(' ').all(|n| n.starts_with("tpu.h")));
    // The service is the only work on the H100 nodes: they are busy.
    let r = json(&out.join("run.json"));
    assert!(
        r["metrics"]["utilization_by_node_type"]["dgx_h100"]["busy_fraction"].as_f64() > Some(0.0)
    );
    let c = comm(&out);
    // NVLS 16 GB at 534 GB/s = 30.0 ms; ring 2·63/64·16 GB at 4 × 50 GB/s = 157.5 ms.
    assert!((0.0300..0.0325).contains(&c["packed"]), "{c:?}");
    assert!((0.1575..0.1600).contains(&c["split"]), "{c:?}");
    states(f, c["packed"] * 1e3, "packed 32.0 ms");
    states(f, c["split"] * 1e3, "split 158 ms");
    let t = csv(&out.join("training.csv"));
    let step = |w: &str| num(row(&t, "workload", w), "step_time_s");
    states(
        f,
        c["split"] / c["packed"],
        "costs this job 5x its communication",
    );
    states(f, step("split") / step("packed"), "3.6x its step time");
}

#[test]
fn moe_training_answer() {
    let f = "scenarios/moe_training.orr";
    let out = run("moe", f, &[]);
    let t = csv(&out.join("training.csv"));
    let c = comm(&out);
    let step = |w: &str| num(row(&t, "workload", w), "step_time_s");
    let compute = |w: &str| num(row(&t, "workload", w), "compute_time_s") / 2.0;
    states(f, c["spread"], "`spread` exposes 2.46 s");
    states(f, c["packed"], "`packed` 0.85 s");
    states(f, c["spread"] - c["packed"], "of the 1.61 s difference");
    states(f, compute("packed"), "Same compute (17.7 s");
    assert_eq!(compute("packed"), compute("spread"));
    states(f, step("spread"), "the step is 20.1 s");
    states(f, step("packed"), "against 18.5 s");
    states(
        f,
        100.0 * (1.0 - step("packed") / step("spread")),
        "saves about 8% of the step",
    );
}

#[test]
fn korthikanti_answers() {
    for (k, published) in [
        ("22b", 1.42),
        ("175b", 18.13),
        ("530b", 49.05),
        ("1t", 94.42),
    ] {
        let f = format!("scenarios/korthikanti/{k}.orr");
        let t = csv(&run(&format!("korthikanti-{k}"), &f, &[]).join("training.csv"));
        let step = num(&t[0], "step_time_s");
        states(
            &f,
            step,
            &format!("gives {} s per iteration", fixed(step, 2)),
        );
        let err = 100.0 * (step / published - 1.0);
        says(
            &f,
            &format!("{:+.0}% from the published {published:.2} s", err),
        );
        assert!(err.abs() < 10.0, "{k}: {err}%");
    }
}

/// The mean of `metric` for `variant` in a drill's drill.csv.
fn drill_mean(rows: &[BTreeMap<String, String>], variant: &str, metric: &str) -> f64 {
    let r = rows
        .iter()
        .find(|r| r["variant"] == variant && r["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} of {variant} in drill.csv"));
    num(r, "mean")
}

#[test]
fn tpu_slices_answer() {
    // The drill of the two clusters, the same job (tpu_slices/job.orr) and failure.
    let f = "scenarios/tpu_slices.orr";
    let failure = |file: &str| {
        let t = std::fs::read_to_string(file).unwrap();
        t[t.find("failures slice_loss {").unwrap()..].to_string()
    };
    assert_eq!(failure(f), failure("scenarios/tpu_slices/no_spare.orr"));
    let out = dir("tpu-drill");
    orrery(&[
        "drill",
        f,
        "scenarios/tpu_slices/no_spare.orr",
        "--seeds",
        "1",
        "--out",
        &out.display().to_string(),
        "--no-plots",
    ]);
    let d = csv(&out.join("drill.csv"));
    let (spare, none) = ("tpu_slices/slice_loss", "no_spare/slice_loss");
    let m = |v: &str, k: &str| drill_mean(&d, v, k);
    // Stalled: with the spare, the GCS's 15 s and the 1.12 TB checkpoint's load at the
    // store's 320 GB/s; without, until s1 is back 4 h later, then the same load.
    let load = 1.12e12 / 320e9;
    assert!((m(spare, "time_to_recover_s") - (15.0 + load)).abs() < 1e-6);
    assert!((m(none, "time_to_recover_s") - (4.0 * 3600.0 + load)).abs() < 1e-6);
    states(
        f,
        m(spare, "time_to_recover_s"),
        "the job is stalled 18.5 s",
    );
    says(f, "stalled 4 h");
    // Chip-hours: the same work thrown away (the hour since the last checkpoint, on 256
    // chips), and 256 chips stalled for the stall.
    let thrown = m(spare, "lost_work_device_hours");
    assert_eq!(thrown, m(none, "lost_work_device_hours"));
    assert!(thrown > 256.0 * 0.95 && thrown < 256.0, "{thrown}");
    let stalled = |v: &str| m(v, "stalled_device_hours");
    assert!((stalled(spare) - 256.0 * m(spare, "time_to_recover_s") / 3600.0).abs() < 1e-6);
    assert!((stalled(none) - 256.0 * m(none, "time_to_recover_s") / 3600.0).abs() < 1e-6);
    states(f, m(spare, "lost_device_hours"), "loses 255 chip-hours");
    states(f, thrown, "254 of work since its last checkpoint");
    states(f, stalled(spare), "plus 1.3 stalled");
    states(f, m(none, "lost_device_hours"), "1,278 chip-hours lost");
    states(f, stalled(none), "(1,024 of them stalled)");
    states(
        f,
        100.0 * m(none, "pretrain_70b.llm.goodput"),
        "goodput 73% against 93%",
    );
    states(f, 100.0 * m(spare, "pretrain_70b.llm.goodput"), "93%");
    // The spare's price: 64 chips at $4.20 for the 24 h window; what it saves.
    let (with, without) = (m(spare, "cost_usd"), m(none, "cost_usd"));
    assert!((with - without - 64.0 * 4.20 * 24.0).abs() < 1e-6);
    states(f, with - without, "= $6,451 a day");
    states(f, with, "(cluster cost $32,256 against");
    states(f, without, "$25,805)");
    let saved = m(none, "lost_device_hours") - m(spare, "lost_device_hours");
    states(f, saved, "saves 1,023 chip-hours");
    states(f, saved * 4.20, "($4,296) of this failure");
    assert!(saved * 4.20 < with - without, "the spare pays: {saved}");
    // The break-even repair time: the spare's chip-hours over the job's chips.
    says(f, &format!("64 x 24 / 256 = {} h", 64 * 24 / 256));
    // `orrery run` alone: the spare's side, in run.json's failure timeline.
    let r = json(&run("tpu-run", f, &[]).join("run.json"));
    let t = r["metrics"]["failures"]["timeline"]
        .as_array()
        .unwrap()
        .clone();
    let at = |k: &str| {
        t.iter().find(|e| e["kind"] == k).unwrap()["time_s"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(at("job_stopped"), 3.0 * 3600.0);
    assert!((at("job_resumed") - at("job_stopped") - 18.5).abs() < 1e-9);
    let lost = r["metrics"]["failures"]["lost_device_hours"]
        .as_f64()
        .unwrap();
    says(f, &format!("`lost {} device-hours`", fixed(lost, 2)));
}

#[test]
fn failure_drill_answer() {
    let f = "scenarios/failure_drill.orr";
    let out = dir("failure-drill-sweep");
    orrery(&[
        "sweep",
        f,
        "--seeds",
        "2",
        "--out",
        &out.display().to_string(),
        "--no-plots",
    ]);
    let s = csv(&out.join("summary.csv"));
    let m = |p: &str, k: &str| {
        let r = row(&s, "policy", p);
        // Both seeds alike: no background failure fires in the window (the requests' arrivals
        // differ, so the service's figures do by a little).
        if !k.starts_with("slo") {
            assert_eq!(
                num(r, &format!("{k}_lo")),
                num(r, &format!("{k}_hi")),
                "{p} {k}"
            );
        }
        num(r, &format!("{k}_mean"))
    };
    for p in ["ray_default", "spread"] {
        states(
            f,
            m(p, "lost_device_hours"),
            "120 under ray_default and spread",
        );
        states(f, 100.0 * m(p, "goodput"), "goodput 87.3% and 83.1%");
        states(f, m(p, "recovery_time_s"), "9.25 s on average");
    }
    states(
        f,
        m("topology_aware", "lost_device_hours"),
        "160 under topology_aware",
    );
    states(f, 100.0 * m("topology_aware", "goodput"), "83.1%");
    states(
        f,
        m("topology_aware", "recovery_time_s"),
        "11.75 s under topology_aware",
    );
    // The three job recoveries: the checkpoint's 544 GB at the store's 128 GB/s, after the
    // GCS's 15 s for the crash.
    let load = 544e9 / 128e9;
    states(f, load, "4.25 s after the NIC flap");
    assert!((m("ray_default", "recovery_time_s") - (3.0 * load + 15.0) / 3.0).abs() < 1e-9);
    // The service: rack r3 down from 6 h of the 12 h, whatever the policy.
    for p in ["ray_default", "spread", "topology_aware"] {
        let v = m(p, "slo_violation_fraction");
        assert!((v - 0.5).abs() < 0.001, "{p}: {v}");
    }
    says(f, "(slo_violations 0.5)");
    // Why topology_aware loses more: its job stops a fourth time, at r3's power loss.
    let stops = |p: &str| {
        let r = json(&run(&format!("failure-drill-{p}"), f, &["--policy", p]).join("run.json"));
        let svc = &r["metrics"]["services"][0];
        (
            r["metrics"]["failures"]["timeline"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["kind"] == "job_stopped")
                .map(|e| e["time_s"].as_f64().unwrap())
                .collect::<Vec<_>>(),
            svc["latency"]["p50_s"].as_f64().unwrap(),
            svc["latency"]["p99_s"].as_f64().unwrap(),
        )
    };
    let (ray, p50, p99) = stops("ray_default");
    let (topo, _, _) = stops("topology_aware");
    assert_eq!(ray, [1800.0, 3600.0, 14400.0]);
    assert_eq!(topo, [1800.0, 3600.0, 14400.0, 21600.0]);
    states(f, p50 * 1e3, "(p50 104 ms, p99 230 ms)");
    states(f, p99 * 1e3, "230 ms)");
}

#[test]
fn h100_vs_mi300x_answer() {
    let (h, m) = (
        "scenarios/h100_vs_mi300x/h100.orr",
        "scenarios/h100_vs_mi300x/mi300x.orr",
    );
    let out = dir("h100-mi300x");
    orrery(&[
        "compare",
        h,
        m,
        "--seeds",
        "1..3",
        "--out",
        &out.display().to_string(),
        "--no-plots",
    ]);
    let c = csv(&out.join("compare.csv"));
    let v = |s: &str, k: &str| num(row(&c, "scenario", s), &format!("{k}_mean"));
    let job = "pretrain_13b.llm";
    let svc = "chat_70b.chat";
    states(
        h,
        v("mi300x", &format!("{job}.step_time_s")),
        "(step time 7.99 s against",
    );
    states(
        h,
        v("h100", &format!("{job}.step_time_s")),
        "against 9.4 s,",
    );
    states(
        h,
        v("mi300x", &format!("{job}.steps_per_h")),
        "450 against 383 steps/h",
    );
    states(h, v("h100", &format!("{job}.steps_per_h")), "383 steps/h");
    states(
        h,
        100.0 * v("mi300x", &format!("{job}.goodput")),
        "goodput 99.67%",
    );
    states(
        h,
        100.0 * v("h100", &format!("{job}.goodput")),
        "against 99.73%",
    );
    states(
        h,
        v("mi300x", &format!("{svc}.latency_p50_s")) * 1e3,
        "(latency p50 91.3 against",
    );
    states(
        h,
        v("h100", &format!("{svc}.latency_p50_s")) * 1e3,
        "120 ms, p99 196",
    );
    states(
        h,
        v("mi300x", &format!("{svc}.latency_p99_s")) * 1e3,
        "p99 196 against",
    );
    states(
        h,
        v("h100", &format!("{svc}.latency_p99_s")) * 1e3,
        "253 ms), both",
    );
    for s in ["h100", "mi300x"] {
        for slo in ["p50", "p99"] {
            let a = v(s, &format!("{svc}.slo_{slo}_attainment"));
            states(h, 100.0 * a, "(99.998% of requests attained)");
        }
    }
    states(h, v("mi300x", "cost_usd"), "costs $221 against");
    states(h, v("h100", "cost_usd"), "$440 for the hour");
    states(
        h,
        v("mi300x", &format!("{job}.usd_per_step")),
        "($0.369 against",
    );
    states(
        h,
        v("h100", &format!("{job}.usd_per_step")),
        "$0.865 a training step)",
    );
    states(h, v("mi300x", "energy_kwh"), "draws 80 against");
    states(h, v("h100", "energy_kwh"), "81.6 kWh");
    // mi300x.orr repeats the headline.
    states(
        m,
        v("mi300x", &format!("{job}.step_time_s")),
        "step is 7.99 s",
    );
    says(m, "at $221 against $440 for the hour");
}
