//! A step function's changes binned at a fixed number of bins whose width doubles as time goes
//! on: memory per series is bounded whatever the horizon, and integrals stay exact
//! (`sim::utilization` bins a series past `EXACT` changes).

use crate::engine::Time;

/// The most bins a binned series has: widths double (adjacent bins merge) to keep under it.
pub const BINS: usize = 1024;

/// The narrowest bin, ns; every width is this times a power of two, so that any two binned
/// series can be brought to one width and added.
pub(super) const BASE_BIN: Time = 1_000;

/// A level's changes binned at a width of [`BASE_BIN`] × 2^k: per bin, the sum of its changes
/// and their level-ns up to the bin's end (Σ delta × (end − t)). Integrals are exact: a bin's
/// area is the level at its start × width plus that sum; only *when* within a bin the level
/// changed is lost (its mean over the bin is kept).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Binned {
    pub(super) width: Time,
    /// `width` is `BASE_BIN << shift` (`None`: it is not, having saturated at the end of the
    /// clock): a bin's index is then a shift of `t / BASE_BIN`, a division by a constant,
    /// instead of a 64-bit division by `width`, twice per change (a serving run bins every
    /// batch's busy span).
    shift: Option<u32>,
    pub(super) delta: Vec<f64>,
    part: Vec<f64>,
}

/// `s` with `BASE_BIN << s == width`, if there is one.
fn shift_of(width: Time) -> Option<u32> {
    let k = width / BASE_BIN;
    (width.is_multiple_of(BASE_BIN) && k.is_power_of_two()).then(|| k.trailing_zeros())
}

impl Binned {
    pub(super) fn new(width: Time) -> Binned {
        Binned {
            width,
            shift: shift_of(width),
            delta: Vec::new(),
            part: Vec::new(),
        }
    }

    pub(super) fn add(&mut self, t: Time, d: f64) {
        let i = loop {
            // ⌊⌊t / BASE_BIN⌋ / 2^k⌋ = ⌊t / (BASE_BIN · 2^k)⌋.
            let i = match self.shift {
                Some(k) => (t / BASE_BIN) >> k,
                None => t / self.width,
            };
            if i < BINS as Time {
                break i as usize;
            }
            self.coarsen();
        };
        if self.delta.len() <= i {
            self.delta.resize(i + 1, 0.0);
            self.part.resize(i + 1, 0.0);
        }
        self.delta[i] += d;
        // Saturating: a clock near u64::MAX (a huge compute) keeps a bin's end in range.
        let end = (i as Time + 1).saturating_mul(self.width);
        self.part[i] += d * end.saturating_sub(t) as f64;
    }

    /// Twice the width: bins 2j and 2j + 1 merge; the first's changes also hold over the
    /// second's span.
    fn coarsen(&mut self) {
        let w = self.width as f64;
        let n = self.delta.len().div_ceil(2);
        for j in 0..n {
            let (d0, p0) = (self.delta[2 * j], self.part[2 * j]);
            let (d1, p1) = (
                self.delta.get(2 * j + 1).copied().unwrap_or(0.0),
                self.part.get(2 * j + 1).copied().unwrap_or(0.0),
            );
            self.delta[j] = d0 + d1;
            self.part[j] = p0 + d0 * w + p1;
        }
        self.delta.truncate(n);
        self.part.truncate(n);
        self.width = self.width.saturating_mul(2);
        self.shift = shift_of(self.width);
    }

    pub(super) fn widen_to(&mut self, width: Time) {
        while self.width < width {
            self.coarsen();
        }
    }

    pub(super) fn merge(&mut self, mut other: Binned) {
        let w = self.width.max(other.width);
        self.widen_to(w);
        other.widen_to(w);
        if self.delta.len() < other.delta.len() {
            self.delta.resize(other.delta.len(), 0.0);
            self.part.resize(other.delta.len(), 0.0);
        }
        for (i, (d, p)) in other.delta.iter().zip(&other.part).enumerate() {
            self.delta[i] += d;
            self.part[i] += p;
        }
    }

