//! `orrery calibrate --check`: how well the fitted profile predicts a composite workload on
//! this machine. A chain of copies of every held-out size (1.5 × 2^k: measured, never fitted)
//! in a shuffled order, each once, is timed back to back; the median over repetitions is set
//! against the sum of the profile's predictions for those sizes. The figure goes into the
//! profile (the path's `check`) and the summary; it is a measurement of this machine at that
//! moment (a loaded machine moves it), so nothing passes or fails on it.
//!
//! CPU backend only: the chain reuses [`cpu::Buffers`], whose copies walk pools four times the
//! last-level cache, the same memory-to-memory regime as the sweep that was fitted.

use super::fit::PathFit;
use super::{Calibration, cpu, detect, human_bytes, stats};
use crate::profile::schema::{PredictionCheck, TransferPath};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

/// The path the check times.
pub const PATH: &str = "memcpy";

/// Timed repetitions of the chain (after one warm-up).
pub const REPS: usize = 31;

/// The chain: every held-out size of `fit`, each once, in an order shuffled by `seed` (so
/// neighbouring copies are not in size order, as in a real mix of objects).
pub fn chain(fit: &PathFit, seed: u64) -> Vec<u64> {
    let mut sizes: Vec<u64> = fit.holdout.iter().map(|h| h.bytes).collect();
    sizes.shuffle(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x6368_6169_6e00));
    sizes
}

/// The figure for `sizes` timed as `reps` (seconds per chain) against `path`'s prediction.
/// Errors when the path cannot predict a size or nothing was timed.
pub fn figure(
    path: &TransferPath,
    sizes: &[u64],
    reps: &[f64],
    method: String,
) -> Result<PredictionCheck, String> {
    let predicted_s = sizes
        .iter()
        .map(|&b| path.secs(b as f64))
        .sum::<Option<f64>>()
        .ok_or_else(|| format!("transfer path `{}` has no segments", path.path))?;
    let measured_s = stats::median(reps);
    if !(measured_s > 0.0 && measured_s.is_finite() && predicted_s > 0.0) {
        return Err(format!(
            "the prediction check measured {measured_s} s against a prediction of {predicted_s} s"
        ));
    }
    Ok(PredictionCheck {
        copies: sizes.len() as u64,
        bytes: sizes.iter().sum(),
        sizes_bytes: sizes.to_vec(),
        predicted_s,
        measured_s,
        rel_error: (predicted_s - measured_s) / measured_s,
        repetitions: reps.len() as u64,
        date: detect::now_iso8601(),
        method,
    })
}

/// Time the chain of [`PATH`] on the CPU and record the figure in the calibration's profile.
pub fn run(cal: &mut Calibration, seed: u64) -> Result<(), String> {
    let missing = || format!("the prediction check needs a fitted `{PATH}` path");
    let (_, fit) = cal
        .fits
        .iter()
        .find(|(p, _)| p == PATH)
        .ok_or_else(missing)?;
    let sizes = chain(fit, seed);
    let Some(&largest) = sizes.iter().max() else {
        return Err(format!(
            "the prediction check needs held-out sizes of `{PATH}`; none were measured"
        ));
    };
    let pool = cpu::pool_bytes(largest);
    let mut buf = cpu::Buffers::new(pool);
    let chain_usize: Vec<usize> = sizes.iter().map(|&b| b as usize).collect();
    let reps = buf.time_chain(&chain_usize, REPS);
    let method = format!(
        "a chain of the {} held-out sizes (1.5x2^k, {} to {}, never fitted), shuffled (seed {seed}), \
         copied back to back with copy_from_slice on one thread through two {} MiB pools; \
         median of {REPS} chains after a warm-up, against the sum of this path's predictions",
        sizes.len(),
        human_bytes(*sizes.iter().min().unwrap_or(&largest)),
        human_bytes(largest),
        pool >> 20
    );
    let path = cal
        .profile
        .transfer
        .iter_mut()
        .find(|t| t.path == PATH)
        .ok_or_else(missing)?;
    path.check = Some(figure(path, &sizes, &reps, method)?);
    Ok(())
}

/// The summary's line for a path's check.
pub fn line(path: &str, c: &PredictionCheck) -> String {
    format!(
        "check {path}: chain of {} unseen copies ({}): predicted {:.1} µs, measured {:.1} µs \
         (median of {}), error {:+.1}%",
        c.copies,
        human_bytes(c.bytes),
        c.predicted_s * 1e6,
        c.measured_s * 1e6,
        c.repetitions,
        100.0 * c.rel_error
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::fit::{Holdout, PathFit};
    use crate::profile::schema::Segment;

    fn fit_with_holdout(sizes: &[u64]) -> PathFit {
        PathFit {
            segments: Vec::new(),
            residuals: Vec::new(),
            holdout: sizes
                .iter()
                .map(|&bytes| Holdout {
                    bytes,
                    measured_s: 1.0,
                    predicted_s: 1.0,
                    rel_error: 0.0,
                })
                .collect(),
            medians: Vec::new(),
            rejected: 0,
        }
    }

    #[test]
    fn chain_is_a_seeded_shuffle_of_the_held_out_sizes() {
        let held: Vec<u64> = (12..24).map(|k| 3u64 << (k - 1)).collect();
        let f = fit_with_holdout(&held);
        let c = chain(&f, 1);
        assert_eq!(c, chain(&f, 1), "same seed, same order");
        assert_ne!(c, held, "shuffled");
        let mut sorted = c.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, held, "each held-out size exactly once");
    }

    #[test]
    fn figure_sums_the_predictions_and_takes_the_median() {
        let path = TransferPath {
            path: PATH.into(),
            source: "test".into(),
            segments: vec![Segment {
                min_bytes: 0,
                max_bytes: None,
                latency_s: 1e-6,
                latency_ci95: [1e-6, 1e-6],
                bandwidth_bytes_per_s: 1e9,
                bandwidth_ci95: [1e9, 1e9],
                r2: Some(1.0),
            }],
            medians: Vec::new(),
            check: None,
            holdout: None,
        };
        // 1000 B: 1 µs + 1 µs; 3000 B: 1 µs + 3 µs → 6 µs predicted. Median of 5, 8, 7 µs = 7.
        let c = figure(&path, &[1000, 3000], &[5e-6, 8e-6, 7e-6], "m".into()).unwrap();
        assert_eq!((c.copies, c.bytes, c.repetitions), (2, 4000, 3));
        assert!((c.predicted_s - 6e-6).abs() < 1e-15);
        assert_eq!(c.measured_s, 7e-6);
        assert!((c.rel_error - (6.0 - 7.0) / 7.0).abs() < 1e-12);
        assert!(figure(&path, &[1000], &[], "m".into()).is_err());
    }
}
