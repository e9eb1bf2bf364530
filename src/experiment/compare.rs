//! `orrery compare A.orr B.orr ...`: the same workload on different hardware mixes, each file
//! a full scenario, over the same seeds; per scenario the mean and Student-t 95% interval of:
//!
//! | column | definition |
//! |---|---|
//! | `makespan_s` | end of the last work (none if nothing finished in the window) |
//! | `hours` | T: the simulated window in hours ([`measure::hours`]) |
//! | `throughput_per_h` | work units (tasks + training steps + requests) / T |
//! | `tasks_per_h`, `steps_per_h`, `requests_per_h` | each kind of unit / T |
//! | `cost_usd` | cluster price ($/h, catalog) × T |
//! | `energy_kwh` | cluster power (kW, node `power` else device TDP) × T — TDP × time |
//! | `perf_per_dollar` | work units / cost_usd |
//! | `perf_per_watt` | throughput_per_h / power (W) = work units per Wh |
//!
//! See [`crate::experiment::measure`] for the price and power sums. Runs go to a rayon pool and are
//! sorted by (scenario, seed) before anything is summed: the thread count never changes the
//! result. No printing here; [`write`](fn@write) writes atomically.

use crate::experiment::drill::Aggregate;
use crate::experiment::measure::{self, ClusterFigures};
use crate::sim::{SimConfig, simulate};
use crate::spec::Spec;
use indicatif::ProgressBar;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Compared columns, in order.
pub const COLUMNS: &[&str] = &[
    "makespan_s",
    "hours",
    "throughput_per_h",
    "tasks_per_h",
    "steps_per_h",
    "requests_per_h",
    "cost_usd",
    "energy_kwh",
    "perf_per_dollar",
    "perf_per_watt",
];

/// One scenario to compare.
pub struct Entry {
    /// Label (the file stem).
    pub name: String,
    pub file: String,
    pub scenario_hash: String,
    pub spec: Spec,
    pub traces: BTreeMap<String, Vec<f64>>,
    pub empirical: BTreeMap<String, Vec<f64>>,
    /// Apply only this `failures` block (default: every block).
    pub failure_block: Option<String>,
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
    /// Cluster price ($/h) and power (W) from the catalog figures.
    pub price_per_hour: Option<f64>,
    pub power_watts: Option<f64>,
    /// Per seed (seed order), per column of [`COLUMNS`].
    pub runs: Vec<(u64, Vec<Option<f64>>)>,
    /// Per column of [`COLUMNS`].
    pub metrics: Vec<Aggregate>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CompareReport {
    pub orrery: String,
    pub seeds: Vec<u64>,
    pub columns: Vec<String>,
    pub rows: Vec<CompareRow>,
}

/// The compared values of one run.
pub fn values(fig: &ClusterFigures, m: &crate::sim::metrics::RunMetrics) -> Vec<Option<f64>> {
    let h = measure::hours(m);
    let (t, s, r) = measure::work_units(m);
    let per_h = |x: u64| (h > 0.0).then(|| x as f64 / h);
    let units = (t + s + r) as f64;
    let cost = measure::cost(fig, m);
    vec![
        (m.makespan > 0.0).then_some(m.makespan),
        Some(h),
        measure::throughput(m),
        per_h(t),
        per_h(s),
        per_h(r),
        cost,
        measure::energy(fig, m),
        cost.filter(|c| *c > 0.0).map(|c| units / c),
        measure::throughput(m)
            .zip(fig.power_watts.filter(|w| *w > 0.0))
            .map(|(x, w)| x / w),
    ]
}

/// Simulate every scenario over `seeds` on `threads` threads (0: one per CPU).
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
                ..Default::default()
            },
        );
        (e, seed, values(&figs[e], &r.metrics))
    };
    let mut results: Vec<(usize, u64, Vec<Option<f64>>)> =
        crate::parallel::map(&jobs, threads, &bar, one);
    results.sort_by_key(|(e, s, _)| (*e, *s));
    let rows = entries
        .iter()
        .enumerate()
        .map(|(i, en)| {
            let runs: Vec<(u64, Vec<Option<f64>>)> = results
                .iter()
                .filter(|(e, _, _)| *e == i)
                .map(|(_, s, v)| (*s, v.clone()))
                .collect();
            let metrics = COLUMNS
                .iter()
                .enumerate()
                .map(|(k, c)| {
                    let xs: Vec<f64> = runs.iter().filter_map(|(_, v)| v[k]).collect();
                    Aggregate::of(c, &xs)
                })
                .collect();
            CompareRow {
                name: en.name.clone(),
                failures: en.failure_block.clone(),
                file: en.file.clone(),
                scenario_hash: en.scenario_hash.clone(),
                price_per_hour: figs[i].price_per_hour,
                power_watts: figs[i].power_watts,
                runs,
                metrics,
            }
        })
        .collect();
    CompareReport {
        orrery: env!("CARGO_PKG_VERSION").to_string(),
        seeds: seeds.to_vec(),
        columns: COLUMNS.iter().map(|c| c.to_string()).collect(),
        rows,
    }
}

