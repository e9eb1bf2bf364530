//! Whether a placement group's bundles can be given nodes at all: the question Ray's greedy
//! strategies do not ask.
//!
//! Ray's node-level bundle policies (`BundleStrictSpreadSchedulingPolicy`,
//! `BundleSpreadSchedulingPolicy`, `BundlePackSchedulingPolicy` in ray-project/ray
//! `src/ray/raylet/scheduling/policy/bundle_scheduling_policy.cc`) sort the bundles
//! (`SortRequiredResources`: more GPU first, then custom resources, object store, memory, CPU)
//! and give each, in that order, the best-scoring node left (`GetBestNode`); when the greedy
//! runs out of nodes they return `SchedulingResult::Failed()`, "can't meet the scheduling
//! requirements temporarily", and the GCS retries the group. They return `Infeasible()` only
//! for what no assignment could fix: no candidate node, more STRICT_SPREAD bundles than
//! candidates, or a bundle that no candidate could ever hold with its label selector
//! (`IsRequestFeasible`, checked bundle by bundle). A greedy that fails is therefore never a
//! verdict of infeasibility in Ray. Where Ray itself assigns (its hierarchical policy, bundle
//! groups to the domains of a label under STRICT_SPREAD, `HierarchicalBundleSchedulingPolicy::
//! Schedule` in the same file) it runs a bipartite matching by augmenting paths, the groups
//! with the fewest feasible domains first, and calls the request infeasible only when no
//! matching exists on the domains' totals.
//!
//! This module answers "is there any assignment": for STRICT_SPREAD (one node per bundle) by
//! that matching ([`matching`], Kuhn's augmenting paths, exact); for PACK and SPREAD (bundles
//! may share a node) by a depth-first search over bundles and nodes ([`assignable`], exact,
//! with nodes of one type that no bundle of the group has touched taken as one on an empty
//! view). Both count their steps against a budget, so a huge group can never stall a run; a
//! search cut short answers "unknown", which callers take as "not proven impossible".

use super::NodeId;
use super::resources::Request;
use super::view::{Overlay, View};

/// Steps (edge or fit checks) one question may take before its answer is "unknown".
pub(super) const BUDGET: u64 = 2_000_000;

/// The answer of [`matching`].
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Match {
    /// The node of each bundle, in the order of the bundles asked about.
    Perfect(Vec<NodeId>),
    /// No matching gives every bundle its own node: these bundles (Hall's witness) can go only
    /// to these nodes, fewer than they are.
    Short {
        bundles: Vec<usize>,
        nodes: Vec<NodeId>,
    },
    /// The budget ran out first.
    Unknown,
}

/// A node of its own for each of the bundles `js` among `nodes` (distinct), where `edge(j, n)`
/// says bundle `j` may go to node `n`: Kuhn's augmenting paths, the bundles with the fewest
/// nodes first (ties in the order given, nodes in the order given), as Ray's hierarchical
/// policy orders its groups. Deterministic.
pub(super) fn matching(
    js: &[usize],
    nodes: &[NodeId],
    edge: &dyn Fn(usize, NodeId) -> bool,
    budget: &mut u64,
) -> Match {
    let mut adj: Vec<Vec<usize>> = Vec::with_capacity(js.len());
    for &j in js {
        let mut a = Vec::new();
        for (p, &n) in nodes.iter().enumerate() {
            if *budget == 0 {
                return Match::Unknown;
            }
            *budget -= 1;
            if edge(j, n) {
                a.push(p);
            }
        }
        adj.push(a);
    }
    let mut order: Vec<usize> = (0..js.len()).collect();
    order.sort_by_key(|&i| adj[i].len());
    let mut node_of: Vec<Option<usize>> = vec![None; js.len()];
    let mut owner: Vec<Option<usize>> = vec![None; nodes.len()];
    let mut visited = vec![false; nodes.len()];
    for &u in &order {
        visited.iter_mut().for_each(|x| *x = false);
        // The current alternating path: (bundle, next edge to try).
        let mut path: Vec<(usize, usize)> = vec![(u, 0)];
        let mut reached = vec![u];
        let mut free = None;
        while let Some(top) = path.last_mut() {
            let (x, ei) = *top;
            if ei == adj[x].len() {
                path.pop();
                continue;
            }
            top.1 += 1;
            if *budget == 0 {
                return Match::Unknown;
            }
            *budget -= 1;
            let p = adj[x][ei];
            if visited[p] {
                continue;
            }
            visited[p] = true;
            match owner[p] {
                None => {
                    free = Some(p);
                    break;
                }
                Some(y) => {
                    reached.push(y);
                    path.push((y, 0));
                }
            }
        }
        let Some(mut take) = free else {
            let mut bundles: Vec<usize> = reached.iter().map(|&i| js[i]).collect();
            bundles.sort_unstable();
            let mut ns: Vec<NodeId> = (0..nodes.len())
                .filter(|&p| visited[p])
                .map(|p| nodes[p])
                .collect();
            ns.sort_unstable();
            return Match::Short { bundles, nodes: ns };
        };
        // Each bundle on the path takes the node the one above it held; the top the free one.
        for &(x, _) in path.iter().rev() {
            let old = node_of[x];
            node_of[x] = Some(take);
            owner[take] = Some(x);
            match old {
                Some(o) => take = o,
                None => break,
            }
        }
    }
    Match::Perfect(node_of.iter().map(|p| nodes[p.expect("matched")]).collect())
}

