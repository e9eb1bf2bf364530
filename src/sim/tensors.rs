//! Actor calls' tensors on the run's network (`tensor BYTES to NAME` in an actor).
//!
//! Each method call of an actor with a `tensor` sends its result, `BYTES`, to one actor of the
//! group `NAME`: the c-th call (c = 0, 1, ...) of the k-th actor of the sending group goes to
//! actor (k + c) mod M of the receiving group of M actors, or, when that one is not running
//! (not placed yet, restarting, dead), to the next running one in that order. The tensor moves
//! with the sender's transport (its `transport`, else its workload's, else Ray's object store;
//! a run's transport override wins; a tenant's rules apply as for fetches) from the sender's
//! device to the receiver's (the first device instance each holds; host memory for an actor
//! without devices), as [`crate::transport::shared`] splits the plan: its fixed part as a
//! delay, then its wire bytes as a flow on the shared network. Assumption: calls are
//! synchronous, as a caller doing `ray.get` on each: the next call starts when the tensor has
//! arrived. With no receiver running, the call waits for one to be placed; when every actor of
//! the receiving group is dead (or infeasible) the call fails. A sender or receiver lost
//! while the tensor moves stops it; the sender's call is lost with it (`failures/`), a
//! receiver's loss sends the tensor again to the next running actor. Sender and receiver on
//! the same device move nothing.

use super::network::{Flow, MovementKind, Rank};
use super::timeline::{End, MoveKey, MoveKind};
use super::wire::Owner;
use super::{Effect, Sim, models::secs};
use crate::sim::World;
use crate::sim::actors::Actors;

impl Sim<'_> {
    /// Node `n` died: tensors on their way to an actor there go to another receiver (after
    /// the actors lost with `n` have been taken off it).
    pub(crate) fn resend_tensors_to(&mut self, n: usize) {
        for a in 0..self.actors.list.len() {
            let ac = &self.actors.list[a];
            if ac.send_node == Some(n) && ac.node.is_some() && !ac.dead {
                self.actors.cancel_tensor(&mut self.w, a);
                let effect = self.actors.send_tensor(&mut self.w, a as u32);
                self.apply(effect);
            }
        }
    }

    /// Actor `a` was placed: note its device, and send the tensors of calls that waited for a
    /// receiver.
    pub(super) fn actor_placed(&mut self, a: u32) {
        let dev = self.actors.list[a as usize]
            .alloc
            .as_ref()
            .and_then(|al| {
                al.instances
                    .iter()
                    .filter(|(rid, _)| self.w.unit_ids.contains(rid))
                    .find_map(|(_, amounts)| amounts.iter().position(|x| *x > 0))
            })
            .unwrap_or(0);
        self.actors.list[a as usize].dev = dev as u32;
        self.wake_senders(self.actors.list[a as usize].group);
    }

    /// An actor of group `g` was placed or died for good: calls waiting for a receiver in
    /// `g` try again (and send, or fail when none can ever run).
    pub(crate) fn wake_senders(&mut self, g: usize) {
        if !self.actors.groups.iter().any(|x| x.tensor_to == Some(g)) {
            return;
        }
        let waiting: Vec<u32> = (0..self.actors.list.len() as u32)
            .filter(|&s| {
                let x = &self.actors.list[s as usize];
                x.send_wait && self.actors.groups[x.group].tensor_to == Some(g)
            })
            .collect();
        for s in waiting {
            let effect = self.actors.send_tensor(&mut self.w, s);
            self.apply(effect);
        }
    }
}

impl Actors {
    /// Actor `a`'s call finished computing: send its tensor.
    pub(super) fn send_tensor(&mut self, world: &mut World<'_>, a: u32) -> Effect {
        let epoch = self.list[a as usize].epoch;
        let rx = match self.receiver(world, a) {
            Ok(r) => r,
            Err(true) => {
                return self.finish_call(world, a, epoch, false);
            }
            Err(false) => {
                self.list[a as usize].send_wait = true;
                return Effect::Nothing;
            }
        };
        let spec = world.spec;
        let (g, sender) = (self.list[a as usize].group, &self.list[a as usize]);
        let ag = &self.groups[g];
        let w = &spec.workloads[ag.workload];
        let sa = &w.actors[ag.index];
        let bytes = sa.tensor.as_ref().map_or(0.0, |t| t.bytes.0 as f64);
        let name = world.transport_named([&sa.transport, &w.transport]);
        let what = format!(
            "tensor {}.{} to {}",
            w.name,
            sa.name,
            sa.tensor.as_ref().map_or("", |t| t.to.as_str())
        );
        let tenant = ag.tenant;
        let recv = &self.list[rx as usize];
        let (src_n, dst_n) = (sender.node.unwrap_or(0), recv.node.unwrap_or(0));
        let units = |x: &super::actors::Actor| {
            if x.holds {
                world.device_units(&x.request)
            } else {
                0.0
            }
        };
        let device = units(sender) > 0.0
            && units(recv) > 0.0
            && world.node_accel[src_n].is_some()
            && world.node_accel[dst_n].is_some();
        let (src, dst) = ((src_n, sender.dev as usize), (dst_n, recv.dev as usize));
        let name = world.allowed_or_fallback(MovementKind::Tensor, tenant, name, &what);
        if let Some(log) = &mut world.transfers {
            log.push(super::TransferRecord {
                time: world.q.now(),
                tenant,
                transport: name.clone(),
                bytes,
            });
        }
        let Ok((fixed, flow)) = world.price_move(
            MovementKind::Tensor,
            &what,
            &name,
            src,
            dst,
            device,
            bytes,
            a,
        ) else {
            // The transport cannot reach the receiver: the call fails (Ray raises the
            // transport's error in the caller's `ray.get`), and the next one starts.
            return self.finish_call(world, a, epoch, false);
        };
        let now = world.now();
        if world.tl.on && src != dst && bytes > 0.0 {
            let k = self.list[a as usize].index;
            let label = world.label_id(self.label(g));
            let (from, to) = (End::Node(src_n as u32), End::Node(dst_n as u32));
            let p = world.tl.part(
                MoveKind::Tensor,
                label,
                Some(k),
                from,
                to,
                bytes,
                &name,
                None,
            );
            world.tl.begin(MoveKey::Tensor(a), now, vec![p]);
        }
        let ac = &mut self.list[a as usize];
        ac.send_node = Some(dst_n);
        ac.send_from = now;
        ac.send_wait = false;
        ac.send_flows = Some(flow.into_iter().collect());
        world.transfer_after(secs(fixed), Owner::Tensor { actor: a, epoch });
        Effect::Nothing
    }

