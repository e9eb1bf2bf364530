//! LLM services (issue 12, serving): each replica runs an [`engine::Engine`]; this module
//! schedules its iterations on the engine's clock and runs their tensor-parallel
//! all-reduces on the run's shared network.
//!
//! An iteration is its kernels on one rank ([`Pricing`]: the rooflines of its three phases,
//! [`crate::model::serving::iteration_phases`], and what the engine spends beside them,
//! [`crate::model::engines`]) plus any swap copies, then — with tp > 1 — its 2·layers
//! all-reduces of tokens × hidden × activation bytes among the replica's devices: the
//! engine's own kernel in closed form where it runs one, else aggregated as one call of their
//! summed bytes paying every call's α (as `model_steps` aggregates a training step's calls),
//! as NCCL would run it, as rounds of flows on the run's network. The iteration ends when its compute and then its collective are done; tokens
//! are emitted at its end. With pipeline stages (`pp` > 1) [`pipeline`] runs the iterations
//! instead: up to pp batches in flight, each stage's share of the work, and the sends between
//! stages.
//!
//! Assumptions: requests go to the placed replica with the fewest requests waiting or
//! running (ties: the lowest replica; none placed: all replicas are candidates), a
//! least-outstanding router; swap copies move blocks over each rank's own PCIe link at the
//! accelerator's `pcie` bandwidth ([`DEFAULT_PCIE`] without one), in closed form, inside
//! the iteration that preempts or resumes.

mod disagg;
pub mod engine;
pub mod kv_series;
pub mod metrics;
mod pipeline;
mod run;

pub(crate) use disagg::{DisaggState, Pool};

pub use engine::Engine;

use crate::compute::Roofline;
use crate::engine::Time;
use crate::model::serving::Footprint;
use crate::network::collective::Round;
use crate::sim::World;
use crate::sim::durations::Durations;
use crate::sim::services::Services;

/// PCIe bandwidth a swap copy gets when the accelerator states none: gen5 x16 per
/// direction (PCI-SIG, 63 GB/s).
pub const DEFAULT_PCIE: f64 = 0.985e9 * 4.0 * 16.0;

/// How a replica's iterations are priced: the rooflines of its two kinds of kernels and
/// what its engine spends beside them ([`crate::model::engines`]).
pub(crate) struct Pricing {
    /// The GEMMs, at the weights' dtype (`precision`).
    pub(crate) gemm: Roofline,
    /// Attention, at 16 bits under 8- and 4-bit weights (FlashAttention's and the engines'
    /// attention kernels run bf16 on the dequantized KV), else at the weights' dtype.
    pub(crate) attention: Roofline,
    pub(crate) engine: crate::scenario::serving::EngineConfig,
    pub(crate) tp: u32,
    /// Whether the engine's own all-reduce kernel runs on these ranks: an NVIDIA Hopper
    /// node's NVLink devices, where its per-call figures were measured.
    pub(crate) custom_allreduce: bool,
}

impl Pricing {
    /// Seconds of one iteration's kernels on one rank: the GEMMs' roofline plus attention's,
    /// the launches (one graph replay for a decode batch the engine captured, else each
    /// kernel's, with `graphs off` always each kernel's) and the host time the engine's
    /// scheduler leaves exposed ([`crate::model::engines::HOST_GAP_S`]).
    /// `first`: the first pipeline stage (or the only one), which pays the host gap.
    pub(crate) fn secs(
        &self,
        p: &crate::model::serving::Phases,
        b: &crate::model::serving::BatchShape,
        first: bool,
    ) -> f64 {
        crate::compute::iteration_secs(
            &self.gemm,
            &self.attention,
            &self.engine,
            self.tp,
            p,
            b,
            first,
        )
    }

    /// Seconds of one all-reduce of `bytes` per rank with the engine's own kernel, where it
    /// runs it ([`crate::model::engines::custom_allreduce_secs`]); `None`: NCCL's.
    pub(crate) fn custom_allreduce_secs(&self, bytes: f64) -> Option<f64> {
        if !self.custom_allreduce {
            return None;
        }
        crate::model::engines::custom_allreduce_secs(self.engine.kind, self.tp, bytes)
    }
}

/// One replica's engine and the iteration in progress.
pub(crate) struct LlmReplica {
    pub(crate) engine: Engine,
    pub(crate) foot: Footprint,
    pub(crate) price: Pricing,
    /// The ranks' PCIe bandwidth (swap copies).
    pub(crate) pcie: f64,
    /// The all-reduce on the network, scheduled per size as NCCL would run it (`None`: tp 1,
    /// or closed form).
    pub(crate) unit_rounds: Option<crate::network::collective::Recurring>,
    /// Seconds of one 1-byte all-reduce in closed form, when the flow model cannot take it.
    pub(crate) closed_secs: Option<(f64, f64)>,
    pub(crate) batch: Option<engine::Batch>,
    pub(crate) rounds: Vec<Round>,
    pub(crate) round: usize,
    pub(crate) xfer: Option<super::wire::TransferId>,
    pub(crate) iter_from: Time,
    pub(crate) placed_at: Time,
    /// ∫ KV blocks in use / total dt (ns), and the peak fraction.
    pub(crate) kv_integral: f64,
    pub(crate) kv_peak: f64,
    /// Which pool it serves (`disaggregate`), and KV caches on their way to it (decode).
    pub(crate) pool: Pool,
    pub(crate) incoming: u32,
    /// Its pipeline stages and batches in flight (pp > 1; `None`: one batch at a time).
    pub(crate) pipe: Option<Box<pipeline::Pipe>>,
}

/// A closed-loop or offline load's bookkeeping (see [`LlmService::closed`]).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Closed {
    pub(crate) unsent: u64,
    pub(crate) due: u64,
}

