//! From parsed tables to fitted paths: sizes with their repetitions (one per file, rank
//! pair or GPU that measured the size), held-out sizes, and the fits
//! ([`crate::calibrate::fit`]).
//!
//! - Collectives: one fit per (op, ranks, nodes), from the out-of-place `time` column (or the
//!   in-place one); the repetitions of a size are the runs that measured it.
//! - nvbandwidth: `host_to_device_memcpy_ce` → `h2d_pinned` (nvbandwidth allocates pinned
//!   host buffers), `device_to_host_memcpy_ce` → `d2h_pinned`,
//!   `device_to_device_memcpy_{read,write}_ce` → `p2p`, `device_local_copy` → `d2d`; time =
//!   buffer / bandwidth; the repetitions of a size are the matrix entries (every GPU or pair).
//!   SM-copy, bidirectional and many-to-one tests are not copies Orrery models: skipped,
//!   and said so.
//! - perftest: `nic_rdma`. A latency test (one message, nothing hides its latency) times
//!   α + n/β directly: `t_typical` per size. A bandwidth test streams messages `TX depth`
//!   deep, so its time per message n / BW_average hides the latency; it gives the bandwidth.
//!   With both, the segments are the bandwidth test's fit with every latency set to the
//!   latency test's (its first segment's α and interval).
//!
//! Held out: with at least six sizes, every fourth from the third (never the largest), so
//! the profile records how well the fit predicts sizes it did not see.

use super::record::{MatrixUnit, PerfKind};
use super::{ImportError, ImportOptions, Input, Parsed};
use crate::calibrate::fit::{FitOptions, PathFit, Point, fit_path};
use crate::profile::schema::{CollectiveFit, ImportRecord, TransferPath};
use std::collections::BTreeMap;

pub(super) struct Fitted {
    pub collective: Vec<CollectiveFit>,
    pub transfer: Vec<TransferPath>,
}

/// Sizes → repetitions (seconds).
type Sizes = BTreeMap<u64, Vec<f64>>;

fn held_out(sizes: &Sizes) -> Vec<Point> {
    let n = sizes.len();
    sizes
        .iter()
        .enumerate()
        .map(|(i, (&bytes, reps))| Point {
            bytes,
            reps: reps.clone(),
            held_out: n >= 6 && i % 4 == 2 && i + 1 < n,
        })
        .collect()
}

fn fit(points: &[Point], o: &ImportOptions, max_segments: usize) -> Result<PathFit, String> {
    let fitted = points.iter().filter(|p| !p.held_out).count();
    fit_path(
        points,
        &FitOptions {
            max_segments: max_segments.min(fitted / 3).max(1),
            min_points: if fitted >= 6 { 3 } else { 2 },
            bootstrap: 200,
            seed: o.seed,
            ..FitOptions::default()
        },
    )
}

fn medians(f: &PathFit) -> Vec<[f64; 2]> {
    f.medians
        .iter()
        .filter(|(_, t)| *t > 0.0)
        .map(|&(b, t)| [b as f64, t])
        .collect()
}

fn holdout_note(what: &str, f: &PathFit) -> String {
    let segs = f.segments.len();
    match f.holdout_error() {
        Some((med, max)) => format!(
            "{what}: {segs} segment{}, {} held-out sizes predicted within {:.1}% median, {:.1}% max",
            if segs == 1 { "" } else { "s" },
            f.holdout.len(),
            100.0 * med,
            100.0 * max
        ),
        None => format!(
            "{what}: {segs} segment{}, too few sizes to hold any out",
            if segs == 1 { "" } else { "s" }
        ),
    }
}

const METHOD: &str = "weighted least squares (1/t²), breakpoints by BIC, bootstrap 95% intervals";

