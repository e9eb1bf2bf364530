//! `orrery sweep`: an experiment's parameter sweeps (the cartesian product of every `sweep`
//! line's values, each product a *cell*) × its seeds, run in parallel, with per-cell means and
//! Student-t 95% confidence intervals ([`crate::experiment::drill::Aggregate`]).
//!
//! Each cell is the scenario rewritten by its values and resolved again
//! ([`crate::scenario::Loaded::with_overrides`]), so every cell is validated before anything runs.
//! Runs are numbered `cell × seeds + seed index`; a shard `i/n` runs the runs whose number
//! mod n = i and writes them to `shard-I-of-N.json`; [`merge`] checks that shards belong
//! together and cover every run exactly once, and gives the same [`SweepResult`] as an
//! unsharded sweep, so the files written are byte-identical. Results are sorted by (cell,
//! seed) before anything is summed: the thread count never changes them.
//!
//! Architecture invariant: no printing here; files are written only by [`write`](fn@write) and
//! [`write_shard`], atomically.

use crate::csv::field as csv_field;
use crate::experiment::drill::Aggregate;
use crate::experiment::measure::{self, ClusterFigures};
use crate::experiment::placement::Placement;
use crate::scenario::{Loaded, Override, Spec};
use crate::sim::{SimConfig, simulate};
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Metrics reported when the experiment names none: makespan, the rate of each kind of work
/// the scenario has (each in its own unit), cost and energy.
pub fn default_metrics(spec: &Spec) -> Vec<String> {
    let has = |f: fn(&crate::scenario::workload::Workload) -> bool| spec.workloads.iter().any(f);
    let mut m = vec!["makespan".to_string()];
    if has(|w| !w.training.is_empty()) {
        m.push("steps_per_h".into());
        m.push("steps_done".into());
    }
    if has(|w| !w.tasks.is_empty()) {
        m.push("tasks_per_s".into());
    }
    if has(|w| !w.services.is_empty()) {
        m.push("requests_per_s".into());
    }
    m.extend(["cost".to_string(), "energy".to_string()]);
    m
}

/// What a sweep is: identical for every shard of it (merge checks that).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SweepHeader {
    pub orrery: String,
    /// The scenario file as given.
    pub scenario: String,
    pub scenario_hash: String,
    pub experiment: String,
    /// Swept parameters, in `sweep` line order.
    pub params: Vec<String>,
    /// Every cell's values (as written), in order: the last parameter varies fastest.
    pub cells: Vec<Vec<String>>,
    pub seeds: Vec<u64>,
    /// Experiment metric names ([`crate::scenario::experiment::METRICS`]).
    pub metrics: Vec<String>,
}

impl SweepHeader {
    pub fn runs(&self) -> usize {
        self.cells.len() * self.seeds.len()
    }
    /// `1..20` or a list.
    pub fn seeds_label(&self) -> String {
        crate::experiment::drill::seeds_label(&self.seeds)
    }
}

/// One run: a cell and a seed, a value per metric (header order; `None`: the run has none).
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// Run number: `cell × seeds + seed index`.
    pub run: usize,
    pub cell: usize,
    pub seed: u64,
    pub values: Vec<Option<f64>>,
    /// Where the run's work ran, kept for the first seed of each cell only (the report's
    /// "Where the work ran"); carried in shards, so a merge reports it too.
    pub placement: Option<Placement>,
}

/// Per metric over a cell's seeds: mean and 95% CI (see [`Aggregate`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CellSummary {
    pub cell: usize,
    /// (parameter, value as written), in parameter order.
    pub params: Vec<(String, String)>,
    /// Runs (seeds) in the cell.
    pub seeds: usize,
    /// One per metric, header order.
    pub metrics: Vec<Aggregate>,
}

/// A whole sweep: what plots use.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepResult {
    pub header: SweepHeader,
    /// Sorted by (cell, seed).
    pub runs: Vec<RunRow>,
    pub cells: Vec<CellSummary>,
    /// Broken invariants of any run, `cell C seed S: ...` (empty unless orrery has a bug).
    pub violations: Vec<String>,
}

