//! The timeline as a Chrome / Perfetto trace (JSON "Trace Event Format", written with serde):
//! - one complete event (`ph: "X"`) per device and span, `pid` = node, `tid` = device within the
//!   node, named by metadata events, with args: the work, its kind, the devices of the span and,
//!   for training, the step;
//! - each input fetch as a `send` slice on the holder node's `network` thread and a `fetch`
//!   slice on the consumer node's, with args (task, bytes, transport, from, to) and a flow arrow
//!   (`ph: "s"` → `ph: "f"`) from the source to the consumer;
//! - counter tracks (`ph: "C"`) on a `cluster` process: each link class's utilisation per window
//!   (`sim::links`) and the queue lengths (scheduler, each service's requests).
//!
//! Times are in microseconds (rounded to the nanosecond). Open it at ui.perfetto.dev or
//! chrome://tracing.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::sim::timeline::Timeline;

/// Most events one trace holds (about 100 bytes each); the rest are left out and the trace's
/// metadata says so.
pub const MAX_EVENTS: usize = 2_000_000;

/// The thread id of a node's network thread (fetches in and out), above any device's.
pub const NETWORK_TID: u32 = 1_000_000;

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
        name: &'a str,
    },
    Span {
        work: &'a str,
        kind: &'static str,
        devices: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        step: Option<u32>,
    },
    Transfer {
        task: &'a str,
        bytes: f64,
        transport: &'a str,
        from: &'a str,
        to: &'a str,
    },
    Counter(BTreeMap<&'static str, f64>),
}

/// Microseconds from seconds, rounded to the nanosecond.
fn us(s: f64) -> f64 {
    (s * 1e9).round() / 1e3
}

impl<'a> Event<'a> {
    fn meta(name: &'static str, pid: u32, tid: Option<u32>, value: &'a str) -> Event<'a> {
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
            ev.push(Event::meta("process_name", n, None, node_name(t, n)));
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
        ev.push(Event::meta("thread_name", node, Some(local[d]), name));
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
    // Fetches: a slice on each end's network thread and an arrow from source to consumer.
    let mut network = vec![false; n_nodes];
    for (k, x) in t.transfers.iter().enumerate() {
        if events + 2 > MAX_EVENTS {
            truncated = true;
            break;
        }
        events += 2;
        for n in [x.from_node, x.to_node] {
            name_node(&mut ev, n);
            if let Some(seen) = network.get_mut(n as usize)
                && !*seen
            {
                *seen = true;
                ev.push(Event::meta("thread_name", n, Some(NETWORK_TID), "network"));
            }
        }
        let args = || {
            Some(Args::Transfer {
                task: &x.task,
                bytes: x.bytes,
                transport: &x.transport,
                from: node_name(t, x.from_node),
                to: node_name(t, x.to_node),
            })
        };
        let mut send = Event::slice("send", "transfer", x.from_node, NETWORK_TID, x.start, x.end);
        send.args = args();
        let mut fetch = Event::slice("fetch", "transfer", x.to_node, NETWORK_TID, x.start, x.end);
        fetch.args = args();
        let arrow = |ph: &'static str, pid: u32| Event {
            ph,
            name: Cow::Borrowed("transfer"),
            cat: Some("transfer"),
            ts: Some(us(x.start)),
            dur: None,
            pid,
            tid: Some(NETWORK_TID),
            id: Some(k as u64),
            bp: (ph == "f").then_some("e"),
            args: None,
        };
        ev.push(send);
        ev.push(arrow("s", x.from_node));
        ev.push(fetch);
        ev.push(arrow("f", x.to_node));
    }
    // Counters on their own process, after the nodes.
    let cluster = n_nodes as u32;
    let links = t
        .links
        .as_ref()
        .map(|l| l.utilization())
        .unwrap_or_default();
    if !links.is_empty() || !t.counters.is_empty() {
        ev.push(Event::meta("process_name", cluster, None, "cluster"));
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
        let name = format!("link utilisation: {class}");
        for &(ts, u) in pts {
            ev.push(counter(
                cluster,
                Cow::Owned(name.clone()),
                ts,
                "utilisation",
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
            truncated,
        },
    };
    let mut out = serde_json::to_string(&trace)
        .unwrap_or_else(|e| format!("{{\"traceEvents\":[],\"metadata\":{{\"error\":\"{e}\"}}}}"));
    out.push('\n');
    out
}
