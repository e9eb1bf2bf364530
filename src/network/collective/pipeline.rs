//! Chunked pipelines (broadcast, tree, in-switch): the message is cut into k chunks of
//! [`Options::chunk`](super::Options) bytes (the last may be shorter); a stage at offset o
//! moves chunk i in step o + i. Steps are lock-step: step t lasts until its slowest flow ends.
//! α overlaps across chunks (NCCL keeps several chunks in flight per connection), so the
//! pipeline pays each stage's α once, plus every step's bandwidth time:
//! T = Σ_stages α + Σ_steps τ_t over k + (last offset) steps.

use super::Rank;
use super::run::{End, Flow, Runner};

/// A flow of the pipeline: moves `scale` × each chunk from `src` to `dst`, `offset` steps
/// behind the first stage.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stage {
    pub offset: u64,
    pub src: End,
    pub dst: End,
    pub scale: f64,
    /// Which of several concurrent chains (channels) it belongs to: each chain pays its own
    /// stages' α, the call the slowest chain's.
    pub chain: u32,
}

impl Stage {
    pub fn new(offset: u64, src: Rank, dst: Rank) -> Stage {
        Stage {
            offset,
            src: End::Rank(src),
            dst: End::Rank(dst),
            scale: 1.0,
            chain: 0,
        }
    }
}

/// Run `stages` over `bytes` in chunks of `chunk` bytes, plus `base` latency.
pub(super) fn run(
    run: &mut Runner,
    stages: &[Stage],
    bytes: f64,
    chunk: f64,
    base: f64,
) -> Result<(), String> {
    let k = ((bytes / chunk).ceil() as u64).max(1);
    let (c, last) = if k == 1 {
        (bytes, bytes)
    } else {
        (chunk, bytes - (k - 1) as f64 * chunk)
    };
    // α: per chain, per distinct offset the slowest link kind of its flows; chains run at
    // once, so the call pays the slowest chain's.
    let mut offsets: Vec<u64> = stages.iter().map(|s| s.offset).collect();
    offsets.sort_unstable();
    offsets.dedup();
    let mut chains: Vec<u32> = stages.iter().map(|s| s.chain).collect();
    chains.sort_unstable();
    chains.dedup();
    let mut slowest: f64 = 0.0;
    let mut flows = Vec::with_capacity(stages.len());
    for &ch in &chains {
        let mut latency = 0.0;
        for &o in &offsets {
            flows.clear();
            flows.extend(
                stages
                    .iter()
                    .filter(|s| s.offset == o && s.chain == ch)
                    .map(|s| Flow {
                        src: s.src,
                        dst: s.dst,
                        bytes: 0.0,
                    }),
            );
            if !flows.is_empty() {
                latency += run.alpha(&flows)?;
            }
        }
        slowest = slowest.max(latency);
    }
    run.secs += base + slowest;
    // The active set and chunk sizes change only where a stage starts, sends its last chunk,
    // or stops: between those breakpoints every step is the same pattern.
    let mut cuts: Vec<u64> = offsets
        .iter()
        .flat_map(|&o| [o, o + k - 1, o + k])
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    for w in cuts.windows(2) {
        let (t, next) = (w[0], w[1]);
        flows.clear();
        flows.extend(
            stages
                .iter()
                .filter(|s| s.offset <= t && t < s.offset + k)
                .map(|s| Flow {
                    src: s.src,
                    dst: s.dst,
                    bytes: s.scale * if t - s.offset == k - 1 { last } else { c },
                }),
        );
        if !flows.is_empty() {
            run.transfer(&flows, next - t)?;
        }
    }
    Ok(())
}

/// Broadcast as NCCL runs it: a chain from the root through the ranks in ring order, hop j
/// forwarding chunk i in step i + j, on each of the ring's channels
/// ([`super::ring::channels`]: across nodes one per NIC pair) with its share of the bytes,
/// as NCCL splits a collective over its channels. Uncontended, one channel:
/// (p−1)·α + (k + p − 2)·c/β.
pub(super) fn broadcast(
    run: &mut Runner,
    ranks: &[Rank],
    root: usize,
    bytes: f64,
) -> Result<(), String> {
    let p = ranks.len();
    let orders = super::ring::channels(run.graph, ranks);
    let from = ranks[root % p];
    let mut stages = Vec::with_capacity(orders.len() * p.saturating_sub(1));
    for (c, order) in orders.iter().enumerate() {
        let start = order.iter().position(|&r| r == from).unwrap_or(0);
        let at = |j: usize| order[(start + j) % p];
        stages.extend((0..p - 1).map(|j| Stage {
            chain: c as u32,
            ..Stage::new(j as u64, at(j), at(j + 1))
        }));
    }
    let chunk = run.pipeline_chunk();
    self::run(run, &stages, bytes / orders.len().max(1) as f64, chunk, 0.0)
}
