//! `orrery merge`.

use super::args::MergeArgs;
use super::error::Outcome;
use super::sweep::{sweep_outputs, sweep_table};

pub(super) fn merge(a: MergeArgs) -> Outcome {
    let (out, plots) = (a.out.as_path(), !a.no_plots);
    let read = orrery::experiment::sweep::shard_files(&a.shards)
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
    let r = read.and_then(orrery::experiment::sweep::merge)?;
    outln!(
        "merged {} runs of {} · experiment {} · hash {}",
        r.runs.len(),
        r.header.scenario,
        r.header.experiment,
        r.header.scenario_hash,
    );
    super::common::begin_outputs(out)?;
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