pub(super) fn fit_all(
    inputs: &[Input],
    parsed: &[Parsed],
    records: &mut [ImportRecord],
    o: &ImportOptions,
    report: &mut Vec<String>,
) -> Result<Fitted, ImportError> {
    let mut out = Fitted {
        collective: Vec::new(),
        transfer: Vec::new(),
    };
    collectives(inputs, parsed, records, o, report, &mut out)?;
    copies(inputs, parsed, records, o, report, &mut out)?;
    rdma(inputs, parsed, records, o, report, &mut out)?;
    Ok(out)
}

/// (op, ranks, nodes) → (sizes, dtype, redop, tools, files).
type CollKey = (String, usize, usize);

fn collectives(
    inputs: &[Input],
    parsed: &[Parsed],
    records: &mut [ImportRecord],
    o: &ImportOptions,
    report: &mut Vec<String>,
    out: &mut Fitted,
) -> Result<(), ImportError> {
    let mut groups: BTreeMap<CollKey, (Sizes, String, String, Vec<usize>, String)> =
        BTreeMap::new();
    for (fi, p) in parsed.iter().enumerate() {
        let Parsed::Collectives(tables) = p else {
            continue;
        };
        for t in tables {
            let Some(op) = &t.op else {
                return Err(ImportError {
                    file: Some(inputs[fi].name.clone()),
                    line: t.line,
                    column: 1,
                    message: "which collective this table is cannot be told: keep the \
                              `# Collective test starting: NAME_perf` line, or name the file \
                              after the test binary (`all_reduce_perf.txt`)"
                        .into(),
                });
            };
            if !crate::profile::schema::COLLECTIVE_OPS.contains(&op.as_str()) {
                report.push(format!(
                    "{}: {op} skipped (no collective model has it)",
                    inputs[fi].name
                ));
                continue;
            }
            if t.ranks < 2 {
                report.push(format!(
                    "{}: {op} on {} rank skipped (a collective needs two)",
                    inputs[fi].name, t.ranks
                ));
                continue;
            }
            let key = (op.clone(), t.ranks, t.nodes.max(1));
            let first = t.rows.first();
            let g = groups.entry(key).or_insert_with(|| {
                (
                    Sizes::new(),
                    first.map_or_else(String::new, |r| r.dtype.clone()),
                    first.map_or_else(String::new, |r| r.redop.clone()),
                    Vec::new(),
                    t.format.name().to_string(),
                )
            });
            if !g.3.contains(&fi) {
                g.3.push(fi);
            }
            for r in &t.rows {
                let us = if o.in_place {
                    r.in_place_us
                } else {
                    r.out_of_place_us
                };
                if let Some(us) = us
                    && r.bytes > 0
                    && us.is_finite()
                    && us > 0.0
                {
                    g.0.entry(r.bytes).or_default().push(us * 1e-6);
                }
            }
        }
    }
    for ((op, ranks, nodes), (sizes, dtype, redop, files, tool)) in groups {
        let what = format!(
            "{op} on {ranks} ranks over {nodes} node{}",
            if nodes == 1 { "" } else { "s" }
        );
        let pts = held_out(&sizes);
        let f = fit(&pts, o, 4).map_err(|e| {
            ImportError::general(format!("{what}: cannot fit ({e}); {} sizes", sizes.len()))
        })?;
        report.push(holdout_note(&what, &f));
        for &fi in &files {
            records[fi].used_for.push(what.clone());
        }
        let half = if o.in_place {
            "in_place"
        } else {
            "out_of_place"
        };
        out.collective.push(CollectiveFit {
            op,
            ranks: ranks.min(u32::MAX as usize) as u32,
            nodes: nodes.min(u32::MAX as usize) as u32,
            dtype,
            redop,
            placement: half.to_string(),
            source: format!(
                "{tool} {} time over {} run{}; {METHOD}",
                half.replace('_', "-"),
                files.len(),
                if files.len() == 1 { "" } else { "s" }
            ),
            segments: f.profile_segments(),
            medians: medians(&f),
            holdout: f.holdout_record(),
        });
    }
    Ok(())
}

