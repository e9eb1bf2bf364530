//! One way every transfer of a run starts. A transfer first waits out its fixed part (a
//! collective round's α, a payload's latency and serialisation, a fetch's setup) as one
//! [`Ev::TransferGo`] naming its [`Owner`]; then, unless its owner has moved on (a failure
//! restarted the work: its epoch changed, or its slot was freed), its flows join the run's
//! network ([`super::wire::Wire::start`]) and the owner keeps the handle to cancel them. A
//! transfer with nothing to move completes at once; completions come back to the component
//! that owns the transfer, the one place an owner hears that its transfer is over.
//!
//! Each kind of work says only two things here ([`Transfers`]): whether it still wants its
//! transfer and with which flows, and where it keeps the handle. [`go`] is the rest, the same
//! for every kind.

use super::Effect;
use super::training::Jobs;
use super::wire::{Owner, TransferId};
use super::{Ev, Sim};
use crate::network::LinkId;
use crate::sim::World;

/// A transfer's flows: each a path of links and the bytes it moves.
pub(super) type Flows = Vec<(Vec<LinkId>, f64)>;

/// What a kind of work (a component) says about the transfers it owns.
pub(super) trait Transfers {
    /// The flows `owner` starts now, or `None` when it no longer wants them.
    fn transfer_flows(&mut self, world: &mut World<'_>, owner: Owner) -> Option<Flows>;
    /// Keeps the handle of `owner`'s started transfer where its cancels look for it.
    fn hold_transfer(&mut self, world: &mut World<'_>, owner: Owner, x: TransferId);
}

/// What [`go`] did with a transfer whose fixed part is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Go {
    /// Its flows joined the network; its owner hears when they finish.
    Started,
    /// It had nothing to move: it is over now, and its owner must hear so at once.
    Empty,
    /// Its owner has moved on (a failure restarted the work): nothing happens.
    Unwanted,
}

/// A transfer's fixed part is over: its owner's flows start (or it has none, or no longer
/// wants them).
pub(super) fn go(c: &mut impl Transfers, world: &mut World<'_>, owner: Owner) -> Go {
    let Some(flows) = c.transfer_flows(world, owner) else {
        return Go::Unwanted;
    };
    let now = world.now();
    match world.wire.start(now, flows, owner) {
        Some(x) => {
            c.hold_transfer(world, owner, x);
            world.rearm_wire();
            Go::Started
        }
        None => Go::Empty,
    }
}

/// A round's flows, scaled.
pub(super) fn chains(r: &crate::network::collective::Round, scale: f64) -> Flows {
    r.chains
        .iter()
        .map(|c| (c.path.clone(), c.bytes * scale))
        .collect()
}

impl Sim<'_> {
    /// A transfer's fixed part is over: the component that owns it starts its flows.
    pub(super) fn on_transfer_go(&mut self, owner: Owner) {
        let went = match owner {
            Owner::Round { .. } | Owner::Bucket { .. } => {
                let effect = self.jobs.on_transfer_go(&mut self.w, owner);
                self.apply(effect);
                return;
            }
            Owner::Fetch { .. } => go(&mut self.tasks, &mut self.w, owner),
            Owner::Tensor { .. } => go(&mut self.actors, &mut self.w, owner),
            Owner::Request { .. }
            | Owner::Response { .. }
            | Owner::LlmRound { .. }
            | Owner::LlmKv { .. }
            | Owner::LlmPipe { .. } => {
                return self.services.on_transfer_go(&mut self.w, owner);
            }
            Owner::Checkpoint { .. } | Owner::Spill { .. } | Owner::Restore { .. } => {
                unreachable!("{owner:?} starts its flows where it is priced, with no fixed part")
            }
        };
        if went == Go::Empty {
            self.on_transfer_done(owner);
        }
    }

    /// `owner`'s transfer is over (its last flow finished, or it had none): its owner goes on.
    pub(super) fn on_transfer_done(&mut self, owner: Owner) {
        match owner {
            Owner::Round { .. } | Owner::Bucket { .. } => {
                let effect = self.jobs.on_transfer_done(&mut self.w, owner);
                self.apply(effect);
            }
            Owner::Fetch { task, epoch } => self.tasks.on_fetch_done(&mut self.w, task, epoch),
            Owner::Checkpoint { job, epoch, load } => {
                self.jobs.on_checkpoint_done(&mut self.w, job, epoch, load)
            }
            Owner::Spill { task, epoch } => {
                let effect = self.tasks.on_spill_done(&mut self.w, task, epoch);
                self.apply(effect);
            }
            Owner::Restore { task, epoch } => self.tasks.on_restore_done(&mut self.w, task, epoch),
            Owner::Tensor { actor, epoch } => {
                let effect = self.actors.on_tensor_done(&mut self.w, actor, epoch);
                self.apply(effect);
            }
            Owner::Request { .. }
            | Owner::Response { .. }
            | Owner::LlmRound { .. }
            | Owner::LlmPipe { .. }
            | Owner::LlmKv { .. } => self.services.on_transfer_done(&mut self.w, owner),
        }
    }
}

