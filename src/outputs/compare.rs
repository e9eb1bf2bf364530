//! `orrery compare`: `comparison.{png,svg}` (makespan, throughput, cost, energy, perf/$ and
//! perf/W per scenario, mean with its 95% interval over the seeds) and `report.md`.

use std::path::Path;

use super::{Report, Written, ci};
use crate::experiment::compare::CompareReport;
use crate::plot::{self, Bar, MetricBars};

/// The compared columns that are plotted, with their panel names and units.
pub const PLOTTED: &[(&str, &str, &str)] = &[
    ("makespan_s", "makespan", "s"),
    ("throughput_per_h", "throughput", "units/h"),
    ("cost_usd", "cost", "$"),
    ("energy_kwh", "energy", "kWh"),
    ("perf_per_dollar", "perf/$", "units/$"),
    ("perf_per_watt", "perf/W", "units/Wh"),
];

/// One panel per plotted column, a bar per scenario (scenarios without a value left out).
pub fn metric_bars(r: &CompareReport) -> Vec<MetricBars> {
    PLOTTED
        .iter()
        .filter_map(|&(col, name, unit)| {
            let k = r.columns.iter().position(|c| c == col)?;
            Some(MetricBars {
                name: name.into(),
                unit: unit.into(),
                bars: r
                    .rows
                    .iter()
                    .filter_map(|row| {
                        let a = row.metrics.get(k)?;
                        let mean = a.mean.filter(|m| m.is_finite())?;
                        Some(Bar {
                            group: row.name.clone(),
                            value: mean,
                            ci: ci(mean, a.ci_low, a.ci_high),
                        })
                    })
                    .collect(),
            })
        })
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
            "Makespan, throughput, cost, energy, perf/$ and perf/W per scenario",
            drawn,
        );
    }
    rep.section("Summary");
    rep.pre(table);
    rep.md.push_str(
        "Cost = cluster price × simulated hours; energy = cluster power (TDP) × simulated hours \
         (an upper bound: idle power is not modelled); perf/$ = work units / cost; perf/W = \
         work units per Wh.\n\n",
    );
    let what = |f: &str| match f {
        "compare.csv" => "per scenario: mean and 95% interval of every column",
        "compare.json" => "every run's values and every aggregate",
        _ => "data",
    };
    let listed: Vec<(String, &str)> = data.iter().map(|f| (f.clone(), what(f))).collect();
    rep.finish(&listed)
}