/// A shard file: the header, which shard, and its runs; and what `merge` needs to draw the
/// plots `sweep` draws without reading the scenario (which may not be where `merge` runs): the
/// experiment's `plot` lines, and in the shard holding the first run, that run's plot data
/// when a line draws it.
#[derive(Debug, Clone, PartialEq)]
pub struct Shard {
    pub header: SweepHeader,
    pub shard: usize,
    pub shards: usize,
    pub runs: Vec<RunRow>,
    pub plots: Vec<crate::scenario::experiment::Plot>,
    pub representative: Option<super::representative::Representative>,
}

#[derive(Debug, Clone, Default)]
pub struct SweepConfig {
    /// Experiment by name (default: the first).
    pub experiment: Option<String>,
    /// Seeds (default: the experiment's).
    pub seeds: Option<Vec<u64>>,
    /// Worker threads (0: one per CPU).
    pub threads: usize,
    /// `(i, n)`: run only the runs whose number mod n = i.
    pub shard: Option<(usize, usize)>,
    pub traces: BTreeMap<String, crate::scenario::arrivals::Trace>,
    pub empirical: BTreeMap<String, Vec<f64>>,
    pub progress: Option<ProgressBar>,
}

/// A sweep ready to run: its header and one resolved spec per cell.
pub struct Plan {
    pub header: SweepHeader,
    pub specs: Vec<Spec>,
}

/// Why a sweep cannot run: a message, or a cell whose scenario is invalid (its diagnostics,
/// located at the `sweep` lines, renderable with its sources).
pub enum PlanError {
    Message(String),
    Invalid(Box<Loaded>),
}

/// Build every cell of the experiment (validating each) from a loaded, valid scenario.
pub fn plan(loaded: &Loaded, scenario: &str, cfg: &SweepConfig) -> Result<Plan, PlanError> {
    let spec = loaded
        .spec
        .as_ref()
        .ok_or_else(|| PlanError::Message("the scenario has errors".into()))?;
    let exp = match &cfg.experiment {
        Some(n) => spec.experiments.iter().find(|e| &e.name == n).ok_or_else(|| {
            let names: Vec<&str> = spec.experiments.iter().map(|e| e.name.as_str()).collect();
            PlanError::Message(format!(
                "no experiment `{n}` in {scenario} (it has: {})",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ))
        })?,
        None => spec.experiments.first().ok_or_else(|| {
            PlanError::Message(format!(
                "{scenario} has no experiment block to sweep (add `experiment NAME {{ sweep ... }}`)"
            ))
        })?,
    };
    let seeds = cfg.seeds.clone().unwrap_or_else(|| exp.seeds.clone());
    if seeds.is_empty() {
        return Err(PlanError::Message("no seeds to run".into()));
    }
    let mut cells: Vec<Vec<usize>> = vec![Vec::new()];
    for sw in &exp.sweeps {
        cells = cells
            .into_iter()
            .flat_map(|c| {
                (0..sw.items.len()).map(move |k| {
                    let mut c = c.clone();
                    c.push(k);
                    c
                })
            })
            .collect();
    }
    let mut specs = Vec::with_capacity(cells.len());
    let mut values = Vec::with_capacity(cells.len());
    for c in &cells {
        let overrides: Vec<Override> = exp
            .sweeps
            .iter()
            .zip(c)
            .map(|(sw, &k)| Override {
                param: sw.param.clone(),
                value: sw.items[k].clone(),
                span: sw.span,
            })
            .collect();
        let l = loaded.with_overrides(&overrides);
        match l.spec {
            Some(s) if !l.has_errors() => specs.push(s),
            _ => return Err(PlanError::Invalid(Box::new(l))),
        }
        values.push(
            exp.sweeps
                .iter()
                .zip(c)
                .map(|(sw, &k)| sw.values[k].clone())
                .collect(),
        );
    }
    let metrics = if exp.metrics.is_empty() {
        default_metrics(&specs[0])
    } else {
        let mut m = exp.metrics.clone();
        let mut seen = std::collections::BTreeSet::new();
        m.retain(|x| seen.insert(x.clone()));
        m
    };
    Ok(Plan {
        header: SweepHeader {
            orrery: env!("CARGO_PKG_VERSION").to_string(),
            scenario: scenario.to_string(),
            scenario_hash: crate::scenario_hash(&loaded.sources),
            experiment: exp.name.clone(),
            params: exp.sweeps.iter().map(|s| s.param.clone()).collect(),
            cells: values,
            seeds,
            metrics,
        },
        specs,
    })
}

