//! The incremental max-min filling behind [`FlowNet`]: progressive filling over rate classes
//! and tracked links, replayed only where a change moves rates, with slack links checked
//! after each filling.
//!
//! Why this is exact. Progressive filling raises all unfrozen flows together and a link
//! saturates at a level set by the flows that froze below it; the result is the unique
//! max-min allocation (Bertsekas & Gallager, "Data Networks", §6.5.2): every flow crosses a
//! saturated link where none is faster.
//! - *Where to start.* A flow leaving at rate r crosses no link saturating below r (it would
//!   have frozen there), so every freeze below r happens as before; adding a flow is the
//!   converse (it gets at least the floor, [`FlowNet::add_batch`]); a capacity change moves
//!   nothing below the levels its link saturates at before and after. Above the floor the
//!   filling is replayed in level order over a region that grows as the new filling departs
//!   from the old, every class outside it frozen at its old rate:
//!   - a link enters the region when a refilled class crosses it; its classes bottlenecked
//!     there at or above the current level join the refill;
//!   - when a region link saturates at level x, an outside class on it faster than x joins
//!     before the link freezes anything (it must slow down to x).
//!
//!   A joining class is unfrozen at the current level x: it is no slower than x in the new
//!   filling (nothing froze it below x: a region link would have pulled it in, and its other
//!   links saturate no lower than its old rate, at least x). An outside class keeps a link's
//!   old saturation and is no faster than any region link it crosses; so when the region
//!   drains, every flow has a saturated link where none is faster.
//! - *Classes.* All members of a class have one rate, so they join and rise together. When a
//!   link saturates, a rising class whose members all cross it freezes whole; otherwise the
//!   members crossing it split off (they freeze, the rest rise on) — exactly what the filling
//!   does flow by flow. Classes that freeze at one link at one level merge (smaller into
//!   larger), so there is about one class per saturated link.
//! - *Slack links.* The filling runs over tracked links only. An allocation max-min over the
//!   tracked links and within every slack link's capacity is max-min over all links (each
//!   flow still has its saturated bottleneck, and nothing is over capacity). So after each
//!   filling the slack links whose loads rose are checked: one over capacity becomes tracked
//!   — for the filling, a capacity change from unbounded to its own — and the filling is
//!   redone from it. A tracked link that nobody is bottlenecked at turns slack again at the
//!   end of an operation that touched it (the allocation is unchanged by dropping a
//!   constraint that binds no flow). On a saturated leaf-spine the hosts' links stay slack,
//!   so a class's filling touches its spine links, not every host its members reach.
//!   (Demoting only links at most half loaded and crossed at most 256 times, as this once
//!   did, kept most host links tracked on a 2:1 leaf-spine: `orrery bench --dense-sets`' 2:1
//!   set refilled 12 tracked links per class instead of 6.6 and took 1.3–1.45× as long; a link
//!   that overflows again costs one promotion and one more refill from it.)
//!
//! The work is the classes whose rate moves and the tracked links they cross, not the
//! component.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;

use super::LinkId;
use super::classes::NONE;
use super::flows::FlowNet;

/// Relative margin under a refill's floor within which classes are refilled too: a rate
/// equal to the floor may come out a rounding below it.
const TIE: f64 = 1e-11;

/// What the filling has done since the network was made: where a dense run's time goes
/// (`orrery bench` prints it per event).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SolverStats {
    /// Refills (one per change, more when a slack link overflowed).
    pub refills: u64,
    /// Classes refilled, and the tracked links they crossed.
    pub admitted: u64,
    pub admitted_links: u64,
    /// Links that saturated in a refill, and entries taken off its link queue (a stale one
    /// is requeued).
    pub saturated: u64,
    pub queue_pops: u64,
    /// Slack links made tracked, and tracked links made slack.
    pub promoted: u64,
    pub demoted: u64,
}

