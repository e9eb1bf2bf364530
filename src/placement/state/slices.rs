//! Where an allocation landed (its locality: nodes, racks, NUMA, NICs) and TPU-style slices:\n//! their hosts, whether they are intact, the bundles and label selector of a slice group.

use super::*;

impl ClusterState {
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