impl Transfers for Jobs {
    fn transfer_flows(&mut self, _: &mut World<'_>, owner: Owner) -> Option<Flows> {
        match owner {
            Owner::Round { job, epoch } => {
                let j = &self[job as usize];
                (epoch == j.epoch).then(|| chains(&j.rounds[j.round], 1.0))
            }
            Owner::Bucket { job, epoch, stream } => {
                let j = &self[job as usize];
                let o = j.overlap.as_ref().filter(|_| epoch == j.epoch)?;
                let run = &o.runs[stream as usize];
                Some(chains(
                    &o.streams[stream as usize].rounds[run.round],
                    run.scale,
                ))
            }
            _ => unreachable!("{owner:?} is not a training job's"),
        }
    }

    fn hold_transfer(&mut self, _: &mut World<'_>, owner: Owner, x: TransferId) {
        match owner {
            Owner::Round { job, .. } => self[job as usize].xfer = Some(x),
            Owner::Bucket { job, stream, .. } => {
                if let Some(o) = &mut self[job as usize].overlap {
                    o.runs[stream as usize].xfer = Some(x);
                }
            }
            _ => unreachable!("{owner:?} is not a training job's"),
        }
    }
}

impl Transfers for super::tasks::Tasks {
    fn transfer_flows(&mut self, world: &mut World<'_>, owner: Owner) -> Option<Flows> {
        let Owner::Fetch { task, epoch } = owner else {
            unreachable!("{owner:?} is not a task's")
        };
        // A later attempt's flows may be pending: leave them.
        (epoch == self.epoch[task as usize]).then_some(())?;
        world.net.pending_fetch.remove(&task)
    }

    fn hold_transfer(&mut self, world: &mut World<'_>, owner: Owner, x: TransferId) {
        let Owner::Fetch { task, .. } = owner else {
            unreachable!("{owner:?} is not a task's")
        };
        world.net.fetch_xfer.insert(task, x);
    }
}

impl Transfers for super::actors::Actors {
    fn transfer_flows(&mut self, _: &mut World<'_>, owner: Owner) -> Option<Flows> {
        let Owner::Tensor { actor, epoch } = owner else {
            unreachable!("{owner:?} is not an actor's")
        };
        let a = &mut self.list[actor as usize];
        (epoch == a.epoch).then_some(())?;
        a.send_flows.take()
    }

    fn hold_transfer(&mut self, _: &mut World<'_>, owner: Owner, x: TransferId) {
        let Owner::Tensor { actor, .. } = owner else {
            unreachable!("{owner:?} is not an actor's")
        };
        self.list[actor as usize].send_xfer = Some(x);
    }
}

impl Transfers for super::services::Services {
    fn transfer_flows(&mut self, _: &mut World<'_>, owner: Owner) -> Option<Flows> {
        match owner {
            Owner::Request { replica, epoch } => {
                let r = &mut self.replicas[replica as usize];
                (epoch == r.epoch).then_some(())?;
                r.req_flows.take()
            }
            Owner::Response { slot } => {
                let s = self.responses.slots.get_mut(slot as usize)?.as_mut()?;
                Some(s.flows.take().unwrap_or_default())
            }
            Owner::LlmRound { replica, epoch } => {
                let r = &self.replicas[replica as usize];
                (epoch == r.epoch).then_some(())?;
                let l = r.llm.as_ref().expect("engine");
                Some(chains(&l.rounds[l.round], 1.0))
            }
            Owner::LlmKv {
                service,
                slot,
                generation,
            } => {
                let l = self.list[service as usize].llm.as_mut()?;
                let m = l.disagg.moves.get_mut(slot as usize)?;
                (m.live && m.generation == generation).then(|| std::mem::take(&mut m.flows))
            }
            Owner::LlmPipe {
                replica,
                epoch,
                flight,
            } => {
                let r = &mut self.replicas[replica as usize];
                (epoch == r.epoch).then_some(())?;
                r.llm.as_mut()?.pipe.as_mut()?.round_flows(flight)
            }
            _ => unreachable!("{owner:?} is not a service's"),
        }
    }

