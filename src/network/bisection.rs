//! Bisection of an explicit fabric: the most traffic the first half of its racks can send to
//! the second half at once, as a maximum flow over the switch graph (Dinic's algorithm,
//! Dinitz 1970; any max-flow algorithm gives the same value, the min cut's capacity by
//! Ford–Fulkerson).
//!
//! The halves are the racks with compute NICs in declaration order, split at the middle (the
//! first ⌊R/2⌋ racks against the rest), each rack sending or receiving at most its injection
//! bandwidth on each of its attach switches. For shapes declared in their natural order
//! (a torus attached row-major, dragonfly groups in order) this is the cut across the first
//! dimension, their textbook bisection; for others it is that particular cut, which bounds the
//! bisection (the minimum over all balanced cuts) from above.

use crate::scenario::topology::Topology;

/// One direction of a residual edge.
struct Edge {
    to: usize,
    cap: f64,
}

/// A small Dinic max-flow network with f64 capacities.
struct MaxFlow {
    edges: Vec<Edge>,
    adj: Vec<Vec<usize>>,
}

/// Residual capacities below this (bytes/s) count as saturated.
const EPS: f64 = 1e-3;

impl MaxFlow {
    fn new(n: usize) -> Self {
        MaxFlow {
            edges: Vec::new(),
            adj: vec![Vec::new(); n],
        }
    }

    fn add(&mut self, a: usize, b: usize, cap: f64) {
        self.adj[a].push(self.edges.len());
        self.edges.push(Edge { to: b, cap });
        self.adj[b].push(self.edges.len());
        self.edges.push(Edge { to: a, cap: 0.0 });
    }

    fn levels(&self, s: usize) -> Vec<u32> {
        let mut level = vec![u32::MAX; self.adj.len()];
        level[s] = 0;
        let mut q = std::collections::VecDeque::from([s]);
        while let Some(v) = q.pop_front() {
            for &e in &self.adj[v] {
                let Edge { to, cap } = self.edges[e];
                if cap > EPS && level[to] == u32::MAX {
                    level[to] = level[v] + 1;
                    q.push_back(to);
                }
            }
        }
        level
    }

    /// One blocking-flow augmentation along level-increasing paths, iteratively (no recursion
    /// depth to bound): returns the flow pushed along one path, 0 when none is left.
    fn augment(&mut self, s: usize, t: usize, level: &[u32], next: &mut [usize]) -> f64 {
        let mut stack: Vec<usize> = Vec::new(); // edges on the current path
        let mut v = s;
        loop {
            if v == t {
                let f = stack
                    .iter()
                    .map(|&e| self.edges[e].cap)
                    .fold(f64::INFINITY, f64::min);
                for &e in &stack {
                    self.edges[e].cap -= f;
                    self.edges[e ^ 1].cap += f;
                }
                return f;
            }
            let mut advanced = false;
            while next[v] < self.adj[v].len() {
                let e = self.adj[v][next[v]];
                let Edge { to, cap } = self.edges[e];
                if cap > EPS && level[to] == level[v] + 1 {
                    stack.push(e);
                    v = to;
                    advanced = true;
                    break;
                }
                next[v] += 1;
            }
            if !advanced {
                // Dead end: retreat and skip the edge that led here.
                let Some(e) = stack.pop() else { return 0.0 };
                v = self.edges[e ^ 1].to;
                next[v] += 1;
            }
        }
    }

    fn run(&mut self, s: usize, t: usize) -> f64 {
        let mut total = 0.0;
        loop {
            let level = self.levels(s);
            if level[t] == u32::MAX {
                return total;
            }
            let mut next = vec![0; self.adj.len()];
            loop {
                let f = self.augment(s, t, &level, &mut next);
                if f <= EPS {
                    break;
                }
                total += f;
            }
        }
    }
}

/// Bisection per direction (bytes/s) of an explicit fabric whose racks inject
/// `injection[rack][k]` bytes/s on their k-th attach switch (see the module docs).
pub fn explicit_bisection(t: &Topology, injection: &[Vec<f64>]) -> f64 {
    let n = t.switches.len();
    let (src, sink) = (n, n + 1);
    let mut mf = MaxFlow::new(n + 2);
    for l in &t.links {
        mf.add(l.a as usize, l.b as usize, l.bandwidth.0);
        mf.add(l.b as usize, l.a as usize, l.bandwidth.0);
    }
    let racks: Vec<usize> = (0..t.attach.len())
        .filter(|r| {
            t.attach[*r].is_some()
                && injection
                    .get(*r)
                    .is_some_and(|i| i.iter().sum::<f64>() > 0.0)
        })
        .collect();
    let half = racks.len() / 2;
    for (k, &r) in racks.iter().enumerate() {
        let Some(a) = &t.attach[r] else { continue };
        for (j, s) in a.switches.iter().enumerate() {
            let inj = injection[r].get(j).copied().unwrap_or(0.0);
            if k < half {
                mf.add(src, *s as usize, inj);
            } else {
                mf.add(*s as usize, sink, inj);
            }
        }
    }
    if half == 0 {
        return 0.0;
    }
    mf.run(src, sink)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_flow_of_two_paths_is_their_bottlenecks_sum() {
        // s→a 5, a→t 3, s→b 2, b→t 4, a→b 10: a sends 3 to t and 2 on through b, which
        // also takes s's 2 — 7, the cut {s→a, s→b}.
        let mut mf = MaxFlow::new(4);
        let (s, a, b, t) = (0, 1, 2, 3);
        mf.add(s, a, 5.0);
        mf.add(a, t, 3.0);
        mf.add(s, b, 2.0);
        mf.add(b, t, 4.0);
        mf.add(a, b, 10.0);
        assert!((mf.run(s, t) - 7.0).abs() < 1e-9);
    }
}
