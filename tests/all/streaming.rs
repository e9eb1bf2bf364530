//! Per-request statistics in bounded memory (issue 16, `sim::durations`): exact up to 65,536
//! samples, an HDR histogram with a stated error beyond, and the outputs say which.

use std::process::Command;

const SCENARIO: &str = "node box {\n  cpu sockets 1, cores 32, numa 1, threads 64, model \"t\"\n  memory 256 GiB\n  pcie gen5\n  source \"test\"\n}\ncluster c {\n  node box x 1\n}\nworkload w {\n  service s {\n    replicas 4\n    resources { CPU: 1 }\n    arrival poisson 1000 /s\n    service_time 2 ms exponential\n    slo p99 10 ms\n    slo p50 3 ms\n  }\n}\n";

fn run(horizon: &str) -> (serde_json::Value, String, String) {
    let d = std::env::temp_dir().join(format!("orrery-streaming-{}-{horizon}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("svc.orr");
    std::fs::write(&f, SCENARIO).unwrap();
    let out = d.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args([
            "run",
            f.to_str().unwrap(),
            "--horizon",
            horizon,
            "--no-plots",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j = serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    (j, String::from_utf8_lossy(&o.stdout).into_owned(), report)
}

#[test]
fn percentiles_say_whether_they_are_exact() {
    // ~30,000 requests: exact.
    let (j, stdout, _) = run("30 s");
    assert_eq!(j["schema_version"], 3);
    let s = &j["metrics"]["services"][0];
    assert_eq!(s["latency"]["quantile_error_fraction"], 0.0, "{s}");
    assert!(!stdout.contains("HDR histogram"), "{stdout}");

    // ~100,000 requests: from the histogram, at most 0.1% high, and said so.
    let (j, stdout, report) = run("100 s");
    let s = &j["metrics"]["services"][0];
    let lat = &s["latency"];
    assert_eq!(lat["quantile_error_fraction"], 0.001, "{s}");
    assert_eq!(s["waiting"]["quantile_error_fraction"], 0.001, "{s}");
    let served = s["served"].as_u64().unwrap();
    assert!(served > 65_536, "{s}");
    assert_eq!(lat["count"].as_u64().unwrap(), served);
    let (p50, p99, max) = (
        lat["p50_s"].as_f64().unwrap(),
        lat["p99_s"].as_f64().unwrap(),
        lat["max_s"].as_f64().unwrap(),
    );
    assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{lat}");
    // SLO counts stay exact: counted as requests finish, consistent with the percentiles
    // (p50 within 0.1% of the exact median, so about half are within it).
    let slo = &s["slo"];
    let within_p99 = slo[0]["served_within_slo"].as_u64().unwrap();
    let within_p50 = slo[1]["served_within_slo"].as_u64().unwrap();
    assert!(within_p50 < within_p99 && within_p99 <= served, "{slo}");
    let line = "percentiles of w.s.latency, w.s.waiting (over 65536 samples each) come from an HDR histogram: at most 0.1% above the exact nearest-rank value";
    assert!(stdout.contains(line), "{stdout}");
    assert!(report.contains(line), "{report}");
}
