//! A sample of durations whose memory does not grow with the run: exact while small, an HDR
//! histogram beyond. What every per-request and per-task metric records into (issue 16: a
//! service used to keep one number per request, so a year's horizon needed ~12 GB).
//!
//! - Up to [`EXACT_LIMIT`] values the durations are kept as they are and the quantiles are
//!   exact ([`crate::quantile`], nearest rank).
//! - Past it they move into an HDR histogram of nanoseconds with 3 significant digits
//!   (`hdrhistogram`, Gil Tene's HdrHistogram: every value is counted in a bucket no wider
//!   than 1/1000 of it). A quantile is then the upper edge of the bucket holding the same
//!   nearest rank (`Histogram::value_at_quantile`: rank ⌈q·n⌉, at least 1), clamped to the
//!   observed extremes, so it lies within [`HDR_REL_ERROR`] above the exact nearest-rank value
//!   (never below it), for values from 1 ns up. Memory: at most ~330 KiB per metric
//!   (1 ns … 10⁶ s), whatever the count.
//! - Count, sum (so the mean), minimum and maximum are always exact, and so are the counts at
//!   or under the thresholds given at creation (SLO targets): they are counted as values
//!   arrive, not read off the histogram.

use super::metrics::{MAX_SAMPLES, Stats};
use hdrhistogram::Histogram;

/// Most values kept exactly (512 KiB of them).
pub const EXACT_LIMIT: usize = 1 << 16;

/// Bound on a histogram quantile's relative error: 3 significant digits.
pub const HDR_REL_ERROR: f64 = 1e-3;

/// Durations in seconds; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct Durations {
    exact: Vec<f64>,
    hist: Option<Box<Histogram<u64>>>,
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
    thresholds: Vec<f64>,
    within: Vec<u64>,
}

fn ns(x: f64) -> u64 {
    // Durations come from integer nanosecond clocks; a fractional mean per token rounds to
    // the nearest nanosecond (half a nanosecond against the 1/1000 buckets above 1 µs).
    super::models::to_u64(super::models::round_pos(x * 1e9))
}

