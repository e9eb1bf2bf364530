//! Prefill/decode disaggregation (`disaggregate prefill N decode M transport T`): a request
//! prefills on a prefill-pool engine, its KV cache moves to a decode-pool engine as flows on
//! the run's shared network, and it decodes there.
//!
//! Modelled on Ray Serve's PD serving (`PDProxyServer._predict` in
//! `ray/llm/_internal/serve/deployments/prefill_decode_disagg/prefill_decode_disagg.py`) over
//! vLLM's `NixlConnector` (`vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py`,
//! and `vllm/v1/core/sched/scheduler.py`, `_update_waiting_for_remote_kv`):
//! - The proxy sends the request to a prefill replica with `max_tokens = 1`: a prompt-only
//!   sequence that samples one token, which the proxy discards. Its KV blocks stay held
//!   (`request_finished` delays freeing them) until the transfer is done.
//! - The KV cache of the prompt, prompt tokens × the per-rank KV bytes per token
//!   ([`crate::model::serving::Footprint`]), moves rank i → rank i of the chosen decode
//!   replica (tp flows, both pools have the service's tp), with the service's transport, as
//!   [`crate::transport::shared`] splits its plan (the same pricing as actors' tensors,
//!   `World::price_move`): the longest fixed part of the ranks as a delay, then every rank's
//!   wire bytes as one transfer of flows sharing the network max-min.
//! - The decode replica's engine then holds the request with its prompt's KV computed but
//!   for the last token (vLLM recomputes it: `num_computed_tokens -= 1` when all tokens
//!   arrived), so its first iteration computes that token and samples the **first token the
//!   client sees**: TTFT ends there, on the decode replica, after the transfer; TPOT, ITL
//!   and e2e are the decode replica's, as for a colocated replica.
//!
//! Assumptions: the decode replica is the placed one with the fewest requests outstanding
//! plus KV caches on their way to it (least-outstanding, as arrivals to the prefill pool),
//! chosen when the prefill ends; no decode replica placed yet: the request waits (its
//! prefill blocks held). vLLM allocates the decode blocks before it pulls the KV; here they
//! are allocated when the arrived request is admitted, by the engine's own rules (it waits
//! for blocks, or is preempted later, as any request): under decode KV pressure the transfer
//! starts earlier than vLLM's. A replica lost with a KV cache leaving or arriving loses the
//! request. The transfer time measured runs from the prefill's end to the KV's arrival.

use super::engine::{Finished, MAX_WAITING, Seq};
use crate::engine::Time;
use crate::network::LinkId;
use crate::sim::World;
use crate::sim::durations::Durations;
use crate::sim::network::MovementKind;
use crate::sim::services::Services;
use crate::sim::wire::{Owner, TransferId};
use crate::sim::{TransferRecord, models};
use std::collections::VecDeque;

/// Which work a replica of an LLM service does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Pool {
    /// Prefill and decode (a colocated service).
    #[default]
    Both,
    Prefill,
    Decode,
}

/// A request whose prefill is done, before or while its KV cache moves.
#[derive(Debug, Clone)]
pub(crate) struct Handoff {
    /// The decode-side sequence: the prompt's KV computed but for its last token.
    seq: Seq,
    from: u32,
    from_epoch: u32,
    /// Blocks held at the prefill replica until the transfer is done.
    held: u64,
    since: Time,
}

pub(crate) struct KvMove {
    h: Handoff,
    to: u32,
    to_epoch: u32,
    /// Bytes on the wire, every rank together.
    bytes: f64,
    pub(crate) flows: Vec<(Vec<LinkId>, f64)>,
    pub(crate) xfer: Option<TransferId>,
    pub(crate) generation: u32,
    pub(crate) live: bool,
}

/// A disaggregated service's KV caches in flight, those waiting for a decode replica, and
/// what the moves measured.
#[derive(Default)]
pub(crate) struct DisaggState {
    pub(crate) moves: Vec<KvMove>,
    free: Vec<u32>,
    parked: VecDeque<Handoff>,
    /// Prefill end to KV arrival, seconds.
    pub(crate) secs: Durations,
    pub(crate) bytes: f64,
}

