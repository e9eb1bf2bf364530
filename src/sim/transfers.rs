//! One way every transfer of a run starts. A transfer first waits out its fixed part (a
//! collective round's α, a payload's latency and serialisation, a fetch's setup) as one
//! [`Ev::TransferGo`] naming its [`Owner`]; then, unless its owner has moved on (a failure
//! restarted the work: its epoch changed, or its slot was freed), its flows join the run's
//! network ([`super::wire::Wire::start`]) and the owner keeps the handle to cancel them. A
//! transfer with nothing to move completes at once; completions come back through
//! [`Sim::on_transfer_done`], the one place an owner hears that its transfer is over.
//!
//! Each kind of owner says only two things here: whether it still wants its transfer and with
//! which flows ([`Sim::transfer_flows`]), and where it keeps the handle ([`Sim::hold_transfer`]).

use super::wire::{Owner, TransferId};
use super::{Ev, Sim};
use crate::network::LinkId;
use crate::sim::World;

/// A transfer's flows: each a path of links and the bytes it moves.
type Flows = Vec<(Vec<LinkId>, f64)>;

impl Sim<'_> {
    /// A transfer's fixed part is over: its flows start, or it completes now with none.
    pub(super) fn on_transfer_go(&mut self, owner: Owner) {
        let Some(flows) = self.transfer_flows(owner) else {
            return;
        };
        let now = self.w.now();
        match self.w.wire.start(now, flows, owner) {
            Some(x) => {
                self.hold_transfer(owner, x);
                self.w.rearm_wire();
            }
            None => self.on_transfer_done(owner),
        }
    }

    /// The flows `owner` starts now, or `None` when it no longer wants them.
    fn transfer_flows(&mut self, owner: Owner) -> Option<Flows> {
        let chains = |r: &crate::network::collective::Round, scale: f64| -> Flows {
            r.chains
                .iter()
                .map(|c| (c.path.clone(), c.bytes * scale))
                .collect()
        };
        match owner {
            Owner::Round { job, epoch } => {
                let j = &self.jobs[job as usize];
                (epoch == j.epoch).then(|| chains(&j.rounds[j.round], 1.0))
            }
            Owner::Bucket { job, epoch, stream } => {
                let j = &self.jobs[job as usize];
                let o = j.overlap.as_ref().filter(|_| epoch == j.epoch)?;
                let run = &o.runs[stream as usize];
                Some(chains(
                    &o.streams[stream as usize].rounds[run.round],
                    run.scale,
                ))
            }
            Owner::Fetch { task, epoch } => {
                // A later attempt's flows may be pending: leave them.
                (epoch == self.tasks.epoch[task as usize]).then_some(())?;
                self.w.net.pending_fetch.remove(&task)
            }
            Owner::Tensor { actor, epoch } => {
                let a = &mut self.actors.list[actor as usize];
                (epoch == a.epoch).then_some(())?;
                a.send_flows.take()
            }
            Owner::Request { replica, epoch } => {
                let r = &mut self.services.replicas[replica as usize];
                (epoch == r.epoch).then_some(())?;
                r.req_flows.take()
            }
            Owner::Response { slot } => {
                let s = self
                    .services
                    .responses
                    .slots
                    .get_mut(slot as usize)?
                    .as_mut()?;
                Some(s.flows.take().unwrap_or_default())
            }
            Owner::LlmRound { replica, epoch } => {
                let r = &self.services.replicas[replica as usize];
                (epoch == r.epoch).then_some(())?;
                let l = r.llm.as_ref().expect("engine");
                Some(chains(&l.rounds[l.round], 1.0))
            }
            Owner::LlmKv {
                service,
                slot,
                generation,
            } => {
                let l = self.services.list[service as usize].llm.as_mut()?;
                let m = l.disagg.moves.get_mut(slot as usize)?;
                (m.live && m.generation == generation).then(|| std::mem::take(&mut m.flows))
            }
            Owner::LlmPipe {
                replica,
                epoch,
                flight,
            } => {
                let r = &mut self.services.replicas[replica as usize];
                (epoch == r.epoch).then_some(())?;
                r.llm.as_mut()?.pipe.as_mut()?.round_flows(flight)
            }
            Owner::Checkpoint { .. } | Owner::Spill { .. } | Owner::Restore { .. } => {
                unreachable!("{owner:?} starts its flows where it is priced, with no fixed part")
            }
        }
    }

    /// Keeps the handle of `owner`'s started transfer where its cancels look for it.
    fn hold_transfer(&mut self, owner: Owner, x: TransferId) {
        match owner {
            Owner::Round { job, .. } => self.jobs[job as usize].xfer = Some(x),
            Owner::Bucket { job, stream, .. } => {
                if let Some(o) = &mut self.jobs[job as usize].overlap {
                    o.runs[stream as usize].xfer = Some(x);
                }
            }
            Owner::Fetch { task, .. } => {
                self.w.net.fetch_xfer.insert(task, x);
            }
            Owner::Tensor { actor, .. } => self.actors.list[actor as usize].send_xfer = Some(x),
            Owner::Request { replica, .. } => {
                self.services.replicas[replica as usize].req_xfer = Some(x)
            }
            Owner::Response { slot } => {
                if let Some(Some(s)) = self.services.responses.slots.get_mut(slot as usize) {
                    s.xfer = Some(x);
                }
            }
            Owner::LlmRound { replica, .. } => {
                self.services.replicas[replica as usize]
                    .llm
                    .as_mut()
                    .expect("engine")
                    .xfer = Some(x);
            }
            Owner::LlmKv { service, slot, .. } => {
                let d = &mut self.services.list[service as usize]
                    .llm
                    .as_mut()
                    .expect("llm")
                    .disagg;
                d.moves[slot as usize].xfer = Some(x);
            }
            Owner::LlmPipe {
                replica, flight, ..
            } => {
                let l = self.services.replicas[replica as usize].llm.as_mut();
                if let Some(p) = l.and_then(|l| l.pipe.as_mut()) {
                    p.hold(flight, x);
                }
            }
            Owner::Checkpoint { .. } | Owner::Spill { .. } | Owner::Restore { .. } => {
                unreachable!("{owner:?} keeps its own handle")
            }
        }
    }

    /// `owner`'s transfer is over (its last flow finished, or it had none): its owner goes on.
    pub(super) fn on_transfer_done(&mut self, owner: Owner) {
        match owner {
            Owner::Round { job, epoch } => self.on_round_done(job, epoch),
            Owner::Bucket { job, epoch, stream } => self.on_bucket_done(job, epoch, stream),
            Owner::Fetch { task, epoch } => self.tasks.on_fetch_done(&mut self.w, task, epoch),
            Owner::Checkpoint { job, epoch, load } => self.on_checkpoint_done(job, epoch, load),
            Owner::Spill { task, epoch } => self.on_spill_done(task, epoch),
            Owner::Restore { task, epoch } => self.on_restore_done(task, epoch),
            Owner::Tensor { actor, epoch } => self.on_tensor_done(actor, epoch),
            Owner::Request { replica, epoch } => {
                self.services
                    .on_requests_arrived(&mut self.w, replica, epoch)
            }
            Owner::Response { slot } => self.services.on_responses_arrived(&mut self.w, slot),
            Owner::LlmRound { replica, epoch } => self.on_llm_round_done(replica, epoch),
            Owner::LlmPipe {
                replica,
                epoch,
                flight,
            } => self.on_llm_pipe_flows(replica, epoch, flight),
            Owner::LlmKv { service, slot, .. } => self.on_llm_kv_done(service, slot),
        }
    }
}

impl World<'_> {
    /// `owner`'s transfer starts after `delay` ns (its fixed part).
    pub(super) fn transfer_after(&mut self, delay: crate::engine::Time, owner: Owner) {
        self.q.after(delay, Ev::TransferGo(owner));
    }
}
