//! `orrery run`: `timeline.{png,svg}` (a Gantt row per device, or per node or rack on large
//! clusters: `super::timeline`; CPU rows for nodes with CPU work), `timeline.csv` (the spans
//! behind it), `utilization.{png,svg}` (busy and allocated fraction per device class, and of
//! the CPUs per node type), `links.{png,svg}` (each link class's
//! utilization over time, when the run moved bytes on its network),
//! `queueing_cdf.{png,svg}` (task queueing delay per group) and `latency_cdf.{png,svg}`
//! (request latency per service) when the run has such samples, and `report.md`.

use std::path::Path;

use super::timeline::{timeline_csv, timeline_rows};
use super::{Report, Written};
use crate::plot::{self, SampleSet, UtilSeries};
use crate::report::Header;
use crate::sim::RunResult;
use crate::sim::metrics::Utilization;

/// Most points a utilization line is drawn with; a longer step function is drawn as its
/// time-weighted mean per bin of `[0, t_end]` (`utilization.csv` keeps every change).
pub const UTIL_POINTS: usize = 2_000;

/// A step function ((time, level) at each change, ascending) as at most [`UTIL_POINTS`]
/// points: itself, or its mean over each of `UTIL_POINTS / 2` bins of `[0, t_end]`.
pub fn drawn_steps(pts: &[(f64, f64)], t_end: f64) -> Vec<(f64, f64)> {
    if pts.len() <= UTIL_POINTS || t_end.is_nan() || t_end <= 0.0 {
        return pts.to_vec();
    }
    let bins = UTIL_POINTS / 2;
    let res = t_end / bins as f64;
    let mut area = vec![0.0f64; bins];
    for (i, &(t, v)) in pts.iter().enumerate() {
        let end = pts.get(i + 1).map_or(t_end, |p| p.0).min(t_end);
        let start = t.max(0.0);
        if start >= end {
            continue;
        }
        // Every bin the segment overlaps gets its overlap (bounds from the bin index, so a
        // start that rounds onto a bin edge never drops the rest of the segment).
        let first = ((start / res) as usize).min(bins - 1);
        let last = ((end / res) as usize).min(bins - 1);
        for (b, a) in area.iter_mut().enumerate().take(last + 1).skip(first) {
            let lo = (b as f64 * res).max(start);
            let hi = if b + 1 == bins {
                end
            } else {
                ((b + 1) as f64 * res).min(end)
            };
            if hi > lo {
                *a += v * (hi - lo);
            }
        }
    }
    area.iter()
        .enumerate()
        .map(|(b, a)| (b as f64 * res, a / res))
        .collect()
}

/// Busy (solid) and allocated (dashed) fraction per device class, labelled with the real
/// device counts and means.
pub fn util_series(r: &RunResult) -> Vec<UtilSeries> {
    let t_end = r.metrics.horizon;
    let frac = |pts: &[(f64, f64)], u: &Utilization| -> Vec<(f64, f64)> {
        drawn_steps(pts, t_end)
            .into_iter()
            .map(|(t, b)| (t, (b / u.devices as f64).clamp(0.0, 1.0)))
            .collect()
    };
    let mut out = Vec::new();
    for (class, u) in r.metrics.utilization.iter().filter(|(_, u)| u.devices > 0) {
        out.push(UtilSeries {
            label: format!(
                "{class} ({} devices): busy {:.1} %",
                u.devices,
                u.busy_fraction * 100.0
            ),
            points: frac(&u.busy_series, u),
            dashed: false,
        });
        out.push(UtilSeries {
            label: format!("allocated {:.1} % (dashed)", u.allocated_fraction * 100.0),
            points: frac(&u.allocated_series, u),
            dashed: true,
        });
    }
    cpu_series(r, &mut out);
    out
}

/// Busy (solid) and allocated (dashed) fraction of the CPUs of each node type whose CPUs some
/// work held, labelled with the CPU counts and means (after the device classes' lines).
fn cpu_series(r: &RunResult, out: &mut Vec<UtilSeries>) {
    let t_end = r.metrics.horizon;
    let mut cpu = Vec::new();
    for (name, u) in &r.metrics.cpu_utilization_by_node_type {
        if u.cpus <= 0.0 || u.allocated_fraction == 0.0 && u.busy_fraction == 0.0 {
            continue;
        }
        let frac = |pts: &[(f64, f64)]| -> Vec<(f64, f64)> {
            drawn_steps(pts, t_end)
                .into_iter()
                .map(|(t, b)| (t, (b / u.cpus).clamp(0.0, 1.0)))
                .collect()
        };
        cpu.push(UtilSeries {
            label: format!(
                "CPUs of {name} ({} CPUs): busy {:.1} %",
                plot::fmt_num(u.cpus),
                u.busy_fraction * 100.0
            ),
            points: frac(&u.busy_series),
            dashed: false,
        });
        cpu.push(UtilSeries {
            label: format!("allocated {:.1} % (dashed)", u.allocated_fraction * 100.0),
            points: frac(&u.allocated_series),
            dashed: true,
        });
    }
    out.extend(cpu);
}

