//! Each kind of work in its own unit: what `orrery compare` and `orrery drill` report per run,
//! instead of one "throughput" that adds tasks, training steps and requests.
//!
//! Keys carry their unit and name the item they measure (`<workload>.<job>.step_time_s`,
//! `<workload>.<service>.slo_p99_attainment`, `tasks.makespan_s`). W is the run's window in
//! seconds ([`crate::sim::window`], `RunMetrics::horizon`).
//!
//! | kind | key | definition |
//! |---|---|---|
//! | training | `step_time_s` | compute + mean communication of a step (none before a step) |
//! | training | `steps_per_h` | 3600 / the job's mean step time: steps per hour of the job running |
//! | training | `steps_done` | steps kept (after failures rolled some back) in the window |
//! | training | `goodput` | steps kept × mean step time / the job's wall time (runtime goodput, [`crate::sim::metrics::TrainingMetrics::goodput`]) |
//! | training | `usd_per_step` | the job's devices × the cluster's $ per device-hour × the job's wall time (h) / steps kept |
//! | training | `kwh_per_step` | the same with the cluster's kW per device (TDP × time) |
//! | training (model-level) | `tokens_per_s` | tokens of a step / step time |
//! | training (model-level) | `mfu` | model FLOP of a step (no recomputation) / (step time × the devices' dense peak) |
//! | training (model-level) | `usd_per_m_tokens` | `usd_per_step` / tokens of a step × 10⁶ |
//! | tasks | `tasks.completed` | tasks completed, every group |
//! | tasks | `tasks.makespan_s` | end of the last task (none if none completed) |
//! | tasks | `tasks.per_s` | completed / tasks makespan |
//! | services | `arrived`, `served` | requests that arrived in the window, and were served |
//! | services | `served_per_s` | served / W |
//! | services | `latency_p50_s`, `latency_p99_s` | of the served requests |
//! | services | `slo_<p>_attainment` | requests served within the SLO's target / requests arrived |
//! | services (LLM) | `arrived`, `finished` | requests that arrived in the window, and produced their last token |
//! | services (LLM) | `ttft_p50_s` … `e2e_p99_s` | time to first token, time per output token, arrival to last token, of finished requests |
//! | services (LLM) | `output_tokens_per_s`, `goodput_per_s` | output tokens; finished requests meeting every SLO: per second of the service's run (to its last request's finish when none is outstanding, a finite load; else W) |
//! | services (LLM) | `kv_mean_utilization`, `preemptions` | KV blocks in use over the placed time; sequences preempted |
//! | services (LLM) | `usd_per_m_tokens` | device-hours its replicas held (tp devices × time placed) × $ per device-hour / output tokens × 10⁶ |
//! | services (LLM) | `slo_<kind>_<p>_attainment` | requests within the SLO / requests arrived |
//! | failures | `lost_device_hours` | `lost_work_device_hours` (work thrown away) + `stalled_device_hours` (devices waiting on recovery) |
//! | failures | `node_failures`, `time_to_detect_s`, `time_to_recover_s`, `requests_lost`, `node_availability` | as [`crate::sim::metrics::FailureMetrics`] |
//!
//! An SLO `slo p99 1500 ms` is met when its attainment is at least 0.99: every request that
//! arrived and was not served within 1.5 s counts against it, whether it was served late, lost
//! with a replica, or still queued or in flight when the window ended. The cluster's $ and kW
//! per device are its price and power ([`crate::experiment::measure::ClusterFigures`]) divided by its
//! devices: a job pays for the share of the cluster it holds, host included. Tokens per second
//! are reported for model-level training jobs and services (they know their tokens).

use crate::experiment::measure::ClusterFigures;
use crate::sim::metrics::RunMetrics;
use serde::Serialize;

/// A reported quantity: its key (with unit), kind, and what it means.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Column {
    pub key: String,
    /// `training`, `tasks`, `services`, `failures` or `cluster`.
    pub kind: &'static str,
    /// The job or service (`workload.name`); absent for kind-wide and cluster-wide columns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    /// `s`, `steps/h`, `$`, `kWh`, `fraction`, `count`, `1/s`, `device-h`.
    pub unit: &'static str,
    /// What the table prints.
    pub label: String,
}