impl DisaggState {
    /// Keeps move `m` in a free slot (a reused slot's generation moves on, so a stale start
    /// or completion for its last move is told apart): (slot, generation).
    fn hold(&mut self, m: KvMove) -> (u32, u32) {
        match self.free.pop() {
            Some(i) => {
                let g = self.moves[i as usize].generation.wrapping_add(1);
                self.moves[i as usize] = KvMove { generation: g, ..m };
                (i, g)
            }
            None => {
                self.moves.push(m);
                ((self.moves.len() - 1) as u32, 0)
            }
        }
    }
}

impl DisaggState {
    /// The decode-side sequences of requests between their prefill and a decode engine
    /// (KV caches moving, or waiting for a decode replica).
    pub(crate) fn between(&self) -> impl Iterator<Item = &Seq> {
        let moving = self.moves.iter().filter(|m| m.live).map(|m| &m.h.seq);
        moving.chain(self.parked.iter().map(|h| &h.seq))
    }
}

impl Services {
    /// Prefill replica `from` finished these prompts: hold their blocks and send their KV.
    pub(crate) fn llm_handoff(
        &mut self,
        world: &mut World<'_>,
        sid: u32,
        from: u32,
        done: Vec<Finished>,
    ) {
        let now = world.now();
        let from_epoch = self.replicas[from as usize].epoch;
        for f in done {
            let Some(output) = f.handoff else { continue };
            let held = self.replicas[from as usize]
                .llm
                .as_mut()
                .map_or(0, |l| l.engine.hold(u64::from(f.blocks)));
            let mut seq = Seq::new(f.arrival, f.prompt, output);
            seq.computed = f.prompt - 1;
            // Its wait for a batch ended in the prefill pool.
            seq.admitted = true;
            self.llm_kv_send(
                world,
                sid,
                Handoff {
                    seq,
                    from,
                    from_epoch,
                    held,
                    since: now,
                },
            );
        }
    }

    /// Give the prefill replica of `h` its held blocks back, if it is still the one.
    fn llm_release(&mut self, world: &mut World<'_>, h: &Handoff) {
        let rep = &mut self.replicas[h.from as usize];
        if rep.epoch == h.from_epoch
            && let Some(l) = rep.llm.as_mut()
        {
            l.engine.release(h.held);
            self.llm_kick(world, h.from);
        }
    }

