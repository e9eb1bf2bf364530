//! The simulation: Ray-style work placed and run on a simulated cluster.
//!
//! [`simulate`] turns a validated [`Spec`] into a deterministic run: task groups (a DAG at
//! group granularity: a group starts when every group it runs `after` has finished), actors,
//! placement groups (atomic creation with Ray's retry backoff), training jobs over placement
//! groups, and inference services with Poisson, bursty or trace arrivals. Placement decisions
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

pub mod failures;
pub mod metrics;
pub mod models;
pub mod network;
mod objects;
pub mod timeline;

use crate::engine::{EventQueue, Time, rng_stream, stream_id};
use crate::placement::{
    self, Allocation, BundleRequest, ClusterState, Decision, Explain, NodeId, PgDecision, Request,
    TaskRequest,
};
use crate::spec::Spec;
use crate::spec::hardware::NodeType;
use crate::spec::workload::{Arrival, PgStrategy, Policy, Strategy};
use metrics::*;
use models::secs;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use std::collections::{BTreeMap, VecDeque};

/// How long services run when neither the caller nor an experiment says (simulated).
pub const DEFAULT_SERVICE_HORIZON: Time = 3600 * crate::engine::SEC;

#[derive(Debug, Clone, Default)]
pub struct SimConfig {
    pub seed: u64,
    /// End of the simulated window; services need one (default: the first experiment's
    /// `horizon`, else [`DEFAULT_SERVICE_HORIZON`] when there are services).
    pub horizon: Option<Time>,
    /// `workload.item` whose first placement decision is explained.
    pub explain: Option<String>,
    /// Arrival times (seconds) of `arrival trace` services, by file name as written.
    pub traces: BTreeMap<String, Vec<f64>>,
    /// Keep every allocation and free in [`RunResult::trace`] (for invariant checks).
    pub record: bool,
    /// Apply only the `failures NAME` block of that name (default: every block).
    pub failure_block: Option<String>,
    /// Samples (seconds) of `empirical("FILE")` distributions, by file name as written.
    pub empirical: BTreeMap<String, Vec<f64>>,
    /// Move every task's inputs with this transport instead of the one each workload selects
    /// (a built-in kind or a declared `transport` block; `orrery transports --workload`).
    pub transport: Option<String>,
    /// Record what each device did when ([`RunResult::timeline`]).
    pub timeline: bool,
}

#[derive(Debug, Clone)]
pub struct RunResult {
    pub metrics: RunMetrics,
    /// Rendered placement explanation, when asked for and reached.
    pub explain: Option<String>,
    /// Allocations and frees in order, when [`SimConfig::record`] is set.
    pub trace: Vec<TraceEvent>,
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
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Ev {
    GroupReady(u32),
    /// (task, attempt): stale attempts (the task's node died) are ignored.
    TaskDone(u32, u32),
    PgTry(u32),
    ActorCall(u32, u32),
    StepDone(u32, u32),
    Arrival(u32),
    BatchDone(u32, u32),
    BatchTimeout(u32),
    /// A job finished loading its checkpoint after a restart.
    JobResume(u32, u32),
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
    NicDegrade(u32, u32, u32),
    /// A node that stops answering without crashing (silent packet loss).
    NodeUnreachable(u32),
    /// Resubmit a task after its retry delay.
    Retry(u32),
    /// Next failure of a random failure process (process index).
    RandomFailure(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Work {
    Task(u32),
    Actor(u32),
    Replica(u32),
}

struct Group {
    workload: usize,
    index: usize,
    request: Request,
    tenant: Option<usize>,
    policy: Policy,
    first: u32,
    count: u32,
    deps_left: u32,
    dependents: Vec<u32>,
    done: u32,
    ready_at: Time,
    input_bytes: f64,
    queueing: Vec<f64>,
    run: Vec<f64>,
    infeasible: u64,
    /// Tasks that ran out of retries after their node died.
    failed: u64,
    /// Tasks that have started at least once (reconstruction runs aside).
    started: u32,
    /// Lost input objects being rebuilt (lineage reconstruction): the group's tasks that
    /// have not started wait until this is back to 0.
    blocked: u32,
    /// Bytes of this group's outputs spilled to disk, and whether its outputs were released.
    spilled_bytes: f64,
    released: bool,
    /// Tasks waiting out their retry delay.
    delayed: u32,
    first_start: Option<Time>,
    last_end: Time,
}

struct Actor {
    group: usize,
    request: Request,
    holds: bool,
    calls_left: u64,
    call_ns: Time,
    node: Option<NodeId>,
    alloc: Option<Allocation>,
    submitted: Time,
    epoch: u32,
    restarts_left: i64,
    /// Retries left for a method call lost with the actor (`max_task_retries`, -1: unlimited).
    task_retries_left: i64,
    dead: bool,
}

struct ActorGroup {
    workload: usize,
    index: usize,
    tenant: Option<usize>,
    policy: Policy,
    placed: u64,
    infeasible: u64,
    calls_done: u64,
    calls_failed: u64,
    delays: Vec<f64>,
}

struct Pg {
    workload: usize,
    index: usize,
    bundles: Vec<Request>,
    strategy: PgStrategy,
    policy: Policy,
    tenant: Option<usize>,
    requested: Time,
    created: Option<Time>,
    infeasible: bool,
    attempts: u64,
    backoff: Time,
    nodes: Vec<NodeId>,
    /// One per bundle once created; `None` while a bundle lost with its node is re-placed.
    allocs: Vec<Option<Allocation>>,
    jobs: Vec<u32>,
    lost_since: Option<Time>,
    /// Reserves a whole slice; `bundles` are filled in from the slice it gets.
    slice: bool,
}

struct Job {
    workload: usize,
    index: usize,
    pg: u32,
    steps_left: u64,
    steps_done: u64,
    compute_ns: Time,
    comm_ns: Time,
    ckpt_every: Option<Time>,
    ckpt_ns: Time,
    next_ckpt: Time,
    started: Option<Time>,
    finished: Option<Time>,
    ckpt_total: Time,
    devices: u32,
    nodes: usize,
    epoch: u32,
    /// Steps done at the last completed checkpoint, and when it completed.
    ckpt_steps: u64,
    ckpt_at: Time,
    /// When a failure stopped the job (it resumes when its group is whole again).
    stopped_at: Option<Time>,
    load_ns: Time,
    restarts: u64,
    lost_device_ns: f64,
    /// Since when the current run of steps has been making progress.
    progress_from: Time,
    /// Timeline: start of the step interval in progress and the checkpoint it begins with.
    span_from: Time,
    span_ckpt: Time,
    /// Timeline: the job's devices.
    dev_set: Vec<u32>,
    /// The checkpoint before the last one (the fallback while the last is being written).
    prev_ckpt_steps: u64,
    prev_ckpt_at: Time,
    /// When the failure that stopped the job happened, until it computes again.
    recovering_from: Option<Time>,
}

struct Replica {
    service: u32,
    node: Option<NodeId>,
    alloc: Option<Allocation>,
    batch: u32,
    epoch: u32,
    /// Requests of the batch in progress (arrival times).
    inflight: Vec<Time>,
    /// When the batch in progress started (timeline).
    batch_start: Time,
}

struct Service {
    workload: usize,
    index: usize,
    request: Request,
    tenant: Option<usize>,
    queue: VecDeque<Time>,
    idle: Vec<u32>,
    replicas: Vec<u32>,
    rate: f64,
    burst: u64,
    trace: Vec<Time>,
    trace_next: usize,
    arrived: u64,
    latencies: Vec<f64>,
    waits: Vec<f64>,
    timeout: Option<crate::engine::EventId>,
    /// FLOP per request; memory traffic and kernels per batch.
    compute: Option<crate::spec::workload::Compute>,
    service_ns: Option<Time>,
    exponential: bool,
    batch: Option<(u32, Time)>,
    rng: ChaCha8Rng,
}

struct Sim<'s> {
    spec: &'s Spec,
    state: ClusterState,
    q: EventQueue<Ev>,
    node_types: Vec<&'s NodeType>,
    node_accel: Vec<Option<String>>,
    /// Work that found no available node, FIFO per class (task group, actor group, service),
    /// classes in order of first appearance.
    pending: Vec<(Work, VecDeque<u32>)>,
    groups: Vec<Group>,
    task_start: Vec<Time>,
    task_node: Vec<u32>,
    task_alloc: Vec<Option<Allocation>>,
    /// Attempt number of each task (bumped when its node dies) and retries left.
    task_epoch: Vec<u32>,
    task_completed: Vec<bool>,
    task_started: Vec<bool>,
    /// Completed tasks re-running to rebuild an output lost with its node.
    task_rebuild: Vec<bool>,
    /// Broken invariants (must stay empty; checked by the tests).
    violations: Vec<String>,
    task_retries: Vec<u32>,
    actor_groups: Vec<ActorGroup>,
    actors: Vec<Actor>,
    pgs: Vec<Pg>,
    jobs: Vec<Job>,
    services: Vec<Service>,
    replicas: Vec<Replica>,
    util: UtilTracker,
    rng: ChaCha8Rng,
    horizon: Option<Time>,
    explain_target: Option<String>,
    explain: Option<String>,
    makespan: Time,
    unit_ids: Vec<usize>,
    /// Every allocation (+1) and free (−1) with its node and tenant, when recording.
    trace: Option<Vec<TraceEvent>>,
    failures: failures::Failures,
    store: objects::Store,
    net: network::NetState,
    tl: timeline::Recorder,
    transport_override: Option<String>,
}

/// One allocation or free, for checking invariants over a whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEvent {
    pub time: Time,
    pub node: NodeId,
    pub tenant: Option<usize>,
    /// +1 allocate, −1 free.
    pub delta: i8,
}

/// Run `spec` to completion (or to the horizon) and return its metrics.
pub fn simulate(spec: &Spec, cfg: &SimConfig) -> RunResult {
    let mut sim = Sim::new(spec, cfg);
    let nodes: Vec<(String, usize)> = (0..sim.node_types.len())
        .map(|n| {
            let devices = sim.node_types[n].devices.iter().map(|g| g.at.len()).sum();
            (sim.state.nodes[n].name().to_string(), devices)
        })
        .collect();
    sim.tl.init(cfg.timeline, &nodes);
    sim.schedule_failures(cfg.seed, cfg.failure_block.as_deref(), &cfg.empirical);
    sim.start_store_and(cfg);
    sim.run();
    sim.finish()
}

fn device_units(state: &ClusterState, unit_ids: &[usize], r: &Request) -> f64 {
    let _ = state;
    unit_ids.iter().map(|id| r.get(*id)).sum::<i64>() as f64 / placement::SCALE as f64
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
        let unit_ids = crate::spec::workload::UNIT_INSTANCE
            .iter()
            .filter_map(|n| state.ids.id(n))
            .collect();
        let horizon = cfg
            .horizon
            .or_else(|| spec.experiments.iter().find_map(|e| e.horizon).map(|h| h.0))
            .or_else(|| {
                spec.workloads
                    .iter()
                    .any(|w| !w.services.is_empty())
                    .then_some(DEFAULT_SERVICE_HORIZON)
            });
        Sim {
            spec,
            state,
            q: EventQueue::with_capacity(1024),
            node_types,
            node_accel,
            pending: Vec::new(),
            groups: Vec::new(),
            task_start: Vec::new(),
            task_node: Vec::new(),
            task_alloc: Vec::new(),
            task_epoch: Vec::new(),
            task_completed: Vec::new(),
            task_started: Vec::new(),
            task_rebuild: Vec::new(),
            violations: Vec::new(),
            task_retries: Vec::new(),
            actor_groups: Vec::new(),
            actors: Vec::new(),
            pgs: Vec::new(),
            jobs: Vec::new(),
            services: Vec::new(),
            replicas: Vec::new(),
            util: UtilTracker::default(),
            rng: rng_stream(cfg.seed, stream_id("placement")),
            horizon,
            explain_target: cfg.explain.clone(),
            transport_override: cfg.transport.clone(),
            explain: None,
            makespan: 0,
            unit_ids,
            trace: cfg.record.then(Vec::new),
            failures: failures::Failures::default(),
            store: objects::Store::default(),
            net: network::NetState::default(),
            tl: timeline::Recorder::default(),
        }
    }

