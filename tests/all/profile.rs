//! Calibration profiles: the shipped ones parse and say where every figure comes from, a
//! profile survives TOML serialize → parse unchanged, and bad profiles (missing field, wrong
//! type, newer schema, figures that contradict themselves, unknown names) are errors that
//! name the file, line and column, never panics.

use orrery::profile::schema::{
    ComputeFit, LaunchFit, MemoryFit, PredictionCheck, Provenance, Segment, TransferPath, VectorFit,
};
use orrery::profile::{Profile, SCHEMA_VERSION, Source, parse};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn shipped(name: &str) -> String {
    std::fs::read_to_string(format!("calibration/{name}.toml")).unwrap()
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// Line number of the first line of `text` that starts with `prefix`.
fn line_starting(text: &str, prefix: &str) -> usize {
    text.lines().position(|l| l.starts_with(prefix)).unwrap() + 1
}

/// A folder with `calibration/NAME.toml` files and a scenario, for loading from disk.
fn project(tag: &str, profiles: &[(&str, &str)], scenario: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("orrery-profile-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("calibration")).unwrap();
    for (name, text) in profiles {
        std::fs::write(dir.join("calibration").join(format!("{name}.toml")), text).unwrap();
    }
    let s = dir.join("s.orr");
    std::fs::write(&s, scenario).unwrap();
    s
}

/// Rendered diagnostics of a scenario on disk that must fail.
fn errs(path: &Path) -> String {
    let l = orrery::load_file(path).unwrap();
    assert!(l.has_errors(), "expected errors loading {}", path.display());
    l.render(false)
}

#[test]
fn shipped_profiles_parse_and_source_every_figure() {
    let mut accelerators = Vec::new();
    for e in std::fs::read_dir("calibration").unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let prof = parse(&text).unwrap_or_else(|e| panic!("{}: {e:?}", p.display()));
        // Version 1 profiles (before `check`) load unchanged.
        assert!((1..=SCHEMA_VERSION).contains(&prof.schema_version));
        // Each says what it is, in the data and at the top of the file: measured ones (written
        // by `orrery calibrate`) keep their raw medians; the others are datasheet-derived.
        if prof.provenance.source == Source::Measured {
            assert!(
                text.starts_with("# Measured by `orrery calibrate"),
                "{}",
                p.display()
            );
            assert!(prof.transfer.iter().all(|t| !t.medians.is_empty()));
            continue;
        }
        assert_eq!(prof.provenance.source, Source::Datasheet, "{}", p.display());
        // Hand-written: from datasheets and published measurements, or from a published
        // model's figures (Calculon's A100 system file).
        assert!(
            text.starts_with("# DATASHEET-DERIVED") || text.starts_with("# PUBLISHED-MODEL"),
            "{}",
            p.display()
        );
        let mut sources: Vec<&str> = prof.compute.values().map(|c| c.source.as_str()).collect();
        sources.extend(prof.vector.values().map(|v| v.source.as_str()));
        sources.extend(prof.memory.as_ref().map(|m| m.source.as_str()));
        sources.extend(prof.launch.as_ref().map(|l| l.source.as_str()));
        sources.extend(prof.transfer.iter().map(|t| t.source.as_str()));
        assert!(sources.iter().all(|s| s.len() > 20), "{}", p.display());
        accelerators.push(prof.provenance.accelerator.clone());
    }
    accelerators.sort();
    assert_eq!(
        accelerators,
        [
            "A100_80GB",
            "A100_80GB",
            "B200",
            "H100_SXM",
            "H200",
            "MI300X"
        ],
        "the hand-written profiles"
    );
    // Each efficiency lies in its interval, and where the achieved rate is given it is the
    // efficiency times the peak (the figure the source published).
    for name in [
        "a100_80gb_datasheet",
        "b200_datasheet",
        "mi300x_datasheet",
        "h100_sxm_datasheet",
    ] {
        let prof = parse(&shipped(name)).unwrap();
        for (dtype, c) in &prof.compute {
            assert!(
                c.efficiency_ci95[0] <= c.efficiency && c.efficiency <= c.efficiency_ci95[1],
                "{name} {dtype}"
            );
            if let Some(a) = c.achieved_flops {
                assert!(
                    (a / c.peak_flops - c.efficiency).abs() < 0.002,
                    "{name} {dtype}"
                );
            }
        }
    }
    // The H200 bf16 efficiency is the published 770-800 of 989 TFLOPS.
    let h200 = parse(&shipped("h200_datasheet")).unwrap();
    let bf16 = &h200.compute["bf16"];
    assert!(bf16.efficiency_ci95[0] >= 770.0 / 989.0 - 1e-3);
    assert!(bf16.efficiency_ci95[1] <= 800.0 / 989.0 + 1e-3);
    // Transfer paths answer sizes: latency + bytes / bandwidth.
    let p2p = h200.transfer("p2p").unwrap();
    assert_eq!(p2p.secs(370e9), Some(2.05e-6 + 1.0));
}

fn measured() -> Profile {
    Profile {
        schema_version: SCHEMA_VERSION,
        provenance: Provenance {
            source: Source::Measured,
            accelerator: "H200".into(),
            device: "NVIDIA H200".into(),
            driver: "580.65.06".into(),
            host: "node-17".into(),
            date: "2026-11-29T10:00:00Z".into(),
            orrery_version: "0.1.0".into(),
            command: "orrery calibrate --out calibration/h200_node17.toml".into(),
            seed: 7,
            notes: Some("quoted \"text\" and unicode µs survive".into()),
            imports: Vec::new(),
        },
        compute: BTreeMap::from([
            (
                "bf16".to_string(),
                ComputeFit {
                    peak_flops: 989e12,
                    efficiency: 0.8,
                    efficiency_ci95: [0.79, 0.81],
                    achieved_flops: Some(791.2e12),
                    efficiency_by_size: vec![[1e11, 0.8], [0.0, 0.2]],
                    source: "cuBLAS GEMM 8192^3, median of 50".into(),
                },
            ),
            (
                "fp8".to_string(),
                ComputeFit {
                    peak_flops: 1979e12,
                    efficiency: 0.61,
                    efficiency_ci95: [0.6, 0.62],
                    achieved_flops: None,
                    efficiency_by_size: Vec::new(),
                    source: "cuBLASLt fp8 GEMM".into(),
                },
            ),
        ]),
        memory: Some(MemoryFit {
            peak_bytes_per_s: 4.8e12,
            efficiency: 0.86,
            efficiency_ci95: [0.855, 0.865],
            achieved_bytes_per_s: Some(4.128e12),
            efficiency_by_size: vec![[1e8, 0.86], [0.0, 0.3]],
            source: "triad kernel".into(),
        }),
        launch: Some(LaunchFit {
            overhead_s: 2.5e-6,
            overhead_ci95: [2.4e-6, 2.7e-6],
            source: "empty kernel, events".into(),
        }),
        vector: BTreeMap::from([(
            "bf16".to_string(),
            VectorFit {
                peak_flops: 134e12,
                efficiency_by_size: vec![[1e9, 0.9], [0.0, 0.1]],
                source: "elementwise kernels".into(),
            },
        )]),
        transfer: vec![TransferPath {
            path: "h2d_pinned".into(),
            source: "cuMemcpyAsync, 512 MiB buffers".into(),
            segments: vec![
                Segment {
                    min_bytes: 0,
                    max_bytes: Some(65536),
                    latency_s: 8e-6,
                    latency_ci95: [7.5e-6, 8.5e-6],
                    bandwidth_bytes_per_s: 20e9,
                    bandwidth_ci95: [19e9, 21e9],
                    r2: Some(0.991),
                },
                Segment {
                    min_bytes: 65536,
                    max_bytes: None,
                    latency_s: 12e-6,
                    latency_ci95: [10e-6, 14e-6],
                    bandwidth_bytes_per_s: 52.3e9,
                    bandwidth_ci95: [52e9, 52.6e9],
                    r2: Some(0.9998),
                },
            ],
            medians: vec![[1024.0, 8.1e-6], [1048576.0, 3.2e-5], [536870912.0, 0.0103]],
            check: Some(PredictionCheck {
                copies: 2,
                bytes: 6144 + 1572864,
                sizes_bytes: vec![1572864, 6144],
                predicted_s: 1e-4,
                measured_s: 1.25e-4,
                rel_error: -0.2,
                repetitions: 31,
                date: "2026-11-29T10:05:00Z".into(),
                method: "a chain of held-out sizes, median of 31".into(),
            }),
            holdout: None,
        }],
        collective: Vec::new(),
        p2p_matrix: vec![orrery::profile::schema::PeerCopy {
            from: 0,
            to: 1,
            bytes: 256 << 20,
            bandwidth_bytes_per_s: 3.9e11,
            peer_access: true,
            link: "nvlink".into(),
        }],
        validation: vec![orrery::profile::schema::ValidationRecord {
            date: "2026-11-29T11:00:00Z".into(),
            host: "node-17".into(),
            node_type: "hgx_h200".into(),
            scenario: "cluster.orr".into(),
            orrery_version: "0.1.0".into(),
            matched: 30,
            mismatches: 0,
            unknown: 2,
            devices: vec!["NVIDIA H200".into(); 8],
        }],
    }
}

#[test]
fn a_profile_round_trips_through_toml() {
    let p = measured();
    let text = p.to_toml().unwrap();
    let back = parse(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    assert_eq!(back, p, "{text}");
    // And a shipped one, written back out.
    let h = parse(&shipped("h100_sxm_datasheet")).unwrap();
    assert_eq!(parse(&h.to_toml().unwrap()).unwrap(), h);
    // The piecewise fit picks the segment holding the size.
    let t = p.transfer("h2d_pinned").unwrap();
    assert_eq!(t.secs(1000.0), Some(8e-6 + 1000.0 / 20e9));
    assert_eq!(t.secs(1e9), Some(12e-6 + 1e9 / 52.3e9));
}

#[test]
fn a_missing_field_names_its_table() {
    let text = shipped("h200_datasheet").replace("efficiency = 0.85\n", "");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.len(), 1);
    assert!(e[0].message.contains("missing field `efficiency`"), "{e:?}");
    assert_eq!(
        line_of(&text, e[0].span.start),
        line_starting(&text, "[memory]")
    );
    // A missing schema_version is reported as such.
    let text = shipped("h200_datasheet").replace("schema_version = 1\n", "");
    let e = parse(&text).unwrap_err();
    assert!(e[0].message.contains("`schema_version`"), "{e:?}");
}

#[test]
fn a_wrong_type_points_at_the_value() {
    let text = shipped("h200_datasheet").replace("efficiency = 0.794", "efficiency = \"high\"");
    let e = parse(&text).unwrap_err();
    assert!(e[0].message.contains("invalid type: string"), "{e:?}");
    assert_eq!(&text[e[0].span.clone()], "\"high\"");
    let text = shipped("h200_datasheet").replace("seed = 0", "seed = -3");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        line_of(&text, e[0].span.start),
        line_starting(&text, "seed =")
    );
    let text = shipped("h200_datasheet").replace(
        "efficiency_ci95 = [0.779, 0.809]",
        "efficiency_ci95 = [0.779]",
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(
        line_of(&text, e[0].span.start),
        line_starting(&text, "efficiency_ci95 = [0.779]"),
        "{e:?}"
    );
}

#[test]
fn a_newer_schema_is_rejected_before_its_fields_are_read() {
    let text = shipped("h200_datasheet")
        .replace("schema_version = 1", "schema_version = 6\nnew_thing = 1");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].message
            .contains("schema version 6 is newer than this orrery supports (version 5)"),
        "{e:?}"
    );
    assert_eq!(&text[e[0].span.clone()], "6");
    for bad in [
        "schema_version = 0",
        "schema_version = \"1\"",
        "schema_version = 99999999999999999999",
    ] {
        let text = shipped("h200_datasheet").replace("schema_version = 1", bad);
        assert!(parse(&text).is_err(), "{bad}");
    }
}

