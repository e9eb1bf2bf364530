//! Task groups: a DAG at group granularity (a group is submitted when every group it runs
//! `after` has finished), filling the per-task arrays of `Sim` (start, node, allocation,
//! attempt, retries), task durations, completion bookkeeping and retries.
//!
//! Architecture invariant: never calls `crate::placement`; tasks are placed through
//! `scheduling` (`submit`, `dispatch`).

use super::schedulable::{Ask, Schedulable};
use super::{Effect, Ev, Sim, Work, models, timeline};
use crate::engine::Time;
use crate::placement::{Allocation, NodeId, Request};
use crate::scenario::Spec;
use crate::scenario::workload::Policy;
use crate::sim::World;
use models::secs;

/// The task groups and every task's state: one entry per task in each list, indexed by task
/// (a struct of lists, so the loops over many tasks read only the field they need).
#[derive(Default)]
pub(super) struct Tasks {
    pub(super) groups: Vec<Group>,
    pub(super) start: Vec<Time>,
    pub(super) node: Vec<u32>,
    /// The first device instance each task's allocation held (its inputs and outputs live
    /// there), 0 without devices.
    pub(super) dev: Vec<u32>,
    pub(super) alloc: Vec<Option<Allocation>>,
    /// Attempt number of each task (bumped when its node dies).
    pub(super) epoch: Vec<u32>,
    pub(super) completed: Vec<bool>,
    pub(super) started: Vec<bool>,
    /// Completed tasks re-running to rebuild an output lost with its node.
    pub(super) rebuild: Vec<bool>,
    /// Retries left.
    pub(super) retries: Vec<u32>,
}

pub(super) struct Group {
    pub(super) workload: usize,
    pub(super) index: usize,
    pub(super) request: Request,
    pub(super) tenant: Option<usize>,
    pub(super) policy: Policy,
    pub(super) first: u32,
    pub(super) count: u32,
    pub(super) deps_left: u32,
    pub(super) dependents: Vec<u32>,
    pub(super) done: u32,
    pub(super) ready_at: Time,
    pub(super) input_bytes: f64,
    pub(super) queueing: super::durations::Durations,
    pub(super) run: super::durations::Durations,
    pub(super) infeasible: u64,
    /// Tasks that ran out of retries after their node died.
    pub(super) failed: u64,
    /// Tasks that have started at least once (reconstruction runs aside).
    pub(super) started: u32,
    /// Lost input objects being rebuilt (lineage reconstruction): the group's tasks that
    /// have not started wait until this is back to 0.
    pub(super) blocked: u32,
    /// Bytes of this group's outputs spilled to disk, and whether its outputs were released.
    pub(super) spilled_bytes: f64,
    pub(super) released: bool,
    /// Tasks waiting out their retry delay.
    pub(super) delayed: u32,
    pub(super) first_start: Option<Time>,
    pub(super) last_end: Time,
    /// Input fetches started, bytes they read from other nodes, and their total seconds.
    pub(super) fetches: u64,
    pub(super) fetched_bytes: f64,
    pub(super) fetch_ns: Time,
}

impl Sim<'_> {
    /// Task groups of workload `wi`, then their dependency edges; groups with no `after`
    /// are submitted now.
    pub(super) fn start_tasks(
        &mut self,
        wi: usize,
        w: &crate::scenario::workload::Workload,
        tenant: Option<usize>,
    ) {
        // Task groups, then their dependency edges.
        let base = self.tasks.groups.len() as u32;
        for (gi, g) in w.tasks.iter().enumerate() {
            let request = self
                .w
                .state
                .request_with_memory(&g.resources, g.device_memory);
            let first = self.tasks.start.len() as u32;
            self.tasks
                .start
                .extend(std::iter::repeat_n(0, g.count as usize));
            self.tasks
                .node
                .extend(std::iter::repeat_n(u32::MAX, g.count as usize));
            self.tasks
                .dev
                .extend(std::iter::repeat_n(0, g.count as usize));
            self.tasks
                .alloc
                .extend(std::iter::repeat_with(|| None).take(g.count as usize));
            self.tasks
                .epoch
                .extend(std::iter::repeat_n(0, g.count as usize));
            self.tasks
                .completed
                .extend(std::iter::repeat_n(false, g.count as usize));
            self.tasks
                .started
                .extend(std::iter::repeat_n(false, g.count as usize));
            self.tasks
                .rebuild
                .extend(std::iter::repeat_n(false, g.count as usize));
            self.tasks
                .retries
                .extend(std::iter::repeat_n(g.retries, g.count as usize));
            self.tasks.groups.push(Group {
                workload: wi,
                index: gi,
                request,
                tenant,
                policy: w.policy,
                first,
                count: g.count as u32,
                deps_left: g.after.len() as u32,
                dependents: Vec::new(),
                done: 0,
                ready_at: 0,
                input_bytes: 0.0,
                queueing: Default::default(),
                run: Default::default(),
                infeasible: 0,
                failed: 0,
                started: 0,
                blocked: 0,
                spilled_bytes: 0.0,
                released: false,
                delayed: 0,
                first_start: None,
                last_end: 0,
                fetches: 0,
                fetched_bytes: 0.0,
                fetch_ns: 0,
            });
        }
        for (gi, g) in w.tasks.iter().enumerate() {
            let me = base + gi as u32;
            let mut input = 0.0;
            for dep in &g.after {
                if let Some(di) = w.tasks.iter().position(|t| &t.name == dep) {
                    self.tasks.groups[(base + di as u32) as usize]
                        .dependents
                        .push(me);
                    input += w.tasks[di].count as f64 * w.tasks[di].output.0 as f64;
                }
            }
            self.tasks.groups[me as usize].input_bytes = input / g.count.max(1) as f64;
            if g.after.is_empty() {
                // Work at time zero is submitted in declaration order.
                self.handle(Ev::Task(TaskEv::GroupReady(me)));
            }
        }
    }
}

