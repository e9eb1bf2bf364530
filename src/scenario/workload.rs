//! Tenants and workloads: task groups, actors, placement groups, training jobs and inference
//! services, with Ray's resource vocabulary (`ray-semantics.md`, Ray's
//! `doc/source/ray-core/scheduling/resources.md`).
//!
//! Why over 600 lines: not split yet (issue 43); tests/all/tidy.rs holds it at this length.

use super::reader::{self as rd, Args, Cx, MAX_COUNT};
use super::schema;
use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::syntax::ast::{MapKey, Stmt, Value, ValueKind};
use crate::units::{Bytes, Duration, EventRate, Flop};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

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

/// What resource requests may name, and what the biggest node offers of each; which
/// transports a `transport` selection may name.
pub struct ResourceScope {
    /// Largest amount of each resource on any one node type in scope.
    pub max_per_node: BTreeMap<String, f64>,
    /// Declared transports and the built-in kinds.
    pub transports: BTreeSet<String>,
    /// The cluster's storage targets, in declaration order (checkpoints name them).
    pub storages: Vec<String>,
    /// The kind of each name in `transports` (a built-in kind is its own kind).
    pub transport_kinds: BTreeMap<String, String>,
    /// Every accelerator name (declared and catalog).
    pub accelerators: BTreeSet<String>,
    /// The node types in scope (the cluster's, or all when there is none).
    pub node_types: Vec<ScopeNodeType>,
    /// Whether `node_types` are a cluster's (else every known type: a workload file
    /// included by clusters it cannot see, so checks that need the hardware are lenient).
    pub cluster_scoped: bool,
    /// The scenario's declared models (training jobs may also name catalog models).
    pub models: super::model::Declared,
    /// Chips of each TPU-style slice of the cluster: the devices a slice group gets.
    pub slice_chips: Vec<u64>,
}

/// What a node type offers, for checks that need more than the per-resource maximum.
pub struct ScopeNodeType {
    pub name: String,
    /// [`super::load::node_resources`].
    pub resources: BTreeMap<String, f64>,
    /// Per device group: accelerator name, its Ray resource, its memory per device, the
    /// number of devices.
    pub devices: Vec<(String, String, Bytes, u32)>,
}

impl ResourceScope {
    fn check(&self, cx: &mut Cx, key: &MapKey, amount: f64, span: Span) -> bool {
        let name = key.name.as_str();
        if let Some(t) = name.strip_prefix("accelerator_type:") {
            if !self.max_per_node.contains_key(name) {
                let types: Vec<&str> = self
                    .max_per_node
                    .keys()
                    .filter_map(|k| k.strip_prefix("accelerator_type:"))
                    .collect();
                let help = did_you_mean(t, types.iter().copied())
                    .map(|h| {
                        h.replace('`', "`accelerator_type:")
                            .replacen("`accelerator_type:", "`", 1)
                    })
                    .unwrap_or_else(|| {
                        format!("accelerator types in this cluster: {}", types.join(", "))
                    });
                cx.push(
                    Diagnostic::error(key.span, format!("no node offers accelerator type `{t}`"))
                        .with_help(help),
                );
                return false;
            }
        } else if !self.max_per_node.contains_key(name) && !BUILTIN_RESOURCES.contains(&name) {
            // Past the cap the diagnostic is only counted: skip the search over every declared
            // resource, which made 50,000 unknown names against 50,000 declared quadratic.
            let help = (!cx.full())
                .then(|| {
                    did_you_mean(
                        name,
                        self.max_per_node
                            .keys()
                            .map(String::as_str)
                            .chain(BUILTIN_RESOURCES.iter().copied()),
                    )
                })
                .flatten()
                .unwrap_or_else(|| {
                    "declare custom resources on node types with `resources { NAME: N }`".into()
                });
            cx.push(
                Diagnostic::error(
                    key.span,
                    format!("no node in scope offers resource `{name}`"),
                )
                .with_help(help),
            );
            return false;
        }
        if amount < 0.0 {
            cx.error(span, "a resource request must not be negative");
            return false;
        }
        if UNIT_INSTANCE.contains(&name) && amount > 1.0 && amount.fract() != 0.0 {
            cx.push(
                Diagnostic::error(span, format!("`{name}: {amount}`: requests above 1 must be whole"))
                    .with_help("Ray tracks these per device: a fraction shares one device, more than one takes whole devices"),
            );
            return false;
        }
        if (amount * 10_000.0).fract().abs() > 1e-9
            && name != "memory"
            && name != "object_store_memory"
        {
            cx.push(Diagnostic::warning(
                span,
                format!("Ray keeps resource amounts to 0.0001; `{amount}` will be rounded"),
            ));
        }
        true
    }
}

/// `{ CPU: 1, GPU: 0.5, memory: 4 GiB }`. Byte resources take sizes, the rest plain numbers.
pub(super) fn resources(cx: &mut Cx, scope: &ResourceScope, v: &Value) -> Option<Resources> {
    let m = rd::map(cx, v)?;
    if !rd::unique_keys(cx, m) {
        return None;
    }
    let mut out = Resources::new();
    let mut ok = true;
    for (k, val) in m {
        let amount = if k.name == "memory" || k.name == "object_store_memory" {
            rd::bytes(cx, val).map(|b| b.0 as f64)
        } else {
            rd::number(cx, val)
        };
        match amount {
            Some(x) if scope.check(cx, k, x, val.span) => {
                out.insert(k.name.clone(), x);
            }
            _ => ok = false,
        }
    }
    // A request no node could ever hold is found after resolving, on the cluster itself
    // (`crate::placement::feasible`, called by `super::load`).
    ok.then_some(out)
}

pub(super) fn label_selector(cx: &mut Cx, v: &Value) -> Option<Vec<LabelConstraint>> {
    let m = rd::map(cx, v)?;
    rd::unique_keys(cx, m);
    let mut out = Vec::new();
    for (k, val) in m {
        let s = rd::ident_or_string(cx, val, "a label value")?;
        let op = parse_label_op(s).or_else(|| {
            cx.push(
                Diagnostic::error(val.span, format!("`{s}` is not a label condition"))
                    .with_help("write \"value\", \"!value\", \"in(a, b)\", \"!in(a, b)\", \"exists()\" or \"!exists()\""),
            );
            None
        })?;
        out.push(LabelConstraint {
            key: k.name.clone(),
            op,
        });
    }
    Some(out)
}