    fn now(&self) -> Time {
        self.q.now()
    }

    /// Workloads first (they size the task arrays), then the object stores.
    fn start_store_and(&mut self, cfg: &SimConfig) {
        self.init_store_nodes();
        self.init_network();
        self.start(cfg);
    }

    /// Build runtime state for every workload and schedule what starts at time zero.
    fn start(&mut self, cfg: &SimConfig) {
        let spec = self.spec;
        for (wi, w) in spec.workloads.iter().enumerate() {
            let tenant = w.tenant.as_ref().and_then(|t| self.state.tenant_index(t));
            // Task groups, then their dependency edges.
            let base = self.groups.len() as u32;
            for (gi, g) in w.tasks.iter().enumerate() {
                let request = self.state.request(&g.resources);
                let first = self.task_start.len() as u32;
                self.task_start
                    .extend(std::iter::repeat_n(0, g.count as usize));
                self.task_node
                    .extend(std::iter::repeat_n(u32::MAX, g.count as usize));
                self.task_alloc
                    .extend(std::iter::repeat_with(|| None).take(g.count as usize));
                self.task_epoch
                    .extend(std::iter::repeat_n(0, g.count as usize));
                self.task_completed
                    .extend(std::iter::repeat_n(false, g.count as usize));
                self.task_started
                    .extend(std::iter::repeat_n(false, g.count as usize));
                self.task_rebuild
                    .extend(std::iter::repeat_n(false, g.count as usize));
                self.task_retries
                    .extend(std::iter::repeat_n(g.retries, g.count as usize));
                self.groups.push(Group {
                    workload: wi,
                    index: gi,
                    request,
                    tenant,
                    policy: w.policy,
                    first,
                    count: g.count as u32,
                    deps_left: g.after.len() as u32,
                    dependents: Vec::new(),
                    done: 0,
                    ready_at: 0,
                    input_bytes: 0.0,
                    queueing: Vec::new(),
                    run: Vec::new(),
                    infeasible: 0,
                    failed: 0,
                    started: 0,
                    blocked: 0,
                    spilled_bytes: 0.0,
                    released: false,
                    delayed: 0,
                    first_start: None,
                    last_end: 0,
                });
            }
            for (gi, g) in w.tasks.iter().enumerate() {
                let me = base + gi as u32;
                let mut input = 0.0;
                for dep in &g.after {
                    if let Some(di) = w.tasks.iter().position(|t| &t.name == dep) {
                        self.groups[(base + di as u32) as usize].dependents.push(me);
                        input += w.tasks[di].count as f64 * w.tasks[di].output.0 as f64;
                    }
                }
                self.groups[me as usize].input_bytes = input / g.count.max(1) as f64;
                if g.after.is_empty() {
                    // Work at time zero is submitted in declaration order.
                    self.handle(Ev::GroupReady(me));
                }
            }
            // Actors.
            for (ai, a) in w.actors.iter().enumerate() {
                let (request, holds) = match &a.resources {
                    Some(r) => (self.state.request(r), true),
                    None => (
                        self.state
                            .request(&BTreeMap::from([("CPU".to_string(), 1.0)])),
                        false,
                    ),
                };
                let ag = self.actor_groups.len();
                self.actor_groups.push(ActorGroup {
                    workload: wi,
                    index: ai,
                    tenant,
                    policy: w.policy,
                    placed: 0,
                    infeasible: 0,
                    calls_done: 0,
                    calls_failed: 0,
                    delays: Vec::new(),
                });
                for _ in 0..a.count {
                    let id = self.actors.len() as u32;
                    self.actors.push(Actor {
                        group: ag,
                        request: request.clone(),
                        holds,
                        calls_left: a.calls,
                        call_ns: a.call_duration.map(|d| d.0).unwrap_or(0),
                        node: None,
                        alloc: None,
                        submitted: 0,
                        epoch: 0,
                        restarts_left: a.max_restarts,
                        task_retries_left: a.max_task_retries,
                        dead: false,
                    });
                    self.submit(Work::Actor(id));
                }
            }
            // Placement groups, then training jobs on them.
            let pg_base = self.pgs.len() as u32;
            for (pi, p) in w.placement_groups.iter().enumerate() {
                let bundles = p.bundles.iter().map(|b| self.state.request(b)).collect();
                self.pgs.push(Pg {
                    workload: wi,
                    index: pi,
                    bundles,
                    strategy: p.strategy,
                    policy: p.policy.unwrap_or(w.policy),
                    tenant,
                    requested: 0,
                    created: None,
                    infeasible: false,
                    attempts: 0,
                    backoff: 100 * crate::engine::MS,
                    nodes: Vec::new(),
                    allocs: Vec::new(),
                    jobs: Vec::new(),
                    lost_since: None,
                    slice: p.slice,
                });
            }
            for (ti, t) in w.training.iter().enumerate() {
                let Some(pi) = w
                    .placement_groups
                    .iter()
                    .position(|p| p.name == t.placement_group)
                else {
                    continue;
                };
                let pg = pg_base + pi as u32;
                let id = self.jobs.len() as u32;
                self.jobs.push(Job {
                    workload: wi,
                    index: ti,
                    pg,
                    steps_left: t.steps,
                    steps_done: 0,
                    compute_ns: 0,
                    comm_ns: 0,
                    ckpt_every: t.checkpoint.as_ref().map(|c| c.every.0),
                    ckpt_ns: 0,
                    next_ckpt: 0,
                    started: None,
                    finished: None,
                    ckpt_total: 0,
                    devices: 0,
                    nodes: 0,
                    epoch: 0,
                    ckpt_steps: 0,
                    ckpt_at: 0,
                    stopped_at: None,
                    load_ns: 0,
                    restarts: 0,
                    lost_device_ns: 0.0,
                    progress_from: 0,
                    span_from: 0,
                    span_ckpt: 0,
                    dev_set: Vec::new(),
                    prev_ckpt_steps: 0,
                    prev_ckpt_at: 0,
                    recovering_from: None,
                });
                self.pgs[pg as usize].jobs.push(id);
            }
            for pi in 0..w.placement_groups.len() {
                self.try_pg(pg_base + pi as u32);
            }
            // Services: replicas now, arrivals from time zero.
            for (si, s) in w.services.iter().enumerate() {
                let sid = self.services.len() as u32;
                let (rate, burst, trace) = match &s.arrival {
                    Arrival::Poisson(r) => (r.0, 1, Vec::new()),
                    Arrival::Bursty { rate, burst } => (rate.0, *burst, Vec::new()),
                    Arrival::Trace(path) => {
                        let mut t: Vec<Time> = cfg
                            .traces
                            .get(path)
                            .map(|v| v.iter().map(|x| secs(*x)).collect())
                            .unwrap_or_default();
                        t.sort_unstable();
                        (0.0, 1, t)
                    }
                };
                let request = self.state.request(&s.resources);
                self.services.push(Service {
                    workload: wi,
                    index: si,
                    request,
                    tenant,
                    queue: VecDeque::new(),
                    idle: Vec::new(),
                    replicas: Vec::new(),
                    rate,
                    burst,
                    trace,
                    trace_next: 0,
                    arrived: 0,
                    latencies: Vec::new(),
                    waits: Vec::new(),
                    timeout: None,
                    compute: s.compute.clone(),
                    service_ns: s.service_time.map(|d| d.0),
                    exponential: s.exponential,
                    batch: s.batch.map(|(m, w)| (m, w.0)),
                    rng: rng_stream(
                        cfg.seed,
                        stream_id(&format!("service/{}/{}", w.name, s.name)),
                    ),
                });
                for _ in 0..s.replicas {
                    let rid = self.replicas.len() as u32;
                    self.replicas.push(Replica {
                        service: sid,
                        node: None,
                        alloc: None,
                        batch: 0,
                        epoch: 0,
                        inflight: Vec::new(),
                        batch_start: 0,
                    });
                    self.services[sid as usize].replicas.push(rid);
                    self.submit(Work::Replica(rid));
                }
                self.schedule_arrival(sid);
            }
        }
    }

