//! Task and actor placement: Ray's DEFAULT (hybrid) policy and the dispatch to its SPREAD and
//! NodeAffinity policies (`spread_affinity.rs`) and Orrery's topology-aware one
//! (`topology.rs`); Ray's fallback label selectors are `fallback.rs`, over [`by_strategy`] and
//! [`settle`].

use super::explain::{Explain, Why};
use super::resources::{GPU, Request};
use super::state::ClusterState;
use super::topology::topology_aware_why;
use super::{NodeId, Policy};
use crate::scenario::workload::{LabelConstraint, Strategy};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// `scheduler_spread_threshold` (`src/ray/common/ray_config_def.h`).
pub const SPREAD_THRESHOLD: f32 = 0.5;
/// `scheduler_top_k_fraction`.
pub const TOP_K_FRACTION: f32 = 0.2;
/// `scheduler_top_k_absolute`.
pub const TOP_K_ABSOLUTE: usize = 1;

thread_local! {
    /// Whether the hybrid policy walks the ordered index (default) or scans every node; the
    /// scan is the reference the index is tested against (`tests/all/placement.rs`).
    pub static USE_ORDER_INDEX: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}
/// `scheduler_avoid_gpu_nodes`.
pub const AVOID_GPU_NODES: bool = true;

/// One task or actor to place.
#[derive(Clone, Copy)]
pub struct TaskRequest<'a> {
    pub request: &'a Request,
    /// Default / Spread / NodeAffinity{node name, soft}.
    pub strategy: &'a Strategy,
    pub label_selector: &'a [LabelConstraint],
    /// The submitter's (owner's) node; the driver's node is [`ClusterState::head`].
    pub preferred: NodeId,
    pub tenant: Option<usize>,
    /// Workload policy used for `Strategy::Default`: RayDefault = Ray's DEFAULT hybrid,
    /// Spread = Ray's SPREAD, TopologyAware = Orrery's (see [`place_task`]).
    pub policy: Policy,
}

/// Where a task goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Resources are available there now.
    Run(NodeId),
    /// Feasible but busy: wait at that node (Ray picks a feasible-unavailable node when none
    /// is available; the submitter's node when it is feasible). Ray re-runs placement for
    /// waiting leases on every resource change, so callers should place queued work again
    /// when resources free up anywhere.
    Queue(NodeId),
    /// No alive node could ever hold it (or hard affinity to a dead or infeasible node).
    Infeasible,
}

impl Decision {
    pub fn node(&self) -> Option<NodeId> {
        match self {
            Decision::Run(n) | Decision::Queue(n) => Some(*n),
            Decision::Infeasible => None,
        }
    }
}

/// Ray's `NodeFilter` (`hybrid_scheduling_policy.h`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum NodeFilter {
    Any,
    NonGpu,
}

/// Static checks: alive, label selector, tenant `only_nodes`, resources could ever fit. These
/// make up feasibility: Ray checks labels in both `IsFeasible` and `IsAvailable`
/// (`cluster_resource_data.cc`), and a tenant's `only_nodes` is a label selector too.
#[inline]
pub(super) fn candidate(st: &ClusterState, n: NodeId, t: &TaskRequest) -> bool {
    let node = &st.nodes[n];
    node.alive()
        && st.is_feasible(n, t.request)
        && t.label_selector.iter().all(|c| c.matches(node.labels()))
        && st.tenant_static_ok(n, t.tenant)
}

/// Available now: resources fit (per instance) and no tenant it must not share a node with
/// has work there (a dynamic rule, so such a node is feasible but unavailable).
#[inline]
pub(super) fn available(st: &ClusterState, n: NodeId, t: &TaskRequest) -> bool {
    st.is_available(n, t.request) && st.tenant_conflict(n, t.tenant).is_none()
}

/// Ray `ComputeNodeScoreImpl` (`hybrid_scheduling_policy.cc`): critical utilization, counted
/// as 0 below the spread threshold.
#[inline]
pub fn hybrid_score(st: &ClusterState, n: NodeId, threshold: f32) -> f32 {
    let u = st.nodes[n].critical_utilization();
    if u < threshold { 0.0 } else { u }
}

