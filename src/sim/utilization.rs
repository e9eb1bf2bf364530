//! Utilization over time: how many devices (per device class or node type) and how many
//! logical CPUs (per node or node type) were allocated and busy at each instant, integrated
//! over the run's window.

use super::binned::{BASE_BIN, Binned};
use crate::engine::Time;
use serde::Serialize;
use std::collections::BTreeMap;

/// Devices of one device class (or node type) over time: how many were *busy* — computing,
/// communicating or serving a request (a task from start to finish, its input fetch included;
/// a training step's checkpoint, compute and collectives; a replica's batches; an actor's
/// method calls) — and how many
/// were *allocated* (held by a task, actor, replica or training job, busy or not: an idle
/// replica waiting for requests is allocated, not busy).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Utilization {
    pub devices: u64,
    /// Busy device-seconds / (devices × horizon).
    pub busy_fraction: f64,
    /// Allocated device-seconds / (devices × horizon).
    pub allocated_fraction: f64,
    /// The series' resolution: 0 when they hold every change exactly, else the width of
    /// their bins (each point the level's mean over its bin; past [`EXACT`] changes).
    pub series_resolution_s: f64,
    /// (time s, busy devices) at each change (not in `run.json`: `utilization.csv` holds it).
    #[serde(skip)]
    pub busy_series: Vec<(f64, f64)>,
    /// (time s, allocated devices) at each change (not in `run.json`, as `busy_series`).
    #[serde(skip)]
    pub allocated_series: Vec<(f64, f64)>,
}

/// Logical CPUs (Ray's `CPU` resource) of one node, or of a node type's nodes together, over
/// time: how many were *busy* (held by work that was running: a task, an actor's call, a
/// replica's batch, a training step) and how many were *allocated* (held, running or not).
/// `sim::cpu` says what counts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CpuUtilization {
    /// The CPUs: the node's `CPU` resource total (its nodes' summed, for a node type).
    pub cpus: f64,
    /// Busy CPU-seconds / (CPUs × horizon).
    pub busy_fraction: f64,
    /// Allocated CPU-seconds / (CPUs × horizon).
    pub allocated_fraction: f64,
    /// The series' resolution, as [`Utilization::series_resolution_s`].
    pub series_resolution_s: f64,
    /// (time s, busy CPUs) at each change (not in `run.json`: `cpu_utilization.csv` holds it).
    #[serde(skip)]
    pub busy_series: Vec<(f64, f64)>,
    /// (time s, allocated CPUs) at each change (as `busy_series`).
    #[serde(skip)]
    pub allocated_series: Vec<(f64, f64)>,
}

/// Records level changes per key (devices of a device class or node type, CPUs of a node or
/// node type) and integrates them.
#[derive(Default)]
pub struct UtilTracker {
    /// Per key, changes (time, delta), compacted (sorted, one entry per instant) whenever they
    /// double: all of a training step's nodes start and end together, so memory follows the
    /// instants, not the devices, at an amortised sort per change. Past [`EXACT`] instants a
    /// key's changes are binned ([`Binned`]): memory per key is bounded whatever the horizon.
    /// By key index ([`UtilTracker::key`]): recording a change looks up no name.
    changes: Vec<Changes>,
    /// Each key's index in `changes`.
    keys: BTreeMap<String, usize>,
    /// Changes after this time (the run's window) are counted at it.
    limit: Option<Time>,
}

/// Most instants a key keeps exactly; past them its series is binned, so that a long run's
/// memory and `utilization.csv` do not grow with its horizon (issue 42: a 30-day run kept
/// 702 MB resident and wrote a 306 MB utilization CSV).
pub const EXACT: usize = 4096;

pub use super::binned::BINS;

#[derive(Default)]
struct Changes {
    v: Vec<(Time, f64)>,
    compacted: usize,
    bins: Option<Binned>,
}

impl Changes {
    /// Record a change; once the changes pass twice the last compacted count plus `slack`,
    /// compact them (`net`: dropping instants whose changes cancel, [`Changes::compact_net`])
    /// and bin them if more than [`EXACT`] instants remain.
    fn push(&mut self, at: Time, delta: f64, slack: usize, net: bool) {
        if let Some(b) = &mut self.bins {
            b.add(at, delta);
            return;
        }
        self.v.push((at, delta));
        if self.v.len() > 2 * self.compacted + slack {
            if net {
                self.compact_net();
            } else {
                self.compact();
            }
            if self.v.len() > EXACT {
                self.bin(BASE_BIN);
            }
        }
    }

