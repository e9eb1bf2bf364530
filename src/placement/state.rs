//! The cluster as the scheduler sees it: per-node totals, availabilities, per-device instances,
//! labels, topology and tenant occupancy, built from a validated [`Spec`].
//!
//! The view is built in `state/build.rs`; tenants' rules are `state/tenants.rs`, nodes and
//! devices going down `state/health.rs`, locality and TPU-style slices `state/slices.rs`.

use super::resources::{
    self as res, DeviceLoc, GPU, Request, ResourceIds, SCALE, from_fixed, instances_fit, to_fixed,
    try_allocate_ray, try_allocate_topo,
};
use super::{NodeId, Policy};
use crate::scenario::Spec;
use crate::scenario::workload::LabelConstraint;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

mod build;
mod health;
mod score;
mod slices;
mod tenants;

/// Label keys Ray sets on every node / on TPU hosts (`python/ray/_private/accelerators/tpu.py`,
/// `src/ray/common/constants.h`).
pub const LABEL_NODE_ID: &str = "ray.io/node-id";
pub const LABEL_ACCELERATOR_TYPE: &str = "ray.io/accelerator-type";
pub const LABEL_ZONE: &str = "ray.io/availability-zone";
/// The scale-up (NVLink / ICI) domain a node's devices belong to: the label Ray's topology
/// strategy is written against (`topology_strategy={"ray.io/gpu-domain": "STRICT_PACK"}`). Set
/// to the slice's name on a TPU slice's hosts (one ICI torus spans them) and to the node's own
/// name on a node whose devices have a scale-up `link` (its NVLink domain ends at the node);
/// unset on nodes without one. A node type's own `labels` take precedence.
pub const LABEL_GPU_DOMAIN: &str = "ray.io/gpu-domain";
/// The rack a node is declared in (Orrery's label, not Ray's: Ray has no rack label), so
/// selectors and topology strategies can name racks. Unset on nodes outside any named rack.
pub const LABEL_RACK: &str = "orrery.io/rack";
pub const LABEL_TPU_SLICE_NAME: &str = "ray.io/tpu-slice-name";
pub const LABEL_TPU_WORKER_ID: &str = "ray.io/tpu-worker-id";
pub const LABEL_TPU_TOPOLOGY: &str = "ray.io/tpu-topology";
pub const LABEL_TPU_POD_TYPE: &str = "ray.io/tpu-pod-type";

/// A NIC and where it sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicLoc {
    pub nic: String,
    pub role: String,
    pub numa: u32,
    pub switch: Option<usize>,
}

/// Intra-node topology of a node type (shared by all nodes of the type).
#[derive(Debug, Clone, Default)]
pub struct Topology {
    /// Per unit-instance resource id: where each instance (device) sits, in instance order
    /// (the node type's device groups in declaration order).
    pub devices: Vec<(usize, Vec<DeviceLoc>)>,
    pub nics: Vec<NicLoc>,
    pub numa_nodes: u32,
    pub switches: usize,
    /// Accelerator kinds (the Spec's accelerator names) of the node type's devices, distinct,
    /// in declaration order; empty for a node type without devices.
    pub accelerators: Vec<String>,
    /// Per unit-instance resource id: the device memory of each instance in bytes, in the
    /// order of [`Topology::devices`]; `u64::MAX` for instances that come from a `resources`
    /// declaration rather than a device (their memory is unknown, so unconstrained).
    pub device_memory: Vec<(usize, Vec<u64>)>,
}

impl Topology {
    pub fn devices_of(&self, id: usize) -> &[DeviceLoc] {
        self.devices
            .iter()
            .find(|d| d.0 == id)
            .map(|d| d.1.as_slice())
            .unwrap_or(&[])
    }
}

/// One node.
#[derive(Debug, Clone)]
pub struct NodeState {
    name: String,
    node_type: String,
    rack: usize,
    zone: Option<usize>,
    slice: Option<usize>,
    labels: BTreeMap<String, String>,
    alive: bool,
    has_gpu: bool,
    total: Vec<i64>,
    available: Vec<i64>,
    /// Unit-instance resources: `(resource id, availability of each instance)`.
    instances: Vec<(usize, Vec<i64>)>,
    /// Free device memory of each instance in bytes, aligned with `instances`
    /// (`Topology::device_memory` when nothing runs; `u64::MAX`: unknown, unconstrained).
    mem_free: Vec<(usize, Vec<u64>)>,
    topo: Arc<Topology>,
    tenant_occ: Vec<u32>,
    /// What each tenant's allocations hold here of each resource its quota names, flat in
    /// the layout of [`ClusterState`]'s quota table (empty when no tenant has a quota).
    quota_held: Vec<i64>,
    /// Cached [`NodeState::critical_utilization`], refreshed on every allocate/free/reset.
    util: f32,
    /// Device instances out of service (a GPU-level fault): (resource id, instance).
    dead: Vec<(usize, usize)>,
}

