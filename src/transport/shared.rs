//! A plan as the simulation's one network runs it: its idle-network critical path split into
//! a fixed part (latencies, per-chunk overheads, staging copies) paid as a delay, and the
//! wire bytes on that path moved as one flow over the slowest wire stage's route, where it
//! shares bandwidth max-min with everything else on the network.
//!
//! On an idle network this is exactly [`closed_form`]: the flow carries the critical path's
//! bandwidth seconds × that route's bottleneck, so it takes those seconds. Under contention
//! the wire share stretches by the max-min rate the flow gets; the pipelining of staging
//! behind a slowed wire is not re-derived (a lower bound when contention would make the wire
//! the slowest stage of a staging-bound transfer).

use super::exec::{Breakdown, closed_form};
use super::plan::{Mover, Plan};
use crate::network::LinkId;

#[derive(Debug, Clone, PartialEq)]
pub struct SharedPlan {
    /// The idle-network breakdown.
    pub idle: Breakdown,
    /// Seconds of the critical path off the wire, paid before the flow starts.
    pub fixed_secs: f64,
    /// The wire share: (route, bytes); `None` when nothing crosses the wire.
    pub wire: Option<(Vec<LinkId>, f64)>,
}

/// Split `plan` for a shared network whose links have `capacity` when idle.
pub fn shared(plan: &Plan, capacity: &[f64]) -> SharedPlan {
    let idle = closed_form(plan, capacity);
    let mut slowest: Option<(f64, &[LinkId])> = None;
    for s in plan.stages.iter().filter(|s| s.kind.is_wire()) {
        let Mover::Flow { links, inflation } = &s.mover else {
            continue;
        };
        let path = &plan.links[links.clone()];
        let cap = path
            .iter()
            .map(|l| capacity[*l])
            .fold(f64::INFINITY, f64::min);
        if path.is_empty() || cap.is_nan() || cap <= 0.0 {
            continue;
        }
        let t = inflation / cap;
        if slowest.is_none_or(|(x, _)| t > x) {
            slowest = Some((t, path));
        }
    }
    let wire = match slowest {
        Some((_, path)) if idle.bandwidth_secs > 0.0 => {
            let cap = path
                .iter()
                .map(|l| capacity[*l])
                .fold(f64::INFINITY, f64::min);
            Some((path.to_vec(), idle.bandwidth_secs * cap))
        }
        _ => None,
    };
    let fixed_secs = if wire.is_some() {
        idle.secs - idle.bandwidth_secs
    } else {
        idle.secs
    };
    SharedPlan {
        idle,
        fixed_secs,
        wire,
    }
}