    /// (bin start s, mean level over the bin) for every bin that starts before `horizon`
    /// (the last one cut there), and the integral in level-seconds over [0, horizon]. Every
    /// change is at or before `horizon` ([`super::utilization::UtilTracker::with_limit`]).
    pub(super) fn series(&self, horizon: Time) -> (Vec<(f64, f64)>, f64) {
        let (mut level, mut area) = (0.0f64, 0.0f64);
        let mut out = Vec::with_capacity(self.delta.len() + 1);
        let mut i = 0usize;
        while (i as Time).saturating_mul(self.width) < horizon {
            let start = (i as Time).saturating_mul(self.width);
            if i >= self.delta.len() {
                // No change after: the level holds to the horizon, one point.
                out.push((start as f64 / 1e9, level.max(0.0)));
                area += level * (horizon - start) as f64 / 1e9;
                break;
            }
            let full = start.saturating_add(self.width);
            let end = full.min(horizon);
            let (d, p) = (
                self.delta.get(i).copied().unwrap_or(0.0),
                self.part.get(i).copied().unwrap_or(0.0),
            );
            // The bin's changes counted to its full end; cut at the horizon.
            let cut = (full - end) as f64;
            let a = level * (end - start) as f64 + p - d * cut;
            out.push((start as f64 / 1e9, (a / (end - start) as f64).max(0.0)));
            area += a / 1e9;
            level += d;
            i += 1;
        }
        (out, area)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A deterministic scatter of spans (start, end, level) over [0, 10 s).
    pub(in crate::sim) fn spans(n: u64) -> Vec<(Time, Time, f64)> {
        (0..n)
            .map(|i| {
                let a = (i * 7_919_993) % 9_000_000_000;
                let b = a + 1 + (i * 104_729) % 1_000_000_000;
                (a, b, 1.0 + (i % 3) as f64)
            })
            .collect()
    }

    #[test]
    fn coarsening_and_merging_keep_the_integral() {
        // The same changes binned at 1 µs then coarsened 12 times, or straight at 4.096 ms,
        // give the same bins; two series merge bin by bin.
        let mut a = Binned::new(BASE_BIN);
        let mut b = Binned::new(BASE_BIN << 12);
        for (t0, t1, l) in spans(500) {
            let (t0, t1) = (t0 / 10_000, t1 / 10_000);
            for x in [&mut a, &mut b] {
                x.add(t0, l);
                x.add(t1, -l);
            }
        }
        a.widen_to(b.width);
        assert_eq!(a.width, b.width);
        for (x, y) in a.part.iter().zip(&b.part) {
            assert!((x - y).abs() < 1e-6 * x.abs().max(1.0), "{x} vs {y}");
        }
        let (_, area) = b.series(1_000_000_000);
        let mut m = a.clone();
        m.merge(b.clone());
        let (_, twice) = m.series(1_000_000_000);
        assert!((twice - 2.0 * area).abs() < 1e-9 * area);
    }

    #[test]
    fn a_clock_near_the_end_of_time_neither_overflows_nor_spins() {
        let mut b = Binned::new(BASE_BIN);
        b.add(1, 1.0);
        b.add(u64::MAX - 1, -1.0);
        assert!(b.delta.len() <= BINS);
        let (series, area) = b.series(u64::MAX);
        assert!(series.len() <= BINS + 1);
        assert!(
            (area - (u64::MAX - 2) as f64 / 1e9).abs() < 1e-6 * area,
            "{area}"
        );
    }

    #[test]
    fn a_binned_level_cut_at_the_horizon_counts_only_what_is_inside() {
        // Level 2 from 0.5 s on, the horizon at 0.75 s inside a bin: 0.5 level-seconds.
        let mut b = Binned::new(BASE_BIN << 20);
        b.add(500_000_000, 2.0);
        let (series, area) = b.series(750_000_000);
        assert!((area - 0.5).abs() < 1e-12, "{area}");
        assert_eq!(series.len(), 1);
        assert!((series[0].1 - 0.5 / 0.75).abs() < 1e-12);
        // A level held after its last change to a far horizon (30 days) is one more point,
        // not a point per bin to the horizon.
        let day = 86_400_000_000_000u64;
        let (series, area) = b.series(30 * day);
        assert_eq!(series.len(), 2);
        assert!(
            (area - 2.0 * (30.0 * 86_400.0 - 0.5)).abs() < 1e-6,
            "{area}"
        );
    }
}
