//! What every command leaves in its folder: the data files, the plots (PNG and SVG, decodable
//! and not blank), a report.md whose links all resolve, the data behind the plots against
//! values worked out by hand, byte-identical reruns (and thread counts), and no temp files.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn orrery(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "orrery {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A fresh folder for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-outputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The files of the run in `dir`: what is there besides its manifest, which must list exactly
/// those (`atomic::own_folder`).
fn names(dir: &Path) -> BTreeSet<String> {
    let there: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != orrery::atomic::MANIFEST)
        .collect();
    if let Ok(m) = std::fs::read_to_string(dir.join(orrery::atomic::MANIFEST)) {
        let listed: BTreeSet<String> = m.lines().map(str::to_string).collect();
        assert_eq!(listed, there, "the manifest of {}", dir.display());
    }
    there
}

fn set(xs: &[&str]) -> BTreeSet<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

/// Every PNG decodes, is not blank (more than 20 distinct colours) and has its SVG twin; no
/// temp file is left; every link of report.md resolves to a file in the folder and every plot
/// is linked.
fn check_folder(dir: &Path) {
    let files = names(dir);
    assert!(
        !files.iter().any(|f| f.contains(".tmp")),
        "temp files left in {}: {files:?}",
        dir.display()
    );
    for f in files.iter().filter(|f| f.ends_with(".png")) {
        let img = image::open(dir.join(f))
            .unwrap_or_else(|e| panic!("{f}: {e}"))
            .to_rgb8();
        let colours: HashSet<[u8; 3]> = img.pixels().map(|p| p.0).collect();
        assert!(colours.len() > 20, "{f}: only {} colours", colours.len());
        let svg = f.replace(".png", ".svg");
        assert!(files.contains(&svg), "{f} without {svg}");
        let text = std::fs::read_to_string(dir.join(&svg)).unwrap();
        assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let mut linked = BTreeSet::new();
    for part in md.split("](").skip(1) {
        let target = &part[..part.find(')').unwrap()];
        assert!(
            files.contains(target),
            "report.md links {target}, not in {}",
            dir.display()
        );
        linked.insert(target.to_string());
    }
    for f in files
        .iter()
        .filter(|f| f.ends_with(".png") || f.ends_with(".svg"))
    {
        assert!(linked.contains(f), "report.md does not link {f}");
    }
}

fn read(dir: &Path, f: &str) -> String {
    std::fs::read_to_string(dir.join(f)).unwrap()
}

/// Every file of two folders, byte for byte.
fn same_folders(a: &Path, b: &Path) {
    assert_eq!(names(a), names(b));
    for f in names(a) {
        assert!(
            std::fs::read(a.join(&f)).unwrap() == std::fs::read(b.join(&f)).unwrap(),
            "{f} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

/// One DGX H100: two 1-GPU tasks of 10 s, then one of 5 s after them (on the first GPU,
/// right after its task).
const TINY: &str = "cluster c {\n  node dgx_h100 x 1\n}\n\nworkload w {\n  tasks t x 2 {\n    resources { GPU: 1 }\n    duration 10 s\n  }\n  tasks u x 1 after t {\n    resources { GPU: 1 }\n    duration 5 s\n  }\n}\n";

#[test]
fn run_writes_plots_report_and_the_data_behind_them() {
    let d = dir("run");
    let file = write(&d, "tiny.orr", TINY);
    let out = d.join("out");
    let o = out.display().to_string();
    orrery(&["run", &file, "--seed", "3", "--out", &o, "--trace"]);
    assert_eq!(
        names(&out),
        set(&[
            "cpu_utilization.csv",
            "links.csv",
            "llm_services.csv",
            "placement_groups.csv",
            "queueing_cdf.png",
            "queueing_cdf.svg",
            "report.md",
            "run.json",
            "services.csv",
            "tasks.csv",
            "timeline.csv",
            "timeline.png",
            "timeline.svg",
            "trace.json",
            "training.csv",
            "utilization.png",
            "utilization.svg",
            "utilization.csv",
        ])
    );
    check_folder(&out);
    // The Gantt rows: n0.d0 runs t (0-10 s) then u (10-15 s), joined; n0.d1 runs the other t.
    assert_eq!(
        read(&out, "timeline.csv"),
        "device,start_s,end_s,kind\nn0.d0,0,15,compute\nn0.d1,0,10,compute\n"
    );
    // Busy (= allocated: the tasks work all the time they hold a GPU) devices of the 8: 2
    // until 10 s, 1 until 15 s, then none; per device class, then per node type; exact rows
    // (`bin_s` 0).
    let util: Vec<String> = read(&out, "utilization.csv")
        .lines()
        .skip(1)
        .map(|l| l.splitn(4, ',').nth(3).unwrap().to_string())
        .collect();
    assert_eq!(
        util,
        [
            "device_class,H100_SXM,8,0,0,2,2",
            "device_class,H100_SXM,8,10,0,1,1",
            "device_class,H100_SXM,8,15,0,0,0",
            "node_type,dgx_h100,8,0,0,2,2",
            "node_type,dgx_h100,8,10,0,1,1",
            "node_type,dgx_h100,8,15,0,0,0",
        ]
    );

    // The report states the header and links the data, the trace and the plots.
    let md = read(&out, "report.md");
    for s in [
        "| orrery | `0.1.0` |",
        &format!("| scenario | `{file}` |"),
        "| seed | `3` |",
        "| scenario hash | `",
        "![Device timeline, 8 devices, one row each](timeline.png)",
        "(utilization.png)",
        "(queueing_cdf.png)",
        "[run.json](run.json)",
        "[utilization.csv](utilization.csv)",
        "[trace.json](trace.json)",
        "makespan 15 s",
    ] {
        assert!(md.contains(s), "report.md lacks {s:?}:\n{md}");
    }
    // Same scenario and seed: every file byte-identical, plots included.
    let again = d.join("again");
    orrery(&[
        "run",
        &file,
        "--seed",
        "3",
        "--out",
        &again.display().to_string(),
        "--trace",
    ]);
    same_folders(&out, &again);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn run_without_plots_writes_data_and_report_only() {
    let d = dir("noplots");
    let file = write(&d, "tiny.orr", TINY);
    let out = d.join("out");
    orrery(&[
        "run",
        &file,
        "--out",
        &out.display().to_string(),
        "--no-plots",
    ]);
    let files = names(&out);
    assert!(
        !files
            .iter()
            .any(|f| f.ends_with(".png") || f.ends_with(".svg"))
    );
    assert!(files.contains("report.md") && files.contains("timeline.csv"));
    check_folder(&out);
    let _ = std::fs::remove_dir_all(&d);
}

/// Two DGX H100 (n1 the head) and a checkpointed job; n0 killed at 10 s and failing at random.
const DRILL: &str = "cluster c {\n  node dgx_h100 x 2\n  head n1\n}\n\nworkload w {\n  placement_group pg strategy STRICT_PACK {\n    bundle { GPU: 8 }\n  }\n  training job on pg steps 100 {\n    compute 100 TFLOP per device bf16\n    allreduce 1 GB algo ring\n    checkpoint every 5 s size 1 GB\n  }\n}\n\nfailures fast {\n  at 10 s kill node n0\n  random node mtbf 1 min repair 30 s\n}\n\nfailures slow {\n  random node mtbf 5 min repair 30 s\n}\n";

#[test]
fn drill_writes_recovery_and_comparison_plots_independent_of_threads() {
    let d = dir("drill");
    let file = write(&d, "drill.orr", DRILL);
    let one = d.join("t1");
    let two = d.join("t2");
    for (out, threads) in [(&one, "1"), (&two, "2")] {
        orrery(&[
            "drill",
            &file,
            "--seeds",
            "3",
            "--horizon",
            "10 min",
            "--threads",
            threads,
            "--out",
            &out.display().to_string(),
        ]);
    }
    assert_eq!(
        names(&one),
        set(&[
            "comparison.png",
            "comparison.svg",
            "cost.csv",
            "drill-fast.png",
            "drill-fast.svg",
            "drill-slow.png",
            "drill-slow.svg",
            "drill.csv",
            "drill.json",
            "per_seed.csv",
            "report.md",
            "timeline.csv",
        ])
    );
    check_folder(&one);
    let md = read(&one, "report.md");
    assert!(md.contains("| seeds | `1..3` |") && md.contains("| variants | `fast, slow` |"));
    assert!(md.contains("[timeline.csv](timeline.csv)"));
    assert!(md.contains("| baselines | `no_failures` |"), "{md}");
    assert!(
        md.contains("[cost.csv](cost.csv)") && md.contains("| window |"),
        "{md}"
    );
    same_folders(&one, &two);
    let _ = std::fs::remove_dir_all(&d);
}

/// Two swept values of the node count and of the allreduce size: a 2×2 heatmap per metric.
const SWEEP: &str = "cluster c {\n  rack r[0..1] {\n    node dgx_h100 x 1\n  }\n  fabric leaf_spine oversubscription 1:1\n}\n\nworkload w {\n  placement_group pg strategy PACK {\n    bundle { GPU: 8 }\n  }\n  training llm on pg steps 5 {\n    compute 10 TFLOP per device bf16\n    allreduce 1 GB algo ring\n  }\n}\n\nexperiment grid {\n  seeds 1..2\n  sweep cluster.c.fabric.oversubscription in [1:1, 4:1]\n  sweep workload.w.training.llm.allreduce in [1 GB, 4 GB]\n  metrics makespan, cost\n}\n\nexperiment lines {\n  seeds 1..2\n  sweep workload.w.training.llm.allreduce in [1 GB, 4 GB]\n  metrics makespan\n  plot timeline, bars(makespan), cdf(makespan)\n}\n";

#[test]
fn sweep_draws_heatmaps_and_merge_writes_the_same_files() {
    let d = dir("sweep");
    let file = write(&d, "grid.orr", SWEEP);
    let full = d.join("full");
    orrery(&["sweep", &file, "--out", &full.display().to_string()]);
    assert_eq!(
        names(&full),
        set(&[
            "heatmap-cost_usd.png",
            "heatmap-cost_usd.svg",
            "heatmap-makespan_s.png",
            "heatmap-makespan_s.svg",
            "report.md",
            "runs.csv",
            "summary.csv",
            "summary.json",
        ])
    );
    check_folder(&full);
    // Shards merged: the same data, plots and report, byte for byte.
    let shards = d.join("shards");
    for i in ["0/2", "1/2"] {
        orrery(&[
            "sweep",
            &file,
            "--shard",
            i,
            "--out",
            &shards.display().to_string(),
        ]);
    }
    let merged = d.join("merged");
    orrery(&[
        "merge",
        &shards.display().to_string(),
        "--out",
        &merged.display().to_string(),
    ]);
    same_folders(&full, &merged);
    // The experiment's plot lines: a timeline of the first cell, bars and a CDF over seeds.
    let lines = d.join("lines");
    orrery(&[
        "sweep",
        &file,
        "--experiment",
        "lines",
        "--out",
        &lines.display().to_string(),
    ]);
    assert_eq!(
        names(&lines),
        set(&[
            "bars-makespan_s.png",
            "bars-makespan_s.svg",
            "cdf-makespan_s.png",
            "cdf-makespan_s.svg",
            "report.md",
            "runs.csv",
            "summary.csv",
            "summary.json",
            "timeline.png",
            "timeline.svg",
        ])
    );
    check_folder(&lines);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn heatmap_data_is_the_mean_per_pair_of_values() {
    use orrery::experiment::sweep::{RunRow, SweepHeader, summarize};
    // Three parameters; the heatmap over the first two averages over the third.
    let cells: Vec<Vec<String>> = [
        ["a1", "b1", "c1"],
        ["a1", "b1", "c2"],
        ["a1", "b2", "c1"],
        ["a1", "b2", "c2"],
        ["a2", "b1", "c1"],
        ["a2", "b1", "c2"],
        ["a2", "b2", "c1"],
        ["a2", "b2", "c2"],
    ]
    .iter()
    .map(|c| c.iter().map(|s| s.to_string()).collect())
    .collect();
    let header = SweepHeader {
        orrery: "0".into(),
        scenario: "s.orr".into(),
        scenario_hash: "h".into(),
        experiment: "e".into(),
        params: vec!["x.a".into(), "y.b".into(), "z.c".into()],
        cells,
        seeds: vec![1, 2],
        metrics: vec!["makespan".into()],
    };
    // Run values: cell k, seed s → 10k + s (cell means 10k + 1.5).
    let runs = (0..8)
        .flat_map(|c| {
            (1..=2).map(move |s| RunRow {
                run: c * 2 + s as usize - 1,
                cell: c,
                seed: s,
                values: vec![Some(10.0 * c as f64 + s as f64)],
                placement: None,
            })
        })
        .collect();
    let r = summarize(header, runs);
    let map = orrery::outputs::sweep::heatmap_data(&r, 0, 0, 1);
    assert_eq!((map.x_name.as_str(), map.y_name.as_str()), ("a", "b"));
    assert_eq!(map.x_values, ["a1", "a2"]);
    assert_eq!(map.y_values, ["b1", "b2"]);
    assert_eq!(map.value_name, "makespan_s");
    // (a1, b1): cells 0 and 1 → (1.5 + 11.5) / 2 = 6.5; (a2, b1): cells 4, 5 → 46.5;
    // (a1, b2): cells 2, 3 → 26.5; (a2, b2): cells 6, 7 → 66.5.
    assert_eq!(map.values, vec![vec![6.5, 46.5], vec![26.5, 66.5]]);
    let bars = orrery::outputs::sweep::bars_data(&r, 0);
    assert_eq!(bars.bars.len(), 8);
    assert_eq!(bars.bars[0].group, "a=a1 b=b1 c=c1");
    assert_eq!(bars.bars[0].value, 1.5);
    // Two seeds one apart: mean ± t(0.975, 1) · 0.707 / √2 = 1.5 ± 6.353.
    let (lo, hi) = bars.bars[0].ci.unwrap();
    assert!((lo - 0.0).abs() < 1e-9 && (hi - (1.5 + 6.353_102)).abs() < 1e-3);
}

#[test]
fn compare_draws_bars_with_intervals() {
    let d = dir("compare");
    let a = write(&d, "one.orr", TINY);
    let b = write(&d, "two.orr", &TINY.replace("dgx_h100 x 1", "dgx_h100 x 2"));
    let out = d.join("out");
    orrery(&[
        "compare",
        &a,
        &b,
        "--seeds",
        "1..2",
        "--threads",
        "1",
        "--out",
        &out.display().to_string(),
    ]);
    assert_eq!(
        names(&out),
        set(&[
            "compare.csv",
            "compare.json",
            "comparison.png",
            "comparison.svg",
            "report.md"
        ])
    );
    check_folder(&out);
    let md = read(&out, "report.md");
    assert!(md.contains("orrery compare: one vs two"), "{md}");
    // The bars' data: a panel per plotted column, a bar per scenario.
    let entry = |name: &str, src: &str| {
        let l = orrery::load_str(name, src);
        orrery::experiment::compare::Entry {
            name: name.into(),
            file: name.into(),
            scenario_hash: orrery::scenario_hash(&l.sources),
            spec: l.spec.unwrap(),
            traces: Default::default(),
            empirical: Default::default(),
            failure_block: None,
            horizon: None,
        }
    };
    let entries = [
        entry("one", TINY),
        entry("two", &TINY.replace("dgx_h100 x 1", "dgx_h100 x 2")),
    ];
    let r = orrery::experiment::compare::compare(&entries, &[1, 2], 1, None);
    let bars = orrery::outputs::compare::metric_bars(&r);
    let panels: Vec<&str> = bars.iter().map(|m| m.name.as_str()).collect();
    // Tasks only: their makespan and rate, and the cluster's cost and energy over the window.
    assert_eq!(
        panels,
        [
            "makespan",
            "tasks/s",
            "cluster cost (price × window)",
            "cluster energy (TDP × window)"
        ]
    );
    // 3 tasks in 15 s.
    assert!((bars[1].bars[0].value - 0.2).abs() < 1e-12);
    assert!(md.contains("window"), "{md}");
    // 15 s for both; twice the nodes cost twice as much for the same window.
    assert_eq!(bars[0].bars[0].value, 15.0);
    assert_eq!(bars[0].bars[1].value, 15.0);
    assert!((bars[2].bars[1].value / bars[2].bars[0].value - 2.0).abs() < 1e-9);
    let _ = std::fs::remove_dir_all(&d);
}

/// Two DGX H100 in two racks: a same-node and a cross-node pair.
const TRANSPORTS: &str = "cluster c {\n  rack r[0..1] {\n    node dgx_h100 x 1\n  }\n  fabric leaf_spine oversubscription 1:1\n}\n";

#[test]
fn transports_write_speedup_and_breakdown_plots() {
    let d = dir("transports");
    let file = write(&d, "tr.orr", TRANSPORTS);
    let out = d.join("out");
    orrery(&[
        "transports",
        &file,
        "--sizes",
        "4KiB,1MiB,64MiB",
        "--out",
        &out.display().to_string(),
    ]);
    assert_eq!(
        names(&out),
        set(&[
            "breakdown.png",
            "breakdown.svg",
            "report.md",
            "speedup.png",
            "speedup.svg",
            "transports.csv",
            "transports.json",
        ])
    );
    check_folder(&out);
    let csv = read(&out, "transports.csv");
    // Quantity columns carry their unit, as in transports.json.
    assert_eq!(
        csv.lines().next().unwrap(),
        "pair,src,dst,transport,bytes,time_s,speedup,latency_s,overhead_s,staging_s,bandwidth_s,chunks,error"
    );
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    // 2 pairs × 3 sizes × every transport; the object store is the 1× baseline.
    assert_eq!(rows.len() % 6, 0);
    assert!(rows.len() >= 6 * 5);
    for r in rows.iter().filter(|r| r[3] == "object_store") {
        assert_eq!(r[6], "1", "{r:?}");
    }
    let md = read(&out, "report.md");
    assert!(md.contains("cross node (r0.n0.d0 → r1.n0.d0)"), "{md}");
    // With --workload the whole scenario per transport is drawn too (GPU tasks whose outputs
    // the next group reads across the two nodes).
    let file = write(
        &d,
        "trw.orr",
        &format!(
            "{TRANSPORTS}workload w {{\n  tasks make x 4 {{\n    resources {{ GPU: 1 }}\n    duration 1 s\n    output 256 MB\n  }}\n  tasks use x 2 after make {{\n    resources {{ GPU: 1 }}\n    duration 1 s\n  }}\n}}\n"
        ),
    );
    let out2 = d.join("out2");
    orrery(&[
        "transports",
        &file,
        "--sizes",
        "1MiB",
        "--workload",
        "--out",
        &out2.display().to_string(),
    ]);
    assert!(names(&out2).contains("workload.png"), "{:?}", names(&out2));
    check_folder(&out2);
    let md = read(&out2, "report.md");
    assert!(md.contains("## The workload under each transport"), "{md}");
    let _ = std::fs::remove_dir_all(&d);
}
