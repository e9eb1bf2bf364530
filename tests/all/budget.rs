//! Work and memory budgets (issue 16, `orrery::budget`): a scenario whose lower bounds exceed
//! `--max-events` or `--max-memory` is refused before it runs, located, with exit 2; what no
//! bound sees before the run is stopped while it runs, and nothing is written.

use std::path::PathBuf;
use std::process::Command;

fn orrery(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn write(name: &str, text: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-budget-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const BOX: &str = "node box {\n  cpu sockets 1, cores 32, numa 1, threads 64, model \"t\"\n  memory 256 GiB\n  pcie gen5\n  source \"test\"\n}\n";

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_billion_steps_are_refused_before_they_run() {
    let text = format!(
        "{BOX}cluster c {{\n  node box x 2\n}}\nworkload w {{\n  placement_group g strategy PACK {{\n    bundle {{ CPU: 1 }}\n  }}\n  training j on g steps 1000000000 {{\n    compute 1 TFLOP per device bf16\n  }}\n}}\n"
    );
    let f = write("steps.orr", &text);
    let out = f.with_extension("out");
    for cmd in ["check", "run"] {
        let mut args = vec![cmd, s(&f)];
        if cmd == "run" {
            args.extend(["--out", s(&out)]);
        }
        let (code, _, err) = orrery(&args);
        assert_eq!(code, 2, "{cmd}: {err}");
        // Located at the training statement, with the estimate and the limit.
        assert!(err.contains("steps.orr:14:3: this run needs at least 1,000,000,000 events, over --max-events 500000000"), "{err}");
        assert!(
            err.contains("training `w.j`: at least 1,000,000,000 events"),
            "{err}"
        );
    }
    assert!(!out.exists(), "a refused run wrote {}", out.display());
    // Raised, check accepts it and says so.
    let (code, o, err) = orrery(&["check", s(&f), "--max-events", "2e9"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        o.contains("work         at least 1,000,000,000 events"),
        "{o}"
    );
    assert!(o.contains("--max-events 2000000000"), "{o}");
}

#[test]
fn failures_every_nanosecond_are_refused_at_their_mtbf() {
    let text = format!(
        "{BOX}cluster c {{\n  node box x 4\n}}\nworkload w {{\n  tasks t x 2 {{\n    resources {{ CPU: 1 }}\n    duration 1 s\n  }}\n}}\nfailures {{\n  random node mtbf 1 ns repair 1 ns\n}}\nexperiment e {{\n  horizon 10 s\n}}\n"
    );
    let f = write("mtbf.orr", &text);
    let (code, _, err) = orrery(&["run", s(&f), "--out", s(&f.with_extension("out"))]);
    assert_eq!(code, 2, "{err}");
    // 3 nodes (the head has its own class) × 2 events per 2 ns × 10 s = 3e10, less 6 σ.
    assert!(
        err.contains("mtbf.orr:17:20: this run needs at least 29,998,"),
        "{err}"
    );
    assert!(err.contains("random node failures (mtbf 1 ns)"), "{err}");
}

#[test]
fn memory_lower_bounds_count_the_cluster_the_queue_and_the_runs_at_once() {
    // 5,000 DGX H100s: 5,000 × (2 KB + 8 × 250 B + 10 × 100 B) = 25 MB, and 84 directed
    // links each (420,000) of ~150 B = 62 MB (the graph's and flow network's element types;
    // a link's flow lists take 4 bytes until it has any, `network::link_lists`).
    let text = "cluster c {\n  rack r[0..49] {\n    node dgx_h100 x 100\n  }\n  fabric leaf_spine oversubscription 1:1 latency 1 us\n}\nworkload w {\n  tasks t x 1 {\n    resources { GPU: 1 }\n    duration 1 s\n  }\n}\n";
    let f = write("big.orr", text);
    let (code, o, err) = orrery(&["check", s(&f), "--max-memory", "200 MiB"]);
    assert_eq!(code, 0, "{err}");
    assert!(o.contains(" 83.3 MiB of memory per run"), "{o}");
    let (code, _, err) = orrery(&["check", s(&f), "--max-memory", "80 MiB"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "big.orr:1:9: this scenario needs at least 83.3 MiB of memory, over --max-memory 80 MiB"
        ),
        "{err}"
    );
    assert!(
        err.contains("cluster `c` (5,000 nodes, 420,000 links)"),
        "{err}"
    );
    // Two runs at once need twice that: a drill on two threads is refused before it runs.
    let out = f.with_extension("drill");
    let args = |t: &'static str| {
        vec![
            "drill".to_string(),
            s(&f).to_string(),
            "--seeds".into(),
            "2".into(),
            "--threads".into(),
            t.into(),
            "--max-memory".into(),
            "160 MiB".into(),
            "--no-plots".into(),
            "--out".into(),
            s(&out).to_string(),
        ]
    };
    let two: Vec<String> = args("2");
    let (code, _, err) = orrery(&two.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("(2 runs at once), over --max-memory 160 MiB"),
        "{err}"
    );
    assert!(!out.exists());

    // An overloaded service: 1,000,000 requests/s on one replica serving 1,000/s, for 1 h,
    // leaves ~3.6e9 requests of 8 bytes queued.
    let text = format!(
        "{BOX}cluster c {{\n  node box x 1\n}}\nworkload w {{\n  service s {{\n    replicas 1\n    resources {{ CPU: 1 }}\n    arrival poisson 1000000 /s\n    service_time 1 ms\n  }}\n}}\n"
    );
    let f = write("overload.orr", &text);
    let (code, _, err) = orrery(&["check", s(&f)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("over --max-events"), "{err}");
    let (code, _, err) = orrery(&["check", s(&f), "--max-events", "1e15"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("overload.orr:14:5: this scenario needs at least 26.8 GiB of memory"),
        "{err}"
    );
    assert!(err.contains("still queued at the end"), "{err}");
}

#[test]
fn what_no_bound_sees_before_the_run_is_stopped_while_it_runs() {
    // No horizon: random failures recur until the work ends, which they keep from ending.
    let text = format!(
        "{BOX}cluster c {{\n  node box x 4\n}}\nworkload w {{\n  tasks t x 1000 {{\n    resources {{ CPU: 1 }}\n    duration 1 s\n    retries 1000\n  }}\n}}\nfailures {{\n  random node mtbf 1 ms repair 1 ms\n}}\n"
    );
    let f = write("recur.orr", &text);
    let (code, o, err) = orrery(&["check", s(&f)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        o.contains(
            "not bounded before the run: random node failures (mtbf 1 ms) (bounded while it runs)"
        ),
        "{o}"
    );
    let out = f.with_extension("out");
    let (code, _, err) = orrery(&["run", s(&f), "--out", s(&out), "--max-events", "200000"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("error: a run passed --max-events 200000 at simulated time"),
        "{err}"
    );
    assert!(!out.exists(), "a stopped run wrote {}", out.display());
    // Memory, while it runs: 100 DGX H100s are bounded at 1.79 MiB before the run, under
    // 16 MiB, and hold less when it starts; the failures' records grow past it by the first
    // check (65,536 events; 20.4 MiB of heap).
    let text = "cluster c {\n  rack r[0..0] {\n    node dgx_h100 x 100\n  }\n}\nworkload w {\n  tasks t x 1000 {\n    resources { GPU: 1 }\n    duration 1 s\n    retries 1000\n  }\n}\nfailures {\n  random node mtbf 1 ms repair 1 ms\n}\n";
    let f = write("recur_big.orr", text);
    let (code, o, err) = orrery(&["check", s(&f), "--max-memory", "16 MiB"]);
    assert_eq!(code, 0, "{err}");
    assert!(o.contains(" 1.79 MiB of memory per run"), "{o}");
    let (code, _, err) = orrery(&["run", s(&f), "--out", s(&out), "--max-memory", "16 MiB"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("error: the process passed --max-memory 16 MiB ("),
        "{err}"
    );
    assert!(err.contains("after 65536 events"), "{err}");
    assert!(!out.exists());
}

#[test]
fn budget_flags_keep_to_their_ranges() {
    let f = write(
        "ok.orr",
        &format!("{BOX}cluster c {{\n  node box x 1\n}}\n"),
    );
    for (flag, v, msg) in [
        (
            "--max-events",
            "0",
            "--max-events 0: must be a whole number from 1 to 10^15",
        ),
        ("--max-events", "1.5", "must be a whole number"),
        (
            "--max-events",
            "2e15",
            "must be a whole number from 1 to 10^15",
        ),
        (
            "--max-events",
            "lots",
            "expected a count such as 500000000 or 5e8",
        ),
        (
            "--max-memory",
            "1 KiB",
            "--max-memory 1 KiB: must be from 16 MiB to 64 TiB",
        ),
        ("--max-memory", "8 s", "expected a size such as `8 GiB`"),
    ] {
        let (code, _, err) = orrery(&["check", s(&f), flag, v]);
        assert_eq!(code, 2, "{flag} {v}: {err}");
        assert!(err.contains(msg), "{flag} {v}: {err}");
    }
}
