//! Failures in the simulation: scheduled and random node-level failures, Ray's health-check
//! detection, and recovery (task retries, actor restarts, placement-group bundle rescheduling
//! with priority, training restart from the last checkpoint, replica restarts).
//!
//! Model (Ray semantics from shared/reference/ray-semantics.md):
//! - A crash stops everything on the node at once; the node leaves the scheduler's view at
//!   that moment (no new work lands there).
//! - The GCS declares it dead after `misses × period` of failed health checks (Ray defaults
//!   5 × 3 s = 15 s for a crash, `gcs_health_check_manager.cc`). Recovery starts then: tasks
//!   are retried while `retries` last (default 3), actors restart while `max_restarts` allows,
//!   lost bundles are rescheduled ahead of everything else, replicas are restarted elsewhere.
//!   Requests in flight on a lost replica are lost.
//! - A training job stops at the crash; the work since its last completed checkpoint is lost
//!   (devices × time); when its group is whole again it loads the checkpoint (at the write
//!   rate) and continues from that step.
//! - Random failures form an alternating renewal process per unit (node, rack, slice, zone):
//!   time to failure from the distribution with mean `mtbf`, then repair from the repair
//!   distribution with mean `repair` (none: the unit never comes back). Weibull and lognormal
//!   are parameterised by their mean (scale = mtbf / Γ(1 + 1/shape); μ = ln(mtbf) − σ²/2);
//!   empirical samples are rescaled to mean `mtbf`.
//! - The head node holds the GCS (in memory, Ray's default) and the driver: losing it takes
//!   the whole cluster down until the head comes back, when every node rejoins empty and
//!   waiting work is placed again. GCS fault tolerance with Redis is not modelled.
//! - A GPU-level fault (Xid) takes one device out of service; whatever used it fails at once
//!   and is retried, restarted or re-placed. A compute NIC or link down breaks the collectives
//!   of jobs on the node (they restart from their checkpoint with less bandwidth); losing the
//!   frontend NICs cuts the node off (silent detection: misses × (timeout + period) ≈ 65 s).
//!   A degraded NVLink or NIC slows collectives. In an explicit fabric, a switch or a link
//!   between switches fails and is repaired too (`fabric.rs` states that model).
//!
//! Files: `schedule.rs` turns the scenario's failure blocks into events (scheduled
//! failures and random failure processes); `nodes.rs` crashes, detection and repair of
//! nodes; `devices.rs` GPU, NVLink and NIC faults; `fabric.rs` switches and links between them; `recovery.rs` what is lost and how it is
//! recovered (lost outputs and lineage reconstruction, lost actor calls, stopped jobs,
//! placement-group bundle rescheduling); `inputs.rs` restores and fetches reading from a
//! node that dies (stopped, then read again once their inputs are rebuilt).

mod devices;
mod fabric;
mod inputs;
mod nodes;
mod recovery;
mod schedule;

use super::{Sim, Work};
use crate::engine::Time;
use crate::placement::NodeId;
use crate::scenario::failure::Detection;
use crate::scenario::hardware::NodeType;
use crate::sim::World;

/// What the run lost to failures and how it recovered, counted by every kind of work as it
/// happens (the world's, so a component counts its own losses without the failures
/// component): tasks out of retries, requests lost, transfers no transport could make,
/// training devices stalled, each recovery's duration, and the failure timeline.
#[derive(Default)]
pub(crate) struct Losses {
    /// Failures, detections, repairs and recoveries in the order they happened
    /// ([`World::mark`]).
    pub timeline: Vec<crate::sim::metrics::TimelineEvent>,
    /// How long each training job took from its stop to computing again.
    pub recovery: crate::sim::durations::Durations,
    pub tasks_failed: u64,
    pub requests_lost: u64,
    /// Transfers whose transport could not move the data between their ends.
    pub transfers_unavailable: u64,
    /// Device-ns training jobs' devices sat stalled waiting on recovery (resumed jobs; those
    /// still stopped at the end are added when the run finishes).
    pub stalled_device_ns: f64,
}