/// Ray's label selector values: `v`, `!v`, `in(a,b)`, `!in(a,b)`.
pub fn parse_label_op(s: &str) -> Option<LabelOp> {
    let s = s.trim();
    let (neg, body) = match s.strip_prefix('!') {
        Some(b) => (true, b.trim()),
        None => (false, s),
    };
    if body == "exists()" {
        return Some(if neg {
            LabelOp::DoesNotExist
        } else {
            LabelOp::Exists
        });
    }
    if let Some(inner) = body.strip_prefix("in(").and_then(|b| b.strip_suffix(')')) {
        let vals: Vec<String> = inner.split(',').map(|x| x.trim().to_string()).collect();
        if vals
            .iter()
            .any(|v| v.is_empty() || v.contains(['(', ')', '!']))
        {
            return None;
        }
        return Some(if neg {
            LabelOp::NotIn(vals)
        } else {
            LabelOp::In(vals)
        });
    }
    if body.is_empty() || body.contains(['(', ')', '!', ',']) {
        return None;
    }
    Some(if neg {
        LabelOp::NotEquals(body.into())
    } else {
        LabelOp::Equals(body.into())
    })
}

fn strategy(cx: &mut Cx, v: &Value) -> Option<Strategy> {
    match &v.kind {
        ValueKind::Ident(n) if n == "DEFAULT" => Some(Strategy::Default),
        ValueKind::Ident(n) if n == "SPREAD" => Some(Strategy::Spread),
        ValueKind::Call { name, args } if name == "node_affinity" => {
            let flat: Vec<&Value> = args.iter().flatten().collect();
            let node = flat.first().and_then(|n| rd::ident(cx, n, "a node name"));
            let soft = match flat.get(1) {
                None => false,
                Some(w) if matches!(&w.kind, ValueKind::Ident(s) if s == "soft") => true,
                Some(w) => {
                    cx.error(
                        w.span,
                        "`node_affinity(NODE)` takes only `soft` after the node",
                    );
                    return None;
                }
            };
            if flat.len() > 2 {
                cx.error(
                    v.span,
                    "`node_affinity` takes a node name and optionally `soft`",
                );
                return None;
            }
            Some(Strategy::NodeAffinity {
                node: node?.to_string(),
                soft,
            })
        }
        _ => {
            let n = match &v.kind {
                ValueKind::Ident(n) | ValueKind::Call { name: n, .. } => n.as_str(),
                _ => "",
            };
            let help = if n == "node_affinity" {
                "node affinity names its node in parentheses: `node_affinity(NODE)` or \
                 `node_affinity(NODE soft)`"
                    .into()
            } else {
                did_you_mean(n, ["DEFAULT", "SPREAD", "node_affinity"]).unwrap_or_else(|| {
                    "expected `DEFAULT`, `SPREAD` or `node_affinity(NODE [soft])`".into()
                })
            };
            cx.push(
                Diagnostic::error(
                    v.span,
                    format!("unknown scheduling strategy {}", v.kind.describe()),
                )
                .with_help(help),
            );
            None
        }
    }
}

/// Where a checkpoint goes: `to NAME` (a storage of the cluster, as its index), else the only
/// storage declared; `None` when there is none. Several and no `to` is an error: which one
/// would be a guess.
fn checkpoint_storage(
    cx: &mut Cx,
    scope: &ResourceScope,
    to: Option<&Value>,
    at: Span,
) -> Result<Option<usize>, ()> {
    let Some(v) = to else {
        return match scope.storages.len() {
            0 => Ok(None),
            1 => Ok(Some(0)),
            _ => {
                cx.push(
                    Diagnostic::error(
                        at,
                        format!(
                            "the cluster declares {} storages; say which one the checkpoint goes to",
                            scope.storages.len()
                        ),
                    )
                    .with_help(format!("add `to NAME`, one of: {}", scope.storages.join(", "))),
                );
                Err(())
            }
        };
    };
    let n = rd::ident(cx, v, "a storage name").ok_or(())?;
    match scope.storages.iter().position(|s| s == n) {
        Some(i) => Ok(Some(i)),
        None => {
            let help = did_you_mean(n, scope.storages.iter().map(String::as_str))
                .unwrap_or_else(|| {
                    format!("declare it in the cluster: `storage {n} {{ bandwidth 200 GB/s  attach fabric }}`")
                });
            cx.push(Diagnostic::error(v.span, format!("unknown storage `{n}`")).with_help(help));
            Err(())
        }
    }
}

/// `transport NAME`: a declared transport or a built-in kind.
fn transport_ref(cx: &mut Cx, scope: &ResourceScope, v: &Value) -> Option<String> {
    let n = rd::ident(cx, v, "a transport name")?;
    if !scope.transports.contains(n) {
        let help =
            did_you_mean(n, scope.transports.iter().map(String::as_str)).unwrap_or_else(|| {
                "declare it with `transport NAME { kind KIND ... }` or name a built-in kind".into()
            });
        cx.push(Diagnostic::error(v.span, format!("unknown transport `{n}`")).with_help(help));
        return None;
    }
    Some(n.to_string())
}

pub(super) fn policy(cx: &mut Cx, v: &Value) -> Option<Policy> {
    Some(
        match rd::choice(cx, v, schema::POLICIES, "placement policy")? {
            "spread" => Policy::Spread,
            "topology_aware" => Policy::TopologyAware,
            _ => Policy::RayDefault,
        },
    )
}

/// `compute 1.2 PFLOP per device bf16 [memory 3 TB] [kernels 2000]` (or `per request`, or
/// no `per` in a task group). `memory` and `kernels` may come in any order after the amount.
fn compute(cx: &mut Cx, a: &mut Args, per: &str) -> Option<Compute> {
    let memory = match a.opt("memory") {
        Some(v) => Some(rd::bytes(cx, v)?),
        None => None,
    };
    let kernels = match a.opt("kernels") {
        Some(v) => rd::count(cx, v, 0, MAX_KERNELS)?,
        None => 0,
    };
    let f = rd::flop(cx, a.req("an amount of work such as `1.2 PFLOP`")?)?;
    if !per.is_empty() {
        let ok = a.peek_word("per") && a.peek_word(per);
        if !ok {
            cx.error(
                a.end_span(),
                format!("expected `per {per}` after the amount"),
            );
            return None;
        }
    }
    let dt = rd::choice(
        cx,
        a.req("a dtype such as `bf16`")?,
        schema::DTYPES,
        "dtype",
    )?;
    Some(Compute {
        flop: f,
        dtype: dt.to_string(),
        memory,
        kernels,
    })
}

