//! Where a run's work ran, kept for the first seed of each sweep cell, and what differed
//! between cells: the sweep report's answer to "why do these cells differ?" when the metrics
//! alone do not say (a policy sweep's makespans differ because a gang landed on more racks
//! and its collectives crossed the spine). Every sentence is derived from the runs' data.

use crate::sim::metrics::RunMetrics;
use serde::{Deserialize, Serialize};

/// A placement group as the run left it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GroupPlacement {
    /// `workload.group`.
    pub name: String,
    /// Each bundle's node when the group was created (the policy's choice), and its racks.
    pub created_on: Vec<String>,
    pub racks: usize,
    /// Each bundle's node at the end of the run (equal to `created_on` unless a failure moved
    /// a bundle).
    pub ended_on: Vec<String>,
}

/// A training job's mean step and communication time per step, seconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobTimes {
    /// `workload.job`.
    pub name: String,
    pub step_s: f64,
    pub communication_s: f64,
}

/// Where one run's work ran and what its network carried between racks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Placement {
    pub groups: Vec<GroupPlacement>,
    pub jobs: Vec<JobTimes>,
    /// Bytes on the leaf ↔ spine links (summed over links, as `links.csv`'s `link_bytes`);
    /// `None` without such links.
    pub spine_link_bytes: Option<f64>,
}

impl Placement {
    pub fn of(m: &RunMetrics) -> Placement {
        Placement {
            groups: m
                .placement_groups
                .iter()
                .map(|p| GroupPlacement {
                    name: format!("{}.{}", p.workload, p.name),
                    created_on: p.nodes_at_creation.clone(),
                    racks: p.racks_at_creation,
                    ended_on: p.nodes.clone(),
                })
                .collect(),
            jobs: m
                .training
                .iter()
                .filter(|t| t.steps_done > 0)
                .map(|t| JobTimes {
                    name: format!("{}.{}", t.workload, t.name),
                    step_s: t.step_time,
                    communication_s: t.communication_time / t.steps_done as f64,
                })
                .collect(),
            spine_link_bytes: m.links.get("leaf_spine").map(|l| l.link_bytes),
        }
    }
}

/// Relative differences below this are reported as "the same" (rounding of shared rates).
const SAME: f64 = 0.005;

fn differs(xs: &[f64]) -> bool {
    let (lo, hi) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
            (l.min(*x), h.max(*x))
        });
    hi > lo && (hi - lo) > SAME * hi.abs()
}

fn racks(n: usize) -> String {
    format!("{n} rack{}", if n == 1 { "" } else { "s" })
}

/// Sentences saying what differed between cells (`label`, placement of its first seed): each
/// placement group created on different nodes (its racks and nodes per cell), each training
/// job whose communication per step differs by more than 0.5 %, and the spine's bytes. Empty
/// when nothing differed.
pub fn differences(cells: &[(String, &Placement)]) -> Vec<String> {
    let mut out = Vec::new();
    if cells.len() < 2 {
        return out;
    }
    let first = cells[0].1;
    for g in &first.groups {
        let per: Vec<Option<&GroupPlacement>> = cells
            .iter()
            .map(|(_, p)| p.groups.iter().find(|x| x.name == g.name))
            .collect();
        if per.iter().flatten().all(|x| x.created_on == g.created_on) {
            continue;
        }
        let each: Vec<String> = cells
            .iter()
            .zip(&per)
            .filter_map(|((label, _), x)| {
                x.map(|x| {
                    format!(
                        "{} ({}) with {label}",
                        racks(x.racks),
                        x.created_on.join(" ")
                    )
                })
            })
            .collect();
        out.push(format!(
            "`{}` was placed on {}.",
            g.name,
            each.join(", and on ")
        ));
    }
    for j in &first.jobs {
        let per: Vec<(&str, &JobTimes)> = cells
            .iter()
            .filter_map(|(label, p)| {
                p.jobs
                    .iter()
                    .find(|x| x.name == j.name)
                    .map(|x| (label.as_str(), x))
            })
            .collect();
        let comm: Vec<f64> = per.iter().map(|(_, x)| x.communication_s).collect();
        if per.len() < 2 || !differs(&comm) {
            continue;
        }
        let each: Vec<String> = per
            .iter()
            .map(|(label, x)| {
                format!(
                    "{:.3} s per step ({:.3} s step time) with {label}",
                    x.communication_s, x.step_s
                )
            })
            .collect();
        out.push(format!(
            "`{}` communicated {}.",
            j.name,
            each.join(", and ")
        ));
    }
    let spine: Vec<(&str, f64)> = cells
        .iter()
        .filter_map(|(label, p)| p.spine_link_bytes.map(|b| (label.as_str(), b)))
        .collect();
    let bytes: Vec<f64> = spine.iter().map(|(_, b)| *b).collect();
    if spine.len() >= 2 && differs(&bytes) {
        let each: Vec<String> = spine
            .iter()
            .map(|(label, b)| format!("{} with {label}", crate::plot::fmt_bytes(*b)))
            .collect();
        out.push(format!(
            "The leaf–spine links carried {} (summed over links).",
            each.join(", and ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(nodes: &[&str], racks: usize, comm: f64, spine: f64) -> Placement {
        let v: Vec<String> = nodes.iter().map(|s| s.to_string()).collect();
        Placement {
            groups: vec![GroupPlacement {
                name: "w.g".into(),
                created_on: v.clone(),
                racks,
                ended_on: v,
            }],
            jobs: vec![JobTimes {
                name: "w.j".into(),
                step_s: 1.0 + comm,
                communication_s: comm,
            }],
            spine_link_bytes: Some(spine),
        }
    }

    #[test]
    fn names_what_differed_and_nothing_else() {
        let a = p(&["r0.n1", "r1.n0"], 2, 0.4, 2.0 * 1024f64.powi(4));
        let b = p(&["r1.n0", "r1.n1"], 1, 0.2, 0.0);
        let d = differences(&[("policy=a".into(), &a), ("policy=b".into(), &b)]);
        assert_eq!(
            d,
            [
                "`w.g` was placed on 2 racks (r0.n1 r1.n0) with policy=a, and on 1 rack (r1.n0 r1.n1) with policy=b.",
                "`w.j` communicated 0.400 s per step (1.400 s step time) with policy=a, and 0.200 s per step (1.200 s step time) with policy=b.",
                "The leaf–spine links carried 2 TiB with policy=a, and 0 B with policy=b (summed over links).",
            ]
        );
        // The same placement and times within 0.5 %: nothing to say.
        let c = p(&["r0.n1", "r1.n0"], 2, 0.4005, 2.0 * 1024f64.powi(4));
        assert!(differences(&[("x".into(), &a), ("y".into(), &c)]).is_empty());
        assert!(differences(&[("x".into(), &a)]).is_empty());
    }
}
