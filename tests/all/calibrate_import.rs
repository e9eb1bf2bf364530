//! `orrery calibrate import`: fixtures synthesized in the tools' formats
//! (tests/fixtures/import/README.md) fitted into a profile, the fit checked against the
//! model that made them, and a scenario naming the profile priced by it.

use orrery::calibrate::import::{self, ImportOptions, Input};
use orrery::experiment::collectives as ec;
use orrery::network::collective::Op;

const DIR: &str = "tests/fixtures/import";

fn input(name: &str) -> Input {
    let path = format!("{DIR}/{name}");
    // nvbandwidth prints no buffer size: `nvbandwidth_bN.*` ran with `-b N` (MiB).
    let buffer_bytes = name
        .strip_prefix("nvbandwidth_b")
        .and_then(|r| r.split('.').next())
        .and_then(|n| n.parse::<u64>().ok())
        .map(|m| m << 20);
    Input {
        text: std::fs::read_to_string(&path).unwrap(),
        name: path,
        modified: "2026-12-03T00:00:00Z".into(),
        buffer_bytes,
    }
}

fn options() -> ImportOptions {
    ImportOptions {
        accelerator: None,
        known_accelerators: vec!["H100_SXM".into(), "H200".into(), "MI300X".into()],
        base: None,
        in_place: false,
        seed: 1,
        command: "test".into(),
        date: "2026-12-03T00:00:00Z".into(),
    }
}

fn all_inputs() -> Vec<Input> {
    [
        "dgx_h100_all_reduce_perf.txt",
        "nvbandwidth_b2.txt",
        "nvbandwidth_b64.json",
        "nvbandwidth_b512.txt",
        "ib_write_bw.txt",
        "ib_read_lat.txt",
    ]
    .map(input)
    .to_vec()
}

/// The α–β model make_fixtures.py wrote the all_reduce table from (±2% noise).
fn truth(n: f64) -> f64 {
    if n <= 65536.0 {
        14e-6 + n / 30e9
    } else if n <= 8.0 * 1048576.0 {
        25e-6 + n / 120e9
    } else {
        60e-6 + n / (370e9 / 1.75)
    }
}

#[test]
fn fits_recover_the_fixture_models_and_read_back() {
    let imp = import::import(&all_inputs(), &options()).unwrap();
    let p = &imp.profile;
    assert_eq!(p.provenance.accelerator, "H100_SXM");
    assert_eq!(p.provenance.source.as_str(), "imported");
    assert_eq!(p.provenance.imports.len(), 6);
    assert!(p.provenance.imports[0].version_lines[0].contains("nccl-tests version 2.17.6"));
    let c = p.collective("allreduce", 8, 1).expect("allreduce fit");
    let h = c.holdout.as_ref().expect("held-out sizes");
    assert!(h.max_abs_rel_error < 0.05, "{h:?}");
    for n in [1e3, 1e4, 2e6, 1e8, 1e9] {
        let s = c.segment(n).unwrap();
        let pred = s.latency_s + n / s.bandwidth_bytes_per_s;
        assert!(
            (pred / truth(n) - 1.0).abs() < 0.06,
            "{n}: {pred} vs {}",
            truth(n)
        );
    }
    // Copies: β within 3% of the model's, every path present.
    let beta = |path: &str| {
        p.transfer(path)
            .unwrap()
            .segments
            .last()
            .unwrap()
            .bandwidth_bytes_per_s
    };
    assert!((beta("h2d_pinned") / 55e9 - 1.0).abs() < 0.03);
    assert!((beta("d2h_pinned") / 53e9 - 1.0).abs() < 0.03);
    assert!((beta("p2p") / 390e9 - 1.0).abs() < 0.03);
    // RDMA: the latency test's α (2.1 µs), the bandwidth test's plateau (392 Gb/s).
    let r = p.transfer("nic_rdma").unwrap();
    let last = r.segments.last().unwrap();
    assert!(
        (last.bandwidth_bytes_per_s / 49e9 - 1.0).abs() < 0.03,
        "{last:?}"
    );
    assert!(
        (r.segments[0].latency_s / 2.1e-6 - 1.0).abs() < 0.1,
        "{r:?}"
    );
    // The profile reads back through the same checks as any profile, unchanged.
    let text = p.to_toml().unwrap();
    assert_eq!(&orrery::profile::parse(&text).unwrap(), p);
}

