//! NCCL's double binary tree allreduce (src/graph/trees.cc): two binary trees over the ranks,
//! the second the mirror of the first (p even) or the first shifted by one rank (p odd), so a
//! rank that is inner in one tree is a leaf in the other. Each tree carries half the message:
//! chunks are reduced up to the root and broadcast back down, pipelined. A rank of height h
//! (leaves 0) sends chunk i up in step i + h, as soon as its children's parts arrived; the root
//! (height H) sends it down in step i + H, a rank of depth d in step i + H + d. So the pipeline
//! has 2H stages and k + 2H − 1 steps, k = ⌈(n/2)/c⌉.

use super::Rank;
use super::pipeline::{self, Stage};
use super::run::Runner;

/// Parent of `r` in NCCL's binary tree rooted at 0 (ncclGetBtree): clear the lowest set bit
/// and set the next one up, or only clear it if that leaves the ranks.
fn btree_parent(r: usize, p: usize) -> Option<usize> {
    if r == 0 {
        return None;
    }
    let bit = r & r.wrapping_neg();
    let up = (r ^ bit) | (bit << 1);
    Some(if up >= p { r ^ bit } else { up })
}

/// Parents of both trees of ncclGetDtree, by rank index.
fn dtree(p: usize) -> [Vec<Option<usize>>; 2] {
    let first = (0..p).map(|r| btree_parent(r, p)).collect();
    let second = (0..p)
        .map(|r| {
            if p % 2 == 1 {
                btree_parent((r + p - 1) % p, p).map(|u| (u + 1) % p)
            } else {
                btree_parent(p - 1 - r, p).map(|u| p - 1 - u)
            }
        })
        .collect();
    [first, second]
}

/// NCCL's two trees over ranks in `order` (grouped by node, in order of first appearance):
/// within each node a chain, the first tree's in the order's local sequence and the second's
/// reversed (so the two load a node's links both ways, as the mirrored trees between nodes
/// do), and the chain's head under its node's parent's head in [`dtree`] over the nodes
/// (`src/graph/connect.cc`, `connectTrees`: `ncclGetDtree(nNodes, ...)`, the intra-node part
/// a chain). NCCL's latency for it, 2((ppn − 1) intra hops + log2(nodes) network hops),
/// counts these levels.
fn node_trees(order: &[Rank]) -> [Vec<Option<usize>>; 2] {
    let mut nodes: Vec<(usize, Vec<usize>)> = Vec::new(); // (node, its indices in order)
    for (i, r) in order.iter().enumerate() {
        match nodes.iter_mut().find(|(n, _)| *n == r.0) {
            Some((_, local)) => local.push(i),
            None => nodes.push((r.0, vec![i])),
        }
    }
    let between = dtree(nodes.len());
    [0, 1].map(|t| {
        let mut parent = vec![None; order.len()];
        let mut heads = Vec::with_capacity(nodes.len());
        for (_, local) in &nodes {
            let chain: Vec<usize> = if t == 0 {
                local.clone()
            } else {
                local.iter().rev().copied().collect()
            };
            for w in chain.windows(2) {
                parent[w[1]] = Some(w[0]);
            }
            heads.push(chain[0]);
        }
        for (j, &h) in heads.iter().enumerate() {
            parent[h] = between[t][j].map(|u| heads[u]);
        }
        parent
    })
}

/// Pipeline stages of one tree given its parents: up then down along every edge.
fn stages(parent: &[Option<usize>], ranks: &[Rank], out: &mut Vec<Stage>) {
    let p = parent.len();
    // Depth by walking up (a binary tree of p ranks is ⌈log2 p⌉ + 1 deep).
    let depth: Vec<u64> = (0..p)
        .map(|mut r| {
            let mut d = 0;
            while let Some(u) = parent[r] {
                r = u;
                d += 1;
            }
            d
        })
        .collect();
    // Height: deepest ranks first, each raising its parent.
    let mut order: Vec<usize> = (0..p).collect();
    order.sort_unstable_by_key(|r| std::cmp::Reverse(depth[*r]));
    let mut height = vec![0u64; p];
    for &r in &order {
        if let Some(u) = parent[r] {
            height[u] = height[u].max(height[r] + 1);
        }
    }
    let root_height = height.iter().copied().max().unwrap_or(0);
    for v in 0..p {
        if let Some(u) = parent[v] {
            out.push(Stage::new(height[v], ranks[v], ranks[u]));
            out.push(Stage::new(root_height + depth[u], ranks[u], ranks[v]));
        }
    }
}

