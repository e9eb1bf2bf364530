//! The timeline's network transfers as trace slices, flow arrows and storage processes.
//!
//! A transfer between two ends is a slice at each end, named by its kind (`fetch`, `restore`,
//! `spill`, `checkpoint write`, `checkpoint load`, `tensor`, `request`, `response`), and a flow
//! arrow from the source's slice (at the transfer's start) to the destination's (at its last
//! byte's arrival). A node's memory end is on its `network` thread, its own spill disk on its
//! `disk` thread, a storage target on the `io` thread of a `storage NAME` process. A training
//! step's collectives are one `collective` slice per node of the job's group, with no arrow:
//! their data goes round the ring (or tree, or switch) among all the ranks in many rounds, so
//! there is no one source and consumer, and an arrow per round's flow would be O(rounds ×
//! ranks) per step; the slices of one step share their times and args (`job`, `group`,
//! `step`), which line them up across the nodes.
//!
//! Slices of one thread must nest in the trace format, and transfers into one node overlap
//! freely, so each thread is split into lanes (`network`, `network 2`, ...): a slice goes on
//! the lane that has been free longest, else on a new one — deterministic, sorted by start. A
//! lane is free only after its last slice has ended (not at the same nanosecond), so an arrow
//! at a slice's start or end never lies on two slices.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use super::{Args, Event, MAX_EVENTS, ns};
use crate::sim::timeline::{End, Timeline};

/// Thread id of a node's (or storage target's) first network lane, above any device's.
pub const NETWORK_TID: u32 = 1_000_000;
/// Thread id of a node's first spill-disk lane.
pub const DISK_TID: u32 = 2_000_000;
/// Nodes a collective's `nodes` arg names before it says how many more.
const NAMED_NODES: usize = 8;

/// A slice before its lane is known.
struct Pending<'a> {
    pid: u32,
    base: u32,
    start: i64,
    end: i64,
    event: Event<'a>,
    /// The arrow of transfer `id`: starts here (`s`) or ends here (`f`).
    arrow: Option<(&'static str, u64)>,
}

/// A track's lanes: (when each free lane became free, the lane) and how many there are.
type Lanes = (BinaryHeap<Reverse<(i64, u32)>>, u32);

/// What the network slices added to a trace.
pub(super) struct Written {
    /// Slices written.
    pub slices: usize,
    /// Transfer records written, and left out at [`MAX_EVENTS`].
    pub transfers: usize,
    pub left_out: usize,
}

/// The pid of storage target `s`: after the nodes and the `cluster` process.
pub(super) fn storage_pid(n_nodes: usize, s: u32) -> u32 {
    n_nodes as u32 + 1 + s
}

fn end_name(t: &Timeline, e: End) -> Cow<'_, str> {
    match e {
        End::Node(n) => Cow::Borrowed(super::node_name(t, n)),
        End::Storage(s) => Cow::Borrowed(t.storage.get(s as usize).map_or("?", String::as_str)),
        End::Disk(n) => Cow::Owned(format!("{} disk", super::node_name(t, n))),
    }
}

fn track(n_nodes: usize, e: End) -> (u32, u32) {
    match e {
        End::Node(n) => (n, NETWORK_TID),
        End::Storage(s) => (storage_pid(n_nodes, s), NETWORK_TID),
        End::Disk(n) => (n, DISK_TID),
    }
}

/// The `nodes` arg of a collective group: its nodes' names, the first [`NAMED_NODES`] of a
/// larger group and how many there are.
fn group_nodes(t: &Timeline, nodes: &[u32]) -> String {
    let names: Vec<&str> = nodes
        .iter()
        .take(NAMED_NODES)
        .map(|n| super::node_name(t, *n))
        .collect();
    let mut s = names.join(", ");
    if nodes.len() > NAMED_NODES {
        s.push_str(&format!(", … ({} nodes)", nodes.len()));
    }
    s
}

