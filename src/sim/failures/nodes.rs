//! Node failures: crashes (and silent loss), the head taking the cluster down with it,
//! Ray's health-check detection, and repair.
//!
//! Architecture invariant: the only place in the simulation where a node's liveness changes
//! (`set_alive`, `reset`); lost work is re-placed only through `submit`, `retry_lost`,
//! `dispatch` and `repair_pgs`.

use crate::placement::NodeId;
use crate::sim::FailureEv;
use crate::sim::World;
use crate::sim::{Ev, Sim, TraceEvent, Work};

impl Sim<'_> {
    pub(crate) fn node_crash(&mut self, n: NodeId) {
        self.node_crash_with(n, false);
    }

    /// A node stops: `silent` when it does not crash but stops answering (packets dropped),
    /// which the health checks only notice by timing out.
    pub(crate) fn node_crash_with(&mut self, n: NodeId, silent: bool) {
        if !self.w.state.nodes[n].alive() {
            return;
        }
        if n == self.w.state.head && self.failures.cluster_down.is_empty() {
            // The head holds the GCS (in memory: Ray's default, no Redis) and the driver:
            // losing it takes the whole cluster down; raylets exit without their GCS.
            self.w.mark_node("cluster_loss", n);
            let others: Vec<NodeId> = (0..self.w.state.nodes.len())
                .filter(|&m| m != n && self.w.state.nodes[m].alive())
                .collect();
            self.failures.cluster_down = others.clone();
            self.failures.cluster_down.push(n);
            self.node_crash_one(n, silent);
            for m in others {
                self.node_crash_one(m, false);
            }
            return;
        }
        self.node_crash_one(n, silent);
    }

    pub(super) fn node_crash_one(&mut self, n: NodeId, silent: bool) {
        let now = self.w.now();
        let devs = self.w.tl.node_devices(n);
        self.w.tl.fail(&devs, now);
        self.w.state.set_alive(n, false);
        self.w.mark_node("crash", n);
        self.failures.crashes += 1;
        self.failures.down_since[n] = Some(now);
        self.w.store.crash_epoch[n] += 1;
        let epoch = self.w.store.crash_epoch[n];
        self.failures.crash_times.insert((n, epoch), now);
        // Tasks running there.
        for t in 0..self.tasks.node.len() {
            if self.tasks.node[t] as usize != n || self.tasks.alloc[t].is_none() {
                continue;
            }
            self.tasks.record_task(&mut self.w, t, now);
            let lost = self.tasks.alloc[t].take();
            self.tasks.epoch[t] += 1;
            self.w.cancel_fetch(t as u32);
            let g = &self.tasks.groups[self.tasks.group_of(t as u32)];
            let (units, tenant) = (self.w.device_units(&g.request), g.tenant);
            self.failures.lost_device_ns += units * (now - self.tasks.start[t]) as f64;
            self.w.drop_alloc(n, tenant, units, lost);
            self.failures.lost.push((n, epoch, Work::Task(t as u32)));
        }
        self.tasks.stop_reads_from(&mut self.w, n);
        self.lose_outputs(n, epoch);
        self.tasks.store_lost(&mut self.w, n);
        self.tasks.resume_reads(&mut self.w);
        // Actors.
        for a in 0..self.actors.list.len() {
            let ac = &self.actors.list[a];
            if ac.node != Some(n) || ac.dead {
                continue;
            }
            let (tenant, holds) = (self.actors.groups[ac.group].tenant, ac.alloc.is_some());
            let units = if holds {
                self.w.device_units(&ac.request)
            } else {
                0.0
            };
            self.actors.lose_actor_call(a);
            self.actors.cancel_tensor(&mut self.w, a);
            let ac = &mut self.actors.list[a];
            ac.send_wait = false;
            ac.epoch += 1;
            ac.node = None;
            if let Some(lost) = ac.alloc.take() {
                self.w.drop_alloc(n, tenant, units, Some(lost));
            }
            self.failures.lost.push((n, epoch, Work::Actor(a as u32)));
        }
        self.resend_tensors_to(n);
        self.services.lose_responses_from(&mut self.w, n);
        // Service replicas.
        for r in 0..self.services.replicas.len() {
            if self.services.replicas[r].node != Some(n) {
                continue;
            }
            let s = self.services.replicas[r].service as usize;
            let units = self.w.device_units(&self.services.list[s].request);
            self.services.cancel_requests(&mut self.w, r);
            let rep = &mut self.services.replicas[r];
            rep.epoch += 1;
            rep.node = None;
            self.w.losses.requests_lost += rep.inflight.len() as u64;
            rep.inflight.clear();
            if let Some(lost) = rep.alloc.take() {
                let tenant = self.services.list[s].tenant;
                self.w.drop_alloc(n, tenant, units, Some(lost));
            }
            self.services.list[s].idle.retain(|x| *x as usize != r);
            self.failures.lost.push((n, epoch, Work::Replica(r as u32)));
        }
        // Placement-group bundles, and the jobs that run on them.
        for p in 0..self.pgs.list.len() {
            let hit: Vec<usize> = (0..self.pgs[p].allocs.len())
                .filter(|&i| {
                    self.pgs[p].nodes.get(i) == Some(&n) && self.pgs[p].allocs[i].is_some()
                })
                .collect();
            if hit.is_empty() {
                continue;
            }
            let tenant = self.pgs[p].tenant;
            for i in hit {
                let lost = self.pgs[p].allocs[i].take();
                self.w.drop_alloc(n, tenant, 0.0, lost);
            }
            if self.pgs[p].slice {
                // A slice is lost as a unit: give back what the group holds on the other hosts.
                for i in 0..self.pgs[p].allocs.len() {
                    if let Some(a) = self.pgs[p].allocs[i].take() {
                        self.w.free(&a, tenant);
                    }
                }
            }
            if self.pgs[p].lost_since.is_none() {
                self.pgs[p].lost_since = Some(now);
            }
            for j in self.pgs[p].jobs.clone() {
                self.stop_job(j as usize);
            }
        }
        // A crashed raylet refuses health checks at once: dead after `misses` checks, one
        // per `period` (Ray: 5 × 3 s ≈ 15 s).
        // Silent loss: each check waits its full timeout before counting as missed
        // (Ray: 5 × (10 s + 3 s) ≈ 65 s).
        let d = self.failures.detection;
        let per_miss = if silent {
            d.period.0 + d.timeout.0
        } else {
            d.period.0
        };
        self.w.q.after(
            per_miss.saturating_mul(u64::from(d.misses)),
            Ev::Failure(FailureEv::NodeDetected(n as u32, epoch)),
        );
    }

    pub(crate) fn node_detected(&mut self, n: NodeId, epoch: u32) {
        let now = self.w.now();
        if let Some(since) = self.failures.crash_times.remove(&(n, epoch)) {
            self.failures.detect_times.record_ns(now - since);
        }
        self.w.mark_node("detected", n);
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.failures.lost)
            .into_iter()
            .partition(|(node, e, _)| *node == n && *e == epoch);
        self.failures.lost = rest;
        for (_, _, w) in mine {
            match w {
                Work::Task(t) => {
                    if self.tasks.retries[t as usize] > 0 {
                        self.retry_lost(t);
                    } else if self.tasks.rebuild[t as usize] {
                        // Ray raises ObjectLostError in the consumers; the simulation lets
                        // them run and counts the object as lost.
                        self.tasks.rebuild[t as usize] = false;
                        self.failures.objects_lost += 1;
                        let gi = self.tasks.group_of(t);
                        self.unblock_dependents(gi);
                        self.tasks.resume_reads(&mut self.w);
                    } else {
                        self.w.losses.tasks_failed += 1;
                        let gi = self.tasks.group_of(t);
                        self.tasks.groups[gi].failed += 1;
                        self.tasks.task_done_bookkeeping(&mut self.w, gi);
                    }
                }
                Work::Actor(a) => {
                    let ac = &mut self.actors.list[a as usize];
                    if ac.restarts_left != 0 {
                        if ac.restarts_left > 0 {
                            ac.restarts_left -= 1;
                        }
                        ac.submitted = now;
                        self.failures.actors_restarted += 1;
                        self.submit(Work::Actor(a));
                    } else {
                        ac.dead = true;
                        let left = std::mem::take(&mut ac.calls_left);
                        let g = ac.group;
                        self.actors.groups[g].calls_failed += left;
                        self.failures.actors_lost += 1;
                        self.wake_senders(g);
                    }
                }
                Work::Replica(r) => {
                    self.failures.replicas_restarted += 1;
                    self.submit(Work::Replica(r));
                }
            }
        }
        // Lost bundles are rescheduled when the node is declared dead, ahead of other work.
        for p in 0..self.pgs.list.len() {
            if self.pgs[p].lost_since.is_some()
                && !self.failures.lost_pgs.contains(&(p as u32))
                && self.pgs[p].nodes.contains(&n)
            {
                self.failures.lost_pgs.push(p as u32);
            }
        }
        self.repair_pgs();
    }

    pub(crate) fn node_repair(&mut self, n: NodeId) {
        if n == self.w.state.head && !self.failures.cluster_down.is_empty() {
            // The cluster comes back with its head: every node rejoins.
            for m in std::mem::take(&mut self.failures.cluster_down) {
                self.node_repair_one(m);
            }
            return;
        }
        self.node_repair_one(n);
    }

    pub(super) fn node_repair_one(&mut self, n: NodeId) {
        let now = self.w.now();
        if self.w.state.nodes[n].alive() {
            return;
        }
        let devs = self.w.tl.node_devices(n);
        self.w.tl.repair(&devs, now);
        if let Some(since) = self.failures.down_since[n].take() {
            self.failures.node_down_ns += (now - since) as f64;
        }
        self.w.mark_node("repaired", n);
        self.w.state.reset(n);
        self.w.state.set_alive(n, true);
        // Only this node became available: `dispatch` re-places lost bundles first, then
        // every waiting class (see the module docs of `sim`).
        self.dispatch(n);
    }
}

impl World<'_> {
    /// An allocation lost with its node (not freed: the node's resources are gone with it).
    pub(super) fn drop_alloc(
        &mut self,
        node: NodeId,
        tenant: Option<usize>,
        units: f64,
        a: Option<crate::placement::Allocation>,
    ) {
        let now = self.now();
        if let Some(a) = &a {
            self.cpu_held(node, -crate::sim::cpu::cpus_in(&a.amounts), now);
        }
        if let Some(t) = &mut self.trace {
            t.push(TraceEvent {
                time: now,
                node,
                tenant,
                delta: -1,
                amounts: a.map(|a| a.amounts.to_vec()).unwrap_or_default(),
            });
        }
        self.busy(node, -units, now);
    }
}
