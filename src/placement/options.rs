//! Ray's placement-group options beyond the strategy: the fallback strategy (other bundle sets
//! tried in order) and the alpha topology strategy (the whole group inside one domain of a
//! node label, such as `ray.io/gpu-domain`).
//!
//! Sources (ray-project/ray): `src/ray/raylet/scheduling/policy/
//! topology_bundle_scheduling_policy.cc` (`TopologyStrictPackSchedulingPolicy::Schedule`:
//! candidates grouped by the label's value, nodes without it or with an empty value left out;
//! each group whose capacity could hold the request is given to the node-level strategy, the
//! first success wins; infeasible when every group is, else failed-and-retried; a target value
//! — set when bundles lost to a failure are re-placed — confines it to that group); the GCS
//! fallback scheduler (pull requests #59024 and #62423: the primary option first, then each
//! fallback in order; the group is feasible if any option is).
//!
//! Where Ray iterates a hash map of domains (an unspecified order), Orrery tries them in
//! ascending order of the label value, so runs are reproducible.

use super::NodeId;
use super::bundle::{BundleRequest, PgDecision, place, place_on};
use super::explain::{Explain, Why};
use super::state::ClusterState;
use std::collections::BTreeMap;

/// Place the first of `opts` (the primary bundles, then each fallback) that can be placed now.
/// Returns the option's index with the decision: `Placed` by the first option that fits now;
/// otherwise `Wait` if some option could fit the alive cluster (the first such), `Infeasible`
/// (option 0) if none ever could.
pub fn place_options(
    st: &ClusterState,
    opts: &[BundleRequest],
    explain: Option<&mut Explain>,
) -> (usize, PgDecision) {
    let on = explain.is_some();
    let mut rules = Vec::new();
    let mut wait = None;
    let mut placed = None;
    for (k, b) in opts.iter().enumerate() {
        let mut why = Why(on.then_some(&mut rules));
        if opts.len() > 1 {
            why.say(|| {
                if k == 0 {
                    "fallback strategy: the group's own bundles are tried first".into()
                } else {
                    format!("fallback strategy: option {k} is tried, the options before it cannot be placed now")
                }
            });
        }
        match place(st, b, &mut why) {
            PgDecision::Placed(n) => {
                why.say(|| {
                    if opts.len() > 1 {
                        format!("fallback strategy: option {k} is placed")
                    } else {
                        String::new()
                    }
                });
                placed = Some((k, PgDecision::Placed(n)));
                break;
            }
            PgDecision::Wait => {
                wait.get_or_insert(k);
            }
            PgDecision::Infeasible => {}
        }
    }
    rules.retain(|r| !r.is_empty());
    let (k, d) = placed.unwrap_or(match wait {
        Some(k) => (k, PgDecision::Wait),
        None => (0, PgDecision::Infeasible),
    });
    if let Some(e) = explain {
        super::bundle_explain::fill_explain(st, &opts[k], &d, e);
        e.rules = rules;
    }
    (k, d)
}

/// The topology strategy's STRICT_PACK over label `key` among candidates `cands`: the domains
/// (values of `key`, ascending; only `target` when given) one after another, each running the
/// node-level strategy on its nodes.
pub(super) fn place_in_domain(
    st: &ClusterState,
    b: &BundleRequest,
    cands: &[NodeId],
    key: &str,
    target: Option<&str>,
    why: &mut Why,
) -> PgDecision {
    let mut domains: BTreeMap<&str, Vec<NodeId>> = BTreeMap::new();
    for &n in cands {
        if let Some(v) = st.nodes[n].labels().get(key)
            && !v.is_empty()
            && target.is_none_or(|t| t == v)
        {
            domains.entry(v.as_str()).or_default().push(n);
        }
    }
    if domains.is_empty() {
        why.say(|| match target {
            Some(t) => format!(
                "topology strategy: no candidate node is left in the group's domain {key} = {t}: infeasible there (the group stays in its domain)"
            ),
            None => format!("topology strategy: no candidate node has a {key} label: infeasible"),
        });
        return PgDecision::Infeasible;
    }
    let mut wait = false;
    for (value, nodes) in &domains {
        why.say(|| {
            format!(
                "topology strategy: STRICT_PACK into {key} = {value} ({} candidate node{}){}",
                nodes.len(),
                if nodes.len() == 1 { "" } else { "s" },
                if target.is_some() {
                    ", the group's domain"
                } else {
                    ""
                }
            )
        });
        match place_on(st, b, nodes, why) {
            PgDecision::Placed(n) => {
                why.say(|| format!("topology strategy: the group goes into {key} = {value}"));
                return PgDecision::Placed(n);
            }
            PgDecision::Wait => wait = true,
            PgDecision::Infeasible => {}
        }
    }
    if wait {
        why.say(|| {
            format!(
                "topology strategy: some domain of {key} could hold the group, none now: it waits"
            )
        });
        PgDecision::Wait
    } else {
        why.say(|| {
            format!("topology strategy: no domain of {key} could ever hold the group: infeasible")
        });
        PgDecision::Infeasible
    }
}
