//! Collectives priced by a calibration profile's measurement (`[[collective]]`, fitted by
//! `orrery calibrate import` from nccl-tests or rccl-tests): a call of an op the profile
//! timed, on a communicator of the same shape (ranks, nodes, ranks per node), with NCCL
//! left to choose its algorithm and protocol as it did when measured, takes the fit's
//! seconds = α + bytes / β on an idle network. Its flows keep the model's pattern (which
//! links it loads, so it contends as the algorithm would) with their bytes stretched so that
//! the idle time is the measured one: stretch = (bytes / β) / T₀, T₀ the model's bandwidth
//! time with no α. Under contention the max-min sharing slows it as any other call.
//!
//! Assumptions, stated: the fit measured NCCL's own choice (nccl-tests sets no algorithm),
//! so a scenario that fixes `algo` or `proto` is priced by the model instead; the shape must
//! match exactly (no extrapolation to other rank counts), and a size beyond the fitted range
//! uses the last segment.

use super::{Op, Rank};
use crate::network::Graph;
use crate::profile::schema::CollectiveFit;

/// The fit's figures at one size: its latency and its algbw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub alpha: f64,
    pub algbw: f64,
}

/// The profile fit that prices `op` over `ranks`, with the profile's name: every rank's node
/// names the same profile and it timed `op` on as many ranks over as many nodes, the same
/// count on each.
pub fn lookup<'g>(
    graph: &'g Graph,
    op: Op,
    ranks: &[Rank],
) -> Option<(&'g CollectiveFit, &'g str)> {
    let &(n0, _) = ranks.first()?;
    let set = graph.measured_collectives(n0)?;
    let mut per_node: Vec<(usize, usize)> = Vec::new();
    for &(node, _) in ranks {
        let same = graph
            .measured_collectives(node)
            .is_some_and(|m| m.profile == set.profile);
        if !same {
            return None;
        }
        match per_node.iter_mut().find(|(n, _)| *n == node) {
            Some(e) => e.1 += 1,
            None => per_node.push((node, 1)),
        }
    }
    let nodes = per_node.len();
    if per_node.iter().any(|&(_, k)| k * nodes != ranks.len()) {
        return None;
    }
    let fit = set.fits.iter().find(|f| {
        f.op == op.name() && f.ranks as usize == ranks.len() && f.nodes as usize == nodes
    })?;
    Some((fit, set.profile.as_str()))
}

/// The fit's latency and algbw for a call of `bytes`.
pub fn at(fit: &CollectiveFit, bytes: f64) -> Option<Measured> {
    let s = fit.segment(bytes)?;
    (s.bandwidth_bytes_per_s > 0.0 && s.latency_s.is_finite()).then_some(Measured {
        alpha: s.latency_s,
        algbw: s.bandwidth_bytes_per_s,
    })
}

/// How a call was priced by a profile, for notes: `allreduce of 8 ranks on 1 node: measured
/// (profile dgx_h100_nccl, nccl-tests ...)`.
pub fn describe(fit: &CollectiveFit, profile: &str) -> String {
    format!(
        "{} of {} ranks on {} node{}: measured (profile {profile}: {})",
        fit.op,
        fit.ranks,
        fit.nodes,
        if fit.nodes == 1 { "" } else { "s" },
        fit.source
    )
}
