//! Training jobs on placement groups: starting a job's steps of compute then collectives
//! (priced by `network` over the group's current placement; a step's phases run in
//! `steps.rs`), periodic checkpoints, restarts from the last checkpoint, and the timeline of
//! each step.
//!
//! Architecture invariant: never calls `crate::placement` (a job's group is placed by
//! `placement_groups`); collectives are priced by `network`, falling back to the closed
//! forms of `models`.

use super::placement_groups::PlacementGroups;
use super::{Effect, Sim, World, metrics, models, network};
use crate::engine::Time;
use crate::placement::NodeId;
use crate::sim::TrainingEv::Resume;
use models::secs;
use std::collections::BTreeMap;

/// The training jobs, in order of appearance (a job's id is its index).
#[derive(Default)]
pub(super) struct Jobs {
    /// The (job, epoch, stream) of each queued `TrainingEv::BucketReady`.
    pub(super) bucket_ready: crate::engine::Parked<(u32, u32, u32)>,
    /// Jobs waiting for the fabric to connect their nodes again.
    pub(super) waiting_fabric: Vec<u32>,
    pub(super) list: Vec<Job>,
}

indexed_by_id!(Jobs, Job);

pub(super) struct Job {
    pub(super) workload: usize,
    pub(super) index: usize,
    pub(super) pg: u32,
    pub(super) steps_left: u64,
    pub(super) steps_done: u64,
    /// A step's compute, its optimizer step included, and of it the optimizer step, which
    /// runs at round `opt_gate` (a model-level job's gate, `model_steps::Plan::gate`) once
    /// the gradients are reduced; `opt_done`: it has run this step.
    pub(super) compute_ns: Time,
    pub(super) optimizer_ns: Time,
    pub(super) opt_gate: usize,
    pub(super) opt_done: bool,
    pub(super) comm_ns: Time,
    pub(super) ckpt_every: Option<Time>,
    pub(super) ckpt_ns: Time,
    pub(super) next_ckpt: Time,
    pub(super) started: Option<Time>,
    pub(super) finished: Option<Time>,
    pub(super) ckpt_total: Time,
    pub(super) devices: u32,
    pub(super) nodes: usize,
    pub(super) epoch: u32,
    /// Steps done at the last completed checkpoint, and when it completed.
    pub(super) ckpt_steps: u64,
    pub(super) ckpt_at: Time,
    /// When a failure stopped the job (it resumes when its group is whole again).
    pub(super) stopped_at: Option<Time>,
    pub(super) load_ns: Time,
    pub(super) restarts: u64,
    pub(super) lost_device_ns: f64,
    /// Device-nanoseconds the job's devices sat stalled between a stop and computing again
    /// (detection, rescheduling, checkpoint load), at the job's device count.
    pub(super) stalled_device_ns: f64,
    /// Since when the current run of steps has been making progress.
    pub(super) progress_from: Time,
    /// Timeline: start of the step interval in progress and the checkpoint it begins with.
    pub(super) span_from: Time,
    pub(super) span_ckpt: Time,
    /// Timeline: the job's devices.
    pub(super) dev_set: Vec<u32>,
    /// The nodes of its group in rank order ([`super::placement_groups::PlacementGroups::ranks`]), each once, as of
    /// its last start: where its checkpoint writes and loads go from.
    pub(super) ckpt_nodes: Vec<NodeId>,
    /// Devices the job holds per node (busy utilization of its steps), and the CPUs of its
    /// bundles on each of those nodes.
    pub(super) per_node: Vec<(NodeId, u32)>,
    pub(super) per_node_cpus: Vec<f64>,
    /// The checkpoint before the last one (the fallback while the last is being written).
    pub(super) prev_ckpt_steps: u64,
    pub(super) prev_ckpt_at: Time,
    /// When the failure that stopped the job happened, until it computes again.
    pub(super) recovering_from: Option<Time>,
    /// Its collectives' rounds on the run's network (empty: priced in closed form, `comm_ns`).
    pub(super) rounds: Vec<crate::network::collective::Round>,
    pub(super) on_wire: bool,
    /// The round in progress, when the step's communication began, and its transfer.
    pub(super) round: usize,
    pub(super) comm_from: Time,
    pub(super) xfer: Option<super::wire::TransferId>,
    /// Communication time over every step that finished (including steps redone after a
    /// restart), and how many.
    pub(super) comm_total: Time,
    pub(super) comm_steps: u64,
    /// When the checkpoint write or load in flight began.
    pub(super) ckpt_from: Time,
    /// Per round, the factor its measured time is stretched by (a model-level job's
    /// pipeline bubble, `model_steps`); empty: none.
    pub(super) stretch: Vec<f64>,
    /// When the round in progress began (before its α).
    pub(super) round_from: Time,
    /// A model-level job's figures per step (none for a job declared by its FLOP).
    pub(super) model: Option<ModelStep>,
    /// Its overlapped gradient reduction (`overlap grad_reduce`), if any.
    pub(super) overlap: Option<super::overlap::Overlap>,
    /// Its communication in flight this step, and in flight over every step that finished
    /// (`comm_total` is the exposed part: after the compute).
    pub(super) busy: super::overlap::Busy,
    pub(super) traffic_total: Time,
}

