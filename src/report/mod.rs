//! Run results as files and tables: `run.json` (every metric, with the reproducibility
//! header), one CSV per kind of work (`tables.rs`: one typed row per table, `rows.rs`
//! writes them), and the table `orrery run` prints (`cpu.rs` its CPU part). Files are
//! written atomically (temp file, then rename).

pub mod catalog;
mod cluster;
pub mod columnar;
mod cpu;
pub mod rows;
mod tables;

pub use tables::csv_files;

use crate::sim::metrics::RunMetrics;
use crate::table::Table;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// What makes a run reproducible: printed and written with every result.
#[derive(Debug, Clone, Serialize)]
pub struct Header {
    pub orrery: String,
    pub scenario: String,
    pub scenario_hash: String,
    pub seed: u64,
    /// A placement policy imposed on every workload from the command line, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// The only `failures` block applied (`--failures`), if one was chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures: Option<String>,
    /// The end of the simulated window given on the command line (`--horizon`), as typed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub horizon: Option<String>,
    /// Which compute model each (accelerator, dtype) used: a calibration profile or the
    /// datasheet defaults (`RunResult::model_sources`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub model_sources: Vec<String>,
    /// How each training collective and input fetch was priced: on the link graph or, where
    /// that cannot apply, in closed form and why (`RunResult::network_models`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub network_models: Vec<String>,
    /// What the run's timeline left out at its bounds, with counts (`Timeline::limits`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub timeline_limits: Vec<String>,
    /// The maturity tier that priced each accelerator, with its evidence (`crate::maturity`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub tiers: Vec<String>,
}

impl Header {
    pub fn line(&self) -> String {
        let policy = self
            .policy
            .as_ref()
            .map(|p| format!(" · policy {p}"))
            .unwrap_or_default();
        let failures = self
            .failures
            .as_ref()
            .map(|f| format!(" · failures {f}"))
            .unwrap_or_default();
        let horizon = self
            .horizon
            .as_ref()
            .map(|h| format!(" · horizon {h}"))
            .unwrap_or_default();
        let mut line = format!(
            "orrery {} · scenario {} · hash {} · seed {}{policy}{failures}{horizon}",
            self.orrery, self.scenario, self.scenario_hash, self.seed
        );
        for m in &self.model_sources {
            line.push_str(&format!("\ncompute model: {m}"));
        }
        for m in &self.network_models {
            line.push_str(&format!("\nnetwork model: {m}"));
        }
        for m in &self.timeline_limits {
            line.push_str(&format!("\ntimeline: {m}"));
        }
        for m in &self.tiers {
            line.push_str(&format!("\ntier: {m}"));
        }
        line
    }
}

/// Two step functions ((time, level) at each change, ascending) on their union of change
/// times: (time, level of `a`, level of `b`) at each.
pub fn steps(a: &[(f64, f64)], b: &[(f64, f64)]) -> Vec<(f64, f64, f64)> {
    let (mut i, mut j) = (0, 0);
    let (mut la, mut lb) = (0.0, 0.0);
    let mut out: Vec<(f64, f64, f64)> = Vec::with_capacity(a.len() + b.len());
    while i < a.len() || j < b.len() {
        let t = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => x.0.min(y.0),
            (Some(x), None) => x.0,
            (None, Some(y)) => y.0,
            (None, None) => break,
        };
        while let Some(x) = a.get(i).filter(|x| x.0 == t) {
            la = x.1;
            i += 1;
        }
        while let Some(y) = b.get(j).filter(|y| y.0 == t) {
            lb = y.1;
            j += 1;
        }
        out.push((t, la, lb));
    }
    out
}

/// Version of `run.json`'s layout (`schema_version` at its top): bumped when a key is renamed
/// or removed or changes meaning, so a reader can tell which layout it has. 2: every quantity
/// key carries its unit (`makespan_s`, `queueing_delay.p99_s`), each SLO is one object.
/// 3: every statistic says how exact its percentiles are (`quantile_error_fraction`).
pub const RUN_SCHEMA_VERSION: u32 = 3;

/// Where a placement group landed, for the run table: its topology domain when it has one,
/// then its nodes (the first and last of more than two), and its fallback option if not 0.
fn landed(p: &crate::sim::metrics::PgMetrics) -> String {
    let mut nodes: Vec<&str> = p.nodes.iter().map(String::as_str).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let mut w = match nodes.as_slice() {
        [] => "-".to_string(),
        [a] => a.to_string(),
        [a, b] => format!("{a}, {b}"),
        [a, .., z] => format!("{a} … {z} ({} nodes)", nodes.len()),
    };
    if let Some(d) = &p.domain {
        w = format!("{d}: {w}");
    }
    if let Some(k) = p.option.filter(|k| *k > 0) {
        w += &format!(" (fallback {k})");
    }
    w
}

/// How a run writes its tables: CSV, or Parquet with the same columns ([`columnar`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Csv,
    Parquet,
}

