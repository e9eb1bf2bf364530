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
//!   sequence's cached context read, the new tokens' KV written, and each kernel's
//!   activations in and out ([`activation_bytes`]).
//! - *Kernels*: [`KERNELS_PER_LAYER`] per layer plus [`KERNELS_FIXED`] per iteration.
//! - *Pipeline stages* (`pp` > 1): stage s holds [`stage_layers`] of the layers (vLLM's
//!   `get_pp_indices`, `vllm/distributed/utils.py`, read at commit 5a6541db of
//!   vllm-project/vllm), the first also the embedding, the last the final norm and the output
//!   layer (each stage its own copy when the embeddings are tied). A [`Footprint`] is one
//!   stage's rank: its weights, its layers' KV, its reserve (the logits only on the last), and
//!   [`iteration_work`] is that stage's share of the iteration.

use super::check::Split;
use super::memory::stage_params;
use super::types::{Layout, Recompute, Schedule, Sharding, Transformer};

/// Kernels one layer launches in vLLM's Llama forward (`vllm/model_executor/models/llama.py`):
/// input RMSNorm, QKV GEMM, rotary embedding, attention, output GEMM, post-attention
/// RMSNorm (fused residual add), gate-up GEMM, SiLU-and-multiply, down GEMM. The
/// tensor-parallel all-reduces are the network's, not kernels here. Each costs the profile's
/// launch overhead, inside a CUDA graph too ([`super::engines`]).
pub const KERNELS_PER_LAYER: f64 = 9.0;
/// Kernels per iteration outside the layers: final norm, logits GEMM, sampler.
pub const KERNELS_FIXED: f64 = 3.0;

/// Per-rank memory figures of one pipeline stage of a replica (the replica's, with pp 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Footprint {
    pub weights_bytes: f64,
    /// KV cache bytes one token takes on one rank.
    pub kv_token_bytes: f64,
    pub reserve_bytes: f64,
    /// The stage's layers (all of them with pp 1).
    pub layers: u32,
    /// The last stage: it computes the final norm, the logits and samples.
    pub last: bool,
    /// Bytes one rank's kernels move through memory per token and layer for the
    /// activations ([`activation_bytes`]).
    pub act_token_bytes: Activations,
}

/// Bytes per weight NVFP4 adds for its block scales: one FP8 (E4M3) scale per 16 FP4 values
/// (NVIDIA's NVFP4 format, as TensorRT-LLM's and vLLM's fp4 checkpoints store it; the
/// per-tensor FP32 scale is negligible). Serving weights in `fp4` are 0.5 + 1/16 bytes each.
pub const NVFP4_SCALE_BYTES: f64 = 1.0 / 16.0;

/// Bytes per element of what an LLM service stores and moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dtypes {
    /// Weights (`precision`).
    pub weights: f64,
    /// KV cache (`precision D kv K`).
    pub kv: f64,
    /// Activations between kernels, what the all-reduces and stage sends move: the
    /// weights' dtype, but 16-bit under 8- and 4-bit weights, whose GEMMs return bf16
    /// (vLLM's `Fp8LinearMethod` returns the input's dtype; TensorRT-LLM's FP8 and NVFP4
    /// GEMMs output bf16 and its all-reduces run in it).
    pub activations: f64,
}

impl Dtypes {
    /// One dtype of `bytes` for everything.
    pub fn same(bytes: f64) -> Self {
        Dtypes {
            weights: bytes,
            kv: bytes,
            activations: bytes,
        }
    }
}

/// Bytes one rank moves through device memory per token and layer for a layer's
/// activations, by the kernels that move them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Activations {
    /// The GEMMs' inputs and outputs.
    pub gemm: f64,
    /// The norms', rotary embedding's and SiLU-and-multiply's.
    pub elementwise: f64,
    /// Attention's query and output.
    pub attention: f64,
}

