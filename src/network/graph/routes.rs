//! Routes over the link graph: shortest paths (BFS) inside a node, ECMP over the fabric by a\n//! flow key, dimension-order routing on slice tori, and which NIC serves a device.

use super::*;

impl Graph {
    /// Dimension-ordered route between two chips of the same slice.
    pub(super) fn ici_route(
        &self,
        s: usize,
        src: (usize, usize),
        dst: (usize, usize),
    ) -> Option<Vec<LinkId>> {
        let layout = &self.slices[s];
        let index = |(node, dev): (usize, usize)| {
            let (_, host) = self.slice_of[node]?;
            Some(host * layout.per_host + dev)
        };
        let (a, b) = (index(src)?, index(dst)?);
        let mut cur = self.coords(layout, a);
        let want = self.coords(layout, b);
        let mut path = Vec::new();
        for d in 0..layout.dims.len() {
            let n = layout.dims[d];
            while cur[d] != want[d] {
                let fwd = (want[d] + n - cur[d]) % n;
                let mut next = cur.clone();
                next[d] = if fwd <= n - fwd || n <= 2 {
                    (cur[d] + 1) % n
                } else {
                    (cur[d] + n - 1) % n
                };
                let (u, v) = (
                    self.chip(layout, self.chip_index(layout, &cur)),
                    self.chip(layout, self.chip_index(layout, &next)),
                );
                path.push(self.link_between(u, v)?);
                cur = next;
            }
        }
        Some(path)
    }

    /// The directed link from `a` to `b`, if they are adjacent.
    pub fn link_between(&self, a: Vertex, b: Vertex) -> Option<LinkId> {
        self.out
            .get(&a)?
            .iter()
            .copied()
            .find(|l| self.ends[*l].1 == b)
    }

    /// The node a vertex belongs to (none for leaves, spines, the core and fabric storage; a
    /// local drive belongs to its node).
    pub fn node_of(v: Vertex) -> Option<usize> {
        match v {
            Vertex::Root { node, .. }
            | Vertex::Switch { node, .. }
            | Vertex::Device { node, .. }
            | Vertex::Nic { node, .. }
            | Vertex::NvSwitch { node }
            | Vertex::Disk { node, .. } => Some(node),
            Vertex::Leaf { .. }
            | Vertex::Spine { .. }
            | Vertex::Core
            | Vertex::Fabric { .. }
            | Vertex::Storage { .. } => None,
        }
    }

    /// Shortest path (fewest hops) from `a` to `b` through vertices of `a`'s node only,
    /// breadth-first in link order: deterministic.
    pub(super) fn bfs(&self, a: Vertex, b: Vertex) -> Option<Vec<LinkId>> {
        if a == b {
            return Some(Vec::new());
        }
        let node = Self::node_of(a);
        let mut prev: std::collections::BTreeMap<Vertex, LinkId> =
            std::collections::BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([a]);
        let mut seen = std::collections::BTreeSet::from([a]);
        while let Some(v) = queue.pop_front() {
            if v == b {
                let mut path = Vec::new();
                let mut cur = b;
                while cur != a {
                    let l = prev[&cur];
                    path.push(l);
                    cur = self.ends[l].0;
                }
                path.reverse();
                return Some(path);
            }
            for &l in self.out.get(&v).map(Vec::as_slice).unwrap_or(&[]) {
                let w = self.ends[l].1;
                if Self::node_of(w) != node || !seen.insert(w) {
                    continue;
                }
                prev.insert(w, l);
                queue.push_back(w);
            }
        }
        None
    }

    /// The route of a transfer between two devices (`node`, `device`), the spine picked by
    /// ECMP on `key`. Inside a node: the scale-up fabric first (what NCCL picks), else PCIe;
    /// inside a slice: the ICI torus; between nodes, see [`Graph::route_vertices`].
    pub fn route(&self, src: (usize, usize), dst: (usize, usize), key: u64) -> Option<Vec<LinkId>> {
        let dev = |(node, device): (usize, usize)| Vertex::Device { node, device };
        let (sv, dv) = (dev(src), dev(dst));
        if src == dst {
            return Some(Vec::new());
        }
        if let (Some((a, _)), Some((b, _))) = (
            self.slice_of.get(src.0).copied().flatten(),
            self.slice_of.get(dst.0).copied().flatten(),
        ) && a == b
        {
            return self.ici_route(a, src, dst);
        }
        let nvs = self.nvswitch(src.0);
        if (src.0 == dst.0 || nvs == self.nvswitch(dst.0))
            && let (Some(a), Some(b)) = (self.link_between(sv, nvs), self.link_between(nvs, dv))
        {
            return Some(vec![a, b]);
        }
        if src.0 == dst.0 {
            if let Some(l) = self.link_between(sv, dv) {
                return Some(vec![l]);
            }
            return self.bfs(sv, dv);
        }
        self.route_vertices(sv, dv, key)
    }

