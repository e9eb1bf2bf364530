//! The alive nodes in the hybrid policy's order, (score key, node id), in sorted blocks that
//! know the least and the most room their nodes have, so "the r-th node in order with room
//! for a plain request" skips whole blocks instead of visiting nodes one by one.
//!
//! Why: Ray's hybrid policy picks the r-th best available node, r drawn below k = 20% of the
//! cluster, so a placement on 10,000 nodes walked about a thousand of them: two thirds of
//! `orrery bench`'s 10k-node x 1M-task run (issue 44).
//!
//! How: blocks of at most 2 x [`BLOCK`] consecutive entries of the order, each with, per
//! resource some request has named (and a dimension that is 1 for a node without GPUs), the
//! minimum and maximum of its nodes' *room*, min(total, available) from [`PlainIndex`]. A
//! plain request fits a node exactly when every amount is within its room
//! (`PlainIndex::fits`; the order holds only alive nodes), so a block whose maximum lacks
//! room has no fitting node and one whose minimum has room has only fitting nodes; only the
//! others are scanned. A node's room changing widens its block's bounds to take the new room
//! in, so they stay true bounds (every node's room within them) without a pass over the
//! block; they may then be loose (a node that was the minimum gained room), which can only
//! turn a block's verdict from all or none into some, so a loose block is made exact (one
//! pass over its nodes) only when it would otherwise be scanned node by node.
//! Debug builds check every search against the node-by-node walk (`task::hybrid_pass`).

use super::NodeId;
use super::plain::PlainIndex;
use super::resources::Request;

/// Entries per block when built; a block splits past twice this.
const BLOCK: usize = 64;
/// `block_of` of a node not in the order (dead).
const OUT: u32 = u32::MAX;

#[derive(Debug, Clone, Default)]
pub(crate) struct Order {
    /// Blocks by id (stable: a node's `block_of` survives other blocks splitting).
    blocks: Vec<Block>,
    /// Block ids in order.
    seq: Vec<u32>,
    /// The last entry of each block of `seq`, at the same position: the block an entry goes
    /// to is a binary search over this one array (over the blocks' own vectors it was two
    /// cache misses a step, 5% of `orrery bench`'s 10k-node run).
    seq_last: Vec<(u32, u32)>,
    /// Ids of blocks emptied (out of `seq`), reused before new ones: the blocks stay as
    /// many as the order needs however long a run churns.
    free: Vec<u32>,
    /// Per node: the id of the block holding it, or [`OUT`].
    block_of: Vec<u32>,
    /// The dimensions some request has asked for, the only ones blocks keep bounds of (a
    /// cluster may have thousands of resource ids, one per node or label, while requests
    /// name a few): bounds[j] is dimension watched[j]'s.
    watched: Vec<usize>,
    /// A search's request as (watched slot, amount), kept so searching allocates nothing.
    needs: Vec<(usize, i64)>,
}

#[derive(Debug, Clone, Default)]
struct Block {
    items: Vec<(u32, u32)>,
    /// Per watched dimension [min, max] bounds of the room of `items`' nodes: every node's
    /// room lies within them (exactly their minimum and maximum unless `loose`); meaningless
    /// while `stale`.
    /// Inline for up to three dimensions: the walk reads a block's bounds without a second
    /// pointer to chase.
    bounds: Bounds,
    stale: bool,
    loose: bool,
}

/// A block's bounds, one [min, max] per watched dimension.
type Bounds = smallvec::SmallVec<[[i64; 2]; 3]>;

/// What a block holds for a request.
enum Verdict {
    None,
    All,
    Some,
}