/// Bytes one rank moves through device memory per token and layer for the activations of
/// vLLM's Llama layer (`vllm/model_executor/models/llama.py`; each kernel reads its inputs
/// from and writes its outputs to device memory), at `a` bytes per element, with hidden size
/// h, query width q, key/value width kv and FFN width f (the routed experts' for MoE; q, kv
/// and f split over tp, h whole on every rank), as (GEMMs, elementwise kernels, attention):
/// - GEMMs' inputs and outputs: QKV h → q + 2kv, output q → h, gate-up h → 2f, down f → h:
///   4h + (2q + 2kv + 3f) / tp;
/// - elementwise kernels: the two fused add-RMSNorms (each reads the input and the residual
///   and writes both, 4h), rotary embedding in place on q and k (2q + 2kv), SiLU-and-multiply
///   (reads 2f, writes f): 8h + (2q + 2kv + 3f) / tp;
/// - attention reads q and writes its output: 2q / tp.
///
/// Assumed: no kernel fusion beyond vLLM's (engines that fuse more move less); the KV cache
/// traffic is counted apart.
pub fn activation_bytes(m: &Transformer, tp: u32, a: f64) -> Activations {
    let t = f64::from(tp);
    let (h, q, kv) = (m.hidden as f64, m.q_dim(), m.kv_dim());
    let f = m
        .moe
        .map_or(m.ffn as f64, |e| f64::from(e.top_k) * e.expert_ffn as f64);
    let split = (2.0 * q + 2.0 * kv + 3.0 * f) / t;
    Activations {
        gemm: a * (4.0 * h + split),
        elementwise: a * (8.0 * h + split),
        attention: a * 2.0 * q / t,
    }
}

/// Layers of each of `pp` stages, as vLLM's `get_pp_indices` splits them: ⌊layers / pp⌋
/// each, the remainder one more each on the stages before the last, from the second-to-last
/// backwards (the last holds the final norm and output layer, the first the embedding).
pub fn stage_layers(layers: u32, pp: u32) -> Vec<u32> {
    let pp = pp.max(1) as usize;
    let mut out = vec![layers / pp as u32; pp];
    let rem = (layers % pp as u32) as usize;
    for i in 2..rem + 2 {
        out[pp - i] += 1;
    }
    out
}

