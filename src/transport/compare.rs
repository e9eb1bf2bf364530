//! Transports side by side: the same transfers (sizes × device pairs of a scenario's cluster)
//! under every transport the scenario knows (the built-in kinds, recalibrated or joined by its
//! `transport` blocks), each against the `object_store` baseline, with the breakdown of where
//! the time goes. One transfer at a time on an idle network; `orrery transports` prints it.

use super::exec::{Breakdown, run_plan};
use super::nics::NicTable;
use super::params::{TransportKind, TransportParams};
use super::plan::plan;
use crate::network::{FlowNet, Graph};
use crate::scenario::Spec;
use crate::units::{Bytes, sig3};
use serde::Serialize;
use std::fmt;

const KIB: f64 = 1024.0;
const MIB: f64 = KIB * 1024.0;
const GIB: f64 = MIB * 1024.0;

/// Transfer sizes compared by default.
pub const DEFAULT_SIZES: [f64; 5] = [4.0 * KIB, 64.0 * KIB, MIB, 64.0 * MIB, GIB];
/// The transport every other is compared with.
pub const BASELINE: &str = "object_store";
/// Most sizes or pairs one comparison takes.
pub const MAX_ITEMS: usize = 64;

/// A device: (node, device) in the graph's numbering and its name (`r0.n1.d3`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Endpoint {
    pub node: usize,
    pub device: usize,
    pub name: String,
}

/// One transport moving one size.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub transport: String,
    pub kind: TransportKind,
    pub bytes: f64,
    /// `None` when the transport cannot make this transfer (`error` says why).
    pub breakdown: Option<Breakdown>,
    /// Baseline seconds / these seconds.
    pub speedup: Option<f64>,
    pub chunks: u32,
    pub inline: bool,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PairResult {
    /// `same node` or `cross node`.
    pub label: String,
    pub src: Endpoint,
    pub dst: Endpoint,
    /// By size, then by transport, in the comparison's orders.
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub cluster: String,
    pub baseline: String,
    #[serde(rename = "sizes_bytes")]
    pub sizes: Vec<f64>,
    pub transports: Vec<TransportParams>,
    pub pairs: Vec<PairResult>,
}

/// A pair of devices, (node, device) each.
pub type Pair = ((usize, usize), (usize, usize));

/// Node names and device counts of the cluster, in the graph's order.
fn nodes(spec: &Spec) -> Vec<(String, usize)> {
    spec.cluster
        .iter()
        .flat_map(|c| c.nodes())
        .map(|n| {
            let devices = spec
                .node_types
                .get(n.node_type)
                .map(|nt| nt.devices.iter().map(|g| g.at.len()).sum())
                .unwrap_or(0);
            (n.name, devices)
        })
        .collect()
}

/// The default pairs: two devices of the first node with devices (same node), and its first
/// device with the first device of the last other node with devices (cross node — in another
/// rack when there are several).
pub fn default_pairs(spec: &Spec) -> Vec<Pair> {
    let ns = nodes(spec);
    let with: Vec<usize> = (0..ns.len()).filter(|n| ns[*n].1 > 0).collect();
    let mut out = Vec::new();
    let Some(&a) = with.first() else { return out };
    if ns[a].1 >= 2 {
        out.push(((a, 0), (a, 1)));
    }
    if let Some(&b) = with.last()
        && b != a
    {
        out.push(((a, 0), (b, 0)));
    }
    out
}

/// `4KiB,64KiB,1MiB` (a space before the unit is allowed; a bare number is bytes).
pub fn parse_sizes(s: &str) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let split = part
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
            .unwrap_or(part.len());
        let (num, unit) = part.split_at(split);
        let unit = unit.trim();
        let x: f64 = num
            .replace('_', "")
            .parse()
            .map_err(|_| format!("`{part}` is not a size such as `64KiB`"))?;
        let factor = if unit.is_empty() {
            1.0
        } else {
            match crate::units::lookup(unit) {
                Some((crate::units::Kind::Bytes, f)) => f,
                _ => return Err(format!("`{unit}` in `{part}` is not a unit of bytes")),
            }
        };
        let b = x * factor;
        if !(1.0..=1e15).contains(&b) {
            return Err(format!("size `{part}` must be from 1 B to 1 PB"));
        }
        out.push(b.round());
    }
    if out.len() > MAX_ITEMS {
        return Err(format!("{} sizes; the limit is {MAX_ITEMS}", out.len()));
    }
    Ok(out)
}

/// `r0.n0.d0:r0.n1.d0,...`: device names (`<node>.d<i>`) in pairs.
pub fn parse_pairs(spec: &Spec, s: &str) -> Result<Vec<Pair>, String> {
    let ns = nodes(spec);
    let device = |name: &str| -> Result<(usize, usize), String> {
        let (node, d) = name
            .rsplit_once('.')
            .ok_or_else(|| format!("`{name}` is not a device name such as `r0.n0.d1`"))?;
        let d: usize = d
            .strip_prefix('d')
            .and_then(|x| x.parse().ok())
            .ok_or_else(|| format!("`{name}` is not a device name such as `r0.n0.d1`"))?;
        let n = ns
            .iter()
            .position(|(x, _)| x == node)
            .ok_or_else(|| format!("no node `{node}` in the cluster"))?;
        if d >= ns[n].1 {
            return Err(format!(
                "node `{node}` has {} devices; `{name}` is not one",
                ns[n].1
            ));
        }
        Ok((n, d))
    };
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let (a, b) = part
            .split_once(':')
            .ok_or_else(|| format!("`{part}` is not a pair such as `r0.n0.d0:r0.n1.d0`"))?;
        out.push((device(a.trim())?, device(b.trim())?));
    }
    if out.len() > MAX_ITEMS {
        return Err(format!("{} pairs; the limit is {MAX_ITEMS}", out.len()));
    }
    Ok(out)
}

