//! Orrery: a declarative cluster simulator with real-device calibration.
//!
//! Data flow: `.orr` text → [`syntax`] (generic tree) → [`spec`] (validated model) → engine →
//! metrics → plots. See ARCHITECTURE.md for the module map and its invariants.

pub mod diag;
pub mod syntax;
pub mod units;
