//! Placement groups: atomic creation of bundle sets (Ray's retry backoff while they wait),
//! TPU slice gangs, and release when their training job ends.
//!
//! Architecture invariant: bundles are placed by `crate::placement::place_bundles` and
//! allocated through `allocate_all` (all or nothing).

use super::{Effect, Ev, Sim};
use crate::engine::Time;
use crate::placement::{self, Allocation, BundleRequest, Explain, NodeId, PgDecision, Request};
use crate::scenario::workload::{LabelConstraint, PgStrategy, Policy};
use crate::sim::World;
use std::collections::BTreeMap;

/// The placement groups, in order of appearance (a group's id is its index).
#[derive(Default)]
pub(super) struct PlacementGroups {
    pub(super) list: Vec<Pg>,
}

indexed_by_id!(PlacementGroups, Pg);

pub(super) struct Pg {
    pub(super) workload: usize,
    pub(super) index: usize,
    /// The bundles of the option the group holds (or will try first).
    pub(super) bundles: Vec<Request>,
    /// Every option, in the order Ray tries them: the group's own bundles, then each
    /// `fallback`; each bundle with its label selector.
    pub(super) options: Vec<(Vec<Request>, Vec<Vec<LabelConstraint>>)>,
    /// The option the group was created with (0: its own bundles).
    pub(super) option: usize,
    /// The topology strategy's label, and the value of the domain the group was created in.
    pub(super) domain: Option<String>,
    pub(super) domain_value: Option<String>,
    pub(super) strategy: PgStrategy,
    pub(super) policy: Policy,
    pub(super) tenant: Option<usize>,
    pub(super) requested: Time,
    pub(super) created: Option<Time>,
    pub(super) infeasible: bool,
    pub(super) attempts: u64,
    pub(super) backoff: Time,
    pub(super) nodes: Vec<NodeId>,
    /// `nodes` when the group was created, before any failure moved a bundle.
    pub(super) created_nodes: Vec<NodeId>,
    /// One per bundle once created; `None` while a bundle lost with its node is re-placed.
    pub(super) allocs: Vec<Option<Allocation>>,
    pub(super) jobs: Vec<u32>,
    pub(super) lost_since: Option<Time>,
    /// Reserves a whole slice; `bundles` are filled in from the slice it gets.
    pub(super) slice: bool,
}

impl Sim<'_> {
    /// A training job finished: its placement group's bundles are freed (Ray removes the
    /// group when the job ends).
    pub(super) fn release_pg(&mut self, p: usize) {
        let now = self.w.now();
        let allocs = std::mem::take(&mut self.pgs[p].allocs);
        let tenant = self.pgs[p].tenant;
        let mut nodes = Vec::new();
        for (a, b) in allocs.iter().zip(self.pgs[p].bundles.clone()) {
            let Some(a) = a else { continue };
            self.w.free(a, tenant);
            let units = self.w.device_units(&b);
            self.w.busy(a.node, -units, now);
            nodes.push(a.node);
        }
        nodes.dedup();
        for n in nodes {
            self.dispatch(n);
        }
    }
}

impl PlacementGroups {
    pub(super) fn try_pg(&mut self, world: &mut World<'_>, p: u32) -> Effect {
        let now = world.now();
        let spec = world.spec;
        let pg = &self[p as usize];
        if pg.created.is_some() || pg.infeasible {
            return Effect::Nothing;
        }
        // The group's name is formatted only when an explanation is asked for (as
        // `scheduling.rs` does for tasks): a retried group comes back here on every backoff.
        let w = &spec.workloads[pg.workload];
        let name = || format!("{}.{}", w.name, w.placement_groups[pg.index].name);
        let want_explain = world.explaining(name);
        let mut ex = Explain::default();
        // A slice group takes its bundles from the first intact slice that can hold them.
        let (options, selector) = if pg.slice {
            match self.slice_gang(world, p) {
                Some((b, sel)) => (vec![(b, Vec::new())], sel),
                None => {
                    self[p as usize].attempts += 1;
                    if world.state.slices() == 0 {
                        self[p as usize].infeasible = true;
                    } else {
                        self.retry_pg(world, p);
                    }
                    return Effect::Nothing;
                }
            }
        } else {
            (pg.options.clone(), Vec::new())
        };
        let pg = &self[p as usize];
        let dkey = pg.domain.clone();
        let domain = dkey.as_deref().map(|k| (k, None));
        let reqs: Vec<BundleRequest> = options
            .iter()
            .map(|(bundles, sels)| BundleRequest {
                bundles,
                strategy: pg.strategy,
                tenant: pg.tenant,
                policy: pg.policy,
                label_selector: &selector,
                bundle_selectors: sels,
                domain,
            })
            .collect();
        let (k, d) = placement::place_options(
            &world.state,
            &reqs,
            if want_explain { Some(&mut ex) } else { None },
        );
        let bundles = options[k].0.clone();
        // What the engine does with the decision, for `orrery explain`.
        let explained = want_explain.then(|| (name(), k, d.clone()));
        drop(reqs);
        let pg = &mut self[p as usize];
        pg.attempts += 1;
        pg.bundles.clone_from(&bundles);
        pg.option = k;
        let (tenant, policy) = (pg.tenant, pg.policy);
        let created = match d {
            PgDecision::Placed(nodes) => {
                if let Some(allocs) = world.allocate_all(&bundles, &nodes, tenant, policy) {
                    let value = self[p as usize]
                        .domain
                        .as_deref()
                        .and_then(|key| world.state.nodes[nodes[0]].labels().get(key).cloned());
                    let pg = &mut self[p as usize];
                    pg.created = Some(now);
                    pg.nodes = nodes.clone();
                    pg.created_nodes = nodes.clone();
                    pg.allocs = allocs.into_iter().map(Some).collect();
                    pg.domain_value = value;
                    Some(nodes)
                } else {
                    self.retry_pg(world, p);
                    None
                }
            }
            PgDecision::Wait => {
                self.retry_pg(world, p);
                None
            }
            PgDecision::Infeasible => {
                self[p as usize].infeasible = true;
                None
            }
        };
        if let Some((name, k, d)) = explained {
            let pg = &self[p as usize];
            let br = BundleRequest {
                bundles: &bundles,
                strategy: pg.strategy,
                tenant: pg.tenant,
                policy: pg.policy,
                label_selector: &selector,
                bundle_selectors: &options[k].1,
                domain,
            };
            world.explain = Some(world.explain_pg(name, &br, &ex, &d, created.as_deref()));
        }
        if created.is_some() {
            return Effect::StartJobs(p);
        }
        Effect::Nothing
    }
}

