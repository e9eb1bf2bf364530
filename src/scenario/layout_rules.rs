//! Megatron-LM's layout rules for a training job's model-level form ([`super::layout`]):
//! the divisibility of heads, layers, batches and sequence by the parallel dimensions, and
//! the uneven first and last pipeline stages; each failure an error at the part that breaks it.

use super::layout::*;
use super::reader::Cx;
use crate::diag::{Diagnostic, Span};
use crate::model::Transformer;

/// Megatron-LM's divisibility rules; each failure is an error at the part that breaks it.
pub(super) fn layout_fits(
    cx: &mut Cx,
    m: &Transformer,
    p: &Parallel,
    global: u64,
    gspan: Span,
    micro: u64,
    model_at: Span,
) -> bool {
    let n = cx.error_count();
    let at = |x: &Part| x.1.unwrap_or(p.head);
    let (tp, pp, v, dp, ep) = (
        u64::from(p.tp.0),
        u64::from(p.pp.0),
        u64::from(p.interleave.0),
        u64::from(p.dp.0),
        u64::from(p.ep.0),
    );
    let name = &m.name;
    if u64::from(m.heads) % tp != 0 {
        cx.error(
            at(&p.tp),
            format!(
                "tp {tp} does not divide the {} attention heads of `{name}`",
                m.heads
            ),
        );
    } else if u64::from(m.kv_heads) % tp != 0 {
        cx.error(
            at(&p.tp),
            format!(
                "tp {tp} does not divide the {} key/value heads of `{name}`",
                m.kv_heads
            ),
        );
    }
    if let Some(sp) = p.sp {
        if tp == 1 {
            cx.push(
                Diagnostic::error(sp, "sequence parallelism (`sp`) needs tensor parallelism")
                    .with_help("it splits the layer's non-tensor-parallel part over the tp ranks: give `tp` above 1"),
            );
        } else if !m.seq.is_multiple_of(tp) {
            cx.error(sp, format!("`sp` splits the sequence over the tp ranks, but tp {tp} does not divide the sequence of {} tokens", m.seq));
        }
    }
    let chunks = pp * v;
    let uneven = p.first_stage.1.is_some() || p.last_stage.1.is_some();
    if uneven {
        uneven_fits(cx, m, p, pp, v);
    } else if u64::from(m.layers) % chunks != 0 {
        let what = if v > 1 {
            format!("pp {pp} × interleave {v} = {chunks} model chunks")
        } else {
            format!("pp {pp} stages")
        };
        let where_ = if v > 1 { at(&p.interleave) } else { at(&p.pp) };
        cx.error(
            where_,
            format!(
                "{what} do not split the {} layers of `{name}` evenly",
                m.layers
            ),
        );
    }
    let cp = u64::from(p.cp.0);
    if cp > 1 {
        let at_cp = at(&p.cp);
        if !m.seq.is_multiple_of(2 * cp) {
            cx.push(
                Diagnostic::error(at_cp, format!("cp {cp} splits each sequence into 2 × cp = {} chunks (two per rank, for balance under the causal mask), but the {} tokens of `{name}` do not split into them evenly", 2 * cp, m.seq))
                    .with_help("pick a cp for which 2 × cp divides the sequence length"),
            );
        } else if p.sp.is_some() && !(m.seq / cp).is_multiple_of(tp) {
            cx.error(
                at_cp,
                format!(
                    "with `sp` each rank's {} tokens (seq / cp) must split over tp {tp}",
                    m.seq / cp
                ),
            );
        }
        if ep > 1 {
            cx.error(
                at_cp,
                "context parallelism with expert parallelism (`ep`) is not modelled",
            );
        }
    }
    if v > 1 && pp == 1 {
        cx.error(
            at(&p.interleave),
            "the interleaved schedule (`interleave` above 1) needs pipelining: give `pp` above 1",
        );
    }
    let per_step = micro * dp;
    if !global.is_multiple_of(per_step) {
        cx.push(
            Diagnostic::error(
                gspan,
                format!("global batch {global} is not a whole number of microbatches of {micro} on each of the {dp} data-parallel replicas"),
            )
            .with_help(format!("make it a multiple of micro × dp = {per_step}")),
        );
    } else if v > 1 && pp > 1 && !(global / per_step).is_multiple_of(pp) {
        cx.error(
            at(&p.interleave),
            format!(
                "the interleaved schedule needs the microbatches per replica ({}) to be a multiple of pp {pp}",
                global / per_step
            ),
        );
    }
    if ep > 1 {
        match &m.moe {
            None => {
                cx.push(
                    Diagnostic::error(
                        at(&p.ep),
                        format!("`ep` splits experts, but `{name}` has none"),
                    )
                    .with_secondary(model_at, "a dense model"),
                );
            }
            Some(moe) => {
                if u64::from(moe.experts) % ep != 0 {
                    cx.error(
                        at(&p.ep),
                        format!(
                            "ep {ep} does not divide the {} experts of `{name}`",
                            moe.experts
                        ),
                    );
                }
                if dp % ep != 0 {
                    cx.error(at(&p.ep), format!("ep {ep} does not divide dp {dp}: expert parallelism splits the data-parallel replicas"));
                }
            }
        }
    }
    cx.error_count() == n
}

