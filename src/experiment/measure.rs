//! One number per experiment metric from a run's results (`orrery sweep`), and the cost and
//! energy formulas `orrery compare` shares ([`crate::experiment::kinds`] reports each kind of work there in
//! its own unit; the summed throughput below is a sweep metric only).
//!
//! Definitions (T = the simulated window in hours, [`crate::sim::window`]: `--horizon`, the
//! experiment's `horizon`, 1 h with services, else until the last work finished;
//! `RunMetrics::horizon`):
//!
//! * **work units** = completed tasks + training steps done + served requests;
//! * **throughput** = work units / T (units per hour);
//! * **cost** ($) = cluster price ($/h) × T, the cluster price being the sum over nodes of the
//!   node type's `price`, else its devices' `price` × count (the catalog figures,
//!   [`crate::summary::Summary::price`]); the whole cluster is paid for the whole window;
//! * **energy** (kWh) = cluster power (kW) × T, the power being the sum over nodes of the
//!   node type's `power`, else its devices' `tdp` × count ([`crate::summary::Summary::power`]):
//!   **TDP × time**, not TDP × utilization — idle power is not modelled, so this is an upper
//!   bound that is the same for every seed of a scenario;
//! * **perf/$** = work units / cost; **perf/W** = throughput / power (W) = work units per Wh.

use crate::scenario::Spec;
use crate::sim::metrics::RunMetrics;

/// Price ($/h) and power (W) of a scenario's cluster from the catalog figures; `None` where a
/// node or device lacks the figure, and then why ([`ClusterFigures::price_missing`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterFigures {
    pub price_per_hour: Option<f64>,
    pub power_watts: Option<f64>,
    /// Accelerators in the cluster (per-device shares of price and power).
    pub devices: u64,
    /// What has no price: the accelerators of the cluster's nodes whose node type has no
    /// `price` of its own (`no cluster` when there is none); empty when `price_per_hour` is
    /// known.
    pub unpriced: Vec<String>,
    /// The same for power: node `power`, else every device's `tdp`.
    pub unpowered: Vec<String>,
}

impl ClusterFigures {
    pub fn of(spec: &Spec) -> ClusterFigures {
        let s = crate::summary::summarize(spec);
        let price_per_hour = s.price.map(|p| p.0);
        let power_watts = s.power.map(|p| p.0);
        ClusterFigures {
            price_per_hour,
            power_watts,
            devices: s.devices_by_type.values().sum(),
            unpriced: if price_per_hour.is_some() {
                Vec::new()
            } else {
                lacking(spec, |n| n.price.is_some(), |a| a.price.is_some())
            },
            unpowered: if power_watts.is_some() {
                Vec::new()
            } else {
                lacking(spec, |n| n.power.is_some(), |a| a.tdp.is_some())
            },
        }
    }

    /// Why cost figures are missing: `no price in catalog: MI250X`; `None` when the price is
    /// known.
    pub fn price_missing(&self) -> Option<String> {
        self.price_per_hour
            .is_none()
            .then(|| missing("price", &self.unpriced))
    }

    /// Why energy figures are missing: `no tdp in catalog: TPU_v5e`; `None` when the power is
    /// known.
    pub fn power_missing(&self) -> Option<String> {
        self.power_watts
            .is_none()
            .then(|| missing("tdp", &self.unpowered))
    }
}

fn missing(what: &str, names: &[String]) -> String {
    if names.is_empty() {
        format!("no {what} in catalog")
    } else {
        format!("no {what} in catalog: {}", names.join(", "))
    }
}

/// The accelerators (sorted, once each) of the cluster's node types that have no figure of
/// their own (`node`), lacking the per-device one (`device`); an undeclared accelerator counts
/// as lacking it.
fn lacking(
    spec: &Spec,
    node: impl Fn(&crate::scenario::hardware::NodeType) -> bool,
    device: impl Fn(&crate::scenario::Accelerator) -> bool,
) -> Vec<String> {
    let Some(c) = &spec.cluster else {
        return vec!["no cluster".into()];
    };
    let mut out = std::collections::BTreeSet::new();
    for g in &c.groups {
        // As in the summary, a group of an unknown node type adds nothing.
        let Some(nt) = spec.node_types.get(&g.node_type) else {
            continue;
        };
        if node(nt) {
            continue;
        }
        for d in &nt.devices {
            if !spec.accelerators.get(&d.accelerator).is_some_and(&device) {
                out.insert(d.accelerator.clone());
            }
        }
    }
    out.into_iter().collect()
}

/// Simulated window in hours.
pub fn hours(m: &RunMetrics) -> f64 {
    m.horizon / 3600.0
}

/// Completed tasks, training steps done and served requests.
pub fn work_units(m: &RunMetrics) -> (u64, u64, u64) {
    (
        m.tasks.iter().map(|t| t.completed).sum(),
        m.training.iter().map(|t| t.steps_done).sum(),
        m.services.iter().map(|s| s.served).sum(),
    )
}

/// $ = price ($/h) × T (h).
pub fn cost(fig: &ClusterFigures, m: &RunMetrics) -> Option<f64> {
    fig.price_per_hour.map(|p| p * hours(m))
}

/// kWh = power (W) / 1000 × T (h).
pub fn energy(fig: &ClusterFigures, m: &RunMetrics) -> Option<f64> {
    fig.power_watts.map(|w| w / 1000.0 * hours(m))
}

