//! `orrery compare`: `comparison.{png,svg}` (each kind's headline figures in their own unit —
//! training step time, steps/h, $/step, kWh/step; tasks makespan and tasks/s; services
//! requests served/s, p99 latency, SLO attainment — and the cluster's cost and energy over the
//! window, per scenario, mean with its 95% interval over the seeds) and `report.md`.

use std::path::Path;

use super::{Report, Written, ci};
use crate::experiment::compare::CompareReport;
use crate::plot::{self, Bar, MetricBars, Missing};

/// Whether a column of the report is plotted: every per-kind figure but raw counts, p50
/// latency and goodput (in the table and the files), and cost and energy of the cluster.
pub fn plotted(key: &str) -> bool {
    const SKIP: &[&str] = &[
        "horizon_s",
        ".arrived",
        ".served",
        "tasks.completed",
        ".latency_p50_s",
        ".goodput",
    ];
    !SKIP
        .iter()
        .any(|s| key == *s || (s.starts_with('.') && key.ends_with(s)))
}

/// One panel per plotted column, a bar per scenario; a scenario without a value is listed
/// under the panel with why (`no price in catalog: MI250X`, [`crate::experiment::kinds::why_missing`];
/// `no value` where it has no such item). A panel no scenario has a value for is kept when
/// some scenario lacks the price or power it needs, so the reason shows.
pub fn metric_bars(r: &CompareReport) -> Vec<MetricBars> {
    use crate::experiment::kinds::why_missing;
    r.columns
        .iter()
        .enumerate()
        .filter(|(_, c)| plotted(&c.key))
        .map(|(k, c)| {
            let mut bars = Vec::new();
            let mut missing = Vec::new();
            let mut explained = false;
            for row in &r.rows {
                let mean = row
                    .metrics
                    .get(k)
                    .and_then(|a| a.mean.filter(|m| m.is_finite()).map(|m| (a, m)));
                match mean {
                    Some((a, mean)) => bars.push(Bar {
                        group: row.name.clone(),
                        value: mean,
                        ci: ci(mean, a.ci_low, a.ci_high),
                    }),
                    None => {
                        let why = why_missing(
                            &c.key,
                            row.price_missing.as_deref(),
                            row.power_missing.as_deref(),
                        );
                        explained |= why.is_some();
                        missing.push(Missing {
                            group: row.name.clone(),
                            why: why.unwrap_or("no value").to_string(),
                        });
                    }
                }
            }
            (
                explained,
                MetricBars {
                    name: c.label.clone(),
                    unit: c.unit.into(),
                    bars,
                    missing,
                },
            )
        })
        .filter(|(explained, m)| !m.bars.is_empty() || *explained)
        .map(|(_, m)| m)
        .collect()
}

/// Writes `comparison.{png,svg}` (unless `plots` is false) and `report.md` into `dir`, which
/// already holds `data`. `table`: the printed table.
pub fn write(
    dir: &Path,
    r: &CompareReport,
    table: &str,
    data: &[String],
    plots: bool,
) -> Result<Written, String> {
    let seeds = crate::experiment::drill::seeds_label(&r.seeds);
    let names: Vec<&str> = r.rows.iter().map(|x| x.name.as_str()).collect();
    let mut rep = Report::new(dir, &format!("orrery compare: {}", names.join(" vs ")));
    let mut facts = vec![("orrery", r.orrery.clone()), ("seeds", seeds.clone())];
    for row in &r.rows {
        facts.push((
            "scenario",
            format!("{} (hash {})", row.file, row.scenario_hash),
        ));
        facts.push(("window", format!("{}: {}", row.name, row.window.label())));
    }
    rep.facts(&facts);
    if plots {
        rep.section("Comparison");
        let drawn = plot::comparison(
            &rep.stem("comparison"),
            &format!("{}: per scenario", names.join(" vs ")),
            &format!("95% CI of the mean over seeds {seeds}"),
            &metric_bars(r),
        );
        rep.plot(
            "Each kind of work in its own unit, and the cluster's cost and energy, per scenario",
            drawn,
        );
    }
    rep.section("Summary");
    rep.pre(table);
    rep.md.push_str(
        "Each kind of work is reported in its own unit; nothing is added across kinds. \
         Cost = cluster price × window; energy = cluster power (TDP) × window (an upper bound: \
         idle power is not modelled). $/step and kWh/step: the job's devices' share of the \
         cluster's price and TDP over the job's wall time, per step kept. SLO attainment = \
         requests served within the target / requests that arrived (dropped, lost and still \
         queued requests count against it). Intervals: ",
    );
    rep.md.push_str(&r.interval);
    rep.md.push_str(".\n\n");
    let what = |f: &str| match f {
        "compare.csv" => "per scenario: mean and 95% interval of every column",
        "compare.json" => {
            "schema version, labelled columns (key with unit, kind, item), every run's values and every aggregate"
        }
        _ => "data",
    };
    let listed: Vec<(String, &str)> = data.iter().map(|f| (f.clone(), what(f))).collect();
    rep.finish(&listed)
}