/// Place a task or actor.
///
/// * `Strategy::NodeAffinity` → [`node_affinity`] (Ray `node_affinity_scheduling_policy.cc`);
/// * `Strategy::Spread`, or `Strategy::Default` under `Policy::Spread` → [`spread`]
///   (Ray `spread_scheduling_policy.cc`);
/// * `Strategy::Default` under `Policy::RayDefault` → [`hybrid`] (Ray
///   `hybrid_scheduling_policy.cc`);
/// * `Strategy::Default` under `Policy::TopologyAware` → [`super::topology::topology_aware`]
///   (Orrery's).
///
/// Label selectors and tenant rules apply under every strategy. Deterministic given `rng`.
///
/// Tenant quotas (Orrery's, not Ray's) come last: a request larger than the tenant's quota of
/// some resource is `Infeasible` ([`ClusterState::quota_exceeded_by`]); one that would take
/// the tenant past its quota now is `Queue` at the node the policy chose (then subject to the
/// preferred-node rule below) instead of `Run` ([`ClusterState::quota_blocked_by`]), to be
/// placed again when the tenant's work frees resources.
pub fn place_task(
    state: &mut ClusterState,
    t: &TaskRequest,
    rng: &mut ChaCha8Rng,
    explain: Option<&mut Explain>,
) -> Decision {
    let mut rules = Vec::new();
    let d = decide(
        state,
        t,
        rng,
        &mut Why(explain.is_some().then_some(&mut rules)),
    );
    if let Some(e) = explain {
        super::task_explain::fill_explain(state, t, &d, e);
        e.rules = rules;
    }
    d
}

/// [`place_task`]'s decision, saying which rules decided when `why` collects them.
fn decide(
    state: &mut ClusterState,
    t: &TaskRequest,
    rng: &mut ChaCha8Rng,
    why: &mut Why,
) -> Decision {
    if let Some(q) = state.quota_exceeded_by(t.tenant, t.request) {
        why.say(|| format!("tenant quota: {q}, so it can never be placed"));
        return Decision::Infeasible;
    }
    let spread_before = state.spread_next;
    let d = by_strategy(state, t, rng, why);
    settle(state, t, d, spread_before, why)
}

/// The decision of the request's strategy alone (under the workload's policy), before the
/// tenant quota and the wait at the preferred node: what Ray's `GetBestSchedulableNode` asks
/// the scheduling policy for one label selector.
pub(super) fn by_strategy(
    state: &mut ClusterState,
    t: &TaskRequest,
    rng: &mut ChaCha8Rng,
    why: &mut Why,
) -> Decision {
    match t.strategy {
        Strategy::NodeAffinity { node, soft } => {
            super::spread_affinity::node_affinity_why(state, t, node, *soft, rng, why)
        }
        Strategy::Spread => super::spread_affinity::spread_why(state, t, rng, why),
        Strategy::Default => match t.policy {
            Policy::RayDefault => hybrid_why(state, t, SPREAD_THRESHOLD, rng, why),
            Policy::Spread => super::spread_affinity::spread_why(state, t, rng, why),
            Policy::TopologyAware => topology_aware_why(state, t, rng, why),
        },
    }
}

/// A strategy's decision `d` made final: the tenant quota (a `Run` it does not allow waits
/// instead, and SPREAD's round robin goes back to `spread_before`), then where a lease with no
/// node to run on waits.
pub(super) fn settle(
    state: &mut ClusterState,
    t: &TaskRequest,
    d: Decision,
    spread_before: usize,
    why: &mut Why,
) -> Decision {
    let d = match d {
        Decision::Run(n) if !state.quota_allows(t.tenant, t.request) => {
            // Nothing starts, so SPREAD's round robin does not move on.
            state.spread_next = spread_before;
            why.say(|| {
                format!(
                    "tenant quota: {}; it waits instead of running on {}",
                    state
                        .quota_blocked_by(t.tenant, t.request)
                        .unwrap_or_default(),
                    state.nodes[n].name()
                )
            });
            Decision::Queue(n)
        }
        d => d,
    };
    // Ray `ClusterResourceScheduler::GetBestSchedulableNode` (`cluster_resource_scheduler.cc`):
    // when the best node is feasible but unavailable, the lease waits on the local node (the
    // submitter's, our `preferred`) if that node is feasible; it is rescheduled on every
    // resource-view change (`ClusterLeaseManager::ScheduleAndGrantLeases`), so a Queue is a
    // place to wait, not a commitment: callers should place queued work again when resources
    // free up anywhere. (Hard and soft node affinity keep their target, as Ray's policy does.)
    match (&d, t.strategy) {
        (Decision::Queue(_), Strategy::Default | Strategy::Spread) => {
            let pref = if t.preferred < state.nodes.len() {
                t.preferred
            } else {
                state.head
            };
            if pref < state.nodes.len() && candidate(state, pref, t) {
                why.say(|| {
                    format!(
                        "nothing has room now: the lease waits at the preferred node {} (Ray queues at the submitter's node when it could hold the work), and is placed again when resources free",
                        state.nodes[pref].name()
                    )
                });
                Decision::Queue(pref)
            } else {
                if let Decision::Queue(n) = d {
                    why.say(|| {
                        format!(
                            "nothing has room now and the preferred node could not hold it: the lease waits at {}",
                            state.nodes[n].name()
                        )
                    });
                }
                d
            }
        }
        _ => d,
    }
}

