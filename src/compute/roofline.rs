//! The roofline model of one device running one piece of work:
//!
//! ```text
//! seconds = max(FLOP / (peak(dtype) · ηc · devices), bytes / (memory_bw · ηm · devices))
//!           + launch_overhead · kernels
//! ```
//!
//! Work below the ridge point (FLOP per byte < peak · ηc / (memory_bw · ηm)) is memory-bound,
//! above it compute-bound (Williams, Waterman, Patterson, "Roofline", CACM 2009). Kernels are
//! launched one after the other, so their overhead does not divide among devices.
//!
//! Parameters, each with its source:
//! - ηc, ηm and the launch overhead come from the accelerator's calibration profile when it
//!   has one (`profile NAME` or `calibration NAME`), per dtype for ηc.
//! - Otherwise ηc = [`DEFAULT_COMPUTE_EFFICIENCY`] 0.75: an H200 bf16 GEMM of 8192³ reaches
//!   ~770–800 of 989 TFLOPS (PyTorch on one H200, shared/reference/hardware-and-models.md),
//!   i.e. 0.78–0.81; 0.75 leaves room for non-GEMM work.
//! - ηm = [`DEFAULT_MEMORY_EFFICIENCY`] 0.85: STREAM copy 4.01 and triad 4.15 TB/s of the
//!   H200's 4.8 TB/s (Azure AI-benchmarking-guide ND_H200_v5, hardware-and-models.md), i.e.
//!   0.84–0.86.
//! - Launch overhead = [`DEFAULT_LAUNCH_OVERHEAD`] 5 µs per kernel: an estimate, the middle of
//!   the 4–6 µs per synchronised launch measured with CUDA 13 (a public CUDA-graph experiment,
//!   "pegainfer (3): from launch overhead to CUDA graph"); hardware-and-models.md has no
//!   figure. A profile's measured value replaces it.
//! - Peak and memory bandwidth are the accelerator's own figures (`flops`, `memory_bw`).
//!
//! With no `memory` and no `kernels` declared the model is exactly the earlier compute-only
//! closed form, FLOP / (peak · 0.75 · devices).

use crate::profile::{self, Profile};
use crate::scenario::hardware::Accelerator;
use crate::scenario::{Spec, workload::Compute};
use std::collections::BTreeSet;
use std::fmt;

pub const DEFAULT_COMPUTE_EFFICIENCY: f64 = 0.75;
pub const DEFAULT_MEMORY_EFFICIENCY: f64 = 0.85;
pub const DEFAULT_LAUNCH_OVERHEAD: f64 = 5e-6;

/// Where a model's parameters came from.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelSource {
    /// A calibration profile, by name and schema version.
    Calibration {
        profile: String,
        version: u32,
        source: profile::Source,
    },
    /// No profile (or none for this dtype): the stated default efficiency.
    DatasheetDefault { efficiency: f64 },
}

impl fmt::Display for ModelSource {
    /// `calibration h200_datasheet v1` or `datasheet default 0.75`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelSource::Calibration {
                profile, version, ..
            } => write!(f, "calibration {profile} v{version}"),
            ModelSource::DatasheetDefault { efficiency } => {
                write!(f, "datasheet default {efficiency}")
            }
        }
    }
}

pub use crate::model::ops::Work;

/// The work of a `compute` statement, its FLOP multiplied by `batch` (a service batch;
/// memory traffic and kernels are per batch).
pub fn work_of(c: &Compute, batch: f64) -> Work {
    Work {
        flop: c.flop.0 * batch,
        bytes: c.memory.map_or(0.0, |b| b.0 as f64),
        kernels: c.kernels as f64,
    }
}

