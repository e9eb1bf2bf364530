//! Device memory one rank holds while training: weights, gradients, optimizer state and
//! activations, for each pipeline stage; [`per_rank`] reports the stage that holds the most
//! (the first, in practice: it keeps the most microbatches in flight).
//!
//! Training state, mixed-precision Adam (bytes per parameter, [`bytes_per_param`]): weights
//! in the training dtype; gradients accumulated and reduced in fp32 (Megatron-LM does so
//! whenever it trains in bf16); fp32 master weights (only when the dtype is narrower than
//! fp32) and Adam's two fp32 moments. With a 2-byte dtype that is 2 + 4 + 12 = 18 bytes,
//! Megatron Core's "bf16 parameters, fp32 gradients" row (Distributed Optimizer guide; its
//! fp32 row, 16, is this with a 4-byte dtype); the ZeRO paper's 16 (Rajbhandari et al. 2020
//! §3.1, K = 12) keeps fp16 gradients. Korthikanti et al. 2022's Figure 1 is 18 bytes per
//! parameter too. Sharding over data-parallel replicas (ZeRO §5): stage 1 divides the optimizer
//! state, stage 2 the gradients too, stage 3 the weights too; expert parameters are held by
//! dp / ep replicas, so they shard over those.
//!
//! Activations follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
//! Transformer Models"), generalised from their 16-bit, MHA, ffn = 4h, GeLU case so that the
//! same terms hold for GQA, SwiGLU and other dtypes; see [`layer_activation_bytes`]. With
//! the settings of [`Setup`] (issue 39), [`layer_activation_bytes_with`]: context
//! parallelism's 1/cp of the tokens, fp8's quantized linear inputs, uneven stages' own layer
//! counts, and state sharded over dp × cp.

use super::check::{Split, check_dtype, check_with, stage_layers};
use super::types::{
    Attention, Ffn, Layout, Memory, Recompute, Schedule, Setup, Sharding, Transformer,
};

/// Gradient bytes per parameter: fp32 accumulation and reduction.
pub const GRAD_BYTES: f64 = 4.0;

/// Bytes per parameter of (weights, gradients, optimizer state), see the module doc.
pub fn bytes_per_param(dtype_bytes: f64) -> (f64, f64, f64) {
    let master = if dtype_bytes < 4.0 { 4.0 } else { 0.0 };
    (dtype_bytes, GRAD_BYTES, master + 8.0)
}

/// Parameters one rank of a stage holds: `dense` ones are replicated over all `dp`
/// replicas, `expert` ones over `dp / ep`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageParams {
    pub dense: f64,
    pub expert: f64,
}

/// Parameters of `stage` (0-based) per rank. Its layers' matrices split over `tp`
/// ([`Transformer::layer_split`]), experts over `tp × ep`; the first stage adds the word
/// embedding (split over `tp`, Megatron-LM's vocabulary-parallel embedding) and the learned
/// positions (replicated); the last adds the final norm and the output layer (its own matrix,
/// or with tied embeddings and pp > 1 the copy Megatron-LM keeps there).
pub fn stage_params(m: &Transformer, l: &Layout, split: &Split, stage: u32) -> StageParams {
    let t = f64::from(l.tp);
    let n = f64::from(split.layers_per_stage);
    let ls = m.layer_split();
    let h = m.hidden as f64;
    let word = m.vocab as f64 * h / t;
    let mut dense = n * (ls.split / t + ls.replicated);
    if stage == 0 {
        dense += word + if m.gpt_style() { m.seq as f64 * h } else { 0.0 };
    }
    if stage + 1 == l.pp {
        dense += m.norm_params();
        if !m.tied_embeddings || l.pp > 1 {
            dense += word;
        }
    }
    StageParams {
        dense,
        expert: n * ls.expert / (t * f64::from(l.ep)),
    }
}

/// Activation bytes one layer keeps per microbatch on one rank, Korthikanti et al. 2022 §4.1
/// and Table 2, with s = seq, b = micro_batch, d = dtype bytes, masks 1 byte:
/// - kept whole by each TP rank unless sequence-parallel: both norms' inputs (2·d·h), the
///   Q/K/V input (d·h), the FFN input (d·h) and two dropout masks (2·h) — their "10 sbh";
/// - split over TP: Q and K (d·(q_dim + kv_dim)), V (d·kv_dim), the output projection's input
///   (d·q_dim), the FFN's inner tensors (GeLU: its input and output, 2·d·ffn; SwiGLU: gate,
///   up and their product, 3·d·ffn) — their "24 sbh";
/// - the attention core: softmax output, dropout mask and output, heads·s·(2d + 1) per token
///   — their "5 a s² b"; selective recomputation drops it (§5);
/// - full recomputation keeps only the layer's input, d·h per token (Table 2's "2 sbh"; with
///   sequence parallelism that input is itself split, so / tp).
///
/// Models without dropout (SwiGLU family, see `params`) have no masks and one s² tensor. An
/// MoE layer keeps `top_k` copies of the FFN input and inner tensors (each token's share of
/// its experts), an extension beyond the paper. With d = 2, MHA, GeLU and ffn = 4h this is
/// exactly s·b·h·(34 + 5·a·s/h) without parallelism and Table 2's rows with it.
pub fn layer_activation_bytes(m: &Transformer, l: &Layout, dtype_bytes: f64) -> f64 {
    layer_activation_bytes_with(m, l, &Setup::default(), dtype_bytes)
}

