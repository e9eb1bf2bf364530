//! Flow-level bandwidth sharing: max-min fairness over directed links (progressive filling),
//! recomputed incrementally when a flow starts or ends or a link changes capacity.
//!
//! Model (SimGrid's CM02 flow model without corrections; shared/reference/
//! hardware-and-models.md "Flow-level network models"): every active flow gets the max-min fair
//! rate over the links of its path; a flow's latency is paid before it joins the sharing (the
//! caller delays `add`). Incremental update: a change replays progressive filling only from
//! the level below which it provably moves nothing, and only over the flows and links it
//! actually disturbs, in level order (see `refill`) — on a 1,000-node fat-tree with 10,000
//! flows a completion touches a few dozen flows instead of the thousands connected through the
//! spines; on a saturated leaf-spine, the flows whose rate really moves.
//! Rates are exact textbook max-min (checked against a full recomputation in tests/maxmin.rs);
//! any efficiency factor is the caller's to apply to capacities. Each link's peak utilisation is
//! read at the end of every refill from what the refill left of its capacity
//! ([`FlowNet::peak_utilization`]).
//!
//! Architecture invariant: no time here beyond the byte accounting the caller drives with
//! [`FlowNet::advance`]; the engine owns the clock.
//!
//! Why one file of ~650 lines: the incremental refill, its region state and the proof of its
//! exactness are one argument, and splitting them would put the proof far from the code.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;

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
    alive: bool,
}

/// What refills read of every flow they scan, packed apart from [`Flow`] so a link's flows
/// are scanned through a dense array (32 bytes a flow).
#[derive(Debug, Clone, Copy, Default)]
struct Hot {
    /// A copy of the flow's rate.
    rate: f64,
    /// Epoch of the refill that took the flow in ([`Region::set`]).
    mark: u64,
    /// Epoch of the refill that froze it ([`Region::frozen`]).
    frozen: u64,
    /// The link the flow froze at (its max-min bottleneck), or [`NONE`].
    bottleneck: u32,
    /// The path crosses no link twice (the common case: multiplicity is 1 everywhere).
    simple: bool,
}

const NONE: u32 = u32::MAX;

/// Relative margin under a refill's floor within which flows are refilled too: a rate equal
/// to the floor may come out a rounding below it.
const TIE: f64 = 1e-11;

