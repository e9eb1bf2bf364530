//! A drill's files: `drill.json`; `drill.csv`, `cost.csv` and `timeline.csv` as typed rows
//! (`report::rows`); `per_seed.csv` built from the metrics the drill measured.

use super::drill::{DrillReport, SCHEMA_VERSION, all};
use crate::report::Header;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

fn opt(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// `drill.csv`: per baseline and variant and metric, the window and the metric over seeds.
#[derive(Serialize, Default)]
struct AggregateRow<'a> {
    variant: &'a str,
    horizon_s: Option<f64>,
    horizon_source: &'a str,
    metric: &'a str,
    n: usize,
    mean: Option<f64>,
    std: Option<f64>,
    ci_low: Option<f64>,
    ci_high: Option<f64>,
}

/// `cost.csv`: per variant and metric, the paired difference from its baseline over seeds.
#[derive(Serialize, Default)]
struct CostRow<'a> {
    variant: &'a str,
    baseline: &'a str,
    metric: &'a str,
    n: usize,
    mean_difference: Option<f64>,
    std: Option<f64>,
    ci_low: Option<f64>,
    ci_high: Option<f64>,
}

/// `timeline.csv`: every failure and recovery event of every run.
#[derive(Serialize, Default)]
struct TimelineRow<'a> {
    variant: &'a str,
    seed: u64,
    time_s: f64,
    kind: &'a str,
    subject: &'a str,
}

/// The CSV files of a drill: (file name, contents). `drill.csv` and `per_seed.csv` hold the
/// baselines too; `cost.csv` the paired differences of each variant from its baseline.
/// `per_seed.csv` has a column per metric the drill measured, so it is built here, not typed.
pub fn csv_files(r: &DrillReport) -> Vec<(&'static str, String)> {
    use crate::report::rows::csv;
    let agg = csv(all(r).flat_map(|v| {
        v.aggregates.iter().map(|a| AggregateRow {
            variant: &v.name,
            horizon_s: v.window.seconds,
            horizon_source: &v.window.source,
            metric: &a.metric,
            n: a.n,
            mean: a.mean,
            std: a.std,
            ci_low: a.ci_low,
            ci_high: a.ci_high,
        })
    }));
    let cost = csv(all(r).flat_map(|v| {
        v.cost.iter().map(|a| CostRow {
            variant: &v.name,
            baseline: v.baseline.as_deref().unwrap_or(""),
            metric: &a.metric,
            n: a.n,
            mean_difference: a.mean,
            std: a.std,
            ci_low: a.ci_low,
            ci_high: a.ci_high,
        })
    }));
    let timeline = csv(all(r).flat_map(|v| {
        v.runs.iter().flat_map(move |run| {
            run.timeline.iter().map(move |e| TimelineRow {
                variant: &v.name,
                seed: run.seed,
                time_s: e.time,
                kind: &e.kind,
                subject: &e.subject,
            })
        })
    }));
    let keys: Vec<String> = r.metrics.iter().map(|k| crate::csv::field(k)).collect();
    let mut per_seed = format!("variant,seed,{},job_stops\n", keys.join(","));
    for v in all(r) {
        let name = crate::csv::field(&v.name);
        for run in &v.runs {
            let vals: Vec<String> = r
                .metrics
                .iter()
                .map(|k| opt(run.values.get(k).copied().flatten()))
                .collect();
            let _ = writeln!(
                per_seed,
                "{name},{},{},{}",
                run.seed,
                vals.join(","),
                run.job_stops
            );
        }
    }
    vec![
        ("drill.csv", agg),
        ("cost.csv", cost),
        ("per_seed.csv", per_seed),
        ("timeline.csv", timeline),
    ]
}

/// `drill.json`: the schema version, the header (a run's, with the drill's `seeds` in place
/// of its `seed`) and the report.
pub fn to_json(h: &Header, r: &DrillReport) -> String {
    #[derive(Serialize)]
    struct DrillHeader<'a> {
        orrery: &'a str,
        scenario: &'a str,
        scenario_hash: &'a str,
        seeds: &'a [u64],
        /// The maturity tier that priced each accelerator (`crate::maturity`).
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        tiers: &'a [String],
    }
    #[derive(Serialize)]
    struct Out<'a> {
        schema_version: u32,
        header: DrillHeader<'a>,
        drill: &'a DrillReport,
    }
    let out = Out {
        schema_version: SCHEMA_VERSION,
        header: DrillHeader {
            orrery: &h.orrery,
            scenario: &h.scenario,
            scenario_hash: &h.scenario_hash,
            seeds: &r.seeds,
            tiers: &h.tiers,
        },
        drill: r,
    };
    serde_json::to_string_pretty(&out).unwrap_or_default()
}

/// Write `drill.json`, `drill.csv`, `cost.csv`, `per_seed.csv` and `timeline.csv` into
/// `dir`, each atomically; the names written, in order.
pub fn write(dir: &Path, h: &Header, r: &DrillReport) -> std::io::Result<Vec<String>> {
    let json = ("drill.json", to_json(h, r));
    crate::atomic::write_files(dir, std::iter::once(json).chain(csv_files(r)))
}
