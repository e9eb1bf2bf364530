//! Tenants and workloads: task groups, actors, placement groups, training jobs and inference
//! services, with Ray's resource vocabulary (`ray-semantics.md`, Ray's
//! `doc/source/ray-core/scheduling/resources.md`). This file holds the types; `scope.rs`
//! what requests may name, `read.rs` the statements' readers and checks (tenants, label
//! selectors, strategies, compute, device memory, quotas), `block.rs` one `workload` block,
//! `items.rs` its items (task groups, actors, training jobs, services), `checks.rs` checks
//! over a whole workload (the task DAG, quotas, tenant references).

mod block;
mod checks;
mod items;
mod read;
mod scope;

pub use block::workload;
pub(super) use checks::check_quota;
pub use checks::{check_tenant_refs, requests_device};
pub(super) use read::policy;
pub use read::{parse_label_op, tenant};
pub use scope::{ResourceScope, ScopeNodeType};
pub(super) use scope::{label_selector, resources};
use {checks::*, read::*};

use crate::diag::Span;
use crate::units::{Bytes, Duration, EventRate, Flop};
use serde::Serialize;
use std::collections::BTreeMap;

/// Resources every Ray node has.
pub const BUILTIN_RESOURCES: &[&str] = &["CPU", "GPU", "memory", "object_store_memory"];
/// Resources tracked per device instance; requests above 1 must be whole
/// (Ray `src/ray/common/ray_config_def.h`, `predefined_unit_instance_resources`).
pub const UNIT_INSTANCE: &[&str] = &[
    "GPU",
    "TPU",
    "neuron_cores",
    "NPU",
    "HPU",
    "RBLN",
    "FURIOSA",
    "TTNPU",
    "MBLT",
];

pub type Resources = BTreeMap<String, f64>;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum LabelOp {
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    /// `exists()`: the node has the key, whatever its value. Not a value Ray's
    /// `label_selector` parses (`src/ray/common/scheduling/label_selector.cc` knows only
    /// `v`, `!v`, `in(..)`, `!in(..)`); it is the `Exists` of Ray's legacy
    /// `NodeLabelSchedulingStrategy`.
    Exists,
    /// `!exists()`: the node lacks the key (legacy `DoesNotExist`).
    DoesNotExist,
}

/// One entry of a Ray label selector (`{"key": "in(a,b)"}`); all entries must match.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelConstraint {
    pub key: String,
    pub op: LabelOp,
}

