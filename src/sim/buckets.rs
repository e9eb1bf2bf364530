//! A model-level job's gradient reduction in buckets, overlapped with the backward pass
//! (`overlap grad_reduce`, Megatron-LM's `--overlap-grad-reduce`): which buckets each
//! data-parallel group reduces, and when each is ready. Pure planning, like `model_steps`;
//! `overlap.rs` runs it on the network.
//!
//! What Megatron-LM does (core 0.20.0, commit d98e8a6, `megatron/core/distributed/`):
//! - `param_and_grad_buffer.py` (`_compute_default_per_buffer_param_layout`): parameters are
//!   taken in reverse order (the backward's) and a bucket closes once it holds at least
//!   `bucket_size` of them; the rest is the last bucket. Dense and expert parameters are
//!   separate buffers, reduced among the data-parallel and the expert-data-parallel group.
//! - `register_grad_ready`: a bucket's collective is launched (asynchronously) when every
//!   parameter in it has its gradient *in the last microbatch*; earlier microbatches only
//!   accumulate (`no_sync`). A group's collectives run one after another on its communicator.
//! - `distributed_data_parallel.py`: pipeline stages after the first do not bucket (one
//!   bucket of the whole stage: their reduction is off the critical path).
//!
//! Assumptions of this model, each a simplification:
//! - A stage's layers are identical, so its gradients appear at a uniform rate through the
//!   last microbatch's backward, the slowest stage's backward and recomputed kernels and the
//!   output layer's gradients (`stage_time::backward_secs`).
//! - The optimizer step waits at the gate for every stream (`finish_grad_sync` before
//!   `optimizer.step()` in Megatron-LM's `training.py`), then what follows it runs.
//!   A bucket is `bucket_size` parameters exactly (whole tensors make Megatron's a little
//!   larger), the last one the rest.
//! - 1F1B: stage s finishes its last backward s backward slots (of one chunk when
//!   interleaved, B / v) before the first stage, whose last backward ends the compute but
//!   for the optimizer step.
//! - Every stage reduces as many bytes as the largest (`step_work`'s per-iteration sizes).
//! - *Aggregation:* a group's buckets are reduced in order, each launched when it is ready
//!   and the previous one is done; buckets ready together when the communicator frees up are
//!   one launch, their bytes summed, paying each bucket's α ([`Unit`]), so a step costs at
//!   most as many launches as buckets. Beyond [`MAX_BUCKETS`] buckets, consecutive buckets are
//!   coalesced into that many launch units, each ready with its last bucket (the run says so).

use super::model_steps::{Plan, Pricing, group_rounds, op_of};
use super::rank_groups::groups;
use crate::model::{Comm, CommOp, GRAD_BYTES, Layout, Schedule};
use crate::network::collective::Round;

/// Most launch units of one stream per step (bounds the events of a step).
pub const MAX_BUCKETS: u64 = 1024;

/// Buckets launched together: ready at `ready_secs` after the step's compute begins, moving
/// `scale` times the bytes of the stream's rounds and paying `calls` times their α.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unit {
    pub ready_secs: f64,
    pub scale: f64,
    pub calls: f64,
}

/// One communicator's buckets: the gradient collective of one stage's groups of one kind
/// (all its groups at once), for the whole stage's gradients, and its launch units in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    pub rounds: Vec<Round>,
    pub units: Vec<Unit>,
}

/// Launch units of `params` parameters in buckets of `bucket` over a backward of
/// `backward` seconds ending at `end` (after the step's compute begins).
fn units(params: f64, bucket: f64, backward: f64, end: f64) -> (Vec<Unit>, u64) {
    let n = (params / bucket).ceil().max(1.0);
    let n = if n > u64::MAX as f64 {
        u64::MAX
    } else {
        n as u64
    };
    let per = n.div_ceil(MAX_BUCKETS);
    let mut out = Vec::with_capacity(n.div_ceil(per) as usize);
    let mut first = 0u64;
    while first < n {
        let last = (first + per).min(n);
        let from = (first as f64 * bucket).min(params);
        let to = if last == n {
            params
        } else {
            (last as f64 * bucket).min(params)
        };
        out.push(Unit {
            ready_secs: end - backward + backward * to / params,
            scale: (to - from) / params,
            calls: (last - first) as f64,
        });
        first = last;
    }
    (out, n)
}

/// Whether per-iteration traffic `c` comes after the optimizer step rather than before it:
/// only the distributed optimizer's one all-gather of the updated parameters (ZeRO-1/2,
/// Megatron-LM's `DistributedOptimizer`). Gradient reductions come before the step, and so
/// do ZeRO-3's per-layer weight gathers (`count` > 1: inside the forward and backward).
pub(super) fn follows_optimizer(c: &Comm) -> bool {
    c.op == CommOp::AllGather && c.count == 1
}

/// The streams of a job whose per-iteration traffic is `per_iteration`, into `plan`: each
/// gradient reduction bucketed per stage; what follows the optimizer step (ZeRO-1's weight
/// all-gather) joins the plan's rounds after the gate, once every stream and the optimizer
/// step are done.
pub(super) fn plan(
    plan: &mut Plan,
    p: &Pricing,
    l: &Layout,
    per_iteration: &[Comm],
    bucket_params: u64,
    backward: f64,
    optimizer: f64,
) {
    let v = match l.schedule {
        Schedule::Interleaved(v) => f64::from(v),
        Schedule::OneFOneB => 1.0,
    };
    let stage_width = (l.tp * l.dp) as usize;
    let mut after = Vec::new();
    for c in per_iteration {
        // Not bucketed: the optimizer's all-gather after the gate; per-microbatch
        // reductions and ZeRO-3's gathers before it, beside the streams.
        if c.op == CommOp::AllGather || c.count != 1 {
            if follows_optimizer(c) {
                after.push(*c);
            } else {
                super::model_steps::add(plan, p, c, &groups(l, c.among), 1.0, 1.0);
            }
            continue;
        }
        let all = groups(l, c.among);
        if all.first().is_none_or(|g| g.len() < 2) || c.bytes <= 0.0 {
            continue;
        }
        let params = c.bytes / GRAD_BYTES;
        for s in 0..l.pp as usize {
            let of_stage: Vec<Vec<usize>> = all
                .iter()
                .filter(|g| g[0] / stage_width == s)
                .cloned()
                .collect();
            // The backward ends before the optimizer step, which waits at the gate.
            let end = plan.compute_secs - optimizer - s as f64 * backward / v;
            let (units, n) = if s == 0 {
                units(params, bucket_params as f64, backward, end)
            } else {
                units(params, f64::INFINITY, backward, end)
            };
            if n > MAX_BUCKETS {
                plan.notes.push(format!(
                    "{} buckets of {bucket_params} parameters coalesced into {} launches",
                    n,
                    units.len()
                ));
            }
            let what = || format!("{:?} among {:?} (overlapped)", c.op, c.among);
            // Priced (and NCCL's algorithm and protocol picked) at the whole reduction's
            // size, then scaled to each launch's bytes: exact for rings (linear in bytes);
            // buckets are tens of MB, where NCCL picks Simple as it would for the whole.
            let rounds = group_rounds(plan, p, &of_stage, op_of(c.op), c.bytes, what);
            plan.streams.push(Stream { rounds, units });
        }
    }
    plan.gate = plan.rounds.len();
    for c in &after {
        super::model_steps::add(plan, p, c, &groups(l, c.among), 1.0, 1.0);
    }
}