#[test]
fn figures_that_contradict_themselves_are_located() {
    let base = shipped("h200_datasheet");
    let cases: &[(&str, &str, &str)] = &[
        ("efficiency = 0.794", "efficiency = 1.3", "in (0, 1]"),
        (
            "efficiency_ci95 = [0.779, 0.809]",
            "efficiency_ci95 = [0.8, 0.9]",
            "does not contain",
        ),
        (
            "latency_ci95 = [1.8e-6, 2.3e-6]",
            "latency_ci95 = [2.5e-6, 2.9e-6]",
            "[2.5e-6, 2.9e-6] does not contain its value 2.05e-6",
        ),
        ("path = \"p2p\"", "path = \"p2pp\"", "did you mean `p2p`?"),
        ("path = \"p2p\"", "path = \"d2d\"", "given twice"),
        ("[compute.bf16]", "[compute.bf61]", "unknown dtype `bf61`"),
        (
            "achieved_flops = 785e12",
            "achieved_flops = 900e12",
            "within 2%",
        ),
        (
            "bandwidth_bytes_per_s = 370e9",
            "bandwidth_bytes_per_s = 0.0",
            "greater than zero",
        ),
        ("overhead_s = 5e-6", "overhead_s = nan", "finite"),
    ];
    for (from, to, expect) in cases {
        assert!(base.contains(from), "{from}");
        let text = base.replacen(from, to, 1);
        let e = parse(&text).unwrap_err();
        assert!(
            e.iter().any(|e| e.message.contains(expect)
                || e.help.as_deref().is_some_and(|h| h.contains(expect))),
            "{to}: {e:?}"
        );
        // Located on the changed line (its table header for a changed header).
        let line = line_of(&text, base.find(from).unwrap());
        assert!(
            e.iter().any(|e| line_of(&text, e.span.start) == line),
            "{to}: expected line {line}, got {e:?}"
        );
    }
    // A measured profile needs its fit quality and raw data.
    let text = base.replace("source = \"datasheet\"", "source = \"measured\"");
    let e = parse(&text).unwrap_err();
    assert!(e.iter().any(|e| e.message.contains("needs `r2`")), "{e:?}");
    assert!(
        e.iter().any(|e| e.message.contains("raw `medians`")),
        "{e:?}"
    );
    // Size curves: sizes strictly decreasing to 0, efficiencies in (0, 1], schema 3.
    let a100 = shipped("a100_80gb_calculon");
    for (from, to, expect) in [
        (
            "[128e9, 0.95], [16e9",
            "[128e9, 0.95], [200e9",
            "below the row before",
        ),
        ("[1e6, 0.6], [0, 0.3]", "[1e6, 0.6], [1, 0.3]", "must be 0"),
        ("[1e9, 0.5], [0, 0.1]", "[1e9, 0.5], [0, 1.1]", "in (0, 1]"),
        (
            "schema_version = 3",
            "schema_version = 2",
            "needs `schema_version = 3`",
        ),
    ] {
        assert!(a100.contains(from), "{from}");
        let e = parse(&a100.replacen(from, to, 1)).unwrap_err();
        assert!(e.iter().any(|e| e.message.contains(expect)), "{to}: {e:?}");
    }
    // Segments must tile the sizes from 0.
    let mut p = measured();
    p.transfer[0].segments[1].min_bytes = 70000;
    let text = p.to_toml().unwrap();
    let e = parse(&text).unwrap_err();
    assert!(e[0].message.contains("contiguous"), "{e:?}");
    assert!(text[e[0].span.clone()].contains("70000"), "{e:?}");
}

