//! The shipped table of published measurements (`accuracy/*.toml`), read into [`Entry`] rows.
//!
//! One TOML file per kind of measurement; each row names its source (paper table, repository
//! file and commit, or page), the configuration it was measured on, the published figure and
//! whether any of Orrery's parameters were fitted to it (`fitted = true`) or it is held out.
//! The tolerance is the issue's, stated once per file. Unknown keys and malformed values are
//! errors located at their line and column; nothing in a table is ignored.

use super::{Case, Entry, Kind};
use crate::network::collective::Op;
use serde::Deserialize;

/// The rows over their tolerance today and why (`accuracy/gaps.toml`), built in.
pub const GAPS: (&str, &str) = (
    "accuracy/gaps.toml",
    include_str!("../../accuracy/gaps.toml"),
);

/// The tables built into the binary (`orrery accuracy` with no `--table`).
pub const BUILT_IN: [(&str, &str); 4] = [
    (
        "accuracy/collectives.toml",
        include_str!("../../accuracy/collectives.toml"),
    ),
    (
        "accuracy/training.toml",
        include_str!("../../accuracy/training.toml"),
    ),
    (
        "accuracy/serving.toml",
        include_str!("../../accuracy/serving.toml"),
    ),
    (
        "accuracy/queueing.toml",
        include_str!("../../accuracy/queueing.toml"),
    ),
];

/// Most rows one table may hold (a table is read whole before anything runs).
pub const MAX_ROWS: usize = 10_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// `[[bound, tolerance]]`: a collective of at least `bound` bytes is within `tolerance`
    /// (a fraction) of its published bus bandwidth; the first bound it reaches applies.
    #[serde(default)]
    collective_tolerance: Vec<(f64, f64)>,
    #[serde(default)]
    collective: Vec<CollectiveSet>,
    #[serde(default)]
    queueing_tolerance: Option<f64>,
    #[serde(default)]
    queueing: Vec<QueueingRow>,
    #[serde(default)]
    training_tolerance: Option<f64>,
    /// Calibration profiles every training row runs with (`calibration NAME` each): one set of
    /// efficiencies per part for all rows, never one per row.
    #[serde(default)]
    profiles: Vec<String>,
    #[serde(default)]
    training: Vec<TrainingRow>,
    #[serde(default)]
    serving_tolerance: Option<f64>,
    /// Largest median |error| of the serving rows (a fraction).
    #[serde(default)]
    serving_median_tolerance: Option<f64>,
    #[serde(default)]
    serving: Vec<super::serving_rows::ServingRow>,
}

/// A published training iteration time: a Megatron-style job on catalog nodes, the catalog's
/// own efficiencies (no calibration profile: one set per part for every row).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TrainingRow {
    id: String,
    system: String,
    /// Catalog node type, `nodes` of them in one rack on a non-blocking fat tree.
    node: String,
    nodes: u32,
    /// Catalog model.
    model: String,
    /// The `parallel` line as the scenario language writes it (`tp 8 pp 8 interleave 3 sp`).
    parallel: String,
    recompute: String,
    /// `unfused` (the default) or `flash`, as the framework that was measured ran it.
    #[serde(default = "unfused")]
    attention: String,
    /// `none` (the default), `zero1`, ...: how the measured run sharded its optimizer state
    /// (Megatron's distributed optimizer, Apex's distributed fused Adam: `zero1`).
    #[serde(default = "none_word")]
    sharding: String,
    /// The `overlap` statement's words as the measured recipe set them (`grad_reduce
    /// tp_comm`); empty (the default): no overlap, Megatron-LM's defaults.
    #[serde(default)]
    overlap: String,
    global_batch: u32,
    micro_batch: u32,
    precision: String,
    /// Published seconds per iteration.
    step_time_s: f64,
    source: String,
    fitted: bool,
}

/// One published nccl-tests / rccl-tests table: one row per size.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CollectiveSet {
    id: String,
    system: String,
    /// Catalog node type the ranks run on.
    node: String,
    /// `NODESxDEVICES`, as `orrery collectives --ranks`.
    ranks: String,
    op: String,
    source: String,
    fitted: bool,
    /// `[[size in bytes, published bus bandwidth in GB/s]]`.
    busbw_gbps: Vec<(f64, f64)>,
}

