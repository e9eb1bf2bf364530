//! What serving a [`Transformer`] costs one tensor-parallel rank: memory (weights, KV cache,
//! a workspace reserve) and the work of one engine iteration, for the roofline.
//!
//! Assumptions, each with its source:
//! - *Weights per rank* are the training layout's (`stage_params` with one stage): matrices
//!   split over `tp`, norms replicated, the embedding and the output layer vocabulary-parallel
//!   (Megatron-LM; vLLM's `VocabParallelEmbedding` / `ColumnParallelLinear` /
//!   `RowParallelLinear` split the same way), in the serving dtype.
//! - *KV cache*: 2 (K and V) × layers × kv_heads × head_dim × dtype bytes per token, each
//!   rank holding kv_heads / tp heads. When kv_heads < tp (GQA with few KV heads), vLLM
//!   replicates KV heads so each rank holds one (`vllm/model_executor/layers/linear.py`,
//!   `QKVParallelLinear`: `num_kv_head_replicas = tp / total_num_kv_heads`).
//! - *Reserve*: vLLM profiles a dummy forward of `max_num_batched_tokens` and keeps its
//!   peak activation memory out of the KV cache (`vllm/v1/worker/gpu_worker.py`,
//!   `determine_available_memory`). Here that peak is one layer's live tensors for
//!   `token_budget` tokens — the residual and normed input (2·h), Q/K/V (q + 2·kv) / tp and
//!   the FFN's gate and up (2·ffn) / tp, in the dtype — plus fp32 logits over the vocabulary
//!   shard for `max_seqs` sampled positions. An estimate: no CUDA context, no graph pool.
//! - *Iteration FLOP* (per rank, / tp): 2 × the layers' matrix parameters (the active ones
//!   for MoE) × the batch's tokens; attention 4 · q_dim · Σ over sequences of
//!   (n·c + n(n+1)/2) per layer, a sequence computing n new tokens over c cached ones
//!   (each new token attends causally to what precedes it, Narayanan et al. 2021's 2·2·s·h
//!   without their full-square simplification); the output layer 2·h·vocab only for the
//!   sequences sampling a token (vLLM computes logits only there); the embedding is a lookup.
//! - *Iteration bytes* (per rank): all weights read once, the KV of every scheduled
//!   sequence's cached context read, the new tokens' KV written; activations stay on chip.
//! - *Kernels*: [`KERNELS_PER_LAYER`] per layer plus [`KERNELS_FIXED`] per iteration.

use super::check::Split;
use super::memory::stage_params;
use super::types::{Layout, Recompute, Schedule, Sharding, Transformer};

/// Kernels one layer launches in vLLM's Llama forward (`vllm/model_executor/models/llama.py`):
/// input RMSNorm, QKV GEMM, rotary embedding, attention, output GEMM, post-attention
/// RMSNorm (fused residual add), gate-up GEMM, SiLU-and-multiply, down GEMM. The
/// tensor-parallel all-reduces are the network's, not kernels here. CUDA graphs hide much of
/// this launch cost in practice; a calibration profile's launch overhead replaces the default.
pub const KERNELS_PER_LAYER: f64 = 9.0;
/// Kernels per iteration outside the layers: final norm, logits GEMM, sampler.
pub const KERNELS_FIXED: f64 = 3.0;

/// Per-rank memory figures of one replica.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Footprint {
    pub weights_bytes: f64,
    /// KV cache bytes one token takes on one rank.
    pub kv_token_bytes: f64,
    pub reserve_bytes: f64,
}

/// One layer-one-stage layout of `tp` ranks (for [`stage_params`]).
fn layout(tp: u32) -> (Layout, Split) {
    let l = Layout {
        tp,
        sp: false,
        pp: 1,
        schedule: Schedule::OneFOneB,
        dp: 1,
        sharding: Sharding::None,
        ep: 1,
        recompute: Recompute::None,
        global_batch: 1,
        micro_batch: 1,
    };
    (
        l,
        Split {
            microbatches: 1,
            chunks: 1,
            layers_per_stage: 0,
            expert_dp: 1,
        },
    )
}

/// KV heads one rank holds: kv_heads / tp, at least one (replicated when kv_heads < tp).
pub fn kv_heads_per_rank(m: &Transformer, tp: u32) -> f64 {
    (f64::from(m.kv_heads) / f64::from(tp)).max(1.0)
}

impl Footprint {
    pub fn new(
        m: &Transformer,
        tp: u32,
        dtype_bytes: f64,
        token_budget: u32,
        max_seqs: u32,
    ) -> Self {
        let (l, mut split) = layout(tp);
        split.layers_per_stage = m.layers;
        let p = stage_params(m, &l, &split, 0);
        let t = f64::from(tp);
        let (h, q, kv) = (m.hidden as f64, m.q_dim(), m.kv_dim());
        let ffn = m
            .moe
            .map_or(m.ffn as f64, |e| f64::from(e.top_k) * e.expert_ffn as f64);
        let per_token = dtype_bytes * (2.0 * h + (q + 2.0 * kv) / t + 2.0 * ffn / t);
        Footprint {
            weights_bytes: (p.dense + p.expert) * dtype_bytes,
            kv_token_bytes: 2.0
                * f64::from(m.layers)
                * kv_heads_per_rank(m, tp)
                * m.head_dim as f64
                * dtype_bytes,
            reserve_bytes: f64::from(token_budget) * per_token
                + f64::from(max_seqs) * 4.0 * m.vocab as f64 / t,
        }
    }

