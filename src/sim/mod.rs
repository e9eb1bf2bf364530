//! The simulation: Ray-style work placed and run on a simulated cluster.
//!
//! [`simulate`] turns a validated [`Spec`] into a deterministic run: task groups (a DAG at
//! group granularity: a group starts when every group it runs `after` has finished), actors,
//! placement groups (atomic creation with Ray's retry backoff), training jobs over placement
//! groups, and inference services with Poisson, bursty, trace or finite benchmark (closed-loop
//! concurrency, offline) arrivals. Placement decisions
//! come from [`crate::placement`]; durations from [`models`].
//!
//! Modelling choices beyond Ray's documented behaviour, stated here once:
//! - Work that is feasible but finds no available node waits, FIFO per class (task group,
//!   actor group, service), and is placed again whenever resources are freed, as Ray's
//!   `ClusterLeaseManager::ScheduleAndGrantLeases` does on every change of the resource view.
//!   Since nothing was available for a waiting class before a free on node X, only X can have
//!   become available, so re-placement checks X alone: exactly what the policy would return.
//! - Scheduling itself takes no simulated time.
//! - Service replicas are placed with SPREAD (Ray Serve spreads replicas by default) and serve
//!   a shared FIFO queue (one router, any idle replica).
//! - An actor without `resources` needs 1 CPU to be placed and holds nothing while it runs
//!   (Ray's default); with `resources` it holds them until its calls are done.
//!
//! Architecture invariant: no IO. Trace arrivals come in through [`SimConfig::traces`].

/// A component's list indexed by its items' ids (`jobs[j]`, `pgs[p]`): the id is the index
/// into its `list`.
macro_rules! indexed_by_id {
    ($list:ty, $item:ty) => {
        impl std::ops::Index<usize> for $list {
            type Output = $item;
            fn index(&self, i: usize) -> &$item {
                &self.list[i]
            }
        }

        impl std::ops::IndexMut<usize> for $list {
            fn index_mut(&mut self, i: usize) -> &mut $item {
                &mut self.list[i]
            }
        }
    };
}

mod actors;
mod binned;
mod buckets;
mod checkpoints;
mod collective_rules;
mod cost;
mod cpu;
pub mod durations;
pub mod estimate;
mod explain;
pub mod failures;
mod finish;
mod labels;
pub mod links;
pub mod llm;
pub mod metrics;
mod model_steps;
pub mod models;
pub mod network;
mod objects;
mod overlap;
mod payloads;
mod placement_groups;
mod rank_groups;
mod schedulable;
mod scheduling;
mod services;
mod spills;
mod stage_time;
mod staged;
mod steps;
mod tasks;
mod tensors;
pub mod timeline;
mod training;
mod transfers;
mod transport_choice;
pub mod utilization;
mod window;
mod wire;

use crate::engine::{EventQueue, Time, rng_stream, stream_id};
use crate::placement::{self, ClusterState, NodeId, Request};
use crate::scenario::Spec;
use crate::scenario::hardware::NodeType;
pub(crate) use failures::FailureEv;
pub(crate) use llm::LlmEv;
use metrics::*;
use rand_chacha::ChaCha8Rng;
pub(crate) use services::ServiceEv;
use std::collections::{BTreeMap, VecDeque};
pub(crate) use steps::TrainingEv;
pub(crate) use tasks::TaskEv;
pub use window::{DEFAULT_SERVICE_HORIZON, Window, percentile, window};

#[derive(Debug, Clone, Default)]
pub struct SimConfig {
    pub seed: u64,
    /// End of the simulated window; services need one (default: the first experiment's
    /// `horizon`, else [`DEFAULT_SERVICE_HORIZON`] when there are services).
    pub horizon: Option<Time>,
    /// `workload.item` whose first placement decision is explained.
    pub explain: Option<String>,
    /// Arrival traces of `arrival trace` services (times in seconds, token columns), by
    /// file name as written.
    pub traces: BTreeMap<String, crate::scenario::arrivals::Trace>,
    /// Keep every allocation and free in [`RunResult::trace`] (for invariant checks).
    pub record: bool,
    /// Apply only the `failures NAME` block of that name (default: every block).
    pub failure_block: Option<String>,
    /// Samples (seconds) of `empirical("FILE")` distributions, by file name as written.
    pub empirical: BTreeMap<String, Vec<f64>>,
    /// Move every task's inputs, actor call's tensor and service payload with this transport
    /// instead of the one each workload selects
    /// (a built-in kind or a declared `transport` block; `orrery transports --workload`).
    pub transport: Option<String>,
    /// Record what each device did when ([`RunResult::timeline`]).
    pub timeline: bool,
    /// Shown every 2^16 events: how many, and how far the simulated clock has got (of the
    /// horizon, when there is one). Display only: it never changes a result.
    pub progress: Option<indicatif::ProgressBar>,
}

