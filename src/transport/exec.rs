//! Running plans on a flow network, and the closed form they reduce to on an idle one.
//!
//! Pipeline model. A phase sends k equal chunks (c = n / k bytes) through stages 1..s in
//! order; a stage works on one chunk at a time, chunks in order. Stage i costs a chunk
//! t_i = o_i + d_i (per-chunk overhead plus data time: c × inflation / rate) and delays it by
//! L_i before it can start there (latency; it does not occupy the stage). With C(i, j) the time
//! chunk j leaves stage i:
//!
//!   C(i, j) = max(C(i−1, j) + L_i, C(i, j−1)) + t_i.
//!
//! Unrolled, C(s, k) is the heaviest monotone path through the (stage, chunk) grid: every path
//! crosses each stage boundary once (so pays every L_i once) and visits s + k − 1 cells, at most
//! k − 1 of them repeats of one stage. With constant t_i the heaviest path stays on the slowest
//! stage for all repeats:
//!
//!   T_phase = Σ L_i + Σ t_i + (k − 1) · max_i t_i     (≤ Σ L_i + (k + s − 1) · max_i t_i),
//!
//! and a plan takes the sum of its phases. [`closed_form`] computes this for an idle network
//! (d_i from each path's bottleneck, stages not sharing links). [`run_plans`] runs the same
//! recurrence as events on a copy of a [`FlowNet`]: each chunk's data moves as a flow at its
//! max-min rate among the background flows and the other transfers' flows, so contention,
//! stages of one transfer sharing a link, and background flows finishing mid-transfer all
//! count. On an idle network with stages on disjoint links it gives the closed form exactly.
//!
//! Breakdown. The critical path (the chain of waits that ends the transfer) is tracked as it
//! forms; its time splits into latency (Σ L_i), overhead (per-chunk o_i on the path), staging
//! (data time of copy stages: D2H, H2D, memcpys) and bandwidth (data time of wire stages); the
//! four add up to the total.

use super::plan::{Mover, Plan, TransportError};
use crate::network::drive::Step;
use crate::network::{FlowId, FlowNet};
use serde::Serialize;
use std::collections::VecDeque;

/// Where a transfer's time went, along its critical path. `secs` is the sum of the rest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Breakdown {
    #[serde(rename = "time_s")]
    pub secs: f64,
    /// Fixed latencies: path latency and software latency, paid once.
    #[serde(rename = "latency_s")]
    pub latency_secs: f64,
    /// Per-message (per-chunk) overheads on the critical path.
    #[serde(rename = "overhead_s")]
    pub overhead_secs: f64,
    /// Copies through host memory and PCIe (D2H, H2D, serialization, loopback).
    #[serde(rename = "staging_s")]
    pub staging_secs: f64,
    /// Bandwidth-bound time on the network or scale-up fabric.
    #[serde(rename = "bandwidth_s")]
    pub bandwidth_secs: f64,
}

impl Breakdown {
    fn add(mut self, latency: f64, overhead: f64, data: f64, wire: bool) -> Breakdown {
        self.latency_secs += latency;
        self.overhead_secs += overhead;
        if wire {
            self.bandwidth_secs += data;
        } else {
            self.staging_secs += data;
        }
        self.secs =
            self.latency_secs + self.overhead_secs + self.staging_secs + self.bandwidth_secs;
        self
    }

    fn never() -> Breakdown {
        Breakdown {
            secs: f64::INFINITY,
            ..Breakdown::default()
        }
    }
}

/// Seconds for a plan on an idle network whose stages share no links (module docs).
pub fn closed_form(plan: &Plan, capacity: &[f64]) -> Breakdown {
    let mut out = Breakdown::default();
    for ph in &plan.phases {
        let k = f64::from(ph.chunks.max(1));
        let c = plan.bytes / k;
        let stages = &plan.stages[ph.stages.clone()];
        let data = |s: &super::plan::Stage| match &s.mover {
            Mover::Flow { links, inflation } => {
                let bottleneck = plan.links[links.clone()]
                    .iter()
                    .map(|l| capacity[*l])
                    .fold(f64::INFINITY, f64::min);
                if links.is_empty() || c == 0.0 {
                    0.0
                } else {
                    c * inflation / bottleneck
                }
            }
            Mover::Copy { rate } => {
                if c == 0.0 {
                    0.0
                } else {
                    c / rate
                }
            }
        };
        let mut slowest: Option<(f64, usize)> = None;
        for (i, s) in stages.iter().enumerate() {
            let d = data(s);
            out = out.add(s.latency, s.overhead, d, s.kind.is_wire());
            if slowest.is_none_or(|(t, _)| s.overhead + d > t) {
                slowest = Some((s.overhead + d, i));
            }
        }
        if let Some((_, i)) = slowest {
            let s = &stages[i];
            out = out.add(
                0.0,
                (k - 1.0) * s.overhead,
                (k - 1.0) * data(s),
                s.kind.is_wire(),
            );
        }
    }
    out
}

