//! The engine's iterations as events: arrivals routed to a replica, a batch scheduled,
//! its compute, its all-reduce rounds on the run's network, its tokens emitted.

use super::engine::{Emitted, Engine, Seq};
use super::{LlmReplica, LlmService, Pool};
use crate::model::serving as ms;
use crate::network::collective::{self, Op};
use crate::scenario::serving::Tokens;
use crate::sim::LlmEv;
use crate::sim::World;
use crate::sim::services::Services;
use crate::sim::{Ev, models, network::MovementKind, timeline, wire::Owner};
use rand::RngExt;

/// A request's tokens: drawn, or its trace row's (`row`: that column), clamped to
/// `1..=max` (the CLI rejects longer rows, `scenario::arrivals::check_tokens`; a trace without
/// the column gives `max`).
fn draw(t: Tokens, row: Option<u32>, rng: &mut rand_chacha::ChaCha8Rng) -> u32 {
    match t {
        Tokens::Fixed(n) => n,
        Tokens::Uniform(lo, hi) => rng.random_range(lo..=hi),
        Tokens::Trace { max } => row.unwrap_or(max).clamp(1, max),
    }
}

/// `k` repeats of `rounds` as one: bytes and α times `k` (`model_steps` does the same).
pub(super) fn scaled(
    mut out: Vec<crate::network::collective::Round>,
    bytes: f64,
    k: f64,
) -> Vec<crate::network::collective::Round> {
    for r in &mut out {
        r.alpha *= k;
        for c in &mut r.chains {
            c.bytes *= bytes * k;
        }
    }
    out
}

impl Services {
    /// Requests arrive at LLM service `sid`: each routed to a replica's engine.
    pub(crate) fn llm_arrive(&mut self, world: &mut World<'_>, sid: u32, n: u64) {
        let llm = self.llm_spec(world, sid).clone();
        let now = world.now();
        let mut touched = Vec::new();
        // Disaggregated: arrivals go to the prefill pool, for their prompt only.
        let pool = if llm.disagg.is_some() {
            Pool::Prefill
        } else {
            Pool::Both
        };
        // Trace arrivals: the rows just consumed, `trace_next - n ..`.
        let first_row = self.list[sid as usize].trace_next.checked_sub(n as usize);
        // Requests that reach no engine: a finite load's clients move on to their next.
        let mut freed = 0;
        for k in 0..n as usize {
            let svc = &mut self.list[sid as usize];
            svc.arrived += 1;
            let row = first_row.and_then(|f| svc.trace_tokens.get(f + k).copied());
            let (prompt, output) = (
                draw(llm.prompt, row.map(|r| r.0), &mut svc.rng),
                draw(llm.output, row.map(|r| r.1), &mut svc.rng),
            );
            let seq = if pool == Pool::Prefill {
                let mut s = Seq::new(now, prompt, 1);
                s.handoff = Some(output);
                s
            } else {
                Seq::new(now, prompt, output)
            };
            let Some(r) = self.llm_route(world, sid, pool, false) else {
                freed += 1;
                continue;
            };
            let rep = &mut self.replicas[r as usize];
            let kept = match rep.llm.as_mut() {
                Some(l) => l.engine.arrive(seq),
                None if rep.llm_waiting.len() < super::engine::MAX_WAITING => {
                    rep.llm_waiting.push(seq);
                    true
                }
                None => false,
            };
            if !kept {
                self.list[sid as usize].llm.as_mut().expect("llm").dropped += 1;
                freed += 1;
            }
            if !touched.contains(&r) {
                touched.push(r);
            }
        }
        for r in touched {
            self.llm_kick(world, r);
        }
        self.next_closed(world, sid, freed);
    }

