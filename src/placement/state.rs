//! The cluster as the scheduler sees it: per-node totals, availabilities, per-device instances,
//! labels, topology and tenant occupancy, built from a validated [`Spec`].
//!
//! Why over 600 lines: not split yet (issue 43); tests/all/tidy.rs holds it at this length.

use super::resources::{
    self as res, DeviceLoc, GPU, Request, ResourceIds, SCALE, from_fixed, instances_fit, to_fixed,
    try_allocate_ray, try_allocate_topo,
};
use super::{NodeId, Policy};
use crate::scenario::Spec;
use crate::scenario::workload::LabelConstraint;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

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
        let mut highest = 0f32;
        for id in [res::CPU, res::MEMORY, res::OBJECT_STORE_MEMORY] {
            let t = self.total(id);
            if t == 0 {
                continue;
            }
            let u = (1.0 - self.available(id) as f64 / t as f64) as f32;
            if u > highest {
                highest = u;
            }
        }
        highest
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

/// The resources a task or bundle holds on a node.
#[derive(Clone, Debug)]
pub struct Allocation {
    pub node: NodeId,
    pub amounts: Vec<(usize, i64)>,
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
    pub(crate) order: BTreeSet<(u32, u32)>,
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
    /// Build the scheduler's view of the Spec's cluster. Nodes are numbered in declaration
    /// order ([`crate::scenario::Cluster::nodes`]); the head is the Spec's `head` or node 0.
    pub fn from_spec(spec: &Spec) -> ClusterState {
        let mut ids = ResourceIds::new();
        let mut st = ClusterState {
            ids: ResourceIds::new(),
            nodes: Vec::new(),
            head: 0,
            tenants: Vec::new(),
            racks: Vec::new(),
            zones: Vec::new(),
            slices: Vec::new(),
            by_name: HashMap::new(),
            spread_next: 0,
            alive_count: 0,
            alive_non_gpu: 0,
            buf_avail: Vec::new(),
            order: BTreeSet::new(),
            buf_feasible: Vec::new(),
            plain: Default::default(),
            quota_off: Vec::new(),
            quota_held: Vec::new(),
        };
        // Tenants: symmetric never-share, only_nodes selectors.
        for t in &spec.tenants {
            st.tenants.push(TenantRules {
                name: t.name.clone(),
                conflicts: Vec::new(),
                only_nodes: t.only_nodes.clone(),
                no_rdma: t.no_rdma,
                accelerators: t.accelerators.clone(),
                quota: Vec::new(),
            });
        }
        for (i, t) in spec.tenants.iter().enumerate() {
            for other in &t.never_share_node_with {
                if let Some(j) = spec.tenants.iter().position(|x| &x.name == other) {
                    if !st.tenants[i].conflicts.contains(&j) {
                        st.tenants[i].conflicts.push(j);
                    }
                    if !st.tenants[j].conflicts.contains(&i) {
                        st.tenants[j].conflicts.push(i);
                    }
                }
            }
        }
        let ntenants = st.tenants.len();
        let Some(cluster) = &spec.cluster else {
            st.intern_quotas(spec, &mut ids);
            st.ids = ids;
            return st;
        };
        st.zones = cluster.zones.clone();
        // Racks and slices.
        let mut slice_of_rack = vec![None; cluster.racks.len()];
        for (ri, r) in cluster.racks.iter().enumerate() {
            if let Some(shape) = &r.slice {
                let si = st.slices.len();
                slice_of_rack[ri] = Some(si);
                let nt_name = cluster
                    .groups
                    .iter()
                    .find(|g| g.rack == ri)
                    .map(|g| g.node_type.as_str())
                    .unwrap_or("");
                let acc_type = spec
                    .node_types
                    .get(nt_name)
                    .and_then(|nt| nt.devices.first())
                    .and_then(|g| spec.accelerators.get(&g.accelerator))
                    .map(|a| a.accelerator_type.clone())
                    .unwrap_or_default();
                let pod_type = tpu_pod_type(&acc_type, shape.chips);
                st.slices.push(SliceInfo {
                    name: r.name.clone(),
                    rack: ri,
                    hosts: Vec::new(),
                    chips: shape.chips,
                    chips_per_host: shape.chips / u64::from(shape.hosts.max(1)),
                    topology: shape
                        .dims
                        .iter()
                        .map(|d| d.to_string())
                        .collect::<Vec<_>>()
                        .join("x"),
                    head_resource: format!("TPU-{pod_type}-head"),
                    pod_type,
                });
            }
            st.racks.push((r.name.clone(), r.zone, slice_of_rack[ri]));
        }
        // Per node type: resources, topology, default labels.
        struct TypeInfo {
            resources: Vec<(usize, i64)>,
            topo: Arc<Topology>,
            labels: BTreeMap<String, String>,
            accel_type: Option<String>,
            scale_up: bool,
            rack_domain: bool,
        }
        let mut types: HashMap<String, TypeInfo> = HashMap::new();
        for (name, nt) in &spec.node_types {
            let rmap = crate::scenario::load::node_resources(spec, nt);
            let mut resources: Vec<(usize, i64)> = rmap
                .iter()
                .map(|(k, v)| (ids.get_or_insert(k), to_fixed(*v)))
                .filter(|e| e.1 > 0)
                .collect();
            // Unit-instance totals are whole instances (Ray floors the instance count).
            for e in resources.iter_mut() {
                if ids.is_unit_instance(e.0) && e.1 >= SCALE {
                    e.1 = e.1 / SCALE * SCALE;
                }
            }
            resources.sort_by_key(|e| e.0);
            let mut topo = Topology {
                numa_nodes: nt.cpu.numa.max(1),
                switches: nt.switches.len(),
                ..Topology::default()
            };
            let mut domain = 0usize;
            let mut per_res: BTreeMap<usize, Vec<DeviceLoc>> = BTreeMap::new();
            let mut per_mem: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
            for g in &nt.devices {
                let Some(acc) = spec.accelerators.get(&g.accelerator) else {
                    continue;
                };
                if !topo.accelerators.contains(&g.accelerator) {
                    topo.accelerators.push(g.accelerator.clone());
                }
                let rid = ids.get_or_insert(&acc.ray_resource);
                per_mem
                    .entry(rid)
                    .or_default()
                    .extend(std::iter::repeat_n(acc.memory.0, g.count as usize));
                let group_domain = domain;
                if g.link != "none" {
                    domain += 1;
                }
                for k in 0..g.count as usize {
                    let at = g.at.get(k).copied();
                    let d = if g.link == "none" {
                        domain += 1;
                        domain - 1
                    } else {
                        group_domain
                    };
                    per_res.entry(rid).or_default().push(DeviceLoc {
                        numa: at.map(|a| a.numa).unwrap_or(0),
                        switch: at.and_then(|a| a.switch),
                        domain: d,
                    });
                }
            }
            for &(rid, amt) in &resources {
                if ids.is_unit_instance(rid) && amt >= SCALE {
                    let n = (amt / SCALE) as usize;
                    let v = per_res.entry(rid).or_default();
                    while v.len() < n {
                        domain += 1;
                        v.push(DeviceLoc {
                            numa: 0,
                            switch: None,
                            domain: domain + 1_000_000,
                        });
                    }
                    v.truncate(n);
                    let m = per_mem.entry(rid).or_default();
                    m.resize(n, u64::MAX);
                }
            }
            topo.devices = per_res
                .into_iter()
                .filter(|(rid, _)| resources.iter().any(|e| e.0 == *rid))
                .collect();
            topo.device_memory = topo
                .devices
                .iter()
                .map(|(rid, locs)| {
                    let mut m = per_mem.remove(rid).unwrap_or_default();
                    m.resize(locs.len(), u64::MAX);
                    (*rid, m)
                })
                .collect();
            for g in &nt.nics {
                for k in 0..g.count as usize {
                    let at = g.at.get(k).copied();
                    topo.nics.push(NicLoc {
                        nic: g.nic.clone(),
                        role: g.role.clone(),
                        numa: at.map(|a| a.numa).unwrap_or(0),
                        switch: at.and_then(|a| a.switch),
                    });
                }
            }
            let scale_up = nt.devices.iter().any(|g| g.link != "none");
            let accel_type = nt
                .devices
                .first()
                .and_then(|g| spec.accelerators.get(&g.accelerator))
                .map(|a| a.accelerator_type.clone());
            types.insert(
                name.clone(),
                TypeInfo {
                    resources,
                    topo: Arc::new(topo),
                    labels: nt.labels.clone(),
                    accel_type,
                    scale_up,
                    rack_domain: nt.rack_domain.is_some(),
                },
            );
        }
        // Nodes.
        let mut worker_idx = vec![0usize; cluster.racks.len()];
        for nr in cluster.nodes() {
            let id = st.nodes.len();
            let ti = &types[nr.node_type];
            let mut labels = ti.labels.clone();
            labels.insert(LABEL_NODE_ID.into(), nr.name.clone());
            if let Some(a) = &ti.accel_type {
                labels
                    .entry(LABEL_ACCELERATOR_TYPE.into())
                    .or_insert_with(|| a.clone());
            }
            let zone = cluster.racks[nr.rack].zone;
            if let Some(z) = zone {
                labels
                    .entry(LABEL_ZONE.into())
                    .or_insert_with(|| cluster.zones[z].clone());
            }
            let rack_name = &cluster.racks[nr.rack].name;
            if !rack_name.is_empty() {
                labels
                    .entry(LABEL_RACK.into())
                    .or_insert_with(|| rack_name.clone());
            }
            let mut resources = ti.resources.clone();
            let slice = slice_of_rack[nr.rack];
            let domain = match slice {
                Some(si) => Some(st.slices[si].name.clone()),
                // A rack-scale NVSwitch domain: one per rack and node type (`network::graph`).
                None if ti.rack_domain => Some(if rack_name.is_empty() {
                    format!("rack{}", nr.rack)
                } else {
                    rack_name.clone()
                }),
                None => ti.scale_up.then(|| nr.name.clone()),
            };
            if let Some(d) = domain {
                labels.entry(LABEL_GPU_DOMAIN.into()).or_insert(d);
            }
            if let Some(si) = slice {
                let w = worker_idx[nr.rack];
                worker_idx[nr.rack] += 1;
                let s = &mut st.slices[si];
                s.hosts.push(id);
                labels.insert(LABEL_TPU_SLICE_NAME.into(), s.name.clone());
                labels.insert(LABEL_TPU_WORKER_ID.into(), w.to_string());
                labels.insert(LABEL_TPU_TOPOLOGY.into(), s.topology.clone());
                labels.insert(LABEL_TPU_POD_TYPE.into(), s.pod_type.clone());
                resources.push((ids.get_or_insert(&s.name), SCALE));
                if w == 0 {
                    resources.push((ids.get_or_insert(&s.head_resource), SCALE));
                }
                resources = Request::from_amounts(resources).amounts;
            }
            let mut total = vec![0i64; ids.len()];
            for &(rid, a) in &resources {
                total[rid] = a;
            }
            let instances = ti
                .topo
                .devices
                .iter()
                .map(|(rid, locs)| (*rid, vec![SCALE; locs.len()]))
                .collect();
            let mem_free = ti.topo.device_memory.clone();
            st.by_name.insert(nr.name.clone(), id);
            st.nodes.push(NodeState {
                name: nr.name,
                node_type: nr.node_type.to_string(),
                rack: nr.rack,
                zone,
                slice,
                labels,
                alive: true,
                has_gpu: total.get(GPU).copied().unwrap_or(0) > 0,
                available: total.clone(),
                total,
                instances,
                mem_free,
                topo: ti.topo.clone(),
                tenant_occ: vec![0; ntenants],
                quota_held: Vec::new(),
                util: 0.0,
                dead: Vec::new(),
            });
        }
        // Quota resources are interned last, so they never renumber the nodes' resources.
        st.intern_quotas(spec, &mut ids);
        let n = ids.len();
        let nq = st.quota_held.len();
        for node in &mut st.nodes {
            node.total.resize(n, 0);
            node.available.resize(n, 0);
            node.quota_held = vec![0; nq];
        }
        st.head = cluster
            .head
            .as_ref()
            .and_then(|h| st.by_name.get(h).copied())
            .unwrap_or(0);
        st.alive_count = st.nodes.len();
        st.order = (0..st.nodes.len())
            .map(|i| (score_key(0.0), i as u32))
            .collect();
        st.alive_non_gpu = st.nodes.iter().filter(|n| !n.has_gpu).count();
        st.plain = super::plain::PlainIndex::build(&st.nodes, n);
        st.ids = ids;
        st
    }