    /// Start moving `h`'s KV cache to a decode replica, or park it until one is placed.
    fn llm_kv_send(&mut self, world: &mut World<'_>, sid: u32, h: Handoff) {
        let Some(to) = self.llm_route(world, sid, Pool::Decode, true) else {
            let l = self.list[sid as usize].llm.as_mut();
            let l = l.expect("an LLM service");
            if l.disagg.parked.len() < MAX_WAITING {
                l.disagg.parked.push_back(h);
            } else {
                l.dropped += 1;
                self.llm_release(world, &h);
            }
            return;
        };
        let spec = world.spec;
        let s = &self.list[sid as usize];
        let (w, sv) = (
            &spec.workloads[s.workload],
            &spec.workloads[s.workload].services[s.index],
        );
        let what = format!(
            "service {}.{}: KV cache to the decode pool",
            w.name, sv.name
        );
        let declared = sv
            .llm
            .as_ref()
            .and_then(|l| l.disagg.as_ref())
            .map_or(crate::scenario::disagg::DEFAULT_TRANSPORT, |d| {
                d.transport.as_str()
            });
        let name = world.transport_or(declared);
        let tenant = s.tenant;
        let name = world.allowed_or_fallback(MovementKind::KvCache, tenant, name, &what);
        let per_rank = self.replicas[to as usize]
            .llm
            .as_ref()
            .map_or(0.0, |l| f64::from(h.seq.prompt) * l.foot.kv_token_bytes);
        let src = self.replica_ranks(world, h.from);
        let dst = self.replica_ranks(world, to);
        let (mut fixed, mut flows, mut bytes) = (0.0_f64, Vec::new(), 0.0);
        for (a, b) in src.iter().zip(&dst) {
            let Ok((f, wire)) = world.price_move(
                MovementKind::KvCache,
                &what,
                &name,
                *a,
                *b,
                true,
                per_rank,
                to,
            ) else {
                // The transport cannot reach the decode replica: the request is lost (the
                // KV connector's error ends it) and the prefill replica gets its blocks back.
                self.llm_release(world, &h);
                let svc = self.list[sid as usize].llm.as_mut().expect("llm");
                svc.lost += 1;
                world.losses.requests_lost += 1;
                return;
            };
            fixed = fixed.max(f);
            flows.extend(wire);
            bytes += per_rank;
        }
        if let Some(log) = &mut world.transfers {
            log.push(TransferRecord {
                time: world.q.now(),
                tenant,
                transport: name,
                bytes,
            });
        }
        let to_epoch = self.replicas[to as usize].epoch;
        if let Some(l) = self.replicas[to as usize].llm.as_mut() {
            l.incoming += 1;
        }
        let d = &mut self.list[sid as usize].llm.as_mut().expect("llm").disagg;
        let m = KvMove {
            h,
            to,
            to_epoch,
            bytes,
            flows,
            xfer: None,
            generation: 0,
            live: true,
        };
        let (slot, generation) = d.hold(m);
        let owner = Owner::LlmKv {
            service: sid,
            slot,
            generation,
        };
        world.transfer_after(models::secs(fixed), owner);
    }

    /// A KV cache arrived: the prefill replica frees its blocks, the decode replica's engine
    /// takes the request.
    pub(crate) fn on_llm_kv_done(&mut self, world: &mut World<'_>, sid: u32, slot: u32) {
        let Some((h, to, to_epoch, bytes)) = self.llm_kv_take(world, sid, slot) else {
            return;
        };
        let now = world.now();
        self.llm_release(world, &h);
        let rep = &mut self.replicas[to as usize];
        let svc = self.list[sid as usize].llm.as_mut().expect("llm");
        match rep.llm.as_mut().filter(|_| rep.epoch == to_epoch) {
            Some(l) => {
                svc.disagg.secs.record_ns(now - h.since);
                svc.disagg.bytes += bytes;
                if !l.engine.arrive(h.seq) {
                    svc.dropped += 1;
                }
                self.llm_kick(world, to);
            }
            None => {
                svc.lost += 1;
                world.losses.requests_lost += 1;
            }
        }
    }

    /// Decode replica placed: KV caches parked for want of one move now.
    pub(crate) fn llm_unpark(&mut self, world: &mut World<'_>, sid: u32) {
        let parked = match self.list[sid as usize].llm.as_mut() {
            Some(l) => std::mem::take(&mut l.disagg.parked),
            None => return,
        };
        for h in parked {
            self.llm_kv_send(world, sid, h);
        }
    }

    /// Replica `r` (its engine already gone) was lost: KV caches leaving or reaching it are
    /// lost with their requests; a prefill replica still up gets its blocks back.
    pub(crate) fn llm_disagg_lost(&mut self, world: &mut World<'_>, r: u32) {
        let sid = self.replicas[r as usize].service;
        let Some(l) = self.list[sid as usize].llm.as_mut() else {
            return;
        };
        let before = l.disagg.parked.len();
        l.disagg.parked.retain(|h| h.from != r);
        let mut lost = (before - l.disagg.parked.len()) as u64;
        let hit: Vec<u32> = (0..l.disagg.moves.len() as u32)
            .filter(|&i| {
                let m = &l.disagg.moves[i as usize];
                m.live && (m.h.from == r || m.to == r)
            })
            .collect();
        for slot in hit {
            if let Some((h, _, _, _)) = self.llm_kv_take(world, sid, slot) {
                self.llm_release(world, &h);
                lost += 1;
            }
        }
        if let Some(l) = self.list[sid as usize].llm.as_mut() {
            l.lost += lost;
        }
        world.losses.requests_lost += lost;
    }

