//! Building the link graph from a scenario: each node's PCIe tree, sockets, scale-up domain\n//! and NICs, the fabric between nodes, and TPU-style slices' ICI tori.

use super::*;

impl Graph {
    /// Build the graph of `spec`'s cluster (empty without one).
    pub fn build(spec: &Spec) -> Graph {
        match &spec.cluster {
            Some(c) => Graph::build_cluster(spec, c),
            None => Graph::default(),
        }
    }

    /// The graph of cluster `c` with `spec`'s hardware: [`Graph::build`] of `spec.cluster`,
    /// or of another cluster of the same types (`sim::estimate` counts one node's links so).
    pub fn build_cluster(spec: &Spec, c: &crate::scenario::cluster::Cluster) -> Graph {
        let mut g = Graph::default();
        let nodes: Vec<(&NodeType, usize)> = c
            .nodes()
            .map(|n| (&spec.node_types[n.node_type], n.rack))
            .collect();
        let topology = c.fabric.as_ref().and_then(|f| f.topology.as_deref());
        g.rail_optimized = c
            .fabric
            .as_ref()
            .is_some_and(|f| f.kind == "rail_optimized")
            || topology.is_some_and(|t| {
                t.attach
                    .iter()
                    .flatten()
                    .any(|a| a.rails && a.switches.len() > 1)
            });
        let hop = c
            .fabric
            .as_ref()
            .and_then(|f| f.latency)
            .map(|d| d.0 as f64 * 1e-9)
            .unwrap_or(DEFAULT_HOP_LATENCY);
        // An explicit fabric's switches come first: NICs link to them as they are added.
        if let Some(t) = topology {
            g.build_explicit(t, hop);
        }
        // Slices: racks with a torus shape; their hosts are numbered in node order.
        let mut slice_index = vec![None; c.racks.len()];
        let mut hosts_seen = vec![0usize; c.racks.len()];
        g.slice_of = vec![None; nodes.len()];
        for (node, (nt, rack)) in nodes.iter().enumerate() {
            let Some(shape) = &c.racks[*rack].slice else {
                continue;
            };
            let s = *slice_index[*rack].get_or_insert_with(|| {
                g.slices.push(SliceLayout {
                    dims: shape.dims.iter().map(|d| *d as usize).collect(),
                    per_host: nt.devices.iter().map(|d| d.at.len()).sum(),
                    first_node: node,
                });
                g.slices.len() - 1
            });
            g.slice_of[node] = Some((s, hosts_seen[*rack]));
            hosts_seen[*rack] += 1;
        }
        // Rack-scale NVSwitch domains: the nodes of one `scale_up rack` type in one rack share
        // the NVSwitch of the first of them.
        g.nvswitch_at = (0..nodes.len()).collect();
        g.shared_nvswitch = vec![false; nodes.len()];
        let mut first_of: std::collections::BTreeMap<(usize, &str), usize> = Default::default();
        for (node, (nt, rack)) in nodes.iter().enumerate() {
            if nt.rack_domain.is_some() && g.slice_of[node].is_none() {
                let lead = *first_of.entry((*rack, nt.name.as_str())).or_insert(node);
                g.nvswitch_at[node] = lead;
                if lead != node {
                    g.shared_nvswitch[lead] = true;
                }
            }
        }
        // Injection per leaf: (rack, rail) → bytes/s.
        let mut leaf_injection: std::collections::BTreeMap<(usize, usize), f64> =
            std::collections::BTreeMap::new();
        for (node, (nt, rack)) in nodes.iter().enumerate() {
            g.node_rack.push(*rack);
            let ic = nt
                .devices
                .first()
                .and_then(|d| spec.accelerators.get(&d.accelerator))
                .and_then(|a| a.interconnect.as_ref());
            let acc = nt
                .devices
                .first()
                .and_then(|d| spec.accelerators.get(&d.accelerator));
            g.arch
                .push(acc.and_then(|a| Arch::of(&a.vendor, &a.name, a.model.as_deref())));
            let profile = acc.and_then(|a| a.profile.as_ref());
            let known = g
                .measured
                .iter()
                .flatten()
                .find(|m| Some(&m.profile) == profile)
                .cloned();
            g.measured.push(known.or_else(|| {
                let name = profile?;
                let p = spec.profiles.get(name)?;
                (!p.collective.is_empty()).then(|| {
                    std::sync::Arc::new(MeasuredCollectives {
                        profile: name.clone(),
                        fits: p.collective.clone(),
                    })
                })
            }));
            g.collective_share.push(ic.map_or((1.0, 1.0), |i| {
                (i.collective_share(), i.nvls.unwrap_or(1.0))
            }));
            g.switch_numa
                .push(nt.switches.iter().map(|sw| sw.numa).collect());
            let root = |numa: u32| Vertex::Root { node, numa };
            for a in 0..nt.cpu.numa {
                for b in a + 1..nt.cpu.numa {
                    g.link(
                        root(a),
                        root(b),
                        SOCKET_BW,
                        LinkKind::Socket,
                        SOCKET_HOP_LATENCY,
                    );
                }
            }
            for (k, sw) in nt.switches.iter().enumerate() {
                let parent = match sw.parent {
                    Some(p) => Vertex::Switch { node, switch: p },
                    None => root(sw.numa),
                };
                let bw = sw.uplink.map(|u| u.bandwidth().0).unwrap_or(DEFAULT_PCIE);
                g.link(
                    Vertex::Switch { node, switch: k },
                    parent,
                    bw,
                    LinkKind::Pcie,
                    PCIE_HOP_LATENCY,
                );
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
                    g.link(
                        Vertex::Device { node, device: dev },
                        up,
                        pcie,
                        LinkKind::Pcie,
                        PCIE_HOP_LATENCY,
                    );
                    dev += 1;
                }
                let n = dev - first;
                let ic = acc.and_then(|a| a.interconnect.as_ref());
                let per_dir = ic.map(|i| i.per_direction.0).unwrap_or(0.0);
                // Slice hosts' chips are linked by the slice torus below, not per host. A node of a
                // rack-scale domain links even one device: the switch joins it to the others.
                let spans = g.nvswitch_at[node] != node || g.shared_nvswitch[node];
                if per_dir <= 0.0 || (n < 2 && !spans) || g.slice_of[node].is_some() {
                    continue;
                }
                let d = |i: usize| Vertex::Device {
                    node,
                    device: first + i,
                };
                let up = |g: &mut Graph, a, b, bw| {
                    g.link(a, b, bw, LinkKind::ScaleUp, SCALE_UP_HOP_LATENCY)
                };
                match group.link.as_str() {
                    "switch" => {
                        let sw = g.nvswitch(node);
                        for i in 0..n {
                            up(&mut g, d(i), sw, per_dir);
                        }
                    }
                    "mesh" | "torus" => {
                        for i in 0..n {
                            for j in i + 1..n {
                                up(&mut g, d(i), d(j), per_dir / (n - 1) as f64);
                            }
                        }
                    }
                    "ring" => {
                        for i in 0..n {
                            let j = (i + 1) % n;
                            if n > 2 || i == 0 {
                                up(&mut g, d(i), d(j), per_dir / 2.0);
                            }
                        }
                    }
                    _ => {}
                }
            }
            // NICs: all attach to the node; compute ones (or all, if none is) to a leaf.
            let mut nic = 0;
            let mut mine = Vec::new();
            for group in &nt.nics {
                let catalog = spec.nics.get(&group.nic);
                let speed = catalog.map_or(0.0, |n| n.speed.0);
                let wire = crate::scenario::topology::Wire::of_protocol(
                    catalog.map_or("", |n| n.protocol.as_str()),
                );
                for loc in &group.at {
                    let up = match loc.switch {
                        Some(s) => Vertex::Switch { node, switch: s },
                        None => root(loc.numa),
                    };
                    g.link(
                        Vertex::Nic { node, nic },
                        up,
                        speed,
                        LinkKind::Pcie,
                        PCIE_HOP_LATENCY,
                    );
                    if nt.on_fabric(group) {
                        let (to, rail) = match g.explicit_port(*rack, mine.len()) {
                            Some((switch, rail)) => (Vertex::Fabric { switch }, rail),
                            None if g.explicit.is_some() => (
                                Vertex::Leaf {
                                    rack: *rack,
                                    rail: 0,
                                },
                                0,
                            ),
                            None => {
                                let rail = if g.rail_optimized { mine.len() } else { 0 };
                                (Vertex::Leaf { rack: *rack, rail }, rail)
                            }
                        };
                        g.link(Vertex::Nic { node, nic }, to, speed, LinkKind::Network, hop);
                        *leaf_injection.entry((*rack, rail)).or_default() += speed;
                        mine.push(NicAt {
                            nic,
                            switch: loc.switch,
                            numa: loc.numa,
                            rail,
                            wire,
                        });
                    }
                    nic += 1;
                }
            }
            g.nics.push(mine);
        }
        g.build_slices(spec, &nodes);
        g.rack_zone = c
            .racks
            .iter()
            .map(|r| r.zone.map_or(0, |z| z + 1))
            .collect();
        if let Some(f) = c.fabric.as_ref().filter(|f| f.topology.is_none()) {
            g.spines = f.spines;
            let racks_total: f64 = leaf_injection.values().sum();
            // Each zone's total leaf uplink: its default uplink to the core.
            let mut zone_up: std::collections::BTreeMap<usize, f64> = Default::default();
            for (&(rack, rail), inj) in &leaf_injection {
                if *inj <= 0.0 {
                    continue;
                }
                let up = match f.spine_uplink {
                    // Declared per rack: split among the rack's leaves by their injection.
                    Some(u) => {
                        let rack_inj: f64 = leaf_injection
                            .range((rack, 0)..(rack + 1, 0))
                            .map(|(_, v)| v)
                            .sum();
                        u.0 * inj / rack_inj.max(f64::MIN_POSITIVE)
                    }
                    None => inj / f.oversubscription,
                };
                debug_assert!(racks_total > 0.0);
                let zone = g.rack_zone[rack];
                *zone_up.entry(zone).or_default() += up;
                for s in 0..g.spines {
                    g.link(
                        Vertex::Leaf { rack, rail },
                        Vertex::Spine { zone, spine: s },
                        up / g.spines as f64,
                        LinkKind::Network,
                        hop,
                    );
                }
            }
            // Zones meet in a core: each zone's spines up to it at `zone_uplink` (or, without
            // one, the zone's whole leaf uplink: no further oversubscription).
            if zone_up.len() > 1 {
                for (&zone, &up) in &zone_up {
                    let up = f.zone_uplink.map_or(up, |u| u.0);
                    for s in 0..g.spines {
                        g.link(
                            Vertex::Spine { zone, spine: s },
                            Vertex::Core,
                            up / g.spines as f64,
                            LinkKind::Network,
                            hop,
                        );
                    }
                }
            }
        }
        g.build_storage(c);
        g.build_spill_disks(c);
        g
    }

    /// The torus links of every slice: chip `c` is device `c % per_host` of host `c / per_host`.
    pub(super) fn build_slices(&mut self, spec: &Spec, nodes: &[(&NodeType, usize)]) {
        for s in 0..self.slices.len() {
            let layout = self.slices[s].clone();
            let nt = nodes[layout.first_node].0;
            let Some(ic) = nt
                .devices
                .first()
                .and_then(|d| spec.accelerators.get(&d.accelerator))
                .and_then(|a| a.interconnect.as_ref())
            else {
                continue;
            };
            let links = ic
                .links
                .map(|l| l as usize)
                .unwrap_or(2 * layout.dims.len());
            let bw = ic.per_direction.0 / links.max(1) as f64;
            let chips: usize = layout.dims.iter().product();
            let hosts = self
                .slice_of
                .iter()
                .filter(|x| x.is_some_and(|(k, _)| k == s))
                .count();
            let chips = chips.min(hosts * layout.per_host);
            for c in 0..chips {
                let coords = self.coords(&layout, c);
                for (d, &n) in layout.dims.iter().enumerate() {
                    // Two chips in a dimension share one link; more wrap around.
                    if n < 2 || (n == 2 && coords[d] == 1) {
                        continue;
                    }
                    let mut next = coords.clone();
                    next[d] = (coords[d] + 1) % n;
                    let o = self.chip_index(&layout, &next);
                    if o < chips {
                        let (a, b) = (self.chip(&layout, c), self.chip(&layout, o));
                        self.link(a, b, bw, LinkKind::Ici, SCALE_UP_HOP_LATENCY);
                    }
                }
            }
        }
    }

    pub(super) fn coords(&self, layout: &SliceLayout, mut c: usize) -> Vec<usize> {
        layout
            .dims
            .iter()
            .map(|n| {
                let x = c % n;
                c /= n;
                x
            })
            .collect()
    }

    pub(super) fn chip_index(&self, layout: &SliceLayout, coords: &[usize]) -> usize {
        coords
            .iter()
            .zip(&layout.dims)
            .rev()
            .fold(0, |acc, (x, n)| acc * n + x)
    }

    pub(super) fn chip(&self, layout: &SliceLayout, c: usize) -> Vertex {
        Vertex::Device {
            node: layout.first_node + c / layout.per_host.max(1),
            device: c % layout.per_host.max(1),
        }
    }
}