impl Column {
    pub fn new(kind: &'static str, item: Option<&str>, metric: &str, unit: &'static str) -> Self {
        let key = match item {
            Some(i) => format!("{i}.{metric}"),
            None => metric.to_string(),
        };
        let words = match metric {
            "usd_per_step" => "$/step".to_string(),
            "usd_per_m_tokens" => "$/M tokens".to_string(),
            "mfu" => "MFU".to_string(),
            "kwh_per_step" => "kWh/step".to_string(),
            "tasks.per_s" => "tasks/s".to_string(),
            m => {
                let m = m.strip_prefix("tasks.").unwrap_or(m);
                let m = m.replace("_per_s", "/s").replace("_per_h", "/h");
                m.strip_suffix("_s").unwrap_or(&m).replace('_', " ")
            }
        };
        Column {
            key,
            kind,
            item: item.map(str::to_string),
            unit,
            label: match item {
                Some(i) => format!("{i} {words}"),
                None => words,
            },
        }
    }

    /// The same column with another table label.
    pub fn labelled(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }
}

/// Every per-kind figure of one run, in a fixed order (training jobs, tasks, services, each
/// in declaration order).
pub fn figures(fig: &ClusterFigures, m: &RunMetrics) -> Vec<(Column, Option<f64>)> {
    let mut out = Vec::new();
    let per_device = |x: Option<f64>| {
        x.zip(Some(fig.devices).filter(|d| *d > 0))
            .map(|(x, d)| x / d as f64)
    };
    let (usd_dev_h, w_dev) = (per_device(fig.price_per_hour), per_device(fig.power_watts));
    for t in &m.training {
        let item = format!("{}.{}", t.workload, t.name);
        let c = |metric, unit| Column::new("training", Some(&item), metric, unit);
        let steps = t.steps_done as f64;
        let wall_h = (t.finished.unwrap_or(m.horizon) - t.started).max(0.0) / 3600.0;
        let per_step = |rate: Option<f64>| {
            rate.filter(|_| t.steps_done > 0)
                .map(|r| r * f64::from(t.devices) * wall_h / steps)
        };
        out.push((
            c("step_time_s", "s"),
            (t.steps_done > 0).then_some(t.step_time),
        ));
        out.push((
            c("steps_per_h", "steps/h").labelled(format!(
                "{item} steps/h (per hour running: 3600 / step time)"
            )),
            (t.steps_done > 0 && t.step_time > 0.0).then(|| 3600.0 / t.step_time),
        ));
        out.push((
            c("steps_done", "count").labelled(format!("{item} steps done (in the window)")),
            Some(steps),
        ));
        out.push((
            c("goodput", "fraction")
                .labelled(format!("{item} goodput (kept steps' time / job wall time)")),
            Some(t.goodput),
        ));
        out.push((c("usd_per_step", "$"), per_step(usd_dev_h)));
        out.push((
            c("kwh_per_step", "kWh"),
            per_step(w_dev.map(|w| w / 1000.0)),
        ));
        // Model-level jobs know their tokens (a job declared by its FLOP does not).
        if let Some(tps) = t.tokens_per_s.filter(|_| t.steps_done > 0) {
            out.push((c("tokens_per_s", "1/s"), Some(tps)));
            out.push((c("mfu", "fraction"), t.mfu));
            let tokens = tps * t.step_time;
            out.push((
                c("usd_per_m_tokens", "$"),
                per_step(usd_dev_h)
                    .filter(|_| tokens > 0.0)
                    .map(|usd| usd / tokens * 1e6),
            ));
        }
    }
    if !m.tasks.is_empty() {
        let done: u64 = m.tasks.iter().map(|t| t.completed).sum();
        let makespan = m
            .tasks
            .iter()
            .filter(|t| t.completed > 0)
            .map(|t| t.last_end)
            .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
        let c = |metric, unit| Column::new("tasks", None, metric, unit);
        out.push((c("tasks.completed", "count"), Some(done as f64)));
        out.push((c("tasks.makespan_s", "s"), makespan));
        out.push((
            c("tasks.per_s", "1/s"),
            makespan.filter(|s| *s > 0.0).map(|s| done as f64 / s),
        ));
    }
    for s in &m.services {
        let item = format!("{}.{}", s.workload, s.name);
        let c = |metric, unit| Column::new("services", Some(&item), metric, unit);
        let served = (s.served > 0).then_some(());
        out.push((c("arrived", "count"), Some(s.arrived as f64)));
        out.push((c("served", "count"), Some(s.served as f64)));
        out.push((
            c("served_per_s", "1/s"),
            (m.horizon > 0.0).then(|| s.served as f64 / m.horizon),
        ));
        out.push((c("latency_p50_s", "s"), served.map(|_| s.latency.p50)));
        out.push((c("latency_p99_s", "s"), served.map(|_| s.latency.p99)));
        for ((p, target, _, _), within) in s.slo.iter().zip(&s.served_within_slo) {
            let metric = format!("slo_{p}_attainment");
            let col = Column::new("services", Some(&item), &metric, "fraction").labelled(format!(
                "{item} SLO {p} ≤ {} s: attained (target {}%)",
                crate::units::sig3(*target),
                crate::units::sig3(crate::sim::percentile(p) * 100.0)
            ));
            out.push((
                col,
                (s.arrived > 0).then(|| *within as f64 / s.arrived as f64),
            ));
        }
    }
    for l in &m.llm_services {
        llm_figures(&mut out, l, m.horizon, usd_dev_h);
    }
    out
}

