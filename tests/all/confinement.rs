//! Reading stays inside the folders it belongs to (issue 42): a `calibration/` folder that is a
//! symlink out of the folder holding it is refused, with the scenario line naming the profile;
//! `detect` and `validate --root` never follow a link (absolute, or relative past the root) out
//! of the root they are given, so nothing outside it is read or echoed.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
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

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const NODE: &str =
    "node box {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}\ncluster c {\n  node box x 1\n}\n";

/// The shipped H100 profile, copied into a folder outside the scenario's.
fn profile_outside(outside: &Path) {
    fs::create_dir_all(outside).unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("calibration/h100_sxm_datasheet.toml");
    fs::copy(shipped, outside.join("h100_sxm_datasheet.toml")).unwrap();
}

#[test]
fn a_calibration_folder_linked_out_of_its_folder_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let outside = d.path().join("elsewhere");
    profile_outside(&outside);
    let project = d.path().join("project");
    fs::create_dir_all(project.join(".git")).unwrap();
    symlink(&outside, project.join("calibration")).unwrap();
    let f = project.join("s.orr");
    fs::write(
        &f,
        "node gpu {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  device H100_SXM x 1\n}\n\
         cluster c {\n  node gpu x 1\n}\ncalibration h100_sxm_datasheet\n",
    )
    .unwrap();
    let (code, _, err) = orrery(&["check", s(&f)]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("calibration folder")
            && err.contains("resolves outside")
            && err.contains("s.orr:"),
        "{err}"
    );
    // The same profile in a real `calibration/` folder is read.
    fs::remove_file(project.join("calibration")).unwrap();
    profile_outside(&project.join("calibration"));
    let (code, _, err) = orrery(&["check", s(&f)]);
    assert_eq!(code, 0, "{err}");
}

/// A root whose hostname and cpuinfo are links out of it: one absolute, one relative past the
/// root. Neither secret is printed by `detect` or `validate`.
#[test]
fn detect_and_validate_never_follow_a_link_out_of_their_root() {
    let d = tempfile::tempdir().unwrap();
    let secret_host = d.path().join("host-secret");
    fs::write(&secret_host, "SECRET-HOST-4711\n").unwrap();
    fs::write(
        d.path().join("cpu-secret"),
        "model name\t: SECRET-CPU-4711\n",
    )
    .unwrap();
    let root = d.path().join("root");
    fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
    fs::write(root.join("proc/meminfo"), "MemTotal:       67108864 kB\n").unwrap();
    let topo = root.join("sys/devices/system/cpu/cpu0/topology");
    fs::create_dir_all(&topo).unwrap();
    fs::write(topo.join("physical_package_id"), "0\n").unwrap();
    fs::write(topo.join("core_id"), "0\n").unwrap();
    symlink(&secret_host, root.join("proc/sys/kernel/hostname")).unwrap();
    symlink("../cpu-secret", root.join("proc/cpuinfo")).unwrap();
    let (code, out, err) = orrery(&["detect", "--name", "box", "--root", s(&root)]);
    assert_eq!(code, 0, "{err}");
    assert!(!format!("{out}{err}").contains("SECRET"), "{out}{err}");
    let f = d.path().join("s.orr");
    fs::write(&f, NODE).unwrap();
    let (_, out, err) = orrery(&["validate", s(&f), "--node", "box", "--root", s(&root)]);
    assert!(!format!("{out}{err}").contains("SECRET"), "{out}{err}");
    assert!(out.contains("against unknown"), "{out}{err}");
    // Inside the root, links resolve as the kernel's own do.
    fs::create_dir_all(root.join("etc")).unwrap();
    fs::write(root.join("etc/name"), "inside-host\n").unwrap();
    fs::remove_file(root.join("proc/sys/kernel/hostname")).unwrap();
    symlink("../../../etc/name", root.join("proc/sys/kernel/hostname")).unwrap();
    let (_, out, err) = orrery(&["validate", s(&f), "--node", "box", "--root", s(&root)]);
    assert!(out.contains("against inside-host"), "{out}{err}");
}