pub fn tenant(
    cx: &mut Cx,
    scope: &ResourceScope,
    name: &str,
    span: Span,
    stmts: &[Stmt],
) -> Tenant {
    let mut t = Tenant {
        name: name.into(),
        never_share_node_with: Vec::new(),
        only_nodes: Vec::new(),
        no_rdma: false,
        transports: None,
        accelerators: None,
        quota: Resources::new(),
        priority: 0,
        span,
        rule_spans: BTreeMap::new(),
    };
    cx.each(stmts, schema::TENANT, "a tenant", |cx, s, def| {
        cx.no_block(s);
        t.rule_spans.insert(def.key.to_string(), s.head_span());
        let mut a = Args::new(s, def);
        let _ = (|| -> Option<()> {
            match def.key {
                "transports" => {
                    let mut list = Vec::new();
                    for (n, sp) in rd::names(cx, a.req("a list of transports")?)? {
                        if !scope.transports.contains(&n) {
                            let help =
                                did_you_mean(&n, scope.transports.iter().map(String::as_str))
                                    .unwrap_or_else(|| {
                                        "name a built-in transport kind or a declared `transport`"
                                            .into()
                                    });
                            cx.push(
                                Diagnostic::error(sp, format!("unknown transport `{n}`"))
                                    .with_help(help),
                            );
                            return None;
                        }
                        list.push(n);
                    }
                    t.transports = Some(list);
                }
                "accelerators" => {
                    let mut list = Vec::new();
                    for (n, sp) in rd::names(cx, a.req("a list of accelerator kinds")?)? {
                        if !scope.accelerators.contains(&n) {
                            let help =
                                did_you_mean(&n, scope.accelerators.iter().map(String::as_str))
                                    .unwrap_or_else(|| {
                                        "name a declared or catalog accelerator".into()
                                    });
                            cx.push(
                                Diagnostic::error(sp, format!("unknown accelerator `{n}`"))
                                    .with_help(help),
                            );
                            return None;
                        }
                        list.push(n);
                    }
                    t.accelerators = Some(list);
                }
                "never_share_node_with" => {
                    t.never_share_node_with = rd::names(cx, a.req("tenant names")?)?
                        .into_iter()
                        .map(|(n, _)| n)
                        .collect();
                }
                "only_nodes" => t.only_nodes = label_selector(cx, a.req("a label selector map")?)?,
                "no_rdma" => t.no_rdma = true,
                "quota" => {
                    let m = rd::map(cx, a.req("a resource map")?)?;
                    rd::unique_keys(cx, m);
                    for (k, v) in m {
                        let name = k.name.as_str();
                        let amount = if name == "memory" || name == "object_store_memory" {
                            rd::bytes(cx, v).map(|b| b.0 as f64)
                        } else {
                            rd::number(cx, v)
                        };
                        let Some(x) = amount else { continue };
                        if !scope.max_per_node.contains_key(name)
                            && !BUILTIN_RESOURCES.contains(&name)
                        {
                            let help = did_you_mean(
                                name,
                                scope
                                    .max_per_node
                                    .keys()
                                    .map(String::as_str)
                                    .chain(BUILTIN_RESOURCES.iter().copied()),
                            );
                            cx.push(
                                Diagnostic::error(
                                    k.span,
                                    format!("no node in scope offers resource `{name}`"),
                                )
                                .with_help_opt(help),
                            );
                            continue;
                        }
                        if x < 0.0 {
                            cx.error(v.span, "a quota must not be negative");
                            continue;
                        }
                        t.quota.insert(k.name.clone(), x);
                    }
                }
                "priority" => {
                    let v = a.req("a priority")?;
                    let p = rd::number(cx, v)?;
                    if p.fract() != 0.0 || p.abs() > 1e6 {
                        cx.error(
                            v.span,
                            "priority is a whole number between -1000000 and 1000000",
                        );
                        return None;
                    }
                    t.priority = p as i64;
                }
                _ => {}
            }
            Some(())
        })();
        a.finish(cx);
    });
    if t.no_rdma
        && let Some(list) = &t.transports
    {
        for n in list {
            let kind = scope
                .transport_kinds
                .get(n)
                .map(String::as_str)
                .unwrap_or(n);
            if super::transport::kind_uses_rdma(kind) {
                let at = t.rule_spans.get("transports").copied().unwrap_or(span);
                let mut d = Diagnostic::error(
                    at,
                    format!(
                        "tenant `{name}` has `no_rdma` but allows transport `{n}`, which uses RDMA"
                    ),
                );
                if let Some(sp) = t.rule_spans.get("no_rdma") {
                    d = d.with_secondary(*sp, "RDMA forbidden here");
                }
                cx.push(d);
            }
        }
    }
    t
}

/// `device_memory SIZE`: more than zero.
fn device_memory(cx: &mut Cx, v: &Value) -> Option<Bytes> {
    let b = rd::bytes(cx, v)?;
    if b.0 == 0 {
        cx.error(v.span, "device memory must be greater than zero");
        return None;
    }
    Some(b)
}

