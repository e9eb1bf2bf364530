//! The calibration profile format (version [`SCHEMA_VERSION`]): what `orrery calibrate` writes
//! and scenarios reference by name (`calibration/NAME.toml`). Plain serde types: TOML in, TOML
//! out, so a profile survives serialize → parse unchanged. Units are in the field names
//! (`_s` seconds, `_bytes`, `_bytes_per_s`, `_flops` FLOP per second); a `_ci95` field is the
//! 95 % confidence interval `[low, high]` of the figure it follows. calibration/README.md
//! documents the format with an example.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The newest profile schema this build reads and the one `orrery calibrate` writes. A
/// profile with a higher `schema_version` is rejected with an error, never half-read.
/// Version 2 added the optional `check` of a transfer path, version 3 the optional
/// size-dependent efficiencies (`efficiency_by_size`) and vector-unit rates (`[vector.DTYPE]`),
/// version 4 imported profiles (`source = "imported"`, `provenance.imports`), collective fits
/// (`[[collective]]`), held-out errors of fits (`holdout`) and made `compute`, `memory` and
/// `launch` optional (a profile imported from transfer benchmarks measures none of them),
/// version 5 the device-pair copy matrix (`[[p2p_matrix]]`) and the record of `orrery
/// validate --record` runs (`[[validation]]`) that maturity tiers are computed from; older
/// profiles read unchanged.
pub const SCHEMA_VERSION: u32 = 5;

/// Efficiency by the size of one kernel (schema 3): rows `[min_size, efficiency]` with
/// `min_size` strictly decreasing down to 0; a kernel of size x runs at the efficiency of the
/// first row whose `min_size` ≤ x (Calculon's rule, `calculon/processor.py` and
/// `calculon/memory.py`). Sizes are FLOP for compute and vector rates, bytes for memory.
pub type SizeCurve = Vec<[f64; 2]>;

/// Transfer paths a profile may describe.
pub const TRANSFER_PATHS: &[&str] = &[
    "h2d_pinned",
    "h2d_pageable",
    "d2h_pinned",
    "d2h_pageable",
    "d2d",
    "p2p",
    "p2p_no_peer",
    "memcpy",
    "nic_rdma",
];

/// A calibration profile of one accelerator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub schema_version: u32,
    pub provenance: Provenance,
    /// Dense matrix-multiply throughput per dtype (`bf16`, `fp8`, ...); at least one before
    /// schema 4.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub compute: BTreeMap<String, ComputeFit>,
    /// Required before schema 4; without it the datasheet defaults apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryFit>,
    /// Required before schema 4; without it the datasheet default applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<LaunchFit>,
    /// Vector-unit (non-tensor) throughput per dtype, for elementwise kernels (schema 3).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vector: BTreeMap<String, VectorFit>,
    /// Data-movement paths, each a piecewise α–β fit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transfer: Vec<TransferPath>,
    /// Collectives measured on a communicator of a given shape (schema 4).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collective: Vec<CollectiveFit>,
    /// One copy between every ordered pair of the calibrated host's devices (schema 5).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub p2p_matrix: Vec<PeerCopy>,
    /// `orrery validate --record` runs that checked a node declared with this profile
    /// against the hardware they ran on (schema 5), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validation: Vec<ValidationRecord>,
}

/// A timed copy from device `from` to device `to` of the calibrated host (schema 5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerCopy {
    pub from: u32,
    pub to: u32,
    /// Bytes per copy.
    pub bytes: u64,
    /// Median over repetitions.
    pub bandwidth_bytes_per_s: f64,
    /// Whether the driver allowed direct peer access (false: staged through the host).
    pub peer_access: bool,
    /// The link between the two as the driver reports it (`nvlink`, `pcie`, `none`,
    /// `unknown`).
    pub link: String,
}

/// One `orrery validate FILE --node TYPE --record` run (schema 5): the declared node type
/// against the hardware present, summarised. A maturity tier of `validated` needs the
/// newest record made on a host the profile was measured on to have no mismatch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationRecord {
    /// When it ran (ISO 8601).
    pub date: String,
    /// The machine's host name.
    pub host: String,
    /// The node type checked and the scenario file (name only) that declared it.
    pub node_type: String,
    pub scenario: String,
    pub orrery_version: String,
    /// Checks that matched, did not match, and could not be made here.
    pub matched: u32,
    pub mismatches: u32,
    pub unknown: u32,
    /// The devices seen, as the driver or PCI IDs name them (`NVIDIA H200`).
    #[serde(default)]
    pub devices: Vec<String>,
}

