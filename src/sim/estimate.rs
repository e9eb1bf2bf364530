//! Lower bounds on a run's events and memory, from the scenario alone (no placement, no
//! run): what each statement costs at least when its work runs.
//!
//! | part | events at least | memory at least |
//! |---|---|---|
//! | cluster | – | per node 2 KB + 250 B per device + 100 B per NIC, and per directed link of its graph ~200 B |
//! | task group | 1 per task (its completion), without a window | 128 B per task |
//! | actors | 1 per call, without a window | 256 B per actor, 64 B per call without a window |
//! | training job | 1 per step, without a window | – |
//! | service | 1 per arrival (a burst arrives as one event) over the window, 6 σ below the Poisson mean | 16 B per request served (its latency and wait, kept exactly up to 65,536), 8 B per request an overloaded queue holds at the window's end |
//! | random failures | 1 per failure (1 more per repair) over the window, 6 σ below the mean | – |
//! | scheduled failures | 1 each (in the window) | – |
//!
//! Memory is the heap a run holds at its peak, as the counting allocator the binary installs
//! measures it ([`crate::budget::alloc`], what `--max-memory` bounds). A cluster's directed links are
//! counted on the graph a run builds (one node of each type built alone, and an explicit
//! fabric without its nodes), at the bytes their element types take in the graph and the flow
//! network ([`crate::network::graph::BYTES_PER_LINK`], [`crate::network::flows::BYTES_PER_LINK`]);
//! the other figures are below what Orrery 0.1.0 measured (5,000 DGX H100s: 27.7 KB per node,
//! 84 links each; per task 198 B, per actor of 3 calls 598 B, per request served 62 B).
//! `tests/memory_estimate.rs` checks over generated scenarios that the estimate is at most what
//! the run holds, and within 3 times it plus 2 MiB (the histograms and series every run keeps).
//! An overloaded queue is one whose arrival rate exceeds what its replicas can serve (replicas ×
//! batch size / `service_time`, known only for services declared by `service_time`): it grows
//! by the difference for the whole window, one 8-byte arrival time per request.
//!
//! What is random is bounded with high probability, not surely: arrivals and random failures
//! count their mean less 6 standard deviations (a run falls below with probability under
//! 10⁻⁹). A random failure process's mean is units × window / (mtbf + repair) cycles of two
//! events (failure and repair), or one failure per unit when failures are permanent. Without a
//! window (no horizon and no services) its count depends on how long the work runs, so it is
//! listed as unbounded here and bounded at run time. The bounds assume the declared work runs:
//! work that never finds room (`--allow-infeasible`, or a placement group that never fits
//! beside the others) handles fewer events. Without a cluster only arrivals happen.

use crate::budget::Limits;
use crate::diag::{Diagnostic, Span};
use crate::network::graph::{Graph, LinkKind};
use crate::scenario::Spec;
use crate::scenario::cluster::{Cluster, NodeGroup, Rack};
use crate::scenario::workload::Arrival;
use std::collections::BTreeMap;

/// Bytes at least, per node and per device and NIC on it.
const NODE_BYTES: f64 = 2_000.0;
const DEVICE_BYTES: f64 = 250.0;
const NIC_BYTES: f64 = 100.0;
/// Bytes at least per task, per actor and per actor call (measured on 0.1.0 with the
/// counting allocator: 198 B per task, 598 B per actor of 3 calls).
const TASK_BYTES: f64 = 128.0;
const ACTOR_BYTES: f64 = 256.0;
const CALL_BYTES: f64 = 64.0;
/// One queued request: its arrival time (`Time`, 8 bytes).
const QUEUED_BYTES: f64 = 8.0;
/// One served request's latency and queueing wait, kept exactly (`sim::durations`, an `f64`
/// each; measured: 62 B per request in all).
const SAMPLE_BYTES: f64 = 16.0;

/// Bytes each directed link of the cluster's graph takes at least: in the graph and in the
/// flow network over it (`network::graph`, `network::flows`), from their element types.
const LINK_BYTES: usize =
    crate::network::graph::BYTES_PER_LINK + crate::network::flows::BYTES_PER_LINK;

/// Directed links one node of type `node_type` has in the graph (to its NUMA roots, PCIe
/// switches, devices, NICs, leaves and scale-up fabric), counted on the graph of a cluster of
/// that one node, built as a run builds it. A slice host's chips are linked by the slice's
/// torus, which a lone host does not have: its scale-up links are left out (a lower bound).
fn node_links(spec: &Spec, c: &Cluster, node_type: &str, in_slice: bool) -> f64 {
    let one = Cluster {
        zones: Vec::new(),
        racks: vec![Rack {
            name: String::new(),
            zone: None,
            slice: None,
        }],
        groups: vec![NodeGroup {
            rack: 0,
            node_type: node_type.to_string(),
            count: 1,
            prefix: "n".into(),
            first: 0,
        }],
        fabric: None,
        head: None,
        storage: Vec::new(),
        name: c.name.clone(),
        span: c.span,
    };
    let g = Graph::build_cluster(spec, &one);
    g.kind
        .iter()
        .filter(|k| !(in_slice && matches!(k, LinkKind::ScaleUp)))
        .count() as f64
}

