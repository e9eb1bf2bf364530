//! Fitting transfer measurements: piecewise α–β (seconds = latency + bytes / bandwidth).
//!
//! Method (nccl-tests / SimGrid SMPI calibration style, shared/reference/hardware-and-models.md
//! "Calibration method"):
//! 1. Per size, repetitions beyond `k`·MAD of their median are dropped ([`stats`]), and the
//!    median of the rest is the figure fitted.
//! 2. Each segment is a weighted least-squares line through (bytes, seconds) with weights
//!    1/seconds², so every size counts by its *relative* error (a 1 GiB copy does not drown a
//!    4 KiB one). A negative intercept is refitted through the origin.
//! 3. Breakpoints: every split of the sorted fitted sizes into 1..=`max_segments` runs of at
//!    least `min_points` sizes is tried; the one with the lowest BIC of the relative residuals
//!    (n·ln(SSE/n) + parameters·ln n) wins, so a segment is added only when it pays for
//!    itself. A segment boundary is the geometric mean of the sizes either side of it.
//! 4. 95% intervals: bootstrap over repetitions (each size's repetitions resampled with
//!    replacement, medians refitted with the chosen breakpoints), percentiles 2.5 and 97.5,
//!    from a ChaCha stream seeded by the caller (deterministic). When every size has a
//!    single repetition (a benchmark tool's table: one time per size), over sizes instead:
//!    each segment's (size, time) pairs resampled with replacement and refitted.
//! 5. Weighted R² per segment, relative residuals per fitted size, and the relative error of
//!    the prediction at every held-out size (measured, never fitted).