    /// From here on binned, at least `width` wide: its changes so far go into the bins.
    fn bin(&mut self, width: Time) {
        let mut b = self.bins.take().unwrap_or_else(|| Binned::new(width));
        b.widen_to(width);
        for &(t, d) in &self.v {
            b.add(t, d);
        }
        self.v = Vec::new();
        self.compacted = 0;
        self.bins = Some(b);
    }

    fn width(&self) -> Option<Time> {
        self.bins.as_ref().map(|b| b.width)
    }

    /// Sorted by time (stable: equal times keep their order), one entry per instant.
    /// In place: a run's many compactions allocate nothing.
    fn compact(&mut self) {
        self.v.sort_by_key(|c| c.0);
        // Each instant's deltas summed into its first entry, in order.
        self.v.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 += next.1;
            }
            same
        });
        self.compacted = self.v.len();
    }

    /// [`Changes::compact`], leaving out instants whose changes cancel (work that ends when
    /// the next starts on the same CPUs): the step function is the same.
    fn compact_net(&mut self) {
        self.compact();
        self.v.retain(|c| c.1 != 0.0);
        self.compacted = self.v.len();
    }
}

/// A step function from its changes: (series, integral in level-seconds over [0, horizon],
/// bin width in seconds, 0 when exact). Exact: (time s, level) at each change. Binned: (bin
/// start s, the level's mean over the bin).
fn integrate(mut changes: Changes, horizon: Time) -> (Vec<(f64, f64)>, f64, f64) {
    if let Some(b) = &changes.bins {
        let (series, area) = b.series(horizon);
        return (series, area, b.width as f64 / 1e9);
    }
    changes.compact();
    let changes = changes.v;
    let mut series: Vec<(f64, f64)> = vec![(0.0, 0.0)];
    let (mut level, mut last, mut area) = (0.0f64, 0u64, 0.0f64);
    for (t, d) in changes {
        let t = t.min(horizon);
        area += level * (t - last) as f64 / 1e9;
        level += d;
        last = t;
        match series.last_mut() {
            Some(l) if l.0 == t as f64 / 1e9 => l.1 = level.max(0.0),
            _ => series.push((t as f64 / 1e9, level.max(0.0))),
        }
    }
    area += level * horizon.saturating_sub(last) as f64 / 1e9;
    (series, area, 0.0)
}

/// Busy and allocated of one key alike: both exact, or both binned at one width (so that
/// their rows in the CSV line up).
fn align(busy: &mut Changes, held: &mut Changes) {
    let w = match (busy.width(), held.width()) {
        (None, None) => return,
        (a, b) => a.unwrap_or(0).max(b.unwrap_or(0)),
    };
    busy.bin(w);
    held.bin(w);
}

impl UtilTracker {
    /// A tracker whose changes after `limit` (the run's window, when it has one) count at it.
    pub fn with_limit(limit: Option<Time>) -> UtilTracker {
        UtilTracker {
            changes: Vec::new(),
            keys: BTreeMap::new(),
            limit,
        }
    }

    /// The index of `key`, which has no changes yet if it is new (and then integrates as a
    /// key that never changed).
    pub fn key(&mut self, key: &str) -> usize {
        if let Some(&i) = self.keys.get(key) {
            return i;
        }
        self.changes.push(Changes::default());
        self.keys.insert(key.to_string(), self.changes.len() - 1);
        self.changes.len() - 1
    }

    /// A change of `delta` at `at` to the key with index `i` ([`UtilTracker::key`]).
    pub fn change_at(&mut self, i: usize, at: Time, delta: f64) {
        if delta != 0.0 {
            let at = self.limit.map_or(at, |l| at.min(l));
            self.changes[i].push(at, delta, 4096, false);
        }
    }

    /// `busy` over `[from, to)` for the key with index `i`.
    pub fn span_at(&mut self, i: usize, from: Time, to: Time, busy: f64) {
        if to > from {
            self.change_at(i, from, busy);
            self.change_at(i, to, -busy);
        }
    }

    /// The changes of `key` (none if it has none), taken out.
    fn take(&mut self, key: &str) -> Changes {
        self.keys
            .get(key)
            .map(|&i| std::mem::take(&mut self.changes[i]))
            .unwrap_or_default()
    }

