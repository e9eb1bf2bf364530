//! `orrery sweep`, and the table and outputs it shares with `merge`.

use super::args::SweepArgs;
use super::common::{
    check_threads, color, file_stem, load, parse_seeds, progress_bar, sound, within_budget,
    written_or_fail,
};
use super::error::{Error, Outcome};
use super::inputs::{empirical, traces};
use orrery::scenario::Loaded;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(super) fn sweep(a: SweepArgs) -> Outcome {
    let SweepArgs {
        file,
        experiment,
        seeds,
        threads,
        shard,
        out,
        no_plots,
        ..
    } = a;
    let (file, plots) = (file.as_path(), !no_plots);
    let threads = check_threads(threads)?;
    let seeds = seeds.as_deref().map(parse_seeds).transpose()?;
    let shard = shard
        .as_deref()
        .map(|s| {
            let bad = || format!("--shard: expected `i/n` with i < n, found `{s}`");
            let (i, n) = s.split_once('/').ok_or_else(bad)?;
            let (i, n): (usize, usize) = (
                i.trim().parse().map_err(|_| bad())?,
                n.trim().parse().map_err(|_| bad())?,
            );
            if n == 0 || i >= n {
                return Err(bad());
            }
            Ok((i, n))
        })
        .transpose()?;
    let l = load(Some(file))?;
    let spec = l.spec.as_ref().expect("no errors means a spec");
    let (traces, empirical) = traces(spec, &l.sources, Some(file))
        .and_then(|t| Ok((t, empirical(spec, &l.sources, file)?)))?;
    let mut cfg = orrery::experiment::sweep::SweepConfig {
        experiment,
        seeds,
        threads,
        shard,
        traces,
        empirical,
        progress: None,
    };
    let plan = match orrery::experiment::sweep::plan(&l, &file.display().to_string(), &cfg) {
        Ok(p) => p,
        Err(orrery::experiment::sweep::PlanError::Message(m)) => return Err(m.into()),
        Err(orrery::experiment::sweep::PlanError::Invalid(v)) => {
            err!("{}", v.render(color()));
            return Err(Error::Input(format!(
                "a sweep of {} makes an invalid scenario",
                file.display()
            )));
        }
    };
    // Every cell's scenario within the budgets, before any runs.
    for s in &plan.specs {
        super::common::gate(
            &l,
            s,
            None,
            &cfg.traces,
            super::common::runs_at_once(threads),
        )?;
    }
    let h = &plan.header;
    let runs = match shard {
        Some((i, n)) => (i..h.runs()).step_by(n).count(),
        None => h.runs(),
    };
    outln!(
        "orrery {} · scenario {} · hash {} · experiment {} · {} cells × seeds {} = {} runs{}",
        h.orrery,
        h.scenario,
        h.scenario_hash,
        h.experiment,
        h.cells.len(),
        h.seeds_label(),
        h.runs(),
        shard
            .map(|(i, n)| format!(" · shard {i}/{n}: {runs} runs"))
            .unwrap_or_default()
    );
    cfg.progress = progress_bar(runs as u64);
    let dir = out.unwrap_or_else(|| {
        PathBuf::from("outputs").join(format!("{}-{}", file_stem(file), h.experiment))
    });
    let t0 = std::time::Instant::now();
    let written = match shard {
        Some((i, n)) => {
            let (rows, violations) = orrery::experiment::sweep::run(&plan, &cfg);
            within_budget()?;
            sound(&violations)?;
            // The shard holding the first run (run 0: shard 0) carries its plot data, so that
            // a merge draws what the unsharded sweep draws, with or without the scenario.
            let plots = experiment_plots(&l, &h.experiment);
            let representative = (i == 0)
                .then(|| representative(&plan, &cfg, &plots))
                .flatten();
            within_budget()?;
            let s = orrery::experiment::sweep::Shard {
                header: plan.header.clone(),
                shard: i,
                shards: n,
                runs: rows,
                plots,
                representative,
            };
            orrery::experiment::sweep::write_shard(&dir, &s).map(|f| vec![f])
        }
        None => {
            let r = orrery::experiment::sweep::run_sweep(&plan, &cfg);
            within_budget()?;
            sound(&r.violations)?;
            let table = sweep_table(&r);
            out!("{table}");
            errln!("simulated in {:.2} s", t0.elapsed().as_secs_f64());
            let t1 = std::time::Instant::now();
            let lines = experiment_plots(&l, &r.header.experiment);
            let representative = plots.then(|| representative(&plan, &cfg, &lines)).flatten();
            within_budget()?;
            super::common::begin_outputs(&dir)?;
            let written = orrery::experiment::sweep::write(&dir, &r);
            return sweep_outputs(
                &dir,
                &r,
                written,
                &lines,
                representative.as_ref(),
                &table,
                plots,
                t1,
            );
        }
    };
    errln!("simulated in {:.2} s", t0.elapsed().as_secs_f64());
    let f = written.map_err(|e| format!("cannot write results to {}: {e}", dir.display()))?;
    outln!("wrote {} in {}", f.join(", "), dir.display());
    Ok(ExitCode::SUCCESS)
}