impl Format {
    /// The file a table named `csv_name` (such as `tasks.csv`) is written to.
    pub fn file(self, csv_name: &str) -> String {
        match self {
            Format::Csv => csv_name.to_string(),
            Format::Parquet => format!("{}.parquet", csv_name.trim_end_matches(".csv")),
        }
    }

    /// The bytes of table `csv_name` whose CSV text is `csv`, in this format.
    pub fn encode(self, csv_name: &str, csv: &str, h: &Header) -> std::io::Result<Vec<u8>> {
        match self {
            Format::Csv => Ok(csv.as_bytes().to_vec()),
            Format::Parquet => {
                let meta = [
                    ("orrery.version", h.orrery.clone()),
                    ("orrery.scenario", h.scenario.clone()),
                    ("orrery.scenario_hash", h.scenario_hash.clone()),
                    ("orrery.seed", h.seed.to_string()),
                ];
                columnar::to_parquet(csv_name, csv, &meta).map_err(std::io::Error::other)
            }
        }
    }
}

/// Write `run.json` and the tables (CSV or Parquet) into `dir`, each atomically.
pub fn write(
    dir: &Path,
    h: &Header,
    m: &RunMetrics,
    format: Format,
) -> std::io::Result<Vec<String>> {
    crate::atomic::create_dir(dir)?;
    let mut written = Vec::new();
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "schema_version": RUN_SCHEMA_VERSION,
        "header": h,
        "metrics": m,
    }))
    .map_err(std::io::Error::other)?;
    crate::atomic::write_atomic(&dir.join("run.json"), json.as_bytes())?;
    written.push("run.json".to_string());
    for (name, text) in csv_files(h, m) {
        let file = format.file(name);
        crate::atomic::write_atomic(&dir.join(&file), &format.encode(name, &text, h)?)?;
        written.push(file);
    }
    Ok(written)
}

fn s(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x < 1e-3 {
        format!("{} us", crate::units::sig3(x * 1e6))
    } else if x < 1.0 {
        format!("{} ms", crate::units::sig3(x * 1e3))
    } else {
        format!("{} s", crate::units::sig3(x))
    }
}