    /// Step functions and means over [0, horizon] of busy (`self`) and allocated devices;
    /// `devices` per key.
    pub fn finish(
        self,
        allocated: UtilTracker,
        devices: &BTreeMap<String, u64>,
        horizon: Time,
    ) -> BTreeMap<String, Utilization> {
        let capacity = devices
            .iter()
            .map(|(k, n)| (k.clone(), *n as f64))
            .collect();
        self.levels(allocated, &capacity, horizon)
            .into_iter()
            .map(|(key, l)| {
                let u = Utilization {
                    devices: devices[&key],
                    busy_fraction: l.busy_fraction,
                    allocated_fraction: l.allocated_fraction,
                    series_resolution_s: l.series_resolution_s,
                    busy_series: l.busy_series,
                    allocated_series: l.allocated_series,
                };
                (key, u)
            })
            .collect()
    }

    /// Busy (`self`) and allocated levels per key of `capacity`, as fractions of its capacity
    /// over the window.
    fn levels(
        mut self,
        mut allocated: UtilTracker,
        capacity: &BTreeMap<String, f64>,
        horizon: Time,
    ) -> BTreeMap<String, CpuUtilization> {
        let mut out = BTreeMap::new();
        for (key, n) in capacity {
            let busy = self.take(key);
            let held = allocated.take(key);
            out.insert(key.clone(), cpu_record(*n, busy, held, horizon));
        }
        out
    }
}

/// Level changes per index (a node's CPUs), kept in a vector so that recording one costs no
/// lookup by name; [`IndexTracker::finish_cpus`] integrates them per key, a key being one
/// index or several merged (a node type's nodes).
#[derive(Default)]
pub struct IndexTracker {
    changes: Vec<Changes>,
    /// Changes not applied yet, applied in bursts grouped by index (`sim::staged`).
    staged: super::staged::Staged,
    /// Changes after this time count at it ([`UtilTracker::with_limit`]).
    limit: Option<Time>,
}

impl IndexTracker {
    /// A tracker whose changes after `limit` count at it.
    pub fn with_limit(limit: Option<Time>) -> IndexTracker {
        IndexTracker {
            changes: Vec::new(),
            staged: Default::default(),
            limit,
        }
    }

    pub fn change(&mut self, i: usize, at: Time, delta: f64) {
        if delta == 0.0 {
            return;
        }
        let at = self.limit.map_or(at, |l| at.min(l));
        match u32::try_from(i) {
            Ok(k) => {
                if self.staged.push(k, at, delta) {
                    self.apply();
                }
            }
            Err(_) => {
                self.apply();
                self.push(i, at, delta);
            }
        }
    }

    /// The changes held back, into each index's changes.
    fn apply(&mut self) {
        let mut staged = std::mem::take(&mut self.staged);
        staged.apply(|i, at, delta| self.push(i, at, delta));
        self.staged = staged;
    }

    fn push(&mut self, i: usize, at: Time, delta: f64) {
        if self.changes.len() <= i {
            self.changes.resize_with(i + 1, Changes::default);
        }
        self.changes[i].push(at, delta, 64, true);
    }

    /// `busy` over `[from, to)`.
    pub fn span(&mut self, i: usize, from: Time, to: Time, busy: f64) {
        if to > from {
            self.change(i, from, busy);
            self.change(i, to, -busy);
        }
    }

    /// The changes of `members`, merged (binned if any member is).
    fn merged(&self, members: &[usize]) -> Changes {
        let mut v = Vec::new();
        let mut bins: Option<Binned> = None;
        for &i in members {
            if let Some(c) = self.changes.get(i) {
                v.extend_from_slice(&c.v);
                if let Some(b) = &c.bins {
                    match &mut bins {
                        Some(m) => m.merge(b.clone()),
                        None => bins = Some(b.clone()),
                    }
                }
            }
        }
        let mut c = Changes {
            v,
            compacted: 0,
            bins: None,
        };
        c.compact_net();
        if let Some(b) = bins {
            let w = b.width;
            c.bins = Some(b);
            c.bin(w);
        } else if c.v.len() > EXACT {
            c.bin(BASE_BIN);
        }
        c
    }

