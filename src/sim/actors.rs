//! Actors: groups of long-lived workers placed once, each running its method calls one
//! after another, holding its resources (or, without `resources`, 1 CPU to be placed and
//! nothing while it runs) until its calls are done.
//!
//! Architecture invariant: never calls `crate::placement`; actors are placed through
//! `scheduling` (`submit`, `dispatch`).

use super::schedulable::{Ask, Schedulable};
use super::{Effect, Ev, Sim, Work, World};
use crate::engine::Time;
use crate::placement::{Allocation, NodeId, Request};
use crate::scenario::Spec;
use crate::scenario::workload::Policy;
use std::collections::BTreeMap;

/// Every actor group and every actor, by index.
#[derive(Default)]
pub(super) struct Actors {
    pub(super) groups: Vec<ActorGroup>,
    pub(super) list: Vec<Actor>,
}

pub(super) struct Actor {
    pub(super) group: usize,
    pub(super) request: Request,
    pub(super) holds: bool,
    pub(super) calls_left: u64,
    pub(super) call_ns: Time,
    pub(super) node: Option<NodeId>,
    pub(super) alloc: Option<Allocation>,
    pub(super) submitted: Time,
    pub(super) epoch: u32,
    pub(super) restarts_left: i64,
    /// Retries left for a method call lost with the actor (`max_task_retries`, -1: unlimited).
    pub(super) task_retries_left: i64,
    pub(super) dead: bool,
    /// Position in its group, and the first device instance it holds (0 without devices).
    pub(super) index: u32,
    pub(super) dev: u32,
    /// The tensor of its current call (`tensors.rs`): the receiving actor's node, the flows
    /// waiting for the fixed part, the transfer, when it was sent, and whether the call
    /// waits for a receiver to be placed.
    pub(super) send_node: Option<NodeId>,
    pub(super) send_flows: Option<Vec<(Vec<crate::network::LinkId>, f64)>>,
    pub(super) send_xfer: Option<super::wire::TransferId>,
    pub(super) send_from: Time,
    pub(super) send_wait: bool,
}

pub(super) struct ActorGroup {
    pub(super) workload: usize,
    pub(super) index: usize,
    pub(super) tenant: Option<usize>,
    pub(super) policy: Policy,
    pub(super) placed: u64,
    pub(super) infeasible: u64,
    pub(super) calls_done: u64,
    pub(super) calls_failed: u64,
    pub(super) delays: super::durations::Durations,
    /// First actor id and actor count of the group; the group its tensors go to.
    pub(super) first: u32,
    pub(super) count: u32,
    pub(super) tensor_to: Option<usize>,
    /// Tensors delivered, their bytes and seconds in flight.
    pub(super) tensors: u64,
    pub(super) tensor_bytes: f64,
    pub(super) tensor_secs: f64,
}

impl Sim<'_> {
    /// The actors of workload `wi`, each submitted now.
    pub(super) fn start_actors(
        &mut self,
        wi: usize,
        w: &crate::scenario::workload::Workload,
        tenant: Option<usize>,
    ) {
        // Actors.
        for (ai, a) in w.actors.iter().enumerate() {
            let (request, holds) = match &a.resources {
                Some(r) => (self.w.state.request_with_memory(r, a.device_memory), true),
                None => (
                    self.w
                        .state
                        .request(&BTreeMap::from([("CPU".to_string(), 1.0)])),
                    false,
                ),
            };
            let ag = self.actors.groups.len();
            let base = self.actors.groups.len() - ai;
            let tensor_to = a
                .tensor
                .as_ref()
                .and_then(|t| w.actors.iter().position(|x| x.name == t.to))
                .map(|i| base + i);
            self.actors.groups.push(ActorGroup {
                first: self.actors.list.len() as u32,
                count: a.count as u32,
                tensor_to,
                tensors: 0,
                tensor_bytes: 0.0,
                tensor_secs: 0.0,
                workload: wi,
                index: ai,
                tenant,
                policy: w.policy,
                placed: 0,
                infeasible: 0,
                calls_done: 0,
                calls_failed: 0,
                delays: Default::default(),
            });
            for index in 0..a.count {
                let id = self.actors.list.len() as u32;
                self.actors.list.push(Actor {
                    group: ag,
                    request: request.clone(),
                    holds,
                    calls_left: a.calls,
                    call_ns: a.call_duration.map(|d| d.0).unwrap_or(0),
                    node: None,
                    alloc: None,
                    submitted: 0,
                    epoch: 0,
                    restarts_left: a.max_restarts,
                    task_retries_left: a.max_task_retries,
                    dead: false,
                    index: index as u32,
                    dev: 0,
                    send_node: None,
                    send_flows: None,
                    send_xfer: None,
                    send_from: 0,
                    send_wait: false,
                });
                self.submit(Work::Actor(id));
            }
        }
    }

    /// Actor `a` was placed on `node` with `alloc`: it holds its resources while it runs
    /// (with `resources`), or gives back the CPU it needed to be placed (Ray's default), and
    /// its first call is due.
    pub(super) fn actor_started(
        &mut self,
        a: u32,
        node: NodeId,
        alloc: Allocation,
        units: f64,
        tenant: Option<usize>,
    ) {
        let now = self.w.now();
        let ac = &mut self.actors.list[a as usize];
        ac.node = Some(node);
        let g = &mut self.actors.groups[ac.group];
        g.placed += 1;
        g.delays.record_ns(now - ac.submitted);
        if ac.holds {
            ac.alloc = Some(alloc);
            self.w.busy(node, units, now);
        } else {
            // Ray's default actor: 1 CPU to be placed, 0 while running.
            self.w.free(&alloc, tenant);
        }
        self.actor_placed(a);
        let ac = &self.actors.list[a as usize];
        if ac.calls_left > 0 {
            self.w.q.after(ac.call_ns, Ev::ActorCall(a, ac.epoch));
        } else if ac.holds && ac.call_ns == 0 {
            // Long-lived actor with no calls: holds its resources for the whole run.
        }
        if !self.actors.list[a as usize].holds {
            self.dispatch(node);
        }
    }
}