#[test]
fn a_prediction_check_is_optional_and_its_figures_agree() {
    // A version 1 profile has no `check` and loads; so does a version 2 one without it.
    let v1 = shipped("h200_datasheet");
    assert!(v1.contains("schema_version = 1\n"));
    assert!(
        parse(&v1)
            .unwrap()
            .transfer
            .iter()
            .all(|t| t.check.is_none())
    );
    let mut p = measured();
    p.transfer[0].check = None;
    assert_eq!(parse(&p.to_toml().unwrap()).unwrap(), p);
    // A check whose figures contradict each other is an error on the field's line.
    let base = measured().to_toml().unwrap();
    let cases: &[(&str, &str, &str)] = &[
        ("copies = 2", "copies = 3", "`sizes_bytes` lists 2"),
        ("bytes = 1579008", "bytes = 1", "sums to 1579008"),
        (
            "measured_s = 0.000125",
            "measured_s = 0.0",
            "greater than zero",
        ),
        ("predicted_s = 0.0001", "predicted_s = nan", "finite"),
        (
            "rel_error = -0.2",
            "rel_error = 0.2",
            "(predicted_s − measured_s)",
        ),
        ("repetitions = 31", "repetitions = 0", "at least 1"),
        (
            "repetitions = 31",
            "repetitions = 31\nverdict = \"pass\"",
            "unknown field",
        ),
    ];
    for (from, to, expect) in cases {
        assert!(base.contains(from), "{from} in {base}");
        let text = base.replacen(from, to, 1);
        let e = parse(&text).unwrap_err();
        assert!(e.iter().any(|e| e.message.contains(expect)), "{to}: {e:?}");
        let line = line_of(&text, base.find(from).unwrap());
        let lines: Vec<usize> = e.iter().map(|e| line_of(&text, e.span.start)).collect();
        assert!(
            lines.contains(&line) || lines.contains(&(line + 1)),
            "{to}: line {line}, {e:?}"
        );
    }
    // The field is new in version 2: a version 1 profile with one is an error.
    let text = base.replacen("schema_version = 5", "schema_version = 1", 1);
    let e = parse(&text).unwrap_err();
    assert!(
        e.iter()
            .any(|e| e.message.contains("needs `schema_version = 2`")),
        "{e:?}"
    );
}

