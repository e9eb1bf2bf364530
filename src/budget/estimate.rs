//! Lower bounds on a run's events and memory, from the scenario alone (no placement, no
//! run): what each statement costs at least when its work runs.
//!
//! | part | events at least | memory at least |
//! |---|---|---|
//! | cluster | – | per node 2.5 KB + 0.5 KB per device + 0.5 KB per NIC |
//! | task group | 1 per task (its completion), without a window | 64 B per task |
//! | actors | 1 per call, without a window | 64 B per actor |
//! | training job | 1 per step, without a window | – |
//! | service | 1 per arrival (a burst arrives as one event) over the window, 6 σ below the Poisson mean | 8 B per request an overloaded queue holds at the window's end |
//! | random failures | 1 per failure (1 more per repair) over the window, 6 σ below the mean | – |
//! | scheduled failures | 1 each (in the window) | – |
//!
//! The memory figures are below what Orrery 0.1.0 measured (resident memory of runs of
//! 10,000-node clusters of a CPU box, 8-GPU L4 boxes and DGX H100s: 3, 8.5 and 20 KB per node;
//! 1,000,000 tasks, 100 B each), so a real run needs at least as much. An overloaded queue is
//! one whose arrival rate exceeds what its replicas can serve (replicas × batch size /
//! `service_time`, known only for services declared by `service_time`): it grows by the
//! difference for the whole window, one 8-byte arrival time per request.
//!
//! What is random is bounded with high probability, not surely: arrivals and random failures
//! count their mean less 6 standard deviations (a run falls below with probability under
//! 10⁻⁹). A random failure process's mean is units × window / (mtbf + repair) cycles of two
//! events (failure and repair), or one failure per unit when failures are permanent. Without a
//! window (no horizon and no services) its count depends on how long the work runs, so it is
//! listed as unbounded here and bounded at run time. The bounds assume the declared work runs:
//! work that never finds room (`--allow-infeasible`, or a placement group that never fits
//! beside the others) handles fewer events. Without a cluster only arrivals happen.

use super::Limits;
use crate::diag::{Diagnostic, Span};
use crate::spec::Spec;
use crate::spec::workload::Arrival;
use std::collections::BTreeMap;

/// Bytes at least, per node and per device and NIC on it.
const NODE_BYTES: f64 = 2_500.0;
const DEVICE_BYTES: f64 = 500.0;
const NIC_BYTES: f64 = 500.0;
/// Bytes at least per task and per actor.
const TASK_BYTES: f64 = 64.0;
/// One queued request: its arrival time (`Time`, 8 bytes).
const QUEUED_BYTES: f64 = 8.0;

/// What one statement costs at least.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub what: String,
    pub span: Option<Span>,
    pub events: f64,
    pub bytes: f64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Estimate {
    pub parts: Vec<Part>,
    /// Work whose cost this estimate cannot bound (the run bounds it).
    pub unbounded: Vec<String>,
}

impl Estimate {
    pub fn events(&self) -> f64 {
        self.parts.iter().map(|p| p.events).sum()
    }

    pub fn bytes(&self) -> f64 {
        self.parts.iter().map(|p| p.bytes).sum()
    }

    /// The one-line summary `check` prints.
    pub fn line(&self, l: Limits) -> String {
        let mut s = format!(
            "at least {} event{} and {} of memory per run (limits: --max-events {}, --max-memory {})",
            count(self.events()),
            if count(self.events()) == "1" { "" } else { "s" },
            crate::plot::fmt_bytes(self.bytes()),
            l.max_events,
            crate::plot::fmt_bytes(l.max_memory as f64)
        );
        if !self.unbounded.is_empty() {
            s += &format!(
                "; not bounded before the run: {} (bounded while it runs)",
                self.unbounded.join(", ")
            );
        }
        s
    }