    /// An LLM service's footprint.
    pub fn of(s: &crate::spec::serving::LlmServing) -> Self {
        Footprint::new(
            &s.model,
            s.tp,
            super::dtype_bytes(&s.dtype),
            s.engine.token_budget,
            s.engine.max_seqs,
        )
    }

    pub fn block_bytes(&self, kv_block: u32) -> f64 {
        self.kv_token_bytes * f64::from(kv_block)
    }

    /// Blocks `tokens` tokens take.
    pub fn blocks_for(&self, tokens: u64, kv_block: u32) -> u64 {
        tokens.div_ceil(u64::from(kv_block))
    }

    /// KV blocks one rank's device of `memory_bytes` holds at `fraction`: what is left after
    /// the weights and the reserve, in whole blocks (0 when nothing is left).
    pub fn kv_blocks(&self, memory_bytes: f64, fraction: f64, kv_block: u32) -> u64 {
        let left = memory_bytes * fraction - self.weights_bytes - self.reserve_bytes;
        (left / self.block_bytes(kv_block)).floor().max(0.0) as u64
    }
}

/// What one iteration's batch is, summed over its sequences.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BatchShape {
    /// Tokens computed (the sum of n).
    pub tokens: f64,
    /// Σ (n·c + n(n+1)/2): attention pairs of new tokens with what precedes them.
    pub attention_pairs: f64,
    /// Σ c: cached tokens whose KV is read.
    pub context_tokens: f64,
    /// Sequences that sample a token at the end of the iteration.
    pub sampled: f64,
}

impl BatchShape {
    /// Add a sequence computing `n` new tokens over `c` cached ones.
    pub fn add(&mut self, n: u64, c: u64, samples: bool) {
        let (n, c) = (n as f64, c as f64);
        self.tokens += n;
        self.attention_pairs += n * c + n * (n + 1.0) / 2.0;
        self.context_tokens += c;
        if samples {
            self.sampled += 1.0;
        }
    }
}

/// One iteration's work on one rank (see the module doc).
pub fn iteration_work(
    m: &Transformer,
    tp: u32,
    f: &Footprint,
    b: &BatchShape,
) -> crate::compute::Work {
    let t = f64::from(tp);
    let layers = f64::from(m.layers);
    let matmul = 2.0 * layers * m.layer_matmul_params() * b.tokens;
    let attention = layers * 4.0 * m.q_dim() * b.attention_pairs;
    let logits = m.output_forward_flop_per_token() * b.sampled;
    crate::compute::Work {
        flop: (matmul + attention + logits) / t,
        bytes: f.weights_bytes + f.kv_token_bytes * (b.context_tokens + b.tokens),
        kernels: KERNELS_PER_LAYER * layers + KERNELS_FIXED,
    }
}

/// Bytes of one tensor-parallel all-reduce of the iteration (per rank, nccl-tests' size):
/// tokens × hidden × dtype bytes; Megatron-LM's layer has 2 (after attention, after the FFN).
pub fn allreduce_bytes(m: &Transformer, tokens: f64, dtype_bytes: f64) -> f64 {
    tokens * m.hidden as f64 * dtype_bytes
}

/// All-reduces per iteration: 2 per layer.
pub fn allreduces(m: &Transformer) -> f64 {
    2.0 * f64::from(m.layers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama3_8b_kv_and_weights_per_rank() {
        let m = crate::model::catalog::find("llama3_8b").unwrap();
        let f1 = Footprint::new(&m, 1, 2.0, 8192, 256);
        // 2 × 32 layers × 8 KV heads × 128 × 2 bytes = 128 KiB per token.
        assert_eq!(f1.kv_token_bytes, 131_072.0);
        assert!((f1.weights_bytes - m.params() * 2.0).abs() < 1.0);
        let f2 = Footprint::new(&m, 2, 2.0, 8192, 256);
        assert_eq!(f2.kv_token_bytes, 65_536.0);
        // tp 16 > 8 KV heads: one head per rank.
        let f16 = Footprint::new(&m, 16, 2.0, 8192, 256);
        assert_eq!(f16.kv_token_bytes, 2.0 * 32.0 * 128.0 * 2.0);
    }

    #[test]
    fn attention_pairs_are_causal() {
        let mut b = BatchShape::default();
        b.add(1, 99, true); // a decode over 99 cached tokens: 100 pairs
        b.add(3, 0, false); // a 3-token prefill chunk: 1 + 2 + 3
        assert_eq!(b.attention_pairs, 106.0);
        assert_eq!((b.tokens, b.context_tokens, b.sampled), (4.0, 99.0, 1.0));
    }
}
