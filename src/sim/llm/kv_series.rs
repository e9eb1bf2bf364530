//! An LLM service's KV-cache occupancy over time: the mean over its replicas of the share of
//! KV blocks in use, per window. Each replica adds its occupancy over each iteration (from the
//! iteration's start to its end, where it is recorded) to the windows that interval covers.
//! Windows start at 1 ms and double (neighbours merged) whenever there would be more than
//! [`crate::sim::links::MAX_WINDOWS`], as the link series do, so a run of any length keeps at
//! most that many; exact up to that windowing (an interval's share is split by overlap).

use crate::sim::links::MAX_WINDOWS;

/// Integrals of occupancy × ns per window of `ns` nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct KvSeries {
    ns: u64,
    acc: Vec<f64>,
}

impl Default for KvSeries {
    fn default() -> Self {
        KvSeries {
            ns: 1_000_000,
            acc: Vec::new(),
        }
    }
}

impl KvSeries {
    /// Occupancy `frac` (0..1, already divided by the service's replica count) held over
    /// `[from, to)` ns.
    pub fn add(&mut self, from: u64, to: u64, frac: f64) {
        if to <= from || !(frac.is_finite() && frac > 0.0) {
            return;
        }
        while to.div_ceil(self.ns) as usize > MAX_WINDOWS {
            self.acc = self.acc.chunks(2).map(|p| p.iter().sum()).collect();
            self.ns = self.ns.saturating_mul(2);
        }
        let last = to.div_ceil(self.ns) as usize;
        if self.acc.len() < last {
            self.acc.resize(last, 0.0);
        }
        let mut k = (from / self.ns) as usize;
        let mut t = from;
        while t < to {
            // Saturating: near u64::MAX (a clock that saturated) the product wrapped to 0 and
            // this loop never ended (issue 42).
            let end = (k as u64 + 1).saturating_mul(self.ns).min(to);
            self.acc[k] += frac * (end - t) as f64;
            t = end;
            k += 1;
        }
    }

    /// `(window start s, mean occupancy)` for every window up to `end` ns (the last one
    /// partial), and the window's length in seconds.
    pub fn points(&self, end: u64) -> (Vec<(f64, f64)>, f64) {
        let n = end.div_ceil(self.ns) as usize;
        let pts = (0..n)
            .map(|k| {
                let start = k as u64 * self.ns;
                let len = (k as u64 + 1).saturating_mul(self.ns).min(end) - start;
                let v = self.acc.get(k).copied().unwrap_or(0.0);
                (start as f64 / 1e9, (v / len.max(1) as f64).clamp(0.0, 1.0))
            })
            .collect();
        (pts, self.ns as f64 / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::KvSeries;

    #[test]
    fn intervals_split_over_windows_and_windows_double() {
        let mut s = KvSeries::default();
        // Half full from 0.5 ms to 2.5 ms: windows of 1 ms get 0.25, 0.5, 0.25.
        s.add(500_000, 2_500_000, 0.5);
        let (p, w) = s.points(3_000_000);
        assert_eq!(w, 0.001);
        assert_eq!(p, vec![(0.0, 0.25), (0.001, 0.5), (0.002, 0.25)]);
        // Out to 1 s: 1000 windows of 1 ms would be over 512, so 2 ms windows (500), the
        // first holding 1.5 ms at a half, the last 1 ms full.
        s.add(999_000_000, 1_000_000_000, 1.0);
        let (p, w) = s.points(1_000_000_000);
        assert_eq!(w, 0.002);
        assert_eq!(p.len(), 500);
        assert!((p[0].1 - 0.5 * 1.5 / 2.0).abs() < 1e-12);
        assert!((p[1].1 - 0.5 * 0.5 / 2.0).abs() < 1e-12);
        assert!((p[499].1 - 0.5).abs() < 1e-12);
    }
}