    /// The error refusing a scenario whose lower bounds exceed `l` with `at_once` runs
    /// sharing the process's memory; `None` when it fits. Points at the part that costs most.
    pub fn refusal(&self, l: Limits, at_once: usize, fallback: Span) -> Option<Diagnostic> {
        let top = |key: fn(&Part) -> f64| {
            self.parts
                .iter()
                .max_by(|a, b| key(a).total_cmp(&key(b)))
                .filter(|p| key(p) > 0.0)
        };
        let events = self.events();
        if events > l.max_events as f64 {
            let p = top(|p| p.events)?;
            return Some(
                Diagnostic::error(
                    p.span.unwrap_or(fallback),
                    format!(
                        "this run needs at least {} events, over --max-events {}",
                        count(events),
                        l.max_events
                    ),
                )
                .with_label(format!("{}: at least {} events", p.what, count(p.events)))
                .with_help(
                    "raise --max-events (the engine handles 0.4 to 3.5 million events a \
                     second), or shorten the window (`horizon`, `--horizon`) or the work",
                ),
            );
        }
        let bytes = self.bytes() * at_once.max(1) as f64;
        if bytes > l.max_memory as f64 {
            let p = top(|p| p.bytes)?;
            let runs = if at_once > 1 {
                format!(" ({at_once} runs at once)")
            } else {
                String::new()
            };
            return Some(
                Diagnostic::error(
                    p.span.unwrap_or(fallback),
                    format!(
                        "this scenario needs at least {} of memory{runs}, over --max-memory {}",
                        crate::plot::fmt_bytes(bytes),
                        crate::plot::fmt_bytes(l.max_memory as f64)
                    ),
                )
                .with_label(format!(
                    "{}: at least {} per run",
                    p.what,
                    crate::plot::fmt_bytes(p.bytes)
                ))
                .with_help(
                    "raise --max-memory, run fewer runs at once (`--threads`), or make the \
                     scenario smaller",
                ),
            );
        }
        None
    }
}

