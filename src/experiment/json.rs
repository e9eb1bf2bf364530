//! The JSON layouts of the experiment runners' files where they differ from the in-memory
//! structs: an [`Aggregate`] list written as an object keyed by each metric's column (its key
//! carries the unit, so `{"makespan_s": {"n": 10, "mean": …}}` says what `mean` is measured
//! in), and a sweep's `summary.json` and shard files, whose per-run values are keyed by column
//! instead of by position. README "JSON outputs" documents every layout.

use crate::experiment::drill::Aggregate;
use crate::experiment::measure;
use crate::experiment::sweep::{RunRow, Shard, SweepHeader, SweepResult};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use std::collections::BTreeMap;

/// Version of the layout of `summary.json` (2: `schema_version`, per-run values and per-cell
/// aggregates keyed by column with its unit; 1 was unversioned, with values by position).
pub const SWEEP_SCHEMA_VERSION: u32 = 2;

/// Version of the layout of `shard-i-of-n.json`: 3 adds the experiment's `plots` lines and the
/// first run's `representative` plot data (2 had neither, so `merge` read the scenario: its
/// output depended on the folder it ran in). A shard of another version is refused by `merge`.
pub const SHARD_SCHEMA_VERSION: u32 = 3;

/// The statistics of one aggregate, without its metric (the key it is written under).
#[derive(Serialize)]
struct Figures {
    n: usize,
    mean: Option<f64>,
    std: Option<f64>,
    ci_low: Option<f64>,
    ci_high: Option<f64>,
}

impl From<&Aggregate> for Figures {
    fn from(a: &Aggregate) -> Self {
        Figures {
            n: a.n,
            mean: a.mean,
            std: a.std,
            ci_low: a.ci_low,
            ci_high: a.ci_high,
        }
    }
}

/// `serialize_with` for a list of aggregates: an object from each metric (in list order) to
/// its `n`, `mean`, `std`, `ci_low`, `ci_high`, all in the metric's unit but `n`.
pub fn aggregates_by_metric<S: Serializer>(xs: &[Aggregate], s: S) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(xs.len()))?;
    for a in xs {
        m.serialize_entry(&a.metric, &Figures::from(a))?;
    }
    m.end()
}

/// Pairs as an object, in order (`serialize_with`).
fn ordered_map<S: Serializer, V: Serialize>(xs: &[(String, V)], s: S) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(xs.len()))?;
    for (k, v) in xs {
        m.serialize_entry(k, v)?;
    }
    m.end()
}

/// A cell of `summary.json`.
#[derive(Serialize)]
struct CellJson<'a> {
    cell: usize,
    /// Parameter → value as written, in `sweep` line order.
    #[serde(serialize_with = "ordered_map")]
    params: Vec<(String, &'a str)>,
    /// Runs (seeds) in the cell.
    runs: usize,
    /// Column (with unit) → aggregate over the cell's seeds.
    #[serde(serialize_with = "ordered_map")]
    metrics: Vec<(String, Figures)>,
}

/// `summary.json`: the version, the sweep's header, its seed range and metric columns, and per
/// cell its parameter values, run count and per column `n, mean, std, ci_low, ci_high`.
pub fn summary(r: &SweepResult) -> String {
    #[derive(Serialize)]
    struct Out<'a> {
        schema_version: u32,
        header: &'a SweepHeader,
        seed_range: String,
        columns: Vec<String>,
        cells: Vec<CellJson<'a>>,
    }
    let h = &r.header;
    let cols: Vec<String> = h.metrics.iter().map(|m| measure::column(m)).collect();
    let cells = r
        .cells
        .iter()
        .map(|c| CellJson {
            cell: c.cell,
            params: c
                .params
                .iter()
                .map(|(p, v)| (p.clone(), v.as_str()))
                .collect(),
            runs: c.seeds,
            metrics: cols
                .iter()
                .zip(&c.metrics)
                .map(|(col, a)| (col.clone(), Figures::from(a)))
                .collect(),
        })
        .collect();
    let out = Out {
        schema_version: SWEEP_SCHEMA_VERSION,
        header: h,
        seed_range: h.seeds_label(),
        columns: cols,
        cells,
    };
    serde_json::to_string_pretty(&out).unwrap_or_default() + "\n"
}

/// One run of a shard file: its values by column (with unit).
#[derive(Serialize, Deserialize)]
struct RunJson {
    run: usize,
    cell: usize,
    seed: u64,
    values: BTreeMap<String, Option<f64>>,
    /// Where the work ran (first seed of each cell), for the merged report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    placement: Option<crate::experiment::placement::Placement>,
}

#[derive(Serialize, Deserialize)]
struct ShardJson {
    schema_version: u32,
    header: SweepHeader,
    shard: usize,
    shards: usize,
    runs: Vec<RunJson>,
    plots: Vec<crate::scenario::experiment::Plot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    representative: Option<super::representative::Representative>,
}

