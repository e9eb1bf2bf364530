//! Storage targets on the link graph (`storage NAME { ... }` in a cluster): where checkpoints
//! and object spills are written and read back.
//!
//! - `attach fabric`: one [`Vertex::Storage`] behind the fabric, a shared parallel file system
//!   or object store on the data-centre network. It is joined to the top of the fabric: to
//!   every spine of the zone when the cluster has one zone, else to the inter-zone core. Its
//!   declared bandwidth is the aggregate per direction, split evenly over those uplinks (a
//!   100 GB/s system under 4 spines has 25 GB/s per spine uplink; under a core, one 100 GB/s
//!   link). The spec refuses `attach fabric` in a cluster without a `fabric`.
//! - `attach node_local`: one [`Vertex::Disk`] per node (its local NVMe), linked to the node's
//!   host memory — the root complex of NUMA domain 0 — at the declared per-node bandwidth.
//!
//! - Spilling: every node has a local disk its object store spills to. It is the drive of the
//!   first `node_local` storage the cluster declares (so spills and node-local checkpoints
//!   share it), else an undeclared per-node disk at [`SPILL_DISK_BW`] per direction.
//!
//! Links into storage are [`LinkKind::Storage`], with the storage's latency (its `latency`, else
//! the stated default of the spec). Routes start at the node's host memory (checkpoints are
//! staged there): a fabric storage is reached host → compute NIC → leaf → spine (→ core) →
//! storage. The NIC is the node's compute NICs in turn by the flow key (`key mod NICs`), the
//! spine is picked by ECMP on the same key (`key mod` the fabric's spines), as [`Graph::route_vertices`]
//! does. Node types may mark NICs `role storage` or `frontend`, but the graph models no network
//! behind those (only the compute fabric has leaves), so storage traffic shares the compute
//! NICs and fabric — what a cluster whose file system sits on the compute fabric does.

use super::LinkId;
use super::graph::{Graph, LinkKind, Vertex};
use crate::scenario::cluster::{Attach, Cluster};

/// Bandwidth per direction of a node's spill disk when the cluster declares no `node_local`
/// storage: 2 GB/s, an assumption (a datacenter NVMe SSD's sustained sequential rate, not
/// from a datasheet); declare `storage NAME { attach node_local bandwidth ... }` to set it.
pub const SPILL_DISK_BW: f64 = 2e9;

impl Graph {
    /// Add the cluster's storage targets (after the fabric, whose spines and core they join).
    pub(super) fn build_storage(&mut self, c: &Cluster) {
        let core = self.out.contains_key(&Vertex::Core);
        let spines: Vec<Vertex> = self
            .out
            .keys()
            .copied()
            .filter(|v| matches!(v, Vertex::Spine { .. }))
            .collect();
        for (index, st) in c.storage.iter().enumerate() {
            self.storage.push(st.attach);
            let latency = st.latency.0 as f64 * 1e-9;
            let bw = st.bandwidth.0;
            let sv = Vertex::Storage { index };
            match st.attach {
                Attach::Fabric if core => {
                    self.link(Vertex::Core, sv, bw, LinkKind::Storage, latency)
                }
                Attach::Fabric => {
                    for &s in &spines {
                        let share = bw / spines.len() as f64;
                        self.link(s, sv, share, LinkKind::Storage, latency);
                    }
                }
                Attach::NodeLocal => {
                    if self.spill.is_none() {
                        self.spill = Some(index);
                    }
                    self.node_disks(index, bw, latency);
                }
            }
        }
    }

    /// Give every node a spill disk when no declared `node_local` storage is one: a
    /// [`Vertex::Disk`] with index one past the declared storage targets, at [`SPILL_DISK_BW`].
    pub(super) fn build_spill_disks(&mut self, c: &Cluster) {
        if self.spill.is_some() {
            return;
        }
        let index = c.storage.len();
        self.spill_implicit = true;
        self.spill = Some(index);
        self.node_disks(index, SPILL_DISK_BW, 0.0);
    }

    /// A drive on every node, behind its host memory (NUMA domain 0): storage target `index`.
    fn node_disks(&mut self, index: usize, bw: f64, latency: f64) {
        for node in 0..self.nodes() {
            self.link(
                Vertex::Root { node, numa: 0 },
                Vertex::Disk {
                    node,
                    storage: index,
                },
                bw,
                LinkKind::Storage,
                latency,
            );
        }
    }

    /// The declared `node_local` storage target spills go to, or `None` when they go to the
    /// undeclared disk at [`SPILL_DISK_BW`].
    pub fn spill_storage(&self) -> Option<usize> {
        if self.spill_implicit {
            None
        } else {
            self.spill
        }
    }

    /// The link of a spill from `node`'s host memory (NUMA domain 0) to its spill disk
    /// (`write`), or of a restore from the disk back to host memory.
    pub fn route_spill(&self, node: usize, write: bool) -> Option<Vec<LinkId>> {
        let storage = self.spill?;
        let (host, disk) = (
            Vertex::Root { node, numa: 0 },
            Vertex::Disk { node, storage },
        );
        let l = if write {
            self.link_between(host, disk)?
        } else {
            self.link_between(disk, host)?
        };
        Some(vec![l])
    }

    /// How storage target `storage` is attached; `None` for an index the cluster lacks.
    pub fn storage_attach(&self, storage: usize) -> Option<Attach> {
        self.storage.get(storage).copied()
    }

    /// The route of a write from `node`'s host memory (NUMA domain 0) to storage target
    /// `storage`: node-local, host → drive; fabric, host → compute NIC (`key mod NICs`) → leaf
    /// → spine (ECMP, `key mod` the fabric's spines) [→ core] → storage. `None` when the node, the storage
    /// or a link on the way is missing (a node without compute NICs, every NIC disabled).
    pub fn route_to_storage(&self, node: usize, storage: usize, key: u64) -> Option<Vec<LinkId>> {
        if node >= self.nodes() {
            return None;
        }
        let host = Vertex::Root { node, numa: 0 };
        match self.storage_attach(storage)? {
            Attach::NodeLocal => Some(vec![
                self.link_between(host, Vertex::Disk { node, storage })?,
            ]),
            Attach::Fabric => {
                let nics = self.nics.get(node)?;
                let n = *nics.get((key % nics.len().max(1) as u64) as usize)?;
                let nic = Vertex::Nic { node, nic: n.nic };
                let leaf = Vertex::Leaf {
                    rack: self.node_rack[node],
                    rail: n.rail,
                };
                let spine = Vertex::Spine {
                    zone: self.rack_zone[self.node_rack[node]],
                    spine: (key % self.spines.max(1) as u64) as usize,
                };
                let sv = Vertex::Storage { index: storage };
                let mut path = self.route_vertices(host, nic, key)?;
                path.push(self.link_between(nic, leaf)?);
                path.push(self.link_between(leaf, spine)?);
                if let Some(l) = self.link_between(spine, sv) {
                    path.push(l);
                } else {
                    path.push(self.link_between(spine, Vertex::Core)?);
                    path.push(self.link_between(Vertex::Core, sv)?);
                }
                Some(path)
            }
        }
    }

    /// The route of a read (a checkpoint load) from storage target `storage` to `node`'s host
    /// memory: [`Graph::route_to_storage`] with the same `key`, each link in the other direction.
    pub fn route_from_storage(&self, node: usize, storage: usize, key: u64) -> Option<Vec<LinkId>> {
        let to = self.route_to_storage(node, storage, key)?;
        to.iter()
            .rev()
            .map(|l| {
                let (a, b) = self.ends[*l];
                self.link_between(b, a)
            })
            .collect()
    }
}