    /// The route between any two vertices of nodes (devices, host memory `Root`s, NICs, PCIe
    /// switches). Between nodes it leaves through the compute NIC closest to `a` (same PCIe
    /// switch, else same NUMA domain, else the first) — or, in a rail-optimized fabric, through
    /// the NIC on the destination NIC's rail, reached over the scale-up fabric (PXN) — and
    /// enters through the NIC closest to `b`; leaves meet through the spine ECMP picks by `key`.
    pub fn route_vertices(&self, a: Vertex, b: Vertex, key: u64) -> Option<Vec<LinkId>> {
        let (na, nb) = (Self::node_of(a)?, Self::node_of(b)?);
        if na == nb {
            if let (Vertex::Device { device: x, .. }, Vertex::Device { device: y, .. }) = (a, b) {
                return self.route((na, x), (nb, y), key);
            }
            return self.bfs(a, b);
        }
        let mut dn = self.nic_near(b)?;
        let mut sn = self.nic_near(a)?;
        let mut path = Vec::new();
        let mut start = a;
        if self.rail_optimized
            && sn.rail != dn.rail
            && let Vertex::Device { device, .. } = a
            && let Some(on_rail) = self.nics[na].iter().find(|n| n.rail == dn.rail)
            && let Some(peer) = self.device_near_nic(na, on_rail)
            && let Some(hop) = self.route((na, device), (na, peer), key)
            && hop.iter().all(|l| self.kind[*l] == LinkKind::ScaleUp)
        {
            path = hop;
            start = Vertex::Device {
                node: na,
                device: peer,
            };
            sn = *on_rail;
        }
        let (snic, dnic) = (
            Vertex::Nic {
                node: na,
                nic: sn.nic,
            },
            Vertex::Nic {
                node: nb,
                nic: dn.nic,
            },
        );
        path.extend(self.bfs(start, snic)?);
        if self.explicit.is_some() {
            let port = |n: Vertex| {
                self.out
                    .get(&n)?
                    .iter()
                    .find_map(|&l| match self.ends[l].1 {
                        Vertex::Fabric { switch } => Some((l, switch)),
                        _ => None,
                    })
            };
            let (up, sa) = port(snic)?;
            let mut sb = port(dnic)?.1;
            // Separate planes (`rails`): enter the destination on the source's rail.
            if !self.switch_reaches(sa, sb)
                && let Some(same) = self.nics[nb].iter().find(|n| n.rail == sn.rail)
            {
                dn = *same;
                let v = Vertex::Nic {
                    node: nb,
                    nic: dn.nic,
                };
                sb = port(v)?.1;
            }
            let dnic = Vertex::Nic {
                node: nb,
                nic: dn.nic,
            };
            path.push(up);
            path.extend(self.switch_path(sa, sb, key)?);
            path.push(self.link_between(Vertex::Fabric { switch: sb }, dnic)?);
            path.extend(self.bfs(dnic, b)?);
            return Some(path);
        }
        let (sl, dl) = (
            Vertex::Leaf {
                rack: self.node_rack[na],
                rail: sn.rail,
            },
            Vertex::Leaf {
                rack: self.node_rack[nb],
                rail: dn.rail,
            },
        );
        path.push(self.link_between(snic, sl)?);
        if sl != dl {
            let spine = (key % self.spines.max(1) as u64) as usize;
            let (za, zb) = (
                self.rack_zone[self.node_rack[na]],
                self.rack_zone[self.node_rack[nb]],
            );
            let (sa, sb) = (
                Vertex::Spine { zone: za, spine },
                Vertex::Spine { zone: zb, spine },
            );
            path.push(self.link_between(sl, sa)?);
            if za != zb {
                path.push(self.link_between(sa, Vertex::Core)?);
                path.push(self.link_between(Vertex::Core, sb)?);
            }
            path.push(self.link_between(sb, dl)?);
        }
        path.push(self.link_between(dl, dnic)?);
        path.extend(self.bfs(dnic, b)?);
        Some(path)
    }

