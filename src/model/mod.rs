//! Model-level workloads: transformers, their parallel layouts and what a layout costs per
//! rank. See [`types`] for the data and its invariant.

pub mod catalog;
pub mod check;
pub mod flop;
pub mod memory;
pub mod params;
pub mod types;
pub mod work;

pub use check::{Split, check};
pub use memory::{per_rank, per_rank_at};
pub use params::LayerSplit;
pub use types::*;
pub use work::step_work;