impl Actors {
    /// A method call of actor `a` finished computing; stale calls (the actor was lost) are
    /// ignored. With a `tensor`, the call ends when its tensor has arrived (`tensors.rs`).
    pub(super) fn on_actor_call(&mut self, world: &mut World<'_>, a: u32, epoch: u32) -> Effect {
        if epoch != self.list[a as usize].epoch {
            return Effect::Nothing;
        }
        self.record_call(world, a);
        if self.groups[self.list[a as usize].group].tensor_to.is_some() {
            return self.send_tensor(world, a);
        }
        self.finish_call(world, a, epoch, true)
    }

    /// Actor `a`'s call is over (done, or failed when `!ok`): the next one starts, or the
    /// actor is done.
    pub(super) fn finish_call(
        &mut self,
        world: &mut World<'_>,
        a: u32,
        epoch: u32,
        ok: bool,
    ) -> Effect {
        let now = world.now();
        let ac = &mut self.list[a as usize];
        ac.calls_left -= 1;
        let g = ac.group;
        if ok {
            self.groups[g].calls_done += 1;
        } else {
            self.groups[g].calls_failed += 1;
        }
        if self.list[a as usize].calls_left > 0 {
            let d = self.list[a as usize].call_ns.max(1);
            world.q.after(d, Ev::ActorCall(a, epoch));
            return Effect::Nothing;
        }
        world.makespan = world.makespan.max(now);
        let ac = &mut self.list[a as usize];
        let (Some(alloc), Some(node)) = (ac.alloc.take(), ac.node) else {
            return Effect::Nothing;
        };
        let tenant = self.groups[g].tenant;
        world.free(&alloc, tenant);
        let units = world.device_units(&self.list[a as usize].request);
        world.busy(node, -units, now);
        // The actor is done: what waits may start on its node.
        Effect::Dispatch(node)
    }
}

impl Actors {
    /// Actor `a` computed a method call, `call_duration` until now: the devices and CPUs it
    /// holds were busy (utilization, and the timeline's device and CPU tracks). An actor
    /// without `resources` holds nothing while it runs, so nothing is counted.
    fn record_call(&mut self, world: &mut World<'_>, a: u32) {
        let now = world.now();
        let ac = &self.list[a as usize];
        let (Some(node), true) = (ac.node, ac.alloc.is_some()) else {
            return;
        };
        let from = now.saturating_sub(ac.call_ns);
        if from >= now {
            return;
        }
        let g = ac.group;
        let units = world.device_units(&ac.request);
        let cpus = super::cpu::cpus_of(&ac.request);
        world.worked(node, units, from, now);
        world.cpu_worked(node, cpus, from, now, self.label(g));
        if world.tl.on && units > 0.0 {
            let ac = &self.list[a as usize];
            let devs = world.alloc_devices(node, ac.alloc.as_ref());
            let label = world.label_id(self.label(g));
            world
                .tl
                .span(&devs, from, now, super::timeline::SpanKind::Compute, label);
        }
    }
}

impl Schedulable for Actors {
    fn class_of(&self, a: u32) -> u32 {
        self.list[a as usize].group as u32
    }

    fn class_tenant(&self, g: u32) -> Option<usize> {
        self.groups[g as usize].tenant
    }

    fn ask<'s>(&self, spec: &'s Spec, a: u32) -> Ask<'s> {
        let ac = &self.list[a as usize];
        let g = &self.groups[ac.group];
        let sa = &spec.workloads[g.workload].actors[g.index];
        Ask {
            request: ac.request.clone(),
            strategy: &sa.strategy,
            selector: &sa.label_selector,
            fallbacks: &sa.fallbacks,
            tenant: g.tenant,
            policy: g.policy,
        }
    }

    fn infeasible(&mut self, _: &mut World<'_>, a: u32) {
        let g = self.list[a as usize].group;
        self.groups[g].infeasible += 1;
    }

    fn item_name(&self, spec: &Spec, a: u32) -> String {
        let g = &self.groups[self.list[a as usize].group];
        let w = &spec.workloads[g.workload];
        format!("{}.{}", w.name, w.actors[g.index].name)
    }
}