#[test]
fn broken_profiles_never_panic() {
    let text = shipped("h200_datasheet");
    let mut n = 0;
    for cut in (0..text.len())
        .step_by(3)
        .filter(|&i| text.is_char_boundary(i))
    {
        if let Err(errs) = parse(&text[..cut]) {
            for e in errs {
                assert!(
                    e.span.start <= e.span.end && e.span.end <= cut,
                    "{e:?} at {cut}"
                );
            }
            n += 1;
        }
    }
    assert!(n > 100, "truncations should mostly fail ({n})");
    // Byte-level mutations: swap a character for a troublesome one.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = (x % text.len() as u64) as usize;
        if !text.is_char_boundary(at) {
            continue;
        }
        let with =
            ["[", "]", "\"", "=", "\n", "1e999", "-", "[[", "x", "{"][(x >> 20) as usize % 10];
        let mut t = text.clone();
        t.insert_str(at, with);
        if let Err(errs) = parse(&t) {
            assert!(!errs.is_empty());
            for e in errs {
                assert!(e.span.end <= t.len(), "{e:?}");
            }
        }
    }
}

#[test]
fn a_scenario_reports_bad_profiles_at_file_line_and_column() {
    let bad = shipped("h200_datasheet").replace("efficiency = 0.794", "efficiency = \"high\"");
    let line = line_starting(&bad, "efficiency = \"high\"");
    let s = project("type", &[("bad", &bad)], "calibration bad\n");
    let out = errs(&s);
    assert!(
        out.contains(&format!(
            "bad.toml:{line}:14: invalid type: string \"high\""
        )),
        "{out}"
    );
    assert!(
        out.contains("s.orr:1:13") && out.contains("profile `bad` used here"),
        "{out}"
    );
    // The binary prints it and exits 2.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["check", s.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("bad.toml:{line}:14")), "{err}");
    // A newer profile, referenced from an accelerator block.
    let newer = shipped("h200_datasheet").replace("schema_version = 1", "schema_version = 6");
    let s = project(
        "newer",
        &[("next", &newer)],
        "accelerator my_h200 from H200 {\n  profile next\n}\n",
    );
    let out = errs(&s);
    assert!(
        out.contains("next.toml:5:18: profile schema version 6 is newer"),
        "{out}"
    );
    assert!(out.contains("s.orr:2:11"), "{out}");
}

