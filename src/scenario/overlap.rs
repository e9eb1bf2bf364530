//! A model-level training job's `overlap grad_reduce [bucket INT]` (issue 12): the
//! data-parallel gradient reduction in buckets, overlapped with the last microbatch's
//! backward pass, as Megatron-LM's `--overlap-grad-reduce` does (off by default there and
//! here). The simulation of it is `src/sim/buckets.rs`; this file only reads it and says
//! where it makes no sense.
//!
//! `overlap tp_comm` (issue 39; beside `grad_reduce` in the one statement) runs the sequence-parallel
//! all-gathers and reduce-scatters during the GEMMs beside them, as Megatron-LM's
//! `--tp-comm-overlap` does with TransformerEngine's userbuffers (off by default there and
//! here; it needs sequence parallelism there and here). Its pricing is in
//! `src/sim/model_steps.rs`.
//!
//! Megatron-LM core 0.20.0 (commit d98e8a6, `megatron/core/distributed/`):
//! `distributed_data_parallel_config.py` `bucket_size` is the most parameters in one bucket,
//! default `max(40000000, 1000000 * dp_size)` (`distributed_data_parallel.py`), ignored
//! without `overlap_grad_reduce`.

use super::reader::{self as rd, Args, Cx};
use crate::diag::{Diagnostic, Span};
use crate::model::{Layout, Sharding};
use crate::syntax::ast::ValueKind;
use serde::Serialize;

/// What `overlap` accepts.
pub const OVERLAPS: &[&str] = &["grad_reduce", "tp_comm"];
/// Largest bucket, in parameters (above any stage of any real model: one bucket).
pub const MAX_BUCKET_PARAMS: u64 = 1_000_000_000_000;

/// Gradient reduction overlapped with the backward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GradOverlap {
    /// Parameters per bucket (`bucket`); `None`: Megatron-LM's default for the job's dp.
    pub bucket_params: Option<u64>,
    /// The statement, where errors about it point.
    #[serde(skip)]
    pub span: Span,
}

impl GradOverlap {
    /// Parameters per bucket: as written, else Megatron-LM's `max(40e6, 1e6 × dp)`.
    pub fn bucket(&self, dp: u32) -> u64 {
        self.bucket_params
            .unwrap_or_else(|| 40_000_000u64.max(1_000_000 * u64::from(dp)))
    }
}

/// What one `overlap` statement turns on: the gradient reduction's overlap, and the span of
/// `tp_comm` when it is named.
pub struct Overlaps {
    pub grad: Option<GradOverlap>,
    pub tp_comm: Option<Span>,
}

/// `overlap ( grad_reduce [bucket INT] | tp_comm ) ...`: one or both, in any order; `None`
/// when wrong (reported).
pub fn read(cx: &mut Cx, a: &mut Args, head: Span) -> Option<Overlaps> {
    let bucket = match a.opt("bucket") {
        Some(v) => Some(rd::count(cx, v, 1, MAX_BUCKET_PARAMS)?),
        None if a
            .stmt
            .values
            .iter()
            .any(|v| matches!(&v.kind, ValueKind::Ident(n) if n == "bucket")) =>
        {
            return None;
        }
        None => None,
    };
    let (mut grad, mut tp_comm) = (None, None);
    let mut first = Some(a.req("`grad_reduce` or `tp_comm`")?);
    while let Some(v) = first.take().or_else(|| a.next_value()) {
        let seen = match rd::choice(cx, v, OVERLAPS, "overlap")? {
            "tp_comm" => tp_comm.replace(v.span),
            _ => grad.replace(v.span),
        };
        if let Some(before) = seen {
            cx.push(
                Diagnostic::error(v.span, "named twice in `overlap`")
                    .with_secondary(before, "first named here"),
            );
            return None;
        }
    }
    if grad.is_none() && bucket.is_some() {
        cx.push(
            Diagnostic::error(
                head,
                "`bucket` sizes the gradient reduction's buckets: it needs `grad_reduce`",
            )
            .with_help("write `overlap grad_reduce bucket N`"),
        );
        return None;
    }
    Some(Overlaps {
        grad: grad.map(|_| GradOverlap {
            bucket_params: bucket,
            span: head,
        }),
        tp_comm,
    })
}

/// `overlap tp_comm` needs sequence parallelism (Megatron-LM asserts it:
/// `--tp-comm-overlap` requires `--sequence-parallel`): a located error otherwise.
pub fn check_tp_comm(cx: &mut Cx, at: Span, l: &Layout) -> bool {
    if l.tp > 1 && l.sp {
        return true;
    }
    cx.push(
        Diagnostic::error(
            at,
            "`overlap tp_comm` overlaps sequence parallelism's all-gathers and reduce-scatters: it needs `tp` above 1 and `sp`",
        )
        .with_help("give `parallel tp N sp`, or remove `tp_comm`"),
    );
    false
}

/// Where overlapping makes no sense or is not modelled: a located error at the statement.
/// Gradients are reduced over the dp × `cp` ranks that hold the same weights.
pub fn check(cx: &mut Cx, o: &GradOverlap, l: &Layout, cp: u32) -> bool {
    if l.dp * cp == 1 {
        cx.push(
            Diagnostic::error(
                o.span,
                "`overlap grad_reduce` needs data (or context) parallelism, but dp is 1 (and cp is 1): no gradients are reduced",
            )
            .with_help("give `parallel ... dp N` with N above 1, or remove `overlap`"),
        );
        return false;
    }
    if matches!(l.sharding, Sharding::Zero2 | Sharding::Zero3) {
        cx.push(
            Diagnostic::error(
                o.span,
                "`overlap grad_reduce` is modelled for `sharding none` and `zero1` (Megatron-LM's DDP and distributed optimizer), not zero2 or zero3",
            )
            .with_help("ZeRO-2 and ZeRO-3 reduce every microbatch's gradients; use `sharding zero1` or remove `overlap`"),
        );
        return false;
    }
    true
}
