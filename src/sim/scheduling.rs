//! Scheduling: submitting work (tasks, actors, replicas) to the placement policy, starting
//! it where it fits, FIFO queues per class for work that waits, re-placement when resources
//! are freed on a node, and every allocation and free (with the run's trace and the
//! dead-node invariant).
//!
//! Architecture invariant: the only caller in the simulation of `crate::placement::place_task`
//! (through `place_task_options`, which adds Ray's fallback label selectors)
//! and of `ClusterState::allocate` / `ClusterState::free`. Reads no task, actor or service
//! state: each of those components answers for its items through `schedulable::Schedulable`
//! and starts a placed item itself.

use super::explain::Acted;
use super::schedulable::{Ask, Schedulable};
use super::{Sim, TraceEvent, Work};
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
    pub(super) since: rustc_hash::FxHashMap<Work, Time>,
    /// Per tenant: how many pieces of work waited on its quota, and for how long in all.
    pub(super) wait: std::collections::BTreeMap<usize, (u64, Time)>,
}

impl Sim<'_> {
    /// Ask the policy where `w` goes and start it, queue it there, or record it infeasible.
    pub(super) fn submit(&mut self, w: Work) {
        let Ask {
            request,
            strategy,
            selector,
            fallbacks,
            tenant,
            policy,
        } = self.ask(w);
        let key = self.class_key(w).0;
        let (c, class) = self.component(key);
        if c.class_blocked(class) || self.w.waiting(key) {
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
                    || self.always_waits(w) =>
            {
                self.enqueue(w);
                Acted::Held
            }
            Decision::Infeasible => {
                match w {
                    Work::Task(t) => self.tasks.infeasible(&mut self.w, t),
                    Work::Actor(a) => self.actors.infeasible(&mut self.w, a),
                    Work::Replica(r) => self.services.infeasible(&mut self.w, r),
                }
                Acted::Infeasible
            }
        };
        if want_explain {
            self.w.explain = Some(self.explain_task(w, &tr, fallbacks, option, &ex, acted));
        }
    }

    pub(super) fn enqueue(&mut self, w: Work) {
        let (key, id) = self.class_key(w);
        let tenant = self.class_tenant(key);
        if let Some(t) = tenant
            && !self.w.quota.since.contains_key(&w)
            && !self.w.state.quota_allows(Some(t), &self.ask(w).request)
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

    /// Allocate on `node` and start `w`; false if it does not fit there now.
    pub(super) fn try_start(
        &mut self,
        w: Work,
        node: NodeId,
        request: &Request,
        tenant: Option<usize>,
        policy: Policy,
    ) -> bool {
        let Some(alloc) = self.w.allocate(node, request, tenant, policy) else {
            return false;
        };
        if !self.w.quota.since.is_empty() {
            self.w.quota_wait_over(w, tenant);
        }
        let units = self.w.device_units(request);
        match w {
            Work::Task(t) => self.tasks.task_started(&mut self.w, t, node, alloc, units),
            Work::Actor(a) => self.actor_started(a, node, alloc, units, tenant),
            Work::Replica(r) => self.replica_started(r, node, alloc, units),
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
        for k in 0..self.w.pending.len() {
            let (c, class) = self.component(self.w.pending[k].0);
            if c.class_blocked(class) {
                continue;
            }
            while let Some(&id) = self.w.pending[k].1.front() {
                let w = match self.w.pending[k].0 {
                    Work::Task(_) => Work::Task(id),
                    Work::Actor(_) => Work::Actor(id),
                    Work::Replica(_) => Work::Replica(id),
                };
                let Ask {
                    request,
                    strategy,
                    selector,
                    fallbacks,
                    tenant,
                    policy,
                } = self.ask(w);
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
                        Strategy::NodeAffinity { node: target, soft } => match st.node_id(target) {
                            Some(t) if t == node => true,
                            Some(t) => *soft && !st.is_feasible(t, &request),
                            None => *soft,
                        },
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
                amounts: a.amounts.to_vec(),
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
                amounts: a.amounts.to_vec(),
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
            let ty = &self.node_types[node].name;
            self.usage.held(node, a, ty, at, units);
        }
    }

    /// `units` devices of `node` did work (computed, communicated, served) over
    /// `[from, to)`, per device class and node type (busy utilization).
    pub(crate) fn worked(&mut self, node: NodeId, units: f64, from: Time, to: Time) {
        if units != 0.0
            && let Some(a) = &self.node_accel[node]
        {
            let ty = &self.node_types[node].name;
            self.usage.worked(node, a, ty, (from, to), units);
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