/// Ray `HybridSchedulingPolicy::Schedule` (`hybrid_scheduling_policy.cc`).
///
/// With `scheduler_avoid_gpu_nodes`, a request without GPU first looks only at non-GPU nodes
/// and only at available ones; if none is available it falls back to all nodes. Each pass is
/// `hybrid_pass`.
pub fn hybrid(
    st: &mut ClusterState,
    t: &TaskRequest,
    threshold: f32,
    rng: &mut ChaCha8Rng,
) -> Decision {
    hybrid_why(st, t, threshold, rng, &mut Why(None))
}

pub(super) fn hybrid_why(
    st: &mut ClusterState,
    t: &TaskRequest,
    threshold: f32,
    rng: &mut ChaCha8Rng,
    why: &mut Why,
) -> Decision {
    why.say(|| {
        format!(
            "hybrid policy: each node scores its critical utilization, taken as 0 below the spread threshold {threshold}"
        )
    });
    if AVOID_GPU_NODES && t.request.get(GPU) == 0 && st.alive_non_gpu() > 0 {
        // (With no alive non-GPU node this pass finds nothing and draws nothing: skipped.)
        if let Some(d) = hybrid_pass(st, t, threshold, true, NodeFilter::NonGpu, rng, why) {
            why.say(|| "GPU avoidance (scheduler_avoid_gpu_nodes): no GPU requested, so the nodes without GPUs were tried first, and one had room".into());
            return d;
        }
        why.say(|| super::task_explain::no_room_without_gpus(st, t));
    } else if AVOID_GPU_NODES && t.request.get(GPU) == 0 {
        why.say(|| "GPU avoidance (scheduler_avoid_gpu_nodes): no GPU requested, but every alive node has GPUs, so it does not apply".into());
    } else if AVOID_GPU_NODES {
        why.say(|| "GPU avoidance (scheduler_avoid_gpu_nodes): GPUs requested, so it does not apply; every node is considered".into());
    }
    let d = hybrid_pass(st, t, threshold, false, NodeFilter::Any, rng, why);
    if d.is_none() {
        why.say(|| {
            "no alive node passing its rules could ever hold the request: infeasible".into()
        });
    }
    d.unwrap_or(Decision::Infeasible)
}

/// Why the top-k draw picked `node`: position `r` of the top k, or of the `m` with room
/// when fewer than the draw had room.
fn say_draw(
    st: &ClusterState,
    why: &mut Why,
    scope: &str,
    k: usize,
    m: Option<usize>,
    r: usize,
    node: NodeId,
) {
    let (room, of) = match m {
        None => (String::new(), format!("the top {k}")),
        Some(m) => (format!(", only {m} have room"), m.to_string()),
    };
    why.say(|| {
        format!(
            "top-k draw {scope}: nodes with room sorted by (score, node id), the node id breaking ties; k = max({TOP_K_ABSOLUTE}, floor({} alive x {TOP_K_FRACTION})) = {k}{room}; the draw gave position {} of {of}: {}",
            st.alive_count(),
            r + 1,
            st.nodes[node].name()
        )
    });
}

