//! Flow-level bandwidth sharing: max-min fairness over directed links (progressive filling),
//! recomputed incrementally when a flow starts or ends or a link changes capacity.
//!
//! Model (SimGrid's CM02 flow model without corrections; shared/reference/
//! hardware-and-models.md "Flow-level network models"): every active flow gets the max-min fair
//! rate over the links of its path; a flow's latency is paid before it joins the sharing (the
//! caller delays `add`). Rates are exact textbook max-min (checked against an independent full
//! recomputation in tests/all/maxmin.rs); any efficiency factor is the caller's to apply to
//! capacities.
//!
//! How it stays fast under heavy concurrency (thousands of flows on a saturated spine, every
//! event moving the rate of hundreds):
//! - flows that froze together at one link share one rate ([`classes`](super::classes)): a
//!   rate change is O(1) per class, and each class keeps its members' finishes on its own
//!   clock, so one queued finish per class stands for all of them;
//! - the filling runs only over *tracked* links; the others are *slack*, their loads kept
//!   exactly and checked after each filling — a slack link over capacity becomes tracked and
//!   the filling is redone from it ([`filling`](super::filling));
//! - a change replays the filling only from the level below which it provably moves nothing,
//!   over the classes and links it actually disturbs.
//!
//! Each link's peak utilization is read at the end of every change from its exact load
//! ([`FlowNet::peak_utilization`]).
//!
//! Architecture invariant: no time here beyond the byte accounting the caller drives with
//! [`FlowNet::advance`]; the engine owns the clock.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::classes::{Class, NONE};
use super::filling::{Region, SolverStats};
use super::link_lists::LinkLists;
use super::rebuild::Rebuild;

/// Index of a directed link.
pub type LinkId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowId(pub u32);

#[derive(Debug, Clone, Default)]
pub(super) struct Flow {
    /// Distinct links of the path with how many times it crosses each, in path order.
    pub links: Vec<(u32, u32)>,
    /// Position in its class's member list.
    pub slot: u32,
    /// Bytes its class must have served when it is done (see [`Class::served_at`]).
    pub key: f64,
    /// Bumped whenever it leaves a class: older entries in class heaps are stale.
    pub version: u32,
    /// Position in [`FlowNet::live`].
    pub live_pos: u32,
    pub alive: bool,
}

/// Active flows over links of given capacities (bytes per second).
#[derive(Debug, Clone, Default)]
pub struct FlowNet {
    pub(super) capacity: Vec<f64>,
    pub(super) flows: Vec<Flow>,
    /// Each flow's class, apart from [`Flow`] so a link's flows are scanned densely.
    pub(super) class_of: Vec<u32>,
    free: Vec<u32>,
    /// Every active flow, densely (a rebuild refills them all).
    pub(super) live: Vec<u32>,
    pub(super) classes: Vec<Class>,
    pub(super) free_classes: Vec<u32>,
    /// Active flows crossing each link (once each).
    pub(super) on_link: LinkLists<u32>,
    /// Crossings of each link by active flows (a path through it twice counts twice).
    pub(super) crossings: Vec<u32>,
    /// Whether a link takes part in the filling.
    pub(super) tracked: Vec<bool>,
    /// Classes crossing each tracked link with their crossings.
    pub(super) classes_on: LinkLists<(u32, u32)>,
    /// Load of each link (sums of rate changes: exact up to rounding, resummed when a link
    /// changes kind or capacity, reset when it empties).
    pub(super) load: Vec<f64>,
    /// An upper bound on the rate of any class crossing each tracked link.
    pub(super) fastest: Vec<f64>,
    /// Classes bottlenecked at each link.
    pub(super) held: LinkLists<u32>,

    /// Highest load ÷ capacity each link has carried so far.
    pub(super) peak: Vec<f64>,
    alive: usize,
    // Scratch state, kept to avoid allocating per event. Marks hold the epoch (never reused:
    // u64) of the pass that set them.
    pub(super) mark_link: Vec<u64>,
    /// Position of each link in the region being refilled.
    pub(super) link_pos: Vec<usize>,
    pub(super) epoch: u64,
    /// Epoch of the current public operation (dirty classes, touched links).
    pub(super) op: u64,
    pub(super) region: Region,
    pub(super) stats: SolverStats,
    pub(super) scratch: Rebuild,
    /// A refill's inputs: classes of new flows, and links whose load or capacity changed
    /// (with whether every flow on them may move, not only those bottlenecked there).
    pub(super) seeds: Vec<u32>,
    /// A batch's new flows with their bytes.
    fresh: Vec<(u32, f64)>,
    pub(super) seed_links: Vec<(LinkId, bool)>,
    /// Links whose load changed in this operation (their peaks are read at its end).
    pub(super) touched: Vec<u32>,
    pub(super) touch_mark: Vec<u64>,
    /// Classes whose next finish must be queued again at the end of this operation.
    pub(super) dirty: Vec<u32>,
    /// The network's clock (seconds of [`FlowNet::advance`]).
    pub(super) now: f64,
    /// Queued class finishes: (seconds as bits, first member, class, class version).
    finishes: BinaryHeap<Reverse<(u64, u32, u32, u32)>>,
}