    fn item_name(&self, w: Work) -> String {
        let spec = self.spec;
        match w {
            Work::Task(t) => {
                let g = &self.groups[self.group_of(t)];
                format!(
                    "{}.{}",
                    spec.workloads[g.workload].name, spec.workloads[g.workload].tasks[g.index].name
                )
            }
            Work::Actor(a) => {
                let g = &self.actor_groups[self.actors[a as usize].group];
                format!(
                    "{}.{}",
                    spec.workloads[g.workload].name,
                    spec.workloads[g.workload].actors[g.index].name
                )
            }
            Work::Replica(r) => {
                let s = &self.services[self.replicas[r as usize].service as usize];
                format!(
                    "{}.{}",
                    spec.workloads[s.workload].name,
                    spec.workloads[s.workload].services[s.index].name
                )
            }
        }
    }

    fn group_of(&self, task: u32) -> usize {
        self.groups.partition_point(|g| g.first + g.count <= task)
    }

    /// Ask the policy where `w` goes and start it, queue it there, or record it infeasible.
    fn submit(&mut self, w: Work) {
        let spec = self.spec;
        let default_strategy = Strategy::Default;
        let spread = Strategy::Spread;
        let (request, strategy, selector, tenant, policy) = match w {
            Work::Task(t) => {
                let g = &self.groups[self.group_of(t)];
                let ts = &spec.workloads[g.workload].tasks[g.index];
                (
                    g.request.clone(),
                    &ts.strategy,
                    ts.label_selector.as_slice(),
                    g.tenant,
                    g.policy,
                )
            }
            Work::Actor(a) => {
                let ac = &self.actors[a as usize];
                let g = &self.actor_groups[ac.group];
                let sa = &spec.workloads[g.workload].actors[g.index];
                (
                    ac.request.clone(),
                    &sa.strategy,
                    sa.label_selector.as_slice(),
                    g.tenant,
                    g.policy,
                )
            }
            Work::Replica(r) => {
                let s = &self.services[self.replicas[r as usize].service as usize];
                let policy = spec.workloads[s.workload].policy;
                (
                    s.request.clone(),
                    if policy == Policy::TopologyAware {
                        &default_strategy
                    } else {
                        &spread
                    },
                    &[][..],
                    s.tenant,
                    policy,
                )
            }
        };
        let key = self.class_key(w).0;
        let blocked = matches!(key, Work::Task(g) if self.groups[g as usize].blocked > 0);
        if blocked || self.pending.iter().any(|(k, q)| *k == key && !q.is_empty()) {
            // Earlier work of the same class is waiting, so no node is available for it.
            self.enqueue(w);
            return;
        }
        let mut ex = Explain {
            candidates: Vec::new(),
        };
        let want_explain = self.explain.is_none()
            && self.explain_target.as_deref() == Some(self.item_name(w).as_str());
        let tr = TaskRequest {
            request: &request,
            strategy,
            label_selector: selector,
            preferred: self.state.head,
            tenant,
            policy,
        };
        let d = placement::place_task(
            &mut self.state,
            &tr,
            &mut self.rng,
            if want_explain { Some(&mut ex) } else { None },
        );
        if want_explain {
            self.explain = Some(format!(
                "{} at t={:.6} s: {:?}\n{}",
                self.item_name(w),
                self.now() as f64 / 1e9,
                d,
                ex.render(&self.state)
            ));
        }
        match d {
            Decision::Run(node) => {
                if !self.try_start(w, node, &request, tenant, policy) {
                    self.enqueue(w);
                }
            }
            Decision::Queue(_) => self.enqueue(w),
            // While some node is down, "infeasible" may only mean "not until it returns":
            // Ray keeps such work queued, and so does the simulation (a repaired node is
            // offered to every waiting class). Rebuilding a lost output always waits.
            Decision::Infeasible
                if self.state.alive_count() < self.state.nodes.len()
                    || matches!(w, Work::Task(t) if self.task_rebuild[t as usize]) =>
            {
                self.enqueue(w)
            }
            Decision::Infeasible => match w {
                Work::Task(t) => {
                    let g = self.group_of(t);
                    self.groups[g].infeasible += 1;
                    self.task_done_bookkeeping(g);
                }
                Work::Actor(a) => {
                    let g = self.actors[a as usize].group;
                    self.actor_groups[g].infeasible += 1;
                }
                Work::Replica(_) => {}
            },
        }
    }

    fn allocate(
        &mut self,
        node: NodeId,
        r: &Request,
        tenant: Option<usize>,
        policy: Policy,
    ) -> Option<Allocation> {
        if !self.state.nodes[node].alive() {
            // Invariant: a dead node's resources are never assigned.
            self.violations.push(format!(
                "allocation on dead node {} at {} ns",
                self.state.nodes[node].name(),
                self.now()
            ));
        }
        let a = self.state.allocate(node, r, tenant, policy)?;
        let time = self.now();
        if let Some(t) = &mut self.trace {
            t.push(TraceEvent {
                time,
                node,
                tenant,
                delta: 1,
            });
        }
        Some(a)
    }

    fn free(&mut self, a: &Allocation, tenant: Option<usize>) {
        self.state.free(a, tenant);
        let time = self.now();
        if let Some(t) = &mut self.trace {
            t.push(TraceEvent {
                time,
                node: a.node,
                tenant,
                delta: -1,
            });
        }
    }

