//! `orrery run`: `timeline.{png,svg}` (a Gantt row per device, the first 64), `timeline.csv`
//! (the spans behind it), `utilisation.{png,svg}` (busy fraction per device class),
//! `queueing_cdf.{png,svg}` (task queueing delay per group) and `latency_cdf.{png,svg}`
//! (request latency per service) when the run has such samples, and `report.md`.

use std::fmt::Write as _;
use std::path::Path;

use super::{Report, Written};
use crate::plot::{self, SampleSet, SpanKind, TimelineRow, UtilSeries};
use crate::report::Header;
use crate::sim::RunResult;
use crate::sim::timeline::{SpanKind as SimKind, Timeline};

fn kind(k: SimKind) -> SpanKind {
    match k {
        SimKind::Compute => SpanKind::Compute,
        SimKind::Communication => SpanKind::Communication,
        SimKind::Checkpoint => SpanKind::Checkpoint,
        SimKind::Failed => SpanKind::Failed,
    }
}

/// Rows with at most this many spans are drawn exactly; busier rows are reduced to
/// [`TIMELINE_BINS`] bins (see [`timeline_rows`]).
pub const EXACT_SPANS: usize = 300;
/// Bins a busy row is reduced to (each drawn as up to four slices; ~9 pixels a bin, so a
/// 10 % share is still a visible pixel).
pub const TIMELINE_BINS: usize = 150;

/// One row per device of the first [`plot::MAX_TIMELINE_ROWS`], each with its spans (one
/// pass over the spans). Back-to-back spans of the same kind are joined. A row left with more
/// than [`EXACT_SPANS`] spans (a long training job's steps) is drawn at the plot's resolution:
/// `[0, t_end]` cut into [`TIMELINE_BINS`] bins, each drawn as consecutive slices whose widths
/// are the shares of the bin each kind took (compute, communication, checkpoint, failed; the
/// rest idle) — a training job's 13 % of communication shows as 13 % of every bin instead of
/// vanishing. This keeps the images small and the plot truthful at the scale it is seen;
/// `timeline.csv` holds these rows.
pub fn timeline_rows(t: &Timeline, t_end: f64) -> Vec<TimelineRow> {
    let n = t.devices.len().min(plot::MAX_TIMELINE_ROWS);
    let mut rows: Vec<TimelineRow> = t.devices[..n]
        .iter()
        .map(|d| TimelineRow {
            label: d.clone(),
            spans: Vec::new(),
        })
        .collect();
    for s in &t.spans {
        for &d in &t.sets[s.set as usize] {
            if let Some(row) = rows.get_mut(d as usize) {
                row.spans.push(plot::Span {
                    start: s.start,
                    end: s.end,
                    kind: kind(s.kind),
                });
            }
        }
    }
    let t_end = rows
        .iter()
        .flat_map(|r| r.spans.iter().map(|s| s.end))
        .fold(if t_end.is_finite() { t_end } else { 0.0 }, f64::max);
    for row in &mut rows {
        row.spans.sort_by(|a, b| a.start.total_cmp(&b.start));
        row.spans = join(std::mem::take(&mut row.spans));
        if row.spans.len() > EXACT_SPANS && t_end > 0.0 {
            row.spans = join(binned(&row.spans, t_end));
        }
    }
    rows
}

/// Joins back-to-back spans of the same kind (sorted by start).
fn join(spans: Vec<plot::Span>) -> Vec<plot::Span> {
    let mut out: Vec<plot::Span> = Vec::with_capacity(spans.len());
    for s in spans {
        match out.last_mut() {
            Some(l) if l.kind == s.kind && l.end == s.start => l.end = s.end,
            _ => out.push(s),
        }
    }
    out
}

/// The row at [`TIMELINE_BINS`] bins over `[0, t_end]`.
fn binned(spans: &[plot::Span], t_end: f64) -> Vec<plot::Span> {
    let res = t_end / TIMELINE_BINS as f64;
    let mut time = vec![[0.0f64; 4]; TIMELINE_BINS];
    for s in spans {
        let k = SpanKind::ALL.iter().position(|x| *x == s.kind).unwrap_or(0);
        let first = ((s.start / res).floor().max(0.0) as usize).min(TIMELINE_BINS - 1);
        let last = ((s.end / res).ceil().max(0.0) as usize).min(TIMELINE_BINS);
        for (b, bin) in time.iter_mut().enumerate().take(last).skip(first) {
            let (lo, hi) = (b as f64 * res, (b + 1) as f64 * res);
            bin[k] += (s.end.min(hi) - s.start.max(lo)).max(0.0);
        }
    }
    let mut out = Vec::new();
    for (b, bin) in time.iter().enumerate() {
        let mut at = b as f64 * res;
        for (k, share) in bin.iter().enumerate() {
            if *share > 0.0 {
                let end = (at + share).min(((b + 1) as f64 * res).min(t_end));
                if end > at {
                    out.push(plot::Span {
                        start: at,
                        end,
                        kind: SpanKind::ALL[k],
                    });
                }
                at = end;
            }
        }
    }
    out
}