impl Order {
    /// `nodes` alive nodes, none loaded: all score 0, in id order.
    pub(crate) fn unloaded(nodes: usize) -> Order {
        let key = super::state::score_key(0.0);
        let mut o = Order {
            block_of: vec![OUT; nodes],
            ..Order::default()
        };
        for lo in (0..nodes).step_by(BLOCK) {
            let items = (lo..(lo + BLOCK).min(nodes))
                .map(|n| (key, n as u32))
                .collect();
            let id = o.new_block(items);
            o.seq.push(id);
            o.seq_last
                .push(*o.blocks[id as usize].items.last().expect("non-empty"));
        }
        o
    }

    /// The entries in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(u32, u32)> {
        self.seq
            .iter()
            .flat_map(|&b| self.blocks[b as usize].items.iter())
    }

    /// Node `node`'s room changed (`plain` already holds the new one): its block's bounds
    /// widen to take it in, and may be loose.
    pub(crate) fn touch(&mut self, node: NodeId, plain: &PlainIndex) {
        if let Some(&b) = self.block_of.get(node)
            && b != OUT
        {
            self.widen(b as usize, node, plain);
            self.blocks[b as usize].loose = true;
        }
    }

    /// Block `b`'s bounds widened to node `node`'s room (nothing while they are stale).
    fn widen(&mut self, b: usize, node: NodeId, plain: &PlainIndex) {
        let blk = &mut self.blocks[b];
        if blk.stale {
            return;
        }
        for (&d, mm) in self.watched.iter().zip(blk.bounds.iter_mut()) {
            let x = plain.room(node, d);
            *mm = [mm[0].min(x), mm[1].max(x)];
        }
    }

    /// Add `(key, node)` (`plain` holding its room); false if the node is already in the
    /// order.
    pub(crate) fn insert(&mut self, key: u32, node: NodeId, plain: &PlainIndex) -> bool {
        if self.block_of[node] != OUT {
            return false;
        }
        let e = (key, node as u32);
        if self.seq.is_empty() {
            let id = self.new_block(vec![e]);
            self.seq.push(id);
            self.seq_last.push(e);
            return true;
        }
        // The first block whose last entry is not below `e` (else the last block).
        let at = self
            .seq_last
            .partition_point(|&x| x < e)
            .min(self.seq.len() - 1);
        let b = self.seq[at] as usize;
        let blk = &mut self.blocks[b];
        let i = blk.items.partition_point(|x| *x < e);
        blk.items.insert(i, e);
        if i + 1 == blk.items.len() {
            self.seq_last[at] = e;
        }
        self.block_of[node] = b as u32;
        self.widen(b, node, plain);
        let blk = &self.blocks[b];
        if blk.items.len() > 2 * BLOCK {
            self.split(at);
        }
        true
    }

    /// Remove `(key, node)`; false if it is not in the order.
    pub(crate) fn remove(&mut self, key: u32, node: NodeId) -> bool {
        let b = self.block_of[node];
        if b == OUT {
            return false;
        }
        let e = (key, node as u32);
        let blk = &mut self.blocks[b as usize];
        let Ok(i) = blk.items.binary_search(&e) else {
            return false;
        };
        blk.items.remove(i);
        blk.loose = true;
        self.block_of[node] = OUT;
        let (len, last) = (blk.items.len(), blk.items.last().copied());
        if i == len {
            // `e` was its block's last entry: the block's place is where `e` is in `seq_last`.
            let at = self.seq_last.partition_point(|&x| x < e);
            debug_assert_eq!(self.seq_last[at], e);
            match last {
                Some(l) => self.seq_last[at] = l,
                None => {
                    self.seq.remove(at);
                    self.seq_last.remove(at);
                    self.free.push(b);
                    return true;
                }
            }
        }
        if len < BLOCK / 2
            && self.seq.len() > 1
            && let Some(l) = last
        {
            let at = self.seq_last.partition_point(|&x| x < l);
            self.merge(at.min(self.seq.len() - 2));
        }
        true
    }

    /// The blocks at `at` and `at + 1` in order made one (split again if it is too long):
    /// a block that has shrunk below half [`BLOCK`] joins a neighbour, so searches never
    /// pass many small blocks where nodes churn.
    fn merge(&mut self, at: usize) {
        let (l, r) = (self.seq[at] as usize, self.seq[at + 1] as usize);
        let moved = std::mem::take(&mut self.blocks[r].items);
        for &(_, n) in &moved {
            self.block_of[n as usize] = l as u32;
        }
        let right = std::mem::take(&mut self.blocks[r]);
        let left = &mut self.blocks[l];
        left.items.extend(moved);
        // Both blocks' nodes lie within the two bounds' union.
        if left.stale || right.stale {
            left.stale = true;
        } else {
            for (mm, o) in left.bounds.iter_mut().zip(&right.bounds) {
                *mm = [mm[0].min(o[0]), mm[1].max(o[1])];
            }
        }
        left.loose = true;
        self.seq.remove(at + 1);
        self.seq_last[at] = self.seq_last.remove(at + 1);
        self.free.push(r as u32);
        if self.blocks[l].items.len() > 2 * BLOCK {
            self.split(at);
        }
    }

    fn split(&mut self, at: usize) {
        let b = self.seq[at] as usize;
        let tail = self.blocks[b].items.split_off(BLOCK);
        let id = self.new_block(tail);
        // Both halves' nodes lie within the whole block's bounds.
        let (bounds, stale) = (self.blocks[b].bounds.clone(), self.blocks[b].stale);
        for h in [b, id as usize] {
            let blk = &mut self.blocks[h];
            blk.bounds.clone_from(&bounds);
            (blk.stale, blk.loose) = (stale, true);
        }
        self.seq.insert(at + 1, id);
        let last = *self.blocks[b].items.last().expect("BLOCK entries");
        let whole = std::mem::replace(&mut self.seq_last[at], last);
        self.seq_last.insert(at + 1, whole);
    }

    /// A block holding `items` (an emptied one's id if any), its nodes' `block_of` set, not
    /// yet in `seq`.
    fn new_block(&mut self, items: Vec<(u32, u32)>) -> u32 {
        let id = self
            .free
            .last()
            .copied()
            .unwrap_or(self.blocks.len() as u32);
        for &(_, n) in &items {
            self.block_of[n as usize] = id;
        }
        let blk = Block {
            items,
            bounds: Bounds::new(),
            stale: true,
            loose: false,
        };
        match self.free.pop() {
            Some(id) => {
                self.blocks[id as usize] = blk;
                id
            }
            None => {
                self.blocks.push(blk);
                self.blocks.len() as u32 - 1
            }
        }
    }

    /// The watched slot of dimension `d`, watching it if it is not yet (every block's bounds
    /// are then stale).
    fn slot(&mut self, d: usize) -> usize {
        match self.watched.iter().position(|&w| w == d) {
            Some(j) => j,
            None => {
                self.watched.push(d);
                self.blocks.iter_mut().for_each(|b| b.stale = true);
                self.watched.len() - 1
            }
        }
    }

    /// `needs` filled with the request as (watched slot, amount); false when it names a
    /// resource no node has.
    fn fill_needs(&mut self, plain: &PlainIndex, req: &Request, non_gpu: bool) -> bool {
        let stride = plain.stride();
        let mut needs = std::mem::take(&mut self.needs);
        needs.clear();
        let mut known = true;
        for &(id, a) in &req.amounts {
            if id >= stride {
                known = false;
                break;
            }
            needs.push((self.slot(id), a));
        }
        if non_gpu {
            needs.push((self.slot(stride), 1));
        }
        self.needs = needs;
        known
    }

    /// Block `b`'s nodes all have room for `needs`, none has, or some have: from its bounds,
    /// made exact first where they are stale, or loose and would say "some".
    fn verdict(&mut self, b: usize, plain: &PlainIndex, needs: &[(usize, i64)]) -> Verdict {
        let blk = &mut self.blocks[b];
        if blk.stale {
            Self::exact_bounds(blk, &self.watched, plain);
        }
        match Self::judge(&blk.bounds, needs) {
            Verdict::Some if blk.loose => {
                Self::exact_bounds(blk, &self.watched, plain);
                Self::judge(&blk.bounds, needs)
            }
            v => v,
        }
    }

    fn judge(bd: &[[i64; 2]], needs: &[(usize, i64)]) -> Verdict {
        if needs.iter().any(|&(d, a)| bd[d][1] < a) {
            Verdict::None
        } else if needs.iter().all(|&(d, a)| bd[d][0] >= a) {
            Verdict::All
        } else {
            Verdict::Some
        }
    }

    /// `blk`'s bounds recomputed from its nodes' rooms: exact.
    fn exact_bounds(blk: &mut Block, watched: &[usize], plain: &PlainIndex) {
        blk.bounds.clear();
        blk.bounds.resize(watched.len(), [i64::MAX, i64::MIN]);
        for &(_, n) in &blk.items {
            for (&d, mm) in watched.iter().zip(blk.bounds.iter_mut()) {
                let x = plain.room(n as usize, d);
                *mm = [mm[0].min(x), mm[1].max(x)];
            }
        }
        blk.stale = false;
        blk.loose = false;
    }

    /// The `r`-th (from 0) entry in order whose node has room for plain request `req` (and no
    /// GPU when `non_gpu`); when fewer have, how many.
    pub(crate) fn nth(
        &mut self,
        plain: &PlainIndex,
        req: &Request,
        non_gpu: bool,
        r: usize,
    ) -> Result<(u32, NodeId), usize> {
        if !self.fill_needs(plain, req, non_gpu) {
            return Err(0);
        }
        let needs = std::mem::take(&mut self.needs);
        let found = self.search(plain, req, non_gpu, &needs, r);
        self.needs = needs;
        found
    }

    fn search(
        &mut self,
        plain: &PlainIndex,
        req: &Request,
        non_gpu: bool,
        needs: &[(usize, i64)],
        r: usize,
    ) -> Result<(u32, NodeId), usize> {
        let mut left = r;
        for s in 0..self.seq.len() {
            let b = self.seq[s] as usize;
            match self.verdict(b, plain, needs) {
                Verdict::None => {}
                Verdict::All => {
                    let items = &self.blocks[b].items;
                    if left < items.len() {
                        let (key, n) = items[left];
                        return Ok((key, n as usize));
                    }
                    left -= items.len();
                }
                Verdict::Some => {
                    for &(key, n) in &self.blocks[b].items {
                        if plain.fits(n as usize, req, non_gpu) {
                            if left == 0 {
                                return Ok((key, n as usize));
                            }
                            left -= 1;
                        }
                    }
                }
            }
        }
        Err(r - left)
    }
}

