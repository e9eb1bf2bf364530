//! What the NICs a plan crosses can do: RDMA transports need `rdma true` NICs, GPUDirect ones
//! (`gpudirect_rdma`, `nixl` through a NIC) also `gpudirect true` (the catalog's NIC fields).
//! NCCL is not checked: without GPUDirect it stages through host memory itself and without
//! RDMA falls back to sockets, which this model does not price differently.

use super::params::{TransportKind, TransportParams};
use super::plan::{Plan, TransportError};
use crate::network::Graph;
use crate::scenario::Spec;

/// NIC capabilities per node, in the graph's NIC numbering (each node type's `nic` lines in
/// order, one per location), shared by node type.
#[derive(Debug, Clone, Default)]
pub struct NicTable {
    node_type: Vec<usize>,
    types: Vec<Vec<(bool, bool, String)>>,
}

impl NicTable {
    pub fn new(spec: &Spec) -> NicTable {
        let mut t = NicTable::default();
        let Some(c) = &spec.cluster else { return t };
        let mut names: Vec<&str> = Vec::new();
        for n in c.nodes() {
            let k = match names.iter().position(|x| *x == n.node_type) {
                Some(k) => k,
                None => {
                    names.push(n.node_type);
                    let nics = spec
                        .node_types
                        .get(n.node_type)
                        .map(|nt| {
                            nt.nics
                                .iter()
                                .flat_map(|g| {
                                    let nic = spec.nics.get(&g.nic);
                                    let caps = (
                                        nic.is_some_and(|x| x.rdma),
                                        nic.is_some_and(|x| x.gpudirect),
                                        g.nic.clone(),
                                    );
                                    std::iter::repeat_n(caps, g.at.len())
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    t.types.push(nics);
                    names.len() - 1
                }
            };
            t.node_type.push(k);
        }
        t
    }

    /// (rdma, gpudirect, catalog name) of NIC `nic` of `node`.
    pub fn caps(&self, node: usize, nic: usize) -> Option<(bool, bool, &str)> {
        let (r, g, n) = self.types.get(*self.node_type.get(node)?)?.get(nic)?;
        Some((*r, *g, n))
    }

    /// Whether the NICs `plan` crosses can carry it.
    pub fn check(
        &self,
        graph: &Graph,
        params: &TransportParams,
        plan: &Plan,
    ) -> Result<(), TransportError> {
        let (rdma, gpudirect) = match params.kind {
            TransportKind::Rdma | TransportKind::HostStagedRdma => (true, false),
            TransportKind::GpudirectRdma | TransportKind::Nixl => (true, true),
            _ => return Ok(()),
        };
        for (node, nic) in plan.nics(graph) {
            let Some((r, g, name)) = self.caps(node, nic) else {
                continue;
            };
            let missing = if rdma && !r {
                "RDMA"
            } else if gpudirect && !g {
                "GPUDirect"
            } else {
                continue;
            };
            return Err(TransportError::Unsupported {
                transport: params.name.clone(),
                reason: format!("NIC {name} (node {node}) has no {missing}"),
            });
        }
        Ok(())
    }
}
