//! A model-level job's overlapped gradient reduction on the run's network (`overlap
//! grad_reduce`; the plan is `buckets.rs`): each stream (one communicator's buckets) launches
//! its buckets as they become ready during the step's compute, one launch at a time, the
//! flows on the shared network like every other transfer, so other traffic slows them and
//! they slow it. The job's rounds (`training.rs`) wait at the plan's gate until every stream
//! is done; the step ends when both are. Exposed communication is then step − compute.
//!
//! Also here: the job's traffic time, the union of the intervals in which any of its
//! communication (rounds or streams) is in flight, for `communication_time_s`.
//!
//! Architecture invariant: flows start and leave only through `wire`; stale events (a
//! failure restarted the job) are recognised by the job's epoch.

use super::buckets::Stream;
use super::wire::{Owner, TransferId};
use super::{Ev, models::secs};
use crate::engine::Time;
use crate::sim::Effect;
use crate::sim::TrainingEv;
use crate::sim::World;
use crate::sim::training::Jobs;

/// Where one stream is in the step.
#[derive(Debug, Clone, Default)]
pub(super) struct Run {
    /// The first unit not yet reduced, and how many from it the launch in flight holds.
    next: usize,
    launched: usize,
    /// The launch's bytes and α multiples of the stream's rounds, and its round.
    pub(super) scale: f64,
    calls: f64,
    pub(super) round: usize,
    busy: bool,
    pub(super) xfer: Option<TransferId>,
}

/// A job's overlapped reduction: its streams and their state in the current step.
#[derive(Debug, Clone, Default)]
pub(super) struct Overlap {
    pub streams: Vec<Stream>,
    pub(super) runs: Vec<Run>,
    /// The round the job's rounds wait at, and whether they are waiting there now.
    pub gate: usize,
    pub parked: bool,
    /// Streams not finished this step.
    pub left: usize,
    /// When the step's compute began (units' ready times count from it).
    from: Time,
}

impl Overlap {
    pub fn new(streams: Vec<Stream>, gate: usize) -> Overlap {
        Overlap {
            streams,
            gate,
            ..Overlap::default()
        }
    }
}

/// The union of the intervals in which any of a job's communication is in flight.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Busy {
    open: u32,
    since: Time,
    /// In flight so far in this step.
    pub ns: Time,
}

impl Busy {
    pub fn on(&mut self, now: Time) {
        if self.open == 0 {
            self.since = now;
        }
        self.open += 1;
    }

    pub fn off(&mut self, now: Time) {
        self.open = self.open.saturating_sub(1);
        if self.open == 0 {
            self.ns += now - self.since;
        }
    }
}

impl Jobs {
    /// A unit of stream `s` is ready: launch it unless the stream is busy (it takes it next).
    pub(super) fn on_bucket_ready(
        &mut self,
        world: &mut World<'_>,
        j: u32,
        epoch: u32,
        s: u32,
    ) -> Effect {
        let job = &self[j as usize];
        let Some(o) = &job.overlap else {
            return Effect::Nothing;
        };
        if epoch != job.epoch || o.runs[s as usize].busy {
            return Effect::Nothing;
        }
        self.launch(world, j, s)
    }

    /// Every unit of stream `s` ready by now goes as one launch; none: wait for the next.
    fn launch(&mut self, world: &mut World<'_>, j: u32, s: u32) -> Effect {
        let now = world.now();
        let job = &mut self[j as usize];
        let epoch = job.epoch;
        let Some(o) = &mut job.overlap else {
            return Effect::Nothing;
        };
        let (st, run) = (&o.streams[s as usize], &mut o.runs[s as usize]);
        let ready = |u: &super::buckets::Unit| o.from + secs(u.ready_secs.max(0.0));
        let k = st.units[run.next..]
            .iter()
            .take_while(|u| ready(u) <= now)
            .count();
        if k == 0 {
            let at = ready(&st.units[run.next]);
            let slot = self.bucket_ready.park((j, epoch, s));
            world
                .q
                .after(at - now, Ev::Training(TrainingEv::BucketReady(slot)));
            return Effect::Nothing;
        }
        let units = &st.units[run.next..run.next + k];
        run.launched = k;
        run.scale = units.iter().map(|u| u.scale).sum();
        run.calls = units.iter().map(|u| u.calls).sum();
        run.round = 0;
        run.busy = true;
        job.busy.on(now);
        self.bucket_round(world, j, s)
    }

    /// The launch's next round after its α.
    fn bucket_round(&mut self, world: &mut World<'_>, j: u32, s: u32) -> Effect {
        let job = &self[j as usize];
        let Some(o) = &job.overlap else {
            return Effect::Nothing;
        };
        let run = &o.runs[s as usize];
        let alpha = secs(o.streams[s as usize].rounds[run.round].alpha * run.calls);
        if alpha > 0 {
            world.transfer_after(
                alpha,
                Owner::Bucket {
                    job: j,
                    epoch: job.epoch,
                    stream: s,
                },
            );
            return Effect::Nothing;
        }
        let owner = Owner::Bucket {
            job: j,
            epoch: job.epoch,
            stream: s,
        };
        self.on_transfer_go(world, owner)
    }

    /// A launch's round finished: its next round, the stream's next launch, or the stream
    /// is done (and the job's rounds go on if they waited for it).
    pub(super) fn on_bucket_done(
        &mut self,
        world: &mut World<'_>,
        j: u32,
        epoch: u32,
        s: u32,
    ) -> Effect {
        let now = world.now();
        let job = &mut self[j as usize];
        if epoch != job.epoch {
            return Effect::Nothing;
        }
        let Some(o) = &mut job.overlap else {
            return Effect::Nothing;
        };
        let rounds = o.streams[s as usize].rounds.len();
        let units = o.streams[s as usize].units.len();
        let run = &mut o.runs[s as usize];
        run.xfer = None;
        run.round += 1;
        if run.round < rounds {
            return self.bucket_round(world, j, s);
        }
        run.next += run.launched;
        run.busy = false;
        job.busy.off(now);
        if run.next < units {
            return self.launch(world, j, s);
        }
        o.left -= 1;
        if o.left == 0 && o.parked {
            o.parked = false;
            job.busy.on(now);
            return self.next_round(world, j);
        }
        Effect::Nothing
    }
}

impl Jobs {
    /// Job `j`'s step computes from `from`: each stream waits for its first unit.
    pub(super) fn overlap_begin(&mut self, world: &mut World<'_>, j: u32, from: Time) {
        let now = world.now();
        let job = &mut self.list[j as usize];
        let epoch = job.epoch;
        let Some(o) = &mut job.overlap else { return };
        o.from = from;
        o.parked = false;
        o.left = o.streams.len();
        o.runs = vec![Run::default(); o.streams.len()];
        for (s, st) in o.streams.iter().enumerate() {
            let at = from + secs(st.units[0].ready_secs.max(0.0));
            let slot = self.bucket_ready.park((j, epoch, s as u32));
            world.q.after(
                at.saturating_sub(now),
                Ev::Training(TrainingEv::BucketReady(slot)),
            );
        }
    }

    /// A failure stopped job `j`: its streams' flows leave the network.
    pub(super) fn cancel_bucket_transfers(&mut self, world: &mut World<'_>, j: usize) {
        let now = world.now();
        let Some(o) = &mut self.list[j].overlap else {
            return;
        };
        let xs: Vec<TransferId> = o.runs.iter_mut().filter_map(|r| r.xfer.take()).collect();
        for x in xs {
            world.wire.cancel(now, x);
        }
    }
}
