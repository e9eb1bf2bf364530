//! Recovery from lost work: lost task outputs and lineage reconstruction, actor calls lost
//! with their actor, training jobs stopped back to their last checkpoint, and
//! placement-group bundles rescheduled ahead of other work.
//!
//! Architecture invariant: bundles are re-placed only through
//! `crate::placement::place_bundles` and `allocate_all`.

use crate::placement::{BundleRequest, NodeId, PgDecision};
use crate::scenario::workload::{LabelConstraint, LabelOp, PgStrategy};
use crate::sim::World;
use crate::sim::actors::Actors;
use crate::sim::placement_groups::PlacementGroups;
use crate::sim::{Sim, Work};

impl Sim<'_> {
    /// Outputs of finished tasks stored on a node that died (lineage reconstruction, Ray's
    /// default): an output still needed by a dependent group with tasks yet to start (or
    /// waiting for inputs a crash stopped reading, `inputs.rs`) is
    /// rebuilt by re-running the task that made it (counted against its `retries`, as Ray
    /// counts reconstruction against `max_retries`); the dependents' tasks that have not
    /// started wait until every lost input is back. Outputs nobody needs any more are not
    /// rebuilt. (Objects created by `ray.put` cannot be rebuilt; workloads here create none.)
    pub(super) fn lose_outputs(&mut self, n: NodeId, epoch: u32) {
        for gi in 0..self.tasks.groups.len() {
            let g = &self.tasks.groups[gi];
            let ts = &self.w.spec.workloads[g.workload].tasks[g.index];
            let needy: Vec<u32> = g
                .dependents
                .iter()
                .copied()
                .filter(|d| {
                    self.tasks.groups[*d as usize].started < self.tasks.groups[*d as usize].count
                        || self.tasks.group_awaits_inputs(&self.w, *d as usize)
                })
                .collect();
            if needy.is_empty() || ts.output.0 == 0 {
                continue;
            }
            for t in g.first..g.first + g.count {
                let t = t as usize;
                if !self.tasks.completed[t]
                    || self.tasks.rebuild[t]
                    || self.tasks.node[t] as usize != n
                {
                    continue;
                }
                self.tasks.rebuild[t] = true;
                for d in &needy {
                    self.tasks.groups[*d as usize].blocked += 1;
                }
                self.failures.lost.push((n, epoch, Work::Task(t as u32)));
            }
        }
    }

    /// Task `t`, lost to a failure with a retry left, is submitted again (after its group's
    /// retry delay).
    pub(super) fn retry_lost(&mut self, t: u32) {
        self.tasks.retries[t as usize] -= 1;
        self.failures.tasks_retried += 1;
        let effect = self.tasks.retry_task(&mut self.w, t);
        self.apply(effect);
    }

    /// A lost output was rebuilt: unblock its consumers.
    pub(crate) fn rebuilt(&mut self, t: u32, gi: usize, node: NodeId) {
        let now = self.w.now();
        self.tasks.rebuild[t as usize] = false;
        if let Some(a) = self.tasks.alloc[t as usize].take() {
            self.w.free(&a, self.tasks.groups[gi].tenant);
        }
        let units = self.w.device_units(&self.tasks.groups[gi].request);
        self.w.busy(node, -units, now);
        self.failures.objects_rebuilt += 1;
        self.tasks.store_output(&mut self.w, t, gi, node);
        self.unblock_dependents(gi);
        self.tasks.resume_reads(&mut self.w);
        self.dispatch(node);
    }

    /// One lost input of each dependent of `gi` is settled (rebuilt, or given up on).
    pub(super) fn unblock_dependents(&mut self, gi: usize) {
        for d in self.tasks.groups[gi].dependents.clone() {
            let g = &mut self.tasks.groups[d as usize];
            if g.blocked > 0 {
                g.blocked -= 1;
                if g.blocked == 0 {
                    self.kick_class(d);
                }
            }
        }
    }

    /// A task group that was blocked may run again: place its waiting tasks with the full
    /// policy (resources may have freed anywhere while it was blocked).
    pub(super) fn kick_class(&mut self, g: u32) {
        let Some(k) = self
            .w
            .pending
            .iter()
            .position(|(key, _)| *key == Work::Task(g))
        else {
            return;
        };
        let waiting: Vec<u32> = self.w.pending[k].1.drain(..).collect();
        for t in waiting {
            self.submit(Work::Task(t));
        }
    }

    /// A failure hit the job's group: the job stops, losing the work since its checkpoint.
    pub(super) fn stop_job(&mut self, j: usize) {
        let now = self.w.now();
        let job = &self.jobs[j];
        if job.finished.is_some() || job.stopped_at.is_some() || job.started.is_none() {
            return;
        }
        let pg = job.pg as usize;
        self.jobs.cancel_job_transfer(&mut self.w, j);
        // Devices of the group stop being busy (the lost ones already were dropped).
        for (b, node) in self.pgs[pg]
            .bundles
            .clone()
            .iter()
            .zip(self.pgs[pg].nodes.clone())
        {
            let units = self.w.device_units(b);
            self.w.busy(node, -units, now);
        }
        let job = &mut self.jobs[j];
        if now < job.ckpt_at {
            // The checkpoint being written is incomplete: the previous one is the last good one.
            job.ckpt_steps = job.prev_ckpt_steps;
            job.ckpt_at = job.prev_ckpt_at;
        }
        // Work since the later of the last good checkpoint and the moment computing resumed
        // (a job still loading its checkpoint has computed nothing since).
        let since = job.ckpt_at.max(job.progress_from);
        let lost = f64::from(job.devices) * now.saturating_sub(since) as f64;
        job.lost_device_ns += lost;
        self.failures.lost_device_ns += lost;
        let redo = job.steps_done - job.ckpt_steps;
        job.steps_done = job.ckpt_steps;
        job.steps_left += redo;
        job.epoch += 1;
        job.stopped_at = Some(now);
        let (w, i) = (self.jobs[j].workload, self.jobs[j].index);
        let name = format!(
            "{}.{}",
            self.w.spec.workloads[w].name, self.w.spec.workloads[w].training[i].name
        );
        self.w.mark("job_stopped", name);
    }

    /// Try to re-place the lost bundles of every group waiting for them, in order.
    pub(crate) fn repair_pgs(&mut self) {
        let list = self.failures.lost_pgs.clone();
        for p in list {
            self.repair_pg(p as usize);
        }
    }

    pub(super) fn repair_pg(&mut self, p: usize) {
        if self.pgs[p].slice {
            self.repair_slice_pg(p);
            return;
        }
        let lost: Vec<usize> = (0..self.pgs[p].allocs.len())
            .filter(|&i| self.pgs[p].allocs[i].is_none())
            .collect();
        if lost.is_empty() {
            self.failures.lost_pgs.retain(|x| *x as usize != p);
            return;
        }
        let pg = &self.pgs[p];
        let subset: Vec<_> = lost.iter().map(|&i| pg.bundles[i].clone()).collect();
        // STRICT_SPREAD: the replacements must avoid the nodes the group still holds.
        let mut selector: Vec<LabelConstraint> = Vec::new();
        if pg.strategy == PgStrategy::StrictSpread {
            let held: Vec<String> = (0..pg.allocs.len())
                .filter(|i| pg.allocs[*i].is_some())
                .map(|i| self.w.state.nodes[pg.nodes[i]].name().to_string())
                .collect();
            if !held.is_empty() {
                selector.push(LabelConstraint {
                    key: "ray.io/node-id".into(),
                    op: LabelOp::NotIn(held),
                });
            }
        }
        // Each lost bundle keeps its own label selector; a group placed by a topology strategy
        // stays in its domain (Ray re-places with the domain as the target value).
        let sels = &pg.options[pg.option].1;
        let subset_sels: Vec<Vec<LabelConstraint>> = if sels.is_empty() {
            Vec::new()
        } else {
            lost.iter().map(|&i| sels[i].clone()).collect()
        };
        let domain = pg
            .domain
            .as_deref()
            .map(|k| (k, pg.domain_value.as_deref()));
        let br = BundleRequest {
            bundles: &subset,
            strategy: pg.strategy,
            tenant: pg.tenant,
            policy: pg.policy,
            label_selector: &selector,
            bundle_selectors: &subset_sels,
            domain,
        };
        let PgDecision::Placed(nodes) = crate::placement::place_bundles(&self.w.state, &br, None)
        else {
            return;
        };
        let (tenant, policy) = (pg.tenant, pg.policy);
        let Some(allocs) = self.w.allocate_all(&subset, &nodes, tenant, policy) else {
            return;
        };
        for ((&i, node), a) in lost.iter().zip(nodes).zip(allocs) {
            self.pgs[p].nodes[i] = node;
            self.pgs[p].allocs[i] = Some(a);
            self.failures.bundles_rescheduled += 1;
        }
        self.w
            .mark("bundles_rescheduled", self.pgs.pg_name(&self.w, p));
        self.pgs[p].lost_since = None;
        self.failures.lost_pgs.retain(|x| *x as usize != p);
        for j in self.pgs[p].jobs.clone() {
            if self.jobs[j as usize].stopped_at.is_some() {
                self.jobs.start_job(&mut self.w, &self.pgs, j);
            }
        }
    }

    /// A slice group lost its slice: take the first intact slice whose gang fits.
    pub(super) fn repair_slice_pg(&mut self, p: usize) {
        let Some((bundles, selector)) = self.pgs.slice_gang(&self.w, p as u32) else {
            return;
        };
        let pg = &self.pgs[p];
        let br = BundleRequest {
            bundles: &bundles,
            strategy: PgStrategy::Pack,
            tenant: pg.tenant,
            policy: pg.policy,
            label_selector: &selector,
            bundle_selectors: &[],
            domain: None,
        };
        let PgDecision::Placed(nodes) = crate::placement::place_bundles(&self.w.state, &br, None)
        else {
            return;
        };
        let (tenant, policy) = (pg.tenant, pg.policy);
        let Some(allocs) = self.w.allocate_all(&bundles, &nodes, tenant, policy) else {
            return;
        };
        self.failures.bundles_rescheduled += bundles.len() as u64;
        self.w
            .mark("bundles_rescheduled", self.pgs.pg_name(&self.w, p));
        let pg = &mut self.pgs[p];
        pg.bundles = bundles;
        pg.nodes = nodes;
        pg.allocs = allocs.into_iter().map(Some).collect();
        pg.lost_since = None;
        self.failures.lost_pgs.retain(|x| *x as usize != p);
        for j in self.pgs[p].jobs.clone() {
            if self.jobs[j as usize].stopped_at.is_some() {
                self.jobs.start_job(&mut self.w, &self.pgs, j);
            }
        }
    }
}

impl PlacementGroups {
    pub(super) fn pg_name(&self, world: &World<'_>, p: usize) -> String {
        let pg = &self.list[p];
        format!(
            "{}.{}",
            world.spec.workloads[pg.workload].name,
            world.spec.workloads[pg.workload].placement_groups[pg.index].name
        )
    }
}

impl Actors {
    /// An actor died with a method call running: Ray retries it on the restarted actor while
    /// `max_task_retries` allows (default 0: the call fails).
    pub(super) fn lose_actor_call(&mut self, a: usize) {
        let ac = &mut self.list[a];
        if ac.calls_left == 0 || ac.dead {
            return;
        }
        if ac.task_retries_left != 0 {
            if ac.task_retries_left > 0 {
                ac.task_retries_left -= 1;
            }
        } else {
            ac.calls_left -= 1;
            self.groups[ac.group].calls_failed += 1;
        }
    }
}
