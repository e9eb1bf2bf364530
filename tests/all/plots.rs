//! The plots of `orrery::plot`: each writes a decodable, non-trivial PNG and an SVG carrying its
//! title and axis labels; bad or degenerate input gives a valid plot or a clear error, never a
//! panic; nothing half-written or temporary is left behind.

use std::path::{Path, PathBuf};

use orrery::plot::*;

/// A fresh, empty folder for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-plots-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn files_in(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Checks a plot's two files and returns the decoded PNG and the SVG text.
fn check(paths: &[PathBuf], stem: &Path, texts: &[&str]) -> (image::RgbImage, String) {
    check_drawn(paths, stem, texts, 0.03)
}

/// [`check`] with the least fraction of non-white pixels given (sparse plots draw little).
fn check_drawn(
    paths: &[PathBuf],
    stem: &Path,
    texts: &[&str],
    min_drawn: f64,
) -> (image::RgbImage, String) {
    let png = PathBuf::from(format!("{}.png", stem.display()));
    let svg = PathBuf::from(format!("{}.svg", stem.display()));
    assert_eq!(paths, [png.clone(), svg.clone()]);
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let img = image::load_from_memory(&bytes).unwrap().to_rgb8();
    assert!(
        img.width() >= 800 && img.height() >= 400,
        "{:?}",
        img.dimensions()
    );
    let non_white = img.pixels().filter(|p| p.0 != [255, 255, 255]).count();
    let frac = non_white as f64 / (img.width() * img.height()) as f64;
    assert!(
        frac > min_drawn,
        "only {:.1}% of the PNG is drawn",
        frac * 100.0
    );
    let colours: std::collections::HashSet<[u8; 3]> = img.pixels().map(|p| p.0).collect();
    assert!(colours.len() > 20, "only {} colours", colours.len());
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.trim_start().starts_with("<svg"), "not an SVG");
    for t in texts {
        assert!(text.contains(t), "SVG lacks {t:?}");
    }
    let dir = stem.parent().unwrap();
    let temps: Vec<_> = files_in(dir)
        .into_iter()
        .filter(|f| f.contains(".tmp"))
        .collect();
    assert!(temps.is_empty(), "temporary files left: {temps:?}");
    (img, text)
}

/// Whether some `<text>` element of the SVG reads exactly `t`.
fn svg_has_text(svg: &str, t: &str) -> bool {
    svg.split("</text>")
        .filter_map(|chunk| chunk.rsplit_once('>'))
        .any(|(_, body)| body.trim() == t)
}

fn has_colour(img: &image::RgbImage, c: [u8; 3]) -> bool {
    img.pixels().any(|p| p.0 == c)
}

fn rows(n: usize) -> Vec<TimelineRow> {
    (0..n)
        .map(|i| TimelineRow {
            label: format!("r0.n{} gpu{:03}", i / 8, i),
            spans: vec![
                Span {
                    start: i as f64,
                    end: 20.0 + i as f64,
                    kind: SpanKind::Compute,
                },
                Span {
                    start: 25.0 + i as f64,
                    end: 30.0 + i as f64,
                    kind: SpanKind::Communication,
                },
                Span {
                    start: 40.0,
                    end: 45.0,
                    kind: SpanKind::Checkpoint,
                },
                Span {
                    start: 60.0,
                    end: 70.0,
                    kind: if i % 3 == 0 {
                        SpanKind::Failed
                    } else {
                        SpanKind::Compute
                    },
                },
            ],
        })
        .collect()
}

