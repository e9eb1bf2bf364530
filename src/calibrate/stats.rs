//! Small robust statistics over repetitions: median absolute deviation and the k·MAD outlier
//! rejection applied before anything is fitted. Medians and quantiles are the crate's one
//! definition, [`crate::quantile`] (nearest rank), re-exported here.

pub use crate::quantile::{median, quantile};

/// Median absolute deviation from the median, scaled by 1.4826 so that it estimates the
/// standard deviation of normal data.
pub fn mad(xs: &[f64]) -> f64 {
    let m = median(xs);
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    1.4826 * median(&dev)
}

/// The repetitions within `k` scaled MADs of their median (all of them when the MAD is zero:
/// identical timings are not outliers of each other, and a lone different one is kept only if
/// it equals the median). Never returns an empty set for a non-empty input.
pub fn reject_outliers(xs: &[f64], k: f64) -> Vec<f64> {
    if xs.len() < 3 {
        return xs.to_vec();
    }
    let m = median(xs);
    let d = mad(xs);
    let kept: Vec<f64> = if d > 0.0 {
        xs.iter()
            .copied()
            .filter(|x| (x - m).abs() <= k * d)
            .collect()
    } else {
        xs.iter().copied().filter(|x| *x == m).collect()
    };
    if kept.is_empty() { xs.to_vec() } else { kept }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mad_by_hand() {
        // Median 3 (nearest rank of 1 2 3 4 100), deviations 2 1 0 1 97 → median 1.
        assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 100.0]), 1.4826);
        assert_eq!(mad(&[2.0, 2.0, 2.0]), 0.0);
    }

    #[test]
    fn outliers_beyond_k_mad_are_dropped() {
        let xs = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 5.0, 0.2];
        let kept = reject_outliers(&xs, 3.5);
        assert_eq!(kept.len(), 6);
        assert!(kept.iter().all(|x| (0.9..1.1).contains(x)));
    }
}
