//! The kernels one rank runs for one microbatch: every matrix multiply and every elementwise
//! operation of a transformer layer, with its FLOP and the device-memory bytes it moves, for
//! the forward pass, the backward pass (gradients of the inputs and of the weights) and the
//! forward a recomputation redoes. `compute::kernels` prices each one.
//!
//! The accounting is Calculon's (Isaev et al. 2023, "Calculon: a Methodology and Tool for
//! High-Level Codesign of Systems and Large Language Models", SC '23), ported from
//! `calculon/llm/layers.py` and `calculon/llm/llm.py` (`_build_attn_block`,
//! `_build_mlp_block`) of github.com/calculon-ai/calculon at commit caa4b11:
//! - a linear layer (m × n)·(n × k) is 2mnk FLOP forward and again for each of the input and
//!   weight gradients; it reads its input and weights and writes its output (m·n + n·k + m·k
//!   elements) in each pass;
//! - the attention scores and the weighted sum over V are batched matrix multiplies over
//!   the rank's heads (no fused attention: Megatron-LM in 2022, and the activation memory of
//!   [`super::memory`] alike); their backward is twice the forward. With `attention flash`
//!   they, the softmax and the attention dropout are one fused kernel per pass instead
//!   (`Pass::flash`: FlashAttention's own FLOP count, causal, and its memory traffic);
//! - elementwise FLOP per element: LayerNorm 9 forward, 14 input and 7 weight gradient;
//!   softmax 5 and 8; GeLU 8 and 13; dropout and the residual add 1 and 1 (2 for the add);
//!   a fork of an activation to u users adds u per element in the backward; each reads its
//!   input and writes its output, a dropout also its 1-byte mask;
//! - a tensor-parallel all-reduce adds (t − 1)/t per element of local reduction and reads
//!   and writes the activation (its transfer is the network's, not counted here).
//!
//! Beyond Calculon's GPT block, for the catalog's other models: SwiGLU (Llama, Mixtral) is a
//! gate and an up projection (one linear of 2·ffn outputs), the GeLU element counts for the
//! activation and an elementwise product; RMSNorm is counted as LayerNorm; models without
//! dropout have no dropout kernels; GQA shrinks the key and value projections to kv_heads
//! (Megatron replicates a KV head on ranks when kv_heads < tp); an MoE layer's experts are
//! one linear over the rank's share of the routed tokens (b·s·top_k, balanced over experts),
//! plus the router. Sequence parallelism divides the norm, dropout and residual kernels by t.
//! The output layer (logits) is a linear of vocab / t outputs on the last stage; the input
//! embedding is a lookup and not counted; the optimizer step is Calculon's: 11 FLOP per
//! parameter on the vector units, reading its fp32 master weights and two moments.
//!
//! With the settings of [`Setup`] (issue 39): context parallelism runs 1/cp of every
//! sample's tokens on a rank (every kernel's b·s becomes b·s/cp; fused attention's queries
//! still span the whole sequence); a narrow precision (fp8) runs only the block's linear
//! GEMMs at it (`Pass::block_linear`), as TransformerEngine's `fp8_autocast` does around
//! Megatron-Core's transformer layers — the router, the attention core, the elementwise
//! kernels and the output layer stay 16-bit — and adds TransformerEngine's fused cast +
//! transpose of each quantized operand (`Pass::quantize`).

use super::types::{Attention, Ffn, Layout, Recompute, Setup, Transformer};
/// A kernel's units, by the name its fields use.
pub use Units as Engine;

/// Units a kernel runs on: tensor cores (matrix multiplies) or the vector units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Units {
    Matrix,
    Vector,
}

/// What a piece of work asks of a device (`crate::compute` prices it).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Work {
    pub flop: f64,
    /// Bytes read from and written to device memory.
    pub bytes: f64,
    pub kernels: f64,
}