/// What of each node's bandwidth works: its NVLink's fraction, its NICs and which are down
/// or degraded. The world's (failures change it; training, serving and the network read
/// it).
pub(crate) struct Health {
    /// Per node: fraction of scale-up bandwidth working (degraded NVLink).
    pub nvlink_factor: Vec<f64>,
    /// Per node: its NICs (role, speed) in `<node>.nic<i>` order, and which are down.
    pub nics: Vec<Vec<(String, f64)>>,
    pub nics_down: Vec<Vec<usize>>,
    /// NICs running below their speed (a degraded link): (node, NIC) → fraction.
    pub nic_factor: std::collections::BTreeMap<(NodeId, usize), f64>,
}

impl Health {
    /// Every node's bandwidth working: NVLink whole, every NIC (role, speed) up.
    pub(crate) fn new(spec: &crate::scenario::Spec, node_types: &[&NodeType]) -> Health {
        let nics = (node_types.iter())
            .map(|nt| {
                (nt.nics.iter())
                    .flat_map(|g| {
                        let speed = spec.nics.get(&g.nic).map(|x| x.speed.0).unwrap_or(0.0);
                        std::iter::repeat_n((g.role.clone(), speed), g.count as usize)
                    })
                    .collect()
            })
            .collect();
        Health {
            nvlink_factor: vec![1.0; node_types.len()],
            nics,
            nics_down: vec![Vec::new(); node_types.len()],
            nic_factor: Default::default(),
        }
    }

    /// (scale-up, network) bandwidth fractions still working on a node.
    pub(crate) fn bandwidth_factors(&self, n: NodeId) -> (f64, f64) {
        let nv = self.nvlink_factor.get(n).copied().unwrap_or(1.0);
        let Some(nics) = self.nics.get(n) else {
            return (nv, 1.0);
        };
        let compute: Vec<usize> = (0..nics.len())
            .filter(|&i| nics[i].0 == "compute")
            .collect();
        let pool: Vec<usize> = if compute.is_empty() {
            (0..nics.len()).collect()
        } else {
            compute
        };
        let total: f64 = pool.iter().map(|&i| nics[i].1).sum();
        let factor = |i: usize| self.nic_factor.get(&(n, i)).copied().unwrap_or(1.0);
        let up: f64 = pool
            .iter()
            .filter(|i| !self.nics_down[n].contains(i))
            .map(|&i| nics[i].1 * factor(i))
            .sum();
        (nv, if total > 0.0 { up / total } else { 1.0 })
    }
}

#[derive(Default)]
pub(crate) struct Failures {
    pub detection: Detection,
    pub down_since: Vec<Option<Time>>,
    /// Work lost with a node, recovered when the crash is detected: (node, crash epoch, work).
    pub lost: Vec<(NodeId, u32, Work)>,
    /// Placement groups with bundles waiting to be re-placed, in the order they lost them.
    pub lost_pgs: Vec<u32>,
    pub processes: Vec<schedule::Process>,
    pub crashes: u64,
    pub detect_times: crate::sim::durations::Durations,
    pub tasks_retried: u64,
    pub actors_restarted: u64,
    pub actors_lost: u64,
    pub replicas_restarted: u64,
    pub objects_rebuilt: u64,
    pub objects_lost: u64,
    pub bundles_rescheduled: u64,
    pub lost_device_ns: f64,
    pub node_down_ns: f64,
    pub unsimulated: Vec<String>,
    /// When each (node, crash epoch) went down, until its detection.
    pub crash_times: std::collections::BTreeMap<(NodeId, u32), Time>,
    /// Nodes taken down with the head (they come back with it).
    pub cluster_down: Vec<NodeId>,
    /// Nodes cut off by NIC failures (they rejoin when a NIC comes back).
    pub cut_off: Vec<bool>,
    /// Switches of an explicit fabric that are down.
    pub switches_down: std::collections::BTreeSet<u32>,
    /// Links between switches (lower index first) below their bandwidth: 0 when down.
    pub fabric_links: std::collections::BTreeMap<(u32, u32), f64>,
    /// Per switch down: the NICs it took down with it (they come back with it).
    pub switch_nics: std::collections::BTreeMap<u32, Vec<(NodeId, usize)>>,
    /// Empirical samples by file name (seconds), passed in by the caller.
    pub empirical: std::collections::BTreeMap<String, Vec<f64>>,
}

