//! Failure drills: one scenario run over many seeds, once per recovery variant and once with
//! failures off (the paired baseline), with every failure metric and every per-kind figure
//! ([`crate::experiment::kinds`]) aggregated (mean, standard deviation, 95% Student's t confidence
//! interval), and what each variant's failures cost: the per-seed difference from the baseline.
//!
//! A *variant* is one named `failures NAME { ... }` block, run alone
//! ([`SimConfig::failure_block`]); a scenario without named blocks is one variant, `all`, with
//! every block applied. Variants side by side compare recovery policies: MTBFs, repair times,
//! detection settings, or anything else a failure block can say.
//!
//! The baseline ([`BASELINE_VARIANT`]) is the same scenario with every failure block removed,
//! run over the same seeds: the random streams of the work do not depend on the failures, so
//! seed s of a variant and seed s of the baseline differ only by what failed. The cost of a
//! variant is, per metric, the mean of (variant − baseline) over the seeds where both have a
//! value, with the paired t interval: mean ± t(0.975, n−1)·sd/√n of those differences.
//!
//! Runs go to a local rayon pool of [`DrillConfig::threads`] threads. Each run is a pure
//! function of (spec, variant, seed); results are put back in (variant, seed) order before
//! anything is summed, so the report is byte-identical whatever the thread count.
//!
//! This file is over 600 lines because it holds the runner, the pairing and the drill's files
//! and table together; it splits when the experiment runners move under one module (issue 14).
//!
//! Architecture invariant: no printing here. The caller may pass an `indicatif` progress bar
//! (the binary draws one only when stderr is a terminal); files are written only by
//! [`write`](fn@write), atomically.

pub use super::drill_files::{csv_files, to_json, write};
use crate::engine::Time;
use crate::experiment::kinds::{self, Column};
use crate::experiment::measure::ClusterFigures;
use crate::report::Header;
use crate::scenario::Spec;
use crate::sim::metrics::{RunMetrics, TimelineEvent};
use crate::sim::{SimConfig, Window, simulate};
use indicatif::ProgressBar;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Seeds a drill runs when neither the caller nor an experiment says: 1..=10.
pub const DEFAULT_SEEDS: u64 = 10;

/// Name of the single variant of a scenario without named failure blocks.
pub const ALL_VARIANT: &str = "all";

/// Name of the paired baseline: the scenario with failures off.
pub const BASELINE_VARIANT: &str = "no_failures";

/// Version of the layout of `drill.json` (2: per-kind metrics, the paired baseline and the
/// cost of each variant, each variant's window; 3: `schema_version` at the top rather than in
/// the header, `aggregates` and `cost` objects keyed by metric; 4: a variant's `price_missing` /
/// `power_missing` say why its $ / kWh figures are absent).
pub const SCHEMA_VERSION: u32 = 4;

/// How the intervals of [`Variant::aggregates`] and [`Variant::cost`] are computed.
pub const INTERVAL: &str = "95% confidence interval of the mean over the seeds: mean ± t(0.975, n−1)·sd/√n (Student's t), clipped at 0";
pub const PAIRED_INTERVAL: &str = "paired t: per seed, variant − baseline (same seed, failures off); mean ± t(0.975, n−1)·sd/√n of those differences";

#[derive(Debug, Clone, Default)]
pub struct DrillConfig {
    /// The seeds to run (default: the first experiment's, else 1..=[`DEFAULT_SEEDS`]).
    pub seeds: Option<Vec<u64>>,
    /// Worker threads of the local pool (0: one per CPU, as rayon does).
    pub threads: usize,
    /// End of the simulated window (default: as `orrery run`, the first experiment's horizon).
    pub horizon: Option<Time>,
    /// Arrival traces, as [`SimConfig::traces`].
    pub traces: BTreeMap<String, crate::scenario::arrivals::Trace>,
    /// Empirical distribution samples, as [`SimConfig::empirical`].
    pub empirical: BTreeMap<String, Vec<f64>>,
    /// Advanced once per finished run (hidden when `None`).
    pub progress: Option<ProgressBar>,
}

/// One seed's run of one variant.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SeedRun {
    pub seed: u64,
    /// By metric key (every key of [`DrillReport::metrics`]); `None` where the run had none.
    pub values: BTreeMap<String, Option<f64>>,
    /// Training-job stops (each loses the work since the job's last checkpoint).
    pub job_stops: u64,
    /// Every failure and recovery step of the run (written to `timeline.csv`, not JSON).
    #[serde(skip)]
    pub timeline: Vec<TimelineEvent>,
}

