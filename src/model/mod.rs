//! Model-level workloads: transformers, their parallel layouts and what a layout costs per
//! rank. See [`types`] for the data and its invariant.

pub mod catalog;
pub mod types;

pub use types::*;