    /// A device of `node` whose closest NIC is `nic` (the lowest-numbered one).
    pub(super) fn device_near_nic(&self, node: usize, nic: &NicAt) -> Option<usize> {
        (0..)
            .map_while(|d| {
                let v = Vertex::Device { node, device: d };
                self.out.contains_key(&v).then_some(d)
            })
            .find(|d| {
                self.nic_near(Vertex::Device { node, device: *d })
                    .is_some_and(|n| n.nic == nic.nic)
            })
    }

    /// The PCIe switch and NUMA domain a vertex hangs from.
    pub(super) fn attachment(&self, v: Vertex) -> (Option<usize>, Option<u32>) {
        let numa_of = |node: usize, switch: usize| {
            self.switch_numa
                .get(node)
                .and_then(|s| s.get(switch))
                .copied()
        };
        match v {
            Vertex::Root { numa, .. } => (None, Some(numa)),
            Vertex::Switch { node, switch } => (Some(switch), numa_of(node, switch)),
            _ => {
                let up = self
                    .out
                    .get(&v)
                    .and_then(|ls| ls.iter().find(|l| self.kind[**l] == LinkKind::Pcie))
                    .map(|l| self.ends[*l].1);
                match up {
                    Some(Vertex::Switch { node, switch }) => (Some(switch), numa_of(node, switch)),
                    Some(Vertex::Root { numa, .. }) => (None, Some(numa)),
                    _ => (None, None),
                }
            }
        }
    }

    /// The compute NIC closest to a vertex of a node: the vertex itself if it is one, else one
    /// under the same PCIe switch, else in the same NUMA domain, else the node's first.
    pub(super) fn nic_near(&self, v: Vertex) -> Option<NicAt> {
        let node = Self::node_of(v)?;
        let nics = self.nics.get(node)?;
        if let Vertex::Nic { nic, .. } = v
            && let Some(n) = nics.iter().find(|n| n.nic == nic)
        {
            return Some(*n);
        }
        let (switch, numa) = self.attachment(v);
        // The nearest NICs: under the same PCIe switch, else in the same NUMA domain, else all.
        // Several devices share them in turn (a DGX's GPU k uses NIC k; a TPU host's 4 chips
        // alternate over its 2 NICs), as NCCL spreads ranks over the NICs closest to them.
        let under_switch: Vec<&NicAt> = nics
            .iter()
            .filter(|n| switch.is_some() && n.switch == switch)
            .collect();
        let (near, by_switch): (Vec<&NicAt>, bool) = if !under_switch.is_empty() {
            (under_switch, true)
        } else {
            let in_numa: Vec<&NicAt> = nics
                .iter()
                .filter(|n| numa.is_some() && Some(n.numa) == numa)
                .collect();
            if in_numa.is_empty() {
                (nics.iter().collect(), false)
            } else {
                (in_numa, false)
            }
        };
        // The device's rank among the node's devices attached the same way.
        let rank = match v {
            Vertex::Device { device, .. } => (0..device)
                .filter(|d| {
                    let (sw, nu) = self.attachment(Vertex::Device { node, device: *d });
                    if by_switch {
                        sw == switch
                    } else {
                        nu == numa && sw.is_none() == switch.is_none()
                    }
                })
                .count(),
            _ => 0,
        };
        near.get(rank % near.len().max(1)).copied().copied()
    }

    /// The host-memory vertex of a device: the root complex of its NUMA domain.
    pub fn host_of(&self, (node, device): (usize, usize)) -> Option<Vertex> {
        let (_, numa) = self.attachment(Vertex::Device { node, device });
        Some(Vertex::Root { node, numa: numa? })
    }

    /// The links of NIC `nic` of `node` (to its host and its leaf, both directions).
    pub fn nic_links(&self, node: usize, nic: usize) -> Vec<LinkId> {
        let v = Vertex::Nic { node, nic };
        (0..self.ends.len())
            .filter(|l| self.ends[*l].0 == v || self.ends[*l].1 == v)
            .collect()
    }

    /// The compute NIC a device would use, as a vertex.
    pub fn nic_of(&self, (node, device): (usize, usize)) -> Option<Vertex> {
        let n = self.nic_near(Vertex::Device { node, device })?;
        Some(Vertex::Nic { node, nic: n.nic })
    }

    /// What the switch a fabric NIC plugs into speaks (`None` for a vertex that is not a
    /// node's fabric NIC).
    pub fn nic_wire(&self, v: Vertex) -> Option<crate::scenario::topology::Wire> {
        let Vertex::Nic { node, nic } = v else {
            return None;
        };
        self.nics
            .get(node)?
            .iter()
            .find(|n| n.nic == nic)
            .map(|n| n.wire)
    }
}