    fn hold_transfer(&mut self, _: &mut World<'_>, owner: Owner, x: TransferId) {
        match owner {
            Owner::Request { replica, .. } => self.replicas[replica as usize].req_xfer = Some(x),
            Owner::Response { slot } => {
                if let Some(Some(s)) = self.responses.slots.get_mut(slot as usize) {
                    s.xfer = Some(x);
                }
            }
            Owner::LlmRound { replica, .. } => {
                self.replicas[replica as usize]
                    .llm
                    .as_mut()
                    .expect("engine")
                    .xfer = Some(x);
            }
            Owner::LlmKv { service, slot, .. } => {
                let d = &mut self.list[service as usize]
                    .llm
                    .as_mut()
                    .expect("llm")
                    .disagg;
                d.moves[slot as usize].xfer = Some(x);
            }
            Owner::LlmPipe {
                replica, flight, ..
            } => {
                let l = self.replicas[replica as usize].llm.as_mut();
                if let Some(p) = l.and_then(|l| l.pipe.as_mut()) {
                    p.hold(flight, x);
                }
            }
            _ => unreachable!("{owner:?} is not a service's"),
        }
    }
}

impl Jobs {
    /// A transfer of a job's fixed part is over: its flows start, or it is over now.
    pub(super) fn on_transfer_go(&mut self, world: &mut World<'_>, owner: Owner) -> Effect {
        if go(self, world, owner) == Go::Empty {
            return self.on_transfer_done(world, owner);
        }
        Effect::Nothing
    }

    /// A job's collective round, or a launch of one of its overlapped gradient streams, is
    /// over: its next round, or the step is done.
    pub(super) fn on_transfer_done(&mut self, world: &mut World<'_>, owner: Owner) -> Effect {
        match owner {
            Owner::Round { job, epoch } => self.on_round_done(world, job, epoch),
            Owner::Bucket { job, epoch, stream } => self.on_bucket_done(world, job, epoch, stream),
            _ => unreachable!("{owner:?} is not a training job's round"),
        }
    }
}

impl super::services::Services {
    /// A transfer of a service's fixed part is over: its flows start, or it is over now.
    pub(super) fn on_transfer_go(&mut self, world: &mut World<'_>, owner: Owner) {
        if go(self, world, owner) == Go::Empty {
            self.on_transfer_done(world, owner);
        }
    }

    /// A service's transfer is over: the requests, responses, iteration round, pipeline
    /// round or KV cache it moved go on.
    pub(super) fn on_transfer_done(&mut self, world: &mut World<'_>, owner: Owner) {
        match owner {
            Owner::Request { replica, epoch } => self.on_requests_arrived(world, replica, epoch),
            Owner::Response { slot } => self.on_responses_arrived(world, slot),
            Owner::LlmRound { replica, epoch } => self.on_llm_round_done(world, replica, epoch),
            Owner::LlmPipe {
                replica,
                epoch,
                flight,
            } => self.on_llm_pipe_flows(world, replica, epoch, flight),
            Owner::LlmKv { service, slot, .. } => self.on_llm_kv_done(world, service, slot),
            _ => unreachable!("{owner:?} is not a service's"),
        }
    }
}

/// A transfer's owner as its [`Ev::TransferGo`] holds it while it pays its fixed part: the
/// owners named by two ids inline, the wider ones (three ids: an overlapped stream's
/// launch, a pipelined LLM batch's round, a KV-cache move) parked in [`World::going`], so
/// events stay 16 bytes and the common transfers (fetches, rounds, tensors, payloads) park
/// nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Going {
    Round { job: u32, epoch: u32 },
    Fetch { task: u32, epoch: u32 },
    Tensor { actor: u32, epoch: u32 },
    Request { replica: u32, epoch: u32 },
    Response { slot: u32 },
    LlmRound { replica: u32, epoch: u32 },
    Parked(u32),
}

impl World<'_> {
    /// `owner`'s transfer starts after `delay` ns (its fixed part).
    pub(super) fn transfer_after(&mut self, delay: crate::engine::Time, owner: Owner) {
        let going = match owner {
            Owner::Round { job, epoch } => Going::Round { job, epoch },
            Owner::Fetch { task, epoch } => Going::Fetch { task, epoch },
            Owner::Tensor { actor, epoch } => Going::Tensor { actor, epoch },
            Owner::Request { replica, epoch } => Going::Request { replica, epoch },
            Owner::Response { slot } => Going::Response { slot },
            Owner::LlmRound { replica, epoch } => Going::LlmRound { replica, epoch },
            wide => Going::Parked(self.going.park(wide)),
        };
        self.q.after(delay, Ev::TransferGo(going));
    }

    /// The owner of a transfer whose fixed part is over.
    pub(super) fn gone(&mut self, going: Going) -> Owner {
        match going {
            Going::Round { job, epoch } => Owner::Round { job, epoch },
            Going::Fetch { task, epoch } => Owner::Fetch { task, epoch },
            Going::Tensor { actor, epoch } => Owner::Tensor { actor, epoch },
            Going::Request { replica, epoch } => Owner::Request { replica, epoch },
            Going::Response { slot } => Owner::Response { slot },
            Going::LlmRound { replica, epoch } => Owner::LlmRound { replica, epoch },
            Going::Parked(slot) => self.going.take(slot),
        }
    }
}
