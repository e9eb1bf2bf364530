//! The timeline as a Chrome / Perfetto trace (JSON "Trace Event Format", written with serde):
//! - one complete event (`ph: "X"`) per device and span, `pid` = node, `tid` = device within the
//!   node, named by metadata events, with args: the work, its kind, the devices of the span and,
//!   for training, the step;
//! - one complete event per CPU span (`Timeline::cpu_spans`: tasks, actor calls, batches and
//!   training steps on a node's CPUs) on a lane of its node (`tid` = [`CPU_TID`] + lane, named
//!   `CPUs (lane k)`; concurrent work on separate lanes), with args: the work, its kind and the
//!   CPUs it held;
//! - every transfer on the run's network ([`network`]): input fetches, restores and spills of
//!   objects, checkpoint writes and loads, actor calls' tensors and service payloads as a slice
//!   on each end's `network` thread (a node's own spill disk on its `disk` thread; a storage
//!   target as its own `storage NAME` process), with args (kind; the task, job, actor or
//!   service; step for checkpoints; bytes, transport, from, to) and a flow arrow (`ph: "s"` →
//!   `ph: "f"`) from the source's slice to the destination's; each training step's collectives
//!   as one slice per node of the job's group (args: job, group, step, bytes, algorithm,
//!   ranks, nodes, model), without arrows (why: [`network`]);
//! - counter tracks (`ph: "C"`) on a `cluster` process: each link class's utilization per window
//!   (`sim::links`) and the queue lengths (scheduler, each service's requests).
//!
//! Bounds: at most [`MAX_EVENTS`] slices; device spans first, then CPU spans, then transfers in the order they
//! completed. The metadata says how many transfers were written (`network_transfers`) and how
//! many were left out (`network_dropped`: those past the timeline's
//! [`crate::sim::timeline::MAX_TRANSFERS`] and those past [`MAX_EVENTS`]), and `truncated` when
//! anything was. Times are in microseconds (rounded to the nanosecond). Open it at
//! ui.perfetto.dev or chrome://tracing.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::sim::timeline::Timeline;

/// Most events one trace holds (about 100 bytes each); the rest are left out and the trace's
/// metadata says so.
pub const MAX_EVENTS: usize = 2_000_000;

mod network;

pub use network::{DISK_TID, NETWORK_TID};

#[derive(Serialize)]
struct Trace<'a> {
    #[serde(rename = "displayTimeUnit")]
    display_time_unit: &'static str,
    #[serde(rename = "traceEvents")]
    trace_events: Vec<Event<'a>>,
    metadata: Metadata<'a>,
}

#[derive(Serialize)]
struct Metadata<'a> {
    orrery: &'a str,
    /// Span and transfer slices written (metadata, flow and counter events not counted).
    events: usize,
    /// Transfer records written as slices, and those left out (module docs).
    network_transfers: usize,
    network_dropped: u64,
    truncated: bool,
}

#[derive(Serialize)]
struct Event<'a> {
    ph: &'static str,
    name: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u32>,
    /// Flow id (`s` and `f` events).
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    /// Flow binding point: `e` binds the arrow's end to the enclosing slice.
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Args<'a>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Args<'a> {
    Name {
        name: Cow<'a, str>,
    },
    Span {
        work: &'a str,
        kind: &'static str,
        devices: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        step: Option<u32>,
    },
    Transfer {
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        task: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        job: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        actor: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        service: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        step: Option<u32>,
        bytes: f64,
        transport: &'a str,
        from: Cow<'a, str>,
        to: Cow<'a, str>,
    },
    Collective {
        kind: &'static str,
        job: Cow<'a, str>,
        group: &'a str,
        step: u32,
        bytes: f64,
        algorithm: &'a str,
        ranks: u32,
        nodes: Cow<'a, str>,
        model: &'a str,
    },
    Cpu {
        work: &'a str,
        kind: &'static str,
        cpus: f64,
    },
    Counter(BTreeMap<&'static str, f64>),
}

/// Microseconds from seconds, rounded to the nanosecond.
fn us(s: f64) -> f64 {
    ns(s) as f64 / 1e3
}

/// Nanoseconds from seconds, rounded.
fn ns(s: f64) -> i64 {
    (s * 1e9).round() as i64
}

impl<'a> Event<'a> {
    fn meta(name: &'static str, pid: u32, tid: Option<u32>, value: Cow<'a, str>) -> Event<'a> {
        Event {
            ph: "M",
            name: Cow::Borrowed(name),
            cat: None,
            ts: None,
            dur: None,
            pid,
            tid,
            id: None,
            bp: None,
            args: Some(Args::Name { name: value }),
        }
    }

    fn slice(name: &'a str, cat: &'a str, pid: u32, tid: u32, start: f64, end: f64) -> Self {
        Event {
            ph: "X",
            name: Cow::Borrowed(name),
            cat: Some(cat),
            ts: Some(us(start)),
            dur: Some(us(end) - us(start)),
            pid,
            tid: Some(tid),
            id: None,
            bp: None,
            args: None,
        }
    }
}

fn node_name(t: &Timeline, n: u32) -> &str {
    t.nodes.get(n as usize).map_or("?", String::as_str)
}

/// Thread id of a node's first CPU lane (lane k is `CPU_TID + k`).
pub const CPU_TID: u32 = 3_000_000;

