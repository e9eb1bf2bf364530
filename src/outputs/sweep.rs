//! `orrery sweep` and `orrery merge`: the plots an experiment's `plot` lines name, else the
//! defaults (a heatmap of each metric's mean over the first two swept parameters, or bars with
//! 95% intervals when one parameter is swept), and `report.md`.
//!
//! `heatmap(a, b)`: one heatmap per metric over `a` (x) and `b` (y), each square the mean over
//! seeds — and over the other swept parameters' values when there are more than two
//! (`heatmap-<metric>.{png,svg}`). `bars(m)`: the mean of `m` per cell with its interval
//! (`bars-<m>`). `cdf(m)`: the distribution of `m` over seeds, a line per cell (`cdf-<m>`).
//! `timeline` and `utilization`: of one representative run (the first cell's first seed), drawn
//! from its [`Representative`]: `orrery sweep` simulates it, and the shard holding that run
//! carries it, so `orrery merge` draws the same plots with no scenario to read.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Report, Written, ci, md_escape, slug};
use crate::experiment::measure;
use crate::experiment::placement::{self, Placement};
use crate::experiment::sweep::SweepResult;
use crate::plot::{self, Bar, Heatmap, MetricBars, Missing, SampleSet};
use crate::scenario::experiment::Plot;
use crate::sim::RunResult;

pub use crate::experiment::representative::Representative;

/// The plot data of a run simulated with its timeline.
pub fn representative(run: &RunResult) -> Representative {
    let rows = super::timeline::timeline_rows(&run.timeline, run.metrics.horizon);
    Representative {
        horizon_s: run.metrics.horizon,
        rows_described: rows.describe(),
        rows_are: rows.per.to_string(),
        timeline: rows.rows,
        utilization: super::run::util_series(run),
    }
}

/// Whether the plot lines draw the representative run (`timeline`, `utilization`).
pub fn needs_representative(lines: &[Plot]) -> bool {
    lines
        .iter()
        .any(|p| p.kind == "timeline" || p.kind == "utilization")
}

/// The last segment of a dotted parameter path (`cluster.pod.fabric.oversubscription` →
/// `oversubscription`).
fn short(param: &str) -> &str {
    param.rsplit('.').next().unwrap_or(param)
}