/// Push the slices, arrows and lane and process names of `t`'s transfers to `ev`, within
/// [`MAX_EVENTS`] counting the `used` slices already written; `name_node` names a node's
/// process once.
pub(super) fn push<'a>(
    t: &'a Timeline,
    ev: &mut Vec<Event<'a>>,
    used: usize,
    n_nodes: usize,
    name_node: &mut dyn FnMut(&mut Vec<Event<'a>>, u32),
) -> Written {
    let mut pending: Vec<Pending<'a>> = Vec::new();
    let mut w = Written {
        slices: 0,
        transfers: 0,
        left_out: 0,
    };
    let nodes: Vec<String> = t.groups.iter().map(|g| group_nodes(t, &g.nodes)).collect();
    for (k, x) in t.transfers.iter().enumerate() {
        let group = x.group.and_then(|g| t.groups.get(g as usize));
        let slices = group.map_or(2, |g| g.nodes.len());
        if used + w.slices + slices > MAX_EVENTS {
            w.left_out = t.transfers.len() - k;
            break;
        }
        w.slices += slices;
        w.transfers += 1;
        let (start, end) = (ns(x.start), ns(x.end));
        // What moved it: the item's label, with its instance (`w.b[7]`) when it has one.
        let label: Cow<'a, str> = match x.instance {
            Some(_) => Cow::Owned(t.transfer_label(x)),
            None => Cow::Borrowed(t.label(x.label)),
        };
        let name = x.kind.name();
        let slice = |pid: u32, base: u32| Event::slice(name, "network", pid, base, x.start, x.end);
        if let (Some(g), Some(gi)) = (group, x.group) {
            for &n in &g.nodes {
                let mut e = slice(n, NETWORK_TID);
                e.args = Some(Args::Collective {
                    kind: name,
                    job: label.clone(),
                    group: &g.name,
                    step: x.step.unwrap_or(0),
                    bytes: x.bytes,
                    algorithm: &g.algorithm,
                    ranks: g.ranks,
                    nodes: Cow::Owned(nodes[gi as usize].clone()),
                    model: t.label(x.transport),
                });
                pending.push(Pending {
                    pid: n,
                    base: NETWORK_TID,
                    start,
                    end,
                    event: e,
                    arrow: None,
                });
            }
            continue;
        }
        let args = || {
            let owner = x.kind.owner();
            let pick = |o: &str| (owner == o).then(|| label.clone());
            Args::Transfer {
                kind: name,
                task: pick("task"),
                job: pick("job"),
                actor: pick("actor"),
                service: pick("service"),
                step: x.step,
                bytes: x.bytes,
                transport: t.label(x.transport),
                from: end_name(t, x.from),
                to: end_name(t, x.to),
            }
        };
        for (end_of, ph) in [(x.from, "s"), (x.to, "f")] {
            let (pid, base) = track(n_nodes, end_of);
            let mut e = slice(pid, base);
            e.args = Some(args());
            pending.push(Pending {
                pid,
                base,
                start,
                end,
                event: e,
                arrow: Some((ph, k as u64)),
            });
        }
    }
    // Lanes: per track, by start (then end, then record order), the longest-free lane.
    let mut order: Vec<usize> = (0..pending.len()).collect();
    order.sort_by_key(|&i| {
        let p = &pending[i];
        (p.pid, p.base, p.start, p.end, i)
    });
    let mut lanes: BTreeMap<(u32, u32), Lanes> = BTreeMap::new();
    let mut lane_of = vec![0u32; pending.len()];
    for &i in &order {
        let p = &pending[i];
        let (free, count) = lanes.entry((p.pid, p.base)).or_default();
        let lane = match free.peek() {
            Some(Reverse((until, lane))) if *until < p.start => {
                let lane = *lane;
                free.pop();
                lane
            }
            _ => {
                *count += 1;
                *count - 1
            }
        };
        free.push(Reverse((p.end, lane)));
        lane_of[i] = lane;
    }
    // Names: storage processes, then each track's lanes.
    for (s, name) in t.storage.iter().enumerate() {
        let pid = storage_pid(n_nodes, s as u32);
        if lanes.contains_key(&(pid, NETWORK_TID)) {
            ev.push(Event::meta(
                "process_name",
                pid,
                None,
                Cow::Owned(format!("storage {name}")),
            ));
        }
    }
    for (&(pid, base), (_, count)) in &lanes {
        if (pid as usize) < n_nodes {
            name_node(ev, pid);
        }
        let thread = match base {
            DISK_TID => "disk",
            _ if pid as usize >= n_nodes => "io",
            _ => "network",
        };
        for lane in 0..*count {
            let name = if lane == 0 {
                Cow::Borrowed(thread)
            } else {
                Cow::Owned(format!("{thread} {}", lane + 1))
            };
            ev.push(Event::meta("thread_name", pid, Some(base + lane), name));
        }
    }
    for (p, lane) in pending.into_iter().zip(lane_of) {
        let tid = p.base + lane;
        let mut e = p.event;
        e.tid = Some(tid);
        ev.push(e);
        if let Some((ph, id)) = p.arrow {
            // The arrow leaves at the start and lands at the last byte's arrival (within the
            // destination's slice: a nanosecond before its end).
            let at = if ph == "s" {
                p.start
            } else {
                p.start.max(p.end - 1)
            };
            ev.push(Event {
                ph,
                name: Cow::Borrowed("transfer"),
                cat: Some("network"),
                ts: Some(at as f64 / 1e3),
                dur: None,
                pid: p.pid,
                tid: Some(tid),
                id: Some(id),
                bp: (ph == "f").then_some("e"),
                args: None,
            });
        }
    }
    w
}
