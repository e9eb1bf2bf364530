//! Ray 2.x placement, as pure IO-free functions over a [`ClusterState`] built from a Spec.
//!
//! The rulebook is `ray-semantics.md`; each rule cites the Ray source it comes from
//! (paths in the ray-project/ray repository):
//!
//! | what | Ray source | here |
//! |---|---|---|
//! | fixed-point amounts (1/10000) | `src/ray/common/scheduling/fixed_point.h` | [`SCALE`], [`Request`] |
//! | per-device instances, `TryAllocate` (whole in index order, fraction best-fit) | `src/ray/common/scheduling/resource_instance_set.cc` | [`ClusterState::allocate`] |
//! | feasibility, availability, critical utilization | `src/ray/common/scheduling/cluster_resource_data.cc` | [`ClusterState::is_feasible`], [`NodeState::critical_utilization`] |
//! | DEFAULT hybrid policy, top-k, avoid GPU nodes | `src/ray/raylet/scheduling/policy/hybrid_scheduling_policy.cc` | [`hybrid`] |
//! | SPREAD round robin | `src/ray/raylet/scheduling/policy/spread_scheduling_policy.cc` | [`spread`] |
//! | NodeAffinity | `src/ray/raylet/scheduling/policy/node_affinity_scheduling_policy.cc` | [`node_affinity`] |
//! | tasks' and actors' `fallback_strategy` (label selectors in order) | `src/ray/raylet/scheduling/cluster_resource_scheduler.cc` (`GetBestSchedulableNode`, PR #56369) | [`place_task_options`] |
//! | placement groups (PACK, SPREAD, STRICT_*), bundle order | `src/ray/raylet/scheduling/policy/bundle_scheduling_policy.cc` | [`place_bundles`], [`sort_bundles`] |
//! | least-resource scorer | `src/ray/raylet/scheduling/policy/scorer.cc` | [`place_bundles`] |
//! | config defaults (spread threshold 0.5, top-k 0.2 / 1, avoid GPU nodes) | `src/ray/common/ray_config_def.h` | [`task`] constants |
//! | TPU slice resources, labels, pod type | `python/ray/_private/accelerators/tpu.py`, `ray.util.tpu` | [`ClusterState::slice_bundles`], [`tpu_pod_type`] |
//!
//! Orrery's topology-aware policy ([`topology_aware`], and the topology-aware variant of
//! [`place_bundles`] and [`ClusterState::allocate`]) goes beyond Ray and says so where it is
//! defined. Tenant rules (`never_share_node_with`, symmetric; `only_nodes`, a label selector;
//! `accelerators`, an allow-list of accelerator kinds; `quota`, the most a tenant holds at
//! once, [`ClusterState::quota_allows`]) are Orrery's too and are enforced under every policy,
//! for tasks and bundles, and again by [`ClusterState::allocate`].
//!
//! Everything is deterministic given the caller's `ChaCha8Rng`; ties are broken by node id.

mod assign;
pub mod bundle;
mod bundle_explain;
pub mod explain;
pub mod fallback;
pub mod feasible;
pub mod options;
mod order;
mod plain;
pub mod resources;
mod spread_affinity;
pub mod state;
mod strategies;
pub mod task;
mod task_explain;
pub mod topology;
mod view;
mod walk;

pub use crate::scenario::workload::Policy;
pub use bundle::{BundleRequest, PgDecision, place_bundles, sort_bundles};
pub use explain::{Candidate, Explain, Verdict};
pub use fallback::place_task_options;
pub use options::place_options;
pub use resources::{DeviceLoc, Request, ResourceIds, SCALE, device_ranks, from_fixed, to_fixed};
pub use spread_affinity::{node_affinity, spread};
pub use state::{
    AllocLocality, Allocation, ClusterState, NicLoc, NodeState, SliceInfo, TenantRules, Topology,
    tpu_pod_type,
};
pub use task::{Decision, TaskRequest, USE_ORDER_INDEX, hybrid, place_task};
pub use topology::topology_aware;

/// Index into [`ClusterState::nodes`], in Spec declaration order ([`crate::scenario::Cluster::nodes`]).
pub type NodeId = usize;
