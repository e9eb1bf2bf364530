//! Model-level workloads: transformers, their parallel layouts and what a layout costs per
//! rank. See [`types`] for the data and its invariant.

pub mod catalog;
pub mod check;
pub mod engines;
pub mod flop;
pub mod memory;
pub mod ops;
pub mod params;
pub mod serving;
pub mod types;
pub mod work;

pub use check::{Split, check};
pub use memory::{GRAD_BYTES, per_rank, per_rank_at};
pub use params::LayerSplit;
pub use types::*;
pub use work::step_work;

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