impl World<'_> {
    /// [`World::mark`] with node `n`'s name as the subject.
    pub(super) fn mark_node(&mut self, kind: &str, n: NodeId) {
        let name = self.state.nodes[n].name().to_string();
        self.mark(kind, name);
    }

    /// [`World::mark`] with part `part` of node `n` as the subject (`node.d3`).
    pub(super) fn mark_in(&mut self, kind: &str, n: NodeId, part: &str) {
        let name = format!("{}.{part}", self.state.nodes[n].name());
        self.mark(kind, name);
    }

    /// A failure, detection, repair or recovery of `subject` now, on the failure timeline.
    pub(super) fn mark(&mut self, kind: &str, subject: String) {
        let time = self.now() as f64 / 1e9;
        self.losses
            .timeline
            .push(crate::sim::metrics::TimelineEvent {
                time,
                kind: kind.to_string(),
                subject,
            });
    }
}

/// The events of failures and repairs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FailureEv {
    NodeCrash(u32),
    NodeDetected(u32, u32),
    NodeRepair(u32),
    /// A GPU-level fault (Xid): (node, device index); and its repair.
    DeviceFault(u32, u32),
    DeviceRepair(u32, u32),
    /// NVLink of a node degraded to a fraction (per mille) of its bandwidth; restored.
    NvlinkDegrade(u32, u32),
    NvlinkRestore(u32),
    /// A NIC (or its link) down / up: (node, NIC index).
    NicDown(u32, u32),
    NicUp(u32, u32),
    /// A NIC at a fraction (per mille) of its speed: (node, NIC, per mille).
    NicDegrade(u32, u32, u16),
    /// A node that stops answering without crashing (silent packet loss).
    NodeUnreachable(u32),
    /// A switch of an explicit fabric down / up.
    SwitchDown(u32),
    SwitchUp(u32),
    /// The link between two switches at a fraction (per mille) of its bandwidth: 0 down,
    /// 1000 repaired.
    SwitchLink(u32, u32, u16),
    /// Next failure of a random failure process (process index).
    Random(u32),
}

impl Sim<'_> {
    pub(in crate::sim) fn on_failure_event(&mut self, ev: FailureEv) {
        use crate::placement::NodeId;
        match ev {
            FailureEv::NodeCrash(n) => self.node_crash(n as NodeId),
            FailureEv::NodeDetected(n, crash) => self.node_detected(n as NodeId, crash),
            FailureEv::NodeRepair(n) => self.node_repair(n as NodeId),
            FailureEv::DeviceFault(n, d) => self.device_fault(n as NodeId, d as usize),
            FailureEv::DeviceRepair(n, d) => self.device_repair(n as NodeId, d as usize),
            FailureEv::NvlinkDegrade(n, f) => {
                self.nvlink_degrade(n as NodeId, f64::from(f) / 1000.0)
            }
            FailureEv::NvlinkRestore(n) => self.nvlink_degrade(n as NodeId, 1.0),
            FailureEv::NicDown(n, i) => self.nic_down(n as NodeId, i as usize),
            FailureEv::NicUp(n, i) => self.nic_up(n as NodeId, i as usize),
            FailureEv::NicDegrade(n, i, f) => {
                self.nic_degrade(n as NodeId, i as usize, f64::from(f) / 1000.0)
            }
            FailureEv::NodeUnreachable(n) => self.node_crash_with(n as NodeId, true),
            FailureEv::SwitchDown(s) => self.switch_down(s),
            FailureEv::SwitchUp(s) => self.switch_up(s),
            FailureEv::SwitchLink(a, b, f) => self.switch_link(a, b, f64::from(f) / 1000.0),
            FailureEv::Random(p) => self.random_failure(p as usize),
        }
    }
}