/// One kernel: its units, FLOP and device-memory bytes.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Kernel {
    pub name: &'static str,
    pub engine: Engine,
    pub flop: f64,
    pub bytes: f64,
    /// Runs at the narrow precision's matrix rate (fp8: the four linear GEMMs of a layer
    /// under TransformerEngine's `fp8_autocast`, see [`Setup::narrow_gemm_bytes`]); `false`:
    /// at the 16-bit (or the training dtype's) rate.
    pub narrow: bool,
}

/// One layer's kernels for one microbatch on one rank.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct LayerKernels {
    pub forward: Vec<Kernel>,
    /// Input and weight gradients.
    pub backward: Vec<Kernel>,
    /// The forward kernels recomputation runs again before the backward.
    pub recompute: Vec<Kernel>,
}

/// Builds kernels with the element size, as `layers.py` does.
struct Pass {
    d: f64,
    out: LayerKernels,
    /// Kernels of the attention core (what selective recomputation redoes) are marked.
    core: Vec<bool>,
    /// Bytes per element of the linear GEMMs' inputs at the narrow precision, if any.
    narrow: Option<f64>,
}

impl Pass {
    fn fw(&mut self, name: &'static str, engine: Engine, flop: f64, elems: f64, core: bool) {
        self.out.forward.push(Kernel {
            name,
            engine,
            flop,
            bytes: elems * self.d,
            narrow: false,
        });
        self.core.push(core);
    }

    fn bw(&mut self, name: &'static str, engine: Engine, flop: f64, elems: f64) {
        if flop > 0.0 || elems > 0.0 {
            self.out.backward.push(Kernel {
                name,
                engine,
                flop,
                bytes: elems * self.d,
                narrow: false,
            });
        }
    }

    /// (m × n)·(n × k) with weights: forward, input gradient, weight gradient.
    fn linear(&mut self, name: &'static str, m: f64, n: f64, k: f64) {
        let (f, e) = (2.0 * m * n * k, m * n + n * k + m * k);
        self.fw(name, Engine::Matrix, f, e, false);
        self.bw(name, Engine::Matrix, f, e);
        self.bw(name, Engine::Matrix, f, e);
    }

    /// A linear layer of the transformer block (QKV, attention projection, FC1, FC2): at the
    /// narrow precision when there is one — each pass reads its two operands at the narrow
    /// width (TransformerEngine casts them: E4M3 forward, E5M2 gradients under
    /// `--fp8-format hybrid`) and writes its result in 16 bits — else as [`Pass::linear`].
    fn block_linear(&mut self, name: &'static str, m: f64, n: f64, k: f64) {
        let Some(w) = self.narrow else {
            return self.linear(name, m, n, k);
        };
        let start = (self.out.forward.len(), self.out.backward.len());
        self.linear(name, m, n, k);
        let bytes = (m * n + n * k) * w + m * k * self.d;
        for k in self.out.forward[start.0..]
            .iter_mut()
            .chain(self.out.backward[start.1..].iter_mut())
        {
            k.bytes = bytes;
            k.narrow = true;
        }
    }

    /// `batch` multiplies of (m × n)·(n × k) without weights.
    fn batched(&mut self, name: &'static str, batch: f64, m: f64, n: f64, k: f64) {
        let (f, e) = (batch * 2.0 * m * n * k, batch * (m * n + n * k + m * k));
        self.fw(name, Engine::Matrix, f, e, true);
        self.bw(name, Engine::Matrix, 2.0 * f, e);
    }