    /// The tenants' quotas as resource ids, and the flat tables that count what they hold.
    fn intern_quotas(&mut self, spec: &Spec, ids: &mut ResourceIds) {
        let mut off = 0;
        for (t, rules) in spec.tenants.iter().zip(self.tenants.iter_mut()) {
            rules.quota = Request::from_amounts(
                t.quota
                    .iter()
                    .map(|(k, v)| (ids.get_or_insert(k), to_fixed(*v)))
                    .collect(),
            )
            .amounts;
            // `from_amounts` drops zero amounts; a zero quota still forbids that resource.
            for (k, v) in &t.quota {
                let id = ids.get_or_insert(k);
                if to_fixed(*v) <= 0 && !rules.quota.iter().any(|e| e.0 == id) {
                    rules.quota.push((id, 0));
                }
            }
            rules.quota.sort_by_key(|e| e.0);
            self.quota_off.push(off);
            off += rules.quota.len();
        }
        self.quota_held = vec![0; off];
    }

    /// Add (`sign` 1) or remove (-1) what an allocation of `amounts` by `tenant` holds on
    /// `node` to the quota tables; the cluster table only counts alive nodes.
    fn quota_account(
        &mut self,
        node: NodeId,
        amounts: &[(usize, i64)],
        tenant: Option<usize>,
        sign: i64,
    ) {
        let Some(t) = tenant else { return };
        let Some(rules) = self.tenants.get(t) else {
            return;
        };
        let off = self.quota_off[t];
        let n = &mut self.nodes[node];
        // Amounts are a request's, sorted by id: each quota resource is found by binary
        // search, not a scan (quotas and requests of 20,000 custom resources spent minutes
        // here, issue 42).
        debug_assert!(amounts.windows(2).all(|w| w[0].0 < w[1].0));
        for (k, &(id, _)) in rules.quota.iter().enumerate() {
            let a = amounts
                .binary_search_by_key(&id, |e| e.0)
                .map(|i| amounts[i].1)
                .unwrap_or(0);
            if a == 0 {
                continue;
            }
            let held = &mut n.quota_held[off + k];
            // Never below zero: a free after a reset of the node gives back nothing.
            let d = if sign > 0 { a } else { -a.min(*held) };
            *held += d;
            if n.alive {
                self.quota_held[off + k] += d;
            }
        }
    }

