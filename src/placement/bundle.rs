//! Placement groups: Ray's bundle policies (`src/ray/raylet/scheduling/policy/
//! bundle_scheduling_policy.cc`, scorer `scorer.cc`) and Orrery's topology-aware variant.
//!
//! Placement is simulated against a scratch overlay of the nodes it touches; `ClusterState`
//! is never changed (the engine allocates each bundle after [`PgDecision::Placed`]).

use super::assign::{self, Assignable};
use super::explain::{Explain, Why};
use super::resources::{self as res, GPU, MEMORY, OBJECT_STORE_MEMORY, PREDEFINED, Request};
use super::state::ClusterState;
use super::strategies::run;
use super::view::View;
use super::{NodeId, Policy};
use crate::scenario::workload::{LabelConstraint, PgStrategy};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// A placement group to place.
pub struct BundleRequest<'a> {
    pub bundles: &'a [Request],
    pub strategy: PgStrategy,
    pub tenant: Option<usize>,
    pub policy: Policy,
    /// Applies to every bundle: a slice's pin, a re-placement's exclusions.
    pub label_selector: &'a [LabelConstraint],
    /// Each bundle's own selector (Ray's `bundle_label_selector`, one per bundle, in the
    /// bundles' order); empty: none. Ray checks it with the bundle's resources, in
    /// feasibility and availability alike (`cluster_resource_data.cc`), so here it filters the
    /// nodes a strategy may give that bundle.
    pub bundle_selectors: &'a [Vec<LabelConstraint>],
    /// Ray's alpha topology strategy: the group goes into one domain (one value) of this node
    /// label, `Some(value)` confining it to that domain (bundles lost in a failure are
    /// re-placed where the group is, [`super::options`]).
    pub domain: Option<(&'a str, Option<&'a str>)>,
}

impl<'a> BundleRequest<'a> {
    /// A group with no label selectors and no domain.
    pub fn new(
        bundles: &'a [Request],
        strategy: PgStrategy,
        tenant: Option<usize>,
        policy: Policy,
    ) -> Self {
        BundleRequest {
            bundles,
            strategy,
            tenant,
            policy,
            label_selector: &[],
            bundle_selectors: &[],
            domain: None,
        }
    }