#[derive(Debug, Clone)]
pub struct RunResult {
    pub metrics: RunMetrics,
    /// The explained item's first placement, when asked for and reached.
    pub explain: Option<placement::explain::Explanation>,
    /// Allocations and frees in order, when [`SimConfig::record`] is set.
    pub trace: Vec<TraceEvent>,
    /// Every task input fetch with its tenant and transport, when [`SimConfig::record`] is set.
    pub transfers: Vec<TransferRecord>,
    /// Broken invariants; always empty unless the simulation has a bug (the tests check).
    pub violations: Vec<String>,
    /// Which compute model each (accelerator, dtype) used: a calibration profile or the
    /// datasheet defaults ([`crate::compute::model_sources`]).
    pub model_sources: Vec<String>,
    /// How each training collective and each task group's input fetch was priced: on the link
    /// graph, or in closed form and why.
    pub network_models: Vec<network::NetworkModel>,
    /// Device activity, when [`SimConfig::timeline`] is set (else empty).
    pub timeline: timeline::Timeline,
    /// What moved on the run's one network (not part of `run.json`).
    pub wire: WireTotals,
}

/// Traffic on a run's one network ([`wire`]): flows started, their bytes, and the most flows
/// active at once.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WireTotals {
    pub flows: u64,
    pub bytes: f64,
    pub peak_active: usize,
}

/// An event of the run, by the component that handles it (each kind's own enum, in its
/// module).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ev {
    Task(TaskEv),
    PgTry(u32),
    ActorCall(u32, u32),
    Training(TrainingEv),
    Service(ServiceEv),
    Llm(LlmEv),
    Failure(FailureEv),
    /// The next flow completion on the run's network.
    Wire,
    /// The run's network changed at this time: what was started joins it, and the wake-up
    /// moves to the next completion (queued once per burst of changes, after the events
    /// already queued for this time, so a burst of starts is one batch).
    WireFlush,
    /// A transfer has paid its fixed part (a round's α, a payload's latency): its flows
    /// start (`transfers.rs`); its owner, inline or parked ([`transfers::Going`]).
    TransferGo(transfers::Going),
}

// Events stay 16 bytes, a queue entry 32 with its key (`engine::Key`), as before each
// component had its own event enum: a payload wider than two ids and a small field parks in
// an `engine::Parked` and the event holds its slot. The build fails if one grows.
const _: () = assert!(std::mem::size_of::<Ev>() == 16);

impl From<TrainingEv> for Ev {
    fn from(e: TrainingEv) -> Ev {
        Ev::Training(e)
    }
}