/// An LLM service's figures (`sim::llm`): latencies of the requests that finished, output
/// tokens/s and goodput over the window, KV use, and $ per million output tokens (the
/// device-hours its replicas held × $ per device-hour / output tokens; a replica pays for its
/// devices while it is placed, idle or not, and stops when a failure takes it).
fn llm_figures(
    out: &mut Vec<(Column, Option<f64>)>,
    l: &crate::sim::llm::metrics::LlmServiceMetrics,
    horizon: f64,
    usd_dev_h: Option<f64>,
) {
    let item = format!("{}.{}", l.workload, l.name);
    let c = |metric: &str, unit| Column::new("services", Some(&item), metric, unit);
    let done = (l.finished > 0).then_some(());
    let stat = |s: &crate::sim::metrics::Stats, p: &str| match p {
        "p50" => s.p50,
        _ => s.p99,
    };
    out.push((c("arrived", "count"), Some(l.arrived as f64)));
    out.push((c("finished", "count"), Some(l.finished as f64)));
    for (name, s) in [("ttft", &l.ttft), ("tpot", &l.tpot), ("e2e", &l.e2e)] {
        for p in ["p50", "p99"] {
            let key = format!("{name}_{p}_s");
            let label = format!("{item} {} {p}", name.to_uppercase());
            out.push((c(&key, "s").labelled(label), done.map(|_| stat(s, p))));
        }
    }
    out.push((
        c("output_tokens_per_s", "1/s")
            .labelled(format!("{item} output tokens/s (per second of its run)")),
        (horizon > 0.0).then_some(l.output_tokens_per_s),
    ));
    out.push((
        c("goodput_per_s", "1/s")
            .labelled(format!("{item} goodput (requests/s meeting every SLO)")),
        (horizon > 0.0 && !l.slo.is_empty()).then_some(l.goodput_per_s),
    ));
    out.push((
        c("kv_mean_utilization", "fraction").labelled(format!("{item} KV use (mean)")),
        Some(l.kv_utilization_mean_fraction),
    ));
    out.push((c("preemptions", "count"), Some(l.preemptions as f64)));
    out.push((
        c("usd_per_m_tokens", "$").labelled(format!("{item} $/M output tokens")),
        usd_dev_h
            .filter(|_| l.output_tokens > 0)
            .map(|usd| usd * l.device_hours / l.output_tokens as f64 * 1e6),
    ));
    for slo in &l.slo {
        let metric = format!("slo_{}_{}_attainment", slo.kind, slo.percentile);
        let col = Column::new("services", Some(&item), &metric, "fraction").labelled(format!(
            "{item} SLO {} {} ≤ {} s: attained (target {}%)",
            slo.kind.to_uppercase(),
            slo.percentile,
            crate::units::sig3(slo.target_s),
            crate::units::sig3(crate::sim::percentile(&slo.percentile) * 100.0)
        ));
        // No decided request: the window says nothing of this SLO.
        out.push((
            col,
            (l.arrived > slo.undecided).then_some(slo.attainment_fraction),
        ));
    }
}

