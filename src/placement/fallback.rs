//! Ray's `fallback_strategy` for tasks and actors: label selectors tried in order.
//!
//! Sources (ray-project/ray): the API, pull request #56374 (`@ray.remote(label_selector={...},
//! fallback_strategy=[{"label_selector": {...}}, ...])`, validated by
//! `validate_fallback_strategy` in `python/ray/_private/label_utils.py`); the scheduling, pull
//! request #56369, `ClusterResourceScheduler::GetBestSchedulableNode(const LeaseSpecification
//! &, ...)` in `src/ray/raylet/scheduling/cluster_resource_scheduler.cc`, which
//!
//! 1. lists the selectors: the lease's `label_selector`, then each fallback's `label_selector`
//!    — a fallback's selector *replaces* the primary's, it is not merged with it;
//! 2. for each in order: returns the local node if the lease prefers it and it is schedulable
//!    (available) under that selector; otherwise asks the scheduling policy for the best node
//!    under that selector (`GetBestSchedulableNode(resources, label_selector, strategy, ...)`);
//!    a node found that is also available under the selector is returned at once; a node found
//!    that is only feasible is remembered, the first such with its selector
//!    (`highest_priority_unavailable_node`), and the next selector is tried;
//! 3. when no selector found a feasible node, the lease is infeasible (`*is_infeasible =
//!    true`);
//! 4. otherwise it waits: at the local node if the lease prefers it and the local node is
//!    feasible under the remembered selector, else at the remembered node.
//!
//! So a fallback is taken when the nodes the earlier selectors pass lack the resources *or*
//! are only busy, and the first option with a node that has room wins.
//!
//! Here each option runs [`super::task::by_strategy`] — the request's strategy under the
//! workload's policy, exactly as a request without fallbacks — with the option's selector in
//! place of the request's. Step 2's local fast path is left to the policy's own local
//! preference, as it is for a request without fallbacks (`place_task`). Step 4 is
//! [`super::task::settle`] on the remembered option. Orrery's tenant rules apply to every
//! option; a tenant quota, being the same for every option, is checked once.
//!
//! Where the source leaves a choice open: each option's policy call may draw from the random
//! stream (the hybrid policy's top-k draw), as Ray's calls each draw from its generator, so a
//! later option's draw depends on how many draws the earlier options took; Ray's GCS-scheduled
//! leases (`!is_local_node_with_raylet_`) return no node instead of waiting, which Orrery, with
//! one scheduler, does not model.

use super::explain::{Candidate, Explain, Verdict, Why, describe_constraint, show_selector};
use super::state::ClusterState;
use super::task::{Decision, TaskRequest, by_strategy, place_task, settle};
use super::task_explain::{node_verdict, score};
use crate::scenario::workload::LabelConstraint;
use rand_chacha::ChaCha8Rng;

/// Option `k` in words: its own label selector (0), else fallback k.
pub fn option_name(k: usize) -> String {
    if k == 0 {
        "its own label selector".into()
    } else {
        format!("fallback {k}")
    }
}

/// Place a task or actor whose label selector is followed by the fallbacks' selectors
/// (Ray's `fallback_strategy`, see the module docs). Returns the option that decided (0: its
/// own `label_selector`, k: the k-th fallback) with the decision: the option that placed it,
/// the option whose node it waits at, or 0 when it is infeasible. Without fallbacks this is
/// [`place_task`], draw for draw.
pub fn place_task_options(
    state: &mut ClusterState,
    t: &TaskRequest,
    fallbacks: &[Vec<LabelConstraint>],
    rng: &mut ChaCha8Rng,
    explain: Option<&mut Explain>,
) -> (usize, Decision) {
    if fallbacks.is_empty() {
        return (0, place_task(state, t, rng, explain));
    }
    let mut rules = Vec::new();
    let mut why = Why(explain.is_some().then_some(&mut rules));
    let (k, d) = decide(state, t, fallbacks, rng, &mut why);
    if let Some(e) = explain {
        fill_explain(state, t, fallbacks, k, &d, e);
        e.rules = rules;
    }
    (k, d)
}

/// Option `k`'s selector in words.
fn selector_name(k: usize) -> String {
    if k == 0 {
        "its own label selector".into()
    } else {
        format!("fallback {k}'s label selector")
    }
}

/// The selector of option `k`.
fn selector<'a>(
    t: &TaskRequest<'a>,
    fallbacks: &'a [Vec<LabelConstraint>],
    k: usize,
) -> &'a [LabelConstraint] {
    if k == 0 {
        t.label_selector
    } else {
        &fallbacks[k - 1]
    }
}

