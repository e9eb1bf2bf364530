//! The incremental progressive filling of [`FlowNet`]: after a change, the max-min filling is
//! replayed only above the level the change cannot move, over a region of flows and links
//! that grows as the new filling departs from the old (see [`FlowNet::refill`]).
//!
//! Its cost is the flows it refills and their links, not the links' other flows: a link
//! entering the region takes its spare capacity from the maintained load, and its flows to
//! refill from the list of those bottlenecked there; a saturating link freezes the refilled
//! flows that crossed it from a per-link list the region keeps, and looks at its other flows
//! only when its ceiling says one may be too fast. On a saturated 1,024-host leaf-spine the
//! scans this avoids were 16 times the flows refilled.

use super::{FlowNet, Hot, LinkId, NONE};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;

/// Relative margin under a refill's floor within which flows are refilled too: a rate equal
/// to the floor may come out a rounding below it.
const TIE: f64 = 1e-11;

impl FlowNet {
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
    pub(super) fn refill(&mut self, floor: f64, all_on_seeds: bool) {
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
            // A link without capacity (a NIC down) stops its flows exactly: callers tell a
            // stalled flow by a rate of 0, which the rounding of `left` must not blur.
            let x = if self.capacity[l] > 0.0 {
                share.max(0.0)
            } else {
                0.0
            };
            r.level = r.level.max(x);
            // Outside flows faster than the link now allows join first. Only a ceiling above
            // x says there may be one; a scan that finds none lowers the ceiling to what it
            // saw, so the next saturation at this level skips the scan.
            let fast = x * (1.0 + TIE) + 1e-300;
            if self.ceiling[l] > fast {
                let mut seen = r.level;
                for n in 0..self.on_link[l].len() {
                    let g = self.on_link[l][n].0;
                    let h = &self.hot[g as usize];
                    if h.mark == r.set {
                        continue;
                    }
                    if h.rate > fast {
                        r.join(&mut self.hot, g);
                    } else {
                        seen = seen.max(h.rate);
                    }
                }
                if !r.queue.is_empty() {
                    // Not saturated at x after all: those flows rise with it.
                    r.queued[i] = k;
                    r.heap.push(Reverse((k, l)));
                    continue;
                }
                // Every flow on the link is outside and no faster than `seen`, or refilled:
                // frozen no faster than the level so far (levels only rise) or freezing at x
                // below.
                self.ceiling[l] = seen;
            }
            let mut node = r.head[i];
            while node != NONE {
                let (f, next) = r.nodes[node as usize];
                node = next;
                let f = f as usize;
                if self.hot[f].frozen == r.frozen {
                    continue;
                }
                self.hot[f].frozen = r.frozen;
                self.set_bottleneck(f, l as u32);
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
            r.head[i] = NONE;
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
        if all {
            for n in 0..self.on_link[l].len() {
                let g = self.on_link[l][n].0;
                if self.hot[g as usize].rate >= low {
                    r.join(&mut self.hot, g);
                }
            }
        } else {
            for n in 0..self.held[l].len() {
                let g = self.held[l][n];
                if self.hot[g as usize].rate >= low {
                    r.join(&mut self.hot, g);
                }
            }
        }
        r.left.push(self.spare(l));
        r.unfrozen.push(0);
        r.queued.push(u64::MAX);
        r.stale.push(false);
        r.head.push(NONE);
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
            r.nodes.push((f as u32, r.head[i]));
            r.head[i] = (r.nodes.len() - 1) as u32;
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
pub(super) struct Region {
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
    /// The refilled flows crossing each region link, as linked lists through `nodes`
    /// ((flow, next node)): a saturating link freezes them without scanning its other flows.
    head: Vec<u32>,
    nodes: Vec<(u32, u32)>,
    /// Flows that joined and wait to be admitted.
    queue: Vec<u32>,
    /// Admitted flows not frozen yet: the filling stops when none is left.
    rising: usize,
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
        self.head.clear();
        self.nodes.clear();
        self.queue.clear();
        self.rising = 0;
    }

    fn join(&mut self, hot: &mut [Hot], g: u32) {
        if hot[g as usize].mark != self.set {
            hot[g as usize].mark = self.set;
            self.queue.push(g);
        }
    }
}