/// Record that link `l`'s load changed in operation `op` (once per operation), for code
/// holding a class borrowed that cannot call [`FlowNet::touch`].
pub(super) fn touch(mark: &mut [u64], touched: &mut Vec<u32>, op: u64, l: LinkId) {
    if mark[l] != op {
        mark[l] = op;
        touched.push(l as u32);
    }
}

/// A flow's bytes below this count as done (rounding of `advance`).
const DONE: f64 = 1e-6;

/// A batch of at least this many flows, and at least four times as many as are active
/// already, is filled from scratch ([`super::rebuild`]): it would disturb most of the network
/// anyway, and one pass over its links beats rounds of incremental refills. (At one times,
/// `orrery bench --contention` took 49 s against 36–38 s: its rings' rounds of 128+ flows
/// then rebuilt a network of a few thousand flows too often.)
const REBUILD_BATCH: usize = 16;

/// Heap bytes each link takes in a [`FlowNet`] at least: one element of each per-link vector
/// [`FlowNet::new`] fills, a link's lists only their slots (none is made before a flow
/// crosses it; `sim::estimate` counts links so).
pub const BYTES_PER_LINK: usize = 4 * std::mem::size_of::<f64>() // capacity, load, fastest, peak
    + 3 * LinkLists::<u32>::BYTES_PER_LINK // on_link, classes_on, held
    + std::mem::size_of::<u32>() // crossings
    + std::mem::size_of::<bool>() // tracked
    + 2 * std::mem::size_of::<u64>() // mark_link, touch_mark
    + std::mem::size_of::<usize>(); // link_pos

impl FlowNet {
    pub fn new(capacities: Vec<f64>) -> Self {
        let n = capacities.len();
        FlowNet {
            capacity: capacities,
            on_link: LinkLists::new(n),
            crossings: vec![0; n],
            tracked: vec![false; n],
            classes_on: LinkLists::new(n),
            load: vec![0.0; n],
            fastest: vec![0.0; n],
            held: LinkLists::new(n),
            peak: vec![0.0; n],
            mark_link: vec![0; n],
            link_pos: vec![0; n],
            touch_mark: vec![0; n],
            ..FlowNet::default()
        }
    }

    /// What the solver has done so far (counts, for benchmarks).
    pub fn solver_stats(&self) -> SolverStats {
        self.stats
    }

    pub fn links(&self) -> usize {
        self.capacity.len()
    }

    pub fn capacity(&self, l: LinkId) -> f64 {
        self.capacity[l]
    }

    /// The highest utilization (load ÷ capacity, at most 1) link `l` has had since the network
    /// was made. Exact: a load changes only in an operation (add, remove, capacity change),
    /// and at the end of each every link whose load changed is read from its exact load.
    /// A link of capacity 0 reads 0.
    pub fn peak_utilization(&self, l: LinkId) -> f64 {
        self.peak[l]
    }

    /// Start a flow of `bytes` over `path` (links may repeat; an empty path is unconstrained
    /// and gets an infinite rate). Rates of its component are recomputed.
    pub fn add(&mut self, path: Vec<LinkId>, bytes: f64) -> FlowId {
        self.add_batch([(path, bytes)])[0]
    }

