//! In-switch reduction: the switch adds up what the ranks send and multicasts the result.
//!
//! NVLS (ranks on one node, through its NVSwitch), as NCCL implements it: a reduce-scatter in
//! the switch (each rank's multimem load pulls its n/p slice reduced from every rank, so each
//! rank sends n up and receives n/p) then a multicast allgather (each rank stores its n/p once,
//! the switch delivers n to every rank). Per chunk: stage 0 sends c up and c/p down, stage 1
//! c/p up and c down, overlapped across chunks; uncontended
//! 25 µs + 2α + (n + n/p + c − c/p)/β. Under NCCL's model (NVIDIA parts) the chunk is what
//! NCCL moves per loop, channels × ranks × its per-size NVLS chunk ([`tuning::nvls_chunk`]),
//! and each chunk costs [`tuning::NVLS_CHUNK_OVERHEAD`] beside its bytes: the flows are
//! stretched by 1 + overhead / chunk. This is why NVLS climbs to its plateau slowly: 32 KiB
//! chunks below 64 MiB, 64 KiB below 1 GiB, 128 KiB above (nccl-tests shows the step at 1 GiB).
//!
//! SHARP-style (ranks on several nodes under one leaf switch): each rank streams n up to the
//! leaf, which reduces and multicasts n back; stage 0 up, stage 1 down; uncontended
//! 2α + (n + c)/β. No base latency: the reference gives none for it. Only an InfiniBand leaf
//! reduces (SHARP runs on NVIDIA Quantum InfiniBand switches, docs.nvidia.com/networking/
//! display/SHARPv360): ranks whose NICs plug into Ethernet switches (RoCE, Ethernet, EFA)
//! are refused.

use super::super::{Graph, LinkId, Vertex};
use super::pipeline::{self, Stage};
use super::run::{End, Runner};
use super::{NVLS_BASE, Rank, tuning};

/// A rank's path up to the reducing switch and back down.
type UpDown = (Vec<LinkId>, Vec<LinkId>);

pub(super) fn allreduce(
    run: &mut Runner,
    graph: &Graph,
    ranks: &[Rank],
    bytes: f64,
) -> Result<(), String> {
    let p = ranks.len() as f64;
    // One NVSwitch (a node's, or a rack-scale domain's): the switch reduces; else SHARP in
    // the leaf.
    let one_node = ranks
        .iter()
        .all(|r| graph.nvswitch(r.0) == graph.nvswitch(ranks[0].0));
    let paths = if one_node {
        ranks
            .iter()
            .map(|r| nvswitch_paths(graph, *r))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        leaf_paths(graph, ranks)?
    };
    for (&r, (up, down)) in ranks.iter().zip(paths) {
        run.set_path(End::Rank(r), End::Switch(0), up);
        run.set_path(End::Switch(0), End::Rank(r), down);
    }
    let stage = |offset: u64, up: bool, r: Rank, scale: f64| {
        let (src, dst) = if up {
            (End::Rank(r), End::Switch(0))
        } else {
            (End::Switch(0), End::Rank(r))
        };
        Stage {
            offset,
            src,
            dst,
            scale,
            chain: 0,
        }
    };
    let mut stages = Vec::with_capacity(4 * ranks.len());
    for &r in ranks {
        if one_node {
            stages.extend([
                stage(0, true, r, 1.0),
                stage(0, false, r, 1.0 / p),
                stage(1, true, r, 1.0 / p),
                stage(1, false, r, 1.0),
            ]);
        } else {
            stages.extend([stage(0, true, r, 1.0), stage(1, false, r, 1.0)]);
        }
    }
    // A measured call's α already holds every fixed cost.
    let base = if one_node && run.opts.measured.is_none() {
        NVLS_BASE
    } else {
        0.0
    };
    // NCCL's loop (chunk per channel and head, all channels and heads at once) and the cost
    // of each chunk, on an NVSwitch that reduces under NCCL's model. A measured call's
    // stretch was computed over this same decomposition, so the factor cancels there.
    let nvls = graph.nccl_comm(ranks).filter(|c| one_node && c.nvls);
    let chunk = match nvls {
        Some(c) => {
            let per = tuning::nvls_chunk(c.arch, ranks.len(), 1, bytes);
            run.protocol_stretch *= 1.0 + tuning::NVLS_CHUNK_OVERHEAD / per;
            tuning::nvls_channels(c.arch, 1) * p * per
        }
        None => run.opts.chunk,
    };
    pipeline::run(run, &stages, bytes, chunk, base)
}

