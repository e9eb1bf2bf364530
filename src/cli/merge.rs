//! `orrery merge`.

use super::sweep::{experiment_plots, sweep_outputs, sweep_table};
use orrery::spec;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(super) fn merge(shards: &[PathBuf], out: &Path, plots: bool) -> ExitCode {
    let r = orrery::experiment::sweep::shard_files(shards)
        .and_then(|f| orrery::experiment::sweep::read_shards(&f))
        .and_then(orrery::experiment::sweep::merge);
    let r = match r {
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
    // The experiment's plot lines, when its scenario can still be read (and is unchanged).
    let lines = spec::load_file(Path::new(&r.header.scenario))
        .ok()
        .filter(|l| l.spec.is_some() && orrery::scenario_hash(&l.sources) == r.header.scenario_hash)
        .map(|l| experiment_plots(&l, &r.header.experiment))
        .unwrap_or_default();
    if let Err(c) = super::common::begin_outputs(out) {
        return c;
    }
    let t1 = std::time::Instant::now();
    let written = orrery::experiment::sweep::write(out, &r);
    sweep_outputs(out, &r, written, &lines, None, &sweep_table(&r), plots, t1)
}
