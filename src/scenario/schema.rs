//! Which statements each block accepts and which option words each statement takes.
//!
//! These tables drive "unknown statement / did you mean" errors and duplicate detection, and
//! `tests/all/grammar_doc.rs` checks that every word here appears in `grammar/orrery.md`, so the
//! reference cannot drift from the implementation.

/// One statement a block accepts.
#[derive(Debug, Clone, Copy)]
pub struct StmtDef {
    pub key: &'static str,
    /// May appear more than once in the block.
    pub repeat: bool,
    /// Option words and fixed words the statement takes after its key.
    pub words: &'static [&'static str],
}

const fn one(key: &'static str, words: &'static [&'static str]) -> StmtDef {
    StmtDef {
        key,
        repeat: false,
        words,
    }
}
const fn many(key: &'static str, words: &'static [&'static str]) -> StmtDef {
    StmtDef {
        key,
        repeat: true,
        words,
    }
}

/// Words accepted by every figure statement of hardware blocks.
pub const FIGURE_WORDS: &[&str] = &["source"];

pub const TOP: &[StmtDef] = &[
    many("include", &[]),
    many("calibration", &[]),
    many("accelerator", &["from"]),
    many("nic", &["from"]),
    many("node", &["from"]),
    many("cluster", &[]),
    many("tenant", &[]),
    many("workload", &["tenant"]),
    many("failures", &[]),
    many("experiment", &[]),
    many("transport", &[]),
    many("model", &["from"]),
];

pub use crate::units::DTYPES;
pub const LINK_KINDS: &[&str] = &[
    "nvlink",
    "infinity_fabric",
    "ici",
    "neuronlink",
    "roce",
    "pcie",
    "none",
];
pub const PCIE_GENS: &[&str] = &["gen3", "gen4", "gen5", "gen6"];
pub const PCIE_LANES: &[&str] = &["x1", "x2", "x4", "x8", "x16"];
/// Declarable tiers; `calibrated` and `validated` are computed (`crate::maturity`).
pub const TIERS: &[&str] = &["datasheet", "estimated"];

pub const ACCELERATOR: &[StmtDef] = &[
    one("vendor", &[]),
    one("model", &[]),
    one("ray_resource", &[]),
    one("accelerator_type", &[]),
    one("memory", &[]),
    one("memory_bw", &[]),
    one("flops", DTYPES),
    one(
        "interconnect",
        &[
            "per_direction",
            "bidirectional",
            "links",
            "collective",
            "nvls",
        ],
    ),
    one("pcie", &[]),
    one("tdp", &[]),
    one("price", &[]),
    one("tier", TIERS),
    one("source", &[]),
    one("profile", &[]),
];

/// What the switches of an explicit fabric speak (`link ... kind`), see `topology::Wire`.
pub const WIRES: &[&str] = &["infiniband", "ethernet"];
pub const NIC_PROTOCOLS: &[&str] = &["infiniband", "roce", "ethernet", "efa"];

pub const NIC: &[StmtDef] = &[
    one("vendor", &[]),
    one("model", &[]),
    one("speed", &[]),
    one("protocol", NIC_PROTOCOLS),
    one("rdma", &["true", "false"]),
    one("gpudirect", &["true", "false"]),
    one("latency", &[]),
    one("price", &[]),
    one("tdp", &[]),
    one("source", &[]),
];

pub const LINK_TOPOS: &[&str] = &["switch", "mesh", "ring", "torus", "none"];
pub const NIC_ROLES: &[&str] = &["compute", "frontend", "storage"];

pub const NODE: &[StmtDef] = &[
    one("cpu", &["sockets", "cores", "numa", "threads", "model"]),
    one("memory", &[]),
    one("pcie", &[]),
    many("switch", &["numa", "under", "uplink"]),
    many("device", &["x", "at", "numa", "link"]),
    many("nic", &["x", "at", "numa", "role"]),
    one("labels", &[]),
    one("resources", &[]),
    one("scale_up", &["rack", "max"]),
    one("price", &[]),
    one("power", &[]),
    one("source", &[]),
];

pub const FABRIC_KINDS: &[&str] = &[
    "leaf_spine",
    "fat_tree",
    "rail_optimized",
    "single_switch",
    "explicit",
];
/// The block of `fabric explicit { ... }` (`scenario::topology`).
pub const TOPOLOGY: &[StmtDef] = &[
    many("switch", &["grid"]),
    many("link", &["pattern", "latency", "kind"]),
    many("attach", &["rails", "each"]),
    one("routing", &[]),
    many("route", &["via"]),
];
pub const TOPOLOGY_PATTERNS: &[&str] = &["all", "pairwise", "torus", "mesh", "clique", "dragonfly"];
pub const ROUTINGS: &[&str] = &["ecmp", "dimension_order"];

pub const CLUSTER: &[StmtDef] = &[
    many("zone", &[]),
    many("rack", &[]),
    many("slice", &["node", "topology"]),
    many("node", &["x", "name"]),
    one(
        "fabric",
        &[
            "oversubscription",
            "latency",
            "spine_uplink",
            "zone_uplink",
            "spines",
        ],
    ),
    one("head", &[]),
    many("storage", &[]),
];
/// Where a `storage` block attaches: behind the fabric (one shared system) or on every node.
pub const ATTACH_KINDS: &[&str] = &["fabric", "node_local"];
pub const STORAGE: &[StmtDef] = &[
    one("bandwidth", &[]),
    one("attach", ATTACH_KINDS),
    one("latency", &[]),
    one("source", &[]),
];
pub const ZONE: &[StmtDef] = &[
    many("rack", &[]),
    many("slice", &["node", "topology"]),
    many("node", &["x", "name"]),
];
pub const RACK: &[StmtDef] = &[many("node", &["x", "name"])];

pub const TENANT: &[StmtDef] = &[
    one("never_share_node_with", &[]),
    one("only_nodes", &[]),
    one("no_rdma", &[]),
    one("transports", &[]),
    one("accelerators", &[]),
    one("quota", &[]),
    one("priority", &[]),
];

pub const POLICIES: &[&str] = &["ray_default", "spread", "topology_aware"];
pub const PG_STRATEGIES: &[&str] = &["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"];
pub const TASK_STRATEGIES: &[&str] = &["DEFAULT", "SPREAD", "node_affinity", "soft"];
pub const COLLECTIVES: &[&str] = &[
    "allreduce",
    "allgather",
    "reduce_scatter",
    "broadcast",
    "alltoall",
];
pub const COLLECTIVE_ALGOS: &[&str] = &["ring", "tree", "nvls", "nvls_tree"];
/// NCCL's protocols (`network::collective::tuning::Protocol`).
pub const COLLECTIVE_PROTOS: &[&str] = &["ll", "ll128", "simple"];
pub const ARRIVALS: &[&str] = &[
    "poisson",
    "bursty",
    "burst",
    "trace",
    "concurrency",
    "requests",
    "offline",
];
pub const PERCENTILES: &[&str] = &["p50", "p90", "p99", "p999"];

pub const WORKLOAD: &[StmtDef] = &[
    one("policy", POLICIES),
    many("tasks", &["x", "after"]),
    many("actor", &["x"]),
    many(
        "placement_group",
        &["strategy", "topology_strategy", "policy", "slice"],
    ),
    many("training", &["on", "steps"]),
    many("service", &[]),
    one("transport", &[]),
];
pub const TASK: &[StmtDef] = &[
    one("resources", &[]),
    one("duration", &[]),
    one("compute", &["memory", "kernels"]),
    one("output", &[]),
    one("strategy", TASK_STRATEGIES),
    one("label_selector", &[]),
    // Ray's `fallback_strategy`: one `fallback label_selector MAP` per option, in order.
    many("fallback", &["label_selector"]),
    one("retries", &[]),
    one("retry_delay", &[]),
    one("transport", &[]),
    one("device_memory", &[]),
];
pub const ACTOR: &[StmtDef] = &[
    one("resources", &[]),
    one("calls", &[]),
    one("call_duration", &[]),
    one("max_restarts", &[]),
    one("max_task_retries", &[]),
    one("strategy", TASK_STRATEGIES),
    one("label_selector", &[]),
    many("fallback", &["label_selector"]),
    one("transport", &[]),
    one("device_memory", &[]),
    one("tensor", &["to"]),
];
pub const PLACEMENT_GROUP: &[StmtDef] = &[
    many("bundle", &["x", "label_selector"]),
    many("fallback", &[]),
];
/// A `fallback` option of a placement group (Ray's `fallback_strategy` entry).
pub const PG_FALLBACK: &[StmtDef] = &[many("bundle", &["x", "label_selector"])];
pub const TRAINING: &[StmtDef] = &[
    one("compute", &["per", "device", "memory", "kernels"]),
    many("allreduce", &["algo", "proto", "hierarchical"]),
    many("allgather", &["algo", "proto", "hierarchical"]),
    many("reduce_scatter", &["algo", "proto", "hierarchical"]),
    many("broadcast", &["algo", "proto", "hierarchical"]),
    many("alltoall", &["algo", "proto", "hierarchical"]),
    one("checkpoint", &["every", "size", "to"]),
    one("device_memory", &[]),
    one("model", &[]),
    one("parallel", PARALLEL_WORDS),
    one("sharding", SHARDINGS),
    one("recompute", RECOMPUTES),
    one("attention", ATTENTIONS),
    one("batch", &["global", "micro"]),
    one("precision", DTYPES),
    one("overlap", &["grad_reduce", "tp_comm", "bucket"]),
];
/// Parts of a training job's `parallel` layout (`src/scenario/layout.rs`).
pub const PARALLEL_WORDS: &[&str] = &[
    "tp",
    "sp",
    "cp",
    "pp",
    "interleave",
    "first_stage",
    "last_stage",
    "dp",
    "ep",
];
/// Data-parallel state sharding; `fsdp` is ZeRO-3 (FSDP's full sharding).
pub const SHARDINGS: &[&str] = &["none", "zero1", "zero2", "zero3", "fsdp"];
pub const RECOMPUTES: &[&str] = &["none", "selective", "full"];
/// How the attention core runs (`model::Attention`).
pub const ATTENTIONS: &[&str] = &["unfused", "flash"];
pub const FFN_KINDS: &[&str] = &["gelu", "swiglu"];

/// A top-level `model` block: a transformer (`src/scenario/model.rs`).
pub const MODEL: &[StmtDef] = &[
    one("layers", &[]),
    one("hidden", &[]),
    one("heads", &[]),
    one("kv_heads", &[]),
    one("head_dim", &[]),
    one("ffn", &[]),
    one("ffn_kind", FFN_KINDS),
    one("vocab", &[]),
    one("seq", &[]),
    one("tied_embeddings", &["true", "false"]),
    one("moe", &["experts", "top_k", "expert_ffn"]),
    one("source", &[]),
];
pub const SERVICE: &[StmtDef] = &[
    one("replicas", &[]),
    one("resources", &[]),
    one("arrival", ARRIVALS),
    one("compute", &["per", "request", "memory", "kernels"]),
    one("service_time", &["exponential"]),
    one("batch", &["max", "wait"]),
    many("slo", SLO_WORDS),
    one("device_memory", &[]),
    one("request", &[]),
    one("response", &[]),
    one("model", &[]),
    one("parallel", &["tp", "pp"]),
    one("precision", super::serving::PRECISION_WORDS),
    one("prompt", TOKEN_WORDS),
    one("output", TOKEN_WORDS),
    one("engine", super::serving::ENGINE_WORDS),
    one("disaggregate", super::disagg::WORDS),
];
/// An `slo`'s words: what an LLM service's SLO bounds, then the percentile.
pub const SLO_WORDS: &[&str] = &["ttft", "tpot", "e2e", "p50", "p90", "p99", "p999"];
/// `prompt` / `output` of an LLM service: `tokens fixed N`, `tokens uniform A..B` or
/// `tokens trace max N`.
pub const TOKEN_WORDS: &[&str] = &["tokens", "fixed", "uniform", "trace", "max"];

pub const ACTIONS: &[&str] = &["kill", "down", "degrade", "power_loss", "xid"];
pub const TARGET_CLASSES: &[&str] = &[
    "node", "device", "nic", "link", "nvlink", "rack", "zone", "slice", "head", "switch",
];
pub const DISTRIBUTIONS: &[&str] = &["exponential", "weibull", "lognormal", "empirical"];
/// Parameter words inside distribution calls: `weibull(shape 0.8)`, `lognormal(sigma 1)`.
pub const DISTRIBUTION_PARAMS: &[&str] = &["shape", "sigma"];

pub const FAILURES: &[StmtDef] = &[
    many("at", &["for", "to"]),
    many("random", &["mtbf", "repair"]),
    one("detection", &[]),
];
pub const DETECTION: &[StmtDef] = &[
    one("first_check", &[]),
    one("period", &[]),
    one("timeout", &[]),
    one("misses", &[]),
];

pub const PLOT_KINDS: &[&str] = &["timeline", "utilization", "cdf", "bars", "heatmap"];

/// Transport models (`src/transport/`); a `transport` block or a `transport NAME` selection
/// names one of these or a declared transport.
pub const TRANSPORT_KINDS: &[&str] = &[
    "object_store",
    "nvlink_p2p",
    "nccl",
    "gloo",
    "nixl",
    "rdma",
    "gpudirect_rdma",
    "host_staged_rdma",
    "tcp",
];

pub const TRANSPORT: &[StmtDef] = &[
    one("kind", &[]),
    one("latency", &[]),
    one("overhead", &[]),
    one("efficiency", &[]),
    one("scale_up_efficiency", &[]),
    one("copy_efficiency", &[]),
    one("cross_socket", &[]),
    one("chunk", &[]),
    one("inline", &[]),
    one("staging", &[]),
    one("memcpy", &[]),
    one("source", &[]),
];

pub const EXPERIMENT: &[StmtDef] = &[
    one("seeds", &[]),
    many("sweep", &["in"]),
    one("metrics", &[]),
    one("plot", &[]),
    one("horizon", &[]),
];

/// Every table with the name of the block it describes, for documentation checks.
pub const ALL: &[(&str, &[StmtDef])] = &[
    ("top level", TOP),
    ("accelerator", ACCELERATOR),
    ("nic", NIC),
    ("node", NODE),
    ("cluster", CLUSTER),
    ("zone", ZONE),
    ("rack", RACK),
    ("storage", STORAGE),
    ("fabric", TOPOLOGY),
    ("tenant", TENANT),
    ("workload", WORKLOAD),
    ("tasks", TASK),
    ("actor", ACTOR),
    ("placement_group", PLACEMENT_GROUP),
    ("fallback", PG_FALLBACK),
    ("training", TRAINING),
    ("service", SERVICE),
    ("failures", FAILURES),
    ("detection", DETECTION),
    ("experiment", EXPERIMENT),
    ("transport", TRANSPORT),
    ("model", MODEL),
];

/// Enumerated words that appear as values, for documentation checks.
pub const VALUE_WORDS: &[&[&str]] = &[
    DTYPES,
    LINK_KINDS,
    PCIE_GENS,
    PCIE_LANES,
    TIERS,
    NIC_PROTOCOLS,
    LINK_TOPOS,
    NIC_ROLES,
    FABRIC_KINDS,
    TOPOLOGY_PATTERNS,
    ROUTINGS,
    ATTACH_KINDS,
    POLICIES,
    PG_STRATEGIES,
    TASK_STRATEGIES,
    COLLECTIVES,
    COLLECTIVE_ALGOS,
    COLLECTIVE_PROTOS,
    ARRIVALS,
    PERCENTILES,
    ACTIONS,
    TARGET_CLASSES,
    DISTRIBUTIONS,
    DISTRIBUTION_PARAMS,
    PLOT_KINDS,
    TRANSPORT_KINDS,
    PARALLEL_WORDS,
    SHARDINGS,
    RECOMPUTES,
    ATTENTIONS,
    FFN_KINDS,
];
