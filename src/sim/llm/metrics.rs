//! What an LLM service measures (`run.json`'s `llm_services`, `llm_services.csv`, the run
//! table), built from [`super::LlmService`] and its replicas at the end of the run.

use crate::engine::Time;
use crate::sim::World;
use crate::sim::metrics::Stats;
use crate::sim::services::Services;
use serde::Serialize;

/// One `slo KIND pNN TIME`: attainment over the arrived requests whose outcome the window
/// decided ([`decided`]), met when it reaches the percentile.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LlmSloMetrics {
    pub kind: String,
    pub percentile: String,
    pub target_s: f64,
    /// The percentile of the finished requests' values.
    pub measured_s: f64,
    /// Requests whose value is known to be within the target: finished ones, and (TTFT)
    /// ones still in flight whose first token came in time.
    pub within: u64,
    /// Requests still queued or in flight at the window's end whose outcome the window
    /// cannot tell ([`decided`]); left out of the attainment.
    pub undecided: u64,
    /// `within` / (arrived − undecided): every decided request that is not within counts
    /// against it — late, lost with a replica, dropped, or past its target unfinished.
    pub attainment_fraction: f64,
    pub met: bool,
}

/// A disaggregated service's pools and its KV cache moves (`disaggregate`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LlmDisaggMetrics {
    pub prefill_replicas: u32,
    pub decode_replicas: u32,
    /// The transport the KV caches moved with (as declared; a run's override wins).
    pub transport: String,
    /// From a prompt's prefill end to its KV cache's arrival at the decode replica
    /// (`count`: KV caches that arrived).
    pub kv_transfer: Stats,
    /// Bytes of the arrived KV caches, every rank together.
    pub kv_transfer_bytes: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LlmServiceMetrics {
    pub workload: String,
    pub name: String,
    pub model: String,
    pub tp: u32,
    pub replicas_placed: u32,
    /// KV blocks per rank of the first replica placed, and tokens per block.
    pub kv_blocks: u64,
    pub kv_block_tokens: u32,
    pub arrived: u64,
    pub finished: u64,
    /// Arrivals beyond a replica's waiting-queue bound (`engine::MAX_WAITING`).
    pub dropped: u64,
    /// Requests lost with a replica to a failure.
    pub lost: u64,
    pub preemptions: u64,
    pub output_tokens: u64,
    /// Output tokens per second of the service's run: from the run's start until its last
    /// request finished when none is left outstanding (a finite load), else the window.
    pub output_tokens_per_s: f64,
    /// When the last request finished, from the run's start (0 before any): with a finite
    /// load (`arrival concurrency` / `offline`, all sent from time 0) output_tokens over it is
    /// the benchmark tools' throughput.
    pub last_finish_s: f64,
    /// Finished requests per second of the service's run (as `output_tokens_per_s`).
    pub requests_per_s: f64,
    /// Finished requests meeting every SLO, per second of the service's run (as
    /// `output_tokens_per_s`).
    pub goodput_per_s: f64,
    /// Arrival to first token; mean time per output token after the first; gaps between
    /// consecutive tokens of a request; arrival to last token.
    pub ttft: Stats,
    pub tpot: Stats,
    pub inter_token: Stats,
    pub e2e: Stats,
    /// TTFT, TPOT and end-to-end samples (s) for the CDF plots, bounded as
    /// [`crate::sim::metrics::TaskGroupMetrics::queueing_samples`]. Not in `run.json`.
    #[serde(skip)]
    pub ttft_samples: Vec<f64>,
    #[serde(skip)]
    pub tpot_samples: Vec<f64>,
    #[serde(skip)]
    pub e2e_samples: Vec<f64>,
    /// Arrival to the first batch that admits it, of the requests admitted.
    pub waiting: Stats,
    /// P(wait > 0): the share of the admitted requests that waited for a batch.
    #[serde(rename = "wait_probability_fraction")]
    pub wait_probability: f64,
    /// Mean number of requests waiting to be admitted over the window: their waits summed / W
    /// (Little's law).
    #[serde(rename = "mean_queue_length_requests")]
    pub mean_queue_length: f64,
    /// KV-cache occupancy over time, the mean over its replicas per window: `(window start s,
    /// fraction)` ([`super::kv_series::KvSeries`]). Not in `run.json` (in `llm_kv.csv`).
    #[serde(skip)]
    pub kv_series: Vec<(f64, f64)>,
    /// KV blocks in use over the replicas' placed time, and the highest at any iteration.
    pub kv_utilization_mean_fraction: f64,
    pub kv_utilization_peak_fraction: f64,
    /// Device-hours its replicas held: each replica's devices × the time it was placed (a
    /// replica lost to a failure stops holding them); what its $ per token is priced by.
    pub device_hours: f64,
    pub slo: Vec<LlmSloMetrics>,
    /// `None`: a colocated service (every replica prefills and decodes).
    pub disaggregation: Option<LlmDisaggMetrics>,
}

