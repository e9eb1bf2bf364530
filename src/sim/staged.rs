//! Level changes held back and applied in bursts, grouped by index: a per-node tracker on a
//! large cluster (10,000 nodes) otherwise misses the cache on every change, reaching a random
//! node's vector; grouped, each node's vector is reached once per burst, in index order.
//!
//! Exact: each index gets its changes in the order they came (a stable counting sort), and
//! the tracker applies them only through this order, so its state after a burst is what
//! applying each change as it came would give.

use crate::engine::Time;

/// How many changes wait before a burst: 32,768 (768 KiB, twice: the changes and their
/// sorted copy).
const BURST: usize = 1 << 15;

/// Changes `(index, time, delta)` waiting to be applied.
#[derive(Default)]
pub(super) struct Staged {
    waiting: Vec<(u32, Time, f64)>,
    sorted: Vec<(u32, Time, f64)>,
    /// Per index, where its changes start in `sorted` (a counting sort's offsets).
    offsets: Vec<u32>,
}

impl Staged {
    /// Hold a change back; true when a burst is due ([`Staged::apply`]).
    #[inline]
    pub(super) fn push(&mut self, index: u32, at: Time, delta: f64) -> bool {
        self.waiting.push((index, at, delta));
        self.waiting.len() >= BURST
    }

    /// Every change held back, to `f(index, time, delta)`, by index and, within an index, in
    /// the order they came.
    pub(super) fn apply(&mut self, mut f: impl FnMut(usize, Time, f64)) {
        if self.waiting.is_empty() {
            return;
        }
        let n = self
            .waiting
            .iter()
            .map(|c| c.0 as usize + 1)
            .max()
            .unwrap_or(0);
        self.offsets.clear();
        self.offsets.resize(n + 1, 0);
        for c in &self.waiting {
            self.offsets[c.0 as usize + 1] += 1;
        }
        for i in 1..=n {
            self.offsets[i] += self.offsets[i - 1];
        }
        self.sorted.clear();
        self.sorted.resize(self.waiting.len(), (0, 0, 0.0));
        for &c in &self.waiting {
            let at = &mut self.offsets[c.0 as usize];
            self.sorted[*at as usize] = c;
            *at += 1;
        }
        self.waiting.clear();
        for &(i, at, d) in &self.sorted {
            f(i as usize, at, d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_come_back_by_index_in_their_order() {
        let mut s = Staged::default();
        let input = [
            (3, 1, 1.0),
            (0, 2, 2.0),
            (3, 0, 3.0),
            (1, 5, 4.0),
            (0, 1, 5.0),
        ];
        for &(i, t, d) in &input {
            assert!(!s.push(i, t, d));
        }
        let mut out = Vec::new();
        s.apply(|i, t, d| out.push((i as u32, t, d)));
        assert_eq!(
            out,
            vec![
                (0, 2, 2.0),
                (0, 1, 5.0),
                (1, 5, 4.0),
                (3, 1, 1.0),
                (3, 0, 3.0)
            ]
        );
        out.clear();
        s.apply(|i, t, d| out.push((i as u32, t, d)));
        assert!(out.is_empty());
    }
}