    /// Fused attention over `bs` tokens of `heads` query heads (`kv` key/value elements per
    /// token, head dimension `hd`, sequence `s`), causal, as FlashAttention counts it
    /// (Dao-AILab/flash-attention `benchmarks/benchmark_flash_attention.py`): forward
    /// 4·b·s²·heads·hd FLOP, halved for the causal mask; backward 2.5 times the forward (it
    /// recomputes the scores); the forward reads Q, K, V and writes O, the backward reads Q,
    /// K, V, O and dO and writes dQ, dK and dV — the s × s scores never reach memory. On the
    /// matrix units, at their efficiency.
    fn flash(&mut self, bs: f64, heads: f64, kv: f64, hd: f64, s: f64) {
        let q = heads * hd;
        let f = 4.0 * bs * s * q / 2.0;
        self.fw(
            "flash_attention",
            Engine::Matrix,
            f,
            bs * (2.0 * q + 2.0 * kv),
            true,
        );
        self.bw(
            "flash_attention",
            Engine::Matrix,
            2.5 * f,
            bs * (4.0 * q + 4.0 * kv),
        );
    }

    /// TransformerEngine's quantization of a narrow GEMM's operand (fp8): one fused kernel
    /// reading `elems` 16-bit elements and writing them row-wise and column-wise (transposed)
    /// at the narrow width (`transformer_engine/pytorch/module/linear.py`: the input quantized
    /// with `columnwise=backward_needs_input`; `base.py` `grad_output_preprocess`, "fused
    /// cast + transpose" of the output gradient); in the forward (`backward` false) or the
    /// backward. Nothing without a narrow precision.
    fn quantize(&mut self, elems: f64, backward: bool) {
        let Some(w) = self.narrow else { return };
        let bytes = elems * (self.d + 2.0 * w) / self.d;
        if backward {
            self.bw("fp8_cast", Engine::Vector, 0.0, bytes);
        } else {
            self.fw("fp8_cast", Engine::Vector, 0.0, bytes, false);
        }
    }

    /// An elementwise kernel over `a` elements: forward and backward FLOP per element.
    fn elementwise(&mut self, name: &'static str, a: f64, fw: f64, bw: f64, core: bool) {
        self.fw(name, Engine::Vector, fw * a, 2.0 * a, core);
        self.bw(name, Engine::Vector, bw * a, 2.0 * a);
    }

    fn norm(&mut self, a: f64, h: f64) {
        // Weights 2h read forward; gradients 2h written by the weight gradient.
        self.fw("norm", Engine::Vector, 9.0 * a, 2.0 * a + 2.0 * h, false);
        self.bw("norm", Engine::Vector, 14.0 * a, 2.0 * a + 2.0 * h);
        self.bw("norm", Engine::Vector, 7.0 * a, 2.0 * a + 2.0 * h);
    }

    fn dropout(&mut self, a: f64, core: bool) {
        // Input and output in the dtype plus a one-byte mask, forward and backward.
        let e = 2.0 * a + a / self.d;
        self.fw("dropout", Engine::Vector, a, e, core);
        self.bw("dropout", Engine::Vector, a, e);
    }

    fn residual(&mut self, a: f64) {
        self.fw("residual", Engine::Vector, a, 3.0 * a, false);
        self.bw("residual", Engine::Vector, 2.0 * a, 3.0 * a);
    }

    fn fork(&mut self, a: f64, users: f64) {
        self.bw("fork", Engine::Vector, users * a, a * (users + 1.0));
    }

    /// The local reduction of a tensor-parallel all-reduce: forward after attention and the
    /// FFN (`conjugate`), backward before them.
    fn tp_reduce(&mut self, a: f64, t: f64, conjugate: bool) {
        if t <= 1.0 {
            return;
        }
        let f = a * (t - 1.0) / t;
        if conjugate {
            self.fw("tp_reduce", Engine::Vector, f, 2.0 * a, false);
        } else {
            self.bw("tp_reduce", Engine::Vector, f, 2.0 * a);
        }
    }
}

/// The kernels of one layer of `m` for one microbatch on one rank of layout `l`, elements
/// of `dtype_bytes` bytes.
pub fn layer_kernels(m: &Transformer, l: &Layout, dtype_bytes: f64) -> LayerKernels {
    layer_kernels_with(m, l, &Setup::default(), dtype_bytes)
}

