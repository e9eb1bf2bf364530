//! The data of a model-level workload: a transformer's shape, how a training job lays it
//! out over devices, and what that layout costs per rank (memory held, work and traffic per
//! step). Plain data here; the formulas that fill [`Memory`] and [`StepWork`] live beside it
//! (`params`, `memory`, `work`), each with its source.
//!
//! Architecture invariant: nothing in `model` knows the cluster, the network or the engine;
//! it turns (model, layout) into per-rank numbers, and the simulation prices them.

use serde::Serialize;

/// The feed-forward block of a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Ffn {
    /// Two matrices, h -> ffn -> h, with GeLU (GPT-3, Megatron-LM's GPT models).
    Gelu,
    /// Three matrices (gate, up, down) with SwiGLU (Llama, Mixtral).
    SwiGlu,
}

/// Mixture of experts: every layer's feed-forward block is `experts` experts of
/// `expert_ffn` each, `top_k` of them active per token (Mixtral: 8, top-2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Moe {
    pub experts: u32,
    pub top_k: u32,
    pub expert_ffn: u64,
}

/// A decoder-only transformer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Transformer {
    pub name: String,
    pub layers: u32,
    pub hidden: u64,
    /// Attention (query) heads and key/value heads (equal: MHA; fewer: GQA; 1: MQA).
    pub heads: u32,
    pub kv_heads: u32,
    /// Per head; `hidden / heads` unless the model says otherwise.
    pub head_dim: u64,
    /// Feed-forward width (of a dense layer; MoE layers use `moe.expert_ffn`).
    pub ffn: u64,
    pub ffn_kind: Ffn,
    #[serde(rename = "vocab_tokens")]
    pub vocab: u64,
    /// Training sequence length (tokens per sample).
    #[serde(rename = "seq_tokens")]
    pub seq: u64,
    /// Input and output embeddings share one matrix (GPT-3) or not (Llama).
    pub tied_embeddings: bool,
    pub moe: Option<Moe>,
    /// Where the shape comes from (paper, model card, config file).
    pub source: String,
}

/// Activation recomputation (Korthikanti et al. 2022, "Reducing Activation Recomputation in
/// Large Transformer Models").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Recompute {
    None,
    /// Only the attention core (softmax, dropout, attention over V) is recomputed.
    Selective,
    /// Each layer keeps only its input and recomputes its forward pass in the backward.
    Full,
}

/// How the attention core (scores, softmax, dropout, the weighted sum over V) runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Attention {
    /// Separate kernels, the s × s scores written to memory (Megatron-LM in 2022; Calculon's
    /// accounting).
    Unfused,
    /// One fused kernel per pass that never writes the scores (FlashAttention, Dao et al.
    /// 2022; TransformerEngine's and cuDNN's fused attention in NeMo and Megatron-Core).
    Flash,
}

/// How data-parallel replicas shard training state (Rajbhandari et al. 2020, ZeRO).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Sharding {
    /// Every replica holds everything; gradients are all-reduced.
    None,
    /// Optimizer state sharded (ZeRO-1).
    Zero1,
    /// Optimizer state and gradients sharded (ZeRO-2).
    Zero2,
    /// Optimizer state, gradients and weights sharded (ZeRO-3; FSDP's full sharding).
    Zero3,
}

/// Pipeline schedule (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training
/// on GPU Clusters Using Megatron-LM", §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Schedule {
    /// 1F1B (PipeDream-Flush): bubble (p - 1) / m of the ideal time.
    OneFOneB,
    /// Interleaved 1F1B with `v` model chunks per stage: bubble (p - 1) / (v m).
    Interleaved(u32),
}

/// A training job's parallel layout and batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Layout {
    /// Tensor parallel size, and whether sequence parallelism splits the rest of the layer.
    pub tp: u32,
    pub sp: bool,
    /// Pipeline parallel stages and schedule.
    pub pp: u32,
    pub schedule: Schedule,
    /// Data parallel replicas and how they shard state.
    pub dp: u32,
    pub sharding: Sharding,
    /// Expert parallel size (MoE only; 1 otherwise): experts split over `ep` ranks of the
    /// data-parallel dimension.
    pub ep: u32,
    pub recompute: Recompute,
    pub attention: Attention,
    /// Samples per iteration (all replicas) and per microbatch.
    pub global_batch: u64,
    pub micro_batch: u64,
}

/// Training settings beyond [`Layout`], as Megatron-LM and TransformerEngine add them: context
/// parallelism, uneven pipeline stages, tensor-parallel communication overlapped with the
/// GEMMs, and the scope of a narrow (fp8) precision. Kept apart from `Layout` so the layouts
/// other models build (serving) need not name them; [`Setup::default`] is none of them, and
/// every formula gives what it gave before with it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Setup {
    /// Context-parallel size (`parallel cp N`, Megatron-LM `--context-parallel-size`): each
    /// sample's sequence split over `cp` ranks, 1 for none.
    pub cp: u32,
    /// Layers on the first and on the last pipeline stage when they are not an even share
    /// (`first_stage N`, `last_stage N`; Megatron-LM `--decoder-first-pipeline-num-layers`
    /// and `--decoder-last-pipeline-num-layers`); the rest split evenly over the stages
    /// between.
    pub first_stage: Option<u32>,
    pub last_stage: Option<u32>,
    /// `overlap tp_comm` (Megatron-LM `--tp-comm-overlap`, TransformerEngine userbuffers): each
    /// sequence-parallel all-gather and reduce-scatter runs during the GEMM beside it.
    pub tp_comm_overlap: bool,
    /// Bytes per element of the linear layers' GEMM inputs when the training precision is
    /// narrower than 16 bits (fp8: 1). Only those GEMMs (QKV, attention projection, FC1, FC2)
    /// run at that precision, as TransformerEngine's `fp8_autocast` does; everything else —
    /// the attention core, norms, elementwise kernels, the output layer — stays 16-bit.
    /// `None`: every kernel in the training dtype.
    pub narrow_gemm_bytes: Option<f64>,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            cp: 1,
            first_stage: None,
            last_stage: None,
            tp_comm_overlap: false,
            narrow_gemm_bytes: None,
        }
    }
}

