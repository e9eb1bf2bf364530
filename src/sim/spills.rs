//! Spills and restores on the run's network.
//!
//! A task whose output does not fit under its node's spilling threshold (`objects.rs`) writes
//! it from host memory to the node's spill disk as a flow (`Graph::route_spill`: the drive of
//! the first `node_local` storage, which node-local checkpoints share, else each node's
//! undeclared disk at [`crate::network::SPILL_DISK_BW`]); the task completes when the write
//! has (its return object must exist somewhere before its result does: Ray blocks the object's
//! creation until spilling has made room). A consumer reads the spilled share of its inputs
//! back from each holder's disk into that holder's host memory, one flow per holder node,
//! before its input fetch starts (Ray restores a spilled object into the object store of the
//! node that spilled it and pushes it from there): the restore delays the task's start. Each
//! consumer reads its own share; restored copies are not counted in the object store.
//! Reads and writes of a disk are separate directions of its link, each at the bandwidth
//! declared per direction. Where no disk route exists (no cluster graph) the closed form
//! bytes / [`crate::network::SPILL_DISK_BW`] is used and the run says so.

use super::network::MovementKind;
use super::timeline::{End, MoveKey, MoveKind};
use super::wire::Owner;
use super::{Effect, Ev, models::secs};
use crate::network::{LinkId, SPILL_DISK_BW};
use crate::placement::NodeId;
use crate::sim::TaskEv;
use crate::sim::World;
use crate::sim::tasks::Tasks;

impl Tasks {
    /// Task `t`'s spill is written: it completes.
    pub(super) fn on_spill_done(&mut self, world: &mut World<'_>, t: u32, epoch: u32) -> Effect {
        world.store.xfer.remove(&t);
        if epoch != self.epoch[t as usize] {
            return Effect::Nothing;
        }
        let now = world.now();
        world.tl.arrived(MoveKey::Spill(t), now);
        world.store.spill_state[t as usize] = 2;
        self.on_task_done(world, t, epoch)
    }

    /// Bytes task `t` of `gi` reads back from each holder node's disk (spilled inputs that
    /// still exist), by node.
    fn restore_parts(&self, world: &World<'_>, t: u32, gi: usize) -> Vec<(usize, f64)> {
        let any = self
            .groups
            .iter()
            .any(|p| p.spilled_bytes > 0.0 && p.dependents.contains(&(gi as u32)));
        if !any {
            return Vec::new();
        }
        let mut by: std::collections::BTreeMap<usize, f64> = Default::default();
        for (pt, bytes) in self.input_parts(world, t, gi) {
            let holder = self.node[pt];
            if holder == u32::MAX
                || !world.store.spilled.get(pt).copied().unwrap_or(false)
                || !self.output_alive(world, pt, holder as usize)
            {
                continue;
            }
            *by.entry(holder as usize).or_insert(0.0) += bytes;
        }
        by.into_iter().collect()
    }

