//! A model-level training job's iteration (issue 12): the per-rank work that
//! [`crate::model::work::step_work`] derives from the model and its layout, priced on the
//! devices the placement actually gave the job and on the run's one shared network.
//!
//! Assumptions, each a choice Megatron-LM makes by default:
//! - *Rank order.* The group's devices, in [`super::placement_groups::PlacementGroups::ranks`] order (node-major,
//!   devices ascending), take ranks tensor-parallel innermost, then data-parallel, then
//!   pipeline (Megatron-LM's default order "tp-cp-ep-dp-pp",
//!   `megatron/core/parallel_state.py`). A tensor-parallel group wider than a node
//!   therefore crosses the network, and pays what that costs there.
//! - *Compute.* One microbatch on one stage is the sum of its kernels' times
//!   ([`crate::model::ops`] lists them, [`crate::compute::kernels`] prices each: compute
//!   plus memory time at size-dependent efficiencies); the last stage adds the output layer,
//!   and the slowest stage sets the pace. An iteration is (m + (p − 1)/v) such slots: 1F1B
//!   and interleaved 1F1B with v chunks (Narayanan et al. 2021, §2.2), then the optimizer
//!   step.
//! - *Communication* runs as rounds on the shared network after the compute, not overlapped
//!   with it: tensor-parallel collectives sit in the stage's critical path, and gradient
//!   reduction is not overlapped (`--overlap-grad-reduce` is off by default). In order: every
//!   tensor-parallel group at once, every expert-parallel group, the pipeline's sends between
//!   stages (both directions), then the data-parallel reduction. With `overlap grad_reduce`
//!   the gradient reduction is instead bucketed streams that run during the last
//!   microbatch's backward (`buckets`), and the rounds wait for them at the plan's gate
//!   before what follows the reduction (ZeRO-1's weight all-gather).
//! - *Aggregation.* Identical calls are one: a microbatch's `count` calls times m
//!   microbatches run as one call of their summed bytes that pays every call's α, so a
//!   1,000-layer, 500-microbatch iteration costs a handful of rounds, not a million events.
//!   Rounds of per-microbatch traffic are stretched by the bubble like the compute: after
//!   them the job waits (p − 1)/(v m) of the time they took.
//!
//! Architecture invariant: nothing here runs the engine; it turns a job into its compute
//! time and rounds, which `training` runs like any other job's.

use crate::sim::World;
use std::collections::BTreeMap;

use super::placement_groups::PlacementGroups;
use super::rank_groups::{context_groups, groups, stage_pairs};
use super::stage_time::{Exposed, Rates, backward_secs, stage_secs};
use super::training::{Jobs, ModelStep};
use super::{models, network::MovementKind};
use crate::model::ops::Kernel;
use crate::model::{Among, Comm, CommOp, Layout, StepWork};
use crate::network::Graph;
use crate::network::collective::{self, Op, Rank, Round};
use crate::placement::NodeId;
use crate::scenario::overlap::GradOverlap;
use crate::scenario::{ModelTraining, Spec};

/// What one iteration of a model-level job costs, before the network runs it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Plan {
    /// The step's compute, its optimizer step included.
    pub compute_secs: f64,
    /// Of the compute, the optimizer step: it runs at the gate, once the gradients it
    /// reads are reduced (Megatron-LM's `optimizer.step()` follows `finish_grad_sync()`),
    /// and before what follows it (the distributed optimizer's parameter all-gather).
    pub optimizer_secs: f64,
    /// Of the compute, the pipeline bubble.
    pub bubble_secs: f64,
    pub rounds: Vec<Round>,
    /// Per round, the factor its measured time is stretched by (1: none).
    pub stretch: Vec<f64>,
    /// Collectives the flow model could not take, priced in closed form instead (a round
    /// of α only), with why.
    pub closed_form: Vec<String>,
    /// Overlapped gradient reduction (`overlap grad_reduce`): one stream per communicator,
    /// started during the compute; empty without overlap.
    pub streams: Vec<super::buckets::Stream>,
    /// The round before which the rounds wait for every stream to finish and then for the
    /// optimizer step (`rounds.len()`: after the last).
    pub gate: usize,
    /// What the run's header should say about how the plan was aggregated.
    pub notes: Vec<String>,
}

