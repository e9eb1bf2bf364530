//! Ray's SPREAD and NodeAffinity policies for tasks and actors ([`super::task::place_task`]
//! dispatches to them by the request's strategy).

use super::Policy;
use super::explain::Why;
use super::state::ClusterState;
use super::task::{Decision, SPREAD_THRESHOLD, TaskRequest, available, candidate, hybrid_why};
use super::topology::topology_aware_why;
use rand_chacha::ChaCha8Rng;

/// Ray `SpreadSchedulingPolicy::Schedule` (`spread_scheduling_policy.cc`): round-robin over
/// the nodes in id order from the persistent next index; the first alive, feasible and
/// available node wins and the index moves past it. If none is available, Ray falls back to
/// the hybrid policy with `spread_threshold = 0` (`SchedulingOptions::Spread`), which then
/// picks among feasible nodes (so the task queues there).
pub fn spread(st: &mut ClusterState, t: &TaskRequest, rng: &mut ChaCha8Rng) -> Decision {
    spread_why(st, t, rng, &mut Why(None))
}

pub(super) fn spread_why(
    st: &mut ClusterState,
    t: &TaskRequest,
    rng: &mut ChaCha8Rng,
    why: &mut Why,
) -> Decision {
    let n = st.nodes.len();
    if n == 0 {
        return Decision::Infeasible;
    }
    let start = st.spread_next % n;
    for i in 0..n {
        let idx = (start + i) % n;
        if candidate(st, idx, t) && available(st, idx, t) {
            st.spread_next = (idx + 1) % n;
            why.say(|| {
                format!(
                    "SPREAD: round robin over the nodes in id order from {} (the index after the last pick); the first with room is {}",
                    st.nodes[start].name(),
                    st.nodes[idx].name()
                )
            });
            return Decision::Run(idx);
        }
    }
    why.say(|| "SPREAD: no node has room now, so Ray's fallback applies: the hybrid policy with spread threshold 0 over the nodes that could hold it".into());
    hybrid_why(st, t, 0.0, rng, why)
}

/// Ray `NodeAffinitySchedulingPolicy::Schedule` (`node_affinity_scheduling_policy.cc`): if the
/// target exists, is alive and feasible, go there (even if it must wait: Ray's defaults
/// `spill_on_unavailable = fail_on_unavailable = false`); otherwise soft falls back to the
/// hybrid policy (Orrery's topology-aware one under that policy) and hard is infeasible.
pub fn node_affinity(
    st: &mut ClusterState,
    t: &TaskRequest,
    node: &str,
    soft: bool,
    rng: &mut ChaCha8Rng,
) -> Decision {
    node_affinity_why(st, t, node, soft, rng, &mut Why(None))
}

pub(super) fn node_affinity_why(
    st: &mut ClusterState,
    t: &TaskRequest,
    node: &str,
    soft: bool,
    rng: &mut ChaCha8Rng,
    why: &mut Why,
) -> Decision {
    let kind = if soft { "soft" } else { "hard" };
    if let Some(id) = st.node_id(node)
        && candidate(st, id, t)
    {
        let room = available(st, id, t);
        why.say(|| {
            format!(
                "{kind} node_affinity({node}): {node} is alive and could hold it, so it goes there{}",
                if room { " now" } else { " and waits there (it has no room now)" }
            )
        });
        return if room {
            Decision::Run(id)
        } else {
            Decision::Queue(id)
        };
    }
    if !soft {
        why.say(|| format!("hard node_affinity({node}): {node} is dead, unknown, excluded by its rules, or could never hold it: infeasible"));
        return Decision::Infeasible;
    }
    why.say(|| format!("soft node_affinity({node}): {node} is dead, unknown, excluded by its rules, or could never hold it, so the policy places it"));
    match t.policy {
        Policy::TopologyAware => topology_aware_why(st, t, rng, why),
        _ => hybrid_why(st, t, SPREAD_THRESHOLD, rng, why),
    }
}
