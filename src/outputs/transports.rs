//! `orrery transports --out DIR`: `transports.csv` and `transports.json` (every transport,
//! size and pair), `speedup.{png,svg}` (speedup over the object store against size, on the
//! cross-node pair), `breakdown.{png,svg}` (latency / overhead / staging / bandwidth of the
//! largest size on that pair) and `report.md`.

use std::path::Path;

use super::{Report, Written};
use crate::plot::{self, Bar, MetricBars, Missing, TransportBreakdown, TransportCurve};
use crate::transport::compare::{Comparison, PairResult};

/// Version of the layout of `transports.json` and `orrery transports --json` (2:
/// `schema_version`, every quantity key with its unit; 1 was unversioned).
pub const SCHEMA_VERSION: u32 = 2;

/// `transports.json` (and `--json`): the version, the comparison's keys at the top, and with
/// `--workload` (printed only) the workload comparison under `workload`.
pub fn to_json(
    c: &Comparison,
    workload: Option<&crate::experiment::transports::WorkloadComparison>,
) -> serde_json::Result<String> {
    #[derive(serde::Serialize)]
    struct Out<'a> {
        schema_version: u32,
        #[serde(flatten)]
        transfers: &'a Comparison,
        #[serde(skip_serializing_if = "Option::is_none")]
        workload: Option<&'a crate::experiment::transports::WorkloadComparison>,
    }
    serde_json::to_string_pretty(&Out {
        schema_version: SCHEMA_VERSION,
        transfers: c,
        workload,
    })
}

/// The pair the plots show: the first cross-node pair, else the first pair.
pub fn plotted_pair(c: &Comparison) -> Option<&PairResult> {
    c.pairs
        .iter()
        .find(|p| p.src.node != p.dst.node)
        .or(c.pairs.first())
}

/// One speedup curve per transport that made any transfer of `pair`.
pub fn speedup_curves(c: &Comparison, pair: &PairResult) -> Vec<TransportCurve> {
    c.transports
        .iter()
        .map(|t| TransportCurve {
            transport: t.name.clone(),
            points: pair
                .cells
                .iter()
                .filter(|x| x.transport == t.name)
                .filter_map(|x| {
                    let s = x.speedup.filter(|s| s.is_finite() && *s > 0.0)?;
                    (x.bytes > 0.0).then_some((x.bytes, s))
                })
                .collect(),
        })
        .filter(|c| !c.points.is_empty())
        .collect()
}

/// The breakdown of the largest size of `pair`, per transport that made it: (size, rows).
pub fn largest_breakdown(pair: &PairResult) -> (f64, Vec<TransportBreakdown>) {
    let size = pair.cells.iter().map(|x| x.bytes).fold(0.0, f64::max);
    let rows = pair
        .cells
        .iter()
        .filter(|x| x.bytes == size)
        .filter_map(|x| {
            let b = x.breakdown?;
            Some(TransportBreakdown {
                transport: x.transport.clone(),
                latency: b.latency_secs,
                overhead: b.overhead_secs,
                staging: b.staging_secs,
                bandwidth: b.bandwidth_secs,
            })
        })
        .collect();
    (size, rows)
}

/// `transports.csv`: `pair,src,dst,transport,bytes,time_s,speedup,latency_s,overhead_s,
/// staging_s,bandwidth_s,chunks,error` per cell.
pub fn csv(c: &Comparison) -> String {
    /// One pair, transport and size: its time, split into its parts, or why it cannot move.
    #[derive(serde::Serialize, Default)]
    struct Row<'a> {
        pair: &'a str,
        src: &'a str,
        dst: &'a str,
        transport: &'a str,
        bytes: f64,
        time_s: Option<f64>,
        speedup: Option<f64>,
        latency_s: Option<f64>,
        overhead_s: Option<f64>,
        staging_s: Option<f64>,
        bandwidth_s: Option<f64>,
        chunks: u32,
        error: crate::report::rows::Quoted<'a>,
    }
    crate::report::rows::csv(c.pairs.iter().flat_map(|p| {
        p.cells.iter().map(move |x| {
            let b = x.breakdown;
            Row {
                pair: &p.label,
                src: &p.src.name,
                dst: &p.dst.name,
                transport: &x.transport,
                bytes: x.bytes,
                time_s: b.map(|b| b.secs),
                speedup: x.speedup,
                latency_s: b.map(|b| b.latency_secs),
                overhead_s: b.map(|b| b.overhead_secs),
                staging_s: b.map(|b| b.staging_secs),
                bandwidth_s: b.map(|b| b.bandwidth_secs),
                chunks: x.chunks,
                error: crate::report::rows::Quoted(x.error.as_deref().unwrap_or("")),
            }
        })
    }))
}

