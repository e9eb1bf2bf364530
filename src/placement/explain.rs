//! Why each node was or was not chosen (`orrery explain`).

use super::NodeId;
use super::state::ClusterState;
use crate::spec::workload::{LabelConstraint, LabelOp};
use std::fmt::Write;

/// Every node considered by one placement decision.
#[derive(Debug, Clone, Default)]
pub struct Explain {
    pub candidates: Vec<Candidate>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub node: NodeId,
    pub verdict: Verdict,
    pub chosen: bool,
}

/// Why a node is (not) a candidate. Scores are the policy's: the hybrid critical-utilisation
/// score for tasks (lower is better), the least-resource score for bundles (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Dead,
    LabelMismatch(String),
    TenantRule(String),
    Infeasible,
    Unavailable { score: f64 },
    Available { score: f64 },
}

impl Verdict {
    pub fn describe(&self) -> String {
        match self {
            Verdict::Dead => "dead".into(),
            Verdict::LabelMismatch(c) => format!("label mismatch: {c}"),
            Verdict::TenantRule(r) => format!("tenant rule: {r}"),
            Verdict::Infeasible => "infeasible (could never hold the request)".into(),
            Verdict::Unavailable { score } => format!("busy, score {score:.4}"),
            Verdict::Available { score } => format!("available, score {score:.4}"),
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
    }
}

impl Explain {
    /// One line per node: name, verdict (with score), and `<- chosen` on the chosen node(s).
    pub fn render(&self, state: &ClusterState) -> String {
        let width = self
            .candidates
            .iter()
            .map(|c| state.nodes[c.node].name().len())
            .max()
            .unwrap_or(0);
        let mut s = String::new();
        for c in &self.candidates {
            let _ = writeln!(
                s,
                "{:<width$}  {}{}",
                state.nodes[c.node].name(),
                c.verdict.describe(),
                if c.chosen { "  <- chosen" } else { "" }
            );
        }
        s
    }
}
