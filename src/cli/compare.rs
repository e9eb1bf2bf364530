//! `orrery compare`.

use super::args::CompareArgs;
use super::common::{
    check_threads, failure_block, file_stem, load, parse_duration, parse_seeds, progress_bar,
    sound, within_budget, written_or_fail,
};
use super::error::Outcome;
use super::inputs::{empirical, traces};
use std::path::PathBuf;

pub(super) fn compare(a: CompareArgs) -> Outcome {
    let CompareArgs {
        files,
        seeds,
        failures,
        horizon,
        threads,
        out,
        no_plots,
        ..
    } = a;
    let failures = failures.as_deref();
    let threads = check_threads(threads)?;
    let seeds = parse_seeds(seeds.as_deref().unwrap_or("1..5"))?;
    let horizon = (horizon.as_deref().map(parse_duration).transpose())
        .map_err(|e| format!("--horizon: {e}"))?;
    let mut entries = Vec::new();
    for f in &files {
        let l = load(Some(f))?;
        let spec = l.spec.clone().expect("no errors means a spec");
        let failure_block =
            failure_block(&spec, failures).map_err(|e| format!("{}: {e}", f.display()))?;
        let (traces, empirical) = traces(&spec, &l.sources, Some(f))
            .and_then(|t| Ok((t, empirical(&spec, &l.sources, f)?)))?;
        super::common::gate(
            &l,
            &spec,
            horizon,
            &traces,
            super::common::runs_at_once(threads),
        )?;
        entries.push(orrery::experiment::compare::Entry {
            name: file_stem(f),
            file: f.display().to_string(),
            scenario_hash: orrery::scenario_hash(&l.sources),
            spec,
            traces,
            empirical,
            failure_block,
            horizon,
        });
    }
    outln!(
        "orrery {} · compare {} · seeds {}{}",
        env!("CARGO_PKG_VERSION"),
        entries
            .iter()
            .map(|e| format!("{} (hash {})", e.file, e.scenario_hash))
            .collect::<Vec<_>>()
            .join(" vs "),
        orrery::experiment::drill::seeds_label(&seeds),
        failures
            .map(|f| format!(" · failures {f}"))
            .unwrap_or_default()
    );
    let bar = progress_bar((entries.len() * seeds.len()) as u64);
    let r = orrery::experiment::compare::compare(&entries, &seeds, threads, bar);
    within_budget()?;
    sound(&r.violations)?;
    let table = orrery::experiment::compare::table(&r);
    out!("{table}");
    let dir = out.unwrap_or_else(|| {
        PathBuf::from("outputs").join(format!(
            "compare-{}",
            entries
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join("-")
        ))
    });
    super::common::begin_outputs(&dir)?;
    let t1 = std::time::Instant::now();
    let written = orrery::experiment::compare::write(&dir, &r)
        .map_err(|e| e.to_string())
        .and_then(|files| {
            orrery::outputs::compare::write(&dir, &r, &table, &files, !no_plots).map(|w| (files, w))
        });
    written_or_fail(&dir, written, t1)
}