/// The table `sweep` and `merge` print: a row per cell, its swept values (left-aligned) then
/// each metric's mean ± the half-width of its interval.
pub(super) fn sweep_table(r: &orrery::experiment::sweep::SweepResult) -> String {
    let h = &r.header;
    let header = h.params.iter().cloned().chain(
        h.metrics
            .iter()
            .map(|m| orrery::experiment::measure::column(m)),
    );
    let params: Vec<usize> = (0..h.params.len()).collect();
    let mut t = orrery::table::Table::new(header).left(&params);
    for c in &r.cells {
        let cells = c.metrics.iter().zip(&h.metrics).map(|(a, metric)| {
            match (a.mean, a.half_width()) {
                (Some(m), Some(hw)) => {
                    format!("{} ± {}", orrery::units::sig3(m), orrery::units::sig3(hw))
                }
                (Some(m), None) => orrery::units::sig3(m),
                // Cost without a price, energy without power: say so rather than `-`.
                _ => match orrery::experiment::measure::why_missing(metric) {
                    Some(why) => format!("n/a ({why})"),
                    None => "-".into(),
                },
            }
        });
        t.row(c.params.iter().map(|(_, v)| v.clone()).chain(cells));
    }
    t.render()
}

/// The plot data of the run the `timeline` and `utilization` plot lines show, the first cell's
/// first seed, simulated with its timeline; `None` when no line draws it.
fn representative(
    plan: &orrery::experiment::sweep::Plan,
    cfg: &orrery::experiment::sweep::SweepConfig,
    lines: &[orrery::scenario::experiment::Plot],
) -> Option<orrery::outputs::sweep::Representative> {
    if !orrery::outputs::sweep::needs_representative(lines) {
        return None;
    }
    let run = orrery::sim::simulate(
        plan.specs.first()?,
        &orrery::sim::SimConfig {
            seed: plan.header.seeds.first().copied().unwrap_or(1),
            traces: cfg.traces.clone(),
            empirical: cfg.empirical.clone(),
            timeline: true,
            ..Default::default()
        },
    );
    Some(orrery::outputs::sweep::representative(&run))
}

/// The `plot` lines of the named experiment of a loaded scenario.
pub(super) fn experiment_plots(l: &Loaded, name: &str) -> Vec<orrery::scenario::experiment::Plot> {
    l.spec
        .as_ref()
        .and_then(|s| s.experiments.iter().find(|e| e.name == name))
        .map(|e| e.plots.clone())
        .unwrap_or_default()
}

/// Plots and report.md of a whole sweep, after its data files.
#[allow(clippy::too_many_arguments)]
pub(super) fn sweep_outputs(
    dir: &Path,
    r: &orrery::experiment::sweep::SweepResult,
    written: std::io::Result<Vec<String>>,
    lines: &[orrery::scenario::experiment::Plot],
    representative: Option<&orrery::outputs::sweep::Representative>,
    table: &str,
    plots: bool,
    t1: std::time::Instant,
) -> Outcome {
    let written = written.map_err(|e| e.to_string()).and_then(|files| {
        orrery::outputs::sweep::write(dir, r, lines, representative, table, &files, plots)
            .map(|w| (files, w))
    });
    written_or_fail(dir, written, t1)
}
