//! Scheduling: submitting work (tasks, actors, replicas) to the placement policy, starting
//! it where it fits, FIFO queues per class for work that waits, re-placement when resources
//! are freed on a node, and every allocation and free (with the run's trace and the
//! dead-node invariant).
//!
//! Architecture invariant: the only caller in the simulation of `crate::placement::place_task`
//! (through `place_task_options`, which adds Ray's fallback label selectors)
//! and of `ClusterState::allocate` / `ClusterState::free`.

use super::explain::Acted;
use super::{Ev, Sim, TraceEvent, Work};
use crate::engine::Time;
use crate::placement::{self, Allocation, Decision, Explain, NodeId, Request, TaskRequest};
use crate::scenario::workload::{Policy, Strategy};
use crate::sim::World;
use std::collections::VecDeque;

/// Tenants' quotas: what waited on them.
#[derive(Default)]
pub(super) struct Quota {
    /// A tenant with a quota freed resources since the last dispatch.
    pub(super) freed: bool,
    /// Work queued while its tenant's quota held it back, since when.
    pub(super) since: std::collections::HashMap<Work, Time>,
    /// Per tenant: how many pieces of work waited on its quota, and for how long in all.
    pub(super) wait: std::collections::BTreeMap<usize, (u64, Time)>,
}

