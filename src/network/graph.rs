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
//! The graph is built in `graph/build.rs`; routes over it are `graph/routes.rs`.

use crate::scenario::Spec;
use crate::scenario::hardware::NodeType;

use super::LinkId;
use super::collective::tuning::{Arch, Comm, Hw};

mod build;
mod routes;

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
            v => Graph::node_of(v),
        };
        (0..self.ends.len())
            .filter(|l| of(self.ends[*l].0) == Some(node) || of(self.ends[*l].1) == Some(node))
            .collect()
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