/// A shard's value columns, header order (`makespan_s`, …).
fn columns(h: &SweepHeader) -> Vec<String> {
    h.metrics.iter().map(|m| measure::column(m)).collect()
}

/// A shard file's text (compact: shards are read back, not by people).
pub fn shard_to_json(s: &Shard) -> serde_json::Result<String> {
    let cols = columns(&s.header);
    let out = ShardJson {
        schema_version: SHARD_SCHEMA_VERSION,
        header: s.header.clone(),
        shard: s.shard,
        shards: s.shards,
        runs: s
            .runs
            .iter()
            .map(|r| RunJson {
                run: r.run,
                cell: r.cell,
                seed: r.seed,
                values: cols.iter().cloned().zip(r.values.iter().copied()).collect(),
                placement: r.placement.clone(),
            })
            .collect(),
        plots: s.plots.clone(),
        representative: s.representative.clone(),
    };
    serde_json::to_string(&out)
}

/// A shard back from its text: every run must have exactly the header's columns.
pub fn shard_from_json(text: &str) -> Result<Shard, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    match v.get("schema_version").and_then(serde_json::Value::as_u64) {
        Some(n) if n == u64::from(SHARD_SCHEMA_VERSION) => {}
        Some(n) => {
            return Err(format!(
                "it has schema_version {n}; this orrery reads {SHARD_SCHEMA_VERSION} (shard it again with this version)"
            ));
        }
        None => {
            return Err(format!(
                "it has no schema_version (written before version {SHARD_SCHEMA_VERSION}; shard it again with this version)"
            ));
        }
    }
    let s: ShardJson = serde_json::from_value(v).map_err(|e| e.to_string())?;
    let cols = columns(&s.header);
    let runs = s
        .runs
        .into_iter()
        .map(|mut r| {
            let values = cols
                .iter()
                .map(|c| {
                    r.values
                        .remove(c)
                        .ok_or_else(|| format!("run {} has no value for `{c}`", r.run))
                })
                .collect::<Result<Vec<_>, _>>()?;
            if let Some(k) = r.values.keys().next() {
                return Err(format!(
                    "run {} has `{k}`, not a column of its header",
                    r.run
                ));
            }
            Ok(RunRow {
                run: r.run,
                cell: r.cell,
                seed: r.seed,
                values,
                placement: r.placement,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Shard {
        header: s.header,
        shard: s.shard,
        shards: s.shards,
        runs,
        plots: s.plots,
        representative: s.representative,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shard read back gives the very `f64`s written, including ones a naive float parser
    /// gets wrong in the last digit, and `None`s stay `None`: merge stays byte-identical.
    #[test]
    fn a_shard_survives_its_json_exactly() {
        let header = SweepHeader {
            orrery: "0".into(),
            scenario: "s.orr".into(),
            scenario_hash: "h".into(),
            experiment: "e".into(),
            params: vec!["policy".into()],
            cells: vec![vec!["spread".into()]],
            seeds: vec![1, 2],
            metrics: vec!["makespan".into(), "cost".into(), "latency".into()],
        };
        let values = |a: f64, b: f64| vec![Some(a), Some(b), None];
        let s = Shard {
            header,
            shard: 0,
            shards: 1,
            runs: vec![
                RunRow {
                    run: 0,
                    cell: 0,
                    seed: 1,
                    values: values(0.042026631200000004, 0.1 + 0.2),
                    placement: None,
                },
                RunRow {
                    run: 1,
                    cell: 0,
                    seed: 2,
                    values: values(1.0 / 3.0, 2.2250738585072014e-308),
                    placement: None,
                },
            ],
            plots: vec![crate::scenario::experiment::Plot {
                kind: "bars".into(),
                args: vec!["makespan".into()],
            }],
            representative: Some(crate::experiment::representative::Representative {
                horizon_s: 0.1 + 0.2,
                timeline: vec![crate::plot::TimelineRow {
                    label: "r0.n0 gpu0".into(),
                    spans: vec![crate::plot::Span {
                        start: 1.0 / 3.0,
                        end: 0.5,
                        kind: crate::plot::SpanKind::Communication,
                    }],
                }],
                rows_are: "device".into(),
                rows_described: "1 devices, one row each".into(),
                utilization: vec![crate::plot::UtilSeries {
                    label: "H100_SXM".into(),
                    points: vec![(0.0, 0.042026631200000004)],
                    dashed: true,
                }],
            }),
        };
        let text = shard_to_json(&s).unwrap();
        assert!(
            text.contains(r#""makespan_s":0.042026631200000004"#),
            "{text}"
        );
        let back = shard_from_json(&text).unwrap();
        assert_eq!(back, s);
        for (a, b) in back.runs.iter().zip(&s.runs) {
            for (x, y) in a.values.iter().zip(&b.values) {
                assert_eq!(x.map(f64::to_bits), y.map(f64::to_bits));
            }
        }
    }
}
