//! A dense mirror of what the DEFAULT policy's ordered walk asks of every node it passes, for
//! requests without per-device accounting.
//!
//! Why: placing one task under Ray's hybrid policy walks nodes best-first until the drawn
//! rank among the top k = 20 % of the cluster, so on 10,000 nodes a placement visits about
//! a thousand nodes. Through [`NodeState`] each visit chases the node (296 bytes) and two heap
//! vectors (totals, availability): three cache misses, most of a placement's time in
//! `orrery bench`. Here the same numbers sit in one flat array, a node's row in one or two
//! cache lines, and the flags in a byte array that stays in cache.
//!
//! Exactness: a *plain* request (no device memory, and no resource that any node accounts per
//! instance) is available on a node exactly when the node is alive and every amount is within
//! both the node's total and what it has available — what `is_feasible` and `is_available`
//! check through [`NodeState`] for such a request (per-instance resources, the only other
//! branch, are excluded). The mirror is refreshed from the node after every change to its
//! resources or liveness ([`super::ClusterState`] calls [`PlainIndex::refresh`] in each of its
//! mutators), and debug builds compare the two at every use.

use super::NodeId;
use super::resources::Request;
use super::state::NodeState;

const ALIVE: u8 = 1;
const GPU: u8 = 2;

#[derive(Debug, Clone, Default)]
pub(crate) struct PlainIndex {
    /// Resource ids per node row.
    stride: usize,
    /// Per node: [`ALIVE`], [`GPU`] (Ray's `node_resources.total.Has(GPU)`).
    flags: Vec<u8>,
    /// (total, available) of resource `id` on node `n` at `n * stride + id`.
    rows: Vec<[i64; 2]>,
    /// Resource ids some node accounts per instance (devices): requests naming one are not
    /// plain.
    instanced: Vec<bool>,
}

impl PlainIndex {
    /// The mirror of `nodes`, with `resources` resource ids.
    pub(crate) fn build(nodes: &[NodeState], resources: usize) -> PlainIndex {
        let mut ix = PlainIndex {
            stride: resources,
            flags: vec![0; nodes.len()],
            rows: vec![[0; 2]; nodes.len() * resources],
            instanced: vec![false; resources],
        };
        for (n, node) in nodes.iter().enumerate() {
            for id in 0..resources {
                if node.instances(id).is_some() {
                    ix.instanced[id] = true;
                }
            }
            ix.refresh(n, node);
        }
        ix
    }

    /// A mirror of `nodes` nodes without GPUs, alive, each with (total, available) per
    /// resource id from `rows` (`stride` per node): for tests of what reads it.
    #[cfg(test)]
    pub(crate) fn from_rows(stride: usize, rows: Vec<[i64; 2]>) -> PlainIndex {
        let nodes = rows.len() / stride.max(1);
        PlainIndex {
            stride,
            flags: vec![ALIVE; nodes],
            rows,
            instanced: vec![false; stride],
        }
    }

    /// Node `n`'s available amount of resource `id` set to `avail`: for tests.
    #[cfg(test)]
    pub(crate) fn set_available(&mut self, n: NodeId, id: usize, avail: i64) {
        self.rows[n * self.stride + id][1] = avail;
    }

    /// Copy node `n`'s liveness and resources (after any change to them).
    pub(crate) fn refresh(&mut self, n: NodeId, node: &NodeState) {
        let Some(f) = self.flags.get_mut(n) else {
            return;
        };
        *f = if node.alive() { ALIVE } else { 0 } | if node.has_gpu() { GPU } else { 0 };
        let row = &mut self.rows[n * self.stride..(n + 1) * self.stride];
        for (id, r) in row.iter_mut().enumerate() {
            *r = [node.total(id), node.available(id)];
        }
    }

    /// Copy node `n`'s available amounts after an allocation or a release (its liveness and
    /// totals unchanged, so not reread: they sit in cold memory); false if `n` has no row.
    pub(crate) fn refresh_available(&mut self, n: NodeId, node: &NodeState) -> bool {
        if n >= self.flags.len() {
            return false;
        }
        let row = &mut self.rows[n * self.stride..(n + 1) * self.stride];
        for (id, r) in row.iter_mut().enumerate() {
            r[1] = node.available(id);
        }
        true
    }

    /// Node `n`'s (total, available) of resource `id`; (0, 0) past the row, as
    /// [`NodeState::total`] and [`NodeState::available`] give for an id the node lacks.
    #[inline]
    pub(crate) fn amounts(&self, n: NodeId, id: usize) -> (i64, i64) {
        if id < self.stride {
            let [t, a] = self.rows[n * self.stride + id];
            (t, a)
        } else {
            (0, 0)
        }
    }

    /// Resource ids per node row.
    pub(crate) fn stride(&self) -> usize {
        self.stride
    }

    /// Node `n`'s room in dimension `d`: min(total, available) of resource `d`, or for
    /// `d == stride`, 1 when the node has no GPU (0 when it has). A plain request fits an
    /// alive node exactly when every amount is within its room ([`super::order`]).
    #[inline]
    pub(crate) fn room(&self, n: NodeId, d: usize) -> i64 {
        if d < self.stride {
            let [total, avail] = self.rows[n * self.stride + d];
            total.min(avail)
        } else {
            i64::from(self.flags[n] & GPU == 0)
        }
    }

    /// No device memory and no per-instance resource: [`PlainIndex::fits`] decides it.
    pub(crate) fn plain(&self, req: &Request) -> bool {
        req.device_memory == 0
            && req
                .amounts
                .iter()
                .all(|&(id, _)| !self.instanced.get(id).copied().unwrap_or(false))
    }

    /// A plain request is feasible and available on node `n` (alive, every amount within its
    /// total and its availability), and the node has no GPU when `non_gpu` asks for that.
    #[inline]
    pub(crate) fn fits(&self, n: NodeId, req: &Request, non_gpu: bool) -> bool {
        let f = self.flags[n];
        if f & ALIVE == 0 || (non_gpu && f & GPU != 0) {
            return false;
        }
        let row = &self.rows[n * self.stride..(n + 1) * self.stride];
        // An id beyond the row is a resource the node lacks (total 0; amounts are positive).
        req.amounts.iter().all(|&(id, a)| {
            row.get(id)
                .is_some_and(|&[total, avail]| total >= a && avail >= a)
        })
    }
}
