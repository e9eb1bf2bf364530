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
//! Slices: the chips of a TPU-style slice (a rack declared `slice ... topology AxBxC`) form one
//! torus across its hosts — chip `c` of the slice is device `c mod k` of host `c / k` (k chips per
//! host), coordinates x fastest — each chip linked to its neighbour in every dimension (with
//! wrap-around when a dimension has more than two chips) at its per-direction ICI bandwidth
//! divided by its link count. Routes inside a slice are dimension-ordered (x, then y, then z,
//! the shorter way round), as TPU ICI routing is.
//!
//! Rail-optimized fabrics (`fabric rail_optimized`): one leaf per rail and rack — compute NIC k of
//! every node of the rack connects to leaf k — and routes are rail-aware: when the destination's
//! NIC is on another rail, the data first crosses the scale-up fabric to the source-node device
//! whose NIC is on that rail (NCCL's PXN), so it never leaves the rail.
//!
//! Explicit fabrics (`fabric explicit { ... }`): the declared switches and links replace the
//! leaves and spines, each rack's compute NICs link to its attach switches, and routes between
//! them come from [`super::topology`] (declared, dimension order or per-hop ECMP); with more
//! than one switch per rack (`attach rails`) routes are rail-aware as above.
//!
//! Latency per link (seconds, [`Graph::latency`]): the fabric's declared `latency` per switch
//! hop (NIC↔leaf, leaf↔spine), [`DEFAULT_HOP_LATENCY`] without one; inside a node the constants
//! below. They are stated assumptions, small next to the software overheads the transport models
//! carry (and calibration measures).
//!
//! Zones: each zone has its own [`SPINES`] spines; with two zones or more the zones' spines
//! meet in a core, each zone's uplink to it being the fabric's `zone_uplink` (else the zone's
//! whole leaf uplink capacity), split over its spines. Traffic between zones goes leaf → spine
//! → core → spine → leaf on the same ECMP spine index.
//!
//! Storage targets (`storage` blocks): a vertex behind the spines or core, or a drive per node
//! on its host memory, with routes to and from them; see `super::storage`.
//!
//! Not modelled: switch buffers and packet-level effects (flows share links max-min fairly).
//!
//! Why over 600 lines: not split yet (issue 43); tests/all/tidy.rs holds it at this length.

use crate::scenario::Spec;
use crate::scenario::hardware::NodeType;

use super::LinkId;
use super::collective::tuning::{Arch, Comm, Hw};

pub use crate::scenario::cluster::SPINES;
/// Socket interconnect per direction between two NUMA domains: 3 UPI 2.0 links at 16 GT/s ≈
/// 3 × 21 GB/s (Intel 4th-gen Xeon datasheet); an assumption until calibrated.
pub const SOCKET_BW: f64 = 62e9;
/// PCIe width assumed for a device or switch that declares none: gen5 x16.
pub const DEFAULT_PCIE: f64 = 3.94e9 * 16.0;
/// Switch-hop latency of a fabric that declares none: an InfiniBand/Ethernet switch traversal
/// plus a few metres of cable, ~0.5 µs (assumption; NDR switch port-to-port is ~0.13 µs).
pub const DEFAULT_HOP_LATENCY: f64 = 0.5e-6;
/// One PCIe hop (device↔switch↔root complex, NIC↔host): ~0.15 µs (assumption: a PCIe switch
/// traversal is 100–150 ns).
pub const PCIE_HOP_LATENCY: f64 = 0.15e-6;
/// One scale-up hop (NVLink/NVSwitch, Infinity Fabric, ICI): 0.3 µs (assumption: NVLink P2P is
/// 1.8–2.3 µs end to end with peer access, cuda-samples #230, almost all of it software).
pub const SCALE_UP_HOP_LATENCY: f64 = 0.3e-6;
/// Socket interconnect hop (UPI/xGMI): ~0.1 µs (assumption: remote-socket memory adds ~100 ns).
pub const SOCKET_HOP_LATENCY: f64 = 0.1e-6;

/// What a link is; transports and collectives price their steps by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LinkKind {
    /// Device, switch or NIC to the PCIe tree and the host.
    Pcie,
    /// Between NUMA domains of a node.
    Socket,
    /// NVLink, NVSwitch, Infinity Fabric, NeuronLink inside a node.
    ScaleUp,
    /// Chip-to-chip links of a slice torus.
    Ici,
    /// NIC↔leaf and leaf↔spine.
    Network,
    /// Into a storage target: spine (or core) ↔ fabric storage, host memory ↔ local drive.
    Storage,
}