impl Tasks {
    /// Every group this one runs `after` has finished: submit its tasks.
    pub(super) fn on_group_ready(&mut self, world: &mut World<'_>, g: u32) -> Effect {
        let now = world.now();
        let grp = &mut self.groups[g as usize];
        grp.ready_at = now;
        let (first, count) = (grp.first, grp.count);
        Effect::SubmitTasks { first, count }
    }

    /// A task attempt finished; stale attempts (its node died) are ignored.
    pub(super) fn on_task_done(&mut self, world: &mut World<'_>, t: u32, epoch: u32) -> Effect {
        let now = world.now();
        if epoch != self.epoch[t as usize] {
            return Effect::Nothing; // its node died; the task was retried or failed
        }
        let gi = self.group_of(t);
        let node = self.node[t as usize] as usize;
        if self.begin_spill(world, t, gi, node, epoch) {
            return Effect::Nothing; // completes when its output is on disk (`spills.rs`)
        }
        self.record_task(world, t as usize, now);
        if self.rebuild[t as usize] {
            return Effect::Rebuilt(t);
        }
        if !world.state.nodes[node].alive() {
            world.violations.push(format!(
                "task {t} finished on dead node {}",
                world.state.nodes[node].name()
            ));
        }
        if std::mem::replace(&mut self.completed[t as usize], true) {
            world.violations.push(format!("task {t} completed twice"));
        }
        if let Some(a) = self.alloc[t as usize].take() {
            world.free(&a, self.groups[gi].tenant);
        }
        let units = world.device_units(&self.groups[gi].request);
        world.busy(node, -units, now);
        let start = self.start[t as usize];
        self.groups[gi].run.record_ns(now - start);
        self.store_output(world, t, gi, node);
        self.task_done_bookkeeping(world, gi);
        Effect::Dispatch(node)
    }

    /// A task's retry delay is over: submit it again.
    pub(super) fn on_retry(&mut self, t: u32) -> Effect {
        let gi = self.group_of(t);
        self.groups[gi].delayed -= 1;
        Effect::Submit(Work::Task(t))
    }

    /// Task `t` of `gi` on `node` has its spilled inputs back (`spills.rs`): fetch its inputs
    /// from their holders (the fixed part, plus `extra` seconds, as a delay, then flows on the
    /// run's network), then run.
    pub(super) fn start_fetch(
        &mut self,
        world: &mut World<'_>,
        t: u32,
        gi: usize,
        node: NodeId,
        units: f64,
        extra: f64,
    ) {
        let epoch = self.epoch[t as usize];
        let (fixed, flows) = if self.groups[gi].input_bytes > 0.0 {
            match self.fetch_plan(world, t, gi, node, units > 0.0) {
                Ok(x) => x,
                Err(()) => {
                    world
                        .q
                        .at(world.q.now(), Ev::Task(TaskEv::FetchFailed(t, epoch)));
                    return;
                }
            }
        } else {
            (0.0, Vec::new())
        };
        let fixed = fixed + extra;
        if flows.is_empty() {
            if fixed > 0.0 {
                self.groups[gi].fetch_ns += secs(fixed);
            }
            let d = secs(fixed) + self.task_run_ns(world, gi, node);
            world.q.after(d.max(1), Ev::Task(TaskEv::Done(t, epoch)));
            return;
        }
        world.net.pending_fetch.insert(t, flows);
        world.transfer_after(secs(fixed), super::wire::Owner::Fetch { task: t, epoch });
    }

