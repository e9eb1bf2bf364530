//! Failure drills: one scenario run over many seeds, once per recovery variant, with every
//! failure metric aggregated (mean, standard deviation, 95% Student's t confidence interval).
//!
//! A *variant* is one named `failures NAME { ... }` block, run alone
//! ([`SimConfig::failure_block`]); a scenario without named blocks is one variant, `all`, with
//! every block applied. Variants side by side compare recovery policies: MTBFs, repair times,
//! detection settings, or anything else a failure block can say.
//!
//! Runs go to a local rayon pool of [`DrillConfig::threads`] threads. Each run is a pure
//! function of (spec, variant, seed); results are put back in (variant, seed) order before
//! anything is summed, so the report is byte-identical whatever the thread count.
//!
//! Architecture invariant: no printing here. The caller may pass an `indicatif` progress bar
//! (the binary draws one only when stderr is a terminal); files are written only by
//! [`write`](fn@write), atomically.

use crate::engine::Time;
use crate::report::Header;
use crate::sim::metrics::{RunMetrics, TimelineEvent};
use crate::sim::{SimConfig, simulate};
use crate::spec::Spec;
use indicatif::ProgressBar;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Seeds a drill runs when neither the caller nor an experiment says: 1..=10.
pub const DEFAULT_SEEDS: u64 = 10;

/// Name of the single variant of a scenario without named failure blocks.
pub const ALL_VARIANT: &str = "all";

#[derive(Debug, Clone, Default)]
pub struct DrillConfig {
    /// The seeds to run (default: the first experiment's, else 1..=[`DEFAULT_SEEDS`]).
    pub seeds: Option<Vec<u64>>,
    /// Worker threads of the local pool (0: one per CPU, as rayon does).
    pub threads: usize,
    /// End of the simulated window (default: as `orrery run`, the first experiment's horizon).
    pub horizon: Option<Time>,
    /// Arrival traces, as [`SimConfig::traces`].
    pub traces: BTreeMap<String, Vec<f64>>,
    /// Empirical distribution samples, as [`SimConfig::empirical`].
    pub empirical: BTreeMap<String, Vec<f64>>,
    /// Advanced once per finished run (hidden when `None`).
    pub progress: Option<ProgressBar>,
}

/// A metric of a drill: what one seed's run yields, `None` where the run has no value (no
/// failure was detected, so no time to detect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    NodeFailures,
    TimeToDetect,
    TimeToRecover,
    LostDeviceHours,
    Goodput,
    SloViolationFraction,
    NodeAvailability,
    Makespan,
}

impl Metric {
    pub const ALL: [Metric; 8] = [
        Metric::NodeFailures,
        Metric::TimeToDetect,
        Metric::TimeToRecover,
        Metric::LostDeviceHours,
        Metric::Goodput,
        Metric::SloViolationFraction,
        Metric::NodeAvailability,
        Metric::Makespan,
    ];