impl LabelConstraint {
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let v = labels.get(&self.key);
        match &self.op {
            LabelOp::Equals(x) => v == Some(x),
            LabelOp::NotEquals(x) => v != Some(x),
            LabelOp::In(xs) => v.is_some_and(|v| xs.contains(v)),
            LabelOp::NotIn(xs) => !v.is_some_and(|v| xs.contains(v)),
            LabelOp::Exists => v.is_some(),
            LabelOp::DoesNotExist => v.is_none(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Tenant {
    pub name: String,
    pub never_share_node_with: Vec<String>,
    pub only_nodes: Vec<LabelConstraint>,
    pub no_rdma: bool,
    /// Transports the tenant's work may select (`transports [..]`: built-in kinds or declared
    /// transports; the object store is always allowed); `None`: any.
    pub transports: Option<Vec<String>>,
    /// Accelerator kinds (accelerator names, such as `H100_SXM`) the tenant's work may be
    /// placed on (`accelerators [..]`); `None`: any. Enforced by placement
    /// (`placement::TenantRules::accelerators`).
    pub accelerators: Option<Vec<String>>,
    pub quota: Resources,
    pub priority: i64,
    #[serde(skip)]
    pub span: Span,
    /// Where each rule statement is (`no_rdma`, `transports`, `accelerators`, `quota`), for
    /// diagnostics that point at the rule a workload breaks.
    #[serde(skip)]
    pub rule_spans: BTreeMap<String, Span>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Policy {
    RayDefault,
    Spread,
    TopologyAware,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Strategy {
    Default,
    Spread,
    NodeAffinity { node: String, soft: bool },
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskGroup {
    pub name: String,
    pub count: u64,
    pub after: Vec<String>,
    pub resources: Resources,
    pub duration: Option<Duration>,
    pub compute: Option<Compute>,
    pub output: Bytes,
    pub strategy: Strategy,
    pub label_selector: Vec<LabelConstraint>,
    /// Ray's `fallback_strategy`: the label selectors tried, in order, after `label_selector`
    /// (each replaces it; `crate::placement::fallback`).
    pub fallbacks: Vec<Vec<LabelConstraint>>,
    pub retries: u32,
    /// Wait before a retry (Ray `task_retry_delay_ms`, default 0).
    pub retry_delay: Duration,
    /// Transport for the group's outputs (a declared `transport` or a built-in kind); `None`:
    /// the workload's.
    pub transport: Option<String>,
    /// Device memory each task needs on each device it holds (`device_memory`); placement
    /// leaves out devices with less free.
    pub device_memory: Option<Bytes>,
    /// Its `resources` statement (else its head), where "can never be placed" points.
    #[serde(skip)]
    pub span: Span,
}

#[derive(Debug, Clone, Serialize)]
pub struct Actor {
    pub name: String,
    pub count: u64,
    /// `None`: Ray's default, 1 CPU to be placed and 0 while running.
    pub resources: Option<Resources>,
    pub calls: u64,
    pub call_duration: Option<Duration>,
    pub max_restarts: i64,
    pub max_task_retries: i64,
    pub strategy: Strategy,
    pub label_selector: Vec<LabelConstraint>,
    /// Ray's `fallback_strategy` (as [`TaskGroup::fallbacks`]).
    pub fallbacks: Vec<Vec<LabelConstraint>>,
    /// Transport for the actor's results (Ray Direct Transport's `tensor_transport`); `None`:
    /// the workload's.
    pub transport: Option<String>,
    /// Device memory per device the actor holds (`device_memory`).
    pub device_memory: Option<Bytes>,
    /// The tensor each call sends to an actor of another group (`tensor BYTES to NAME`).
    pub tensor: Option<super::payloads::Tensor>,
    /// Its `resources` statement (else its head), where "can never be placed" points.
    #[serde(skip)]
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PgStrategy {
    Pack,
    Spread,
    StrictPack,
    StrictSpread,
}

impl PgStrategy {
    /// Ray's name: `PACK`, `SPREAD`, `STRICT_PACK`, `STRICT_SPREAD`.
    pub fn ray_name(self) -> &'static str {
        match self {
            PgStrategy::Pack => "PACK",
            PgStrategy::Spread => "SPREAD",
            PgStrategy::StrictPack => "STRICT_PACK",
            PgStrategy::StrictSpread => "STRICT_SPREAD",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PlacementGroup {
    pub name: String,
    pub strategy: PgStrategy,
    pub policy: Option<Policy>,
    pub bundles: Vec<Resources>,
    /// Ray's `bundle_label_selector`: each bundle's label selector (empty: none).
    pub bundle_selectors: Vec<Vec<LabelConstraint>>,
    /// Ray's `fallback_strategy`: other bundle sets, tried in order when the bundles above
    /// cannot be placed.
    pub fallbacks: Vec<super::placement_group::PgOption>,
    /// Ray's alpha `topology_strategy`: the node label whose domains (one value each) the
    /// group is strictly packed into; `strategy` is then the node-level strategy inside it.
    pub domain: Option<String>,
    /// Reserve a whole TPU-style slice as a gang (Ray's slice placement group: a head bundle
    /// with `TPU-<pod>-head` plus one bundle per host); the bundles follow from the slice.
    pub slice: bool,
    /// The group's head, and each bundle's map (one per bundle, after `x N`), where "can never
    /// be placed" points.
    #[serde(skip)]
    pub span: Span,
    #[serde(skip)]
    pub bundle_spans: Vec<Span>,
}

/// Work on a device: `compute 40 TFLOP bf16 memory 200 GB kernels 12`. Its time is the
/// roofline of `crate::compute`: the larger of the FLOP at the dtype's compute rate and the
/// bytes at the memory bandwidth, plus a launch overhead per kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compute {
    pub flop: Flop,
    pub dtype: String,
    /// Bytes read from and written to device memory; none declared counts as 0.
    pub memory: Option<Bytes>,
    /// Kernels launched; 0 when not declared (no launch overhead).
    pub kernels: u64,
}

/// Most kernels one `compute` statement may declare.
pub const MAX_KERNELS: u64 = 1_000_000_000_000;

#[derive(Debug, Clone, Serialize)]
pub struct Collective {
    pub op: String,
    pub bytes: Bytes,
    pub algo: Option<String>,
    /// NCCL protocol (`ll`, `ll128`, `simple`); `None`: NCCL's choice by size.
    pub proto: Option<String>,
    pub hierarchical: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Checkpoint {
    pub every: Duration,
    pub size: Bytes,
    /// Index into the cluster's storage targets (`Cluster::storage`) the checkpoint is written
    /// to and read back from: `to NAME`, else the only one declared; `None` when the scenario
    /// declares none.
    pub storage: Option<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Training {
    pub name: String,
    pub placement_group: String,
    pub steps: u64,
    /// Work per device per step.
    pub compute: Option<Compute>,
    pub collectives: Vec<Collective>,
    pub checkpoint: Option<Checkpoint>,
    /// Device memory the job needs on each device of its placement group (`device_memory`):
    /// applies to the group's bundles ([`Workload::placement_group_device_memory`]).
    pub device_memory: Option<Bytes>,
    /// The model-level form (`model NAME` and its layout, [`super::layout`]); it excludes
    /// `compute` and the collectives, which the model derives.
    pub model: Option<super::layout::ModelTraining>,
    #[serde(skip)]
    pub span: Span,
}

/// Most clients or requests a finite benchmark load (`concurrency`, `offline`) may name: what
/// one replica's waiting queue holds (`sim::llm::engine::MAX_WAITING`).
pub const MAX_CLOSED_LOOP: u64 = 1_000_000;

#[derive(Debug, Clone, Serialize)]
pub enum Arrival {
    Poisson(EventRate),
    Bursty {
        rate: EventRate,
        burst: u64,
    },
    Trace(String),
    /// `arrival concurrency N requests M`: a closed loop of N clients, each sending its next
    /// request when its last one finished, M requests in all (vLLM's `benchmark_serving.py
    /// --max-concurrency`, NVIDIA genai-perf's `--concurrency`). LLM services only.
    Concurrency {
        clients: u64,
        requests: u64,
    },
    /// `arrival offline M`: M requests all at time zero (vLLM's `benchmark_throughput.py`,
    /// TensorRT-LLM's `trtllm-bench throughput`). LLM services only.
    Offline {
        requests: u64,
    },
}

impl Arrival {
    /// Requests in all for a finite load (`concurrency`, `offline`); `None` for open ones.
    pub fn finite(&self) -> Option<u64> {
        match self {
            Arrival::Concurrency { requests, .. } | Arrival::Offline { requests } => {
                Some(*requests)
            }
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Service {
    pub name: String,
    pub replicas: u32,
    pub resources: Resources,
    pub arrival: Arrival,
    /// FLOP per request; `memory` and `kernels` per batch.
    pub compute: Option<Compute>,
    pub service_time: Option<Duration>,
    /// Service times are exponentially distributed with mean `service_time` (an M/M/c
    /// server) instead of fixed.
    pub exponential: bool,
    pub batch: Option<(u32, Duration)>,
    pub slo: Vec<(String, Duration)>,
    /// Device memory per device each replica holds (`device_memory`).
    pub device_memory: Option<Bytes>,
    /// Bytes each request carries from the ingress to its replica, and each response back
    /// (`request BYTES`, `response BYTES`; `None`: nothing moves).
    pub request: Option<Bytes>,
    pub response: Option<Bytes>,
    /// Its `resources` statement (else its head), where "can never be placed" points.
    #[serde(skip)]
    pub span: Span,
    /// Its `arrival` statement, which errors about a trace's rows name beside the file.
    #[serde(skip)]
    pub arrival_span: Option<Span>,
    /// The model-level form (`model NAME` and its engine, [`super::serving`]); it excludes
    /// `compute`, `service_time`, `batch`, `device_memory`, `request` and `response`.
    pub llm: Option<super::serving::LlmServing>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Workload {
    pub name: String,
    pub tenant: Option<String>,
    pub policy: Policy,
    pub tasks: Vec<TaskGroup>,
    pub actors: Vec<Actor>,
    pub placement_groups: Vec<PlacementGroup>,
    pub training: Vec<Training>,
    pub services: Vec<Service>,
    /// Transport for object transfers of the workload (default: Ray's object store).
    pub transport: Option<String>,
    #[serde(skip)]
    pub span: Span,
}

impl Workload {
    /// Device memory per device the bundles of placement group `pg` need: the largest
    /// `device_memory` of the training jobs that run on it (`None`: none declared).
    pub fn placement_group_device_memory(&self, pg: &str) -> Option<Bytes> {
        self.training
            .iter()
            .filter(|t| t.placement_group == pg)
            .filter_map(|t| t.device_memory)
            .max_by_key(|b| b.0)
    }
}