/// A vertex of the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Vertex {
    Root {
        node: usize,
        numa: u32,
    },
    Switch {
        node: usize,
        switch: usize,
    },
    Device {
        node: usize,
        device: usize,
    },
    Nic {
        node: usize,
        nic: usize,
    },
    NvSwitch {
        node: usize,
    },
    /// A leaf switch: one per rack, or one per rack and rail in a rail-optimized fabric.
    Leaf {
        rack: usize,
        rail: usize,
    },
    /// A spine switch of a zone (zone 0 holds racks declared outside any zone).
    Spine {
        zone: usize,
        spine: usize,
    },
    /// The inter-zone core joining the zones' spines (only with two zones or more).
    Core,
    /// A switch of an explicit fabric (`fabric explicit`): its index among the declared ones.
    Fabric {
        switch: u32,
    },
    /// A fabric-attached storage system (`storage NAME { attach fabric }`): `index` into the
    /// cluster's storage targets.
    Storage {
        index: usize,
    },
    /// The local drive of a node for node-local storage target `storage`.
    Disk {
        node: usize,
        storage: usize,
    },
}

impl Vertex {
    /// The vertex in words for a message, each node named by `node` (its index to its name):
    /// `gpu.n0's host memory (NUMA 0)`, `the leaf switch of rack 2`.
    pub fn describe(&self, node: &dyn Fn(usize) -> String) -> String {
        match *self {
            Vertex::Root { node: n, numa } => format!("{}'s host memory (NUMA {numa})", node(n)),
            Vertex::Switch { node: n, switch } => format!("{}'s PCIe switch {switch}", node(n)),
            Vertex::Device { node: n, device } => format!("{}'s device {device}", node(n)),
            Vertex::Nic { node: n, nic } => format!("{}'s NIC {nic}", node(n)),
            Vertex::NvSwitch { node: n } => format!("{}'s NVSwitch", node(n)),
            Vertex::Leaf { rack, rail } => format!("the leaf switch of rack {rack} (rail {rail})"),
            Vertex::Spine { zone, spine } => format!("spine {spine} of zone {zone}"),
            Vertex::Core => "the inter-zone core".to_string(),
            Vertex::Fabric { switch } => format!("fabric switch {switch}"),
            Vertex::Storage { index } => format!("storage target {index}"),
            Vertex::Disk { node: n, storage } => {
                format!("{}'s drive for storage target {storage}", node(n))
            }
        }
    }
}

/// Nodes by their index, where no names are at hand.
impl std::fmt::Display for Vertex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe(&|n| format!("node {n}")))
    }
}

/// A compute NIC of a node: its index, PCIe switch, NUMA domain and rail (its position among
/// the node's compute NICs).
#[derive(Debug, Clone, Copy)]
pub(super) struct NicAt {
    pub(super) nic: usize,
    switch: Option<usize>,
    numa: u32,
    pub(super) rail: usize,
    /// The switch it plugs into speaks this (from the NIC's `protocol`).
    pub(super) wire: crate::scenario::topology::Wire,
}

/// The chips of one slice: torus dimensions, chips per host and the slice's first node.
#[derive(Debug, Clone)]
struct SliceLayout {
    dims: Vec<usize>,
    per_host: usize,
    first_node: usize,
}

/// Heap bytes each directed link takes in a [`Graph`] at least: its capacity, latency, kind and
/// ends, and its id in its tail's out-list (`sim::estimate` counts links so).
pub const BYTES_PER_LINK: usize = 2 * std::mem::size_of::<f64>()
    + std::mem::size_of::<LinkKind>()
    + std::mem::size_of::<(Vertex, Vertex)>()
    + std::mem::size_of::<LinkId>();