/// Compare every transport of `spec` on `sizes` × `pairs` (default pairs when empty).
pub fn compare(spec: &Spec, sizes: &[f64], pairs: &[Pair]) -> Result<Comparison, String> {
    let c = spec
        .cluster
        .as_ref()
        .ok_or("the scenario declares no cluster to compare transports on")?;
    let pairs = if pairs.is_empty() {
        default_pairs(spec)
    } else {
        pairs.to_vec()
    };
    if pairs.is_empty() {
        return Err("the cluster has fewer than two devices: no transfer to compare".into());
    }
    if sizes.is_empty() {
        return Err("no transfer sizes given".into());
    }
    let ns = nodes(spec);
    let graph = Graph::build(spec);
    let idle = FlowNet::new(graph.capacity.clone());
    let nics = NicTable::new(spec);
    let transports = TransportParams::of_spec(spec);
    let endpoint = |(node, device): (usize, usize)| Endpoint {
        node,
        device,
        name: format!(
            "{}.d{device}",
            ns.get(node).map(|n| n.0.as_str()).unwrap_or("?")
        ),
    };
    let mut out = Vec::new();
    for (k, &(s, d)) in pairs.iter().enumerate() {
        let mut cells = Vec::new();
        for &bytes in sizes {
            let mut row: Vec<Cell> = transports
                .iter()
                .map(|p| {
                    // With the scenario's calibration profiles, where it names any.
                    let p = &p.clone().calibrated(spec, s.0, d.0);
                    let r = plan(&graph, p, s, d, bytes, k as u64).and_then(|pl| {
                        nics.check(&graph, p, &pl)?;
                        Ok((run_plan(&idle, &pl)?, pl.chunks(), pl.inline))
                    });
                    match r {
                        Ok((b, chunks, inline)) => Cell {
                            transport: p.name.clone(),
                            kind: p.kind,
                            bytes,
                            breakdown: Some(b),
                            speedup: None,
                            chunks,
                            inline,
                            error: None,
                        },
                        Err(e) => Cell {
                            transport: p.name.clone(),
                            kind: p.kind,
                            bytes,
                            breakdown: None,
                            speedup: None,
                            chunks: 0,
                            inline: false,
                            error: Some(e.to_string()),
                        },
                    }
                })
                .collect();
            let base = row
                .iter()
                .find(|c| c.transport == BASELINE)
                .and_then(|c| c.breakdown)
                .map(|b| b.secs);
            for cell in &mut row {
                cell.speedup = match (base, cell.breakdown) {
                    (Some(b), Some(x)) if x.secs > 0.0 && x.secs.is_finite() => Some(b / x.secs),
                    _ => None,
                };
            }
            cells.extend(row);
        }
        out.push(PairResult {
            label: if s.0 == d.0 {
                "same node"
            } else {
                "cross node"
            }
            .into(),
            src: endpoint(s),
            dst: endpoint(d),
            cells,
        });
    }
    Ok(Comparison {
        cluster: c.name.clone(),
        baseline: BASELINE.into(),
        sizes: sizes.to_vec(),
        transports,
        pairs: out,
    })
}

/// Seconds with three significant figures and a unit (`412 us`).
pub fn fmt_secs(s: f64) -> String {
    if !s.is_finite() {
        return "never".into();
    }
    let (scale, u) = [(1.0, "s"), (1e-3, "ms"), (1e-6, "us")]
        .into_iter()
        .find(|(x, _)| s >= *x)
        .unwrap_or((1e-9, "ns"));
    if s == 0.0 {
        return "0".into();
    }
    format!("{} {u}", sig3(s / scale))
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "transports on cluster `{}`: one transfer at a time on an idle network; \
             speedup = {} time / time",
            self.cluster, self.baseline
        )?;
        for p in &self.pairs {
            writeln!(f, "\n{}: {} → {}", p.label, p.src.name, p.dst.name)?;
            let mut t = crate::table::Table::new([
                "size",
                "transport",
                "time",
                "speedup",
                "latency",
                "overhead",
                "staging",
                "bandwidth",
                "chunks",
            ])
            .left(&[1]);
            // What a transport cannot do, said under the table (its row reads `n/a`).
            let mut unable = Vec::new();
            let mut last = None;
            for c in &p.cells {
                let size = if last == Some(c.bytes) {
                    String::new()
                } else {
                    Bytes(c.bytes as u64).to_string()
                };
                last = Some(c.bytes);
                match (&c.breakdown, &c.error) {
                    (Some(b), _) => t.row([
                        size,
                        c.transport.clone(),
                        fmt_secs(b.secs),
                        c.speedup
                            .map(|s| format!("{}×", sig3(s)))
                            .unwrap_or_else(|| "-".into()),
                        fmt_secs(b.latency_secs),
                        fmt_secs(b.overhead_secs),
                        fmt_secs(b.staging_secs),
                        fmt_secs(b.bandwidth_secs),
                        if c.inline {
                            "inline".to_string()
                        } else {
                            c.chunks.to_string()
                        },
                    ]),
                    (None, e) => {
                        unable.push(format!(
                            "n/a: {} at {}: {}",
                            c.transport,
                            Bytes(c.bytes as u64),
                            e.as_deref().unwrap_or("")
                        ));
                        t.row([size, c.transport.clone(), "n/a".into()])
                    }
                };
            }
            write!(f, "{t}")?;
            for u in unable {
                writeln!(f, "{u}")?;
            }
        }
        Ok(())
    }
}