/// What a component's handler leaves to the run: the effects that cross components.
/// Resources freed on a node place waiting work of every kind there ([`Sim::dispatch`]); a
/// training job that ended releases its placement group ([`Sim::release_pg`]); new work is
/// placed among all the waiting work ([`Sim::submit`]). A handler
/// returns its effect rather than doing it because it does not own the other components; it
/// is always the handler's last act, so the run applying it as the handler returns
/// ([`Sim::apply`]) keeps the order of events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(super) enum Effect {
    Nothing,
    Dispatch(NodeId),
    ReleasePg(u32),
    /// New work to place ([`Sim::submit`]): a task again (a retry), or a group's tasks in
    /// order (the groups it runs after have finished).
    Submit(Work),
    SubmitTasks {
        first: u32,
        count: u32,
    },
    /// A placement group was created: the training jobs on it start ([`Sim::start_job`]).
    StartJobs(u32),
    /// A task that re-ran to rebuild a lost object is done: recovery hands the object to the
    /// tasks that waited for it ([`Sim::rebuilt`]).
    Rebuilt(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Work {
    Task(u32),
    Actor(u32),
    Replica(u32),
}

/// The shared world every component works in: the scenario, the cluster's resource view,
/// the event queue, the object stores, the one network, and what the run records. A
/// component (tasks, actors, placement groups, training jobs, services, failures) owns its
/// own state and is handed this.
struct World<'s> {
    spec: &'s Spec,
    state: ClusterState,
    q: EventQueue<Ev>,
    node_types: Vec<&'s NodeType>,
    node_accel: Vec<Option<String>>,
    /// Work that found no available node, FIFO per class (task group, actor group, service),
    /// classes in order of first appearance.
    pending: Vec<(Work, VecDeque<u32>)>,
    /// Broken invariants (must stay empty; checked by the tests).
    violations: Vec<String>,
    /// Allocated and busy devices per device class and per node type.
    usage: utilization::Usage,
    /// Allocated and busy CPUs per node and node type (`cpu.rs`).
    cpu: cpu::CpuUse,
    rng: ChaCha8Rng,
    horizon: Option<Time>,
    progress: Option<indicatif::ProgressBar>,
    explain_target: Option<String>,
    explain: Option<placement::explain::Explanation>,
    makespan: Time,
    unit_ids: Vec<usize>,
    /// Every allocation (+1) and free (−1) with its node and tenant, when recording.
    trace: Option<Vec<TraceEvent>>,
    /// Every fetch's tenant and transport, when recording.
    transfers: Option<Vec<TransferRecord>>,
    store: objects::Store,
    net: network::NetState,
    /// The run's one network: every transfer's flows share it.
    wire: wire::Wire,
    /// Tenants' quotas: what waited on them (`scheduling.rs`).
    quota: scheduling::Quota,
    tl: timeline::Recorder,
    transport_override: Option<String>,
    /// Interned timeline labels per item (`labels.rs`).
    label_ids: rustc_hash::FxHashMap<labels::Item, u32>,
    /// What every kind of work counts as lost to failures.
    losses: failures::Losses,
    /// What of each node's bandwidth works (failures change it).
    health: failures::Health,
    /// The owners too wide for their [`Ev::TransferGo`] while they pay their fixed part.
    going: crate::engine::Parked<wire::Owner>,
}

/// A run: the shared world and the components, one per kind of work (each in its module,
/// with its own events). What crosses components (placing waiting work when resources free,
/// a node's death, a finished transfer's owner) is handled here, at the top.
struct Sim<'s> {
    w: World<'s>,
    tasks: tasks::Tasks,
    actors: actors::Actors,
    pgs: placement_groups::PlacementGroups,
    jobs: training::Jobs,
    services: services::Services,
    failures: failures::Failures,
}

/// One allocation or free (a free also when the node died with it), for checking invariants
/// over a whole run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEvent {
    pub time: Time,
    pub node: NodeId,
    pub tenant: Option<usize>,
    /// +1 allocate, −1 free.
    pub delta: i8,
    /// What the allocation holds: (resource id in `ClusterState::ids`, amount ×
    /// `placement::SCALE`).
    pub amounts: Vec<(usize, i64)>,
}

/// One data movement of a tenant's work, for checking its transport rules over a whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct TransferRecord {
    pub time: Time,
    pub tenant: Option<usize>,
    /// The transport that moved it (after any fallback).
    pub transport: String,
    pub bytes: f64,
}

/// Run `spec` to completion (or to the horizon) and return its metrics.
pub fn simulate(spec: &Spec, cfg: &SimConfig) -> RunResult {
    let mut sim = Sim::new(spec, cfg);
    let racks: Vec<String> = match &spec.cluster {
        Some(c) => c
            .nodes()
            .map(|n| {
                c.racks
                    .get(n.rack)
                    .map(|r| r.name.clone())
                    .unwrap_or_default()
            })
            .collect(),
        None => Vec::new(),
    };
    let nodes: Vec<(String, usize, String)> = (0..sim.w.node_types.len())
        .map(|n| {
            let devices = sim.w.node_types[n].devices.iter().map(|g| g.at.len()).sum();
            let rack = racks.get(n).cloned().unwrap_or_default();
            (sim.w.state.nodes[n].name().to_string(), devices, rack)
        })
        .collect();
    let storage: Vec<String> = spec
        .cluster
        .as_ref()
        .map(|c| c.storage.iter().map(|s| s.name.clone()).collect())
        .unwrap_or_default();
    sim.w.tl.init(cfg.timeline, &nodes, &storage);
    sim.w.tl.t.node_cpus = sim.w.node_cpus();
    sim.start_store_and(cfg);
    sim.run();
    sim.finish()
}

