//! Parameter sweeps over scenario paths, `orrery sweep` (threads, shards, merge) and
//! `orrery compare`.

use orrery::load_str;
use orrery::scenario::Override;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn orrery(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const BASE: &str = "cluster pod {\n  rack r[0..1] {\n    node dgx_h100 x 1\n  }\n  fabric leaf_spine oversubscription 1:1\n}\n\nworkload w {\n  placement_group g strategy STRICT_SPREAD {\n    bundle { GPU: 8 } x 2\n  }\n  training llm on g steps 5 {\n    compute 10 TFLOP per device bf16\n    allreduce 1 GB algo ring\n  }\n}\n";

/// The swept values of the first experiment, as overrides of one cell (value `k` of each).
fn cell(l: &orrery::scenario::Loaded, ks: &[usize]) -> Vec<Override> {
    let e = &l.spec.as_ref().unwrap().experiments[0];
    e.sweeps
        .iter()
        .zip(ks)
        .map(|(s, &k)| Override {
            param: s.param.clone(),
            value: s.items[k].clone(),
            span: s.span,
        })
        .collect()
}

#[test]
fn a_path_sweep_changes_the_resolved_spec() {
    let src = format!(
        "{BASE}\nexperiment e {{\n  sweep cluster.pod.fabric.oversubscription in [1:1, 4:1]\n  sweep cluster.pod.rack.node.x in [1, 3]\n  sweep workload.w.training.llm.steps in [5, 50]\n  sweep policy in [ray_default, spread]\n}}\n"
    );
    let l = load_str("t.orr", &src);
    assert!(!l.has_errors(), "{}", l.render(false));
    let base = l.spec.as_ref().unwrap();
    assert_eq!(base.experiments[0].runs(), 16);
    let v = l.with_overrides(&cell(&l, &[1, 1, 1, 1]));
    let s = v.spec.as_ref().expect("a valid variant");
    let c = s.cluster.as_ref().unwrap();
    assert_eq!(c.fabric.as_ref().unwrap().oversubscription, 4.0);
    assert!(c.groups.iter().all(|g| g.count == 3), "{:?}", c.groups);
    assert_eq!(s.workloads[0].training[0].steps, 50);
    assert_eq!(
        s.workloads[0].policy,
        orrery::scenario::workload::Policy::Spread
    );
    // The base is untouched, and cell 0 is the base.
    assert_eq!(base.cluster.as_ref().unwrap().groups[0].count, 1);
    let v0 = l.with_overrides(&cell(&l, &[0, 0, 0, 0]));
    let c0 = v0.spec.as_ref().unwrap().cluster.as_ref().unwrap();
    assert_eq!(c0.fabric.as_ref().unwrap().oversubscription, 1.0);
    assert_eq!(c0.groups[0].count, 1);
    // The plan: 16 cells, the last parameter fastest.
    let plan = match orrery::experiment::sweep::plan(&l, "t.orr", &Default::default()) {
        Ok(p) => p,
        Err(_) => panic!("plan failed"),
    };
    assert_eq!(plan.header.cells.len(), 16);
    assert_eq!(plan.header.cells[1], ["1:1", "1", "5", "spread"]);
    assert_eq!(plan.specs[15].workloads[0].training[0].steps, 50);
}

#[test]
fn bad_paths_and_values_are_located_errors() {
    let bad = |sweep: &str| {
        let l = load_str(
            "t.orr",
            &format!("{BASE}\nexperiment e {{\n  {sweep}\n}}\n"),
        );
        assert!(l.has_errors(), "{sweep} should fail");
        l.render(false)
    };
    // The experiment starts on line 18; its sweep is line 19.
    let out = bad("sweep cluster.pod.fabrik.oversubscription in [2:1]");
    assert!(out.contains("t.orr:19:9"), "{out}");
    assert!(out.contains("did you mean `fabric`"), "{out}");
    let out = bad("sweep workload.w.training.llm.allreduce in [1 GB, 3 s]");
    assert!(out.contains("t.orr:19:53"), "{out}");
    assert!(out.contains("expected bytes"), "{out}");
    let out = bad("sweep cluster.pod.rack.node.x in [1, 0]");
    assert!(out.contains("t.orr:19:40"), "{out}");
    assert!(out.contains("out of range"), "{out}");
    // A value that breaks another statement (renamed nodes: the failure's target is gone) is
    // restated at the sweep line, pointing at the statement it broke.
    let src = format!(
        "{BASE}\nfailures {{\n  at 1 h kill node r1.n0\n}}\n\nexperiment e {{\n  sweep cluster.pod.rack.node.name in [n, m]\n}}\n"
    );
    let l = load_str("t.orr", &src);
    let out = l.render(false);
    assert!(
        out.contains("t.orr:23:43: with cluster.pod.rack.node.name = m"),
        "{out}"
    );
    assert!(out.contains("r1.n0"), "{out}");
    let out = bad("sweep replicas in [1]");
    assert!(out.contains("`replicas` cannot be swept"), "{out}");
    // From the command line: exit 2, located.
    let d = tmp("bad");
    let f = d.join("bad.orr");
    std::fs::write(
        &f,
        format!("{BASE}\nexperiment e {{\n  sweep cluster.pod.fabric.oversubscription in [2:1, fast]\n}}\n"),
    )
    .unwrap();
    let o = orrery(&["sweep", f.to_str().unwrap(), "--out", d.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("bad.orr:19:54"), "{}", text(&o));
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

const FILES: [&str; 3] = ["runs.csv", "summary.csv", "summary.json"];

/// A scenario with random failures, so seeds differ and ordering matters.
fn random_scenario(dir: &Path, comment: &str) -> PathBuf {
    let f = dir.join("s.orr");
    std::fs::write(
        &f,
        format!(
            "# {comment}\n{BASE}\nfailures {{\n  random node mtbf 30 s repair 10 s\n}}\n\nexperiment e {{\n  seeds 1..4\n  sweep cluster.pod.fabric.oversubscription in [1:1, 4:1]\n  sweep policy in [ray_default, spread]\n  metrics makespan, step_time, availability, cost\n}}\n"
        ),
    )
    .unwrap();
    f
}

#[test]
fn results_are_identical_whatever_the_thread_count() {
    let d = tmp("threads");
    let f = random_scenario(&d, "threads");
    let mut outs = Vec::new();
    for t in ["1", "4"] {
        let out = d.join(format!("t{t}"));
        let o = orrery(&[
            "sweep",
            f.to_str().unwrap(),
            "--threads",
            t,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        outs.push(out);
    }
    let runs = read(&outs[0], "runs.csv");
    assert_eq!(runs.lines().count(), 1 + 4 * 4, "{runs}");
    // Seeds differ (random failures), so the order of rows is what is being checked.
    let avail: Vec<&str> = runs
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(9).unwrap())
        .collect();
    assert!(avail.windows(2).any(|w| w[0] != w[1]), "{runs}");
    for name in FILES {
        assert_eq!(read(&outs[0], name), read(&outs[1], name), "{name}");
    }
}

#[test]
fn merged_shards_equal_the_unsharded_sweep_and_bad_sets_are_rejected() {
    let d = tmp("shards");
    let f = random_scenario(&d, "shards");
    let f = f.to_str().unwrap();
    let full = d.join("full");
    let o = orrery(&["sweep", f, "--out", full.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let mut shard_dirs = Vec::new();
    for i in 0..3 {
        let sd = d.join(format!("s{i}"));
        let o = orrery(&[
            "sweep",
            f,
            "--shard",
            &format!("{i}/3"),
            "--threads",
            "2",
            "--out",
            sd.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(sd.join(format!("shard-{i}-of-3.json")).is_file());
        shard_dirs.push(sd.to_str().unwrap().to_string());
    }
    let merged = d.join("merged");
    let mut args = vec!["merge"];
    args.extend(shard_dirs.iter().map(String::as_str));
    args.extend(["--out", merged.to_str().unwrap()]);
    let o = orrery(&args);
    assert!(o.status.success(), "{}", text(&o));
    for name in FILES {
        assert_eq!(read(&full, name), read(&merged, name), "{name}");
    }
    // Where the work ran travels in the shards: the merged report says the same.
    let section = |dir: &Path| {
        let md = read(dir, "report.md");
        let from = md.find("## Where the work ran").expect("the section");
        let to = md[from..].find("## Files").unwrap() + from;
        md[from..to].to_string()
    };
    assert!(
        section(&full).contains("| w.g | r0.n0 r1.n0 |"),
        "{}",
        section(&full)
    );
    assert_eq!(section(&full), section(&merged));
    let out = d.join("rejected");
    let merge = |dirs: &[&str]| {
        let mut a = vec!["merge"];
        a.extend_from_slice(dirs);
        a.extend(["--out", out.to_str().unwrap()]);
        orrery(&a)
    };
    // Missing.
    let o = merge(&[&shard_dirs[0], &shard_dirs[2]]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("missing shard(s): 1/3"), "{}", text(&o));
    // Duplicate.
    let o = merge(&[
        &shard_dirs[0],
        &shard_dirs[1],
        &shard_dirs[2],
        &shard_dirs[1],
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("given twice"), "{}", text(&o));
    // Foreign: the same sweep of a scenario whose text differs (another hash).
    let fd = d.join("foreign");
    std::fs::create_dir_all(&fd).unwrap();
    let ff = random_scenario(&fd, "another scenario");
    let fo = fd.join("s2");
    let o = orrery(&[
        "sweep",
        ff.to_str().unwrap(),
        "--shard",
        "2/3",
        "--out",
        fo.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = merge(&[&shard_dirs[0], &shard_dirs[1], fo.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("belongs to another sweep") && text(&o).contains("scenario hash"),
        "{}",
        text(&o)
    );
    // A shard with a run of another shard.
    let p = Path::new(&shard_dirs[1]).join("shard-1-of-3.json");
    let mut s: serde_json::Value =
        serde_json::from_str(&read(p.parent().unwrap(), "shard-1-of-3.json")).unwrap();
    s["runs"][0]["run"] = serde_json::json!(0);
    let td = d.join("tampered");
    std::fs::create_dir_all(&td).unwrap();
    std::fs::write(td.join("shard-1-of-3.json"), s.to_string()).unwrap();
    let o = merge(&[&shard_dirs[0], td.to_str().unwrap(), &shard_dirs[2]]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("does not belong to shard 1/3"),
        "{}",
        text(&o)
    );
    // Values are keyed by column (with its unit): a shard without one, or of an older layout
    // (no schema_version, values by position), is refused.
    let original: serde_json::Value =
        serde_json::from_str(&read(p.parent().unwrap(), "shard-1-of-3.json")).unwrap();
    let columns: Vec<&String> = original["runs"][0]["values"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        columns,
        ["availability", "cost_usd", "makespan_s", "step_time_s"]
    );
    let column = columns[2].clone();
    for (edit, msg) in [
        ("drop a value", "has no value for"),
        ("drop the version", "no schema_version"),
    ] {
        let mut s = original.clone();
        if edit == "drop a value" {
            s["runs"][0]["values"]
                .as_object_mut()
                .unwrap()
                .remove(&column);
        } else {
            s.as_object_mut().unwrap().remove("schema_version");
        }
        std::fs::write(td.join("shard-1-of-3.json"), s.to_string()).unwrap();
        let o = merge(&[&shard_dirs[0], td.to_str().unwrap(), &shard_dirs[2]]);
        assert_eq!(o.status.code(), Some(2), "{edit}");
        assert!(text(&o).contains(msg), "{edit}: {}", text(&o));
    }
    assert!(!out.join("summary.csv").exists());
}

#[test]
fn compare_prices_and_powers_the_hardware_mixes_by_the_documented_formula() {
    let d = tmp("compare");
    let o = orrery(&[
        "compare",
        "scenarios/h100_vs_mi300x/h100.orr",
        "scenarios/h100_vs_mi300x/mi300x.orr",
        "--seeds",
        "1..2",
        "--out",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("mi300x"), "{}", text(&o));
    let csv = read(&d, "compare.csv");
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2);
    let col = |row: &[&str], name: &str| -> f64 {
        let i = head
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("{name}"));
        row[i]
            .parse()
            .unwrap_or_else(|_| panic!("{name}: `{}`", row[i]))
    };
    let m = &rows[1];
    assert_eq!(m[2], "mi300x");
    // By hand: 8 nodes × 8 MI300X at the catalog's 3.45 $/h each = 220.8 $/h; 8 nodes at the
    // scenario's 10 kW = 80 kW; services give a 1 h window (and the files say so). Cost
    // 220.8 $, energy 80 kWh.
    assert!((col(m, "price_usd_per_h") - 220.8).abs() < 1e-9);
    assert_eq!(col(m, "power_w"), 80_000.0);
    assert_eq!(col(m, "horizon_s"), 3600.0);
    let source = head.iter().position(|h| *h == "horizon_source").unwrap();
    assert_eq!(m[source], "default for services");
    assert!((col(m, "cost_usd_mean") - 220.8).abs() < 1e-9);
    assert!((col(m, "energy_kwh_mean") - 80.0).abs() < 1e-9);
    // Each kind in its own unit: no column adds tasks, steps and requests.
    assert!(
        head.iter()
            .all(|h| !h.contains("throughput") && !h.contains("perf_per"))
    );
    // $/step: the job's 48 of 64 GPUs at 220.8 $/h for the cluster, over its wall time (the
    // whole 1 h window: it does not finish), per step kept.
    let steps = col(m, "pretrain_13b.llm.steps_done_mean");
    let per_step = col(m, "pretrain_13b.llm.usd_per_step_mean");
    assert!(
        (per_step - 220.8 * 48.0 / 64.0 / steps).abs() < 1e-9,
        "{per_step}"
    );
    // DGX H100: 10.2 kW a node (catalog), 8 nodes, 1 h.
    let h = &rows[0];
    assert!((col(h, "energy_kwh_mean") - 81.6).abs() < 1e-9);
    assert!((col(h, "cost_usd_mean") - col(h, "price_usd_per_h")).abs() < 1e-9);
    let json: serde_json::Value = serde_json::from_str(&read(&d, "compare.json")).unwrap();
    assert_eq!(json["schema_version"], 4);
    assert!((json["rows"][1]["price_usd_per_h"].as_f64().unwrap() - 220.8).abs() < 1e-9);
    assert_eq!(json["rows"][1]["horizon_s"], 3600.0);
    assert_eq!(json["columns"][0]["key"], "pretrain_13b.llm.step_time_s");
    assert_eq!(json["columns"][0]["unit"], "s");
    assert!(json["rows"][1]["runs"][0]["values"]["chat_70b.chat.served_per_s"].is_number());
    // Each row's aggregates are labelled by column, not by position.
    let cost = &json["rows"][1]["metrics"]["cost_usd"];
    assert!(
        (cost["mean"].as_f64().unwrap() - 220.8).abs() < 1e-9,
        "{cost}"
    );
    assert_eq!(cost["n"], 2);
}

#[test]
fn each_kind_of_work_has_its_own_rate_and_throughput_is_an_error() {
    // BASE's job does 5 steps; 12 one-second CPU tasks run beside it. Without a `metrics`
    // line the sweep reports each kind's rate in its own unit over the window (here the
    // makespan: no service), and no column adds them.
    let d = tmp("rates");
    let f = d.join("r.orr");
    let tasks =
        "workload t {\n  tasks a x 12 {\n    resources { CPU: 1 }\n    duration 1 s\n  }\n}\n";
    std::fs::write(
        &f,
        format!(
            "{BASE}\n{tasks}\nexperiment e {{\n  seeds 1..1\n  sweep policy in [ray_default]\n}}\n"
        ),
    )
    .unwrap();
    let out = d.join("out");
    let o = orrery(&["sweep", f.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let runs = read(&out, "runs.csv");
    let mut lines = runs.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| -> f64 {
        let k = head
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("{name} in {head:?}"));
        row[k].parse().unwrap()
    };
    let window = col("makespan_s");
    // Steps per hour of the job running (3600 / its step time, the run's own), and the steps
    // the window holds in their own column.
    assert!((col("steps_done") - 5.0).abs() < 1e-9);
    let alone = orrery::load_str("b.orr", BASE).spec.unwrap();
    let step = orrery::sim::simulate(&alone, &orrery::sim::SimConfig::default())
        .metrics
        .training[0]
        .step_time;
    assert!((col("steps_per_h") - 3600.0 / step).abs() < 1e-6 * col("steps_per_h"));
    assert!((col("tasks_per_s") * window - 12.0).abs() < 1e-9);
    assert!(
        !head
            .iter()
            .any(|h| h.contains("requests") || h.contains("throughput"))
    );
    // Asking for the sum is a located error.
    std::fs::write(
        &f,
        format!("{BASE}\nexperiment e {{\n  seeds 1..1\n  metrics makespan, throughput\n}}\n"),
    )
    .unwrap();
    let o = orrery(&["check", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o);
    assert!(
        err.contains("r.orr:")
            && err.contains("`throughput` is not a metric")
            && err.contains("steps_per_h"),
        "{err}"
    );
}

#[test]
fn compare_takes_a_horizon_and_says_so() {
    let d = tmp("compare-horizon");
    let a = "scenarios/h100_vs_mi300x/h100.orr";
    let b = "scenarios/h100_vs_mi300x/mi300x.orr";
    let o = orrery(&[
        "compare",
        a,
        b,
        "--seeds",
        "1",
        "--horizon",
        "10 min",
        "--no-plots",
        "--out",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("10 min (--horizon)"), "{}", text(&o));
    let csv = read(&d, "compare.csv");
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let h = head.iter().position(|x| *x == "horizon_s").unwrap();
    let src = head.iter().position(|x| *x == "horizon_source").unwrap();
    for row in lines {
        let row: Vec<&str> = row.split(',').collect();
        assert_eq!((row[h], row[src]), ("600", "--horizon"));
    }
    let o = orrery(&["compare", a, b, "--horizon", "soon"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--horizon"), "{}", text(&o));
}

/// Files in a folder, sorted, with their bytes.
fn folder(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// A merge reads nothing but its shards (issue 42): run from another folder, where the
/// scenario's relative path leads nowhere, it writes every file of the unsharded sweep byte for
/// byte: data, report.md and every plot, the representative run's timeline and utilization
/// included (shard 0 carries their data).
#[test]
fn a_merge_is_the_sweep_byte_for_byte_from_any_folder() {
    let d = tmp("merge-anywhere");
    let proj = d.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(
        proj.join("s.orr"),
        format!(
            "{BASE}\nexperiment e {{\n  seeds 1..3\n  sweep policy in [ray_default, spread]\n  \
             metrics makespan, step_time\n  plot timeline, utilization, bars(step_time), \
             cdf(makespan)\n}}\n"
        ),
    )
    .unwrap();
    let at = |cwd: &Path, args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
            .args(args)
            .current_dir(cwd)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", text(&o));
    };
    at(&proj, &["sweep", "s.orr", "--out", "full"]);
    for i in 0..2 {
        at(
            &proj,
            &[
                "sweep",
                "s.orr",
                "--shard",
                &format!("{i}/2"),
                "--out",
                "shards",
            ],
        );
    }
    at(&d, &["merge", "proj/shards", "--out", "merged"]);
    let (full, merged) = (folder(&proj.join("full")), folder(&d.join("merged")));
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&full), names(&merged));
    for name in ["timeline.png", "utilization.svg", "report.md"] {
        assert!(
            names(&full).contains(&name.to_string()),
            "{:?}",
            names(&full)
        );
    }
    for ((n, a), (_, b)) in full.iter().zip(&merged) {
        assert!(a == b, "{n} differs");
    }
    let _ = std::fs::remove_dir_all(&d);
}