/// Whether the figures were measured on a device or derived from datasheets and published
/// measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Measured by `orrery calibrate` on the device.
    Measured,
    /// Written from datasheets and published measurements.
    Datasheet,
    /// Fitted by `orrery calibrate import` from standard benchmark tools' outputs (schema 4).
    Imported,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Measured => "measured",
            Source::Datasheet => "datasheet",
            Source::Imported => "imported",
        }
    }

    /// Figures from measurements on hardware (ours or a standard tool's), not datasheets.
    pub fn is_measurement(self) -> bool {
        matches!(self, Source::Measured | Source::Imported)
    }
}

/// Where a profile came from: enough to reproduce the measurement or check the derivation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    pub source: Source,
    /// The accelerator (catalog or scenario name) the profile describes, e.g. `H200`.
    pub accelerator: String,
    /// The device as the driver names it, e.g. `NVIDIA H200`.
    pub device: String,
    pub driver: String,
    pub host: String,
    /// When it was measured or written (ISO 8601).
    pub date: String,
    pub orrery_version: String,
    /// The command that produced it.
    pub command: String,
    pub seed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// The files an imported profile was fitted from (schema 4).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<ImportRecord>,
}

/// One benchmark output an imported profile was fitted from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportRecord {
    /// The file as it was named on the command line.
    pub file: String,
    /// `nccl-tests`, `rccl-tests`, `nvbandwidth` or `perftest`.
    pub tool: String,
    /// The version lines found in the file, verbatim (none when the tool prints none).
    #[serde(default)]
    pub version_lines: Vec<String>,
    /// The file's modification time (ISO 8601): the outputs carry no measurement date.
    pub file_date: String,
    /// FNV-1a 64 of the file's bytes, hex: the same file is recognised again.
    pub fnv1a64: String,
    /// What was taken from it (`allreduce 8 ranks on 1 node`, `h2d_pinned`, ...).
    pub used_for: Vec<String>,
}

/// How well a fit predicts sizes it was not fitted on (schema 4): every fourth measured size
/// is held back from the fit and predicted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Holdout {
    /// The held-back sizes (bytes).
    pub sizes_bytes: Vec<u64>,
    /// Median and largest |predicted − measured| / measured over them.
    pub median_abs_rel_error: f64,
    pub max_abs_rel_error: f64,
}

/// A collective timed on a communicator of `ranks` ranks over `nodes` nodes (as nccl-tests
/// reports it: `bytes` is its size column, seconds its time column): seconds = latency +
/// bytes / bandwidth per size segment, `bandwidth` being algbw. A scenario's collective of
/// the same op on a communicator of the same shape, with NCCL choosing its algorithm and
/// protocol, takes this time on an idle network (`network::collective`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveFit {
    /// `allreduce`, `allgather`, `reduce_scatter`, `alltoall`, `broadcast`, `sendrecv` (the
    /// ops the collective model has).
    pub op: String,
    pub ranks: u32,
    pub nodes: u32,
    /// Element type and reduction of the measurement (`float`, `sum`).
    pub dtype: String,
    pub redop: String,
    /// `out_of_place` or `in_place`: which half of the table was fitted.
    pub placement: String,
    pub source: String,
    pub segments: Vec<Segment>,
    /// `[bytes, seconds]` of every measured size (median over files), by increasing size.
    pub medians: Vec<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout: Option<Holdout>,
}

/// Collective ops a profile may describe.
pub const COLLECTIVE_OPS: &[&str] = &[
    "allreduce",
    "allgather",
    "reduce_scatter",
    "alltoall",
    "broadcast",
    "sendrecv",
];

impl CollectiveFit {
    /// The segment that prices `bytes` (the last beyond the fitted range).
    pub fn segment(&self, bytes: f64) -> Option<&Segment> {
        self.segments
            .iter()
            .find(|s| s.max_bytes.is_none_or(|m| bytes < m as f64))
            .or(self.segments.last())
    }
}