/// Records `v` ns, growing the histogram's range as needed (`saturating_record` would clamp
/// to the current range instead of growing it).
fn put(h: &mut Histogram<u64>, v: u64) {
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

impl Durations {
    /// A sample that also counts values at or under each of `thresholds` (seconds).
    pub fn with_thresholds(thresholds: Vec<f64>) -> Durations {
        let within = vec![0; thresholds.len()];
        Durations {
            thresholds,
            within,
            ..Durations::default()
        }
    }

    /// Records one duration (seconds).
    pub fn record(&mut self, x: f64) {
        self.record_with(x, || ns(x));
    }

    /// Records a duration of `n` whole nanoseconds: the same as `record(n as f64 / 1e9)`,
    /// without converting the seconds back to nanoseconds for the histogram. Below 2^50 ns
    /// (13 days) `n / 1e9 * 1e9` is within a quarter of a nanosecond of `n` (two roundings of
    /// at most 2^-53 relative each), so it rounds back to `n` exactly.
    pub fn record_ns(&mut self, n: u64) {
        let x = n as f64 / 1e9;
        self.record_with(x, || if n < 1 << 50 { n } else { ns(x) });
    }

    #[inline]
    fn record_with(&mut self, x: f64, in_ns: impl FnOnce() -> u64) {
        if self.count == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.count += 1;
        self.sum += x;
        for (t, w) in self.thresholds.iter().zip(&mut self.within) {
            *w += u64::from(x <= *t);
        }
        match &mut self.hist {
            Some(h) => put(h, in_ns()),
            None => {
                self.exact.push(x);
                if self.exact.len() > EXACT_LIMIT {
                    self.spill();
                }
            }
        }
    }

    fn spill(&mut self) {
        // Three significant digits, auto-resizing from 1 ns: `new` cannot fail for 3.
        let mut h = Histogram::<u64>::new(3).expect("3 significant digits are valid");
        for &x in &self.exact {
            put(&mut h, ns(x));
        }
        self.exact = Vec::new();
        self.hist = Some(Box::new(h));
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Whether the quantiles are exact (the sample never outgrew [`EXACT_LIMIT`]).
    pub fn is_exact(&self) -> bool {
        self.hist.is_none()
    }

    /// Values at or under threshold `i` (exact).
    pub fn within(&self, i: usize) -> u64 {
        self.within.get(i).copied().unwrap_or(0)
    }

    /// Quantile `q` of a histogram sample (seconds), clamped to the observed extremes.
    fn hist_quantile(&self, h: &Histogram<u64>, q: f64) -> f64 {
        (h.value_at_quantile(q.clamp(0.0, 1.0)) as f64 / 1e9).clamp(self.min, self.max)
    }

    /// Count, mean, p50 … p999 and max; `quantile_rel_error` says how exact the quantiles are.
    /// Sorts the exact values in place (the samples for plots read them afterwards).
    pub fn stats(&mut self) -> Stats {
        let Some(h) = self.hist.as_deref() else {
            return Stats::of(&mut self.exact);
        };
        let q = |p| self.hist_quantile(h, p);
        Stats {
            count: self.count,
            mean: self.sum / self.count as f64,
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            max: self.max,
            quantile_rel_error: HDR_REL_ERROR,
        }
    }

    /// At most [`MAX_SAMPLES`] order statistics in ascending order, for CDF plots: the values
    /// themselves while exact (evenly spaced ranks past `MAX_SAMPLES`, the extremes kept), or
    /// the histogram's quantiles at evenly spaced ranks.
    pub fn samples(&mut self) -> Vec<f64> {
        let Some(h) = self.hist.as_deref() else {
            self.exact.sort_by(f64::total_cmp);
            return super::metrics::bounded_samples(&self.exact);
        };
        let n = self.count;
        // Ascending ranks, so the histogram is walked once for all of them
        // (`value_at_quantiles`), not once per rank: the same values as `hist_quantile`'s.
        let quantiles = (1..MAX_SAMPLES as u64).map(|i| {
            let rank = 1 + i * (n - 1) / (MAX_SAMPLES as u64 - 1);
            (rank as f64 / n as f64).clamp(0.0, 1.0)
        });
        let mut out = Vec::with_capacity(MAX_SAMPLES);
        out.push(self.min);
        out.extend(
            h.value_at_quantiles(quantiles)
                .map(|v| (v as f64 / 1e9).clamp(self.min, self.max)),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn exact_below_the_limit() {
        let mut d = Durations::with_thresholds(vec![2.5]);
        for x in [4.0, 1.0, 3.0, 2.0] {
            d.record(x);
        }
        let s = d.stats();
        assert!(d.is_exact());
        assert_eq!((s.count, s.p50, s.max, s.mean), (4, 2.0, 4.0, 2.5));
        assert_eq!(s.quantile_rel_error, 0.0);
        assert_eq!(d.within(0), 2);
        assert_eq!(d.samples(), vec![1.0, 2.0, 3.0, 4.0]);
    }

    /// Past the limit: every quantile within 0.1% above the exact nearest rank, never below;
    /// count, mean, max and threshold counts exact.
    #[test]
    fn histogram_quantiles_are_within_their_stated_error() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        // Log-uniform over 1 µs … 100 s, in whole nanoseconds as the clocks give them.
        let xs: Vec<f64> = (0..EXACT_LIMIT * 3)
            .map(|_| (10f64.powf(rng.random_range(3.0..11.0))).round() / 1e9)
            .collect();
        let mut d = Durations::with_thresholds(vec![0.01]);
        for &x in &xs {
            d.record(x);
        }
        assert!(!d.is_exact());
        let s = d.stats();
        let mut sorted = xs.clone();
        let exact = Stats::of(&mut sorted);
        assert_eq!(s.count, exact.count);
        assert_eq!(s.max, exact.max);
        assert!((s.mean - exact.mean).abs() <= 1e-12 * exact.mean);
        for (got, want) in [
            (s.p50, exact.p50),
            (s.p90, exact.p90),
            (s.p99, exact.p99),
            (s.p999, exact.p999),
        ] {
            assert!(got >= want, "{got} < {want}");
            assert!(got <= want * (1.0 + HDR_REL_ERROR), "{got} vs {want}");
        }
        assert_eq!(s.quantile_rel_error, HDR_REL_ERROR);
        let within = xs.iter().filter(|x| **x <= 0.01).count() as u64;
        assert_eq!(d.within(0), within);
        let plot = d.samples();
        assert_eq!(plot.len(), MAX_SAMPLES);
        assert!(plot.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(plot[MAX_SAMPLES - 1], exact.max);
        assert_eq!(plot[0], sorted[0]);
    }

    /// `record_ns(n)` is `record(n as f64 / 1e9)`: the same histogram, bucket for bucket,
    /// on both sides of the 2^50 ns fast path's edge.
    #[test]
    fn nanoseconds_record_as_their_seconds_do() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut ns_values: Vec<u64> = (0..EXACT_LIMIT * 2)
            .map(|_| 10f64.powf(rng.random_range(0.0..16.5)) as u64)
            .collect();
        ns_values.extend([0, 1, (1 << 50) - 1, 1 << 50, (1 << 50) + 1, (1 << 52) + 3]);
        let (mut a, mut b) = (
            Durations::with_thresholds(vec![1e-3, 1e5]),
            Durations::with_thresholds(vec![1e-3, 1e5]),
        );
        for &n in &ns_values {
            a.record(n as f64 / 1e9);
            b.record_ns(n);
        }
        assert!(!a.is_exact());
        assert_eq!(a.hist, b.hist);
        assert_eq!(
            (a.count, a.within(0), a.within(1)),
            (b.count, b.within(0), b.within(1))
        );
        assert_eq!(a.sum.to_bits(), b.sum.to_bits());
        assert_eq!(a.samples(), b.samples());
    }

    /// The one-pass samples are the per-rank quantiles, rank for rank.
    #[test]
    fn samples_are_each_ranks_quantile() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut d = Durations::default();
        for _ in 0..EXACT_LIMIT * 3 {
            d.record_ns(10f64.powf(rng.random_range(2.0..10.0)) as u64);
        }
        let n = d.count;
        let h = d.hist.as_deref().unwrap();
        let want: Vec<f64> = (0..MAX_SAMPLES as u64)
            .map(|i| match i {
                0 => d.min,
                _ => d.hist_quantile(
                    h,
                    (1 + i * (n - 1) / (MAX_SAMPLES as u64 - 1)) as f64 / n as f64,
                ),
            })
            .collect();
        assert_eq!(d.samples(), want);
    }
}