    /// Whether node `n` passes bundle `j`'s own label selector.
    pub(super) fn bundle_ok(&self, st: &ClusterState, j: usize, n: NodeId) -> bool {
        self.bundle_selectors
            .get(j)
            .is_none_or(|s| s.iter().all(|c| c.matches(st.nodes[n].labels())))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum PgDecision {
    /// The node of each bundle, in the bundles' original order.
    Placed(Vec<NodeId>),
    /// Could be placed on the alive cluster but not all bundles fit now (creation is atomic:
    /// nothing is reserved).
    Wait,
    /// Can never be placed on the alive cluster, even empty.
    Infeasible,
}

/// Ray `BundleSchedulingPolicy::SortRequiredResources`: bundles with more GPU first, then by
/// each custom ("extra") resource in resource-id order, then object store memory, memory and
/// CPU, larger first. Ray uses an unstable `std::sort`; ties here keep their original order.
/// Returns bundle indices in scheduling order.
pub fn sort_bundles(bundles: &[Request]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..bundles.len()).collect();
    order.sort_by(|&x, &y| priority(&bundles[y], &bundles[x]));
    order
}

/// Ordering by scheduling priority (Greater = scheduled first).
fn priority(a: &Request, b: &Request) -> Ordering {
    let o = a.get(GPU).cmp(&b.get(GPU));
    if o != Ordering::Equal {
        return o;
    }
    // Union of extra resources, ascending id (Ray: a std::set<ResourceID>).
    let (mut i, mut j) = (0, 0);
    let (xa, xb) = (&a.amounts, &b.amounts);
    loop {
        while i < xa.len() && xa[i].0 < PREDEFINED {
            i += 1;
        }
        while j < xb.len() && xb[j].0 < PREDEFINED {
            j += 1;
        }
        let (va, vb) = match (xa.get(i), xb.get(j)) {
            (None, None) => break,
            (Some(p), None) => {
                i += 1;
                (p.1, 0)
            }
            (None, Some(q)) => {
                j += 1;
                (0, q.1)
            }
            (Some(p), Some(q)) => match p.0.cmp(&q.0) {
                Ordering::Less => {
                    i += 1;
                    (p.1, 0)
                }
                Ordering::Greater => {
                    j += 1;
                    (0, q.1)
                }
                Ordering::Equal => {
                    i += 1;
                    j += 1;
                    (p.1, q.1)
                }
            },
        };
        if va != vb {
            return va.cmp(&vb);
        }
    }
    for id in [OBJECT_STORE_MEMORY, MEMORY, res::CPU] {
        let o = a.get(id).cmp(&b.get(id));
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Place a placement group (does not allocate).
///
/// Candidates are the alive nodes passing the label selector and the tenant's `only_nodes`.
/// Ray's own infeasibility checks come first (each bundle must fit some candidate's totals,
/// `IsRequestFeasible`; STRICT_PACK's sum must fit one node; STRICT_SPREAD needs at least as
/// many candidates as bundles). Then the strategy runs on the current availabilities; if it
/// fails, it runs again on the alive cluster as if empty: success there means `Wait`, failure
/// means `Infeasible` (Ray would keep such a group pending forever).
///
/// Tenant quotas (Orrery's) count the whole group, since its creation is atomic: if the
/// sum of the bundles is more than the tenant's quota of some resource the group is
/// `Infeasible`; if it would take the tenant past its quota now, a placement that would
/// succeed is `Wait` instead.
///
/// Availability here is per instance (what the raylet's two-phase commit would accept), where
/// Ray's GCS checks sums and lets the raylet's prepare fail and retry: the outcome is the same
/// without the retry.
pub fn place_bundles(
    state: &ClusterState,
    b: &BundleRequest,
    explain: Option<&mut Explain>,
) -> PgDecision {
    let mut rules = Vec::new();
    let d = place(state, b, &mut Why(explain.is_some().then_some(&mut rules)));
    if let Some(e) = explain {
        super::bundle_explain::fill_explain(state, b, &d, e);
        e.rules = rules;
    }
    d
}

pub(super) fn place(st: &ClusterState, b: &BundleRequest, why: &mut Why) -> PgDecision {
    if b.bundles.is_empty() {
        return PgDecision::Placed(Vec::new());
    }
    let total = b
        .bundles
        .iter()
        .fold(Request::default(), |acc, x| acc.sum(x));
    if let Some(q) = st.quota_exceeded_by(b.tenant, &total) {
        why.say(|| {
            format!(
                "tenant quota: {q} (the whole group, created at once), so it can never be placed"
            )
        });
        return PgDecision::Infeasible;
    }
    match place_resources(st, b, why) {
        PgDecision::Placed(_) if !st.quota_allows(b.tenant, &total) => {
            why.say(|| {
                format!(
                    "tenant quota: {} (the whole group, created at once), so it waits",
                    st.quota_blocked_by(b.tenant, &total).unwrap_or_default()
                )
            });
            PgDecision::Wait
        }
        d => d,
    }
}

fn place_resources(st: &ClusterState, b: &BundleRequest, why: &mut Why) -> PgDecision {
    let cands: Vec<NodeId> = (0..st.nodes.len())
        .filter(|&n| {
            let node = &st.nodes[n];
            node.alive()
                && b.label_selector.iter().all(|c| c.matches(node.labels()))
                && st.tenant_static_ok(n, b.tenant)
        })
        .collect();
    if cands.is_empty() {
        why.say(|| {
            "no alive node passes the group's label selector and tenant rules: infeasible".into()
        });
        return PgDecision::Infeasible;
    }
    match b.domain {
        None => place_on(st, b, &cands, why),
        Some((key, target)) => super::options::place_in_domain(st, b, &cands, key, target, why),
    }
}

/// The strategy over candidate nodes `cands` (ids ascending), with Ray's infeasibility checks
/// first, then on the current availabilities, then on the candidates as if empty.
pub(super) fn place_on(
    st: &ClusterState,
    b: &BundleRequest,
    cands: &[NodeId],
    why: &mut Why,
) -> PgDecision {
    let order = sort_bundles(b.bundles);
    let all_ok = |n: NodeId| (0..b.bundles.len()).all(|j| b.bundle_ok(st, j, n));
    match b.strategy {
        PgStrategy::StrictPack => {
            let sum = b
                .bundles
                .iter()
                .fold(Request::default(), |acc, x| acc.sum(x));
            if !cands.iter().any(|&n| st.is_feasible(n, &sum) && all_ok(n)) {
                why.say(|| {
                    "STRICT_PACK: no node could ever hold the summed request: infeasible".into()
                });
                return PgDecision::Infeasible;
            }
        }
        PgStrategy::StrictSpread if b.bundles.len() > cands.len() => {
            why.say(|| {
                format!(
                    "STRICT_SPREAD: {} bundles need as many nodes, and {} are candidates: infeasible",
                    b.bundles.len(),
                    cands.len()
                )
            });
            return PgDecision::Infeasible;
        }
        _ => {}
    }
    if b.strategy != PgStrategy::StrictPack {
        let lone = (0..b.bundles.len()).find(|&j| {
            !cands
                .iter()
                .any(|&n| b.bundle_ok(st, j, n) && st.is_feasible(n, &b.bundles[j]))
        });
        if let Some(j) = lone {
            why.say(|| {
                if b.bundle_selectors.get(j).is_some_and(|s| !s.is_empty()) {
                    format!("bundle {} fits no node's totals among those its label selector allows: infeasible", j + 1)
                } else {
                    format!("bundle {} fits no node's totals: infeasible", j + 1)
                }
            });
            return PgDecision::Infeasible;
        }
    }
    if b.bundles.len() > 1 && why.on() {
        let o: Vec<String> = order.iter().map(|i| (i + 1).to_string()).collect();
        why.say(|| {
            format!(
                "bundle order (Ray's SortRequiredResources: more GPU first, then custom resources, object store, memory, CPU; ties keep their order): {}",
                o.join(", ")
            )
        });
    }
    let ok = |j: usize, n: NodeId| b.bundle_ok(st, j, n);
    let topo = b.policy == Policy::TopologyAware;
    let placed = if topo {
        topo_place(st, b, cands, &order, &ok, why)
    } else {
        greedy(st, b, &order, cands, &ok, why)
    };
    match placed {
        Some(nodes) => match uncommitted(st, false, topo, b, &nodes) {
            None => return PgDecision::Placed(nodes),
            Some(j) => why.say(|| {
                format!(
                    "bundle {} does not fit the devices of {} after the bundles before it (the raylet commits each bundle on the node's devices, and a fraction of a device comes from one device): the commit fails and the group waits",
                    j + 1,
                    st.nodes[nodes[j]].name()
                )
            }),
        },
        None => why.say(|| "not every bundle fits now".into()),
    }
    let mut empty = View::new(st, true, false, b.tenant);
    if let Some(nodes) = run(
        &mut empty,
        b.strategy,
        b.bundles,
        &order,
        cands,
        &ok,
        false,
        &mut Why(None),
    ) && uncommitted(st, true, topo, b, &nodes).is_none()
    {
        why.say(|| "on the alive cluster, empty, the group would fit: it stays pending (nothing reserved), retried after 100 ms, x 1.5 each time up to 1 s".into());
        return PgDecision::Wait;
    }
    if b.strategy == PgStrategy::StrictPack {
        why.say(|| "even on the alive cluster, empty, the group would not fit: infeasible".into());
        return PgDecision::Infeasible;
    }
    // Ray's greedy failing is `SchedulingResult::Failed` (retried), never infeasibility: the
    // group is infeasible only if no assignment of its bundles to nodes exists.
    match assign::group_assignable(st, b, &order, cands, &ok) {
        Assignable::Yes => {
            why.say(|| "on the alive cluster, empty, Ray's greedy would not place the group, but an assignment of its bundles to nodes exists: it stays pending (Ray's SchedulingResult::Failed, nothing reserved), retried after 100 ms, x 1.5 each time up to 1 s".into());
            PgDecision::Wait
        }
        Assignable::Unknown => {
            why.say(|| format!("on the alive cluster, empty, Ray's greedy would not place the group, and the search for an assignment of its bundles stopped after {} steps without proving there is none: it stays pending, retried", assign::BUDGET));
            PgDecision::Wait
        }
        Assignable::No(_) => {
            why.say(|| {
                "even on the alive cluster, empty, no assignment of the bundles to nodes fits: infeasible".into()
            });
            PgDecision::Infeasible
        }
    }
}

/// Ray's strategy on the current availabilities; for a group with per-bundle label selectors
/// whose plain greedy fails, again with look-ahead ties (`strategies` module docs).
fn greedy(
    st: &ClusterState,
    b: &BundleRequest,
    order: &[usize],
    cands: &[NodeId],
    ok: &dyn Fn(usize, NodeId) -> bool,
    why: &mut Why,
) -> Option<Vec<NodeId>> {
    let mut rules = Vec::new();
    let mut v = View::new(st, false, false, b.tenant);
    let first = run(
        &mut v,
        b.strategy,
        b.bundles,
        order,
        cands,
        ok,
        false,
        &mut Why(why.on().then_some(&mut rules)),
    );
    let selectors = b.bundle_selectors.iter().any(|s| !s.is_empty());
    if first.is_some() || !selectors || b.strategy == PgStrategy::StrictPack {
        if let Some(w) = &mut why.0 {
            w.append(&mut rules);
        }
        return first;
    }
    let mut again = Vec::new();
    let mut v = View::new(st, false, false, b.tenant);
    let second = run(
        &mut v,
        b.strategy,
        b.bundles,
        order,
        cands,
        ok,
        true,
        &mut Why(why.on().then_some(&mut again)),
    );
    if second.is_some() {
        why.say(|| "with ties to the lowest node id a bundle's label selector leaves it no node now, so ties are broken by look-ahead (Ray's own tie order is its hash order):".into());
        if let Some(w) = &mut why.0 {
            w.append(&mut again);
        }
    } else if let Some(w) = &mut why.0 {
        w.append(&mut rules);
    }
    second
}

/// Whether the bundles commit on their nodes one after another, in their original order, as
/// the engine allocates them (Ray's raylet prepares each bundle on the node's device
/// instances, `NodeResourceInstanceSet::TryAllocate`): a strategy scores bundles (or their
/// sum, for STRICT_PACK) and may choose nodes whose devices cannot hold them all; Ray's
/// prepare then fails and the group stays pending, retried.
pub(super) fn commits(
    st: &ClusterState,
    empty: bool,
    topo: bool,
    b: &BundleRequest,
    nodes: &[NodeId],
) -> bool {
    uncommitted(st, empty, topo, b, nodes).is_none()
}

/// The first bundle that does not commit on its node after the bundles before it ([`commits`]).
fn uncommitted(
    st: &ClusterState,
    empty: bool,
    topo: bool,
    b: &BundleRequest,
    nodes: &[NodeId],
) -> Option<usize> {
    let mut v = View::new(st, empty, topo, b.tenant);
    b.bundles.iter().zip(nodes).position(|(x, &n)| {
        let fit = v.fits(n, x);
        if fit {
            v.subtract(n, x);
        }
        !fit
    })
}

/// Orrery's topology-aware placement of a group (not in Ray; compare Ray's alpha
/// `topology_bundle_scheduling_policy.cc`, which groups nodes by a label value). Goal: as few
/// racks (a slice is a rack) as possible, and each bundle's devices under one PCIe switch /
/// NVLink domain where possible.
///
/// 1. The group's key resource is GPU if any bundle asks for it, else the first unit-instance
///    resource asked for, else CPU; a rack's capacity is what its candidates have available
///    of it.
/// 2. Single racks whose capacity covers the group's demand are tried in best-fit order
///    (smallest capacity first, then rack index), running the strategy on that rack's nodes.
/// 3. Otherwise racks are added largest capacity first until the capacity covers the demand,
///    and the strategy runs on their union; if that fails, on all candidates.
///
/// Inside any node set the strategy is Ray's, except that a node's topology rank for the
/// bundle (one switch < one NUMA domain < one link domain < spanning) is compared before
/// the least-resource score, and device instances are taken by the topology-aware allocator.
fn topo_place(
    st: &ClusterState,
    b: &BundleRequest,
    cands: &[NodeId],
    order: &[usize],
    ok: &dyn Fn(usize, NodeId) -> bool,
    why: &mut Why,
) -> Option<Vec<NodeId>> {
    let key = if b.bundles.iter().any(|x| x.get(GPU) > 0) {
        GPU
    } else {
        b.bundles
            .iter()
            .flat_map(|x| x.amounts.iter())
            .map(|e| e.0)
            .find(|&id| st.ids.is_unit_instance(id))
            .unwrap_or(res::CPU)
    };
    let need: i64 = match b.strategy {
        PgStrategy::StrictPack => 0, // one node anyway
        _ => b.bundles.iter().map(|x| x.get(key)).sum(),
    };
    let mut racks: BTreeMap<usize, (i64, Vec<NodeId>)> = BTreeMap::new();
    for &n in cands {
        let e = racks.entry(st.nodes[n].rack()).or_default();
        e.0 += if st.tenant_conflict(n, b.tenant).is_some() {
            0
        } else {
            st.nodes[n].available(key)
        };
        e.1.push(n);
    }
    // Each attempt's rules are kept only if it succeeds (or is the last).
    let mut attempt = |set: &[NodeId], what: &str| {
        let mut v = View::new(st, false, true, b.tenant);
        let mut rules = Vec::new();
        let r = run(
            &mut v,
            b.strategy,
            b.bundles,
            order,
            set,
            ok,
            false,
            &mut Why(why.on().then_some(&mut rules)),
        );
        if r.is_some() || what == "all candidate nodes" {
            why.say(|| format!("topology-aware policy: tried {what} (as few racks as possible; a node's topology rank for a bundle comes before its score)"));
            if let Some(w) = &mut why.0 {
                w.append(&mut rules);
            }
        }
        r
    };
    let mut singles: Vec<(&usize, &(i64, Vec<NodeId>))> = racks
        .iter()
        .filter(|(_, (cap, nodes))| {
            *cap >= need
                && (b.strategy != PgStrategy::StrictSpread || nodes.len() >= b.bundles.len())
        })
        .collect();
    singles.sort_by_key(|(r, (cap, _))| (*cap, **r));
    for (rack, (_, nodes)) in &singles {
        let name = st.racks.get(**rack).map_or(String::new(), |r| r.0.clone());
        if let Some(r) = attempt(nodes, &format!("rack {name} alone")) {
            return Some(r);
        }
    }
    if racks.len() > 1 {
        let mut by_cap: Vec<(&usize, &(i64, Vec<NodeId>))> = racks.iter().collect();
        by_cap.sort_by_key(|(r, (cap, _))| (std::cmp::Reverse(*cap), **r));
        let mut set: Vec<NodeId> = Vec::new();
        let mut cap = 0i64;
        for (i, (_, (c, nodes))) in by_cap.iter().enumerate() {
            set.extend_from_slice(nodes);
            cap += c;
            if cap >= need && set.len() >= b.bundles.len().min(cands.len()) && i + 1 < by_cap.len()
            {
                set.sort_unstable();
                if let Some(r) = attempt(&set, &format!("the {} largest racks together", i + 1)) {
                    return Some(r);
                }
                break;
            }
        }
    }
    attempt(cands, "all candidate nodes")
}
