//! One training step's phases on the run's network (`training.rs` starts jobs and ends
//! steps): the compute, then the rounds of its collectives one after another, each paying
//! its α and then its flows; at the plan's gate the rounds wait for the overlapped gradient
//! streams (`overlap.rs`) and then for the optimizer step, which reads the reduced
//! gradients (Megatron-LM's `finish_grad_sync()` before `optimizer.step()`); the rounds
//! after the gate (ZeRO-1's parameter all-gather) follow, and the step is done.
//! A finished step's interval goes on the timeline (`record_step`).
//!
//! Architecture invariant: flows start and leave only through `wire`; stale events (a
//! failure restarted the job) are recognised by the job's epoch.

use super::models::secs;
use super::{Ev, timeline};
use crate::engine::Time;
use crate::sim::Effect;
use crate::sim::World;
use crate::sim::training::Jobs;

impl Jobs {
    /// Job `j`'s step finished computing: its first round.
    pub(super) fn on_comm_start(&mut self, world: &mut World<'_>, j: u32, epoch: u32) -> Effect {
        let now = world.now();
        let job = &mut self[j as usize];
        if epoch != job.epoch {
            return Effect::Nothing;
        }
        job.comm_from = now;
        job.round = 0;
        job.opt_done = false;
        job.busy.on(now);
        self.next_round(world, j)
    }

    /// The next round of the step's collectives after its α, or the step is done; at the
    /// overlap's gate, only once every gradient stream is done.
    pub(super) fn next_round(&mut self, world: &mut World<'_>, j: u32) -> Effect {
        let now = world.now();
        let job = &mut self[j as usize];
        let epoch = job.epoch;
        // The round just done is stretched by waiting a share of its time before the next
        // (a bubble stretches the traffic in the stages' critical path like their compute).
        let extra = match job.round.checked_sub(1).and_then(|k| job.stretch.get(k)) {
            Some(&f) if f > 1.0 => ((now - job.round_from) as f64 * (f - 1.0)).round() as Time,
            _ => 0,
        };
        // This round's own time starts after that wait (else the wait is stretched again).
        job.round_from = now + extra;
        if let Some(o) = &mut job.overlap
            && job.round == o.gate
            && o.left > 0
        {
            // The gate comes after an unstretched round (`model_steps::pad_stretched`).
            o.parked = true;
            job.busy.off(now);
            return Effect::Nothing;
        }
        if job.round == job.opt_gate && !job.opt_done && job.optimizer_ns > 0 {
            // Every gradient is reduced: the optimizer step, then what follows it.
            job.opt_done = true;
            job.busy.off(now);
            world.q.after(
                job.optimizer_ns + extra,
                Ev::Training(TrainingEv::OptimizerDone(j, epoch)),
            );
            return Effect::Nothing;
        }
        let Some(r) = job.rounds.get(job.round) else {
            // The optimizer step ran inside this interval; it is compute.
            let opt = if job.opt_done { job.optimizer_ns } else { 0 };
            let comm = (now - job.comm_from).saturating_sub(opt);
            job.comm_ns = comm;
            job.comm_total += comm;
            job.comm_steps += 1;
            job.busy.off(now);
            job.traffic_total += job.busy.ns;
            if comm == 0 && job.compute_ns == 0 {
                // Nothing takes time: keep the clock moving as the closed-form path does.
                world
                    .q
                    .after(1, Ev::Training(TrainingEv::StepDone(j, epoch)));
                return Effect::Nothing;
            }
            return self.on_step_done(world, j, epoch);
        };
        let alpha = secs(r.alpha) + extra;
        if alpha > 0 {
            world.transfer_after(alpha, super::wire::Owner::Round { job: j, epoch });
            return Effect::Nothing;
        }
        self.on_transfer_go(world, super::wire::Owner::Round { job: j, epoch })
    }

    /// The optimizer step is done: the rounds after the gate.
    pub(super) fn on_optimizer_done(
        &mut self,
        world: &mut World<'_>,
        j: u32,
        epoch: u32,
    ) -> Effect {
        let now = world.now();
        let job = &mut self[j as usize];
        if epoch != job.epoch {
            return Effect::Nothing;
        }
        job.busy.on(now);
        job.round_from = now;
        self.next_round(world, j)
    }

    /// A round's flows all finished.
    pub(super) fn on_round_done(&mut self, world: &mut World<'_>, j: u32, epoch: u32) -> Effect {
        let job = &mut self[j as usize];
        if epoch != job.epoch {
            return Effect::Nothing;
        }
        job.xfer = None;
        job.round += 1;
        self.next_round(world, j)
    }
}

