//! Pipeline-parallel replicas (`parallel tp N pp P`, P > 1, the replica's tp × P devices on
//! one node): up to P batches in flight, each passing the stages in order.
//!
//! Modelled on vLLM V1 (vllm-project/vllm, files read at the commits named):
//! - The engine keeps a batch queue of `max_concurrent_batches` = `pipeline_parallel_size`
//!   (`vllm/v1/executor/multiproc_executor.py`, c5c40ab2; `EngineCore.batch_queue_size`,
//!   `vllm/v1/engine/core.py`, ac3cb2e2). `step_with_batch_queue` schedules a new batch
//!   while the queue has room and the last one scheduled something; otherwise (queue full,
//!   or nothing more to schedule) it blocks until the oldest batch's output is back. Here:
//!   a batch is scheduled whenever fewer than P are in flight, unless the engine is blocked;
//!   it blocks when the queue fills or a schedule comes back empty with batches in flight,
//!   until the oldest completes. The scheduler skips sequences in flight
//!   ([`super::engine`]); their tokens come when their batch leaves the last stage.
//! - Stage s is the replica's devices s·tp … (s+1)·tp − 1 in ascending order (vLLM's world
//!   ranks: `_get_output_rank`, "0-7, PP rank 0; 8-15, PP rank 1"), holding the layers of
//!   [`crate::model::serving::stage_layers`]. A stage runs one batch at a time, in order:
//!   its kernels ([`crate::model::serving::iteration_phases`] of its footprint, the logits
//!   on the last stage, priced as with pp 1; the first stage pays the engine's host gap), then its 2·layers tensor-parallel all-reduces among its ranks (as
//!   with pp 1: one call of their summed bytes paying every call's α, ring, as rounds on the
//!   run's network), then the send of the intermediate tensors to the next stage.
//! - The send (`Worker.execute_model`, `vllm/v1/worker/gpu_worker.py`): hidden states and
//!   residual, each tokens × hidden × dtype bytes, with vLLM's send-allgather
//!   (`GroupCoordinator.send_tensor_dict` / `recv_tensor_dict`,
//!   `vllm/distributed/parallel_state.py`): rank i of stage s sends its 1/tp slice of each
//!   to rank i of stage s + 1 (two sends, one α each, as flows on the run's network), then,
//!   with tp > 1, stage s + 1 all-gathers both (ring, rounds on the network).
//!   `torch.distributed.send`/`recv` pair up: the send starts when the next stage is free to
//!   receive (it posts its receive when it starts the batch), and both stages are held
//!   until the tensors are in. The sending stage is then free, the receiving one computes.
//! - Assumptions: the engine's host gap once per batch, on the first stage (as with pp 1); a
//!   stage's KV and weights are only its layers' (the KV blocks of the replica are those
//!   of its most loaded stage, vLLM taking the fewest blocks over its workers); without a
//!   cluster graph the all-reduces and all-gathers are in closed form (α + β·bytes, as with
//!   pp 1) and the sends, within a node, free (`models::transfer_secs`).

use super::LlmReplica;
use super::engine::Batch;
use crate::engine::Time;
use crate::model::serving::{self as ms, Footprint};
use crate::network::Graph;
use crate::network::collective::{self, Op, Options, Recurring, Round};
use crate::sim::LlmEv;
use crate::sim::World;
use crate::sim::services::Services;
use crate::sim::wire::{Owner, TransferId};
use crate::sim::{Ev, models, network::MovementKind, timeline};
use std::collections::VecDeque;

/// A communication: rounds of 1 byte per rank on the network (point-to-point sends, linear
/// in the bytes), a collective scheduled per size as NCCL would run it, or α and β in closed
/// form.
#[derive(Debug, Clone)]
pub(crate) enum Unit {
    None,
    Rounds(Vec<Round>),
    Collective(Recurring),
    Closed(f64, f64),
}

impl Unit {
    /// `k` calls of `bytes` each, as one (rounds and the seconds paid before them).
    fn scaled(&self, graph: Option<&Graph>, bytes: f64, k: f64) -> (Vec<Round>, f64) {
        match (self, graph) {
            (Unit::Rounds(r), _) => (super::run::scaled(r.clone(), bytes, k), 0.0),
            (Unit::Collective(c), Some(g)) => (super::run::scaled(c.rounds(g, bytes), 1.0, k), 0.0),
            (Unit::Closed(a, b), _) => (Vec::new(), k * (a + b * bytes)),
            (Unit::None | Unit::Collective(_), _) => (Vec::new(), 0.0),
        }
    }
}

