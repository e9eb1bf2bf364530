//! `orrery explain`'s record: the first placement decision of the item asked about, taken
//! from the run itself (the placement functions' [`Explain`] and what the engine then did with
//! the decision), so an explanation cannot disagree with the run.

use super::{Sim, Work};
use crate::placement::explain::{EXPLAIN_SCHEMA_VERSION, Explanation, Outcome, SCORE_SCALE};
use crate::placement::fallback::option_name;
use crate::placement::feasible::{self, show};
use crate::placement::{BundleRequest, Explain, NodeId, Request, TaskRequest};
use crate::scenario::workload::{LabelConstraint, PgStrategy, Policy, Strategy};
use crate::sim::World;

/// `ray_default`, `spread`, `topology_aware`: the DSL's names.
fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::RayDefault => "ray_default",
        Policy::Spread => "spread",
        Policy::TopologyAware => "topology_aware",
    }
}

fn strategy_name(s: &Strategy) -> String {
    match s {
        Strategy::Default => "DEFAULT".into(),
        Strategy::Spread => "SPREAD".into(),
        Strategy::NodeAffinity { node, soft } => {
            format!("node_affinity({node}{})", if *soft { " soft" } else { "" })
        }
    }
}

fn pg_strategy_name(s: PgStrategy) -> &'static str {
    match s {
        PgStrategy::Pack => "PACK",
        PgStrategy::Spread => "SPREAD",
        PgStrategy::StrictPack => "STRICT_PACK",
        PgStrategy::StrictSpread => "STRICT_SPREAD",
    }
}

/// What the engine did with a task-like decision.
pub(super) enum Acted {
    /// Started on the node.
    Started(NodeId),
    /// Placement chose the node but the allocation there failed: queued.
    NotStarted(NodeId),
    /// Queued at the node.
    Queued(NodeId),
    /// Infeasible now, but kept queued (a node is down, or a lost output is rebuilt).
    Held,
    Infeasible,
}

impl Sim<'_> {
    /// The explanation of a task, actor or replica's first placement.
    pub(super) fn explain_task(
        &self,
        w: Work,
        t: &TaskRequest,
        fallbacks: &[Vec<LabelConstraint>],
        option: usize,
        ex: &Explain,
        acted: Acted,
    ) -> Explanation {
        let kind = match w {
            Work::Task(_) => "task",
            Work::Actor(_) => "actor",
            Work::Replica(_) => "service replica",
        };
        let (outcome, nodes, reason) = match acted {
            Acted::Started(n) => (Outcome::Placed, vec![self.w.name(n)], None),
            Acted::NotStarted(n) => (
                Outcome::Queued,
                vec![self.w.name(n)],
                Some(format!(
                    "placement chose {}, but the allocation there failed; it waits in its queue",
                    self.w.name(n)
                )),
            ),
            Acted::Queued(n) => (
                Outcome::Queued,
                vec![self.w.name(n)],
                Some(
                    self.w.state
                        .quota_blocked_by(t.tenant, t.request)
                        .map(|q| format!("tenant quota: {q}"))
                        .unwrap_or_else(|| {
                            if fallbacks.is_empty() {
                                "no node that could hold it has room now; it waits and is placed again when resources free".into()
                            } else {
                                format!(
                                    "no node any of its label selectors passes has room now; it waits for {}, the first option with a node that could hold it, and is placed again when resources free",
                                    option_name(option)
                                )
                            }
                        }),
                ),
            ),
            Acted::Held => (
                Outcome::Queued,
                Vec::new(),
                Some(format!(
                    "no alive node can hold it now ({}); it waits for a node to return (or for its lost output to be rebuilt)",
                    feasible::why_task_options(&self.w.state, t, fallbacks)
                )),
            ),
            Acted::Infeasible => (
                Outcome::Infeasible,
                Vec::new(),
                Some(format!(
                    "{}; Ray keeps it pending forever",
                    feasible::why_task_options(&self.w.state, t, fallbacks)
                )),
            ),
        };
        let strategy = match (t.strategy, t.policy) {
            (Strategy::Default, Policy::Spread) => "DEFAULT (the spread policy: SPREAD)".into(),
            (s, _) => strategy_name(s),
        };
        Explanation {
            schema_version: EXPLAIN_SCHEMA_VERSION,
            item: self.item_name(w),
            kind: kind.into(),
            time_s: self.w.now() as f64 / 1e9,
            policy: policy_name(t.policy).into(),
            strategy,
            requests: vec![show(&self.w.state, t.request)],
            summed_request: None,
            outcome,
            nodes,
            reason,
            rules: ex.rules.clone(),
            score_scale: SCORE_SCALE.into(),
            scored: ex.scored.clone(),
            candidates: Explanation::lines(&self.w.state, ex),
        }
    }
}