/// Megatron-Core's rules for uneven stages (`TransformerConfig.__post_init__`, "Uneven PP",
/// Megatron-LM d98e8a6 `megatron/core/transformer/transformer_config.py`): pipelining; each
/// given stage at least one layer and a multiple of `interleave`; the layers left split
/// evenly over the stages between (none left when there are none), each a multiple of
/// `interleave`. Each failure is an error at the part that breaks it.
fn uneven_fits(cx: &mut Cx, m: &Transformer, p: &Parallel, pp: u64, v: u64) {
    let given: Vec<(&str, &Part)> = [
        ("first_stage", &p.first_stage),
        ("last_stage", &p.last_stage),
    ]
    .into_iter()
    .filter(|(_, x)| x.1.is_some())
    .collect();
    let span = |x: &Part| x.1.unwrap_or(p.head);
    if pp < 2 {
        let (w, x) = given[0];
        cx.error(
            span(x),
            format!("`{w}` sets the layers of one pipeline stage: it needs `pp` of at least 2"),
        );
        return;
    }
    for (w, x) in &given {
        if !u64::from(x.0).is_multiple_of(v) {
            cx.error(span(x), format!("`{w}` {} is not a multiple of interleave {v}: each of the stage's {v} model chunks takes whole layers", x.0));
            return;
        }
    }
    let total: u64 = given.iter().map(|(_, x)| u64::from(x.0)).sum();
    let middle = pp - given.len() as u64;
    let layers = u64::from(m.layers);
    let last = span(given[given.len() - 1].1);
    if total > layers || (total == layers) != (middle == 0) {
        cx.push(
            Diagnostic::error(last, format!(
                "the first and last stages take {total} of the {layers} layers of `{}`, leaving {} for the {middle} stage{} between",
                m.name,
                layers.saturating_sub(total),
                if middle == 1 { "" } else { "s" }
            ))
            .with_help("every stage needs layers, and every layer a stage"),
        );
        return;
    }
    let rest = layers - total;
    if middle > 0 && (!rest.is_multiple_of(middle) || !(rest / middle).is_multiple_of(v)) {
        cx.push(
            Diagnostic::error(last, format!(
                "the {rest} layers left do not split evenly over the {middle} middle stage{}{}",
                if middle == 1 { "" } else { "s" },
                if v > 1 { format!(" in whole chunks of interleave {v}") } else { String::new() }
            ))
            .with_help("the stages between the first and the last take equal shares, as Megatron-Core requires"),
        );
    }
}
