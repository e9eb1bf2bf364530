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

/// Ring allreduce, allgather or reduce-scatter over `ranks` in the given order, split over
/// NCCL-style channels ([`channels`]), each channel a ring carrying its share of the bytes.
pub(super) fn ring(run: &mut Runner, op: Op, ranks: &[Rank], bytes: f64) -> Result<(), String> {
    let p = ranks.len();
    let orders = channels(run.graph, ranks);
    let share = bytes / (p * orders.len()) as f64;
    let rings: Vec<Vec<Flow>> = orders
        .iter()
        .map(|order| {
            let mut flows = Vec::with_capacity(p);
            shifted(order, 1, share, &mut flows);
            flows
        })
        .collect();
    // All steps send the same chunk size to the same peer: one pattern, repeated. A chunk
    // crosses the network 2(nodes − 1) times in an allreduce, nodes − 1 in either half
    // (NCCL's `nInterSteps`).
    let mut nodes: Vec<usize> = ranks.iter().map(|r| r.0).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let n = nodes.len() as u64 - 1;
    let crossings = if op == Op::AllReduce { 2 * n } else { n };
    run.step_rings(&rings, ring_steps(op, p), Some(crossings))
}

/// The ring orders of a flat ring's channels. NCCL runs a ring collective over several
/// channels, each a ring on its own NICs (src/graph/search.cc builds one ring per NIC pair and
/// rail-optimized systems get one per rail), so a flat ring between nodes uses every NIC
/// near the group's devices, not one. Model: with ranks on several nodes, each node's NICs
/// nearest its ranks (one representative rank per distinct NIC) give C channels, C the fewest
/// over the nodes; channel c visits each node's ranks (in the given order, grouped by node
/// in order of first appearance) rotated to leave the node from its c-th representative, so
/// channel c crosses the network on NIC c of every node, with 1/C of the bytes. One node, or
/// one NIC per node: the single ring in the given order.
pub(super) fn channels(graph: &crate::network::Graph, ranks: &[Rank]) -> Vec<Vec<Rank>> {
    let mut nodes: Vec<Vec<Rank>> = Vec::new();
    for &r in ranks {
        match nodes.iter_mut().find(|n| n[0].0 == r.0) {
            Some(n) => n.push(r),
            None => nodes.push(vec![r]),
        }
    }
    if nodes.len() < 2 {
        return mesh_channels(graph, ranks).unwrap_or_else(|| vec![ranks.to_vec()]);
    }
    let reps: Vec<Vec<usize>> = nodes
        .iter()
        .map(|local| {
            let mut seen = Vec::new();
            let mut out = Vec::new();
            for (i, r) in local.iter().enumerate() {
                let nic = graph.nic_of(*r);
                if nic.is_some() && !seen.contains(&nic) {
                    seen.push(nic);
                    out.push(i);
                }
            }
            out
        })
        .collect();
    let c = reps.iter().map(Vec::len).min().unwrap_or(0);
    if c < 2 {
        return vec![ranks.to_vec()];
    }
    (0..c)
        .map(|ch| {
            let mut order = Vec::with_capacity(ranks.len());
            for (local, reps) in nodes.iter().zip(&reps) {
                let start = reps[ch] + 1;
                order.extend((0..local.len()).map(|k| local[(start + k) % local.len()]));
            }
            order
        })
        .collect()
}

/// The rings of a collective on one node whose devices are directly linked to each other
/// (`link mesh`, e.g. MI300X's Infinity Fabric): arc-disjoint Hamiltonian cycles of the mesh
/// ([`super::hamiltonian`]), so each ring runs on its own directed links and the rings
/// together use every link — p − 1 rings, 7 for eight devices, as RCCL's MI300X topologies run
/// rings over different permutations of the GPUs (ROCm/rccl `src/graph/rome_models.cc`).
/// Where the search finds fewer (p = 4, 6, or over [`super::hamiltonian::MAX_P`] devices),
/// one ring per stride k coprime with p (rank i sends to i + k) when that gives more. `None`
/// when any ring step lacks a direct link (an NVSwitch node: every ring shares the same
/// switch links, so one ring is the same).
fn mesh_channels(graph: &crate::network::Graph, ranks: &[Rank]) -> Option<Vec<Vec<Rank>>> {
    use crate::network::graph::Vertex;
    let p = ranks.len();
    if p < 3 {
        return None;
    }
    let dev = |r: Rank| Vertex::Device {
        node: r.0,
        device: r.1,
    };
    let direct = |order: &[Rank]| {
        (0..p).all(|i| {
            graph
                .link_between(dev(order[i]), dev(order[(i + 1) % p]))
                .is_some()
        })
    };
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let strides: Vec<Vec<usize>> = (1..p)
        .filter(|&k| gcd(k, p) == 1)
        .map(|k| (0..p).map(|i| (i * k) % p).collect())
        .collect();
    let cycles = super::hamiltonian::cycles(p);
    let pick: &[Vec<usize>] = if cycles.len() >= strides.len() {
        &cycles
    } else {
        &strides
    };
    let mut out = Vec::with_capacity(pick.len());
    for c in pick {
        let order: Vec<Rank> = c.iter().map(|&i| ranks[i]).collect();
        if !direct(&order) {
            return None;
        }
        out.push(order);
    }
    (out.len() > 1).then_some(out)
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
    let intra: Vec<Vec<Flow>> = nodes
        .iter()
        .map(|n| {
            let mut ring = Vec::with_capacity(g);
            shifted(n, 1, bytes / g as f64, &mut ring);
            ring
        })
        .collect();
    let inter: Vec<Vec<Flow>> = (0..g)
        .map(|l| {
            let rail: Vec<Rank> = nodes.iter().map(|n| n[l]).collect();
            let mut ring = Vec::with_capacity(m);
            shifted(&rail, 1, bytes / (g * m) as f64, &mut ring);
            ring
        })
        .collect();
    let (intra_steps, inter_steps) = (g as u64 - 1, ring_steps(op, m));
    match op {
        Op::AllReduce => {
            run.step_rings(&intra, intra_steps, None)?;
            run.step_rings(&inter, inter_steps, None)?;
            run.step_rings(&intra, intra_steps, None)
        }
        Op::ReduceScatter => {
            run.step_rings(&intra, intra_steps, None)?;
            run.step_rings(&inter, inter_steps, None)
        }
        Op::AllGather => {
            run.step_rings(&inter, inter_steps, None)?;
            run.step_rings(&intra, intra_steps, None)
        }
        _ => Err(format!("{} has no hierarchical algorithm", op.name())),
    }
}
