//! `orrery compare A.orr B.orr ...`: the same workload on different hardware mixes, each file
//! a full scenario, over the same seeds; per scenario the mean and Student-t 95% interval of
//! every per-kind figure of [`crate::experiment::kinds`] (training: step time, steps/h, goodput, $/step,
//! kWh/step; tasks: makespan, tasks/s; services: requests served/s, latency percentiles, SLO
//! attainment), each in its own unit and never added across kinds, and of the cluster-wide:
//!
//! | column | definition |
//! |---|---|
//! | `horizon_s` | W: the simulated window ([`crate::sim::window`]; its source is stated) |
//! | `cost_usd` | cluster price ($/h, catalog) × W — the whole cluster for the whole window |
//! | `energy_kwh` | cluster power (kW, node `power` else device TDP) × W — TDP × time |
//!
//! See [`crate::experiment::measure`] for the price and power sums. Runs go to a rayon pool and are
//! sorted by (scenario, seed) before anything is summed: the thread count never changes the
//! result. No printing here; [`write`](fn@write) writes atomically.

use crate::experiment::drill::Aggregate;
use crate::experiment::kinds::{self, Column};
use crate::experiment::measure::ClusterFigures;
use crate::scenario::Spec;
use crate::sim::{SimConfig, Window, simulate};
use indicatif::ProgressBar;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Version of the layout of `compare.json` (2: labelled per-kind columns, units in keys,
/// the window of every scenario; 3: each row's `metrics` an object keyed by column; 4: a
/// row's `price_missing` / `power_missing` say why its cost / energy figures are absent).
pub const SCHEMA_VERSION: u32 = 4;

/// One scenario to compare.
pub struct Entry {
    /// Label (the file stem).
    pub name: String,
    pub file: String,
    pub scenario_hash: String,
    pub spec: Spec,
    pub traces: BTreeMap<String, crate::scenario::arrivals::Trace>,
    pub empirical: BTreeMap<String, Vec<f64>>,
    /// Apply only this `failures` block (default: every block).
    pub failure_block: Option<String>,
    /// End of the simulated window (`--horizon`; default [`crate::sim::window`]'s).
    pub horizon: Option<crate::engine::Time>,
}

/// One seed's figures, by column key.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SeedValues {
    pub seed: u64,
    pub values: BTreeMap<String, Option<f64>>,
}

/// One scenario over every seed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CompareRow {
    pub name: String,
    pub file: String,
    pub scenario_hash: String,
    /// The only `failures` block applied, when one was chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures: Option<String>,
    /// Cluster price and power from the catalog figures, and its accelerators.
    pub price_usd_per_h: Option<f64>,
    pub power_w: Option<f64>,
    /// Why `price_usd_per_h` is unknown (`no price in catalog: MI250X`), so its cost figures
    /// are `n/a`; absent when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_missing: Option<String>,
    /// Why `power_w` is unknown (`no tdp in catalog: TPU_v5e`); absent when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_missing: Option<String>,
    pub devices: u64,
    /// The maturity tier of each of its accelerators (`crate::maturity`).
    pub tiers: Vec<crate::maturity::Maturity>,
    /// The window every run of this scenario used, and why (`horizon_s`, `horizon_source`).
    #[serde(flatten)]
    pub window: Window,
    /// Per seed (seed order).
    pub runs: Vec<SeedValues>,
    /// Per column of [`CompareReport::columns`], in that order (n = 0 where this scenario
    /// has no such item); in JSON an object keyed by column.
    #[serde(serialize_with = "crate::experiment::json::aggregates_by_metric")]
    pub metrics: Vec<Aggregate>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CompareReport {
    pub schema_version: u32,
    pub orrery: String,
    pub seeds: Vec<u64>,
    /// How `ci_low`/`ci_high` are computed.
    pub interval: String,
    /// Every column of any scenario, labelled (key with unit, kind, item, unit).
    pub columns: Vec<Column>,
    pub rows: Vec<CompareRow>,
    /// Why the comparison may mislead (rows priced at different maturity tiers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Broken invariants of any run (empty unless orrery has a bug); not written.
    #[serde(skip)]
    pub violations: Vec<String>,
}

/// What [`Aggregate`] intervals are.
pub const INTERVAL: &str = "95% confidence interval of the mean over the seeds: mean ± t(0.975, n−1)·sd/√n (Student's t), clipped at 0";