#[cfg(test)]
mod tests {
    use super::{BLOCK, Order, PlainIndex, Request};
    use rand::{RngExt, SeedableRng};
    use std::collections::BTreeSet;

    #[test]
    fn blocks_stay_sorted_and_bounded_under_churn() {
        // The order against a BTreeSet model over 100,000 random moves of 500 nodes between
        // 40 keys, deaths and returns: same entries in the same order, and no more blocks
        // than the entries need (emptied ones are reused).
        let n = 500;
        let plain = PlainIndex::default();
        let mut o = Order::unloaded(n);
        let mut model: BTreeSet<(u32, u32)> = (0..n as u32).map(|i| (0, i)).collect();
        let mut key = vec![Some(0u32); n];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for step in 0..100_000 {
            let i = rng.random_range(0..n);
            match key[i] {
                Some(k) if rng.random_range(0..10) == 0 => {
                    assert!(o.remove(k, i) && model.remove(&(k, i as u32)));
                    key[i] = None;
                }
                Some(k) => {
                    let k2 = rng.random_range(0..40);
                    assert!(o.remove(k, i) && model.remove(&(k, i as u32)));
                    assert!(o.insert(k2, i, &plain) && model.insert((k2, i as u32)));
                    key[i] = Some(k2);
                }
                None => {
                    let k2 = rng.random_range(0..40);
                    assert!(o.insert(k2, i, &plain) && model.insert((k2, i as u32)));
                    key[i] = Some(k2);
                }
            }
            if step % 997 == 0 {
                assert!(o.iter().eq(model.iter()), "step {step}");
            }
            let live = o.seq.len();
            assert_eq!(o.blocks.len(), live + o.free.len());
            let lasts = o
                .seq
                .iter()
                .map(|&b| *o.blocks[b as usize].items.last().unwrap());
            assert!(
                lasts.eq(o.seq_last.iter().copied()),
                "step {step}: seq_last"
            );
            let small = o
                .seq
                .iter()
                .filter(|&&b| o.blocks[b as usize].items.len() < BLOCK / 2);
            assert!(small.count() <= 1, "step {step}: small blocks are merged");
            assert!(live <= model.len().max(1), "step {step}: {live} blocks");
        }
        assert!(o.iter().eq(model.iter()));
        assert!(
            o.blocks.len() <= 2 * n / BLOCK + 8,
            "{} blocks",
            o.blocks.len()
        );
        // Removing what is not there is refused.
        let (k, i) = *model.iter().next().unwrap();
        assert!(!o.remove(k + 1, i as usize));
        assert!(!o.insert(k, i as usize, &plain));
    }