impl Closed {
    /// A finite benchmark load at its start: `concurrency` sends one request per client at
    /// once and the rest as they finish; `offline` sends every request at once. `None`: an
    /// open load.
    pub(crate) fn at_start(arrival: &crate::scenario::workload::Arrival) -> Option<Closed> {
        use crate::scenario::workload::Arrival;
        match *arrival {
            Arrival::Concurrency { clients, requests } => Some(Closed {
                unsent: requests - clients.min(requests),
                due: clients.min(requests),
            }),
            Arrival::Offline { requests } => Some(Closed {
                unsent: 0,
                due: requests,
            }),
            _ => None,
        }
    }
}

/// A service's LLM measurements, over its replicas.
#[derive(Default)]
pub(crate) struct LlmService {
    /// A finite benchmark load (`arrival concurrency` / `offline`): requests not yet sent, and
    /// those due now (clients whose last request finished, or every offline request at the
    /// start) that the next arrival event sends.
    pub(crate) closed: Option<Closed>,
    /// When the last request finished (ns; 0 before any).
    pub(crate) last_done: crate::engine::Time,
    pub(crate) ttft: Durations,
    pub(crate) tpot: Durations,
    pub(crate) itl: Durations,
    pub(crate) e2e: Durations,
    pub(crate) finished: u64,
    pub(crate) output_tokens: u64,
    /// Per `slo` statement, finished requests within its target; requests within all.
    pub(crate) within: Vec<u64>,
    pub(crate) within_all: u64,
    pub(crate) preemptions: u64,
    pub(crate) dropped: u64,
    pub(crate) lost: u64,
    /// ∫ KV use of replicas gone (lost to failures), ns·fraction and ns placed.
    pub(crate) kv_integral_gone: f64,
    /// Its replicas' KV occupancy over time ([`kv_series::KvSeries`]).
    pub(crate) kv_series: kv_series::KvSeries,
    /// Each request's wait from its arrival to the first batch that admits it, and how many
    /// waited at all.
    pub(crate) waits: super::durations::Durations,
    pub(crate) waited: u64,
    pub(crate) placed_ns_gone: f64,
    pub(crate) kv_peak: f64,
    /// KV blocks per rank of the first replica placed.
    pub(crate) kv_blocks: u64,
    /// KV caches moving from the prefill pool to the decode pool (`disaggregate`).
    pub(crate) disagg: DisaggState,
}

impl LlmService {
    /// The requests that arrived at `admitted` began their first batch at `now`: their waits.
    pub(crate) fn record_waits(
        &mut self,
        now: crate::engine::Time,
        admitted: &[crate::engine::Time],
    ) {
        for &a in admitted {
            let w = now.saturating_sub(a);
            self.waits.record_ns(w);
            self.waited += u64::from(w > 0);
        }
    }
}

/// The events of LLM replicas' iterations.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LlmEv {
    /// An iteration finished computing (replica, epoch).
    Computed(u32, u32),
    /// An iteration's all-reduce, priced in closed form, is over (replica, epoch).
    RoundClosed(u32, u32),
    /// A pipelined batch's timer is over: its stage computed, or a closed-form part of its
    /// communication is over (replica, epoch, flight).
    /// Its (replica, epoch, flight) are parked in `Services::pipe_timers` (events stay 16
    /// bytes).
    Pipe(u32),
}

impl Services {
    pub(crate) fn on_llm_event(&mut self, world: &mut World<'_>, ev: LlmEv) {
        match ev {
            LlmEv::Computed(r, epoch) => self.on_llm_computed(world, r, epoch),
            LlmEv::RoundClosed(r, epoch) => self.on_llm_round_closed(world, r, epoch),
            LlmEv::Pipe(slot) => {
                let (r, epoch, f) = self.pipe_timers.take(slot);
                self.on_llm_pipe(world, r, epoch, f)
            }
        }
    }
}

impl Services {
    /// The LLM statement of service `sid`, if it serves a model.
    pub(crate) fn llm_of<'s>(
        &self,
        world: &World<'s>,
        sid: u32,
    ) -> Option<&'s crate::scenario::serving::LlmServing> {
        let s = &self.list[sid as usize];
        world.spec.workloads[s.workload].services[s.index]
            .llm
            .as_ref()
    }

    /// (node, device) of each device replica `r` holds, ascending: its tensor-parallel ranks.
    pub(crate) fn replica_ranks(&self, world: &World<'_>, r: u32) -> Vec<(usize, usize)> {
        let rep = &self.replicas[r as usize];
        let (Some(node), Some(a)) = (rep.node, rep.alloc.as_ref()) else {
            return Vec::new();
        };
        let mut devs: Vec<usize> = a
            .instances
            .iter()
            .filter(|(rid, _)| world.unit_ids.contains(rid))
            .flat_map(|(_, amounts)| {
                amounts
                    .iter()
                    .enumerate()
                    .filter(|(_, x)| **x > 0)
                    .map(|(d, _)| d)
            })
            .collect();
        devs.sort_unstable();
        devs.dedup();
        devs.into_iter().map(|d| (node, d)).collect()
    }

    /// A finite load's clients whose requests just finished (or were dropped) send their next
    /// ones now, while any are unsent.
    pub(crate) fn next_closed(&mut self, world: &mut World<'_>, sid: u32, freed: u64) {
        let Some(c) = self.list[sid as usize]
            .llm
            .as_mut()
            .and_then(|l| l.closed.as_mut())
        else {
            return;
        };
        let send = freed.min(c.unsent);
        if send > 0 {
            c.unsent -= send;
            c.due += send;
            let now = world.now();
            world.q.at(
                now,
                crate::sim::Ev::Service(crate::sim::ServiceEv::Arrival(sid)),
            );
        }
    }
}