/// What a model-level job's step is worth, for its metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ModelStep {
    pub tokens: f64,
    /// Model FLOP of a step without recomputation, and the dense peak of all its devices.
    pub model_flop: f64,
    pub peak_flops: f64,
    /// Of the step's compute, the pipeline bubble.
    pub bubble_ns: Time,
}

impl Sim<'_> {
    /// The training jobs of workload `wi`, each on its placement group (`pg_base` + index).
    pub(super) fn start_jobs(
        &mut self,
        wi: usize,
        w: &crate::scenario::workload::Workload,
        pg_base: u32,
    ) {
        for (ti, t) in w.training.iter().enumerate() {
            let Some(pi) = w
                .placement_groups
                .iter()
                .position(|p| p.name == t.placement_group)
            else {
                continue;
            };
            let pg = pg_base + pi as u32;
            let id = self.jobs.list.len() as u32;
            self.jobs.list.push(Job {
                workload: wi,
                index: ti,
                pg,
                steps_left: t.steps,
                steps_done: 0,
                compute_ns: 0,
                optimizer_ns: 0,
                opt_gate: 0,
                opt_done: false,
                comm_ns: 0,
                ckpt_every: t.checkpoint.as_ref().map(|c| c.every.0),
                ckpt_ns: 0,
                next_ckpt: 0,
                started: None,
                finished: None,
                ckpt_total: 0,
                devices: 0,
                nodes: 0,
                epoch: 0,
                ckpt_steps: 0,
                ckpt_at: 0,
                stopped_at: None,
                load_ns: 0,
                restarts: 0,
                lost_device_ns: 0.0,
                stalled_device_ns: 0.0,
                progress_from: 0,
                span_from: 0,
                span_ckpt: 0,
                dev_set: Vec::new(),
                ckpt_nodes: Vec::new(),
                per_node: Vec::new(),
                per_node_cpus: Vec::new(),
                prev_ckpt_steps: 0,
                prev_ckpt_at: 0,
                recovering_from: None,
                rounds: Vec::new(),
                on_wire: false,
                round: 0,
                comm_from: 0,
                xfer: None,
                comm_total: 0,
                comm_steps: 0,
                ckpt_from: 0,
                stretch: Vec::new(),
                round_from: 0,
                model: None,
                overlap: None,
                busy: Default::default(),
                traffic_total: 0,
            });
            self.pgs[pg as usize].jobs.push(id);
        }
    }
}