fn decide(
    state: &mut ClusterState,
    t: &TaskRequest,
    fallbacks: &[Vec<LabelConstraint>],
    rng: &mut ChaCha8Rng,
    why: &mut Why,
) -> (usize, Decision) {
    if let Some(q) = state.quota_exceeded_by(t.tenant, t.request) {
        why.say(|| format!("tenant quota: {q}, so it can never be placed"));
        return (0, Decision::Infeasible);
    }
    why.say(|| {
        let list: Vec<String> = (0..=fallbacks.len())
            .map(|k| {
                format!(
                    "{} {}",
                    option_name(k),
                    show_selector(selector(t, fallbacks, k))
                )
            })
            .collect();
        format!(
            "fallback strategy (Ray's fallback_strategy): the label selectors are tried in order, each in place of the one before, and the first with a node that has room now wins: {}",
            list.join(", then ")
        )
    });
    let spread_before = state.spread_next;
    let mut waits: Option<(usize, Decision)> = None;
    let mut run = None;
    for k in 0..=fallbacks.len() {
        let tk = TaskRequest {
            label_selector: selector(t, fallbacks, k),
            ..*t
        };
        why.say(|| format!("{} is tried:", option_name(k)));
        match by_strategy(state, &tk, rng, why) {
            Decision::Run(n) => {
                why.say(|| {
                    format!(
                        "{} places it: {} has room now",
                        option_name(k),
                        state.nodes[n].name()
                    )
                });
                run = Some((k, Decision::Run(n)));
                break;
            }
            Decision::Queue(n) => {
                why.say(|| {
                    format!(
                        "{}: the nodes it passes could hold the request but none has room now (the policy's pick, {}, is busy), so the next option is tried",
                        option_name(k),
                        state.nodes[n].name()
                    )
                });
                waits.get_or_insert((k, Decision::Queue(n)));
            }
            Decision::Infeasible => why.say(|| {
                format!(
                    "{}: no alive node it passes could ever hold the request, so the next option is tried",
                    option_name(k)
                )
            }),
        }
    }
    let (k, d) = match (run, waits) {
        (Some(r), _) => r,
        (None, Some((k, d))) => {
            why.say(|| {
                format!(
                    "no option has a node with room now: the lease waits for the highest-priority option with a node that could hold it, {} (Ray's highest_priority_unavailable_node)",
                    option_name(k)
                )
            });
            (k, d)
        }
        (None, None) => {
            why.say(|| {
                "no option has an alive node that could ever hold the request: infeasible".into()
            });
            return (0, Decision::Infeasible);
        }
    };
    let tk = TaskRequest {
        label_selector: selector(t, fallbacks, k),
        ..*t
    };
    (k, settle(state, &tk, d, spread_before, why))
}

/// One verdict per node, judged for the option that decided (`k`); a node that option's
/// selector excludes names that selector's constraint and, when an earlier option passes it,
/// why that option could not use it.
fn fill_explain(
    st: &ClusterState,
    t: &TaskRequest,
    fallbacks: &[Vec<LabelConstraint>],
    k: usize,
    d: &Decision,
    e: &mut Explain,
) {
    e.candidates.clear();
    let chosen = d.node();
    let opt = |j: usize| TaskRequest {
        label_selector: selector(t, fallbacks, j),
        ..*t
    };
    for i in 0..st.nodes.len() {
        let node = &st.nodes[i];
        let passes = |j: usize| {
            selector(t, fallbacks, j)
                .iter()
                .all(|c| c.matches(node.labels()))
        };
        let (verdict, note) = if !node.alive() {
            (Verdict::Dead, None)
        } else if passes(k) {
            (
                node_verdict(st, &opt(k), i),
                Some(format!("judged for {}", option_name(k))),
            )
        } else {
            let c = selector(t, fallbacks, k)
                .iter()
                .find(|c| !c.matches(node.labels()))
                .map(describe_constraint)
                .unwrap_or_default();
            let note = match (0..k).find(|&j| passes(j)) {
                Some(j) => format!(
                    "{} passes it, but there it is {}",
                    option_name(j),
                    node_verdict(st, &opt(j), i).describe()
                ),
                None if (k + 1..=fallbacks.len()).any(passes) => {
                    "only a later option passes it".into()
                }
                None => "no option's label selector passes it".into(),
            };
            (
                Verdict::LabelMismatch(format!("{c} ({})", selector_name(k))),
                Some(note),
            )
        };
        e.candidates.push(Candidate {
            node: i,
            chosen: chosen == Some(i),
            scores: vec![score(st, i, &verdict)],
            verdict,
            note,
        });
    }
    e.scored = vec![super::feasible::show(st, t.request)];
}