/// Scratch state of one refill, kept between refills to avoid allocating per event. Marks
/// hold epochs (never reused: u64).
#[derive(Debug, Clone, Default)]
pub(super) struct Region {
    /// Epochs marking refilled classes, region links and classes frozen in this refill.
    set: u64,
    links: u64,
    frozen: u64,
    /// The filling's current level.
    level: f64,
    /// Per region link (by `link_pos`): capacity left by frozen classes, rising crossings.
    left: Vec<f64>,
    unfrozen: Vec<u32>,
    /// Region links by (share, id), lazily updated: every link with rising classes has an
    /// entry no higher than its share; `queued` bounds its lowest entry from above.
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    queued: Vec<u64>,
    /// Links whose share admitted classes may have lowered, to requeue (`stale` marks them).
    dirty: Vec<LinkId>,
    stale: Vec<bool>,
    /// Classes that joined and wait to be admitted.
    queue: Vec<u32>,
    /// Admitted classes not frozen yet: the filling stops when none is left.
    rising: usize,
    /// Classes admitted across each region link (by `link_pos`): the first entry of a
    /// linked list through `cross` of (class, next entry).
    head: Vec<u32>,
    cross: Vec<(u32, u32)>,
    /// Scratch: the rising classes on a saturating link, and those frozen there.
    on: Vec<u32>,
    froze: Vec<u32>,
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
        self.head.clear();
        self.cross.clear();
    }
}

/// A heap key ordering non-negative shares (negative rounding counts as zero).
fn key(x: f64) -> u64 {
    if x > 0.0 { x.to_bits() } else { 0 }
}

impl FlowNet {
    /// Recompute max-min rates after a change: `seed_links` (loads or capacities changed) and
    /// the new classes `seeds`, given `floor`, a level below which the change moves no rate;
    /// then make every slack link feasible (tracking those over capacity and refilling from
    /// them) until none is over.
    pub(super) fn settle(&mut self, floor: f64) {
        let mut floor = floor;
        loop {
            self.refill(floor);
            self.seeds.clear();
            self.seed_links.clear();
            floor = f64::INFINITY;
            for k in 0..self.touched.len() {
                let l = self.touched[k] as usize;
                if !self.tracked[l] && self.load[l] > self.capacity[l] * (1.0 + 1e-12) {
                    self.promote(l);
                    self.seed_links.push((l, true));
                    floor = floor.min(self.capacity[l] / f64::from(self.crossings[l].max(1)));
                }
            }
            if self.seed_links.is_empty() {
                return;
            }
        }
    }

    /// Make a slack link tracked: its crossings move from its classes' slack lists to their
    /// tracked ones.
    pub(super) fn promote(&mut self, l: LinkId) {
        if self.tracked[l] {
            return;
        }
        self.stats.promoted += 1;
        self.tracked[l] = true;
        self.classes_on[l].clear();
        for n in 0..self.on_link[l].len() {
            let g = self.on_link[l][n] as usize;
            let c = self.class_of[g];
            if c == super::classes::NONE {
                continue;
            }
            let m = self.multiplicity(g, l);
            let k = &mut self.classes[c as usize];
            k.slack.sub(l as u32, m);
            k.tracked.add(l as u32, m);
            super::classes::on_add(&mut self.classes_on[l], c, m);
        }
        self.load[l] = self.exact_load(l);
        self.fastest[l] = self.classes_on[l]
            .iter()
            .map(|&(c, _)| self.classes[c as usize].rate)
            .fold(0.0, f64::max);
        self.touch(l);
    }

    /// Turn slack a tracked link that binds nobody (read for every tracked link an operation
    /// touched).
    pub(super) fn demote_if_idle(&mut self, l: LinkId) {
        if self.capacity[l] <= 0.0 || !self.held[l].is_empty() {
            return;
        }
        self.stats.demoted += 1;
        self.tracked[l] = false;
        self.load[l] = self.exact_load(l);
        for n in 0..self.on_link[l].len() {
            let g = self.on_link[l][n] as usize;
            let c = self.class_of[g];
            let m = self.multiplicity(g, l);
            let k = &mut self.classes[c as usize];
            k.tracked.sub(l as u32, m);
            k.slack.add(l as u32, m);
        }
        self.classes_on[l].clear();
    }

    pub(super) fn multiplicity(&self, g: usize, l: LinkId) -> u32 {
        self.flows[g]
            .links
            .iter()
            .find(|e| e.0 == l as u32)
            .map(|e| e.1)
            .unwrap_or(0)
    }