fn weighted(xs: impl Iterator<Item = (f64, u64)>) -> Option<f64> {
    let (s, n) = xs.fold((0.0, 0u64), |(s, n), (x, k)| (s + x * k as f64, n + k));
    (n > 0).then(|| s / n as f64)
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = xs.collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Why a sweep metric has no value in a run, where the metric says: `cost` is unknown only
/// without a price, `energy` only without power (a sweep's cells may differ in hardware, so
/// the table says which figure is missing, not which part).
pub fn why_missing(metric: &str) -> Option<&'static str> {
    match metric {
        "cost" => Some("no price in catalog"),
        "energy" => Some("no tdp in catalog"),
        _ => None,
    }
}

/// Column name of an experiment metric, with its unit.
pub fn column(metric: &str) -> String {
    match metric {
        "makespan" | "queueing_delay" | "placement_delay" | "latency" | "step_time"
        | "pg_pending_time" | "recovery_time" | "time_to_detect" => format!("{metric}_s"),
        "steps_per_h" | "tasks_per_s" | "requests_per_s" | "steps_done" => metric.to_string(),
        "cost" => "cost_usd".into(),
        "energy" => "energy_kwh".into(),
        "slo_violations" => "slo_violation_fraction".into(),
        _ => metric.to_string(),
    }
}

/// The value of an experiment metric (one of [`crate::scenario::experiment::METRICS`]) in one
/// run; `None` where the run has none (no service, so no latency). Means over items are
/// weighted by their counts (tasks, requests, calls); fractions are in [0, 1].
///
/// makespan (s, none if nothing finished) · steps_per_h (each training job's steps per hour
/// of running, 3600 / its mean step time, summed over jobs) · steps_done (training steps kept
/// in the window, all jobs) · tasks_per_s (tasks completed per second of window) · requests_per_s
/// (requests served per second of window) · goodput (runtime goodput, mean over
/// training jobs) · utilization (device-weighted mean busy fraction) · cpu_utilization (the
/// busy fraction of all the cluster's logical CPUs, `sim::cpu`) · queueing_delay (mean
/// task queueing, s) · placement_delay (mean actor placement delay, s) · latency (mean request
/// latency, s) · step_time (mean over training jobs, s) · pg_pending_time (mean over placement
/// groups, s) · lost_device_hours (work thrown away + devices stalled in recovery) · recovery_time / time_to_detect (mean, s) · availability
/// (node availability) · slo_violations (mean over services with an SLO of the fraction of
/// arrived requests not served within the tightest target) ·
/// cost ($) · energy (kWh).
pub fn metric(name: &str, fig: &ClusterFigures, m: &RunMetrics) -> Option<f64> {
    let f = &m.failures;
    match name {
        "makespan" => (m.makespan > 0.0).then_some(m.makespan),
        // Each over the simulated window; none when the run has no work of that kind.
        // Each job's steps per hour of running (3600 / its mean step time), summed over the
        // jobs that finished a step; `steps_done` counts the window's.
        "steps_per_h" => {
            let rates: Vec<f64> = m
                .training
                .iter()
                .filter(|t| t.steps_done > 0 && t.step_time > 0.0)
                .map(|t| 3600.0 / t.step_time)
                .collect();
            (!rates.is_empty()).then(|| rates.iter().sum())
        }
        "steps_done" => {
            let (_, steps, _) = work_units(m);
            (!m.training.is_empty()).then_some(steps as f64)
        }
        "tasks_per_s" => {
            let (tasks, _, _) = work_units(m);
            (!m.tasks.is_empty() && m.horizon > 0.0).then(|| tasks as f64 / m.horizon)
        }
        "requests_per_s" => {
            let (_, _, served) = work_units(m);
            (!m.services.is_empty() && m.horizon > 0.0).then(|| served as f64 / m.horizon)
        }
        "goodput" => mean(m.training.iter().map(|t| t.goodput)),
        "utilization" => weighted(m.utilization.values().map(|u| (u.busy_fraction, u.devices))),
        "cpu_utilization" => {
            let (busy, cpus) = m
                .cpu_utilization_by_node_type
                .values()
                .fold((0.0, 0.0), |(b, n), u| {
                    (b + u.busy_fraction * u.cpus, n + u.cpus)
                });
            (cpus > 0.0).then(|| busy / cpus)
        }
        "queueing_delay" => weighted(
            m.tasks
                .iter()
                .map(|t| (t.queueing_delay.mean, t.queueing_delay.count)),
        ),
        "placement_delay" => weighted(
            m.actors
                .iter()
                .map(|a| (a.placement_delay.mean, a.placement_delay.count)),
        ),
        "latency" => weighted(m.services.iter().map(|s| (s.latency.mean, s.latency.count))),
        "step_time" => mean(
            m.training
                .iter()
                .filter(|t| t.steps_done > 0)
                .map(|t| t.step_time),
        ),
        "pg_pending_time" => mean(m.placement_groups.iter().map(|p| p.pending_time)),
        "lost_device_hours" => Some(f.lost_device_hours),
        "recovery_time" => (f.time_to_recover.count > 0).then_some(f.time_to_recover.mean),
        "time_to_detect" => (f.time_to_detect.count > 0).then_some(f.time_to_detect.mean),
        "availability" => Some(f.node_availability),
        "slo_violations" => mean(
            m.services
                .iter()
                .filter(|s| !s.slo.is_empty())
                .map(|s| s.slo_violation_fraction),
        ),
        "cost" => cost(fig, m),
        "energy" => energy(fig, m),
        _ => None,
    }
}