/// The cluster's links: `capacity[l]` (bytes/s per direction), `latency[l]` (seconds),
/// `kind[l]`, `ends[l]` = (from, to).
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub capacity: Vec<f64>,
    pub latency: Vec<f64>,
    pub kind: Vec<LinkKind>,
    pub ends: Vec<(Vertex, Vertex)>,
    /// Outgoing links per vertex (in insertion order, for deterministic routes).
    pub(super) out: std::collections::BTreeMap<Vertex, Vec<LinkId>>,
    /// Per node: its compute NICs.
    pub(super) nics: Vec<Vec<NicAt>>,
    /// NICs taken out of routing by [`Graph::disable_nic`], to put back by [`Graph::enable_nic`].
    parked: Vec<(usize, NicAt)>,
    pub(super) node_rack: Vec<usize>,
    /// Zone of each rack (0: outside any zone, else declared zone + 1).
    pub(super) rack_zone: Vec<usize>,
    rail_optimized: bool,
    /// Per node: (slice, host index in it) when the node is a slice host.
    slice_of: Vec<Option<(usize, usize)>>,
    /// Per node: the node whose [`Vertex::NvSwitch`] its NVSwitch-linked devices attach to —
    /// itself, or the first node of its rack-scale domain (`scale_up rack`).
    nvswitch_at: Vec<usize>,
    /// Per node: whether its NVSwitch vertex is shared with other nodes (a rack-scale domain's
    /// first node): a failure of that node then does not take the switch with it.
    shared_nvswitch: Vec<bool>,
    slices: Vec<SliceLayout>,
    /// Per node: the NUMA domain of each PCIe switch.
    switch_numa: Vec<Vec<u32>>,
    /// How each storage target of the cluster is attached, by index (`super::storage`).
    pub(super) storage: Vec<crate::scenario::cluster::Attach>,
    /// The storage index of every node's spill disk (`super::storage`), and whether it is the
    /// undeclared default disk.
    pub(super) spill: Option<usize>,
    pub(super) spill_implicit: bool,
    /// Per node: the share of its scale-up line rate collectives get, and of that an in-switch
    /// reduction gets (`Interconnect::collective`, `nvls`; 1 when not stated).
    collective_share: Vec<(f64, f64)>,
    /// Per node: its GPUs' generation in NCCL's tuning model (`None`: not an NVIDIA part NCCL
    /// tunes for, see `collective::tuning`).
    arch: Vec<Option<Arch>>,
    /// Per node: the collectives its accelerator's calibration profile measured (`None`
    /// without a profile or with none in it), shared by the nodes of one profile.
    measured: Vec<Option<std::sync::Arc<MeasuredCollectives>>>,
    /// The switches and routing state of an explicit fabric (`super::topology`).
    pub(super) explicit: Option<Box<super::topology::Explicit>>,
    /// Spines per zone of a built-in fabric, the ECMP width (the fabric's `spines`, else
    /// [`SPINES`]).
    pub spines: usize,
}

/// The `[[collective]]` fits of one calibration profile, with its name.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredCollectives {
    pub profile: String,
    pub fits: Vec<crate::profile::schema::CollectiveFit>,
}

impl Graph {
    pub(super) fn link(
        &mut self,
        a: Vertex,
        b: Vertex,
        capacity: f64,
        kind: LinkKind,
        latency: f64,
    ) {
        for (x, y) in [(a, b), (b, a)] {
            let id = self.capacity.len();
            self.capacity.push(capacity);
            self.latency.push(latency);
            self.kind.push(kind);
            self.ends.push((x, y));
            self.out.entry(x).or_default().push(id);
        }
    }

    /// Number of nodes the graph was built for.
    pub fn nodes(&self) -> usize {
        self.node_rack.len()
    }

    /// The scale-up domain of a node: the slice it is a host of (all the slice's chips share
    /// one ICI torus), else its rack-scale NVSwitch domain (named by its first node), else the
    /// node itself. Ids of slices follow the node ids.
    pub fn scale_up_domain(&self, node: usize) -> usize {
        match self.slice_of.get(node).copied().flatten() {
            Some((s, _)) => self.node_rack.len() + s,
            None => self.nvswitch_at.get(node).copied().unwrap_or(node),
        }
    }

    /// The NVSwitch vertex a node's NVSwitch-linked devices attach to (see
    /// [`Graph::scale_up_domain`]); whether any link to it exists is the caller's to check.
    pub fn nvswitch(&self, node: usize) -> Vertex {
        Vertex::NvSwitch {
            node: self.nvswitch_at.get(node).copied().unwrap_or(node),
        }
    }

    /// Sum of the latencies of a path's links, in seconds.
    pub fn path_latency(&self, path: &[LinkId]) -> f64 {
        path.iter().map(|l| self.latency[*l]).sum()
    }

    /// The smallest capacity along a path (infinite for an empty one).
    pub fn path_bottleneck(&self, path: &[LinkId]) -> f64 {
        path.iter()
            .map(|l| self.capacity[*l])
            .fold(f64::INFINITY, f64::min)
    }