/// Bytes one rank holds in device memory during training.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Memory {
    pub weights_bytes: f64,
    pub gradients_bytes: f64,
    pub optimizer_bytes: f64,
    pub activations_bytes: f64,
}

impl Memory {
    pub fn total_bytes(&self) -> f64 {
        self.weights_bytes + self.gradients_bytes + self.optimizer_bytes + self.activations_bytes
    }
}

/// Which ranks a collective runs among.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Among {
    /// The `tp` ranks of one tensor-parallel group (innermost: consecutive ranks).
    Tensor,
    /// The `dp` replicas of one shard (stride `tp * pp`).
    Data,
    /// The `ep` ranks of one expert-parallel group.
    Expert,
    /// The `dp / ep` replicas of one expert shard (the data-parallel ranks holding the same
    /// experts), which reduce the experts' gradients.
    ExpertData,
}

/// A kind of collective call in a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CommOp {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
}

/// `count` calls of `op`, each of `bytes` per rank (the buffer size as nccl-tests counts it),
/// among the ranks `among`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Comm {
    pub op: CommOp,
    pub among: Among,
    pub bytes: f64,
    pub count: u64,
}

/// What one rank does in one iteration (every rank of a stage alike; stages alike: layers
/// are split evenly, and the embedding and output layer's work goes to the first and last
/// stage as `edge_flop`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepWork {
    /// Microbatches per iteration per replica: global_batch / (micro_batch * dp).
    pub microbatches: u64,
    /// FLOP of one microbatch on one rank of a middle stage: forward, backward (weights and
    /// inputs) and the forward redone by recomputation.
    pub forward_flop: f64,
    pub backward_flop: f64,
    pub recompute_flop: f64,
    /// Extra FLOP per microbatch of the stage holding the output layer (logits and their
    /// gradient), on each of its ranks.
    pub edge_flop: f64,
    /// The kernels of one layer for one microbatch on one rank (`ops::layer_kernels`), which
    /// the compute time is priced from; a middle stage runs `layers_per_stage` of them.
    pub layer: super::ops::LayerKernels,
    pub layers_per_stage: u32,
    /// Layers of the first and of the last stage (both `layers_per_stage` unless the stages
    /// are uneven; with one stage, all three are its layers).
    pub first_stage_layers: u32,
    pub last_stage_layers: u32,
    /// The output layer's kernels per microbatch on the last stage (`edge_flop`'s kernels).
    pub output: Vec<super::ops::Kernel>,
    /// The optimizer step once per iteration over the parameters the rank updates.
    pub optimizer: super::ops::Kernel,
    /// Tensor- and expert-parallel collectives per microbatch on each rank, in the critical
    /// path of its stage (Megatron-LM does not overlap them by default).
    pub per_microbatch: Vec<Comm>,
    /// Whether the sequence-parallel collectives of `per_microbatch` (those among `Tensor`)
    /// run during the GEMMs beside them (`overlap tp_comm`): layer by layer, the forward's
    /// all-gathers beside QKV and FC1, its reduce-scatters beside the projection and FC2; the
    /// backward's all-gathers beside the projection's and FC2's input gradients and (the
    /// re-gather) QKV's and FC1's, its reduce-scatters beside QKV's and FC1's weight
    /// gradients ([`super::ops::tp_overlap_pairs`]).
    pub tp_comm_overlap: bool,
    /// Context parallelism: ranks a sample's sequence is split over, and the bytes each sends
    /// to the next of its ring per step of attention's key/value exchange (its K and V
    /// chunk); `cp − 1` steps per attention forward, the backward sending the chunk and its
    /// gradient (twice the bytes).
    pub cp: u32,
    pub cp_step_bytes: f64,
    /// Bytes a stage sends to the next per microbatch (activations forward, their gradient
    /// back: each direction this size), 0 without pipelining.
    pub p2p_bytes: f64,
    /// Collectives per iteration among data-parallel replicas (gradient reduction, ZeRO-3's
    /// weight gathers), overlapped with the backward pass where the layout allows.
    pub per_iteration: Vec<Comm>,
    /// The pipeline bubble as a fraction of the ideal (bubble-free) time: (p - 1) / m for
    /// 1F1B, (p - 1) / (v m) interleaved.
    pub bubble_fraction: f64,
    /// Tokens one iteration trains on (global batch × sequence).
    pub tokens: f64,
    /// Model FLOP of one iteration without recomputation (6 × active params × tokens plus
    /// attention), for MFU.
    pub model_flop: f64,
}
