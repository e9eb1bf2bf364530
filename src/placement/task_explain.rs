//! What `orrery explain` says about a task or actor's placement: a verdict per node naming what
//! decided (dead, which label selector, tenant rule, could never hold it, busy, fits) and the
//! sentences the policies say where a count decides (GPU avoidance).

use super::NodeId;
use super::explain::{Candidate, Explain, Verdict, describe_constraint};
use super::resources::GPU;
use super::state::ClusterState;
use super::task::{Decision, SPREAD_THRESHOLD, TaskRequest, hybrid_score};

/// One verdict per node for `orrery explain`.
pub(super) fn fill_explain(st: &ClusterState, t: &TaskRequest, d: &Decision, e: &mut Explain) {
    e.candidates.clear();
    let chosen = d.node();
    for i in 0..st.nodes.len() {
        let node = &st.nodes[i];
        let verdict = if !node.alive() {
            Verdict::Dead
        } else if let Some(c) = t.label_selector.iter().find(|c| !c.matches(node.labels())) {
            Verdict::LabelMismatch(describe_constraint(c))
        } else {
            node_verdict(st, t, i)
        };
        e.candidates.push(Candidate {
            node: i,
            chosen: chosen == Some(i),
            scores: vec![score(st, i, &verdict)],
            verdict,
            note: None,
        });
    }
    e.scored = vec![super::feasible::show(st, t.request)];
}

/// The verdict on alive node `i` for a request whose label selector passes it: its tenant's
/// rules, whether it could ever hold the request, and whether it has room now.
pub(super) fn node_verdict(st: &ClusterState, t: &TaskRequest, i: NodeId) -> Verdict {
    if let Some(r) = st.tenant_static_reason(i, t.tenant) {
        Verdict::TenantRule(r)
    } else if !st.is_feasible(i, t.request) {
        Verdict::Infeasible
    } else if let Some(c) = st.tenant_conflict(i, t.tenant) {
        Verdict::TenantRule(format!(
            "runs work of tenant `{}` (never_share_node_with)",
            st.tenants[c].name
        ))
    } else if let Some(q) = st
        .quota_exceeded_by(t.tenant, t.request)
        .or_else(|| st.quota_blocked_by(t.tenant, t.request))
    {
        Verdict::TenantRule(q)
    } else if st.is_available(i, t.request) {
        Verdict::Fits
    } else {
        Verdict::Busy
    }
}

/// One scale for tasks and bundles (`explain::SCORE_SCALE`): 1 - the hybrid score, where the
/// request fits now.
pub(super) fn score(st: &ClusterState, i: NodeId, v: &Verdict) -> Option<f64> {
    (*v == Verdict::Fits).then(|| 1.0 - f64::from(hybrid_score(st, i, SPREAD_THRESHOLD)))
}

/// Why GPU avoidance found no node without GPUs to run on: of the alive nodes without GPUs,
/// how many its label selector excludes, its tenant's rules exclude, could never hold the
/// request, and have no room now (Ray's `scheduler_avoid_gpu_nodes` pass considers only
/// available nodes, `hybrid_scheduling_policy.cc`).
pub(super) fn no_room_without_gpus(st: &ClusterState, t: &TaskRequest) -> String {
    let (mut label, mut tenant, mut never, mut busy) = (0, 0, 0, 0);
    for i in 0..st.nodes.len() {
        let node = &st.nodes[i];
        if !node.alive() || node.has_gpu() {
            continue;
        }
        if !t.label_selector.iter().all(|c| c.matches(node.labels())) {
            label += 1;
        } else if !st.tenant_static_ok(i, t.tenant) {
            tenant += 1;
        } else if !st.is_feasible(i, t.request) {
            never += 1;
        } else {
            busy += 1;
        }
    }
    let total = label + tenant + never + busy;
    let parts: Vec<String> = [
        (label, "excluded by its label selector"),
        (tenant, "excluded by its tenant's rules"),
        (never, "could never hold it"),
        (
            busy,
            "have no room now (or run work of a tenant it must not share a node with)",
        ),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, w)| {
        if *n == total {
            format!("all {w}")
        } else {
            format!("{n} {w}")
        }
    })
    .collect();
    debug_assert_eq!(t.request.get(GPU), 0);
    format!(
        "GPU avoidance (scheduler_avoid_gpu_nodes): no GPU requested, but no node without GPUs can take it now (of the {total} alive without GPUs: {}), so every node was considered",
        parts.join(", ")
    )
}