    #[test]
    fn searches_match_the_node_by_node_walk_while_bounds_widen() {
        // 1,000 nodes of two resources (64 and 8 units) under 200,000 random takes and gives
        // back, each moving the node in the order as the engine does (remove, insert, touch):
        // every block's bounds hold every node's room, and the r-th node with room for a
        // request is the walk's r-th, for requests of either resource or both.
        let (n, stride) = (1_000, 2);
        let total = [64i64, 8];
        let rows = (0..n).flat_map(|_| total.map(|t| [t, t])).collect();
        let mut plain = PlainIndex::from_rows(stride, rows);
        let mut o = Order::unloaded(n);
        let mut key = vec![0u32; n];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let reqs = [
            Request::from_amounts(vec![(0, 1)]),
            Request::from_amounts(vec![(0, 16), (1, 2)]),
            Request::from_amounts(vec![(1, 8)]),
        ];
        for step in 0..200_000 {
            let i = rng.random_range(0..n);
            let d = rng.random_range(0..stride);
            let avail = rng.random_range(0..=total[d]);
            plain.set_available(i, d, avail);
            let k2 = (plain.room(i, 0) * 100 / 64) as u32;
            if k2 != key[i] {
                assert!(o.remove(key[i], i));
                assert!(o.insert(k2, i, &plain));
                key[i] = k2;
            }
            o.touch(i, &plain);
            let req = &reqs[step % reqs.len()];
            let walk: Vec<usize> = o
                .iter()
                .filter(|&&(_, id)| plain.fits(id as usize, req, false))
                .map(|&(_, id)| id as usize)
                .collect();
            let r = rng.random_range(0..n / 2);
            match o.nth(&plain, req, false, r) {
                Ok((_, id)) => assert_eq!(walk.get(r), Some(&id), "step {step}"),
                Err(m) => assert_eq!(walk.len(), m, "step {step}"),
            }
            if step % 101 == 0 {
                for &b in &o.seq {
                    let blk = &o.blocks[b as usize];
                    if blk.stale {
                        continue;
                    }
                    for &(_, id) in &blk.items {
                        for (j, &d) in o.watched.iter().enumerate() {
                            let x = plain.room(id as usize, d);
                            let [lo, hi] = blk.bounds[j];
                            assert!(lo <= x && x <= hi, "step {step}: {x} not in [{lo}, {hi}]");
                        }
                    }
                }
            }
        }
    }
}