impl Sim<'_> {
    pub(super) fn item_name(&self, w: Work) -> String {
        let spec = self.w.spec;
        match w {
            Work::Task(t) => {
                let g = &self.tasks.groups[self.tasks.group_of(t)];
                format!(
                    "{}.{}",
                    spec.workloads[g.workload].name, spec.workloads[g.workload].tasks[g.index].name
                )
            }
            Work::Actor(a) => {
                let g = &self.actors.groups[self.actors.list[a as usize].group];
                format!(
                    "{}.{}",
                    spec.workloads[g.workload].name,
                    spec.workloads[g.workload].actors[g.index].name
                )
            }
            Work::Replica(r) => {
                let s = &self.services.list[self.services.replicas[r as usize].service as usize];
                format!(
                    "{}.{}",
                    spec.workloads[s.workload].name,
                    spec.workloads[s.workload].services[s.index].name
                )
            }
        }
    }

    /// Ask the policy where `w` goes and start it, queue it there, or record it infeasible.
    pub(super) fn submit(&mut self, w: Work) {
        let spec = self.w.spec;
        let default_strategy = Strategy::Default;
        let spread = Strategy::Spread;
        let (request, strategy, selector, fallbacks, tenant, policy) = match w {
            Work::Task(t) => {
                let g = &self.tasks.groups[self.tasks.group_of(t)];
                let ts = &spec.workloads[g.workload].tasks[g.index];
                (
                    g.request.clone(),
                    &ts.strategy,
                    ts.label_selector.as_slice(),
                    ts.fallbacks.as_slice(),
                    g.tenant,
                    g.policy,
                )
            }
            Work::Actor(a) => {
                let ac = &self.actors.list[a as usize];
                let g = &self.actors.groups[ac.group];
                let sa = &spec.workloads[g.workload].actors[g.index];
                (
                    ac.request.clone(),
                    &sa.strategy,
                    sa.label_selector.as_slice(),
                    sa.fallbacks.as_slice(),
                    g.tenant,
                    g.policy,
                )
            }
            Work::Replica(r) => {
                let s = &self.services.list[self.services.replicas[r as usize].service as usize];
                let policy = spec.workloads[s.workload].policy;
                (
                    s.request.clone(),
                    if policy == Policy::TopologyAware {
                        &default_strategy
                    } else {
                        &spread
                    },
                    &[][..],
                    &[][..],
                    s.tenant,
                    policy,
                )
            }
        };
        let key = self.class_key(w).0;
        let blocked = matches!(key, Work::Task(g) if self.tasks.groups[g as usize].blocked > 0);
        if blocked || self.w.waiting(key) {
            // Earlier work of the same class is waiting, so no node is available for it.
            self.enqueue(w);
            return;
        }
        let mut ex = Explain::default();
        // The item's name is formatted only when an explanation is asked for.
        let want_explain = self.w.explaining(|| self.item_name(w));
        let tr = TaskRequest {
            request: &request,
            strategy,
            label_selector: selector,
            preferred: self.w.state.head,
            tenant,
            policy,
        };
        // Ray's `fallback_strategy`: the label selectors in order (`placement::fallback`).
        let (option, d) = placement::place_task_options(
            &mut self.w.state,
            &tr,
            fallbacks,
            &mut self.w.rng,
            if want_explain { Some(&mut ex) } else { None },
        );
        let acted = match d {
            Decision::Run(node) => {
                if self.try_start(w, node, &request, tenant, policy) {
                    Acted::Started(node)
                } else {
                    self.enqueue(w);
                    Acted::NotStarted(node)
                }
            }
            Decision::Queue(node) => {
                self.enqueue(w);
                Acted::Queued(node)
            }
            // While some node is down, "infeasible" may only mean "not until it returns":
            // Ray keeps such work queued, and so does the simulation (a repaired node is
            // offered to every waiting class). Rebuilding a lost output always waits.
            Decision::Infeasible
                if self.w.state.alive_count() < self.w.state.nodes.len()
                    || matches!(w, Work::Task(t) if self.tasks.rebuild[t as usize]) =>
            {
                self.enqueue(w);
                Acted::Held
            }
            Decision::Infeasible => {
                match w {
                    Work::Task(t) => {
                        let g = self.tasks.group_of(t);
                        self.tasks.groups[g].infeasible += 1;
                        self.tasks.task_done_bookkeeping(&mut self.w, g);
                    }
                    Work::Actor(a) => {
                        let g = self.actors.list[a as usize].group;
                        self.actors.groups[g].infeasible += 1;
                    }
                    Work::Replica(_) => {}
                }
                Acted::Infeasible
            }
        };
        if want_explain {
            self.w.explain = Some(self.explain_task(w, &tr, fallbacks, option, &ex, acted));
        }
    }

    /// The class of a piece of work and its id within the class's queue.
    pub(super) fn class_key(&self, w: Work) -> (Work, u32) {
        match w {
            Work::Task(t) => (Work::Task(self.tasks.group_of(t) as u32), t),
            Work::Actor(a) => (Work::Actor(self.actors.list[a as usize].group as u32), a),
            Work::Replica(r) => (Work::Replica(self.services.replicas[r as usize].service), r),
        }
    }

    pub(super) fn enqueue(&mut self, w: Work) {
        let (key, id) = self.class_key(w);
        let tenant = self.class_tenant(key);
        if let Some(t) = tenant
            && !self.w.quota.since.contains_key(&w)
            && !self.w.state.quota_allows(Some(t), &self.work_request(w))
        {
            // Held back by its tenant's quota (metrics: the tenant's quota wait).
            self.w.quota.since.insert(w, self.w.now());
        }
        match self.w.pending.iter_mut().find(|(k, _)| *k == key) {
            Some((_, q)) => q.push_back(id),
            None => {
                // Classes wait in order of their tenant's priority (higher first), then of
                // first appearance; dispatch offers freed resources in that order.
                let p = self.w.tenant_priority(tenant);
                let at = self
                    .w
                    .pending
                    .iter()
                    .position(|(k, _)| self.w.tenant_priority(self.class_tenant(*k)) < p)
                    .unwrap_or(self.w.pending.len());
                self.w.pending.insert(at, (key, VecDeque::from([id])));
            }
        }
        self.w.record_queue();
    }

    /// The tenant of a class of work.
    fn class_tenant(&self, key: Work) -> Option<usize> {
        match key {
            Work::Task(g) => self.tasks.groups[g as usize].tenant,
            Work::Actor(g) => self.actors.groups[g as usize].tenant,
            Work::Replica(s) => self.services.list[s as usize].tenant,
        }
    }

    /// What a piece of work requests.
    fn work_request(&self, w: Work) -> crate::placement::Request {
        match w {
            Work::Task(t) => self.tasks.groups[self.tasks.group_of(t)].request.clone(),
            Work::Actor(a) => self.actors.list[a as usize].request.clone(),
            Work::Replica(r) => self.services.list
                [self.services.replicas[r as usize].service as usize]
                .request
                .clone(),
        }
    }

    /// Allocate on `node` and start `w`; false if it does not fit there now.
    pub(super) fn try_start(
        &mut self,
        w: Work,
        node: NodeId,
        request: &Request,
        tenant: Option<usize>,
        policy: Policy,
    ) -> bool {
        let now = self.w.now();
        let Some(alloc) = self.w.allocate(node, request, tenant, policy) else {
            return false;
        };
        if !self.w.quota.since.is_empty() {
            self.w.quota_wait_over(w, tenant);
        }
        let units = self.w.device_units(request);
        match w {
            Work::Task(t) => {
                let gi = self.tasks.group_of(t);
                self.w.busy(node, units, now);
                let first = !std::mem::replace(&mut self.tasks.started[t as usize], true);
                let g = &mut self.tasks.groups[gi];
                if first {
                    g.queueing.record((now - g.ready_at) as f64 / 1e9);
                    g.started += 1;
                }
                g.first_start.get_or_insert(now);
                if first {
                    self.tasks.consumer_started(&mut self.w, gi);
                }
                self.tasks.start[t as usize] = now;
                self.tasks.node[t as usize] = node as u32;
                self.tasks.dev[t as usize] = alloc
                    .instances
                    .iter()
                    .filter(|(rid, _)| self.w.unit_ids.contains(rid))
                    .find_map(|(_, amounts)| amounts.iter().position(|x| *x > 0))
                    .unwrap_or(0) as u32;
                self.tasks.alloc[t as usize] = Some(alloc);
                self.start_task_work(t, gi, node, units);
            }
            Work::Actor(a) => {
                let ac = &mut self.actors.list[a as usize];
                ac.node = Some(node);
                let g = &mut self.actors.groups[ac.group];
                g.placed += 1;
                g.delays.record((now - ac.submitted) as f64 / 1e9);
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
            Work::Replica(r) => {
                self.w.busy(node, units, now);
                let rep = &mut self.services.replicas[r as usize];
                rep.node = Some(node);
                rep.alloc = Some(alloc);
                let s = rep.service;
                if self.services.list[s as usize].llm.is_some() {
                    self.llm_replica_up(r);
                } else {
                    self.services.list[s as usize].idle.push(r);
                    self.serve(s);
                }
            }
        }
        true
    }

    /// Resources were freed on `node`: start waiting work that now fits there, FIFO within
    /// each class, classes in order. Checking `node` alone is exact: nothing was available
    /// for a waiting class before this free (see the module docs).
    pub(super) fn dispatch(&mut self, node: NodeId) {
        if std::mem::take(&mut self.w.quota.freed) {
            // A tenant under a quota freed something: its waiting work may start anywhere, so
            // every node is offered (this node first), not only the one freed.
            self.dispatch_one(node);
            for n in 0..self.w.state.nodes.len() {
                if n != node && self.w.state.nodes[n].alive() {
                    self.dispatch_one(n);
                }
            }
        } else {
            self.dispatch_one(node);
        }
        self.w.record_queue();
    }

    /// [`Sim::dispatch`] for one node.
    fn dispatch_one(&mut self, node: NodeId) {
        if !self.failures.lost_pgs.is_empty() {
            // Bundles lost with a node are rescheduled ahead of other work (Ray GCS).
            self.repair_pgs();
        }
        let spec = self.w.spec;
        for k in 0..self.w.pending.len() {
            if matches!(self.w.pending[k].0, Work::Task(g) if self.tasks.groups[g as usize].blocked > 0)
            {
                continue;
            }
            while let Some(&id) = self.w.pending[k].1.front() {
                let w = match self.w.pending[k].0 {
                    Work::Task(_) => Work::Task(id),
                    Work::Actor(_) => Work::Actor(id),
                    Work::Replica(_) => Work::Replica(id),
                };
                let (request, tenant, policy, strategy, selector, fallbacks) = match w {
                    Work::Task(t) => {
                        let g = &self.tasks.groups[self.tasks.group_of(t)];
                        let ts = &spec.workloads[g.workload].tasks[g.index];
                        (
                            g.request.clone(),
                            g.tenant,
                            g.policy,
                            Some(&ts.strategy),
                            ts.label_selector.as_slice(),
                            ts.fallbacks.as_slice(),
                        )
                    }
                    Work::Actor(a) => {
                        let ac = &self.actors.list[a as usize];
                        let g = &self.actors.groups[ac.group];
                        let sa = &spec.workloads[g.workload].actors[g.index];
                        (
                            ac.request.clone(),
                            g.tenant,
                            g.policy,
                            Some(&sa.strategy),
                            sa.label_selector.as_slice(),
                            sa.fallbacks.as_slice(),
                        )
                    }
                    Work::Replica(r) => {
                        let s = &self.services.list
                            [self.services.replicas[r as usize].service as usize];
                        (
                            s.request.clone(),
                            s.tenant,
                            spec.workloads[s.workload].policy,
                            None,
                            &[][..],
                            &[][..],
                        )
                    }
                };
                let st = &self.w.state;
                let labels = st.nodes[node].labels();
                // With fallbacks (Ray's `fallback_strategy`), nothing any option passes had
                // room before this free, so the first option passing this node takes it.
                let fits = st.is_alive_and_allowed(node, tenant)
                    && st.is_available(node, &request)
                    && std::iter::once(selector)
                        .chain(fallbacks.iter().map(Vec::as_slice))
                        .any(|s| s.iter().all(|c| c.matches(labels)))
                    && match strategy {
                        Some(Strategy::NodeAffinity { node: target, soft }) => {
                            match st.node_id(target) {
                                Some(t) if t == node => true,
                                Some(t) => *soft && !st.is_feasible(t, &request),
                                None => *soft,
                            }
                        }
                        _ => true,
                    };
                if !fits {
                    break;
                }
                self.w.pending[k].1.pop_front();
                if !self.try_start(w, node, &request, tenant, policy) {
                    self.w.pending[k].1.push_front(id);
                    break;
                }
            }
        }
    }
}

