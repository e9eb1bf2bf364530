//! Building the cluster's resource view from a scenario: nodes, their resources and device\n//! instances, labels, racks, zones and TPU-style slices, tenants and their rules.

use super::*;

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
            order: Default::default(),
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
        st.order = crate::placement::order::Order::unloaded(st.nodes.len());
        st.alive_non_gpu = st.nodes.iter().filter(|n| !n.has_gpu).count();
        st.plain = crate::placement::plain::PlainIndex::build(&st.nodes, n);
        st.ids = ids;
        st
    }
}