use super::stats;
use crate::profile::schema::Segment;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One measured size: its repetitions (seconds each) and whether it is held back from the fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub bytes: u64,
    pub reps: Vec<f64>,
    pub held_out: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct FitOptions {
    pub max_segments: usize,
    pub min_points: usize,
    /// Repetitions further than `outlier_k` scaled MADs from their median are dropped.
    pub outlier_k: f64,
    pub bootstrap: usize,
    pub seed: u64,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            max_segments: 3,
            min_points: 3,
            outlier_k: 3.5,
            bootstrap: 200,
            seed: 1,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SegmentFit {
    pub min_bytes: u64,
    pub max_bytes: Option<u64>,
    pub latency_s: f64,
    pub latency_ci95: [f64; 2],
    pub bandwidth_bytes_per_s: f64,
    pub bandwidth_ci95: [f64; 2],
    /// Weighted (relative) coefficient of determination, in [0, 1].
    pub r2: f64,
    /// Fitted sizes in the segment.
    pub points: usize,
}

/// A size held back from the fit and how well the fit predicts it.
#[derive(Debug, Clone, PartialEq)]
pub struct Holdout {
    pub bytes: u64,
    pub measured_s: f64,
    pub predicted_s: f64,
    /// (predicted − measured) / measured.
    pub rel_error: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PathFit {
    pub segments: Vec<SegmentFit>,
    /// (bytes, (fitted − median) / median) for every fitted size.
    pub residuals: Vec<(u64, f64)>,
    pub holdout: Vec<Holdout>,
    /// (bytes, median seconds) of every size, fitted or held out, by increasing size.
    pub medians: Vec<(u64, f64)>,
    /// Repetitions dropped as outliers, over all sizes.
    pub rejected: usize,
}

impl PathFit {
    /// Predicted seconds for `bytes`: the segment whose range holds it.
    pub fn secs(&self, bytes: f64) -> f64 {
        let s = self
            .segments
            .iter()
            .find(|s| s.max_bytes.is_none_or(|m| bytes < m as f64))
            .or(self.segments.last());
        s.map_or(f64::NAN, |s| s.latency_s + bytes / s.bandwidth_bytes_per_s)
    }

    /// Median and largest |relative error| over the held-out sizes (None without any).
    pub fn holdout_error(&self) -> Option<(f64, f64)> {
        let e: Vec<f64> = self.holdout.iter().map(|h| h.rel_error.abs()).collect();
        (!e.is_empty()).then(|| (stats::median(&e), e.iter().copied().fold(0.0, f64::max)))
    }

    /// The held-out sizes and errors as a profile records them (None without any).
    pub fn holdout_record(&self) -> Option<crate::profile::schema::Holdout> {
        let (median, max) = self.holdout_error()?;
        Some(crate::profile::schema::Holdout {
            sizes_bytes: self.holdout.iter().map(|h| h.bytes).collect(),
            median_abs_rel_error: median,
            max_abs_rel_error: max,
        })
    }

    /// Root-mean-square relative residual over the fitted sizes.
    pub fn residual_rms(&self) -> f64 {
        let n = self.residuals.len().max(1) as f64;
        (self.residuals.iter().map(|r| r.1 * r.1).sum::<f64>() / n).sqrt()
    }

    /// The segments in the profile's schema.
    pub fn profile_segments(&self) -> Vec<Segment> {
        self.segments
            .iter()
            .map(|s| Segment {
                min_bytes: s.min_bytes,
                max_bytes: s.max_bytes,
                latency_s: s.latency_s,
                latency_ci95: s.latency_ci95,
                bandwidth_bytes_per_s: s.bandwidth_bytes_per_s,
                bandwidth_ci95: s.bandwidth_ci95,
                r2: Some(s.r2),
            })
            .collect()
    }
}

/// Weighted least squares of y = α + β·x; with a negative α, refitted through the origin.
/// None when the points do not determine a line with β > 0.
pub fn wls(xs: &[f64], ys: &[f64], ws: &[f64]) -> Option<(f64, f64)> {
    let w: f64 = ws.iter().sum();
    if xs.len() < 2 || w <= 0.0 {
        return None;
    }
    let xm = xs.iter().zip(ws).map(|(x, w)| x * w).sum::<f64>() / w;
    let ym = ys.iter().zip(ws).map(|(y, w)| y * w).sum::<f64>() / w;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for ((x, y), w) in xs.iter().zip(ys).zip(ws) {
        sxy += w * (x - xm) * (y - ym);
        sxx += w * (x - xm) * (x - xm);
    }
    if sxx <= 0.0 {
        return None;
    }
    let mut beta = sxy / sxx;
    let mut alpha = ym - beta * xm;
    if alpha < 0.0 {
        let num: f64 = xs.iter().zip(ys).zip(ws).map(|((x, y), w)| w * x * y).sum();
        let den: f64 = xs.iter().zip(ws).map(|(x, w)| w * x * x).sum();
        alpha = 0.0;
        beta = num / den;
    }
    (beta > 0.0 && beta.is_finite() && alpha.is_finite()).then_some((alpha, beta))
}

/// Sum of squared relative residuals of a line over points.
fn rel_sse(xs: &[f64], ys: &[f64], a: f64, b: f64) -> f64 {
    xs.iter()
        .zip(ys)
        .map(|(x, y)| ((a + b * x - y) / y).powi(2))
        .sum()
}

fn weights(ys: &[f64]) -> Vec<f64> {
    ys.iter().map(|y| 1.0 / (y * y)).collect()
}

/// Every way to cut `n` points into 1..=`max_seg` runs of at least `min_pts`: the start index of
/// each run after the first.
fn splits(n: usize, max_seg: usize, min_pts: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    fn rec(
        start: usize,
        n: usize,
        left: usize,
        min_pts: usize,
        cur: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
    ) {
        if n - start >= min_pts {
            out.push(cur.clone());
        }
        if left == 0 {
            return;
        }
        let mut cut = start + min_pts;
        while cut + min_pts <= n {
            cur.push(cut);
            rec(cut, n, left - 1, min_pts, cur, out);
            cur.pop();
            cut += 1;
        }
    }
    rec(
        0,
        n,
        max_seg.saturating_sub(1),
        min_pts.max(2),
        &mut Vec::new(),
        &mut out,
    );
    out
}

fn ranges(n: usize, cuts: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut starts = vec![0];
    starts.extend_from_slice(cuts);
    starts
        .iter()
        .enumerate()
        .map(|(i, &s)| s..starts.get(i + 1).copied().unwrap_or(n))
        .collect()
}

fn fit_ranges(xs: &[f64], ys: &[f64], rs: &[std::ops::Range<usize>]) -> Option<Vec<(f64, f64)>> {
    rs.iter()
        .map(|r| wls(&xs[r.clone()], &ys[r.clone()], &weights(&ys[r.clone()])))
        .collect()
}

/// Fit one path. Errors when fewer than two sizes are fitted or no line has a positive slope.
pub fn fit_path(points: &[Point], o: &FitOptions) -> Result<PathFit, String> {
    let mut pts: Vec<&Point> = points.iter().filter(|p| !p.reps.is_empty()).collect();
    pts.sort_by_key(|p| p.bytes);
    let mut rejected = 0;
    let kept: Vec<Vec<f64>> = pts
        .iter()
        .map(|p| {
            let k = stats::reject_outliers(&p.reps, o.outlier_k);
            rejected += p.reps.len() - k.len();
            k
        })
        .collect();
    let medians: Vec<(u64, f64)> = pts
        .iter()
        .zip(&kept)
        .map(|(p, k)| (p.bytes, stats::median(k)))
        .collect();
    let fit_idx: Vec<usize> = (0..pts.len())
        .filter(|&i| !pts[i].held_out && medians[i].1 > 0.0)
        .collect();
    if fit_idx.len() < 2 {
        return Err(format!(
            "need at least two fitted sizes, found {}",
            fit_idx.len()
        ));
    }
    let xs: Vec<f64> = fit_idx.iter().map(|&i| pts[i].bytes as f64).collect();
    let ys: Vec<f64> = fit_idx.iter().map(|&i| medians[i].1).collect();
    let n = xs.len();

    // Choose breakpoints by BIC over the relative residuals.
    let min_pts = o.min_points.clamp(2, n);
    type Choice = (f64, Vec<std::ops::Range<usize>>, Vec<(f64, f64)>);
    let mut best: Option<Choice> = None;
    for cuts in splits(n, o.max_segments.max(1), min_pts) {
        let rs = ranges(n, &cuts);
        let Some(lines) = fit_ranges(&xs, &ys, &rs) else {
            continue;
        };
        let sse: f64 = rs
            .iter()
            .zip(&lines)
            .map(|(r, (a, b))| rel_sse(&xs[r.clone()], &ys[r.clone()], *a, *b))
            .sum();
        let nf = n as f64;
        let params = (3 * rs.len() - 1) as f64;
        let score = nf * (sse / nf).max(1e-12).ln() + params * nf.ln();
        if best.as_ref().is_none_or(|b| score < b.0) {
            best = Some((score, rs, lines));
        }
    }
    let Some((_, rs, lines)) = best else {
        return Err("no line with a positive slope fits the measurements".into());
    };

    // Bootstrap over repetitions with the chosen breakpoints.
    let mut rng = ChaCha8Rng::seed_from_u64(o.seed);
    let mut boot: Vec<Vec<(f64, f64)>> = vec![Vec::new(); rs.len()];
    let mut sample = Vec::new();
    let single = fit_idx.iter().all(|&i| kept[i].len() < 2);
    for _ in 0..o.bootstrap {
        if single {
            for (si, r) in rs.iter().enumerate() {
                let idx: Vec<usize> = (0..r.len())
                    .map(|_| r.start + rng.random_range(0..r.len()))
                    .collect();
                let bx: Vec<f64> = idx.iter().map(|&i| xs[i]).collect();
                let by: Vec<f64> = idx.iter().map(|&i| ys[i]).collect();
                if let Some((a, b)) = wls(&bx, &by, &weights(&by)) {
                    boot[si].push((a, 1.0 / b));
                }
            }
            continue;
        }
        let yb: Vec<f64> = fit_idx
            .iter()
            .map(|&i| {
                let k = &kept[i];
                sample.clear();
                sample.extend((0..k.len()).map(|_| k[rng.random_range(0..k.len())]));
                stats::median(&sample)
            })
            .collect();
        for (si, r) in rs.iter().enumerate() {
            if let Some((a, b)) = wls(&xs[r.clone()], &yb[r.clone()], &weights(&yb[r.clone()])) {
                boot[si].push((a, 1.0 / b));
            }
        }
    }

    let mut segments = Vec::new();
    for (si, (r, &(a, b))) in rs.iter().zip(&lines).enumerate() {
        let bw = 1.0 / b;
        let ci = |v: Vec<f64>, est: f64| -> [f64; 2] {
            if v.is_empty() {
                return [est, est];
            }
            [
                stats::quantile(&v, 0.025).min(est),
                stats::quantile(&v, 0.975).max(est),
            ]
        };
        let (sx, sy) = (&xs[r.clone()], &ys[r.clone()]);
        let w = weights(sy);
        let wsum: f64 = w.iter().sum();
        let ym = sy.iter().zip(&w).map(|(y, w)| y * w).sum::<f64>() / wsum;
        let ss_tot: f64 = sy.iter().zip(&w).map(|(y, w)| w * (y - ym).powi(2)).sum();
        let ss_res = rel_sse(sx, sy, a, b);
        let r2 = if ss_tot > 0.0 {
            (1.0 - ss_res / ss_tot).clamp(0.0, 1.0)
        } else {
            1.0
        };
        let min_bytes = if si == 0 {
            0
        } else {
            (xs[r.start - 1] * xs[r.start]).sqrt().round() as u64
        };
        let max_bytes =
            (si + 1 < rs.len()).then(|| (xs[r.end - 1] * xs[r.end]).sqrt().round() as u64);
        segments.push(SegmentFit {
            min_bytes,
            max_bytes,
            latency_s: a,
            latency_ci95: ci(boot[si].iter().map(|p| p.0).collect(), a),
            bandwidth_bytes_per_s: bw,
            bandwidth_ci95: ci(boot[si].iter().map(|p| p.1).collect(), bw),
            r2,
            points: r.len(),
        });
    }
    let mut fit = PathFit {
        segments,
        residuals: Vec::new(),
        holdout: Vec::new(),
        medians: medians.clone(),
        rejected,
    };
    fit.residuals = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| (*x as u64, (fit.secs(*x) - y) / y))
        .collect();
    fit.holdout = pts
        .iter()
        .zip(&medians)
        .filter(|(p, m)| p.held_out && m.1 > 0.0)
        .map(|(p, m)| {
            let pred = fit.secs(p.bytes as f64);
            Holdout {
                bytes: p.bytes,
                measured_s: m.1,
                predicted_s: pred,
                rel_error: (pred - m.1) / m.1,
            }
        })
        .collect();
    Ok(fit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::{Distribution, Normal};

    /// Synthetic repetitions of `alpha + bytes / bw` with 1% multiplicative noise, plus
    /// `outliers` wild repetitions per size.
    fn synth(segs: &[(u64, f64, f64)], sizes: &[u64], outliers: usize, seed: u64) -> Vec<Point> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let noise = Normal::new(1.0, 0.01).unwrap();
        sizes
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                let &(_, a, bw) = segs.iter().rev().find(|g| s >= g.0).unwrap();
                let t = a + s as f64 / bw;
                let mut reps: Vec<f64> = (0..15).map(|_| t * noise.sample(&mut rng)).collect();
                for j in 0..outliers {
                    reps.push(t * if j % 2 == 0 { 20.0 } else { 0.01 });
                }
                Point {
                    bytes: s,
                    reps,
                    held_out: i % 4 == 3,
                }
            })
            .collect()
    }

    fn sizes() -> Vec<u64> {
        (12..=30)
            .flat_map(|k| [1u64 << k, 3u64 << (k - 1)])
            .collect()
    }

    #[test]
    fn recovers_one_segment_and_ci_contains_truth() {
        let (a, bw) = (2e-6, 10e9);
        let pts = synth(&[(0, a, bw)], &sizes(), 0, 3);
        let f = fit_path(&pts, &FitOptions::default()).unwrap();
        assert_eq!(f.segments.len(), 1, "{:?}", f.segments);
        let s = &f.segments[0];
        assert!((s.latency_s - a).abs() / a < 0.05, "{s:?}");
        assert!((s.bandwidth_bytes_per_s - bw).abs() / bw < 0.02, "{s:?}");
        assert!(s.latency_ci95[0] <= a && a <= s.latency_ci95[1], "{s:?}");
        assert!(
            s.bandwidth_ci95[0] <= bw && bw <= s.bandwidth_ci95[1],
            "{s:?}"
        );
        assert!(s.r2 > 0.99);
        let (med, max) = f.holdout_error().unwrap();
        assert!(med < 0.02 && max < 0.05, "{med} {max}");
    }

    #[test]
    fn recovers_breakpoints_of_two_regimes() {
        // A fast cached regime below 1 MiB and a slower one above, as a CPU memcpy shows.
        let truth = [(0, 1e-7, 50e9), (1 << 20, 20e-6, 8e9)];
        let pts = synth(&truth, &sizes(), 0, 5);
        let f = fit_path(&pts, &FitOptions::default()).unwrap();
        assert!(f.segments.len() >= 2, "{:?}", f.segments);
        let last = f.segments.last().unwrap();
        assert!(
            (last.bandwidth_bytes_per_s - 8e9).abs() / 8e9 < 0.03,
            "{last:?}"
        );
        let first = &f.segments[0];
        assert!(
            (first.bandwidth_bytes_per_s - 50e9).abs() / 50e9 < 0.05,
            "{first:?}"
        );
        let (med, _) = f.holdout_error().unwrap();
        assert!(med < 0.03, "{med}");
        // Segments tile the sizes from 0.
        assert_eq!(first.min_bytes, 0);
        for w in f.segments.windows(2) {
            assert_eq!(w[0].max_bytes, Some(w[1].min_bytes));
        }
        assert!(last.max_bytes.is_none());
    }

    #[test]
    fn outliers_are_rejected_and_do_not_move_the_fit() {
        let (a, bw) = (5e-6, 20e9);
        let clean = fit_path(
            &synth(&[(0, a, bw)], &sizes(), 0, 9),
            &FitOptions::default(),
        )
        .unwrap();
        let dirty = fit_path(
            &synth(&[(0, a, bw)], &sizes(), 2, 9),
            &FitOptions::default(),
        )
        .unwrap();
        // Every wild repetition goes (and, by chance, a few of the 1%-noise tail with them).
        let n = 2 * sizes().len();
        assert!(
            dirty.rejected >= n && dirty.rejected <= n + n / 4,
            "{}",
            dirty.rejected
        );
        let s = &dirty.segments[0];
        assert!((s.bandwidth_bytes_per_s - bw).abs() / bw < 0.02, "{s:?}");
        assert!((s.latency_s - a).abs() / a < 0.05, "{s:?}");
        assert_eq!(clean.segments.len(), dirty.segments.len());
    }

    #[test]
    fn bootstrap_is_deterministic_for_a_seed() {
        let pts = synth(&[(0, 1e-6, 5e9)], &sizes(), 0, 1);
        let o = FitOptions {
            seed: 42,
            ..Default::default()
        };
        assert_eq!(fit_path(&pts, &o).unwrap(), fit_path(&pts, &o).unwrap());
    }

    #[test]
    fn too_few_sizes_is_an_error_not_a_panic() {
        let p = Point {
            bytes: 4096,
            reps: vec![1e-6],
            held_out: false,
        };
        assert!(fit_path(&[p], &FitOptions::default()).is_err());
        assert!(fit_path(&[], &FitOptions::default()).is_err());
    }
}