/// The failure figures of one run, `None` where the run has none (no failure was detected,
/// so no time to detect). Lost device-hours = work thrown away + devices stalled waiting on
/// recovery ([`crate::sim::metrics::FailureMetrics`]).
pub fn failure_figures(m: &RunMetrics) -> Vec<(Column, Option<f64>)> {
    let f = &m.failures;
    let c = |key, unit, label: &str| Column::new("failures", None, key, unit).labelled(label);
    vec![
        (
            c("node_failures", "count", "node failures"),
            Some(f.node_failures as f64),
        ),
        (
            c("time_to_detect_s", "s", "time to detect"),
            (f.time_to_detect.count > 0).then_some(f.time_to_detect.mean),
        ),
        (
            c("time_to_recover_s", "s", "time to recover"),
            (f.time_to_recover.count > 0).then_some(f.time_to_recover.mean),
        ),
        (
            c("lost_device_hours", "device-h", "lost device-hours"),
            Some(f.lost_device_hours),
        ),
        (
            c("lost_work_device_hours", "device-h", "  work thrown away"),
            Some(f.lost_work_device_hours),
        ),
        (
            c("stalled_device_hours", "device-h", "  stalled in recovery"),
            Some(f.stalled_device_hours),
        ),
        (
            c("requests_lost", "count", "requests lost"),
            Some(f.requests_lost as f64),
        ),
        (
            c("node_availability", "fraction", "node availability"),
            Some(f.node_availability),
        ),
    ]
}

/// Cluster-wide figures over the window (compare): W, cost and energy.
pub fn cluster_figures(fig: &ClusterFigures, m: &RunMetrics) -> Vec<(Column, Option<f64>)> {
    let c = |metric, unit| Column::new("cluster", None, metric, unit);
    vec![
        (c("horizon_s", "s").labelled("window"), Some(m.horizon)),
        (
            c("cost_usd", "$").labelled("cluster cost (price × window)"),
            crate::experiment::measure::cost(fig, m),
        ),
        (
            c("energy_kwh", "kWh").labelled("cluster energy (TDP × window)"),
            crate::experiment::measure::energy(fig, m),
        ),
    ]
}

/// Whether the figure of `key` is computed from the cluster's price: $/step, $/M tokens, the
/// cluster's cost.
pub fn from_price(key: &str) -> bool {
    key.ends_with("usd_per_step") || key.ends_with("usd_per_m_tokens") || key.ends_with("_usd")
}

/// Whether the figure of `key` is computed from the cluster's power: kWh/step, energy.
pub fn from_power(key: &str) -> bool {
    key.ends_with("kwh_per_step") || key.ends_with("_kwh")
}

/// Why a row has no value for `key` when the price or power it is computed from is missing
/// (`no price in catalog: MI250X`, [`ClusterFigures::price_missing`]); `None` otherwise (the
/// row has no such item, or no step to divide by).
pub fn why_missing<'a>(
    key: &str,
    price_missing: Option<&'a str>,
    power_missing: Option<&'a str>,
) -> Option<&'a str> {
    if from_price(key) {
        price_missing
    } else if from_power(key) {
        power_missing
    } else {
        None
    }
}