#[test]
fn timeline_shows_every_kind_with_legend_and_labels() {
    let d = dir("timeline");
    let stem = d.join("timeline");
    let title = "Device timeline, quickstart seed 1";
    let paths = timeline(&stem, title, &rows(12), 100.0).unwrap();
    let (img, _) = check(
        &paths,
        &stem,
        &[
            title,
            "time (s)",
            "device",
            "r0.n1 gpu008",
            "compute",
            "communication",
            "checkpoint",
            "failed",
            "idle",
        ],
    );
    for c in [[0, 114, 178], [230, 159, 0], [0, 158, 115], [200, 30, 30]] {
        assert!(has_colour(&img, c), "span colour {c:?} missing");
    }
    assert_eq!(files_in(&d), ["timeline.png", "timeline.svg"]);
}

#[test]
fn timeline_caps_rows_and_says_so() {
    let d = dir("timeline-cap");
    let stem = d.join("t");
    let paths = timeline(&stem, "Big cluster", &rows(100), 0.0).unwrap();
    let (img, svg) = check(
        &paths,
        &stem,
        &["Big cluster (first 64 of 100 devices)", "gpu063"],
    );
    assert!(!svg.contains("gpu064"), "row 65 drawn");
    assert!(img.height() > 1200, "64 rows need a tall image");
}

#[test]
fn timeline_long_runs_are_in_hours() {
    let d = dir("timeline-hours");
    let stem = d.join("t");
    let rows = vec![TimelineRow {
        label: "r0.n0 gpu0".into(),
        spans: vec![Span {
            start: 0.0,
            end: 5.0 * 3600.0,
            kind: SpanKind::Compute,
        }],
    }];
    let paths = timeline(&stem, "A long run", &rows, 6.0 * 3600.0).unwrap();
    check(&paths, &stem, &["time (h)"]);
}