impl NodeState {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn node_type(&self) -> &str {
        &self.node_type
    }
    pub fn alive(&self) -> bool {
        self.alive
    }
    pub fn available(&self, id: usize) -> i64 {
        self.available.get(id).copied().unwrap_or(0)
    }
    pub fn total(&self, id: usize) -> i64 {
        self.total.get(id).copied().unwrap_or(0)
    }
    pub fn rack(&self) -> usize {
        self.rack
    }
    pub fn zone(&self) -> Option<usize> {
        self.zone
    }
    pub fn slice(&self) -> Option<usize> {
        self.slice
    }
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }
    /// Ray's `node_resources.total.Has(GPU)` (`hybrid_scheduling_policy.cc`, `IsNodeFeasible`).
    pub fn has_gpu(&self) -> bool {
        self.has_gpu
    }
    /// Per-instance availability of a unit-instance resource (None for plain resources).
    pub fn instances(&self, id: usize) -> Option<&[i64]> {
        self.instances
            .iter()
            .find(|e| e.0 == id)
            .map(|e| e.1.as_slice())
    }
    pub fn topology(&self) -> &Topology {
        &self.topo
    }
    /// Live allocations of tenant `t` on this node.
    pub fn tenant_count(&self, t: usize) -> u32 {
        self.tenant_occ.get(t).copied().unwrap_or(0)
    }

    /// Ray `NodeResources::CalculateCriticalResourceUtilization`
    /// (`src/ray/common/scheduling/cluster_resource_data.cc`): the highest of
    /// `1 - available/total` over CPU, memory and object store memory, skipping resources the
    /// node does not have. Computed in double and returned as float, as Ray does.
    pub fn critical_utilization(&self) -> f32 {
        self.util
    }

    fn compute_utilization(&self) -> f32 {
        score::utilization(|id| (self.total(id), self.available(id)))
    }

    /// Free device memory per instance of a unit-instance resource, in bytes.
    pub fn device_memory_free(&self, id: usize) -> Option<&[u64]> {
        self.mem_free
            .iter()
            .find(|e| e.0 == id)
            .map(|e| e.1.as_slice())
    }

    /// Per-instance availability as work needing `device_memory` bytes per device sees it
    /// ([`res::mask_by_memory`]; unchanged when `device_memory` is 0).
    pub fn instances_for(
        &self,
        id: usize,
        device_memory: u64,
    ) -> Option<std::borrow::Cow<'_, [i64]>> {
        let inst = self.instances(id)?;
        if device_memory == 0 {
            return Some(std::borrow::Cow::Borrowed(inst));
        }
        let mut out = Vec::new();
        res::mask_by_memory(
            inst,
            self.device_memory_free(id).unwrap_or(&[]),
            device_memory,
            &mut out,
        );
        Some(std::borrow::Cow::Owned(out))
    }

    /// Whether the node's devices could ever give `req` its device memory: enough in-service
    /// instances of each unit-instance resource it asks for are at least that large.
    pub(crate) fn fits_device_memory(&self, req: &Request) -> bool {
        if req.device_memory == 0 {
            return true;
        }
        req.amounts.iter().all(|&(id, a)| {
            let Some(caps) = self.topo.device_memory.iter().find(|e| e.0 == id) else {
                return true;
            };
            let big = caps
                .1
                .iter()
                .enumerate()
                .filter(|&(k, &c)| c >= req.device_memory && !self.dead.contains(&(id, k)))
                .count();
            res::instances_fit_full(big, a)
        })
    }

    fn fits_total(&self, req: &Request) -> bool {
        req.amounts.iter().all(|&(id, a)| self.total(id) >= a) && self.fits_device_memory(req)
    }

    fn fits_available(&self, req: &Request) -> bool {
        req.amounts.iter().all(|&(id, a)| match self.instances(id) {
            Some(inst) if req.device_memory > 0 => {
                let mut m = Vec::new();
                res::mask_by_memory(
                    inst,
                    self.device_memory_free(id).unwrap_or(&[]),
                    req.device_memory,
                    &mut m,
                );
                instances_fit(&m, a)
            }
            Some(inst) => instances_fit(inst, a),
            None => self.available(id) >= a,
        })
    }
}

