//! Actors: groups of long-lived workers placed once, each running its method calls one
//! after another, holding its resources (or, without `resources`, 1 CPU to be placed and
//! nothing while it runs) until its calls are done.
//!
//! Architecture invariant: never calls `crate::placement`; actors are placed through
//! `scheduling` (`submit`, `dispatch`).

use super::{Ev, Sim, Work, device_units};
use crate::engine::Time;
use crate::placement::{Allocation, NodeId, Request};
use crate::spec::workload::Policy;
use std::collections::BTreeMap;

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
    pub(super) delays: Vec<f64>,
}

impl Sim<'_> {
    /// The actors of workload `wi`, each submitted now.
    pub(super) fn start_actors(
        &mut self,
        wi: usize,
        w: &crate::spec::workload::Workload,
        tenant: Option<usize>,
    ) {
        // Actors.
        for (ai, a) in w.actors.iter().enumerate() {
            let (request, holds) = match &a.resources {
                Some(r) => (self.state.request_with_memory(r, a.device_memory), true),
                None => (
                    self.state
                        .request(&BTreeMap::from([("CPU".to_string(), 1.0)])),
                    false,
                ),
            };
            let ag = self.actor_groups.len();
            self.actor_groups.push(ActorGroup {
                workload: wi,
                index: ai,
                tenant,
                policy: w.policy,
                placed: 0,
                infeasible: 0,
                calls_done: 0,
                calls_failed: 0,
                delays: Vec::new(),
            });
            for _ in 0..a.count {
                let id = self.actors.len() as u32;
                self.actors.push(Actor {
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
                });
                self.submit(Work::Actor(id));
            }
        }
    }

    /// A method call of actor `a` finished; stale calls (the actor was lost) are ignored.
    pub(super) fn on_actor_call(&mut self, a: u32, epoch: u32) {
        let now = self.now();
        if epoch != self.actors[a as usize].epoch {
            return;
        }
        let ac = &mut self.actors[a as usize];
        ac.calls_left -= 1;
        let g = ac.group;
        self.actor_groups[g].calls_done += 1;
        if self.actors[a as usize].calls_left > 0 {
            let d = self.actors[a as usize].call_ns.max(1);
            self.q.after(d, Ev::ActorCall(a, epoch));
        } else {
            self.makespan = self.makespan.max(now);
            if let (Some(alloc), Some(node)) = (
                self.actors[a as usize].alloc.take(),
                self.actors[a as usize].node,
            ) {
                let tenant = self.actor_groups[g].tenant;
                self.free(&alloc, tenant);
                let units = device_units(
                    &self.state,
                    &self.unit_ids,
                    &self.actors[a as usize].request,
                );
                self.busy(node, -units, now);
                self.dispatch(node);
            }
        }
    }
}
