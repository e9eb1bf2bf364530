//! The link graph of a cluster, built from the Spec, and routes over it.
//!
//! Every physical link is full duplex: two directed links of the same capacity. Inside a node:
//! device ↔ PCIe switch (or the NUMA root complex when it has none) at the device's PCIe width;
//! switch ↔ parent switch or root at the switch's uplink; NIC ↔ switch or root at the NIC's
//! speed; root ↔ root over the socket interconnect ([`SOCKET_BW`]); devices linked `switch`
//! each have a link to the node's NVSwitch at their per-direction scale-up bandwidth, `mesh`
//! and `torus` devices a direct link to every other device of the node with an equal share of
//! it, `ring` devices a link to each neighbour with half of it. Between nodes: each compute NIC
//! (every NIC when none is marked compute) to its rack's leaf switch; each leaf to [`SPINES`]
//! spines, its uplink capacity the rack's injection bandwidth divided by the fabric's
//! oversubscription (or `spine_uplink`), split evenly. Routes take the shortest path; between
//! racks the spine is chosen by ECMP on a flow key.
//!
//! Not yet modelled (issue 4, continuing): ICI links between the hosts of a slice, rail-
//! optimized leaves (one per rail), zones' inter-zone links, link latencies.

use crate::spec::Spec;
use crate::spec::hardware::NodeType;

use super::LinkId;

/// Spine switches of a leaf-spine fabric (ECMP width).
pub const SPINES: usize = 4;
/// Socket interconnect per direction between two NUMA domains: 3 UPI 2.0 links at 16 GT/s ≈
/// 3 × 21 GB/s (Intel 4th-gen Xeon datasheet); an assumption until calibrated.
pub const SOCKET_BW: f64 = 62e9;
/// PCIe width assumed for a device or switch that declares none: gen5 x16.
pub const DEFAULT_PCIE: f64 = 3.94e9 * 16.0;

/// A vertex of the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Vertex {
    Root { node: usize, numa: u32 },
    Switch { node: usize, switch: usize },
    Device { node: usize, device: usize },
    Nic { node: usize, nic: usize },
    NvSwitch { node: usize },
    Leaf { rack: usize },
    Spine { spine: usize },
}

/// The cluster's links: `capacity[l]` per direction, `ends[l]` = (from, to).
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub capacity: Vec<f64>,
    pub ends: Vec<(Vertex, Vertex)>,
    /// Outgoing links per vertex (in insertion order, for deterministic routes).
    out: std::collections::BTreeMap<Vertex, Vec<LinkId>>,
    /// Per node: its compute NICs (index, switch, numa).
    nics: Vec<Vec<(usize, Option<usize>, u32)>>,
    node_rack: Vec<usize>,
}

impl Graph {
    fn link(&mut self, a: Vertex, b: Vertex, capacity: f64) {
        for (x, y) in [(a, b), (b, a)] {
            let id = self.capacity.len();
            self.capacity.push(capacity);
            self.ends.push((x, y));
            self.out.entry(x).or_default().push(id);
        }
    }

    /// Build the graph of `spec`'s cluster (empty without one).
    pub fn build(spec: &Spec) -> Graph {
        let mut g = Graph::default();
        let Some(c) = &spec.cluster else { return g };
        let nodes: Vec<(&NodeType, usize)> = c
            .nodes()
            .map(|n| (&spec.node_types[n.node_type], n.rack))
            .collect();
        let mut rack_injection = vec![0.0; c.racks.len()];
        for (node, (nt, rack)) in nodes.iter().enumerate() {
            g.node_rack.push(*rack);
            let root = |numa: u32| Vertex::Root { node, numa };
            for a in 0..nt.cpu.numa {
                for b in a + 1..nt.cpu.numa {
                    g.link(root(a), root(b), SOCKET_BW);
                }
            }
            for (k, sw) in nt.switches.iter().enumerate() {
                let parent = match sw.parent {
                    Some(p) => Vertex::Switch { node, switch: p },
                    None => root(sw.numa),
                };
                let bw = sw.uplink.map(|u| u.bandwidth().0).unwrap_or(DEFAULT_PCIE);
                g.link(Vertex::Switch { node, switch: k }, parent, bw);
            }
            let mut dev = 0;
            for group in &nt.devices {
                let acc = spec.accelerators.get(&group.accelerator);
                let pcie = acc
                    .and_then(|a| a.pcie)
                    .map(|p| p.bandwidth().0)
                    .unwrap_or(DEFAULT_PCIE);
                let first = dev;
                for loc in &group.at {
                    let up = match loc.switch {
                        Some(s) => Vertex::Switch { node, switch: s },
                        None => root(loc.numa),
                    };
                    g.link(Vertex::Device { node, device: dev }, up, pcie);
                    dev += 1;
                }
                let n = dev - first;
                let per_dir = acc
                    .and_then(|a| a.interconnect.as_ref())
                    .map(|i| i.per_direction.0)
                    .unwrap_or(0.0);
                if per_dir <= 0.0 || n < 2 {
                    continue;
                }
                let d = |i: usize| Vertex::Device {
                    node,
                    device: first + i,
                };
                match group.link.as_str() {
                    "switch" => {
                        for i in 0..n {
                            g.link(d(i), Vertex::NvSwitch { node }, per_dir);
                        }
                    }
                    "mesh" | "torus" => {
                        for i in 0..n {
                            for j in i + 1..n {
                                g.link(d(i), d(j), per_dir / (n - 1) as f64);
                            }
                        }
                    }
                    "ring" => {
                        for i in 0..n {
                            let j = (i + 1) % n;
                            if n > 2 || i == 0 {
                                g.link(d(i), d(j), per_dir / 2.0);
                            }
                        }
                    }
                    _ => {}
                }
            }
            // NICs: all attach to the node; compute ones (or all, if none is) to the leaf.
            let mut nic = 0;
            let any_compute = nt.nics.iter().any(|n| n.role == "compute");
            let mut mine = Vec::new();
            for group in &nt.nics {
                let speed = spec.nics.get(&group.nic).map(|n| n.speed.0).unwrap_or(0.0);
                for loc in &group.at {
                    let up = match loc.switch {
                        Some(s) => Vertex::Switch { node, switch: s },
                        None => root(loc.numa),
                    };
                    g.link(Vertex::Nic { node, nic }, up, speed);
                    if group.role == "compute" || !any_compute {
                        g.link(
                            Vertex::Nic { node, nic },
                            Vertex::Leaf { rack: *rack },
                            speed,
                        );
                        rack_injection[*rack] += speed;
                        mine.push((nic, loc.switch, loc.numa));
                    }
                    nic += 1;
                }
            }
            g.nics.push(mine);
        }
        if let Some(f) = &c.fabric {
            for (rack, inj) in rack_injection.iter().enumerate() {
                if *inj <= 0.0 {
                    continue;
                }
                let up = match f.spine_uplink {
                    Some(u) => u.0,
                    None => inj / f.oversubscription,
                };
                for s in 0..SPINES {
                    g.link(
                        Vertex::Leaf { rack },
                        Vertex::Spine { spine: s },
                        up / SPINES as f64,
                    );
                }
            }
        }
        g
    }