/// `timeline.csv`: `device,start_s,end_s,kind`, the spans of each plotted row (see
/// [`timeline_rows`]), rows in device order.
pub fn timeline_csv(rows: &[TimelineRow]) -> String {
    let mut o = String::from("device,start_s,end_s,kind\n");
    for r in rows {
        for s in &r.spans {
            let _ = writeln!(o, "{},{},{},{}", r.label, s.start, s.end, s.kind.name());
        }
    }
    o
}

/// Utilisation series (busy fraction) per device class.
pub fn util_series(r: &RunResult) -> Vec<UtilSeries> {
    r.metrics
        .utilization
        .iter()
        .filter(|(_, u)| u.devices > 0)
        .map(|(class, u)| UtilSeries {
            label: format!("{class} ({} devices)", u.devices),
            points: u
                .series
                .iter()
                .map(|&(t, b)| (t, (b / u.devices as f64).clamp(0.0, 1.0)))
                .collect(),
        })
        .collect()
}

/// Task queueing delays per group and request latencies per service (sets without samples
/// left out).
pub fn latency_sets(r: &RunResult) -> (Vec<SampleSet>, Vec<SampleSet>) {
    let queue = r
        .metrics
        .tasks
        .iter()
        .filter(|t| !t.queueing_samples.is_empty())
        .map(|t| SampleSet {
            label: format!("{}.{}", t.workload, t.name),
            values: t.queueing_samples.clone(),
            whole: whole(&t.queueing_delay),
        })
        .collect();
    let lat = r
        .metrics
        .services
        .iter()
        .filter(|s| !s.latency_samples.is_empty())
        .map(|s| SampleSet {
            label: format!("{}.{}", s.workload, s.name),
            values: s.latency_samples.clone(),
            whole: whole(&s.latency),
        })
        .collect();
    (queue, lat)
}

/// The legend's count and quantiles: those of every sample the run saw, not of the at most
/// `MAX_SAMPLES` it kept for drawing.
fn whole(s: &crate::sim::metrics::Stats) -> Option<crate::plot::Whole> {
    Some(crate::plot::Whole {
        count: s.count,
        p50: s.p50,
        p99: s.p99,
    })
}

/// The scenario's short name (file stem) for titles.
fn short(scenario: &str) -> &str {
    let s = scenario.rsplit('/').next().unwrap_or(scenario);
    s.strip_suffix(".orr").unwrap_or(s)
}

