//! Flow-level bandwidth sharing: max-min fairness over directed links (progressive filling),
//! recomputed incrementally when a flow starts or ends or a link changes capacity.
//!
//! Model (SimGrid's CM02 flow model without corrections; shared/reference/
//! hardware-and-models.md "Flow-level network models"): every active flow gets the max-min fair
//! rate over the links of its path; a flow's latency is paid before it joins the sharing (the
//! caller delays `add`). Incremental update: a change refills only the flows whose bottleneck
//! it may break, the rest held fixed, and pulls in each flow the new rates disturb until every
//! flow has a bottleneck again (see `refill`) — on a 1,000-node fat-tree with 10,000 flows a
//! completion touches a few dozen flows instead of the thousands connected through the spines.
//! Rates are exact textbook max-min (checked against a full recomputation in tests/maxmin.rs);
//! any efficiency factor is the caller's to apply to capacities.
//!
//! Architecture invariant: no time here beyond the byte accounting the caller drives with
//! [`FlowNet::advance`]; the engine owns the clock.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Index of a directed link.
pub type LinkId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowId(pub u32);

#[derive(Debug, Clone)]
struct Flow {
    path: Vec<LinkId>,
    /// Bytes left at time `since` (the network's clock when the rate last changed).
    remaining: f64,
    since: f64,
    rate: f64,
    /// Bumped whenever the rate changes or the flow ends: older queued finishes are stale.
    version: u32,
    /// The path crosses no link twice (the common case: multiplicity is 1 everywhere).
    simple: bool,
    /// The link the flow froze at in its last refill (its max-min bottleneck), or [`NONE`].
    bottleneck: u32,
    alive: bool,
}

const NONE: u32 = u32::MAX;
/// Rounds of growing the refilled set before refilling the whole component instead.
const MAX_ROUNDS: usize = 16;

/// How many times a flow's path crosses a link (1 unless the path repeats links).
fn multiplicity(f: &Flow, l: LinkId) -> f64 {
    if f.simple {
        1.0
    } else {
        f.path.iter().filter(|x| **x == l).count() as f64
    }
}

/// Active flows over links of given capacities (bytes per second).
#[derive(Debug, Clone, Default)]
pub struct FlowNet {
    capacity: Vec<f64>,
    flows: Vec<Flow>,
    free: Vec<u32>,
    /// Active flows crossing each link.
    on_link: Vec<Vec<u32>>,
    // Scratch state for refilling, kept to avoid allocating per event. Marks hold the epoch
    // (never reused: u64) of the pass that set them.
    mark_flow: Vec<u64>,
    frozen_flow: Vec<u64>,
    mark_link: Vec<u64>,
    /// Position of each link in the set being refilled.
    link_pos: Vec<usize>,
    epoch: u64,
    comp_links: Vec<LinkId>,
    left: Vec<f64>,
    unfrozen: Vec<u32>,
    heap: BinaryHeap<Reverse<(u64, LinkId)>>,
    froze_at: Vec<(LinkId, f64)>,
    seeds: Vec<u32>,
    inside: Vec<u32>,
    violators: Vec<u32>,
    /// The network's clock (seconds of [`FlowNet::advance`]).
    now: f64,
    /// Queued finish times: (seconds as bits, flow, flow version).
    finishes: BinaryHeap<Reverse<(u64, u32, u32)>>,
}

/// A flow's bytes below this count as done (rounding of `advance`).
const DONE: f64 = 1e-6;

impl FlowNet {
    pub fn new(capacities: Vec<f64>) -> Self {
        let n = capacities.len();
        FlowNet {
            capacity: capacities,
            on_link: vec![Vec::new(); n],
            mark_link: vec![0; n],
            link_pos: vec![0; n],
            ..FlowNet::default()
        }
    }

    pub fn links(&self) -> usize {
        self.capacity.len()
    }

    pub fn capacity(&self, l: LinkId) -> f64 {
        self.capacity[l]
    }

    /// Start a flow of `bytes` over `path` (links may repeat; an empty path is unconstrained
    /// and gets an infinite rate). Rates of its component are recomputed.
    pub fn add(&mut self, path: Vec<LinkId>, bytes: f64) -> FlowId {
        self.add_batch([(path, bytes)])[0]
    }