/// Run one plan from time 0 on a copy of `background` (its flows keep competing, and leave
/// when they finish).
pub fn run_plan(background: &FlowNet, plan: &Plan) -> Result<Breakdown, TransportError> {
    Ok(run_plans(background, &[(0.0, plan)])?[0])
}

#[derive(Debug, Clone, Copy)]
enum Busy {
    Idle,
    /// Paying the chunk's overhead until then.
    Overhead(f64),
    /// Copying until then.
    Copy(f64),
    Flow,
    /// Data moved; finish at the next settle.
    Done,
}

/// A stage's runtime state within the current phase.
#[derive(Debug, Clone)]
struct StageRun {
    /// Arrived chunks: (ready time, critical path so far, count).
    queue: VecDeque<(f64, Breakdown, u32)>,
    busy: Busy,
    /// Critical path up to the start of the current chunk.
    pred: Breakdown,
    /// When the current chunk's data started moving.
    began: f64,
    /// Finish time and path of the previous chunk.
    last: Option<(f64, Breakdown)>,
    done: u32,
}

struct Run<'p> {
    plan: &'p Plan,
    start: f64,
    phase: usize,
    stages: Vec<StageRun>,
    result: Option<Breakdown>,
}

impl Run<'_> {
    /// Enter phase `p` at time `now` with critical path `acc`.
    fn enter(&mut self, p: usize, now: f64, acc: Breakdown) {
        self.phase = p;
        let Some(ph) = self.plan.phases.get(p) else {
            self.result = Some(acc);
            return;
        };
        let n = ph.stages.len();
        if n == 0 {
            return self.enter(p + 1, now, acc);
        }
        self.stages.clear();
        self.stages.resize(
            n,
            StageRun {
                queue: VecDeque::new(),
                busy: Busy::Idle,
                pred: Breakdown::default(),
                began: 0.0,
                last: None,
                done: 0,
            },
        );
        let first = &self.plan.stages[ph.stages.start];
        self.stages[0].queue.push_back((
            now + first.latency,
            acc.add(first.latency, 0.0, 0.0, false),
            ph.chunks.max(1),
        ));
    }
}

/// Run plans together, each from its start time (seconds), on a copy of `background`: their
/// flows share links max-min with each other and with the background's. Returns each plan's
/// breakdown (`secs` measured from its start; infinite if it can never finish, e.g. over a
/// failed link).
pub fn run_plans(
    background: &FlowNet,
    plans: &[(f64, &Plan)],
) -> Result<Vec<Breakdown>, TransportError> {
    for (start, p) in plans {
        if p.links.iter().any(|l| *l >= background.links()) {
            return Err(TransportError::WrongNetwork);
        }
        if !(start.is_finite() && *start >= 0.0) {
            return Err(TransportError::BadSize(*start));
        }
    }
    let mut net = background.clone();
    let mut runs: Vec<Run> = plans
        .iter()
        .map(|(start, plan)| Run {
            plan,
            start: *start,
            phase: 0,
            stages: Vec::new(),
            result: None,
        })
        .collect();
    // Plans enter their first phase when their start time comes.
    let mut entered = vec![false; runs.len()];
    // Our flows: (flow, run, stage).
    let mut ours: Vec<(FlowId, usize, usize)> = Vec::new();
    let mut now = 0.0f64;
    // Each event finishes a timer or a flow; more than this means something cannot progress.
    let stages: usize = plans
        .iter()
        .map(|(_, p)| {
            p.phases
                .iter()
                .map(|ph| ph.chunks.max(1) as usize * ph.stages.len() * 3 + 2)
                .sum::<usize>()
        })
        .sum();
    let mut budget = 4 * stages + 2 * background.active().count() + 64;
    loop {
        budget = budget.saturating_sub(1);
        if budget == 0 {
            for run in runs.iter_mut().filter(|r| r.result.is_none()) {
                run.result = Some(Breakdown::never());
            }
            break;
        }
        for (r, run) in runs.iter_mut().enumerate() {
            if !entered[r] && run.start <= now {
                entered[r] = true;
                run.enter(0, now, Breakdown::default());
            }
        }
        settle(&mut runs, &mut net, &mut ours, now);
        if runs.iter().all(|r| r.result.is_some()) {
            break;
        }
        // The next event: a timer, a chunk becoming ready, a plan starting, or a flow ending.
        let mut next = f64::INFINITY;
        for (r, run) in runs.iter().enumerate() {
            if !entered[r] {
                next = next.min(run.start);
                continue;
            }
            if run.result.is_some() {
                continue;
            }
            for st in &run.stages {
                match st.busy {
                    Busy::Overhead(t) | Busy::Copy(t) => next = next.min(t),
                    Busy::Idle => {
                        if let Some((ready, _, _)) = st.queue.front() {
                            next = next.min(*ready);
                        }
                    }
                    Busy::Flow | Busy::Done => {}
                }
            }
        }
        match net.step(&mut now, next.is_finite().then_some(next)) {
            Step::Finished(f) => {
                net.remove(f);
                if let Some(k) = ours.iter().position(|(id, _, _)| *id == f) {
                    let (_, r, i) = ours.swap_remove(k);
                    runs[r].stages[i].busy = Busy::Done;
                }
            }
            Step::Reached => {}
            Step::Stuck => {
                // Nothing can move (a flow over a dead link): the rest never finish.
                for run in runs.iter_mut().filter(|r| r.result.is_none()) {
                    run.result = Some(Breakdown::never());
                }
                break;
            }
        }
    }
    Ok(runs
        .into_iter()
        .map(|r| r.result.unwrap_or_else(Breakdown::never))
        .collect())
}