/// The compared figures of one run: per kind, then cluster-wide.
pub fn values(
    fig: &ClusterFigures,
    m: &crate::sim::metrics::RunMetrics,
) -> Vec<(Column, Option<f64>)> {
    let mut v = kinds::figures(fig, m);
    v.extend(kinds::cluster_figures(fig, m));
    v
}

/// Simulate every scenario over `seeds` on `threads` threads (0: one per CPU).
/// One run's figures: (scenario index, seed, value per column).
type SeedRun = (usize, u64, Vec<(Column, Option<f64>)>, Vec<String>);

pub fn compare(
    entries: &[Entry],
    seeds: &[u64],
    threads: usize,
    progress: Option<ProgressBar>,
) -> CompareReport {
    let figs: Vec<ClusterFigures> = entries
        .iter()
        .map(|e| ClusterFigures::of(&e.spec))
        .collect();
    let jobs: Vec<(usize, u64)> = (0..entries.len())
        .flat_map(|e| seeds.iter().map(move |s| (e, *s)))
        .collect();
    let bar = progress.unwrap_or_else(ProgressBar::hidden);
    bar.set_length(jobs.len() as u64);
    let one = |&(e, seed): &(usize, u64)| {
        let en = &entries[e];
        let r = simulate(
            &en.spec,
            &SimConfig {
                seed,
                traces: en.traces.clone(),
                empirical: en.empirical.clone(),
                failure_block: en.failure_block.clone(),
                horizon: crate::sim::window(&en.spec, en.horizon).horizon,
                ..Default::default()
            },
        );
        let broken = r
            .violations
            .iter()
            .map(|v| format!("{} seed {seed}: {v}", en.name))
            .collect();
        (e, seed, values(&figs[e], &r.metrics), broken)
    };
    let mut results: Vec<SeedRun> = crate::parallel::map(&jobs, threads, &bar, one);
    results.sort_by_key(|a| (a.0, a.1));
    let violations: Vec<String> = results.iter().flat_map(|r| r.3.iter().cloned()).collect();
    // Every scenario's columns, in first-seen order.
    let mut columns: Vec<Column> = Vec::new();
    for (_, _, vals, _) in &results {
        for (c, _) in vals {
            if !columns.iter().any(|k| k.key == c.key) {
                columns.push(c.clone());
            }
        }
    }
    let rows: Vec<CompareRow> = entries
        .iter()
        .enumerate()
        .map(|(i, en)| {
            let runs: Vec<SeedValues> = results
                .iter()
                .filter(|(e, _, _, _)| *e == i)
                .map(|(_, s, v, _)| SeedValues {
                    seed: *s,
                    values: v.iter().map(|(c, x)| (c.key.clone(), *x)).collect(),
                })
                .collect();
            let metrics = columns
                .iter()
                .map(|c| {
                    let xs: Vec<f64> = runs
                        .iter()
                        .filter_map(|r| r.values.get(&c.key).copied().flatten())
                        .collect();
                    Aggregate::of(&c.key, &xs)
                })
                .collect();
            CompareRow {
                name: en.name.clone(),
                failures: en.failure_block.clone(),
                file: en.file.clone(),
                scenario_hash: en.scenario_hash.clone(),
                price_usd_per_h: figs[i].price_per_hour,
                power_w: figs[i].power_watts,
                price_missing: figs[i].price_missing(),
                power_missing: figs[i].power_missing(),
                devices: figs[i].devices,
                tiers: crate::maturity::of_spec(&en.spec),
                window: crate::sim::window(&en.spec, en.horizon),
                runs,
                metrics,
            }
        })
        .collect();
    let tiers: Vec<(&str, &[crate::maturity::Maturity])> = rows
        .iter()
        .map(|r| (r.name.as_str(), r.tiers.as_slice()))
        .collect();
    let warnings = crate::maturity::mixed(&tiers).into_iter().collect();
    CompareReport {
        schema_version: SCHEMA_VERSION,
        orrery: env!("CARGO_PKG_VERSION").to_string(),
        seeds: seeds.to_vec(),
        interval: INTERVAL.to_string(),
        columns,
        rows,
        warnings,
        violations,
    }
}