/// A queue against its closed form.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QueueingRow {
    id: String,
    /// `mmc` (Erlang C) or `md1` (Pollaczek–Khinchine).
    model: String,
    servers: u32,
    arrivals_per_s: f64,
    service_ms: f64,
    horizon_s: u32,
    seeds: u32,
    source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GapFile {
    #[serde(default)]
    gap: Vec<GapEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GapEntry {
    id: String,
    why: String,
    #[serde(default)]
    rows: Vec<String>,
    /// Kinds whose median |error| is over the table's median tolerance for this reason.
    #[serde(default)]
    medians: Vec<String>,
}

/// A known gap: rows over their tolerance, or kinds over their median tolerance, for one
/// stated reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Gap {
    pub id: String,
    pub why: String,
    pub rows: Vec<String>,
    pub medians: Vec<String>,
}

/// Reads a gaps file: `[[gap]] id, why, rows`. A row named twice is an error.
pub fn parse_gaps(name: &str, text: &str) -> Result<Vec<Gap>, String> {
    let file: GapFile = toml::from_str(text).map_err(|e| locate(name, text, &e))?;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(file.gap.len());
    for g in file.gap {
        if let Some(r) = g.rows.iter().find(|r| !seen.insert(r.to_string())) {
            return Err(format!("{name}: row `{r}` is in two gaps"));
        }
        if g.rows.is_empty() && g.medians.is_empty() {
            return Err(format!(
                "{name}: gap `{}` names no rows and no medians",
                g.id
            ));
        }
        out.push(Gap {
            id: g.id,
            why: g.why,
            rows: g.rows,
            medians: g.medians,
        });
    }
    Ok(out)
}