    /// Replica `r` of an LLM service was placed: its engine starts with the KV blocks its
    /// device leaves after weights and reserve, and its all-reduce is priced once; `bw`: its
    /// node's working fraction of scale-up and NIC bandwidth
    /// (`failures::Health::bandwidth_factors`).
    pub(crate) fn llm_replica_up(&mut self, world: &mut World<'_>, r: u32, bw: (f64, f64)) {
        let sid = self.replicas[r as usize].service;
        let llm = self.llm_spec(world, sid).clone();
        let node = self.replicas[r as usize].node.unwrap_or(0);
        let acc_name = world.node_accel[node].clone().unwrap_or_default();
        let spec = world.spec;
        let name = {
            let s = &self.list[sid as usize];
            format!(
                "{}.{}",
                spec.workloads[s.workload].name, spec.workloads[s.workload].services[s.index].name
            )
        };
        let (Some(acc), Some(roof)) = (
            spec.accelerators.get(&acc_name),
            crate::compute::roofline(spec, &acc_name, &llm.dtype),
        ) else {
            // Not priced: the replica does not serve rather than serve for free.
            world.net.note(
                MovementKind::Collective,
                false,
                format!(
                    "service {name}: `{acc_name}` has no {} peak; the replica does not serve",
                    llm.dtype
                ),
            );
            return;
        };
        let narrow = crate::model::dtype_bytes(&llm.dtype) < 2.0;
        let attention = if narrow {
            crate::compute::roofline(spec, &acc_name, "bf16")
        } else {
            Some(roof.clone())
        }
        .unwrap_or_else(|| roof.clone());
        let custom_allreduce = custom_allreduce(world, &name, &llm, acc);
        let price = super::Pricing {
            gemm: roof,
            attention,
            engine: llm.engine,
            tp: llm.tp,
            custom_allreduce,
        };
        let foot = llm.footprint();
        // vLLM takes the fewest blocks over its workers: the most loaded stage's.
        let (mem, e) = (acc.memory.0 as f64, &llm.engine);
        let blocks = (llm.stage_footprints().iter())
            .map(|f| f.kv_blocks(mem, e.memory_fraction, e.kv_block))
            .min()
            .unwrap_or(0);
        let ranks = self.replica_ranks(world, r);
        let (mut unit_rounds, mut closed_secs, mut pipe) = (None, None, None);
        if llm.pp > 1 {
            // Stage-to-stage sends cross nodes with the service's tenant's transport.
            let tenant = self.list[self.replica(r).service as usize].tenant;
            let share = crate::sim::collective_rules::share(world.tenant_net(tenant));
            if share < 1.0 {
                world.net.note(
                    MovementKind::Collective,
                    true,
                    format!(
                        "service {name}: its tenant may not use RDMA, so its stage-to-stage \
                         sends cross nodes over NCCL's socket transport at {share} of the NICs' \
                         line rate (src/network/collective SOCKET_SHARE)"
                    ),
                );
            }
            pipe = Some(Box::new(self.llm_pipe(
                world,
                &name,
                &llm,
                (node, bw),
                &ranks,
                share,
            )));
        } else if llm.tp > 1 {
            let graph = world.wire.graph.as_ref();
            let r = match graph {
                Some(g) => collective::Recurring::new(g, Op::AllReduce, &ranks, None, None),
                None => Err("no cluster graph".to_string()),
            };
            match r {
                Ok(rounds) => {
                    let how = graph
                        .and_then(|g| rounds.measured(g))
                        .map_or(String::new(), |m| format!(", priced by {m}"));
                    world.net.note(MovementKind::Collective, true, format!("service {name}: tensor-parallel all-reduces on the run's shared network{how}"));
                    unit_rounds = Some(rounds);
                }
                Err(e) => {
                    let group = models::Group {
                        nodes: vec![(world.node_types[node], llm.tp)],
                        factors: vec![bw],
                    };
                    // α + β·bytes from two sizes of the closed form.
                    let one = models::collective_secs(spec, "allreduce", 1.0, false, &group);
                    let big = models::collective_secs(spec, "allreduce", 1e9, false, &group);
                    let beta = (big - one) / (1e9 - 1.0);
                    closed_secs = Some((one - beta, beta));
                    world.net.note(
                        MovementKind::Collective,
                        false,
                        format!("service {name}: tensor-parallel all-reduces in closed form ({e})"),
                    );
                }
            }
        }
        let pcie = acc.pcie.map_or(super::DEFAULT_PCIE, |p| p.bandwidth().0);
        let mut engine = Engine::new(llm.engine, blocks);
        for s in std::mem::take(&mut self.replicas[r as usize].llm_waiting) {
            if !engine.arrive(s) {
                self.list[sid as usize].llm.as_mut().expect("llm").dropped += 1;
            }
        }
        let now = world.now();
        let svc = self.list[sid as usize].llm.as_mut().expect("llm");
        if svc.kv_blocks == 0 {
            svc.kv_blocks = blocks;
        }
        self.replicas[r as usize].llm = Some(Box::new(LlmReplica {
            engine,
            foot,
            price,
            pcie,
            unit_rounds,
            closed_secs,
            batch: None,
            rounds: Vec::new(),
            round: 0,
            xfer: None,
            iter_from: now,
            placed_at: now,
            kv_integral: 0.0,
            kv_peak: 0.0,
            pool: self.llm_pool(world, r),
            incoming: 0,
            pipe,
        }));
        if self.llm_pool(world, r) == Pool::Decode {
            self.llm_unpark(world, sid);
        }
        self.llm_kick(world, r);
    }