    /// Start many flows at once with a single recomputation (flows that start together).
    /// A batch of [`REBUILD_BATCH`] or more, at least 4× as many as are active, is filled from
    /// scratch ([`super::rebuild`]); a smaller one is refilled incrementally.
    pub fn add_batch(
        &mut self,
        flows: impl IntoIterator<Item = (Vec<LinkId>, f64)>,
    ) -> Vec<FlowId> {
        self.begin_op();
        let before = self.alive;
        let mut fresh = std::mem::take(&mut self.fresh);
        fresh.clear();
        for (path, bytes) in flows {
            let id = self.register(&path);
            fresh.push((id, bytes.max(0.0)));
        }
        let ids: Vec<FlowId> = fresh.iter().map(|&(id, _)| FlowId(id)).collect();
        let rebuild = fresh.len() >= REBUILD_BATCH.max(4 * before);
        for &(id, bytes) in &fresh {
            if self.flows[id as usize].links.is_empty() {
                let c = self.new_class();
                self.classes[c as usize].rate = f64::INFINITY;
                self.join_class(c, id, bytes);
            } else if !rebuild {
                self.track_tightest(id);
                let c = self.new_class();
                self.seeds.push(c);
                self.join_class(c, id, bytes);
            }
        }
        if rebuild {
            self.rebuild(&fresh);
            self.fresh = fresh;
            // Only the slack links' feasibility is left to check (rounding).
            self.settle(f64::INFINITY);
            self.end_op();
            return ids;
        }
        self.fresh = fresh;
        let floor = ids
            .iter()
            .map(|f| self.rate_floor(f.0))
            .fold(f64::INFINITY, f64::min);
        if floor.is_finite() {
            self.settle(floor);
        }
        self.end_op();
        ids
    }

    /// A new flow over `path`, on its links but in no class yet.
    fn register(&mut self, path: &[LinkId]) -> u32 {
        // Distinct links with their crossings, in path order: a fresh epoch marks the links
        // seen so far (a ring's chain crosses hundreds of links).
        let seen = self.next_epoch();
        let mut links: Vec<(u32, u32)> = Vec::with_capacity(path.len());
        for &l in path {
            if self.mark_link[l] == seen {
                if let Some(e) = links.iter_mut().find(|e| e.0 == l as u32) {
                    e.1 += 1;
                }
            } else {
                self.mark_link[l] = seen;
                links.push((l as u32, 1));
            }
        }
        let id = match self.free.pop() {
            Some(i) => i,
            None => {
                self.flows.push(Flow::default());
                self.class_of.push(NONE);
                (self.flows.len() - 1) as u32
            }
        };
        for &(l, m) in &links {
            self.crossings[l as usize] += m;
            self.on_link[l as usize].push(id);
        }
        let f = &mut self.flows[id as usize];
        f.links = links;
        f.alive = true;
        f.live_pos = self.live.len() as u32;
        self.live.push(id);
        self.alive += 1;
        id
    }

    /// A path over slack links only would have nothing to fill against: its tightest link
    /// (least capacity per crossing so far) joins the filling (the allocation is still
    /// max-min with it, being feasible).
    fn track_tightest(&mut self, id: u32) {
        let f = &self.flows[id as usize];
        if f.links.is_empty() || f.links.iter().any(|&(l, _)| self.tracked[l as usize]) {
            return;
        }
        let share = |l: u32| self.capacity[l as usize] / f64::from(self.crossings[l as usize]);
        let tightest = f
            .links
            .iter()
            .map(|&(l, _)| l)
            .min_by(|&a, &b| share(a).total_cmp(&share(b)).then(a.cmp(&b)))
            .expect("non-empty path");
        self.promote(tightest as usize);
    }

    /// Remove a flow (finished or cancelled); the rates it disturbs are recomputed.
    pub fn remove(&mut self, f: FlowId) {
        self.remove_batch(&[f]);
    }

    /// Remove many flows with a single recomputation (flows that finish together).
    pub fn remove_batch(&mut self, flows: &[FlowId]) {
        self.begin_op();
        let mut floor = f64::INFINITY;
        for &f in flows {
            let i = f.0 as usize;
            if !self.flows.get(i).is_some_and(|x| x.alive) {
                continue;
            }
            let c = self.class_of[i] as usize;
            floor = floor.min(self.classes[c].rate);
            self.leave_class(f.0);
            let links = std::mem::take(&mut self.flows[i].links);
            for &(l, m) in &links {
                let l = l as usize;
                self.crossings[l] -= m;
                if self.crossings[l] == 0 {
                    self.load[l] = 0.0;
                }
                if let Some(k) = self.on_link[l].iter().position(|x| *x == f.0) {
                    self.on_link[l].swap_remove(k);
                }
                if self.tracked[l] {
                    self.seed_links.push((l, false));
                }
            }
            let fl = &mut self.flows[i];
            fl.links = links;
            fl.links.clear();
            fl.alive = false;
            let pos = fl.live_pos as usize;
            self.live.swap_remove(pos);
            if let Some(&moved) = self.live.get(pos) {
                self.flows[moved as usize].live_pos = pos as u32;
            }
            self.class_of[i] = NONE;
            self.free.push(f.0);
            self.alive -= 1;
        }
        if floor.is_finite() {
            self.settle(floor);
        }
        self.end_op();
    }