/// Whether a request still queued or in flight at `end` (ns) meets an SLO of `kind` with
/// `target` (ns): `Some(true)` / `Some(false)` when the window already decides it, `None`
/// when only its future would. TTFT is decided by a first token, or by the target passing
/// without one; e2e is decided (missed) once the target has passed; TPOT, the mean gap
/// after the first token over `output − 1` gaps, is at least (end − first token) /
/// (output − 1) whatever comes next, so it is decided (missed) once that bound exceeds the
/// target. Without this, an LLM service whose requests take seconds would "miss" every
/// SLO by the requests the window's end cuts off (≈ arrival rate × e2e latency of them).
/// A prefill-pool sequence (`handoff`) has no client-visible token yet: the client's first
/// token comes from the decode pool.
pub fn decided(seq: &super::engine::Seq, kind: &str, target: Time, end: Time) -> Option<bool> {
    let waited = end.saturating_sub(seq.arrival);
    let (first, output) = match seq.handoff {
        Some(out) => (None, out),
        None => (seq.first_token, seq.output),
    };
    match (kind, first) {
        ("ttft", Some(t)) => Some(t - seq.arrival <= target),
        ("ttft", None) | ("e2e", _) => (waited > target).then_some(false),
        (_, Some(t)) if output > 1 => {
            let bound = end.saturating_sub(t) / u64::from(output - 1);
            (bound > target).then_some(false)
        }
        _ => None,
    }
}

pub(crate) fn at(st: &Stats, p: &str) -> f64 {
    match p {
        "p50" => st.p50,
        "p90" => st.p90,
        "p99" => st.p99,
        _ => st.p999,
    }
}