    /// Start replica `r`'s next iteration if it is idle and has work.
    pub(crate) fn llm_kick(&mut self, world: &mut World<'_>, r: u32) {
        let epoch = self.replicas[r as usize].epoch;
        let sid = self.replicas[r as usize].service;
        let llm = self.llm_spec(world, sid);
        let (tp, model) = (llm.tp, llm.model.clone());
        let now = world.now();
        let Some(l) = self.replicas[r as usize].llm.as_mut() else {
            return;
        };
        if l.pipe.is_some() {
            self.llm_pipe_kick(world, r);
            return;
        }
        if l.batch.is_some() {
            return;
        }
        let mut b = l.engine.schedule();
        if b.is_empty() && b.preempted > 0 {
            // Everything that ran was preempted: the waiting queue is admitted next.
            let mut again = l.engine.schedule();
            again.preempted += b.preempted;
            again.swap_out_blocks += b.swap_out_blocks;
            again.admitted.extend(std::mem::take(&mut b.admitted));
            b = again;
        }
        if let Some(svc) = self.list[sid as usize].llm.as_mut() {
            svc.record_waits(now, &b.admitted);
        }
        if b.is_empty() {
            return;
        }
        let phases = ms::iteration_phases(&model, tp, &l.foot, &b.shape);
        let swap = (b.swap_out_blocks + b.swap_in_blocks) as f64
            * l.foot.block_bytes(l.engine.cfg.kv_block)
            / l.pcie;
        let secs = l.price.secs(&phases, &b.shape, true) + swap;
        let util = l.engine.used_blocks() as f64 / l.engine.total_blocks.max(1) as f64;
        l.kv_peak = l.kv_peak.max(util);
        l.iter_from = now;
        l.batch = Some(b);
        world.q.after(
            models::secs(secs).max(1),
            Ev::Llm(LlmEv::Computed(r, epoch)),
        );
    }

    /// Replica `r`'s iteration finished computing: its all-reduce, or its end.
    pub(crate) fn on_llm_computed(&mut self, world: &mut World<'_>, r: u32, epoch: u32) {
        if epoch != self.replicas[r as usize].epoch {
            return;
        }
        let sid = self.replicas[r as usize].service;
        let llm = self.llm_spec(world, sid);
        let (k, dtype_bytes) = (ms::allreduces(&llm.model), llm.dtypes().activations);
        let hidden = llm.model.clone();
        let Some(l) = self.replicas[r as usize].llm.as_mut() else {
            return;
        };
        let tokens = l.batch.as_ref().map_or(0.0, |b| b.shape.tokens);
        let bytes = ms::allreduce_bytes(&hidden, tokens, dtype_bytes);
        if let Some(t) = l
            .price
            .custom_allreduce_secs(bytes)
            .filter(|_| tokens > 0.0)
        {
            world.q.after(
                models::secs(k * t).max(1),
                Ev::Llm(LlmEv::RoundClosed(r, epoch)),
            );
        } else if let (Some(rec), Some(g)) = (&l.unit_rounds, &world.wire.graph) {
            l.rounds = scaled(rec.rounds(g, bytes), 1.0, k);
            l.round = 0;
            self.llm_next_round(world, r);
        } else if let Some((alpha, beta)) = l.closed_secs {
            let t = k * (alpha + beta * bytes);
            world.q.after(
                models::secs(t).max(1),
                Ev::Llm(LlmEv::RoundClosed(r, epoch)),
            );
        } else {
            self.llm_iteration_done(world, r);
        }
    }