/// Directed links of the cluster's fabric that no node brings: an explicit topology's
/// switches and their links, counted on the graph of the cluster without its nodes. (A built-in
/// fabric's leaf–spine links depend on the nodes and are left out: a lower bound.)
fn fabric_links(spec: &Spec, c: &Cluster) -> f64 {
    if c.fabric.as_ref().is_none_or(|f| f.topology.is_none()) {
        return 0.0;
    }
    let bare = Cluster {
        groups: Vec::new(),
        ..c.clone()
    };
    Graph::build_cluster(spec, &bare).kind.len() as f64
}

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
            crate::units::fmt_bytes(self.bytes()),
            l.max_events,
            crate::units::fmt_bytes(l.max_memory as f64)
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
                        crate::units::fmt_bytes(bytes),
                        crate::units::fmt_bytes(l.max_memory as f64)
                    ),
                )
                .with_label(format!(
                    "{}: at least {} per run",
                    p.what,
                    crate::units::fmt_bytes(p.bytes)
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
    traces: &BTreeMap<String, crate::scenario::arrivals::Trace>,
) -> Estimate {
    let mut e = Estimate::default();
    let mut units: BTreeMap<&str, f64> = BTreeMap::new();
    if let Some(c) = &spec.cluster {
        let mut bytes = 0.0;
        let mut nodes = 0.0;
        let mut per_node_links: BTreeMap<(&str, bool), f64> = BTreeMap::new();
        let mut links = fabric_links(spec, c);
        for g in &c.groups {
            let Some(nt) = spec.node_types.get(&g.node_type) else {
                continue;
            };
            let devices = f64::from(nt.device_count());
            let nics: f64 = nt.nics.iter().map(|n| f64::from(n.count)).sum();
            let n = f64::from(g.count);
            nodes += n;
            bytes += n * (NODE_BYTES + DEVICE_BYTES * devices + NIC_BYTES * nics);
            let in_slice = c.racks.get(g.rack).is_some_and(|r| r.slice.is_some());
            let own = *per_node_links
                .entry((g.node_type.as_str(), in_slice))
                .or_insert_with(|| node_links(spec, c, &g.node_type, in_slice));
            links += n * own;
            *units.entry("device").or_default() += n * devices;
            *units.entry("nic").or_default() += n * nics;
        }
        bytes += links * LINK_BYTES as f64;
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
            what: format!(
                "cluster `{}` ({} nodes, {} links)",
                c.name,
                count(nodes),
                count(links)
            ),
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
                // Each call made is recorded; a window may stop the calls, not the actors.
                bytes: n * ACTOR_BYTES + declared(n * a.calls as f64) * CALL_BYTES,
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
        let at = |s: &&crate::scenario::failure::Scheduled| {
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
    s: &crate::scenario::workload::Service,
    window_s: Option<f64>,
    traces: &BTreeMap<String, crate::scenario::arrivals::Trace>,
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
    // Every request served records its latency, exactly up to `EXACT_LIMIT` of them.
    let served = (low - backlog).min(crate::sim::durations::EXACT_LIMIT as f64);
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
        bytes: backlog * QUEUED_BYTES + served * SAMPLE_BYTES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOX: &str = "node box {\n  cpu sockets 1, cores 32, numa 1, threads 64, model \"t\"\n  memory 256 GiB\n  pcie gen5\n  source \"test\"\n}\n";

    fn est(body: &str, window_s: Option<f64>) -> Estimate {
        let l = crate::load_str("t.orr", &format!("{BOX}{body}"));
        let rendered = l.render(false);
        let spec = l.spec.unwrap_or_else(|| panic!("{rendered}"));
        estimate(&spec, window_s, &BTreeMap::new())
    }

    /// The test box's directed links (to its spill disk: it has no devices or NICs).
    fn box_links() -> f64 {
        let l = crate::load_str("t.orr", &format!("{BOX}cluster c {{\n  node box x 1\n}}\n"));
        let spec = l.spec.unwrap();
        Graph::build(&spec).kind.len() as f64
    }

    #[test]
    fn declared_work_counts_without_a_window_only() {
        let body = "cluster c {\n  node box x 4\n}\nworkload w {\n  tasks t x 1000 {\n    resources { CPU: 1 }\n    duration 1 s\n  }\n  actor a x 10 {\n    resources { CPU: 1 }\n    calls 50\n    call_duration 1 s\n  }\n}\n";
        let e = est(body, None);
        // 1,000 tasks + 10 × 50 calls; 4 boxes of 2 KB and their links, 1,000 tasks of 128 B,
        // 10 actors of 256 B and their 500 calls of 64 B.
        assert_eq!(e.events(), 1500.0);
        let boxes = 4.0 * (2000.0 + box_links() * LINK_BYTES as f64);
        let actors = 10.0 * 256.0;
        assert_eq!(e.bytes(), boxes + 1000.0 * 128.0 + actors + 500.0 * 64.0);
        // A window may cut the work short: then it bounds no events, nor the calls' memory.
        let w = est(body, Some(10.0));
        assert_eq!(
            (w.events(), w.bytes()),
            (0.0, boxes + 1000.0 * 128.0 + actors)
        );
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
        // The 20,000 served keep their latency and wait (16 B).
        let queue = (arrivals - 20_000.0) * 8.0 + 20_000.0 * 16.0;
        let boxes = 4.0 * (2000.0 + box_links() * LINK_BYTES as f64);
        assert!((e.bytes() - (boxes + queue)).abs() < 1e-6, "{e:?}");
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
            max_memory: e.bytes().ceil() as u64,
        };
        assert!(e.refusal(m, 1, fallback).is_none());
        let d = e.refusal(m, 2, fallback).expect("two runs do not fit");
        assert!(d.message.contains("(2 runs at once)"), "{}", d.message);
    }
}
