//! `orrery calibrate` and `orrery validate`: measure this machine, fit the measurements and
//! write a calibration profile ([`crate::profile`]'s schema), or compare a declared node type
//! with the hardware found here.
//!
//! One job per file: [`detect`] reads what the machine is (/proc, /sys); [`cpu`] measures the
//! CPU backend and `cuda` (feature `cuda`) the GPUs; [`stats`] holds MAD and outlier
//! rejection; [`fit`] the piecewise α–β fit with bootstrap intervals and held-out error;
//! [`assemble`] turns measurements and fits into a [`Profile`]; [`check`] (`--check`) times a
//! chain of unseen copies against the profile's prediction; [`plot`] draws measured vs fitted
//! as SVG; [`validate`] compares a node type with [`detect`]'s findings.
//!
//! Like the rest of the library this does no printing: the binary owns stdout and stderr (the
//! progress bar it hands in draws on stderr). Besides `atomic` (writing the profile), these
//! are the only modules that read the machine (/proc, /sys, the CUDA driver).

pub mod assemble;
pub mod check;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "cuda")]
mod cuda_gemm;
#[cfg(feature = "cuda")]
mod cuda_kernels;
pub mod detect;
pub mod fit;
pub mod import;
pub mod node_block;
pub mod plot;
pub mod record;
pub mod stats;
pub mod sysfs;
pub mod validate;

use crate::profile::Profile;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// What to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    Cpu,
    Cuda(u32),
}

impl FromStr for Device {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda(0)),
            _ => s
                .strip_prefix("cuda:")
                .and_then(|n| n.parse().ok())
                .map(Device::Cuda)
                .ok_or_else(|| format!("unknown device `{s}`: expected `cpu` or `cuda:N`")),
        }
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => write!(f, "cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

pub struct Options {
    pub device: Device,
    /// Smaller sizes and fewer repetitions: seconds rather than minutes (tests, smoke runs).
    pub quick: bool,
    /// Seeds the bootstrap and the check's chain order (the measurements are not random).
    pub seed: u64,
    /// After fitting, time a chain of unseen copies against the prediction ([`check`]) and
    /// record the figure in the profile.
    pub check: bool,
    /// The command line, recorded in the profile's provenance.
    pub command: String,
    /// Advanced once per measurement step ([`steps`]); the binary hides it when stderr is not
    /// a terminal.
    pub progress: Option<indicatif::ProgressBar>,
}

impl Options {
    pub fn new(device: Device, quick: bool, seed: u64) -> Options {
        Options {
            device,
            quick,
            seed,
            check: false,
            command: format!(
                "orrery calibrate --device {device}{} --seed {seed}",
                if quick { " --quick" } else { "" }
            ),
            progress: None,
        }
    }

    pub(crate) fn tick(&self, what: &str) {
        if let Some(p) = &self.progress {
            p.set_message(what.to_string());
            p.inc(1);
        }
    }
}

/// How many steps the progress bar of a calibration counts.
pub fn steps(o: &Options) -> u64 {
    u64::from(o.check)
        + match o.device {
            Device::Cpu => cpu::steps(o.quick),
            #[cfg(feature = "cuda")]
            Device::Cuda(_) => cuda::steps(o.quick),
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => 1,
        }
}

/// Repetitions of one transfer path over sizes.
#[derive(Debug, Clone)]
pub struct PathMeasure {
    pub path: String,
    pub source: String,
    pub points: Vec<fit::Point>,
}

/// Achieved FLOP/s per repetition of a compute-bound kernel.
#[derive(Debug, Clone)]
pub struct ComputeMeasure {
    pub dtype: String,
    pub reps: Vec<f64>,
    /// The datasheet peak the efficiency is relative to (None: the best repetition).
    pub peak: Option<f64>,
    pub source: String,
    /// The same kernel at several sizes: (FLOP of one kernel, achieved FLOP/s per repetition),
    /// which [`assemble`] turns into `efficiency_by_size`; empty where one size is measured.
    pub by_size: Vec<(f64, Vec<f64>)>,
}

/// Achieved bytes/s per repetition of a memory-bound kernel.
#[derive(Debug, Clone)]
pub struct MemoryMeasure {
    pub reps: Vec<f64>,
    /// The datasheet peak (None: the best repetition).
    pub peak: Option<f64>,
    pub source: String,
    /// The same kernel at several sizes: (bytes one kernel moves, achieved bytes/s per
    /// repetition); empty where one size is measured.
    pub by_size: Vec<(f64, Vec<f64>)>,
}

/// Seconds per repetition of one copy of `bytes` from device `from` to device `to`.
#[derive(Debug, Clone)]
pub struct PeerMeasure {
    pub from: u32,
    pub to: u32,
    pub bytes: u64,
    pub secs: Vec<f64>,
    /// Whether the driver allowed direct peer access between the two.
    pub peer_access: bool,
    /// The link kind as the inventory tells it (`nvlink`, `pcie`, `none`; empty: unknown).
    pub link: String,
}

/// Seconds per repetition of the fixed per-launch (or per-hand-off) cost.
#[derive(Debug, Clone)]
pub struct LaunchMeasure {
    pub reps: Vec<f64>,
    pub source: String,
}

/// Everything one backend measured.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// The accelerator name the profile describes (`cpu`, `H200`, ...).
    pub accelerator: String,
    pub device: String,
    pub driver: String,
    pub transfers: Vec<PathMeasure>,
    pub compute: Vec<ComputeMeasure>,
    pub memory: MemoryMeasure,
    pub launch: LaunchMeasure,
    /// One copy for every ordered pair of the host's devices (empty with fewer than two).
    pub p2p: Vec<PeerMeasure>,
    /// Extra findings (inventory, ...), kept in the profile's notes.
    pub notes: Vec<String>,
}

