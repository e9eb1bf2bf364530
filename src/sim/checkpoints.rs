//! Checkpoint writes and loads of training jobs on the run's network: each node of the job's
//! group moves its share of the checkpoint (size / nodes) between its host memory and the
//! storage target the checkpoint names (`checkpoint ... to NAME`), over the route the link
//! graph gives (`Graph::route_to_storage`: compute NIC, leaf, spine, storage; or the node's
//! own drive for `node_local`), as flows that share the network with every other transfer.
//! The job waits for its write to finish (a synchronous checkpoint, as
//! `torch.distributed.checkpoint.save` without async staging) and for its load before it
//! computes again.
//!
//! Assumptions: the device-to-host copy of the state before the write is not modelled (the
//! network or the storage is the bottleneck at these sizes); a scenario that declares no
//! storage gets the closed form of [`super::models::CHECKPOINT_BW_PER_NODE`], and the run says
//! so.

use super::models;
use super::network::MovementKind;
use super::timeline::{End, MoveKey, MoveKind};
use super::training::Jobs;
use super::wire::Owner;
use crate::engine::Time;
use crate::network::LinkId;
use crate::sim::TrainingEv;
use crate::sim::World;
use models::secs;

impl Jobs {
    /// The flows of job `j`'s checkpoint write (or `load`), or `None` when it is priced in
    /// closed form (no storage declared, or a node without a route to it); the run notes which.
    fn checkpoint_flows(
        &mut self,
        world: &mut World<'_>,
        j: u32,
        load: bool,
    ) -> Option<Vec<(Vec<LinkId>, f64)>> {
        let job = &self[j as usize];
        let w = &world.spec.workloads[job.workload];
        let t = &w.training[job.index];
        let c = t.checkpoint.as_ref()?;
        let what = format!("checkpoint {}.{}", w.name, t.name);
        let nodes = &self[j as usize].ckpt_nodes;
        let routes = match (&world.wire.graph, c.storage) {
            (Some(g), Some(s)) => nodes
                .iter()
                .map(|&n| {
                    let key = (n as u64) ^ (u64::from(j) << 32);
                    if load {
                        g.route_from_storage(n, s, key)
                    } else {
                        g.route_to_storage(n, s, key)
                    }
                })
                .collect::<Option<Vec<_>>>()
                .ok_or("a node has no route to the storage"),
            (None, _) => Err("no cluster graph"),
            (_, None) => Err("no storage declared"),
        };
        match routes {
            Ok(routes) if !routes.is_empty() => {
                let name = &world.spec.cluster.as_ref()?.storage[c.storage?].name;
                world.net.note(
                    MovementKind::Checkpoint,
                    true,
                    format!("{what}: to storage `{name}` on the run's shared network"),
                );
                let share = c.size.0 as f64 / routes.len() as f64;
                Some(routes.into_iter().map(|p| (p, share)).collect())
            }
            Ok(_) => None,
            Err(e) => {
                world.net.note(
                    MovementKind::Checkpoint,
                    false,
                    format!(
                        "{what}: closed form ({e}; {} GB/s per node)",
                        models::CHECKPOINT_BW_PER_NODE / 1e9
                    ),
                );
                None
            }
        }
    }

    /// Start writing (or loading) job `j`'s checkpoint on the network; false when it is
    /// priced in closed form instead (the caller waits `ckpt_ns`).
    pub(super) fn start_checkpoint(&mut self, world: &mut World<'_>, j: u32, load: bool) -> bool {
        let Some(flows) = self.checkpoint_flows(world, j, load) else {
            return false;
        };
        let now = world.now();
        if world.tl.on {
            self.begin_checkpoint_record(world, j, load, &flows, now);
        }
        let job = &mut self[j as usize];
        job.ckpt_from = now;
        let epoch = job.epoch;
        let owner = Owner::Checkpoint {
            job: j,
            epoch,
            load,
        };
        match world.wire.start(now, flows, owner) {
            Some(x) => {
                self[j as usize].xfer = Some(x);
                world.rearm_wire();
            }
            None => {
                world.q.after(
                    1,
                    super::Ev::Training(TrainingEv::CheckpointDone(j, epoch, load)),
                );
            }
        }
        true
    }

    /// Timeline: job `j`'s checkpoint write (or `load`) of `flows` (one per node of its
    /// group, in [`PlacementGroups::ranks`] order) begins at `now`, each node's share between it and
    /// the storage target.
    fn begin_checkpoint_record(
        &mut self,
        world: &mut World<'_>,
        j: u32,
        load: bool,
        flows: &[(Vec<LinkId>, f64)],
        now: Time,
    ) {
        let spec = world.spec;
        let label = world.label_id(self.label(j as usize));
        let job = &self[j as usize];
        let w = &spec.workloads[job.workload];
        let t = &w.training[job.index];
        let (Some(c), Some(cl)) = (&t.checkpoint, &spec.cluster) else {
            return;
        };
        let Some(s) = c.storage else { return };
        let transport = match cl.storage[s].attach {
            crate::scenario::cluster::Attach::Fabric => "storage (fabric)",
            crate::scenario::cluster::Attach::NodeLocal => "storage (node_local)",
        };
        let (kind, step) = if load {
            (MoveKind::CheckpointLoad, job.ckpt_steps)
        } else {
            (MoveKind::CheckpointWrite, job.steps_done)
        };
        let nodes = &self[j as usize].ckpt_nodes;
        let target = End::Storage(s as u32);
        let parts = nodes
            .iter()
            .zip(flows)
            .map(|(&n, (_, bytes))| {
                let node = End::Node(n as u32);
                let (from, to) = if load { (target, node) } else { (node, target) };
                world.tl.part(
                    kind,
                    label,
                    None,
                    from,
                    to,
                    *bytes,
                    transport,
                    Some(step as u32),
                )
            })
            .collect();
        world.tl.begin(MoveKey::Checkpoint(j), now, parts);
    }

    /// Job `j`'s checkpoint finished moving: a write counts from now and the next step
    /// starts; a load resumes the job.
    pub(super) fn on_checkpoint_done(
        &mut self,
        world: &mut World<'_>,
        j: u32,
        epoch: u32,
        load: bool,
    ) {
        let now = world.now();
        let job = &mut self[j as usize];
        if epoch != job.epoch {
            return;
        }
        job.xfer = None;
        world.tl.arrived(MoveKey::Checkpoint(j), now);
        if load {
            self.on_job_resume(world, j, epoch);
            return;
        }
        let job = &mut self[j as usize];
        let took: Time = now - job.ckpt_from;
        job.ckpt_total += took;
        job.ckpt_ns = took;
        job.ckpt_at = now;
        job.span_ckpt = took;
        self.begin_step(world, j, 0);
    }
}

/// Seconds of a checkpoint of `size` bytes over `nodes` in closed form.
pub(super) fn closed_form_secs(size: f64, nodes: usize) -> Time {
    secs(size / (models::CHECKPOINT_BW_PER_NODE * nodes.max(1) as f64))
}