    /// Task `t` of `gi` was placed on `node`: read its spilled inputs back from disk, then
    /// fetch its inputs (`start_fetch`), then run.
    pub(super) fn start_task_work(
        &mut self,
        world: &mut World<'_>,
        t: u32,
        gi: usize,
        node: NodeId,
        units: f64,
    ) {
        let parts = if self.groups[gi].input_bytes > 0.0 {
            self.restore_parts(world, t, gi)
        } else {
            Vec::new()
        };
        if parts.is_empty() {
            self.start_fetch(world, t, gi, node, units, 0.0);
            return;
        }
        let what = {
            let g = &self.groups[gi];
            let w = &world.spec.workloads[g.workload];
            format!("object restore {}.{}", w.name, w.tasks[g.index].name)
        };
        let routes: Option<Vec<(Vec<LinkId>, f64)>> = parts
            .iter()
            .map(|&(h, b)| {
                let g = world.wire.graph.as_ref()?;
                Some((g.route_spill(h, false)?, b))
            })
            .collect();
        let Some(flows) = routes else {
            let s = parts
                .iter()
                .map(|(_, b)| b / SPILL_DISK_BW)
                .fold(0.0, f64::max);
            world.note_no_disk_route(&what);
            world.store.restore_secs += s;
            self.start_fetch(world, t, gi, node, units, s);
            return;
        };
        let from = world.spill_target();
        world.net.note(
            MovementKind::Spill,
            true,
            format!("{what}: from {from} of the holders on the run's shared network"),
        );
        let now = world.now();
        let epoch = self.epoch[t as usize];
        world
            .net
            .fetch_from
            .insert(t, parts.iter().map(|(h, _)| *h as u32).collect());
        world.store.spill_from.insert(t, now);
        if world.tl.on {
            let label = self.task_label(world, gi);
            let ends: Vec<(End, usize, f64)> = parts
                .iter()
                .map(|&(h, b)| (world.disk_end(h), h, b))
                .collect();
            let parts = ends
                .into_iter()
                .map(|(disk, h, b)| {
                    let to = End::Node(h as u32);
                    world
                        .tl
                        .part(MoveKind::Restore, label, Some(t), disk, to, b, "disk", None)
                })
                .collect();
            world.tl.begin(MoveKey::Restore(t), now, parts);
        }
        match world
            .wire
            .start(now, flows, Owner::Restore { task: t, epoch })
        {
            Some(x) => {
                world.store.xfer.insert(t, x);
                world.rearm_wire();
            }
            None => {
                world.store.spill_from.remove(&t);
                self.start_fetch(world, t, gi, node, units, 0.0);
            }
        }
    }

    /// Task `t`'s spilled inputs are back in their holders' memory: its fetch starts.
    pub(super) fn on_restore_done(&mut self, world: &mut World<'_>, t: u32, epoch: u32) {
        world.store.xfer.remove(&t);
        if epoch != self.epoch[t as usize] {
            return;
        }
        let now = world.now();
        world.tl.arrived(MoveKey::Restore(t), now);
        if let Some(from) = world.store.spill_from.remove(&t) {
            world.store.restore_secs += (now - from) as f64 / 1e9;
        }
        let gi = self.group_of(t);
        let node = self.node[t as usize] as usize;
        let units = world.device_units(&self.groups[gi].request);
        self.start_fetch(world, t, gi, node, units, 0.0);
    }
}

impl Tasks {
    /// Timeline: the label of task `t` of group `gi`.
    pub(super) fn task_label(&mut self, world: &mut World<'_>, gi: usize) -> u32 {
        world.label_id(self.label(gi))
    }

    /// Task `t` of `gi` finished computing on `node` (attempt `epoch`): when its output goes
    /// to disk, start writing it and return true (the task completes when the write does).
    pub(super) fn begin_spill(
        &mut self,
        world: &mut World<'_>,
        t: u32,
        gi: usize,
        node: NodeId,
        epoch: u32,
    ) -> bool {
        self.size_store_arrays(world);
        let now = world.now();
        match world.store.spill_state[t as usize] {
            2 => {
                if let Some(from) = world.store.spill_from.remove(&t) {
                    world.store.spill_secs += (now - from) as f64 / 1e9;
                }
                return false;
            }
            1 => return true,
            _ => {}
        }
        if !self.would_spill(world, gi, node) {
            return false;
        }
        let o = self.output_bytes(world, gi);
        let what = {
            let g = &self.groups[gi];
            let w = &world.spec.workloads[g.workload];
            format!("object spill {}.{}", w.name, w.tasks[g.index].name)
        };
        world.store.spill_state[t as usize] = 1;
        world.store.spill_from.insert(t, now);
        let route = world
            .wire
            .graph
            .as_ref()
            .and_then(|g| g.route_spill(node, true));
        let Some(path) = route else {
            world.note_no_disk_route(&what);
            world.store.spill_state[t as usize] = 2;
            let d = secs(o / SPILL_DISK_BW).max(1);
            world.q.after(d, Ev::Task(TaskEv::Done(t, epoch)));
            return true;
        };
        let to = world.spill_target();
        world.net.note(
            MovementKind::Spill,
            true,
            format!("{what}: to {to} on the run's shared network"),
        );
        if world.tl.on {
            let (label, disk) = (self.task_label(world, gi), world.disk_end(node));
            let from = End::Node(node as u32);
            let p = world
                .tl
                .part(MoveKind::Spill, label, Some(t), from, disk, o, "disk", None);
            world.tl.begin(MoveKey::Spill(t), now, vec![p]);
        }
        match world
            .wire
            .start(now, [(path, o)], Owner::Spill { task: t, epoch })
        {
            Some(x) => {
                world.store.xfer.insert(t, x);
                world.rearm_wire();
            }
            None => {
                world.store.spill_state[t as usize] = 2;
                world.q.after(1, Ev::Task(TaskEv::Done(t, epoch)));
            }
        }
        true
    }
}