/// Work (`what`, at `at`, with the resource requests `reqs`: one, or a placement group's
/// bundles) that declares `device_memory dm` per device. Its candidate node types are those in
/// scope that could hold a request asking for a device (every resource in amount) and pass
/// the tenant's `accelerators` rule; if none of them has enough devices of at least `dm`, it
/// could never be placed: a located error with the numbers. A request of no device is an
/// error too (the statement would mean nothing).
fn check_device_memory(
    cx: &mut Cx,
    scope: &ResourceScope,
    rules: Option<&Tenant>,
    what: &str,
    reqs: &[&Resources],
    dm: Bytes,
    at: Span,
) {
    let dev: Vec<&Resources> = reqs
        .iter()
        .copied()
        .filter(|r| requests_device(r))
        .collect();
    if dev.is_empty() {
        cx.push(
            Diagnostic::error(
                at,
                format!("{what} has `device_memory` but requests no device"),
            )
            .with_help("request a device, such as `resources { GPU: 1 }`"),
        );
        return;
    }
    let allowed = rules.and_then(|t| t.accelerators.as_ref());
    let mut small: Vec<String> = Vec::new();
    let mut any = false;
    for r in dev {
        for nt in &scope.node_types {
            let holds = r
                .iter()
                .all(|(k, v)| *v <= 0.0 || nt.resources.get(k).is_some_and(|x| x >= v));
            let kinds_ok = allowed.is_none_or(|list| {
                if nt.devices.is_empty() {
                    !nt.resources
                        .iter()
                        .any(|(k, v)| UNIT_INSTANCE.contains(&k.as_str()) && *v > 0.0)
                } else {
                    nt.devices.iter().all(|d| list.contains(&d.0))
                }
            });
            if !holds || !kinds_ok {
                continue;
            }
            any = true;
            // Enough devices of each requested unit resource with at least `dm`? Units given
            // with `resources` and no device have unknown memory and count as large enough.
            let fits = r.iter().all(|(k, v)| {
                if !UNIT_INSTANCE.contains(&k.as_str()) || *v <= 0.0 {
                    return true;
                }
                let of_kind: Vec<&(String, String, Bytes, u32)> =
                    nt.devices.iter().filter(|d| &d.1 == k).collect();
                let total = nt.resources.get(k).copied().unwrap_or(0.0);
                let count = |big_only: bool| -> f64 {
                    of_kind
                        .iter()
                        .filter(|d| !big_only || d.2 >= dm)
                        .map(|d| f64::from(d.3))
                        .sum()
                };
                let big = count(true);
                let unknown = (total - count(false)).max(0.0);
                big + unknown >= v.ceil()
            });
            if fits {
                return;
            }
            for d in nt
                .devices
                .iter()
                .filter(|d| r.get(&d.1).is_some_and(|v| *v > 0.0))
            {
                let s = format!("{} has {}", d.0, crate::units::gib(d.2.0 as f64));
                if !small.contains(&s) {
                    small.push(s);
                }
            }
        }
    }
    if any {
        cx.push(
            Diagnostic::error(
                at,
                format!(
                    "{what} needs {} of device memory per device; {}",
                    crate::units::gib(dm.0 as f64),
                    small.join(", ")
                ),
            )
            .with_help("no node it could be placed on has devices that large: lower `device_memory` or request a larger accelerator"),
        );
    }
}

/// An amount of resource `k` as the DSL writes it: bytes for memory, else a number.
fn show_amount(k: &str, x: f64) -> String {
    if k == "memory" || k == "object_store_memory" {
        Bytes(x.max(0.0) as u64).to_string()
    } else {
        crate::units::sig3(x)
    }
}

/// Work (`what`, requesting `r`, at `at`) that alone needs more of a resource than its
/// tenant's `quota` could never be placed: a located error. Amounts compare in Ray's
/// 1/10000 units, as placement does.
/// The FLOP-level form's own rules for service `sv` (head at `head`): a `compute` service
/// requests a device, exactly one of `compute` and `service_time`, its `device_memory` fits.
fn check_flop_service(
    cx: &mut Cx,
    scope: &ResourceScope,
    rules: Option<&Tenant>,
    sv: &Service,
    stmts: &[Stmt],
    head: Span,
) {
    if sv.compute.is_some() && !requests_device(&sv.resources) {
        cx.error(
            head,
            format!(
                "service `{}` has `compute` but its replicas request no device",
                sv.name
            ),
        );
    }
    if sv.compute.is_some() == sv.service_time.is_some() {
        cx.error(
            head,
            format!(
                "service `{}` needs exactly one of `compute` and `service_time`",
                sv.name
            ),
        );
    }
    if let Some(dm) = sv.device_memory {
        check_device_memory(
            cx,
            scope,
            rules,
            &format!("service `{}`", sv.name),
            &[&sv.resources],
            dm,
            stmt_span(stmts, "device_memory", head),
        );
    }
}

pub(super) fn check_quota(
    cx: &mut Cx,
    rules: Option<&Tenant>,
    what: &str,
    r: &Resources,
    at: Span,
) {
    let Some(t) = rules else { return };
    let fixed = |x: f64| (x * 10_000.0).round();
    for (k, q) in &t.quota {
        let need = r.get(k).copied().unwrap_or(0.0);
        if fixed(need) > fixed(*q) {
            let mut d = Diagnostic::error(
                at,
                format!(
                    "{what} needs {} `{k}`, more than tenant `{}`'s quota of {}; it could never be placed",
                    show_amount(k, need),
                    t.name,
                    show_amount(k, *q)
                ),
            );
            if let Some(sp) = t.rule_spans.get("quota") {
                d = d.with_secondary(*sp, "the quota");
            }
            cx.push(d);
        }
    }
}

/// The head of the first `key` statement of a block, else `or`.
fn stmt_span(stmts: &[Stmt], key: &str, or: Span) -> Span {
    stmts
        .iter()
        .find(|x| x.key.name == key)
        .map(|x| x.head_span())
        .unwrap_or(or)
}

/// A `transport NAME` selection (at `at`) by work of tenant `rules`: a located error naming
/// the tenant and the rule if the tenant forbids it
/// ([`super::transport::tenant_allows_transport`]).
fn check_tenant_transport(
    cx: &mut Cx,
    scope: &ResourceScope,
    rules: Option<&Tenant>,
    workload: &str,
    name: &str,
    at: Span,
) {
    let Some(t) = rules else { return };
    let kind = scope
        .transport_kinds
        .get(name)
        .map(String::as_str)
        .unwrap_or(name);
    if let Err(why) = super::transport::tenant_allows_transport(t, name, kind) {
        let rule = if t.no_rdma && super::transport::kind_uses_rdma(kind) {
            "no_rdma"
        } else {
            "transports"
        };
        let mut d = Diagnostic::error(
            at,
            format!("workload `{workload}` may not use transport `{name}`: {why}"),
        )
        .with_help(format!(
            "select a transport tenant `{}` allows, such as `{}`",
            t.name,
            super::transport::FALLBACK_TRANSPORT
        ));
        if let Some(sp) = t.rule_spans.get(rule) {
            d = d.with_secondary(*sp, "the tenant's rule");
        }
        cx.push(d);
    }
}