    /// Routes changed: KV moves whose flows stalled (`stalled`) or that are still paying their
    /// fixed part over the old routes start again (to the decode pool's least loaded
    /// replica, paying their fixed part again, as tensors do).
    pub(crate) fn llm_kv_reroute(&mut self, world: &mut World<'_>, stalled: &[(u32, u32)]) {
        let mut again: Vec<(u32, u32)> = stalled.to_vec();
        for sid in 0..self.list.len() as u32 {
            if let Some(l) = self.list[sid as usize].llm.as_ref() {
                for (i, m) in l.disagg.moves.iter().enumerate() {
                    if m.live && m.xfer.is_none() {
                        again.push((sid, i as u32));
                    }
                }
            }
        }
        again.sort_unstable();
        again.dedup();
        for (sid, slot) in again {
            if let Some((h, _, _, _)) = self.llm_kv_take(world, sid, slot) {
                self.llm_kv_send(world, sid, h);
            }
        }
    }
}

impl Services {
    /// The pool replica `r` serves.
    pub(crate) fn llm_pool(&self, world: &World<'_>, r: u32) -> Pool {
        let sid = self.replicas[r as usize].service;
        let Some(d) = self.llm_of(world, sid).and_then(|l| l.disagg.as_ref()) else {
            return Pool::Both;
        };
        let first = self.list[sid as usize].replicas.first().copied();
        if first.is_some_and(|f| r - f < d.prefill) {
            Pool::Prefill
        } else {
            Pool::Decode
        }
    }

    /// The replica of `pool` work goes to: the placed one with the fewest requests
    /// outstanding (and KV caches on their way); ties to the lowest. With none placed, the
    /// one with the fewest requests waiting for placement, unless `placed_only`.
    pub(crate) fn llm_route(
        &self,
        world: &World<'_>,
        sid: u32,
        pool: Pool,
        placed_only: bool,
    ) -> Option<u32> {
        let reps = &self.list[sid as usize].replicas;
        let in_pool = |r: &&u32| pool == Pool::Both || self.llm_pool(world, **r) == pool;
        let placed = reps
            .iter()
            .filter(in_pool)
            .any(|r| self.replicas[*r as usize].llm.is_some());
        if placed_only && !placed {
            return None;
        }
        let load = |r: &&u32| match &self.replicas[**r as usize].llm {
            Some(l) => (0, l.engine.outstanding() + l.incoming as usize),
            None => (1, self.replicas[**r as usize].llm_waiting.len()),
        };
        reps.iter()
            .filter(in_pool)
            .filter(|r| !placed || self.replicas[**r as usize].llm.is_some())
            .min_by_key(load)
            .copied()
    }

    /// Take move `slot` off the books (its slot freed); `None` if it is not live.
    fn llm_kv_take(
        &mut self,
        world: &mut World<'_>,
        sid: u32,
        slot: u32,
    ) -> Option<(Handoff, u32, u32, f64)> {
        let d = &mut self.list[sid as usize].llm.as_mut()?.disagg;
        let m = d.moves.get_mut(slot as usize).filter(|m| m.live)?;
        m.live = false;
        let x = m.xfer.take();
        let out = (m.h.clone(), m.to, m.to_epoch, m.bytes);
        d.free.push(slot);
        if let Some(x) = x {
            let now = world.now();
            world.wire.cancel(now, x);
            world.rearm_wire();
        }
        let rep = &mut self.replicas[out.1 as usize];
        if rep.epoch == out.2
            && let Some(l) = rep.llm.as_mut()
        {
            l.incoming = l.incoming.saturating_sub(1);
        }
        Some(out)
    }
}
