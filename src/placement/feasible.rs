//! Work that can never be placed on the declared cluster, and why.
//!
//! Ray keeps such work pending forever (an infeasible task or placement group waits for a
//! node that never comes, `ray-semantics.md`). Orrery asks the placement functions themselves
//! — [`place_task_options`] and [`place_bundles`] on the full, healthy, empty cluster — so the answer
//! cannot differ from what a run does; this module only words the reason: what was asked,
//! and the most one eligible node offers of each requested resource. `scenario::load` turns each
//! finding into a located error (a warning with `--allow-infeasible`); `orrery explain`
//! prints the same reason for an infeasible item.

use super::bundle::{BundleRequest, PgDecision};
use super::explain::describe_constraint;
use super::fallback::{option_name, place_task_options};
use super::options::place_options;
use super::resources::Request;
use super::state::ClusterState;
use super::task::{Decision, TaskRequest};
use super::{NodeId, Policy};
use crate::diag::Span;
use crate::scenario::Spec;
use crate::scenario::workload::{LabelConstraint, PgStrategy, Strategy};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// One item that can never be placed: where it is declared and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Never {
    pub span: Span,
    /// `workload.item`.
    pub item: String,
    /// "task group `w.t` can never be placed on the declared cluster: ...".
    pub message: String,
    /// Not an error: it could be placed, but Ray's greedy strategy does not place it on the
    /// idle cluster (it waits, retried, until the load changes the nodes' scores).
    pub warning: bool,
}