/// Reads one table file (`name` is how errors locate it) into rows.
pub fn parse(name: &str, text: &str) -> Result<Vec<Entry>, String> {
    let file: File = toml::from_str(text).map_err(|e| locate(name, text, &e))?;
    let mut rows = Vec::new();
    let tol = &file.collective_tolerance;
    if !file.collective.is_empty() && tol.is_empty() {
        return Err(format!(
            "{name}: collective rows need `collective_tolerance = [[BYTES, FRACTION], ...]`"
        ));
    }
    for &(b, t) in tol {
        if !(b.is_finite() && b > 0.0 && t.is_finite() && t > 0.0 && t < 1.0) {
            return Err(format!(
                "{name}: collective_tolerance [{b}, {t}]: a positive size and a fraction in (0, 1)"
            ));
        }
    }
    for set in &file.collective {
        let op = crate::experiment::collectives::parse_op(&set.op)
            .map_err(|e| format!("{name}: {}: {e}", set.id))?;
        if !set.ranks.contains('x') {
            return Err(format!(
                "{name}: {}: ranks `{}` must be NODESxDEVICES",
                set.id, set.ranks
            ));
        }
        if set.busbw_gbps.is_empty() {
            return Err(format!("{name}: {}: no published sizes", set.id));
        }
        for &(bytes, busbw) in &set.busbw_gbps {
            if !(bytes.is_finite() && bytes >= 1.0 && busbw.is_finite() && busbw > 0.0) {
                return Err(format!(
                    "{name}: {}: [{bytes}, {busbw}] is not a positive size and bandwidth",
                    set.id
                ));
            }
            let Some(&(_, t)) = tol.iter().find(|(b, _)| bytes >= *b) else {
                return Err(format!(
                    "{name}: {}: no tolerance covers {bytes} bytes (collective_tolerance starts at {} bytes)",
                    set.id,
                    tol.iter().map(|t| t.0).fold(f64::INFINITY, f64::min)
                ));
            };
            rows.push(Entry {
                id: format!("{}@{}", set.id, size_label(bytes)),
                kind: Kind::Collective,
                system: set.system.clone(),
                config: format!("{} {} ranks {}", op_word(op), size_label(bytes), set.ranks),
                source: set.source.clone(),
                metric: "busbw GB/s",
                published: busbw,
                tolerance: t,
                median_tolerance: None,
                fitted: set.fitted,
                case: Case::Collective {
                    node: set.node.clone(),
                    ranks: set.ranks.clone(),
                    op,
                    bytes,
                },
            });
        }
    }
    if !file.queueing.is_empty() && file.queueing_tolerance.is_none() {
        return Err(format!(
            "{name}: queueing rows need `queueing_tolerance = FRACTION`"
        ));
    }
    for q in &file.queueing {
        let t = file.queueing_tolerance.unwrap_or(0.0);
        let exponential = match q.model.as_str() {
            "mmc" => true,
            "md1" if q.servers == 1 => false,
            "md1" => {
                return Err(format!("{name}: {}: M/D/1 has one server", q.id));
            }
            m => return Err(format!("{name}: {}: model `{m}` is not mmc or md1", q.id)),
        };
        let rho = q.arrivals_per_s * q.service_ms / 1000.0 / f64::from(q.servers.max(1));
        if !(q.servers >= 1 && q.servers <= 64 && rho > 0.0 && rho < 1.0) {
            return Err(format!(
                "{name}: {}: 1 to 64 servers and a utilization in (0, 1) (got {rho})",
                q.id
            ));
        }
        if !(1..=100_000).contains(&q.horizon_s) || !(1..=16).contains(&q.seeds) {
            return Err(format!(
                "{name}: {}: horizon 1 to 100000 s and 1 to 16 seeds",
                q.id
            ));
        }
        if q.arrivals_per_s * f64::from(q.horizon_s) * f64::from(q.seeds) > 5e6 {
            return Err(format!(
                "{name}: {}: more than 5 million arrivals in all",
                q.id
            ));
        }
        let wq = super::queueing::waiting_time(
            exponential,
            q.servers,
            q.arrivals_per_s,
            q.service_ms / 1000.0,
        );
        rows.push(Entry {
            id: q.id.clone(),
            kind: Kind::Queueing,
            system: format!(
                "{} server{}",
                q.servers,
                if q.servers == 1 { "" } else { "s" }
            ),
            config: format!(
                "{} λ {}/s, service {} ms, ρ {:.2}",
                if exponential { "M/M/c" } else { "M/D/1" },
                q.arrivals_per_s,
                q.service_ms,
                rho
            ),
            source: q.source.clone(),
            metric: "mean wait ms",
            published: wq * 1000.0,
            tolerance: t,
            median_tolerance: None,
            fitted: false,
            case: Case::Queueing {
                exponential,
                servers: q.servers,
                arrivals_per_s: q.arrivals_per_s,
                service_s: q.service_ms / 1000.0,
                horizon_s: q.horizon_s,
                seeds: q.seeds,
            },
        });
    }
    if !file.training.is_empty() && file.training_tolerance.is_none() {
        return Err(format!(
            "{name}: training rows need `training_tolerance = FRACTION`"
        ));
    }
    // Every training and serving row runs with the table's one list of profiles.
    let calibration: String = file
        .profiles
        .iter()
        .map(|p| format!("calibration {p}\n"))
        .collect();
    for t in &file.training {
        let tol = file.training_tolerance.unwrap_or(0.0);
        if !((1..=4096).contains(&t.nodes) && t.step_time_s.is_finite() && t.step_time_s > 0.0) {
            return Err(format!(
                "{name}: {}: 1 to 4096 nodes and a positive step time",
                t.id
            ));
        }
        words(
            name,
            &t.id,
            file.profiles
                .iter()
                .map(|p| ("profile", p))
                .chain([
                    ("node", &t.node),
                    ("model", &t.model),
                    ("parallel", &t.parallel),
                    ("recompute", &t.recompute),
                    ("attention", &t.attention),
                    ("sharding", &t.sharding),
                    ("precision", &t.precision),
                ])
                .chain((!t.overlap.is_empty()).then_some(("overlap", &t.overlap))),
        )?;
        rows.push(Entry {
            id: t.id.clone(),
            kind: Kind::Training,
            system: t.system.clone(),
            config: format!(
                "{} on {} x {}: {}, recompute {}, batch {}/{}, {}{}",
                t.model,
                t.nodes,
                t.node,
                t.parallel,
                t.recompute,
                t.global_batch,
                t.micro_batch,
                t.precision,
                if t.overlap.is_empty() {
                    String::new()
                } else {
                    format!(", overlap {}", t.overlap)
                }
            ),
            source: t.source.clone(),
            metric: "step time s",
            published: t.step_time_s,
            tolerance: tol,
            median_tolerance: None,
            fitted: t.fitted,
            case: Case::Training {
                scenario: training_scenario(t, &calibration),
            },
        });
    }
    if !file.serving.is_empty() && file.serving_tolerance.is_none() {
        return Err(format!(
            "{name}: serving rows need `serving_tolerance = FRACTION`"
        ));
    }
    for v in &file.serving {
        rows.push(super::serving_rows::entry(
            name,
            v,
            &file.profiles,
            &calibration,
            file.serving_tolerance.unwrap_or(0.0),
            file.serving_median_tolerance,
        )?);
    }
    if rows.len() > MAX_ROWS {
        return Err(format!("{name}: more than {MAX_ROWS} rows"));
    }
    Ok(rows)
}