/// [`layer_activation_bytes`] with the settings of `setup`:
/// - context parallelism: a rank holds 1/cp of each sample's tokens (every term is per
///   token, and fused attention keeps no s × s term);
/// - a narrow precision: the four linear layers keep their inputs for the weight gradient as
///   TransformerEngine quantized them (`transformer_engine/pytorch/module/linear.py` saves
///   the quantized `inputmat`, column-wise), so the QKV input, the FFN input, the
///   projection's input and FC2's input (GeLU's output, SwiGLU's product) are kept at the
///   narrow width and the rest in 16 bits.
pub fn layer_activation_bytes_with(
    m: &Transformer,
    l: &Layout,
    setup: &Setup,
    dtype_bytes: f64,
) -> f64 {
    let d = dtype_bytes;
    let w = setup.narrow_gemm_bytes.unwrap_or(d);
    let (s, b, h) = (m.seq as f64, l.micro_batch as f64, m.hidden as f64);
    let t = f64::from(l.tp);
    let sb = s * b / f64::from(setup.cp.max(1));
    let sp = if l.sp { t } else { 1.0 };
    if l.recompute == Recompute::Full {
        return d * sb * h / sp;
    }
    let drop = m.gpt_style();
    let mask = if drop { 1.0 } else { 0.0 };
    let (top_k, f) = m.moe.map_or((1.0, m.ffn as f64), |e| {
        (f64::from(e.top_k), e.expert_ffn as f64)
    });
    // FFN tensors kept besides FC2's input: GeLU's input; SwiGLU's gate and up.
    let inner = match m.ffn_kind {
        Ffn::Gelu => 1.0,
        Ffn::SwiGlu => 2.0,
    };
    let whole = sb * (2.0 * d * h + w * h + top_k * w * h + 2.0 * mask * h);
    let (q, kv) = (m.q_dim(), m.kv_dim());
    let split = sb * (d * (q + kv) + d * kv + w * q + top_k * (inner * d + w) * f);
    // Selective recomputation keeps no s × s activations, and fused attention never makes
    // them (it keeps O and a row statistic, counted with the projections).
    let core = if l.recompute == Recompute::Selective || l.attention == Attention::Flash {
        0.0
    } else {
        let per = if drop { 2.0 * d + 1.0 } else { d };
        b * f64::from(m.heads) * s * s * per
    };
    whole / sp + (split + core) / t
}

/// Model chunks (each layers / (pp × v) layers of one microbatch) whose activations `stage`
/// holds at its peak. 1F1B: the first stage runs p forwards before its first backward, stage
/// i runs p − i (Narayanan et al. 2021 §2.2.1; Korthikanti §4.2.3: the first stage holds L
/// layers' worth). Interleaved with v chunks: Megatron-LM's warm-up, 2·(p − i − 1) + (v − 1)·p
/// forwards, plus the one before the first backward: p·v + p − 1 for the first stage, which is
/// Korthikanti's factor (1 + (p − 1)/(p·v)) on L layers. Never more than there are.
pub fn in_flight_chunks(l: &Layout, split: &Split, stage: u32) -> u64 {
    let (p, i, m) = (u64::from(l.pp), u64::from(stage), split.microbatches);
    match l.schedule {
        Schedule::Interleaved(v) if v > 1 => {
            let v = u64::from(v);
            (2 * (p - i - 1) + (v - 1) * p + 1).min(m.saturating_mul(v))
        }
        _ => (p - i).min(m),
    }
}

/// Memory of one rank of `stage` (0-based, below `pp`).
pub fn per_rank_at(
    m: &Transformer,
    l: &Layout,
    dtype_bytes: f64,
    stage: u32,
) -> Result<Memory, String> {
    per_rank_at_with(m, l, &Setup::default(), dtype_bytes, stage)
}

