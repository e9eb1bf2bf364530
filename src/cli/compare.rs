//! `orrery compare`.

use super::common::{
    broken, check_threads, failure_block, file_stem, load, parse_duration, parse_seeds,
    progress_bar, written_or_fail,
};
use super::inputs::{empirical, traces};
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) fn compare(
    files: &[PathBuf],
    seeds: Option<&str>,
    failures: Option<&str>,
    horizon: Option<&str>,
    threads: Option<usize>,
    out: Option<PathBuf>,
    plots: bool,
) -> ExitCode {
    let fail = |e: String| {
        errln!("error: {e}");
        ExitCode::from(2)
    };
    let threads = match check_threads(threads) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let seeds = match parse_seeds(seeds.unwrap_or("1..5")) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let horizon = match horizon.map(parse_duration).transpose() {
        Ok(h) => h,
        Err(e) => return fail(format!("--horizon: {e}")),
    };
    let mut entries = Vec::new();
    for f in files {
        let l = match load(Some(f)) {
            Ok(l) => l,
            Err(c) => return c,
        };
        let spec = l.spec.clone().expect("no errors means a spec");
        let failure_block = match failure_block(&spec, failures) {
            Ok(b) => b,
            Err(e) => return fail(format!("{}: {e}", f.display())),
        };
        let (traces, empirical) = match traces(&spec, &l.sources, Some(f))
            .and_then(|t| Ok((t, empirical(&spec, &l.sources, f)?)))
        {
            Ok(x) => x,
            Err(e) => return fail(e),
        };
        if let Err(c) = super::common::gate(
            &l,
            &spec,
            horizon,
            &traces,
            super::common::runs_at_once(threads),
        ) {
            return c;
        }
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
    if let Some(c) = super::common::over_budget().or_else(|| broken(&r.violations)) {
        return c;
    }
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
    if let Err(c) = super::common::begin_outputs(&dir) {
        return c;
    }
    let t1 = std::time::Instant::now();
    let written = orrery::experiment::compare::write(&dir, &r)
        .map_err(|e| e.to_string())
        .and_then(|files| {
            orrery::outputs::compare::write(&dir, &r, &table, &files, plots).map(|w| (files, w))
        });
    written_or_fail(&dir, written, t1)
}
