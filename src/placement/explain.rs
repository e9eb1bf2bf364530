//! Why each node was or was not chosen (`orrery explain`).
//!
//! The placement functions fill an [`Explain`] while they decide (the rules they applied, in
//! order, and a verdict and score per node), so an explanation is a record of the decision,
//! never a second implementation of it. The simulation turns it into an [`Explanation`] with
//! the outcome it then acted on (`sim::explain`), which is what `orrery explain` prints as text
//! or JSON.

use super::NodeId;
use super::state::ClusterState;
use crate::scenario::workload::{LabelConstraint, LabelOp};
use serde::Serialize;
use std::fmt::Write;

/// Version of the [`Explanation`] JSON (`orrery explain --json`). 2: each candidate's scores
/// are objects naming what they score (`{"scored": "bundle {GPU: 8}", "score": 0.29}`).
pub const EXPLAIN_SCHEMA_VERSION: u32 = 2;

/// The one score scale `explain` shows, for tasks and bundles alike.
pub const SCORE_SCALE: &str = "score: 0 to 1, higher is preferred. For a task, actor or replica it is 1 - the node's \
hybrid score (Ray's: the node's critical utilization, its highest used share of CPU, memory and object store, GPU not \
counted, taken as 0 below the spread threshold 0.5); for a bundle it is Ray's least-resource score divided by the \
number of resources requested: the mean share of each requested resource the node would have left free. \
`-` means the request does not fit there now.";

/// Every node considered by one placement decision, and the rules that decided it.
#[derive(Debug, Clone, Default)]
pub struct Explain {
    pub candidates: Vec<Candidate>,
    /// The rules that decided, in the order they applied, as sentences naming nodes.
    pub rules: Vec<String>,
    /// What each entry of [`Candidate::scores`] scores: the request of a task, each distinct
    /// bundle of a group (in scheduling order), or STRICT_PACK's summed request.
    pub scored: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub node: NodeId,
    pub verdict: Verdict,
    pub chosen: bool,
    /// On [`SCORE_SCALE`], one per [`Explain::scored`]; `None` where it does not fit now.
    pub scores: Vec<Option<f64>>,
    /// What else decided about this node, said after the verdict (which bundles' label
    /// selectors let them onto it; which option of a fallback strategy it was judged for).
    pub note: Option<String>,
}

impl Candidate {
    /// The verdict in words, with its note.
    pub fn describe(&self) -> String {
        match &self.note {
            Some(n) => format!("{} ({n})", self.verdict.describe()),
            None => self.verdict.describe(),
        }
    }
}

/// Why a node is (not) a candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Dead,
    LabelMismatch(String),
    TenantRule(String),
    /// Could never hold the request (its totals are too small).
    Infeasible,
    /// Could hold it, but not now.
    Busy,
    /// STRICT_PACK: the summed request fits the node's totals, but its devices could never
    /// hold the bundles one after another (a fraction of a device comes from one device).
    Unpackable,
    /// Fits now.
    Fits,
}

impl Verdict {
    pub fn describe(&self) -> String {
        match self {
            Verdict::Dead => "dead".into(),
            Verdict::LabelMismatch(c) => format!("label mismatch: {c}"),
            Verdict::TenantRule(r) => format!("tenant rule: {r}"),
            Verdict::Infeasible => "infeasible (could never hold the request)".into(),
            Verdict::Busy => "busy (could hold it, not now)".into(),
            Verdict::Unpackable => {
                "the sum fits, but its devices could never hold the bundles one after another"
                    .into()
            }
            Verdict::Fits => "fits now".into(),
        }
    }
}

/// `key = value`, `key != value`, `key in (a, b)`, `key not in (a, b)`.
pub fn describe_constraint(c: &LabelConstraint) -> String {
    match &c.op {
        LabelOp::Equals(v) => format!("{} = {v}", c.key),
        LabelOp::NotEquals(v) => format!("{} != {v}", c.key),
        LabelOp::In(vs) => format!("{} in ({})", c.key, vs.join(", ")),
        LabelOp::NotIn(vs) => format!("{} not in ({})", c.key, vs.join(", ")),
        LabelOp::Exists => format!("{} exists", c.key),
        LabelOp::DoesNotExist => format!("{} does not exist", c.key),
    }
}