/// Words only: a row's fields become scenario text, so nothing in them may open a block or a
/// string.
pub(super) fn words<'a>(
    name: &str,
    id: &str,
    fields: impl IntoIterator<Item = (&'a str, &'a String)>,
) -> Result<(), String> {
    for (what, v) in fields {
        if v.is_empty()
            || !v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ' ')
        {
            return Err(format!(
                "{name}: {id}: {what} `{v}` must be words (letters, digits, _ and spaces)"
            ));
        }
    }
    Ok(())
}

/// A training row's `sharding` when it names none.
fn none_word() -> String {
    "none".to_string()
}

/// A training row's `attention` when it names none.
fn unfused() -> String {
    "unfused".to_string()
}

/// The scenario of a training row: the table's profiles (`calibration` lines), its nodes in
/// one rack on a non-blocking fat tree, one placement group of whole nodes packed, two
/// iterations.
fn training_scenario(t: &TrainingRow, calibration: &str) -> String {
    let overlap = if t.overlap.is_empty() {
        String::new()
    } else {
        format!("    overlap {}\n", t.overlap)
    };
    calibration.to_string()
        + &format!(
            "cluster accuracy {{\n  rack r0 {{\n    node {node} x {n}\n  }}\n  fabric fat_tree\n}}\n\nworkload w {{\n  placement_group pg strategy PACK {{\n    bundle {{ GPU: 8 }} x {n}\n  }}\n  training job on pg steps 2 {{\n    model {model}\n    parallel {parallel}\n    recompute {recompute}\n    attention {attention}\n    sharding {sharding}\n{overlap}    batch global {gb} micro {mb}\n    precision {precision}\n  }}\n}}\n",
            sharding = t.sharding,
            node = t.node,
            n = t.nodes,
            model = t.model,
            parallel = t.parallel,
            recompute = t.recompute,
            attention = t.attention,
            gb = t.global_batch,
            mb = t.micro_batch,
            precision = t.precision,
        )
}

fn op_word(op: Op) -> &'static str {
    match op {
        Op::ReduceScatter => "reducescatter",
        o => o.name(),
    }
}

/// `64MiB`, `1GiB`, `1048576B`: sizes as nccl-tests' `-b`/`-e` take them.
pub fn size_label(bytes: f64) -> String {
    let b = bytes as u64;
    for (unit, f) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if b >= f && b.is_multiple_of(f) {
            return format!("{}{unit}", b / f);
        }
    }
    format!("{b}B")
}

/// A TOML error as `file:line:column: message`.
fn locate(name: &str, text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().trim();
    match e.span() {
        Some(span) => {
            let at = span.start.min(text.len());
            let before = text.get(..at).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("{name}:{line}:{col}: {msg}")
        }
        None => format!("{name}: {msg}"),
    }
}
