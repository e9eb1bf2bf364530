//! A run's outputs do not grow with its horizon (issue 42): utilization series past
//! `sim::utilization::EXACT` changes are binned, at most `BINS` bins each.

use orrery::sim::utilization::{BINS, EXACT};
use std::process::Command;

/// One GPU replica serving 20 requests/s of 10 ms each: tens of thousands of busy/idle
/// changes an hour.
const SERVICE: &str = "cluster c {\n  node dgx_h100 x 1\n}\nworkload w {\n  service s {\n    \
    resources { GPU: 1 }\n    arrival poisson 20 /s\n    service_time 10 ms\n  }\n}\n";

fn run(dir: &std::path::Path, horizon: &str) -> (u64, u64, serde_json::Value) {
    let file = dir.join("s.orr");
    std::fs::write(&file, SERVICE).unwrap();
    let out = dir.join(horizon);
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args([
            "run",
            file.to_str().unwrap(),
            "--horizon",
            horizon,
            "--no-plots",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let size = |f: &str| std::fs::metadata(out.join(f)).unwrap().len();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    (size("utilization.csv"), size("cpu_utilization.csv"), json)
}

#[test]
fn utilization_files_are_the_same_size_for_one_hour_and_four() {
    let dir = tempfile::tempdir().unwrap();
    let (u1, c1, j1) = run(dir.path(), "1h");
    let (u4, c4, j4) = run(dir.path(), "4h");
    // Exact, a row per change, they would be four times as long.
    assert!(u4 < u1 + u1 / 4 && c4 < c1 + c1 / 4, "{u1} {u4} {c1} {c4}");
    for j in [&j1, &j4] {
        let h = &j["metrics"]["utilization"]["H100_SXM"];
        let res = h["series_resolution_s"].as_f64().unwrap();
        assert!(res > 0.0, "{h}");
        // Busy ≈ ρ = 20/s × 10 ms of one of the node's 8 GPUs.
        let busy = h["busy_fraction"].as_f64().unwrap();
        assert!((busy - 0.2 / 8.0).abs() < 0.002, "{busy}");
    }
    // Rows: at most BINS + 1 per series (2 series: device class and node type).
    let rows = std::fs::read_to_string(dir.path().join("4h").join("utilization.csv"))
        .unwrap()
        .lines()
        .count();
    assert!(rows <= 2 * (BINS + 1) + 1, "{rows}");
    const { assert!(EXACT < 20 * 3600, "the test's changes must pass EXACT") };
}