    /// Task `t`'s transport cannot move its inputs to it: the task fails, as Ray raises the
    /// transport's error in it (an application error: not retried, as `retry_exceptions`
    /// is off by default); its dependents run as after any failed task.
    pub(super) fn on_fetch_failed(&mut self, world: &mut World<'_>, t: u32, epoch: u32) -> Effect {
        if epoch != self.epoch[t as usize] {
            return Effect::Nothing;
        }
        let now = world.now();
        let gi = self.group_of(t);
        let node = self.node[t as usize] as usize;
        self.record_task(world, t as usize, now);
        world.cancel_fetch(t);
        self.epoch[t as usize] += 1;
        if let Some(a) = self.alloc[t as usize].take() {
            world.free(&a, self.groups[gi].tenant);
        }
        let units = world.device_units(&self.groups[gi].request);
        world.busy(node, -units, now);
        world.losses.tasks_failed += 1;
        self.groups[gi].failed += 1;
        self.task_done_bookkeeping(world, gi);
        Effect::Dispatch(node)
    }

    /// Submit a task again, after its group's retry delay.
    pub(crate) fn retry_task(&mut self, world: &mut World<'_>, t: u32) -> Effect {
        let gi = self.group_of(t);
        let g = &self.groups[gi];
        let delay = world.spec.workloads[g.workload].tasks[g.index]
            .retry_delay
            .0;
        if delay == 0 {
            return Effect::Submit(Work::Task(t));
        }
        self.groups[gi].delayed += 1;
        world.q.after(delay, Ev::Task(TaskEv::Retry(t)));
        Effect::Nothing
    }

    /// Task `t` was placed on `node` with `alloc` (`units` device instances): it starts its
    /// input fetches, then runs.
    pub(super) fn task_started(
        &mut self,
        world: &mut World<'_>,
        t: u32,
        node: NodeId,
        alloc: Allocation,
        units: f64,
    ) {
        let now = world.now();
        let gi = self.group_of(t);
        world.busy(node, units, now);
        let first = !std::mem::replace(&mut self.started[t as usize], true);
        let g = &mut self.groups[gi];
        if first {
            g.queueing.record_ns(now - g.ready_at);
            g.started += 1;
        }
        g.first_start.get_or_insert(now);
        if first {
            self.consumer_started(world, gi);
        }
        self.start[t as usize] = now;
        self.node[t as usize] = node as u32;
        self.dev[t as usize] = alloc
            .instances
            .iter()
            .filter(|(rid, _)| world.unit_ids.contains(rid))
            .find_map(|(_, amounts)| amounts.iter().position(|x| *x > 0))
            .unwrap_or(0) as u32;
        self.alloc[t as usize] = Some(alloc);
        self.start_task_work(world, t, gi, node, units);
    }
}

impl Tasks {
    /// Timeline: task `t` ran on its devices and CPUs from its start until `now` (done or
    /// killed). Busy utilization: its devices and CPUs did work the whole time (its input
    /// fetch included).
    pub(crate) fn record_task(&mut self, world: &mut World<'_>, t: usize, now: Time) {
        let node = self.node[t] as usize;
        let gi = self.group_of(t as u32);
        let units = world.device_units(&self.groups[gi].request);
        world.worked(node, units, self.start[t], now);
        let cpus = super::cpu::cpus_of(&self.groups[gi].request);
        let item = self.label(gi);
        world.cpu_worked(node, cpus, self.start[t], now, item);
        if !world.tl.on {
            return;
        }
        let devs = world.alloc_devices(node, self.alloc[t].as_ref());
        let label = world.label_id(self.label(gi));
        let from = self.start[t];
        world
            .tl
            .span(&devs, from, now, timeline::SpanKind::Compute, label);
    }
}

impl Tasks {
    pub(super) fn group_of(&self, task: u32) -> usize {
        self.groups.partition_point(|g| g.first + g.count <= task)
    }