    /// Allocate each bundle on its node, all or nothing (placement-group creation is atomic).
    pub(crate) fn allocate_all(
        &mut self,
        bundles: &[Request],
        nodes: &[NodeId],
        tenant: Option<usize>,
        policy: Policy,
    ) -> Option<Vec<Allocation>> {
        let mut allocs = Vec::with_capacity(bundles.len());
        for (b, n) in bundles.iter().zip(nodes) {
            match self.allocate(*n, b, tenant, policy) {
                Some(a) => allocs.push(a),
                None => {
                    for a in &allocs {
                        self.free(a, tenant);
                    }
                    return None;
                }
            }
        }
        Some(allocs)
    }

    /// The class of a piece of work and its id within the class's queue.
    fn class_key(&self, w: Work) -> (Work, u32) {
        match w {
            Work::Task(t) => (Work::Task(self.group_of(t) as u32), t),
            Work::Actor(a) => (Work::Actor(self.actors[a as usize].group as u32), a),
            Work::Replica(r) => (Work::Replica(self.replicas[r as usize].service), r),
        }
    }

    fn enqueue(&mut self, w: Work) {
        let (key, id) = self.class_key(w);
        match self.pending.iter_mut().find(|(k, _)| *k == key) {
            Some((_, q)) => q.push_back(id),
            None => self.pending.push((key, VecDeque::from([id]))),
        }
    }

    /// Allocate on `node` and start `w`; false if it does not fit there now.
    fn try_start(
        &mut self,
        w: Work,
        node: NodeId,
        request: &Request,
        tenant: Option<usize>,
        policy: Policy,
    ) -> bool {
        let now = self.now();
        let Some(alloc) = self.allocate(node, request, tenant, policy) else {
            return false;
        };
        let units = device_units(&self.state, &self.unit_ids, request);
        match w {
            Work::Task(t) => {
                let gi = self.group_of(t);
                self.busy(node, units, now);
                let first = !std::mem::replace(&mut self.task_started[t as usize], true);
                let g = &mut self.groups[gi];
                if first {
                    g.queueing.push((now - g.ready_at) as f64 / 1e9);
                    g.started += 1;
                }
                g.first_start.get_or_insert(now);
                if first {
                    self.consumer_started(gi);
                }
                let dur = self.task_duration(gi, node, units);
                self.task_start[t as usize] = now;
                self.task_node[t as usize] = node as u32;
                self.task_alloc[t as usize] = Some(alloc);
                self.q
                    .after(dur, Ev::TaskDone(t, self.task_epoch[t as usize]));
            }
            Work::Actor(a) => {
                let ac = &mut self.actors[a as usize];
                ac.node = Some(node);
                let g = &mut self.actor_groups[ac.group];
                g.placed += 1;
                g.delays.push((now - ac.submitted) as f64 / 1e9);
                if ac.holds {
                    ac.alloc = Some(alloc);
                    self.busy(node, units, now);
                } else {
                    // Ray's default actor: 1 CPU to be placed, 0 while running.
                    self.free(&alloc, tenant);
                }
                let ac = &self.actors[a as usize];
                if ac.calls_left > 0 {
                    self.q.after(ac.call_ns, Ev::ActorCall(a, ac.epoch));
                } else if ac.holds && ac.call_ns == 0 {
                    // Long-lived actor with no calls: holds its resources for the whole run.
                }
                if !self.actors[a as usize].holds {
                    self.dispatch(node);
                }
            }
            Work::Replica(r) => {
                self.busy(node, units, now);
                let rep = &mut self.replicas[r as usize];
                rep.node = Some(node);
                rep.alloc = Some(alloc);
                let s = rep.service;
                self.services[s as usize].idle.push(r);
                self.serve(s);
            }
        }
        true
    }

    /// Devices of `node` becoming busy (`units` > 0) or idle (< 0) for utilisation.
    pub(crate) fn busy(&mut self, node: NodeId, units: f64, at: Time) {
        if units != 0.0
            && let Some(a) = &self.node_accel[node]
        {
            self.util.change(a, at, units);
        }
    }

