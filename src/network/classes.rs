//! Rate classes: the flows that froze together at one link in max-min progressive filling
//! share one rate, so [`super::FlowNet`] keeps the rate, the bytes served and the finish
//! queue per class instead of per flow. A rate change is then O(1) for the whole class
//! however many flows it holds (on a saturated spine, hundreds), and a flow's bytes left are
//! read off its class's clock.
//!
//! A class also counts the links its members cross — the *tracked* ones, which take part in
//! the filling, with how many crossings and how many distinct members each, and the *slack*
//! ones, whose loads follow its rate for the feasibility check and peaks (see `filling`).
//!
//! Architecture invariant: nothing here knows the filling; it is bookkeeping the solver
//! drives.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use super::flows::FlowNet;

/// A link crossed by a class: total crossings (a path through it twice counts twice) and
/// distinct member flows crossing it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cross {
    pub link: u32,
    pub crossings: u32,
    pub flows: u32,
}

/// The links a class's members cross: a dense list to scan (the filling walks it) with each
/// link's position, so a member joining or leaving costs O(1) per link of its path, however
/// many links the class holds (a ring's chains cross hundreds). The positions are built
/// only once the list outgrows [`LINEAR`]: below that a scan is as fast as a lookup, and
/// most classes — a new flow's own, those on a lightly loaded fabric — stay that small.
/// Lists up to this long are scanned, not indexed.
const LINEAR: usize = 24;

#[derive(Debug, Clone, Default)]
pub(super) struct Links {
    pub items: Vec<Cross>,
    pos: FxHashMap<u32, u32>,
    /// Whether `pos` holds every item's position.
    indexed: bool,
}

impl Links {
    /// The first member's links (distinct): no lookups.
    pub fn push_first(&mut self, link: u32, m: u32) {
        debug_assert!(!self.indexed);
        self.items.push(Cross {
            link,
            crossings: m,
            flows: 1,
        });
    }

    fn index(&mut self) {
        if !self.indexed {
            self.pos.clear();
            for (k, e) in self.items.iter().enumerate() {
                self.pos.insert(e.link, k as u32);
            }
            self.indexed = true;
        }
    }

    /// Position of `link`, by a scan while the list is short (building the index once it
    /// is not).
    fn find(&mut self, link: u32) -> Option<u32> {
        if !self.indexed {
            if self.items.len() <= LINEAR {
                return self
                    .items
                    .iter()
                    .position(|e| e.link == link)
                    .map(|k| k as u32);
            }
            self.index();
        }
        self.pos.get(&link).copied()
    }

    /// One more member crossing `link` `m` times.
    pub fn add(&mut self, link: u32, m: u32) {
        self.add_n(link, m, 1);
    }

    /// `flows` more members crossing `link` `m` times in all.
    pub fn add_n(&mut self, link: u32, m: u32, flows: u32) {
        match self.find(link) {
            Some(k) => {
                let e = &mut self.items[k as usize];
                e.crossings += m;
                e.flows += flows;
            }
            None => {
                if self.indexed {
                    self.pos.insert(link, self.items.len() as u32);
                }
                self.items.push(Cross {
                    link,
                    crossings: m,
                    flows,
                });
            }
        }
    }

    /// One member crossing `link` `m` times left.
    pub fn sub(&mut self, link: u32, m: u32) {
        let Some(k) = self.find(link) else {
            return;
        };
        let e = &mut self.items[k as usize];
        e.crossings -= m;
        e.flows -= 1;
        if e.flows == 0 {
            self.items.swap_remove(k as usize);
            if self.indexed {
                self.pos.remove(&link);
                if let Some(moved) = self.items.get(k as usize) {
                    self.pos.insert(moved.link, k);
                }
            }
        }
    }