/// Each link class's mean utilization per window of the run (`sim::links`), labelled with its
/// real link count, bytes and peak; classes that moved nothing left out.
pub fn link_series(r: &RunResult) -> Vec<UtilSeries> {
    let Some(series) = &r.timeline.links else {
        return Vec::new();
    };
    series
        .utilization()
        .into_iter()
        .filter_map(|(class, points)| {
            let m = r.metrics.links.get(&class)?;
            (m.link_bytes > 0.0).then(|| UtilSeries {
                label: format!(
                    "{class} ({} links): {}, mean {:.2} %, peak {:.0} %",
                    m.links,
                    plot::fmt_bytes(m.link_bytes),
                    m.mean_utilization * 100.0,
                    m.peak_utilization * 100.0
                ),
                points,
                dashed: false,
            })
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

/// The LLM services' TTFT, TPOT and end-to-end samples, one set per service each (the
/// services with finished requests), with the plot's stem.
pub fn llm_sets(r: &RunResult) -> [(&'static str, &'static str, Vec<SampleSet>); 3] {
    use crate::sim::llm::metrics::LlmServiceMetrics;
    use crate::sim::metrics::Stats;
    let of = |pick: fn(&LlmServiceMetrics) -> (&Vec<f64>, &Stats)| {
        r.metrics
            .llm_services
            .iter()
            .filter(|s| !pick(s).0.is_empty())
            .map(|s| SampleSet {
                label: format!("{}.{}", s.workload, s.name),
                values: pick(s).0.clone(),
                whole: whole(pick(s).1),
            })
            .collect()
    };
    [
        (
            "time to first token",
            "ttft_cdf",
            of(|s| (&s.ttft_samples, &s.ttft)),
        ),
        (
            "time per output token",
            "tpot_cdf",
            of(|s| (&s.tpot_samples, &s.tpot)),
        ),
        (
            "end-to-end latency",
            "e2e_cdf",
            of(|s| (&s.e2e_samples, &s.e2e)),
        ),
    ]
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

/// Write the plots' data table `name` (CSV text) into `dir` in the run's format; the file's
/// name as written.
fn data_file(
    dir: &Path,
    h: &Header,
    format: crate::report::Format,
    name: &str,
    csv: &str,
) -> Result<String, String> {
    let file = format.file(name);
    let path = dir.join(&file);
    format
        .encode(name, csv, h)
        .and_then(|b| crate::atomic::write_atomic(&path, &b))
        .map_err(|e| format!("cannot write {e}"))?;
    Ok(file)
}

/// `llm_kv.csv`: each LLM service's KV cache occupancy per window.
fn kv_csv(kv: &[&crate::sim::llm::metrics::LlmServiceMetrics]) -> String {
    #[derive(serde::Serialize, Default)]
    struct KvRow {
        service: String,
        window_start_s: f64,
        kv_occupancy_fraction: f64,
    }
    crate::report::rows::csv(kv.iter().flat_map(|s| {
        s.kv_series.iter().map(|&(t0, f)| KvRow {
            service: format!("{}.{}", s.workload, s.name),
            window_start_s: t0,
            kv_occupancy_fraction: f,
        })
    }))
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
    format: crate::report::Format,
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
    for m in &h.tiers {
        facts.push(("tier", m.clone()));
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
    let has_timeline = !t.devices.is_empty() || !t.cpu_spans.is_empty();
    let rows = timeline_rows(t, r.metrics.horizon);
    if has_timeline {
        let file = data_file(dir, h, format, "timeline.csv", &timeline_csv(&rows))?;
        rep.out.files.push(file);
    }
    // KV-cache occupancy over time of the LLM services: its data beside the timeline's.
    let kv: Vec<&crate::sim::llm::metrics::LlmServiceMetrics> = r
        .metrics
        .llm_services
        .iter()
        .filter(|s| !s.kv_series.is_empty())
        .collect();
    if !kv.is_empty() {
        let file = data_file(dir, h, format, "llm_kv.csv", &kv_csv(&kv))?;
        rep.out.files.push(file);
    }
    if plots && !kv.is_empty() {
        rep.section("KV cache");
        let series: Vec<UtilSeries> = kv
            .iter()
            .map(|s| UtilSeries {
                label: format!(
                    "{}.{}: mean {:.0} %, peak {:.0} %",
                    s.workload,
                    s.name,
                    s.kv_utilization_mean_fraction * 100.0,
                    s.kv_utilization_peak_fraction * 100.0
                ),
                points: s.kv_series.clone(),
                dashed: false,
            })
            .collect();
        let drawn = plot::utilization(
            &rep.stem("llm_kv"),
            &format!("{name}: KV-cache occupancy per LLM service (mean over its replicas)"),
            &series,
            r.metrics.horizon,
        );
        rep.plot("KV-cache occupancy over time", drawn);
    }
    if plots {
        rep.section("Timeline");
        if has_timeline {
            let shown = format!(
                "{}{}",
                rows.describe(),
                if t.truncated {
                    "; span recording stopped at its limit"
                } else {
                    ""
                }
            );
            let mut per = if rows.per == "device" {
                "each device".to_string()
            } else {
                format!("each {} (share of its device-time)", rows.per)
            };
            if rows.cpu_rows > 0 {
                per.push_str(" and CPUs");
            }
            let title = format!("{name}: what {per} did (seed {})", h.seed);
            let drawn = plot::timeline_of(
                &rep.stem("timeline"),
                &title,
                &rows.rows,
                r.metrics.horizon,
                rows.per,
            );
            rep.plot(&format!("Device timeline, {shown}"), drawn);
        } else {
            rep.note("timeline: the run recorded no devices and no CPU work".into());
        }

        rep.section("Utilization");
        let series = util_series(r);
        if series.is_empty() {
            rep.note("utilization: the cluster has no devices and no work held a CPU".into());
        } else {
            let drawn = plot::utilization(
                &rep.stem("utilization"),
                &format!(
                    "{name}: busy (computing, communicating, serving) and allocated devices and CPUs"
                ),
                &series,
                r.metrics.horizon,
            );
            rep.plot(
                "Utilization per device class and CPUs per node type: busy solid, allocated dashed",
                drawn,
            );
        }
        let links = link_series(r);
        if !links.is_empty() {
            let window = r.timeline.links.as_ref().map_or(0.0, |l| l.window_s);
            let drawn = plot::utilization(
                &rep.stem("links"),
                &format!(
                    "{name}: link utilization per class (mean over its links, {} s windows)",
                    plot::fmt_num(window)
                ),
                &links,
                r.metrics.horizon,
            );
            rep.plot("Link utilization per class over time", drawn);
        }

        rep.section("Latency");
        let (queue, lat) = latency_sets(r);
        let llm = llm_sets(r);
        if queue.is_empty() && lat.is_empty() && llm.iter().all(|(_, _, s)| s.is_empty()) {
            rep.note("latency: the run has no task or request samples".into());
        }
        for (what, stem, sets) in llm {
            if sets.is_empty() {
                continue;
            }
            let drawn = plot::cdf(
                &rep.stem(stem),
                &format!("{name}: LLM {what}"),
                what,
                "s",
                &sets,
            );
            rep.plot(&format!("CDF of LLM {what} per service"), drawn);
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

    if m.links.values().any(|l| l.link_bytes > 0.0) {
        rep.section("Link traffic");
        let mut t = String::from(
            "Bytes summed over each class's links (a flow crossing two spine links counts twice); \
             mean utilization = those bytes ÷ (the class's capacity × the run); peak = the \
             highest load ÷ capacity any single link of the class carried during the run.\n\n\
             | link class | links | capacity | link-bytes | mean utilization | peak utilization |\n\
             |---|---|---|---|---|---|\n",
        );
        for (c, l) in &m.links {
            t.push_str(&format!(
                "| {c} | {} | {}/s | {} | {:.3} % | {:.1} % |\n",
                l.links,
                plot::fmt_bytes(l.capacity_bytes_per_s),
                plot::fmt_bytes(l.link_bytes),
                l.mean_utilization * 100.0,
                l.peak_utilization * 100.0
            ));
        }
        t.push('\n');
        rep.md.push_str(&t);
    }

    // A Parquet table holds what its CSV would.
    let what = |f: &str| match f
        .strip_suffix(".parquet")
        .map_or(f.to_string(), |t| format!("{t}.csv"))
        .as_str()
    {
        "run.json" => "every metric with the header above",
        "tasks.csv" => "per task group: counts, queueing delay and run time statistics",
        "placement_groups.csv" => {
            "per placement group: state, pending time, nodes, fallback option, domain"
        }
        "training.csv" => "per training job: steps, step time, goodput",
        "llm_kv.csv" => {
            "per LLM service: KV-cache occupancy per window (the data of the llm_kv plot)"
        }
        "services.csv" => "per service: throughput, latency, SLO violations",
        "utilization.csv" => {
            "busy and allocated devices per device class and node type at each change (the data of the utilization plot)"
        }
        "cpu_utilization.csv" => {
            "busy and allocated CPUs per node and node type at each change (the CPU lines of the utilization plot)"
        }
        "links.csv" => "per link class: links, capacity, bytes moved, mean and peak utilization",
        "trace.json" => "what every device did when, for Perfetto / chrome://tracing",
        _ => "data",
    };
    let mut listed: Vec<(String, &str)> = data.iter().map(|f| (f.clone(), what(f))).collect();
    if has_timeline {
        listed.push((
            format.file("timeline.csv"),
            "the spans the timeline plot draws, per row",
        ));
    }
    rep.finish(&listed)
}
