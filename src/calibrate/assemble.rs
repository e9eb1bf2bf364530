//! Measurements and fits → a [`Profile`] in the existing schema (`source = "measured"`), with
//! provenance, every figure's 95% interval (bootstrap over repetitions, seeded) and the raw
//! medians of each transfer path; kernels measured at several sizes become `efficiency_by_size`
//! curves and device-pair copies the `[[p2p_matrix]]`.

use super::fit::PathFit;
use super::{Measurement, Options, detect::Host, stats};
use crate::profile::schema::{
    ComputeFit, LaunchFit, MemoryFit, PeerCopy, Profile, Provenance, SCHEMA_VERSION, SizeCurve,
    Source, TransferPath,
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

/// Per-size measurements → an `efficiency_by_size` curve under the profile's rules: per size
/// the median achieved figure (outliers dropped first) over `peak`, clamped into (0, 1]; rows
/// by decreasing size, the smallest size's row starting at 0 (so a kernel smaller than any
/// measured runs at the smallest one's efficiency, and one between two measured sizes at the
/// smaller's: Calculon's first-row-at-or-below rule). Sizes that are not positive and finite,
/// and sizes without a positive finite median, are skipped; repetitions of one size given twice
/// are pooled. Empty when nothing is left.
pub fn size_curve(by_size: &[(f64, Vec<f64>)], peak: f64) -> SizeCurve {
    let mut pts: Vec<(f64, Vec<f64>)> = Vec::new();
    for (size, reps) in by_size {
        if !(size.is_finite() && *size > 0.0) || reps.is_empty() {
            continue;
        }
        match pts.iter_mut().find(|(s, _)| s == size) {
            Some((_, r)) => r.extend_from_slice(reps),
            None => pts.push((*size, reps.clone())),
        }
    }
    pts.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut rows: SizeCurve = pts
        .iter()
        .filter_map(|(size, reps)| {
            let m = stats::median(&stats::reject_outliers(reps, 3.5));
            (m.is_finite() && m > 0.0 && peak > 0.0).then(|| [*size, (m / peak).min(1.0)])
        })
        .collect();
    if let Some(last) = rows.last_mut() {
        last[0] = 0.0;
    }
    rows
}

/// Device-pair copies → `[[p2p_matrix]]` entries: the median over repetitions of bytes /
/// seconds, an empty link kind written `unknown`. Pairs without a positive finite median
/// bandwidth are left out (the profile requires one).
pub fn p2p_matrix(m: &Measurement) -> Vec<PeerCopy> {
    m.p2p
        .iter()
        .filter_map(|c| {
            let bw: Vec<f64> = c.secs.iter().map(|t| c.bytes as f64 / t).collect();
            let bw = stats::median(&bw);
            (bw.is_finite() && bw > 0.0 && c.bytes > 0).then(|| PeerCopy {
                from: c.from,
                to: c.to,
                bytes: c.bytes,
                bandwidth_bytes_per_s: bw,
                peer_access: c.peer_access,
                link: if c.link.is_empty() {
                    "unknown".into()
                } else {
                    c.link.clone()
                },
            })
        })
        .collect()
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
                efficiency_by_size: size_curve(&c.by_size, peak),
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
        efficiency_by_size: size_curve(&m.memory.by_size, peak),
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
        p2p_matrix: p2p_matrix(m),
        validation: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{
        ComputeMeasure, Device, LaunchMeasure, Measurement, MemoryMeasure, PeerMeasure,
    };
    use super::*;
    use crate::compute::kernels::Curve;

    const PEAK: f64 = 1000e12;
    /// n of the square GEMMs and the efficiency each is made to reach, increasing n as the
    /// CUDA sweep measures them.
    const GEMM: [(f64, f64); 6] = [
        (256.0, 0.05),
        (512.0, 0.2),
        (1024.0, 0.45),
        (2048.0, 0.6),
        (4096.0, 0.72),
        (8192.0, 0.78),
    ];

    /// Three repetitions around `x`, median exactly `x` (and nothing dropped as an outlier).
    fn around(x: f64) -> Vec<f64> {
        vec![x * 0.99, x, x * 1.01]
    }

    fn measurement(gemm: &[(f64, f64)]) -> Measurement {
        let by_size: Vec<(f64, Vec<f64>)> = gemm
            .iter()
            .map(|&(n, e)| (2.0 * n * n * n, around(e * PEAK)))
            .collect();
        let headline = by_size.last().map(|(_, r)| r.clone()).unwrap_or_default();
        Measurement {
            accelerator: "H200".into(),
            device: "synthetic GPU".into(),
            driver: "none".into(),
            transfers: Vec::new(),
            compute: vec![ComputeMeasure {
                dtype: "bf16".into(),
                reps: if headline.is_empty() {
                    around(0.78 * PEAK)
                } else {
                    headline
                },
                peak: Some(PEAK),
                source: "synthetic GEMM sweep".into(),
                by_size,
            }],
            memory: MemoryMeasure {
                reps: around(4.0e12),
                peak: Some(4.8e12),
                source: "synthetic triad".into(),
                by_size: vec![
                    (48.0 * 1024.0, around(0.1 * 4.8e12)),
                    (3.0 * 1024.0 * 1024.0 * 1024.0, around(4.0e12)),
                ],
            },
            launch: LaunchMeasure {
                reps: around(5e-6),
                source: "synthetic".into(),
            },
            p2p: vec![
                PeerMeasure {
                    from: 0,
                    to: 1,
                    bytes: 256 << 20,
                    secs: vec![6e-4, 5e-4, 7e-4],
                    peer_access: true,
                    link: "nvlink".into(),
                },
                PeerMeasure {
                    from: 1,
                    to: 0,
                    bytes: 256 << 20,
                    secs: vec![4e-3, 4e-3, 5e-3],
                    peer_access: false,
                    link: String::new(),
                },
            ],
            notes: Vec::new(),
        }
    }

    /// Assemble, write as TOML, read back with the profile's own checks.
    fn round_trip(m: &Measurement) -> (Profile, String) {
        let o = Options::new(Device::Cuda(0), false, 7);
        let p = profile(m, &[], &Host::default(), &o);
        let text = p.to_toml().unwrap();
        let back = crate::profile::parse(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        assert_eq!(back, p);
        (back, text)
    }

    #[test]
    fn per_size_gemms_become_a_curve_and_the_matrix_survives_toml() {
        let (p, text) = round_trip(&measurement(&GEMM));
        let c = &p.compute["bf16"];
        let rows = &c.efficiency_by_size;
        assert_eq!(rows.len(), GEMM.len());
        // Largest size first; each row's min_size is its GEMM's FLOP, the smallest's 0.
        for (row, &(n, e)) in rows.iter().zip(GEMM.iter().rev()) {
            let flop = if n == 256.0 { 0.0 } else { 2.0 * n * n * n };
            assert_eq!(row[0], flop);
            assert!((row[1] - e).abs() < 1e-12, "{row:?} vs {e}");
        }
        assert!(rows.windows(2).all(|w| w[0][0] > w[1][0]));
        // The headline is the largest size's, against the same peak.
        assert_eq!(c.peak_flops, PEAK);
        assert_eq!(c.efficiency, rows[0][1]);
        // Calculon's rule on the curve: a 3000³ GEMM runs at the 2048³ efficiency, a tiny one
        // at the smallest measured.
        let curve = Curve::from_rows(rows, c.efficiency);
        assert!((curve.at(2.0 * 3000f64.powi(3)) - 0.6).abs() < 1e-12);
        assert!((curve.at(1e3) - 0.05).abs() < 1e-12);
        let m = p.memory.as_ref().unwrap();
        assert_eq!(m.efficiency_by_size.len(), 2);
        assert_eq!(m.efficiency_by_size[1], [0.0, 0.1 * 4.8e12 / 4.8e12]);
        assert_eq!(m.efficiency_by_size[0][0], 3.0 * (1u64 << 30) as f64);
        assert_eq!(m.efficiency, m.efficiency_by_size[0][1]);

        assert_eq!(p.p2p_matrix.len(), 2);
        let (a, b) = (&p.p2p_matrix[0], &p.p2p_matrix[1]);
        assert_eq!((a.from, a.to, a.bytes), (0, 1, 256 << 20));
        assert_eq!(a.bandwidth_bytes_per_s, (256u64 << 20) as f64 / 6e-4);
        assert!(a.peer_access);
        assert_eq!(a.link, "nvlink");
        assert_eq!((b.from, b.to), (1, 0));
        assert_eq!(b.bandwidth_bytes_per_s, (256u64 << 20) as f64 / 4e-3);
        assert!(!b.peer_access);
        assert_eq!(b.link, "unknown");
        assert!(text.contains("[[p2p_matrix]]"), "{text}");
    }

    #[test]
    fn a_size_above_the_peak_clamps_to_one() {
        let mut gemm = GEMM;
        gemm[2].1 = 1.3;
        let (p, _) = round_trip(&measurement(&gemm));
        let rows = &p.compute["bf16"].efficiency_by_size;
        assert_eq!(rows[3], [2.0 * 1024f64.powi(3), 1.0]);
        // The peak stays the datasheet's: only the headline size can move it.
        assert_eq!(p.compute["bf16"].peak_flops, PEAK);
        assert!(rows.iter().all(|r| r[1] > 0.0 && r[1] <= 1.0));
    }

    #[test]
    fn one_size_measured_leaves_the_curve_empty() {
        let (p, text) = round_trip(&measurement(&[]));
        assert!(p.compute["bf16"].efficiency_by_size.is_empty());
        let bf16 = text.split("[compute.bf16]").nth(1).unwrap();
        let bf16 = bf16.split("\n[").next().unwrap();
        assert!(!bf16.contains("efficiency_by_size"), "{bf16}");
    }

    #[test]
    fn curves_skip_bad_points_and_pool_repeated_sizes() {
        let rows = size_curve(
            &[
                (1e9, vec![0.5]),
                (f64::NAN, vec![0.9]),
                (0.0, vec![0.9]),
                (1e12, vec![0.8]),
                (1e9, vec![0.4, 0.6]),
                (1e6, Vec::new()),
                (1e3, vec![0.0]),
            ],
            1.0,
        );
        assert_eq!(rows, vec![[1e12, 0.8], [0.0, 0.5]]);
    }
}