impl PlacementGroups {
    /// The placement groups of workload `wi` (created by `try_pg` once their jobs are known).
    pub(super) fn start_pgs(
        &mut self,
        world: &mut World<'_>,
        wi: usize,
        w: &crate::scenario::workload::Workload,
        tenant: Option<usize>,
    ) {
        // Placement groups, then training jobs on them.
        for (pi, p) in w.placement_groups.iter().enumerate() {
            let mem = w.placement_group_device_memory(&p.name);
            let reqs = |st: &mut crate::placement::ClusterState,
                        bs: &[crate::scenario::workload::Resources]|
             -> Vec<Request> {
                bs.iter().map(|b| st.request_with_memory(b, mem)).collect()
            };
            let mut options = vec![(
                reqs(&mut world.state, &p.bundles),
                p.bundle_selectors.clone(),
            )];
            for f in &p.fallbacks {
                options.push((reqs(&mut world.state, &f.bundles), f.selectors.clone()));
            }
            self.list.push(Pg {
                workload: wi,
                index: pi,
                bundles: options[0].0.clone(),
                options,
                option: 0,
                domain: p.domain.clone(),
                domain_value: None,
                strategy: p.strategy,
                policy: p.policy.unwrap_or(w.policy),
                tenant,
                requested: 0,
                created: None,
                infeasible: false,
                attempts: 0,
                backoff: 100 * crate::engine::MS,
                nodes: Vec::new(),
                created_nodes: Vec::new(),
                allocs: Vec::new(),
                jobs: Vec::new(),
                lost_since: None,
                slice: p.slice,
            });
        }
    }

    /// The bundles and label selector of the first intact slice whose gang fits now.
    pub(crate) fn slice_gang(
        &self,
        world: &World<'_>,
        p: u32,
    ) -> Option<(
        Vec<Request>,
        Vec<crate::scenario::workload::LabelConstraint>,
    )> {
        let pg = &self.list[p as usize];
        (0..world.state.slices())
            .filter(|&s| world.state.slice_intact(s))
            .find_map(|s| {
                let bundles = world.state.slice_bundles(s);
                let selector = world.state.slice_selector(s);
                let br = BundleRequest {
                    bundles: &bundles,
                    strategy: PgStrategy::Pack,
                    tenant: pg.tenant,
                    policy: pg.policy,
                    label_selector: &selector,
                    bundle_selectors: &[],
                    domain: None,
                };
                matches!(
                    placement::place_bundles(&world.state, &br, None),
                    PgDecision::Placed(_)
                )
                .then_some((bundles, selector))
            })
    }

    /// Ray retries pending groups with backoff: 100 ms × 1.5 up to 1 s
    /// (`gcs_create_placement_group_retry_*` in ray_config_def.h).
    pub(super) fn retry_pg(&mut self, world: &mut World<'_>, p: u32) {
        let pg = &mut self.list[p as usize];
        let delay = pg.backoff;
        pg.backoff = ((pg.backoff as f64 * 1.5) as Time).min(crate::engine::SEC);
        if world.q.is_empty() && world.horizon.is_none() {
            // Nothing else will ever free resources: the group stays pending.
            return;
        }
        world.q.after(delay, Ev::PgTry(p));
    }
}

/// What a training job reads of its group: where its devices and CPUs are.
impl PlacementGroups {
    /// The (node, device) of every device instance group `pg` holds: node-major in the
    /// group's node order, devices ascending (the ranks of its job's collectives).
    pub(super) fn ranks(&self, world: &World<'_>, pg: u32) -> Vec<(usize, usize)> {
        let unit = |rid: usize| world.unit_ids.contains(&rid);
        placement::device_ranks(self[pg as usize].allocs.iter().flatten(), unit)
    }

    /// The devices group `pg` holds on each of its nodes.
    pub(super) fn devices_per_node(&self, world: &World<'_>, pg: u32) -> BTreeMap<NodeId, u32> {
        let pg = &self[pg as usize];
        let mut per_node: BTreeMap<NodeId, u32> = BTreeMap::new();
        for (b, n) in pg.bundles.iter().zip(&pg.nodes) {
            *per_node.entry(*n).or_insert(0) += world.device_units(b).round() as u32;
        }
        per_node
    }

    /// The CPUs of group `pg`'s bundles on each of its nodes.
    pub(super) fn cpus_per_node(&self, pg: u32) -> BTreeMap<NodeId, f64> {
        let pg = &self[pg as usize];
        let mut per_node: BTreeMap<NodeId, f64> = BTreeMap::new();
        for (b, n) in pg.bundles.iter().zip(&pg.nodes) {
            *per_node.entry(*n).or_insert(0.0) += super::cpu::cpus_of(b);
        }
        per_node
    }
}