/// Double binary tree allreduce over `ranks` ([`node_trees`]: chains in the nodes, a double
/// binary tree between them; positions are indices in `ranks`). Across
/// nodes NCCL runs its trees on every channel, each channel leaving a node through its own NIC
/// (`src/graph/search.cc`, as for rings): the trees are laid over each of
/// [`super::ring::channels`]' orders, each carrying its share of the bytes. On one node, one
/// order.
pub(super) fn allreduce(run: &mut Runner, ranks: &[Rank], bytes: f64) -> Result<(), String> {
    let nodes = ranks.iter().any(|r| r.0 != ranks[0].0);
    let orders = if nodes {
        super::ring::channels(run.graph, ranks)
    } else {
        vec![ranks.to_vec()]
    };
    let share = 1.0 / orders.len() as f64;
    let mut all = Vec::with_capacity(4 * ranks.len() * orders.len());
    for order in &orders {
        for parent in node_trees(order) {
            stages(&parent, order, &mut all);
        }
    }
    for s in &mut all {
        s.scale *= share;
    }
    // Both trees run at once on their halves: one pipeline over n/2 carries both.
    let chunk = run.pipeline_chunk();
    pipeline::run(run, &all, bytes / 2.0, chunk, 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_are_chains_in_nodes_under_a_tree_between_them() {
        // 2 nodes × 3 ranks, order (0,0) (0,1) (0,2) (1,0) (1,1) (1,2).
        let order: Vec<Rank> = (0..2).flat_map(|n| (0..3).map(move |d| (n, d))).collect();
        let [a, b] = node_trees(&order);
        // A: chains 2 → 1 → 0 and 5 → 4 → 3; node 1's head 3 under node 0's head 0 (root).
        assert_eq!(a, vec![None, Some(0), Some(1), Some(0), Some(3), Some(4)]);
        // B: the chains reversed (heads 2 and 5), node 0's head under node 1's (the mirror).
        assert_eq!(b, vec![Some(1), Some(2), Some(5), Some(4), Some(5), None]);
        // One node: both are its chain, one each way.
        let [a, b] = node_trees(&order[..3]);
        assert_eq!(a, vec![None, Some(0), Some(1)]);
        assert_eq!(b, vec![Some(1), Some(2), None]);
    }

    #[test]
    fn trees_match_ncclgetdtree() {
        // trees.cc's pictures: 14 ranks (0 → 8 → 4, 12; 13 under 12) and the mirror for 12.
        let [a, _] = dtree(14);
        assert_eq!(a[8], Some(0));
        assert_eq!(a[12], Some(8));
        assert_eq!(a[13], Some(12));
        assert_eq!(a[10], Some(12));
        assert_eq!(a[5], Some(6));
        let [_, b] = dtree(12);
        // Mirror of 12: root 11, 3 → 11, 7 → 3, 1 → 3, 0 → 1.
        assert_eq!(b[11], None);
        assert_eq!(b[3], Some(11));
        assert_eq!(b[7], Some(3));
        assert_eq!(b[0], Some(1));
        // 13 ranks (odd): the first tree shifted by one, root 1; 8 → 0 becomes 9 → 1, 12 → 8
        // becomes 0 → 9.
        let [_, c] = dtree(13);
        assert_eq!(c[1], None);
        assert_eq!(c[9], Some(1));
        assert_eq!(c[0], Some(9));
    }
}