/// A cell's label: `oversubscription=2:1 allreduce=8 GB`.
pub fn cell_label(params: &[(String, String)]) -> String {
    params
        .iter()
        .map(|(p, v)| format!("{}={v}", short(p)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The heatmap of metric number `k` over parameters `x` and `y` (indices into the header's
/// params): each square the mean of the cells' means with those two values (NaN where none has
/// a value).
pub fn heatmap_data(r: &SweepResult, k: usize, x: usize, y: usize) -> Heatmap {
    let h = &r.header;
    let values_of = |p: usize| {
        let mut vs: Vec<String> = Vec::new();
        for c in &h.cells {
            if !vs.contains(&c[p]) {
                vs.push(c[p].clone());
            }
        }
        vs
    };
    let (xs, ys) = (values_of(x), values_of(y));
    let mut sums: BTreeMap<(usize, usize), (f64, usize)> = BTreeMap::new();
    for c in &r.cells {
        let (Some(ix), Some(iy)) = (
            xs.iter().position(|v| *v == c.params[x].1),
            ys.iter().position(|v| *v == c.params[y].1),
        ) else {
            continue;
        };
        if let Some(m) = c
            .metrics
            .get(k)
            .and_then(|a| a.mean)
            .filter(|m| m.is_finite())
        {
            let e = sums.entry((ix, iy)).or_insert((0.0, 0));
            e.0 += m;
            e.1 += 1;
        }
    }
    let values = (0..ys.len())
        .map(|iy| {
            (0..xs.len())
                .map(|ix| {
                    sums.get(&(ix, iy))
                        .map(|(s, n)| s / *n as f64)
                        .unwrap_or(f64::NAN)
                })
                .collect()
        })
        .collect();
    Heatmap {
        x_name: short(&h.params[x]).to_string(),
        x_values: xs,
        y_name: short(&h.params[y]).to_string(),
        y_values: ys,
        values,
        value_name: measure::column(&h.metrics[k]),
    }
}

/// Bars of metric number `k`: one per cell, its mean and 95% interval; a cell without a value
/// is listed with why ([`measure::why_missing`]).
pub fn bars_data(r: &SweepResult, k: usize) -> MetricBars {
    let metric = &r.header.metrics[k];
    let (name, unit) = super::name_unit(&measure::column(metric));
    let mut out = MetricBars {
        name,
        unit,
        bars: Vec::new(),
        missing: Vec::new(),
    };
    for c in &r.cells {
        let value = c
            .metrics
            .get(k)
            .and_then(|a| a.mean.filter(|m| m.is_finite()).map(|m| (a, m)));
        match value {
            Some((a, mean)) => out.bars.push(Bar {
                group: cell_label(&c.params),
                value: mean,
                ci: ci(mean, a.ci_low, a.ci_high),
            }),
            None => out.missing.push(Missing {
                group: cell_label(&c.params),
                why: measure::why_missing(metric)
                    .unwrap_or("no value")
                    .to_string(),
            }),
        }
    }
    out
}

/// Per cell, the per-seed values of metric number `k` (cells without any left out).
pub fn cdf_data(r: &SweepResult, k: usize) -> Vec<SampleSet> {
    r.cells
        .iter()
        .map(|c| SampleSet {
            label: cell_label(&c.params),
            whole: None,
            values: r
                .runs
                .iter()
                .filter(|run| run.cell == c.cell)
                .filter_map(|run| run.values.get(k).copied().flatten())
                .filter(|v| v.is_finite())
                .collect(),
        })
        .filter(|s| !s.values.is_empty())
        .collect()
}

/// The plots to draw: the experiment's `plot` lines, else the defaults.
pub fn plan_plots(r: &SweepResult, lines: &[Plot]) -> Vec<Plot> {
    if !lines.is_empty() {
        return lines.to_vec();
    }
    let h = &r.header;
    match h.params.len() {
        0 => Vec::new(),
        1 => h
            .metrics
            .iter()
            .map(|m| Plot {
                kind: "bars".into(),
                args: vec![m.clone()],
            })
            .collect(),
        _ => vec![Plot {
            kind: "heatmap".into(),
            args: vec![h.params[0].clone(), h.params[1].clone()],
        }],
    }
}

/// "Where the work ran": per cell (its first seed's run), each placement group's nodes when
/// created and at the end, each training job's step and communication time, the leaf–spine
/// bytes; then what differed between cells ([`placement::differences`]). Left out when no
/// run kept its placement or the scenario has neither groups nor training.
fn where_it_ran(rep: &mut Report, r: &SweepResult) {
    use std::fmt::Write as _;
    let cells: Vec<(String, &Placement)> = r
        .cells
        .iter()
        .filter_map(|c| {
            let run = r.runs.iter().find(|x| x.cell == c.cell)?;
            Some((cell_label(&c.params), run.placement.as_ref()?))
        })
        .collect();
    if cells
        .iter()
        .all(|(_, p)| p.groups.is_empty() && p.jobs.is_empty())
    {
        return;
    }
    let seed = r.header.seeds.first().copied().unwrap_or(1);
    rep.section("Where the work ran");
    let mut t = format!(
        "Seed {seed} of each cell: each placement group's nodes when it was created (the \
         policy's choice) and at the end of the run (a failure may have moved a bundle), each \
         training job's mean step and communication time per step, and the bytes on the \
         leaf–spine links.\n\n"
    );
    if cells.iter().any(|(_, p)| !p.groups.is_empty()) {
        t.push_str(
            "| cell | placement group | created on | racks | at the end |\n|---|---|---|---|---|\n",
        );
        for (label, p) in &cells {
            for g in &p.groups {
                let _ = writeln!(
                    t,
                    "| {} | {} | {} | {} | {} |",
                    md_escape(label),
                    md_escape(&g.name),
                    g.created_on.join(" "),
                    g.racks,
                    g.ended_on.join(" ")
                );
            }
        }
        t.push('\n');
    }
    t.push_str("| cell | training job | step time | communication per step |\n|---|---|---|---|\n");
    for (label, p) in &cells {
        for j in &p.jobs {
            let _ = writeln!(
                t,
                "| {} | {} | {:.4} s | {:.4} s |",
                md_escape(label),
                md_escape(&j.name),
                j.step_s,
                j.communication_s
            );
        }
    }
    t.push('\n');
    if cells.iter().any(|(_, p)| p.spine_link_bytes.is_some()) {
        t.push_str("| cell | leaf–spine link-bytes |\n|---|---|\n");
        for (label, p) in &cells {
            let _ = writeln!(
                t,
                "| {} | {} |",
                md_escape(label),
                p.spine_link_bytes.map_or("-".into(), plot::fmt_bytes)
            );
        }
        t.push('\n');
    }
    let diff = placement::differences(&cells);
    if diff.is_empty() {
        t.push_str(
            "**What differed:** nothing here: every cell placed its groups on the same nodes, \
             and its jobs communicated for the same time per step.\n\n",
        );
    } else {
        t.push_str("**What differed:**\n\n");
        for d in diff {
            let _ = writeln!(t, "- {d}");
        }
        t.push('\n');
    }
    rep.md.push_str(&t);
}

/// Writes the sweep's plots (unless `plots` is false) and `report.md` into `dir`, which
/// already holds `data`. `lines`: the experiment's `plot` lines (empty: defaults);
/// `representative`: the first cell's first seed's plot data, for `timeline` and
/// `utilization` plots. `table`: the printed table.
pub fn write(
    dir: &Path,
    r: &SweepResult,
    lines: &[Plot],
    representative: Option<&Representative>,
    table: &str,
    data: &[String],
    plots: bool,
) -> Result<Written, String> {
    let h = &r.header;
    let mut rep = Report::new(
        dir,
        &format!("orrery sweep: {} · experiment {}", h.scenario, h.experiment),
    );
    rep.facts(&[
        ("orrery", h.orrery.clone()),
        ("scenario", h.scenario.clone()),
        ("scenario hash", h.scenario_hash.clone()),
        ("experiment", h.experiment.clone()),
        ("swept", h.params.join(", ")),
        ("cells", h.cells.len().to_string()),
        ("seeds", h.seeds_label()),
    ]);
    let ci_note = format!("95% CI of the mean over seeds {}", h.seeds_label());
    let metric = |m: &str| h.metrics.iter().position(|x| x == m);
    if plots {
        rep.section("Plots");
        for p in plan_plots(r, lines) {
            match p.kind.as_str() {
                "heatmap" => {
                    let idx = |name: &str| h.params.iter().position(|x| x == name);
                    let (Some(x), Some(y)) = (
                        p.args.first().and_then(|a| idx(a)),
                        p.args.get(1).and_then(|a| idx(a)),
                    ) else {
                        rep.note(format!(
                            "heatmap({}): needs two swept parameters",
                            p.args.join(", ")
                        ));
                        continue;
                    };
                    let others = if h.params.len() > 2 {
                        " (mean over the other swept values)"
                    } else {
                        ""
                    };
                    for k in 0..h.metrics.len() {
                        let map = heatmap_data(r, k, x, y);
                        let col = measure::column(&h.metrics[k]);
                        let drawn = plot::heatmap(
                            &rep.stem(&format!("heatmap-{}", slug(&col))),
                            &format!("{}: mean {col}{others}", h.experiment),
                            &map,
                        );
                        rep.plot(
                            &format!("Mean {col} over {} and {}", map.x_name, map.y_name),
                            drawn,
                        );
                    }
                }
                "bars" | "cdf" => {
                    let m = p.args.first().map(String::as_str).unwrap_or("");
                    let Some(k) = metric(m) else {
                        rep.note(format!(
                            "{}({m}): `{m}` is not among the experiment's metrics ({})",
                            p.kind,
                            h.metrics.join(", ")
                        ));
                        continue;
                    };
                    let col = measure::column(m);
                    if p.kind == "bars" {
                        let drawn = plot::comparison(
                            &rep.stem(&format!("bars-{}", slug(&col))),
                            &format!("{}: {col} per cell", h.experiment),
                            &ci_note,
                            &[bars_data(r, k)],
                        );
                        rep.plot(&format!("{col} per cell with 95% intervals"), drawn);
                    } else {
                        let (name, unit) = super::name_unit(&col);
                        let drawn = plot::cdf(
                            &rep.stem(&format!("cdf-{}", slug(&col))),
                            &format!("{}: {col} over seeds, per cell", h.experiment),
                            &name,
                            &unit,
                            &cdf_data(r, k),
                        );
                        rep.plot(&format!("CDF of {col} over seeds per cell"), drawn);
                    }
                }
                "timeline" | "utilization" => match representative {
                    None => rep.note(format!(
                        "{}: drawn from a simulated run; these shards carry none (shard 0 \
                         does; `orrery run` a cell's scenario to see it)",
                        p.kind
                    )),
                    Some(run) => {
                        let first = r
                            .cells
                            .first()
                            .map(|c| cell_label(&c.params))
                            .unwrap_or_default();
                        let seed = h.seeds.first().copied().unwrap_or(1);
                        let title = format!("{}: {first}, seed {seed}", h.experiment);
                        if p.kind == "timeline" {
                            let drawn = plot::timeline_of(
                                &rep.stem("timeline"),
                                &format!("{title} ({})", run.rows_described),
                                &run.timeline,
                                run.horizon_s,
                                &run.rows_are,
                            );
                            rep.plot(&format!("Device timeline of {first}, seed {seed}"), drawn);
                        } else {
                            let drawn = plot::utilization(
                                &rep.stem("utilization"),
                                &title,
                                &run.utilization,
                                run.horizon_s,
                            );
                            rep.plot(&format!("Utilization of {first}, seed {seed}"), drawn);
                        }
                    }
                },
                other => rep.note(format!("plot {other}: not drawn by sweeps")),
            }
        }
    }
    rep.section("Summary");
    rep.pre(table);
    where_it_ran(&mut rep, r);
    let what = |f: &str| match f {
        "runs.csv" => "one row per cell and seed",
        "summary.csv" => "per cell: runs, and per metric mean and 95% interval",
        "summary.json" => "the header and per cell every aggregate",
        _ => "data",
    };
    let listed: Vec<(String, &str)> = data.iter().map(|f| (f.clone(), what(f))).collect();
    rep.finish(&listed)
}
