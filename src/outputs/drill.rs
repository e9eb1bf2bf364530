//! `orrery drill`: per variant a recovery plot (`drill.{png,svg}`, or `drill-<variant>.{png,svg}`
//! with several variants: each seed's failures, detections and recoveries, and its lost
//! device-hours), `comparison.{png,svg}` (every drill metric per baseline and variant, mean
//! with its 95% interval) and `report.md` (with the windows and what the failures cost).

use std::path::Path;

use super::{Report, Written, ci, slug};
use crate::experiment::drill::{DrillReport, SeedRun};
use crate::plot::{self, Bar, DrillSeed, MetricBars, Missing, Recovery};
use crate::report::Header;
use crate::sim::metrics::TimelineEvent;

/// Failures and their recoveries from one run's failure timeline. A `crash` of a node is
/// detected at the first later `detected` of that node; it is recovered when the first
/// `job_resumed` follows a `job_stopped` the crash caused (stopped between the crash and its
/// detection), else when the node is `repaired` (at the detection if it was back earlier).
/// Unmatched steps stay `None`; an undetected failure has no recovery.
pub fn recoveries(events: &[TimelineEvent]) -> Vec<Recovery> {
    let first_after = |kind: &str, subject: Option<&str>, t: f64| {
        events
            .iter()
            .find(|e| e.kind == kind && e.time >= t && subject.is_none_or(|s| e.subject == s))
            .map(|e| e.time)
    };
    events
        .iter()
        .filter(|e| e.kind == "crash")
        .map(|c| {
            let detected = first_after("detected", Some(&c.subject), c.time);
            let stopped = events.iter().find(|e| {
                e.kind == "job_stopped" && e.time >= c.time && detected.is_none_or(|d| e.time <= d)
            });
            let recovered = match stopped {
                Some(s) => first_after("job_resumed", Some(&s.subject), s.time),
                None => first_after("repaired", Some(&c.subject), c.time),
            };
            // A node back before its loss was noticed counts as recovered at the detection.
            Recovery {
                failure: c.time,
                detected,
                recovered: recovered.zip(detected).map(|(r, d)| r.max(d)),
            }
        })
        .collect()
}

/// The drill plot's data for one variant's runs.
pub fn drill_seeds(runs: &[SeedRun]) -> Vec<DrillSeed> {
    runs.iter()
        .map(|r| DrillSeed {
            seed: r.seed,
            recoveries: recoveries(&r.timeline),
            lost_work: r
                .values
                .get("lost_device_hours")
                .copied()
                .flatten()
                .filter(|x| x.is_finite())
                .unwrap_or(0.0),
        })
        .collect()
}

/// Bars per drill metric, one per baseline and variant (mean, whiskers at the 95% interval).
pub fn metric_bars(r: &DrillReport) -> Vec<MetricBars> {
    r.columns
        .iter()
        .map(|c| {
            let mut m = MetricBars {
                name: c.label.trim().to_string(),
                unit: c.unit.to_string(),
                bars: Vec::new(),
                missing: Vec::new(),
            };
            let mut explained = false;
            for v in r.baselines.iter().chain(&r.variants) {
                let value = v
                    .aggregate(&c.key)
                    .and_then(|a| a.mean.filter(|m| m.is_finite()).map(|m| (a, m)));
                match value {
                    Some((a, mean)) => m.bars.push(Bar {
                        group: v.name.clone(),
                        value: mean,
                        ci: ci(mean, a.ci_low, a.ci_high),
                    }),
                    None => {
                        let why = crate::experiment::kinds::why_missing(
                            &c.key,
                            v.price_missing.as_deref(),
                            v.power_missing.as_deref(),
                        );
                        explained |= why.is_some();
                        m.missing.push(Missing {
                            group: v.name.clone(),
                            why: why.unwrap_or("no value").to_string(),
                        });
                    }
                }
            }
            (explained, m)
        })
        .filter(|(explained, m)| !m.bars.is_empty() || *explained)
        .map(|(_, m)| m)
        .collect()
}

