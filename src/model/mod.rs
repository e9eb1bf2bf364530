//! Model-level workloads: transformers, their parallel layouts and what a layout costs per
//! rank. See [`types`] for the data and its invariant.

pub mod catalog;
pub mod check;
pub mod engine_config;
pub mod engines;
pub mod flop;
pub mod memory;
pub mod ops;
pub mod params;
pub mod serving;
pub mod types;
pub mod work;

pub use check::{Split, check, check_with, stage_layers};
pub use memory::{GRAD_BYTES, per_rank, per_rank_at, per_rank_at_with, per_rank_with};
pub use params::LayerSplit;
pub use types::*;
pub use work::{step_work, step_work_with};

/// The element width of a training job's work besides its narrow GEMMs, and the GEMM input
/// width when its precision is narrower than 16 bits: fp8 (and int8, fp4) training keeps its
/// weights, activations, communication and every kernel but the linear layers' GEMMs in
/// 16 bits, as Megatron-LM with TransformerEngine does (`--fp8-format hybrid`: bf16 weights
/// and activations, the QKV, projection, FC1 and FC2 GEMMs in fp8; the attention core, norms
/// and output layer in bf16; see `accuracy/research/recipes.md`).
pub fn training_widths(dtype: &str) -> (f64, Option<f64>) {
    let d = dtype_bytes(dtype);
    if d < 2.0 { (2.0, Some(d)) } else { (d, None) }
}

/// Bytes per element of a training dtype.
pub fn dtype_bytes(dtype: &str) -> f64 {
    match dtype {
        "fp64" => 8.0,
        "fp32" | "tf32" => 4.0,
        "fp16" | "bf16" => 2.0,
        "fp8" | "int8" => 1.0,
        "fp4" => 0.5,
        _ => 2.0,
    }
}
