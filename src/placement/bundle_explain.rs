//! What `orrery explain` says of each node for a placement group: a verdict and the score of
//! each distinct bundle shape.

use super::NodeId;
use super::bundle::{BundleRequest, PgDecision, commits, sort_bundles};
use super::explain::{Candidate, Explain, Verdict, describe_constraint};
use super::resources::Request;
use super::state::ClusterState;
use super::strategies::scaled;
use super::view::View;
use crate::spec::workload::{PgStrategy, Policy};

/// `bundle 2`, `bundles 1-3, 5` (1-based) for bundle indices ascending.
pub(super) fn list_bundles(js: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &j in js {
        match runs.last_mut() {
            Some((_, hi)) if *hi + 1 == j => *hi = j,
            _ => runs.push((j, j)),
        }
    }
    let parts: Vec<String> = runs
        .iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                (lo + 1).to_string()
            } else {
                format!("{}-{}", lo + 1, hi + 1)
            }
        })
        .collect();
    let one = js.len() == 1;
    format!("bundle{} {}", if one { "" } else { "s" }, parts.join(", "))
}

/// One verdict per node, with the score of each distinct bundle (in scheduling order), or of
/// the summed request under STRICT_PACK, on the current availabilities.
pub(super) fn fill_explain(st: &ClusterState, b: &BundleRequest, d: &PgDecision, e: &mut Explain) {
    e.candidates.clear();
    let chosen: Vec<NodeId> = match d {
        PgDecision::Placed(v) => v.clone(),
        _ => Vec::new(),
    };
    let total = b
        .bundles
        .iter()
        .fold(Request::default(), |acc, x| acc.sum(x));
    let shapes: Vec<Request> = if b.strategy == PgStrategy::StrictPack {
        vec![total.clone()]
    } else {
        let mut v: Vec<Request> = Vec::new();
        for i in sort_bundles(b.bundles) {
            if !v.contains(&b.bundles[i]) {
                v.push(b.bundles[i].clone());
            }
        }
        v
    };
    e.scored = shapes
        .iter()
        .map(|r| {
            let of = if b.strategy == PgStrategy::StrictPack {
                "all bundles summed"
            } else {
                "bundle"
            };
            format!("{of} {}", super::feasible::show(st, r))
        })
        .collect();
    let quota = st
        .quota_exceeded_by(b.tenant, &total)
        .or_else(|| st.quota_blocked_by(b.tenant, &total));
    let v = View::new(st, false, false, b.tenant);
    for i in 0..st.nodes.len() {
        let node = &st.nodes[i];
        let mut scores = vec![None; shapes.len()];
        let verdict = if !node.alive() {
            Verdict::Dead
        } else if let Some(c) = b.label_selector.iter().find(|c| !c.matches(node.labels())) {
            Verdict::LabelMismatch(describe_constraint(c))
        } else if let Some(c) = bundle_mismatch(st, b, i) {
            Verdict::LabelMismatch(c)
        } else if let Some((key, target)) = b.domain.filter(|(k, t)| {
            node.labels()
                .get(*k)
                .is_none_or(|v| v.is_empty() || t.is_some_and(|t| t != v))
        }) {
            Verdict::LabelMismatch(match target {
                Some(t) => format!("{key} != {t} (the group's domain)"),
                None => format!("no {key} label (the topology strategy's domain)"),
            })
        } else if let Some(r) = st.tenant_static_reason(i, b.tenant) {
            Verdict::TenantRule(r)
        } else if !shapes.iter().any(|r| st.is_feasible(i, r)) {
            Verdict::Infeasible
        } else if let Some(c) = st.tenant_conflict(i, b.tenant) {
            Verdict::TenantRule(format!(
                "runs work of tenant `{}` (never_share_node_with)",
                st.tenants[c].name
            ))
        } else if let Some(q) = &quota {
            Verdict::TenantRule(format!("{q} (the whole group)"))
        } else {
            for (k, r) in shapes.iter().enumerate() {
                scores[k] = scaled(&v, i, r);
            }
            // STRICT_PACK takes the node only if the bundles commit on its devices.
            let all_here = vec![i; b.bundles.len()];
            let topo = b.policy == Policy::TopologyAware;
            let packs = |empty| {
                b.strategy != PgStrategy::StrictPack || commits(st, empty, topo, b, &all_here)
            };
            if !packs(true) {
                Verdict::Unpackable
            } else if scores.iter().any(Option::is_some) && packs(false) {
                Verdict::Fits
            } else {
                Verdict::Busy
            }
        };
        e.candidates.push(Candidate {
            node: i,
            verdict,
            chosen: chosen.contains(&i),
            scores,
        });
    }
}

/// Why node `i` passes no bundle's own label selector (every bundle has one and each fails).
fn bundle_mismatch(st: &ClusterState, b: &BundleRequest, i: NodeId) -> Option<String> {
    if b.bundle_selectors.len() != b.bundles.len() || b.bundle_selectors.iter().any(Vec::is_empty) {
        return None;
    }
    let labels = st.nodes[i].labels();
    if (0..b.bundles.len()).any(|j| b.bundle_ok(st, j, i)) {
        return None;
    }
    let c = b.bundle_selectors[0].iter().find(|c| !c.matches(labels))?;
    Some(format!(
        "{} (bundle 1's selector; no bundle's selector passes)",
        describe_constraint(c)
    ))
}