impl Jobs {
    /// Job `j`'s group is placed (or placed again after a failure): its step is priced on
    /// the group's devices and the job runs, unless the fabric cuts its ranks apart (it
    /// waits for a repair) or its model cannot be priced (it does not run, and says why).
    pub(super) fn start_job(&mut self, world: &mut World<'_>, pgs: &PlacementGroups, j: u32) {
        let now = world.now();
        if self.fabric_cuts(world, pgs, j) {
            // NCCL cannot connect its ranks: it waits for a repair (`failures::fabric`).
            if !self.waiting_fabric.contains(&j) {
                self.waiting_fabric.push(j);
                let (w, i) = (self[j as usize].workload, self[j as usize].index);
                let wl = &world.spec.workloads[w];
                let name = format!("{}.{}", wl.name, wl.training[i].name);
                world.mark("job_waits_for_fabric", name);
            }
            return;
        }
        let spec = world.spec;
        let job = &self[j as usize];
        let t = &spec.workloads[job.workload].training[job.index];
        let per_node = pgs.devices_per_node(world, self[j as usize].pg);
        let devices: u32 = per_node.values().sum();
        let compute = match (
            &t.compute,
            per_node.keys().find_map(|n| world.node_accel[*n].clone()),
        ) {
            (Some(c), Some(acc)) => models::compute_secs(spec, &acc, c, 1.0, 1.0),
            _ => 0.0,
        };
        self.note_job_net(world, j, &per_node);
        let comm = self.job_comm_secs(world, j, &per_node);
        let (mut optimizer, mut gate) = (0.0, 0);
        let (compute, rounds, stretch, model, overlap) = match &t.model {
            Some(mt) => match self.model_plan(world, pgs, j, mt, &per_node) {
                Ok((plan, step)) => (
                    {
                        (optimizer, gate) = (plan.optimizer_secs, plan.gate);
                        plan.compute_secs
                    },
                    Some(plan.rounds),
                    plan.stretch,
                    Some(step),
                    (!plan.streams.is_empty())
                        .then(|| super::overlap::Overlap::new(plan.streams, plan.gate)),
                ),
                Err(e) => {
                    // Not priced: the job does not run rather than run for free.
                    world.net.note(
                        network::MovementKind::Collective,
                        false,
                        format!(
                            "training {}: not run, its model cannot be priced ({e})",
                            t.name
                        ),
                    );
                    return;
                }
            },
            None => (
                compute,
                self.job_rounds(world, pgs, j),
                Vec::new(),
                None,
                None,
            ),
        };
        let ckpt = t
            .checkpoint
            .as_ref()
            .map(|c| super::checkpoints::closed_form_secs(c.size.0 as f64, per_node.len()))
            .unwrap_or(0);
        for (n, d) in &per_node {
            world.busy(*n, f64::from(*d), now);
        }
        let node_cpus = pgs.cpus_per_node(self[j as usize].pg);
        let ranks = pgs.ranks(world, self[j as usize].pg);
        self.set_ranks(world, j, &ranks);
        let job = &mut self[j as usize];
        job.compute_ns = secs(compute);
        job.optimizer_ns = secs(optimizer).min(job.compute_ns);
        job.opt_gate = gate;
        job.comm_ns = secs(comm);
        job.ckpt_ns = ckpt;
        // Loading the checkpoint after a restart reads it back at the same rate.
        job.load_ns = job.ckpt_ns;
        job.devices = devices;
        job.nodes = per_node.len();
        job.started.get_or_insert(now);
        job.per_node = per_node.iter().map(|(n, d)| (*n, *d)).collect();
        job.per_node_cpus = per_node.keys().map(|n| node_cpus[n]).collect();
        job.on_wire = rounds.is_some();
        job.rounds = rounds.unwrap_or_default();
        job.stretch = stretch;
        job.model = model;
        job.overlap = overlap;
        self.run_from_start(world, j, now);
    }

    /// Job `j` placed and priced: its first step begins, or after a restart it loads its
    /// last checkpoint first.
    fn run_from_start(&mut self, world: &mut World<'_>, j: u32, now: Time) {
        let job = &mut self[j as usize];
        match job.stopped_at.take() {
            None => {
                job.progress_from = now;
                job.span_from = now;
                job.span_ckpt = 0;
                job.next_ckpt = job.ckpt_every.map(|e| now + e).unwrap_or(Time::MAX);
                self.begin_step(world, j, 0);
            }
            Some(stopped) => {
                // Restart from the last checkpoint: load it, then continue. Recovery is
                // measured when it computes again (a crash during the load extends it).
                job.restarts += 1;
                job.recovering_from.get_or_insert(stopped);
                // Nothing is computed until the load is done (a crash during it loses nothing).
                job.progress_from = Time::MAX;
                let epoch = job.epoch;
                let load_ns = job.load_ns;
                if !self.start_checkpoint(world, j, true) {
                    world.q.after(load_ns.max(1), Resume(j, epoch).into());
                }
            }
        }
    }