/// Ray `HybridSchedulingPolicy::ScheduleImpl` + `GetBestNode`:
///
/// * candidates: alive, (GPU filter), feasible nodes, split into available and
///   feasible-but-unavailable; each scored by [`hybrid_score`];
/// * the available list if non-empty, else (unless `require_available`) the unavailable one;
/// * sort by node id, then stable-sort by score;
/// * the preferred node wins if it is in that category and its score is no worse than the
///   front's; otherwise pick uniformly among the first
///   `k = max(scheduler_top_k_absolute, floor(N * scheduler_top_k_fraction))`, N = alive
///   nodes (Ray's `nodes_.size()`; dead nodes leave that map).
///
/// Fast path (same result, no scan): if the preferred node is available and scores 0, it is
/// no worse than any front, so it wins without looking at other nodes and without drawing.
fn hybrid_pass(
    st: &mut ClusterState,
    t: &TaskRequest,
    threshold: f32,
    require_available: bool,
    filter: NodeFilter,
    rng: &mut ChaCha8Rng,
    why: &mut Why,
) -> Option<Decision> {
    let n = st.nodes.len();
    if n == 0 {
        return None;
    }
    let scope = if filter == NodeFilter::NonGpu {
        "among nodes without GPUs"
    } else {
        "among all nodes"
    };
    let pref = if t.preferred < n {
        t.preferred
    } else {
        st.head
    };
    let pass = |st: &ClusterState, i: NodeId| {
        (filter == NodeFilter::Any || !st.nodes[i].has_gpu()) && candidate(st, i, t)
    };
    let pref_ok = pass(st, pref);
    let pref_avail = pref_ok && available(st, pref, t);
    let pref_score = hybrid_score(st, pref, threshold);
    if pref_avail && pref_score == 0.0 {
        why.say(|| {
            format!(
                "local preference: the preferred node {} (the submitter's; the head for the driver) has room and scores 0 (under the spread threshold), no worse than any node: it wins without a draw",
                st.nodes[pref].name()
            )
        });
        return Some(Decision::Run(pref));
    }
    let k = TOP_K_ABSOLUTE.max((st.alive_count() as f32 * TOP_K_FRACTION) as usize);
    if threshold == SPREAD_THRESHOLD && USE_ORDER_INDEX.with(|u| u.get()) {
        // Walk alive nodes best-first, (score, id) order, collecting the first k available
        // ones: exactly the prefix `best_node` would select from, without scanning all nodes.
        let mut avail = std::mem::take(&mut st.buf_avail);
        avail.clear();
        // The walk stops at the r0-th available node when the first draw lands inside the
        // available prefix, and only runs on to the end (to learn m) when it does not.
        let mut picked = None;
        let mut r0 = None;
        // Most requests are plain: their resource check reads the dense mirror, not the
        // nodes ([`super::plain`]); the rules are checked only when the request has any.
        let plain = st.plain.plain(t.request);
        let ruled = !t.label_selector.is_empty() || t.tenant.is_some();
        let non_gpu = filter == NodeFilter::NonGpu;
        // A plain request without rules: the same walk, block by block ([`super::order`]);
        // explanations walk node by node, for their words.
        let skip = plain && !ruled && !why.on();
        if skip {
            let pref = (pref, pref_avail, pref_score);
            (picked, r0) = super::walk::skip_walk(st, t, non_gpu, k, pref, rng, &mut avail);
        }
        for &(key, id) in st.order.iter().take(if skip { 0 } else { usize::MAX }) {
            let i = id as usize;
            let ok = if plain {
                let fast = st.plain.fits(i, t.request, non_gpu)
                    && (!ruled || (candidate(st, i, t) && available(st, i, t)));
                debug_assert_eq!(fast, pass(st, i) && available(st, i, t), "node {i}");
                fast
            } else {
                pass(st, i) && available(st, i, t)
            };
            if !ok {
                continue;
            }
            if avail.is_empty() && pref_avail && pref_score <= f32::from_bits(key) {
                why.say(|| {
                    format!(
                        "local preference: the preferred node {} has room and scores {:.4}, no worse than the best ({:.4}): it wins without a draw",
                        st.nodes[pref].name(),
                        pref_score,
                        f32::from_bits(key)
                    )
                });
                picked = Some(pref);
                break;
            }
            avail.push((f32::from_bits(key), i));
            let r = *r0.get_or_insert_with(|| if k > 1 { rng.random_range(0..k) } else { 0 });
            if avail.len() == r + 1 {
                picked = Some(i);
                if why.on() {
                    say_local(st, why, pref, pref_ok, pref_avail, pref_score);
                    say_draw(st, why, scope, k, None, r, i);
                }
                break;
            }
            if avail.len() == k {
                break;
            }
        }
        if picked.is_none() && !avail.is_empty() {
            // Fewer than r0 + 1 available: the second draw of `top_k_draw`.
            let m = avail.len();
            let r = if m > 1 { rng.random_range(0..m) } else { 0 };
            picked = Some(avail[r].1);
            if why.on() {
                say_local(st, why, pref, pref_ok, pref_avail, pref_score);
                say_draw(st, why, scope, k, Some(m), r, avail[r].1);
            }
        }
        st.buf_avail = avail;
        if let Some(p) = picked {
            return Some(Decision::Run(p));
        }
        // Nothing available: the (rare) feasible-but-unavailable path below scans.
    }
    let mut avail = std::mem::take(&mut st.buf_avail);
    let mut feas = std::mem::take(&mut st.buf_feasible);
    avail.clear();
    feas.clear();
    for i in 0..n {
        if !pass(st, i) {
            continue;
        }
        let s = hybrid_score(st, i, threshold);
        if available(st, i, t) {
            avail.push((s, i));
        } else {
            feas.push((s, i));
        }
    }
    let d = if !avail.is_empty() {
        Some(Decision::Run(best_node(
            st,
            &mut avail,
            k,
            pref_avail.then_some(pref_score).map(|s| (pref, s)),
            rng,
            why,
            &format!("{scope}, the nodes with room now"),
        )))
    } else if !feas.is_empty() && !require_available {
        Some(Decision::Queue(best_node(
            st,
            &mut feas,
            k,
            pref_ok.then_some(pref_score).map(|s| (pref, s)),
            rng,
            why,
            &format!("{scope}, none has room now, so among those that could hold it"),
        )))
    } else {
        None
    };
    st.buf_avail = avail;
    st.buf_feasible = feas;
    d
}