impl World<'_> {
    /// Whether the item `name` names is the one to explain and none is explained yet
    /// (`name` is formatted only when an explanation is asked for).
    pub(super) fn explaining(&self, name: impl FnOnce() -> String) -> bool {
        self.explain.is_none() && self.explain_target.as_deref().is_some_and(|t| t == name())
    }

    fn name(&self, n: NodeId) -> String {
        self.state.nodes[n].name().to_string()
    }

    /// The explanation of a placement group's first placement attempt: `created` holds the
    /// node of each bundle when the engine created it, `placed` whether placement chose nodes.
    pub(super) fn explain_pg(
        &self,
        name: String,
        b: &BundleRequest,
        ex: &Explain,
        d: &crate::placement::PgDecision,
        created: Option<&[NodeId]>,
    ) -> Explanation {
        use crate::placement::PgDecision;
        let (outcome, nodes, reason) = match (d, created) {
            (_, Some(nodes)) => (
                Outcome::Placed,
                nodes.iter().map(|&n| self.name(n)).collect(),
                None,
            ),
            (PgDecision::Placed(_), None) => (
                Outcome::Pending,
                Vec::new(),
                Some("placement chose nodes, but allocating the bundles there failed; it is retried with backoff".into()),
            ),
            (PgDecision::Wait, _) => {
                let total = b
                    .bundles
                    .iter()
                    .fold(Request::default(), |acc, x| acc.sum(x));
                (
                    Outcome::Pending,
                    Vec::new(),
                    Some(
                        self.state
                            .quota_blocked_by(b.tenant, &total)
                            .map(|q| format!("tenant quota: {q}; nothing is reserved, it is retried with backoff"))
                            .unwrap_or_else(|| {
                                "not every bundle fits now (creation is atomic: nothing is reserved); it would fit the alive cluster empty, and is retried after 100 ms, x 1.5 each time up to 1 s".into()
                            }),
                    ),
                )
            }
            (PgDecision::Infeasible, _) => (
                Outcome::Infeasible,
                Vec::new(),
                Some(format!(
                    "{}; Ray keeps it pending forever",
                    feasible::why_group(&self.state, b).0
                )),
            ),
        };
        let summed = (b.strategy == PgStrategy::StrictPack).then(|| {
            show(
                &self.state,
                &b.bundles
                    .iter()
                    .fold(Request::default(), |acc, x| acc.sum(x)),
            )
        });
        Explanation {
            schema_version: EXPLAIN_SCHEMA_VERSION,
            item: name,
            kind: "placement group".into(),
            time_s: self.now() as f64 / 1e9,
            policy: policy_name(b.policy).into(),
            strategy: pg_strategy_name(b.strategy).into(),
            requests: b.bundles.iter().map(|r| show(&self.state, r)).collect(),
            summed_request: summed,
            outcome,
            nodes,
            reason,
            rules: ex.rules.clone(),
            score_scale: SCORE_SCALE.into(),
            scored: ex.scored.clone(),
            candidates: Explanation::lines(&self.state, ex),
        }
    }
}