    /// Progressive filling redone only where it differs, over tracked links (see the module
    /// comment for why it is exact).
    fn refill(&mut self, floor: f64) {
        self.stats.refills += 1;
        let mut r = std::mem::take(&mut self.region);
        r.begin(
            self.next_epoch(),
            self.next_epoch(),
            self.next_epoch(),
            floor,
        );
        for k in 0..self.seed_links.len() {
            let (l, all) = self.seed_links[k];
            self.enter(&mut r, l, all);
        }
        for k in 0..self.seeds.len() {
            let c = self.seeds[k];
            if self.classes[c as usize].alive && !self.classes[c as usize].tracked.is_empty() {
                self.join(&mut r, c);
            }
        }
        loop {
            while let Some(c) = r.queue.pop() {
                self.admit(&mut r, c);
            }
            // Requeue each link whose share the admitted classes lowered below its queued key
            // (once per link however many joined there).
            for d in r.dirty.drain(..) {
                let i = self.link_pos[d];
                r.stale[i] = false;
                let k = key(r.left[i] / f64::from(r.unfrozen[i]));
                if k < r.queued[i] {
                    r.queued[i] = k;
                    r.heap.push(Reverse((k, d as u32)));
                }
            }
            if r.rising == 0 {
                break;
            }
            let Some(mut top) = r.heap.peek_mut() else {
                break;
            };
            let Reverse((k, l)) = *top;
            self.stats.queue_pops += 1;
            let l = l as usize;
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
                *top = Reverse((key(share), l as u32));
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
            // Outside classes faster than the link now allows join first (none can be if
            // no class on it is faster: then the scan is skipped, and a scan makes the bound
            // exact again).
            let fast = x * (1.0 + TIE) + 1e-300;
            if self.fastest[l] > fast {
                let mut top = 0.0f64;
                for n in 0..self.classes_on[l].len() {
                    let c = self.classes_on[l][n].0;
                    let k = &self.classes[c as usize];
                    top = top.max(k.rate);
                    if k.mark != r.set && k.rate > fast {
                        self.join(&mut r, c);
                    }
                }
                self.fastest[l] = top;
            }
            if !r.queue.is_empty() {
                // Not saturated at x after all: those classes rise with it.
                r.queued[i] = k;
                r.heap.push(Reverse((k, l as u32)));
                continue;
            }
            self.saturate(&mut r, l, x);
        }
        self.region = r;
    }

    fn join(&mut self, r: &mut Region, c: u32) {
        let k = &mut self.classes[c as usize];
        if k.mark != r.set {
            k.mark = r.set;
            r.queue.push(c);
        }
    }

    fn rising(&self, r: &Region, c: u32) -> bool {
        let k = &self.classes[c as usize];
        k.mark == r.set && k.frozen != r.frozen
    }

    /// Link `l` saturates at level `x`: every rising member crossing it freezes there. A
    /// class whose members all cross it freezes whole; the members of another cross into one
    /// new class; all that froze here then merge.
    fn saturate(&mut self, r: &mut Region, l: LinkId, x: f64) {
        self.stats.saturated += 1;
        r.on.clear();
        r.froze.clear();
        let mut e = r.head[self.link_pos[l]];
        while e != NONE {
            let (c, next) = r.cross[e as usize];
            if self.rising(r, c) {
                r.on.push(c);
            }
            e = next;
        }
        let mut part = NONE;
        for n in 0..r.on.len() {
            let c = r.on[n];
            // (A class whose members crossing `l` split off at another link no longer
            // crosses it.)
            let on = self.classes[c as usize].tracked.flows_on(l as u32) as usize;
            if on == 0 {
                continue;
            }
            if on == self.classes[c as usize].members.len() {
                self.freeze(r, c, l, x);
                r.froze.push(c);
                continue;
            }
            if part == NONE {
                part = self.new_class();
                let k = &mut self.classes[part as usize];
                k.rate = x;
                k.mark = r.set;
                k.frozen = r.frozen;
                self.set_bottleneck(part, l as u32);
                r.froze.push(part);
            }
            // The members crossing `l` freeze at x; moving them keeps the links' loads.
            for n in 0..self.on_link[l].len() {
                let g = self.on_link[l][n];
                if self.class_of[g as usize] != c {
                    continue;
                }
                for e in 0..self.flows[g as usize].links.len() {
                    let (m, mult) = self.flows[g as usize].links[e];
                    let m = m as usize;
                    if self.tracked[m] {
                        let i = self.link_pos[m];
                        r.left[i] -= f64::from(mult) * x;
                        r.unfrozen[i] -= mult;
                    }
                }
                self.move_to(g, part);
            }
        }
        if r.froze.len() > 1 {
            let keep = *r
                .froze
                .iter()
                .max_by(|a, b| {
                    let n = |c: &&u32| self.classes[**c as usize].members.len();
                    n(a).cmp(&n(b)).then(b.cmp(a))
                })
                .expect("non-empty");
            for n in 0..r.froze.len() {
                let o = r.froze[n];
                if o == keep {
                    continue;
                }
                self.merge_into(o, keep);
            }
        }
    }