#[test]
fn bad_inputs_are_located_errors() {
    let mut junk = input("ib_write_bw.txt");
    junk.text = "hello\nworld\n".into();
    let e = import::import(&[junk], &options()).unwrap_err();
    assert_eq!((e.line, e.column), (1, 1));
    assert!(e.message.contains("not an output"), "{e:?}");

    let mut row = input("dgx_h100_all_reduce_perf.txt");
    let first = row
        .text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("8"))
        .unwrap()
        .to_string();
    let time = first.split_whitespace().nth(5).unwrap().to_string();
    let bad = first.replacen(&format!(" {time} "), " 1x.90 ", 1);
    row.text = row.text.replacen(&first, &bad, 1);
    let e = import::import(&[row], &options()).unwrap_err();
    assert!(
        e.file
            .as_deref()
            .unwrap()
            .ends_with("dgx_h100_all_reduce_perf.txt")
    );
    assert!(e.line > 10 && e.message.contains("1x.90"), "{e:?}");

    // One nvbandwidth size gives no latency.
    let e = import::import(&[input("nvbandwidth_b64.json")], &options()).unwrap_err();
    assert!(e.message.contains("one buffer size"), "{e:?}");
    let mut plain = input("nvbandwidth_b64.txt");
    plain.buffer_bytes = None;
    let e = import::import(&[plain], &options()).unwrap_err();
    assert!(e.message.contains("FILE@SIZE"), "{e:?}");

    // perftest names no GPU: the accelerator must be given.
    let e = import::import(&[input("ib_write_bw.txt")], &options()).unwrap_err();
    assert!(e.message.contains("--accelerator"), "{e:?}");
    let mut o = options();
    o.accelerator = Some("H100_SXM".into());
    assert!(import::import(&[input("ib_write_bw.txt")], &o).is_ok());
}

#[test]
fn a_scenario_naming_the_profile_prices_its_collectives_by_it() {
    let imp = import::import(&all_inputs(), &options()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("calibration")).unwrap();
    std::fs::write(
        dir.path().join("calibration/h100_imported.toml"),
        imp.profile.to_toml().unwrap(),
    )
    .unwrap();
    let scen = dir.path().join("s.orr");
    std::fs::write(
        &scen,
        "calibration h100_imported\ncluster c {\n  node dgx_h100 x 2\n}\n",
    )
    .unwrap();
    let l = orrery::load_file(&scen).unwrap();
    let spec = l.spec.expect("scenario loads");
    let sizes = [1024.0, 1048576.0, 1073741824.0];
    let fit = imp.profile.collective("allreduce", 8, 1).unwrap();
    let (ranks, policy) = ec::place_ranks(&spec, "1x8").unwrap();
    let t = ec::table(&spec, Op::AllReduce, None, None, ranks, policy, &sizes).unwrap();
    assert!(t.measured.as_deref().unwrap().contains("h100_imported"));
    for r in &t.rows {
        assert!(r.measured);
        let s = fit.segment(r.bytes).unwrap();
        let want = s.latency_s + r.bytes / s.bandwidth_bytes_per_s;
        assert!(
            (r.result.secs / want - 1.0).abs() < 1e-9,
            "{} {}",
            r.result.secs,
            want
        );
    }
    // A fixed algorithm is priced by the model, not the measurement (which was NCCL's pick).
    let (ranks, policy) = ec::place_ranks(&spec, "1x8").unwrap();
    let m = ec::table(
        &spec,
        Op::AllReduce,
        Some(orrery::network::collective::Algorithm::Ring),
        None,
        ranks,
        policy,
        &sizes,
    )
    .unwrap();
    assert!(m.rows.iter().all(|r| !r.measured));
    // A shape the profile never measured (16 ranks on 2 nodes) is priced by the model.
    let (ranks, policy) = ec::place_ranks(&spec, "2x8").unwrap();
    let m = ec::table(&spec, Op::AllReduce, None, None, ranks, policy, &sizes).unwrap();
    assert!(m.measured.is_none());
}

/// Found by the `inputs` fuzz target: a rank line cut short names no device; the profile
/// fitted from the file must still read back (it once had an empty `provenance.device`).
#[test]
fn a_rank_line_without_a_device_still_gives_a_profile_that_reads() {
    let mut i = input("fuzz_cut_rank_line.txt");
    i.buffer_bytes = Some(2 << 20);
    let mut o = options();
    o.accelerator = Some("H100_SXM".into());
    let imported = import::import(&[i], &o).expect("the table still fits");
    let text = imported.profile.to_toml().unwrap();
    let back = orrery::profile::parse(&text).expect("reads back");
    assert!(!back.provenance.device.is_empty());
}