/// [`per_rank_at`] with the settings of `s`: its stage's own layer count (uneven stages),
/// activations of 1/cp of the tokens, and state sharded over dp × cp ranks (Megatron-LM's
/// distributed optimizer shards over its data-parallel group with context parallelism).
pub fn per_rank_at_with(
    m: &Transformer,
    l: &Layout,
    s: &Setup,
    dtype_bytes: f64,
    stage: u32,
) -> Result<Memory, String> {
    let split = check_with(m, l, s)?;
    check_dtype(dtype_bytes)?;
    if stage >= l.pp {
        return Err(format!("stage {stage} is past the last of {} stages", l.pp));
    }
    let (first, middle, last) = stage_layers(m, l, s);
    let split = Split {
        layers_per_stage: match stage {
            0 => first,
            x if x + 1 == l.pp => last,
            _ => middle,
        },
        ..split
    };
    Ok(stage_memory(m, l, &split, s, dtype_bytes, stage))
}

/// Memory of the rank that holds the most: the first stage or the last. A middle stage holds
/// no more than the first: the same layers, no embedding, fewer microbatches in flight.
pub fn per_rank(m: &Transformer, l: &Layout, dtype_bytes: f64) -> Result<Memory, String> {
    per_rank_with(m, l, &Setup::default(), dtype_bytes)
}

/// [`per_rank`] with the settings of `s`; with uneven stages a middle stage may hold more
/// layers than the first, so every stage's kind (first, a middle one, last) is compared.
pub fn per_rank_with(
    m: &Transformer,
    l: &Layout,
    s: &Setup,
    dtype_bytes: f64,
) -> Result<Memory, String> {
    let mut best = per_rank_at_with(m, l, s, dtype_bytes, 0)?;
    let mut stages = vec![l.pp - 1];
    if l.pp > 2 && (s.first_stage.is_some() || s.last_stage.is_some()) {
        stages.push(1);
    }
    for stage in stages {
        let x = per_rank_at_with(m, l, s, dtype_bytes, stage)?;
        if x.total_bytes() > best.total_bytes() {
            best = x;
        }
    }
    Ok(best)
}

fn stage_memory(
    m: &Transformer,
    l: &Layout,
    split: &Split,
    setup: &Setup,
    d: f64,
    stage: u32,
) -> Memory {
    let cp = setup.cp.max(1);
    let p = stage_params(m, l, split, stage);
    let (wb, gb, ob) = bytes_per_param(d);
    let (dp, edp) = (f64::from(l.dp) * f64::from(cp), f64::from(split.expert_dp));
    let level = match l.sharding {
        Sharding::None => 0,
        Sharding::Zero1 => 1,
        Sharding::Zero2 => 2,
        Sharding::Zero3 => 3,
    };
    // Bytes of state sharded from ZeRO stage `from` on.
    let state = |bytes: f64, from: u8| {
        if level >= from {
            bytes * (p.dense / dp + p.expert / edp)
        } else {
            bytes * (p.dense + p.expert)
        }
    };
    Memory {
        weights_bytes: state(wb, 3),
        gradients_bytes: state(gb, 2),
        optimizer_bytes: state(ob, 1),
        activations_bytes: activation_bytes(m, l, split, setup, d, stage),
    }
}

/// Korthikanti et al. 2022 §4.3 besides the layers: the first stage keeps the embedding's
/// dropout mask (1 byte per element) for each microbatch in flight, the last the final norm's
/// and output layer's inputs (d·s·b·h each) and the fp32 logits (4·s·b·vocab / tp) of one
/// microbatch; with d = 2 and sequence parallelism their 4·s·b·h/t·(1 + v/h).
fn activation_bytes(
    m: &Transformer,
    l: &Layout,
    split: &Split,
    setup: &Setup,
    d: f64,
    stage: u32,
) -> f64 {
    let t = f64::from(l.tp);
    let sp = if l.sp { t } else { 1.0 };
    let c = f64::from(setup.cp.max(1));
    let sbh = m.seq as f64 * l.micro_batch as f64 * m.hidden as f64 / c;
    let per_chunk = f64::from(split.layers_per_stage) / f64::from(split.chunks);
    let chunks = in_flight_chunks(l, split, stage) as f64;
    let mut bytes = chunks * per_chunk * layer_activation_bytes_with(m, l, setup, d);
    if stage == 0 && m.gpt_style() {
        let microbatches = u64::from(l.pp).min(split.microbatches) as f64;
        bytes += microbatches * sbh / sp;
    }
    if stage + 1 == l.pp {
        let sbv = m.seq as f64 * l.micro_batch as f64 * m.vocab as f64 / c;
        bytes += 2.0 * d * sbh / sp + 4.0 * sbv / t;
    }
    bytes
}