pub fn workload(
    cx: &mut Cx,
    scope: &ResourceScope,
    name: &str,
    span: Span,
    tenant: Option<String>,
    rules: Option<&Tenant>,
    stmts: &[Stmt],
) -> Workload {
    let mut w = Workload {
        name: name.into(),
        tenant,
        policy: Policy::RayDefault,
        tasks: Vec::new(),
        actors: Vec::new(),
        placement_groups: Vec::new(),
        training: Vec::new(),
        services: Vec::new(),
        transport: None,
        span,
    };
    let mut names: BTreeMap<String, Span> = BTreeMap::new();
    let mut pending_after: Vec<(usize, Vec<(String, Span)>)> = Vec::new();
    let mut pending_pg: Vec<(usize, String, Span)> = Vec::new();
    let mut pending_dm: Vec<(usize, Span)> = Vec::new();
    cx.each(stmts, schema::WORKLOAD, "a workload", |cx, s, def| {
        let mut a = Args::new(s, def);
        let _ = (|| -> Option<()> {
            if def.key == "policy" {
                cx.no_block(s);
                w.policy = policy(cx, a.req("a policy")?)?;
                return Some(());
            }
            if def.key == "transport" {
                cx.no_block(s);
                let n = transport_ref(cx, scope, a.req("a transport name")?)?;
                check_tenant_transport(cx, scope, rules, name, &n, s.head_span());
                w.transport = Some(n);
                return Some(());
            }
            let nv = a.req("a name")?;
            let item = rd::ident(cx, nv, "a name")?.to_string();
            if let Some(first) = names.get(&item) {
                cx.push(
                    Diagnostic::error(
                        nv.span,
                        format!("`{item}` is already defined in workload `{name}`"),
                    )
                    .with_secondary(*first, "first defined here"),
                );
                return None;
            }
            names.insert(item.clone(), nv.span);
            let blk = cx.block(s)?;
            match def.key {
                "tasks" => {
                    let count = rd::count(cx, a.need("x", "x N")?, 1, MAX_COUNT)?;
                    let after = match a.opt("after") {
                        Some(v) => rd::names(cx, v)?,
                        None => Vec::new(),
                    };
                    let mut g = TaskGroup {
                        name: item,
                        count,
                        after: after.iter().map(|(n, _)| n.clone()).collect(),
                        resources: Resources::from([("CPU".to_string(), 1.0)]),
                        duration: None,
                        compute: None,
                        output: Bytes(0),
                        strategy: Strategy::Default,
                        label_selector: Vec::new(),
                        fallbacks: Vec::new(),
                        retries: 3,
                        retry_delay: Duration(0),
                        transport: None,
                        device_memory: None,
                        span: stmt_span(&blk.stmts, "resources", s.head_span()),
                    };
                    let mut fb_spans = Vec::new();
                    cx.each(&blk.stmts, schema::TASK, "a task group", |cx, s2, def2| {
                        cx.no_block(s2);
                        let mut b = Args::new(s2, def2);
                        let _ = (|| -> Option<()> {
                            match def2.key {
                                "resources" => {
                                    g.resources = resources(cx, scope, b.req("a resource map")?)?
                                }
                                "duration" => {
                                    g.duration = Some(rd::duration(cx, b.req("a time")?)?)
                                }
                                "compute" => g.compute = Some(compute(cx, &mut b, "")?),
                                "output" => g.output = rd::bytes(cx, b.req("a size")?)?,
                                "strategy" => g.strategy = strategy(cx, b.req("a strategy")?)?,
                                "label_selector" => {
                                    g.label_selector =
                                        label_selector(cx, b.req("a label selector")?)?
                                }
                                "fallback" => {
                                    fb_spans.push(s2.head_span());
                                    g.fallbacks.push(super::task_fallback::fallback(cx, &mut b)?)
                                }
                                "retries" => {
                                    g.retries = rd::count(cx, b.req("a count")?, 0, 1000)? as u32
                                }
                                "retry_delay" => g.retry_delay = rd::duration(cx, b.req("a time")?)?,
                                "device_memory" => {
                                    g.device_memory = Some(device_memory(cx, b.req("a size")?)?)
                                }
                                "transport" => {
                                    let n = transport_ref(cx, scope, b.req("a transport name")?)?;
                                    check_tenant_transport(cx, scope, rules, name, &n, s2.head_span());
                                    g.transport = Some(n);
                                }
                                _ => {}
                            }
                            Some(())
                        })();
                        b.finish(cx);
                    });
                    if fb_spans.len() == g.fallbacks.len() {
                        super::task_fallback::check(
                            cx,
                            &format!("task group `{}`", g.name),
                            &g.label_selector,
                            &g.fallbacks,
                            &fb_spans,
                        );
                    }
                    if g.compute.is_some() && !requests_device(&g.resources) {
                        cx.push(
                            Diagnostic::error(s.head_span(), format!("task group `{}` has `compute` but requests no device", g.name))
                                .with_help("request a device, such as `resources { CPU: 1, GPU: 1 }`, or give a `duration` instead"),
                        );
                    }
                    if g.duration.is_none() && g.compute.is_none() {
                        cx.error(
                            s.head_span(),
                            format!("task group `{}` needs `duration` or `compute`", g.name),
                        );
                    }
                    if let Some(dm) = g.device_memory {
                        check_device_memory(
                            cx,
                            scope,
                            rules,
                            &format!("task group `{}`", g.name),
                            &[&g.resources],
                            dm,
                            stmt_span(&blk.stmts, "device_memory", s.head_span()),
                        );
                    }
                    check_quota(
                        cx,
                        rules,
                        &format!("a task of group `{}`", g.name),
                        &g.resources,
                        stmt_span(&blk.stmts, "resources", s.head_span()),
                    );
                    pending_after.push((w.tasks.len(), after));
                    w.tasks.push(g);
                }
                "actor" => {
                    let count = match a.opt("x") {
                        Some(v) => rd::count(cx, v, 1, MAX_COUNT)?,
                        None => 1,
                    };
                    let mut ac = Actor {
                        name: item,
                        count,
                        resources: None,
                        calls: 0,
                        call_duration: None,
                        max_restarts: 0,
                        max_task_retries: 0,
                        strategy: Strategy::Default,
                        label_selector: Vec::new(),
                        fallbacks: Vec::new(),
                        transport: None,
                        device_memory: None,
                        tensor: None,
                        span: stmt_span(&blk.stmts, "resources", s.head_span()),
                    };
                    let mut fb_spans = Vec::new();
                    cx.each(&blk.stmts, schema::ACTOR, "an actor", |cx, s2, def2| {
                        cx.no_block(s2);
                        let mut b = Args::new(s2, def2);
                        let _ = (|| -> Option<()> {
                            match def2.key {
                                "resources" => {
                                    ac.resources = Some(resources(cx, scope, b.req("a resource map")?)?)
                                }
                                "calls" => ac.calls = rd::count(cx, b.req("a count")?, 0, 1 << 40)?,
                                "call_duration" => {
                                    ac.call_duration = Some(rd::duration(cx, b.req("a time")?)?)
                                }
                                "max_restarts" => {
                                    ac.max_restarts = restarts(cx, b.req("a count or -1")?)?
                                }
                                "max_task_retries" => {
                                    ac.max_task_retries = restarts(cx, b.req("a count or -1")?)?
                                }
                                "strategy" => ac.strategy = strategy(cx, b.req("a strategy")?)?,
                                "device_memory" => {
                                    ac.device_memory = Some(device_memory(cx, b.req("a size")?)?)
                                }
                                "transport" => {
                                    let n = transport_ref(cx, scope, b.req("a transport name")?)?;
                                    check_tenant_transport(cx, scope, rules, name, &n, s2.head_span());
                                    ac.transport = Some(n);
                                }
                                "label_selector" => {
                                    ac.label_selector =
                                        label_selector(cx, b.req("a label selector")?)?
                                }
                                "fallback" => {
                                    fb_spans.push(s2.head_span());
                                    ac.fallbacks.push(super::task_fallback::fallback(cx, &mut b)?)
                                }
                                "tensor" => ac.tensor = Some(super::payloads::tensor(cx, &mut b)?),
                                _ => {}
                            }
                            Some(())
                        })();
                        b.finish(cx);
                    });
                    if fb_spans.len() == ac.fallbacks.len() {
                        super::task_fallback::check(
                            cx,
                            &format!("actor `{}`", ac.name),
                            &ac.label_selector,
                            &ac.fallbacks,
                            &fb_spans,
                        );
                    }
                    if ac.calls > 0 && ac.call_duration.is_none() {
                        cx.error(
                            s.head_span(),
                            format!("actor `{}` makes calls but has no `call_duration`", ac.name),
                        );
                    }
                    let placed = ac
                        .resources
                        .clone()
                        .unwrap_or_else(|| Resources::from([("CPU".to_string(), 1.0)]));
                    if let Some(dm) = ac.device_memory {
                        check_device_memory(
                            cx,
                            scope,
                            rules,
                            &format!("actor `{}`", ac.name),
                            &[&placed],
                            dm,
                            stmt_span(&blk.stmts, "device_memory", s.head_span()),
                        );
                    }
                    check_quota(
                        cx,
                        rules,
                        &format!("actor `{}`", ac.name),
                        &placed,
                        stmt_span(&blk.stmts, "resources", s.head_span()),
                    );
                    w.actors.push(ac);
                }
                "placement_group" => {
                    let g = super::placement_group::placement_group(
                        cx,
                        scope,
                        rules,
                        &mut a,
                        s,
                        blk,
                        item,
                    )?;
                    w.placement_groups.push(g);
                }
                "training" => {
                    let pgv = a.need("on", "on PLACEMENT_GROUP")?;
                    let pg = rd::ident(cx, pgv, "a placement group name")?.to_string();
                    let steps = rd::count(cx, a.need("steps", "steps N")?, 1, 1_000_000_000)?;
                    let mut t = Training {
                        name: item,
                        placement_group: pg.clone(),
                        steps,
                        compute: None,
                        collectives: Vec::new(),
                        checkpoint: None,
                        device_memory: None,
                        model: None,
                        span: s.head_span(),
                    };
                    let mut jm = super::layout::JobModel::default();
                    cx.each(
                        &blk.stmts,
                        schema::TRAINING,
                        "a training job",
                        |cx, s2, def2| {
                            cx.no_block(s2);
                            let mut b = Args::new(s2, def2);
                            let _ = (|| -> Option<()> {
                                match def2.key {
                                    "compute" => t.compute = Some(compute(cx, &mut b, "device")?),
                                    "device_memory" => {
                                        t.device_memory =
                                            Some(device_memory(cx, b.req("a size")?)?)
                                    }
                                    "checkpoint" => {
                                        let every =
                                            rd::duration(cx, b.need("every", "every TIME")?)?;
                                        let size = rd::bytes(cx, b.need("size", "size BYTES")?)?;
                                        if every.0 == 0 {
                                            cx.error(
                                                s2.head_span(),
                                                "checkpoint interval must be greater than zero",
                                            );
                                            return None;
                                        }
                                        let to = b.opt("to");
                                        let storage =
                                            checkpoint_storage(cx, scope, to, s2.head_span())
                                                .ok()?;
                                        t.checkpoint = Some(Checkpoint {
                                            every,
                                            size,
                                            storage,
                                        });
                                    }
                                    k if super::layout::KEYS.contains(&k) => {
                                        jm.stmt(cx, &scope.models, s2, def2.key, &mut b)?
                                    }
                                    op => {
                                        let bytes = rd::bytes(cx, b.req("a message size")?)?;
                                        let mut word = |key, list, what| match b.opt(key) {
                                            Some(v) => rd::choice(cx, v, list, what)
                                                .map(|w| Some(w.to_string())),
                                            None => Some(None),
                                        };
                                        let algo = word(
                                            "algo",
                                            schema::COLLECTIVE_ALGOS,
                                            "collective algorithm",
                                        )?;
                                        let proto =
                                            word("proto", schema::COLLECTIVE_PROTOS, "NCCL protocol")?;
                                        let hierarchical = b.flag("hierarchical");
                                        // NCCL has only Simple for these (NVLS; its send/recv
                                        // for all-to-all); hierarchical is not NCCL's, run Simple.
                                        let simple_only = if algo.as_deref() == Some("nvls") {
                                            Some("`algo nvls` (NCCL runs NVLS with Simple only)")
                                        } else if algo.as_deref() == Some("nvls_tree") {
                                            Some("`algo nvls_tree` (NCCL runs NVLS trees with Simple only)")
                                        } else if op == "alltoall" {
                                            Some("`alltoall` (NCCL's point-to-point copies)")
                                        } else if hierarchical {
                                            Some("`hierarchical` (not an NCCL algorithm; it runs Simple)")
                                        } else {
                                            None
                                        };
                                        if let Some(what) = simple_only
                                            && proto.as_deref().is_some_and(|p| p != "simple")
                                        {
                                            cx.error(
                                                s2.head_span(),
                                                format!("{what} takes `proto simple` or none"),
                                            );
                                            return None;
                                        }
                                        t.collectives.push(Collective {
                                            op: op.to_string(),
                                            bytes,
                                            algo,
                                            proto,
                                            hierarchical,
                                        });
                                    }
                                }
                                Some(())
                            })();
                            b.finish(cx);
                        },
                    );
                    let named = jm.named();
                    t.model = jm.finish(cx, &t.name, &blk.stmts);
                    if t.compute.is_none() && t.collectives.is_empty() && !named {
                        cx.error(
                            s.head_span(),
                            format!(
                                "training `{}` has neither `model`, `compute` nor a collective",
                                t.name
                            ),
                        );
                    }
                    if (named || !t.collectives.is_empty())
                        && let Some(tn) = rules
                        && let Err(why) = super::transport::collective_net(Some(tn))
                    {
                        let mut d = Diagnostic::error(
                            s.head_span(),
                            format!("training `{}` runs collectives with NCCL: {why}", t.name),
                        )
                        .with_help(format!(
                            "add `tcp` (NCCL's socket transport) or `nccl` to tenant `{}`'s `transports`",
                            tn.name
                        ));
                        if let Some(sp) = tn.rule_spans.get("transports") {
                            d = d.with_secondary(*sp, "the tenant's rule");
                        }
                        cx.push(d);
                    }
                    if t.device_memory.is_some() {
                        pending_dm.push((
                            w.training.len(),
                            stmt_span(&blk.stmts, "device_memory", s.head_span()),
                        ));
                    }
                    pending_pg.push((w.training.len(), pg, pgv.span));
                    w.training.push(t);
                }
                "service" => {
                    let mut sv = Service {
                        name: item,
                        replicas: 1,
                        resources: Resources::from([("CPU".to_string(), 1.0)]),
                        arrival: Arrival::Poisson(EventRate(0.0)),
                        compute: None,
                        service_time: None,
                        exponential: false,
                        batch: None,
                        slo: Vec::new(),
                        device_memory: None,
                        request: None,
                        response: None,
                        span: stmt_span(&blk.stmts, "resources", s.head_span()),
                        arrival_span: None,
                        llm: None,
                    };
                    let mut has_arrival = false;
                    let mut sm = super::serving::ServiceModel::default();
                    cx.each(&blk.stmts, schema::SERVICE, "a service", |cx, s2, def2| {
                        cx.no_block(s2);
                        let mut b = Args::new(s2, def2);
                        let _ = (|| -> Option<()> {
                            match def2.key {
                                "replicas" => {
                                    sv.replicas =
                                        rd::count(cx, b.req("a count")?, 1, 1_000_000)? as u32
                                }
                                "resources" => {
                                    sv.resources = resources(cx, scope, b.req("a resource map")?)?
                                }
                                "arrival" => {
                                    let kind = rd::choice(
                                        cx,
                                        b.req("an arrival process")?,
                                        &["poisson", "bursty", "trace", "concurrency", "offline"],
                                        "arrival process",
                                    )?;
                                    sv.arrival = match kind {
                                        "poisson" => Arrival::Poisson(positive_rate(
                                            cx,
                                            b.req("a rate such as `200 /s`")?,
                                        )?),
                                        "bursty" => {
                                            let rate = positive_rate(cx, b.req("a rate")?)?;
                                            let burst = rd::count(
                                                cx,
                                                b.need("burst", "burst N")?,
                                                1,
                                                1_000_000,
                                            )?;
                                            Arrival::Bursty { rate, burst }
                                        }
                                        "concurrency" => {
                                            let clients = rd::count(
                                                cx,
                                                b.req("a number of clients")?,
                                                1,
                                                MAX_CLOSED_LOOP,
                                            )?;
                                            let requests = rd::count(
                                                cx,
                                                b.need("requests", "requests M")?,
                                                1,
                                                MAX_CLOSED_LOOP,
                                            )?;
                                            Arrival::Concurrency { clients, requests }
                                        }
                                        "offline" => Arrival::Offline {
                                            requests: rd::count(
                                                cx,
                                                b.req("a number of requests")?,
                                                1,
                                                MAX_CLOSED_LOOP,
                                            )?,
                                        },
                                        _ => Arrival::Trace(
                                            rd::string(cx, b.req("a trace file path")?)?
                                                .to_string(),
                                        ),
                                    };
                                    has_arrival = true;
                                    sv.arrival_span = Some(s2.head_span());
                                }
                                "compute" => sv.compute = Some(compute(cx, &mut b, "request")?),
                                "device_memory" => {
                                    sv.device_memory = Some(device_memory(cx, b.req("a size")?)?)
                                }
                                "service_time" => {
                                    sv.service_time = Some(rd::duration(cx, b.req("a time")?)?);
                                    sv.exponential = b.flag("exponential");
                                }
                                "batch" => {
                                    let max = rd::count(cx, b.need("max", "max N")?, 1, 1_000_000)?
                                        as u32;
                                    let wait = rd::duration(cx, b.need("wait", "wait TIME")?)?;
                                    sv.batch = Some((max, wait));
                                }
                                k if k == "slo" || super::serving::KEYS.contains(&k) => {
                                    sm.stmt(cx, &scope.models, s2, &mut b)?;
                                    if k != "slo" || sm.named_slo(s2) {
                                        return Some(());
                                    }
                                    let p = rd::choice(
                                        cx,
                                        b.req("a percentile such as `p99`")?,
                                        schema::PERCENTILES,
                                        "percentile",
                                    )?;
                                    let d = rd::duration(cx, b.req("a latency target")?)?;
                                    sv.slo.push((p.to_string(), d));
                                }
                                "request" => {
                                    sv.request = Some(super::payloads::payload_bytes(
                                        cx,
                                        b.req("a request size")?,
                                        "a request size",
                                    )?)
                                }
                                "response" => {
                                    sv.response = Some(super::payloads::payload_bytes(
                                        cx,
                                        b.req("a response size")?,
                                        "a response size",
                                    )?)
                                }
                                _ => {}
                            }
                            Some(())
                        })();
                        b.finish(cx);
                    });
                    if !has_arrival {
                        cx.error(
                            s.head_span(),
                            format!("service `{}` needs an `arrival` process", sv.name),
                        );
                    }
                    let named = sm.named();
                    if !named && sv.arrival.finite().is_some() {
                        cx.push(
                            Diagnostic::error(
                                sv.arrival_span.unwrap_or(s.head_span()),
                                format!("`arrival concurrency` and `arrival offline` are benchmark loads of a model-level service: service `{}` names no `model`", sv.name),
                            )
                            .with_help("write `arrival poisson RATE` (or `bursty`, `trace`) for a FLOP-level service"),
                        );
                    }
                    sv.llm = sm.finish(cx, scope, &sv, &blk.stmts);
                    if let Some(d) = sv.llm.as_ref().and_then(|l| l.disagg.as_ref()) {
                        // The pools are the replicas; the KV cache's transport obeys the
                        // tenant's rules like any selection.
                        sv.replicas = d.prefill + d.decode;
                        check_tenant_transport(cx, scope, rules, name, &d.transport, d.span);
                    }
                    if named {
                        // The model form checks its own memory fit (`serving`).
                        if let Some(dm) = sv.llm.as_ref().map(super::serving::device_memory) {
                            sv.device_memory = Some(dm);
                        }
                    } else {
                        check_flop_service(cx, scope, rules, &sv, &blk.stmts, s.head_span());
                    }
                    check_quota(
                        cx,
                        rules,
                        &format!("a replica of service `{}`", sv.name),
                        &sv.resources,
                        stmt_span(&blk.stmts, "resources", s.head_span()),
                    );
                    w.services.push(sv);
                }
                _ => {}
            }
            Some(())
        })();
        a.finish(cx);
    });
    super::payloads::check_tensor_targets(cx, name, &w.actors);
    // Dependencies between task groups must name task groups and form no cycle.
    let task_names: Vec<String> = w.tasks.iter().map(|t| t.name.clone()).collect();
    for (i, after) in &pending_after {
        for (dep, sp) in after {
            if !task_names.contains(dep) {
                let help = did_you_mean(dep, task_names.iter().map(String::as_str));
                cx.push(
                    Diagnostic::error(*sp, format!("no task group `{dep}` in workload `{name}`"))
                        .with_help_opt(help),
                );
            } else if dep == &w.tasks[*i].name {
                cx.error(*sp, format!("task group `{dep}` cannot run after itself"));
            }
        }
    }
    if let Some(cycle) = find_cycle(&w.tasks) {
        cx.error(
            span,
            format!(
                "task groups depend on each other in a cycle: {}",
                cycle.join(" → ")
            ),
        );
    }
    super::layout::fit_memory(cx, scope, &mut w);
    // A training job's device memory applies to each device of its placement group's bundles.
    for (i, at) in pending_dm {
        let t = &w.training[i];
        let (Some(dm), Some(pg)) = (
            t.device_memory,
            w.placement_groups
                .iter()
                .find(|p| p.name == t.placement_group),
        ) else {
            continue;
        };
        if pg.slice {
            continue;
        }
        let bundles: Vec<&Resources> = pg.bundles.iter().collect();
        check_device_memory(
            cx,
            scope,
            rules,
            &format!("training `{}`", t.name),
            &bundles,
            dm,
            at,
        );
    }
    super::layout::check_devices(cx, scope, &w);
    let pgs: Vec<&str> = w.placement_groups.iter().map(|p| p.name.as_str()).collect();
    for (_, pg, sp) in pending_pg {
        if !pgs.contains(&pg.as_str()) {
            let help = did_you_mean(&pg, pgs.iter().copied()).unwrap_or_else(|| {
                "declare it with `placement_group NAME strategy ... { bundle ... }`".into()
            });
            cx.push(
                Diagnostic::error(
                    sp,
                    format!("no placement group `{pg}` in workload `{name}`"),
                )
                .with_help(help),
            );
        }
    }
    w
}

