//! A tenant's transport rules applied to its training jobs' collectives (issue 41): a job of
//! a tenant that may not use RDMA (`no_rdma`, or `transports [...]` without `nccl`) runs its
//! inter-node collective hops over NCCL's socket transport, at
//! [`crate::network::collective::SOCKET_SHARE`] of the NICs' line rate, and the run says so.
//! Which transport that is, is decided in one place, `scenario::transport::collective_net`; `check`
//! refuses a tenant that allows neither `nccl` nor `tcp` for a job with collectives, so the
//! run never meets one.

use super::{NodeId, network};
use crate::scenario::transport::{CollectiveNet, collective_net};
use crate::sim::World;
use crate::sim::training::Jobs;
use std::collections::BTreeMap;

impl Jobs {
    /// Job `j`'s tenant and how its collectives cross nodes.
    pub(super) fn job_net(&self, world: &World<'_>, j: u32) -> (Option<usize>, CollectiveNet) {
        let w = &world.spec.workloads[self.list[j as usize].workload];
        let tenant = w.tenant.as_ref().and_then(|t| world.state.tenant_index(t));
        (tenant, world.tenant_net(tenant))
    }

    /// At a job's (re)start over `per_node`: when its collectives cross nodes, note the
    /// transport its tenant's rules leave them (sockets only: verbs are the default) and
    /// record the traffic for [`super::TransferRecord`] replays.
    pub(super) fn note_job_net(
        &mut self,
        world: &mut World<'_>,
        j: u32,
        per_node: &BTreeMap<NodeId, u32>,
    ) {
        if per_node.values().filter(|d| **d > 0).count() < 2 {
            return;
        }
        let job = &self.list[j as usize];
        let wl = &world.spec.workloads[job.workload];
        let t = &wl.training[job.index];
        if t.collectives.is_empty() && t.model.is_none() {
            return;
        }
        let (tenant, net) = self.job_net(world, j);
        if net == CollectiveNet::Socket {
            let who = tenant
                .and_then(|i| world.spec.tenants.get(i))
                .map(|tn| {
                    let why = if tn.no_rdma {
                        "`no_rdma`"
                    } else {
                        "`transports` without `nccl`"
                    };
                    format!("tenant `{}` ({why})", tn.name)
                })
                .unwrap_or_default();
            world.net.note(
                network::MovementKind::Collective,
                true,
                format!(
                    "training {}.{} of {who}: collectives cross nodes over NCCL's socket \
                     transport (NCCL_IB_DISABLE=1, no RDMA) at {} of the NICs' line rate \
                     (src/network/collective SOCKET_SHARE); hops inside a node are unchanged",
                    wl.name,
                    t.name,
                    crate::network::collective::SOCKET_SHARE
                ),
            );
        }
        if let Some(log) = &mut world.transfers {
            // The declared collectives' bytes per step; a model-level job's traffic is derived
            // by its plan, so its record carries the transport only (0 bytes).
            let bytes = t.collectives.iter().map(|c| c.bytes.0 as f64).sum();
            log.push(super::TransferRecord {
                time: world.q.now(),
                tenant,
                transport: net.transport().to_string(),
                bytes,
            });
        }
    }
}

impl World<'_> {
    /// How collectives of work of `tenant` (an index into `spec.tenants`) cross nodes.
    pub(super) fn tenant_net(&self, tenant: Option<usize>) -> CollectiveNet {
        let rules = tenant.and_then(|t| self.spec.tenants.get(t));
        // `check` refuses rules that leave no transport (see the module docs); were one to
        // get here, sockets are the slower of the two, never a silent RDMA path.
        collective_net(rules).unwrap_or(CollectiveNet::Socket)
    }
}

/// The share of a NIC's line rate a tenant's collectives reach over `net`.
pub(crate) fn share(net: CollectiveNet) -> f64 {
    match net {
        CollectiveNet::Verbs => 1.0,
        CollectiveNet::Socket => crate::network::collective::SOCKET_SHARE,
    }
}
