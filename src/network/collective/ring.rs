//! Step-synchronous algorithms: rings, NCCL-style hierarchical rings, pairwise all-to-all and
//! send/recv. Each step is every rank sending to a fixed peer at once; a step pays its α.

use super::run::{Flow, Runner};
use super::{Op, Rank};

/// Every rank of `ranks` sends `bytes` to the rank `shift` places after it.
fn shifted(ranks: &[Rank], shift: usize, bytes: f64, out: &mut Vec<Flow>) {
    let p = ranks.len();
    out.extend((0..p).map(|i| Flow::new(ranks[i], ranks[(i + shift) % p], bytes)));
}

/// Steps a ring of p ranks takes for `op`, each moving n/p to the successor: the classic
/// 2(p−1) for allreduce (reduce-scatter then allgather), p − 1 for either half.
fn ring_steps(op: Op, p: usize) -> u64 {
    let s = p as u64 - 1;
    if op == Op::AllReduce { 2 * s } else { s }
}

/// Ring allreduce, allgather or reduce-scatter over `ranks` in the given order.
pub(super) fn ring(run: &mut Runner, op: Op, ranks: &[Rank], bytes: f64) -> Result<(), String> {
    let p = ranks.len();
    let mut flows = Vec::with_capacity(p);
    shifted(ranks, 1, bytes / p as f64, &mut flows);
    // All steps send the same chunk size to the same peer: one pattern, repeated.
    run.step(&flows, ring_steps(op, p))
}

/// Pairwise all-to-all: in step s every rank sends n/p to the rank s places after it.
pub(super) fn all_to_all(run: &mut Runner, ranks: &[Rank], bytes: f64) -> Result<(), String> {
    let p = ranks.len();
    let mut flows = Vec::with_capacity(p);
    for s in 1..p {
        flows.clear();
        shifted(ranks, s, bytes / p as f64, &mut flows);
        run.step(&flows, 1)?;
    }
    Ok(())
}

/// nccl-tests' sendrecv: one step, every rank sending n to the next.
pub(super) fn send_recv(run: &mut Runner, ranks: &[Rank], bytes: f64) -> Result<(), String> {
    let mut flows = Vec::with_capacity(ranks.len());
    shifted(ranks, 1, bytes, &mut flows);
    run.step(&flows, 1)
}

/// Hierarchical (NCCL's rings over rails): m nodes of g ranks each. Allreduce: ring
/// reduce-scatter inside every node at once (n/g per step), then g parallel rings across the
/// nodes, one per local rank, each allreducing its n/g (n/(g·m) per step), then ring allgather
/// inside the nodes. Reduce-scatter is the first two phases, allgather the last two (inter-node
/// allgather of n/g first).
pub(super) fn hierarchical(
    run: &mut Runner,
    op: Op,
    ranks: &[Rank],
    bytes: f64,
) -> Result<(), String> {
    // Scale-up domains (a node, or a whole slice: its chips share one ICI torus, so XLA reduces
    // there before crossing the data-centre network) in order of first appearance, ranks in
    // the given order within each.
    let domain = |r: Rank| run.graph.scale_up_domain(r.0);
    let mut nodes: Vec<Vec<Rank>> = Vec::new();
    for &r in ranks {
        match nodes.iter_mut().find(|n| domain(n[0]) == domain(r)) {
            Some(n) => n.push(r),
            None => nodes.push(vec![r]),
        }
    }
    let g = nodes[0].len();
    if let Some(n) = nodes.iter().find(|n| n.len() != g) {
        return Err(format!(
            "hierarchical needs the same number of ranks on every node (or slice): node {} has {g}, node {} has {}",
            nodes[0][0].0,
            n[0].0,
            n.len()
        ));
    }
    let m = nodes.len();
    let mut intra = Vec::with_capacity(ranks.len());
    for n in &nodes {
        shifted(n, 1, bytes / g as f64, &mut intra);
    }
    let mut inter = Vec::with_capacity(ranks.len());
    let mut rail = Vec::with_capacity(m);
    for l in 0..g {
        rail.clear();
        rail.extend(nodes.iter().map(|n| n[l]));
        shifted(&rail, 1, bytes / (g * m) as f64, &mut inter);
    }
    let (intra_steps, inter_steps) = (g as u64 - 1, ring_steps(op, m));
    match op {
        Op::AllReduce => {
            run.step(&intra, intra_steps)?;
            run.step(&inter, inter_steps)?;
            run.step(&intra, intra_steps)
        }
        Op::ReduceScatter => {
            run.step(&intra, intra_steps)?;
            run.step(&inter, inter_steps)
        }
        Op::AllGather => {
            run.step(&inter, inter_steps)?;
            run.step(&intra, intra_steps)
        }
        _ => Err(format!("{} has no hierarchical algorithm", op.name())),
    }
}