/// Whether a request asks for a device (a unit-instance resource such as GPU or TPU).
pub fn requests_device(r: &Resources) -> bool {
    r.iter()
        .any(|(k, v)| UNIT_INSTANCE.contains(&k.as_str()) && *v > 0.0)
}

fn restarts(cx: &mut Cx, v: &Value) -> Option<i64> {
    let x = rd::number(cx, v)?;
    if x.fract() != 0.0 || !(-1.0..=1e6).contains(&x) {
        cx.error(
            v.span,
            "expected a whole number of restarts, or -1 for unlimited",
        );
        return None;
    }
    Some(x as i64)
}

fn positive_rate(cx: &mut Cx, v: &Value) -> Option<EventRate> {
    let r = rd::event_rate(cx, v)?;
    if r.0 <= 0.0 {
        cx.error(v.span, "an arrival rate must be greater than zero");
        return None;
    }
    Some(r)
}

/// A cycle among `after` dependencies, if any (names in order).
fn find_cycle(tasks: &[TaskGroup]) -> Option<Vec<String>> {
    let idx: BTreeMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    // 0 = unvisited, 1 = on stack, 2 = done
    let mut state = vec![0u8; tasks.len()];
    let mut stack: Vec<usize> = Vec::new();
    fn visit(
        i: usize,
        tasks: &[TaskGroup],
        idx: &BTreeMap<&str, usize>,
        state: &mut [u8],
        stack: &mut Vec<usize>,
    ) -> Option<Vec<String>> {
        state[i] = 1;
        stack.push(i);
        for d in &tasks[i].after {
            let Some(&j) = idx.get(d.as_str()) else {
                continue;
            };
            if j == i {
                continue;
            }
            if state[j] == 1 {
                let from = stack.iter().position(|&k| k == j).unwrap_or(0);
                let mut c: Vec<String> = stack[from..]
                    .iter()
                    .map(|&k| tasks[k].name.clone())
                    .collect();
                c.push(tasks[j].name.clone());
                return Some(c);
            }
            if state[j] == 0
                && let Some(c) = visit(j, tasks, idx, state, stack)
            {
                return Some(c);
            }
        }
        stack.pop();
        state[i] = 2;
        None
    }
    for i in 0..tasks.len() {
        if state[i] == 0
            && let Some(c) = visit(i, tasks, &idx, &mut state, &mut stack)
        {
            return Some(c);
        }
    }
    None
}

/// Tenant names referenced by `never_share_node_with` must exist.
pub fn check_tenant_refs(cx: &mut Cx, tenants: &[Tenant]) {
    let names: BTreeSet<&str> = tenants.iter().map(|t| t.name.as_str()).collect();
    for t in tenants {
        for other in &t.never_share_node_with {
            if !names.contains(other.as_str()) {
                let help = did_you_mean(other, names.iter().copied());
                cx.push(
                    Diagnostic::error(
                        t.span,
                        format!("tenant `{}` refers to unknown tenant `{other}`", t.name),
                    )
                    .with_help_opt(help),
                );
            }
        }
    }
}
