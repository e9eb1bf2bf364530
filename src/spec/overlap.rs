//! A model-level training job's `overlap grad_reduce [bucket INT]` (issue 12): the
//! data-parallel gradient reduction in buckets, overlapped with the last microbatch's
//! backward pass, as Megatron-LM's `--overlap-grad-reduce` does (off by default there and
//! here). The simulation of it is `src/sim/overlap.rs`; this file only reads it and says
//! where it makes no sense.
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
pub const OVERLAPS: &[&str] = &["grad_reduce"];
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

/// `overlap grad_reduce [bucket INT]`; `None` when wrong (reported).
pub fn read(cx: &mut Cx, a: &mut Args, head: Span) -> Option<GradOverlap> {
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
    let v = a.req("`grad_reduce`")?;
    rd::choice(cx, v, OVERLAPS, "overlap")?;
    Some(GradOverlap {
        bucket_params: bucket,
        span: head,
    })
}

/// Where overlapping makes no sense or is not modelled: a located error at the statement.
pub fn check(cx: &mut Cx, o: &GradOverlap, l: &Layout) -> bool {
    if l.dp == 1 {
        cx.push(
            Diagnostic::error(
                o.span,
                "`overlap grad_reduce` needs data parallelism, but dp is 1: no gradients are reduced",
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