impl<'s> Sim<'s> {
    fn new(spec: &'s Spec, cfg: &SimConfig) -> Self {
        let state = ClusterState::from_spec(spec);
        let node_types: Vec<&NodeType> = match &spec.cluster {
            Some(c) => c.nodes().map(|n| &spec.node_types[n.node_type]).collect(),
            None => Vec::new(),
        };
        let node_accel = node_types
            .iter()
            .map(|nt| nt.devices.first().map(|d| d.accelerator.clone()))
            .collect();
        let unit_ids = crate::scenario::workload::UNIT_INSTANCE
            .iter()
            .filter_map(|n| state.ids.id(n))
            .collect();
        let horizon = window(spec, cfg.horizon).horizon;
        let health = failures::Health::new(spec, &node_types);
        Sim {
            w: World {
                spec,
                state,
                q: EventQueue::with_capacity(1024),
                node_types,
                node_accel,
                pending: Vec::new(),
                violations: Vec::new(),
                usage: utilization::Usage::with_limit(horizon),
                cpu: cpu::CpuUse::with_limit(horizon),
                rng: rng_stream(cfg.seed, stream_id("placement")),
                horizon,
                progress: cfg.progress.clone(),
                explain_target: cfg.explain.clone(),
                transport_override: cfg.transport.clone(),
                explain: None,
                makespan: 0,
                unit_ids,
                trace: cfg.record.then(Vec::new),
                transfers: cfg.record.then(Vec::new),
                store: objects::Store::default(),
                net: network::NetState::default(),
                wire: wire::Wire::default(),
                quota: scheduling::Quota::default(),
                tl: timeline::Recorder::default(),
                label_ids: Default::default(),
                losses: failures::Losses::default(),
                health,
                going: Default::default(),
            },
            tasks: tasks::Tasks::default(),
            actors: actors::Actors::default(),
            pgs: Default::default(),
            jobs: Default::default(),
            services: services::Services::default(),
            failures: failures::Failures::default(),
        }
    }

    /// Workloads first (they size the task arrays), then the object stores.
    fn start_store_and(&mut self, cfg: &SimConfig) {
        self.w.init_store_nodes();
        self.w.init_network();
        // After the network: switch failures name the explicit fabric's switches.
        self.failures.schedule_failures(
            &mut self.w,
            cfg.seed,
            cfg.failure_block.as_deref(),
            &cfg.empirical,
        );
        self.start(cfg);
    }

    /// Build runtime state for every workload and schedule what starts at time zero.
    fn start(&mut self, cfg: &SimConfig) {
        let spec = self.w.spec;
        for (wi, w) in spec.workloads.iter().enumerate() {
            let tenant = w.tenant.as_ref().and_then(|t| self.w.state.tenant_index(t));
            self.start_tasks(wi, w, tenant);
            self.start_actors(wi, w, tenant);
            // Placement groups, then training jobs on them.
            let pg_base = self.pgs.list.len() as u32;
            self.pgs.start_pgs(&mut self.w, wi, w, tenant);
            self.start_jobs(wi, w, pg_base);
            for pi in 0..w.placement_groups.len() {
                let effect = self.pgs.try_pg(&mut self.w, pg_base + pi as u32);
                self.apply(effect);
            }
            self.start_services(wi, w, tenant, cfg);
        }
    }

    fn run(&mut self) {
        let mut handled: u64 = 0;
        // The state built before the first event (the cluster's graph and placement index) is
        // most of a large cluster's memory: past `--max-memory` already, no event runs.
        if crate::budget::memory_guard("building a run's state, before its first event") {
            return;
        }
        // Events after the horizon, or at the clock's end, are not run; reaching the clock's
        // end within the horizon is an error.
        let limit = self.w.horizon.unwrap_or(Time::MAX).min(Time::MAX - 1);
        let end_within = self.w.horizon.is_none_or(|h| h == Time::MAX);
        loop {
            if self.w.net.rearm && self.w.q.peek_time().is_none_or(|t| t > self.w.now()) {
                // Every event of this time is handled: the transfers it started join the
                // network together, and the wake-up moves to the next completion.
                self.w.rearm_now();
                continue;
            }
            let Some((_, ev)) = self.w.q.pop_until(limit) else {
                if end_within && self.w.q.peek_time() == Some(Time::MAX) {
                    // Work whose end the clock cannot hold (durations add up saturating): its
                    // times, and the makespan, would read 584 years, a number that is not one.
                    crate::budget::trip(format!(
                        "the simulated clock reached its end, 2^64 ns (584 years), at {} events: \
                         a piece of work takes longer than the clock can count; check the \
                         scenario's amounts (compute, bytes, durations, steps) or set a horizon",
                        handled
                    ));
                }
                break;
            };
            // Random failures recur forever: without a horizon, stop once all work is done.
            if self.w.horizon.is_none() && matches!(ev, Ev::Failure(_)) && self.all_done() {
                break;
            }
            self.handle(ev);
            handled += 1;
            if handled & 0xffff == 0 {
                // Past a budget (this run's or another's): stop; the command writes nothing.
                if crate::budget::guard(handled, self.w.now() as f64 / 1e9) {
                    break;
                }
                if let Some(bar) = &self.w.progress {
                    self.w.show_progress(bar, handled);
                }
            }
        }
    }