    /// What tenant `tenant` holds now, on alive nodes, of `resource` (an id); tracked only
    /// for resources its quota names (0 otherwise).
    pub fn tenant_held(&self, tenant: usize, resource: usize) -> i64 {
        let Some(rules) = self.tenants.get(tenant) else {
            return 0;
        };
        rules
            .quota
            .iter()
            .position(|e| e.0 == resource)
            .map(|k| self.quota_held[self.quota_off[tenant] + k])
            .unwrap_or(0)
    }

    pub(crate) fn fmt_amount(&self, id: usize, a: i64) -> String {
        if id == res::MEMORY || id == res::OBJECT_STORE_MEMORY {
            crate::units::Bytes(from_fixed(a).max(0.0) as u64).to_string()
        } else {
            crate::units::sig3(from_fixed(a))
        }
    }

    /// Whether `tenant` may take `r` now without holding more than its quota of any resource
    /// (what it holds on alive nodes plus `r`). No tenant, or no quota: always.
    pub fn quota_allows(&self, tenant: Option<usize>, r: &Request) -> bool {
        let Some(t) = tenant else { return true };
        let Some(rules) = self.tenants.get(t) else {
            return true;
        };
        let off = self.quota_off[t];
        rules
            .quota
            .iter()
            .enumerate()
            .all(|(k, &(id, q))| r.get(id) == 0 || self.quota_held[off + k] + r.get(id) <= q)
    }