/// One pipeline stage of a replica.
pub(crate) struct Stage {
    pub(crate) foot: Footprint,
    /// Its ranks, (node, device), ascending.
    ranks: Vec<(usize, usize)>,
    /// Its tensor-parallel all-reduce (tp > 1).
    allreduce: Unit,
    /// The sends of its ranks to the next stage's, and the next stage's all-gather of what
    /// they sent (tp > 1); `Unit::None` on the last stage.
    send: Unit,
    gather: Unit,
    /// The batch it works on (sending, computing, reducing), by flight id.
    busy: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the first stage.
    Queued,
    Compute,
    Reduce,
    /// Done on its stage, waiting for the next one to receive.
    Ready,
    Send,
}

/// A batch in flight.
struct Flight {
    id: u32,
    batch: Batch,
    stage: usize,
    phase: Phase,
    rounds: Vec<Round>,
    round: usize,
    /// Closed-form seconds still to pay before `rounds`.
    closed: f64,
    xfer: Option<TransferId>,
    /// When its stage began computing it.
    from: Time,
    scheduled: Time,
}

/// A replica's pipeline: its stages and the batches in flight, oldest first.
pub(crate) struct Pipe {
    pub(crate) stages: Vec<Stage>,
    flights: VecDeque<Flight>,
    next: u32,
    /// `step_with_batch_queue` waits for the oldest batch.
    blocked: bool,
    /// KV use is integrated up to here.
    kv_mark: Time,
}

impl Pipe {
    fn find(&mut self, id: u32) -> Option<&mut Flight> {
        self.flights.iter_mut().find(|f| f.id == id)
    }

    /// The flows of flight `id`'s current round, if the flight is still on.
    pub(crate) fn round_flows(
        &mut self,
        id: u32,
    ) -> Option<Vec<(Vec<crate::network::LinkId>, f64)>> {
        let f = self.find(id)?;
        Some(
            f.rounds[f.round]
                .chains
                .iter()
                .map(|c| (c.path.clone(), c.bytes))
                .collect(),
        )
    }

    /// Keeps the handle of flight `id`'s round in flight.
    pub(crate) fn hold(&mut self, id: u32, x: TransferId) {
        if let Some(f) = self.find(id) {
            f.xfer = Some(x);
        }
    }

    /// Transfers in flight (cancelled when the replica is lost).
    pub(crate) fn xfers(&self) -> Vec<TransferId> {
        self.flights.iter().filter_map(|f| f.xfer).collect()
    }
}

impl Services {
    /// The pipeline of a replica of `llm` placed on `ranks` (tp × pp of them), its
    /// communications priced once on the cluster graph, or in closed form without one (`at`:
    /// its first node and that node's working bandwidth fractions).
    pub(super) fn llm_pipe(
        &mut self,
        world: &mut World<'_>,
        name: &str,
        llm: &crate::scenario::serving::LlmServing,
        (node, bw): (usize, (f64, f64)),
        ranks: &[(usize, usize)],
        net_share: f64,
    ) -> Pipe {
        let tp = llm.tp as usize;
        let spec = world.spec;
        let feet = llm.stage_footprints();
        let group = models::Group {
            nodes: vec![(world.node_types[node], llm.tp)],
            factors: vec![bw],
        };
        let closed = |op: &str| {
            let one = models::collective_secs(spec, op, 1.0, false, &group);
            let big = models::collective_secs(spec, op, 1e9, false, &group);
            let beta = (big - one) / (1e9 - 1.0);
            Unit::Closed(one - beta, beta)
        };
        let mut on_graph = ranks.len() == tp * feet.len();
        let mut why = String::new();
        let mut stages = Vec::with_capacity(feet.len());
        for (s, foot) in feet.iter().enumerate() {
            let mine: Vec<_> = ranks.iter().skip(s * tp).take(tp).copied().collect();
            let next: Vec<_> = ranks.iter().skip((s + 1) * tp).take(tp).copied().collect();
            let last = s + 1 == feet.len();
            let graph = world.wire.graph.as_ref().filter(|_| on_graph);
            let opts = Options {
                net_share,
                ..Options::default()
            };
            let coll = |op, rs: &[(usize, usize)]| match graph {
                Some(g) => Recurring::new(g, op, rs, None, None),
                None => Err("no cluster graph".to_string()),
            };
            let mut units = [Unit::None, Unit::None, Unit::None];
            if tp > 1 {
                units[0] = match coll(Op::AllReduce, &mine) {
                    Ok(r) => Unit::Collective(r),
                    Err(e) => {
                        (on_graph, why) = (false, e);
                        closed("allreduce")
                    }
                };
            }
            if !last {
                let pairs: Vec<_> = mine.iter().copied().zip(next.iter().copied()).collect();
                let sends = match graph {
                    Some(g) => collective::sends(g, &pairs, 1.0, &opts),
                    None => Err("no cluster graph".to_string()),
                };
                units[1] = match sends {
                    Ok(r) => Unit::Rounds(r),
                    Err(e) => {
                        (on_graph, why) = (false, e);
                        Unit::Closed(
                            models::transfer_secs(spec, true, world.node_types[node], 1.0),
                            0.0,
                        )
                    }
                };
                if tp > 1 {
                    units[2] = match coll(Op::AllGather, &next) {
                        Ok(r) => Unit::Collective(r),
                        Err(e) => {
                            (on_graph, why) = (false, e);
                            closed("allgather")
                        }
                    };
                }
            }
            let [allreduce, send, gather] = units;
            stages.push(Stage {
                foot: *foot,
                ranks: mine,
                allreduce,
                send,
                gather,
                busy: None,
            });
        }
        let what = "pipeline sends and tensor-parallel all-reduces";
        let mut measured: Vec<String> = stages
            .iter()
            .filter_map(|s| match (&s.allreduce, world.wire.graph.as_ref()) {
                (Unit::Collective(r), Some(g)) => r.measured(g),
                _ => None,
            })
            .collect();
        measured.dedup();
        let how = if measured.is_empty() {
            String::new()
        } else {
            format!(", all-reduces priced by {}", measured.join("; "))
        };
        let note = if on_graph {
            format!("service {name}: {what} on the run's shared network{how}")
        } else {
            format!("service {name}: {what} in closed form ({why})")
        };
        world.net.note(MovementKind::Collective, on_graph, note);
        Pipe {
            stages,
            flights: VecDeque::new(),
            next: 0,
            blocked: false,
            kv_mark: world.now(),
        }
    }