/// Bars of the workload comparison: makespan and each task group's mean run time, one bar per
/// transport that could move every transfer (where one could not — NVLink P2P across nodes —
/// the work that needed it failed, so its times compare nothing; the plot's subtitle names it).
pub fn workload_bars(w: &crate::experiment::transports::WorkloadComparison) -> Vec<MetricBars> {
    let bar = |group: &str, value: f64| Bar {
        group: group.to_string(),
        value,
        ci: None,
    };
    // A transport left out of a panel is listed under it, with why.
    let fell_back = |r: &crate::experiment::transports::Row| {
        (!r.available()).then(|| Missing {
            group: r.transport.clone(),
            why: format!(
                "unavailable for {} transfer(s); the work that needed them failed",
                r.transfers_unavailable
            ),
        })
    };
    let mut out = vec![MetricBars {
        name: "makespan".into(),
        unit: "s".into(),
        bars: w
            .rows
            .iter()
            .filter_map(|r| {
                r.makespan
                    .filter(|m| *m > 0.0)
                    .map(|m| bar(&r.transport, m))
            })
            .collect(),
        missing: w
            .rows
            .iter()
            .filter_map(|r| {
                fell_back(r).or_else(|| {
                    (r.makespan.is_none_or(|m| m <= 0.0)).then(|| Missing {
                        group: r.transport.clone(),
                        why: "no task finished".into(),
                    })
                })
            })
            .collect(),
    }];
    let groups = w.rows.first().map(|r| r.run_mean.len()).unwrap_or(0);
    for g in 0..groups {
        out.push(MetricBars {
            name: format!("{} run time", w.rows[0].run_mean[g].0),
            unit: "s".into(),
            bars: w
                .rows
                .iter()
                .filter(|r| r.available())
                .filter_map(|r| r.run_mean.get(g).map(|(_, v)| bar(&r.transport, *v)))
                .collect(),
            missing: w
                .rows
                .iter()
                .filter_map(|r| {
                    fell_back(r).or_else(|| {
                        r.run_mean.get(g).is_none().then(|| Missing {
                            group: r.transport.clone(),
                            why: "no such group".into(),
                        })
                    })
                })
                .collect(),
        });
    }
    out
}

/// Writes `transports.csv`, `transports.json`, the plots (unless `plots` is false) and
/// `report.md` into `dir` (created). `header`: the orrery version, scenario and hash line;
/// `printed`: the printed comparison (and workload comparison, if any).
pub fn write(
    dir: &Path,
    header: &[(&str, String)],
    c: &Comparison,
    workload: Option<&crate::experiment::transports::WorkloadComparison>,
    printed: &str,
    plots: bool,
) -> Result<Written, String> {
    crate::atomic::create_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let json = to_json(c, None).map_err(|e| e.to_string())? + "\n";
    let mut data = Vec::new();
    for (name, text) in [("transports.csv", csv(c)), ("transports.json", json)] {
        let path = dir.join(name);
        crate::atomic::write_atomic(&path, text.as_bytes())
            .map_err(|e| format!("cannot write {e}"))?;
        data.push(name.to_string());
    }
    let mut rep = Report::new(dir, &format!("orrery transports: {}", c.cluster));
    rep.facts(header);
    if plots {
        match plotted_pair(c) {
            None => rep.note("no device pair to plot".into()),
            Some(pair) => {
                let on = format!("{} ({} → {})", pair.label, pair.src.name, pair.dst.name);
                rep.section("Speedup over the object store");
                let drawn = plot::transport_speedup(
                    &rep.stem("speedup"),
                    &format!("Transports, {on}"),
                    &c.baseline,
                    &speedup_curves(c, pair),
                );
                rep.plot(&format!("Speedup against transfer size, {on}"), drawn);
                rep.section("Where the time goes");
                let (size, rows) = largest_breakdown(pair);
                let drawn = plot::transport_breakdown(
                    &rep.stem("breakdown"),
                    &format!("Time of one transfer, {on}"),
                    size,
                    &rows,
                );
                rep.plot(&format!("Time breakdown of the largest size, {on}"), drawn);
            }
        }
    }
    if plots && let Some(w) = workload {
        rep.section("The workload under each transport");
        let drawn = plot::comparison(
            &rep.stem("workload"),
            &format!("The workload under each transport, seed {}", w.seed),
            &{
                let left: Vec<&str> = w
                    .rows
                    .iter()
                    .filter(|r| !r.available())
                    .map(|r| r.transport.as_str())
                    .collect();
                if left.is_empty() {
                    "none (one seed); task inputs moved by each transport".to_string()
                } else {
                    format!(
                        "none (one seed); left out, unavailable for some transfer: {}",
                        left.join(", ")
                    )
                }
            },
            &workload_bars(w),
        );
        rep.plot("Makespan and task run time per transport", drawn);
    }
    rep.section("Summary");
    rep.pre(printed);
    let listed = vec![
        (
            data[0].clone(),
            "per pair, transport and size: time, speedup and its breakdown",
        ),
        (data[1].clone(), "the whole comparison"),
    ];
    let mut w = rep.finish(&listed)?;
    data.append(&mut w.files);
    w.files = data;
    Ok(w)
}
