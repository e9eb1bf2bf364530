//! Files a scenario names that hold nothing (issue 42): an arrival trace with no rows or an
//! empirical distribution's samples file with no samples is refused where it is
//! (`FILE:1:1`, with the scenario line that named it), exit 2: never a service that gets no
//! request or a distribution with nothing to draw.

use std::fs;
use std::process::Command;

const NODE: &str =
    "node box {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}\ncluster c {\n  node box x 1\n}\n";

fn check(f: &std::path::Path) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["check", f.to_str().unwrap()])
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn an_empty_trace_is_refused_where_it_is() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("s.orr");
    let service = "workload w {\n  service api {\n    replicas 1\n    resources { CPU: 1 }\n    arrival trace \"arrivals.csv\"\n    service_time 10 ms\n  }\n}\n";
    fs::write(&f, format!("{NODE}{service}")).unwrap();
    for empty in ["", "arrival_s\n", "# nothing yet\n\n"] {
        fs::write(d.path().join("arrivals.csv"), empty).unwrap();
        let (code, err) = check(&f);
        assert_eq!(code, 2, "{empty:?}: {err}");
        assert!(
            err.contains("arrivals.csv:1:1: the trace has no arrivals")
                && err.contains("named by `arrival trace` at"),
            "{empty:?}: {err}"
        );
    }
    fs::write(d.path().join("arrivals.csv"), "arrival_s\n0.5\n").unwrap();
    assert_eq!(check(&f).0, 0);
}

#[test]
fn an_empty_samples_file_is_refused_where_it_is() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("e.orr");
    fs::write(
        &f,
        format!("{NODE}failures {{\n  random node mtbf 1000 h empirical(\"ttf.csv\")\n}}\n"),
    )
    .unwrap();
    for empty in ["", "\n# no samples\n"] {
        fs::write(d.path().join("ttf.csv"), empty).unwrap();
        let (code, err) = check(&f);
        assert_eq!(code, 2, "{empty:?}: {err}");
        assert!(
            err.contains("ttf.csv:1:1: no samples") && err.contains("named by `empirical` at"),
            "{empty:?}: {err}"
        );
    }
    fs::write(d.path().join("ttf.csv"), "3600\n7200\n").unwrap();
    assert_eq!(check(&f).0, 0);
}