/// The roofline of one accelerator for one dtype.
#[derive(Debug, Clone, PartialEq)]
pub struct Roofline {
    /// Dense peak for the dtype (FLOP/s).
    pub peak_flops: f64,
    pub compute_efficiency: f64,
    /// Peak memory bandwidth (bytes/s).
    pub memory_bw: f64,
    pub memory_efficiency: f64,
    /// Seconds per kernel launch.
    pub launch_overhead: f64,
    /// Where `compute_efficiency` came from.
    pub compute_source: ModelSource,
    /// Where `memory_efficiency` and `launch_overhead` came from.
    pub memory_source: ModelSource,
}

impl Roofline {
    /// The datasheet-default roofline: figures from the accelerator, stated efficiencies.
    pub fn datasheet(peak_flops: f64, memory_bw: f64) -> Roofline {
        Roofline {
            peak_flops,
            compute_efficiency: DEFAULT_COMPUTE_EFFICIENCY,
            memory_bw,
            memory_efficiency: DEFAULT_MEMORY_EFFICIENCY,
            launch_overhead: DEFAULT_LAUNCH_OVERHEAD,
            compute_source: ModelSource::DatasheetDefault {
                efficiency: DEFAULT_COMPUTE_EFFICIENCY,
            },
            memory_source: ModelSource::DatasheetDefault {
                efficiency: DEFAULT_MEMORY_EFFICIENCY,
            },
        }
    }

    /// Achieved compute rate (FLOP/s).
    pub fn compute_rate(&self) -> f64 {
        self.peak_flops * self.compute_efficiency
    }

    /// Achieved memory bandwidth (bytes/s).
    pub fn memory_rate(&self) -> f64 {
        self.memory_bw * self.memory_efficiency
    }

    /// Arithmetic intensity (FLOP per byte) at which compute and memory take equally long.
    pub fn ridge_point(&self) -> f64 {
        self.compute_rate() / self.memory_rate()
    }

    /// Seconds for `work` split evenly over `devices` devices (a fraction of one device
    /// runs it proportionally slower). No devices, or a device without the figures, is 0.
    pub fn secs(&self, work: &Work, devices: f64) -> f64 {
        // NaN devices too.
        if devices.is_nan() || devices <= 0.0 {
            return 0.0;
        }
        let compute = if work.flop > 0.0 && self.peak_flops > 0.0 {
            work.flop / (self.peak_flops * self.compute_efficiency * devices)
        } else {
            0.0
        };
        let memory = if work.bytes > 0.0 && self.memory_bw > 0.0 {
            work.bytes / (self.memory_bw * self.memory_efficiency * devices)
        } else {
            0.0
        };
        compute.max(memory) + self.launch_overhead * work.kernels
    }
}

/// Dense peak of an accelerator for `dtype`, and the dtype whose figure it is: the dtype
/// itself, else the first listed one at or above it in precision (fp8 → int8 → bf16 → fp16 →
/// tf32 → fp32 → fp64), so a part without fp8 runs fp8 work at its bf16 rate.
pub fn peak<'a>(acc: &'a Accelerator, dtype: &str) -> Option<(&'a str, f64)> {
    const LADDER: [&str; 8] = ["fp4", "fp8", "int8", "bf16", "fp16", "tf32", "fp32", "fp64"];
    let start = LADDER.iter().position(|d| *d == dtype).unwrap_or(0);
    acc.flops
        .get_key_value(dtype)
        .or_else(|| {
            LADDER[start..]
                .iter()
                .find_map(|d| acc.flops.get_key_value(*d))
        })
        .map(|(k, r)| (k.as_str(), r.0))
}

