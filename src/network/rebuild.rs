//! A from-scratch progressive filling for a batch at least four times as large as the
//! network it joins (10,000 flows starting together on an empty fat-tree, a collective round
//! on an idle fabric): one pass over every link the flows cross, then the rate classes built
//! from its result, instead of the incremental refill's rounds of slack links overflowing one
//! after another.
//!
//! Textbook progressive filling (Bertsekas & Gallager, "Data Networks", §6.5.2): every
//! unfrozen flow rises together; the link whose share (capacity left ÷ unfrozen crossings) is
//! lowest saturates, freezing its unfrozen flows at that share; repeat. The result is the
//! unique max-min allocation over all links. The flows that froze at one link form one class
//! bottlenecked there (what the incremental filling's merges leave too), and exactly those
//! bottleneck links are tracked: every flow then crosses a tracked saturated link where none
//! is faster, and every other link is within capacity, which is the state the incremental
//! solver keeps (see `filling`). Bytes left carry over from the old classes' clocks.
//!
//! Architecture invariant: this replaces the solver's state for every flow with links; flows
//! with empty paths keep their (unconstrained) classes.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;

use super::classes::NONE;
use super::flows::FlowNet;

/// Scratch state of a rebuild, kept to avoid allocating per batch.
#[derive(Debug, Clone, Default)]
pub(super) struct Rebuild {
    /// Every flow with links, with its bytes left.
    flows: Vec<(u32, f64)>,
    /// Every link they cross.
    links: Vec<u32>,
    /// Per link (by id): capacity not yet taken by frozen flows, and unfrozen crossings.
    left: Vec<f64>,
    rising: Vec<u32>,
    /// Links by (share, id) at their first share, sorted: the filling takes them in order.
    order: Vec<(u64, u32)>,
    /// Links whose share had risen when their turn came (a share only rises as flows freeze
    /// elsewhere), by (share, id), lazily updated the same way. Most links never saturate
    /// (their flows all freeze elsewhere first; 85% of them at 1,000 flows on `bench`'s
    /// fat-tree) and each costs a step along `order`, not a heap pop; the two together pop
    /// exactly what one heap of every link would, in the same order.
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

/// A heap key ordering non-negative shares (negative rounding counts as zero).
fn key(x: f64) -> u64 {
    if x > 0.0 { x.to_bits() } else { 0 }
}

impl Rebuild {
    /// The next link to saturate: the least (share, id) among `order` from `next` on and
    /// `heap`, skipping links with no rising flow left and requeueing those whose share has
    /// risen since their entry; with its share.
    fn next_saturating(&mut self, next: &mut usize) -> Option<(u32, f64)> {
        loop {
            let first = self.order.get(*next).copied();
            let (k, l, in_order) = match (first, self.heap.peek()) {
                (Some(a), Some(&Reverse(b))) if b < a => (b.0, b.1, false),
                (Some(a), _) => (a.0, a.1, true),
                (None, Some(&Reverse(b))) => (b.0, b.1, false),
                (None, None) => return None,
            };
            let li = l as usize;
            let share = if self.rising[li] == 0 {
                None
            } else {
                Some(self.left[li] / f64::from(self.rising[li]))
            };
            if let Some(x) = share
                && key(x) != k
            {
                if in_order {
                    *next += 1;
                    self.heap.push(Reverse((key(x), l)));
                } else if let Some(mut top) = self.heap.peek_mut() {
                    // Requeued in place: one sift instead of a pop and a push.
                    *top = Reverse((key(x), l));
                }
                continue;
            }
            if in_order {
                *next += 1;
            } else if let Some(top) = self.heap.peek_mut() {
                PeekMut::pop(top);
            }
            if let Some(x) = share {
                return Some((l, x));
            }
        }
    }
}

impl FlowNet {
    /// Recompute every rate from scratch after registering the flows `fresh` (on their links,
    /// in no class yet) with their bytes; every live flow with links is refilled.
    pub(super) fn rebuild(&mut self, fresh: &[(u32, f64)]) {
        let mut s = std::mem::take(&mut self.scratch);
        s.flows.clear();
        s.links.clear();
        s.order.clear();
        s.heap.clear();
        if s.left.len() < self.capacity.len() {
            s.left.resize(self.capacity.len(), 0.0);
            s.rising.resize(self.capacity.len(), 0);
        }
        // The old classes dissolve; their members keep their bytes left.
        for k in 0..self.live.len() {
            let g = self.live[k];
            let c = self.class_of[g as usize];
            if c == NONE || self.flows[g as usize].links.is_empty() {
                continue;
            }
            s.flows.push((g, self.left_of(g)));
        }
        for k in 0..s.flows.len() {
            let g = s.flows[k].0 as usize;
            let c = self.class_of[g];
            self.class_of[g] = NONE;
            let k = &mut self.classes[c as usize];
            if k.alive {
                k.members.clear();
                k.tracked.clear();
                k.slack.clear();
                k.heap.clear();
                k.bottleneck = NONE;
                k.alive = false;
                k.version = k.version.wrapping_add(1);
                self.free_classes.push(c);
            }
        }
        s.flows.extend(
            fresh
                .iter()
                .filter(|&&(g, _)| !self.flows[g as usize].links.is_empty()),
        );
        // Every link they cross starts empty, its share its capacity over its crossings.
        let seen = self.next_epoch();
        for k in 0..s.flows.len() {
            let g = s.flows[k].0 as usize;
            for &(l, _) in &self.flows[g].links {
                let li = l as usize;
                if self.mark_link[li] == seen {
                    continue;
                }
                self.mark_link[li] = seen;
                s.links.push(l);
                self.load[li] = 0.0;
                self.fastest[li] = 0.0;
                self.tracked[li] = false;
                self.classes_on[li].clear();
                self.held[li].clear();
                s.left[li] = self.capacity[li];
                s.rising[li] = self.crossings[li];
                let share = self.capacity[li] / f64::from(self.crossings[li]);
                s.order.push((key(share), l));
            }
        }
        s.order.sort_unstable();
        // The filling: the lowest share saturates its link; its unfrozen flows freeze there
        // (a flow's class is its mark of frozen).
        let mut next = 0;
        while let Some((l, share)) = s.next_saturating(&mut next) {
            let li = l as usize;
            // A cut link stalls its flows at exactly 0 (`Wire::stalled` looks for rate 0).
            let x = if self.capacity[li] == 0.0 {
                0.0
            } else {
                share.max(0.0)
            };
            let c = self.new_class();
            self.classes[c as usize].rate = x;
            self.set_bottleneck(c, l);
            self.tracked[li] = true;
            for n in 0..self.on_link[li].len() {
                let g = self.on_link[li][n] as usize;
                if self.class_of[g] != NONE {
                    continue;
                }
                self.class_of[g] = c;
                for &(m, mult) in &self.flows[g].links {
                    s.left[m as usize] -= f64::from(mult) * x;
                    s.rising[m as usize] -= mult;
                }
            }
        }
        // Members join their classes now that every tracked link is known.
        for k in 0..s.flows.len() {
            let (g, left) = s.flows[k];
            let c = self.class_of[g as usize];
            self.join_class(c, g, left);
        }
        for k in 0..s.links.len() {
            let l = s.links[k] as usize;
            self.touch(l);
        }
        self.scratch = s;
    }
}