/// A finished calibration: the profile and what it was made from.
pub struct Calibration {
    pub profile: Profile,
    pub fits: Vec<(String, fit::PathFit)>,
    pub measurement: Measurement,
    pub host: detect::Host,
}

/// Measure and fit (and with [`Options::check`], check). Errors are one line (no device, no
/// driver, a path that cannot be fitted, `--check` on a GPU).
pub fn calibrate(o: &Options) -> Result<Calibration, String> {
    if o.check && o.device != Device::Cpu {
        return Err(format!(
            "`--check` times chains of host memcpy and is implemented for `--device cpu` only, not {}",
            o.device
        ));
    }
    let host = detect::detect();
    let measurement = match o.device {
        Device::Cpu => cpu::measure(o, &host),
        #[cfg(feature = "cuda")]
        Device::Cuda(i) => cuda::measure(o, i)?,
        #[cfg(not(feature = "cuda"))]
        Device::Cuda(_) => {
            return Err(
                "this orrery was built without CUDA support; rebuild with `cargo build --release --features cuda`"
                    .into(),
            );
        }
    };
    let mut cal = from_measurement(measurement, host, o)?;
    if o.check {
        check::run(&mut cal, o.seed)?;
        o.tick("prediction check");
    }
    Ok(cal)
}

/// Fit a measurement and assemble its profile: everything [`calibrate`] does after measuring
/// (and before `--check`), so synthetic measurements go through the same pipeline.
pub fn from_measurement(
    measurement: Measurement,
    host: detect::Host,
    o: &Options,
) -> Result<Calibration, String> {
    let fits = fit_all(&measurement, o)?;
    let profile = assemble::profile(&measurement, &fits, &host, o);
    Ok(Calibration {
        profile,
        fits,
        measurement,
        host,
    })
}

/// Fit every transfer path of a measurement (bootstrap seeded by the options' seed and the
/// path's position, so paths do not share a stream).
pub fn fit_all(m: &Measurement, o: &Options) -> Result<Vec<(String, fit::PathFit)>, String> {
    m.transfers
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let opts = fit::FitOptions {
                seed: o.seed.wrapping_mul(1000).wrapping_add(i as u64),
                bootstrap: if o.quick { 100 } else { 400 },
                ..Default::default()
            };
            fit::fit_path(&t.points, &opts)
                .map(|f| (t.path.clone(), f))
                .map_err(|e| format!("cannot fit transfer path `{}`: {e}", t.path))
        })
        .collect()
}