#[test]
fn timeline_degenerate_input_plots_or_errors_clearly() {
    let d = dir("timeline-bad");
    // Idle devices, no end time: a valid (empty) chart.
    let idle = vec![TimelineRow {
        label: "r0.n0 gpu0".into(),
        spans: vec![],
    }];
    let stem = d.join("idle");
    let paths = timeline(&stem, "Idle", &idle, f64::NAN).unwrap();
    check(&paths, &stem, &["Idle", "r0.n0 gpu0"]);
    // A zero-length span is fine too.
    let zero = vec![TimelineRow {
        label: "x".into(),
        spans: vec![Span {
            start: 3.0,
            end: 3.0,
            kind: SpanKind::Failed,
        }],
    }];
    let stem = d.join("zero");
    timeline(&stem, "Zero", &zero, 0.0).unwrap();

    let e = timeline(&d.join("none"), "x", &[], 10.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no devices"), "{e}");
    let mut bad = rows(1);
    bad[0].spans[1].end = f64::NAN;
    let e = timeline(&d.join("nan"), "x", &bad, 10.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("non-finite") && e.contains("gpu000"), "{e}");
    let mut bad = rows(1);
    bad[0].spans[0].end = -1.0;
    let e = timeline(&d.join("rev"), "x", &bad, 10.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("before it starts"), "{e}");
    // Errors write nothing.
    assert_eq!(
        files_in(&d),
        ["idle.png", "idle.svg", "zero.png", "zero.svg"]
    );
}

#[test]
fn utilization_draws_step_lines_per_class() {
    let d = dir("util");
    let stem = d.join("util");
    let series = vec![
        UtilSeries {
            label: "H100_SXM".into(),
            points: (0..50)
                .map(|i| (i as f64 * 10.0, (i % 7) as f64 / 7.0))
                .collect(),
            dashed: false,
        },
        UtilSeries {
            label: "TPU_v5e".into(),
            points: vec![(250.0, 1.0), (0.0, 0.25), (400.0, 0.0)],
            dashed: false,
        },
    ];
    let paths = utilization(&stem, "Utilization by device class", &series, 0.0).unwrap();
    let (img, _) = check(
        &paths,
        &stem,
        &[
            "Utilization by device class",
            "utilization (%)",
            "time (min)",
            "H100_SXM",
            "TPU_v5e",
        ],
    );
    assert!(has_colour(&img, [0, 114, 178]) && has_colour(&img, [230, 159, 0]));

    let one = [UtilSeries {
        label: "only".into(),
        points: vec![(5.0, 0.5)],
        dashed: false,
    }];
    utilization(&d.join("one"), "One point", &one, f64::NAN).unwrap();
    let e = utilization(&d.join("none"), "x", &[], 1.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no data"), "{e}");
    let over = [UtilSeries {
        label: "bad".into(),
        points: vec![(1.0, 1.5)],
        dashed: false,
    }];
    let e = utilization(&d.join("over"), "x", &over, 1.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("outside 0..1"), "{e}");
    let nan = [UtilSeries {
        label: "bad".into(),
        points: vec![(f64::INFINITY, 0.5)],
        dashed: false,
    }];
    assert!(utilization(&d.join("nan"), "x", &nan, 1.0).is_err());
}

#[test]
fn the_utilization_axis_spans_the_whole_run() {
    // Devices allocated at 0 and never freed: one point. The axis must still run to the end
    // of the 3,600 s run (it used to stop at 1 s), in minutes, with the dashed series drawn.
    let d = dir("util_axis");
    let series = [
        UtilSeries {
            label: "H100 (8 devices): busy 75.0 %".into(),
            points: vec![(0.0, 0.75)],
            dashed: false,
        },
        UtilSeries {
            label: "allocated 100.0 % (dashed)".into(),
            points: vec![(0.0, 1.0)],
            dashed: true,
        },
    ];
    let stem = d.join("hour");
    let paths = utilization(&stem, "One hour", &series, 3600.0).unwrap();
    let (_, svg) = check(&paths, &stem, &["time (min)", "(dashed)"]);
    assert!(!svg.contains("time (s)"));
    // Text labels: title, legend, axis descriptions, the y ticks (0..100 %), then the x
    // ticks, which must end at 60 min.
    let lines: Vec<&str> = svg.lines().map(str::trim).collect();
    let texts: Vec<&str> = lines
        .windows(2)
        .filter(|w| w[0].starts_with("<text"))
        .map(|w| w[1])
        .collect();
    assert_eq!(texts.last(), Some(&"60"), "{texts:?}");
    // Without an end, the latest point bounds the axis: 0..1 s for a single point at 0.
    let stem = d.join("open");
    let paths = utilization(&stem, "Open", &series, f64::NAN).unwrap();
    check(&paths, &stem, &["time (s)"]);
}

fn long_tail(n: usize, seed: u64) -> Vec<f64> {
    // Deterministic heavy tail: most samples near 1 ms, a few up to seconds.
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = ((x >> 11) as f64 / (1u64 << 53) as f64).max(1e-9);
            1.0 / u.powf(1.2)
        })
        .collect()
}

#[test]
fn cdf_uses_log_scale_for_long_tails_only() {
    let d = dir("cdf");
    let stem = d.join("cdf");
    let sets = vec![
        SampleSet {
            whole: None,
            label: "object store".into(),
            values: long_tail(20_000, 1),
        },
        SampleSet {
            whole: None,
            label: "nccl".into(),
            values: long_tail(5_000, 2).iter().map(|v| v / 3.0).collect(),
        },
    ];
    let paths = cdf(&stem, "Task latency", "task latency", "ms", &sets).unwrap();
    let (img, _) = check(
        &paths,
        &stem,
        &[
            "Task latency",
            "task latency (ms, log scale)",
            "fraction of samples",
            "object store (n=20000",
            "nccl (n=5000",
        ],
    );
    assert!(has_colour(&img, [0, 114, 178]));

    let stem = d.join("narrow");
    let narrow = [SampleSet {
        whole: None,
        label: "steady".into(),
        values: (0..100).map(|i| 10.0 + i as f64 * 0.1).collect(),
    }];
    let paths = cdf(&stem, "Narrow", "step time", "s", &narrow).unwrap();
    let (_, svg) = check(&paths, &stem, &["step time (s)"]);
    assert!(!svg.contains("log scale"));
}