/// The profile path an nvbandwidth testcase measures, if Orrery models it.
fn copy_path(testcase: &str) -> Option<&'static str> {
    Some(match testcase {
        "host_to_device_memcpy_ce" => "h2d_pinned",
        "device_to_host_memcpy_ce" => "d2h_pinned",
        "device_to_device_memcpy_read_ce" | "device_to_device_memcpy_write_ce" => "p2p",
        "device_local_copy" => "d2d",
        _ => return None,
    })
}

fn copies(
    inputs: &[Input],
    parsed: &[Parsed],
    records: &mut [ImportRecord],
    o: &ImportOptions,
    report: &mut Vec<String>,
    out: &mut Fitted,
) -> Result<(), ImportError> {
    let mut paths: BTreeMap<&'static str, (Sizes, Vec<usize>, Vec<String>)> = BTreeMap::new();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    for (fi, p) in parsed.iter().enumerate() {
        let Parsed::Copies(run) = p else { continue };
        let Some(bytes) = run.buffer_bytes.filter(|b| *b > 0) else {
            continue;
        };
        for m in &run.matrices {
            let path = match copy_path(&m.testcase) {
                Some(p) if m.unit == MatrixUnit::GBps => p,
                _ => {
                    *skipped.entry(m.testcase.clone()).or_default() += 1;
                    continue;
                }
            };
            let e = paths.entry(path).or_default();
            let local = path == "d2d";
            for (i, row) in m.rows.iter().enumerate() {
                for (j, v) in row.iter().enumerate() {
                    // Peer matrices have a meaningless diagonal (a GPU to itself).
                    if path == "p2p" && i == j && !local {
                        continue;
                    }
                    if let Some(gbps) = v.filter(|g| g.is_finite() && *g > 0.0) {
                        e.0.entry(bytes)
                            .or_default()
                            .push(bytes as f64 / (gbps * 1e9));
                    }
                }
            }
            if !e.1.contains(&fi) {
                e.1.push(fi);
            }
            if !e.2.contains(&m.testcase) {
                e.2.push(m.testcase.clone());
            }
        }
    }
    if !skipped.is_empty() {
        report.push(format!(
            "nvbandwidth tests skipped (not a copy Orrery models): {}",
            skipped.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    for (path, (sizes, files, tests)) in paths {
        if sizes.len() < 2 {
            let one = sizes.keys().next().copied().unwrap_or(0);
            return Err(ImportError::general(format!(
                "{path}: nvbandwidth measured one buffer size ({one} bytes); a latency needs at \
                 least two: import runs at several sizes (`nvbandwidth -b 2`, `-b 64`, `-b 512`)"
            )));
        }
        let f = fit(&held_out(&sizes), o, 2)
            .map_err(|e| ImportError::general(format!("{path}: cannot fit ({e})")))?;
        report.push(holdout_note(path, &f));
        for &fi in &files {
            records[fi].used_for.push(path.to_string());
        }
        let _ = inputs;
        out.transfer.push(TransferPath {
            path: path.to_string(),
            source: format!(
                "nvbandwidth {} at {} buffer sizes, every GPU{} as a repetition; {METHOD}",
                tests.join(" + "),
                sizes.len(),
                if path == "p2p" { " pair" } else { "" }
            ),
            segments: f.profile_segments(),
            medians: medians(&f),
            check: None,
            holdout: f.holdout_record(),
        });
    }
    Ok(())
}

fn rdma(
    inputs: &[Input],
    parsed: &[Parsed],
    records: &mut [ImportRecord],
    o: &ImportOptions,
    report: &mut Vec<String>,
    out: &mut Fitted,
) -> Result<(), ImportError> {
    let (mut bw, mut lat) = (Sizes::new(), Sizes::new());
    let (mut bw_files, mut lat_files, mut tests) = (Vec::new(), Vec::new(), Vec::new());
    for (fi, p) in parsed.iter().enumerate() {
        let Parsed::Rdma(t) = p else { continue };
        if t.bidirectional {
            report.push(format!(
                "{}: {} skipped (bidirectional: both directions share the time)",
                inputs[fi].name, t.test
            ));
            continue;
        }
        for r in &t.rows {
            if r.bytes == 0 {
                continue;
            }
            match t.kind {
                PerfKind::Bandwidth => {
                    if let Some(b) = r.bw_average.filter(|b| b.is_finite() && *b > 0.0) {
                        bw.entry(r.bytes).or_default().push(r.bytes as f64 / b);
                    }
                }
                PerfKind::Latency => {
                    if let Some(s) = r
                        .t_typical
                        .or(r.t_avg)
                        .filter(|s| s.is_finite() && *s > 0.0)
                    {
                        lat.entry(r.bytes).or_default().push(s);
                    }
                }
            }
        }
        match t.kind {
            PerfKind::Bandwidth => bw_files.push(fi),
            PerfKind::Latency => lat_files.push(fi),
        }
        let name = match &t.device {
            Some(d) => format!("{} on {d}", t.test),
            None => t.test.clone(),
        };
        if !tests.contains(&name) {
            tests.push(name);
        }
    }
    if bw.is_empty() && lat.is_empty() {
        return Ok(());
    }
    let fit_of = |s: &Sizes, what: &str| {
        fit(&held_out(s), o, 3)
            .map_err(|e| ImportError::general(format!("nic_rdma ({what}): cannot fit ({e})")))
    };
    let (f, how) = match (bw.len() >= 2, lat.len() >= 2) {
        (true, true) => {
            let fb = fit_of(&bw, "bandwidth test")?;
            let fl = fit_of(&lat, "latency test")?;
            report.push(holdout_note("nic_rdma latency test", &fl));
            let mut segs = fb.profile_segments();
            if let Some(l) = fl.segments.first() {
                for s in &mut segs {
                    s.latency_s = l.latency_s;
                    s.latency_ci95 = l.latency_ci95;
                }
            }
            // What the combined path predicts is one message's time: check it against the
            // latency test's held-out sizes, which measured exactly that.
            let mut fb = fb;
            let path = TransferPath {
                path: String::new(),
                source: String::new(),
                segments: segs.clone(),
                medians: Vec::new(),
                check: None,
                holdout: None,
            };
            fb.holdout = fl
                .holdout
                .iter()
                .filter_map(|h| {
                    let p = path.secs(h.bytes as f64)?;
                    Some(crate::calibrate::fit::Holdout {
                        predicted_s: p,
                        rel_error: (p - h.measured_s) / h.measured_s,
                        ..h.clone()
                    })
                })
                .collect();
            (
                (fb, segs),
                "bandwidth from the bandwidth test, latency from the latency test's first segment",
            )
        }
        (true, false) => {
            let fb = fit_of(&bw, "bandwidth test")?;
            let segs = fb.profile_segments();
            (
                (fb, segs),
                "bandwidth test only: its latency is what streaming hides, not a message's",
            )
        }
        (false, true) => {
            let fl = fit_of(&lat, "latency test")?;
            let segs = fl.profile_segments();
            ((fl, segs), "latency test only")
        }
        (false, false) => {
            return Err(ImportError::general(
                "nic_rdma: perftest measured one message size; run it with `-a` (every size)",
            ));
        }
    };
    let (fit, segments) = f;
    report.push(holdout_note("nic_rdma", &fit));
    for &fi in bw_files.iter().chain(&lat_files) {
        records[fi].used_for.push("nic_rdma".to_string());
    }
    out.transfer.push(TransferPath {
        path: "nic_rdma".to_string(),
        source: format!("perftest {}; {how}; {METHOD}", tests.join(" + ")),
        segments,
        medians: medians(&fit),
        check: None,
        holdout: fit.holdout_record(),
    });
    Ok(())
}