/// NCCL's NVLS_TREE over ranks on several NVSwitch nodes, the same number on each: per
/// chunk, each node reduces in its switch (every rank sends c up and takes its c/q slice of
/// the node's sum down, q ranks a node), the nodes' slices go up a binary tree of nodes
/// (node k's rank i to node (k − 1)/2's rank i, over their NICs; the deepest level first)
/// and the result back down it, then each rank sends its c/q up and the switch multicasts
/// c to every rank. Pipelined over chunks like [`allreduce`]; its base is NCCL's latency for
/// it ([`tuning::nvls_tree_base`]) and its chunks NVLS's, with their per-chunk cost.
/// Assumed: a binary tree of nodes in the order their first ranks come (NCCL balances two
/// trees, which this does not model; with two nodes they are the same exchange).
pub(super) fn nvls_tree(
    run: &mut Runner,
    graph: &Graph,
    ranks: &[Rank],
    bytes: f64,
) -> Result<(), String> {
    let mut groups: Vec<(Vertex, Vec<Rank>)> = Vec::new();
    for &r in ranks {
        let sw = graph.nvswitch(r.0);
        match groups.iter_mut().find(|(s, _)| *s == sw) {
            Some((_, g)) => g.push(r),
            None => groups.push((sw, vec![r])),
        }
    }
    if groups.len() < 2 {
        return Err(
            "an NVLS tree needs ranks on two or more NVSwitch nodes (on one, `nvls`)".into(),
        );
    }
    let q = groups[0].1.len();
    if q < 2 || groups.iter().any(|(_, g)| g.len() != q) {
        return Err(
            "an NVLS tree needs the same number of ranks, at least two, on each node".into(),
        );
    }
    for (k, (_, g)) in groups.iter().enumerate() {
        for &r in g {
            let (up, down) = nvswitch_paths(graph, r)?;
            run.set_path(End::Rank(r), End::Switch(k), up);
            run.set_path(End::Switch(k), End::Rank(r), down);
        }
    }
    let depth = |k: usize| (usize::BITS - (k + 1).leading_zeros() - 1) as u64;
    let deepest = depth(groups.len() - 1);
    let slice = 1.0 / q as f64;
    let flow = |offset, src, dst, scale| Stage {
        offset,
        src,
        dst,
        scale,
        chain: 0,
    };
    let mut stages = Vec::new();
    for (k, (_, g)) in groups.iter().enumerate() {
        for (i, &r) in g.iter().enumerate() {
            stages.push(flow(0, End::Rank(r), End::Switch(k), 1.0));
            stages.push(flow(0, End::Switch(k), End::Rank(r), slice));
            if k > 0 {
                let parent = groups[(k - 1) / 2].1[i];
                let d = depth(k);
                stages.push(flow(
                    1 + deepest - d,
                    End::Rank(r),
                    End::Rank(parent),
                    slice,
                ));
                stages.push(flow(deepest + d, End::Rank(parent), End::Rank(r), slice));
            }
            stages.push(flow(1 + 2 * deepest, End::Rank(r), End::Switch(k), slice));
            stages.push(flow(1 + 2 * deepest, End::Switch(k), End::Rank(r), 1.0));
        }
    }
    let base = if run.opts.measured.is_none() {
        tuning::nvls_tree_base(groups.len())
    } else {
        0.0
    };
    let chunk = match graph.nccl_comm(ranks).filter(|c| c.nvls_tree) {
        Some(c) => {
            let per = tuning::nvls_chunk(c.arch, q, groups.len(), bytes);
            run.protocol_stretch *= 1.0 + tuning::NVLS_CHUNK_OVERHEAD / per;
            tuning::nvls_channels(c.arch, groups.len()) * q as f64 * per
        }
        None => run.opts.chunk,
    };
    pipeline::run(run, &stages, bytes, chunk, base)
}

fn nvswitch_paths(graph: &Graph, (node, device): Rank) -> Result<UpDown, String> {
    let (d, s) = (Vertex::Device { node, device }, graph.nvswitch(node));
    match (graph.link_between(d, s), graph.link_between(s, d)) {
        (Some(up), Some(down)) => Ok((vec![up], vec![down])),
        _ => Err(format!(
            "in-switch reduction on one node needs an NVSwitch: device {device} of node {node} has no link to one"
        )),
    }
}

/// Every rank's route up to its leaf switch and back: the graph's route to a rank of another
/// node, cut at the leaf. All must reach the same leaf (SHARP reduces in one switch).
fn leaf_paths(graph: &Graph, ranks: &[Rank]) -> Result<Vec<UpDown>, String> {
    let is_leaf = |v: Vertex| matches!(v, Vertex::Leaf { .. } | Vertex::Fabric { .. });
    let mut first: Option<(Vertex, Rank)> = None;
    let mut paths = Vec::with_capacity(ranks.len());
    for &r in ranks {
        let Some(&q) = ranks.iter().find(|q| q.0 != r.0) else {
            return Err("in-switch reduction across nodes needs ranks on several nodes".into());
        };
        let no_route = || format!("no route between ranks {r:?} and {q:?}");
        let out = graph.route(r, q, 0).ok_or_else(no_route)?;
        let back = graph.route(q, r, 0).ok_or_else(no_route)?;
        let up_end = out.iter().position(|l| is_leaf(graph.ends[*l].1));
        let down_start = back.iter().rposition(|l| is_leaf(graph.ends[*l].0));
        let (Some(u), Some(d)) = (up_end, down_start) else {
            return Err(format!("rank {r:?} reaches no leaf switch"));
        };
        let (nic, leaf) = graph.ends[out[u]];
        if graph.nic_wire(nic) == Some(crate::scenario::topology::Wire::Ethernet) {
            return Err(format!(
                "in-switch reduction across nodes (SHARP) runs in InfiniBand switches: rank {r:?} reaches its leaf through an Ethernet NIC (RoCE, Ethernet or EFA)"
            ));
        }
        match first {
            None => first = Some((leaf, r)),
            Some((l, r0)) if l != leaf => {
                return Err(format!(
                    "in-switch reduction across nodes needs every rank under one leaf switch (SHARP in the leaf): rank {r0:?} is under {l:?}, rank {r:?} under {leaf:?}"
                ));
            }
            _ => {}
        }
        paths.push((out[..=u].to_vec(), back[d..].to_vec()));
    }
    Ok(paths)
}