fn num(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// `compare.csv` and `compare.json`. CSV columns: `orrery,seeds,scenario,file,
/// scenario_hash,price_usd_per_h,power_w,devices,horizon_s,horizon_source,runs`, then
/// `<key>_mean,<key>_lo,<key>_hi` for each of [`CompareReport::columns`].
pub fn files(r: &CompareReport) -> Vec<(&'static str, String)> {
    let seeds = crate::experiment::drill::seeds_label(&r.seeds);
    let field = crate::csv::field;
    let mut csv = String::from(
        "orrery,seeds,scenario,file,scenario_hash,price_usd_per_h,power_w,devices,horizon_s,horizon_source,runs",
    );
    for c in &r.columns {
        let k = field(&c.key);
        let _ = write!(csv, ",{k}_mean,{k}_lo,{k}_hi");
    }
    csv.push('\n');
    for row in &r.rows {
        let _ = write!(
            csv,
            "{},{seeds},{},{},{},{},{},{},{},{},{}",
            r.orrery,
            field(&row.name),
            field(&row.file),
            row.scenario_hash,
            num(row.price_usd_per_h),
            num(row.power_w),
            row.devices,
            num(row.window.seconds),
            field(&row.window.source),
            row.runs.len()
        );
        for a in &row.metrics {
            let _ = write!(csv, ",{},{},{}", num(a.mean), num(a.ci_low), num(a.ci_high));
        }
        csv.push('\n');
    }
    let json = serde_json::to_string_pretty(r).unwrap_or_default() + "\n";
    vec![("compare.csv", csv), ("compare.json", json)]
}

pub fn write(dir: &Path, r: &CompareReport) -> std::io::Result<Vec<String>> {
    crate::atomic::write_files(dir, files(r))
}

/// The table `orrery compare` prints: a row per figure (grouped by kind), a column per
/// scenario, each cell mean ± half-width of the 95% interval (`n/a (why)` where the price or
/// power it is computed from is missing, `-` where the scenario has no such item); the window
/// of each scenario first, with its source. Every scenario keeps its column.
pub fn table(r: &CompareReport) -> String {
    let names: Vec<String> = r.rows.iter().map(|x| x.name.clone()).collect();
    let mut rows: Vec<(String, Vec<String>)> = vec![
        (
            "window".into(),
            r.rows.iter().map(|x| x.window.label()).collect(),
        ),
        (
            "tiers".into(),
            r.rows
                .iter()
                .map(|x| {
                    let t: Vec<String> = x
                        .tiers
                        .iter()
                        .map(|m| format!("{} {}", m.accelerator, m.tier.as_str()))
                        .collect();
                    if t.is_empty() {
                        "-".into()
                    } else {
                        t.join(", ")
                    }
                })
                .collect(),
        ),
    ];
    let shown: Vec<Column> = r
        .columns
        .iter()
        .filter(|c| c.key != "horizon_s")
        .cloned()
        .collect();
    let order = ["training", "tasks", "services", "cluster"];
    rows.extend(kinds::rows_by_kind(&shown, &order, |key| {
        let i = r.columns.iter().position(|c| c.key == key);
        r.rows
            .iter()
            .map(|row| match i.map(|i| &row.metrics[i]) {
                Some(a) if a.mean.is_some() => {
                    kinds::cell(key, a.mean.unwrap_or(0.0), a.half_width())
                }
                _ => kinds::missing_cell(
                    key,
                    row.price_missing.as_deref(),
                    row.power_missing.as_deref(),
                ),
            })
            .collect()
    }));
    let mut out = kinds::grid("metric", &names, &rows);
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    if r.rows
        .iter()
        .any(|x| x.price_missing.is_some() || x.power_missing.is_some())
    {
        let _ = writeln!(
            out,
            "n/a: computed from a price or TDP the catalog does not have for that hardware; give one in the scenario (`accelerator X from X {{ price 2.5 $/h }}`, or `tdp`)"
        );
    }
    let _ = writeln!(
        out,
        "{} seeds; ± is the half-width of the {INTERVAL_SHORT}",
        r.seeds.len()
    );
    let _ = writeln!(
        out,
        "$/step and kWh/step: the job's devices' share of the cluster's price and TDP over its wall time, per step kept; SLO attainment: requests served within the target / requests arrived (LLM services: / requests the window decides)"
    );
    out
}

/// [`INTERVAL`] in a few words, for table footers.
pub const INTERVAL_SHORT: &str = "95% confidence interval of the mean (Student's t)";
