//! Flow-level bandwidth sharing: max-min fairness over directed links (progressive filling),
//! recomputed incrementally when a flow starts or ends or a link changes capacity.
//!
//! Model (SimGrid's CM02 flow model without corrections; shared/reference/
//! hardware-and-models.md "Flow-level network models"): every active flow gets the max-min fair
//! rate over the links of its path; a flow's latency is paid before it joins the sharing (the
//! caller delays `add`). Incremental update: a change replays progressive filling only from
//! the level below which it provably moves nothing, and only over the flows and links it
//! actually disturbs, in level order (`refill.rs`) — on a 1,000-node fat-tree with 10,000
//! flows a completion touches a few dozen flows instead of the thousands connected through the
//! spines; on a saturated leaf-spine, the flows whose rate really moves.
//! Rates are exact textbook max-min (checked against an independent progressive filling in
//! `tests.rs` and against a full recomputation in tests/maxmin.rs); any efficiency factor is
//! the caller's to apply to capacities.
//!
//! Files: `mod.rs` (this) holds the network's state, the public API and the per-link
//! bookkeeping that lets a refill avoid scanning a link's flows: each link's load (an exact
//! fixed-point sum, [`Load`]), an upper bound on its flows' rates (`ceiling`) and the flows
//! bottlenecked there (`held`); `refill.rs` the incremental progressive filling itself;
//! `tests.rs` the unit tests and the reference solver they compare with.
//!
//! Architecture invariant: no time here beyond the byte accounting the caller drives with
//! [`FlowNet::advance`]; the engine owns the clock.

mod refill;
#[cfg(test)]
mod tests;

use refill::Region;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Index of a directed link.
pub type LinkId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowId(pub u32);

#[derive(Debug, Clone)]
struct Flow {
    path: Vec<LinkId>,
    /// For each entry of `path`: the flow's position in that link's `on_link` list, or
    /// [`NONE`] on a repeat of a link already listed (so a removal is O(path)).
    slots: Vec<u32>,
    /// Bytes left at time `since` (the network's clock when the rate last changed).
    remaining: f64,
    since: f64,
    rate: f64,
    /// Position in `held[bottleneck]`, when the flow has a bottleneck.
    held_pos: u32,
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

/// A link's load (sum of its flows' rates, a path crossing it twice counting twice) kept as
/// an integer count of 2⁻⁴⁰ B/s: updated by each rate change instead of re-summed by a scan
/// of the link's flows, and exact, so the sum does not drift over millions of changes nor
/// depend on their order — the same flows at the same rates give the same load, however they
/// got there. A rate rounds by at most 2⁻⁴¹ B/s (≈ 5·10⁻¹³), below the solver's relative tie
/// margin for any rate above a hundredth of a byte per second (tests use capacities of a few
/// bytes per second); 128 bits hold a million flows at 10¹⁸ B/s.
type Load = i128;

/// Fixed-point scale of [`Load`].
const LOAD_SCALE: f64 = (1u64 << 40) as f64;

/// A rate as a [`Load`]; rates above 10¹⁸ B/s (only an unconstrained flow: infinite) are
/// clamped, which only an all-infinite-capacity path could produce.
fn fixed(rate: f64) -> Load {
    (rate.min(1e18) * LOAD_SCALE).round() as Load
}

/// A [`Load`] in B/s.
fn unfixed(load: Load) -> f64 {
    load as f64 / LOAD_SCALE
}

/// Active flows over links of given capacities (bytes per second).
#[derive(Debug, Clone, Default)]
pub struct FlowNet {
    capacity: Vec<f64>,
    flows: Vec<Flow>,
    free: Vec<u32>,
    /// Active flows crossing each link, each with the index of that link in its path.
    on_link: Vec<Vec<(u32, u32)>>,
    /// Crossings of each link by active flows (a path through it twice counts twice).
    crossings: Vec<u32>,
    /// Each link's load ([`Load`]).
    load: Vec<Load>,
    /// Each link's ceiling: no flow on it is faster. Raised by every rate change, lowered
    /// when a refill saturating the link has looked at all its flows; a saturating link whose
    /// ceiling is below its new level has no flow to slow down, and is not scanned.
    ceiling: Vec<f64>,
    /// Flows whose bottleneck is each link: a refill entering the link refills them.
    held: Vec<Vec<u32>>,
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
            load: vec![0; n],
            ceiling: vec![0.0; n],
            held: vec![Vec::new(); n],
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
        self.seeds.clear();
        self.seed_links.clear();
        for (path, bytes) in flows {
            let f = Flow {
                slots: Vec::with_capacity(path.len()),
                path,
                remaining: bytes.max(0.0),
                since: self.now,
                rate: 0.0,
                held_pos: NONE,
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
            let fl = &mut self.flows[id as usize];
            for (k, &l) in fl.path.iter().enumerate() {
                self.crossings[l] += 1;
                if self.mark_link[l] == seen {
                    simple = false;
                    fl.slots.push(NONE);
                } else {
                    self.mark_link[l] = seen;
                    fl.slots.push(self.on_link[l].len() as u32);
                    self.on_link[l].push((id, k as u32));
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
            // Its load leaves its links as its rate drops to nothing (no finish is queued
            // for a zero rate); then it leaves their lists.
            let rate = self.flows[i].rate;
            floor = floor.min(rate);
            self.set_rate(i, 0.0);
            self.set_bottleneck(i, NONE);
            let fl = &mut self.flows[i];
            fl.alive = false;
            fl.version = fl.version.wrapping_add(1);
            let (path, slots) = (std::mem::take(&mut fl.path), std::mem::take(&mut fl.slots));
            for (&l, &slot) in path.iter().zip(&slots) {
                self.crossings[l] -= 1;
                if slot == NONE {
                    continue;
                }
                let list = &mut self.on_link[l];
                list.swap_remove(slot as usize);
                if let Some(&(g, k)) = list.get(slot as usize) {
                    self.flows[g as usize].slots[k as usize] = slot;
                }
                self.seed_links.push(l);
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

    /// Sum of the rates of the flows on a link (never above its capacity).
    pub fn load(&self, l: LinkId) -> f64 {
        self.on_link[l]
            .iter()
            .map(|&(f, _)| self.flows[f as usize].rate)
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

    /// Give a flow a new rate: settle its bytes at the old one, move its load on its links
    /// (raising their ceilings) and queue its new finish.
    fn set_rate(&mut self, i: usize, rate: f64) {
        let old = self.flows[i].rate;
        if old == rate {
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
        let delta = fixed(rate) - fixed(old);
        for &l in &f.path {
            self.load[l] += delta;
            if rate > self.ceiling[l] {
                self.ceiling[l] = rate;
            }
        }
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

    /// Record that flow `i` froze at link `b` (or has no bottleneck: [`NONE`]), keeping the
    /// `held` lists in step in O(1).
    fn set_bottleneck(&mut self, i: usize, b: u32) {
        let old = self.hot[i].bottleneck;
        if old == b {
            return;
        }
        if old != NONE {
            let pos = self.flows[i].held_pos as usize;
            let list = &mut self.held[old as usize];
            list.swap_remove(pos);
            if let Some(&g) = list.get(pos) {
                self.flows[g as usize].held_pos = pos as u32;
            }
        }
        self.hot[i].bottleneck = b;
        if b != NONE {
            self.flows[i].held_pos = self.held[b as usize].len() as u32;
            self.held[b as usize].push(i as u32);
        }
    }

    /// Capacity of link `l` not used by its flows at their current rates.
    fn spare(&self, l: LinkId) -> f64 {
        self.capacity[l] - unfixed(self.load[l])
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
}