    fn llm_next_round(&mut self, world: &mut World<'_>, r: u32) {
        let epoch = self.replicas[r as usize].epoch;
        let l = self.replicas[r as usize].llm.as_mut().expect("engine");
        let Some(round) = l.rounds.get(l.round) else {
            self.llm_iteration_done(world, r);
            return;
        };
        let alpha = models::secs(round.alpha);
        if alpha > 0 {
            world.transfer_after(alpha, Owner::LlmRound { replica: r, epoch });
        } else {
            self.on_transfer_go(world, Owner::LlmRound { replica: r, epoch });
        }
    }

    /// A round priced in closed form is over: the iteration's communication is done.
    pub(crate) fn on_llm_round_closed(&mut self, world: &mut World<'_>, r: u32, epoch: u32) {
        if epoch == self.replicas[r as usize].epoch {
            self.llm_iteration_done(world, r);
        }
    }

    pub(crate) fn on_llm_round_done(&mut self, world: &mut World<'_>, r: u32, epoch: u32) {
        if epoch != self.replicas[r as usize].epoch {
            return;
        }
        let l = self.replicas[r as usize].llm.as_mut().expect("engine");
        l.xfer = None;
        l.round += 1;
        self.llm_next_round(world, r);
    }

    /// The iteration is over: its tokens are emitted, finished requests measured.
    fn llm_iteration_done(&mut self, world: &mut World<'_>, r: u32) {
        let Some(l) = self.replicas[r as usize].llm.as_mut() else {
            return;
        };
        let b = l.batch.take().expect("an iteration");
        let from = l.iter_from;
        self.llm_completed(world, r, b, from, Some(from));
        self.llm_kick(world, r);
    }

    /// Batch `b` of replica `r` is done now: KV use integrated since `kv_from`, its tokens
    /// emitted, finished requests measured, and (`worked`: since then) its devices busy.
    pub(super) fn llm_completed(
        &mut self,
        world: &mut World<'_>,
        r: u32,
        b: super::engine::Batch,
        kv_from: crate::engine::Time,
        worked: Option<crate::engine::Time>,
    ) {
        let now = world.now();
        let sid = self.replicas[r as usize].service;
        let slo: Vec<(String, f64)> = self
            .llm_spec(world, sid)
            .slo
            .iter()
            .map(|s| (s.kind.clone(), s.target.0 as f64 / 1e9))
            .collect();
        let node = self.replicas[r as usize].node.unwrap_or(0);
        let Some(mut l) = self.replicas[r as usize].llm.take() else {
            return;
        };
        let util = l.engine.used_blocks() as f64 / l.engine.total_blocks.max(1) as f64;
        l.kv_integral += util * (now - kv_from) as f64;
        let reps = self.list[sid as usize].replicas.len().max(1) as f64;
        let svc: &mut LlmService = self.list[sid as usize].llm.as_mut().expect("llm");
        svc.kv_series.add(kv_from, now, util / reps);
        if svc.within.len() != slo.len() {
            svc.within = vec![0; slo.len()];
        }
        let finished_before = svc.finished;
        let mut handed = Vec::new();
        if l.pool == Pool::Prefill {
            // Prompts done: their first token is the decode pool's to emit (`disagg`).
            l.engine.complete(&b, now, |_| {}, |f| handed.push(f));
        } else {
            l.engine.complete(
                &b,
                now,
                |e| match e {
                    Emitted::First { ttft } => svc.ttft.record_ns(ttft),
                    Emitted::Next { gap } => svc.itl.record_ns(gap),
                },
                |f| {
                    let ttft = (f.first_token - f.arrival) as f64 / 1e9;
                    let e2e = (f.done - f.arrival) as f64 / 1e9;
                    // TPOT: mean time per output token after the first (0 with one token).
                    let tpot = if f.output > 1 {
                        (f.done - f.first_token) as f64 / 1e9 / f64::from(f.output - 1)
                    } else {
                        0.0
                    };
                    svc.tpot.record(tpot);
                    svc.e2e.record(e2e);
                    svc.finished += 1;
                    svc.output_tokens += u64::from(f.output);
                    let mut all = true;
                    for (i, (kind, target)) in slo.iter().enumerate() {
                        let x = match kind.as_str() {
                            "ttft" => ttft,
                            "tpot" => tpot,
                            _ => e2e,
                        };
                        if x <= *target {
                            svc.within[i] += 1;
                        } else {
                            all = false;
                        }
                    }
                    if all {
                        svc.within_all += 1;
                    }
                },
            );
        }
        svc.preemptions += b.preempted as u64;
        let finished_now = svc.finished - finished_before;
        if finished_now > 0 {
            svc.last_done = now;
            // A request's work ends with its last token.
            world.makespan = world.makespan.max(now);
        }
        self.next_closed(world, sid, finished_now);
        let units = f64::from(self.llm_spec(world, sid).tp);
        self.replicas[r as usize].llm = Some(l);
        if let Some(from) = worked {
            self.llm_worked(world, r, sid, node, units, from);
        }
        if !handed.is_empty() {
            self.llm_handoff(world, sid, r, handed);
        }
    }