/// Writes the plots (unless `plots` is false), `timeline.csv` and `report.md` of a run into
/// `dir`, which already holds `data` (the files [`crate::report::write`] wrote, plus
/// `trace.json` when written). Returns what this step wrote.
pub fn write(
    dir: &Path,
    h: &Header,
    r: &RunResult,
    data: &[String],
    plots: bool,
) -> Result<Written, String> {
    let name = short(&h.scenario);
    let mut rep = Report::new(dir, &format!("orrery run: {name}"));
    let mut facts = vec![
        ("orrery", h.orrery.clone()),
        ("scenario", h.scenario.clone()),
        ("scenario hash", h.scenario_hash.clone()),
        ("seed", h.seed.to_string()),
    ];
    if let Some(p) = &h.policy {
        facts.push(("policy", p.clone()));
    }
    if let Some(f) = &h.failures {
        facts.push(("failures", format!("only the `{f}` block")));
    }
    if let Some(t) = &h.horizon {
        facts.push(("horizon", t.clone()));
    }
    for m in &h.model_sources {
        facts.push(("compute model", m.clone()));
    }
    for m in &h.network_models {
        facts.push(("network model", m.clone()));
    }
    rep.facts(&facts);
    rep.md.push_str(&format!(
        "Reproduce: `orrery run {}{}{}{} --seed {}`\n\n",
        h.scenario,
        h.policy
            .as_ref()
            .map(|p| format!(" --policy {p}"))
            .unwrap_or_default(),
        h.failures
            .as_ref()
            .map(|f| format!(" --failures {f}"))
            .unwrap_or_default(),
        h.horizon
            .as_ref()
            .map(|t| format!(" --horizon \"{t}\""))
            .unwrap_or_default(),
        h.seed
    ));

    let t = &r.timeline;
    let has_timeline = !t.devices.is_empty();
    let rows = timeline_rows(t, r.metrics.horizon);
    if has_timeline {
        let csv = timeline_csv(&rows);
        let path = dir.join("timeline.csv");
        crate::atomic::write_atomic(&path, csv.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        rep.out.files.push("timeline.csv".into());
    }
    if plots {
        rep.section("Timeline");
        if has_timeline {
            let shown = format!(
                "{}{}",
                if t.devices.len() > rows.len() {
                    format!("first {} of {} devices", rows.len(), t.devices.len())
                } else {
                    format!("{} devices", rows.len())
                },
                if t.truncated {
                    "; span recording stopped at its limit"
                } else {
                    ""
                }
            );
            let title = format!("{name}: what each device did (seed {})", h.seed);
            let drawn = plot::timeline(&rep.stem("timeline"), &title, &rows, r.metrics.horizon);
            rep.plot(&format!("Device timeline, {shown}"), drawn);
        } else {
            rep.note("timeline: the run recorded no devices".into());
        }

        rep.section("Utilisation");
        let series = util_series(r);
        if series.is_empty() {
            rep.note("utilisation: the cluster has no devices".into());
        } else {
            let drawn = plot::utilisation(
                &rep.stem("utilisation"),
                &format!("{name}: busy devices per class"),
                &series,
            );
            rep.plot("Utilisation per device class", drawn);
        }

        rep.section("Latency");
        let (queue, lat) = latency_sets(r);
        if queue.is_empty() && lat.is_empty() {
            rep.note("latency: the run has no task or request samples".into());
        }
        if !queue.is_empty() {
            let drawn = plot::cdf(
                &rep.stem("queueing_cdf"),
                &format!("{name}: task queueing delay (ready to running)"),
                "queueing delay",
                "s",
                &queue,
            );
            rep.plot("CDF of task queueing delay per group", drawn);
        }
        if !lat.is_empty() {
            let drawn = plot::cdf(
                &rep.stem("latency_cdf"),
                &format!("{name}: request latency"),
                "latency",
                "s",
                &lat,
            );
            rep.plot("CDF of request latency per service", drawn);
        }
    }

    rep.section("Summary");
    rep.pre(&crate::report::table(&r.metrics));

    // What placement made move: the reason two policies' runs differ.
    let m = &r.metrics;
    if !m.fetches.is_empty() || !m.training.is_empty() {
        rep.section("Data movement");
        let mut t = String::from(
            "Every collective, input fetch and checkpoint of the run shares one network; where\n\
             placement put the work decides what crosses it.\n\n",
        );
        if !m.fetches.is_empty() {
            t.push_str("| task group | fetches | read from other nodes | mean fetch |\n|---|---|---|---|\n");
            for f in &m.fetches {
                t.push_str(&format!(
                    "| {}.{} | {} | {:.3} GB | {:.3} s |\n",
                    f.workload,
                    f.name,
                    f.fetches,
                    f.remote_bytes / 1e9,
                    f.mean_secs
                ));
            }
            t.push('\n');
        }
        if !m.training.is_empty() {
            t.push_str("| training job | nodes | racks | communication per step | checkpoint time |\n|---|---|---|---|---|\n");
            for j in &m.training {
                let racks = m
                    .placement_groups
                    .iter()
                    .find(|p| p.workload == j.workload)
                    .map_or(0, |p| p.racks);
                t.push_str(&format!(
                    "| {}.{} | {} | {} | {:.4} s | {:.1} s |\n",
                    j.workload,
                    j.name,
                    j.nodes,
                    racks,
                    j.communication_time / j.steps_done.max(1) as f64,
                    j.checkpoint_time
                ));
            }
            t.push('\n');
        }
        rep.md.push_str(&t);
    }

    let what = |f: &str| match f {
        "run.json" => "every metric with the header above",
        "tasks.csv" => "per task group: counts, queueing delay and run time statistics",
        "placement_groups.csv" => "per placement group: state, pending time, nodes",
        "training.csv" => "per training job: steps, step time, goodput",
        "services.csv" => "per service: throughput, latency, SLO violations",
        "utilization.csv" => "busy devices per class over time (the data of the utilisation plot)",
        "trace.json" => "what every device did when, for Perfetto / chrome://tracing",
        _ => "data",
    };
    let mut listed: Vec<(String, &str)> = data.iter().map(|f| (f.clone(), what(f))).collect();
    if has_timeline {
        listed.push((
            "timeline.csv".into(),
            "the spans the timeline plot draws, per device",
        ));
    }
    rep.finish(&listed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_rows_keep_each_kinds_share_of_every_bin() {
        // 1,500 steps of 0.87 s compute + 0.13 s communication: far over EXACT_SPANS, so the
        // row is binned (10 steps a bin); every bin must still be 87 % compute and 13 %
        // communication.
        let mut spans = Vec::new();
        for i in 0..1500 {
            let t = i as f64;
            spans.push(plot::Span {
                start: t,
                end: t + 0.87,
                kind: SpanKind::Compute,
            });
            spans.push(plot::Span {
                start: t + 0.87,
                end: t + 1.0,
                kind: SpanKind::Communication,
            });
        }
        let out = binned(&spans, 1500.0);
        let total = |k: SpanKind| -> f64 {
            out.iter()
                .filter(|s| s.kind == k)
                .map(|s| s.end - s.start)
                .sum()
        };
        assert!((total(SpanKind::Compute) - 1305.0).abs() < 1e-6);
        assert!((total(SpanKind::Communication) - 195.0).abs() < 1e-6);
        let res = 1500.0 / TIMELINE_BINS as f64;
        let first_comm: f64 = out
            .iter()
            .filter(|s| s.kind == SpanKind::Communication && s.start < res)
            .map(|s| s.end - s.start)
            .sum();
        assert!((first_comm / res - 0.13).abs() < 1e-9, "{first_comm}");
    }
}
