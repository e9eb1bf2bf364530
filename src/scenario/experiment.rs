//! Experiments: seeds, parameter sweeps, the metrics to report and the plots to draw.

use super::reader::{self as rd, Args, Cx};
use super::schema;
use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::syntax::ast::{Stmt, Value, ValueKind};
use crate::units::Duration;
use serde::{Deserialize, Serialize};

/// Metrics a run can report.
pub const METRICS: &[&str] = &[
    "makespan",
    "steps_per_h",
    "steps_done",
    "tasks_per_s",
    "requests_per_s",
    "goodput",
    "utilization",
    "cpu_utilization",
    "queueing_delay",
    "placement_delay",
    "latency",
    "step_time",
    "pg_pending_time",
    "lost_device_hours",
    "recovery_time",
    "time_to_detect",
    "availability",
    "slo_violations",
    "cost",
    "energy",
];

/// Named parameters an experiment can sweep, with a defined meaning for every scenario
/// (`policy`: every workload and placement group placed by that policy, as `run --policy`).
/// Any other swept parameter is a dotted *path* to a statement's value
/// (`cluster.pod.fabric.oversubscription`), applied to the syntax tree before resolving
/// ([`super::path`]), so every swept value is validated like a hand-written scenario.
pub const SWEEP_PARAMS: &[&str] = &["policy"];

/// Whether a swept parameter is a path (rather than one of [`SWEEP_PARAMS`]).
pub fn is_path(param: &str) -> bool {
    param.contains('.')
}

/// Most seeds one experiment may ask for.
pub const MAX_SEEDS: u64 = 100_000;