/// Run the plan's runs (those of the shard, if any), in parallel; sorted by (cell, seed), with
/// every broken invariant (sorted).
pub fn run(plan: &Plan, cfg: &SweepConfig) -> (Vec<RunRow>, Vec<String>) {
    let h = &plan.header;
    let n_seeds = h.seeds.len();
    let jobs: Vec<usize> = (0..h.runs())
        .filter(|r| cfg.shard.is_none_or(|(i, n)| r % n == i))
        .collect();
    let figures: Vec<ClusterFigures> = plan.specs.iter().map(ClusterFigures::of).collect();
    let bar = cfg.progress.clone().unwrap_or_else(ProgressBar::hidden);
    bar.set_length(jobs.len() as u64);
    let one = |&r: &usize| -> (RunRow, Vec<String>) {
        let (cell, seed) = (r / n_seeds, h.seeds[r % n_seeds]);
        let res = simulate(
            &plan.specs[cell],
            &SimConfig {
                seed,
                traces: cfg.traces.clone(),
                empirical: cfg.empirical.clone(),
                ..Default::default()
            },
        );
        let values = h
            .metrics
            .iter()
            .map(|m| measure::metric(m, &figures[cell], &res.metrics))
            .collect();
        let broken = res
            .violations
            .iter()
            .map(|v| format!("cell {cell} seed {seed}: {v}"))
            .collect();
        let row = RunRow {
            run: r,
            cell,
            seed,
            values,
            placement: (r % n_seeds == 0).then(|| Placement::of(&res.metrics)),
        };
        (row, broken)
    };
    let done: Vec<(RunRow, Vec<String>)> = crate::parallel::map(&jobs, cfg.threads, &bar, one);
    let (mut rows, broken): (Vec<RunRow>, Vec<Vec<String>>) = done.into_iter().unzip();
    rows.sort_by_key(|r| (r.cell, r.seed, r.run));
    let mut violations: Vec<String> = broken.into_iter().flatten().collect();
    violations.sort();
    (rows, violations)
}

/// Aggregate every run (all of them: an unsharded sweep or merged shards).
pub fn summarize(header: SweepHeader, mut runs: Vec<RunRow>) -> SweepResult {
    runs.sort_by_key(|r| (r.cell, r.seed, r.run));
    let cells = (0..header.cells.len())
        .map(|c| {
            let mine: Vec<&RunRow> = runs.iter().filter(|r| r.cell == c).collect();
            CellSummary {
                cell: c,
                params: header
                    .params
                    .iter()
                    .cloned()
                    .zip(header.cells[c].iter().cloned())
                    .collect(),
                seeds: mine.len(),
                metrics: header
                    .metrics
                    .iter()
                    .enumerate()
                    .map(|(k, m)| {
                        let xs: Vec<f64> = mine.iter().filter_map(|r| r.values[k]).collect();
                        Aggregate::of(m, &xs)
                    })
                    .collect(),
            }
        })
        .collect();
    SweepResult {
        header,
        runs,
        cells,
        violations: Vec::new(),
    }
}

/// A whole sweep, unsharded: plan, run, summarize.
pub fn run_sweep(plan: &Plan, cfg: &SweepConfig) -> SweepResult {
    let cfg = SweepConfig {
        shard: None,
        ..cfg.clone()
    };
    let (rows, violations) = run(plan, &cfg);
    let mut r = summarize(plan.header.clone(), rows);
    r.violations = violations;
    r
}