/// `{pool = a, zone != b}`; `{}` for an empty selector (every node).
pub fn show_selector(s: &[LabelConstraint]) -> String {
    let v: Vec<String> = s.iter().map(describe_constraint).collect();
    format!("{{{}}}", v.join(", "))
}

/// Sentences about the rules that decided, collected only when an explanation is asked for
/// (`Why(None)` costs a branch).
pub(crate) struct Why<'a>(pub(crate) Option<&'a mut Vec<String>>);

impl Why<'_> {
    pub(crate) fn say(&mut self, f: impl FnOnce() -> String) {
        if let Some(v) = &mut self.0 {
            v.push(f());
        }
    }
    pub(crate) fn on(&self) -> bool {
        self.0.is_some()
    }
}

/// One node's line of an [`Explanation`].
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NodeLine {
    pub node: String,
    pub node_type: String,
    pub verdict: String,
    /// One per [`Explanation::scored`], in that order, each naming what it scores.
    pub scores: Vec<Score>,
    /// Bundles (1-based, in the group's order) or the task placed or queued here.
    pub chosen: bool,
}

/// One score of a node: what it scores (an entry of [`Explanation::scored`]) and the score on
/// [`SCORE_SCALE`] (dimensionless, 0 to 1), `null` where the request does not fit now.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Score {
    pub scored: String,
    pub score: Option<f64>,
}

/// What happened to the item at its first placement, in the run's own terms.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Started (a task, actor or replica) or created (a placement group) there now.
    Placed,
    /// Waits in a queue at a node, placed again when resources free.
    Queued,
    /// A placement group that waits (nothing reserved), retried with backoff.
    Pending,
    /// Could never be placed on the alive cluster: Ray keeps it pending forever.
    Infeasible,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Placed => "placed",
            Outcome::Queued => "queued",
            Outcome::Pending => "pending",
            Outcome::Infeasible => "infeasible",
        }
    }
}

/// `orrery explain`'s answer for one item (`--json` prints it as is).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Explanation {
    pub schema_version: u32,
    /// `workload.item`.
    pub item: String,
    /// `task`, `actor`, `service replica` or `placement group`.
    pub kind: String,
    /// Simulated time of the decision.
    pub time_s: f64,
    /// `ray_default`, `spread` or `topology_aware`.
    pub policy: String,
    /// `DEFAULT`, `SPREAD`, `node_affinity(n0 soft)`, or a group's `PACK` ... `STRICT_SPREAD`.
    pub strategy: String,
    /// The request (a task's) or each bundle's, as the DSL writes it.
    pub requests: Vec<String>,
    /// STRICT_PACK: all bundles together, which is what is placed on one node.
    pub summed_request: Option<String>,
    pub outcome: Outcome,
    /// The node it went to or waits at (a task), or each bundle's node (a created group).
    pub nodes: Vec<String>,
    /// Why it waits or can never be placed.
    pub reason: Option<String>,
    /// The rules that decided, in order.
    pub rules: Vec<String>,
    pub score_scale: String,
    /// What each score column scores.
    pub scored: Vec<String>,
    pub candidates: Vec<NodeLine>,
}

impl Explanation {
    /// The node lines of `e` with names, for the item's outcome.
    pub fn lines(st: &ClusterState, e: &Explain) -> Vec<NodeLine> {
        e.candidates
            .iter()
            .map(|c| NodeLine {
                node: st.nodes[c.node].name().to_string(),
                node_type: st.nodes[c.node].node_type().to_string(),
                verdict: c.describe(),
                scores: c
                    .scores
                    .iter()
                    .enumerate()
                    .map(|(i, s)| Score {
                        scored: e.scored.get(i).cloned().unwrap_or_default(),
                        score: s.map(round4),
                    })
                    .collect(),
                chosen: c.chosen,
            })
            .collect()
    }