/// How many times a flow's path crosses a link (1 unless the path repeats links).
fn multiplicity(f: &Flow, h: &Hot, l: LinkId) -> f64 {
    if h.simple {
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
    /// Crossings of each link by active flows (a path through it twice counts twice).
    crossings: Vec<u32>,
    /// Highest load ÷ capacity each link has carried so far.
    peak: Vec<f64>,
    alive: usize,
    // Scratch state for refilling, kept to avoid allocating per event. Marks hold the epoch
    // (never reused: u64) of the pass that set them.
    hot: Vec<Hot>,
    mark_link: Vec<u64>,
    /// Position of each link in the region being refilled.
    link_pos: Vec<usize>,
    epoch: u64,
    region: Region,
    /// A refill's inputs: new flows, and links whose load or capacity changed.
    seeds: Vec<u32>,
    seed_links: Vec<LinkId>,
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
            crossings: vec![0; n],
            peak: vec![0.0; n],
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

    /// The highest utilisation (load ÷ capacity, at most 1) link `l` has had since the network
    /// was made. Exact: a load changes only in a refill, on a link of the refill's region, and
    /// when a refill is done each region link's capacity left is its capacity less its new load
    /// (every flow on it is frozen, outside flows at their old rates, refilled ones at their
    /// new), so every refill reads the load of every link it changed. A link of capacity 0
    /// reads 0.
    pub fn peak_utilization(&self, l: LinkId) -> f64 {
        self.peak[l]
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
        self.seeds.clear();
        self.seed_links.clear();
        for (path, bytes) in flows {
            let f = Flow {
                path,
                remaining: bytes.max(0.0),
                since: self.now,
                rate: 0.0,
                version: 0,
                alive: true,
            };
            let id = match self.free.pop() {
                Some(i) => {
                    let version = self.flows[i as usize].version.wrapping_add(1);
                    self.flows[i as usize] = Flow { version, ..f };
                    let h = &mut self.hot[i as usize];
                    (h.rate, h.bottleneck) = (0.0, NONE);
                    i
                }
                None => {
                    self.flows.push(f);
                    self.hot.push(Hot {
                        bottleneck: NONE,
                        ..Hot::default()
                    });
                    (self.flows.len() - 1) as u32
                }
            };
            self.alive += 1;
            if self.flows[id as usize].path.is_empty() {
                self.set_rate(id as usize, f64::INFINITY);
            }
            // A fresh epoch marks the links seen so far: repeats are found in O(path), not
            // O(path²) (a ring's chain crosses hundreds of links).
            let seen = self.next_epoch();
            let mut simple = true;
            for &l in &self.flows[id as usize].path {
                self.crossings[l] += 1;
                if self.mark_link[l] == seen {
                    simple = false;
                } else {
                    self.mark_link[l] = seen;
                    self.on_link[l].push(id);
                }
            }
            self.hot[id as usize].simple = simple;
            self.seeds.push(id);
            ids.push(FlowId(id));
        }
        let floor = ids
            .iter()
            .map(|f| self.rate_floor(&self.flows[f.0 as usize].path))
            .fold(f64::INFINITY, f64::min);
        self.refill(floor, false);
        ids
    }

    /// Remove a flow (finished or cancelled); the rates it disturbs are recomputed.
    pub fn remove(&mut self, f: FlowId) {
        self.remove_batch(&[f]);
    }

    /// Remove many flows with a single recomputation (flows that finish together).
    pub fn remove_batch(&mut self, flows: &[FlowId]) {
        self.seeds.clear();
        self.seed_links.clear();
        let mut floor = f64::INFINITY;
        for &f in flows {
            let i = f.0 as usize;
            if !self.flows.get(i).is_some_and(|x| x.alive) {
                continue;
            }
            let fl = &mut self.flows[i];
            fl.alive = false;
            fl.version = fl.version.wrapping_add(1);
            floor = floor.min(fl.rate);
            for &l in &std::mem::take(&mut fl.path) {
                self.crossings[l] -= 1;
                if let Some(k) = self.on_link[l].iter().position(|x| *x == f.0) {
                    self.on_link[l].swap_remove(k);
                    self.seed_links.push(l);
                }
            }
            self.free.push(f.0);
            self.alive -= 1;
        }
        if floor.is_finite() {
            self.refill(floor, false);
        }
    }

    /// Change a link's capacity (failure, degradation, repair).
    pub fn set_capacity(&mut self, l: LinkId, capacity: f64) {
        let old = std::mem::replace(&mut self.capacity[l], capacity.max(0.0));
        self.seeds.clear();
        self.seed_links.clear();
        self.seed_links.push(l);
        let floor = old.min(self.capacity[l]) / f64::from(self.crossings[l].max(1));
        self.refill(floor, true);
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

    /// Sum of the rates of the flows on a link, a path through it twice counted twice (never
    /// above its capacity).
    pub fn load(&self, l: LinkId) -> f64 {
        self.on_link[l]
            .iter()
            .map(|&f| {
                let h = &self.hot[f as usize];
                h.rate * multiplicity(&self.flows[f as usize], h, l)
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
            out.push(f);
        }
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
        self.hot[i].rate = rate;
        f.version = f.version.wrapping_add(1).max(1);
        if rate > 0.0 {
            let finish = if rate.is_infinite() {
                now
            } else {
                now + left / rate
            };
            self.finishes
                .push(Reverse((finish.max(0.0).to_bits(), i as u32, f.version)));
            // Superseded entries are skipped lazily; drop them when they dominate, so the heap
            // stays O(active flows) however many times rates change.
            if self.finishes.len() > 4 * self.alive + 1024 {
                let flows = &self.flows;
                self.finishes.retain(|Reverse((_, id, v))| {
                    flows[*id as usize].version == *v && flows[*id as usize].alive
                });
            }
        }
    }

    fn next_epoch(&mut self) -> u64 {
        self.epoch += 1;
        self.epoch
    }

    /// A lower bound on the max-min rate of a flow over `path`: on every link it is at least
    /// the capacity over the crossings there (a link saturates no earlier than that level).
    fn rate_floor(&self, path: &[LinkId]) -> f64 {
        path.iter()
            .map(|&l| self.capacity[l] / f64::from(self.crossings[l].max(1)))
            .fold(f64::INFINITY, f64::min)
    }

    /// Recompute max-min rates after a change at `self.seed_links` (loads or capacities) and
    /// of the new flows `self.seeds`, given `floor`: a level below which the change moves no
    /// rate. `all_on_seeds`: every flow at or above the floor on a seed link may change (a
    /// capacity change), not only those bottlenecked there.
    ///
    /// Progressive filling redone only where it differs. Why this is exact: filling raises all
    /// unfrozen flows together and a link saturates at a level set by the flows that froze
    /// below it. A flow leaving at rate r crosses no link saturating below r (it would have
    /// frozen there), so every freeze below r happens as before; adding a flow is the converse
    /// (it gets at least `floor`, see [`FlowNet::rate_floor`]); a capacity change moves nothing
    /// below the levels its link saturates at before and after. Above the floor, the filling is
    /// replayed in level order over a region that grows as the new filling departs from the
    /// old, every flow outside it frozen at its old rate:
    /// - a link enters the region when a refilled flow crosses it; its flows bottlenecked there
    ///   at or above the current level join the refill (their link's saturation is redone);
    /// - when a region link saturates at level x, an outside flow on it faster than x joins
    ///   the refill before the link freezes anything (it must slow down to x).
    ///
    /// A joining flow is unfrozen at the current level x: it is no slower than x in the new
    /// filling (nothing froze it below x: a region link would have pulled it in, and its other
    /// links saturate no lower than its old rate, at least x). An outside flow keeps a link's
    /// old saturation (its bottleneck, outside the region, sees no change) and is no faster
    /// than any region link it crosses; so when the region drains, every flow has a saturated
    /// link where none is faster: the unique max-min allocation (Bertsekas & Gallager, "Data
    /// Networks", §6.5.2). The work is the flows whose rate moves and their links, not the
    /// component.
    fn refill(&mut self, floor: f64, all_on_seeds: bool) {
        let mut r = std::mem::take(&mut self.region);
        r.begin(
            self.next_epoch(),
            self.next_epoch(),
            self.next_epoch(),
            floor,
        );
        for k in 0..self.seed_links.len() {
            let l = self.seed_links[k];
            self.enter(&mut r, l, all_on_seeds);
        }
        for k in 0..self.seeds.len() {
            let f = self.seeds[k] as usize;
            if self.flows[f].alive && !self.flows[f].path.is_empty() {
                r.join(&mut self.hot, f as u32);
            }
        }
        loop {
            while let Some(g) = r.queue.pop() {
                self.admit(&mut r, g as usize);
            }
            // Requeue each link whose share the admitted flows lowered below its queued key
            // (once per link however many flows joined there).
            for d in r.dirty.drain(..) {
                let i = self.link_pos[d];
                r.stale[i] = false;
                let k = key(r.left[i] / f64::from(r.unfrozen[i]));
                if k < r.queued[i] {
                    r.queued[i] = k;
                    r.heap.push(Reverse((k, d)));
                }
            }
            if r.rising == 0 {
                break;
            }
            let Some(mut top) = r.heap.peek_mut() else {
                break;
            };
            let Reverse((k, l)) = *top;
            let i = self.link_pos[l];
            if r.unfrozen[i] == 0 {
                r.queued[i] = u64::MAX;
                PeekMut::pop(top);
                continue;
            }
            let share = r.left[i] / f64::from(r.unfrozen[i]);
            if key(share) != k {
                // The share rose since: requeue in place (one sift instead of pop and push).
                // Other entries of the link are no lower than `k`; `queued` may overstate
                // their minimum, which only costs a spare entry.
                r.queued[i] = key(share);
                *top = Reverse((key(share), l));
                continue;
            }
            r.queued[i] = u64::MAX;
            PeekMut::pop(top);
            // A cut link (capacity 0: a NIC down) stalls its flows at exactly 0, not at the
            // rounding residue of `left` (`Wire::stalled` looks for rate 0).
            let x = if self.capacity[l] == 0.0 {
                0.0
            } else {
                share.max(0.0)
            };
            r.level = r.level.max(x);
            // Outside flows faster than the link now allows join first.
            let fast = x * (1.0 + TIE) + 1e-300;
            for n in 0..self.on_link[l].len() {
                let g = self.on_link[l][n];
                let h = &self.hot[g as usize];
                if h.mark != r.set && h.rate > fast {
                    r.join(&mut self.hot, g);
                }
            }
            if !r.queue.is_empty() {
                // Not saturated at x after all: those flows rise with it.
                r.queued[i] = k;
                r.heap.push(Reverse((k, l)));
                continue;
            }
            for n in 0..self.on_link[l].len() {
                let f = self.on_link[l][n] as usize;
                let h = &mut self.hot[f];
                if h.mark != r.set || h.frozen == r.frozen {
                    continue;
                }
                h.frozen = r.frozen;
                h.bottleneck = l as u32;
                r.rising -= 1;
                self.set_rate(f, x);
                for m in 0..self.flows[f].path.len() {
                    let i2 = self.link_pos[self.flows[f].path[m]];
                    // A path crossing a link twice loads it twice: it counts twice in the
                    // link's share (`unfrozen` counts crossings).
                    r.left[i2] -= x;
                    r.unfrozen[i2] -= 1;
                }
            }
        }
        // Every link whose load changed is in the region, and all its flows are frozen now.
        for (i, &l) in r.ids.iter().enumerate() {
            let cap = self.capacity[l];
            if cap > 0.0 {
                let u = (cap - r.left[i]) / cap;
                // A saturated link's load is its capacity up to the rounding of the shares.
                let u = if u >= 1.0 - 1e-9 { 1.0 } else { u };
                if u > self.peak[l] {
                    self.peak[l] = u;
                }
            }
        }
        self.region = r;
    }

    /// Bring link `l` into the region: the capacity its (all outside) flows leave, and its
    /// flows that join — bottlenecked there, or any (`all`), at or above the current level.
    fn enter(&mut self, r: &mut Region, l: LinkId, all: bool) {
        if self.mark_link[l] == r.links {
            return;
        }
        self.mark_link[l] = r.links;
        self.link_pos[l] = r.left.len();
        let low = r.level * (1.0 - TIE);
        let mut cap = self.capacity[l];
        for n in 0..self.on_link[l].len() {
            let g = self.on_link[l][n];
            let h = &self.hot[g as usize];
            cap -= if h.simple {
                h.rate
            } else {
                h.rate * multiplicity(&self.flows[g as usize], h, l)
            };
            if (all || h.bottleneck == l as u32) && h.rate >= low {
                r.join(&mut self.hot, g);
            }
        }
        r.left.push(cap);
        r.ids.push(l);
        r.unfrozen.push(0);
        r.queued.push(u64::MAX);
        r.stale.push(false);
    }

    /// A joined flow turns from frozen at its old rate to rising with the filling on each of
    /// its links (entering those outside the region first).
    fn admit(&mut self, r: &mut Region, f: usize) {
        for m in 0..self.flows[f].path.len() {
            let l = self.flows[f].path[m];
            self.enter(r, l, false);
        }
        let rate = self.flows[f].rate;
        r.rising += 1;
        for m in 0..self.flows[f].path.len() {
            let l = self.flows[f].path[m];
            let i = self.link_pos[l];
            r.left[i] += rate;
            r.unfrozen[i] += 1;
            if !r.stale[i] {
                r.stale[i] = true;
                r.dirty.push(l);
            }
        }
    }
}

/// A heap key ordering non-negative shares (negative rounding counts as zero).
fn key(x: f64) -> u64 {
    if x > 0.0 { x.to_bits() } else { 0 }
}

/// Scratch state of one refill, kept between refills to avoid allocating per event. Marks
/// hold epochs (never reused: u64).
#[derive(Debug, Clone, Default)]
struct Region {
    /// Epochs marking refilled flows, region links and flows frozen in this refill.
    set: u64,
    links: u64,
    frozen: u64,
    /// The filling's current level.
    level: f64,
    /// Per region link (by `link_pos`): capacity left by frozen flows, rising crossings.
    left: Vec<f64>,
    unfrozen: Vec<u32>,
    /// Region links by (share, id), lazily updated: every link with rising flows has an
    /// entry no higher than its share; `queued` bounds its lowest entry from above.
    heap: BinaryHeap<Reverse<(u64, LinkId)>>,
    queued: Vec<u64>,
    /// Links whose share admitted flows may have lowered, to requeue (`stale` marks them).
    dirty: Vec<LinkId>,
    stale: Vec<bool>,
    /// Flows that joined and wait to be admitted.
    queue: Vec<u32>,
    /// Admitted flows not frozen yet: the filling stops when none is left.
    rising: usize,
    /// The region's links, in the order they entered (by `link_pos`).
    ids: Vec<LinkId>,
}

impl Region {
    fn begin(&mut self, set: u64, links: u64, frozen: u64, floor: f64) {
        (self.set, self.links, self.frozen, self.level) = (set, links, frozen, floor);
        self.left.clear();
        self.unfrozen.clear();
        self.queued.clear();
        self.stale.clear();
        self.dirty.clear();
        self.heap.clear();
        self.queue.clear();
        self.rising = 0;
        self.ids.clear();
    }

    fn join(&mut self, hot: &mut [Hot], g: u32) {
        if hot[g as usize].mark != self.set {
            hot[g as usize].mark = self.set;
            self.queue.push(g);
        }
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
