//! `orrery calibrate` and `orrery validate` end to end on the CPU backend (quick mode, so
//! seconds), the prediction of a composite workload from a profile fitted to synthetic
//! measurements (deterministic), `--check`'s figure in the written profile, and the command
//! line's exit codes.

use orrery::calibrate::{self, Device, Options, cpu, detect};
use std::path::PathBuf;
use std::process::{Command, Output};

fn orrery(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .output()
        .expect("orrery runs")
}

/// Tests that measure the machine take turns: measuring while another test copies memory
/// on the other core would measure the contention, not the machine.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn measuring() -> std::sync::MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(|e| e.into_inner())
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-calib-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn quick_cpu_calibration_gives_a_valid_measured_profile() {
    let _turn = measuring();
    let cal = calibrate::calibrate(&Options::new(Device::Cpu, true, 7)).unwrap();
    let p = &cal.profile;
    assert_eq!(p.provenance.source, orrery::profile::Source::Measured);
    assert_eq!(p.provenance.seed, 7);
    assert!(p.provenance.command.contains("--quick"));
    assert!(p.compute.contains_key("fp32") && p.compute.contains_key("fp64"));
    let memcpy = p.transfer("memcpy").expect("a memcpy path");
    assert!(!memcpy.medians.is_empty());
    assert!(memcpy.check.is_none(), "no figure without --check");
    assert!(memcpy.segments.iter().all(|s| s.r2.is_some()));
    // What calibrate writes is what orrery reads.
    let text = p.to_toml().unwrap();
    assert_eq!(&orrery::profile::parse(&text).unwrap(), p);
    let (_, f) = &cal.fits[0];
    assert!(!f.holdout.is_empty(), "sizes are held back from the fit");
    print!("{}", cal.summary());
}

/// Ground truth of the synthetic path: (from bytes, latency s, bandwidth bytes/s) per regime,
/// figures of a one-thread memcpy: L2-resident, last-level-cache-resident, DRAM. Each boundary
/// is the geometric mean of the two fitted sizes either side (2^17.5, 2^22.5 bytes): the fit
/// can only place a boundary between two fitted sizes, and puts it there.
const TRUTH: [(u64, f64, f64); 3] = [
    (0, 0.1e-6, 40e9),
    (185_364, 1e-6, 20e9),
    (5_931_642, 10e-6, 8e9),
];

fn truth_secs(bytes: u64) -> f64 {
    let &(_, a, bw) = TRUTH.iter().rev().find(|g| bytes >= g.0).unwrap();
    a + bytes as f64 / bw
}

/// Relative noise (standard deviation) of every synthetic repetition.
const NOISE: f64 = 0.02;

/// The calibration's own size grid up to 64 MiB (powers of two fitted, 1.5 × 2^k held out),
/// each size 15 repetitions of the ground truth × N(1, NOISE) plus two stalled repetitions
/// (× 1.5 to × 4, as when the copying thread is preempted), from a seeded stream.
fn synthetic(seed: u64) -> calibrate::Measurement {
    use rand::{RngExt, SeedableRng};
    use rand_distr::{Distribution, Normal};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let noise = Normal::new(1.0, NOISE).unwrap();
    let points = cpu::sizes(64 << 20)
        .into_iter()
        .map(|(bytes, held_out)| {
            let t = truth_secs(bytes);
            let mut reps: Vec<f64> = (0..15).map(|_| t * noise.sample(&mut rng)).collect();
            for _ in 0..2 {
                let at = rng.random_range(0..reps.len());
                reps.insert(at, t * rng.random_range(1.5..4.0));
            }
            calibrate::fit::Point {
                bytes,
                reps,
                held_out,
            }
        })
        .collect();
    let mut around = |x: f64| -> Vec<f64> { (0..9).map(|_| x * noise.sample(&mut rng)).collect() };
    calibrate::Measurement {
        accelerator: "cpu".into(),
        device: "synthetic".into(),
        driver: "none".into(),
        transfers: vec![calibrate::PathMeasure {
            path: "memcpy".into(),
            source: "synthetic: piecewise α–β ground truth with 2% noise and stalls".into(),
            points,
        }],
        compute: vec![calibrate::ComputeMeasure {
            dtype: "fp32".into(),
            reps: around(75e9),
            peak: None,
            source: "synthetic".into(),
            by_size: Vec::new(),
        }],
        memory: calibrate::MemoryMeasure {
            reps: around(34e9),
            peak: None,
            source: "synthetic".into(),
            by_size: Vec::new(),
        },
        launch: calibrate::LaunchMeasure {
            reps: around(5e-8),
            source: "synthetic".into(),
        },
        p2p: Vec::new(),
        notes: Vec::new(),
    }
}