/// The CPU spans of `t` as slices on lanes of their node (`CPU_TID + k`, named `CPUs (lane
/// k)`): the fewest lanes in which no two of a node's spans overlap, each span on the lowest
/// lane free at its start (spans in start order), so concurrent tasks sit side by side and
/// a lane's slices never overlap. Args: the work, `compute`, the CPUs it held. At most
/// `room` slices; (slices written, whether any were left out).
fn cpu_lanes<'a>(
    t: &'a Timeline,
    ev: &mut Vec<Event<'a>>,
    room: usize,
    name_node: &mut dyn FnMut(&mut Vec<Event<'a>>, u32),
) -> (usize, bool) {
    // Per node: each lane's end.
    let mut lanes: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    let mut written = 0usize;
    for s in &t.cpu_spans {
        if written >= room {
            return (written, true);
        }
        let node_lanes = lanes.entry(s.node).or_default();
        let lane = match node_lanes.iter().position(|end| *end <= s.start) {
            Some(k) => k,
            None => {
                node_lanes.push(s.start);
                name_node(ev, s.node);
                let k = node_lanes.len() - 1;
                ev.push(Event::meta(
                    "thread_name",
                    s.node,
                    Some(CPU_TID + k as u32),
                    Cow::Owned(format!("CPUs (lane {k})")),
                ));
                k
            }
        };
        node_lanes[lane] = s.end;
        let label = t.labels[s.label as usize].as_str();
        let mut e = Event::slice(
            label,
            "compute",
            s.node,
            CPU_TID + lane as u32,
            s.start,
            s.end,
        );
        e.args = Some(Args::Cpu {
            work: label,
            kind: "compute",
            cpus: s.cpus,
        });
        ev.push(e);
        written += 1;
    }
    (written, false)
}

/// The trace JSON of `t`, with `header` (scenario, hash, seed, version) in its metadata.
pub fn perfetto<'a>(t: &'a Timeline, header: &'a str) -> String {
    let mut ev: Vec<Event<'a>> = Vec::new();
    // Names: a process per node with devices or network traffic, a thread per device.
    let n_nodes = t.nodes.len().max(
        t.device_node
            .iter()
            .map(|n| *n as usize + 1)
            .max()
            .unwrap_or(0),
    );
    let mut named = vec![false; n_nodes];
    let mut name_node = |ev: &mut Vec<Event<'a>>, n: u32| {
        if let Some(seen) = named.get_mut(n as usize)
            && !*seen
        {
            *seen = true;
            ev.push(Event::meta(
                "process_name",
                n,
                None,
                Cow::Borrowed(node_name(t, n)),
            ));
        }
    };
    let mut local = vec![0u32; t.devices.len()];
    let mut next_local: BTreeMap<u32, u32> = BTreeMap::new();
    for (d, name) in t.devices.iter().enumerate() {
        let node = t.device_node[d];
        let k = next_local.entry(node).or_insert(0);
        local[d] = *k;
        *k += 1;
        name_node(&mut ev, node);
        ev.push(Event::meta(
            "thread_name",
            node,
            Some(local[d]),
            Cow::Borrowed(name),
        ));
    }
    let mut events = 0usize;
    let mut truncated = t.truncated;
    'spans: for s in &t.spans {
        let set = &t.sets[s.set as usize];
        for &d in set {
            if events >= MAX_EVENTS {
                truncated = true;
                break 'spans;
            }
            events += 1;
            let label = t.labels[s.label as usize].as_str();
            let mut e = Event::slice(
                label,
                s.kind.name(),
                t.device_node[d as usize],
                local[d as usize],
                s.start,
                s.end,
            );
            e.args = Some(Args::Span {
                work: label,
                kind: s.kind.name(),
                devices: set.len(),
                step: s.step,
            });
            ev.push(e);
        }
    }
    // CPU work: slices on each node's CPU lanes.
    let (cpu_events, cpu_cut) = cpu_lanes(t, &mut ev, MAX_EVENTS - events, &mut name_node);
    events += cpu_events;
    truncated |= cpu_cut;
    // Transfers: slices on each end's network thread, arrows, storage processes.
    let net = network::push(t, &mut ev, events, n_nodes, &mut name_node);
    events += net.slices;
    let network_dropped = t.transfers_dropped + net.left_out as u64;
    truncated |= network_dropped > 0;
    // Counters on their own process, after the nodes.
    let cluster = n_nodes as u32;
    let links = t
        .links
        .as_ref()
        .map(|l| l.utilization())
        .unwrap_or_default();
    if !links.is_empty() || !t.counters.is_empty() {
        ev.push(Event::meta(
            "process_name",
            cluster,
            None,
            Cow::Borrowed("cluster"),
        ));
    }
    fn counter<'a>(
        cluster: u32,
        name: Cow<'a, str>,
        ts: f64,
        key: &'static str,
        v: f64,
    ) -> Event<'a> {
        Event {
            ph: "C",
            name,
            cat: None,
            ts: Some(us(ts)),
            dur: None,
            pid: cluster,
            tid: None,
            id: None,
            bp: None,
            args: Some(Args::Counter(BTreeMap::from([(key, v)]))),
        }
    }
    for (class, pts) in &links {
        let name = format!("link utilization: {class}");
        for &(ts, u) in pts {
            ev.push(counter(
                cluster,
                Cow::Owned(name.clone()),
                ts,
                "utilization",
                u,
            ));
        }
    }
    for (name, pts) in &t.counters {
        for &(ts, v) in pts {
            ev.push(counter(cluster, Cow::Borrowed(name), ts, "length", v));
        }
    }
    let trace = Trace {
        display_time_unit: "ms",
        trace_events: ev,
        metadata: Metadata {
            orrery: header,
            events,
            network_transfers: net.transfers,
            network_dropped,
            truncated,
        },
    };
    let mut out = serde_json::to_string(&trace)
        .unwrap_or_else(|e| format!("{{\"traceEvents\":[],\"metadata\":{{\"error\":\"{e}\"}}}}"));
    out.push('\n');
    out
}