/// Write the profile (checked by reading it back with [`crate::profile::parse`] first) and its
/// plot beside it (`NAME.svg`), each atomically. Returns the files written.
pub fn write(cal: &Calibration, out: &Path) -> Result<Vec<PathBuf>, String> {
    let text = cal.profile.to_toml()?;
    let text = format!(
        "# Measured by `{}` (orrery {}); see calibration/README.md for the format.\n{text}",
        cal.profile.provenance.command,
        env!("CARGO_PKG_VERSION")
    );
    if let Err(errs) = crate::profile::parse(&text) {
        let msg = errs.first().map(|e| e.message.clone()).unwrap_or_default();
        return Err(format!("the measured profile does not validate: {msg}"));
    }
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::atomic::create_dir(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    crate::atomic::write_atomic(out, text.as_bytes()).map_err(|e| format!("cannot write {e}"))?;
    let mut files = vec![out.to_path_buf()];
    if !cal.fits.is_empty() {
        let svg = out.with_extension("svg");
        let title = format!(
            "{} on {}: measured vs fitted",
            cal.measurement.device, cal.host.hostname
        );
        let drawing = plot::svg(&cal.fits, &title)?;
        crate::atomic::write_atomic(&svg, drawing.as_bytes())
            .map_err(|e| format!("cannot write {e}"))?;
        files.push(svg);
    }
    Ok(files)
}

/// `4 KiB`, `1.5 MiB`, `1 GiB`.
pub fn human_bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = b as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < units.len() {
        x /= 1024.0;
        u += 1;
    }
    if x.fract() == 0.0 {
        format!("{x} {}", units[u])
    } else {
        format!("{x:.1} {}", units[u])
    }
}

impl Calibration {
    /// What the binary prints after a calibration: per path the segments with intervals,
    /// residuals and held-out error; then compute, memory and launch figures.
    pub fn summary(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let p = &self.profile;
        let _ = writeln!(
            s,
            "{} ({}) on {}, {}",
            p.provenance.device, p.provenance.accelerator, p.provenance.host, p.provenance.driver
        );
        for (path, f) in &self.fits {
            let _ = writeln!(
                s,
                "transfer {path}: {} segment(s), {} outlier repetition(s) dropped, residual rms {:.1}%",
                f.segments.len(),
                f.rejected,
                100.0 * f.residual_rms()
            );
            let mut t = crate::table::Table::new([
                "segment",
                "latency µs",
                "95% CI µs",
                "bandwidth GB/s",
                "95% CI GB/s",
                "R²",
            ]);
            for g in &f.segments {
                let range = match g.max_bytes {
                    Some(m) => format!("[{}, {})", human_bytes(g.min_bytes), human_bytes(m)),
                    None => format!("[{}, ∞)", human_bytes(g.min_bytes)),
                };
                t.row([
                    range,
                    format!("{:.3}", g.latency_s * 1e6),
                    format!(
                        "[{:.3}, {:.3}]",
                        g.latency_ci95[0] * 1e6,
                        g.latency_ci95[1] * 1e6
                    ),
                    format!("{:.2}", g.bandwidth_bytes_per_s / 1e9),
                    format!(
                        "[{:.2}, {:.2}]",
                        g.bandwidth_ci95[0] / 1e9,
                        g.bandwidth_ci95[1] / 1e9
                    ),
                    format!("{:.4}", g.r2),
                ]);
            }
            s.push_str(&t.render());
            if let Some((med, max)) = f.holdout_error() {
                let _ = writeln!(
                    s,
                    "  held-out sizes ({}): prediction error median {:.1}%, max {:.1}%",
                    f.holdout.len(),
                    100.0 * med,
                    100.0 * max
                );
            }
        }
        for t in &p.transfer {
            if let Some(c) = &t.check {
                let _ = writeln!(s, "{}", check::line(&t.path, c));
            }
        }
        for (dt, c) in &p.compute {
            let _ = writeln!(
                s,
                "compute {dt}: {:.2} GFLOP/s (efficiency {:.3} of {:.2} GFLOP/s, 95% [{:.3}, {:.3}])",
                c.achieved_flops.unwrap_or(c.efficiency * c.peak_flops) / 1e9,
                c.efficiency,
                c.peak_flops / 1e9,
                c.efficiency_ci95[0],
                c.efficiency_ci95[1]
            );
            if !c.efficiency_by_size.is_empty() {
                let _ = writeln!(
                    s,
                    "  by FLOP of one kernel: {}",
                    curve(&c.efficiency_by_size, "FLOP")
                );
            }
        }
        if let Some(m) = &p.memory {
            let _ = writeln!(
                s,
                "memory: {:.2} GB/s (efficiency {:.3} of {:.2} GB/s)",
                m.achieved_bytes_per_s
                    .unwrap_or(m.efficiency * m.peak_bytes_per_s)
                    / 1e9,
                m.efficiency,
                m.peak_bytes_per_s / 1e9
            );
            if !m.efficiency_by_size.is_empty() {
                let _ = writeln!(
                    s,
                    "  by bytes one kernel moves: {}",
                    curve(&m.efficiency_by_size, "B")
                );
            }
        }
        if let Some(l) = &p.launch {
            let _ = writeln!(
                s,
                "launch: {:.3} µs [{:.3}, {:.3}]",
                l.overhead_s * 1e6,
                l.overhead_ci95[0] * 1e6,
                l.overhead_ci95[1] * 1e6
            );
        }
        if !p.p2p_matrix.is_empty() {
            s.push_str(&p2p_table(&p.p2p_matrix));
        }
        for n in &self.measurement.notes {
            let _ = writeln!(s, "note: {n}");
        }
        s
    }
}