#[test]
fn an_unknown_profile_name_suggests_the_closest() {
    let s = project(
        "unknown",
        &[("h200_node17", &shipped("h200_datasheet"))],
        "calibration h200_datashet\n",
    );
    let out = errs(&s);
    assert!(
        out.contains("s.orr:1:13: unknown calibration profile `h200_datashet`"),
        "{out}"
    );
    // Found in the current directory's calibration/ too, after the scenario's own.
    assert!(out.contains("did you mean `h200_datasheet`?"), "{out}");
    let l = orrery::load_str(
        "s.orr",
        "accelerator my from H200 {\n  profile nothing_like_it\n}\n",
    );
    let out = l.render(false);
    assert!(
        l.has_errors() && out.contains("s.orr:2:11") && out.contains("h100_sxm_datasheet"),
        "{out}"
    );
    // The scenario's own folder wins over the current directory.
    let s = project(
        "nearest",
        &[("h200_node17", &shipped("h200_datasheet"))],
        "calibration h200_node17\n",
    );
    let l = orrery::load_file(&s).unwrap();
    assert!(!l.has_errors(), "{}", l.render(false));
    assert!(l.spec.unwrap().profiles.contains_key("h200_node17"));
}

#[test]
fn a_profile_must_fit_the_scenario() {
    let other =
        shipped("h200_datasheet").replace("accelerator = \"H200\"", "accelerator = \"H2000\"");
    let s = project("fit", &[("other", &other)], "calibration other\n");
    let out = errs(&s);
    assert!(
        out.contains("s.orr:1:13: profile `other` describes accelerator `H2000`, which this scenario does not have")
            && out.contains("did you mean `H200`?"),
        "{out}"
    );
    // Two profiles for one accelerator.
    let l = orrery::load_str(
        "s.orr",
        "calibration h200_datasheet\naccelerator H200 from H200 {\n  profile h100_sxm_datasheet\n}\n",
    );
    let out = l.render(false);
    assert!(
        l.has_errors() && out.contains("s.orr:1:13: accelerator `H200` already uses calibration profile `h100_sxm_datasheet`"),
        "{out}"
    );
}