    /// Busy (`self`) and allocated CPUs over [0, horizon] per key: (name, its CPUs, the
    /// indices it covers).
    pub fn finish_cpus(
        &mut self,
        allocated: &mut IndexTracker,
        keys: &[(String, f64, Vec<usize>)],
        horizon: Time,
    ) -> BTreeMap<String, CpuUtilization> {
        self.apply();
        allocated.apply();
        let mut out = BTreeMap::new();
        for (key, n, members) in keys {
            let record = cpu_record(*n, self.merged(members), allocated.merged(members), horizon);
            out.insert(key.clone(), record);
        }
        out
    }
}

/// One key's record: `n` CPUs, its busy and allocated changes integrated over the window.
fn cpu_record(n: f64, mut busy: Changes, mut held: Changes, horizon: Time) -> CpuUtilization {
    align(&mut busy, &mut held);
    let (busy_series, busy, resolution) = integrate(busy, horizon);
    let (allocated_series, held, _) = integrate(held, horizon);
    let denom = n * horizon as f64 / 1e9;
    let frac = |a: f64| if denom > 0.0 { a / denom } else { 0.0 };
    CpuUtilization {
        cpus: n,
        busy_fraction: frac(busy),
        allocated_fraction: frac(held),
        series_resolution_s: resolution,
        busy_series,
        allocated_series,
    }
}

/// What a run's devices did: allocated (`held`, `World::busy`) and busy computing,
/// communicating or serving (`busy`, `World::worked`), per device class and per node type.
#[derive(Default)]
pub(crate) struct Usage {
    pub(crate) held: UtilTracker,
    pub(crate) held_by_type: UtilTracker,
    pub(crate) busy: UtilTracker,
    pub(crate) busy_by_type: UtilTracker,
    /// Per node, its keys' indices in `held`, `held_by_type`, `busy` and `busy_by_type`,
    /// once it has any (a replica's every batch would otherwise look two names up).
    node_keys: Vec<Option<[usize; 4]>>,
}

impl Usage {
    /// Trackers that keep their series within `horizon` (see [`UtilTracker::with_limit`]).
    pub(crate) fn with_limit(horizon: Option<Time>) -> Self {
        Usage {
            held: UtilTracker::with_limit(horizon),
            held_by_type: UtilTracker::with_limit(horizon),
            busy: UtilTracker::with_limit(horizon),
            busy_by_type: UtilTracker::with_limit(horizon),
            node_keys: Vec::new(),
        }
    }

    /// Node `node`'s key indices; `class` and `node_type` name its device class and type.
    fn keys(&mut self, node: usize, class: &str, node_type: &str) -> [usize; 4] {
        if let Some(Some(k)) = self.node_keys.get(node) {
            return *k;
        }
        let k = [
            self.held.key(class),
            self.held_by_type.key(node_type),
            self.busy.key(class),
            self.busy_by_type.key(node_type),
        ];
        if self.node_keys.len() <= node {
            self.node_keys.resize(node + 1, None);
        }
        self.node_keys[node] = Some(k);
        k
    }

    /// `units` devices of `node` (device class `class`, type `node_type`) became allocated
    /// (> 0) or were given back (< 0) at `at`.
    pub(crate) fn held(&mut self, node: usize, class: &str, node_type: &str, at: Time, units: f64) {
        let k = self.keys(node, class, node_type);
        self.held.change_at(k[0], at, units);
        self.held_by_type.change_at(k[1], at, units);
    }

    /// `units` devices of `node` were busy over `[from, to)`.
    pub(crate) fn worked(
        &mut self,
        node: usize,
        class: &str,
        node_type: &str,
        (from, to): (Time, Time),
        units: f64,
    ) {
        let k = self.keys(node, class, node_type);
        self.busy.span_at(k[2], from, to, units);
        self.busy_by_type.span_at(k[3], from, to, units);
    }