/// Index of the pick among the first `m = min(k, candidates)` of the sorted candidates,
/// uniform like Ray's single `absl::Uniform(0, m)`: draw in [0, k); if that lands past the
/// candidates, draw again in [0, m). P(i) = 1/k + (k − m)/k · 1/m = 1/m. Drawing against k
/// first lets the indexed walk stop at the pick without first counting every candidate, and
/// both the walk and the scan consume the same draws, so they pick the same node.
fn top_k_draw(k: usize, m: usize, rng: &mut ChaCha8Rng) -> usize {
    let r0 = if k > 1 { rng.random_range(0..k) } else { 0 };
    if r0 < m {
        r0
    } else if m > 1 {
        rng.random_range(0..m)
    } else {
        0
    }
}

/// Ray `HybridSchedulingPolicy::GetBestNode`. `list` is in node-id order (the scan order);
/// the order "sort by id, stable-sort by score" is the lexicographic (score, id) order, so the
/// r-th entry is found by selection instead of a full sort.
fn best_node(
    st: &ClusterState,
    list: &mut [(f32, NodeId)],
    k: usize,
    preferred: Option<(NodeId, f32)>,
    rng: &mut ChaCha8Rng,
    why: &mut Why,
    scope: &str,
) -> NodeId {
    let cmp = |a: &(f32, NodeId), b: &(f32, NodeId)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    if let Some((p, ps)) = preferred {
        let front = list.iter().map(|e| e.0).fold(f32::INFINITY, f32::min);
        if ps <= front {
            why.say(|| {
                format!(
                    "local preference {scope}: the preferred node {} scores {ps:.4}, no worse than the best ({front:.4}): it wins without a draw",
                    st.nodes[p].name()
                )
            });
            return p;
        }
        why.say(|| {
            format!(
                "local preference {scope}: the preferred node {} scores {ps:.4}, worse than the best ({front:.4}), so it does not win",
                st.nodes[p].name()
            )
        });
    }
    let m = k.min(list.len());
    let r = top_k_draw(k, m, rng);
    let pick = if r == 0 {
        list.iter()
            .min_by(|a, b| cmp(a, b))
            .map(|e| e.1)
            .unwrap_or(0)
    } else {
        list.select_nth_unstable_by(r, cmp);
        list[r].1
    };
    why.say(|| {
        format!(
            "top-k draw {scope}: sorted by (score, node id), the node id breaking ties; k = max({TOP_K_ABSOLUTE}, floor({} alive x {TOP_K_FRACTION})) = {k}; the draw gave position {} of the top {m}: {}",
            st.alive_count(),
            r + 1,
            st.nodes[pick].name()
        )
    });
    pick
}

/// The local-preference rule when the preferred node did not win the indexed walk.
fn say_local(st: &ClusterState, why: &mut Why, pref: NodeId, ok: bool, avail: bool, score: f32) {
    let name = st.nodes[pref].name();
    why.say(|| {
        if !ok {
            format!("local preference: the preferred node {name} is not a candidate (it could never hold the request, or its rules exclude it)")
        } else if !avail {
            format!("local preference: the preferred node {name} is not available now (no room, or a tenant it must not share a node with runs there)")
        } else {
            format!("local preference: the preferred node {name} scores {score:.4}, worse than the best, so it does not win")
        }
    });
}