    /// Start many flows at once with a single recomputation (flows that start together).
    pub fn add_batch(
        &mut self,
        flows: impl IntoIterator<Item = (Vec<LinkId>, f64)>,
    ) -> Vec<FlowId> {
        let mut ids = Vec::new();
        for (path, bytes) in flows {
            let f = Flow {
                path,
                remaining: bytes.max(0.0),
                since: self.now,
                rate: 0.0,
                version: 0,
                simple: true,
                bottleneck: NONE,
                alive: true,
            };
            let id = match self.free.pop() {
                Some(i) => {
                    let version = self.flows[i as usize].version.wrapping_add(1);
                    self.flows[i as usize] = Flow { version, ..f };
                    i
                }
                None => {
                    self.flows.push(f);
                    self.mark_flow.push(0);
                    self.frozen_flow.push(0);
                    (self.flows.len() - 1) as u32
                }
            };
            if self.flows[id as usize].path.is_empty() {
                self.set_rate(id as usize, f64::INFINITY);
            }
            let mut links = self.flows[id as usize].path.clone();
            links.sort_unstable();
            links.dedup();
            self.flows[id as usize].simple = links.len() == self.flows[id as usize].path.len();
            for &l in &links {
                self.on_link[l].push(id);
            }
            ids.push(FlowId(id));
        }
        let mut seeds = std::mem::take(&mut self.seeds);
        seeds.clear();
        seeds.extend(ids.iter().map(|f| f.0));
        self.refill(seeds);
        ids
    }

    /// Remove a flow (finished or cancelled); its component is recomputed.
    pub fn remove(&mut self, f: FlowId) {
        let i = f.0 as usize;
        if !self.flows.get(i).is_some_and(|x| x.alive) {
            return;
        }
        self.flows[i].alive = false;
        self.flows[i].version = self.flows[i].version.wrapping_add(1);
        let mut links = std::mem::take(&mut self.flows[i].path);
        links.sort_unstable();
        links.dedup();
        for &l in &links {
            self.on_link[l].retain(|x| *x != f.0);
        }
        self.free.push(f.0);
        // Only flows bottlenecked where the removed one ran can gain directly; the refill's
        // checks pull in whoever else its changes reach.
        let mut seeds = std::mem::take(&mut self.seeds);
        seeds.clear();
        for &l in &links {
            for &g in &self.on_link[l] {
                if self.flows[g as usize].bottleneck == l as u32 {
                    seeds.push(g);
                }
            }
        }
        self.refill(seeds);
    }

    /// Change a link's capacity (failure, degradation, repair).
    pub fn set_capacity(&mut self, l: LinkId, capacity: f64) {
        self.capacity[l] = capacity.max(0.0);
        let mut seeds = std::mem::take(&mut self.seeds);
        seeds.clear();
        seeds.extend_from_slice(&self.on_link[l]);
        self.refill(seeds);
    }

    pub fn rate(&self, f: FlowId) -> f64 {
        self.flows
            .get(f.0 as usize)
            .filter(|x| x.alive)
            .map(|x| x.rate)
            .unwrap_or(0.0)
    }

    pub fn remaining(&self, f: FlowId) -> f64 {
        self.flows
            .get(f.0 as usize)
            .filter(|x| x.alive)
            .map(|x| self.left_of(x))
            .unwrap_or(0.0)
    }