    /// Seconds of the job's collectives per step over its current group, with the current
    /// bandwidth of each node (degraded NVLink or NICs slow them down).
    pub(super) fn job_comm_secs(
        &mut self,
        world: &mut World<'_>,
        j: u32,
        per_node: &BTreeMap<NodeId, u32>,
    ) -> f64 {
        let (job, spec) = (&self[j as usize], world.spec);
        let t = &spec.workloads[job.workload].training[job.index];
        let linked: Vec<(NodeId, u32)> = per_node
            .iter()
            .filter(|(_, d)| **d > 0)
            .map(|(n, d)| (*n, *d))
            .collect();
        // The tenant's transport: NCCL's sockets reach part of the NICs' rate.
        let share = crate::sim::collective_rules::share(self.job_net(world, j).1);
        let group = models::Group {
            nodes: linked
                .iter()
                .map(|(n, d)| (world.node_types[*n], *d))
                .collect(),
            factors: linked
                .iter()
                .map(|(n, _)| {
                    let (up, nic) = world.health.bandwidth_factors(*n);
                    (up, nic * share)
                })
                .collect(),
        };
        let mut total = 0.0;
        for c in &t.collectives {
            total += models::collective_secs(spec, &c.op, c.bytes.0 as f64, c.hierarchical, &group);
        }
        total
    }

    /// Job `j`'s collectives as rounds on the run's network over its ranks, or `None` (priced
    /// in closed form) when the flow model cannot take one of them; the run notes which.
    fn job_rounds(
        &mut self,
        world: &mut World<'_>,
        pgs: &PlacementGroups,
        j: u32,
    ) -> Option<Vec<crate::network::collective::Round>> {
        let job = &self[j as usize];
        let t = &world.spec.workloads[job.workload].training[job.index];
        let ranks = pgs.ranks(world, self[j as usize].pg);
        let share = crate::sim::collective_rules::share(self.job_net(world, j).1);
        let mut all = Vec::new();
        let mut ok = true;
        for c in &t.collectives {
            let what = format!(
                "collective {} {}{}{}",
                c.op,
                c.algo.as_deref().unwrap_or("(NCCL's choice)"),
                c.proto
                    .as_deref()
                    .map_or(String::new(), |p| format!(" {p}")),
                if c.hierarchical { " hierarchical" } else { "" }
            );
            let r = match &world.wire.graph {
                Some(g) => network::collective_rounds(g, c, &ranks, share),
                None => Err("no cluster graph".into()),
            };
            match r {
                Ok(r) => {
                    let how = match &r.measured {
                        Some(m) => format!("{m}, flows as {}", r.algorithm.name()),
                        None => format!("{} {}", r.algorithm.name(), r.protocol.name()),
                    };
                    world.net.note(
                        network::MovementKind::Collective,
                        true,
                        format!("{what}: {how} on the run's shared network (flow model)"),
                    );
                    all.extend(r.rounds);
                }
                Err(e) => {
                    world.net.note(
                        network::MovementKind::Collective,
                        false,
                        format!("{what}: closed form ({e})"),
                    );
                    ok = false;
                }
            }
        }
        ok.then_some(all)
    }

    /// A node's bandwidth changed: running jobs on it take the new collective time from
    /// their next step.
    pub(crate) fn refresh_jobs_on(
        &mut self,
        world: &mut World<'_>,
        pgs: &PlacementGroups,
        n: NodeId,
    ) {
        world.apply_node_bandwidth(n);
        for j in 0..self.list.len() as u32 {
            let job = &self[j as usize];
            if job.started.is_none()
                || job.finished.is_some()
                || job.stopped_at.is_some()
                || !pgs[job.pg as usize].nodes.contains(&n)
            {
                continue;
            }
            if self[j as usize].on_wire {
                continue; // the run's network carries the new capacities
            }
            let per_node = pgs.devices_per_node(world, self[j as usize].pg);
            let comm = secs(self.job_comm_secs(world, j, &per_node));
            self[j as usize].comm_ns = comm;
        }
    }
}