    /// Schedule batches while fewer than pp are in flight (and the engine is not waiting for
    /// its oldest), then move the batches on.
    pub(super) fn llm_pipe_kick(&mut self, world: &mut World<'_>, r: u32) {
        let now = world.now();
        let Some(l) = self.replicas[r as usize].llm.as_mut() else {
            return;
        };
        let LlmReplica {
            engine,
            pipe,
            kv_peak,
            ..
        } = &mut **l;
        let p = pipe.as_mut().expect("a pipeline");
        // Arrivals of the requests these batches admit for the first time (their waits end).
        let mut admitted = Vec::new();
        while !p.blocked {
            if p.flights.len() >= p.stages.len() {
                p.blocked = true;
                break;
            }
            let mut b = engine.schedule();
            if b.is_empty() && b.preempted > 0 {
                let mut again = engine.schedule();
                again.preempted += b.preempted;
                again.swap_out_blocks += b.swap_out_blocks;
                again.admitted.extend(std::mem::take(&mut b.admitted));
                b = again;
            }
            admitted.append(&mut b.admitted);
            if b.is_empty() {
                p.blocked = !p.flights.is_empty();
                break;
            }
            let util = engine.used_blocks() as f64 / engine.total_blocks.max(1) as f64;
            *kv_peak = kv_peak.max(util);
            let id = p.next;
            p.next = p.next.wrapping_add(1);
            p.flights.push_back(Flight {
                id,
                batch: b,
                stage: 0,
                phase: Phase::Queued,
                rounds: Vec::new(),
                round: 0,
                closed: 0.0,
                xfer: None,
                from: now,
                scheduled: now,
            });
        }
        let sid = self.replicas[r as usize].service;
        if let Some(svc) = self.list[sid as usize].llm.as_mut() {
            svc.record_waits(now, &admitted);
        }
        self.llm_pipe_advance(world, r);
    }

    /// Start what can start, oldest batch first: a queued batch on a free first stage, a
    /// ready batch's send to a free next stage.
    fn llm_pipe_advance(&mut self, world: &mut World<'_>, r: u32) {
        loop {
            let Some(p) = self.replicas[r as usize]
                .llm
                .as_mut()
                .and_then(|l| l.pipe.as_mut())
            else {
                return;
            };
            let go = p.flights.iter().find_map(|f| match f.phase {
                Phase::Queued if p.stages[0].busy.is_none() => Some((f.id, 0)),
                Phase::Ready if p.stages[f.stage + 1].busy.is_none() => Some((f.id, f.stage + 1)),
                _ => None,
            });
            let Some((id, stage)) = go else {
                return;
            };
            p.stages[stage].busy = Some(id);
            if stage == 0 {
                self.llm_pipe_compute(world, r, id);
            } else {
                self.llm_pipe_send(world, r, id);
            }
        }
    }