/// A tenant's placement rules.
#[derive(Debug, Clone)]
pub struct TenantRules {
    pub name: String,
    /// Tenants whose work may never share a node with this one's (the symmetric closure of
    /// `never_share_node_with`).
    pub conflicts: Vec<usize>,
    /// Label selector every placement of this tenant must satisfy.
    pub only_nodes: Vec<LabelConstraint>,
    /// Transport rule (no RDMA transports, `crate::scenario::transport::kind_uses_rdma`); checked
    /// when the scenario is resolved and by `crate::scenario::transport::allowed_transport`,
    /// ignored by placement.
    pub no_rdma: bool,
    /// Accelerator kinds this tenant's work may be placed on (`accelerators [..]`); `None`:
    /// any. A node passes when every accelerator it holds is listed; a node without
    /// accelerators passes unless it offers device resources of unknown kind (a unit-instance
    /// resource declared with `resources`), so device-free work still runs on CPU nodes.
    pub accelerators: Option<Vec<String>>,
    /// `quota { GPU: 2 }`: the most of each resource (id, amount in 1/10000) the tenant's
    /// live allocations may hold at once, summed over alive nodes; sorted by id.
    pub quota: Vec<(usize, i64)>,
}

/// The `accelerators` rule on one node: every accelerator kind it holds is allowed; a node
/// without accelerators passes unless it offers unit-instance (device) resources anyway.
fn accelerators_ok(n: &NodeState, allowed: &[String]) -> bool {
    if n.topo.accelerators.is_empty() {
        return n.instances.iter().all(|e| e.1.is_empty());
    }
    n.topo.accelerators.iter().all(|a| allowed.contains(a))
}

/// A TPU-style slice: a rack whose hosts form one torus.
#[derive(Debug, Clone)]
pub struct SliceInfo {
    pub name: String,
    pub rack: usize,
    pub hosts: Vec<NodeId>,
    pub chips: u64,
    pub chips_per_host: u64,
    /// `4x4x4`.
    pub topology: String,
    /// GCP / Ray pod type, e.g. `v5p-128` (see [`tpu_pod_type`]).
    pub pod_type: String,
    /// `TPU-<pod type>-head`, held by worker 0 only.
    pub head_resource: String,
}

/// Where an allocation's devices sit (for locality metrics).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AllocLocality {
    pub node: NodeId,
    pub rack: usize,
    /// Device instances touched (whole or partly).
    pub devices: usize,
    /// Distinct PCIe switches under which those devices sit.
    pub switches: usize,
    /// Distinct NUMA domains of those devices.
    pub numa_nodes: usize,
    /// Distinct scale-up link domains (NVLink/NVSwitch/ICI groups).
    pub link_domains: usize,
    /// When all devices share one NUMA domain, the domain the CPUs should be pinned to.
    pub cpu_numa: Option<u32>,
    /// Indices into [`Topology::nics`] of compute NICs under the same switch as a device
    /// (GPU-local NICs, e.g. GPUDirect RDMA pairs on a DGX).
    pub local_nics: Vec<usize>,
}

/// Resource amounts (id, fixed-point amount) of an [`Allocation`].
pub type Amounts = smallvec::SmallVec<[(usize, i64); 1]>;

/// The resources a task or bundle holds on a node.
#[derive(Clone, Debug)]
pub struct Allocation {
    pub node: NodeId,
    /// The request's amounts, inline when there is one (a plain `{ CPU: N }` task: a million
    /// of them placed made a million small heap allocations, a tenth of `orrery bench`'s
    /// 10k-node run in malloc and free). One inline entry takes what a `Vec` took; inline two
    /// made every task's slot 16 bytes larger (peak 302 MB against 286).
    pub amounts: Amounts,
    /// Per-device amounts for unit-instance resources (GPU, TPU, neuron_cores, ...).
    pub instances: Vec<(usize, Vec<i64>)>,
    /// Device memory taken: (resource id, instance, bytes), one entry per device held when the
    /// request declared `device_memory`.
    pub device_memory: Vec<(usize, usize, u64)>,
}

