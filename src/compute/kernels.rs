//! The time of one kernel on one device, for model-level work that is a list of kernels
//! (`crate::model::ops`): compute time plus memory time, each at an efficiency that depends
//! on the kernel's size,
//!
//! ```text
//! seconds = FLOP / (peak · η(FLOP)) + bytes / (memory_bw · ηm(bytes)) + launch overhead
//! ```
//!
//! Assumptions, with their sources:
//! - *Compute and memory time add* (they do not overlap inside a kernel): Calculon's
//!   `processing_mode = "no_overlap"`, the mode of its A100 system file
//!   (`systems/a100_80g.json`, calculon-ai/calculon at caa4b11) with which it reproduces
//!   Korthikanti et al. 2022's Table 5 within 5%; the roofline's max is the optimistic bound.
//! - *Efficiency by size*: a small kernel reaches less of the peak. Curves come from the
//!   accelerator's calibration profile (`efficiency_by_size`, schema 3), looked up as
//!   Calculon does: the first row whose size is at most the kernel's. Without a curve the
//!   efficiency is the roofline's (profile or default ηc 0.75 / ηm 0.85) at every size.
//! - *Elementwise kernels* run on the vector units at the profile's `[vector.DTYPE]` rate;
//!   a profile without one leaves their FLOP uncounted (they are memory-bound: 1–14 FLOP
//!   per element, far below any accelerator's ridge point) and prices only their bytes.
//! - Each kernel pays the roofline's launch overhead once.
//!
//! Architecture invariant: knows nothing of models or layers; it prices (units, FLOP,
//! bytes) triples.

use super::roofline::{ModelSource, Roofline, roofline};
use crate::scenario::Spec;

/// Efficiency by size: `(min_size, efficiency)` rows, sizes strictly decreasing to 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve(Vec<(f64, f64)>);

impl Curve {
    /// One efficiency at every size.
    pub fn flat(efficiency: f64) -> Curve {
        Curve(vec![(0.0, efficiency)])
    }

    /// From a profile's rows (validated there); empty rows give `fallback` everywhere.
    pub fn from_rows(rows: &[[f64; 2]], fallback: f64) -> Curve {
        if rows.is_empty() {
            return Curve::flat(fallback);
        }
        Curve(rows.iter().map(|r| (r[0], r[1])).collect())
    }

    /// The efficiency of a kernel of `size`: the first row at or below it.
    pub fn at(&self, size: f64) -> f64 {
        self.0
            .iter()
            .find(|(min, _)| size >= *min)
            .or(self.0.last())
            .map_or(1.0, |r| r.1)
    }
}

/// How one accelerator runs kernels of one dtype.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelRates {
    pub matrix_peak: f64,
    pub matrix: Curve,
    /// Vector-unit peak and curve; `None`: elementwise FLOP are not counted.
    pub vector: Option<(f64, Curve)>,
    pub memory_bw: f64,
    pub memory: Curve,
    pub launch_overhead: f64,
    /// Where the matrix and memory figures came from (as the roofline's).
    pub compute_source: ModelSource,
    pub memory_source: ModelSource,
}

pub use crate::model::ops::Units;

impl KernelRates {
    /// Flat curves at the roofline's efficiencies and no vector rate.
    pub fn of_roofline(r: &Roofline) -> KernelRates {
        KernelRates {
            matrix_peak: r.peak_flops,
            matrix: Curve::flat(r.compute_efficiency),
            vector: None,
            memory_bw: r.memory_bw,
            memory: Curve::flat(r.memory_efficiency),
            launch_overhead: r.launch_overhead,
            compute_source: r.compute_source.clone(),
            memory_source: r.memory_source.clone(),
        }
    }

    /// Seconds of one kernel.
    pub fn secs(&self, units: Units, flop: f64, bytes: f64) -> f64 {
        let compute = match units {
            _ if flop <= 0.0 => 0.0,
            Units::Matrix if self.matrix_peak > 0.0 => {
                flop / (self.matrix_peak * self.matrix.at(flop))
            }
            Units::Vector => match &self.vector {
                Some((peak, c)) if *peak > 0.0 => flop / (peak * c.at(flop)),
                _ => 0.0,
            },
            Units::Matrix => 0.0,
        };
        let memory = if bytes > 0.0 && self.memory_bw > 0.0 {
            bytes / (self.memory_bw * self.memory.at(bytes))
        } else {
            0.0
        };
        compute + memory + self.launch_overhead
    }
}

/// The kernel rates of `accelerator` for `dtype` in this scenario: its profile's curves and
/// vector rate where it has them, the roofline's flat efficiencies elsewhere.
pub fn kernel_rates(spec: &Spec, accelerator: &str, dtype: &str) -> Option<KernelRates> {
    let r = roofline(spec, accelerator, dtype)?;
    let mut k = KernelRates::of_roofline(&r);
    let acc = spec.accelerators.get(accelerator)?;
    let Some(p) = acc.profile.as_ref().and_then(|n| spec.profiles.get(n)) else {
        return Some(k);
    };
    let dt = super::roofline::peak(acc, dtype).map_or(dtype, |(d, _)| d);
    if let Some(c) = p.compute.get(dt) {
        k.matrix = Curve::from_rows(&c.efficiency_by_size, r.compute_efficiency);
    }
    if let Some(m) = &p.memory {
        k.memory = Curve::from_rows(&m.efficiency_by_size, r.memory_efficiency);
    }
    if let Some(v) = p.vector.get(dt) {
        k.vector = Some((v.peak_flops, Curve::from_rows(&v.efficiency_by_size, 1.0)));
    }
    Some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_curve_takes_the_first_row_at_or_below_the_size() {
        let c = Curve::from_rows(&[[128e9, 0.95], [16e9, 0.9], [1e9, 0.6], [0.0, 0.1]], 0.5);
        assert_eq!(c.at(200e9), 0.95);
        assert_eq!(c.at(128e9), 0.95);
        assert_eq!(c.at(127e9), 0.9);
        assert_eq!(c.at(1e9), 0.6);
        assert_eq!(c.at(1.0), 0.1);
        assert_eq!(Curve::from_rows(&[], 0.5).at(1e20), 0.5);
    }

    #[test]
    fn compute_and_memory_time_add_and_each_kernel_pays_its_launch() {
        let k = KernelRates {
            matrix_peak: 100.0,
            matrix: Curve::flat(0.5),
            vector: Some((10.0, Curve::flat(1.0))),
            memory_bw: 20.0,
            memory: Curve::flat(0.5),
            launch_overhead: 1.0,
            compute_source: ModelSource::DatasheetDefault { efficiency: 0.5 },
            memory_source: ModelSource::DatasheetDefault { efficiency: 0.5 },
        };
        // 100 FLOP at 50/s + 30 bytes at 10/s + 1.
        assert_eq!(k.secs(Units::Matrix, 100.0, 30.0), 2.0 + 3.0 + 1.0);
        assert_eq!(k.secs(Units::Vector, 100.0, 0.0), 10.0 + 1.0);
        let none = KernelRates { vector: None, ..k };
        assert_eq!(none.secs(Units::Vector, 100.0, 30.0), 3.0 + 1.0);
    }
}
