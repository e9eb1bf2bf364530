//! Task outputs in each node's object store, and spilling when it runs short.
//!
//! Model (Ray's object store, ray-semantics.md): a task output that a later task group
//! consumes lives in the producing node's shared-memory object store (`object_store_memory`,
//! 30 % of RAM) until every consumer task has started. When storing it would take the store
//! past `object_spilling_threshold` = 80 %, it is spilled to local disk instead, as a write
//! flow on the run's network (`spills.rs`); consumers read their spilled inputs back from the
//! holder's disk before fetching them. Outputs die with their node (lineage reconstruction
//! rebuilds them, `failures/`): an output whose node has crashed since it was stored is gone,
//! and no fetch reads it from there. Ray batches spills of at least 100 MiB; the model spills
//! object by object.

use crate::placement::NodeId;
use crate::sim::World;
use crate::sim::tasks::Tasks;

/// Fraction of the object store in use beyond which new objects are spilled (Ray
/// `object_spilling_threshold`).
pub const SPILL_THRESHOLD: f64 = 0.8;

#[derive(Default)]
pub(crate) struct Store {
    pub used: Vec<f64>,
    pub capacity: Vec<f64>,
    pub spilled: Vec<bool>,
    /// Per task: its spill's progress (0 none, 1 being written, 2 written).
    pub spill_state: Vec<u8>,
    /// Per task: its node's crash epoch when its output was stored (an output is gone once
    /// the node has crashed since).
    pub stored_epoch: Vec<u32>,
    /// Per node: how many times it has crashed; each crash loses the objects stored there
    /// (`failures/nodes.rs` counts them).
    pub crash_epoch: Vec<u32>,
    /// Seconds spent writing spills and reading them back (over all objects and tasks).
    pub spill_secs: f64,
    pub restore_secs: f64,
    /// When each task's spill or restore in progress began, and its transfer (by task).
    pub spill_from: rustc_hash::FxHashMap<u32, crate::engine::Time>,
    pub xfer: rustc_hash::FxHashMap<u32, super::wire::TransferId>,
    pub spilled_bytes: f64,
    pub spilled_objects: u64,
    pub peak_fraction: f64,
}

impl Tasks {
    /// Task `t` of group `gi` finished on `node`: keep its output for its consumers.
    pub(crate) fn store_output(&mut self, world: &mut World<'_>, t: u32, gi: usize, node: NodeId) {
        self.size_store_arrays(world);
        world.store.stored_epoch[t as usize] =
            world.store.crash_epoch.get(node).copied().unwrap_or(0);
        let o = self.output_bytes(world, gi);
        if o <= 0.0 {
            return;
        }
        let written = std::mem::take(&mut world.store.spill_state[t as usize]) == 2;
        if written || self.would_spill(world, gi, node) {
            world.store.spilled[t as usize] = true;
            self.groups[gi].spilled_bytes += o;
            world.store.spilled_bytes += o;
            world.store.spilled_objects += 1;
        } else {
            world.store.spilled[t as usize] = false;
            world.store.used[node] += o;
            let cap = world.store.capacity[node];
            if cap > 0.0 {
                world.store.peak_fraction =
                    world.store.peak_fraction.max(world.store.used[node] / cap);
            }
        }
    }

    /// Whether producer task `pt`'s output still exists where it was stored (its node has
    /// not crashed since).
    pub(crate) fn output_alive(&self, world: &World<'_>, pt: usize, node: usize) -> bool {
        world.store.stored_epoch.get(pt).copied().unwrap_or(0)
            == world.store.crash_epoch.get(node).copied().unwrap_or(0)
    }
}

impl Tasks {
    pub(crate) fn output_bytes(&self, world: &World<'_>, gi: usize) -> f64 {
        let g = &self.groups[gi];
        if g.dependents.is_empty() {
            return 0.0;
        }
        world.spec.workloads[g.workload].tasks[g.index].output.0 as f64
    }

    pub(crate) fn size_store_arrays(&mut self, world: &mut World<'_>) {
        let n = self.start.len();
        if world.store.spilled.len() < n {
            world.store.spilled.resize(n, false);
            world.store.spill_state.resize(n, 0);
            world.store.stored_epoch.resize(n, 0);
        }
    }

    /// Whether an output of group `gi` finished on `node` now goes to disk.
    pub(crate) fn would_spill(&self, world: &World<'_>, gi: usize, node: NodeId) -> bool {
        let o = self.output_bytes(world, gi);
        o > 0.0 && world.store.used[node] + o > SPILL_THRESHOLD * world.store.capacity[node]
    }

    /// Every consumer of some groups has started: their outputs can go.
    pub(crate) fn consumer_started(&mut self, world: &mut World<'_>, consumer: usize) {
        if self.groups[consumer].started < self.groups[consumer].count {
            return;
        }
        let producers: Vec<usize> = (0..self.groups.len())
            .filter(|&a| self.groups[a].dependents.contains(&(consumer as u32)))
            .collect();
        for a in producers {
            let all = self.groups[a]
                .dependents
                .iter()
                .all(|d| self.groups[*d as usize].started >= self.groups[*d as usize].count);
            if !all || self.groups[a].released {
                continue;
            }
            self.groups[a].released = true;
            let o = self.output_bytes(world, a);
            let g = &self.groups[a];
            for t in g.first..g.first + g.count {
                let t = t as usize;
                if self.completed[t] && !world.store.spilled.get(t).copied().unwrap_or(false) {
                    let n = self.node[t] as usize;
                    world.store.used[n] = (world.store.used[n] - o).max(0.0);
                }
            }
        }
    }

    /// A node died with its store: what it held is gone (spilled copies on its disk too).
    pub(crate) fn store_lost(&mut self, world: &mut World<'_>, n: NodeId) {
        world.store.used[n] = 0.0;
        for gi in 0..self.groups.len() {
            let o = self.output_bytes(world, gi);
            let g = &self.groups[gi];
            let mut lost = 0.0;
            for t in g.first..g.first + g.count {
                let t = t as usize;
                if self.node[t] as usize == n
                    && world.store.spilled.get(t).copied().unwrap_or(false)
                {
                    world.store.spilled[t] = false;
                    lost += o;
                }
            }
            self.groups[gi].spilled_bytes -= lost;
        }
    }
}

impl World<'_> {
    /// Per-node stores (object_store_memory: 30 % of host memory, Ray's default).
    pub(crate) fn init_store_nodes(&mut self) {
        let n = self.node_types.len();
        self.store.used = vec![0.0; n];
        self.store.crash_epoch = vec![0; n];
        self.store.capacity = self
            .node_types
            .iter()
            .map(|nt| nt.memory.0 as f64 * 0.3)
            .collect();
    }
}