/// Mean, sample standard deviation and 95% confidence interval of the mean over the seeds
/// that had a value. `std` needs n ≥ 2; the interval uses Student's t with n − 1 degrees of
/// freedom: mean ± t(0.975, n−1) · std / √n.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Aggregate {
    pub metric: String,
    pub n: usize,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

impl Aggregate {
    /// Of non-negative values: the interval is clipped at 0.
    pub fn of(metric: &str, xs: &[f64]) -> Aggregate {
        let mut a = Aggregate::unclipped(metric, xs);
        a.ci_low = a.ci_low.map(|l| l.max(0.0));
        a
    }

    /// Of values of either sign (paired differences): the interval as computed.
    pub fn unclipped(metric: &str, xs: &[f64]) -> Aggregate {
        let n = xs.len();
        let mean = (n > 0).then(|| xs.iter().sum::<f64>() / n as f64);
        let std = mean
            .filter(|_| n >= 2)
            .map(|m| (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64).sqrt());
        let half = std.and_then(|s| {
            let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).ok()?;
            Some(t.inverse_cdf(0.975) * s / (n as f64).sqrt())
        });
        Aggregate {
            metric: metric.to_string(),
            n,
            mean,
            std,
            ci_low: mean.zip(half).map(|(m, h)| m - h),
            ci_high: mean.zip(half).map(|(m, h)| m + h),
        }
    }

    /// Half-width of the (unclipped) interval; rounding noise of identical samples (below 1e-9 of the
    /// mean) reads as 0.
    pub fn half_width(&self) -> Option<f64> {
        self.mean.zip(self.ci_high).map(|(m, h)| {
            let w = h - m;
            if w.abs() <= 1e-9 * m.abs() { 0.0 } else { w }
        })
    }
}

/// One recovery variant (or a baseline) over every seed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Variant {
    pub name: String,
    /// The window its runs used, and why (`horizon_s`, `horizon_source`).
    #[serde(flatten)]
    pub window: Window,
    /// The baseline its cost is paired with ([`DrillReport::baselines`]); `None` for a baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// In seed order.
    pub runs: Vec<SeedRun>,
    /// Per metric of [`DrillReport::metrics`], in that order; in JSON an object keyed by metric.
    #[serde(serialize_with = "crate::experiment::json::aggregates_by_metric")]
    pub aggregates: Vec<Aggregate>,
    /// Failure statements of this variant the simulation does not model yet (first seed).
    pub unsimulated: Vec<String>,
    /// What its failures cost, per metric of [`DrillReport::metrics`]: the per-seed
    /// difference variant − baseline, aggregated with [`Aggregate::unclipped`] (empty for a
    /// baseline); in JSON an object keyed by metric.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "crate::experiment::json::aggregates_by_metric"
    )]
    pub cost: Vec<Aggregate>,
    /// Why its $ / kWh figures are `n/a` (`no price in catalog: MI250X`); absent when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_missing: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_missing: Option<String>,
}

impl Variant {
    /// The aggregate of a metric, by key.
    pub fn aggregate(&self, key: &str) -> Option<&Aggregate> {
        self.aggregates.iter().find(|a| a.metric == key)
    }

    /// Per-seed values of a metric (seeds without a value left out).
    pub fn values(&self, key: &str) -> Vec<f64> {
        self.runs
            .iter()
            .filter_map(|r| r.values.get(key).copied().flatten())
            .collect()
    }

    /// The cost of this variant for a metric, by key.
    pub fn cost_of(&self, key: &str) -> Option<&Aggregate> {
        self.cost.iter().find(|a| a.metric == key)
    }
}