/// `x` as a whole count, with thousands separators.
fn count(x: f64) -> String {
    let n = x.min(1e30).round();
    if n >= 1e18 {
        return format!("{n:.3e}");
    }
    let digits = (n as u64).to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Lower bounds for one run of `spec` over `window_s` seconds (`None`: until the work ends),
/// with the arrival traces by file name (`arrival trace` services count their rows).
pub fn estimate(
    spec: &Spec,
    window_s: Option<f64>,
    traces: &BTreeMap<String, crate::spec::arrivals::Trace>,
) -> Estimate {
    let mut e = Estimate::default();
    let mut units: BTreeMap<&str, f64> = BTreeMap::new();
    if let Some(c) = &spec.cluster {
        let mut bytes = 0.0;
        let mut nodes = 0.0;
        for g in &c.groups {
            let Some(nt) = spec.node_types.get(&g.node_type) else {
                continue;
            };
            let devices = f64::from(nt.device_count());
            let nics: f64 = nt.nics.iter().map(|n| f64::from(n.count)).sum();
            let n = f64::from(g.count);
            nodes += n;
            bytes += n * (NODE_BYTES + DEVICE_BYTES * devices + NIC_BYTES * nics);
            *units.entry("device").or_default() += n * devices;
            *units.entry("nic").or_default() += n * nics;
        }
        units.insert("node", (nodes - 1.0).max(0.0));
        units.insert("head", 1.0);
        units.insert(
            "rack",
            c.racks.iter().filter(|r| r.slice.is_none()).count() as f64,
        );
        units.insert(
            "slice",
            c.racks.iter().filter(|r| r.slice.is_some()).count() as f64,
        );
        units.insert("zone", c.zones.len() as f64);
        e.parts.push(Part {
            what: format!("cluster `{}` ({} nodes)", c.name, count(nodes)),
            span: Some(c.span),
            events: 0.0,
            bytes,
        });
    }
    units.insert("link", units.get("nic").copied().unwrap_or(0.0));
    // Without a cluster nothing is placed: only arrivals happen. Declared work (tasks, calls,
    // steps) all runs when the run lasts until it is done; a window may cut it short after
    // any part of it, so with one it bounds nothing.
    let placed = spec.cluster.is_some();
    let declared = |n: f64| if window_s.is_none() { n } else { 0.0 };
    for w in &spec.workloads {
        if !placed {
            for s in &w.services {
                e.parts
                    .extend(service(w.name.as_str(), s, window_s, traces));
            }
            continue;
        }
        for g in &w.tasks {
            let n = g.count as f64;
            e.parts.push(Part {
                what: format!("tasks `{}.{}`", w.name, g.name),
                span: Some(g.span),
                events: declared(n),
                bytes: n * TASK_BYTES,
            });
        }
        for a in &w.actors {
            let n = a.count as f64;
            e.parts.push(Part {
                what: format!("actors `{}.{}`", w.name, a.name),
                span: Some(a.span),
                events: declared(n * a.calls as f64),
                bytes: n * TASK_BYTES,
            });
        }
        for t in &w.training {
            e.parts.push(Part {
                what: format!("training `{}.{}`", w.name, t.name),
                span: Some(t.span),
                events: declared(t.steps as f64),
                bytes: 0.0,
            });
        }
        for s in &w.services {
            let Some(part) = service(w.name.as_str(), s, window_s, traces) else {
                continue;
            };
            e.parts.push(part);
        }
    }
    for f in &spec.failures {
        for r in &f.random {
            let n = units.get(r.class.as_str()).copied().unwrap_or(0.0);
            if n == 0.0 {
                continue;
            }
            let what = format!("random {} failures (mtbf {})", r.class, r.mtbf);
            let Some(w) = window_s else {
                e.unbounded.push(what);
                continue;
            };
            let mtbf = r.mtbf.0 as f64 / 1e9;
            let per_unit = match r.repair {
                // An alternating renewal process: failure, repair, failure...
                Some(rep) => 2.0 * w / (mtbf + rep.0 as f64 / 1e9),
                None => (w / mtbf).min(1.0),
            };
            let mean = n * per_unit;
            e.parts.push(Part {
                what,
                span: Some(r.span),
                // As for arrivals: 6 standard deviations below the mean count.
                events: (mean - 6.0 * mean.sqrt()).max(0.0),
                bytes: 0.0,
            });
        }
        let at = |s: &&crate::spec::failure::Scheduled| {
            window_s.is_none_or(|w| s.at.0 as f64 / 1e9 <= w)
        };
        let scheduled = f.scheduled.iter().filter(at).count();
        if scheduled > 0 {
            e.parts.push(Part {
                what: "scheduled failures".into(),
                span: None,
                events: scheduled as f64,
                bytes: 0.0,
            });
        }
    }
    e
}

/// A service's arrivals over the window, and the queue an overloaded one holds at its end.
fn service(
    workload: &str,
    s: &crate::spec::workload::Service,
    window_s: Option<f64>,
    traces: &BTreeMap<String, crate::spec::arrivals::Trace>,
) -> Option<Part> {
    let w = window_s?;
    let (rate, burst) = match &s.arrival {
        Arrival::Poisson(r) => (r.0, 1.0),
        Arrival::Bursty { rate, burst } => (rate.0, (*burst).max(1) as f64),
        Arrival::Trace(file) => {
            let rows = traces
                .get(file)
                .map_or(0, |t| t.arrivals.iter().filter(|&&a| a <= w).count());
            return Some(Part {
                what: format!("service `{workload}.{}` ({rows} trace rows)", s.name),
                span: Some(s.span),
                events: rows as f64,
                bytes: 0.0,
            });
        }
        // A finite benchmark load: exactly its requests, whatever the window.
        Arrival::Concurrency { requests, .. } | Arrival::Offline { requests } => {
            return Some(Part {
                what: format!(
                    "service `{workload}.{}` ({} requests)",
                    s.name,
                    count(*requests as f64)
                ),
                span: Some(s.span),
                events: *requests as f64,
                bytes: 0.0,
            });
        }
    };
    let requests = rate * w;
    // Poisson arrivals (bursts of them): fewer than the mean less 6 standard deviations with
    // probability below 10⁻⁹.
    let bursts = requests / burst;
    let bursts = (bursts - 6.0 * bursts.sqrt()).max(0.0);
    // What its replicas can serve, when a fixed service time says so.
    let capacity = match (&s.service_time, &s.compute, &s.llm) {
        (Some(t), None, None) if t.0 > 0 => {
            let batch = s.batch.map_or(1.0, |(b, _)| f64::from(b.max(1)));
            f64::from(s.replicas) * batch / (t.0 as f64 / 1e9)
        }
        _ => f64::INFINITY,
    };
    let low = (requests - 6.0 * requests.sqrt()).max(0.0);
    let backlog = (low - capacity * w).max(0.0);
    Some(Part {
        what: format!(
            "service `{workload}.{}` ({} requests{})",
            s.name,
            count(requests),
            if backlog > 0.0 {
                format!(", {} still queued at the end", count(backlog))
            } else {
                String::new()
            }
        ),
        span: Some(s.arrival_span.unwrap_or(s.span)),
        events: bursts,
        bytes: backlog * QUEUED_BYTES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOX: &str = "node box {\n  cpu sockets 1, cores 32, numa 1, threads 64, model \"t\"\n  memory 256 GiB\n  pcie gen5\n  source \"test\"\n}\n";

    fn est(body: &str, window_s: Option<f64>) -> Estimate {
        let l = crate::spec::load_str("t.orr", &format!("{BOX}{body}"));
        let rendered = l.render(false);
        let spec = l.spec.unwrap_or_else(|| panic!("{rendered}"));
        estimate(&spec, window_s, &BTreeMap::new())
    }

    #[test]
    fn declared_work_counts_without_a_window_only() {
        let body = "cluster c {\n  node box x 4\n}\nworkload w {\n  tasks t x 1000 {\n    resources { CPU: 1 }\n    duration 1 s\n  }\n  actor a x 10 {\n    resources { CPU: 1 }\n    calls 50\n    call_duration 1 s\n  }\n}\n";
        let e = est(body, None);
        // 1,000 tasks + 10 × 50 calls; 4 boxes × 2.5 KB + 1,010 × 64 B.
        assert_eq!(e.events(), 1500.0);
        assert_eq!(e.bytes(), 4.0 * 2500.0 + 1010.0 * 64.0);
        // A window may cut the work short: then it bounds no events, and memory the same.
        let w = est(body, Some(10.0));
        assert_eq!((w.events(), w.bytes()), (0.0, e.bytes()));
    }

    #[test]
    fn arrivals_failures_and_an_overloaded_queue_by_hand() {
        let body = "cluster c {\n  node box x 4\n}\nworkload w {\n  service s {\n    replicas 2\n    resources { CPU: 1 }\n    arrival poisson 1000 /s\n    service_time 10 ms\n  }\n}\nfailures {\n  random node mtbf 9 s repair 1 s\n  at 50 s kill node n1\n  at 500 s kill node n2\n}\n";
        let e = est(body, Some(100.0));
        // 100,000 arrivals less 6 σ (6 × √100,000 = 1,897.4); 2 replicas serve 200/s, so the
        // queue ends with 98,102.6 − 20,000 requests of 8 bytes.
        let arrivals = 100_000.0 - 6.0 * 100_000f64.sqrt();
        // 3 nodes (the head has its own class) × 2 events × 100 s / 10 s = 60 less 6 √60; one
        // scheduled failure in the window.
        let failures = 60.0 - 6.0 * 60f64.sqrt();
        assert!(
            (e.events() - (arrivals + failures + 1.0)).abs() < 1e-6,
            "{e:?}"
        );
        let queue = (arrivals - 20_000.0) * 8.0;
        assert!((e.bytes() - (4.0 * 2500.0 + queue)).abs() < 1e-6, "{e:?}");
        // Without a window random failures are not bounded here.
        let e = est(body, None);
        assert!(
            e.unbounded.iter().any(|u| u.contains("random node")),
            "{e:?}"
        );
    }

    #[test]
    fn the_refusal_points_at_the_part_that_costs_most() {
        let body = "cluster c {\n  node box x 4\n}\nworkload w {\n  tasks t x 1000 {\n    resources { CPU: 1 }\n    duration 1 s\n  }\n  tasks u x 10 {\n    resources { CPU: 1 }\n    duration 1 s\n  }\n}\n";
        let e = est(body, None);
        let fallback = Span::new(0, 0, 0);
        let l = Limits {
            max_events: 1009,
            max_memory: 1 << 30,
        };
        let d = e.refusal(l, 1, fallback).expect("over the events limit");
        assert!(
            d.message
                .contains("at least 1,010 events, over --max-events 1009"),
            "{}",
            d.message
        );
        assert!(d.label.contains("tasks `w.t`"), "{d:?}");
        assert!(
            e.refusal(
                Limits {
                    max_events: 1010,
                    ..l
                },
                1,
                fallback
            )
            .is_none()
        );
        // Memory: the runs at once multiply it.
        let m = Limits {
            max_events: 1 << 40,
            max_memory: 100_000,
        };
        assert!(e.refusal(m, 1, fallback).is_none());
        let d = e.refusal(m, 2, fallback).expect("two runs do not fit");
        assert!(d.message.contains("(2 runs at once)"), "{}", d.message);
    }
}