    /// Distinct members crossing `link`.
    pub fn flows_on(&self, link: u32) -> u32 {
        if !self.indexed {
            return self
                .items
                .iter()
                .find(|e| e.link == link)
                .map(|e| e.flows)
                .unwrap_or(0);
        }
        self.pos
            .get(&link)
            .map(|&k| self.items[k as usize].flows)
            .unwrap_or(0)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn clear(&mut self) {
        self.items.clear();
        self.pos.clear();
        self.indexed = false;
    }

    /// Every position points at its link (for audits).
    pub fn consistent(&self) -> bool {
        if !self.indexed {
            let mut seen: Vec<u32> = self.items.iter().map(|e| e.link).collect();
            seen.sort_unstable();
            seen.dedup();
            return seen.len() == self.items.len();
        }
        self.pos.len() == self.items.len()
            && self
                .items
                .iter()
                .enumerate()
                .all(|(k, e)| self.pos.get(&e.link) == Some(&(k as u32)))
    }
}

/// No link (a class not bottlenecked anywhere yet).
pub(super) const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Default)]
pub(super) struct Class {
    pub rate: f64,
    /// Bytes served to each member from the class's start until `since`.
    pub served: f64,
    pub since: f64,
    pub members: Vec<u32>,
    /// Tracked links its members cross.
    pub tracked: Links,
    /// Slack links its members cross (`flows` unused).
    pub slack: Links,
    /// Members by finish key (bytes served on the class clock when they are done), lowest
    /// flow id first on ties; entries of flows that left are skipped lazily (flow version).
    pub heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    /// The link the class froze at (its max-min bottleneck), or [`NONE`].
    pub bottleneck: u32,
    /// Bumped whenever the class's next finish may have changed: older queued finishes are
    /// stale.
    pub version: u32,
    /// Epoch of the refill that took the class in / froze it.
    pub mark: u64,
    pub frozen: u64,
    pub alive: bool,
    /// Epoch of the operation that queued its finish for refreshing.
    pub dirty: u64,
}

impl Class {
    /// Bytes served to each member by `now`.
    pub fn served_at(&self, now: f64) -> f64 {
        if self.rate.is_finite() && self.rate > 0.0 {
            self.served + self.rate * (now - self.since)
        } else {
            self.served
        }
    }
}

/// Add or take crossings on a link's unsorted (class, crossings) list: few classes cross a
/// link. An entry at 0 goes.
pub(super) fn on_add(v: &mut Vec<(u32, u32)>, class: u32, m: u32) {
    match v.iter_mut().find(|e| e.0 == class) {
        Some(e) => e.1 += m,
        None => v.push((class, m)),
    }
}

pub(super) fn on_sub(v: &mut Vec<(u32, u32)>, class: u32, m: u32) {
    if let Some(k) = v.iter().position(|e| e.0 == class) {
        v[k].1 -= m;
        if v[k].1 == 0 {
            v.swap_remove(k);
        }
    }
}

/// Membership: flows joining and leaving classes, with the links' loads and lists.
impl FlowNet {
    /// A fresh, empty class at rate 0 on the current clock.
    pub(super) fn new_class(&mut self) -> u32 {
        let now = self.now;
        let c = match self.free_classes.pop() {
            Some(c) => c,
            None => {
                self.classes.push(Class::default());
                (self.classes.len() - 1) as u32
            }
        };
        let k = &mut self.classes[c as usize];
        k.rate = 0.0;
        k.served = 0.0;
        k.since = now;
        k.members.clear();
        k.tracked.clear();
        k.slack.clear();
        k.heap.clear();
        k.bottleneck = NONE;
        k.alive = true;
        c
    }

    fn free_class(&mut self, c: u32) {
        self.set_bottleneck(c, NONE);
        let k = &mut self.classes[c as usize];
        debug_assert!(k.members.is_empty());
        k.alive = false;
        k.version = k.version.wrapping_add(1);
        self.free_classes.push(c);
    }

    /// Make flow `f` (not in any class) a member of class `c` with `left` bytes to go.
    pub(super) fn join_class(&mut self, c: u32, f: u32, left: f64) {
        let now = self.now;
        let fi = f as usize;
        self.class_of[fi] = c;
        let links = std::mem::take(&mut self.flows[fi].links);
        let k = &mut self.classes[c as usize];
        let rate = if k.rate.is_finite() { k.rate } else { 0.0 };
        let first = k.members.is_empty();
        if first {
            k.tracked.items.reserve(links.len());
        }
        for &(l, m) in &links {
            let li = l as usize;
            self.load[li] += f64::from(m) * rate;
            if self.tracked[li] {
                // A class with no members yet is on no link's list.
                if first {
                    k.tracked.push_first(l, m);
                    self.classes_on[li].push((c, m));
                } else {
                    k.tracked.add(l, m);
                    on_add(&mut self.classes_on[li], c, m);
                }
                if rate > self.fastest[li] {
                    self.fastest[li] = rate;
                }
            } else {
                if first {
                    k.slack.push_first(l, m);
                } else {
                    k.slack.add(l, m);
                }
                if rate > 0.0 {
                    super::flows::touch(&mut self.touch_mark, &mut self.touched, self.op, li);
                }
            }
        }
        let fl = &mut self.flows[fi];
        fl.links = links;
        fl.slot = k.members.len() as u32;
        k.members.push(f);
        fl.version = fl.version.wrapping_add(1);
        fl.key = k.served_at(now) + left;
        k.heap.push(Reverse((fl.key.to_bits(), f, fl.version)));
        self.mark_dirty(c);
    }