/// The flow model's op; its algorithm and protocol are NCCL's choice by size
/// ([`collective::pick`], in [`group_rounds`]).
pub(super) fn op_of(op: CommOp) -> Op {
    match op {
        CommOp::AllReduce => Op::AllReduce,
        CommOp::AllGather => Op::AllGather,
        CommOp::ReduceScatter => Op::ReduceScatter,
        CommOp::AllToAll => Op::AllToAll,
    }
}

/// Rounds of several groups running at once: round i of the lot is round i of each.
fn concurrent(groups: Vec<Vec<Round>>) -> Vec<Round> {
    let n = groups.iter().map(Vec::len).max().unwrap_or(0);
    (0..n)
        .map(|i| {
            let mut r = Round {
                alpha: 0.0,
                chains: Vec::new(),
            };
            for g in &groups {
                if let Some(x) = g.get(i) {
                    r.alpha = r.alpha.max(x.alpha);
                    r.chains.extend(x.chains.iter().cloned());
                }
            }
            r
        })
        .collect()
}

/// `k` identical repeats of `rounds` as one: bytes and α times `k`.
fn repeated(mut rounds: Vec<Round>, k: f64) -> Vec<Round> {
    for r in &mut rounds {
        r.alpha *= k;
        for c in &mut r.chains {
            c.bytes *= k;
        }
    }
    rounds
}

/// The plan's inputs that come from the run: the network, the ranks' devices, and a closed
/// form for what the flow model cannot take.
pub(super) struct Pricing<'a> {
    pub graph: Option<&'a Graph>,
    pub ranks: &'a [Rank],
    /// Seconds of one call of `op` of `bytes` over the given ranks in closed form.
    pub closed: &'a dyn Fn(Op, f64, &[Rank]) -> f64,
    /// The share of the NICs' line rate the job's transport reaches
    /// ([`collective::Options::net_share`]; its tenant's rules, `collective_rules`).
    pub net_share: f64,
}

/// The iteration of a job with `work` on ranks laid out by `l`, on `accelerator`.
pub(super) fn plan(
    spec: &Spec,
    accelerator: &str,
    dtype: &str,
    l: &Layout,
    work: &StepWork,
    overlap: Option<&GradOverlap>,
    p: &Pricing,
) -> Result<Plan, String> {
    let world = (l.tp * work.cp * l.pp * l.dp) as usize;
    if p.ranks.len() != world {
        return Err(format!(
            "the layout needs tp x cp x pp x dp = {world} devices, the placement gave {}",
            p.ranks.len()
        ));
    }
    // Context-parallel ranks sit between tensor- and data-parallel ones (Megatron-LM's
    // "tp-cp-ep-dp-pp"), so the rank layout is the job's with dp × cp replicas; the gradient
    // reduction runs over all of them.
    let l = &Layout {
        dp: l.dp * work.cp,
        ..l.clone()
    };
    let rates = Rates::of(spec, accelerator, dtype)?;
    let m = work.microbatches as f64;
    let mut notes = Vec::new();
    let exposed = exposed_secs(&mut notes, p, l, work, &rates)?;
    let (stage, optimizer) = stage_secs(&rates, work, exposed);
    let stretch = 1.0 + work.bubble_fraction;
    let mut plan = Plan {
        compute_secs: m * stretch * stage + optimizer,
        optimizer_secs: optimizer,
        bubble_secs: m * work.bubble_fraction * stage,
        rounds: Vec::new(),
        stretch: Vec::new(),
        closed_form: Vec::new(),
        streams: Vec::new(),
        gate: 0,
        notes,
    };
    // Tensor- then expert-parallel collectives (`step_work` lists them in that order); with
    // `overlap tp_comm` the tensor-parallel ones ran during the GEMMs (`exposed_secs`).
    for c in &work.per_microbatch {
        if work.tp_comm_overlap && c.among == Among::Tensor {
            continue;
        }
        add(&mut plan, p, c, &groups(l, c.among), m, stretch);
    }
    if work.p2p_bytes > 0.0 {
        priced(
            &mut plan,
            p,
            &stage_pairs(l),
            Op::SendRecv,
            work.p2p_bytes,
            m,
            stretch,
            || "pipeline sends".to_string(),
        );
    }
    let Some(o) = overlap else {
        pad_stretched(&mut plan);
        let (before, after): (Vec<&Comm>, Vec<&Comm>) = work
            .per_iteration
            .iter()
            .partition(|c| !super::buckets::follows_optimizer(c));
        for c in before {
            add(&mut plan, p, c, &groups(l, c.among), 1.0, 1.0);
        }
        plan.gate = plan.rounds.len();
        for c in after {
            add(&mut plan, p, c, &groups(l, c.among), 1.0, 1.0);
        }
        return Ok(plan);
    };
    pad_stretched(&mut plan);
    let backward = backward_secs(&rates, work, exposed);
    super::buckets::plan(
        &mut plan,
        p,
        l,
        &work.per_iteration,
        o.bucket(l.dp),
        backward,
        optimizer,
    );
    Ok(plan)
}

