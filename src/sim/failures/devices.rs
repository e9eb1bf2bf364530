//! Device-level faults: GPU faults (Xid) that take one device out of service, degraded
//! NVLink, NICs or links down or degraded, and their repair.
//!
//! Architecture invariant: the only place in the simulation where devices leave or re-enter
//! service (`fail_device`, `repair_device`); bandwidth changes are recorded in `Failures`
//! and reach running jobs when their collectives are repriced (`refresh_jobs_on`, or a
//! restart through `start_job`).

use crate::placement::NodeId;
use crate::sim::{Sim, Work};

/// What a node lost with a NIC: its reachability (every frontend NIC, or every NIC when it
/// has no frontend one), a compute NIC, or neither.
pub(super) enum NicLoss {
    CutOff,
    Compute,
    Other,
}

impl Sim<'_> {
    /// A GPU-level fault: the device leaves service; whatever used it fails at once (the
    /// process dies on the CUDA error, so the owner sees it without a health check) and is
    /// retried, restarted or re-placed right away; the node stays up.
    pub(crate) fn device_fault(&mut self, n: NodeId, dev: usize) {
        let now = self.w.now();
        if !self.w.state.nodes[n].alive() {
            return;
        }
        let Some((rid, k)) = self.w.state.fail_device(n, dev) else {
            return;
        };
        if let Some(d) = self.w.tl.device(n, dev) {
            self.w.tl.fail(&[d], now);
        }
        self.w.mark_in("xid", n, &format!("d{dev}"));
        let uses = |a: &crate::placement::Allocation| {
            a.node == n
                && a.instances
                    .iter()
                    .any(|(id, per)| *id == rid && per.get(k).is_some_and(|x| *x > 0))
        };
        for t in 0..self.tasks.alloc.len() {
            if !self.tasks.alloc[t].as_ref().is_some_and(uses) {
                continue;
            }
            self.tasks.record_task(&mut self.w, t, now);
            let a = self.tasks.alloc[t].take().expect("checked");
            let gi = self.tasks.group_of(t as u32);
            let units = self.w.device_units(&self.tasks.groups[gi].request);
            self.failures.lost_device_ns += units * (now - self.tasks.start[t]) as f64;
            let tenant = self.tasks.groups[gi].tenant;
            self.w.free(&a, tenant);
            self.w.busy(n, -units, now);
            self.tasks.epoch[t] += 1;
            self.w.cancel_fetch(t as u32);
            if self.tasks.retries[t] > 0 {
                self.retry_lost(t as u32);
            } else if self.tasks.rebuild[t] {
                self.tasks.rebuild[t] = false;
                self.failures.objects_lost += 1;
                self.unblock_dependents(gi);
            } else {
                self.w.losses.tasks_failed += 1;
                self.tasks.groups[gi].failed += 1;
                self.tasks.task_done_bookkeeping(&mut self.w, gi);
            }
        }
        for a in 0..self.actors.list.len() {
            if !self.actors.list[a].alloc.as_ref().is_some_and(uses) {
                continue;
            }
            let alloc = self.actors.list[a].alloc.take().expect("checked");
            let g = self.actors.list[a].group;
            let units = self.w.device_units(&self.actors.list[a].request);
            self.w.free(&alloc, self.actors.groups[g].tenant);
            self.w.busy(n, -units, now);
            self.actors.lose_actor_call(a);
            let ac = &mut self.actors.list[a];
            ac.epoch += 1;
            ac.node = None;
            if ac.restarts_left != 0 {
                if ac.restarts_left > 0 {
                    ac.restarts_left -= 1;
                }
                ac.submitted = now;
                self.failures.actors_restarted += 1;
                self.submit(Work::Actor(a as u32));
            } else {
                ac.dead = true;
                let left = std::mem::take(&mut ac.calls_left);
                self.actors.groups[ac.group].calls_failed += left;
                self.failures.actors_lost += 1;
            }
        }
        for r in 0..self.services.replicas.len() {
            if !self.services.replicas[r].alloc.as_ref().is_some_and(uses) {
                continue;
            }
            let s = self.services.replicas[r].service as usize;
            self.services.llm_lost(&mut self.w, r);
            let alloc = self.services.replicas[r].alloc.take().expect("checked");
            let units = self.w.device_units(&self.services.list[s].request);
            self.w.free(&alloc, self.services.list[s].tenant);
            self.w.busy(n, -units, now);
            let rep = &mut self.services.replicas[r];
            rep.epoch += 1;
            rep.node = None;
            self.w.losses.requests_lost += rep.inflight.len() as u64;
            rep.inflight.clear();
            self.services.list[s].idle.retain(|x| *x as usize != r);
            self.failures.replicas_restarted += 1;
            self.submit(Work::Replica(r as u32));
        }
        for p in 0..self.pgs.list.len() {
            let hit: Vec<usize> = (0..self.pgs[p].allocs.len())
                .filter(|&i| self.pgs[p].allocs[i].as_ref().is_some_and(uses))
                .collect();
            if hit.is_empty() {
                continue;
            }
            let tenant = self.pgs[p].tenant;
            for j in self.pgs[p].jobs.clone() {
                self.stop_job(j as usize);
            }
            for i in hit {
                let a = self.pgs[p].allocs[i].take().expect("checked");
                self.w.free(&a, tenant);
            }
            if self.pgs[p].slice {
                for i in 0..self.pgs[p].allocs.len() {
                    if let Some(a) = self.pgs[p].allocs[i].take() {
                        self.w.free(&a, tenant);
                    }
                }
            }
            self.pgs[p].lost_since.get_or_insert(now);
            if !self.failures.lost_pgs.contains(&(p as u32)) {
                self.failures.lost_pgs.push(p as u32);
            }
        }
        self.dispatch(n);
    }

    pub(crate) fn device_repair(&mut self, n: NodeId, dev: usize) {
        if let Some(d) = self.w.tl.device(n, dev) {
            let now = self.w.now();
            self.w.tl.repair(&[d], now);
        }
        if self.w.state.repair_device(n, dev) {
            self.w.mark_in("device_repaired", n, &format!("d{dev}"));
            self.dispatch(n);
        }
    }

    /// NVLink on a node degraded to `f` of its bandwidth (1 restores it): collectives slow
    /// down from the next step; nothing fails.
    pub(crate) fn nvlink_degrade(&mut self, n: NodeId, f: f64) {
        if let Some(x) = self.w.health.nvlink_factor.get_mut(n) {
            *x = f;
        }
        let what = if f < 1.0 {
            "nvlink_degraded"
        } else {
            "nvlink_restored"
        };
        self.w.mark_node(what, n);
        self.jobs.refresh_jobs_on(&mut self.w, &self.pgs, n);
    }

    /// A NIC or its link goes down. Losing the node's frontend NICs (or every NIC when it
    /// has no frontend one) cuts it off: the GCS sees silent health-check timeouts and
    /// declares it dead. Losing a compute NIC breaks the collectives of jobs on the node
    /// (NCCL errors out): they restart from their checkpoint on the same group, now with
    /// less network bandwidth. A storage NIC changes nothing the simulation models.
    pub(crate) fn nic_down(&mut self, n: NodeId, i: usize) {
        match self.nic_off(n, i) {
            Some(NicLoss::CutOff) => {
                self.failures.cut_off[n] = true;
                self.node_crash_with(n, true);
            }
            Some(NicLoss::Compute) => self.restart_jobs_on(&[n]),
            Some(NicLoss::Other) | None => {}
        }
    }

    /// NIC `i` of node `n` leaves routing and the run's network; what the node lost, or
    /// `None` when the NIC was down already (or the node is). The caller acts on the loss.
    pub(super) fn nic_off(&mut self, n: NodeId, i: usize) -> Option<NicLoss> {
        if !self.w.state.nodes[n].alive()
            || self.w.health.nics[n].len() <= i
            || self.w.health.nics_down[n].contains(&i)
        {
            return None;
        }
        self.w.health.nics_down[n].push(i);
        if let Some(g) = &mut self.w.wire.graph {
            g.disable_nic(n, i);
        }
        self.w.apply_node_bandwidth(n);
        self.reroute_stalled();
        self.w.mark_in("nic_down", n, &format!("nic{i}"));
        let nics = &self.w.health.nics[n];
        let frontend: Vec<usize> = (0..nics.len())
            .filter(|&k| nics[k].0 == "frontend")
            .collect();
        let down = &self.w.health.nics_down[n];
        let cut_off = if frontend.is_empty() {
            (0..nics.len()).all(|k| down.contains(&k))
        } else {
            frontend.iter().all(|k| down.contains(k))
        };
        Some(if cut_off {
            NicLoss::CutOff
        } else if nics[i].0 == "compute" {
            NicLoss::Compute
        } else {
            NicLoss::Other
        })
    }

    /// Running jobs with a node in `nodes` restart (NCCL errored out on a lost connection).
    pub(super) fn restart_jobs_on(&mut self, nodes: &[NodeId]) {
        for j in 0..self.jobs.list.len() {
            let job = &self.jobs[j];
            if job.started.is_some()
                && job.finished.is_none()
                && job.stopped_at.is_none()
                && self.pgs[job.pg as usize]
                    .nodes
                    .iter()
                    .any(|n| nodes.contains(n))
            {
                self.stop_job(j);
                self.jobs.start_job(&mut self.w, &self.pgs, j as u32);
            }
        }
    }

    /// A NIC or link running at a fraction of its speed (1 restores it): collectives over the
    /// node slow down from the next step; nothing fails.
    pub(crate) fn nic_degrade(&mut self, n: NodeId, i: usize, f: f64) {
        if f >= 1.0 {
            self.w.health.nic_factor.remove(&(n, i));
        } else {
            self.w.health.nic_factor.insert((n, i), f);
        }
        let what = if f < 1.0 {
            "nic_degraded"
        } else {
            "nic_restored"
        };
        self.w.mark_in(what, n, &format!("nic{i}"));
        self.jobs.refresh_jobs_on(&mut self.w, &self.pgs, n);
    }

    pub(crate) fn nic_up(&mut self, n: NodeId, i: usize) {
        if self
            .failures
            .switch_nics
            .values()
            .any(|v| v.contains(&(n, i)))
        {
            return; // its switch is down: it comes back with the switch
        }
        let Some(pos) = (self.w.health.nics_down)
            .get(n)
            .and_then(|d| d.iter().position(|x| *x == i))
        else {
            return;
        };
        self.w.health.nics_down[n].swap_remove(pos);
        if let Some(g) = &mut self.w.wire.graph {
            g.enable_nic(n, i);
        }
        self.w.apply_node_bandwidth(n);
        self.w.net_routes_changed();
        self.w.mark_in("nic_up", n, &format!("nic{i}"));
        if std::mem::take(&mut self.failures.cut_off[n]) {
            self.node_repair(n);
        } else {
            self.jobs.refresh_jobs_on(&mut self.w, &self.pgs, n);
        }
    }
}