#[test]
fn cdf_degenerate_input_plots_or_errors_clearly() {
    let d = dir("cdf-bad");
    let one = [SampleSet {
        whole: None,
        label: "one".into(),
        values: vec![4.2],
    }];
    let stem = d.join("one");
    check(
        &cdf(&stem, "One sample", "latency", "s", &one).unwrap(),
        &stem,
        &["One sample", "one (n=1"],
    );
    let same = [
        SampleSet {
            whole: None,
            label: "same".into(),
            values: vec![0.0; 10],
        },
        SampleSet {
            whole: None,
            label: "empty".into(),
            values: vec![],
        },
    ];
    let stem = d.join("same");
    check(
        &cdf(&stem, "All equal", "latency", "s", &same).unwrap(),
        &stem,
        &["empty (no samples)"],
    );
    let e = cdf(&d.join("none"), "x", "latency", "s", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("no samples"), "{e}");
    let nan = [SampleSet {
        whole: None,
        label: "nan".into(),
        values: vec![1.0, f64::NAN],
    }];
    let e = cdf(&d.join("nan"), "x", "latency", "s", &nan)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a finite number"), "{e}");
}

fn metric(name: &str, unit: &str, scale: f64) -> MetricBars {
    MetricBars {
        name: name.into(),
        unit: unit.into(),
        bars: ["ray_default", "spread", "topology_aware"]
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let v = scale * (1.0 + i as f64 * 0.3);
                Bar {
                    group: g.to_string(),
                    value: v,
                    ci: if i == 2 {
                        None
                    } else {
                        Some((v * 0.9, v * 1.1))
                    },
                }
            })
            .collect(),
        missing: vec![],
    }
}

#[test]
fn comparison_draws_small_multiples_with_intervals() {
    let d = dir("bars");
    let stem = d.join("bars");
    let metrics = vec![
        metric("throughput", "tasks/s", 120.0),
        metric("makespan", "s", 3600.0),
        metric("cost", "$", 42.5),
        metric("energy", "kWh", 310.0),
        metric("perf/$", "tasks per $", 2.8),
        metric("perf/W", "tasks/s per kW", 0.4),
    ];
    let paths = comparison(
        &stem,
        "Placement policies",
        "95% CI over 20 seeds",
        &metrics,
    )
    .unwrap();
    let (img, _) = check(
        &paths,
        &stem,
        &[
            "Placement policies",
            "95% CI over 20 seeds",
            "throughput (tasks/s)",
            "cost ($)",
            "energy (kWh)",
            "perf/W (tasks/s per kW)",
            "topology_aware",
        ],
    );
    assert!(
        has_colour(&img, [0, 158, 115]),
        "third group colour missing"
    );

    let stem = d.join("single");
    let single = vec![
        MetricBars {
            name: "makespan".into(),
            unit: "h".into(),
            bars: vec![Bar {
                group: "only".into(),
                value: 0.0,
                ci: Some((0.0, 0.0)),
            }],
            missing: vec![],
        },
        MetricBars {
            name: "cost".into(),
            unit: "$".into(),
            bars: vec![],
            missing: vec![],
        },
    ];
    check_drawn(
        &comparison(&stem, "Degenerate", "CI", &single).unwrap(),
        &stem,
        &["no data", "makespan (h)"],
        0.002,
    );

    let e = comparison(&d.join("none"), "x", "CI", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("no bars"), "{e}");
    let mut bad = metric("throughput", "tasks/s", 1.0);
    bad.bars[0].ci = Some((2.0, 3.0));
    let e = comparison(&d.join("bad"), "x", "CI", &[bad])
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not contain"), "{e}");
    let mut nan = metric("throughput", "tasks/s", 1.0);
    nan.bars[1].value = f64::NAN;
    assert!(comparison(&d.join("nan"), "x", "CI", &[nan]).is_err());
}