/// Which GEMM each sequence-parallel collective of a layer runs beside under
/// `overlap tp_comm` (TransformerEngine's userbuffers, as NeMo configures them for GPT-3 and
/// Llama: `ub_tp_comm_overlap_cfg` — qkv_fprop, fc1_fprop, proj_dgrad and fc2_dgrad overlap
/// an all-gather by ring exchange, proj_fprop and fc2_fprop a reduce-scatter by pipelined
/// splits, qkv_dgrad and fc1_dgrad the reduce-scatter of the input gradient in bulk with
/// the weight gradient, and the re-gathered input with the input gradient): (collective,
/// pass, the GEMMs by kernel name). Each GEMM named here runs once in that pass with the
/// FLOP and bytes of its forward (a linear's input and weight gradients each equal it).
pub fn tp_overlap_pairs() -> [(super::CommOp, Phase, &'static [&'static str]); 10] {
    use super::CommOp::{AllGather as Ag, ReduceScatter as Rs};
    const QKV: &[&str] = &["query", "key", "value"];
    const OUT: &[&str] = &["attn_out"];
    const UP: &[&str] = &["ffn_up", "ffn_gate_up"];
    const DOWN: &[&str] = &["ffn_down"];
    [
        (Ag, Phase::Forward, QKV),
        (Rs, Phase::Forward, OUT),
        (Ag, Phase::Forward, UP),
        (Rs, Phase::Forward, DOWN),
        (Ag, Phase::Backward, OUT),
        (Ag, Phase::Backward, DOWN),
        (Ag, Phase::Backward, QKV),
        (Rs, Phase::Backward, QKV),
        (Ag, Phase::Backward, UP),
        (Rs, Phase::Backward, UP),
    ]
}

/// A pass of a layer: the forward (and a recomputed forward) or the backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Forward,
    Backward,
}

/// [`layer_kernels`] with the settings of `setup`: with context parallelism a rank runs
/// its 1/cp of every sample's tokens (each of its queries still over the whole causal
/// sequence, which Megatron-LM's load-balanced split shares evenly), and with a narrow
/// precision the linear GEMMs run at it ([`Setup::narrow_gemm_bytes`]).
pub fn layer_kernels_with(
    m: &Transformer,
    l: &Layout,
    setup: &Setup,
    dtype_bytes: f64,
) -> LayerKernels {
    let t = f64::from(l.tp);
    let (s, b, h) = (m.seq as f64, l.micro_batch as f64, m.hidden as f64);
    let bs = b * s / f64::from(setup.cp.max(1));
    let a = bs * h;
    // Norms, dropouts and residuals run on a sequence slice with sequence parallelism.
    let a_sp = if l.sp { a / t } else { a };
    let heads = f64::from(m.heads) / t;
    let kv = (f64::from(m.kv_heads) / t).max(1.0) * m.head_dim as f64;
    let hd = m.head_dim as f64;
    let drop = m.gpt_style();
    let mut p = Pass {
        d: dtype_bytes,
        out: LayerKernels::default(),
        core: Vec::new(),
        narrow: setup.narrow_gemm_bytes,
    };

    // Attention block (`_build_attn_block`).
    p.fork(a_sp, 2.0);
    p.norm(a_sp, h);
    p.tp_reduce(a, t, false);
    p.fork(a, 3.0);
    p.block_linear("query", bs, h, heads * hd);
    p.block_linear("key", bs, h, kv);
    p.block_linear("value", bs, h, kv);
    // The QKV input is quantized by the norm before it (TransformerEngine's LayerNormLinear
    // fuses them); its output gradient is quantized in the backward.
    p.quantize(bs * (heads * hd + 2.0 * kv), true);
    match l.attention {
        Attention::Unfused => {
            let scores = b * heads * s * s;
            p.batched("scores", b * heads, s, hd, s);
            p.elementwise("softmax", scores, 5.0, 8.0, true);
            if drop {
                p.dropout(scores, true);
            }
            p.batched("attend", b * heads, s, s, hd);
        }
        Attention::Flash => p.flash(bs, heads, kv, hd, s),
    }
    // The projection (a plain Linear) quantizes its input; its output gradient, a sequence
    // slice with `sp`, is quantized before it is gathered.
    p.quantize(bs * heads * hd, false);
    p.block_linear("attn_out", bs, heads * hd, h);
    p.quantize(a_sp, true);
    p.tp_reduce(a, t, true);
    if drop {
        p.dropout(a_sp, false);
    }
    p.residual(a_sp);

    // Feed-forward block (`_build_mlp_block`).
    p.fork(a_sp, 2.0);
    p.norm(a_sp, h);
    p.tp_reduce(a, t, false);
    let (tokens, ffn) = match m.moe {
        None => (bs, m.ffn as f64),
        Some(e) => {
            p.linear("router", bs, h, f64::from(e.experts));
            (bs * f64::from(e.top_k), e.expert_ffn as f64)
        }
    };
    let inner = tokens * ffn / t;
    match m.ffn_kind {
        Ffn::Gelu => {
            p.block_linear("ffn_up", tokens, h, ffn / t);
            p.quantize(inner, true);
            p.elementwise("gelu", inner, 8.0, 13.0, false);
        }
        Ffn::SwiGlu => {
            p.block_linear("ffn_gate_up", tokens, h, 2.0 * ffn / t);
            p.quantize(2.0 * inner, true);
            p.elementwise("silu", inner, 8.0, 13.0, false);
            p.elementwise("gate_mul", inner, 1.0, 2.0, false);
        }
    }
    p.quantize(inner, false);
    p.block_linear("ffn_down", tokens, ffn / t, h);
    p.quantize(if m.moe.is_some() { tokens * h } else { a_sp }, true);
    p.tp_reduce(a, t, true);
    if drop {
        p.dropout(a_sp, false);
    }
    p.residual(a_sp);

    let mut out = p.out;
    out.recompute = match l.recompute {
        Recompute::None => Vec::new(),
        Recompute::Full => out.forward.clone(),
        Recompute::Selective => out
            .forward
            .iter()
            .zip(&p.core)
            .filter(|(_, c)| **c)
            .map(|(k, _)| *k)
            .collect(),
    };
    out
}