/// Advance every stage whose next step is due at `now`, until nothing changes.
fn settle(runs: &mut [Run], net: &mut FlowNet, ours: &mut Vec<(FlowId, usize, usize)>, now: f64) {
    let mut changed = true;
    while changed {
        changed = false;
        for (r, run) in runs.iter_mut().enumerate() {
            if run.result.is_some() || run.stages.is_empty() {
                continue;
            }
            let plan = run.plan;
            let ph = &plan.phases[run.phase];
            let k = ph.chunks.max(1);
            let chunk = plan.bytes / f64::from(k);
            for i in 0..run.stages.len() {
                let stage = &plan.stages[ph.stages.start + i];
                let st = &mut run.stages[i];
                match st.busy {
                    Busy::Idle => {
                        let Some(&(ready, acc, _)) = st.queue.front() else {
                            continue;
                        };
                        if ready > now {
                            continue;
                        }
                        st.pred = match st.last {
                            Some((t, last)) if t > ready => last,
                            _ => acc,
                        };
                        let front = st.queue.front_mut().expect("checked");
                        front.2 -= 1;
                        if front.2 == 0 {
                            st.queue.pop_front();
                        }
                        st.busy = Busy::Overhead(now + stage.overhead);
                        changed = true;
                    }
                    Busy::Overhead(t) if t <= now => {
                        st.began = now;
                        st.busy = match &stage.mover {
                            Mover::Flow { links, inflation }
                                if !links.is_empty() && chunk > 0.0 =>
                            {
                                let id =
                                    net.add(plan.links[links.clone()].to_vec(), chunk * inflation);
                                ours.push((id, r, i));
                                Busy::Flow
                            }
                            Mover::Copy { rate } if chunk > 0.0 => Busy::Copy(now + chunk / rate),
                            _ => Busy::Done,
                        };
                        changed = true;
                    }
                    Busy::Copy(t) if t <= now => {
                        st.busy = Busy::Done;
                        changed = true;
                    }
                    _ => {}
                }
                if matches!(run.stages[i].busy, Busy::Done) {
                    // The chunk leaves stage i.
                    let st = &mut run.stages[i];
                    let acc =
                        st.pred
                            .add(0.0, stage.overhead, now - st.began, stage.kind.is_wire());
                    st.busy = Busy::Idle;
                    st.last = Some((now, acc));
                    st.done += 1;
                    let done = st.done;
                    if i + 1 < run.stages.len() {
                        let next = &plan.stages[ph.stages.start + i + 1];
                        run.stages[i + 1].queue.push_back((
                            now + next.latency,
                            acc.add(next.latency, 0.0, 0.0, false),
                            1,
                        ));
                    } else if done == k {
                        let p = run.phase + 1;
                        run.enter(p, now, acc);
                        changed = true;
                        break;
                    }
                    changed = true;
                }
            }
        }
    }
}