#[test]
fn drill_shows_recovery_and_lost_work() {
    let d = dir("drill");
    let stem = d.join("drill");
    let seeds: Vec<DrillSeed> = (1..=10)
        .map(|s| DrillSeed {
            seed: s,
            recoveries: vec![
                Recovery {
                    failure: 100.0 * s as f64,
                    detected: Some(100.0 * s as f64 + 30.0),
                    recovered: Some(100.0 * s as f64 + 200.0),
                },
                Recovery {
                    failure: 1500.0,
                    detected: if s == 3 { None } else { Some(1510.0) },
                    recovered: if s % 4 == 0 || s == 3 {
                        None
                    } else {
                        Some(1700.0)
                    },
                },
            ],
            lost_work: 0.5 * s as f64,
        })
        .collect();
    let paths = drill(&stem, "Node-loss drill", &seeds, 2000.0, "GPU·h").unwrap();
    let (img, _) = check(
        &paths,
        &stem,
        &[
            "Node-loss drill",
            "recovery timeline",
            "lost work per seed",
            "lost work (GPU·h)",
            "time (min)",
            "seed 10",
            "not recovered by the end",
        ],
    );
    for c in [[230, 159, 0], [200, 30, 30], [0, 114, 178]] {
        assert!(has_colour(&img, c), "colour {c:?} missing");
    }
    let none = [DrillSeed {
        seed: 7,
        recoveries: vec![],
        lost_work: 0.0,
    }];
    let stem = d.join("quiet");
    check(
        &drill(&stem, "No failures", &none, 0.0, "s").unwrap(),
        &stem,
        &["seed 7"],
    );
    assert!(drill(&d.join("e"), "x", &[], 10.0, "s").is_err());
    let early = [DrillSeed {
        seed: 1,
        recoveries: vec![Recovery {
            failure: 10.0,
            detected: Some(5.0),
            recovered: None,
        }],
        lost_work: 1.0,
    }];
    let e = drill(&d.join("early"), "x", &early, 10.0, "s")
        .unwrap_err()
        .to_string();
    assert!(e.contains("detected before"), "{e}");
}

#[test]
fn transports_speedup_and_breakdown() {
    let d = dir("transports");
    let stem = d.join("speedup");
    let sizes: Vec<f64> = (12..=30).step_by(2).map(|p| 2f64.powi(p)).collect();
    let curves = vec![
        TransportCurve {
            transport: "nccl".into(),
            points: sizes.iter().map(|&s| (s, 0.5 + s.log2() / 4.0)).collect(),
        },
        TransportCurve {
            transport: "gpudirect_rdma".into(),
            points: sizes.iter().map(|&s| (s, 1.0 + s.log2())).collect(),
        },
    ];
    let paths =
        transport_speedup(&stem, "Transports vs object store", "object_store", &curves).unwrap();
    let (img, _) = check(
        &paths,
        &stem,
        &[
            "Transports vs object store",
            "transfer size (bytes, log scale",
            "speedup over object_store (×)",
            "nccl",
            "gpudirect_rdma",
            "10 kB",
            "1 GB",
        ],
    );
    assert!(has_colour(&img, [230, 159, 0]));
    let e = transport_speedup(&d.join("z"), "x", "b", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("no points"), "{e}");
    let zero = [TransportCurve {
        transport: "tcp".into(),
        points: vec![(0.0, 1.0)],
    }];
    let e = transport_speedup(&d.join("z"), "x", "b", &zero)
        .unwrap_err()
        .to_string();
    assert!(e.contains("positive"), "{e}");
    let one = [TransportCurve {
        transport: "tcp".into(),
        points: vec![(4096.0, 1.0)],
    }];
    transport_speedup(&d.join("one"), "One point", "b", &one).unwrap();

    let stem = d.join("breakdown");
    let rows = vec![
        TransportBreakdown {
            transport: "object_store".into(),
            latency: 50e-6,
            overhead: 200e-6,
            staging: 1.2e-3,
            bandwidth: 2.0e-3,
        },
        TransportBreakdown {
            transport: "nccl".into(),
            latency: 10e-6,
            overhead: 30e-6,
            staging: 0.0,
            bandwidth: 0.9e-3,
        },
    ];
    let paths = transport_breakdown(&stem, "Where 64 MiB goes", 64.0 * 1048576.0, &rows).unwrap();
    let (img, _) = check(
        &paths,
        &stem,
        &[
            "Where 64 MiB goes (64 MiB transfer)",
            "transfer time (ms)",
            "latency",
            "overhead",
            "staging",
            "bandwidth",
        ],
    );
    for c in [[0, 114, 178], [230, 159, 0], [0, 158, 115], [213, 94, 0]] {
        assert!(has_colour(&img, c), "component colour {c:?} missing");
    }
    let zeros = [TransportBreakdown {
        transport: "free".into(),
        latency: 0.0,
        overhead: 0.0,
        staging: 0.0,
        bandwidth: 0.0,
    }];
    transport_breakdown(&d.join("zeros"), "Zero", 0.0, &zeros).unwrap();
    let mut neg = rows.clone();
    neg[1].staging = -1.0;
    let e = transport_breakdown(&d.join("neg"), "x", 1.0, &neg)
        .unwrap_err()
        .to_string();
    assert!(e.contains("non-negative"), "{e}");
    assert!(transport_breakdown(&d.join("none"), "x", 1.0, &[]).is_err());
}