    /// Take flow `f` out of its class (freed if it empties); returns its bytes left.
    pub(super) fn leave_class(&mut self, f: u32) -> f64 {
        let fi = f as usize;
        let c = self.class_of[fi];
        let left = self.left_of(f);
        let links = std::mem::take(&mut self.flows[fi].links);
        let k = &mut self.classes[c as usize];
        let rate = if k.rate.is_finite() { k.rate } else { 0.0 };
        // The last member takes the lists with it.
        let last = k.members.len() == 1;
        for &(l, m) in &links {
            let li = l as usize;
            self.load[li] -= f64::from(m) * rate;
            if self.tracked[li] {
                if !last {
                    k.tracked.sub(l, m);
                }
                on_sub(&mut self.classes_on[li], c, m);
            } else if !last {
                k.slack.sub(l, m);
            }
        }
        if last {
            k.tracked.clear();
            k.slack.clear();
        }
        let slot = self.flows[fi].slot as usize;
        k.members.swap_remove(slot);
        if let Some(&moved) = k.members.get(slot) {
            self.flows[moved as usize].slot = slot as u32;
        }
        let fl = &mut self.flows[fi];
        fl.links = links;
        fl.version = fl.version.wrapping_add(1);
        self.class_of[fi] = NONE;
        if self.classes[c as usize].members.is_empty() {
            self.free_class(c);
        } else {
            self.mark_dirty(c);
        }
        left
    }

    /// Record that class `c` is bottlenecked at `l` (or nowhere: [`NONE`]).
    pub(super) fn set_bottleneck(&mut self, c: u32, l: u32) {
        let old = self.classes[c as usize].bottleneck;
        if old == l {
            return;
        }
        if old != NONE {
            let h = &mut self.held[old as usize];
            if let Some(k) = h.iter().position(|x| *x == c) {
                h.swap_remove(k);
            }
        }
        if l != NONE {
            self.held[l as usize].push(c);
        }
        self.classes[c as usize].bottleneck = l;
    }

    /// Move every member of class `o` into class `keep`, freeing `o`: per link of `o`, not
    /// per member and link. Both must have the same rate (classes that froze together), so
    /// no load moves.
    pub(super) fn merge_into(&mut self, o: u32, keep: u32) {
        debug_assert_ne!(o, keep);
        let now = self.now;
        let mut from = std::mem::take(&mut self.classes[o as usize]);
        debug_assert_eq!(
            from.rate.to_bits(),
            self.classes[keep as usize].rate.to_bits()
        );
        let k = &mut self.classes[keep as usize];
        for e in &from.tracked.items {
            k.tracked.add_n(e.link, e.crossings, e.flows);
            let on = &mut self.classes_on[e.link as usize];
            on_sub(on, o, e.crossings);
            on_add(on, keep, e.crossings);
        }
        for e in &from.slack.items {
            k.slack.add_n(e.link, e.crossings, e.flows);
        }
        let (was, is) = (from.served_at(now), k.served_at(now));
        for &g in &from.members {
            let fl = &mut self.flows[g as usize];
            let left = (fl.key - was).max(0.0);
            self.class_of[g as usize] = keep;
            fl.slot = k.members.len() as u32;
            k.members.push(g);
            fl.version = fl.version.wrapping_add(1);
            fl.key = is + left;
            k.heap.push(Reverse((fl.key.to_bits(), g, fl.version)));
        }
        from.members.clear();
        from.tracked.clear();
        from.slack.clear();
        from.heap.clear();
        self.classes[o as usize] = from;
        self.free_class(o);
        self.mark_dirty(keep);
    }

    /// Move flow `f` to class `c`, keeping its bytes left.
    pub(super) fn move_to(&mut self, f: u32, c: u32) {
        let left = self.leave_class(f);
        self.join_class(c, f, left);
    }
}