    /// Column and JSON name (with its unit where it has one).
    pub fn key(self) -> &'static str {
        match self {
            Metric::NodeFailures => "node_failures",
            Metric::TimeToDetect => "time_to_detect_s",
            Metric::TimeToRecover => "time_to_recover_s",
            Metric::LostDeviceHours => "lost_device_hours",
            Metric::Goodput => "goodput",
            Metric::SloViolationFraction => "slo_violation_fraction",
            Metric::NodeAvailability => "node_availability",
            Metric::Makespan => "makespan_s",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Metric::NodeFailures => "node failures",
            Metric::TimeToDetect => "time to detect",
            Metric::TimeToRecover => "time to recover",
            Metric::LostDeviceHours => "lost device-hours",
            Metric::Goodput => "goodput",
            Metric::SloViolationFraction => "SLO violations",
            Metric::NodeAvailability => "node availability",
            Metric::Makespan => "makespan",
        }
    }

    /// The value of this metric in one run's results.
    pub fn of(self, m: &RunMetrics) -> Option<f64> {
        let f = &m.failures;
        let mean = |xs: &[f64]| (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64);
        match self {
            Metric::NodeFailures => Some(f.node_failures as f64),
            // The mean of this run's detections (recoveries); none when nothing happened.
            Metric::TimeToDetect => (f.time_to_detect.count > 0).then_some(f.time_to_detect.mean),
            Metric::TimeToRecover => {
                (f.time_to_recover.count > 0).then_some(f.time_to_recover.mean)
            }
            Metric::LostDeviceHours => Some(f.lost_device_hours),
            Metric::Goodput => mean(&m.training.iter().map(|t| t.goodput).collect::<Vec<_>>()),
            // Services without an SLO have no violations to count: left out of the mean.
            Metric::SloViolationFraction => mean(
                &m.services
                    .iter()
                    .filter(|s| !s.slo.is_empty())
                    .map(|s| s.slo_violation_fraction)
                    .collect::<Vec<_>>(),
            ),
            Metric::NodeAvailability => Some(f.node_availability),
            // None when nothing finished in the window (the run's makespan is then 0).
            Metric::Makespan => (m.makespan > 0.0).then_some(m.makespan),
        }
    }
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
    pub fn of(metric: &str, xs: &[f64]) -> Aggregate {
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
            // Every drill metric is non-negative: the interval is clipped at 0.
            ci_low: mean.zip(half).map(|(m, h)| (m - h).max(0.0)),
            ci_high: mean.zip(half).map(|(m, h)| m + h),
        }
    }

    /// Half-width of the (unclipped) confidence interval.
    /// Half-width of the interval; rounding noise of identical samples (below 1e-9 of the
    /// mean) reads as 0.
    pub fn half_width(&self) -> Option<f64> {
        self.mean.zip(self.ci_high).map(|(m, h)| {
            let w = h - m;
            if w.abs() <= 1e-9 * m.abs() { 0.0 } else { w }
        })
    }
}

