//! Task outputs in each node's object store, and spilling when it runs short.
//!
//! Model (Ray's object store, ray-semantics.md): a task output that a later task group
//! consumes lives in the producing node's shared-memory object store (`object_store_memory`,
//! 30 % of RAM) until every consumer task has started. When storing it would take the store
//! past `object_spilling_threshold` = 80 %, it is spilled to local disk instead; consumers then
//! read that share of their input back from disk (at [`DISK_BW`]) on top of the network fetch.
//! Outputs die with their node (lineage reconstruction rebuilds them, `failures.rs`).
//! Ray batches spills of at least 100 MiB; the model spills object by object.

use super::Sim;
use crate::placement::NodeId;

/// Fraction of the object store in use beyond which new objects are spilled (Ray
/// `object_spilling_threshold`).
pub const SPILL_THRESHOLD: f64 = 0.8;
/// Local disk bandwidth for spilling and restoring (an NVMe SSD; an assumption until the
/// storage path is calibrated).
pub const DISK_BW: f64 = 2e9;

#[derive(Default)]
pub(crate) struct Store {
    pub used: Vec<f64>,
    pub capacity: Vec<f64>,
    pub spilled: Vec<bool>,
    pub spilled_bytes: f64,
    pub spilled_objects: u64,
    pub peak_fraction: f64,
}

impl Sim<'_> {
    /// Per-node stores (object_store_memory: 30 % of host memory, Ray's default).
    pub(crate) fn init_store_nodes(&mut self) {
        let n = self.node_types.len();
        self.store.used = vec![0.0; n];
        self.store.capacity = self
            .node_types
            .iter()
            .map(|nt| nt.memory.0 as f64 * 0.3)
            .collect();
    }

    fn output_bytes(&self, gi: usize) -> f64 {
        let g = &self.groups[gi];
        if g.dependents.is_empty() {
            return 0.0;
        }
        self.spec.workloads[g.workload].tasks[g.index].output.0 as f64
    }

    /// Task `t` of group `gi` finished on `node`: keep its output for its consumers.
    pub(crate) fn store_output(&mut self, t: u32, gi: usize, node: NodeId) {
        if self.store.spilled.len() < self.task_start.len() {
            self.store.spilled.resize(self.task_start.len(), false);
        }
        let o = self.output_bytes(gi);
        if o <= 0.0 {
            return;
        }
        let cap = self.store.capacity[node];
        if self.store.used[node] + o > SPILL_THRESHOLD * cap {
            self.store.spilled[t as usize] = true;
            self.groups[gi].spilled_bytes += o;
            self.store.spilled_bytes += o;
            self.store.spilled_objects += 1;
        } else {
            self.store.spilled[t as usize] = false;
            self.store.used[node] += o;
            if cap > 0.0 {
                self.store.peak_fraction =
                    self.store.peak_fraction.max(self.store.used[node] / cap);
            }
        }
    }

    /// Every consumer of some groups has started: their outputs can go.
    pub(crate) fn consumer_started(&mut self, consumer: usize) {
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
            let o = self.output_bytes(a);
            let g = &self.groups[a];
            for t in g.first..g.first + g.count {
                let t = t as usize;
                if self.task_completed[t] && !self.store.spilled.get(t).copied().unwrap_or(false) {
                    let n = self.task_node[t] as usize;
                    self.store.used[n] = (self.store.used[n] - o).max(0.0);
                }
            }
        }
    }

    /// A node died with its store: what it held is gone (spilled copies on its disk too).
    pub(crate) fn store_lost(&mut self, n: NodeId) {
        self.store.used[n] = 0.0;
        for gi in 0..self.groups.len() {
            let o = self.output_bytes(gi);
            let g = &self.groups[gi];
            let mut lost = 0.0;
            for t in g.first..g.first + g.count {
                let t = t as usize;
                if self.task_node[t] as usize == n
                    && self.store.spilled.get(t).copied().unwrap_or(false)
                {
                    self.store.spilled[t] = false;
                    lost += o;
                }
            }
            self.groups[gi].spilled_bytes -= lost;
        }
    }

    /// Seconds a task of `gi` spends reading its spilled inputs back from disk.
    pub(crate) fn restore_secs(&self, gi: usize) -> f64 {
        let g = &self.groups[gi];
        if g.input_bytes <= 0.0 {
            return 0.0;
        }
        let (mut spilled, mut total) = (0.0, 0.0);
        for (a, p) in self.groups.iter().enumerate() {
            if p.dependents.contains(&(gi as u32)) {
                spilled += p.spilled_bytes;
                total += f64::from(p.count) * self.output_bytes(a);
            }
        }
        if total <= 0.0 {
            0.0
        } else {
            g.input_bytes * (spilled / total) / DISK_BW
        }
    }
}