    /// Every finite piece of work has finished (or can never run).
    fn all_done(&self) -> bool {
        self.tasks.groups.iter().all(|g| g.done >= g.count)
            && self
                .jobs
                .list
                .iter()
                .all(|j| j.finished.is_some() || self.pgs[j.pg as usize].infeasible)
            && self.actors.list.iter().all(|a| a.dead || a.calls_left == 0)
            && self.failures.lost.is_empty()
    }

    /// Does what a component's handler left to the run ([`Effect`]).
    fn apply(&mut self, effect: Effect) {
        match effect {
            Effect::Nothing => {}
            Effect::Dispatch(node) => self.dispatch(node),
            Effect::ReleasePg(pg) => self.release_pg(pg as usize),
            Effect::Submit(work) => self.submit(work),
            Effect::SubmitTasks { first, count } => {
                for t in first..first + count {
                    self.submit(Work::Task(t));
                }
            }
            Effect::StartJobs(pg) => {
                for j in self.pgs[pg as usize].jobs.clone() {
                    self.jobs.start_job(&mut self.w, &self.pgs, j);
                }
            }
            Effect::Rebuilt(t) => {
                let gi = self.tasks.group_of(t);
                let node = self.tasks.node[t as usize] as usize;
                self.rebuilt(t, gi, node);
            }
        }
    }

    /// One event: each kind is handled by the module that owns it.
    fn handle(&mut self, ev: Ev) {
        let w = &mut self.w;
        let effect = match ev {
            Ev::Task(e) => self.tasks.on_task_event(w, e),
            Ev::PgTry(p) => self.pgs.try_pg(w, p),
            Ev::ActorCall(a, epoch) => self.actors.on_actor_call(w, a, epoch),
            Ev::Training(e) => self.jobs.on_training_event(w, e),
            Ev::Service(e) => {
                self.services.on_service_event(w, e);
                Effect::Nothing
            }
            Ev::Llm(e) => {
                self.services.on_llm_event(w, e);
                Effect::Nothing
            }
            Ev::WireFlush => {
                w.rearm_now();
                Effect::Nothing
            }
            // What crosses components: a failure reaches every kind of work; a finished
            // flow's or a started transfer's owner may be any of them.
            Ev::Failure(e) => return self.on_failure_event(e),
            Ev::Wire => return self.on_wire(),
            Ev::TransferGo(going) => {
                let owner = w.gone(going);
                return self.on_transfer_go(owner);
            }
        };
        self.apply(effect);
    }
}

impl<'s> World<'s> {
    /// The device instances (accelerators) `r` asks for.
    fn device_units(&self, r: &Request) -> f64 {
        let units: i64 = self.unit_ids.iter().map(|id| r.get(*id)).sum();
        units as f64 / placement::SCALE as f64
    }

    fn now(&self) -> Time {
        self.q.now()
    }

    fn show_progress(&self, bar: &indicatif::ProgressBar, handled: u64) {
        let now = self.now() as f64 / 1e9;
        match self.horizon {
            Some(h) => {
                bar.set_length(1000);
                bar.set_position((now / (h as f64 / 1e9) * 1000.0).clamp(0.0, 1000.0) as u64);
                bar.set_message(format!(
                    "{handled} events, simulated {now:.1} of {:.1} s",
                    h as f64 / 1e9
                ));
            }
            None => bar.set_message(format!("{handled} events, simulated {now:.1} s")),
        }
    }
}
