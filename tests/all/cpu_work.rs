//! CPU work shows like accelerator work (issue 40): a cluster running only CPU tasks and
//! actors (Ray tasks with `num_cpus` only) has busy and allocated CPUs in run.json,
//! `cpu_utilization.csv` and the printed table, CPU rows in `timeline.csv`, and slices on CPU
//! lanes of its nodes in the Perfetto trace, each equal to the closed form
//! CPUs busy × time / (CPUs × window).

use std::path::{Path, PathBuf};
use std::process::Command;

fn orrery(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "orrery {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-cpu-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Two CPU-only nodes of 16 logical CPUs (8 cores, 2 threads each), no accelerators.
const CLUSTER: &str = "node cpu16 {\n  cpu sockets 1, cores 8, threads 16\n  memory 64 GiB\n}\n\ncluster c {\n  node cpu16 x 2\n}\n";

/// Run `text` with `--trace`; the output folder and what the run printed.
fn run(name: &str, text: &str) -> (PathBuf, String) {
    let d = dir(name);
    let file = d.join(format!("{name}.orr"));
    std::fs::write(&file, text).unwrap();
    let out = d.join("out");
    let printed = orrery(&[
        "run",
        &file.display().to_string(),
        "--out",
        &out.display().to_string(),
        "--trace",
        "--no-plots",
    ]);
    (out, printed)
}

fn json(dir: &Path, f: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap()
}

/// `cpu_utilization.csv`'s rows of `scope`: (name, CPUs, time, busy, allocated).
fn cpu_rows(dir: &Path, scope: &str) -> Vec<(String, f64, f64, f64, f64)> {
    let text = std::fs::read_to_string(dir.join("cpu_utilization.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("orrery,scenario_hash,seed,scope,name,cpus,time_s,bin_s,busy_cpus,allocated_cpus")
    );
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c[3] == scope)
        .map(|c| {
            let f = |i: usize| c[i].parse::<f64>().unwrap();
            // Few changes here: exact rows.
            assert_eq!(f(7), 0.0);
            (c[4].to_string(), f(5), f(6), f(8), f(9))
        })
        .collect()
}

/// CPU-seconds under a step function ((time, level) rows) up to `end`.
fn area(rows: &[(f64, f64)], end: f64) -> f64 {
    rows.iter()
        .enumerate()
        .map(|(i, &(t, v))| v * (rows.get(i + 1).map_or(end, |r| r.0) - t))
        .sum()
}

#[test]
fn cpu_only_tasks_show_in_utilization_timeline_and_trace() {
    // Six tasks of 4 CPUs for 10 s: 24 of the cluster's 32 CPUs for the whole 10 s window, so
    // busy = allocated = 6 × 4 × 10 / (32 × 10) = 75 %, 240 CPU-seconds.
    let text = format!(
        "{CLUSTER}\nworkload w {{\n  tasks t x 6 {{\n    resources {{ CPU: 4 }}\n    duration 10 s\n  }}\n}}\n"
    );
    let (out, printed) = run("tasks", &text);
    let r = json(&out, "run.json");
    let m = &r["metrics"];
    assert_eq!(m["horizon_s"], 10.0);
    let t = &m["cpu_utilization_by_node_type"]["cpu16"];
    assert_eq!(t["cpus"], 32.0);
    let want = 6.0 * 4.0 * 10.0 / (32.0 * 10.0);
    assert!(
        (t["busy_fraction"].as_f64().unwrap() - want).abs() < 1e-12,
        "{t}"
    );
    assert!(
        (t["allocated_fraction"].as_f64().unwrap() - want).abs() < 1e-12,
        "{t}"
    );
    // Per node: the two nodes' CPU-seconds add up to the 240.
    let per_node: f64 = ["n0", "n1"]
        .iter()
        .map(|n| {
            let u = &m["cpu_utilization"][n];
            assert_eq!(u["cpus"], 16.0, "{n}");
            u["busy_fraction"].as_f64().unwrap() * 16.0 * 10.0
        })
        .sum();
    assert!((per_node - 240.0).abs() < 1e-9, "{per_node}");
    // The devices' table has nothing (there are none); the CPU table says 75 %.
    assert!(
        printed.contains("CPU utilization per node type")
            && printed.contains("cpu16")
            && printed.contains("75.0%"),
        "{printed}"
    );
    // cpu_utilization.csv: the same CPU-seconds, per node and per node type.
    let typed: Vec<(f64, f64)> = cpu_rows(&out, "node_type")
        .into_iter()
        .map(|(_, _, t, b, _)| (t, b))
        .collect();
    assert!((area(&typed, 10.0) - 240.0).abs() < 1e-9, "{typed:?}");
    let mut nodes = 0.0;
    for n in ["n0", "n1"] {
        let rows: Vec<(f64, f64)> = cpu_rows(&out, "node")
            .into_iter()
            .filter(|r| r.0 == n)
            .map(|(_, _, t, b, _)| (t, b))
            .collect();
        nodes += area(&rows, 10.0);
    }
    assert!((nodes - 240.0).abs() < 1e-9);
    // timeline.csv: a CPU row per node; its compute slices are the share of the node's CPUs
    // busy in each bin, so their widths × 16 CPUs add up to the node's CPU-seconds.
    let tl = std::fs::read_to_string(out.join("timeline.csv")).unwrap();
    let mut cpu_seconds = 0.0;
    for l in tl.lines().skip(1) {
        let c: Vec<&str> = l.split(',').collect();
        assert!(c[0].ends_with(" CPU (16 CPUs)"), "{l}");
        assert_eq!(c[3], "compute", "{l}");
        cpu_seconds += (c[2].parse::<f64>().unwrap() - c[1].parse::<f64>().unwrap()) * 16.0;
    }
    assert!((cpu_seconds - 240.0).abs() < 1e-6, "{cpu_seconds}\n{tl}");
    assert!(tl.contains("n0 CPU (16 CPUs)") && tl.contains("n1 CPU (16 CPUs)"));
    // trace.json: one 10 s slice of 4 CPUs per task, on CPU lanes of its node, lanes named,
    // no two slices of a lane overlapping.
    let tr = json(&out, "trace.json");
    let ev = tr["traceEvents"].as_array().unwrap();
    let cpu: Vec<&serde_json::Value> = ev
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"].as_u64().unwrap() >= 3_000_000)
        .collect();
    assert_eq!(cpu.len(), 6);
    for e in &cpu {
        assert_eq!(e["name"], "w.t");
        assert_eq!(e["dur"], 10e6);
        assert_eq!(e["args"]["cpus"], 4.0);
        assert_eq!(e["args"]["kind"], "compute");
        let (pid, tid) = (&e["pid"], &e["tid"]);
        assert!(ev.iter().any(|m| {
            m["ph"] == "M"
                && m["name"] == "thread_name"
                && m["pid"] == *pid
                && m["tid"] == *tid
                && m["args"]["name"]
                    .as_str()
                    .unwrap()
                    .starts_with("CPUs (lane ")
        }));
    }
    let mut lanes: Vec<(u64, u64)> = cpu
        .iter()
        .map(|e| (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
        .collect();
    lanes.sort();
    lanes.dedup();
    assert_eq!(lanes.len(), 6, "six concurrent tasks, six lanes: {lanes:?}");
    assert_eq!(tr["metadata"]["events"], 6);
}

#[test]
fn cpu_actors_are_busy_during_their_calls_and_allocated_while_placed() {
    // One actor of 2 CPUs, 3 calls of 4 s, then 20 s of a 1-CPU task started with it (so the
    // window is 20 s): the actor is busy 12 s and holds its CPUs 12 s (it is done after its
    // last call); busy CPU-seconds 2 × 12 + 1 × 20 = 44 of 32 × 20 = 640.
    let text = format!(
        "{CLUSTER}\nworkload w {{\n  actor a x 1 {{\n    resources {{ CPU: 2 }}\n    calls 3\n    call_duration 4 s\n  }}\n  tasks t x 1 {{\n    resources {{ CPU: 1 }}\n    duration 20 s\n  }}\n}}\n"
    );
    let (out, _) = run("actors", &text);
    let m = &json(&out, "run.json")["metrics"];
    assert_eq!(m["horizon_s"], 20.0);
    let t = &m["cpu_utilization_by_node_type"]["cpu16"];
    assert!(
        (t["busy_fraction"].as_f64().unwrap() - 44.0 / 640.0).abs() < 1e-12,
        "{t}"
    );
    assert!(
        (t["allocated_fraction"].as_f64().unwrap() - 44.0 / 640.0).abs() < 1e-12,
        "{t}"
    );
    // Its three calls are back to back: one 12 s slice of 2 CPUs in the trace.
    let tr = json(&out, "trace.json");
    let calls: Vec<&serde_json::Value> = tr["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "w.a")
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["dur"], 12e6);
    assert_eq!(calls[0]["args"]["cpus"], 2.0);
}

#[test]
fn the_timelines_cpu_spans_are_the_busy_cpus() {
    // On a mixed run (GPU training with CPU bundles, CPU and GPU tasks, a node failure), the
    // CPU-seconds of the timeline's CPU spans equal the busy CPU-seconds of every node.
    use orrery::sim::{SimConfig, simulate};
    let l = orrery::load_file(Path::new("scenarios/quickstart.orr")).unwrap();
    let spec = l.spec.unwrap();
    let r = simulate(
        &spec,
        &SimConfig {
            timeline: true,
            ..SimConfig::default()
        },
    );
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let t = &r.timeline;
    assert!(!t.truncated);
    let w = r.metrics.horizon;
    for (n, name) in t.nodes.iter().enumerate() {
        let spans: f64 = t
            .cpu_spans
            .iter()
            .filter(|s| s.node as usize == n)
            .map(|s| s.cpus * (s.end - s.start))
            .sum();
        let u = &r.metrics.cpu_utilization[name];
        let busy = u.busy_fraction * u.cpus * w;
        assert!(
            (spans - busy).abs() <= 1e-6 * busy.max(1.0),
            "{name}: spans {spans} vs busy {busy}"
        );
        assert!(u.allocated_fraction >= u.busy_fraction - 1e-12, "{name}");
    }
    let total: f64 = t.cpu_spans.iter().map(|s| s.cpus * (s.end - s.start)).sum();
    assert!(total > 0.0);
}

#[test]
fn a_sweep_reports_the_busy_cpus() {
    // The sweep's `cpu_utilization` metric: the six 4-CPU tasks of 10 s on 32 CPUs, 75 %
    // busy (the device `utilization` of a cluster without devices has no value).
    let text = format!(
        "{CLUSTER}\nworkload w {{\n  tasks t x 6 {{\n    resources {{ CPU: 4 }}\n    duration 10 s\n  }}\n}}\n\nexperiment e {{\n  seeds 1..2\n  sweep policy in [ray_default, spread]\n  metrics cpu_utilization, utilization\n}}\n"
    );
    let d = dir("sweep");
    let file = d.join("sweep.orr");
    std::fs::write(&file, text).unwrap();
    let out = d.join("out");
    orrery(&[
        "sweep",
        &file.display().to_string(),
        "--out",
        &out.display().to_string(),
        "--no-plots",
    ]);
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let mut lines = summary.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let mut cells = 0;
    for l in lines {
        let c: Vec<&str> = l.split(',').collect();
        let busy: f64 = c[col("cpu_utilization_mean")].parse().unwrap();
        assert!((busy - 0.75).abs() < 1e-12, "{l}");
        assert_eq!(c[col("utilization_mean")], "", "{l}");
        cells += 1;
    }
    assert_eq!(cells, 2);
}
