//! `orrery merge`.

use super::sweep::{sweep_outputs, sweep_table};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(super) fn merge(shards: &[PathBuf], out: &Path, plots: bool) -> ExitCode {
    let read = orrery::experiment::sweep::shard_files(shards)
        .and_then(|f| orrery::experiment::sweep::read_shards(&f));
    // What the shards carry to draw the sweep's plots: its plot lines (every shard has them)
    // and the first run's plot data (shard 0 has it). Nothing is read from the scenario, so
    // the merge is the same from any folder, and the same as the unsharded sweep.
    let lines = read
        .as_ref()
        .ok()
        .and_then(|s| s.first())
        .map(|(_, s)| s.plots.clone())
        .unwrap_or_default();
    let representative = read
        .as_ref()
        .ok()
        .and_then(|s| s.iter().find_map(|(_, s)| s.representative.clone()));
    let r = match read.and_then(orrery::experiment::sweep::merge) {
        Ok(r) => r,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    outln!(
        "merged {} runs of {} · experiment {} · hash {}",
        r.runs.len(),
        r.header.scenario,
        r.header.experiment,
        r.header.scenario_hash,
    );
    if let Err(c) = super::common::begin_outputs(out) {
        return c;
    }
    let t1 = std::time::Instant::now();
    let written = orrery::experiment::sweep::write(out, &r);
    sweep_outputs(
        out,
        &r,
        written,
        &lines,
        representative.as_ref(),
        &sweep_table(&r),
        plots,
        t1,
    )
}