fn num(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// `runs.csv`, `summary.csv` and `summary.json` ([`crate::experiment::json::summary`]):
/// (file name, contents).
///
/// runs.csv: `orrery,scenario_hash,experiment,seeds,cell,<param>...,seed,<metric column>...`
/// (one row per cell × seed). summary.csv:
/// `orrery,scenario_hash,experiment,seeds,cell,<param>...,runs,<metric>_mean,<metric>_lo,<metric>_hi...`
/// (lo/hi: the 95% Student-t
/// interval of the mean, empty below 2 runs). Metric columns carry their unit
/// ([`measure::column`]); an empty field is a run without that metric.
pub fn files(r: &SweepResult) -> Vec<(&'static str, String)> {
    let h = &r.header;
    let pre = format!(
        "{},{},{},{}",
        csv_field(&h.orrery),
        h.scenario_hash,
        csv_field(&h.experiment),
        csv_field(&h.seeds_label())
    );
    let head = "orrery,scenario_hash,experiment,seeds,cell";
    let params: String = h
        .params
        .iter()
        .map(|p| format!(",{}", csv_field(p)))
        .collect();
    let cols: Vec<String> = h.metrics.iter().map(|m| measure::column(m)).collect();
    let mut runs = format!("{head}{params},seed");
    for c in &cols {
        let _ = write!(runs, ",{c}");
    }
    runs.push('\n');
    for row in &r.runs {
        let vals: String = h.cells[row.cell]
            .iter()
            .map(|v| format!(",{}", csv_field(v)))
            .collect();
        let _ = write!(runs, "{pre},{}{vals},{}", row.cell, row.seed);
        for v in &row.values {
            let _ = write!(runs, ",{}", num(*v));
        }
        runs.push('\n');
    }
    let mut sum = format!("{head}{params},runs");
    for c in &cols {
        let _ = write!(sum, ",{c}_mean,{c}_lo,{c}_hi");
    }
    sum.push('\n');
    for c in &r.cells {
        let vals: String = c
            .params
            .iter()
            .map(|(_, v)| format!(",{}", csv_field(v)))
            .collect();
        let _ = write!(sum, "{pre},{}{vals},{}", c.cell, c.seeds);
        for a in &c.metrics {
            let _ = write!(sum, ",{},{},{}", num(a.mean), num(a.ci_low), num(a.ci_high));
        }
        sum.push('\n');
    }
    let json = crate::experiment::json::summary(r);
    vec![
        ("runs.csv", runs),
        ("summary.csv", sum),
        ("summary.json", json),
    ]
}

/// Write [`files`] into `dir`, each atomically.
pub fn write(dir: &Path, r: &SweepResult) -> std::io::Result<Vec<String>> {
    crate::atomic::write_files(dir, files(r))
}

/// File name of shard `i` of `n`.
pub fn shard_name(i: usize, n: usize) -> String {
    format!("shard-{i}-of-{n}.json")
}

/// Write a shard file into `dir` (atomically); returns its name.
pub fn write_shard(dir: &Path, s: &Shard) -> std::io::Result<String> {
    crate::atomic::create_dir(dir)?;
    let name = shard_name(s.shard, s.shards);
    let json = crate::experiment::json::shard_to_json(s).map_err(std::io::Error::other)? + "\n";
    crate::atomic::write_atomic(&dir.join(&name), json.as_bytes())?;
    Ok(name)
}

/// Shard files among `paths`: files as given, folders' `shard-*.json` (sorted).
pub fn shard_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| format!("cannot read {}: {e}", p.display()))?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|f| {
                    f.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("shard-") && n.ends_with(".json"))
                })
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(format!("{} holds no shard-*.json file", p.display()));
            }
            out.extend(found);
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            return Err(format!("{} does not exist", p.display()));
        }
    }
    Ok(out)
}

/// Read shard files.
pub fn read_shards(files: &[PathBuf]) -> Result<Vec<(PathBuf, Shard)>, String> {
    files
        .iter()
        .map(|f| {
            let text = crate::files::read_text(f, crate::files::MAX_SHARD_BYTES)
                .map_err(|e| format!("{} {e}", f.display()))?;
            let s = crate::experiment::json::shard_from_json(&text)
                .map_err(|e| format!("{} is not a sweep shard: {e}", f.display()))?;
            Ok((f.clone(), s))
        })
        .collect()
}