/// Per metric, the per-seed differences `variant − baseline` over the seeds where both have a
/// value, aggregated (paired t interval).
pub fn paired_cost(metrics: &[String], variant: &Variant, baseline: &Variant) -> Vec<Aggregate> {
    metrics
        .iter()
        .map(|k| {
            let diffs: Vec<f64> = variant
                .runs
                .iter()
                .filter_map(|r| {
                    let b = baseline.runs.iter().find(|b| b.seed == r.seed)?;
                    let (x, y) = (r.values.get(k).copied()??, b.values.get(k).copied()??);
                    Some(x - y)
                })
                .collect();
            Aggregate::unclipped(k, &diffs)
        })
        .collect()
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DrillReport {
    pub seeds: Vec<u64>,
    /// Metric keys measured: the failure figures, then each training job's, the tasks' and
    /// each service's ([`crate::experiment::kinds`]).
    pub metrics: Vec<String>,
    /// The same, labelled (key with unit, kind, item, unit).
    pub columns: Vec<Column>,
    /// How `ci_low`/`ci_high` are computed: of the aggregates, of the costs.
    pub interval: String,
    pub cost_interval: String,
    /// The no-failure runs each variant is paired with (one per scenario and policy).
    pub baselines: Vec<Variant>,
    pub variants: Vec<Variant>,
    /// Every variant's unsimulated failure statements, once each.
    pub unsimulated: Vec<String>,
    /// Broken invariants of any run (empty unless orrery has a bug); not written.
    #[serde(skip)]
    pub violations: Vec<String>,
}

/// Several scenarios' drills side by side (one per recovery policy: checkpoint interval, retry
/// settings, spare nodes...). Each scenario's variants are named after it (`ckpt_10min`, or
/// `ckpt_10min/flaky` when it has named failure blocks); the metrics compared are those every
/// scenario measured. The seeds must be the same (the caller checks).
pub fn merge(reports: Vec<(String, DrillReport)>) -> DrillReport {
    let metrics: Vec<String> = reports
        .first()
        .map(|(_, r)| {
            r.metrics
                .iter()
                .filter(|m| reports.iter().all(|(_, o)| o.metrics.contains(m)))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let columns: Vec<Column> = reports
        .first()
        .map(|(_, r)| {
            r.columns
                .iter()
                .filter(|c| metrics.contains(&c.key))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let mut out = DrillReport {
        seeds: reports
            .first()
            .map(|(_, r)| r.seeds.clone())
            .unwrap_or_default(),
        metrics: metrics.clone(),
        columns,
        interval: INTERVAL.into(),
        cost_interval: PAIRED_INTERVAL.into(),
        baselines: Vec::new(),
        variants: Vec::new(),
        unsimulated: Vec::new(),
        violations: reports
            .iter()
            .flat_map(|(name, r)| r.violations.iter().map(move |v| format!("{name}: {v}")))
            .collect(),
    };
    let keep = |xs: &[Aggregate]| -> Vec<Aggregate> {
        metrics
            .iter()
            .filter_map(|m| xs.iter().find(|a| &a.metric == m).cloned())
            .collect()
    };
    for (label, r) in reports {
        let rename = |name: &str| {
            if name == ALL_VARIANT {
                label.clone()
            } else {
                format!("{label}/{name}")
            }
        };
        for mut v in r.baselines {
            v.name = rename(&v.name);
            v.aggregates = keep(&v.aggregates);
            out.baselines.push(v);
        }
        for mut v in r.variants {
            v.name = rename(&v.name);
            v.baseline = v.baseline.as_deref().map(rename);
            v.aggregates = keep(&v.aggregates);
            v.cost = keep(&v.cost);
            out.variants.push(v);
        }
        for u in r.unsimulated {
            if !out.unsimulated.contains(&u) {
                out.unsimulated.push(u);
            }
        }
    }
    out
}

/// The variants of a scenario: each named failure block, else one with every block.
pub fn variants(spec: &Spec) -> Vec<Option<String>> {
    let mut names: Vec<String> = Vec::new();
    for f in &spec.failures {
        if let Some(n) = &f.name
            && !names.contains(n)
        {
            names.push(n.clone());
        }
    }
    if names.is_empty() {
        vec![None]
    } else {
        names.into_iter().map(Some).collect()
    }
}

/// The seeds a drill runs.
pub fn seeds(spec: &Spec, cfg: &DrillConfig) -> Vec<u64> {
    match &cfg.seeds {
        Some(s) => s.clone(),
        None => spec
            .experiments
            .first()
            .map(|e| e.seeds.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| (1..=DEFAULT_SEEDS).collect()),
    }
}

/// `1..N` for a contiguous range, else the list.
pub fn seeds_label(seeds: &[u64]) -> String {
    match seeds {
        [] => "none".into(),
        [one] => one.to_string(),
        [first, .., last] if seeds.windows(2).all(|w| w[1] == w[0] + 1) => {
            format!("{first}..{last}")
        }
        _ => seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// How many runs a drill of `spec` makes per seed: each variant and the baseline.
pub fn runs_per_seed(spec: &Spec) -> usize {
    variants(spec).len() + 1
}

/// The values of one run: failure figures, per-kind figures, then the cluster's cost and
/// energy over the window (what a variant with more or fewer nodes pays for them), by key.
fn run_values(fig: &ClusterFigures, m: &RunMetrics) -> Vec<(Column, Option<f64>)> {
    let mut v = kinds::failure_figures(m);
    v.extend(kinds::figures(fig, m));
    // The window has its own line in every drill output.
    v.extend(
        kinds::cluster_figures(fig, m)
            .into_iter()
            .filter(|(c, _)| c.key != "horizon_s"),
    );
    v
}

/// The runs as (variant, seed), seed by seed with the baseline (0) beside its variants: the
/// pool splits the list in halves, and variant-major order gave one worker every baseline
/// (the long runs, where failures do not cut work short) and the other every variant, so the
/// faster idled at the end.
fn seed_major(seeds: &[u64], variants: usize) -> Vec<(usize, u64)> {
    seeds
        .iter()
        .flat_map(|s| (0..variants).map(move |v| (v, *s)))
        .collect()
}

/// Run the baseline and every variant over every seed, in parallel, and aggregate.
pub fn run_drill(spec: &Spec, cfg: &DrillConfig) -> DrillReport {
    let seeds = seeds(spec, cfg);
    // Index 0 is the baseline: the same scenario with every failure block removed.
    let mut quiet = spec.clone();
    quiet.failures.clear();
    let mut variants: Vec<Option<String>> = vec![None];
    variants.extend(self::variants(spec));
    let fig = ClusterFigures::of(spec);
    let window = crate::sim::window(spec, cfg.horizon);
    let jobs = seed_major(&seeds, variants.len());
    let bar = cfg.progress.clone().unwrap_or_else(ProgressBar::hidden);
    type Done = (usize, SeedRun, Vec<Column>, Vec<String>, Vec<String>);
    let one = |&(v, seed): &(usize, u64)| -> Done {
        let r = simulate(
            if v == 0 { &quiet } else { spec },
            &SimConfig {
                seed,
                horizon: cfg.horizon,
                traces: cfg.traces.clone(),
                failure_block: variants[v].clone(),
                empirical: cfg.empirical.clone(),
                ..Default::default()
            },
        );
        let broken: Vec<String> = r
            .violations
            .iter()
            .map(|x| format!("variant {v} seed {seed}: {x}"))
            .collect();
        let m = r.metrics;
        let figures = run_values(&fig, &m);
        let job_stops = m
            .failures
            .timeline
            .iter()
            .filter(|e| e.kind == "job_stopped")
            .count() as u64;
        let run = SeedRun {
            seed,
            values: figures.iter().map(|(c, x)| (c.key.clone(), *x)).collect(),
            job_stops,
            timeline: m.failures.timeline,
        };
        let columns = figures.into_iter().map(|(c, _)| c).collect();
        (v, run, columns, m.failures.unsimulated, broken)
    };
    let mut results: Vec<Done> = crate::parallel::map(&jobs, cfg.threads, &bar, one);
    // Whatever order the pool finished in, aggregate in (variant, seed) order.
    results.sort_by_key(|(v, r, _, _, _)| (*v, r.seed));
    let violations: Vec<String> = results
        .iter()
        .flat_map(|(_, _, _, _, b)| b.iter().cloned())
        .collect();
    let mut columns: Vec<Column> = Vec::new();
    for (_, _, cols, _, _) in &results {
        for c in cols {
            if !columns.iter().any(|k| k.key == c.key) {
                columns.push(c.clone());
            }
        }
    }
    let keys: Vec<String> = columns.iter().map(|c| c.key.clone()).collect();
    let mut out: Vec<Variant> = variants
        .iter()
        .enumerate()
        .map(|(i, v)| Variant {
            name: match (i, v) {
                (0, _) => BASELINE_VARIANT.to_string(),
                (_, Some(n)) => n.clone(),
                (_, None) => ALL_VARIANT.to_string(),
            },
            window: window.clone(),
            baseline: (i > 0).then(|| BASELINE_VARIANT.to_string()),
            runs: Vec::new(),
            aggregates: Vec::new(),
            unsimulated: Vec::new(),
            cost: Vec::new(),
            price_missing: fig.price_missing(),
            power_missing: fig.power_missing(),
        })
        .collect();
    for (v, run, _, unsim, _) in results {
        if out[v].runs.is_empty() {
            out[v].unsimulated = unsim;
        }
        out[v].runs.push(run);
    }
    for v in &mut out {
        v.aggregates = keys
            .iter()
            .map(|k| Aggregate::of(k, &v.values(k)))
            .collect();
    }
    let baseline = out.remove(0);
    for v in &mut out {
        v.cost = paired_cost(&keys, v, &baseline);
    }
    let mut unsimulated: Vec<String> = Vec::new();
    for u in out.iter().flat_map(|v| &v.unsimulated) {
        if !unsimulated.contains(u) {
            unsimulated.push(u.clone());
        }
    }
    DrillReport {
        seeds,
        metrics: keys,
        columns,
        interval: INTERVAL.into(),
        cost_interval: PAIRED_INTERVAL.into(),
        baselines: vec![baseline],
        variants: out,
        unsimulated,
        violations,
    }
}

/// The header line a drill prints: as a run's, with its seeds.
pub fn header_line(h: &Header, seeds: &[u64]) -> String {
    let mut line = format!(
        "orrery {} · scenario {} · hash {} · seeds {}",
        h.orrery,
        h.scenario,
        h.scenario_hash,
        seeds_label(seeds)
    );
    for t in &h.tiers {
        line.push_str(&format!("\ntier: {t}"));
    }
    line
}

/// Baselines, then variants (the order of every file and table).
pub(super) fn all(r: &DrillReport) -> impl Iterator<Item = &Variant> {
    r.baselines.iter().chain(&r.variants)
}

fn agg_cell(key: &str, v: &Variant, a: Option<&Aggregate>) -> String {
    match a.and_then(|a| a.mean.map(|m| (m, a.half_width()))) {
        Some((m, h)) => kinds::cell(key, m, h),
        None => {
            match kinds::why_missing(key, v.price_missing.as_deref(), v.power_missing.as_deref()) {
                Some(why) => format!("n/a ({why})"),
                None => "–".to_string(),
            }
        }
    }
}

/// The tables a drill prints: every metric per baseline and variant (`mean ± CI half-width`,
/// `–` where no seed had a value, no `±` with a single seed), then what each variant's
/// failures cost (variant − its baseline, paired per seed), then the windows and intervals.
pub fn table(r: &DrillReport) -> String {
    let shown: Vec<&Variant> = all(r).collect();
    let names: Vec<String> = shown.iter().map(|v| v.name.clone()).collect();
    let order = ["failures", "training", "tasks", "services", "cluster"];
    let rows = kinds::rows_by_kind(&r.columns, &order, |key| {
        shown
            .iter()
            .map(|v| agg_cell(key, v, v.aggregate(key)))
            .collect()
    });
    let mut o = kinds::grid("metric", &names, &rows);
    let names: Vec<String> = r.variants.iter().map(|v| v.name.clone()).collect();
    let rows = kinds::rows_by_kind(&r.columns, &order, |key| {
        r.variants
            .iter()
            .map(|v| agg_cell(key, v, v.cost_of(key)))
            .collect()
    });
    let _ = writeln!(
        o,
        "\nwhat the failures cost: variant − {BASELINE_VARIANT} (same seeds, failures off), paired per seed"
    );
    o.push_str(&kinds::grid("metric", &names, &rows));
    let windows: Vec<String> = shown.iter().map(|v| v.window.label()).collect();
    if windows.windows(2).all(|w| w[0] == w[1]) {
        let _ = writeln!(
            o,
            "\nwindow: {}",
            windows.first().cloned().unwrap_or_default()
        );
    } else {
        let _ = writeln!(o);
        for (v, w) in shown.iter().zip(&windows) {
            let _ = writeln!(o, "window of {}: {w}", v.name);
        }
    }
    let _ = writeln!(
        o,
        "{} seeds per variant; ± is the half-width of the 95% confidence interval of the mean (Student's t); costs: paired t over the per-seed differences",
        r.seeds.len()
    );
    let _ = writeln!(
        o,
        "lost device-hours = work thrown away + devices stalled waiting on recovery; SLO attainment = requests served within the target / requests arrived (lost and unserved requests count against it)"
    );
    for u in &r.unsimulated {
        let _ = writeln!(o, "not simulated yet: {u}");
    }
    o
}