/// The cell of a figure a row has no value for: `n/a (why)` when [`why_missing`] knows why,
/// else `-` (the row has no such item).
pub fn missing_cell(key: &str, price_missing: Option<&str>, power_missing: Option<&str>) -> String {
    match why_missing(key, price_missing, power_missing) {
        Some(why) => format!("n/a ({why})"),
        None => "-".into(),
    }
}

/// Scale and unit suffix to show a value of `key` in, chosen by the size of `x`.
pub fn display_unit(key: &str, x: f64) -> (f64, &'static str) {
    let pct = [
        "goodput",
        "availability",
        "attainment",
        "fraction",
        "mfu",
        "utilization",
    ];
    // `tasks.per_s` too: a rate, not a time in seconds.
    if key.ends_with("_per_s") || key.ends_with(".per_s") {
        (1.0, "/s")
    } else if key.ends_with("_per_h") {
        (1.0, "/h")
    } else if key.ends_with("_s") {
        match x.abs() {
            a if a == 0.0 || (1.0..3600.0).contains(&a) => (1.0, " s"),
            a if a < 1e-3 => (1e6, " us"),
            a if a < 1.0 => (1e3, " ms"),
            _ => (1.0 / 3600.0, " h"),
        }
    } else if pct.iter().any(|p| key.ends_with(p)) {
        (100.0, "%")
    } else if key.ends_with("_usd")
        || key.ends_with("usd_per_step")
        || key.ends_with("usd_per_m_tokens")
    {
        (1.0, " $")
    } else if key.ends_with("kwh") || key.ends_with("kwh_per_step") {
        (1.0, " kWh")
    } else if key.ends_with("device_hours") {
        (1.0, " device-h")
    } else {
        (1.0, "")
    }
}

/// `mean ± half` in the mean's unit (3 significant figures); a half-width below a millionth
/// of the mean (floating-point noise around identical values) shows as 0.
pub fn cell(key: &str, mean: f64, half: Option<f64>) -> String {
    let s = crate::units::sig3;
    let (k, u) = display_unit(
        key,
        if mean != 0.0 {
            mean
        } else {
            half.unwrap_or(0.0)
        },
    );
    // A percentage just short of 100 keeps the digits that show how short (99.998%, not 100%).
    let s = |x: f64| {
        let gap = 100.0 - x;
        if u == "%" && gap > 0.0 && gap < 1.0 {
            let d = ((-gap.log10()).ceil() as usize + 1).min(6);
            format!("{x:.d$}")
        } else {
            s(x)
        }
    };
    match half {
        None => format!("{}{u}", s(mean * k)),
        Some(h) if h <= 1e-6 * mean.abs() => format!("{}{u} ± 0{u}", s(mean * k)),
        Some(h) => format!("{}{u} ± {}{u}", s(mean * k), crate::units::sig3(h * k)),
    }
}

/// Table rows for `columns` grouped by kind, in `order` (a heading row per kind present, then
/// a row per column with `cells(key)`).
pub fn rows_by_kind(
    columns: &[Column],
    order: &[&str],
    cells: impl Fn(&str) -> Vec<String>,
) -> Vec<(String, Vec<String>)> {
    let mut rows = Vec::new();
    for kind in order {
        let mut cols = columns.iter().filter(|c| c.kind == *kind).peekable();
        if cols.peek().is_none() {
            continue;
        }
        rows.push((kind.to_string(), Vec::new()));
        for c in cols {
            rows.push((format!("  {}", c.label), cells(&c.key)));
        }
    }
    rows
}

/// A table ([`crate::table`]) with a row per label and a column per name (values
/// right-aligned). A row whose label and cells are empty is a blank separator; a row with a
/// label and no cells is a section heading.
pub fn grid(corner: &str, names: &[String], rows: &[(String, Vec<String>)]) -> String {
    let mut t =
        crate::table::Table::new(std::iter::once(corner).chain(names.iter().map(String::as_str)));
    for (label, cells) in rows {
        t.row(std::iter::once(label.as_str()).chain(cells.iter().map(String::as_str)));
    }
    t.render()
}