/// Merge shards of one sweep: same header (scenario hash, experiment, version, cells, seeds,
/// metrics) and shard count, every run exactly once. The result equals the unsharded sweep's.
pub fn merge(shards: Vec<(PathBuf, Shard)>) -> Result<SweepResult, String> {
    let Some((first_path, first)) = shards.first() else {
        return Err("no shards to merge".into());
    };
    let h = first.header.clone();
    let n = first.shards;
    // The header itself must describe a sweep this build could have run.
    let bad = |w: String| {
        Err(format!(
            "{} is not a shard of a sweep: {w}",
            first_path.display()
        ))
    };
    if let Some(m) = h
        .metrics
        .iter()
        .find(|m| !crate::scenario::experiment::METRICS.contains(&m.as_str()))
    {
        return bad(format!("unknown metric `{m}`"));
    }
    if let Some((i, c)) = h
        .cells
        .iter()
        .enumerate()
        .find(|(_, c)| c.len() != h.params.len())
    {
        return bad(format!(
            "cell {i} has {} values for {} swept parameters",
            c.len(),
            h.params.len()
        ));
    }
    if h.seeds.is_empty() || h.cells.is_empty() || n == 0 {
        return bad("no seeds, no cells or no shards".into());
    }
    if let Some((p, s)) = shards.iter().find(|(_, s)| s.shard >= s.shards) {
        return Err(format!(
            "{}: shard {} of {} does not exist",
            p.display(),
            s.shard,
            s.shards
        ));
    }
    let mut seen_shard: BTreeMap<usize, &Path> = BTreeMap::new();
    for (p, s) in &shards {
        let what = if s.header.scenario_hash != h.scenario_hash {
            Some(format!(
                "scenario hash {} (not {})",
                s.header.scenario_hash, h.scenario_hash
            ))
        } else if s.header.experiment != h.experiment {
            Some(format!(
                "experiment `{}` (not `{}`)",
                s.header.experiment, h.experiment
            ))
        } else if s.header.orrery != h.orrery {
            Some(format!("orrery {} (not {})", s.header.orrery, h.orrery))
        } else if s.header != h {
            Some("different cells, seeds or metrics".into())
        } else if s.shards != n {
            Some(format!("{} shards (not {n})", s.shards))
        } else {
            None
        };
        if let Some(w) = what {
            return Err(format!(
                "{} belongs to another sweep than {}: {w}",
                p.display(),
                first_path.display()
            ));
        }
        if let Some(other) = seen_shard.insert(s.shard, p) {
            return Err(format!(
                "shard {}/{n} is given twice: {} and {}",
                s.shard,
                other.display(),
                p.display()
            ));
        }
    }
    let missing: Vec<String> = (0..n)
        .filter(|i| !seen_shard.contains_key(i))
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(format!("missing shard(s): {}", missing.join(", ")));
    }
    let total = h.runs();
    let mut count = vec![0usize; total];
    let mut runs = Vec::with_capacity(total);
    for (p, s) in shards {
        for r in s.runs {
            let ok = r.run < total
                && r.run % n == s.shard
                && r.cell == r.run / h.seeds.len()
                && h.seeds.get(r.run % h.seeds.len()) == Some(&r.seed)
                && r.values.len() == h.metrics.len();
            if !ok {
                return Err(format!(
                    "{}: run {} does not belong to shard {}/{n}",
                    p.display(),
                    r.run,
                    s.shard
                ));
            }
            count[r.run] += 1;
            runs.push(r);
        }
    }
    if let Some(r) = count.iter().position(|&c| c != 1) {
        return Err(format!(
            "run {r} (cell {}, seed {}) appears {} times in the shards; each must appear once",
            r / h.seeds.len(),
            h.seeds[r % h.seeds.len()],
            count[r]
        ));
    }
    Ok(summarize(h, runs))
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
