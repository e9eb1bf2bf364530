//! Measurements and fits → a [`Profile`] in the existing schema (`source = "measured"`), with
//! provenance, every figure's 95% interval (bootstrap over repetitions, seeded) and the raw
//! medians of each transfer path.

use super::fit::PathFit;
use super::{Measurement, Options, detect::Host, stats};
use crate::profile::schema::{
    ComputeFit, LaunchFit, MemoryFit, Profile, Provenance, SCHEMA_VERSION, Source, TransferPath,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// Median of `reps` and the 95% bootstrap interval of that median (containing it).
pub fn median_ci(reps: &[f64], rng: &mut ChaCha8Rng, rounds: usize) -> (f64, [f64; 2]) {
    let m = stats::median(reps);
    if reps.len() < 2 {
        return (m, [m, m]);
    }
    let mut meds = Vec::with_capacity(rounds);
    let mut sample = Vec::with_capacity(reps.len());
    for _ in 0..rounds {
        sample.clear();
        sample.extend((0..reps.len()).map(|_| reps[rng.random_range(0..reps.len())]));
        meds.push(stats::median(&sample));
    }
    (
        m,
        [
            stats::quantile(&meds, 0.025).min(m),
            stats::quantile(&meds, 0.975).max(m),
        ],
    )
}

/// Achieved figure as a fraction of the datasheet peak, or of the best repetition where there
/// is none or it is beaten (outliers dropped first): (peak, median, efficiency, interval).
fn efficiency(reps: &[f64], peak: Option<f64>, rng: &mut ChaCha8Rng) -> (f64, f64, f64, [f64; 2]) {
    let kept = stats::reject_outliers(reps, 3.5);
    let (m, ci) = median_ci(&kept, rng, 1000);
    let best = kept.iter().copied().fold(0.0, f64::max).max(m);
    let peak = peak.filter(|p| *p >= best).unwrap_or(best);
    let eff = (m / peak).min(1.0);
    (
        peak,
        m,
        eff,
        [(ci[0] / peak).min(eff), (ci[1] / peak).clamp(eff, 1.0)],
    )
}

fn peak_note(source: &str, datasheet: Option<f64>, used: f64) -> String {
    if datasheet == Some(used) {
        format!("{source}; peak from the catalog accelerator's datasheet figure")
    } else {
        format!("{source}; peak = best repetition")
    }
}

pub fn profile(m: &Measurement, fits: &[(String, PathFit)], host: &Host, o: &Options) -> Profile {
    let mut rng = ChaCha8Rng::seed_from_u64(o.seed ^ 0x6361_6c69_6272_6174);
    let mut compute = BTreeMap::new();
    for c in &m.compute {
        if c.reps.is_empty() {
            continue;
        }
        let (peak, achieved, eff, ci) = efficiency(&c.reps, c.peak, &mut rng);
        compute.insert(
            c.dtype.clone(),
            ComputeFit {
                peak_flops: peak,
                efficiency: eff,
                efficiency_ci95: ci,
                achieved_flops: Some(achieved),
                efficiency_by_size: Vec::new(),
                source: peak_note(&c.source, c.peak, peak),
            },
        );
    }
    let (peak, achieved, eff, ci) = efficiency(&m.memory.reps, m.memory.peak, &mut rng);
    let memory = MemoryFit {
        peak_bytes_per_s: peak,
        efficiency: eff,
        efficiency_ci95: ci,
        achieved_bytes_per_s: Some(achieved),
        efficiency_by_size: Vec::new(),
        source: peak_note(&m.memory.source, m.memory.peak, peak),
    };
    let kept = stats::reject_outliers(&m.launch.reps, 3.5);
    let (overhead, oci) = median_ci(&kept, &mut rng, 1000);
    let launch = LaunchFit {
        overhead_s: overhead.clamp(0.0, 0.999),
        overhead_ci95: [oci[0].max(0.0), oci[1].min(0.999)],
        source: m.launch.source.clone(),
    };
    let mut notes = m.notes.clone();
    let transfer = fits
        .iter()
        .map(|(path, f)| {
            let src = m
                .transfers
                .iter()
                .find(|t| &t.path == path)
                .map_or_else(String::new, |t| t.source.clone());
            if let Some((med, max)) = f.holdout_error() {
                notes.push(format!(
                    "{path}: {} held-out sizes predicted with median error {:.1}% (max {:.1}%), fitted residual rms {:.1}%, {} outlier repetitions dropped",
                    f.holdout.len(),
                    100.0 * med,
                    100.0 * max,
                    100.0 * f.residual_rms(),
                    f.rejected
                ));
            }
            TransferPath {
                path: path.clone(),
                source: format!(
                    "{src}; weighted least squares (1/t²), breakpoints by BIC, bootstrap 95% intervals"
                ),
                segments: f.profile_segments(),
                medians: f
                    .medians
                    .iter()
                    .filter(|(_, t)| *t > 0.0)
                    .map(|&(b, t)| [b as f64, t])
                    .collect(),
                check: None,
                holdout: f.holdout_record(),
            }
        })
        .collect();
    Profile {
        schema_version: SCHEMA_VERSION,
        provenance: Provenance {
            source: Source::Measured,
            accelerator: m.accelerator.clone(),
            device: m.device.clone(),
            driver: m.driver.clone(),
            host: host.hostname.clone(),
            date: super::detect::now_iso8601(),
            orrery_version: env!("CARGO_PKG_VERSION").to_string(),
            command: o.command.clone(),
            seed: o.seed,
            notes: (!notes.is_empty()).then(|| notes.join("; ")),
            imports: Vec::new(),
        },
        compute,
        memory: Some(memory),
        launch: Some(launch),
        vector: Default::default(),
        transfer,
        collective: Vec::new(),
        p2p_matrix: Vec::new(),
        validation: Vec::new(),
    }
}