    pub fn active(&self) -> impl Iterator<Item = FlowId> + '_ {
        self.flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.alive)
            .map(|(i, _)| FlowId(i as u32))
    }

    /// Sum of the rates of the flows on a link (never above its capacity).
    pub fn load(&self, l: LinkId) -> f64 {
        self.on_link[l]
            .iter()
            .map(|f| self.flows[*f as usize].rate)
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
    /// id, for determinism). Finish times wait in a heap; entries of flows whose rate changed
    /// since are skipped (their version moved on), so this is O(log n) amortised.
    pub fn next_completion(&mut self) -> Option<(FlowId, f64)> {
        while let Some(&Reverse((t, id, version))) = self.finishes.peek() {
            let f = &self.flows[id as usize];
            if !f.alive || f.version != version {
                self.finishes.pop();
                continue;
            }
            let dt = (f64::from_bits(t) - self.now).max(0.0);
            let dt = if self.left_of(f) <= DONE { 0.0 } else { dt };
            return Some((FlowId(id), dt));
        }
        None
    }

    /// Bytes a flow has left now.
    fn left_of(&self, f: &Flow) -> f64 {
        if f.rate.is_infinite() {
            return 0.0;
        }
        (f.remaining - f.rate * (self.now - f.since)).max(0.0)
    }

    /// Give a flow a new rate: settle its bytes at the old one and queue its new finish.
    fn set_rate(&mut self, i: usize, rate: f64) {
        if self.flows[i].rate == rate {
            return;
        }
        let left = self.left_of(&self.flows[i]);
        let now = self.now;
        let f = &mut self.flows[i];
        f.remaining = left;
        f.since = now;
        f.rate = rate;
        f.version = f.version.wrapping_add(1).max(1);
        if rate > 0.0 {
            let finish = if rate.is_infinite() {
                now
            } else {
                now + left / rate
            };
            self.finishes
                .push(Reverse((finish.max(0.0).to_bits(), i as u32, f.version)));
        }
    }

    fn next_epoch(&mut self) -> u64 {
        self.epoch += 1;
        self.epoch
    }

    /// Recompute max-min rates after a change, starting from `seeds` — the flows whose
    /// bottleneck the change may have broken — and growing that set until every flow has a
    /// bottleneck again.
    ///
    /// Why this is exact: an allocation is max-min fair iff every flow crosses a saturated
    /// link on which no flow gets more (its bottleneck; Bertsekas & Gallager, "Data Networks",
    /// §6.5.2), and that allocation is unique. The set is refilled by progressive filling with
    /// every other flow's rate held fixed; then two checks find the flows whose bottleneck the
    /// new rates broke: (a) an outside flow faster than the share at which a link of the set
    /// saturated (it must slow down), and (b) an outside flow whose recorded bottleneck is a
    /// link of the set that is no longer saturated, or where it is no longer the fastest.
    /// Flows on no link of the set kept every link's load, so their bottlenecks hold. When no
    /// check fires, every flow has a bottleneck: the allocation is the max-min one. If the set
    /// keeps growing past [`MAX_ROUNDS`], the whole connected component (transitively through
    /// shared links) is refilled at once, which has no outside flow to check.
    fn refill(&mut self, seeds: Vec<u32>) {
        let set = self.next_epoch();
        let mut inside = std::mem::take(&mut self.inside);
        inside.clear();
        for &f in &seeds {
            let fl = &self.flows[f as usize];
            if fl.alive && !fl.path.is_empty() && self.mark_flow[f as usize] != set {
                self.mark_flow[f as usize] = set;
                inside.push(f);
            }
        }
        self.seeds = seeds;
        for round in 1.. {
            if inside.is_empty() {
                break;
            }
            if round > MAX_ROUNDS {
                self.close_component(&mut inside, set);
                self.fill(&inside, set);
                break;
            }
            self.fill(&inside, set);
            if self.violators.is_empty() {
                break;
            }
            for &g in &self.violators {
                if self.mark_flow[g as usize] != set {
                    self.mark_flow[g as usize] = set;
                    inside.push(g);
                }
            }
        }
        self.inside = inside;
    }

    /// Grow `inside` to every flow connected to it through shared links.
    fn close_component(&mut self, inside: &mut Vec<u32>, set: u64) {
        let seen = self.next_epoch();
        let mut k = 0;
        while k < inside.len() {
            let f = inside[k] as usize;
            k += 1;
            for m in 0..self.flows[f].path.len() {
                let l = self.flows[f].path[m];
                if self.mark_link[l] == seen {
                    continue;
                }
                self.mark_link[l] = seen;
                for &g in &self.on_link[l] {
                    if self.mark_flow[g as usize] != set {
                        self.mark_flow[g as usize] = set;
                        inside.push(g);
                    }
                }
            }
        }
    }

    /// Progressive filling of the flows in `inside` (marked `set`), every other flow's rate
    /// fixed. Leaves in `self.violators` the outside flows whose bottleneck the new rates broke
    /// (see [`refill`]).
    ///
    /// Links wait in a min-heap keyed by (fair share, link id) — ties go to the lowest link id.
    /// Shares only grow as flows freeze, so every queued key is at most its link's current
    /// share: a popped key equal to the share is the true minimum, a smaller one is re-queued
    /// at the share (lazy updates: freezing a flow touches its links' counters, not the heap).
    fn fill(&mut self, inside: &[u32], set: u64) {
        let lk = self.next_epoch();
        let mut comp_links = std::mem::take(&mut self.comp_links);
        comp_links.clear();
        for &f in inside {
            for &l in &self.flows[f as usize].path {
                if self.mark_link[l] != lk {
                    self.mark_link[l] = lk;
                    self.link_pos[l] = comp_links.len();
                    comp_links.push(l);
                }
            }
        }
        // Capacity left by the fixed flows, and how many flows of the set share each link.
        let mut left = std::mem::take(&mut self.left);
        let mut unfrozen = std::mem::take(&mut self.unfrozen);
        left.clear();
        unfrozen.clear();
        for &l in &comp_links {
            let (mut cap, mut n) = (self.capacity[l], 0u32);
            for &f in &self.on_link[l] {
                let fl = &self.flows[f as usize];
                if self.mark_flow[f as usize] == set {
                    n += multiplicity(fl, l) as u32;
                } else {
                    cap -= fl.rate * multiplicity(fl, l);
                }
            }
            left.push(cap);
            unfrozen.push(n);
        }
        let key = |x: f64| x.max(0.0).to_bits();
        let mut heap = std::mem::take(&mut self.heap);
        heap.clear();
        heap.extend(
            comp_links
                .iter()
                .enumerate()
                .filter(|(i, _)| unfrozen[*i] > 0)
                .map(|(i, &l)| Reverse((key(left[i] / f64::from(unfrozen[i])), l))),
        );
        let frozen = self.next_epoch();
        let mut froze_at = std::mem::take(&mut self.froze_at);
        froze_at.clear();
        let mut to_freeze = inside.len();
        while to_freeze > 0
            && let Some(Reverse((k, l))) = heap.pop()
        {
            let i = self.link_pos[l];
            if unfrozen[i] == 0 {
                continue;
            }
            let share = left[i] / f64::from(unfrozen[i]);
            if key(share) != k {
                heap.push(Reverse((key(share), l)));
                continue;
            }
            let share = share.max(0.0);
            froze_at.push((l, share));
            for n in 0..self.on_link[l].len() {
                let f = self.on_link[l][n] as usize;
                if self.mark_flow[f] != set || self.frozen_flow[f] == frozen {
                    continue;
                }
                self.frozen_flow[f] = frozen;
                to_freeze -= 1;
                self.set_rate(f, share);
                self.flows[f].bottleneck = l as u32;
                for m in 0..self.flows[f].path.len() {
                    let l2 = self.flows[f].path[m];
                    let i2 = self.link_pos[l2];
                    // A path crossing a link twice loads it twice: it counts twice in the
                    // link's share (`unfrozen` counts crossings).
                    left[i2] -= share;
                    unfrozen[i2] -= 1;
                }
            }
        }
        // The checks.
        let flagged = self.next_epoch();
        let mut violators = std::mem::take(&mut self.violators);
        violators.clear();
        let tol = |x: f64| x * (1.0 + 1e-9) + 1e-300;
        for &(l, share) in &froze_at {
            for &g in &self.on_link[l] {
                let gi = g as usize;
                if self.mark_flow[gi] != set
                    && self.frozen_flow[gi] != flagged
                    && self.flows[gi].rate > tol(share)
                {
                    self.frozen_flow[gi] = flagged;
                    violators.push(g);
                }
            }
        }
        for &l in &comp_links {
            let mut stats: Option<(f64, f64)> = None;
            for n in 0..self.on_link[l].len() {
                let gi = self.on_link[l][n] as usize;
                if self.mark_flow[gi] == set
                    || self.frozen_flow[gi] == flagged
                    || self.flows[gi].bottleneck != l as u32
                {
                    continue;
                }
                let (load, max) = *stats.get_or_insert_with(|| {
                    self.on_link[l].iter().fold((0.0, 0.0), |(s, m), &h| {
                        let fl = &self.flows[h as usize];
                        (s + fl.rate * multiplicity(fl, l), f64::max(m, fl.rate))
                    })
                });
                let saturated = tol(load) >= self.capacity[l] * (1.0 - 1e-9);
                if !saturated || tol(self.flows[gi].rate) < max {
                    self.frozen_flow[gi] = flagged;
                    violators.push(gi as u32);
                }
            }
        }
        self.comp_links = comp_links;
        self.left = left;
        self.unfrozen = unfrozen;
        self.heap = heap;
        self.froze_at = froze_at;
        self.violators = violators;
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