/// One level of [`assignable`]'s search.
struct Frame {
    /// Next position in `nodes` to try.
    next: usize,
    /// The node this level's bundle holds, with what the view held there before.
    held: Option<(NodeId, Option<Overlay>)>,
    /// Untouched nodes already tried at this level (for the symmetry cut).
    tried: Vec<NodeId>,
}

/// Whether bundles `js` can each be put on one of `nodes` (several on one node where they fit
/// together) in view `v`, `ok(j, n)` saying bundle `j`'s label selector passes node `n`. The
/// bundles are taken in the order given; the view is left as it was found. `None`: the budget
/// ran out first.
pub(super) fn assignable(
    v: &mut View,
    bundles: &[Request],
    js: &[usize],
    nodes: &[NodeId],
    ok: &dyn Fn(usize, NodeId) -> bool,
    budget: &mut u64,
) -> Option<bool> {
    let mut frames = vec![Frame {
        next: 0,
        held: None,
        tried: Vec::new(),
    }];
    let result = loop {
        let level = frames.len() - 1;
        if level == js.len() {
            break Some(true);
        }
        let j = js[level];
        let f = frames.last_mut().expect("a frame");
        if let Some((n, saved)) = f.held.take() {
            v.restore(n, saved);
        }
        let mut pick = None;
        while f.next < nodes.len() {
            let n = nodes[f.next];
            f.next += 1;
            if *budget == 0 {
                break;
            }
            *budget -= 1;
            if !ok(j, n) || !v.fits(n, &bundles[j]) {
                continue;
            }
            // On the empty cluster an untouched node of the same type that every remaining
            // bundle's selector treats alike was already tried at this level: same outcome.
            if v.empty && !v.touched(n) {
                let same = |m: NodeId| {
                    v.st.nodes[m].node_type() == v.st.nodes[n].node_type()
                        && js[level..].iter().all(|&k| ok(k, m) == ok(k, n))
                };
                if f.tried.iter().any(|&m| same(m)) {
                    continue;
                }
                f.tried.push(n);
            }
            pick = Some(n);
            break;
        }
        if *budget == 0 && pick.is_none() {
            break None;
        }
        match pick {
            Some(n) => {
                let saved = v.save(n);
                v.subtract(n, &bundles[j]);
                f.held = Some((n, saved));
                frames.push(Frame {
                    next: 0,
                    held: None,
                    tried: Vec::new(),
                });
            }
            None => {
                frames.pop();
                if frames.is_empty() {
                    break Some(false);
                }
            }
        }
    };
    // Undo whatever the search still holds, deepest first.
    while let Some(mut f) = frames.pop() {
        if let Some((n, saved)) = f.held.take() {
            v.restore(n, saved);
        }
    }
    result
}

/// Whether a group's bundles (taken in `order`) could all be placed at once on the candidate
/// nodes of the alive cluster, empty.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Assignable {
    Yes,
    /// None can; for STRICT_SPREAD with the bundles (1-based in words by the caller) that
    /// can go only to fewer nodes than they are.
    No(Option<(Vec<usize>, Vec<NodeId>)>),
    /// The search ran out of budget.
    Unknown,
}

/// [`Assignable`] for a PACK, SPREAD or STRICT_SPREAD group over `cands` (STRICT_PACK, one node,
/// is decided by its summed request alone).
pub(super) fn group_assignable(
    st: &super::state::ClusterState,
    b: &super::bundle::BundleRequest,
    order: &[usize],
    cands: &[NodeId],
    ok: &dyn Fn(usize, NodeId) -> bool,
) -> Assignable {
    let mut budget = BUDGET;
    let mut v = View::new(st, true, false, b.tenant);
    if b.strategy == crate::scenario::workload::PgStrategy::StrictSpread {
        let edge = |j: usize, n: NodeId| ok(j, n) && v.fits(n, &b.bundles[j]);
        return match matching(order, cands, &edge, &mut budget) {
            Match::Perfect(_) => Assignable::Yes,
            Match::Short { bundles, nodes } => Assignable::No(Some((bundles, nodes))),
            Match::Unknown => Assignable::Unknown,
        };
    }
    match assignable(&mut v, b.bundles, order, cands, ok, &mut budget) {
        Some(true) => Assignable::Yes,
        Some(false) => Assignable::No(None),
        None => Assignable::Unknown,
    }
}

/// For a STRICT_SPREAD group over eligible `nodes` (alive, empty), the bundles that can go only
/// to fewer nodes than they are, and those nodes; `None` when every bundle can have its own.
pub(super) fn strict_spread_short(
    st: &super::state::ClusterState,
    b: &super::bundle::BundleRequest,
    nodes: &[NodeId],
) -> Option<(Vec<usize>, Vec<NodeId>)> {
    let order = super::bundle::sort_bundles(b.bundles);
    let v = View::new(st, true, false, b.tenant);
    let edge = |j: usize, n: NodeId| b.bundle_ok(st, j, n) && v.fits(n, &b.bundles[j]);
    let mut budget = BUDGET;
    match matching(&order, nodes, &edge, &mut budget) {
        Match::Short { bundles, nodes } => Some((bundles, nodes)),
        _ => None,
    }
}