impl Jobs {
    /// Timeline: the step interval of job `j` that ends now — its checkpoint (if it began
    /// with one), compute, then communication.
    pub(super) fn record_step(&mut self, world: &mut World<'_>, j: usize, now: Time) {
        let label = world.label_id(self.label(j));
        let job = &self[j];
        let w = &world.spec.workloads[job.workload];
        let (from, ck, c) = (job.span_from, job.span_ckpt, job.compute_ns);
        let a = from + ck;
        let b = (a + c).min(now);
        use timeline::SpanKind as K;
        let devs = &self[j].dev_set;
        let n = self[j].steps_done.saturating_sub(1) as u32;
        let step = Some(n);
        world
            .tl
            .span_of(devs, from, a.min(now), K::Checkpoint, label, step);
        world.tl.span_of(devs, a, b, K::Compute, label, step);
        world
            .tl
            .span_of(devs, b, now, K::Communication, label, step);
        let t = &w.training[job.index];
        if t.collectives.is_empty() || now <= b {
            return;
        }
        let algorithm: Vec<String> = t
            .collectives
            .iter()
            .map(|c| {
                let algo = c.algo.as_deref().unwrap_or("ring");
                let h = if c.hierarchical { " hierarchical" } else { "" };
                format!("{} {algo}{h}", c.op)
            })
            .collect();
        let group = timeline::transfers::Group {
            name: t.placement_group.clone(),
            nodes: job
                .per_node
                .iter()
                .filter(|(_, d)| *d > 0)
                .map(|(n, _)| *n as u32)
                .collect(),
            ranks: job.devices,
            algorithm: algorithm.join(" + "),
        };
        let bytes = t.collectives.iter().map(|c| c.bytes.0 as f64).sum();
        let model = if job.on_wire {
            "flow model on the shared network"
        } else {
            "closed form"
        };
        world.tl.collective(label, n, group, b, now, bytes, model);
    }
}

impl Jobs {
    /// Start a step of job `j` after `lead` (a checkpoint write before it): compute, then its
    /// collectives — on the run's network, or for the closed-form `comm_ns`.
    pub(super) fn begin_step(&mut self, world: &mut World<'_>, j: u32, lead: Time) {
        let now = world.now();
        let job = &mut self.list[j as usize];
        let epoch = job.epoch;
        job.busy = Default::default();
        if job.on_wire {
            // The optimizer step waits for the reduction (`next_round`).
            let until = lead + job.compute_ns - job.optimizer_ns;
            world
                .q
                .after(until, Ev::Training(TrainingEv::CommStart(j, epoch)));
            // Overlapped gradient buckets start during the compute.
            self.overlap_begin(world, j, now + lead);
        } else {
            let d = (lead + job.compute_ns + job.comm_ns).max(1);
            world
                .q
                .after(d, Ev::Training(TrainingEv::StepDone(j, epoch)));
        }
    }

    /// A failure stopped job `j`: its flows leave the network.
    pub(crate) fn cancel_job_transfer(&mut self, world: &mut World<'_>, j: usize) {
        if let Some(x) = self.list[j].xfer.take() {
            let now = world.now();
            world.wire.cancel(now, x);
        }
        self.cancel_bucket_transfers(world, j);
        world.rearm_wire();
    }
}

/// The events of training jobs: steps, their collectives, optimizer steps, overlapped
/// gradient streams, checkpoints and restarts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TrainingEv {
    StepDone(u32, u32),
    /// A job finished loading its checkpoint after a restart (job, epoch).
    Resume(u32, u32),
    /// A job's step finished computing: its collectives start (job, epoch).
    CommStart(u32, u32),
    /// A model-level job's optimizer step is done (job, epoch).
    OptimizerDone(u32, u32),
    /// A unit of a job's overlapped gradient stream is ready: its (job, epoch, stream),
    /// parked in `Jobs::bucket_ready` (events stay 16 bytes).
    BucketReady(u32),
    /// A checkpoint with nothing to move is done (job, epoch, load).
    CheckpointDone(u32, u32, bool),
}

impl Jobs {
    pub(super) fn on_training_event(&mut self, world: &mut World<'_>, ev: TrainingEv) -> Effect {
        match ev {
            TrainingEv::StepDone(j, epoch) => self.on_step_done(world, j, epoch),
            TrainingEv::Resume(j, epoch) => {
                self.on_job_resume(world, j, epoch);
                Effect::Nothing
            }
            TrainingEv::CommStart(j, epoch) => self.on_comm_start(world, j, epoch),
            TrainingEv::OptimizerDone(j, epoch) => self.on_optimizer_done(world, j, epoch),
            TrainingEv::BucketReady(slot) => {
                let (j, epoch, s) = self.bucket_ready.take(slot);
                self.on_bucket_ready(world, j, epoch, s)
            }
            TrainingEv::CheckpointDone(j, epoch, load) => {
                self.on_checkpoint_done(world, j, epoch, load);
                Effect::Nothing
            }
        }
    }
}