/// Fit synthetic measurements exactly as `orrery calibrate` does (fit, assemble, write the
/// TOML, read it back), predict a chain of sizes never fitted and compare with the ground
/// truth. Nothing here is timed, so the machine's speed and load cannot move it.
///
/// The bound: each size's fitted figure is the median of ~15 repetitions with 2% noise, whose
/// standard deviation is 1.2533 · 2% / √15 ≈ 0.65%; a least-squares line through the medians
/// of a segment predicts a size inside the segment with an error whose standard deviation is
/// at most one median's (leverage ≤ 1), so each prediction is within 4 sd ≈ 2.6% except with
/// probability below 1e-4. The chain's relative error is a weighted mean of the per-size
/// errors (weights: each size's share of the chain's time), so it is within 2.6% too: 3%.
const BOUND: f64 = 0.03;

#[test]
fn a_fit_of_synthetic_measurements_predicts_a_chain_of_unseen_sizes() {
    for seed in 1..=4 {
        let o = Options::new(Device::Cpu, false, seed);
        let host = detect::Host {
            hostname: "synthetic".into(),
            ..Default::default()
        };
        let cal = calibrate::from_measurement(synthetic(seed), host, &o).unwrap();
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("synthetic.toml");
        calibrate::write(&cal, &out).unwrap();
        let profile = orrery::profile::parse(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(profile, cal.profile, "the TOML round trip changes nothing");
        let path = profile.transfer("memcpy").unwrap();
        let fit = &cal.fits[0].1;

        // The structure of the truth is found: three segments, boundaries where the truth's.
        let bounds: Vec<u64> = path.segments.iter().map(|s| s.min_bytes).collect();
        assert_eq!(bounds, TRUTH.map(|t| t.0), "{:?}", path.segments);
        // Every stalled repetition is dropped (and perhaps a few of the noise's far tail).
        let stalls = 2 * fit.medians.len();
        assert!(fit.rejected >= stalls && fit.rejected <= stalls + stalls / 4);
        // The truth lies in each figure's 95% interval.
        for (s, &(_, a, bw)) in path.segments.iter().zip(&TRUTH) {
            assert!(
                s.bandwidth_ci95[0] <= bw && bw <= s.bandwidth_ci95[1],
                "seed {seed}: {s:?}"
            );
            assert!(
                s.latency_ci95[0] <= a && a <= s.latency_ci95[1],
                "seed {seed}: {s:?}"
            );
        }

        let chain = calibrate::check::chain(fit, seed);
        let fitted: Vec<u64> = fit.residuals.iter().map(|r| r.0).collect();
        assert_eq!(chain.len(), 14);
        assert!(chain.iter().all(|b| !fitted.contains(b)), "never fitted");
        let truth: f64 = chain.iter().map(|&b| truth_secs(b)).sum();
        let c = calibrate::check::figure(path, &chain, &[truth], "synthetic".into()).unwrap();
        println!("seed {seed}: chain error {:+.2}%", 100.0 * c.rel_error);
        assert!(c.rel_error.abs() <= BOUND, "seed {seed}: {c:?}");

        // The bound is tight enough to catch a wrong fit: the DRAM segment's boundary one
        // octave late (the LLC line used for 4–8 MiB copies) ...
        let mut late = path.clone();
        late.segments[1].max_bytes = Some(2 * TRUTH[2].0);
        late.segments[2].min_bytes = 2 * TRUTH[2].0;
        let e = calibrate::check::figure(&late, &chain, &[truth], "late".into()).unwrap();
        println!("seed {seed}: late boundary {:+.2}%", 100.0 * e.rel_error);
        assert!(e.rel_error.abs() > BOUND, "seed {seed}: {e:?}");
        // ... or one line for all sizes.
        let one = orrery::calibrate::fit::fit_path(
            &cal.measurement.transfers[0].points,
            &orrery::calibrate::fit::FitOptions {
                max_segments: 1,
                ..Default::default()
            },
        )
        .unwrap();
        let predicted: f64 = chain.iter().map(|&b| one.secs(b as f64)).sum();
        println!(
            "seed {seed}: one line {:+.2}%",
            100.0 * (predicted - truth) / truth
        );
        assert!(((predicted - truth) / truth).abs() > BOUND, "seed {seed}");
    }
}

#[test]
fn calibrate_check_writes_profile_with_its_figure_and_plot_atomically() {
    let _turn = measuring();
    let d = tmp("write");
    let out = d.join("cpu_test.toml");
    let o = orrery(&[
        "calibrate",
        "--quick",
        "--check",
        "--seed",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("transfer memcpy"), "{stdout}");
    let text = std::fs::read_to_string(&out).unwrap();
    let p = orrery::profile::parse(&text).unwrap();
    assert_eq!(p.provenance.seed, 3);
    assert!(p.provenance.command.starts_with("orrery calibrate"));
    assert!(p.provenance.command.contains("--check"));
    // The check's figure is recorded (its value is this machine's, at this moment: not tested).
    let c = p
        .transfer("memcpy")
        .unwrap()
        .check
        .as_ref()
        .expect("a check");
    assert!(c.predicted_s.is_finite() && c.predicted_s > 0.0, "{c:?}");
    assert!(c.measured_s.is_finite() && c.measured_s > 0.0, "{c:?}");
    assert!(c.rel_error.is_finite(), "{c:?}");
    assert_eq!(c.copies as usize, c.sizes_bytes.len());
    assert_eq!(c.repetitions as usize, calibrate::check::REPS);
    // Quick mode holds out the twelve 1.5 × 2^k sizes from 6 KiB to 12 MiB.
    let mut sizes = c.sizes_bytes.clone();
    sizes.sort_unstable();
    assert_eq!(sizes, (12..24).map(|k| 3u64 << (k - 1)).collect::<Vec<_>>());
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("check memcpy: chain of 12 unseen copies")),
        "{stdout}"
    );
    let svg = std::fs::read_to_string(out.with_extension("svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("memcpy"));
    let leftovers = std::fs::read_dir(&d)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".tmp-")
        })
        .count();
    assert_eq!(leftovers, 0);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_calibrate_flags_are_one_line_errors_with_exit_2() {
    let o = orrery(&["calibrate", "--device", "gpu"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected `cpu` or `cuda:N`"));
    let o = orrery(&["calibrate", "--seed", "x"]);
    assert_eq!(o.status.code(), Some(2));
    // The check times host memcpy: asked of a GPU, a one-line error before anything is measured.
    let o = orrery(&["calibrate", "--device", "cuda:0", "--quick", "--check"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`--check`") && err.contains("--device cpu"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // No CUDA here (no driver, or a build without the feature): a clear line, never a panic.
    let o = orrery(&["calibrate", "--device", "cuda:0", "--quick"]);
    let err = String::from_utf8_lossy(&o.stderr);
    if !cfg!(feature = "cuda") || !std::path::Path::new("/dev/nvidiactl").exists() {
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.starts_with("error: "), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

fn scenario(d: &std::path::Path, text: &str) -> String {
    let f = d.join("node.orr");
    std::fs::write(&f, text).unwrap();
    f.to_str().unwrap().to_string()
}

#[test]
fn validate_agrees_with_a_node_declared_as_this_machine() {
    let h = detect::detect();
    let (Some(sockets), Some(cores), Some(mem)) = (h.sockets, h.cores, h.memory_bytes) else {
        eprintln!("topology not visible here; skipped");
        return;
    };
    let numa = h.numa_nodes.unwrap_or(sockets);
    let d = tmp("agree");
    let f = scenario(
        &d,
        &format!(
            "node here {{\n  cpu sockets {sockets}, cores {cores}, numa {numa}, threads {}\n  memory {} KiB\n}}\n",
            h.threads,
            mem / 1024
        ),
    );
    let o = orrery(&["validate", &f, "--node", "here"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("agrees with this machine"), "{out}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn validate_reports_each_mismatch_with_exit_1() {
    let d = tmp("mismatch");
    let f = scenario(
        &d,
        "node big {\n  cpu sockets 8, cores 4096, numa 8, threads 8192\n  memory 64 TiB\n}\n",
    );
    let o = orrery(&["validate", &f, "--node", "big"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    for what in ["CPU cores", "CPU threads", "memory"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with("MISMATCH") && l.contains(what)),
            "{what}: {out}"
        );
    }
    // A catalog GPU node on this CPU-only machine: the devices do not match.
    let o = orrery(&["validate", &f, "--node", "hgx_h200"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    if detect::detect()
        .accelerators
        .iter()
        .all(|f| f.vendor != 0x10de)
    {
        assert!(
            out.lines()
                .any(|l| l.starts_with("MISMATCH") && l.contains("devices")),
            "{out}"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn validate_bad_input_exits_2() {
    let d = tmp("bad");
    let f = scenario(
        &d,
        "node here {\n  cpu sockets 1, cores 1, numa 1, threads 1\n  memory 1 GiB\n}\n",
    );
    let o = orrery(&["validate", &f, "--node", "hgx_h20"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("did you mean `hgx_h200`"));
    let o = orrery(&["validate", "/nonexistent/x.orr", "--node", "here"]);
    assert_eq!(o.status.code(), Some(2));
    let o = orrery(&["validate", &f]);
    assert_eq!(o.status.code(), Some(2), "--node is required");
    std::fs::remove_dir_all(&d).unwrap();
}