/// The human summary `orrery run` prints.
pub fn table(m: &RunMetrics) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "makespan {} · simulated window {} · {} events",
        s(m.makespan),
        s(m.horizon),
        m.events
    );
    o.push_str(&cluster::cluster_line(&m.cluster));
    let name = |w: &str, n: &str| format!("{w}.{n}");
    if !m.tasks.is_empty() {
        let mut t = Table::new([
            "task groups",
            "done/submitted",
            "infeasible",
            "queue p50",
            "queue p99",
            "run mean",
        ]);
        for g in &m.tasks {
            t.row([
                name(&g.workload, &g.name),
                format!("{}/{}", g.completed, g.submitted),
                g.infeasible.to_string(),
                s(g.queueing_delay.p50),
                s(g.queueing_delay.p99),
                s(g.run_time.mean),
            ]);
        }
        let _ = write!(o, "\n{t}");
    }
    if !m.actors.is_empty() {
        let mut t = Table::new(["actors", "placed", "infeasible", "calls", "placement p50"]);
        for a in &m.actors {
            t.row([
                name(&a.workload, &a.name),
                a.placed.to_string(),
                a.infeasible.to_string(),
                a.calls_done.to_string(),
                s(a.placement_delay.p50),
            ]);
        }
        let _ = write!(o, "\n{t}");
    }
    if !m.placement_groups.is_empty() {
        let mut t = Table::new([
            "placement groups",
            "state",
            "bundles",
            "pending",
            "attempts",
            "racks",
            "where",
        ])
        .left(&[1, 7]);
        for p in &m.placement_groups {
            t.row([
                name(&p.workload, &p.name),
                p.state.to_string(),
                p.bundles.to_string(),
                s(p.pending_time),
                p.attempts.to_string(),
                p.racks.to_string(),
                landed(p),
            ]);
        }
        let _ = write!(o, "\n{t}");
    }
    if !m.training.is_empty() {
        let mut t = Table::new([
            "training",
            "devices",
            "steps",
            "step time",
            "compute",
            "comm",
            "goodput",
        ]);
        for j in &m.training {
            // What the compute did not hide: step = compute + this.
            let comm_frac = if j.step_time > 0.0 {
                j.exposed_comm_time / j.steps_done.max(1) as f64
            } else {
                0.0
            };
            t.row([
                name(&j.workload, &j.name),
                j.devices.to_string(),
                j.steps_done.to_string(),
                s(j.step_time),
                s(j.step_time - comm_frac),
                s(comm_frac),
                format!("{:.1}%", j.goodput * 100.0),
            ]);
        }
        let _ = write!(o, "\n{t}");
    }
    if !m.llm_services.is_empty() {
        let mut t = Table::new([
            "LLM services",
            "done",
            "tok/s",
            "TTFT p50",
            "TTFT p99",
            "TPOT p50",
            "TPOT p99",
            "KV mean",
            "KV move p99",
            "preempt",
            "SLO",
        ])
        .left(&[10]);
        for v in &m.llm_services {
            let slo = if v.slo.is_empty() {
                "-".to_string()
            } else {
                v.slo
                    .iter()
                    .map(|x| {
                        format!(
                            "{} {}≤{} {}",
                            x.kind,
                            x.percentile,
                            s(x.target_s),
                            if x.met { "met" } else { "MISSED" }
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            t.row([
                name(&v.workload, &v.name),
                v.finished.to_string(),
                format!("{:.0}", v.output_tokens_per_s),
                s(v.ttft.p50),
                s(v.ttft.p99),
                s(v.tpot.p50),
                s(v.tpot.p99),
                format!("{:.0}%", v.kv_utilization_mean_fraction * 100.0),
                v.disaggregation
                    .as_ref()
                    .map_or("-".to_string(), |d| s(d.kv_transfer.p99)),
                v.preemptions.to_string(),
                slo,
            ]);
        }
        let _ = write!(o, "\n{t}");
    }
    if !m.services.is_empty() {
        let mut t = Table::new(["services", "served", "req/s", "p50", "p99", "SLO"]).left(&[5]);
        for v in &m.services {
            let slo = if v.slo.is_empty() {
                "-".to_string()
            } else {
                v.slo
                    .iter()
                    .map(|(p, t, _, ok)| {
                        format!("{p}≤{} {}", s(*t), if *ok { "met" } else { "MISSED" })
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            t.row([
                name(&v.workload, &v.name),
                v.served.to_string(),
                format!("{:.1}", v.throughput),
                s(v.latency.p50),
                s(v.latency.p99),
                slo,
            ]);
        }
        let _ = write!(o, "\n{t}");
    }
    let f = &m.failures;
    if f.transfers_unavailable > 0 {
        let _ = writeln!(
            o,
            "\nunavailable      {} transfer{} its transport cannot make (the model sources say why); the tasks, calls and requests that needed them failed",
            f.transfers_unavailable,
            if f.transfers_unavailable == 1 {
                ""
            } else {
                "s"
            }
        );
    }
    let fabric = f.timeline.iter().any(|e| e.kind.starts_with("switch"));
    if f.node_failures > 0 || !f.unsimulated.is_empty() || fabric {
        let _ = writeln!(
            o,
            "\nfailures         {} node failures · detect p50 {} · recover p50 {} · node availability {:.3}%",
            f.node_failures,
            s(f.time_to_detect.p50),
            s(f.time_to_recover.p50),
            f.node_availability * 100.0
        );
        let _ = writeln!(
            o,
            "  lost {:.2} device-hours · retried {} tasks ({} failed) · restarted {} actors ({} lost), {} replicas · {} requests lost · {} bundles rescheduled",
            f.lost_device_hours,
            f.tasks_retried,
            f.tasks_failed,
            f.actors_restarted,
            f.actors_lost,
            f.replicas_restarted,
            f.requests_lost,
            f.bundles_rescheduled
        );
        if fabric {
            // What the fabric's failures set off, by kind in order of first appearance.
            let mut kinds: Vec<(&str, usize)> = Vec::new();
            for e in &f.timeline {
                match kinds.iter_mut().find(|(k, _)| *k == e.kind) {
                    Some((_, n)) => *n += 1,
                    None => kinds.push((&e.kind, 1)),
                }
            }
            let list: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
            let _ = writeln!(o, "  events: {}", list.join(" · "));
        }
        for u in &f.unsimulated {
            let _ = writeln!(o, "  not simulated yet: {u}");
        }
    }
    for (what, map) in [
        ("device class", &m.utilization),
        ("node type", &m.utilization_by_node_type),
    ] {
        if !map.is_empty() {
            let mut t = Table::new([
                format!("utilization per {what}"),
                "devices".into(),
                "busy".into(),
                "allocated".into(),
            ]);
            for (c, u) in map {
                t.row([
                    c.clone(),
                    u.devices.to_string(),
                    format!("{:.1}%", u.busy_fraction * 100.0),
                    format!("{:.1}%", u.allocated_fraction * 100.0),
                ]);
            }
            let _ = write!(o, "\n{t}");
        }
    }
    o.push_str(&cpu::table(m));
    if m.links.values().any(|l| l.link_bytes > 0.0) {
        let mut t = Table::new([
            "link class",
            "links",
            "link-bytes",
            "mean util",
            "peak util",
        ]);
        for (c, l) in &m.links {
            t.row([
                c.to_string(),
                l.links.to_string(),
                crate::plot::fmt_bytes(l.link_bytes),
                format!("{:.2}%", l.mean_utilization * 100.0),
                format!("{:.1}%", l.peak_utilization * 100.0),
            ]);
        }
        let _ = write!(o, "\n{t}");
    }
    let approx = m.approximate_quantiles();
    if !approx.is_empty() {
        let _ = writeln!(
            o,
            "\npercentiles of {} (over {} samples each) come from an HDR histogram: at most {}% above the exact nearest-rank value (quantile_error_fraction in run.json)",
            approx.join(", "),
            crate::sim::durations::EXACT_LIMIT,
            crate::sim::durations::HDR_REL_ERROR * 100.0
        );
    }
    o
}
