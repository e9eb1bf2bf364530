//! FLOP of a [`Transformer`] per token, counted as Narayanan et al. 2021 ("Efficient
//! Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", §5.1 and
//! Appendix) count them: a matrix multiply of an (m × k) by a (k × n) matrix is 2·m·k·n FLOP;
//! the backward pass is twice the forward (the gradients of the inputs and of the weights);
//! only matrix multiplies count (norms, softmax, activations and biases are left out); the
//! attention scores are over the whole sequence (no saving for the causal mask).
//!
//! For a GeLU model with ffn = 4h and MHA this gives their equation (3):
//! 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) per iteration with full recomputation (each layer's
//! forward run twice, the output layer's once), and 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h))
//! without; `tests/all/model_math.rs` checks both.

use super::types::{Recompute, Transformer};

impl Transformer {
    /// Matrix parameters one token multiplies by in a layer: attention, the `top_k` experts
    /// (or the dense FFN) and the router.
    pub fn layer_matmul_params(&self) -> f64 {
        let ffn = match self.moe {
            None => self.ffn_matrix_params(self.ffn),
            Some(e) => f64::from(e.top_k) * self.ffn_matrix_params(e.expert_ffn),
        };
        self.attention_matrix_params() + ffn + self.router_params()
    }

    /// Forward FLOP per token of the attention core of a layer: scores Q·Kᵀ and the
    /// weighted sum over V, each 2·seq·head_dim per head (Narayanan et al. 2021, Appendix:
    /// 4·B·s²·h per layer). This is what selective recomputation redoes.
    pub fn attention_core_flop_per_token(&self) -> f64 {
        4.0 * self.seq as f64 * self.q_dim()
    }

    /// Forward FLOP per token of one layer: 2 × its matrix parameters plus the attention core.
    pub fn layer_forward_flop_per_token(&self) -> f64 {
        2.0 * self.layer_matmul_params() + self.attention_core_flop_per_token()
    }

    /// Forward FLOP per token of the output layer (logits): 2·h·vocab. The input embedding
    /// is a lookup, not a multiply.
    pub fn output_forward_flop_per_token(&self) -> f64 {
        2.0 * self.hidden as f64 * self.vocab as f64
    }

    /// Forward FLOP per token of the whole model.
    pub fn forward_flop_per_token(&self) -> f64 {
        f64::from(self.layers) * self.layer_forward_flop_per_token()
            + self.output_forward_flop_per_token()
    }

    /// FLOP per token recomputation adds: every layer's forward (full), only the attention
    /// core (selective, Korthikanti et al. 2022 §5), or none. The output layer is never
    /// recomputed.
    pub fn recompute_flop_per_token(&self, recompute: Recompute) -> f64 {
        let per_layer = match recompute {
            Recompute::None => 0.0,
            Recompute::Selective => self.attention_core_flop_per_token(),
            Recompute::Full => self.layer_forward_flop_per_token(),
        };
        f64::from(self.layers) * per_layer
    }

    /// Training FLOP per token: forward, backward (2 × forward) and recomputation.
    pub fn training_flop_per_token(&self, recompute: Recompute) -> f64 {
        3.0 * self.forward_flop_per_token() + self.recompute_flop_per_token(recompute)
    }

    /// Model FLOP per token, for MFU: forward and backward without recomputation (Chowdhery
    /// et al. 2022, PaLM, Appendix B: recomputed FLOP count for hardware, not model, FLOPs
    /// utilization).
    pub fn model_flop_per_token(&self) -> f64 {
        self.training_flop_per_token(Recompute::None)
    }
}
