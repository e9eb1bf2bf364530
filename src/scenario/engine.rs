//! The `engine` statement of an LLM service: which serving engine each replica runs
//! (vLLM, TensorRT-LLM, SGLang; [`crate::model::engines`] says what each spends beside its
//! kernels) and its scheduler's limits, defaults from the engine named.

use super::reader::{self as rd, Args, Cx};
use super::serving::{MAX_KV_BLOCK, MAX_SEQS, MAX_TOKEN_BUDGET};
pub use crate::model::engine_config::{EngineConfig, Preempt, Reserve};
use crate::syntax::ast::ValueKind;

/// Words of `engine`.
pub const ENGINE_WORDS: &[&str] = &[
    "vllm",
    "trtllm",
    "sglang",
    "graphs",
    "graph_batch",
    "reserve",
    "token_budget",
    "max_seqs",
    "chunked_prefill",
    "kv_block",
    "memory_fraction",
    "preempt",
    "on",
    "off",
    "recompute",
    "swap",
    "prompt",
    "lookahead",
    "mixed",
];

pub(super) fn engine(cx: &mut Cx, a: &mut Args) -> Option<EngineConfig> {
    use crate::model::engines::{Kind, WORDS};
    let named =
        a.next_if(|v| matches!(&v.kind, ValueKind::Ident(n) if WORDS.contains(&n.as_str())));
    let kind = named
        .and_then(|v| match &v.kind {
            ValueKind::Ident(n) => Kind::from_word(n),
            _ => None,
        })
        .unwrap_or_default();
    let mut e = EngineConfig::of(kind);
    if let Some(v) = a.opt("graphs") {
        e.graphs = rd::choice(cx, v, &["on", "off"], "graphs setting")? == "on";
    }
    if let Some(v) = a.opt("reserve") {
        e.reserve = match rd::choice(
            cx,
            v,
            &["on", "prompt", "lookahead", "off"],
            "reserve setting",
        )? {
            "on" => Reserve::Request,
            "prompt" => Reserve::Prompt,
            "lookahead" => Reserve::Lookahead,
            _ => Reserve::Off,
        };
    }
    if let Some(v) = a.opt("mixed") {
        e.mixed = rd::choice(cx, v, &["on", "off"], "mixed setting")? == "on";
    }
    if let Some(v) = a.opt("graph_batch") {
        e.graph_batch = Some(rd::count(cx, v, 1, MAX_SEQS)? as u32);
    }
    if let Some(v) = a.opt("token_budget") {
        e.token_budget = rd::count(cx, v, 1, MAX_TOKEN_BUDGET)? as u32;
    }
    if let Some(v) = a.opt("max_seqs") {
        e.max_seqs = rd::count(cx, v, 1, MAX_SEQS)? as u32;
    }
    if let Some(v) = a.opt("kv_block") {
        e.kv_block = rd::count(cx, v, 1, MAX_KV_BLOCK)? as u32;
    }
    if let Some(v) = a.opt("chunked_prefill") {
        e.chunked_prefill = rd::choice(cx, v, &["on", "off"], "chunked_prefill setting")? == "on";
    }
    if let Some(v) = a.opt("preempt") {
        e.preempt = match rd::choice(cx, v, &["recompute", "swap"], "preemption mode")? {
            "swap" => Preempt::Swap,
            _ => Preempt::Recompute,
        };
    }
    if let Some(v) = a.opt("memory_fraction") {
        let f = rd::number(cx, v)?;
        if !(f > 0.0 && f <= 1.0) {
            cx.error(v.span, format!("memory_fraction {f} is not in (0, 1]"));
            return None;
        }
        e.memory_fraction = f;
        e.memory_fraction_given = true;
    }
    Some(e)
}