#[test]
fn heatmap_annotates_cells_and_scale() {
    let d = dir("heatmap");
    let stem = d.join("sweep");
    let map = Heatmap {
        x_name: "batch size (samples)".into(),
        x_values: ["8", "16", "32", "64", "128"].map(String::from).to_vec(),
        y_name: "nodes".into(),
        y_values: ["1", "2", "4", "8"].map(String::from).to_vec(),
        values: (0..4)
            .map(|j| {
                (0..5)
                    .map(|i| {
                        if i == 4 && j == 3 {
                            f64::NAN
                        } else {
                            (i * 100 + j * 37) as f64
                        }
                    })
                    .collect()
            })
            .collect(),
        value_name: "throughput (samples/s)".into(),
    };
    let paths = heatmap(&stem, "Throughput sweep", &map).unwrap();
    let (img, _) = check(
        &paths,
        &stem,
        &[
            "Throughput sweep",
            "batch size (samples)",
            "nodes",
            "throughput (samples/s)",
            "n/a",
        ],
    );
    let (img, svg) = (img, std::fs::read_to_string(&paths[1]).unwrap());
    assert!(
        svg_has_text(&svg, "474") && svg_has_text(&svg, "0"),
        "cell values not written"
    );
    assert!(has_colour(&img, [200, 200, 200]), "missing cell not grey");
    assert!(
        has_colour(&img, [68, 1, 84]),
        "lowest value not dark purple"
    );

    let one = Heatmap {
        x_values: vec!["a".into()],
        y_values: vec!["b".into()],
        values: vec![vec![3.0]],
        ..map.clone()
    };
    let stem = d.join("one");
    let (_, svg) = check(&heatmap(&stem, "One cell", &one).unwrap(), &stem, &[]);
    assert!(svg_has_text(&svg, "3"), "cell value not written");
    let mut ragged = map.clone();
    ragged.values[2].pop();
    let e = heatmap(&d.join("ragged"), "x", &ragged)
        .unwrap_err()
        .to_string();
    assert!(e.contains("row 2"), "{e}");
    let empty = Heatmap {
        x_values: vec![],
        values: vec![vec![]; 4],
        ..map.clone()
    };
    assert!(heatmap(&d.join("empty"), "x", &empty).is_err());
}

