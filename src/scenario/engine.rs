//! The `engine` statement of an LLM service: which serving engine each replica runs
//! (vLLM, TensorRT-LLM, SGLang; [`crate::model::engines`] says what each spends beside its
//! kernels) and its scheduler's limits, defaults from the engine named.

use super::reader::{self as rd, Args, Cx};
use super::serving::{MAX_KV_BLOCK, MAX_SEQS, MAX_TOKEN_BUDGET};
use crate::syntax::ast::ValueKind;
use serde::Serialize;

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

/// How many KV blocks admission takes for a waiting request (`reserve
/// on|prompt|lookahead|off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Reserve {
    /// Only the blocks of the tokens it computes this iteration (one chunk); more as tokens
    /// come, preempting when the pool runs out (vLLM's `allocate_slots`; `reserve off`).
    Off,
    /// The blocks of everything it has not computed yet (the prompt, and after preemption
    /// what it had generated), all at once even when the prompt is chunked; decode blocks
    /// as they come, preempting when they run out: TensorRT-LLM's `MAX_UTILIZATION`
    /// (`KVCacheManager::getNeededBlocksOneStep` counts a first context chunk's whole
    /// prompt, `cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp` at 02a10fed; the
    /// `MaxUtilizationScheduler` pauses the last started request, whose generated tokens
    /// join its prompt, `LlmRequest::pause`; `reserve prompt`).
    Prompt,
    /// The whole prompt and output, so a running request is never preempted: TensorRT-LLM's
    /// `GUARANTEED_NO_EVICT` (`reserve on`).
    Request,
    /// Its prompt's blocks, admitted only if, with every running request's remaining output
    /// known, the pool never runs out before they finish: SGLang's admission of requests
    /// that ignore EOS (`PrefillAdder.add_one_req_ignore_eos`,
    /// `python/sglang/srt/managers/schedule_policy.py`), what its `bench_serving` sends by
    /// default (`ignore_eos`). Decode then never preempts (`reserve lookahead`).
    Lookahead,
}

impl Reserve {
    pub fn word(self) -> &'static str {
        match self {
            Reserve::Off => "off",
            Reserve::Prompt => "prompt",
            Reserve::Request => "on",
            Reserve::Lookahead => "lookahead",
        }
    }
}

/// What a preempted sequence does with its KV cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Preempt {
    /// Freed; the sequence is recomputed as a prefill when it resumes (vLLM V1).
    Recompute,
    /// Copied to host memory over PCIe and back before it resumes (vLLM V0's swap).
    Swap,
}

/// The engine of each replica (`engine` statement).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EngineConfig {
    /// Which engine (`engine vllm|trtllm|sglang`): its defaults and what it spends beside
    /// the kernels ([`crate::model::engines`]).
    pub kind: crate::model::engines::Kind,
    /// CUDA graphs for decode batches (`graphs off`: every kernel launched, vLLM's
    /// `--enforce-eager`).
    pub graphs: bool,
    /// Largest decode batch replayed as a graph (`graph_batch N`: vLLM's
    /// `max_capture_size`, SGLang's `--cuda-graph-max-bs`, TensorRT-LLM's
    /// `cuda_graph_config.max_batch_size`); `None`: the engine's default.
    pub graph_batch: Option<u32>,
    /// The KV blocks admission takes ([`Reserve`]).
    pub reserve: Reserve,
    /// Prompt chunks and decodes share an iteration (`mixed on`: vLLM, TensorRT-LLM); `off`:
    /// an iteration is a prefill batch whenever there is prompt work it can admit or
    /// continue, else a decode batch (SGLang without `--enable-mixed-chunk`).
    pub mixed: bool,
    /// Tokens one iteration may compute (vLLM `max_num_batched_tokens`).
    pub token_budget: u32,
    /// Sequences running at once (vLLM `max_num_seqs`).
    pub max_seqs: u32,
    pub chunked_prefill: bool,
    /// Tokens per KV block (vLLM `block_size`).
    pub kv_block: u32,
    /// Share of device memory the engine may use (vLLM `gpu_memory_utilization`); the
    /// engine's default for the service's ranks unless written
    /// ([`crate::model::engines::Kind::memory_fraction`]).
    pub memory_fraction: f64,
    /// `memory_fraction` was written (not the engine's default).
    #[serde(skip)]
    pub memory_fraction_given: bool,
    pub preempt: Preempt,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig::of(crate::model::engines::Kind::default())
    }
}

impl EngineConfig {
    /// Engine `kind` with its own defaults ([`crate::model::engines::Kind`]); memory
    /// fraction 0.9 (vLLM `gpu_memory_utilization`, TensorRT-LLM
    /// `kv_cache_free_gpu_mem_fraction`), recompute preemption.
    pub fn of(kind: crate::model::engines::Kind) -> Self {
        EngineConfig {
            kind,
            graphs: true,
            graph_batch: None,
            reserve: kind.reserve(),
            mixed: kind.mixes_prefill_and_decode(),
            token_budget: kind.token_budget(),
            max_seqs: kind.max_seqs(),
            chunked_prefill: kind.chunked_prefill(),
            kv_block: kind.kv_block(),
            memory_fraction: kind.memory_fraction(1),
            memory_fraction_given: false,
            preempt: Preempt::Recompute,
        }
    }
}

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
