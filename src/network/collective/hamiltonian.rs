//! Arc-disjoint directed Hamiltonian cycles of the complete digraph on p vertices: the rings a
//! collective runs over a fully connected mesh (MI300X's Infinity Fabric), each ring on its own
//! directed links, so that together they use every link. Tillson (1980, "A Hamiltonian
//! decomposition of K*_2m, 2m ≥ 8", J. Combin. Theory B 29) shows p − 1 such cycles exist for
//! every p except 4 and 6; RCCL's MI300X topologies likewise list rings over different
//! permutations of the eight GPUs (ROCm/rccl `src/graph/rome_models.cc`, the 8-GPU, 7-link
//! models' `ringBase`). Found by a deterministic depth-first search with a step budget (the
//! most cycles found within it), cached per p.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Largest p searched (the catalog's meshes have 8 devices; larger meshes use strides).
pub const MAX_P: usize = 16;
/// Search steps before settling for the most cycles found (p = 6 needs about a million to
/// prove four is the most).
const BUDGET: u64 = 2_000_000;

static CACHE: Mutex<BTreeMap<usize, Arc<Vec<Vec<usize>>>>> = Mutex::new(BTreeMap::new());

/// Up to p − 1 arc-disjoint Hamiltonian cycles on 0..p, each starting at 0 (empty for p < 3
/// or p > [`MAX_P`]). Deterministic.
pub fn cycles(p: usize) -> Arc<Vec<Vec<usize>>> {
    if !(3..=MAX_P).contains(&p) {
        return Arc::new(Vec::new());
    }
    if let Some(c) = CACHE.lock().ok().and_then(|m| m.get(&p).cloned()) {
        return c;
    }
    let found = Arc::new(search(p));
    if let Ok(mut m) = CACHE.lock() {
        m.insert(p, found.clone());
    }
    found
}

struct Search {
    p: usize,
    used: Vec<bool>,
    cycles: Vec<Vec<usize>>,
    best: Vec<Vec<usize>>,
    steps: u64,
}

fn search(p: usize) -> Vec<Vec<usize>> {
    let mut s = Search {
        p,
        used: (0..p * p).map(|i| i / p == i % p).collect(),
        cycles: Vec::new(),
        best: Vec::new(),
        steps: 0,
    };
    s.decompose();
    s.best
}

impl Search {
    /// Adds cycles until p − 1 (true) or the budget runs out; keeps the best set seen.
    fn decompose(&mut self) -> bool {
        if self.cycles.len() > self.best.len() {
            self.best = self.cycles.clone();
        }
        if self.cycles.len() == self.p - 1 {
            return true;
        }
        let mut path = vec![0];
        let mut visited = vec![false; self.p];
        visited[0] = true;
        self.extend(&mut path, &mut visited)
    }

    /// Extends `path` to a Hamiltonian cycle on unused arcs, then recurses for the next cycle.
    fn extend(&mut self, path: &mut Vec<usize>, visited: &mut [bool]) -> bool {
        self.steps += 1;
        if self.steps > BUDGET {
            return false;
        }
        let p = self.p;
        let u = *path.last().unwrap_or(&0);
        if path.len() == p {
            if self.used[u * p] {
                return false;
            }
            let arcs: Vec<usize> = (0..p).map(|i| path[i] * p + path[(i + 1) % p]).collect();
            for &a in &arcs {
                self.used[a] = true;
            }
            self.cycles.push(path.clone());
            if self.decompose() {
                return true;
            }
            self.cycles.pop();
            for &a in &arcs {
                self.used[a] = false;
            }
            return false;
        }
        for v in 0..p {
            if visited[v] || self.used[u * p + v] {
                continue;
            }
            self.used[u * p + v] = true;
            visited[v] = true;
            path.push(v);
            let done = self.extend(path, visited);
            path.pop();
            visited[v] = false;
            self.used[u * p + v] = false;
            if done || self.steps > BUDGET {
                return done;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(p: usize, want: usize) {
        let c = cycles(p);
        assert_eq!(c.len(), want, "p = {p}");
        let mut arcs = std::collections::HashSet::new();
        for cyc in c.iter() {
            let mut seen = cyc.clone();
            seen.sort_unstable();
            assert_eq!(seen, (0..p).collect::<Vec<_>>(), "not Hamiltonian: {cyc:?}");
            for i in 0..p {
                assert!(
                    arcs.insert((cyc[i], cyc[(i + 1) % p])),
                    "arc reused in {c:?}"
                );
            }
        }
    }

    #[test]
    fn every_link_of_a_mesh_but_the_known_exceptions() {
        // Tillson: p − 1 cycles except p = 4 and 6 (two and four there: the most possible).
        for (p, want) in [
            (3, 2),
            (4, 2),
            (5, 4),
            (6, 4),
            (7, 6),
            (8, 7),
            (12, 11),
            (16, 15),
        ] {
            check(p, want);
        }
        assert!(cycles(2).is_empty() && cycles(17).is_empty());
    }
}
