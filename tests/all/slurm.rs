//! scripts/slurm: a sweep as a Slurm job array, then a merge. CI has no Slurm, so `sbatch` is a
//! stand-in (below) that runs each array task with the variables Slurm sets
//! (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, SLURM_CPUS_PER_TASK), last task first, and runs
//! a dependent job only after the job it waits for succeeded. The scripts themselves run for
//! real, in plain bash, and the merged files must be the unsharded sweep's, byte for byte.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCENARIO: &str = "scenarios/sweep_fabric.orr";

/// A stand-in `sbatch`: `--parsable`, `--array=0-K`, `--dependency=afterok:ID`, then the script
/// and its arguments. Jobs are numbered from 100 in $SBATCH_STATE; a job's tasks all run before
/// it returns (so `afterok` only has to check the earlier job's recorded status).
const FAKE_SBATCH: &str = r#"#!/usr/bin/env bash
set -u
state=${SBATCH_STATE:?}
array= dep=
while [ $# -gt 0 ]; do
  case $1 in
    --parsable) ;;
    --array=*) array=${1#--array=} ;;
    --dependency=afterok:*) dep=${1#--dependency=afterok:} ;;
    -*) echo "fake sbatch: unknown option $1" >&2; exit 1 ;;
    *) break ;;
  esac
  shift
done
id=$(( $(cat "$state/next" 2>/dev/null || echo 100) ))
echo $((id + 1)) > "$state/next"
if [ -n "$dep" ] && [ "$(cat "$state/$dep" 2>/dev/null)" != 0 ]; then
  echo "fake sbatch: job $dep did not succeed" >&2; echo 1 > "$state/$id"; echo "$id"; exit 0
fi
rc=0
if [ -n "$array" ]; then
  last=${array#0-}
  for ((i = last; i >= 0; i--)); do
    SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=$((last + 1)) SLURM_CPUS_PER_TASK=2 \
      bash "$@" > "$state/$id.$i.log" 2>&1 || rc=1
  done
else
  bash "$@" > "$state/$id.log" 2>&1 || rc=1
fi
echo "$rc" > "$state/$id"
echo "$id"
"#;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-slurm-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A PATH whose `sbatch` is the stand-in and whose `orrery` is the binary under test (made in
/// `d` the first time).
fn fake_path(d: &Path) -> String {
    let bin = d.join("bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    if bin.exists() {
        return path;
    }
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(d.join("state")).unwrap();
    std::fs::write(bin.join("sbatch"), FAKE_SBATCH).unwrap();
    let orrery = Path::new(env!("CARGO_BIN_EXE_orrery"));
    std::os::unix::fs::symlink(orrery, bin.join("orrery")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("sbatch"), std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn bash(d: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("bash");
    c.args(args)
        .env("PATH", fake_path(d))
        .env("SBATCH_STATE", d.join("state"));
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn the_job_array_and_merge_give_the_unsharded_sweep() {
    let d = tmp("array");
    let full = d.join("full");
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["sweep", SCENARIO, "--out"])
        .arg(&full)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = d.join("out");
    let o = bash(
        &d,
        &[
            "scripts/slurm/submit.sh",
            SCENARIO,
            out.to_str().unwrap(),
            "4",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!(
            "array job 100 (4 shards), merge job 101: results in {}/merged",
            out.display()
        )
    );
    let shards: Vec<String> = files(&out.join("shards"))
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        shards,
        (0..4)
            .map(|i| format!("shard-{i}-of-4.json"))
            .collect::<Vec<_>>()
    );
    // No task's working folder is left behind.
    assert_eq!(std::fs::read_dir(out.join("shards")).unwrap().count(), 4);
    let merged = files(&out.join("merged"));
    assert!(merged.iter().any(|(n, _)| n == "summary.csv"));
    assert_eq!(merged, files(&full));
}

#[test]
fn a_failed_shard_stops_the_merge_and_misuse_is_exit_2() {
    let d = tmp("fail");
    let out = d.join("out");
    // A flag the sweep refuses fails every task; the merge job does not run.
    let o = bash(
        &d,
        &[
            "scripts/slurm/submit.sh",
            SCENARIO,
            out.to_str().unwrap(),
            "2",
            "--seeds",
            "0",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(d.join("state/100")).unwrap(), "1\n");
    assert_eq!(std::fs::read_to_string(d.join("state/101")).unwrap(), "1\n");
    assert!(!out.join("merged").exists());
    let log = std::fs::read_to_string(d.join("state/100.0.log")).unwrap();
    assert!(log.contains("--seeds"), "{log}");

    let o = bash(&d, &["scripts/slurm/submit.sh", SCENARIO, "x", "0"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("SHARDS: a whole number from 1"));
    let o = bash(&d, &["scripts/slurm/submit.sh", SCENARIO], &[]);
    assert_eq!(o.status.code(), Some(2));
    // A shard script started outside a job array says so.
    let o = bash(
        &d,
        &["scripts/slurm/sweep-shard.sbatch", SCENARIO, "x"],
        &[("SLURM_ARRAY_TASK_ID", "")],
    );
    assert!(!o.status.success());
    assert!(
        text(&o).contains("not in a Slurm job array"),
        "{}",
        text(&o)
    );
}