    /// Actor `a`'s tensor has arrived: its call is done.
    pub(super) fn on_tensor_done(&mut self, world: &mut World<'_>, a: u32, epoch: u32) -> Effect {
        let ac = &mut self.list[a as usize];
        if epoch != ac.epoch {
            return Effect::Nothing;
        }
        ac.send_xfer = None;
        ac.send_node = None;
        let now = world.q.now();
        world.tl.arrived(MoveKey::Tensor(a), now);
        let ac = &self.list[a as usize];
        let took = now - ac.send_from;
        let g = &mut self.groups[ac.group];
        let spec_a = &world.spec.workloads[g.workload].actors[g.index];
        g.tensors += 1;
        g.tensor_bytes += spec_a.tensor.as_ref().map_or(0.0, |t| t.bytes.0 as f64);
        g.tensor_secs += took as f64 / 1e9;
        self.finish_call(world, a, epoch, true)
    }
}

impl World<'_> {
    /// A transfer of `bytes` from `src` to `dst` with transport `name`: the fixed seconds and
    /// the flow on the shared network, noted under `kind` as `what`. `Err` (noted, and counted
    /// in [`World::losses`], the run's `failures.transfers_unavailable`) where the transport cannot move the data between
    /// those ends (NVLink P2P across nodes, RDMA without an RDMA NIC, no route): the caller
    /// fails the work that needed it, as Ray raises the transport's error in it; nothing is
    /// priced by a formula instead.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn price_move(
        &mut self,
        kind: MovementKind,
        what: &str,
        name: &str,
        src: Rank,
        dst: Rank,
        device: bool,
        bytes: f64,
        key: u32,
    ) -> Result<(f64, Option<Flow>), String> {
        if src == dst || bytes <= 0.0 {
            return Ok((0.0, None));
        }
        match self.cached_part(name, src, dst, device, bytes, key) {
            Ok((fixed, wire, cal)) => {
                let cal = if cal.is_empty() {
                    String::new()
                } else {
                    format!("; {}", cal.join(", "))
                };
                self.net.note(
                    kind,
                    true,
                    format!("{what}: transport {name} on the shared network{cal}"),
                );
                Ok((fixed, wire))
            }
            Err(e) => {
                self.unavailable(kind, &format!("{what}: transport {name}"), &e);
                Err(e)
            }
        }
    }
}

impl Actors {
    /// The receiving actor of sender `a`'s current call: the first running actor of its
    /// receiving group from (k + c) mod M on; `Err(true)` when none can ever run.
    fn receiver(&self, world: &World<'_>, a: u32) -> Result<u32, bool> {
        let ac = &self.list[a as usize];
        let g = &self.groups[ac.group];
        let Some(rg) = g.tensor_to else {
            return Err(true);
        };
        let r = &self.groups[rg];
        let m = u64::from(r.count.max(1));
        let calls = world.spec.workloads[g.workload].actors[g.index].calls;
        let c = calls.saturating_sub(ac.calls_left);
        let start = (u64::from(ac.index) + c) % m;
        let mut alive = false;
        for i in 0..m {
            let id = r.first + ((start + i) % m) as u32;
            let x = &self.list[id as usize];
            if x.node.is_some() && !x.dead {
                return Ok(id);
            }
            alive |= !x.dead;
        }
        Err(!alive || r.infeasible >= u64::from(r.count))
    }

    /// Actor `a`'s tensor in flight stops (its sender or receiver was lost).
    pub(crate) fn cancel_tensor(&mut self, world: &mut World<'_>, a: usize) {
        let ac = &mut self.list[a];
        ac.send_flows = None;
        ac.send_node = None;
        if let Some(x) = ac.send_xfer.take() {
            let now = world.now();
            world.wire.cancel(now, x);
            world.rearm_wire();
        }
    }
}