/// Every task group, actor, service and placement group of `spec` that could not be placed
/// even on its whole cluster, healthy and empty. Nothing when the scenario declares no nodes
/// (there is no cluster to place on; `check` warns about that). Slice placement groups take
/// their bundles from the cluster's slices and are left to the run.
pub fn never_placed(spec: &Spec) -> Vec<Never> {
    let mut st = ClusterState::from_spec(spec);
    if st.nodes.is_empty() {
        return Vec::new();
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut out = Vec::new();
    let cpu1 = BTreeMap::from([("CPU".to_string(), 1.0)]);
    for w in &spec.workloads {
        let tenant = w.tenant.as_ref().and_then(|t| st.tenant_index(t));
        #[allow(clippy::too_many_arguments)]
        let mut task = |st: &mut ClusterState,
                        what: &str,
                        name: &str,
                        r: Request,
                        strategy: &Strategy,
                        selector: &[LabelConstraint],
                        fallbacks: &[Vec<LabelConstraint>],
                        span: Span| {
            let t = TaskRequest {
                request: &r,
                strategy,
                label_selector: selector,
                preferred: st.head,
                tenant,
                policy: w.policy,
            };
            // Every option counts: infeasible only when none has a feasible node.
            if place_task_options(st, &t, fallbacks, &mut rng, None).1 == Decision::Infeasible {
                let item = format!("{}.{name}", w.name);
                out.push(Never {
                    span,
                    message: format!(
                        "{what} `{item}` can never be placed on the declared cluster: {}",
                        why_task_options(st, &t, fallbacks)
                    ),
                    item,
                    warning: false,
                });
            }
        };
        for g in &w.tasks {
            let r = st.request_with_memory(&g.resources, g.device_memory);
            task(
                &mut st,
                "task group",
                &g.name,
                r,
                &g.strategy,
                &g.label_selector,
                &g.fallbacks,
                g.span,
            );
        }
        for a in &w.actors {
            let r = match &a.resources {
                Some(m) => st.request_with_memory(m, a.device_memory),
                None => st.request(&cpu1),
            };
            task(
                &mut st,
                "actor",
                &a.name,
                r,
                &a.strategy,
                &a.label_selector,
                &a.fallbacks,
                a.span,
            );
        }
        for s in &w.services {
            let r = st.request_with_memory(&s.resources, s.device_memory);
            // Replicas are spread (`sim::services`), or placed by the topology-aware policy.
            let strategy = if w.policy == Policy::TopologyAware {
                Strategy::Default
            } else {
                Strategy::Spread
            };
            task(
                &mut st,
                "a replica of service",
                &s.name,
                r,
                &strategy,
                &[],
                &[],
                s.span,
            );
        }
        for p in w.placement_groups.iter().filter(|p| !p.slice) {
            let mem = w.placement_group_device_memory(&p.name);
            let mut options = vec![(
                p.bundles
                    .iter()
                    .map(|b| st.request_with_memory(b, mem))
                    .collect::<Vec<Request>>(),
                &p.bundle_selectors,
            )];
            for f in &p.fallbacks {
                let r = f.bundles.iter().map(|b| st.request_with_memory(b, mem));
                options.push((r.collect(), &f.selectors));
            }
            let reqs: Vec<BundleRequest> = options
                .iter()
                .map(|(bundles, sels)| BundleRequest {
                    bundles,
                    strategy: p.strategy,
                    tenant,
                    policy: p.policy.unwrap_or(w.policy),
                    label_selector: &[],
                    bundle_selectors: sels,
                    domain: p.domain.as_deref().map(|k| (k, None)),
                })
                .collect();
            match place_options(&st, &reqs, None).1 {
                PgDecision::Placed(_) => continue,
                PgDecision::Wait => {
                    // On the idle cluster nothing is busy: a group that waits there is one Ray's
                    // greedy does not place though it fits (`strategies` module docs).
                    let item = format!("{}.{}", w.name, p.name);
                    out.push(Never {
                        span: p.span,
                        message: format!(
                            "placement group `{item}` is not placed on the idle cluster by Ray's greedy strategy, though its bundles could all be placed: it waits, retried, until the load changes the nodes' scores (`orrery explain` shows the greedy's choices)"
                        ),
                        item,
                        warning: true,
                    });
                    continue;
                }
                PgDecision::Infeasible => {}
            }
            let (mut why, bundle) = why_group(&st, &reqs[0]);
            if !p.fallbacks.is_empty() {
                why += &format!(
                    "; none of its {} fallback option{} can be placed either",
                    p.fallbacks.len(),
                    if p.fallbacks.len() == 1 { "" } else { "s" }
                );
            }
            let span = bundle
                .and_then(|i| p.bundle_spans.get(i).copied())
                .unwrap_or(p.span);
            let jobs: Vec<&str> = w
                .training
                .iter()
                .filter(|t| t.placement_group == p.name)
                .map(|t| t.name.as_str())
                .collect();
            let ranks = if jobs.is_empty() {
                String::new()
            } else {
                format!(" (the ranks of training `{}`)", jobs.join("`, `"))
            };
            let item = format!("{}.{}", w.name, p.name);
            out.push(Never {
                span,
                message: format!(
                    "placement group `{item}`{ranks} can never be placed on the declared cluster: {why}"
                ),
                item,
                warning: false,
            });
        }
    }
    out
}

/// A request as the DSL writes it: `{GPU: 16, CPU: 1, memory: 64 GiB}` (bytes for memory).
pub fn show(st: &ClusterState, r: &Request) -> String {
    let parts: Vec<String> = r
        .amounts
        .iter()
        .map(|&(id, a)| format!("{}: {}", st.ids.name(id), st.fmt_amount(id, a)))
        .collect();
    let dm = if r.device_memory > 0 {
        format!(" with {} per device", crate::units::Bytes(r.device_memory))
    } else {
        String::new()
    };
    format!("{{{}}}{dm}", parts.join(", "))
}

/// The alive nodes that pass `selector` and the tenant's `only_nodes` / `accelerators`, or
/// why there are none.
fn eligible(
    st: &ClusterState,
    selector: &[LabelConstraint],
    tenant: Option<usize>,
) -> Result<Vec<NodeId>, String> {
    let alive: Vec<NodeId> = (0..st.nodes.len())
        .filter(|&n| st.nodes[n].alive())
        .collect();
    if alive.is_empty() {
        return Err("no node is alive".into());
    }
    let labelled: Vec<NodeId> = alive
        .iter()
        .copied()
        .filter(|&n| selector.iter().all(|c| c.matches(st.nodes[n].labels())))
        .collect();
    if labelled.is_empty() {
        let sel: Vec<String> = selector.iter().map(describe_constraint).collect();
        return Err(format!(
            "no node matches its label selector {{{}}}",
            sel.join(", ")
        ));
    }
    let allowed: Vec<NodeId> = labelled
        .iter()
        .copied()
        .filter(|&n| st.tenant_static_ok(n, tenant))
        .collect();
    if allowed.is_empty() {
        let reason = st
            .tenant_static_reason(labelled[0], tenant)
            .unwrap_or_default();
        return Err(format!(
            "its tenant's rules leave no node ({reason} on {}, and likewise on the other {})",
            st.nodes[labelled[0]].name(),
            labelled.len() - 1
        ));
    }
    Ok(allowed)
}

/// "it asks {GPU: 16}; the most one eligible node offers is GPU 8 (dgx_h100)", with the
/// node types that offer the most of each requested resource; when each resource fits on
/// some node but not all on one, or device memory is what is short, says that.
fn too_big(st: &ClusterState, r: &Request, nodes: &[NodeId], what: &str) -> String {
    let mut most: Vec<String> = Vec::new();
    let mut each_fits = true;
    for &(id, a) in &r.amounts {
        let best = nodes
            .iter()
            .copied()
            .max_by_key(|&n| (st.nodes[n].total(id), std::cmp::Reverse(n)));
        let (cap, ty) = match best {
            Some(n) => (st.nodes[n].total(id), st.nodes[n].node_type()),
            None => (0, ""),
        };
        if cap < a {
            each_fits = false;
        }
        let of = if ty.is_empty() || cap == 0 {
            String::new()
        } else {
            format!(" ({ty})")
        };
        most.push(format!(
            "{} {}{of}",
            st.ids.name(id),
            st.fmt_amount(id, cap)
        ));
    }
    let mut s = format!(
        "{what} {}; the most one eligible node offers is {}",
        show(st, r),
        most.join(", ")
    );
    if each_fits {
        let plain = Request::from_amounts(r.amounts.clone());
        if r.device_memory > 0 && nodes.iter().any(|&n| st.is_feasible(n, &plain)) {
            s.push_str(&format!(
                ", but no such node has enough devices with {} of memory",
                crate::units::Bytes(r.device_memory)
            ));
        } else {
            s.push_str(", but no node has all of it together");
        }
    }
    s
}

/// Why a task or actor request can never be placed (the request is one `place_task`
/// found infeasible on the empty cluster).
pub fn why_task(st: &ClusterState, t: &TaskRequest) -> String {
    if let Some(q) = st.quota_exceeded_by(t.tenant, t.request) {
        return q;
    }
    if let Strategy::NodeAffinity { node, soft: false } = t.strategy {
        let Some(id) = st.node_id(node) else {
            return format!("its hard node_affinity names `{node}`, which is no node");
        };
        return match eligible(st, t.label_selector, t.tenant) {
            Err(e) => format!("its hard node_affinity({node}) leaves only {node}, and {e}"),
            Ok(nodes) if !nodes.contains(&id) => format!(
                "its hard node_affinity({node}) leaves only {node}, which its label selector or tenant rules exclude"
            ),
            Ok(_) => too_big(
                st,
                t.request,
                &[id],
                &format!("its hard node_affinity({node}) leaves only {node}; it asks"),
            ),
        };
    }
    match eligible(st, t.label_selector, t.tenant) {
        Err(e) => e,
        Ok(nodes) => too_big(st, t.request, &nodes, "it asks"),
    }
}

/// Why a task or actor with fallback label selectors (Ray's `fallback_strategy`) can never
/// be placed: why its own option cannot, then why each fallback cannot.
pub fn why_task_options(
    st: &ClusterState,
    t: &TaskRequest,
    fallbacks: &[Vec<LabelConstraint>],
) -> String {
    let own = why_task(st, t);
    if fallbacks.is_empty() || st.quota_exceeded_by(t.tenant, t.request).is_some() {
        return own;
    }
    let each: Vec<String> = fallbacks
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let tk = TaskRequest {
                label_selector: s,
                ..*t
            };
            format!("{}: {}", option_name(k + 1), why_task(st, &tk))
        })
        .collect();
    format!(
        "{own}; nor can any of its {} fallback option{} ({})",
        fallbacks.len(),
        if fallbacks.len() == 1 { "" } else { "s" },
        each.join("; ")
    )
}