#[test]
fn missing_folders_are_created_and_impossible_ones_reported() {
    let d = dir("folders");
    let stem = d.join("a/b/c/plot.v2");
    let paths = utilization(
        &stem,
        "Nested",
        &[UtilSeries {
            label: "x".into(),
            points: vec![(0.0, 0.2), (1.0, 0.8)],
            dashed: false,
        }],
        1.0,
    )
    .unwrap();
    check(&paths, &stem, &["Nested"]);

    std::fs::write(d.join("file"), b"not a folder").unwrap();
    let e = utilization(
        &d.join("file/plot"),
        "x",
        &[UtilSeries {
            label: "x".into(),
            points: vec![(0.0, 0.2)],
            dashed: false,
        }],
        1.0,
    )
    .unwrap_err();
    // A file that cannot be written is a write error (the command fails), not a plot its
    // data cannot make (the report notes it).
    assert!(
        matches!(&e, orrery::plot::PlotError::Write(m) if m.contains("cannot create folder")),
        "{e}"
    );
    let e = cdf(
        Path::new(""),
        "x",
        "l",
        "s",
        &[SampleSet {
            whole: None,
            label: "a".into(),
            values: vec![1.0],
        }],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no file name"), "{e}");
}

#[test]
fn rewriting_a_plot_replaces_it_whole() {
    let d = dir("rewrite");
    let stem = d.join("p");
    let data = |label: &str| {
        vec![SampleSet {
            whole: None,
            label: label.into(),
            values: vec![1.0, 2.0, 3.0],
        }]
    };
    cdf(&stem, "First", "latency", "s", &data("first")).unwrap();
    let paths = cdf(&stem, "Second", "latency", "s", &data("second")).unwrap();
    let (_, svg) = check(&paths, &stem, &["Second"]);
    assert!(!svg.contains("First"));
    assert_eq!(files_in(&d), ["p.png", "p.svg"]);
}

/// A run keeps at most 4,096 samples per metric for drawing; the legend states the whole set's
/// size and exact quantiles (given with the samples), and how many were drawn.
#[test]
fn cdf_legend_counts_every_sample_not_only_those_drawn() {
    let d = dir("cdf-whole");
    let stem = d.join("whole");
    let sets = [SampleSet {
        whole: Some(orrery::plot::Whole {
            count: 72_058,
            p50: 0.25,
            p99: 1.5,
        }),
        label: "chat".into(),
        values: (0..4096).map(|i| 0.1 + i as f64 * 1e-4).collect(),
    }];
    let paths = cdf(&stem, "Latency", "latency", "s", &sets).unwrap();
    let (_, svg) = check(&paths, &stem, &["chat (n=72058", "4096 drawn"]);
    assert!(
        !svg.contains("n=4096"),
        "the legend counts the drawn samples"
    );
}

#[test]
fn binned_utilization_keeps_every_segment() {
    // A level that never changes, recorded at 5,000 irregular instants (every training step
    // records one), must draw as that level in every bin: a segment starting on a bin edge
    // once lost the rest of its area and drew a dip to 0 that the data did not have.
    let t_end = 4471.010877318;
    let mut pts = vec![(0.0, 64.0)];
    let mut t = 1.849428244;
    while t < t_end {
        pts.push((t, 64.0));
        t += 0.891 + (pts.len() % 7) as f64 * 0.1;
    }
    // Points exactly on bin edges too.
    let res = t_end / (orrery::outputs::run::UTIL_POINTS / 2) as f64;
    pts.push((res * 700.0, 64.0));
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(pts.len() > orrery::outputs::run::UTIL_POINTS);
    let drawn = orrery::outputs::run::drawn_steps(&pts, t_end);
    assert_eq!(drawn.len(), orrery::outputs::run::UTIL_POINTS / 2);
    for (t, v) in drawn {
        assert!((v - 64.0).abs() < 1e-6, "bin at {t} s draws {v}");
    }
}
