//! Nodes and devices going down and coming back: a dead node's resources leave the view, a\n//! failed device's instance is withheld until it is repaired.

use super::*;

impl ClusterState {
    /// Mark a node dead or alive. Dead nodes are never feasible (Ray removes them from the
    /// scheduler's view). Allocations on a dead node are the engine's to free (or [`reset`]).
    ///
    /// [`reset`]: ClusterState::reset
    pub fn set_alive(&mut self, node: NodeId, alive: bool) {
        let n = &mut self.nodes[node];
        if n.alive == alive {
            return;
        }
        n.alive = alive;
        self.plain.refresh(node, &self.nodes[node]);
        let key = score_key(self.nodes[node].util);
        if alive {
            self.order.insert(key, node, &self.plain);
        } else {
            self.order.remove(key, node);
        }
        self.order.touch(node, &self.plain);
        let n = &self.nodes[node];
        let q: i64 = if alive { 1 } else { -1 };
        for (k, held) in n.quota_held.iter().enumerate() {
            self.quota_held[k] += q * held;
        }
        let n = &self.nodes[node];
        let d: isize = if alive { 1 } else { -1 };
        self.alive_count = (self.alive_count as isize + d) as usize;
        if !n.has_gpu {
            self.alive_non_gpu = (self.alive_non_gpu as isize + d) as usize;
        }
    }

    /// Forget everything allocated on a node (a node that comes back after a failure starts
    /// empty, as a fresh raylet does).
    pub fn reset(&mut self, node: NodeId) {
        let n = &mut self.nodes[node];
        n.available.clone_from(&n.total);
        n.mem_free.clone_from(&n.topo.device_memory);
        for e in &mut n.instances {
            for (k, x) in e.1.iter_mut().enumerate() {
                *x = if n.dead.contains(&(e.0, k)) { 0 } else { SCALE };
            }
        }
        n.tenant_occ.iter_mut().for_each(|c| *c = 0);
        if n.alive {
            for (k, held) in n.quota_held.iter().enumerate() {
                self.quota_held[k] -= held;
            }
        }
        let n = &mut self.nodes[node];
        n.quota_held.iter_mut().for_each(|h| *h = 0);
        let old = n.util;
        n.util = 0.0;
        self.plain.refresh(node, &self.nodes[node]);
        self.reorder(node, old, 0.0);
        self.order.touch(node, &self.plain);
    }

    /// The (resource id, instance) of a node's `device`-th device, counting the node type's
    /// devices in declaration order (the `<node>.d<i>` names of failure targets).
    pub fn device_instance(&self, node: NodeId, device: usize) -> Option<(usize, usize)> {
        let mut i = device;
        for (id, locs) in &self.nodes[node].topo.devices {
            if i < locs.len() {
                return Some((*id, i));
            }
            i -= locs.len();
        }
        None
    }

    /// Take a device out of service (a GPU-level fault such as an Xid): its instance holds
    /// nothing from now on and the node's total shrinks, so requests that need it become
    /// infeasible there. Whoever used it is the engine's to evict (their frees skip it).
    /// Returns the (resource id, instance), or `None` if unknown or already out.
    pub fn fail_device(&mut self, node: NodeId, device: usize) -> Option<(usize, usize)> {
        let (id, k) = self.device_instance(node, device)?;
        let n = &mut self.nodes[node];
        if n.dead.contains(&(id, k)) {
            return None;
        }
        n.dead.push((id, k));
        n.total[id] -= SCALE;
        if let Some(e) = n.instances.iter_mut().find(|e| e.0 == id) {
            e.1[k] = 0;
            n.available[id] = e.1.iter().sum();
        }
        self.rescore(node);
        Some((id, k))
    }

    /// Put a repaired device back in service (empty).
    pub fn repair_device(&mut self, node: NodeId, device: usize) -> bool {
        let Some((id, k)) = self.device_instance(node, device) else {
            return false;
        };
        let n = &mut self.nodes[node];
        let Some(pos) = n.dead.iter().position(|d| *d == (id, k)) else {
            return false;
        };
        n.dead.swap_remove(pos);
        n.total[id] += SCALE;
        let cap = n
            .topo
            .device_memory
            .iter()
            .find(|e| e.0 == id)
            .and_then(|e| e.1.get(k).copied());
        if let (Some(m), Some(c)) = (n.mem_free.iter_mut().find(|m| m.0 == id), cap)
            && let Some(x) = m.1.get_mut(k)
        {
            *x = c;
        }
        if let Some(e) = n.instances.iter_mut().find(|e| e.0 == id) {
            e.1[k] = SCALE;
            n.available[id] = e.1.iter().sum();
        }
        self.rescore(node);
        true
    }
}