/// The last stretched round's wait is paid before an empty one after it.
fn pad_stretched(plan: &mut Plan) {
    if plan.stretch.last().is_some_and(|&f| f > 1.0) {
        plan.rounds.push(Round {
            alpha: 0.0,
            chains: Vec::new(),
        });
        plan.stretch.push(1.0);
    }
}

/// Seconds of one call of `op` of `bytes` over every group at once, alone on the network:
/// the rounds the run would price it with ([`group_rounds`]), run from an idle network.
fn alone_secs(
    notes: &mut Vec<String>,
    p: &Pricing,
    groups: &[Vec<usize>],
    op: Op,
    bytes: f64,
    what: &str,
) -> Result<f64, String> {
    if groups.first().is_none_or(|g| g.len() < 2) || bytes <= 0.0 {
        return Ok(0.0);
    }
    let mut scratch = Plan {
        compute_secs: 0.0,
        optimizer_secs: 0.0,
        bubble_secs: 0.0,
        rounds: Vec::new(),
        stretch: Vec::new(),
        closed_form: Vec::new(),
        streams: Vec::new(),
        gate: 0,
        notes: Vec::new(),
    };
    let rounds = group_rounds(&mut scratch, p, groups, op, bytes, || what.to_string());
    notes.extend(scratch.notes);
    notes.extend(scratch.closed_form);
    let idle = p.graph.map_or_else(crate::network::FlowNet::default, |g| {
        crate::network::FlowNet::new(g.capacity.clone())
    });
    collective::run_rounds(&idle, &rounds)
}