/// Writes the drill's plots (unless `plots` is false) and `report.md` into `dir`, which
/// already holds `data` (the files [`crate::experiment::drill::write`] wrote). `horizon`: the simulated
/// window in seconds, if one was set. `table`: the printed table.
pub fn write(
    dir: &Path,
    h: &Header,
    r: &DrillReport,
    horizon: Option<f64>,
    table: &str,
    data: &[String],
    plots: bool,
) -> Result<Written, String> {
    let seeds = crate::experiment::drill::seeds_label(&r.seeds);
    let mut rep = Report::new(dir, &format!("orrery drill: {}", h.scenario));
    let mut facts = vec![
        ("orrery", h.orrery.clone()),
        ("scenario", h.scenario.clone()),
        ("scenario hash", h.scenario_hash.clone()),
        ("seeds", seeds.clone()),
        (
            "variants",
            r.variants
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "baselines",
            r.baselines
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "window",
            r.baselines
                .iter()
                .chain(&r.variants)
                .map(|v| format!("{}: {}", v.name, v.window.label()))
                .collect::<Vec<_>>()
                .join("; "),
        ),
        ("intervals", r.interval.clone()),
        ("cost intervals", r.cost_interval.clone()),
    ];
    facts.extend(h.tiers.iter().map(|t| ("tier", t.clone())));
    rep.facts(&facts);
    if plots {
        rep.section("Metrics per variant");
        let bars = metric_bars(r);
        if bars.is_empty() {
            rep.note("comparison: no metric had a value".into());
        } else {
            let drawn = plot::comparison(
                &rep.stem("comparison"),
                "Failure drill: metrics per variant",
                &format!("95% CI of the mean over seeds {seeds}"),
                &bars,
            );
            rep.plot(
                "Drill metrics per variant with 95% confidence intervals",
                drawn,
            );
        }
        rep.section("Recovery per seed");
        for v in &r.variants {
            let stem = if r.variants.len() == 1 {
                "drill".to_string()
            } else {
                format!("drill-{}", slug(&v.name))
            };
            let drawn = plot::drill(
                &rep.stem(&stem),
                &format!("Recovery timeline and lost work: {}", v.name),
                &drill_seeds(&v.runs),
                v.window.seconds.or(horizon).unwrap_or(f64::NAN),
                "device·h",
            );
            rep.plot(
                &format!("Failures and recoveries per seed, {}", v.name),
                drawn,
            );
        }
    }
    rep.section("Summary");
    rep.pre(table);
    if !r.unsimulated.is_empty() {
        rep.note(format!("not simulated yet: {}", r.unsimulated.join("; ")));
    }
    let what = |f: &str| match f {
        "drill.json" => {
            "the header (with the schema version), labelled columns, every run's values, every aggregate and cost"
        }
        "drill.csv" => "per baseline and variant and metric: window, n, mean, std, 95% interval",
        "cost.csv" => {
            "per variant and metric: the paired difference from its no-failure baseline (n, mean, std, paired-t 95% interval)"
        }
        "per_seed.csv" => "one row per baseline or variant and seed",
        "timeline.csv" => "every failure and recovery step of every run (the recovery plots)",
        _ => "data",
    };
    let listed: Vec<(String, &str)> = data.iter().map(|f| (f.clone(), what(f))).collect();
    rep.finish(&listed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: f64, kind: &str, subject: &str) -> TimelineEvent {
        TimelineEvent {
            time,
            kind: kind.into(),
            subject: subject.into(),
        }
    }

    #[test]
    fn pairs_crash_detection_and_resume() {
        let events = [
            ev(10.0, "crash", "r0.n1"),
            ev(12.0, "job_stopped", "w.llm"),
            ev(40.0, "detected", "r0.n1"),
            ev(70.0, "job_resumed", "w.llm"),
            ev(100.0, "crash", "r0.n2"),
            ev(130.0, "detected", "r0.n2"),
            ev(200.0, "repaired", "r0.n2"),
            ev(300.0, "crash", "r0.n3"),
            ev(400.0, "crash", "r0.n4"),
            ev(410.0, "repaired", "r0.n4"),
            ev(430.0, "detected", "r0.n4"),
        ];
        let r = recoveries(&events);
        assert_eq!(
            r,
            vec![
                Recovery {
                    failure: 10.0,
                    detected: Some(40.0),
                    recovered: Some(70.0)
                },
                Recovery {
                    failure: 100.0,
                    detected: Some(130.0),
                    recovered: Some(200.0)
                },
                Recovery {
                    failure: 300.0,
                    detected: None,
                    recovered: None
                },
                Recovery {
                    failure: 400.0,
                    detected: Some(430.0),
                    recovered: Some(430.0)
                },
            ]
        );
    }
}
