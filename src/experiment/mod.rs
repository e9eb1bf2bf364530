//! Experiment runners: many simulations of one or more scenarios, run in parallel and summed
//! into one report. `drill` (seeds × failure variants), `sweep` (an experiment's cells × seeds,
//! sharded and merged), `compare` (scenarios side by side), `collectives` (nccl-tests' table
//! for ranks the placement places), `transports` (the workload once per transport) and
//! `measure` (the per-run metrics, cost and energy that sweep and compare share) and `kinds`
//! (each kind of work in its own unit, for compare and drill); `placement` (where a sweep
//! cell's work ran, and what differed between cells, for the sweep report).
//! Each sorts its runs before summing, so the thread count never changes a result.

pub mod collectives;
pub mod compare;
pub mod drill;
mod drill_files;
pub mod json;
pub mod kinds;
pub mod measure;
pub mod placement;
pub mod representative;
pub mod sweep;
pub mod transports;