impl World<'_> {
    /// Work of class `key` is waiting: no node is available for more of it.
    pub(super) fn waiting(&self, key: Work) -> bool {
        self.pending.iter().any(|(k, q)| *k == key && !q.is_empty())
    }

    pub(super) fn allocate(
        &mut self,
        node: NodeId,
        r: &Request,
        tenant: Option<usize>,
        policy: Policy,
    ) -> Option<Allocation> {
        if !self.state.nodes[node].alive() {
            // Invariant: a dead node's resources are never assigned.
            self.violations.push(format!(
                "allocation on dead node {} at {} ns",
                self.state.nodes[node].name(),
                self.now()
            ));
        }
        let a = self.state.allocate(node, r, tenant, policy)?;
        let time = self.now();
        self.cpu_held(node, super::cpu::cpus_in(&a.amounts), time);
        if let Some(t) = &mut self.trace {
            t.push(TraceEvent {
                time,
                node,
                tenant,
                delta: 1,
                amounts: a.amounts.clone(),
            });
        }
        Some(a)
    }

    pub(super) fn free(&mut self, a: &Allocation, tenant: Option<usize>) {
        self.state.free(a, tenant);
        if tenant.is_some_and(|t| !self.state.tenants[t].quota.is_empty()) {
            // Work of this tenant waiting on its quota may now fit on any node, not only here.
            self.quota.freed = true;
        }
        let time = self.now();
        self.cpu_held(a.node, -super::cpu::cpus_in(&a.amounts), time);
        if let Some(t) = &mut self.trace {
            t.push(TraceEvent {
                time,
                node: a.node,
                tenant,
                delta: -1,
                amounts: a.amounts.clone(),
            });
        }
    }

    /// Allocate each bundle on its node, all or nothing (placement-group creation is atomic).
    pub(crate) fn allocate_all(
        &mut self,
        bundles: &[Request],
        nodes: &[NodeId],
        tenant: Option<usize>,
        policy: Policy,
    ) -> Option<Vec<Allocation>> {
        let mut allocs = Vec::with_capacity(bundles.len());
        for (b, n) in bundles.iter().zip(nodes) {
            match self.allocate(*n, b, tenant, policy) {
                Some(a) => allocs.push(a),
                None => {
                    for a in &allocs {
                        self.free(a, tenant);
                    }
                    return None;
                }
            }
        }
        Some(allocs)
    }

    /// Trace counter: work waiting in the scheduler's queues (timeline only).
    pub(super) fn record_queue(&mut self) {
        if self.tl.on {
            let n: usize = self.pending.iter().map(|(_, q)| q.len()).sum();
            let now = self.now();
            self.tl.counter("scheduler queue", now, n as f64);
        }
    }

    fn tenant_priority(&self, tenant: Option<usize>) -> i64 {
        tenant
            .and_then(|t| self.spec.tenants.get(t))
            .map_or(0, |t| t.priority)
    }

    /// Work that waited on its tenant's quota starts now: count the wait.
    fn quota_wait_over(&mut self, w: Work, tenant: Option<usize>) {
        if let (Some(since), Some(t)) = (self.quota.since.remove(&w), tenant) {
            let now = self.now();
            let e = self.quota.wait.entry(t).or_insert((0, 0));
            e.0 += 1;
            e.1 += now - since;
        }
    }

    /// Devices of `node` becoming allocated (`units` > 0) or released (< 0), per device class
    /// and node type (allocated utilization).
    pub(crate) fn busy(&mut self, node: NodeId, units: f64, at: Time) {
        if units != 0.0
            && let Some(a) = &self.node_accel[node]
        {
            self.usage.held.change(a, at, units);
            self.usage
                .held_by_type
                .change(&self.node_types[node].name, at, units);
        }
    }

    /// `units` devices of `node` did work (computed, communicated, served) over
    /// `[from, to)`, per device class and node type (busy utilization).
    pub(crate) fn worked(&mut self, node: NodeId, units: f64, from: Time, to: Time) {
        if units != 0.0
            && let Some(a) = &self.node_accel[node]
        {
            self.usage.busy.span(a, from, to, units);
            self.usage
                .busy_by_type
                .span(&self.node_types[node].name, from, to, units);
        }
    }

    /// Timeline ids of the device instances an allocation holds on `node`.
    pub(super) fn alloc_devices(&self, node: NodeId, alloc: Option<&Allocation>) -> Vec<u32> {
        let Some(a) = alloc else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (rid, amounts) in &a.instances {
            if self.unit_ids.contains(rid) {
                out.extend(
                    amounts
                        .iter()
                        .enumerate()
                        .filter(|(_, x)| **x > 0)
                        .filter_map(|(d, _)| self.tl.device(node, d)),
                );
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}