/// A `pp`-stage layout of `tp` ranks (for [`stage_params`]).
fn layout(tp: u32, pp: u32) -> (Layout, Split) {
    let l = Layout {
        tp,
        sp: false,
        pp,
        schedule: Schedule::OneFOneB,
        dp: 1,
        sharding: Sharding::None,
        ep: 1,
        recompute: Recompute::None,
        attention: super::types::Attention::Unfused,
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
    pub fn new(m: &Transformer, tp: u32, dtype: Dtypes, token_budget: u32, max_seqs: u32) -> Self {
        Footprint::stage(m, tp, 1, 0, dtype, token_budget, max_seqs)
    }

    /// Stage `stage` of `pp` (layers as [`stage_layers`]).
    pub fn stage(
        m: &Transformer,
        tp: u32,
        pp: u32,
        stage: u32,
        dtype: Dtypes,
        token_budget: u32,
        max_seqs: u32,
    ) -> Self {
        let layers = stage_layers(m.layers, pp)[stage as usize];
        let last = stage + 1 == pp;
        let (l, mut split) = layout(tp, pp);
        split.layers_per_stage = layers;
        let p = stage_params(m, &l, &split, stage);
        let t = f64::from(tp);
        let (h, q, kv) = (m.hidden as f64, m.q_dim(), m.kv_dim());
        let ffn = m
            .moe
            .map_or(m.ffn as f64, |e| f64::from(e.top_k) * e.expert_ffn as f64);
        let per_token = dtype.activations * (2.0 * h + (q + 2.0 * kv) / t + 2.0 * ffn / t);
        Footprint {
            act_token_bytes: activation_bytes(m, tp, dtype.activations),
            weights_bytes: (p.dense + p.expert) * dtype.weights,
            kv_token_bytes: 2.0
                * f64::from(layers)
                * kv_heads_per_rank(m, tp)
                * m.head_dim as f64
                * dtype.kv,
            reserve_bytes: f64::from(token_budget) * per_token
                + if last {
                    f64::from(max_seqs) * 4.0 * m.vocab as f64 / t
                } else {
                    0.0
                },
            layers,
            last,
        }
    }

    /// Bytes one rank needs: weights, reserve and the KV blocks of `tokens` tokens.
    pub fn need(&self, tokens: u64, kv_block: u32) -> f64 {
        self.weights_bytes
            + self.reserve_bytes
            + self.blocks_for(tokens, kv_block) as f64 * self.block_bytes(kv_block)
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
    /// Sequences scheduled.
    pub seqs: f64,
}

impl BatchShape {
    /// Add a sequence computing `n` new tokens over `c` cached ones.
    pub fn add(&mut self, n: u64, c: u64, samples: bool) {
        let (n, c) = (n as f64, c as f64);
        self.tokens += n;
        self.attention_pairs += n * c + n * (n + 1.0) / 2.0;
        self.context_tokens += c;
        self.seqs += 1.0;
        if samples {
            self.sampled += 1.0;
        }
    }
}

impl BatchShape {
    /// Whether every sequence computes one token: a batch of decodes (a graph can replay it).
    pub fn decode_only(&self) -> bool {
        self.seqs > 0.0 && self.tokens == self.seqs
    }
}

/// One iteration's work on one rank of `f`'s stage, in its three kinds of kernels, each its
/// own roofline (they run one after the other, so their times add): the GEMMs (the layers'
/// matrices and on the last stage the logits; all weights read once, and their activations
/// in and out), attention (its FLOP; the KV of the cached context read and the new tokens'
/// written, its query and output) and the elementwise kernels between them (norms, rotary,
/// SiLU: memory only) — [`activation_bytes`]. `gemm.kernels` is the iteration's launches (on
/// the last stage with the fixed kernels); the others' `kernels` are 0 (counted there).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phases {
    /// The stage's layers (whose kernels `gemm.kernels` counts).
    pub layers: f64,
    pub gemm: super::ops::Work,
    pub attention: super::ops::Work,
    pub elementwise: super::ops::Work,
}

pub fn iteration_phases(m: &Transformer, tp: u32, f: &Footprint, b: &BatchShape) -> Phases {
    let t = f64::from(tp);
    let layers = f64::from(f.layers);
    let matmul = 2.0 * layers * m.layer_matmul_params() * b.tokens;
    let attention = layers * 4.0 * m.q_dim() * b.attention_pairs;
    let (logits, fixed) = if f.last {
        (m.output_forward_flop_per_token() * b.sampled, KERNELS_FIXED)
    } else {
        (0.0, 0.0)
    };
    let act = f.act_token_bytes;
    let per_token = layers * b.tokens;
    Phases {
        layers,
        gemm: super::ops::Work {
            flop: (matmul + logits) / t,
            bytes: f.weights_bytes + act.gemm * per_token,
            kernels: KERNELS_PER_LAYER * layers + fixed,
        },
        attention: super::ops::Work {
            flop: attention / t,
            bytes: f.kv_token_bytes * (b.context_tokens + b.tokens) + act.attention * per_token,
            kernels: 0.0,
        },
        elementwise: super::ops::Work {
            flop: 0.0,
            bytes: act.elementwise * per_token,
            kernels: 0.0,
        },
    }
}

/// Bytes one rank sends to the same rank of the next stage per iteration: the intermediate
/// tensors (hidden states and residual, 2 × tokens × hidden × dtype bytes) split over the
/// stage's `tp` ranks — vLLM's send-allgather (`GroupCoordinator.send_tensor_dict` with
/// `all_gather_group` the TP group, `vllm/distributed/parallel_state.py`): each rank sends
/// its 1/tp slice of each tensor and the receiving stage all-gathers them.
pub fn stage_send_bytes(m: &Transformer, tp: u32, tokens: f64, dtype_bytes: f64) -> f64 {
    2.0 * tokens * m.hidden as f64 * dtype_bytes / f64::from(tp)
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

/// All-reduces of `f`'s stage per iteration: 2 per layer it holds.
pub fn stage_allreduces(f: &Footprint) -> f64 {
    2.0 * f64::from(f.layers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama3_8b_kv_and_weights_per_rank() {
        let m = crate::model::catalog::find("llama3_8b").unwrap();
        let f1 = Footprint::new(&m, 1, Dtypes::same(2.0), 8192, 256);
        // 2 × 32 layers × 8 KV heads × 128 × 2 bytes = 128 KiB per token.
        assert_eq!(f1.kv_token_bytes, 131_072.0);
        assert!((f1.weights_bytes - m.params() * 2.0).abs() < 1.0);
        let f2 = Footprint::new(&m, 2, Dtypes::same(2.0), 8192, 256);
        assert_eq!(f2.kv_token_bytes, 65_536.0);
        // tp 16 > 8 KV heads: one head per rank.
        let f16 = Footprint::new(&m, 16, Dtypes::same(2.0), 8192, 256);
        assert_eq!(f16.kv_token_bytes, 2.0 * 32.0 * 128.0 * 2.0);
    }

    #[test]
    fn stages_split_layers_as_vllm_does() {
        assert_eq!(stage_layers(80, 2), vec![40, 40]);
        // get_pp_indices: the remainder goes to the stages before the last, backwards.
        assert_eq!(stage_layers(32, 3), vec![11, 11, 10]);
        assert_eq!(stage_layers(30, 4), vec![7, 8, 8, 7]);
        assert_eq!(stage_layers(31, 4), vec![8, 8, 8, 7]);
        let m = crate::model::catalog::find("llama3_8b").unwrap();
        let one = Footprint::new(&m, 1, Dtypes::same(2.0), 8192, 256);
        let s: Vec<_> = (0..2)
            .map(|i| Footprint::stage(&m, 1, 2, i, Dtypes::same(2.0), 8192, 256))
            .collect();
        // Untied embeddings: the stages' weights and KV add up to the whole replica's.
        assert!((s[0].weights_bytes + s[1].weights_bytes - one.weights_bytes).abs() < 1.0);
        assert_eq!(
            s[0].kv_token_bytes + s[1].kv_token_bytes,
            one.kv_token_bytes
        );
        assert!(s[1].last && !s[0].last && s[0].reserve_bytes < s[1].reserve_bytes);
        assert_eq!(s[1].reserve_bytes, one.reserve_bytes);
    }

    #[test]
    fn activations_are_vllm_llama_layers_kernel_traffic() {
        let m = crate::model::catalog::find("llama3_8b").unwrap();
        // h 4096, q 4096, kv 1024, f 14336, 2 bytes: GEMMs 4h + 2q + 2kv + 3f, elementwise
        // 8h + 2q + 2kv + 3f, attention 2q elements.
        let Activations {
            gemm: g,
            elementwise: e,
            attention: a,
        } = activation_bytes(&m, 1, 2.0);
        assert_eq!(
            g,
            2.0 * (4.0 * 4096.0 + 2.0 * 4096.0 + 2.0 * 1024.0 + 3.0 * 14336.0)
        );
        assert_eq!(
            e,
            2.0 * (8.0 * 4096.0 + 2.0 * 4096.0 + 2.0 * 1024.0 + 3.0 * 14336.0)
        );
        assert_eq!(a, 2.0 * 2.0 * 4096.0);
        // tp 2 halves the split widths, not h.
        let two = activation_bytes(&m, 2, 2.0);
        let (g2, a2) = (two.gemm, two.attention);
        assert_eq!(
            g2,
            2.0 * (4.0 * 4096.0 + (2.0 * 4096.0 + 2.0 * 1024.0 + 3.0 * 14336.0) / 2.0)
        );
        assert_eq!(a2, a / 2.0);
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