/// The whole cluster.
#[derive(Debug, Clone)]
pub struct ClusterState {
    pub ids: ResourceIds,
    pub nodes: Vec<NodeState>,
    pub head: NodeId,
    pub tenants: Vec<TenantRules>,
    /// Racks in Spec order: (name, zone, slice index).
    pub racks: Vec<(String, Option<usize>, Option<usize>)>,
    pub zones: Vec<String>,
    slices: Vec<SliceInfo>,
    by_name: HashMap<String, NodeId>,
    /// Ray `SpreadSchedulingPolicy::spread_scheduling_next_index_`.
    pub(crate) spread_next: usize,
    alive_count: usize,
    alive_non_gpu: usize,
    /// Reusable buffers for the hybrid policy (kept so the hot path does not allocate).
    pub(crate) buf_avail: Vec<(f32, NodeId)>,
    /// Alive nodes in the DEFAULT policy's order: (score key, id), score key =
    /// [`score_key`] of the critical utilization. Kept in step on every allocate, free,
    /// reset and liveness change so the hybrid policy can walk nodes best-first instead of
    /// scanning and selecting (same result; see `task::hybrid_pass`).
    pub(crate) order: super::order::Order,
    pub(crate) buf_feasible: Vec<(f32, NodeId)>,
    /// What the ordered walk reads of each node, dense ([`super::plain`]); refreshed by
    /// every mutator below.
    pub(crate) plain: super::plain::PlainIndex,
    /// Start of each tenant's entries in the flat quota tables (`quota_held` here and on
    /// every node), one entry per `TenantRules::quota` item.
    quota_off: Vec<usize>,
    /// What each tenant holds on alive nodes of each quota resource (flat, see `quota_off`).
    /// Kept by [`ClusterState::allocate`], [`ClusterState::free`], [`ClusterState::reset`] and
    /// [`ClusterState::set_alive`] (work on a dead node holds nothing usable: its allocations
    /// stop counting when the node dies, as Ray frees a dead node's leases).
    quota_held: Vec<i64>,
}

/// Sort key of a node in the DEFAULT policy's order: utilization below Ray's
/// `scheduler_spread_threshold` counts as 0 (ties then go by node id); above it, the f32 bits
/// of a non-negative float order like the float.
pub fn score_key(util: f32) -> u32 {
    if util < super::task::SPREAD_THRESHOLD {
        0
    } else {
        util.max(0.0).to_bits()
    }
}

/// Ray's TPU pod type from the accelerator type and chip count
/// (`python/ray/_private/accelerators/tpu.py`, `infer_tpu_pod_type_from_topology`): the
/// generation (`v4`, `v5p`, `v5litepod`, `v6e`, ...) and the number of TensorCores, which is
/// 2 per chip except on v5e (`v5litepod`) and v6e (`SINGLE_CORE_TPU_TYPES`). A 4x4x4 v5p slice
/// (64 chips) is `v5p-128`; 8 v4 chips are `v4-16`.
pub fn tpu_pod_type(accelerator_type: &str, chips: u64) -> String {
    let lower = accelerator_type.to_ascii_lowercase();
    let mut g = lower
        .trim_start_matches("tpu_")
        .trim_start_matches("tpu-")
        .trim_start_matches("tpu")
        .to_string();
    if !g.starts_with('v') {
        g = format!("v{g}");
    }
    if g == "v5e" || g == "v5lite" {
        g = "v5litepod".to_string();
    }
    let cores_per_chip = if g.starts_with("v5litepod") || g.starts_with("v6e") {
        1
    } else {
        2
    };
    format!("{g}-{}", chips * cores_per_chip)
}

impl ClusterState {
    /// Intern a resource map as a [`Request`].
    pub fn request(&mut self, map: &BTreeMap<String, f64>) -> Request {
        Request::from_map(map, &mut self.ids)
    }

    /// [`ClusterState::request`] for work that declares `device_memory` (per device it
    /// holds; the Spec's `TaskGroup::device_memory`, `Actor::device_memory`,
    /// `Service::device_memory`, and for placement-group bundles
    /// `Workload::placement_group_device_memory`).
    pub fn request_with_memory(
        &mut self,
        map: &BTreeMap<String, f64>,
        device_memory: Option<crate::units::Bytes>,
    ) -> Request {
        Request::from_map(map, &mut self.ids).with_device_memory(device_memory.map_or(0, |b| b.0))
    }

    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    pub fn alive_count(&self) -> usize {
        self.alive_count
    }

    pub(crate) fn alive_non_gpu(&self) -> usize {
        self.alive_non_gpu
    }

    /// Ray `NodeResources::IsFeasible` (`cluster_resource_data.cc`): the node is alive and its
    /// totals could ever hold the request. (For unit-instance resources the per-instance rule
    /// gives the same answer as the sum: `whole + (frac > 0) <= n` iff `demand <= n`.)
    pub fn is_feasible(&self, node: NodeId, req: &Request) -> bool {
        let n = &self.nodes[node];
        n.alive && n.fits_total(req)
    }

    /// The request fits in what is available now, per instance for unit-instance resources
    /// (what `NodeResourceInstanceSet::TryAllocate` would accept on the node).
    pub fn is_available(&self, node: NodeId, req: &Request) -> bool {
        let n = &self.nodes[node];
        n.alive && n.fits_available(req)
    }