    /// Which quota keeps `tenant` from taking `r` now, if one does: `tenant `a` quota GPU:
    /// holds 2, requests 1, quota 2` (the first such resource in id order).
    pub fn quota_blocked_by(&self, tenant: Option<usize>, r: &Request) -> Option<String> {
        let t = tenant?;
        let rules = self.tenants.get(t)?;
        let off = self.quota_off[t];
        rules.quota.iter().enumerate().find_map(|(k, &(id, q))| {
            let want = r.get(id);
            let held = self.quota_held[off + k];
            (want > 0 && held + want > q).then(|| {
                format!(
                    "tenant `{}` quota {}: holds {}, requests {}, quota {}",
                    rules.name,
                    self.ids.name(id),
                    self.fmt_amount(id, held),
                    self.fmt_amount(id, want),
                    self.fmt_amount(id, q)
                )
            })
        })
    }

    /// Whether `r` alone is more than `tenant`'s quota of some resource (it could never be
    /// placed): `tenant `a` quota GPU: requests 4, more than the quota 2`.
    pub fn quota_exceeded_by(&self, tenant: Option<usize>, r: &Request) -> Option<String> {
        let rules = self.tenants.get(tenant?)?;
        rules.quota.iter().find_map(|&(id, q)| {
            let want = r.get(id);
            (want > q).then(|| {
                format!(
                    "tenant `{}` quota {}: requests {}, more than the quota {}",
                    rules.name,
                    self.ids.name(id),
                    self.fmt_amount(id, want),
                    self.fmt_amount(id, q)
                )
            })
        })
    }

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
        let old = n.util;
        n.util = n.compute_utilization();
        let new = n.util;
        self.reorder(node, old, new);
        self.plain.refresh(node, &self.nodes[node]);
        self.quota_account(node, &req.amounts, tenant, 1);
        Some(Allocation {
            node,
            amounts: req.amounts.clone(),
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
        let old = n.util;
        n.util = n.compute_utilization();
        let new = n.util;
        self.reorder(alloc.node, old, new);
        self.plain.refresh(alloc.node, &self.nodes[alloc.node]);
        self.quota_account(alloc.node, &alloc.amounts, tenant, -1);
    }

    /// Move a node in [`ClusterState::order`] after its utilization changed.
    fn reorder(&mut self, node: NodeId, old: f32, new: f32) {
        let (a, b) = (score_key(old), score_key(new));
        if a != b && self.nodes[node].alive && self.order.remove(&(a, node as u32)) {
            self.order.insert((b, node as u32));
        }
    }

    /// Mark a node dead or alive. Dead nodes are never feasible (Ray removes them from the
    /// scheduler's view). Allocations on a dead node are the engine's to free (or [`reset`]).
    ///
    /// [`reset`]: ClusterState::reset
    pub fn set_alive(&mut self, node: NodeId, alive: bool) {
        let n = &mut self.nodes[node];
        if n.alive == alive {
            return;
        }
        n.alive = alive;
        self.plain.refresh(node, &self.nodes[node]);
        let n = &self.nodes[node];
        let key = (score_key(n.util), node as u32);
        if alive {
            self.order.insert(key);
        } else {
            self.order.remove(&key);
        }
        let n = &self.nodes[node];
        let q: i64 = if alive { 1 } else { -1 };
        for (k, held) in n.quota_held.iter().enumerate() {
            self.quota_held[k] += q * held;
        }
        let n = &self.nodes[node];
        let d: isize = if alive { 1 } else { -1 };
        self.alive_count = (self.alive_count as isize + d) as usize;
        if !n.has_gpu {
            self.alive_non_gpu = (self.alive_non_gpu as isize + d) as usize;
        }
    }

    /// Forget everything allocated on a node (a node that comes back after a failure starts
    /// empty, as a fresh raylet does).
    pub fn reset(&mut self, node: NodeId) {
        let n = &mut self.nodes[node];
        n.available.clone_from(&n.total);
        n.mem_free.clone_from(&n.topo.device_memory);
        for e in &mut n.instances {
            for (k, x) in e.1.iter_mut().enumerate() {
                *x = if n.dead.contains(&(e.0, k)) { 0 } else { SCALE };
            }
        }
        n.tenant_occ.iter_mut().for_each(|c| *c = 0);
        if n.alive {
            for (k, held) in n.quota_held.iter().enumerate() {
                self.quota_held[k] -= held;
            }
        }
        let n = &mut self.nodes[node];
        n.quota_held.iter_mut().for_each(|h| *h = 0);
        let old = n.util;
        n.util = 0.0;
        self.reorder(node, old, 0.0);
        self.plain.refresh(node, &self.nodes[node]);
    }

    /// The (resource id, instance) of a node's `device`-th device, counting the node type's
    /// devices in declaration order (the `<node>.d<i>` names of failure targets).
    pub fn device_instance(&self, node: NodeId, device: usize) -> Option<(usize, usize)> {
        let mut i = device;
        for (id, locs) in &self.nodes[node].topo.devices {
            if i < locs.len() {
                return Some((*id, i));
            }
            i -= locs.len();
        }
        None
    }

    /// Take a device out of service (a GPU-level fault such as an Xid): its instance holds
    /// nothing from now on and the node's total shrinks, so requests that need it become
    /// infeasible there. Whoever used it is the engine's to evict (their frees skip it).
    /// Returns the (resource id, instance), or `None` if unknown or already out.
    pub fn fail_device(&mut self, node: NodeId, device: usize) -> Option<(usize, usize)> {
        let (id, k) = self.device_instance(node, device)?;
        let n = &mut self.nodes[node];
        if n.dead.contains(&(id, k)) {
            return None;
        }
        n.dead.push((id, k));
        n.total[id] -= SCALE;
        if let Some(e) = n.instances.iter_mut().find(|e| e.0 == id) {
            e.1[k] = 0;
            n.available[id] = e.1.iter().sum();
        }
        let old = n.util;
        n.util = n.compute_utilization();
        let new = n.util;
        self.reorder(node, old, new);
        self.plain.refresh(node, &self.nodes[node]);
        Some((id, k))
    }

    /// Put a repaired device back in service (empty).
    pub fn repair_device(&mut self, node: NodeId, device: usize) -> bool {
        let Some((id, k)) = self.device_instance(node, device) else {
            return false;
        };
        let n = &mut self.nodes[node];
        let Some(pos) = n.dead.iter().position(|d| *d == (id, k)) else {
            return false;
        };
        n.dead.swap_remove(pos);
        n.total[id] += SCALE;
        let cap = n
            .topo
            .device_memory
            .iter()
            .find(|e| e.0 == id)
            .and_then(|e| e.1.get(k).copied());
        if let (Some(m), Some(c)) = (n.mem_free.iter_mut().find(|m| m.0 == id), cap)
            && let Some(x) = m.1.get_mut(k)
        {
            *x = c;
        }
        if let Some(e) = n.instances.iter_mut().find(|e| e.0 == id) {
            e.1[k] = SCALE;
            n.available[id] = e.1.iter().sum();
        }
        let old = n.util;
        n.util = n.compute_utilization();
        let new = n.util;
        self.reorder(node, old, new);
        self.plain.refresh(node, &self.nodes[node]);
        true
    }

    pub fn tenant_index(&self, name: &str) -> Option<usize> {
        self.tenants.iter().position(|t| t.name == name)
    }

    /// Tenant `only_nodes` and `accelerators` pass (the static part of the tenant rules).
    pub fn tenant_static_ok(&self, node: NodeId, tenant: Option<usize>) -> bool {
        match tenant.and_then(|t| self.tenants.get(t)) {
            Some(t) => {
                let n = &self.nodes[node];
                t.only_nodes.iter().all(|c| c.matches(&n.labels))
                    && t.accelerators
                        .as_ref()
                        .is_none_or(|allowed| accelerators_ok(n, allowed))
            }
            None => true,
        }
    }

    /// Why the static tenant rules exclude `node` for `tenant` (`None`: they pass), as
    /// `explain` shows it: `tenant `t` only_nodes KEY = VALUE` or
    /// `tenant `t` accelerators [H100_SXM]: node has L4`.
    pub fn tenant_static_reason(&self, node: NodeId, tenant: Option<usize>) -> Option<String> {
        let t = self.tenants.get(tenant?)?;
        let n = &self.nodes[node];
        if let Some(c) = t.only_nodes.iter().find(|c| !c.matches(&n.labels)) {
            return Some(format!(
                "tenant `{}` only_nodes {}",
                t.name,
                super::explain::describe_constraint(c)
            ));
        }
        let allowed = t.accelerators.as_ref()?;
        if accelerators_ok(n, allowed) {
            return None;
        }
        let has = if n.topo.accelerators.is_empty() {
            "devices of no declared accelerator kind".to_string()
        } else {
            n.topo.accelerators.join(", ")
        };
        Some(format!(
            "tenant `{}` accelerators [{}]: node has {has}",
            t.name,
            allowed.join(", ")
        ))
    }

    /// A tenant this one may not share a node with that currently has work on `node`.
    pub fn tenant_conflict(&self, node: NodeId, tenant: Option<usize>) -> Option<usize> {
        let t = self.tenants.get(tenant?)?;
        let n = &self.nodes[node];
        t.conflicts.iter().copied().find(|&c| n.tenant_count(c) > 0)
    }

    /// Both tenant rules pass for `tenant` on `node` now.
    pub fn tenant_allows(&self, node: NodeId, tenant: Option<usize>) -> bool {
        self.tenant_static_ok(node, tenant) && self.tenant_conflict(node, tenant).is_none()
    }

    /// The node is alive and both tenant rules pass for `tenant` there now (what a task
    /// queued at the node needs before it may start; resources aside).
    pub fn is_alive_and_allowed(&self, node: NodeId, tenant: Option<usize>) -> bool {
        self.nodes[node].alive && self.tenant_allows(node, tenant)
    }

    /// Where an allocation's devices sit.
    pub fn locality(&self, alloc: &Allocation) -> AllocLocality {
        let n = &self.nodes[alloc.node];
        let mut switches: Vec<usize> = Vec::new();
        let mut numas: Vec<u32> = Vec::new();
        let mut domains: Vec<usize> = Vec::new();
        let mut devices = 0;
        for (id, per) in &alloc.instances {
            let locs = n.topo.devices_of(*id);
            for (i, &a) in per.iter().enumerate() {
                if a <= 0 {
                    continue;
                }
                devices += 1;
                if let Some(l) = locs.get(i) {
                    if let Some(s) = l.switch
                        && !switches.contains(&s)
                    {
                        switches.push(s);
                    }
                    if !numas.contains(&l.numa) {
                        numas.push(l.numa);
                    }
                    if !domains.contains(&l.domain) {
                        domains.push(l.domain);
                    }
                }
            }
        }
        let local_nics = n
            .topo
            .nics
            .iter()
            .enumerate()
            .filter(|(_, nic)| {
                nic.role == "compute" && nic.switch.is_some_and(|s| switches.contains(&s))
            })
            .map(|(i, _)| i)
            .collect();
        AllocLocality {
            node: alloc.node,
            rack: n.rack,
            devices,
            switches: switches.len(),
            numa_nodes: numas.len(),
            link_domains: domains.len(),
            cpu_numa: if numas.len() == 1 {
                Some(numas[0])
            } else {
                None
            },
            local_nics,
        }
    }

    /// Distinct racks among `nodes`.
    pub fn racks_spanned(&self, nodes: &[NodeId]) -> usize {
        let mut r: Vec<usize> = nodes.iter().map(|&n| self.nodes[n].rack).collect();
        r.sort_unstable();
        r.dedup();
        r.len()
    }

    /// Distinct slices among `nodes` (nodes outside slices not counted).
    pub fn slices_spanned(&self, nodes: &[NodeId]) -> usize {
        let mut r: Vec<usize> = nodes.iter().filter_map(|&n| self.nodes[n].slice).collect();
        r.sort_unstable();
        r.dedup();
        r.len()
    }

    // ---- TPU slices (`python/ray/_private/accelerators/tpu.py`, `ray.util.tpu`) ----

    pub fn slices(&self) -> usize {
        self.slices.len()
    }

    pub fn slice_info(&self, slice: usize) -> &SliceInfo {
        &self.slices[slice]
    }

    pub fn slice_index(&self, name: &str) -> Option<usize> {
        self.slices.iter().position(|s| s.name == name)
    }

    /// The slice's hosts, worker 0 first.
    pub fn slice_hosts(&self, slice: usize) -> Vec<NodeId> {
        self.slices[slice].hosts.clone()
    }

    /// A slice is intact only if all its hosts (worker 0 included) are alive.
    pub fn slice_intact(&self, slice: usize) -> bool {
        self.slices[slice]
            .hosts
            .iter()
            .all(|&h| self.nodes[h].alive)
    }

    /// Ray's gang reservation of a slice, as one bundle list: `[{TPU-<pod type>-head: 1},
    /// {TPU: chips per host, CPU: 1} x hosts]`. Ray makes it two groups (`reserve_tpu_slice`:
    /// the head bundle, selected by `ray.io/tpu-worker-id = 0`; then the per-host bundles
    /// pinned by [`slice_selector`]); as one group it places with `PACK` (the head bundle
    /// sorts first, being a custom resource, and only worker 0 holds it) or `SPREAD`, each
    /// with [`slice_selector`] as the label selector.
    ///
    /// [`slice_selector`]: ClusterState::slice_selector
    pub fn slice_bundles(&self, slice: usize) -> Vec<Request> {
        let s = &self.slices[slice];
        let mut out = Vec::with_capacity(s.hosts.len() + 1);
        let head = self
            .ids
            .id(&s.head_resource)
            .expect("interned in from_spec");
        out.push(Request::from_amounts(vec![(head, SCALE)]));
        let tpu = self.ids.id("TPU");
        for _ in &s.hosts {
            let mut v = vec![(res::CPU, SCALE)];
            if let Some(t) = tpu {
                v.push((t, s.chips_per_host as i64 * SCALE));
            }
            out.push(Request::from_amounts(v));
        }
        out
    }

    /// `{ray.io/tpu-slice-name: <slice>}`.
    pub fn slice_selector(&self, slice: usize) -> Vec<LabelConstraint> {
        vec![LabelConstraint {
            key: LABEL_TPU_SLICE_NAME.into(),
            op: crate::scenario::workload::LabelOp::Equals(self.slices[slice].name.clone()),
        }]
    }
}