    /// A rising class freezes whole at `x` on its bottleneck `l`.
    fn freeze(&mut self, r: &mut Region, c: u32, l: LinkId, x: f64) {
        r.rising -= 1;
        self.set_bottleneck(c, l as u32);
        let now = self.now;
        let k = &mut self.classes[c as usize];
        k.frozen = r.frozen;
        let old = k.rate;
        for t in 0..k.tracked.len() {
            let e = k.tracked.items[t];
            let m = e.link as usize;
            let i = self.link_pos[m];
            r.left[i] -= f64::from(e.crossings) * x;
            r.unfrozen[i] -= e.crossings;
            self.load[m] += f64::from(e.crossings) * (x - old);
            if x > self.fastest[m] {
                self.fastest[m] = x;
            }
        }
        if old == x {
            return;
        }
        // Slack loads follow the rate; only a rise can make a link infeasible or set a
        // peak, so only then is the link touched (checked by `settle`, read by `end_op`).
        let (load, mark, touched, op) = (
            &mut self.load[..],
            &mut self.touch_mark[..],
            &mut self.touched,
            self.op,
        );
        let d = x - old;
        if d > 0.0 {
            for e in &k.slack.items {
                let l = e.link as usize;
                load[l] += f64::from(e.crossings) * d;
                if mark[l] != op {
                    mark[l] = op;
                    touched.push(e.link);
                }
            }
        } else {
            for e in &k.slack.items {
                load[e.link as usize] += f64::from(e.crossings) * d;
            }
        }
        k.served = k.served_at(now);
        k.since = now;
        k.rate = x;
        self.mark_dirty(c);
    }

    /// Bring link `l` into the region: the capacity its (all outside) classes leave, and its
    /// classes that join — bottlenecked there, or any (`all`), at or above the current level.
    fn enter(&mut self, r: &mut Region, l: LinkId, all: bool) {
        if self.mark_link[l] == r.links {
            return;
        }
        self.mark_link[l] = r.links;
        self.link_pos[l] = r.left.len();
        let low = r.level * (1.0 - TIE);
        if all {
            // A capacity change: any class on it may move; resum its load exactly.
            self.load[l] = self.exact_load(l);
            for n in 0..self.classes_on[l].len() {
                let c = self.classes_on[l][n].0;
                if self.classes[c as usize].rate >= low {
                    self.join(r, c);
                }
            }
        } else {
            for n in 0..self.held[l].len() {
                let c = self.held[l][n];
                if self.classes[c as usize].rate >= low {
                    self.join(r, c);
                }
            }
        }
        r.left.push(self.capacity[l] - self.load[l]);
        r.head.push(NONE);
        r.unfrozen.push(0);
        r.queued.push(u64::MAX);
        r.stale.push(false);
        self.touch(l);
    }

    /// A joined class turns from frozen at its old rate to rising with the filling on each of
    /// its tracked links (entering those outside the region first).
    fn admit(&mut self, r: &mut Region, c: u32) {
        for t in 0..self.classes[c as usize].tracked.len() {
            let l = self.classes[c as usize].tracked.items[t].link as usize;
            if self.mark_link[l] != r.links {
                self.enter(r, l, false);
            }
        }
        r.rising += 1;
        let k = &self.classes[c as usize];
        self.stats.admitted += 1;
        self.stats.admitted_links += k.tracked.len() as u64;
        for t in 0..k.tracked.len() {
            let e = k.tracked.items[t];
            let l = e.link as usize;
            let i = self.link_pos[l];
            r.left[i] += k.rate * f64::from(e.crossings);
            r.unfrozen[i] += e.crossings;
            r.cross.push((c, r.head[i]));
            r.head[i] = (r.cross.len() - 1) as u32;
            if !r.stale[i] {
                r.stale[i] = true;
                r.dirty.push(l);
            }
        }
    }
}