    /// Timeline ids of the device instances an allocation holds on `node`.
    fn alloc_devices(&self, node: NodeId, alloc: Option<&Allocation>) -> Vec<u32> {
        let Some(a) = alloc else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (rid, amounts) in &a.instances {
            if self.unit_ids.contains(rid) {
                out.extend(
                    amounts
                        .iter()
                        .enumerate()
                        .filter(|(_, x)| **x > 0)
                        .filter_map(|(d, _)| self.tl.device(node, d)),
                );
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Timeline: task `t` ran on its devices from its start until `now` (done or killed).
    pub(crate) fn record_task(&mut self, t: usize, now: Time) {
        if !self.tl.on {
            return;
        }
        let node = self.task_node[t] as usize;
        let devs = self.alloc_devices(node, self.task_alloc[t].as_ref());
        let g = &self.groups[self.group_of(t as u32)];
        let w = &self.spec.workloads[g.workload];
        let label = format!("{}.{}", w.name, w.tasks[g.index].name);
        let from = self.task_start[t];
        self.tl
            .span(&devs, from, now, timeline::SpanKind::Compute, &label);
    }

    /// Timeline: the step interval of job `j` that ends now — its checkpoint (if it began
    /// with one), compute, then communication.
    fn record_step(&mut self, j: usize, now: Time) {
        let job = &self.jobs[j];
        let w = &self.spec.workloads[job.workload];
        let label = format!("{}.{}", w.name, w.training[job.index].name);
        let (from, ck, c) = (job.span_from, job.span_ckpt, job.compute_ns);
        let a = from + ck;
        let b = (a + c).min(now);
        use timeline::SpanKind as K;
        let devs = &self.jobs[j].dev_set;
        self.tl.span(devs, from, a.min(now), K::Checkpoint, &label);
        self.tl.span(devs, a, b, K::Compute, &label);
        self.tl.span(devs, b, now, K::Communication, &label);
        self.jobs[j].span_from = now;
    }

    fn task_duration(&mut self, gi: usize, node: NodeId, units: f64) -> Time {
        let fetch = self.fetch_secs(gi, node, units > 0.0);
        let g = &self.groups[gi];
        let ts = &self.spec.workloads[g.workload].tasks[g.index];
        let run = match (&ts.duration, &ts.compute, &self.node_accel[node]) {
            (Some(d), _, _) => d.0 as f64 / 1e9,
            (None, Some(c), Some(acc)) => models::compute_secs(self.spec, acc, c, 1.0, units),
            _ => 0.0,
        };
        secs(fetch + self.restore_secs(gi) + run).max(1)
    }

    /// Resources were freed on `node`: start waiting work that now fits there, FIFO within
    /// each class, classes in order. Checking `node` alone is exact: nothing was available
    /// for a waiting class before this free (see the module docs).
    fn dispatch(&mut self, node: NodeId) {
        if !self.failures.lost_pgs.is_empty() {
            // Bundles lost with a node are rescheduled ahead of other work (Ray GCS).
            self.repair_pgs();
        }
        let spec = self.spec;
        for k in 0..self.pending.len() {
            if matches!(self.pending[k].0, Work::Task(g) if self.groups[g as usize].blocked > 0) {
                continue;
            }
            while let Some(&id) = self.pending[k].1.front() {
                let w = match self.pending[k].0 {
                    Work::Task(_) => Work::Task(id),
                    Work::Actor(_) => Work::Actor(id),
                    Work::Replica(_) => Work::Replica(id),
                };
                let (request, tenant, policy, strategy, selector) = match w {
                    Work::Task(t) => {
                        let g = &self.groups[self.group_of(t)];
                        let ts = &spec.workloads[g.workload].tasks[g.index];
                        (
                            g.request.clone(),
                            g.tenant,
                            g.policy,
                            Some(&ts.strategy),
                            ts.label_selector.as_slice(),
                        )
                    }
                    Work::Actor(a) => {
                        let ac = &self.actors[a as usize];
                        let g = &self.actor_groups[ac.group];
                        let sa = &spec.workloads[g.workload].actors[g.index];
                        (
                            ac.request.clone(),
                            g.tenant,
                            g.policy,
                            Some(&sa.strategy),
                            sa.label_selector.as_slice(),
                        )
                    }
                    Work::Replica(r) => {
                        let s = &self.services[self.replicas[r as usize].service as usize];
                        (
                            s.request.clone(),
                            s.tenant,
                            spec.workloads[s.workload].policy,
                            None,
                            &[][..],
                        )
                    }
                };
                let st = &self.state;
                let fits = st.is_alive_and_allowed(node, tenant)
                    && st.is_available(node, &request)
                    && selector.iter().all(|c| c.matches(st.nodes[node].labels()))
                    && match strategy {
                        Some(Strategy::NodeAffinity { node: target, soft }) => {
                            match st.node_id(target) {
                                Some(t) if t == node => true,
                                Some(t) => *soft && !st.is_feasible(t, &request),
                                None => *soft,
                            }
                        }
                        _ => true,
                    };
                if !fits {
                    break;
                }
                self.pending[k].1.pop_front();
                if !self.try_start(w, node, &request, tenant, policy) {
                    self.pending[k].1.push_front(id);
                    break;
                }
            }
        }
    }

    fn schedule_arrival(&mut self, sid: u32) {
        let now = self.now();
        let s = &mut self.services[sid as usize];
        let next = if !s.trace.is_empty() || s.rate == 0.0 {
            let t = s.trace.get(s.trace_next).copied();
            s.trace_next += 1;
            t
        } else {
            // Bursts arrive as a Poisson process of rate/burst; each brings `burst` requests.
            let epoch_rate = s.rate / s.burst as f64;
            let gap: f64 = Exp::new(epoch_rate)
                .map(|e| e.sample(&mut s.rng))
                .unwrap_or(f64::INFINITY);
            Some(now.saturating_add(secs(gap)))
        };
        if let Some(t) = next
            && self.horizon.is_none_or(|h| t <= h)
        {
            self.q.at(t, Ev::Arrival(sid));
        }
    }

    /// Hand queued requests to idle replicas, honouring batching.
    fn serve(&mut self, sid: u32) {
        let now = self.now();
        loop {
            let s = &mut self.services[sid as usize];
            if s.queue.is_empty() || s.idle.is_empty() {
                return;
            }
            let take = match s.batch {
                None => 1,
                Some((max, wait)) => {
                    let oldest = *s.queue.front().expect("non-empty");
                    if (s.queue.len() as u32) < max && now < oldest + wait {
                        if s.timeout.is_none() {
                            s.timeout = Some(self.q.at(oldest + wait, Ev::BatchTimeout(sid)));
                        }
                        return;
                    }
                    s.queue.len().min(max as usize) as u32
                }
            };
            if let Some(t) = s.timeout.take() {
                self.q.cancel(t);
            }
            let r = s.idle.pop().expect("non-empty");
            let mut waited = Vec::with_capacity(take as usize);
            for _ in 0..take {
                let a = s.queue.pop_front().expect("non-empty");
                waited.push(a);
            }
            let dur = self.batch_duration(sid, r, take);
            let s = &mut self.services[sid as usize];
            for a in &waited {
                s.waits.push((now - a) as f64 / 1e9);
            }
            let rep = &mut self.replicas[r as usize];
            rep.batch = take;
            rep.inflight = waited;
            rep.batch_start = now;
            self.q.after(dur, Ev::BatchDone(r, rep.epoch));
        }
    }

    fn batch_duration(&mut self, sid: u32, r: u32, b: u32) -> Time {
        let node = self.replicas[r as usize].node.unwrap_or(0);
        let units = device_units(
            &self.state,
            &self.unit_ids,
            &self.services[sid as usize].request,
        );
        let s = &mut self.services[sid as usize];
        let t = match (&s.compute, s.service_ns) {
            (Some(c), _) => {
                let acc = self.node_accel[node].clone().unwrap_or_default();
                models::compute_secs(self.spec, &acc, c, f64::from(b), units)
            }
            (None, Some(ns)) if s.exponential => Exp::new(1e9 / ns as f64)
                .map(|e| e.sample(&mut s.rng))
                .unwrap_or(0.0),
            (None, Some(ns)) => ns as f64 / 1e9,
            _ => 0.0,
        };
        secs(t).max(1)
    }

    /// Submit a task again, after its group's retry delay.
    pub(crate) fn retry_task(&mut self, t: u32) {
        let gi = self.group_of(t);
        let g = &self.groups[gi];
        let delay = self.spec.workloads[g.workload].tasks[g.index].retry_delay.0;
        if delay == 0 {
            self.submit(Work::Task(t));
        } else {
            self.groups[gi].delayed += 1;
            self.q.after(delay, Ev::Retry(t));
        }
    }

    fn task_done_bookkeeping(&mut self, gi: usize) {
        let now = self.now();
        let g = &mut self.groups[gi];
        g.done += 1;
        if g.done == g.count {
            g.last_end = now;
            self.makespan = self.makespan.max(now);
            for d in g.dependents.clone() {
                let dg = &mut self.groups[d as usize];
                dg.deps_left -= 1;
                if dg.deps_left == 0 {
                    self.q.at(now, Ev::GroupReady(d));
                }
            }
        }
    }

    fn try_pg(&mut self, p: u32) {
        let now = self.now();
        let spec = self.spec;
        let pg = &self.pgs[p as usize];
        if pg.created.is_some() || pg.infeasible {
            return;
        }
        let name = format!(
            "{}.{}",
            spec.workloads[pg.workload].name,
            spec.workloads[pg.workload].placement_groups[pg.index].name
        );
        let want_explain =
            self.explain.is_none() && self.explain_target.as_deref() == Some(name.as_str());
        let mut ex = Explain {
            candidates: Vec::new(),
        };
        // A slice group takes its bundles from the first intact slice that can hold them.
        let (bundles, selector) = if pg.slice {
            match self.slice_gang(p) {
                Some(x) => x,
                None => {
                    self.pgs[p as usize].attempts += 1;
                    if self.state.slices() == 0 {
                        self.pgs[p as usize].infeasible = true;
                    } else {
                        self.retry_pg(p);
                    }
                    return;
                }
            }
        } else {
            (pg.bundles.clone(), Vec::new())
        };
        let pg = &self.pgs[p as usize];
        let br = BundleRequest {
            bundles: &bundles,
            strategy: pg.strategy,
            tenant: pg.tenant,
            policy: pg.policy,
            label_selector: &selector,
        };
        let d = placement::place_bundles(
            &self.state,
            &br,
            if want_explain { Some(&mut ex) } else { None },
        );
        if want_explain {
            self.explain = Some(format!(
                "{name} at t={:.6} s: {:?}\n{}",
                now as f64 / 1e9,
                d,
                ex.render(&self.state)
            ));
        }
        let pg = &mut self.pgs[p as usize];
        pg.attempts += 1;
        pg.bundles.clone_from(&bundles);
        let (tenant, policy) = (pg.tenant, pg.policy);
        match d {
            PgDecision::Placed(nodes) => {
                let Some(allocs) = self.allocate_all(&bundles, &nodes, tenant, policy) else {
                    self.retry_pg(p);
                    return;
                };
                let pg = &mut self.pgs[p as usize];
                pg.created = Some(now);
                pg.nodes = nodes;
                pg.allocs = allocs.into_iter().map(Some).collect();
                for j in pg.jobs.clone() {
                    self.start_job(j);
                }
            }
            PgDecision::Wait => self.retry_pg(p),
            PgDecision::Infeasible => self.pgs[p as usize].infeasible = true,
        }
    }

    /// The bundles and label selector of the first intact slice whose gang fits now.
    pub(crate) fn slice_gang(
        &self,
        p: u32,
    ) -> Option<(Vec<Request>, Vec<crate::spec::workload::LabelConstraint>)> {
        let pg = &self.pgs[p as usize];
        (0..self.state.slices())
            .filter(|&s| self.state.slice_intact(s))
            .find_map(|s| {
                let bundles = self.state.slice_bundles(s);
                let selector = self.state.slice_selector(s);
                let br = BundleRequest {
                    bundles: &bundles,
                    strategy: PgStrategy::Pack,
                    tenant: pg.tenant,
                    policy: pg.policy,
                    label_selector: &selector,
                };
                matches!(
                    placement::place_bundles(&self.state, &br, None),
                    PgDecision::Placed(_)
                )
                .then_some((bundles, selector))
            })
    }

    /// Ray retries pending groups with backoff: 100 ms × 1.5 up to 1 s
    /// (`gcs_create_placement_group_retry_*` in ray_config_def.h).
    fn retry_pg(&mut self, p: u32) {
        let pg = &mut self.pgs[p as usize];
        let delay = pg.backoff;
        pg.backoff = ((pg.backoff as f64 * 1.5) as Time).min(crate::engine::SEC);
        if self.q.is_empty() && self.horizon.is_none() {
            // Nothing else will ever free resources: the group stays pending.
            return;
        }
        self.q.after(delay, Ev::PgTry(p));
    }

    /// Devices of a job's group per node.
    fn job_nodes(&self, j: u32) -> BTreeMap<NodeId, u32> {
        let pg = &self.pgs[self.jobs[j as usize].pg as usize];
        let mut per_node: BTreeMap<NodeId, u32> = BTreeMap::new();
        for (b, n) in pg.bundles.iter().zip(&pg.nodes) {
            *per_node.entry(*n).or_insert(0) +=
                device_units(&self.state, &self.unit_ids, b).round() as u32;
        }
        per_node
    }

    /// Seconds of the job's collectives per step over its current group, with the current
    /// bandwidth of each node (degraded NVLink or NICs slow them down).
    fn job_comm_secs(&mut self, j: u32, per_node: &BTreeMap<NodeId, u32>) -> f64 {
        let job = &self.jobs[j as usize];
        let t = &self.spec.workloads[job.workload].training[job.index];
        let linked: Vec<(NodeId, u32)> = per_node
            .iter()
            .filter(|(_, d)| **d > 0)
            .map(|(n, d)| (*n, *d))
            .collect();
        let group = models::Group {
            nodes: linked
                .iter()
                .map(|(n, d)| (self.node_types[*n], *d))
                .collect(),
            factors: linked
                .iter()
                .map(|(n, _)| self.failures.bandwidth_factors(*n))
                .collect(),
        };
        let mut total = 0.0;
        for c in &t.collectives {
            let what = format!(
                "collective {} {}{}",
                c.op,
                c.algo.as_deref().unwrap_or("ring"),
                if c.hierarchical { " hierarchical" } else { "" }
            );
            total += match self.flow_collective_secs(c, per_node) {
                Ok(s) => {
                    self.net.note(
                        network::MovementKind::Collective,
                        true,
                        format!("{what}: flow model on the link graph"),
                    );
                    s
                }
                Err(e) => {
                    self.net.note(
                        network::MovementKind::Collective,
                        false,
                        format!("{what}: closed form ({e})"),
                    );
                    models::collective_secs(
                        self.spec,
                        &c.op,
                        c.bytes.0 as f64,
                        c.hierarchical,
                        &group,
                    )
                }
            };
        }
        total
    }

    /// A node's bandwidth changed: running jobs on it take the new collective time from
    /// their next step.
    pub(crate) fn refresh_jobs_on(&mut self, n: NodeId) {
        for j in 0..self.jobs.len() as u32 {
            let job = &self.jobs[j as usize];
            if job.started.is_none()
                || job.finished.is_some()
                || job.stopped_at.is_some()
                || !self.pgs[job.pg as usize].nodes.contains(&n)
            {
                continue;
            }
            let per_node = self.job_nodes(j);
            let comm = secs(self.job_comm_secs(j, &per_node));
            self.jobs[j as usize].comm_ns = comm;
        }
    }

    fn start_job(&mut self, j: u32) {
        let now = self.now();
        let spec = self.spec;
        let job = &self.jobs[j as usize];
        let t = &spec.workloads[job.workload].training[job.index];
        let per_node = self.job_nodes(j);
        let devices: u32 = per_node.values().sum();
        let compute = match (
            &t.compute,
            per_node.keys().find_map(|n| self.node_accel[*n].clone()),
        ) {
            (Some(c), Some(acc)) => models::compute_secs(spec, &acc, c, 1.0, 1.0),
            _ => 0.0,
        };
        let comm = self.job_comm_secs(j, &per_node);
        let ckpt = t
            .checkpoint
            .as_ref()
            .map(|c| {
                c.size.0 as f64 / (models::CHECKPOINT_BW_PER_NODE * per_node.len().max(1) as f64)
            })
            .unwrap_or(0.0);
        let mut dev_set = Vec::new();
        for (n, d) in &per_node {
            self.busy(*n, f64::from(*d), now);
            dev_set.extend((0..*d as usize).filter_map(|k| self.tl.device(*n, k)));
        }
        let job = &mut self.jobs[j as usize];
        job.compute_ns = secs(compute);
        job.comm_ns = secs(comm);
        job.ckpt_ns = secs(ckpt);
        // Loading the checkpoint after a restart reads it back at the same rate.
        job.load_ns = job.ckpt_ns;
        job.devices = devices;
        job.nodes = per_node.len();
        job.started.get_or_insert(now);
        job.dev_set = dev_set;
        match job.stopped_at.take() {
            None => {
                job.progress_from = now;
                job.span_from = now;
                job.span_ckpt = 0;
                job.next_ckpt = job.ckpt_every.map(|e| now + e).unwrap_or(Time::MAX);
                self.q.after(
                    (job.compute_ns + job.comm_ns).max(1),
                    Ev::StepDone(j, job.epoch),
                );
            }
            Some(stopped) => {
                // Restart from the last checkpoint: load it, then continue. Recovery is
                // measured when it computes again (a crash during the load extends it).
                job.restarts += 1;
                job.recovering_from.get_or_insert(stopped);
                job.progress_from = now + job.load_ns;
                self.q
                    .after(job.load_ns.max(1), Ev::JobResume(j, job.epoch));
            }
        }
    }

    fn run(&mut self) {
        while let Some(t) = self.q.peek_time() {
            if self.horizon.is_some_and(|h| t > h) {
                break;
            }
            let Some((_, ev)) = self.q.pop() else { break };
            // Random failures recur forever: without a horizon, stop once all work is done.
            if self.horizon.is_none()
                && matches!(
                    ev,
                    Ev::RandomFailure(_)
                        | Ev::NodeRepair(_)
                        | Ev::NodeCrash(_)
                        | Ev::NodeDetected(..)
                        | Ev::DeviceFault(..)
                        | Ev::DeviceRepair(..)
                        | Ev::NvlinkDegrade(..)
                        | Ev::NvlinkRestore(_)
                        | Ev::NicDown(..)
                        | Ev::NicUp(..)
                        | Ev::NicDegrade(..)
                        | Ev::NodeUnreachable(_)
                )
                && self.all_done()
            {
                break;
            }
            self.handle(ev);
        }
    }

    /// Every finite piece of work has finished (or can never run).
    fn all_done(&self) -> bool {
        self.groups.iter().all(|g| g.done >= g.count)
            && self
                .jobs
                .iter()
                .all(|j| j.finished.is_some() || self.pgs[j.pg as usize].infeasible)
            && self.actors.iter().all(|a| a.dead || a.calls_left == 0)
            && self.failures.lost.is_empty()
    }

    fn handle(&mut self, ev: Ev) {
        let now = self.now();
        match ev {
            Ev::GroupReady(g) => {
                let grp = &mut self.groups[g as usize];
                grp.ready_at = now;
                let (first, count) = (grp.first, grp.count);
                for t in first..first + count {
                    self.submit(Work::Task(t));
                }
            }
            Ev::TaskDone(t, epoch) => {
                if epoch != self.task_epoch[t as usize] {
                    return; // its node died; the task was retried or failed
                }
                let gi = self.group_of(t);
                let node = self.task_node[t as usize] as usize;
                self.record_task(t as usize, now);
                if self.task_rebuild[t as usize] {
                    self.rebuilt(t, gi, node);
                    return;
                }
                if !self.state.nodes[node].alive() {
                    self.violations.push(format!(
                        "task {t} finished on dead node {}",
                        self.state.nodes[node].name()
                    ));
                }
                if std::mem::replace(&mut self.task_completed[t as usize], true) {
                    self.violations.push(format!("task {t} completed twice"));
                }
                if let Some(a) = self.task_alloc[t as usize].take() {
                    self.free(&a, self.groups[gi].tenant);
                }
                let units = device_units(&self.state, &self.unit_ids, &self.groups[gi].request);
                self.busy(node, -units, now);
                let start = self.task_start[t as usize];
                self.groups[gi].run.push((now - start) as f64 / 1e9);
                self.store_output(t, gi, node);
                self.task_done_bookkeeping(gi);
                self.dispatch(node);
            }
            Ev::PgTry(p) => self.try_pg(p),
            Ev::ActorCall(a, epoch) => {
                if epoch != self.actors[a as usize].epoch {
                    return;
                }
                let ac = &mut self.actors[a as usize];
                ac.calls_left -= 1;
                let g = ac.group;
                self.actor_groups[g].calls_done += 1;
                if self.actors[a as usize].calls_left > 0 {
                    let d = self.actors[a as usize].call_ns.max(1);
                    self.q.after(d, Ev::ActorCall(a, epoch));
                } else {
                    self.makespan = self.makespan.max(now);
                    if let (Some(alloc), Some(node)) = (
                        self.actors[a as usize].alloc.take(),
                        self.actors[a as usize].node,
                    ) {
                        let tenant = self.actor_groups[g].tenant;
                        self.free(&alloc, tenant);
                        let units = device_units(
                            &self.state,
                            &self.unit_ids,
                            &self.actors[a as usize].request,
                        );
                        self.busy(node, -units, now);
                        self.dispatch(node);
                    }
                }
            }
            Ev::StepDone(j, epoch) => {
                let job = &mut self.jobs[j as usize];
                if epoch != job.epoch {
                    return;
                }
                job.steps_left -= 1;
                job.steps_done += 1;
                if self.tl.on {
                    self.record_step(j as usize, now);
                }
                let job = &mut self.jobs[j as usize];
                let mut next = job.compute_ns + job.comm_ns;
                job.span_ckpt = 0;
                if now >= job.next_ckpt {
                    // Write a checkpoint after this step; it counts once written.
                    next += job.ckpt_ns;
                    job.ckpt_total += job.ckpt_ns;
                    job.prev_ckpt_steps = job.ckpt_steps;
                    job.prev_ckpt_at = job.ckpt_at;
                    job.ckpt_steps = job.steps_done;
                    job.ckpt_at = now + job.ckpt_ns;
                    job.span_ckpt = job.ckpt_ns;
                    job.next_ckpt = job
                        .next_ckpt
                        .saturating_add(job.ckpt_every.unwrap_or(Time::MAX));
                }
                if job.steps_left > 0 {
                    self.q.after(next.max(1), Ev::StepDone(j, epoch));
                } else {
                    job.finished = Some(now);
                    self.makespan = self.makespan.max(now);
                    let pg = job.pg as usize;
                    self.release_pg(pg);
                }
            }
            Ev::Arrival(s) => {
                let svc = &mut self.services[s as usize];
                for _ in 0..svc.burst.max(1) {
                    svc.queue.push_back(now);
                    svc.arrived += 1;
                }
                self.schedule_arrival(s);
                self.serve(s);
            }
            Ev::BatchDone(r, epoch) => {
                if epoch != self.replicas[r as usize].epoch {
                    return;
                }
                let s = self.replicas[r as usize].service;
                if self.tl.on {
                    let rep = &self.replicas[r as usize];
                    let devs = self.alloc_devices(rep.node.unwrap_or(0), rep.alloc.as_ref());
                    let svc = &self.services[s as usize];
                    let w = &self.spec.workloads[svc.workload];
                    let label = format!("{}.{}", w.name, w.services[svc.index].name);
                    let from = rep.batch_start;
                    self.tl
                        .span(&devs, from, now, timeline::SpanKind::Compute, &label);
                }
                let done = std::mem::take(&mut self.replicas[r as usize].inflight);
                let svc = &mut self.services[s as usize];
                svc.latencies
                    .extend(done.iter().map(|a| (now - a) as f64 / 1e9));
                svc.idle.push(r);
                self.serve(s);
            }
            Ev::JobResume(j, epoch) => {
                let job = &mut self.jobs[j as usize];
                if epoch == job.epoch {
                    job.progress_from = now;
                    job.span_from = now;
                    job.span_ckpt = 0;
                    if let Some(from) = job.recovering_from.take() {
                        self.failures.recovery.push((now - from) as f64 / 1e9);
                    }
                    let job = &mut self.jobs[j as usize];
                    let (w, i) = (job.workload, job.index);
                    self.failures.timeline.push(metrics::TimelineEvent {
                        time: now as f64 / 1e9,
                        kind: "job_resumed".into(),
                        subject: format!(
                            "{}.{}",
                            self.spec.workloads[w].name, self.spec.workloads[w].training[i].name
                        ),
                    });
                    let job = &mut self.jobs[j as usize];
                    job.next_ckpt = job.ckpt_every.map(|e| now + e).unwrap_or(Time::MAX);
                    self.q.after(
                        (job.compute_ns + job.comm_ns).max(1),
                        Ev::StepDone(j, epoch),
                    );
                }
            }
            Ev::NodeCrash(n) => self.node_crash(n as NodeId),
            Ev::NodeDetected(n, crash) => self.node_detected(n as NodeId, crash),
            Ev::NodeRepair(n) => self.node_repair(n as NodeId),
            Ev::DeviceFault(n, d) => self.device_fault(n as NodeId, d as usize),
            Ev::DeviceRepair(n, d) => self.device_repair(n as NodeId, d as usize),
            Ev::NvlinkDegrade(n, f) => self.nvlink_degrade(n as NodeId, f64::from(f) / 1000.0),
            Ev::NvlinkRestore(n) => self.nvlink_degrade(n as NodeId, 1.0),
            Ev::NicDown(n, i) => self.nic_down(n as NodeId, i as usize),
            Ev::NicUp(n, i) => self.nic_up(n as NodeId, i as usize),
            Ev::NicDegrade(n, i, f) => {
                self.nic_degrade(n as NodeId, i as usize, f64::from(f) / 1000.0)
            }
            Ev::NodeUnreachable(n) => self.node_crash_with(n as NodeId, true),
            Ev::Retry(t) => {
                let gi = self.group_of(t);
                self.groups[gi].delayed -= 1;
                self.submit(Work::Task(t));
            }
            Ev::RandomFailure(p) => self.random_failure(p as usize),
            Ev::BatchTimeout(s) => {
                self.services[s as usize].timeout = None;
                self.serve(s);
            }
        }
    }

    /// A training job finished: its placement group's bundles are freed (Ray removes the
    /// group when the job ends).
    fn release_pg(&mut self, p: usize) {
        let now = self.now();
        let allocs = std::mem::take(&mut self.pgs[p].allocs);
        let tenant = self.pgs[p].tenant;
        let mut nodes = Vec::new();
        for (a, b) in allocs.iter().zip(self.pgs[p].bundles.clone()) {
            let Some(a) = a else { continue };
            self.free(a, tenant);
            let units = device_units(&self.state, &self.unit_ids, &b);
            self.busy(a.node, -units, now);
            nodes.push(a.node);
        }
        nodes.dedup();
        for n in nodes {
            self.dispatch(n);
        }
    }

    /// Conservation and liveness checks at the end of a run: every task is exactly one of
    /// completed, failed, infeasible, running, waiting, awaiting retry or not yet submitted;
    /// nothing holds resources on a dead node.
    fn check_invariants(&mut self) {
        let mut v = Vec::new();
        for (gi, g) in self.groups.iter().enumerate() {
            let range = g.first as usize..(g.first + g.count) as usize;
            let completed = g.run.len() as u64;
            let running = range
                .clone()
                .filter(|&t| self.task_alloc[t].is_some() && !self.task_rebuild[t])
                .count() as u64;
            let waiting = self
                .pending
                .iter()
                .filter(|(k, _)| *k == Work::Task(gi as u32))
                .map(|(_, q)| {
                    q.iter()
                        .filter(|t| !self.task_rebuild[**t as usize])
                        .count() as u64
                })
                .sum::<u64>();
            let retrying = self
                .failures
                .lost
                .iter()
                .filter(|(_, _, w)| matches!(w, Work::Task(t) if range.contains(&(*t as usize)) && !self.task_rebuild[*t as usize]))
                .count() as u64;
            let unsubmitted = (if g.deps_left > 0 {
                u64::from(g.count)
            } else {
                0
            }) + u64::from(g.delayed);
            let total =
                completed + g.failed + g.infeasible + running + waiting + retrying + unsubmitted;
            if total != u64::from(g.count) {
                v.push(format!("task group {gi}: {completed} completed + {} failed + {} infeasible + {running} running + {waiting} waiting + {retrying} retrying + {unsubmitted} unsubmitted != {} submitted", g.failed, g.infeasible, g.count));
            }
            if u64::from(g.done) != completed + g.failed + g.infeasible {
                v.push(format!(
                    "task group {gi}: done counter {} != completed + failed + infeasible",
                    g.done
                ));
            }
            let flagged = self.task_completed[range].iter().filter(|c| **c).count() as u64;
            if flagged != completed {
                v.push(format!("task group {gi}: {flagged} tasks flagged complete but {completed} completions counted"));
            }
        }
        let dead = |n: NodeId| !self.state.nodes[n].alive();
        for (t, a) in self.task_alloc.iter().enumerate() {
            if let Some(a) = a
                && dead(a.node)
            {
                v.push(format!("task {t} holds resources on dead node {}", a.node));
            }
        }
        for (i, a) in self.actors.iter().enumerate() {
            if let Some(al) = &a.alloc
                && dead(al.node)
            {
                v.push(format!(
                    "actor {i} holds resources on dead node {}",
                    al.node
                ));
            }
        }
        for (i, r) in self.replicas.iter().enumerate() {
            if let Some(al) = &r.alloc
                && dead(al.node)
            {
                v.push(format!(
                    "replica {i} holds resources on dead node {}",
                    al.node
                ));
            }
        }
        for (i, p) in self.pgs.iter().enumerate() {
            for al in p.allocs.iter().flatten() {
                if dead(al.node) {
                    v.push(format!(
                        "placement group {i} holds a bundle on dead node {}",
                        al.node
                    ));
                }
            }
        }
        self.violations.extend(v);
    }

    fn finish(mut self) -> RunResult {
        self.check_invariants();
        let spec = self.spec;
        // The window ends at the horizon; else when the work did (a failure scheduled after it
        // does not stretch utilisation); else, if no work finished, at the last event, so that
        // availability still covers the failures.
        let end = self
            .horizon
            .unwrap_or(if self.makespan > 0 {
                self.makespan
            } else {
                self.q.now()
            })
            .max(self.makespan);
        let tl = std::mem::take(&mut self.tl).finish(end);
        let mut m = RunMetrics {
            makespan: self.makespan as f64 / 1e9,
            horizon: end as f64 / 1e9,
            events: self.q.processed(),
            ..RunMetrics::default()
        };
        for g in &mut self.groups {
            let w = &spec.workloads[g.workload];
            m.tasks.push(TaskGroupMetrics {
                workload: w.name.clone(),
                name: w.tasks[g.index].name.clone(),
                submitted: u64::from(g.count),
                completed: (g.run.len()) as u64,
                infeasible: g.infeasible,
                queueing_delay: Stats::of(&mut g.queueing),
                run_time: Stats::of(&mut g.run),
                // Stats::of sorted the delays.
                queueing_samples: metrics::bounded_samples(&g.queueing),
                first_start: g.first_start.map(|t| t as f64 / 1e9).unwrap_or(0.0),
                last_end: g.last_end as f64 / 1e9,
            });
        }
        for pg in &self.pgs {
            let w = &spec.workloads[pg.workload];
            let mut racks: Vec<usize> = pg
                .nodes
                .iter()
                .map(|n| self.state.nodes[*n].rack())
                .collect();
            racks.sort_unstable();
            racks.dedup();
            m.placement_groups.push(PgMetrics {
                workload: w.name.clone(),
                name: w.placement_groups[pg.index].name.clone(),
                bundles: pg.bundles.len(),
                state: if pg.created.is_some() {
                    "created"
                } else if pg.infeasible {
                    "infeasible"
                } else {
                    "pending"
                }
                .into(),
                pending_time: (pg.created.unwrap_or(end) - pg.requested) as f64 / 1e9,
                attempts: pg.attempts,
                nodes: pg
                    .nodes
                    .iter()
                    .map(|n| self.state.nodes[*n].name().to_string())
                    .collect(),
                racks: racks.len(),
            });
        }
        for job in &self.jobs {
            let w = &spec.workloads[job.workload];
            let step = (job.compute_ns + job.comm_ns) as f64 / 1e9;
            let wall = job
                .started
                .map(|s| (job.finished.unwrap_or(end) - s) as f64 / 1e9)
                .unwrap_or(0.0);
            let compute = job.compute_ns as f64 * job.steps_done as f64 / 1e9;
            m.training.push(TrainingMetrics {
                workload: w.name.clone(),
                name: w.training[job.index].name.clone(),
                devices: job.devices,
                nodes: job.nodes,
                steps_done: job.steps_done,
                step_time: step,
                compute_time: compute,
                communication_time: job.comm_ns as f64 * job.steps_done as f64 / 1e9,
                checkpoint_time: job.ckpt_total as f64 / 1e9,
                started: job.started.map(|s| s as f64 / 1e9).unwrap_or(0.0),
                finished: job.finished.map(|f| f as f64 / 1e9),
                goodput: if wall > 0.0 { compute / wall } else { 0.0 },
                restarts: job.restarts,
                lost_device_hours: job.lost_device_ns / 3.6e12,
            });
        }
        for s in &mut self.services {
            let w = &spec.workloads[s.workload];
            let sv = &w.services[s.index];
            let lat = Stats::of(&mut s.latencies);
            let slo: Vec<(String, f64, f64, bool)> = sv
                .slo
                .iter()
                .map(|(p, d)| {
                    let measured = match p.as_str() {
                        "p50" => lat.p50,
                        "p90" => lat.p90,
                        "p99" => lat.p99,
                        _ => lat.p999,
                    };
                    let target = d.0 as f64 / 1e9;
                    (p.clone(), target, measured, measured <= target)
                })
                .collect();
            let tightest = sv
                .slo
                .iter()
                .map(|(_, d)| d.0 as f64 / 1e9)
                .fold(f64::INFINITY, f64::min);
            let over = s.latencies.iter().filter(|l| **l > tightest).count();
            m.services.push(ServiceMetrics {
                workload: w.name.clone(),
                name: sv.name.clone(),
                replicas_placed: s
                    .replicas
                    .iter()
                    .filter(|r| self.replicas[**r as usize].node.is_some())
                    .count() as u32,
                arrived: s.arrived,
                served: lat.count,
                throughput: if end > 0 {
                    lat.count as f64 / (end as f64 / 1e9)
                } else {
                    0.0
                },
                waiting: Stats::of(&mut s.waits),
                // Stats::of sorted the latencies.
                latency_samples: metrics::bounded_samples(&s.latencies),
                latency: lat,
                slo,
                slo_violation_fraction: if s.latencies.is_empty() {
                    0.0
                } else {
                    over as f64 / s.latencies.len() as f64
                },
            });
        }
        for g in &mut self.actor_groups {
            let w = &spec.workloads[g.workload];
            m.actors.push(ActorMetrics {
                workload: w.name.clone(),
                name: w.actors[g.index].name.clone(),
                placed: g.placed,
                infeasible: g.infeasible,
                calls_done: g.calls_done,
                calls_failed: g.calls_failed,
                placement_delay: Stats::of(&mut g.delays),
            });
        }
        let mut devices: BTreeMap<String, u64> = BTreeMap::new();
        for a in self.node_accel.iter().zip(&self.node_types) {
            if let (Some(acc), nt) = a {
                *devices.entry(acc.clone()).or_insert(0) += u64::from(nt.device_count());
            }
        }
        m.utilization = std::mem::take(&mut self.util).finish(&devices, end);
        m.objects = ObjectMetrics {
            spilled_objects: self.store.spilled_objects,
            spilled_bytes: self.store.spilled_bytes,
            peak_store_fraction: self.store.peak_fraction,
        };
        let f = &mut self.failures;
        let nodes = self.node_types.len() as f64;
        let still_down: f64 = f
            .down_since
            .iter()
            .flatten()
            .map(|s| end.saturating_sub(*s) as f64)
            .sum();
        let node_time = nodes * end as f64;
        m.failures = FailureMetrics {
            node_failures: f.crashes,
            time_to_detect: Stats::of(&mut f.detect_times),
            time_to_recover: Stats::of(&mut f.recovery),
            tasks_retried: f.tasks_retried,
            tasks_failed: f.tasks_failed,
            actors_restarted: f.actors_restarted,
            actors_lost: f.actors_lost,
            replicas_restarted: f.replicas_restarted,
            requests_lost: f.requests_lost,
            objects_rebuilt: f.objects_rebuilt,
            objects_lost: f.objects_lost,
            bundles_rescheduled: f.bundles_rescheduled,
            lost_device_hours: f.lost_device_ns / 3.6e12,
            node_availability: if node_time > 0.0 {
                1.0 - (f.node_down_ns + still_down) / node_time
            } else {
                1.0
            },
            unsimulated: f.unsimulated.clone(),
            timeline: std::mem::take(&mut f.timeline),
        };
        RunResult {
            metrics: m,
            explain: self.explain,
            trace: self.trace.unwrap_or_default(),
            timeline: tl,
            violations: self.violations,
            model_sources: crate::compute::model_sources(spec),
            network_models: std::mem::take(&mut self.net.notes).into_iter().collect(),
        }
    }
}