    /// The directed link from `a` to `b`, if they are adjacent.
    pub fn link_between(&self, a: Vertex, b: Vertex) -> Option<LinkId> {
        self.out
            .get(&a)?
            .iter()
            .copied()
            .find(|l| self.ends[*l].1 == b)
    }

    /// Shortest path (fewest hops) from `a` to `b` avoiding spines other than `spine`,
    /// breadth-first in link order: deterministic.
    fn bfs(&self, a: Vertex, b: Vertex, spine: usize) -> Option<Vec<LinkId>> {
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
                if matches!(w, Vertex::Spine { spine: s } if s != spine) || !seen.insert(w) {
                    continue;
                }
                prev.insert(w, l);
                queue.push_back(w);
            }
        }
        None
    }

    /// The route of a transfer between two devices (`node`, `device`), the spine picked by
    /// ECMP on `key`. Between nodes it leaves through the source device's closest compute NIC
    /// (same PCIe switch, else same NUMA domain, else the first) and enters through the
    /// destination's.
    pub fn route(&self, src: (usize, usize), dst: (usize, usize), key: u64) -> Option<Vec<LinkId>> {
        let spine = (key % SPINES as u64) as usize;
        let (sv, dv) = (
            Vertex::Device {
                node: src.0,
                device: src.1,
            },
            Vertex::Device {
                node: dst.0,
                device: dst.1,
            },
        );
        if src.0 == dst.0 {
            // Scale-up first (what NCCL picks): through the NVSwitch, or a direct link.
            let nvs = Vertex::NvSwitch { node: src.0 };
            if let (Some(a), Some(b)) = (self.link_between(sv, nvs), self.link_between(nvs, dv)) {
                return Some(vec![a, b]);
            }
            if let Some(l) = self.link_between(sv, dv) {
                return Some(vec![l]);
            }
            return self.bfs(sv, dv, spine);
        }
        let sn = self.closest_nic(src)?;
        let dn = self.closest_nic(dst)?;
        let mut path = self.bfs(
            sv,
            Vertex::Nic {
                node: src.0,
                nic: sn,
            },
            usize::MAX,
        )?;
        let (sl, dl) = (
            Vertex::Leaf {
                rack: self.node_rack[src.0],
            },
            Vertex::Leaf {
                rack: self.node_rack[dst.0],
            },
        );
        path.push(self.link_between(
            Vertex::Nic {
                node: src.0,
                nic: sn,
            },
            sl,
        )?);
        if sl != dl {
            let s = Vertex::Spine { spine };
            path.push(self.link_between(sl, s)?);
            path.push(self.link_between(s, dl)?);
        }
        path.push(self.link_between(
            dl,
            Vertex::Nic {
                node: dst.0,
                nic: dn,
            },
        )?);
        path.extend(self.bfs(
            Vertex::Nic {
                node: dst.0,
                nic: dn,
            },
            dv,
            usize::MAX,
        )?);
        Some(path)
    }

    fn closest_nic(&self, (node, device): (usize, usize)) -> Option<usize> {
        let nics = self.nics.get(node)?;
        let dev_up = self
            .out
            .get(&Vertex::Device { node, device })?
            .first()
            .map(|l| self.ends[*l].1)?;
        let by_switch = nics.iter().find(|(_, sw, _)| {
            sw.is_some() && matches!(dev_up, Vertex::Switch { switch, .. } if Some(switch) == *sw)
        });
        let dev_numa = match dev_up {
            Vertex::Root { numa, .. } => Some(numa),
            _ => None,
        };
        by_switch
            .or_else(|| nics.iter().find(|(_, _, n)| Some(*n) == dev_numa))
            .or(nics.first())
            .map(|(i, _, _)| *i)
    }
}