#[test]
fn run_json_and_the_header_name_the_profile() {
    let out = std::env::temp_dir().join(format!("orrery-profile-{}-run", std::process::id()));
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args([
            "run",
            "scenarios/h200_roofline.orr",
            "--out",
            out.to_str().unwrap(),
        ])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = "compute model: H200 bf16: compute calibration h200_datasheet v1, memory calibration h200_datasheet v1";
    assert!(stdout.lines().nth(1) == Some(line), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        json["header"]["model_sources"][0],
        "H200 bf16: compute calibration h200_datasheet v1, memory calibration h200_datasheet v1"
    );
}

#[test]
fn the_documented_example_is_a_valid_profile() {
    let doc = std::fs::read_to_string("calibration/README.md").unwrap();
    let start = doc.find("```toml\n").expect("a toml example") + "```toml\n".len();
    let example = &doc[start..start + doc[start..].find("```").unwrap()];
    let p = parse(example).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(p.provenance.source, Source::Measured);
    assert_eq!(p.transfer[0].segments.len(), 2);
    assert_eq!(parse(&p.to_toml().unwrap()).unwrap(), p);
}

/// The `[[p2p_matrix]]` example (schema 5), appended to the main example, reads back.
#[test]
fn the_documented_p2p_matrix_entry_is_valid() {
    let doc = std::fs::read_to_string("calibration/README.md").unwrap();
    let block = |from: usize| {
        let start = from + doc[from..].find("```toml\n").unwrap() + "```toml\n".len();
        &doc[start..start + doc[start..].find("```").unwrap()]
    };
    let example = block(0);
    let entry = block(doc.find("Version 5 adds `[[p2p_matrix]]`").unwrap());
    assert!(entry.starts_with("[[p2p_matrix]]"), "{entry}");
    let text = format!(
        "{}\n{entry}",
        example.replacen("schema_version = 4", "schema_version = 5", 1)
    );
    let p = parse(&text).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(p.p2p_matrix.len(), 1);
    assert_eq!(p.p2p_matrix[0].link, "nvlink");
    assert_eq!(p.p2p_matrix[0].bytes, 256 << 20);
}

#[test]
fn check_says_which_profile_calibrates_what() {
    let d = std::env::temp_dir().join(format!("orrery-check-cal-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("c.orr");
    std::fs::write(
        &f,
        "calibration h200_datasheet\ncalibration cpu_epyc_2vcpu\ncluster c {\n  node hgx_h200 x 1\n}\n",
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_orrery"))
        .arg("check")
        .arg(&f)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains(
            "calibration  H200: h200_datasheet (datasheet), host: cpu_epyc_2vcpu (measured)"
        ),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn schema_5_evidence_is_checked_and_needs_its_version() {
    let base = toml::to_string(&measured()).unwrap();
    assert!(parse(&base).is_ok());
    for (from, to, expect) in [
        ("from = 0\n", "from = 1\n", "joins two different devices"),
        (
            "link = \"nvlink\"",
            "link = \"carrier pigeon\"",
            "unknown link",
        ),
        (
            "bandwidth_bytes_per_s = 390000000000.0",
            "bandwidth_bytes_per_s = -1.0",
            "bandwidth_bytes_per_s",
        ),
        (
            "host = \"node-17\"\nnode_type",
            "host = \"\"\nnode_type",
            "`host`",
        ),
        (
            "matched = 30\nmismatches = 0\nunknown = 2",
            "matched = 0\nmismatches = 0\nunknown = 0",
            "at least one check",
        ),
    ] {
        assert!(base.contains(from), "{from} not in\n{base}");
        let e = parse(&base.replacen(from, to, 1)).unwrap_err();
        assert!(e.iter().any(|e| e.message.contains(expect)), "{to}: {e:?}");
    }
    let old = base.replacen("schema_version = 5", "schema_version = 4", 1);
    let e = parse(&old).unwrap_err();
    assert!(
        e.iter().any(|e| e
            .message
            .contains("`[[p2p_matrix]]` needs `schema_version = 5`")),
        "{e:?}"
    );
    assert!(
        e.iter().any(|e| e
            .message
            .contains("`[[validation]]` needs `schema_version = 5`")),
        "{e:?}"
    );
}