    /// Flight `id` starts its send to the next stage (both stages held).
    fn llm_pipe_send(&mut self, world: &mut World<'_>, r: u32, id: u32) {
        let llm = self.llm_spec(world, self.replicas[r as usize].service);
        let d = llm.dtypes().activations;
        let per_rank = |tokens| ms::stage_send_bytes(&llm.model, llm.tp, tokens, d);
        let tensor = |tokens| ms::allreduce_bytes(&llm.model, tokens, d);
        let l = self.replicas[r as usize].llm.as_mut().expect("engine");
        let p = l.pipe.as_mut().expect("a pipeline");
        let Some(f) = p.flights.iter().find(|f| f.id == id) else {
            return;
        };
        let (s, tokens) = (f.stage, f.batch.shape.tokens);
        // Two sends of each rank's slice (hidden states, residual), then two all-gathers.
        let g = world.wire.graph.as_ref();
        let (mut rounds, mut closed) = p.stages[s].send.scaled(g, per_rank(tokens) / 2.0, 2.0);
        let (more, c) = p.stages[s].gather.scaled(g, tensor(tokens), 2.0);
        rounds.extend(more);
        closed += c;
        let f = p.find(id).expect("flight");
        (f.phase, f.rounds, f.round, f.closed) = (Phase::Send, rounds, 0, closed);
        self.llm_pipe_comm(world, r, id);
    }

    /// Flight `id`'s communication goes on: its closed-form part, then each round's α and
    /// flows; at the end, its phase is done.
    fn llm_pipe_comm(&mut self, world: &mut World<'_>, r: u32, id: u32) {
        let epoch = self.replicas[r as usize].epoch;
        let Some(f) = self.replicas[r as usize]
            .llm
            .as_mut()
            .and_then(|l| l.pipe.as_mut())
            .and_then(|p| p.find(id))
        else {
            return;
        };
        if f.closed > 0.0 {
            let t = models::secs(std::mem::take(&mut f.closed)).max(1);
            let slot = self.pipe_timers.park((r, epoch, id));
            world.q.after(t, Ev::Llm(LlmEv::Pipe(slot)));
            return;
        }
        let Some(round) = f.rounds.get(f.round) else {
            self.llm_pipe_phase_done(world, r, id);
            return;
        };
        let alpha = models::secs(round.alpha);
        let owner = Owner::LlmPipe {
            replica: r,
            epoch,
            flight: id,
        };
        if alpha > 0 {
            world.transfer_after(alpha, owner);
        } else {
            self.on_transfer_go(world, owner);
        }
    }

    /// A timer of flight `id` is over: its compute, or the closed-form part of its
    /// communication, is done.
    pub(crate) fn on_llm_pipe(&mut self, world: &mut World<'_>, r: u32, epoch: u32, id: u32) {
        if epoch != self.replicas[r as usize].epoch {
            return;
        }
        let Some(f) = self.replicas[r as usize]
            .llm
            .as_mut()
            .and_then(|l| l.pipe.as_mut())
            .and_then(|p| p.find(id))
        else {
            return;
        };
        if f.phase != Phase::Compute {
            self.llm_pipe_comm(world, r, id);
            return;
        }
        // Computed: the stage's all-reduces (tp > 1).
        let llm = self.llm_spec(world, self.replicas[r as usize].service);
        let d = llm.dtypes().activations;
        let model = &llm.model;
        let l = self.replicas[r as usize].llm.as_mut().expect("engine");
        let LlmReplica { price, pipe, .. } = &mut **l;
        let p = pipe.as_mut().expect("a pipeline");
        let f = p.flights.iter().find(|f| f.id == id).expect("flight");
        let stage = &p.stages[f.stage];
        let bytes = ms::allreduce_bytes(model, f.batch.shape.tokens, d);
        let k = ms::stage_allreduces(&stage.foot);
        let (rounds, closed) = match price.custom_allreduce_secs(bytes) {
            Some(t) if f.batch.shape.tokens > 0.0 && !matches!(stage.allreduce, Unit::None) => {
                (Vec::new(), k * t)
            }
            _ => stage.allreduce.scaled(world.wire.graph.as_ref(), bytes, k),
        };
        let f = p.find(id).expect("flight");
        (f.phase, f.rounds, f.round, f.closed) = (Phase::Reduce, rounds, 0, closed);
        self.llm_pipe_comm(world, r, id);
    }

