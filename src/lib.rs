//! Orrery: a declarative cluster simulator with real-device calibration.
//!
//! Data flow: `.orr` text → [`syntax`] (generic tree) → [`scenario`] (validated model) → engine →
//! metrics → plots. See ARCHITECTURE.md for the module map and its invariants.

// `orrery::` paths work inside the crate too (the command line lives here, for the Python
// package as much as for the binary).
extern crate self as orrery;

pub mod accuracy;
pub mod atomic;
pub mod bench;
pub mod budget;
pub mod calibrate;
pub mod catalog;
pub mod cli;
pub mod compute;
pub mod csv;
pub mod diag;
pub mod engine;
pub mod experiment;
pub mod files;
pub mod load;
pub mod maturity;
pub mod model;
pub mod network;
pub mod outputs;
pub mod parallel;
pub mod placement;
pub mod plot;
pub mod profile;
pub mod quantile;
pub mod quiet;
pub mod raycluster;
pub mod report;
pub mod scenario;
pub mod sim;
pub mod summary;
pub mod syntax;
pub mod table;
pub mod trace;
pub mod transport;
pub mod units;

pub use load::{load_file, load_file_with, load_str, load_str_with};

/// The built-in default scenario (`orrery run` with no file).
pub const DEFAULT_SCENARIO: (&str, &str) = (
    "scenarios/quickstart.orr",
    include_str!("../scenarios/quickstart.orr"),
);

/// A stable 64-bit FNV-1a hash of every source of a scenario (catalog, includes and
/// calibration profiles too: each file's text and its [`diag::SourceFile::key`]), printed with
/// results so that a run can be reproduced from (scenario hash, seed, version). The root
/// file's path is not part of it: `./a.orr`, `a.orr` and `/abs/a.orr` hash alike.
pub fn scenario_hash(sources: &diag::SourceMap) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for id in 0..sources.len() {
        let f = sources.file(id);
        for b in f
            .key
            .bytes()
            .chain([0u8])
            .chain(f.text.bytes())
            .chain([0u8])
        {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}