impl Tasks {
    /// Producer tasks whose outputs task `t` of `gi` reads, with the bytes of each (the object
    /// directory's ranges, `network.rs`).
    pub(crate) fn input_parts(&self, world: &World<'_>, t: u32, gi: usize) -> Vec<(usize, f64)> {
        let g = &self.groups[gi];
        let c = f64::from(g.count.max(1));
        let i = f64::from(t - g.first);
        let mut out = Vec::new();
        for (a, p) in self.groups.iter().enumerate() {
            if !p.dependents.contains(&(gi as u32)) {
                continue;
            }
            let o = self.output_bytes(world, a);
            if o <= 0.0 {
                continue;
            }
            let pc = f64::from(p.count);
            let (lo, hi) = (i * pc / c, (i + 1.0) * pc / c);
            for k in lo.floor() as u32..(hi.ceil() as u32).min(p.count) {
                let share = (hi.min(f64::from(k + 1)) - lo.max(f64::from(k))).max(0.0);
                if share > 0.0 {
                    out.push(((p.first + k) as usize, share * o));
                }
            }
        }
        out
    }
}

impl World<'_> {
    /// No route to a disk (no graph): `what` is priced in closed form, and the run says so.
    fn note_no_disk_route(&mut self, what: &str) {
        self.net.note(
            MovementKind::Spill,
            false,
            format!(
                "{what}: closed form (no disk route; {} GB/s)",
                SPILL_DISK_BW / 1e9
            ),
        );
    }

    /// Where spills go, for the run's notes.
    fn spill_target(&self) -> String {
        let g = self.wire.graph.as_ref();
        match (g.and_then(|g| g.spill_storage()), &self.spec.cluster) {
            (Some(s), Some(c)) => {
                format!("the drive of node-local storage `{}`", c.storage[s].name)
            }
            _ => format!(
                "each node's spill disk ({} GB/s per direction, an assumption: no node-local storage declared)",
                SPILL_DISK_BW / 1e9
            ),
        }
    }

    /// Timeline: where node `n`'s spills go — the node-local storage whose drive it uses,
    /// else its own undeclared disk.
    fn disk_end(&self, n: usize) -> End {
        match self.wire.graph.as_ref().and_then(|g| g.spill_storage()) {
            Some(s) => End::Storage(s as u32),
            None => End::Disk(n as u32),
        }
    }

    /// Task `t` was killed or must fetch again: its spill or restore leaves the network.
    pub(crate) fn cancel_spill_io(&mut self, t: u32) {
        self.store.spill_from.remove(&t);
        if let Some(s) = self.store.spill_state.get_mut(t as usize) {
            *s = 0;
        }
        if let Some(x) = self.store.xfer.remove(&t) {
            let now = self.now();
            self.wire.cancel(now, x);
            self.rearm_wire();
        }
    }
}
