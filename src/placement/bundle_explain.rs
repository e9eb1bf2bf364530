//! What `orrery explain` says of each node for a placement group: a verdict naming what decided
//! — dead, the group's own selector (a slice's pin, a re-placement's exclusions), its
//! topology domain, its tenant's rules, *which bundle's* label selector excludes it, whether it
//! could ever hold the bundles its selectors let onto it, busy or fits — and the score of each
//! distinct bundle shape the node may take.

use super::NodeId;
use super::bundle::{BundleRequest, PgDecision, commits, sort_bundles};
use super::explain::{Candidate, Explain, Verdict, describe_constraint};
use super::resources::Request;
use super::state::ClusterState;
use super::strategies::scaled;
use super::view::View;
use crate::scenario::workload::{PgStrategy, Policy};

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

/// Why node `i` passes no bundle's own label selector: each bundle's first failing constraint,
/// bundles saying the same grouped (`bundles 1-2: pool = a; bundle 3: pool != b`).
fn excluded_by_all(st: &ClusterState, b: &BundleRequest, i: NodeId) -> String {
    let labels = st.nodes[i].labels();
    let mut said: Vec<(String, Vec<usize>)> = Vec::new();
    for j in 0..b.bundles.len() {
        let c = b
            .bundle_selectors
            .get(j)
            .and_then(|s| s.iter().find(|c| !c.matches(labels)))
            .map(describe_constraint)
            .unwrap_or_default();
        match said.iter_mut().find(|(t, _)| *t == c) {
            Some((_, js)) => js.push(j),
            None => said.push((c, vec![j])),
        }
    }
    let parts: Vec<String> = said
        .iter()
        .map(|(c, js)| format!("{}: {c}", list_bundles(js)))
        .collect();
    format!(
        "no bundle's label selector passes it ({})",
        parts.join("; ")
    )
}

/// One verdict per node, with the score of each distinct bundle shape (in scheduling order),
/// or of the summed request under STRICT_PACK, on the current availabilities.
pub(super) fn fill_explain(st: &ClusterState, b: &BundleRequest, d: &PgDecision, e: &mut Explain) {
    e.candidates.clear();
    let chosen: Vec<NodeId> = match d {
        PgDecision::Placed(v) => v.clone(),
        _ => Vec::new(),
    };
    let n = b.bundles.len();
    let total = b
        .bundles
        .iter()
        .fold(Request::default(), |acc, x| acc.sum(x));
    let strict_pack = b.strategy == PgStrategy::StrictPack;
    // Each distinct shape with the bundles of that shape.
    let shapes: Vec<(Request, Vec<usize>)> = if strict_pack {
        vec![(total.clone(), (0..n).collect())]
    } else {
        let mut v: Vec<(Request, Vec<usize>)> = Vec::new();
        for j in sort_bundles(b.bundles) {
            match v.iter_mut().find(|(r, _)| *r == b.bundles[j]) {
                Some((_, js)) => js.push(j),
                None => v.push((b.bundles[j].clone(), vec![j])),
            }
        }
        v.iter_mut().for_each(|(_, js)| js.sort_unstable());
        v
    };
    let selectors = b.bundle_selectors.iter().any(|s| !s.is_empty());
    e.scored = shapes
        .iter()
        .map(|(r, js)| {
            let of = if strict_pack {
                "all bundles summed".to_string()
            } else if selectors && js.len() < n {
                list_bundles(js)
            } else {
                "bundle".to_string()
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
        let allowed: Vec<usize> = (0..n).filter(|&j| b.bundle_ok(st, j, i)).collect();
        let mut scores = vec![None; shapes.len()];
        let mut note = None;
        let verdict = if !node.alive() {
            Verdict::Dead
        } else if let Some(c) = b.label_selector.iter().find(|c| !c.matches(node.labels())) {
            Verdict::LabelMismatch(format!("{} (the group's selector)", describe_constraint(c)))
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
        } else if allowed.is_empty() {
            Verdict::LabelMismatch(excluded_by_all(st, b, i))
        } else if strict_pack && allowed.len() < n {
            let j = (0..n).find(|j| !allowed.contains(j)).unwrap_or(0);
            let c = b.bundle_selectors[j]
                .iter()
                .find(|c| !c.matches(node.labels()))
                .map(describe_constraint)
                .unwrap_or_default();
            Verdict::LabelMismatch(format!(
                "{c} (bundle {}'s label selector; STRICT_PACK puts every bundle on one node)",
                j + 1
            ))
        } else {
            if selectors && allowed.len() < n {
                note = Some(format!(
                    "its label selectors let only {} onto it",
                    list_bundles(&allowed)
                ));
            }
            let may = |js: &[usize]| js.iter().any(|j| allowed.contains(j));
            let feasible = if strict_pack {
                st.is_feasible(i, &total)
            } else {
                allowed.iter().any(|&j| st.is_feasible(i, &b.bundles[j]))
            };
            if !feasible {
                Verdict::Infeasible
            } else if let Some(c) = st.tenant_conflict(i, b.tenant) {
                Verdict::TenantRule(format!(
                    "runs work of tenant `{}` (never_share_node_with)",
                    st.tenants[c].name
                ))
            } else if let Some(q) = &quota {
                Verdict::TenantRule(format!("{q} (the whole group)"))
            } else {
                for (k, (r, js)) in shapes.iter().enumerate() {
                    if may(js) {
                        scores[k] = scaled(&v, i, r);
                    }
                }
                // STRICT_PACK takes the node only if the bundles commit on its devices.
                let all_here = vec![i; n];
                let topo = b.policy == Policy::TopologyAware;
                let packs = |empty| !strict_pack || commits(st, empty, topo, b, &all_here);
                if !packs(true) {
                    Verdict::Unpackable
                } else if scores.iter().any(Option::is_some) && packs(false) {
                    Verdict::Fits
                } else {
                    Verdict::Busy
                }
            }
        };
        e.candidates.push(Candidate {
            node: i,
            verdict,
            chosen: chosen.contains(&i),
            scores,
            note,
        });
    }
}
