//! The one quantile definition every output uses: **nearest rank**. The quantile `q` of `n`
//! samples is the ⌈q·n⌉-th smallest (1-based; the smallest for q·n ≤ 1), so it is always a
//! value that was observed and never an interpolation between two. The median of an even
//! count is the lower of the two middle values.
//!
//! Users: the simulator's percentiles (`sim::metrics::Stats`: run.json, the CSVs, reports,
//! SLO checks; past 65,536 samples `sim::durations` approximates this definition within a
//! stated 0.1%), the CDF plots' legends and axis choice (`plot::cdf`), and calibration
//! (`calibrate::stats`: per-size medians, held-out error, bootstrap percentile intervals).
//! Hand-written because no dependency offers this definition: `statrs`' `quantile` is R's
//! type 8 (interpolating), which would change every published percentile.

/// Quantile `q` (clamped to [0, 1]) of `sorted`, which must be in ascending order; NaN when
/// empty.
pub fn of_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let rank = (q.clamp(0.0, 1.0) * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

/// Quantile `q` of `xs` in any order (sorted on a copy); NaN when empty.
pub fn quantile(xs: &[f64], q: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    of_sorted(&v, q)
}

/// Median of `xs` in any order: [`quantile`] at 0.5; NaN when empty.
pub fn median(xs: &[f64]) -> f64 {
    quantile(xs, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_by_hand() {
        // n = 4: q = 0.5 → rank ⌈2⌉ = 2; q = 0.51 → ⌈2.04⌉ = 3; q = 0.25 → 1; q = 0.99 → 4.
        let v = [10.0, 20.0, 30.0, 40.0];
        assert_eq!(of_sorted(&v, 0.5), 20.0);
        assert_eq!(of_sorted(&v, 0.51), 30.0);
        assert_eq!(of_sorted(&v, 0.25), 10.0);
        assert_eq!(of_sorted(&v, 0.99), 40.0);
        assert_eq!(of_sorted(&v, 0.0), 10.0);
        assert_eq!(of_sorted(&v, 1.0), 40.0);
        // Out-of-range q is clamped.
        assert_eq!(of_sorted(&v, -1.0), 10.0);
        assert_eq!(of_sorted(&v, 2.0), 40.0);
        // n = 1000: p99 → rank 990, p999 → 999, p50 → 500.
        let w: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(of_sorted(&w, 0.99), 990.0);
        assert_eq!(of_sorted(&w, 0.999), 999.0);
        assert_eq!(of_sorted(&w, 0.5), 500.0);
        // Bootstrap interval ends over 100 values: ranks ⌈2.5⌉ = 3 and ⌈97.5⌉ = 98.
        let b: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(of_sorted(&b, 0.025), 3.0);
        assert_eq!(of_sorted(&b, 0.975), 98.0);
    }

    #[test]
    fn unsorted_input_medians_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        // Even count: the lower middle value, an observed one (not 2.5).
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.0);
        assert_eq!(quantile(&[5.0, -1.0, 7.0, 0.5, 2.0], 0.8), 5.0);
        assert!(median(&[]).is_nan());
        assert!(of_sorted(&[], 0.5).is_nan());
    }
}