/// One recovery variant over every seed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Variant {
    pub name: String,
    /// In seed order.
    pub runs: Vec<SeedRun>,
    /// Per metric of [`DrillReport::metrics`], in that order.
    pub aggregates: Vec<Aggregate>,
    /// Failure statements of this variant the simulation does not model yet (first seed).
    pub unsimulated: Vec<String>,
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
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DrillReport {
    pub seeds: Vec<u64>,
    /// Metric keys measured (goodput only with training jobs, SLO violations only with
    /// services that state an SLO).
    pub metrics: Vec<String>,
    pub variants: Vec<Variant>,
    /// Every variant's unsimulated failure statements, once each.
    pub unsimulated: Vec<String>,
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
    let mut out = DrillReport {
        seeds: reports
            .first()
            .map(|(_, r)| r.seeds.clone())
            .unwrap_or_default(),
        metrics: metrics.clone(),
        variants: Vec::new(),
        unsimulated: Vec::new(),
    };
    for (label, r) in reports {
        for mut v in r.variants {
            v.name = if v.name == ALL_VARIANT {
                label.clone()
            } else {
                format!("{label}/{}", v.name)
            };
            v.aggregates = metrics
                .iter()
                .filter_map(|m| v.aggregate(m).cloned())
                .collect();
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

/// Run every variant over every seed, in parallel, and aggregate.
pub fn run_drill(spec: &Spec, cfg: &DrillConfig) -> DrillReport {
    let seeds = seeds(spec, cfg);
    let variants = variants(spec);
    let has_training = spec.workloads.iter().any(|w| !w.training.is_empty());
    let has_slo = spec
        .workloads
        .iter()
        .any(|w| w.services.iter().any(|s| !s.slo.is_empty()));
    let metrics: Vec<Metric> = Metric::ALL
        .into_iter()
        .filter(|m| match m {
            Metric::Goodput => has_training,
            Metric::SloViolationFraction => has_slo,
            _ => true,
        })
        .collect();
    let jobs: Vec<(usize, u64)> = (0..variants.len())
        .flat_map(|v| seeds.iter().map(move |s| (v, *s)))
        .collect();
    let bar = cfg.progress.clone().unwrap_or_else(ProgressBar::hidden);
    let one = |&(v, seed): &(usize, u64)| -> (usize, SeedRun, Vec<String>) {
        let r = simulate(
            spec,
            &SimConfig {
                seed,
                horizon: cfg.horizon,
                traces: cfg.traces.clone(),
                failure_block: variants[v].clone(),
                empirical: cfg.empirical.clone(),
                ..Default::default()
            },
        );
        let m = r.metrics;
        let values = metrics
            .iter()
            .map(|k| (k.key().to_string(), k.of(&m)))
            .collect();
        let job_stops = m
            .failures
            .timeline
            .iter()
            .filter(|e| e.kind == "job_stopped")
            .count() as u64;
        let run = SeedRun {
            seed,
            values,
            job_stops,
            timeline: m.failures.timeline,
        };
        (v, run, m.failures.unsimulated)
    };
    let mut results: Vec<(usize, SeedRun, Vec<String>)> =
        crate::parallel::map(&jobs, cfg.threads, &bar, one);
    // Whatever order the pool finished in, aggregate in (variant, seed) order.
    results.sort_by_key(|(v, r, _)| (*v, r.seed));
    let keys: Vec<String> = metrics.iter().map(|m| m.key().to_string()).collect();
    let mut out: Vec<Variant> = variants
        .iter()
        .map(|v| Variant {
            name: v.clone().unwrap_or_else(|| ALL_VARIANT.to_string()),
            runs: Vec::new(),
            aggregates: Vec::new(),
            unsimulated: Vec::new(),
        })
        .collect();
    for (v, run, unsim) in results {
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
    let mut unsimulated: Vec<String> = Vec::new();
    for u in out.iter().flat_map(|v| &v.unsimulated) {
        if !unsimulated.contains(u) {
            unsimulated.push(u.clone());
        }
    }
    DrillReport {
        seeds,
        metrics: keys,
        variants: out,
        unsimulated,
    }
}

/// The header line a drill prints: as a run's, with its seeds.
pub fn header_line(h: &Header, seeds: &[u64]) -> String {
    format!(
        "orrery {} · scenario {} · hash {} · seeds {}",
        h.orrery,
        h.scenario,
        h.scenario_hash,
        seeds_label(seeds)
    )
}

/// `drill.json`: the header (a run's, with the drill's `seeds` in place of its `seed`) and
/// the report.
pub fn to_json(h: &Header, r: &DrillReport) -> String {
    #[derive(Serialize)]
    struct DrillHeader<'a> {
        orrery: &'a str,
        scenario: &'a str,
        scenario_hash: &'a str,
        seeds: &'a [u64],
    }
    #[derive(Serialize)]
    struct Out<'a> {
        header: DrillHeader<'a>,
        drill: &'a DrillReport,
    }
    let out = Out {
        header: DrillHeader {
            orrery: &h.orrery,
            scenario: &h.scenario,
            scenario_hash: &h.scenario_hash,
            seeds: &r.seeds,
        },
        drill: r,
    };
    serde_json::to_string_pretty(&out).unwrap_or_default()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// The CSV files of a drill: (file name, contents).
pub fn csv_files(r: &DrillReport) -> Vec<(&'static str, String)> {
    let mut agg = String::from("variant,metric,n,mean,std,ci_low,ci_high\n");
    let mut per_seed = format!("variant,seed,{},job_stops\n", r.metrics.join(","));
    let mut timeline = String::from("variant,seed,time_s,kind,subject\n");
    for v in &r.variants {
        let name = csv_field(&v.name);
        for a in &v.aggregates {
            let _ = writeln!(
                agg,
                "{name},{},{},{},{},{},{}",
                a.metric,
                a.n,
                opt(a.mean),
                opt(a.std),
                opt(a.ci_low),
                opt(a.ci_high)
            );
        }
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
            for e in &run.timeline {
                let _ = writeln!(
                    timeline,
                    "{name},{},{},{},{}",
                    run.seed,
                    e.time,
                    csv_field(&e.kind),
                    csv_field(&e.subject)
                );
            }
        }
    }
    vec![
        ("drill.csv", agg),
        ("per_seed.csv", per_seed),
        ("timeline.csv", timeline),
    ]
}

/// Write `drill.json`, `drill.csv`, `per_seed.csv` and `timeline.csv` into `dir`, each
/// atomically; the names written, in order.
pub fn write(dir: &Path, h: &Header, r: &DrillReport) -> std::io::Result<Vec<String>> {
    crate::atomic::create_dir(dir)?;
    let mut written = vec!["drill.json".to_string()];
    crate::atomic::write_atomic(&dir.join("drill.json"), to_json(h, r).as_bytes())?;
    for (name, text) in csv_files(r) {
        crate::atomic::write_atomic(&dir.join(name), text.as_bytes())?;
        written.push(name.to_string());
    }
    Ok(written)
}

/// Scale and unit suffix to show a metric's values in, chosen by the size of `x`.
fn unit(key: &str, x: f64) -> (f64, &'static str) {
    if key.ends_with("_s") {
        match x.abs() {
            a if a == 0.0 || (1.0..3600.0).contains(&a) => (1.0, " s"),
            a if a < 1e-3 => (1e6, " us"),
            a if a < 1.0 => (1e3, " ms"),
            _ => (1.0 / 3600.0, " h"),
        }
    } else if matches!(
        key,
        "goodput" | "node_availability" | "slo_violation_fraction"
    ) {
        (100.0, "%")
    } else {
        (1.0, "")
    }
}

/// `mean ± half` in the mean's unit; a half-width below a millionth of the mean (floating-point
/// noise around identical values) shows as 0.
fn fmt_cell(key: &str, mean: f64, half: Option<f64>) -> String {
    let s = crate::units::sig3;
    let (k, u) = unit(
        key,
        if mean != 0.0 {
            mean
        } else {
            half.unwrap_or(0.0)
        },
    );
    match half {
        None => format!("{}{u}", s(mean * k)),
        Some(h) if h <= 1e-6 * mean.abs() => format!("{}{u} ± 0{u}", s(mean * k)),
        Some(h) => format!("{}{u} ± {}{u}", s(mean * k), s(h * k)),
    }
}

/// The side-by-side table a drill prints: a row per metric, a column per variant, each cell
/// `mean ± CI half-width` (`–` where no seed had a value; no `±` with a single seed).
pub fn table(r: &DrillReport) -> String {
    let mut o = String::new();
    let cells: Vec<Vec<String>> = r
        .metrics
        .iter()
        .enumerate()
        .map(|(i, key)| {
            r.variants
                .iter()
                .map(|v| {
                    let a = &v.aggregates[i];
                    match a.mean {
                        None => "–".to_string(),
                        Some(m) => fmt_cell(key, m, a.half_width()),
                    }
                })
                .collect()
        })
        .collect();
    let labels: Vec<&str> = r
        .metrics
        .iter()
        .map(|k| {
            Metric::ALL
                .iter()
                .find(|m| m.key() == k)
                .map(|m| m.label())
                .unwrap_or(k)
        })
        .collect();
    let w0 = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let widths: Vec<usize> = r
        .variants
        .iter()
        .enumerate()
        .map(|(j, v)| {
            cells
                .iter()
                .map(|row| row[j].chars().count())
                .chain([v.name.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(s.chars().count())));
    let mut line = pad("metric", w0);
    for (v, w) in r.variants.iter().zip(&widths) {
        line += "  ";
        line += &pad(&v.name, *w);
    }
    let _ = writeln!(o, "{}", line.trim_end());
    for (label, row) in labels.iter().zip(&cells) {
        let mut line = pad(label, w0);
        for (c, w) in row.iter().zip(&widths) {
            line += "  ";
            line += &pad(c, *w);
        }
        let _ = writeln!(o, "{}", line.trim_end());
    }
    let _ = writeln!(
        o,
        "{} seeds per variant; ± is the half-width of the 95% confidence interval of the mean (Student's t)",
        r.seeds.len()
    );
    for u in &r.unsimulated {
        let _ = writeln!(o, "not simulated yet: {u}");
    }
    o
}