    /// A round of flight `id` finished on the network.
    pub(crate) fn on_llm_pipe_flows(&mut self, world: &mut World<'_>, r: u32, epoch: u32, id: u32) {
        if epoch != self.replicas[r as usize].epoch {
            return;
        }
        let Some(f) = self.replicas[r as usize]
            .llm
            .as_mut()
            .and_then(|l| l.pipe.as_mut())
            .and_then(|p| p.find(id))
        else {
            return;
        };
        f.xfer = None;
        f.round += 1;
        self.llm_pipe_comm(world, r, id);
    }

    /// Flight `id` finished its all-reduces (its stage's work is done) or its send.
    fn llm_pipe_phase_done(&mut self, world: &mut World<'_>, r: u32, id: u32) {
        let now = world.now();
        let rep = &mut self.replicas[r as usize];
        let (node, sid) = (rep.node.unwrap_or(0), rep.service);
        let p = rep
            .llm
            .as_mut()
            .and_then(|l| l.pipe.as_mut())
            .expect("a pipeline");
        let Some(at) = p.flights.iter().position(|f| f.id == id) else {
            return;
        };
        let f = &mut p.flights[at];
        let s = f.stage;
        if f.phase == Phase::Send {
            // The tensors are in: the sender is free, the receiver (held) computes.
            p.stages[s].busy = None;
            f.stage = s + 1;
            self.llm_pipe_compute(world, r, id);
            self.llm_pipe_advance(world, r);
            return;
        }
        let from = f.from;
        let last = s + 1 == p.stages.len();
        let ranks = p.stages[s].ranks.clone();
        let units = ranks.len() as f64;
        let all: usize = p.stages.iter().map(|x| x.ranks.len()).sum();
        if !last {
            f.phase = Phase::Ready;
        } else {
            p.stages[s].busy = None;
        }
        let done = last.then(|| p.flights.remove(at).expect("flight"));
        let oldest = at == 0;
        world.worked(node, units, from, now);
        // The stage's share of the replica's CPUs (its devices of the replica's).
        let share = units / all.max(1) as f64;
        self.replica_cpus_worked(world, sid as usize, node, share, from, now);
        if world.tl.on {
            let devs: Vec<u32> = ranks
                .iter()
                .filter_map(|&(n, d)| world.tl.device(n, d))
                .collect();
            let label = world.label_id(self.label(sid as usize));
            world
                .tl
                .span(&devs, from, now, timeline::SpanKind::Compute, label);
        }
        if let Some(f) = done {
            let l = self.replicas[r as usize].llm.as_mut().expect("engine");
            let p = l.pipe.as_mut().expect("a pipeline");
            let kv_from = p.kv_mark.max(f.scheduled);
            p.kv_mark = now;
            if oldest {
                p.blocked = false;
            }
            self.llm_completed(world, r, f.batch, kv_from, None);
            self.llm_kick(world, r);
        }
        self.llm_pipe_advance(world, r);
    }
}

impl Services {
    /// Service `sid`'s model-level form, borrowed from the spec (not from `self`).
    pub(crate) fn llm_spec<'s>(
        &self,
        world: &World<'s>,
        sid: u32,
    ) -> &'s crate::scenario::serving::LlmServing {
        let s = &self.list[sid as usize];
        let spec: &'s crate::scenario::Spec = world.spec;
        spec.workloads[s.workload].services[s.index]
            .llm
            .as_ref()
            .expect("an LLM service")
    }

    /// Flight `id` starts computing on its stage (which it holds).
    fn llm_pipe_compute(&mut self, world: &mut World<'_>, r: u32, id: u32) {
        let now = world.now();
        let epoch = self.replicas[r as usize].epoch;
        let llm = self.llm_spec(world, self.replicas[r as usize].service);
        let (tp, model) = (llm.tp, &llm.model);
        let l = self.replicas[r as usize].llm.as_mut().expect("engine");
        let kv_block = l.engine.cfg.kv_block;
        let LlmReplica {
            price, pcie, pipe, ..
        } = &mut **l;
        let p = pipe.as_mut().expect("a pipeline");
        let Some(s) = p.find(id).map(|f| f.stage) else {
            return;
        };
        let foot = p.stages[s].foot;
        let f = p.find(id).expect("flight");
        let b = &f.batch;
        let phases = ms::iteration_phases(model, tp, &foot, &b.shape);
        // Each rank copies its own stage's KV blocks (swap preemption).
        let swap =
            (b.swap_out_blocks + b.swap_in_blocks) as f64 * foot.block_bytes(kv_block) / *pcie;
        let secs = price.secs(&phases, &b.shape, s == 0) + swap;
        f.phase = Phase::Compute;
        f.from = now;
        let slot = self.pipe_timers.park((r, epoch, id));
        world
            .q
            .after(models::secs(secs).max(1), Ev::Llm(LlmEv::Pipe(slot)));
    }
}
