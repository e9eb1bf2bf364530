//! Collectives decomposed into flows on the link graph (issue 4, in progress): a ring
//! allreduce is 2(p − 1) steps; in each step every rank sends n/p bytes to its ring
//! successor, all p flows at once, sharing links with each other and with any other traffic.
//! A step costs the per-step latency α plus the time its slowest flow needs at max-min rates.
//! On an uncontended ring this is the closed form 2(p − 1)·α + 2(p − 1)/p · n/β.
//!
//! Bandwidths are reported as nccl-tests defines them (shared/reference/hardware-and-models.md):
//! algbw = n / t; busbw = algbw × 2(p − 1)/p for allreduce, (p − 1)/p for allgather,
//! reduce-scatter and all-to-all, 1 for broadcast.

use super::{FlowNet, Graph};

/// A rank: (node, device) in the graph's numbering.
pub type Rank = (usize, usize);

/// Seconds for a ring allreduce of `bytes` per rank over `ranks` (in ring order), each step
/// paying `alpha` seconds, on a copy of `net` (the flows already there keep competing).
pub fn ring_allreduce_secs(
    graph: &Graph,
    net: &FlowNet,
    ranks: &[Rank],
    bytes: f64,
    alpha: f64,
) -> Option<f64> {
    let p = ranks.len();
    if p < 2 {
        return Some(0.0);
    }
    let chunk = bytes / p as f64;
    let mut total = 0.0;
    for step in 0..2 * (p - 1) {
        let mut n = net.clone();
        let paths: Vec<_> = (0..p)
            .map(|i| {
                graph
                    .route(ranks[i], ranks[(i + 1) % p], (step * p + i) as u64)
                    .map(|r| (r, chunk))
            })
            .collect::<Option<_>>()?;
        let ids = n.add_batch(paths);
        // The step ends when its slowest flow does: run the flows to completion.
        let mut elapsed = 0.0;
        let mut left = ids.len();
        while left > 0 {
            let (f, dt) = n.next_completion()?;
            n.advance(dt);
            elapsed += dt;
            if ids.contains(&f) {
                left -= 1;
            }
            n.remove(f);
        }
        total += alpha + elapsed;
    }
    Some(total)
}

/// nccl-tests bus-bandwidth factor of a collective over `p` ranks.
pub fn busbw_factor(op: &str, p: usize) -> f64 {
    let p = p as f64;
    match op {
        "allreduce" => 2.0 * (p - 1.0) / p,
        "broadcast" | "reduce" => 1.0,
        _ => (p - 1.0) / p,
    }
}

/// (algbw, busbw) in bytes per second for `bytes` moved in `secs`, as nccl-tests reports them.
pub fn bandwidths(op: &str, p: usize, bytes: f64, secs: f64) -> (f64, f64) {
    let algbw = if secs > 0.0 { bytes / secs } else { 0.0 };
    (algbw, algbw * busbw_factor(op, p))
}