impl Jobs {
    /// A step of job `j` finished: maybe write a checkpoint, then the next step or done.
    pub(super) fn on_step_done(&mut self, world: &mut World<'_>, j: u32, epoch: u32) -> Effect {
        let now = world.now();
        let job = &mut self[j as usize];
        if epoch != job.epoch {
            return Effect::Nothing;
        }
        job.steps_left -= 1;
        job.steps_done += 1;
        // Busy utilization: the job's devices worked the whole step interval (checkpoint,
        // compute, collectives).
        let from = self[j as usize].span_from;
        for k in 0..self[j as usize].per_node.len() {
            let (n, d) = self[j as usize].per_node[k];
            world.worked(n, f64::from(d), from, now);
            let cpus = self[j as usize].per_node_cpus[k];
            world.cpu_worked(n, cpus, from, now, self.label(j as usize));
        }
        if world.tl.on {
            self.record_step(world, j as usize, now);
        }
        self[j as usize].span_from = now;
        let job = &mut self[j as usize];
        if !job.on_wire {
            job.comm_total += job.comm_ns;
            job.traffic_total += job.comm_ns;
            job.comm_steps += 1;
        }
        let mut lead = 0;
        job.span_ckpt = 0;
        let mut writing = false;
        if now >= job.next_ckpt && job.steps_left > 0 {
            // Write a checkpoint after this step (not after the last: the job ends); it
            // counts once written.
            job.prev_ckpt_steps = job.ckpt_steps;
            job.prev_ckpt_at = job.ckpt_at;
            job.ckpt_steps = job.steps_done;
            job.next_ckpt = job
                .next_ckpt
                .saturating_add(job.ckpt_every.unwrap_or(Time::MAX));
            if self.start_checkpoint(world, j, false) {
                // On the network: it counts when its flows are done (until then, not yet).
                self[j as usize].ckpt_at = Time::MAX;
                writing = true;
            } else {
                let job = &mut self[j as usize];
                lead += job.ckpt_ns;
                job.ckpt_total += job.ckpt_ns;
                job.ckpt_at = now + job.ckpt_ns;
                job.span_ckpt = job.ckpt_ns;
            }
        }
        let job = &mut self[j as usize];
        if writing {
            // The next step starts when the write is done (`on_checkpoint_done`).
        } else if job.steps_left > 0 {
            self.begin_step(world, j, lead);
        } else {
            job.finished = Some(now);
            world.makespan = world.makespan.max(now);
            return Effect::ReleasePg(job.pg);
        }
        Effect::Nothing
    }

    /// Job `j` finished loading its checkpoint after a restart: it computes again.
    pub(super) fn on_job_resume(&mut self, world: &mut World<'_>, j: u32, epoch: u32) {
        let now = world.now();
        let job = &mut self[j as usize];
        if epoch == job.epoch {
            job.progress_from = now;
            job.span_from = now;
            job.span_ckpt = 0;
            if let Some(from) = job.recovering_from.take() {
                world.losses.recovery.record_ns(now - from);
                let stalled = f64::from(job.devices) * (now - from) as f64;
                job.stalled_device_ns += stalled;
                world.losses.stalled_device_ns += stalled;
            }
            let job = &mut self[j as usize];
            let (w, i) = (job.workload, job.index);
            world.losses.timeline.push(metrics::TimelineEvent {
                time: now as f64 / 1e9,
                kind: "job_resumed".into(),
                subject: format!(
                    "{}.{}",
                    world.spec.workloads[w].name, world.spec.workloads[w].training[i].name
                ),
            });
            let job = &mut self[j as usize];
            job.next_ckpt = job.ckpt_every.map(|e| now + e).unwrap_or(Time::MAX);
            self.begin_step(world, j, 0);
        }
    }
}

impl Jobs {
    /// Job `j` (re)starts on `ranks` ([`super::placement_groups::PlacementGroups::ranks`]): the devices its timeline
    /// rows are, and the nodes its checkpoints go from.
    fn set_ranks(&mut self, world: &World<'_>, j: u32, ranks: &[(usize, usize)]) {
        let job = &mut self[j as usize];
        job.dev_set = (ranks.iter())
            .filter_map(|&(n, k)| world.tl.device(n, k))
            .collect();
        job.ckpt_nodes = ranks.iter().map(|&(n, _)| n).collect();
        job.ckpt_nodes.dedup();
    }
}