#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    pub param: String,
    /// Values as written (`fmt` spelling), resolved when the sweep runs.
    pub values: Vec<String>,
    /// The values as parsed (their spans point into the `sweep` line).
    #[serde(skip)]
    pub items: Vec<Value>,
    /// Span of the parameter name.
    #[serde(skip)]
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plot {
    pub kind: String,
    pub args: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Experiment {
    pub name: String,
    pub seeds: Vec<u64>,
    pub sweeps: Vec<Sweep>,
    pub metrics: Vec<String>,
    pub plots: Vec<Plot>,
    pub horizon: Option<Duration>,
    #[serde(skip)]
    pub span: Span,
}

impl Experiment {
    /// Runs in the full cartesian product (sweep points × seeds).
    pub fn runs(&self) -> u64 {
        self.sweeps
            .iter()
            .map(|s| s.values.len() as u64)
            .product::<u64>()
            * self.seeds.len().max(1) as u64
    }
}

fn metric(cx: &mut Cx, v: &Value) -> Option<String> {
    let n = rd::ident(cx, v, "a metric name")?;
    if n == "throughput" {
        // It added tasks, training steps and requests per hour: unlike things.
        cx.push(
            Diagnostic::error(
                v.span,
                "`throughput` is not a metric: it would add unlike work",
            )
            .with_help(
                "each kind of work has its own rate: steps_per_h (training), tasks_per_s \
                     (tasks), requests_per_s (services: requests served)",
            ),
        );
        return None;
    }
    if !METRICS.contains(&n) {
        let help = did_you_mean(n, METRICS.iter().copied())
            .unwrap_or_else(|| format!("metrics: {}", METRICS.join(", ")));
        cx.push(Diagnostic::error(v.span, format!("unknown metric `{n}`")).with_help(help));
        return None;
    }
    Some(n.to_string())
}

pub fn experiment(cx: &mut Cx, name: &str, span: Span, stmts: &[Stmt]) -> Experiment {
    let mut e = Experiment {
        name: name.into(),
        seeds: vec![1],
        sweeps: Vec::new(),
        metrics: Vec::new(),
        plots: Vec::new(),
        horizon: None,
        span,
    };
    cx.each(stmts, schema::EXPERIMENT, "an experiment", |cx, s, def| {
        cx.no_block(s);
        let mut a = Args::new(s, def);
        let _ = (|| -> Option<()> {
            match def.key {
                "seeds" => {
                    let v = a.req("seeds such as `1..20` or `[1, 7, 42]`")?;
                    e.seeds = match &v.kind {
                        ValueKind::Range { lo, hi } if *lo >= 0 && hi >= lo => {
                            if (hi - lo) as u64 >= MAX_SEEDS {
                                cx.error(v.span, format!("{} seeds; the limit is {MAX_SEEDS}", (*hi as i128 - *lo as i128 + 1)));
                                return None;
                            }
                            (*lo as u64..=*hi as u64).collect()
                        }
                        ValueKind::Range { .. } => {
                            cx.error(v.span, "a seed range runs from a non-negative start up to its end");
                            return None;
                        }
                        ValueKind::List(items) => {
                            if items.len() as u64 > MAX_SEEDS {
                                cx.error(v.span, format!("too many seeds; the limit is {MAX_SEEDS}"));
                                return None;
                            }
                            items.iter().map(|it| rd::count(cx, it, 0, u64::MAX >> 11)).collect::<Option<Vec<_>>>()?
                        }
                        _ => vec![rd::count(cx, v, 0, u64::MAX >> 11)?],
                    };
                }
                "sweep" => {
                    let pv = a.req("a parameter name")?;
                    let param = rd::ident(cx, pv, "a parameter name")?.to_string();
                    let lv = a.opt("in").or_else(|| {
                        cx.error(a.end_span(), "`sweep` needs `in [values]`");
                        None
                    })?;
                    let ValueKind::List(items) = &lv.kind else {
                        cx.error(lv.span, format!("expected a list of values, found {}", lv.kind.describe()));
                        return None;
                    };
                    if items.is_empty() {
                        cx.error(lv.span, "a sweep needs at least one value");
                        return None;
                    }
                    if !SWEEP_PARAMS.contains(&param.as_str()) && !is_path(&param) {
                        let help = did_you_mean(&param, SWEEP_PARAMS.iter().copied()).unwrap_or_else(|| {
                            format!(
                                "sweep {} or a dotted path to a statement's value, such as `cluster.pod.fabric.oversubscription`",
                                SWEEP_PARAMS.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
                            )
                        });
                        cx.push(Diagnostic::error(pv.span, format!("`{param}` cannot be swept")).with_help(help));
                        return None;
                    }
                    if param == "policy" {
                        for it in items {
                            rd::choice(cx, it, schema::POLICIES, "placement policy")?;
                        }
                    }
                    if e.sweeps.iter().any(|s| s.param == param) {
                        cx.error(pv.span, format!("`{param}` is swept twice"));
                        return None;
                    }
                    let values = items.iter().map(crate::syntax::fmt::inline).collect();
                    e.sweeps.push(Sweep { param, values, items: items.clone(), span: pv.span });
                }
                "metrics" => {
                    while let Some(v) = a.next_value() {
                        match &v.kind {
                            ValueKind::List(items) => {
                                for it in items {
                                    e.metrics.push(metric(cx, it)?);
                                }
                            }
                            _ => e.metrics.push(metric(cx, v)?),
                        }
                    }
                    if e.metrics.is_empty() {
                        cx.error(s.key.span, "`metrics` needs at least one metric");
                    }
                }
                "plot" => {
                    while let Some(v) = a.next_value() {
                        let (kind, args) = match &v.kind {
                            ValueKind::Ident(n) => (n.as_str(), Vec::new()),
                            ValueKind::Call { name, args } => (name.as_str(), args.iter().flatten().collect::<Vec<_>>()),
                            other => {
                                cx.error(v.span, format!("expected a plot such as `timeline` or `cdf(latency)`, found {}", other.describe()));
                                return None;
                            }
                        };
                        if !schema::PLOT_KINDS.contains(&kind) {
                            let help = did_you_mean(kind, schema::PLOT_KINDS.iter().copied()).unwrap_or_else(|| format!("plots: {}", schema::PLOT_KINDS.join(", ")));
                            cx.push(Diagnostic::error(v.span, format!("unknown plot `{kind}`")).with_help(help));
                            return None;
                        }
                        let needs = match kind {
                            "cdf" | "bars" => 1,
                            "heatmap" => 2,
                            _ => 0,
                        };
                        if args.len() != needs {
                            cx.error(v.span, format!("`{kind}` takes {needs} argument(s), such as {}", match kind {
                                "cdf" => "`cdf(latency)`",
                                "bars" => "`bars(goodput)`",
                                "heatmap" => "`heatmap(policy, replicas)`",
                                _ => "no arguments",
                            }));
                            return None;
                        }
                        let mut names = Vec::new();
                        for (k, arg) in args.iter().enumerate() {
                            // cdf and bars take metrics; a heatmap takes two swept parameters.
                            names.push(if kind == "heatmap" {
                                let p = rd::ident(cx, arg, "a swept parameter")?;
                                if !e.sweeps.iter().any(|s| s.param == p) {
                                    cx.error(arg.span, format!("`{p}` is not swept in this experiment (sweep it before plotting it)"));
                                    return None;
                                }
                                let _ = k;
                                p.to_string()
                            } else {
                                metric(cx, arg)?
                            });
                        }
                        e.plots.push(Plot { kind: kind.to_string(), args: names });
                    }
                }
                "horizon" => e.horizon = Some(rd::duration(cx, a.req("a time")?)?),
                _ => {}
            }
            Some(())
        })();
        a.finish(cx);
    });
    e
}