    /// Nanoseconds task `t` of `gi` computes on `node` once its inputs are there.
    fn task_run_ns(&self, world: &World<'_>, gi: usize, node: NodeId) -> Time {
        let g = &self.groups[gi];
        let units = world.device_units(&g.request);
        let ts = &world.spec.workloads[g.workload].tasks[g.index];
        let run = match (&ts.duration, &ts.compute, &world.node_accel[node]) {
            (Some(d), _, _) => d.0 as f64 / 1e9,
            (None, Some(c), Some(acc)) => models::compute_secs(world.spec, acc, c, 1.0, units),
            _ => 0.0,
        };
        secs(run).max(1)
    }

    /// Task `t`'s inputs have arrived: it runs.
    pub(super) fn on_fetch_done(&mut self, world: &mut World<'_>, t: u32, epoch: u32) {
        world.net.fetch_xfer.remove(&t);
        world.net.fetch_from.remove(&t);
        if epoch != self.epoch[t as usize] {
            return;
        }
        let gi = self.group_of(t);
        let node = self.node[t as usize] as usize;
        let (start, now) = (self.start[t as usize], world.now());
        world.tl.arrived(super::timeline::MoveKey::Fetch(t), now);
        let took = now - start;
        self.groups[gi].fetch_ns += took;
        let d = self.task_run_ns(world, gi, node);
        world.q.after(d, Ev::Task(TaskEv::Done(t, epoch)));
    }

    pub(super) fn task_done_bookkeeping(&mut self, world: &mut World<'_>, gi: usize) {
        let now = world.now();
        let g = &mut self.groups[gi];
        g.done += 1;
        if g.done == g.count {
            g.last_end = now;
            world.makespan = world.makespan.max(now);
            for d in g.dependents.clone() {
                let dg = &mut self.groups[d as usize];
                dg.deps_left -= 1;
                if dg.deps_left == 0 {
                    world.q.at(now, Ev::Task(TaskEv::GroupReady(d)));
                }
            }
        }
    }
}

impl World<'_> {
    /// Task `t` was killed (or must fetch again): its fetch, restore or spill leaves the
    /// network.
    pub(crate) fn cancel_fetch(&mut self, t: u32) {
        self.cancel_spill_io(t);
        self.net.fetch_from.remove(&t);
        self.net.await_inputs.remove(&t);
        self.net.pending_fetch.remove(&t);
        if let Some(x) = self.net.fetch_xfer.remove(&t) {
            let now = self.now();
            self.wire.cancel(now, x);
            self.rearm_wire();
        }
    }
}

/// The events of task groups and their tasks.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TaskEv {
    /// A group's dependencies are done: its tasks are submitted.
    GroupReady(u32),
    /// (task, attempt): stale attempts (the task's node died) are ignored.
    Done(u32, u32),
    /// Resubmit a task after its retry delay.
    Retry(u32),
    /// (task, attempt): its transport cannot move its inputs (`price_move`): it fails.
    FetchFailed(u32, u32),
}

impl Tasks {
    pub(super) fn on_task_event(&mut self, world: &mut World<'_>, ev: TaskEv) -> Effect {
        match ev {
            TaskEv::GroupReady(g) => self.on_group_ready(world, g),
            TaskEv::Done(t, epoch) => self.on_task_done(world, t, epoch),
            TaskEv::Retry(t) => self.on_retry(t),
            TaskEv::FetchFailed(t, epoch) => self.on_fetch_failed(world, t, epoch),
        }
    }
}

impl Schedulable for Tasks {
    fn class_of(&self, t: u32) -> u32 {
        self.group_of(t) as u32
    }

    fn class_tenant(&self, g: u32) -> Option<usize> {
        self.groups[g as usize].tenant
    }

    fn ask<'s>(&self, spec: &'s Spec, t: u32) -> Ask<'s> {
        let g = &self.groups[self.group_of(t)];
        let ts = &spec.workloads[g.workload].tasks[g.index];
        Ask {
            request: g.request.clone(),
            strategy: &ts.strategy,
            selector: &ts.label_selector,
            fallbacks: &ts.fallbacks,
            tenant: g.tenant,
            policy: g.policy,
        }
    }

    fn always_waits(&self, t: u32) -> bool {
        self.rebuild[t as usize]
    }

    fn class_blocked(&self, g: u32) -> bool {
        self.groups[g as usize].blocked > 0
    }

    fn infeasible(&mut self, world: &mut World<'_>, t: u32) {
        let g = self.group_of(t);
        self.groups[g].infeasible += 1;
        self.task_done_bookkeeping(world, g);
    }

    fn item_name(&self, spec: &Spec, t: u32) -> String {
        let g = &self.groups[self.group_of(t)];
        let w = &spec.workloads[g.workload];
        format!("{}.{}", w.name, w.tasks[g.index].name)
    }
}