    /// Change a link's capacity (failure, degradation, repair).
    pub fn set_capacity(&mut self, l: LinkId, capacity: f64) {
        self.begin_op();
        // The allocation is max-min with the link tracked (slack links are feasible).
        self.promote(l);
        let old = std::mem::replace(&mut self.capacity[l], capacity.max(0.0));
        self.seed_links.push((l, true));
        self.touch(l);
        let floor = old.min(self.capacity[l]) / f64::from(self.crossings[l].max(1));
        self.settle(floor);
        self.end_op();
    }

    pub fn rate(&self, f: FlowId) -> f64 {
        match self.flows.get(f.0 as usize) {
            Some(x) if x.alive => self.classes[self.class_of[f.0 as usize] as usize].rate,
            _ => 0.0,
        }
    }

    pub fn remaining(&self, f: FlowId) -> f64 {
        match self.flows.get(f.0 as usize) {
            Some(x) if x.alive => self.left_of(f.0),
            _ => 0.0,
        }
    }

    pub fn active(&self) -> impl Iterator<Item = FlowId> + '_ {
        self.flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.alive)
            .map(|(i, _)| FlowId(i as u32))
    }

    /// Sum of the rates of the flows on a link, a path through it twice counted twice (never
    /// above its capacity).
    pub fn load(&self, l: LinkId) -> f64 {
        self.on_link[l]
            .iter()
            .map(|&f| {
                let m = self.multiplicity(f as usize, l);
                self.classes[self.class_of[f as usize] as usize].rate * f64::from(m)
            })
            .sum()
    }

    /// Move the network's clock forward by `secs`: every active flow progresses at its
    /// current rate. O(1): bytes are settled lazily when a rate changes.
    pub fn advance(&mut self, secs: f64) {
        if secs > 0.0 {
            self.now += secs;
        }
    }

    /// The flow that finishes first at current rates, and in how many seconds (ties: lowest
    /// id, for determinism). Each class queues its first finish; entries of classes whose
    /// rate or members changed since are skipped (their version moved on), so this is
    /// O(log n) amortised. Kept out of line (one call per event) so profiles see the
    /// solver's whole cost in its own functions.
    #[inline(never)]
    pub fn next_completion(&mut self) -> Option<(FlowId, f64)> {
        while let Some(&Reverse((t, id, c, version))) = self.finishes.peek() {
            let k = &self.classes[c as usize];
            if !k.alive || k.version != version {
                self.finishes.pop();
                continue;
            }
            let dt = (f64::from_bits(t) - self.now).max(0.0);
            let dt = if self.left_of(id) <= DONE { 0.0 } else { dt };
            return Some((FlowId(id), dt));
        }
        None
    }

    /// Every flow done by now at current rates — those [`FlowNet::next_completion`] would
    /// report with 0 s one after another — pushed to `out` in finish order (ties: lowest id)
    /// and taken off the finish queue, for the caller to remove together with
    /// [`FlowNet::remove_batch`]: one recomputation for flows that finish together instead of
    /// one each (removing them one by one leaves the others' remaining bytes, so which are
    /// done, unchanged). A flow taken here and not removed never completes.
    pub fn take_finished(&mut self, out: &mut Vec<FlowId>) {
        while let Some((f, dt)) = self.next_completion() {
            if dt > 0.0 {
                break;
            }
            self.finishes.pop();
            let c = self.class_of[f.0 as usize];
            // The member leaves its class's queue (it stays a member until removed).
            self.classes[c as usize].heap.pop();
            out.push(f);
            self.queue_finish(c);
        }
    }

    /// Bytes a flow has left now.
    pub(super) fn left_of(&self, f: u32) -> f64 {
        let c = &self.classes[self.class_of[f as usize] as usize];
        if c.rate.is_infinite() {
            return 0.0;
        }
        (self.flows[f as usize].key - c.served_at(self.now)).max(0.0)
    }

    pub(super) fn next_epoch(&mut self) -> u64 {
        self.epoch += 1;
        self.epoch
    }

    fn begin_op(&mut self) {
        self.op = self.next_epoch();
        self.seeds.clear();
        self.seed_links.clear();
        self.touched.clear();
        self.dirty.clear();
    }

    /// Read the peaks of every link whose load changed, queue the changed classes' finishes.
    fn end_op(&mut self) {
        for k in 0..self.touched.len() {
            let l = self.touched[k] as usize;
            let cap = self.capacity[l];
            // (Divide only for a new peak.)
            if cap > 0.0 && self.load[l] > self.peak[l] * cap {
                let u = self.load[l] / cap;
                // A saturated link's load is its capacity up to the rounding of the shares.
                let u = if u >= 1.0 - 1e-9 { 1.0 } else { u };
                if u > self.peak[l] {
                    self.peak[l] = u;
                }
            }
            if self.tracked[l] {
                self.demote_if_idle(l);
            }
        }
        for k in 0..self.dirty.len() {
            let c = self.dirty[k];
            self.queue_finish(c);
        }
    }

    /// A tracked link's load from its classes (what the kept sum approximates).
    pub(super) fn exact_load(&self, l: LinkId) -> f64 {
        self.classes_on[l]
            .iter()
            .map(|&(c, m)| self.classes[c as usize].rate * f64::from(m))
            .sum()
    }

    pub(super) fn touch(&mut self, l: LinkId) {
        touch(&mut self.touch_mark, &mut self.touched, self.op, l);
    }

    pub(super) fn mark_dirty(&mut self, c: u32) {
        let k = &mut self.classes[c as usize];
        if k.dirty != self.op {
            k.dirty = self.op;
            self.dirty.push(c);
        }
    }

    /// Queue a class's next finish (its first member at its rate), superseding older entries.
    fn queue_finish(&mut self, c: u32) {
        let flows = &self.flows;
        let class_of = &self.class_of;
        let k = &mut self.classes[c as usize];
        k.version = k.version.wrapping_add(1);
        if !k.alive {
            return;
        }
        let valid = |&Reverse((_, f, v)): &Reverse<(u64, u32, u32)>| {
            flows[f as usize].alive && class_of[f as usize] == c && flows[f as usize].version == v
        };
        while let Some(top) = k.heap.peek() {
            if valid(top) {
                break;
            }
            k.heap.pop();
        }
        if k.heap.len() > 2 * k.members.len() + 16 {
            k.heap.retain(valid);
        }
        let Some(&Reverse((key, f, _))) = k.heap.peek() else {
            return;
        };
        if k.rate <= 0.0 {
            return;
        }
        let finish = if k.rate.is_infinite() {
            self.now
        } else {
            k.since + (f64::from_bits(key) - k.served) / k.rate
        };
        self.finishes
            .push(Reverse((finish.max(0.0).to_bits(), f, c, k.version)));
        // Superseded entries are skipped lazily; drop them when they dominate, so the heap
        // stays O(classes) however many times rates change.
        if self.finishes.len() > 4 * (self.classes.len() - self.free_classes.len()) + 1024 {
            let classes = &self.classes;
            self.finishes.retain(|Reverse((_, _, c, v))| {
                classes[*c as usize].alive && classes[*c as usize].version == *v
            });
        }
    }

    /// A lower bound on the max-min rate of flow `f`: on every tracked link it is at least
    /// the capacity over the crossings there (a link saturates no earlier than that level).
    fn rate_floor(&self, f: u32) -> f64 {
        self.flows[f as usize]
            .links
            .iter()
            .filter(|&&(l, _)| self.tracked[l as usize])
            .map(|&(l, _)| self.capacity[l as usize] / f64::from(self.crossings[l as usize].max(1)))
            .fold(f64::INFINITY, f64::min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn equal_shares_on_one_link() {
        let mut n = FlowNet::new(vec![10.0]);
        let a = n.add(vec![0], 100.0);
        assert!(close(n.rate(a), 10.0));
        let b = n.add(vec![0], 100.0);
        assert!(close(n.rate(a), 5.0) && close(n.rate(b), 5.0));
        n.remove(a);
        assert!(close(n.rate(b), 10.0));
    }

    #[test]
    fn completion_times_follow_the_shares() {
        // 10 and 20 bytes on a 10 B/s link: both at 5 until t = 2, then 10 B/s: t = 3.
        let mut n = FlowNet::new(vec![10.0]);
        let a = n.add(vec![0], 10.0);
        let b = n.add(vec![0], 20.0);
        let (f, t) = n.next_completion().unwrap();
        assert_eq!((f, t), (a, 2.0));
        n.advance(t);
        n.remove(a);
        let (f, t) = n.next_completion().unwrap();
        assert_eq!(f, b);
        assert!(close(t, 1.0));
    }
}