fn num(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// `compare.csv` and `compare.json`. CSV columns: `orrery,seeds,scenario,file,scenario_hash,
/// price_usd_per_h,power_w,runs`, then `<column>_mean,<column>_lo,<column>_hi` for each of
/// [`COLUMNS`].
pub fn files(r: &CompareReport) -> Vec<(&'static str, String)> {
    let seeds = crate::experiment::drill::seeds_label(&r.seeds);
    let mut csv =
        String::from("orrery,seeds,scenario,file,scenario_hash,price_usd_per_h,power_w,runs");
    for c in COLUMNS {
        let _ = write!(csv, ",{c}_mean,{c}_lo,{c}_hi");
    }
    csv.push('\n');
    for row in &r.rows {
        let _ = write!(
            csv,
            "{},{seeds},{},{},{},{},{},{}",
            r.orrery,
            row.name,
            row.file,
            row.scenario_hash,
            num(row.price_per_hour),
            num(row.power_watts),
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
    crate::atomic::create_dir(dir)?;
    let mut out = Vec::new();
    for (name, text) in files(r) {
        crate::atomic::write_atomic(&dir.join(name), text.as_bytes())?;
        out.push(name.to_string());
    }
    Ok(out)
}

fn sig(x: Option<f64>) -> String {
    x.map(crate::units::sig3).unwrap_or_else(|| "-".into())
}

/// The table `orrery compare` prints: mean ± half-width of the 95% interval.
pub fn table(r: &CompareReport) -> String {
    let mut out = String::new();
    let w = r
        .rows
        .iter()
        .map(|x| x.name.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let shown = [
        ("makespan_s", "makespan s"),
        ("throughput_per_h", "units/h"),
        ("cost_usd", "cost $"),
        ("energy_kwh", "energy kWh"),
        ("perf_per_dollar", "units/$"),
        ("perf_per_watt", "units/Wh"),
    ];
    let _ = write!(out, "{:w$}", "scenario");
    for (_, h) in shown {
        let _ = write!(out, "  {h:>20}");
    }
    out.push('\n');
    for row in &r.rows {
        let _ = write!(out, "{:w$}", row.name);
        for (k, _) in shown {
            let a = COLUMNS
                .iter()
                .position(|c| *c == k)
                .map(|i| &row.metrics[i]);
            let cell = match a {
                Some(a) if a.mean.is_some() => match a.half_width() {
                    Some(hw) => format!("{} ± {}", sig(a.mean), sig(Some(hw))),
                    None => sig(a.mean),
                },
                _ => "-".into(),
            };
            let _ = write!(out, "  {cell:>20}");
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "units = completed tasks + training steps + served requests; cost = price × hours; energy = power (TDP) × hours"
    );
    out
}