impl Services {
    /// Every LLM service's metrics at `end` (ns).
    pub(crate) fn llm_metrics(&mut self, world: &World<'_>, end: Time) -> Vec<LlmServiceMetrics> {
        let mut out = Vec::new();
        let window = end as f64 / 1e9;
        for sid in 0..self.list.len() {
            let s = &self.list[sid];
            let sv = &world.spec.workloads[s.workload].services[s.index];
            let Some(llm) = sv.llm.as_ref() else { continue };
            let (mut kv_int, mut placed_ns, mut peak, mut placed, mut dropped, mut blocks) =
                (0.0, 0.0, 0.0_f64, 0u32, 0u64, 0u64);
            for &r in &s.replicas {
                if let Some(l) = &self.replicas[r as usize].llm {
                    placed += 1;
                    kv_int += l.kv_integral;
                    placed_ns += (end.saturating_sub(l.placed_at)) as f64;
                    peak = peak.max(l.kv_peak);
                    dropped += l.engine.dropped;
                    if blocks == 0 {
                        blocks = l.engine.total_blocks;
                    }
                }
            }
            let arrived = s.arrived;
            // In-flight requests the window decides within the target, and those it cannot
            // decide, per SLO.
            let mut open = vec![(0u64, 0u64); llm.slo.len()];
            let replicas = s.replicas.iter().map(|&r| self.replica(r));
            let engines = replicas.flat_map(|rep| {
                let engine = rep
                    .llm
                    .iter()
                    .flat_map(|l| l.engine.waiting.iter().chain(l.engine.running.iter()));
                engine.chain(rep.llm_waiting.iter())
            });
            let between = s.llm.iter().flat_map(|m| m.disagg.between());
            for q in engines.chain(between) {
                for (o, x) in open.iter_mut().zip(&llm.slo) {
                    match decided(q, &x.kind, x.target.0, end) {
                        Some(true) => o.0 += 1,
                        Some(false) => {}
                        None => o.1 += 1,
                    }
                }
            }
            let workload = world.spec.workloads[s.workload].name.clone();
            let Some(m) = self.list[sid].llm.as_mut() else {
                continue;
            };
            kv_int += m.kv_integral_gone;
            placed_ns += m.placed_ns_gone;
            let (ttft, tpot, itl, e2e) =
                (m.ttft.stats(), m.tpot.stats(), m.itl.stats(), m.e2e.stats());
            let samples = (m.ttft.samples(), m.tpot.samples(), m.e2e.samples());
            let waiting = m.waits.stats();
            // The service ran until its last request finished when none is left outstanding
            // (a finite load: offline, a closed loop, a trace), else to the window's end.
            let settled = m.finished + m.dropped + dropped + m.lost >= arrived && m.last_done > 0;
            let ran = if settled {
                m.last_done as f64 / 1e9
            } else {
                window
            };
            let per_s = |x: f64| if ran > 0.0 { x / ran } else { 0.0 };
            let disaggregation = llm.disagg.as_ref().map(|d| LlmDisaggMetrics {
                prefill_replicas: d.prefill,
                decode_replicas: d.decode,
                transport: world.transport_or(&d.transport),
                kv_transfer: m.disagg.secs.stats(),
                kv_transfer_bytes: m.disagg.bytes,
            });
            let slo = llm
                .slo
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    let st = match x.kind.as_str() {
                        "ttft" => &ttft,
                        "tpot" => &tpot,
                        _ => &e2e,
                    };
                    let (early, undecided) = open[i];
                    let within = m.within.get(i).copied().unwrap_or(0) + early;
                    let decided = arrived.saturating_sub(undecided);
                    let att = if decided == 0 {
                        1.0
                    } else {
                        within as f64 / decided as f64
                    };
                    LlmSloMetrics {
                        kind: x.kind.clone(),
                        percentile: x.percentile.clone(),
                        target_s: x.target.0 as f64 / 1e9,
                        measured_s: at(st, &x.percentile),
                        within,
                        undecided,
                        attainment_fraction: att,
                        met: att >= crate::sim::percentile(&x.percentile),
                    }
                })
                .collect();
            out.push(LlmServiceMetrics {
                workload,
                name: sv.name.clone(),
                model: llm.model.name.clone(),
                tp: llm.tp,
                replicas_placed: placed,
                kv_blocks: if blocks > 0 { blocks } else { m.kv_blocks },
                kv_block_tokens: llm.engine.kv_block,
                arrived,
                finished: m.finished,
                dropped: m.dropped + dropped,
                lost: m.lost,
                preemptions: m.preemptions,
                output_tokens: m.output_tokens,
                output_tokens_per_s: per_s(m.output_tokens as f64),
                last_finish_s: m.last_done as f64 / 1e9,
                requests_per_s: per_s(m.finished as f64),
                goodput_per_s: per_s(if llm.slo.is_empty() {
                    m.finished
                } else {
                    m.within_all
                } as f64),
                ttft,
                tpot,
                inter_token: itl,
                e2e,
                kv_series: m.kv_series.points(end).0,
                wait_probability: if waiting.count > 0 {
                    m.waited as f64 / waiting.count as f64
                } else {
                    0.0
                },
                mean_queue_length: if window > 0.0 {
                    waiting.mean * waiting.count as f64 / window
                } else {
                    0.0
                },
                waiting,
                ttft_samples: samples.0,
                tpot_samples: samples.1,
                e2e_samples: samples.2,
                kv_utilization_mean_fraction: if placed_ns > 0.0 {
                    kv_int / placed_ns
                } else {
                    0.0
                },
                kv_utilization_peak_fraction: peak.max(m.kv_peak),
                device_hours: placed_ns / 3.6e12 * f64::from(llm.tp),
                slo,
                disaggregation,
            });
        }
        out
    }
}
