//! The binary's contract: exit codes, located errors on stderr, atomic `fmt --write`.

use std::process::{Command, Output};

fn orrery(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn tmp(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("orrery-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn run_without_a_file_uses_the_quickstart() {
    // Into a temporary folder: tests never write to the working tree's outputs/.
    let out = tempfile::tempdir().unwrap();
    let o = orrery(&["run", "--no-plots", "--out", out.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("scenarios/quickstart.orr")
            && stdout.contains("seed 1")
            && stdout.contains("hash"),
        "{stdout}"
    );
    assert!(out.path().join("run.json").exists());
}

#[test]
fn check_prints_a_summary() {
    let o = orrery(&[
        "check",
        "scenarios/quickstart.orr",
        "scenarios/tpu_slices.orr",
    ]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("128 × H100_SXM")
            && out.contains("bisection")
            && out.contains("ICI bisection"),
        "{out}"
    );
    let o = orrery(&["check", "--json", "scenarios/quickstart.orr"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema_version"], orrery::summary::SCHEMA_VERSION);
    assert_eq!(v["scenarios"][0]["summary"]["nodes"], 16);
    assert_eq!(
        v["scenarios"][0]["summary"]["device_memory_bytes"],
        128 * 81_559 * 1024 * 1024u64
    );
}

#[test]
fn bad_scenarios_exit_2_with_locations() {
    let p = tmp("bad.orr", "cluster c {\n  node dgx_h10 x 4\n}\n");
    let o = orrery(&["check", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.orr:2:8") && err.contains("did you mean `dgx_h100`?"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn unreadable_files_and_bad_flags_exit_2() {
    assert_eq!(
        orrery(&["check", "no/such/file.orr"]).status.code(),
        Some(2)
    );
    assert_eq!(orrery(&["check", "scenarios"]).status.code(), Some(2));
    assert_eq!(
        orrery(&["check", "--frobnicate", "x.orr"]).status.code(),
        Some(2)
    );
    assert_eq!(
        orrery(&["run", "--seed", "minus-one"]).status.code(),
        Some(2)
    );
    let p = tmp("binary.orr", "");
    std::fs::write(&p, [0xff, 0xfe, 0x00]).unwrap();
    let o = orrery(&["check", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not UTF-8"));
}

#[test]
fn fmt_check_and_write() {
    assert_eq!(
        orrery(&["fmt", "--check", "scenarios/quickstart.orr"])
            .status
            .code(),
        Some(0)
    );
    let p = tmp("messy.orr", "cluster   c{\n node dgx_h100 x 2}\n");
    assert_eq!(
        orrery(&["fmt", "--check", p.to_str().unwrap()])
            .status
            .code(),
        Some(1)
    );
    assert!(
        orrery(&["fmt", "--write", p.to_str().unwrap()])
            .status
            .success()
    );
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "cluster c {\n  node dgx_h100 x 2\n}\n"
    );
    assert_eq!(
        orrery(&["fmt", "--check", p.to_str().unwrap()])
            .status
            .code(),
        Some(0)
    );
    let bad = tmp("broken.orr", "cluster c {\n  node [\n");
    let o = orrery(&["fmt", "--write", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(&bad).unwrap(),
        "cluster c {\n  node [\n",
        "a file with errors is left alone"
    );
}

#[test]
fn catalog_lists_and_exports() {
    let o = orrery(&["catalog"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for name in [
        "H100_SXM",
        "MI300X",
        "TPU_v5p",
        "Gaudi3",
        "ib_ndr_400g",
        "dgx_h100",
    ] {
        assert!(out.contains(name), "{name} missing from catalog listing");
    }
    // Every catalog model, with its parameter count.
    for name in orrery::model::catalog::names() {
        assert!(out.contains(name), "{name} missing from catalog listing");
    }
    assert!(out.contains("70.6B"), "{out}");
    let v: serde_json::Value =
        serde_json::from_slice(&orrery(&["catalog", "--json"]).stdout).unwrap();
    let models = v["models"].as_array().expect("models in --json");
    assert_eq!(models.len(), orrery::model::catalog::names().count());
    assert_eq!(models[1]["name"], "llama3_70b");
    assert_eq!(models[1]["layers"], 80);
    assert!(
        models
            .iter()
            .all(|m| !m["source"].as_str().unwrap().is_empty())
    );
    assert_eq!(v["schema_version"], orrery::catalog::SCHEMA_VERSION);
    assert_eq!(
        v["accelerators"]["H100_SXM"]["memory_bytes"],
        81_559 * 1024 * 1024u64
    );
    assert!(
        String::from_utf8_lossy(&orrery(&["catalog", "--source"]).stdout).contains("source \"")
    );
}

#[test]
fn trace_arrivals_are_read_beside_the_scenario_and_confined_to_its_folder() {
    let text = |trace: &str| {
        format!(
            "node g {{\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  device L4 x 1\n}}\ncluster c {{\n  node g x 1\n}}\nworkload w {{\n  service s {{\n    resources {{ CPU: 1, GPU: 1 }}\n    arrival trace \"{trace}\"\n    service_time 10 ms\n  }}\n}}\nexperiment e {{\n  horizon 10 s\n}}\n"
        )
    };
    let p = tmp("traced.orr", &text("arrivals.csv"));
    std::fs::write(
        p.with_file_name("arrivals.csv"),
        "# seconds\n0.5\n1.0, extra\n\n2.5\n",
    )
    .unwrap();
    let out = p.with_file_name("traced-out");
    let o = orrery(&["run", p.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["metrics"]["services"][0]["served"], 3);
    assert_eq!(run["schema_version"], orrery::report::RUN_SCHEMA_VERSION);
    let bad = tmp("escape.orr", &text("../../etc/hostname"));
    let o = orrery(&["run", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("outside the scenario's folder") || err.contains("cannot read"),
        "{err}"
    );
}

#[test]
fn bench_rejects_empty_sizes() {
    assert_eq!(orrery(&["bench", "--nodes", "0"]).status.code(), Some(2));
    assert_eq!(orrery(&["bench", "--tasks", "0"]).status.code(), Some(2));
}

#[test]
fn bench_checks_its_baseline_before_measuring() {
    let bad = tmp("baseline.toml", "orrery = \"0.1.0\"\nrecorded = 3\n");
    let o = orrery(&["bench", "--baseline", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("baseline.toml: 2:"), "{err}");
    let o = orrery(&["bench", "--min-ratio", "0"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `bench` at its smallest sizes, with `flows` fat-tree flows and no allreduce.
fn small_bench(flows: &str) -> Vec<&str> {
    vec![
        "bench",
        "--nodes",
        "10",
        "--tasks",
        "10",
        "--flows",
        flows,
        "--allreduce",
        "0",
    ]
}

#[test]
fn bench_compares_its_flows_with_a_simgrid_style_solver_on_request() {
    let small = small_bench("200");
    let o = orrery(&small);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(!out.contains("SimGrid"), "{out}");
    let mut args = small.clone();
    args.push("--simgrid-style");
    let o = orrery(&args);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("the same flows on a SimGrid-style solver") && out.contains("x as fast"),
        "{out}"
    );
    assert!(out.contains("SimGrid-style solver, 200 flows"), "{out}");
}

#[test]
fn bench_records_a_baseline_and_compares_with_it() {
    let dir = std::env::temp_dir().join(format!("orrery-bench-{}", std::process::id()));
    let path = dir.join("nested/baseline.toml");
    let mut args = small_bench("0");
    args.extend([
        "--baseline",
        path.to_str().unwrap(),
        "--record",
        "--note",
        "t",
    ]);
    let o = orrery(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("no baseline recorded"), "{out}");
    let b = orrery::bench::baseline::read(&path).unwrap().unwrap();
    let names: Vec<&str> = b.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "event core, 1000 pending",
            "event core, 1000000 pending",
            "simulation, 10 nodes x 10 tasks"
        ]
    );
    assert_eq!(b.note, "t");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_forbidden_transport_exits_2_at_its_statement() {
    let p = tmp(
        "rdma.orr",
        "tenant secure {\n  no_rdma\n}\nworkload w tenant secure {\n  transport rdma\n  tasks t x 1 {\n    duration 1 s\n  }\n}\n",
    );
    let o = orrery(&["check", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("rdma.orr:5:3") && err.contains("tenant `secure` has `no_rdma`"),
        "{err}"
    );
}

/// The scenario hash covers what the scenario says (its text, its includes and profiles by the
/// names it gives them), not how its path was typed; a change of text changes it.
#[test]
fn the_scenario_hash_does_not_depend_on_how_the_path_is_typed() {
    let hash = |o: &Output| {
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(
            o.status.success(),
            "{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let at = out.find("scenario hash ").expect("a hash") + "scenario hash ".len();
        out[at..at + 16].to_string()
    };
    let here = std::env::current_dir().unwrap();
    let abs = here.join("scenarios/h200_roofline.orr");
    let typed = [
        "scenarios/h200_roofline.orr".to_string(),
        "./scenarios/h200_roofline.orr".to_string(),
        "scenarios/../scenarios/h200_roofline.orr".to_string(),
        abs.display().to_string(),
    ];
    let first = hash(&orrery(&["check", &typed[0]]));
    for t in &typed[1..] {
        assert_eq!(hash(&orrery(&["check", t])), first, "{t}");
    }
    // From another working directory (the profile is then found by another path too).
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["check", "h200_roofline.orr"])
        .current_dir(here.join("scenarios"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(hash(&o), first);
    // A copy elsewhere under another name, with its profile, hashes alike; one changed byte does not.
    let text = std::fs::read_to_string(&abs).unwrap();
    let dir = std::env::temp_dir().join(format!("orrery-hash-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("calibration")).unwrap();
    std::fs::copy(
        here.join("calibration/h200_datasheet.toml"),
        dir.join("calibration/h200_datasheet.toml"),
    )
    .unwrap();
    std::fs::write(dir.join("renamed.orr"), &text).unwrap();
    let copy = dir.join("renamed.orr");
    assert_eq!(hash(&orrery(&["check", copy.to_str().unwrap()])), first);
    std::fs::write(&copy, format!("{text}\n# changed\n")).unwrap();
    assert_ne!(hash(&orrery(&["check", copy.to_str().unwrap()])), first);
}

/// A reader that goes away ends the program quietly (status 141, as for tools killed by
/// SIGPIPE); a full disk behind a redirect is an error message and status 1; never a panic.
#[test]
fn closed_pipes_and_full_disks_end_quietly_or_with_a_message() {
    use std::process::Stdio;
    // 280 KB of output: more than a pipe holds, so it cannot all be written before the
    // reader goes away, however the two processes are scheduled.
    let long: String = (0..5000)
        .map(|i| format!("# line {i} of a comment long enough to fill a pipe\n"))
        .collect();
    let f = tmp("long.orr", &long);
    let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["fmt", f.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(141), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    if std::path::Path::new("/dev/full").exists() {
        let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
            .arg("catalog")
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("cannot write to standard output"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `--seeds` means the same in every command: `N` is seeds 1..N, `N..M` a range.
#[test]
fn seeds_mean_the_same_in_every_command() {
    let f = tmp(
        "seeds.orr",
        "cluster c {\n  rack r {\n    node dgx_h100 x 2\n  }\n}\n\nworkload w {\n  tasks t x 4 {\n    resources { GPU: 1 }\n    duration 1 s\n  }\n}\n\nexperiment e {\n  seeds 1..3\n  sweep policy in [ray_default, spread]\n  metrics makespan\n}\n",
    );
    let f = f.to_str().unwrap();
    let dir = std::env::temp_dir().join(format!("orrery-seeds-{}", std::process::id()));
    let out = |name: &str| dir.join(name).to_str().unwrap().to_string();
    for (seeds, label) in [
        ("2", "seeds 1..2"),
        ("2..3", "seeds 2..3"),
        ("3..3", "seeds 3 "),
    ] {
        for cmd in [
            vec![
                "sweep",
                f,
                "--seeds",
                seeds,
                "--out",
                &out("s"),
                "--no-plots",
            ],
            vec![
                "drill",
                f,
                "--seeds",
                seeds,
                "--out",
                &out("d"),
                "--no-plots",
            ],
            vec![
                "compare",
                f,
                f,
                "--seeds",
                seeds,
                "--out",
                &out("c"),
                "--no-plots",
            ],
        ] {
            let o = orrery(&cmd);
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(
                o.status.success(),
                "{cmd:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let head = text.lines().next().unwrap_or("");
            assert!(
                format!("{head} ").contains(label),
                "{cmd:?} printed `{head}`, expected `{label}`"
            );
        }
    }
    for cmd in ["sweep", "drill"] {
        let o = orrery(&[cmd, f, "--seeds", "0", "--out", &out("x")]);
        assert_eq!(o.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&o.stderr).contains("--seeds must be at least 1"));
    }
}

/// `run --failures NAME` applies only that block and `--horizon` ends the window; both are
/// in the header, run.json and the report's reproduce line; unknown names and bad durations
/// are exit 2. `compare --failures` applies it to every scenario.
#[test]
fn run_and_compare_choose_a_failures_block_and_a_horizon() {
    let f = tmp(
        "fail.orr",
        "cluster c {\n  rack r1 {\n    node dgx_h100 x 2\n  }\n}\n\nworkload w {\n  tasks t x 4 {\n    resources { GPU: 8 }\n    duration 100 s\n    retries 0\n  }\n}\n\nfailures early {\n  at 10 s kill node r1.n1\n}\n\nfailures none_here {\n}\n",
    );
    let f = f.to_str().unwrap();
    let dir = std::env::temp_dir().join(format!("orrery-fail-{}", std::process::id()));
    let out = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let json = |d: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(d).join("run.json")).unwrap())
            .unwrap()
    };
    let o = orrery(&[
        "run",
        f,
        "--failures",
        "early",
        "--out",
        &out("a"),
        "--no-plots",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("· failures early"));
    let a = json("a");
    assert_eq!(a["header"]["failures"], "early");
    let o = orrery(&[
        "run",
        f,
        "--failures",
        "none_here",
        "--horizon",
        "150 s",
        "--out",
        &out("b"),
        "--no-plots",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let b = json("b");
    assert_eq!(b["header"]["horizon"], "150 s");
    assert_eq!(b["metrics"]["horizon_s"], 150.0);
    let report = std::fs::read_to_string(dir.join("b").join("report.md")).unwrap();
    assert!(
        report.contains("--failures none_here --horizon \"150 s\""),
        "{report}"
    );
    // The kill at 10 s fails the tasks on r[0] (no retries) only when its block applies.
    let failed = |v: &serde_json::Value| v["metrics"]["failures"]["tasks_failed"].as_u64();
    assert_eq!((failed(&a), failed(&b)), (Some(1), Some(0)));
    for (args, msg) in [
        (
            vec!["run", f, "--failures", "eraly"],
            "no `failures eraly` block",
        ),
        (vec!["run", "--failures", "x"], "no named `failures` block"),
        (vec!["run", f, "--horizon", "5 parsecs"], "--horizon"),
        (
            vec!["compare", f, f, "--failures", "late"],
            "no `failures late` block",
        ),
    ] {
        let o = orrery(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(msg),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = orrery(&[
        "compare",
        f,
        f,
        "--failures",
        "early",
        "--seeds",
        "1",
        "--out",
        &out("c"),
        "--no-plots",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap()
            .ends_with("· failures early")
    );
}

/// Every console table is built by `orrery::table` without asking the terminal anything: a
/// header row, a rule of `-`, labels left and figures right-aligned, two spaces apart. The
/// tests' stdout is a pipe, so these exact lines are what a pipe (and a terminal) gets, and a
/// second run prints the same table bytes.
#[test]
fn compare_prints_its_table_the_same_bytes_into_a_pipe() {
    let scenario = |gpus: u32| {
        format!(
            "cluster c {{\n  rack r {{\n    node dgx_h100 x 1\n  }}\n}}\n\nworkload w {{\n  tasks t x {gpus} {{\n    resources {{ GPU: 1 }}\n    duration 10 s\n  }}\n}}\n"
        )
    };
    let a = tmp("pipe_a.orr", &scenario(2));
    let b = tmp("pipe_bb.orr", &scenario(16));
    let dir = std::env::temp_dir().join(format!("orrery-pipe-{}", std::process::id()));
    let table = || {
        let o = orrery(&[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--seeds",
            "1",
            "--out",
            dir.to_str().unwrap(),
            "--no-plots",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8(o.stdout).unwrap();
        // The table: from its header row to the line before the footer.
        let lines: Vec<&str> = out.lines().skip(1).collect();
        let end = lines.iter().position(|l| l.starts_with("1 seeds")).unwrap();
        lines[..end].join("\n")
    };
    let first = table();
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(
        lines[0],
        "metric                                                   pipe_a                         pipe_bb",
        "{first}"
    );
    assert_eq!(lines[1], "-".repeat(lines[1].len()), "{first}");
    assert_eq!(lines[1].len(), 96, "{first}");
    // Numbers right-aligned in their columns: both makespans end where their titles end.
    let makespan = lines.iter().find(|l| l.contains("makespan")).unwrap();
    assert_eq!(
        *makespan,
        "  makespan                                                 10 s                            20 s",
        "{first}"
    );
    assert_eq!(table(), first);
}
