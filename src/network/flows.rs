//! Flow-level bandwidth sharing: max-min fairness over directed links (progressive filling),
//! recomputed incrementally when a flow starts or ends or a link changes capacity.
//!
//! Model (SimGrid's CM02 flow model without corrections; shared/reference/
//! hardware-and-models.md "Flow-level network models"): every active flow gets the max-min fair
//! rate over the links of its path; a flow's latency is paid before it joins the sharing (the
//! caller delays `add`). Incremental update: only flows connected to the change through shared
//! links (transitively) can change rate, so only that component is refilled. Rates are exact
//! textbook max-min; any efficiency factor is the caller's to apply to capacities.
//!
//! Architecture invariant: no time here beyond the byte accounting the caller drives with
//! [`FlowNet::advance`]; the engine owns the clock.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Index of a directed link.
pub type LinkId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowId(pub u32);

#[derive(Debug, Clone)]
struct Flow {
    path: Vec<LinkId>,
    remaining: f64,
    rate: f64,
    alive: bool,
}

/// Active flows over links of given capacities (bytes per second).
#[derive(Debug, Clone, Default)]
pub struct FlowNet {
    capacity: Vec<f64>,
    flows: Vec<Flow>,
    free: Vec<u32>,
    /// Active flows crossing each link.
    on_link: Vec<Vec<u32>>,
    // Scratch buffers for refilling, kept to avoid allocating per event.
    mark_flow: Vec<u32>,
    mark_link: Vec<u32>,
    /// Position of each link in the component being refilled.
    link_pos: Vec<usize>,
    epoch: u32,
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
        let mut touched: Vec<LinkId> = Vec::new();
        for (path, bytes) in flows {
            let f = Flow {
                path,
                remaining: bytes.max(0.0),
                rate: 0.0,
                alive: true,
            };
            let id = match self.free.pop() {
                Some(i) => {
                    self.flows[i as usize] = f;
                    i
                }
                None => {
                    self.flows.push(f);
                    self.mark_flow.push(0);
                    (self.flows.len() - 1) as u32
                }
            };
            if self.flows[id as usize].path.is_empty() {
                self.flows[id as usize].rate = f64::INFINITY;
            }
            let mut links = self.flows[id as usize].path.clone();
            links.sort_unstable();
            links.dedup();
            for &l in &links {
                self.on_link[l].push(id);
            }
            touched.extend(links);
            ids.push(FlowId(id));
        }
        touched.sort_unstable();
        touched.dedup();
        self.refill(&touched, None, 0.0);
        ids
    }

    /// Remove a flow (finished or cancelled); its component is recomputed.
    pub fn remove(&mut self, f: FlowId) {
        let i = f.0 as usize;
        if !self.flows.get(i).is_some_and(|x| x.alive) {
            return;
        }
        self.flows[i].alive = false;
        let mut links = std::mem::take(&mut self.flows[i].path);
        links.sort_unstable();
        links.dedup();
        for &l in &links {
            self.on_link[l].retain(|x| *x != f.0);
        }
        self.free.push(f.0);
        let level = self.flows[i].rate;
        self.refill(&links, None, level);
    }

    /// Change a link's capacity (failure, degradation, repair).
    pub fn set_capacity(&mut self, l: LinkId, capacity: f64) {
        self.capacity[l] = capacity.max(0.0);
        self.refill(&[l], None, 0.0);
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
            .map(|x| x.remaining)
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

    /// Move every active flow forward by `secs` at its current rate.
    pub fn advance(&mut self, secs: f64) {
        for f in self.flows.iter_mut().filter(|f| f.alive) {
            f.remaining = (f.remaining - f.rate * secs).max(0.0);
        }
    }

    /// The flow that finishes first at current rates, and in how many seconds (ties: lowest
    /// id, for determinism).
    pub fn next_completion(&self) -> Option<(FlowId, f64)> {
        let mut best: Option<(FlowId, f64)> = None;
        for (i, f) in self.flows.iter().enumerate() {
            if !f.alive || f.rate <= 0.0 {
                continue;
            }
            let t = if f.remaining <= DONE {
                0.0
            } else {
                f.remaining / f.rate
            };
            if best.is_none_or(|(_, b)| t < b) {
                best = Some((FlowId(i as u32), t));
            }
        }
        best
    }

    /// Recompute max-min rates for the flows connected (through shared links, transitively)
    /// to `links` — the only ones a change there can affect — whose rate is at least `level`.
    ///
    /// `level` makes removals cheap and stays exact: progressive filling freezes flows in
    /// increasing order of rate, and none of a removed flow's links saturated below its rate
    /// (the flow would have frozen there), so every freeze below that level — and every flow
    /// rated below it — is unchanged. Those flows stay fixed: their rates are taken off the
    /// capacities of the links the refill visits, and the refill only walks through flows at
    /// or above the level. Additions and capacity changes refill from level 0.
    fn refill(&mut self, links: &[LinkId], seed_flow: Option<u32>, level: f64) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark_flow.iter_mut().for_each(|m| *m = 0);
            self.mark_link.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        let e = self.epoch;
        if let Some(f) = seed_flow
            && self.flows[f as usize].path.is_empty()
        {
            self.flows[f as usize].rate = f64::INFINITY;
        }
        // Breadth-first over the flow/link bipartite graph, through unfixed flows only.
        let mut comp_links: Vec<LinkId> = Vec::new();
        let mut queue: VecDeque<LinkId> = VecDeque::new();
        for &l in links {
            if self.mark_link[l] != e {
                self.mark_link[l] = e;
                queue.push_back(l);
            }
        }
        while let Some(l) = queue.pop_front() {
            comp_links.push(l);
            for &f in &self.on_link[l] {
                let fl = &self.flows[f as usize];
                // Fixed means clearly below the level: rates equal up to rounding are redone.
                if self.mark_flow[f as usize] == e || fl.rate < level * (1.0 - 1e-9) {
                    continue;
                }
                self.mark_flow[f as usize] = e;
                for &l2 in &fl.path {
                    if self.mark_link[l2] != e {
                        self.mark_link[l2] = e;
                        queue.push_back(l2);
                    }
                }
            }
        }
        // What fixed flows already use, and how many unfixed flows share each link.
        for (i, &l) in comp_links.iter().enumerate() {
            self.link_pos[l] = i;
        }
        let mut left: Vec<f64> = Vec::with_capacity(comp_links.len());
        let mut unfrozen: Vec<usize> = Vec::with_capacity(comp_links.len());
        for &l in &comp_links {
            let (mut cap, mut n) = (self.capacity[l], 0);
            for &f in &self.on_link[l] {
                if self.mark_flow[f as usize] == e {
                    n += 1;
                } else {
                    let fl = &self.flows[f as usize];
                    cap -= fl.rate * fl.path.iter().filter(|x| **x == l).count() as f64;
                }
            }
            left.push(cap);
            unfrozen.push(n);
        }
        // Progressive filling: raise every unfrozen flow's rate together; the link whose fair
        // share is smallest saturates first and freezes its flows at that share. Links wait in
        // a min-heap keyed by (share, link id) — ties go to the lowest link id. Shares only grow
        // as flows freeze, so every queued key is at most its link's current share: a popped
        // key equal to the share is the true minimum, a smaller one is re-queued at the share
        // (lazy updates: freezing a flow touches its links' counters, not the heap).
        let key = |x: f64| x.max(0.0).to_bits();
        let mut heap: BinaryHeap<Reverse<(u64, LinkId)>> = comp_links
            .iter()
            .enumerate()
            .filter(|(i, _)| unfrozen[*i] > 0)
            .map(|(i, &l)| Reverse((key(left[i] / unfrozen[i] as f64), l)))
            .collect();
        self.epoch = self.epoch.wrapping_add(1).max(1);
        let frozen = self.epoch;
        while let Some(Reverse((k, l))) = heap.pop() {
            let i = self.link_pos[l];
            if unfrozen[i] == 0 {
                continue;
            }
            let share = left[i] / unfrozen[i] as f64;
            if key(share) != k {
                // Stale: the link's share grew since it was queued. Every queued key is at
                // most its link's current share, so re-queue it at its share and go on.
                heap.push(Reverse((key(share), l)));
                continue;
            }
            for n in 0..self.on_link[l].len() {
                let f = self.on_link[l][n] as usize;
                // Unfixed flows carry the component mark `e`; frozen ones carry `frozen`.
                if self.mark_flow[f] != e {
                    continue;
                }
                self.mark_flow[f] = frozen;
                self.flows[f].rate = share.max(0.0);
                for m in 0..self.flows[f].path.len() {
                    let l2 = self.flows[f].path[m];
                    let i2 = self.link_pos[l2];
                    left[i2] -= share;
                    // A link counts each flow once, however often its path crosses it.
                    if !self.flows[f].path[..m].contains(&l2) {
                        unfrozen[i2] -= 1;
                    }
                }
            }
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