    /// Replica `r` was lost to a failure: its requests are lost, its flows leave the network.
    pub(crate) fn llm_lost(&mut self, world: &mut World<'_>, r: usize) {
        let now = world.now();
        let waiting = std::mem::take(&mut self.replicas[r].llm_waiting).len() as u64;
        let Some(l) = self.replicas[r].llm.take() else {
            return;
        };
        let pipe = l.pipe.as_ref().map(|p| p.xfers()).unwrap_or_default();
        for x in l.xfer.into_iter().chain(pipe) {
            world.wire.cancel(now, x);
            world.rearm_wire();
        }
        let lost = l.engine.outstanding() as u64 + waiting;
        world.losses.requests_lost += lost;
        let sid = self.replicas[r].service as usize;
        let svc = self.list[sid].llm.as_mut().expect("llm");
        svc.lost += lost;
        svc.dropped += l.engine.dropped;
        svc.kv_integral_gone += l.kv_integral;
        svc.placed_ns_gone += (now - l.placed_at) as f64;
        svc.kv_peak = svc.kv_peak.max(l.kv_peak);
        self.llm_disagg_lost(world, r as u32);
    }
}

impl Services {
    /// Replica `r`'s devices worked from `from` to now (pp 1: the whole iteration).
    fn llm_worked(
        &mut self,
        world: &mut World<'_>,
        r: u32,
        sid: u32,
        node: usize,
        units: f64,
        from: u64,
    ) {
        let now = world.now();
        world.worked(node, units, from, now);
        self.replica_cpus_worked(world, sid as usize, node, 1.0, from, now);
        if world.tl.on {
            let rep = &self.replicas[r as usize];
            let devs = world.alloc_devices(node, rep.alloc.as_ref());
            let label = world.label_id(self.label(sid as usize));
            world
                .tl
                .span(&devs, from, now, timeline::SpanKind::Compute, label);
        }
    }
}

/// Whether replicas of `llm` on `acc` run their engine's own one-node all-reduce kernel for
/// small tensor-parallel messages: on Hopper parts with NVLink only, the part its published
/// per-call times were measured on. Noted once for service `name`.
fn custom_allreduce(
    world: &mut World<'_>,
    name: &str,
    llm: &crate::scenario::serving::LlmServing,
    acc: &crate::scenario::hardware::Accelerator,
) -> bool {
    let custom = llm.tp > 1
        && acc.interconnect.is_some()
        && crate::network::collective::tuning::Arch::of(
            &acc.vendor,
            &acc.name,
            acc.model.as_deref(),
        ) == Some(crate::network::collective::tuning::Arch::Hopper);
    if let Some(max) = llm
        .engine
        .kind
        .custom_allreduce_max(llm.tp)
        .filter(|_| custom)
    {
        world.net.note(
            MovementKind::Collective,
            false,
            format!(
                "service {name}: tensor-parallel all-reduces under {} per rank run {}'s own one-node kernel, priced by its per-call times measured on H100 (sgl-project/sglang PR #2904); larger ones NCCL's",
                crate::units::Bytes(max as u64),
                llm.engine.kind.name()
            ),
        );
    }
    custom
}
