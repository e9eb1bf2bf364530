//! `--max-memory` covers the whole run (issue 42): the state a run builds before its first
//! event, and the files it writes, not only its events.

use std::process::Command;

/// The tests that set this process's limits take turns (the limits are process-wide).
static IN_PROCESS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_run_whose_state_is_over_the_limit_stops_before_its_first_event() {
    // 5,000 DGX H100s: `check` estimates at least 83.3 MiB (links and nodes at their
    // smallest), the run builds ~105 MiB of graph and state (tests/memory_estimate.rs
    // measures both). At 95 MiB the estimate fits and the state does not.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.orr");
    std::fs::write(
        &file,
        "cluster c {\n  rack r[0..624] {\n    node dgx_h100 x 8\n  }\n  fabric rail_optimized\n}\nworkload w {\n  tasks t x 10 {\n    resources { CPU: 1 }\n    duration 1 s\n  }\n}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args([
            "run",
            file.to_str().unwrap(),
            "--max-memory",
            "95MiB",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("passed --max-memory 95 MiB")
            && err.contains("while building a run's state, before its first event"),
        "{err}"
    );
    assert!(
        !out.join(".orrery-files").exists(),
        "a stopped run's folder reads as complete"
    );
    // Its estimate fits: `check` accepts it under the same limit.
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["check", file.to_str().unwrap(), "--max-memory", "95MiB"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_process_over_the_limit_writes_no_further_file() {
    // This process's own limit (the library's setting, as `--max-memory` sets it): 1 byte.
    let _one = IN_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.csv");
    orrery::budget::set(Some(orrery::budget::Limits {
        max_events: 1 << 40,
        max_memory: 1,
    }));
    let e = orrery::atomic::write_atomic(&path, b"a,b\n").unwrap_err();
    orrery::budget::set(None);
    let msg = e.to_string();
    assert!(
        msg.contains("tasks.csv: not written: the process passed --max-memory")
            && msg.contains("while writing"),
        "{msg}"
    );
    assert_eq!(e.kind(), std::io::ErrorKind::OutOfMemory);
    // Nothing there, not even a temporary file.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // Under no limit it writes.
    orrery::atomic::write_atomic(&path, b"a,b\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "a,b\n");
}

#[test]
fn a_command_after_a_stopped_run_in_the_same_process_still_writes() {
    // Python runs commands in one process (`orrery::cli::run_captured`). A run stopped by
    // --max-events left the process tripped, and a later command without budget flags (here
    // `import ray-cluster --out`) was refused its file as if it were past the limit.
    let _one = IN_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // Random failures without a window: no bound before the run, so it starts and trips.
    let file = dir.path().join("recur.orr");
    std::fs::write(
        &file,
        "node box {\n  cpu sockets 1, cores 32, numa 1, threads 64, model \"t\"\n  memory 256 GiB\n  pcie gen5\n  source \"test\"\n}\ncluster c {\n  node box x 4\n}\nworkload w {\n  tasks t x 1000 {\n    resources { CPU: 1 }\n    duration 1 s\n    retries 1000\n  }\n}\nfailures {\n  random node mtbf 1 ms repair 1 ms\n}\n",
    )
    .unwrap();
    let (code, _, err) = orrery::cli::run_captured([
        "orrery",
        "run",
        file.to_str().unwrap(),
        "--max-events",
        "100000",
        "--out",
        dir.path().join("run").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a run passed --max-events 100000"), "{err}");
    let out = dir.path().join("imported.orr");
    let (code, _, err) = orrery::cli::run_captured([
        "orrery",
        "import",
        "ray-cluster",
        "scenarios/ray_clusters/aws_p5_autoscaler.yaml",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.exists(), "{err}");
}