/// The output layer's kernels on the last stage for one microbatch on one rank: the logits
/// linear (vocab split over the tensor-parallel ranks), forward and backward.
pub fn output_kernels(m: &Transformer, l: &Layout, dtype_bytes: f64) -> Vec<Kernel> {
    output_kernels_with(m, l, &Setup::default(), dtype_bytes)
}

/// [`output_kernels`] over a rank's 1/cp of the tokens; never at a narrow precision
/// (Megatron-Core's output layer is a plain `ColumnParallelLinear`, outside TransformerEngine's
/// `fp8_autocast`: `megatron/core/models/gpt/gpt_model.py`).
pub fn output_kernels_with(
    m: &Transformer,
    l: &Layout,
    setup: &Setup,
    dtype_bytes: f64,
) -> Vec<Kernel> {
    let bs = m.seq as f64 * l.micro_batch as f64 / f64::from(setup.cp.max(1));
    let mut p = Pass {
        d: dtype_bytes,
        out: LayerKernels::default(),
        core: Vec::new(),
        narrow: None,
    };
    p.linear(
        "logits",
        bs,
        m.hidden as f64,
        m.vocab as f64 / f64::from(l.tp),
    );
    let mut all = p.out.forward;
    all.extend(p.out.backward);
    all
}

/// The optimizer step over `params` parameters a rank updates (Calculon
/// `Layer.get_optim_step_flops` / `get_optimizer`: 11 FLOP per parameter; its fp32 master
/// copy and two fp32 moments, 12 bytes per parameter).
pub fn optimizer_kernel(params: f64) -> Kernel {
    Kernel {
        name: "optimizer",
        engine: Engine::Vector,
        flop: 11.0 * params,
        bytes: 12.0 * params,
        narrow: false,
    }
}
