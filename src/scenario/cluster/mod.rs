//! Clusters: zones, racks, TPU-style slices, node groups, the fabric and storage targets.
//!
//! Nodes are kept as groups (`rack r3 holds 4 × dgx_h100`) rather than expanded, so a
//! 100,000-node cluster costs a few hundred bytes; [`Cluster::nodes`] expands on demand and
//! [`Cluster::find_node`] resolves a name such as `r3.n1` without expanding anything.
//! `read.rs` reads a `cluster` block into these types; `storage.rs` its storage targets.

mod read;
mod storage;

use super::reader::MAX_COUNT;
use crate::diag::Span;
use crate::units::{Bandwidth, Duration};
pub use read::cluster;
use serde::Serialize;

/// Most nodes one scenario may declare.
pub const MAX_NODES: u64 = MAX_COUNT;

#[derive(Debug, Clone, Serialize)]
pub struct Cluster {
    pub name: String,
    pub zones: Vec<String>,
    pub racks: Vec<Rack>,
    pub groups: Vec<NodeGroup>,
    pub fabric: Option<Fabric>,
    /// Ray head node; the first node when not given.
    pub head: Option<String>,
    /// Storage targets (`storage NAME { ... }`), in declaration order; checkpoints name them
    /// by index ([`super::workload::Checkpoint::storage`]).
    pub storage: Vec<Storage>,
    #[serde(skip)]
    pub span: Span,
}

/// Where a storage target sits on the link graph (`crate::network::graph`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Attach {
    /// One shared system behind the fabric (a parallel file system or object store reached
    /// over the data-centre network), joined to the top of the fabric: the spines, or the
    /// inter-zone core when there are zones. Needs a `fabric`.
    Fabric,
    /// Every node has its own local drive(s) (NVMe), attached to its host memory.
    NodeLocal,
}

impl Attach {
    pub fn name(self) -> &'static str {
        match self {
            Attach::Fabric => "fabric",
            Attach::NodeLocal => "node_local",
        }
    }
}

/// A storage target: `storage NAME { bandwidth B  attach fabric|node_local  [latency T] }`.
#[derive(Debug, Clone, Serialize)]
pub struct Storage {
    pub name: String,
    /// Per direction (read, and write, each): the whole system's for `fabric`, each node's
    /// for `node_local`.
    pub bandwidth: Bandwidth,
    pub attach: Attach,
    /// Access latency of the storage link ([`DEFAULT_STORAGE_LATENCY`] when not given).
    pub latency: Duration,
    pub source: Option<String>,
    #[serde(skip)]
    pub span: Span,
}

/// Storage access latency when a `storage` block gives none: 100 µs. An assumption: a NAND
/// NVMe read of 4 KiB takes tens of µs to ~100 µs, and a parallel-file-system or object-store
/// request adds a network round trip and server time on top; either is small next to the
/// seconds to minutes a checkpoint of hundreds of GB takes, which bandwidth decides.
pub const DEFAULT_STORAGE_LATENCY: Duration = Duration(100_000);

/// A rack, or a TPU-style slice (a rack whose hosts form one torus and fail as a unit).
#[derive(Debug, Clone, Serialize)]
pub struct Rack {
    /// Empty for nodes declared directly in the cluster (they are named `n0`, `n1`, ...).
    pub name: String,
    pub zone: Option<usize>,
    pub slice: Option<SliceShape>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SliceShape {
    /// Chip torus, such as [2, 2, 4].
    pub dims: Vec<u64>,
    pub chips: u64,
    pub hosts: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeGroup {
    pub rack: usize,
    pub node_type: String,
    pub count: u32,
    pub prefix: String,
    /// Index of the first node of this group within its rack and prefix.
    pub first: u32,
}

/// Most spines a built-in fabric may declare, and how many it has when it declares none.
pub const MAX_SPINES: u64 = 256;
pub const SPINES: usize = 4;

#[derive(Debug, Clone, Serialize)]
pub struct Fabric {
    pub kind: String,
    /// Leaf downlink : uplink capacity, 1.0 for non-blocking.
    pub oversubscription: f64,
    pub latency: Option<Duration>,
    pub spine_uplink: Option<Bandwidth>,
    /// Each zone's uplink capacity to the inter-zone core (per direction); without it zones
    /// are joined without further oversubscription.
    pub zone_uplink: Option<Bandwidth>,
    /// The switches and links of `fabric explicit { ... }` (`super::topology`).
    pub topology: Option<Box<super::topology::Topology>>,
    /// Spine switches per zone of a built-in leaf-spine fabric, the ECMP width (`spines N`,
    /// default [`SPINES`]).
    pub spines: usize,
}

/// One expanded node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRef<'a> {
    pub name: String,
    pub node_type: &'a str,
    pub rack: usize,
}

impl Cluster {
    pub fn node_count(&self) -> u64 {
        self.groups.iter().map(|g| u64::from(g.count)).sum()
    }

    fn node_name(&self, g: &NodeGroup, k: u32) -> String {
        let rack = &self.racks[g.rack].name;
        if rack.is_empty() {
            format!("{}{}", g.prefix, g.first + k)
        } else {
            format!("{rack}.{}{}", g.prefix, g.first + k)
        }
    }

    /// The name of the node at `index` (declaration order), in O(groups).
    pub fn node_name_at(&self, index: usize) -> Option<String> {
        let mut left = index as u64;
        for g in &self.groups {
            if left < u64::from(g.count) {
                return Some(self.node_name(g, left as u32));
            }
            left -= u64::from(g.count);
        }
        None
    }

    /// The node type of the node at `index` (declaration order), without naming the nodes
    /// before it: O(groups), where `nodes().nth(index)` formats every name it skips.
    pub fn node_type_at(&self, index: usize) -> Option<&str> {
        let mut left = index as u64;
        for g in &self.groups {
            if left < u64::from(g.count) {
                return Some(&g.node_type);
            }
            left -= u64::from(g.count);
        }
        None
    }

    /// Every node, in declaration order.
    pub fn nodes(&self) -> impl Iterator<Item = NodeRef<'_>> {
        self.groups.iter().flat_map(move |g| {
            (0..g.count).map(move |k| NodeRef {
                name: self.node_name(g, k),
                node_type: &g.node_type,
                rack: g.rack,
            })
        })
    }

    /// Resolve a node name without expanding the cluster.
    pub fn find_node(&self, name: &str) -> Option<NodeRef<'_>> {
        let (rack, local) = match name.rsplit_once('.') {
            Some((r, l)) => (r, l),
            None => ("", name),
        };
        let digits = local.len() - local.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (prefix, idx) = local.split_at(local.len() - digits);
        let idx: u32 = idx.parse().ok()?;
        if idx.to_string().len() != digits {
            return None; // leading zeros are not our names
        }
        self.groups
            .iter()
            .find(|g| {
                self.racks[g.rack].name == rack
                    && g.prefix == prefix
                    && idx >= g.first
                    && idx < g.first + g.count
            })
            .map(|g| NodeRef {
                name: name.to_string(),
                node_type: &g.node_type,
                rack: g.rack,
            })
    }

    pub fn rack_index(&self, name: &str) -> Option<usize> {
        self.racks.iter().position(|r| r.name == name)
    }
}