    /// The text `orrery explain` prints.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} ({}) at t={:.6} s, policy {}, strategy {}",
            self.item, self.kind, self.time_s, self.policy, self.strategy
        );
        let label = match (self.kind == "placement group", self.requests.len()) {
            (false, _) => "request ",
            (true, 1) => "bundle  ",
            (true, _) => "bundles ",
        };
        let _ = writeln!(s, "{label}  {}", group_requests(&self.requests));
        if let Some(sum) = &self.summed_request {
            let _ = writeln!(
                s,
                "summed    {sum} (STRICT_PACK places all bundles on one node)"
            );
        }
        let at = if self.nodes.is_empty() {
            String::new()
        } else if self.outcome == Outcome::Queued {
            format!(" at {}", self.nodes.join(", "))
        } else {
            format!(" on {}", group_nodes(&self.nodes))
        };
        let _ = writeln!(s, "outcome   {}{at}", self.outcome.word());
        if let Some(r) = &self.reason {
            let _ = writeln!(s, "why       {r}");
        }
        if !self.rules.is_empty() {
            let _ = writeln!(s, "\nrules that decided, in order:");
            for r in &self.rules {
                let _ = writeln!(s, "  - {r}");
            }
        }
        let _ = writeln!(s, "\n{}\n", self.score_scale);
        let labels = (0..self.scored.len()).map(|i| {
            if self.scored.len() > 1 {
                format!("score[{}]", i + 1)
            } else {
                "score".into()
            }
        });
        // The last, untitled column marks the chosen node(s).
        let header = ["node".to_string(), "verdict".into()]
            .into_iter()
            .chain(labels)
            .chain([String::new()]);
        let mut t = crate::table::Table::new(header).left(&[1, self.scored.len() + 2]);
        for c in &self.candidates {
            let scores = c
                .scores
                .iter()
                .map(|x| x.score.map_or("-".to_string(), |v| format!("{v:.4}")));
            let chosen = if c.chosen { "<- chosen" } else { "" };
            t.row(
                [c.node.clone(), c.verdict.clone()]
                    .into_iter()
                    .chain(scores)
                    .chain([chosen.to_string()]),
            );
        }
        s.push_str(&t.render());
        if self.scored.len() > 1 {
            for (i, r) in self.scored.iter().enumerate() {
                let _ = writeln!(s, "score[{}]: {r}", i + 1);
            }
        }
        s
    }
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// `{GPU: 8} x 2, {CPU: 1}`: consecutive equal entries counted.
fn group_requests(v: &[String]) -> String {
    runs(v)
        .into_iter()
        .map(|(x, n)| {
            if n > 1 {
                format!("{x} x {n}")
            } else {
                x.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `r0.n0 (bundles 1-2), r0.n1 (bundle 3)`.
fn group_nodes(v: &[String]) -> String {
    if v.len() == 1 {
        return v[0].clone();
    }
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    for (x, n) in runs(v) {
        let b = if n > 1 {
            format!("bundles {}-{}", i + 1, i + n)
        } else {
            format!("bundle {}", i + 1)
        };
        out.push(format!("{x} ({b})"));
        i += n;
    }
    out.join(", ")
}

fn runs(v: &[String]) -> Vec<(&str, usize)> {
    let mut out: Vec<(&str, usize)> = Vec::new();
    for x in v {
        match out.last_mut() {
            Some((y, n)) if *y == x.as_str() => *n += 1,
            _ => out.push((x.as_str(), 1)),
        }
    }
    out
}

impl Explain {
    /// One line per node: name, verdict, and `<- chosen` on the chosen node(s) (what tests
    /// and callers without a run print).
    pub fn render(&self, state: &ClusterState) -> String {
        let width = self
            .candidates
            .iter()
            .map(|c| state.nodes[c.node].name().len())
            .max()
            .unwrap_or(0);
        let mut s = String::new();
        for c in &self.candidates {
            let sc: Vec<String> = c
                .scores
                .iter()
                .map(|x| x.map_or("-".into(), |v| format!("{v:.4}")))
                .collect();
            let _ = writeln!(
                s,
                "{:<width$}  {}{}{}",
                state.nodes[c.node].name(),
                c.describe(),
                if sc.is_empty() {
                    String::new()
                } else {
                    format!(", score {}", sc.join(" "))
                },
                if c.chosen { "  <- chosen" } else { "" }
            );
        }
        s
    }
}