/// Why a placement group can never be placed (one [`place_bundles`] found infeasible on the
/// empty cluster), and the bundle (index) the reason is about, if one.
pub fn why_group(st: &ClusterState, b: &BundleRequest) -> (String, Option<usize>) {
    let total = b
        .bundles
        .iter()
        .fold(Request::default(), |acc, x| acc.sum(x));
    if let Some(q) = st.quota_exceeded_by(b.tenant, &total) {
        return (format!("all its bundles together: {q}"), None);
    }
    let nodes = match eligible(st, b.label_selector, b.tenant) {
        Ok(n) => n,
        Err(e) => return (e, None),
    };
    let n = b.bundles.len();
    if let Some(i) = (0..n).find(|&i| {
        b.bundle_selectors.get(i).is_some_and(|s| !s.is_empty())
            && !nodes.iter().any(|&x| b.bundle_ok(st, i, x))
    }) {
        let sel: Vec<String> = b.bundle_selectors[i]
            .iter()
            .map(describe_constraint)
            .collect();
        return (
            format!(
                "bundle {} of {n} has the label selector {}, which no eligible node passes",
                i + 1,
                sel.join(", ")
            ),
            Some(i),
        );
    }
    if let Some(i) = (0..n).find(|&i| {
        !nodes
            .iter()
            .any(|&x| b.bundle_ok(st, i, x) && st.is_feasible(x, &b.bundles[i]))
    }) {
        let what = if n == 1 {
            "its bundle asks".to_string()
        } else {
            format!("bundle {} of {n} asks", i + 1)
        };
        let allowed: Vec<NodeId> = nodes
            .iter()
            .copied()
            .filter(|&x| b.bundle_ok(st, i, x))
            .collect();
        return (too_big(st, &b.bundles[i], &allowed, &what), Some(i));
    }
    if let Some((key, _)) = b.domain {
        let mut domains: std::collections::BTreeMap<&str, usize> = Default::default();
        for &x in &nodes {
            if let Some(v) = st.nodes[x].labels().get(key).filter(|v| !v.is_empty()) {
                *domains.entry(v.as_str()).or_default() += 1;
            }
        }
        if domains.is_empty() {
            return (
                format!(
                    "its topology strategy packs it into one domain of `{key}`, and no eligible node has that label"
                ),
                None,
            );
        }
        let list: Vec<String> = domains
            .iter()
            .take(8)
            .map(|(v, c)| format!("{v} ({c} node{})", if *c == 1 { "" } else { "s" }))
            .collect();
        return (
            format!(
                "its topology strategy packs all {n} bundles into one domain of `{key}` ({} inside it), and no domain can hold them: {}{}",
                b.strategy.ray_name(),
                list.join(", "),
                if domains.len() > 8 { ", ..." } else { "" }
            ),
            None,
        );
    }
    match b.strategy {
        PgStrategy::StrictPack => {
            let what = format!("STRICT_PACK puts all {n} bundles on one node, together");
            // The one node must pass every bundle's own label selector.
            let all_pass: Vec<NodeId> = nodes
                .iter()
                .copied()
                .filter(|&x| (0..n).all(|j| b.bundle_ok(st, j, x)))
                .collect();
            if all_pass.is_empty() {
                let sels: Vec<String> = (0..n)
                    .filter(|&j| b.bundle_selectors.get(j).is_some_and(|s| !s.is_empty()))
                    .map(|j| {
                        format!(
                            "bundle {}: {}",
                            j + 1,
                            super::explain::show_selector(&b.bundle_selectors[j])
                        )
                    })
                    .collect();
                return (
                    format!(
                        "STRICT_PACK puts all {n} bundles on one node, and no eligible node passes every bundle's label selector ({})",
                        sels.join("; ")
                    ),
                    None,
                );
            }
            if !all_pass.iter().any(|&x| st.is_feasible(x, &total)) {
                let what = if all_pass.len() < nodes.len() {
                    format!("{what} on a node that passes every bundle's label selector")
                } else {
                    what
                };
                return (too_big(st, &total, &all_pass, &what), None);
            }
            let units: Vec<String> = total
                .amounts
                .iter()
                .filter(|(id, _)| st.ids.is_unit_instance(*id))
                .map(|(id, _)| st.ids.name(*id).to_string())
                .collect();
            (
                format!(
                    "STRICT_PACK puts all {n} bundles on one node, together {}; that fits a node's totals, \
                     but not its devices one bundle after another (a fraction of a {} comes from one device, \
                     and Ray's raylet commits each bundle on the node's devices)",
                    show(st, &total),
                    if units.is_empty() {
                        "device".to_string()
                    } else {
                        units.join(" or ")
                    }
                ),
                None,
            )
        }
        PgStrategy::StrictSpread => {
            let usable = nodes
                .iter()
                .filter(|&&x| b.bundles.iter().any(|r| st.is_feasible(x, r)))
                .count();
            let of = if nodes.len() < st.nodes.len() {
                format!(
                    " ({} of the cluster's {} pass its rules)",
                    nodes.len(),
                    st.nodes.len()
                )
            } else {
                String::new()
            };
            if n > nodes.len() {
                (
                    format!(
                        "STRICT_SPREAD needs a different node for each of its {n} bundles, and {} node{} eligible{of}",
                        nodes.len(),
                        if nodes.len() == 1 { " is" } else { "s are" }
                    ),
                    None,
                )
            } else if let Some((js, ns)) = super::assign::strict_spread_short(st, b, &nodes) {
                let names: Vec<&str> = ns.iter().map(|&x| st.nodes[x].name()).collect();
                (
                    format!(
                        "STRICT_SPREAD needs a different node for each of its {n} bundles, and no assignment gives each its own: {} can go only to {} ({} node{} for {} bundles, by their label selectors and resources)",
                        super::bundle_explain::list_bundles(&js),
                        if names.is_empty() {
                            "no node".to_string()
                        } else {
                            names.join(", ")
                        },
                        ns.len(),
                        if ns.len() == 1 { "" } else { "s" },
                        js.len()
                    ),
                    js.first().copied(),
                )
            } else {
                (
                    format!(
                        "STRICT_SPREAD needs a different node for each of its {n} bundles, and only {usable} of the {} eligible nodes can hold one",
                        nodes.len()
                    ),
                    None,
                )
            }
        }
        PgStrategy::Pack | PgStrategy::Spread
            if b.bundle_selectors.iter().any(|s| !s.is_empty()) =>
        {
            (
                "no assignment of its bundles to the nodes their label selectors allow fits those nodes' resources, even on the empty cluster".into(),
                None,
            )
        }
        PgStrategy::Pack | PgStrategy::Spread => (
            "its bundles do not fit the cluster's devices one after another, even empty".into(),
            None,
        ),
    }
}
