//! An LLM service's engine settings (`engine` statement; `scenario::engine` reads them): the
//! engine named, with its scheduler's limits and memory share, defaults from
//! [`super::engines::Kind`].

use serde::Serialize;

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
    /// the kernels ([`super::engines`]).
    pub kind: super::engines::Kind,
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
    /// ([`super::engines::Kind::memory_fraction`]).
    pub memory_fraction: f64,
    /// `memory_fraction` was written (not the engine's default).
    #[serde(skip)]
    pub memory_fraction_given: bool,
    pub preempt: Preempt,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig::of(super::engines::Kind::default())
    }
}

impl EngineConfig {
    /// Engine `kind` with its own defaults ([`super::engines::Kind`]); memory
    /// fraction 0.9 (vLLM `gpu_memory_utilization`, TensorRT-LLM
    /// `kv_cache_free_gpu_mem_fraction`), recompute preemption.
    pub fn of(kind: super::engines::Kind) -> Self {
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
