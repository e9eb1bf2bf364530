//! Parameter counts of a [`Transformer`], from its shape.
//!
//! The shape does not name biases, norms or position embeddings; they follow the FFN kind,
//! which holds for every catalog model:
//! - GeLU models (GPT-3: Brown et al. 2020 §2.1, "the same model and architecture as GPT-2";
//!   Megatron-LM's GPT) have a bias on every linear layer, LayerNorm (gain and bias, 2h),
//!   learned position embeddings (seq × h) and dropout.
//! - SwiGLU models (Llama: Dubey et al. 2024 §3.1; Mixtral: Jiang et al. 2024 §2) have no
//!   biases, RMSNorm (gain only, h), rotary positions (no parameters) and no dropout.
//!
//! Biases and norms are counted (they are parameters the optimizer holds); the FLOP count
//! in [`super::flop`] uses only the matrices.

use super::types::{Ffn, Transformer};

impl Transformer {
    /// GPT-style details (biases, LayerNorm, learned positions, dropout), see the module doc.
    pub fn gpt_style(&self) -> bool {
        self.ffn_kind == Ffn::Gelu
    }

    /// Width of the queries (and of the attention output): heads × head_dim.
    pub fn q_dim(&self) -> f64 {
        f64::from(self.heads) * self.head_dim as f64
    }

    /// Width of the keys and of the values: kv_heads × head_dim (GQA shares them).
    pub fn kv_dim(&self) -> f64 {
        f64::from(self.kv_heads) * self.head_dim as f64
    }

    /// Parameters of one norm: LayerNorm's gain and bias, or RMSNorm's gain.
    pub fn norm_params(&self) -> f64 {
        let h = self.hidden as f64;
        if self.gpt_style() { 2.0 * h } else { h }
    }

    /// Attention matrices: Q (h × q_dim), K and V (h × kv_dim each), O (q_dim × h).
    pub fn attention_matrix_params(&self) -> f64 {
        let h = self.hidden as f64;
        2.0 * h * self.q_dim() + 2.0 * h * self.kv_dim()
    }

    /// Matrices of one feed-forward block of width `ffn`: 2 (GeLU) or 3 (SwiGLU) of h × ffn.
    pub fn ffn_matrix_params(&self, ffn: u64) -> f64 {
        let k = match self.ffn_kind {
            Ffn::Gelu => 2.0,
            Ffn::SwiGlu => 3.0,
        };
        k * self.hidden as f64 * ffn as f64
    }

    /// The MoE router (h × experts), 0 for a dense model.
    pub fn router_params(&self) -> f64 {
        self.moe
            .map_or(0.0, |e| self.hidden as f64 * f64::from(e.experts))
    }

    /// One layer's parameters split by what tensor parallelism does with them (Megatron-LM:
    /// Shoeybi et al. 2019 §3): matrices and the biases of column-parallel layers (Q/K/V,
    /// FFN in) are split over `tp`; norms, the biases of row-parallel layers (O, FFN out) and
    /// the router are replicated. Experts (all of them) are reported apart, since expert
    /// parallelism splits them further.
    pub fn layer_split(&self) -> LayerSplit {
        let h = self.hidden as f64;
        let bias = self.gpt_style();
        let (col_bias, row_bias) = if bias {
            (self.q_dim() + 2.0 * self.kv_dim(), h)
        } else {
            (0.0, 0.0)
        };
        let ffn_one = |ffn: u64| -> (f64, f64, f64) {
            // (matrices, column bias, row bias) of one FFN block; only GeLU models have biases.
            let (c, r) = if bias { (ffn as f64, h) } else { (0.0, 0.0) };
            (self.ffn_matrix_params(ffn), c, r)
        };
        let attn = self.attention_matrix_params() + col_bias;
        let norms = 2.0 * self.norm_params();
        match self.moe {
            None => {
                let (mat, c, r) = ffn_one(self.ffn);
                LayerSplit {
                    split: attn + mat + c,
                    replicated: norms + row_bias + r,
                    expert: 0.0,
                    expert_one: 0.0,
                }
            }
            Some(e) => {
                let (mat, c, r) = ffn_one(e.expert_ffn);
                let one = mat + c + r;
                LayerSplit {
                    split: attn,
                    replicated: norms + row_bias + self.router_params(),
                    expert: f64::from(e.experts) * one,
                    expert_one: one,
                }
            }
        }
    }

    /// Parameters of one transformer layer (all experts of an MoE layer).
    pub fn layer_params(&self) -> f64 {
        let s = self.layer_split();
        s.split + s.replicated + s.expert
    }

    /// The input word embedding (vocab × h), learned positions (seq × h) for GPT-style models,
    /// and the output layer (vocab × h) unless tied to the input embedding.
    pub fn embedding_params(&self) -> f64 {
        let h = self.hidden as f64;
        let word = self.vocab as f64 * h;
        let pos = if self.gpt_style() {
            self.seq as f64 * h
        } else {
            0.0
        };
        let out = if self.tied_embeddings { 0.0 } else { word };
        word + pos + out
    }

    /// All parameters: layers, embeddings and the final norm.
    pub fn params(&self) -> f64 {
        f64::from(self.layers) * self.layer_params() + self.embedding_params() + self.norm_params()
    }

    /// Parameters one token uses: an MoE layer counts its `top_k` experts, not all of them.
    pub fn active_params(&self) -> f64 {
        let s = self.layer_split();
        let experts = self.moe.map_or(0.0, |e| f64::from(e.top_k) * s.expert_one);
        let layer = s.split + s.replicated + experts;
        f64::from(self.layers) * layer + self.embedding_params() + self.norm_params()
    }
}

/// One layer's parameters as tensor and expert parallelism place them, see
/// [`Transformer::layer_split`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerSplit {
    /// Split over the `tp` ranks of a tensor-parallel group.
    pub split: f64,
    /// Held whole by every tensor-parallel rank.
    pub replicated: f64,
    /// All experts of the layer (split over `tp × ep` ranks); 0 for a dense layer.
    pub expert: f64,
    /// One expert's share of `expert`.
    pub expert_one: f64,
}
