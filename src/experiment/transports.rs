//! The same workload under each transport: the scenario simulated once per transport it knows
//! (built-in kinds and its `transport` blocks), every task's input fetches moved by that
//! transport ([`crate::sim::SimConfig::transport`]), against Ray's object store as the
//! baseline — the "measure it against a simpler baseline first" question, answered before any
//! code is written. Runs are independent and run in parallel; rows keep the transports' order.

use std::fmt;

use rayon::prelude::*;
use serde::Serialize;

use crate::scenario::Spec;
use crate::sim::network::MovementKind;
use crate::sim::{SimConfig, simulate};
use crate::transport::TransportParams;
use crate::transport::compare::{BASELINE, fmt_secs};

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub transport: String,
    /// The run's makespan; `None` (JSON null) when the transport was unavailable for some
    /// transfer, whose work failed, so the run is no like-for-like comparison.
    #[serde(rename = "makespan_s")]
    pub makespan: Option<f64>,
    /// Baseline makespan / this makespan.
    pub speedup: Option<f64>,
    /// Mean run time (fetch + compute) per task group, in the scenario's order; in JSON an
    /// object from group to seconds.
    #[serde(rename = "run_mean_s", serialize_with = "by_group")]
    pub run_mean: Vec<(String, f64)>,
    /// Transfers this transport could not move between their ends (the work that needed
    /// each failed), and why, one line per kind of transfer.
    pub transfers_unavailable: u64,
    pub unavailable: Vec<String>,
}

impl Row {
    /// Every transfer of the run moved with this transport.
    pub fn available(&self) -> bool {
        self.transfers_unavailable == 0
    }
}

fn by_group<S: serde::Serializer>(xs: &[(String, f64)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(xs.len()))?;
    for (k, v) in xs {
        m.serialize_entry(k, v)?;
    }
    m.end()
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkloadComparison {
    pub seed: u64,
    pub rows: Vec<Row>,
}

/// Simulate `spec` once per transport with seed `seed`, with the scenario's arrival traces
/// and empirical samples (read by the binary, as for `run`).
pub fn compare_workload(
    spec: &Spec,
    seed: u64,
    traces: &std::collections::BTreeMap<String, crate::scenario::arrivals::Trace>,
    empirical: &std::collections::BTreeMap<String, Vec<f64>>,
) -> WorkloadComparison {
    let names: Vec<String> = TransportParams::of_spec(spec)
        .into_iter()
        .map(|p| p.name)
        .collect();
    let mut rows: Vec<Row> = names
        .par_iter()
        .map(|name| {
            let r = simulate(
                spec,
                &SimConfig {
                    seed,
                    transport: Some(name.clone()),
                    traces: traces.clone(),
                    empirical: empirical.clone(),
                    ..Default::default()
                },
            );
            let lost = r.metrics.failures.transfers_unavailable;
            Row {
                transport: name.clone(),
                makespan: (lost == 0).then_some(r.metrics.makespan),
                speedup: None,
                run_mean: r
                    .metrics
                    .tasks
                    .iter()
                    .map(|t| (format!("{}.{}", t.workload, t.name), t.run_time.mean))
                    .collect(),
                transfers_unavailable: lost,
                unavailable: r
                    .network_models
                    .into_iter()
                    .filter(|m| {
                        !m.on_graph
                            && matches!(
                                m.kind,
                                MovementKind::Fetch
                                    | MovementKind::Tensor
                                    | MovementKind::KvCache
                                    | MovementKind::Payload
                            )
                    })
                    .map(|m| m.text)
                    .collect(),
            }
        })
        .collect();
    let base = rows
        .iter()
        .find(|r| r.transport == BASELINE)
        .and_then(|r| r.makespan);
    for r in &mut rows {
        r.speedup = match (base, r.makespan) {
            (Some(b), Some(m)) if m > 0.0 => Some(b / m),
            _ => None,
        };
    }
    WorkloadComparison { seed, rows }
}

impl fmt::Display for WorkloadComparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "the workload under each transport (seed {}; task inputs moved by it):",
            self.seed
        )?;
        let groups: Vec<&str> = self
            .rows
            .first()
            .map(|r| r.run_mean.iter().map(|(g, _)| g.as_str()).collect())
            .unwrap_or_default();
        let header = ["transport".to_string(), "makespan".into(), "speedup".into()]
            .into_iter()
            .chain(groups.iter().map(|g| format!("{g} run")));
        let mut t = crate::table::Table::new(header);
        // Where a transport could not move some transfer: the row says "unavailable" (its
        // work failed, so its times compare nothing) and why is said under the table.
        let mut notes = Vec::new();
        for r in &self.rows {
            let speedup = match r.speedup {
                Some(s) => format!("{}×", crate::units::sig3(s)),
                None => "n/a".into(),
            };
            let makespan = match r.makespan {
                Some(m) => fmt_secs(m),
                None => format!(
                    "unavailable ({} transfer{})",
                    r.transfers_unavailable,
                    if r.transfers_unavailable == 1 {
                        ""
                    } else {
                        "s"
                    }
                ),
            };
            let cells = [r.transport.clone(), makespan, speedup];
            let runs = r.run_mean.iter().map(|(_, m)| {
                if r.available() {
                    fmt_secs(*m)
                } else {
                    "n/a".to_string()
                }
            });
            t.row(cells.into_iter().chain(runs));
            notes.extend(
                r.unavailable
                    .iter()
                    .map(|fb| format!("{}: {fb}", r.transport)),
            );
        }
        write!(f, "{t}")?;
        for n in notes {
            writeln!(f, "  {n}")?;
        }
        Ok(())
    }
}
