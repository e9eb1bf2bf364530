//! CPU use: the logical CPUs (Ray's `CPU` resource) that work holds and works on, per node
//! and per node type — the CPU side of the devices' utilization (`World::busy`, `World::worked`),
//! so that a cluster running CPU-only tasks and actors does not look idle.
//!
//! - *Allocated* CPUs are those held by an allocation: a task from its start to its end, an
//!   actor with `resources` while it is placed, a service replica while it is placed, a
//!   placement group's bundles while the group holds them. Every allocation is counted where
//!   the simulation takes it (`World::allocate`) and gives it back (`World::free`, or lost with its
//!   node: `World::drop_alloc`), so nothing is missed.
//! - *Busy* CPUs are the CPUs of work that is running: a task from start to finish (its input
//!   fetch included, as for its devices), an actor's method calls (`call_duration` each), a
//!   replica's batches (a pipelined LLM replica's stage its share: stage devices / replica
//!   devices), a training job's steps on each node (the CPUs of its bundles there). Each busy
//!   interval is also a span on its node's CPU track in the timeline
//!   ([`super::timeline::CpuSpan`]), labelled with the work.
//!
//! A node's CPUs are its `CPU` resource total (Ray's logical CPUs: the node's hardware threads,
//! or what `resources { CPU: N }` says). Utilization = CPU-seconds / (CPUs × window).

use super::labels::Item;
use super::metrics::CpuUtilization;
use super::utilization::IndexTracker;
use crate::engine::Time;
use crate::placement::resources::{CPU, SCALE};
use crate::placement::{NodeId, Request};
use crate::sim::World;
use std::collections::BTreeMap;

/// Allocated and busy CPUs over time, per node (by index; per node type at the end).
#[derive(Default)]
pub(super) struct CpuUse {
    held: IndexTracker,
    work: IndexTracker,
}

impl CpuUse {
    /// Changes after `limit` (the run's window) count at it.
    pub(super) fn with_limit(limit: Option<Time>) -> CpuUse {
        CpuUse {
            held: IndexTracker::with_limit(limit),
            work: IndexTracker::with_limit(limit),
        }
    }
}

/// The CPUs in a list of resource amounts (fixed point).
pub(super) fn cpus_in(amounts: &[(usize, i64)]) -> f64 {
    amounts
        .iter()
        .find(|(id, _)| *id == CPU)
        .map_or(0.0, |(_, a)| *a as f64 / SCALE as f64)
}

/// The CPUs a request asks for.
pub(super) fn cpus_of(r: &Request) -> f64 {
    cpus_in(&r.amounts)
}

impl World<'_> {
    /// `cpus` of `node` worked for `item` over `[from, to)`: busy utilization, and a span on
    /// the node's CPU track of the timeline.
    pub(super) fn cpu_worked(&mut self, node: NodeId, cpus: f64, from: Time, to: Time, item: Item) {
        if cpus <= 0.0 || to <= from {
            return;
        }
        self.cpu.work.span(node, from, to, cpus);
        if self.tl.on {
            let label = self.label_id(item);
            self.tl.cpu_span(node, from, to, cpus, label);
        }
    }
}

impl World<'_> {
    /// `cpus` of `node` became held (> 0) or were given back (< 0) at `at`.
    pub(super) fn cpu_held(&mut self, node: NodeId, cpus: f64, at: Time) {
        self.cpu.held.change(node, at, cpus);
    }

    /// Each node's logical CPUs, in the cluster's order (the timeline's CPU tracks; empty
    /// when the timeline is off).
    pub(super) fn node_cpus(&self) -> Vec<f64> {
        if !self.tl.on {
            return Vec::new();
        }
        let n = self.node_types.len();
        (0..n)
            .map(|i| self.state.nodes[i].total(CPU) as f64 / SCALE as f64)
            .collect()
    }

    /// CPU utilization over `[0, end]`: per node (every node with CPUs, by name) and per node
    /// type (its nodes' CPUs summed).
    pub(super) fn cpu_utilization(
        &mut self,
        end: Time,
    ) -> (
        BTreeMap<String, CpuUtilization>,
        BTreeMap<String, CpuUtilization>,
    ) {
        let mut per_node = Vec::new();
        let mut per_type: BTreeMap<String, (f64, Vec<usize>)> = BTreeMap::new();
        for (n, node) in self.state.nodes.iter().enumerate() {
            let cpus = node.total(CPU) as f64 / SCALE as f64;
            if cpus > 0.0 {
                per_node.push((node.name().to_string(), cpus, vec![n]));
                let t = per_type
                    .entry(self.node_types[n].name.clone())
                    .or_insert((0.0, Vec::new()));
                t.0 += cpus;
                t.1.push(n);
            }
        }
        let per_type: Vec<(String, f64, Vec<usize>)> =
            per_type.into_iter().map(|(k, (c, m))| (k, c, m)).collect();
        let c = &mut self.cpu;
        (
            c.work.finish_cpus(&mut c.held, &per_node, end),
            c.work.finish_cpus(&mut c.held, &per_type, end),
        )
    }
}