/// The communication a layer cannot hide behind its own kernels, per pass:
/// - *`overlap tp_comm`* (Megatron-LM `--tp-comm-overlap`, TransformerEngine userbuffers):
///   each sequence-parallel all-gather or reduce-scatter runs during the GEMM beside it
///   ([`crate::model::ops::tp_overlap_pairs`]); the pair takes the longer of the two, so
///   max(0, collective − GEMM) is exposed. The collective's time is what the run's flow model
///   gives for it alone (all tensor-parallel groups at once); it does not also go on the
///   shared network (it stays inside a node's NVLink in every layout NeMo publishes). TE
///   splits the GEMM into tp chunks to pipeline them; the fill of that pipeline and the SMs
///   the communication takes from the GEMM are not modelled.
/// - *Context parallelism* (TransformerEngine `AttnFuncWithCPAndKVP2P`): attention runs cp
///   steps, each on one K/V chunk while the next chunk arrives from the ring's previous rank,
///   so each of the cp − 1 exchanges is exposed by max(0, send − step), a step being 1/cp of
///   the fused attention kernel; the backward sends the chunk and its gradient. Always
///   overlapped (TE has no other mode), priced alone like the above.
fn exposed_secs(
    notes: &mut Vec<String>,
    p: &Pricing,
    l: &Layout,
    work: &StepWork,
    rates: &Rates,
) -> Result<Exposed, String> {
    let mut e = Exposed::default();
    let fw_secs = |names: &[&str]| -> f64 {
        work.layer
            .forward
            .iter()
            .filter(|k| names.contains(&k.name))
            .map(|k| rates.secs(k))
            .sum()
    };
    if work.tp_comm_overlap {
        let tensor = groups(l, Among::Tensor);
        let mut secs = |op: CommOp| -> Result<f64, String> {
            let Some(c) = work
                .per_microbatch
                .iter()
                .find(|c| c.among == Among::Tensor && c.op == op)
            else {
                return Ok(0.0);
            };
            alone_secs(
                notes,
                p,
                &tensor,
                op_of(op),
                c.bytes,
                "overlapped tensor-parallel collective",
            )
        };
        let (ag, rs) = (secs(CommOp::AllGather)?, secs(CommOp::ReduceScatter)?);
        for (op, phase, names) in crate::model::ops::tp_overlap_pairs() {
            let c = if op == CommOp::AllGather { ag } else { rs };
            let left = (c - fw_secs(names)).max(0.0);
            match phase {
                crate::model::ops::Phase::Forward => e.forward += left,
                crate::model::ops::Phase::Backward => e.backward += left,
            }
        }
    }
    if work.cp > 1 {
        let rings = context_groups(l, work.cp);
        let what = "context-parallel key/value ring";
        let send = alone_secs(notes, p, &rings, Op::SendRecv, work.cp_step_bytes, what)?;
        let send_bw = alone_secs(
            notes,
            p,
            &rings,
            Op::SendRecv,
            2.0 * work.cp_step_bytes,
            what,
        )?;
        let core = |ks: &[Kernel]| -> f64 {
            ks.iter()
                .filter(|k| k.name == "flash_attention")
                .map(|k| rates.secs(k))
                .sum()
        };
        let (cp, steps) = (f64::from(work.cp), f64::from(work.cp - 1));
        e.forward += steps * (send - core(&work.layer.forward) / cp).max(0.0);
        e.backward += steps * (send_bw - core(&work.layer.backward) / cp).max(0.0);
    }
    Ok(e)
}

/// Round(s) for `c` over every group at once, repeated `times` per call count.
pub(super) fn add(
    plan: &mut Plan,
    p: &Pricing,
    c: &Comm,
    groups: &[Vec<usize>],
    times: f64,
    stretch: f64,
) {
    if groups.first().is_none_or(|g| g.len() < 2) || c.bytes <= 0.0 || c.count == 0 {
        return;
    }
    let k = c.count as f64 * times;
    priced(plan, p, groups, op_of(c.op), c.bytes, k, stretch, || {
        format!(
            "{:?} among {:?} groups of {}",
            c.op,
            c.among,
            groups[0].len()
        )
    });
}

#[allow(clippy::too_many_arguments)]
fn priced(
    plan: &mut Plan,
    p: &Pricing,
    groups: &[Vec<usize>],
    op: Op,
    bytes: f64,
    k: f64,
    stretch: f64,
    what: impl Fn() -> String,
) {
    let rounds = repeated(group_rounds(plan, p, groups, op, bytes, what), k);
    plan.stretch
        .extend(std::iter::repeat_n(stretch, rounds.len()));
    plan.rounds.extend(rounds);
}