    /// Every directed link with an end in `node` (to fail or degrade the node's links). A
    /// rack-scale domain's NVSwitch belongs to no node: the node's own devices' links to it
    /// are the node's, the other nodes' are not.
    pub fn node_links(&self, node: usize) -> Vec<LinkId> {
        let of = |v: Vertex| match v {
            Vertex::NvSwitch { node } if self.shared_nvswitch.get(node) == Some(&true) => None,
            Vertex::Root { node, .. }
            | Vertex::Switch { node, .. }
            | Vertex::Device { node, .. }
            | Vertex::Nic { node, .. }
            | Vertex::NvSwitch { node }
            | Vertex::Disk { node, .. } => Some(node),
            _ => None,
        };
        (0..self.ends.len())
            .filter(|l| of(self.ends[*l].0) == Some(node) || of(self.ends[*l].1) == Some(node))
            .collect()
    }

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
    fn build_slices(&mut self, spec: &Spec, nodes: &[(&NodeType, usize)]) {
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

    fn coords(&self, layout: &SliceLayout, mut c: usize) -> Vec<usize> {
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

    fn chip_index(&self, layout: &SliceLayout, coords: &[usize]) -> usize {
        coords
            .iter()
            .zip(&layout.dims)
            .rev()
            .fold(0, |acc, (x, n)| acc * n + x)
    }

    fn chip(&self, layout: &SliceLayout, c: usize) -> Vertex {
        Vertex::Device {
            node: layout.first_node + c / layout.per_host.max(1),
            device: c % layout.per_host.max(1),
        }
    }

    /// Dimension-ordered route between two chips of the same slice.
    fn ici_route(&self, s: usize, src: (usize, usize), dst: (usize, usize)) -> Option<Vec<LinkId>> {
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
    fn bfs(&self, a: Vertex, b: Vertex) -> Option<Vec<LinkId>> {
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
    fn device_near_nic(&self, node: usize, nic: &NicAt) -> Option<usize> {
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
    fn attachment(&self, v: Vertex) -> (Option<usize>, Option<u32>) {
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
    fn nic_near(&self, v: Vertex) -> Option<NicAt> {
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

    /// Take NIC `nic` of `node` out of routing (a failed port): routes pick among the node's
    /// other compute NICs. Its links stay; give them capacity 0 in the flow network.
    pub fn disable_nic(&mut self, node: usize, nic: usize) {
        if let Some(n) = self.nics.get_mut(node)
            && let Some(pos) = n.iter().position(|x| x.nic == nic)
        {
            let at = n.remove(pos);
            self.parked.push((node, at));
        }
    }

    /// Put a NIC taken out by [`Graph::disable_nic`] back into routing (repaired).
    pub fn enable_nic(&mut self, node: usize, nic: usize) {
        if let Some(pos) = self
            .parked
            .iter()
            .position(|(n, at)| *n == node && at.nic == nic)
        {
            let (_, at) = self.parked.swap_remove(pos);
            let list = &mut self.nics[node];
            let i = list.partition_point(|x| x.nic < nic);
            list.insert(i, at);
        }
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

impl Graph {
    /// How much longer a collective's `bytes` take over `path` than at line rate, alone on
    /// it: the path's line-rate bottleneck over its bottleneck at collective rates, where a
    /// scale-up link runs at its node's collective share (times the NVLS share for a flow to
    /// or from the reducing switch, `in_switch`). 1 when the path's bottleneck is not
    /// scale-up (a ring whose NIC hops limit it). Under contention the stretched bytes share
    /// every link of the path, an approximation where the shares differ along it.
    pub fn collective_stretch(&self, path: &[LinkId], in_switch: bool) -> f64 {
        let (mut line, mut eff) = (f64::INFINITY, f64::INFINITY);
        for &l in path {
            let c = self.capacity[l];
            line = line.min(c);
            let share = if self.kind[l] == LinkKind::ScaleUp {
                let node = match self.ends[l] {
                    (Vertex::Device { node, .. }, _) | (Vertex::NvSwitch { node }, _) => Some(node),
                    _ => None,
                };
                node.and_then(|n| self.collective_share.get(n))
                    .map_or(1.0, |&(up, nvls)| if in_switch { up * nvls } else { up })
            } else {
                1.0
            };
            eff = eff.min(c * share);
        }
        if line.is_finite() && eff > 0.0 {
            line / eff
        } else {
            1.0
        }
    }
}

impl Graph {
    /// The measured collectives of a node's accelerator profile, if it has any.
    pub fn measured_collectives(&self, node: usize) -> Option<&MeasuredCollectives> {
        self.measured.get(node)?.as_deref()
    }

    /// What NCCL's tuning model sees of a communicator over `ranks` (`collective::tuning`):
    /// `None` when a node of it has no NCCL model (not NVIDIA) or the GPUs differ in
    /// generation. Bandwidths in GB/s at collective rates: inside a node a rank's share of
    /// the NVSwitch (or its direct links to the other ranks, or its PCIe path to another rank
    /// of the node);
    /// across nodes the node's compute NICs together.
    pub fn nccl_comm(&self, ranks: &[(usize, usize)]) -> Option<Comm> {
        let &(n0, d0) = ranks.first()?;
        let arch = self.arch.get(n0).copied().flatten()?;
        if ranks
            .iter()
            .any(|r| self.arch.get(r.0).copied().flatten() != Some(arch))
        {
            return None;
        }
        // NCCL counts a multi-node NVLink domain (MNNVL: an NVL72 rack) as one node: its
        // ranks reach each other over NVLink, and NVLS spans it.
        let mut nodes: Vec<usize> = ranks.iter().map(|r| self.scale_up_domain(r.0)).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let dev = Vertex::Device {
            node: n0,
            device: d0,
        };
        let share = self.collective_share.get(n0).map_or(1.0, |s| s.0);
        let nvs = self.link_between(dev, self.nvswitch(n0));
        // Direct links (a mesh, a ring, a torus) count only towards the communicator's own
        // GPUs, as NCCL's search sees them: 4 ranks of an 8-GPU mesh reach 3 peers, not 7.
        let direct: f64 = self
            .out
            .get(&dev)
            .into_iter()
            .flatten()
            .filter(|&&l| match self.ends[l].1 {
                Vertex::Device { node, device } => ranks.contains(&(node, device)),
                _ => false,
            })
            .map(|&l| self.capacity[l])
            .sum();
        let (intra, bw_intra) = if let Some(l) = nvs {
            (Hw::NvLink, self.capacity[l] * share)
        } else if direct > 0.0 {
            (Hw::NvLink, direct * share)
        } else {
            let peer = ranks.iter().find(|r| r.0 == n0 && r.1 != d0);
            let bw = peer
                .and_then(|&q| self.route((n0, d0), q, 0))
                .map_or(0.0, |p| self.path_bottleneck(&p));
            (Hw::Pci, if bw.is_finite() { bw } else { 0.0 })
        };
        // A NIC's links into the fabric.
        let fabric = |v: Vertex| -> f64 {
            self.out
                .get(&v)
                .into_iter()
                .flatten()
                .filter(|&&l| matches!(self.ends[l].1, Vertex::Leaf { .. } | Vertex::Fabric { .. }))
                .map(|&l| self.capacity[l])
                .sum::<f64>()
        };
        // NCCL's bwInter is what its search finds for the communicator's own GPUs: the NICs
        // nearest the ranks on the first node (each once), not every NIC the node has (two
        // ranks of a DGX reach two of its eight). Every NIC of the node where no rank has
        // one of its own.
        let mut used: Vec<Vertex> = Vec::new();
        for &r in ranks.iter().filter(|r| r.0 == n0) {
            if let Some(v) = self.nic_of(r)
                && !used.contains(&v)
            {
                used.push(v);
            }
        }
        let bw_inter: f64 = if used.is_empty() {
            self.nics
                .get(n0)
                .into_iter()
                .flatten()
                .map(|n| {
                    fabric(Vertex::Nic {
                        node: n0,
                        nic: n.nic,
                    })
                })
                .sum()
        } else {
            used.into_iter().map(fabric).sum()
        };
        let bw_intra = if bw_intra > 0.0 { bw_intra } else { bw_inter };
        Some(Comm {
            ranks: ranks.len(),
            nodes: nodes.len(),
            arch,
            intra,
            bw_intra: bw_intra / 1e9,
            bw_inter: if bw_inter > 0.0 {
                bw_inter / 1e9
            } else {
                bw_intra / 1e9
            },
            nvls: nodes.len() == 1 && nvs.is_some() && arch >= Arch::Hopper,
            nvls_tree: nodes.len() > 1
                && arch >= Arch::Hopper
                && nodes.iter().all(|&d| {
                    let on = ranks
                        .iter()
                        .filter(|r| self.scale_up_domain(r.0) == d)
                        .count();
                    on >= 2 && on * nodes.len() == ranks.len()
                })
                && ranks.iter().all(|&(node, device)| {
                    self.link_between(Vertex::Device { node, device }, self.nvswitch(node))
                        .is_some()
                }),
        })
    }
}