/// The roofline of `accelerator` for `dtype` in this scenario: its calibration profile's
/// efficiencies where it has one (and the profile covers the dtype), the defaults elsewhere.
/// `None` for an unknown accelerator or one with no compute figure at all.
pub fn roofline(spec: &Spec, accelerator: &str, dtype: &str) -> Option<Roofline> {
    let acc = spec.accelerators.get(accelerator)?;
    let (dt, peak_flops) = peak(acc, dtype)?;
    let mut r = Roofline::datasheet(peak_flops, acc.memory_bw.0);
    let Some((name, p)) = acc
        .profile
        .as_ref()
        .and_then(|n| spec.profiles.get(n).map(|p| (n, p)))
    else {
        return Some(r);
    };
    let from = |p: &Profile| ModelSource::Calibration {
        profile: name.clone(),
        version: p.schema_version,
        source: p.provenance.source,
    };
    // A profile without memory or launch figures (an imported one, schema 4) keeps the
    // defaults for them.
    if let Some(m) = &p.memory {
        r.memory_efficiency = m.efficiency;
        r.memory_source = from(p);
    }
    if let Some(l) = &p.launch {
        r.launch_overhead = l.overhead_s;
    }
    if let Some(c) = p.compute.get(dt) {
        r.compute_efficiency = c.efficiency;
        r.compute_source = from(p);
    }
    Some(r)
}

/// Which model each (accelerator, dtype) of the run uses: every accelerator in the cluster
/// against every dtype its work declares, as `H200 bf16: compute calibration h200_datasheet
/// v1, memory calibration h200_datasheet v1`. Sorted; empty when no work declares compute.
pub fn model_sources(spec: &Spec) -> Vec<String> {
    let mut accs = BTreeSet::new();
    if let Some(c) = &spec.cluster {
        for g in &c.groups {
            if let Some(nt) = spec.node_types.get(&g.node_type) {
                accs.extend(nt.devices.iter().map(|d| d.accelerator.as_str()));
            }
        }
    }
    let mut dtypes = BTreeSet::new();
    for w in &spec.workloads {
        let tasks = w.tasks.iter().filter_map(|t| t.compute.as_ref());
        let training = w.training.iter().filter_map(|t| t.compute.as_ref());
        let services = w.services.iter().filter_map(|s| s.compute.as_ref());
        dtypes.extend(
            tasks
                .chain(training)
                .chain(services)
                .map(|c| c.dtype.as_str()),
        );
        // Model-level work names its dtype by its precision: a training job's, and an LLM
        // service's weights' (and its 16-bit attention under narrower weights).
        for t in &w.training {
            if let Some(m) = &t.model {
                dtypes.insert(m.dtype.as_str());
            }
        }
        for s in &w.services {
            if let Some(l) = &s.llm {
                dtypes.insert(l.dtype.as_str());
                if l.dtype != "bf16" && l.dtype != "fp16" && l.dtype != "fp32" {
                    dtypes.insert("bf16");
                }
            }
        }
    }
    let mut out = Vec::new();
    for a in &accs {
        for d in &dtypes {
            if let Some(r) = roofline(spec, a, d) {
                out.push(format!(
                    "{a} {d}: compute {}, memory {}",
                    r.compute_source, r.memory_source
                ));
            }
        }
    }
    // Work whose time the scenario declares is not priced by a roofline: said per group, so
    // every kind of work names its model (the first few groups; then a count).
    let mut declared = Vec::new();
    for w in &spec.workloads {
        for t in &w.tasks {
            // `check` requires a duration or a compute; with both, the duration wins.
            if let Some(d) = &t.duration {
                declared.push(format!(
                    "{}.{}: declared duration {d} per task (no roofline)",
                    w.name, t.name
                ));
            }
        }
        for a in &w.actors {
            if let Some(d) = &a.call_duration {
                declared.push(format!(
                    "{}.{}: declared call_duration {d} per call (no roofline)",
                    w.name, a.name
                ));
            }
        }
        for s in &w.services {
            if let (Some(d), None) = (&s.service_time, &s.compute) {
                let how = if s.exponential {
                    "exponential with mean"
                } else {
                    "fixed"
                };
                declared.push(format!(
                    "{}.{}: declared service_time, {how} {d} per batch (no roofline)",
                    w.name, s.name
                ));
            }
        }
    }
    const SHOWN: usize = 8;
    let more = declared.len().saturating_sub(SHOWN);
    out.extend(declared.into_iter().take(SHOWN));
    if more > 0 {
        out.push(format!(
            "and {more} more groups with declared times (no roofline)"
        ));
    }
    out
}