/// One call of `op` of `bytes` over every group at once, as rounds on the network, or in
/// closed form (a round of α only, noted in the plan) where the flow model cannot take it.
pub(super) fn group_rounds(
    plan: &mut Plan,
    p: &Pricing,
    groups: &[Vec<usize>],
    op: Op,
    bytes: f64,
    what: impl Fn() -> String,
) -> Vec<Round> {
    let ranks_of = |g: &Vec<usize>| -> Vec<Rank> { g.iter().map(|&r| p.ranks[r]).collect() };
    let flow = p
        .graph
        .ok_or_else(|| "no cluster graph".to_string())
        .and_then(|graph| {
            groups
                .iter()
                .map(|g| {
                    let ranks = ranks_of(g);
                    let mut c = collective::configure(graph, op, &ranks, bytes, None, None)?;
                    c.options.net_share = p.net_share;
                    if let Some(m) = &c.measured {
                        let n = format!("{}: priced by {m}", what());
                        if !plan.notes.contains(&n) {
                            plan.notes.push(n);
                        }
                    }
                    collective::schedule(graph, op, c.algorithm, &ranks, bytes, &c.options)
                })
                .collect::<Result<Vec<_>, _>>()
        });
    match flow {
        Ok(per_group) => concurrent(per_group),
        Err(e) => {
            let secs = groups
                .iter()
                .map(|g| (p.closed)(op, bytes, &ranks_of(g)))
                .fold(0.0, f64::max);
            plan.closed_form
                .push(format!("{}: closed form ({e})", what()));
            vec![Round {
                alpha: secs,
                chains: Vec::new(),
            }]
        }
    }
}

impl Jobs {
    /// Job `j`'s iteration from its model and layout over the devices its group holds now,
    /// with the figures its metrics need; the run's header notes how its traffic is priced.
    pub(super) fn model_plan(
        &mut self,
        world: &mut World<'_>,
        pgs: &PlacementGroups,
        j: u32,
        mt: &ModelTraining,
        per_node: &BTreeMap<NodeId, u32>,
    ) -> Result<(Plan, ModelStep), String> {
        let spec = world.spec;
        let job = &self[j as usize];
        let name = &spec.workloads[job.workload].training[job.index].name;
        let acc = per_node
            .keys()
            .find_map(|n| world.node_accel[*n].clone())
            .ok_or("its group holds no accelerator")?;
        let work = crate::model::step_work_with(
            &mt.model,
            &mt.layout,
            &mt.setup,
            crate::model::training_widths(&mt.dtype).0,
        )?;
        let ranks = pgs.ranks(world, self[j as usize].pg);
        let share = crate::sim::collective_rules::share(self.job_net(world, j).1);
        let (node_types, health) = (&world.node_types, &world.health);
        let closed = |op: Op, bytes: f64, ranks: &[Rank]| -> f64 {
            if op == Op::SendRecv {
                let (a, b) = (ranks[0].0, ranks[ranks.len() - 1].0);
                return models::transfer_secs(spec, a == b, node_types[b], bytes);
            }
            let mut per: BTreeMap<NodeId, u32> = BTreeMap::new();
            for (n, _) in ranks {
                *per.entry(*n).or_default() += 1;
            }
            let group = models::Group {
                nodes: per.iter().map(|(n, d)| (node_types[*n], *d)).collect(),
                factors: per
                    .keys()
                    .map(|n| {
                        let (up, nic) = health.bandwidth_factors(*n);
                        (up, nic * share)
                    })
                    .collect(),
            };
            models::collective_secs(spec, op.name(), bytes, false, &group)
        };
        let pricing = Pricing {
            graph: world.wire.graph.as_ref(),
            ranks: &ranks,
            closed: &closed,
            net_share: share,
        };
        let plan = plan(
            spec,
            &acc,
            &mt.dtype,
            &mt.layout,
            &work,
            mt.overlap.as_ref(),
            &pricing,
        )?;
        let peak = models::peak(spec, &acc, &mt.dtype).unwrap_or(0.0) * ranks.len() as f64;
        let name = name.clone();
        for c in &plan.closed_form {
            world.net.note(
                MovementKind::Collective,
                false,
                format!("training {name}: {c}"),
            );
        }
        for n in &plan.notes {
            world.net.note(
                MovementKind::Collective,
                true,
                format!("training {name}: {n}"),
            );
        }
        if plan.closed_form.is_empty() {
            world.net.note(
                MovementKind::Collective,
                true,
                format!("training {name}: model-level iteration, its traffic on the run's shared network"),
            );
        }
        let step = ModelStep {
            tokens: work.tokens,
            model_flop: work.model_flop,
            peak_flops: peak,
            bubble_ns: models::secs(plan.bubble_secs),
        };
        Ok((plan, step))
    }
}

#[cfg(test)]
#[path = "model_steps_tests.rs"]
mod tests;