/// Achieved dense throughput for one dtype, as a fraction of the peak it was measured against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputeFit {
    /// The dense peak the efficiency is relative to (FLOP/s).
    pub peak_flops: f64,
    /// Achieved / peak, in (0, 1].
    pub efficiency: f64,
    pub efficiency_ci95: [f64; 2],
    /// Median achieved throughput (FLOP/s), when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_flops: Option<f64>,
    /// Matrix-multiply efficiency by the FLOP of one multiply (schema 3); `efficiency` stays
    /// the figure for whole-work rooflines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub efficiency_by_size: SizeCurve,
    pub source: String,
}

/// Peak and achieved throughput of the vector units for one dtype.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorFit {
    pub peak_flops: f64,
    pub efficiency_by_size: SizeCurve,
    pub source: String,
}

/// Achieved device-memory bandwidth as a fraction of the peak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryFit {
    pub peak_bytes_per_s: f64,
    pub efficiency: f64,
    pub efficiency_ci95: [f64; 2],
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_bytes_per_s: Option<f64>,
    /// Efficiency by the bytes one kernel moves (schema 3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub efficiency_by_size: SizeCurve,
    pub source: String,
}

/// Fixed cost of launching one kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchFit {
    pub overhead_s: f64,
    pub overhead_ci95: [f64; 2],
    pub source: String,
}

/// One data-movement path (`h2d_pinned`, `p2p`, ...): seconds = latency + bytes / bandwidth,
/// with one (latency, bandwidth) pair per size segment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferPath {
    pub path: String,
    pub source: String,
    /// Contiguous size ranges from 0 up, in order.
    pub segments: Vec<Segment>,
    /// Raw medians the fit was made from: `[bytes, seconds]` pairs, by increasing size.
    #[serde(default)]
    pub medians: Vec<[f64; 2]>,
    /// What `orrery calibrate --check` measured against this path's prediction (optional,
    /// schema version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<PredictionCheck>,
    /// Held-out sizes and how well the fit predicts them (schema 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout: Option<Holdout>,
}

/// A chain of copies of sizes the fit never saw, timed on the machine and compared with the
/// sum of this path's predictions for them: a figure of how far the profile can be trusted on
/// a composite workload, recorded as measured (never a pass/fail).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredictionCheck {
    /// Copies in one chain (each size once).
    pub copies: u64,
    /// Bytes one chain moves.
    pub bytes: u64,
    /// The sizes in the order they were copied.
    pub sizes_bytes: Vec<u64>,
    /// Sum of the path's predicted seconds over the chain.
    pub predicted_s: f64,
    /// Median over the repetitions of one chain's measured seconds.
    pub measured_s: f64,
    /// (predicted − measured) / measured.
    pub rel_error: f64,
    /// Timed repetitions of the chain (after one warm-up).
    pub repetitions: u64,
    /// When it was measured (ISO 8601).
    pub date: String,
    /// How it was measured.
    pub method: String,
}

/// An α–β fit over `[min_bytes, max_bytes)`; the last segment may be unbounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Segment {
    pub min_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    pub latency_s: f64,
    pub latency_ci95: [f64; 2],
    pub bandwidth_bytes_per_s: f64,
    pub bandwidth_ci95: [f64; 2],
    /// Goodness of the fit; required for measured profiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r2: Option<f64>,
}

impl Segment {
    pub fn secs(&self, bytes: f64) -> f64 {
        self.latency_s + bytes / self.bandwidth_bytes_per_s
    }
}

impl TransferPath {
    /// Seconds to move `bytes` over this path: the segment whose range holds the size (the
    /// last one beyond the end of the fitted range).
    pub fn secs(&self, bytes: f64) -> Option<f64> {
        let seg = self
            .segments
            .iter()
            .find(|s| s.max_bytes.is_none_or(|m| bytes < m as f64))
            .or(self.segments.last())?;
        Some(seg.secs(bytes))
    }
}

impl Profile {
    /// The profile as TOML, the way `orrery calibrate` writes it.
    pub fn to_toml(&self) -> Result<String, String> {
        toml::to_string_pretty(self).map_err(|e| e.to_string())
    }

    pub fn transfer(&self, path: &str) -> Option<&TransferPath> {
        self.transfer.iter().find(|t| t.path == path)
    }

    /// The fit of `op` on `ranks` ranks over `nodes` nodes, if the profile has one.
    pub fn collective(&self, op: &str, ranks: usize, nodes: usize) -> Option<&CollectiveFit> {
        self.collective
            .iter()
            .find(|c| c.op == op && c.ranks as usize == ranks && c.nodes as usize == nodes)
    }
}
