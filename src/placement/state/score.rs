//! A node's utilization score, and its place in the walk's order as its availability changes.

use super::*;

impl ClusterState {
    /// [`ClusterState::rescore`] after an allocation or a release on `node`, which change
    /// neither its totals nor its liveness: only its available amounts are copied into the
    /// mirror, and its score comes from the mirror's row (the node's totals, in cold memory,
    /// are not reread: 10,000 nodes × 1,000,000 tasks took 0.83–0.88 times as long).
    pub(super) fn rescore_available(&mut self, node: NodeId) {
        if !self.plain.refresh_available(node, &self.nodes[node]) {
            return self.rescore(node);
        }
        let plain = &self.plain;
        let new = utilization(|id| plain.amounts(node, id));
        debug_assert_eq!(new, self.nodes[node].compute_utilization());
        let old = std::mem::replace(&mut self.nodes[node].util, new);
        self.reorder(node, old, new);
        self.order.touch(node, &self.plain);
    }

    /// Node `node`'s availability changed: its utilization score, its place in
    /// [`ClusterState::order`] and its row of the dense mirror (`plain`) follow.
    pub(super) fn rescore(&mut self, node: NodeId) {
        let n = &mut self.nodes[node];
        let old = n.util;
        n.util = n.compute_utilization();
        let new = n.util;
        self.plain.refresh(node, &self.nodes[node]);
        self.reorder(node, old, new);
        self.order.touch(node, &self.plain);
    }

    /// Move a node in [`ClusterState::order`] after its utilization changed (`plain` already
    /// refreshed).
    pub(super) fn reorder(&mut self, node: NodeId, old: f32, new: f32) {
        let (a, b) = (score_key(old), score_key(new));
        if a != b && self.nodes[node].alive && self.order.remove(a, node) {
            self.order.insert(b, node, &self.plain);
        }
    }
}

/// A node's utilization score (Ray's `NodeResources::CalculateCriticalResourceUtilization`):
/// the highest used fraction of CPU, memory and object store memory among those it has,
/// from each one's (total, available).
pub(super) fn utilization(amounts: impl Fn(usize) -> (i64, i64)) -> f32 {
    let mut highest = 0f32;
    for id in [res::CPU, res::MEMORY, res::OBJECT_STORE_MEMORY] {
        let (t, a) = amounts(id);
        if t == 0 {
            continue;
        }
        let u = (1.0 - a as f64 / t as f64) as f32;
        if u > highest {
            highest = u;
        }
    }
    highest
}
