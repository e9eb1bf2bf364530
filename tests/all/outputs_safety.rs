//! What commands write (issue 42): only regular files inside their output folder, never over a
//! link, FIFO, device or folder at an output's path (refused, exit 2, naming it); a folder's
//! completion marker (`.orrery-files`) taken away before a run writes its first file and
//! written after its last, so a run that stops halfway leaves a folder that reads as
//! incomplete; and a failed write, plots included, is a non-zero exit naming the file.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::{FileTypeExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Status, stdout and stderr of `orrery ARGS` run in the repository root.
fn orrery(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn mkfifo(p: &Path) {
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
}

/// A small scenario that runs in a blink: eight one-second tasks on one node.
fn scenario(d: &Path) -> PathBuf {
    let f = d.join("small.orr");
    fs::write(
        &f,
        "node box {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}\ncluster c {\n  node box x 1\n}\n\
         workload w {\n  tasks t x 8 {\n    resources { CPU: 1 }\n    duration 1 s\n  }\n}\n",
    )
    .unwrap();
    f
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `--out` of `import ray-cluster` and `calibrate import` at a FIFO, a link to a file outside
/// and a folder: each refused, naming the path, and left as it was (the FIFO a FIFO, the link
/// a link, the file it points to unchanged).
#[test]
fn single_file_outs_never_replace_a_link_fifo_or_folder() {
    let d = tempfile::tempdir().unwrap();
    let outside = d.path().join("outside.txt");
    fs::write(&outside, "keep me").unwrap();
    let fifo = d.path().join("fifo.toml");
    mkfifo(&fifo);
    let link = d.path().join("link.toml");
    symlink(&outside, &link).unwrap();
    let folder = d.path().join("folder.toml");
    fs::create_dir(&folder).unwrap();
    let commands: [&[&str]; 2] = [
        &[
            "import",
            "ray-cluster",
            "tests/fixtures/ray_clusters/azure_gpu.yaml",
        ],
        &[
            "calibrate",
            "import",
            "tests/fixtures/import/dgx_h100_all_reduce_perf.txt",
        ],
    ];
    for cmd in commands {
        for (target, what) in [
            (&fifo, "FIFO"),
            (&link, "symbolic link"),
            (&folder, "folder"),
        ] {
            let mut args = cmd.to_vec();
            args.extend(["--out", s(target)]);
            let (code, _, err) = orrery(&args);
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(
                err.contains(s(target)) && err.contains(what),
                "{args:?}: {err}"
            );
        }
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(folder.is_dir());
        assert_eq!(fs::read_to_string(&outside).unwrap(), "keep me");
    }
}

/// A link, FIFO or folder at one of a run's file names in its output folder: the run is
/// refused (exit 2, naming the path) and nothing outside the folder changes.
#[test]
fn a_run_never_writes_through_a_link_or_over_a_special_file_in_its_folder() {
    let d = tempfile::tempdir().unwrap();
    let f = scenario(d.path());
    let outside = d.path().join("outside.json");
    fs::write(&outside, "keep me").unwrap();
    for (name, what) in [
        ("run.json", "symbolic link"),
        ("tasks.csv", "FIFO"),
        ("timeline.png", "folder"),
    ] {
        let out = d.path().join(format!("out-{what}"));
        fs::create_dir(&out).unwrap();
        let p = out.join(name);
        match what {
            "symbolic link" => symlink(&outside, &p).unwrap(),
            "FIFO" => mkfifo(&p),
            _ => fs::create_dir(&p).unwrap(),
        }
        let (code, _, err) = orrery(&["run", s(&f), "--out", s(&out)]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains(s(&p)) && err.contains(what), "{name}: {err}");
        assert!(!out.join(".orrery-files").exists(), "{name}");
        let t = fs::symlink_metadata(&p).unwrap().file_type();
        assert!(t.is_symlink() || t.is_fifo() || t.is_dir(), "{name}");
    }
    assert_eq!(fs::read_to_string(&outside).unwrap(), "keep me");
}

/// A run that stops after writing some of its files over an earlier complete run (here: a
/// folder where its `report.md` goes, so it fails after every data file) leaves no
/// `.orrery-files`: the folder reads as incomplete, not as the earlier run's. The next run that
/// completes still removes the files the earlier complete run listed and it did not write.
#[test]
fn a_run_that_stops_halfway_leaves_a_folder_without_its_marker() {
    let d = tempfile::tempdir().unwrap();
    let f = scenario(d.path());
    let out = d.path().join("out");
    let (code, _, err) = orrery(&["run", s(&f), "--out", s(&out)]);
    assert_eq!(code, 0, "{err}");
    let first = fs::read_to_string(out.join(".orrery-files")).unwrap();
    assert!(first.lines().any(|l| l == "timeline.png"), "{first}");
    fs::remove_file(out.join("report.md")).unwrap();
    fs::create_dir(out.join("report.md")).unwrap();
    let (code, _, err) = orrery(&["run", s(&f), "--out", s(&out), "--no-plots"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("report.md"), "{err}");
    assert!(
        !out.join(".orrery-files").exists(),
        "{:?} reads as complete",
        names(&out)
    );
    // The earlier run's plots are still there, and known to be an earlier run's.
    assert!(out.join("timeline.png").is_file());
    fs::remove_dir(out.join("report.md")).unwrap();
    let (code, _, err) = orrery(&["run", s(&f), "--out", s(&out), "--no-plots"]);
    assert_eq!(code, 0, "{err}");
    let listed = fs::read_to_string(out.join(".orrery-files")).unwrap();
    let mut expected: Vec<String> = listed.lines().map(str::to_string).collect();
    expected.push(".orrery-files".into());
    expected.sort();
    assert_eq!(names(&out), expected);
}

/// A plot whose file cannot be written (here a folder at `utilization.svg`, written after its
/// PNG; a full disk fails the same way) fails the command with a status and the file's name,
/// never a note and exit 0; the folder reads as incomplete.
#[test]
fn a_plot_that_cannot_be_written_fails_the_command() {
    let d = tempfile::tempdir().unwrap();
    let f = scenario(d.path());
    let out = d.path().join("out");
    fs::create_dir_all(out.join("utilization.svg")).unwrap();
    let (code, _, err) = orrery(&["run", s(&f), "--out", s(&out)]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(s(&out.join("utilization.svg"))) && !err.contains("note:"),
        "{err}"
    );
    assert!(!out.join(".orrery-files").exists());
    assert!(!out.join("report.md").exists());
}