/// `1.10 T`, `268 M`, `0`: three significant figures with an SI prefix.
fn si(x: f64) -> String {
    const PREFIXES: [(f64, &str); 5] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")];
    match PREFIXES.iter().find(|(f, _)| x.abs() >= *f) {
        Some((f, p)) => {
            let v = x / f;
            let digits = if v >= 100.0 {
                0
            } else if v >= 10.0 {
                1
            } else {
                2
            };
            format!("{v:.digits$} {p}")
        }
        None => format!("{x}"),
    }
}

/// An `efficiency_by_size` curve on one line, largest first: `≥ 1.10 TFLOP 0.791 · … · ≥ 0 0.050`.
fn curve(rows: &[[f64; 2]], unit: &str) -> String {
    rows.iter()
        .map(|r| {
            if r[0] == 0.0 {
                format!("≥ 0 {:.3}", r[1])
            } else {
                format!("≥ {}{unit} {:.3}", si(r[0]), r[1])
            }
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The device-pair copies as a from × to table of GB/s and link kind (`staged` where the
/// driver allowed no peer access).
fn p2p_table(m: &[crate::profile::schema::PeerCopy]) -> String {
    let n = m.iter().map(|c| c.from.max(c.to) + 1).max().unwrap_or(0);
    let bytes = m.first().map_or(0, |c| c.bytes);
    let mut out = if m.iter().all(|c| c.bytes == bytes) {
        format!(
            "P2P copies of {} (GB/s, link), from row to column:\n",
            human_bytes(bytes)
        )
    } else {
        "P2P copies (GB/s, link), from row to column:\n".to_string()
    };
    let mut t = crate::table::Table::new(
        std::iter::once("from\\to".to_string()).chain((0..n).map(|j| j.to_string())),
    );
    for i in 0..n {
        t.row(std::iter::once(i.to_string()).chain((0..n).map(|j| {
            match m.iter().find(|c| c.from == i && c.to == j) {
                _ if i == j => "—".to_string(),
                Some(c) => format!(
                    "{:.1} {}{}",
                    c.bandwidth_bytes_per_s / 1e9,
                    c.link,
                    if c.peer_access { "" } else { " staged" }
                ),
                None => "?".to_string(),
            }
        })));
    }
    out.push_str(&t.render());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_parse() {
        assert_eq!("cpu".parse::<Device>(), Ok(Device::Cpu));
        assert_eq!("cuda:3".parse::<Device>(), Ok(Device::Cuda(3)));
        assert_eq!("cuda".parse::<Device>(), Ok(Device::Cuda(0)));
        assert!("gpu".parse::<Device>().is_err());
        assert!("cuda:x".parse::<Device>().is_err());
    }

    #[test]
    fn the_summary_shows_curves_and_the_matrix_compactly() {
        assert_eq!(
            curve(&[[1.1e12, 0.79], [2.68e8, 0.2], [0.0, 0.05]], "FLOP"),
            "≥ 1.10 TFLOP 0.790 · ≥ 268 MFLOP 0.200 · ≥ 0 0.050"
        );
        let copy =
            |from, to, gbps: f64, peer_access, link: &str| crate::profile::schema::PeerCopy {
                from,
                to,
                bytes: 256 << 20,
                bandwidth_bytes_per_s: gbps * 1e9,
                peer_access,
                link: link.into(),
            };
        let t = p2p_table(&[
            copy(0, 1, 390.0, true, "nvlink"),
            copy(1, 0, 25.5, false, "none"),
        ]);
        assert!(
            t.starts_with("P2P copies of 256 MiB (GB/s, link), from row to column:\n"),
            "{t}"
        );
        assert!(t.contains("390.0 nvlink"), "{t}");
        assert!(t.contains("25.5 none staged"), "{t}");
        assert_eq!(t.matches('—').count(), 2, "{t}");
    }

    #[test]
    fn bytes_read_well() {
        assert_eq!(human_bytes(4096), "4 KiB");
        assert_eq!(human_bytes(6144), "6 KiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }
}