    /// Take `req` on `node` (Ray `NodeResourceInstanceSet::TryAllocate`, all-or-nothing,
    /// `resource_instance_set.cc`). With [`Policy::TopologyAware`] whole devices are chosen
    /// under one PCIe switch / NVLink domain where possible
    /// ([`res::try_allocate_topo`]); otherwise Ray's index-order + best-fit rule.
    ///
    /// Refuses (None) a dead node, a request that does not fit, and a tenant rule violation:
    /// the node fails the tenant's `only_nodes`, or runs work of a tenant it must never share
    /// a node with.
    pub fn allocate(
        &mut self,
        node: NodeId,
        req: &Request,
        tenant: Option<usize>,
        policy: Policy,
    ) -> Option<Allocation> {
        if !self.is_available(node, req)
            || !self.tenant_allows(node, tenant)
            || !self.quota_allows(tenant, req)
        {
            return None;
        }
        let n = &mut self.nodes[node];
        let topo = n.topo.clone();
        let mut instances = Vec::new();
        let mut device_memory = Vec::new();
        let dm = req.device_memory;
        for &(id, a) in &req.amounts {
            if let Some(e) = n.instances.iter_mut().find(|e| e.0 == id) {
                let mut out = vec![0i64; e.1.len()];
                let mut mem = n.mem_free.iter_mut().find(|m| m.0 == id);
                // With device memory, allocate on the masked availabilities (instances with
                // too little free memory look used), then take the same amounts for real.
                let mut masked = Vec::new();
                let use_mask = dm > 0 && mem.is_some();
                let target: &mut [i64] = match (&mem, use_mask) {
                    (Some(m), true) => {
                        res::mask_by_memory(&e.1, &m.1, dm, &mut masked);
                        &mut masked
                    }
                    _ => &mut e.1,
                };
                let ok = if policy == Policy::TopologyAware {
                    try_allocate_topo(target, topo.devices_of(id), a, &mut out)
                } else {
                    try_allocate_ray(target, a, &mut out)
                };
                debug_assert!(ok, "checked by is_available");
                if use_mask {
                    for (k, &o) in out.iter().enumerate() {
                        if o > 0 {
                            e.1[k] -= o;
                            if let Some(m) = mem.as_mut()
                                && m.1[k] != u64::MAX
                            {
                                m.1[k] = m.1[k].saturating_sub(dm);
                                device_memory.push((id, k, dm));
                            }
                        }
                    }
                }
                instances.push((id, out));
            }
            n.available[id] -= a;
        }
        if let Some(t) = tenant
            && let Some(c) = n.tenant_occ.get_mut(t)
        {
            *c += 1;
        }
        self.rescore_available(node);
        self.quota_account(node, &req.amounts, tenant, 1);
        Some(Allocation {
            node,
            amounts: Amounts::from_slice(&req.amounts),
            instances,
            device_memory,
        })
    }

    /// Give an allocation back (Ray `NodeResourceInstanceSet::Free`).
    pub fn free(&mut self, alloc: &Allocation, tenant: Option<usize>) {
        let n = &mut self.nodes[alloc.node];
        for &(id, a) in &alloc.amounts {
            if let Some(v) = n.available.get_mut(id) {
                *v = (*v + a).min(n.total[id]);
            }
        }
        for (id, per) in &alloc.instances {
            if let Some(e) = n.instances.iter_mut().find(|e| e.0 == *id) {
                for (k, (x, y)) in e.1.iter_mut().zip(per).enumerate() {
                    if !n.dead.contains(&(*id, k)) {
                        *x = (*x + y).min(SCALE);
                    }
                }
                // Exact: what the live instances have left.
                n.available[*id] = e.1.iter().sum();
            }
        }
        for &(id, k, bytes) in &alloc.device_memory {
            let cap = n
                .topo
                .device_memory
                .iter()
                .find(|e| e.0 == id)
                .and_then(|e| e.1.get(k).copied())
                .unwrap_or(u64::MAX);
            if let Some(m) = n.mem_free.iter_mut().find(|m| m.0 == id)
                && let Some(x) = m.1.get_mut(k)
            {
                *x = x.saturating_add(bytes).min(cap);
            }
        }
        if let Some(t) = tenant
            && let Some(c) = n.tenant_occ.get_mut(t)
        {
            *c = c.saturating_sub(1);
        }
        self.rescore_available(alloc.node);
        self.quota_account(alloc.node, &alloc.amounts, tenant, -1);
    }

    // ---- TPU slices (`python/ray/_private/accelerators/tpu.py`, `ray.util.tpu`) ----
}