    /// Each class's and each node type's utilization at `end`, from `devices` and `by_type`
    /// (how many devices each has).
    pub(crate) fn finish(
        self,
        devices: &BTreeMap<String, u64>,
        by_type: &BTreeMap<String, u64>,
        end: Time,
    ) -> (BTreeMap<String, Utilization>, BTreeMap<String, Utilization>) {
        (
            self.busy.finish(self.held, devices, end),
            self.busy_by_type.finish(self.held_by_type, by_type, end),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::binned::tests::spans;
    use super::*;

    #[test]
    fn binned_integrals_are_the_exact_ones_and_memory_stays_bounded() {
        // 20,000 spans (40,000 changes) in any order: past EXACT the series is binned, at
        // most BINS bins, and its integral is the exact step function's.
        let horizon = 10_000_000_000;
        let mut busy = UtilTracker::default();
        let mut exact = 0.0;
        let h100 = busy.key("H100");
        for (a, b, l) in spans(20_000) {
            busy.span_at(h100, a, b, l);
            exact += l * (b - a) as f64 / 1e9;
        }
        let c = &busy.changes[busy.keys["H100"]];
        assert!(c.bins.is_some() && c.v.is_empty());
        assert!(c.bins.as_ref().unwrap().delta.len() <= BINS);
        let r = busy.finish(
            UtilTracker::default(),
            &BTreeMap::from([("H100".to_string(), 1)]),
            horizon,
        );
        let u = &r["H100"];
        let got = u.busy_fraction * 10.0;
        assert!((got - exact).abs() < 1e-9 * exact, "{got} vs {exact}");
        assert!(u.series_resolution_s > 0.0 && u.busy_series.len() <= BINS + 1);
        // Each point is the level's mean over its bin: their mean is the whole mean.
        let w = u.series_resolution_s;
        let area: f64 = u
            .busy_series
            .iter()
            .map(|&(t, l)| l * (t + w).min(10.0).max(t) - l * t)
            .sum();
        assert!((area - exact).abs() < 1e-6 * exact, "{area} vs {exact}");
    }

    #[test]
    fn utilization_integrates_the_step_function() {
        let mut held = UtilTracker::default();
        let k = held.key("H100");
        held.change_at(k, 0, 2.0);
        held.change_at(k, 5_000_000_000, -1.0);
        let mut busy = UtilTracker::default();
        let k = busy.key("H100");
        busy.span_at(k, 1_000_000_000, 3_000_000_000, 2.0);
        let r = busy.finish(
            held,
            &BTreeMap::from([("H100".to_string(), 4)]),
            10_000_000_000,
        );
        // Allocated: 2 for 5 s + 1 for 5 s = 15 device-seconds of 40; busy: 2 for 2 s.
        assert!((r["H100"].allocated_fraction - 15.0 / 40.0).abs() < 1e-12);
        assert!((r["H100"].busy_fraction - 4.0 / 40.0).abs() < 1e-12);
        assert_eq!(
            r["H100"].busy_series,
            vec![(0.0, 0.0), (1.0, 2.0), (3.0, 0.0)]
        );
    }

    #[test]
    fn cpus_merge_per_key_and_back_to_back_work_leaves_no_point() {
        // Node 0: 4 CPUs busy over [0, 2) s then [2, 4) s (back to back: no point at 2 s);
        // node 1: 2 CPUs over [1, 3) s. Held as busy.
        let s = 1_000_000_000u64;
        let mut busy = IndexTracker::default();
        let mut held = IndexTracker::default();
        for (n, a, b, c) in [(0, 0, 2, 4.0), (0, 2, 4, 4.0), (1, 1, 3, 2.0)] {
            busy.span(n, a * s, b * s, c);
            held.span(n, a * s, b * s, c);
        }
        for _ in 0..100 {
            // Enough cancelling pairs at one instant to trigger compaction.
            held.change(1, 3 * s, 1.0);
            held.change(1, 3 * s, -1.0);
        }
        let keys = [
            ("n0".to_string(), 8.0, vec![0]),
            ("n1".to_string(), 8.0, vec![1]),
            ("both".to_string(), 16.0, vec![0, 1]),
        ];
        let r = busy.finish_cpus(&mut held, &keys, 4 * s);
        assert!((r["n0"].busy_fraction - 16.0 / 32.0).abs() < 1e-12);
        assert!((r["n1"].busy_fraction - 4.0 / 32.0).abs() < 1e-12);
        assert!((r["both"].busy_fraction - 20.0 / 64.0).abs() < 1e-12);
        assert!((r["both"].allocated_fraction - 20.0 / 64.0).abs() < 1e-12);
        assert_eq!(r["n0"].busy_series, vec![(0.0, 4.0), (4.0, 0.0)]);
        assert_eq!(
            r["n1"].allocated_series,
            vec![(0.0, 0.0), (1.0, 2.0), (3.0, 0.0)]
        );
    }
}
