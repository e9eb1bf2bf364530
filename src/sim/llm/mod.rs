//! LLM services (issue 12, serving): each replica runs an [`engine::Engine`]; this module
//! schedules its iterations on the engine's clock and runs their tensor-parallel
//! all-reduces on the run's shared network.
//!
//! An iteration is the roofline ([`crate::compute::Roofline`]) of its batch on one rank
//! ([`crate::model::serving::iteration_work`]) plus any swap copies, then — with tp > 1 —
//! its 2·layers all-reduces of tokens × hidden × dtype bytes among the replica's devices,
//! aggregated as one call of their summed bytes paying every call's α (as `model_steps`
//! aggregates a training step's calls), ring algorithm, as rounds of flows on the run's
//! network. The iteration ends when its compute and then its collective are done; tokens
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
pub mod metrics;
mod pipeline;
mod run;

pub(crate) use disagg::{DisaggState, Pool};

pub use engine::Engine;

use crate::compute::Roofline;
use crate::engine::Time;
use crate::model::serving::Footprint;
use crate::network::collective::Round;
use crate::sim::durations::Durations;

/// PCIe bandwidth a swap copy gets when the accelerator states none: gen5 x16 per
/// direction (PCI-SIG, 63 GB/s).
pub const DEFAULT_PCIE: f64 = 0.985e9 * 4.0 * 16.0;

/// One replica's engine and the iteration in progress.
pub(crate) struct LlmReplica {
    pub(crate) engine: Engine,
    pub(crate) foot: Footprint,
    pub(crate) roof: Roofline,
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
    pub(crate) placed_ns_gone: f64,
    pub(crate) kv_peak: f64,
    /// KV blocks per rank of the first replica placed.
    pub(crate) kv_blocks: u64,
    /// KV caches moving from the prefill pool to the decode pool (`disaggregate`).
    pub(crate) disagg: DisaggState,
}
