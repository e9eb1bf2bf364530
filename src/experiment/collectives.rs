//! `orrery collectives`: the table nccl-tests prints (size, count, type, time, algbw, busbw),
//! for ranks placed on the scenario's cluster as its placement policy would place them, each
//! size priced by the collective model the simulation uses (`network::collective`), on the
//! idle cluster network.
//!
//! Ranks: `--ranks N` is a placement group of N one-device bundles with PACK, `--ranks NxG`
//! one of N bundles of G devices with STRICT_SPREAD (one node each, as `mpirun -npernode G`
//! lays out nccl-tests); placed by `placement::place_bundles` with the policy of the
//! scenario's first workload (Ray's default without one) and allocated on an empty cluster,
//! so the topology-aware policy's choice of devices shows. Ranks are numbered node by node in
//! bundle order, devices ascending (as training jobs' ranks are, `sim::training`).
//!
//! Sizes follow nccl-tests' conventions: `count` = bytes / 4 (float), `size` the bytes every
//! rank holds for allreduce and broadcast, the gathered (allgather) or full input
//! (reducescatter) buffer, and each rank's whole buffer for alltoall; busbw = algbw ×
//! [`busbw_factor`] (nccl-tests' `doc/PERFORMANCE.md`).

use crate::network::collective::{
    self as coll, Algorithm, CollectiveResult, Op, Options, Protocol, Rank, busbw_factor,
};
use crate::network::{FlowNet, Graph};
use crate::placement::{self, BundleRequest, ClusterState, PgDecision, Request};
use crate::scenario::Spec;
use crate::scenario::workload::{PgStrategy, Policy};
use std::collections::BTreeMap;

/// Most sizes one table prints.
pub const MAX_SIZES: usize = 64;
/// Most ranks one table places.
pub const MAX_RANKS: usize = 65_536;

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub bytes: f64,
    pub count: u64,
    /// The algorithm that priced it: NCCL's choice on NVIDIA devices (see the module docs),
    /// elsewhere the fastest the flow model has, unless fixed.
    pub algorithm: Algorithm,
    /// The NCCL protocol it ran with (Simple where NCCL's model does not apply).
    pub protocol: Protocol,
    /// Priced by the calibration profile's measurement (`network::collective::measured`),
    /// the algorithm and protocol then only shaping its flows.
    pub measured: bool,
    pub result: CollectiveResult,
}

/// A table and what it was computed for.
#[derive(Debug, Clone)]
pub struct Table {
    pub op: Op,
    pub ranks: Vec<Rank>,
    /// `node.dN` name of each rank.
    pub rank_names: Vec<String>,
    pub policy: Policy,
    /// Whether NCCL's tuning model chose the algorithms and protocols (NVIDIA devices).
    pub nccl: bool,
    /// Which profile fit priced rows, when one did ([`coll::measured::describe`]).
    pub measured: Option<String>,
    pub rows: Vec<Row>,
}

/// `allreduce`, `allgather`, `reducescatter`, `alltoall`, `broadcast` (root 0), `sendrecv`.
pub fn parse_op(s: &str) -> Result<Op, String> {
    Ok(match s {
        "allreduce" => Op::AllReduce,
        "allgather" => Op::AllGather,
        "reducescatter" | "reduce_scatter" => Op::ReduceScatter,
        "alltoall" => Op::AllToAll,
        "broadcast" => Op::Broadcast { root: 0 },
        "sendrecv" => Op::SendRecv,
        _ => {
            return Err(format!(
                "`{s}` is not an op: allreduce, allgather, reducescatter, alltoall, broadcast or sendrecv"
            ));
        }
    })
}

/// `ring`, `tree`, `nvls` (in-switch), `nvls_tree`, `hierarchical`, `pairwise`.
pub fn parse_algorithm(s: &str) -> Result<Algorithm, String> {
    Ok(match s {
        "ring" => Algorithm::Ring,
        "tree" => Algorithm::Tree,
        "nvls" | "in_switch" => Algorithm::InSwitch,
        "nvls_tree" => Algorithm::NvlsTree,
        "hierarchical" => Algorithm::Hierarchical,
        "pairwise" => Algorithm::Pairwise,
        _ => {
            return Err(format!(
                "`{s}` is not an algorithm: ring, tree, nvls, nvls_tree, hierarchical or pairwise"
            ));
        }
    })
}

/// One size: a number with an optional nccl-tests suffix (`K`, `M`, `G`, `T`: powers of
/// 1024) or a unit of bytes (`KiB`, `MB`, ...).
fn size(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let x: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size such as `1K` or `8G`"))?;
    let f = match unit.trim() {
        "" => 1.0,
        "K" | "k" => 1024.0,
        "M" | "m" => 1024.0 * 1024.0,
        "G" | "g" => 1024f64.powi(3),
        "T" | "t" => 1024f64.powi(4),
        u => match crate::units::lookup(u) {
            Some((crate::units::Kind::Bytes, f)) => f,
            _ => return Err(format!("`{u}` in `{s}` is not a unit of bytes")),
        },
    };
    let b = (x * f).round();
    if !(1.0..=1e15).contains(&b) {
        return Err(format!("size `{s}` must be from 1 B to 1 PB"));
    }
    Ok(b)
}

/// `LO..HI` (doubling from LO while at most HI, as nccl-tests' `-b LO -e HI -f 2`) or a
/// comma-separated list.
pub fn parse_sizes(s: &str) -> Result<Vec<f64>, String> {
    let out: Vec<f64> = if let Some((lo, hi)) = s.split_once("..") {
        let (lo, hi) = (size(lo)?, size(hi)?);
        if lo > hi {
            return Err(format!("sizes `{s}`: the first is larger than the last"));
        }
        let mut v = Vec::new();
        let mut x = lo;
        while x <= hi && v.len() <= MAX_SIZES {
            v.push(x);
            x *= 2.0;
        }
        v
    } else {
        s.split(',').map(size).collect::<Result<_, _>>()?
    };
    if out.len() > MAX_SIZES {
        return Err(format!(
            "sizes `{s}` make more than {MAX_SIZES} sizes; narrow the range"
        ));
    }
    Ok(out)
}

/// The unit-instance resource of the cluster's devices (`GPU`, `TPU`, ...), and the device
/// count of the node type that has the most.
fn device_resource(spec: &Spec) -> Result<String, String> {
    let c = spec
        .cluster
        .as_ref()
        .ok_or("the scenario declares no cluster")?;
    for n in c.nodes() {
        if let Some(nt) = spec.node_types.get(n.node_type)
            && let Some(g) = nt.devices.first()
            && let Some(a) = spec.accelerators.get(&g.accelerator)
        {
            return Ok(a.ray_resource.clone());
        }
    }
    Err("the cluster has no devices".into())
}

/// Place the ranks `sel` asks for (see the module docs) on an empty cluster.
pub fn place_ranks(spec: &Spec, sel: &str) -> Result<(Vec<Rank>, Policy), String> {
    let (bundles, per, strategy) = match sel.split_once('x') {
        Some((n, g)) => {
            let n: usize = n
                .trim()
                .parse()
                .map_err(|_| format!("`{sel}` is not `N` or `NODESxDEVICES`"))?;
            let g: usize = g
                .trim()
                .parse()
                .map_err(|_| format!("`{sel}` is not `N` or `NODESxDEVICES`"))?;
            (n, g, PgStrategy::StrictSpread)
        }
        None => (
            sel.trim()
                .parse()
                .map_err(|_| format!("`{sel}` is not `N` or `NODESxDEVICES`"))?,
            1,
            PgStrategy::Pack,
        ),
    };
    if bundles == 0 || per == 0 {
        return Err(format!("`--ranks {sel}` places no rank"));
    }
    if bundles.saturating_mul(per) > MAX_RANKS {
        return Err(format!("`--ranks {sel}`: at most {MAX_RANKS} ranks"));
    }
    let resource = device_resource(spec)?;
    let policy = spec
        .workloads
        .first()
        .map_or(Policy::RayDefault, |w| w.policy);
    let mut st = ClusterState::from_spec(spec);
    let demand = BTreeMap::from([(resource.clone(), per as f64)]);
    let req = Request::from_map(&demand, &mut st.ids);
    let reqs = vec![req; bundles];
    let br = BundleRequest {
        bundles: &reqs,
        strategy,
        tenant: None,
        policy,
        label_selector: &[],
        bundle_selectors: &[],
        domain: None,
    };
    let nodes = match placement::place_bundles(&st, &br, None) {
        PgDecision::Placed(n) => n,
        _ => {
            return Err(format!(
                "the cluster cannot hold {bundles} bundle(s) of {{ {resource}: {per} }} ({})",
                if strategy == PgStrategy::StrictSpread {
                    "STRICT_SPREAD: one node each"
                } else {
                    "PACK"
                }
            ));
        }
    };
    let unit = st.ids.id(&resource).ok_or("no device resource")?;
    let mut allocs = Vec::with_capacity(reqs.len());
    for (r, &n) in reqs.iter().zip(&nodes) {
        let a = st
            .allocate(n, r, None, policy)
            .ok_or("a placed bundle could not be allocated")?;
        allocs.push(a);
    }
    let ranks = placement::device_ranks(&allocs, |rid| rid == unit);
    Ok((ranks, policy))
}

/// The algorithms the model has for `op`, in the order ties are broken.
fn candidates(op: Op) -> Vec<Algorithm> {
    [
        Algorithm::Ring,
        Algorithm::Tree,
        Algorithm::InSwitch,
        Algorithm::NvlsTree,
        Algorithm::Hierarchical,
        Algorithm::Pairwise,
    ]
    .into_iter()
    .filter(|a| coll::supported(op, *a))
    .collect()
}

/// The table for `op` over `ranks` at `sizes`. Each size runs with the algorithm and
/// protocol NCCL would pick ([`coll::pick`]), either or both fixed by `algorithm` and
/// `protocol`; where NCCL's model does not apply and no algorithm is fixed, the fastest the
/// flow model has. A fixed algorithm the topology cannot run is an error.
pub fn table(
    spec: &Spec,
    op: Op,
    algorithm: Option<Algorithm>,
    protocol: Option<Protocol>,
    ranks: Vec<Rank>,
    policy: Policy,
    sizes: &[f64],
) -> Result<Table, String> {
    if ranks.len() < 2 && !matches!(op, Op::Broadcast { .. }) {
        return Err(format!(
            "{} needs at least 2 ranks, `--ranks` placed {}",
            op.name(),
            ranks.len()
        ));
    }
    if let Some(a) = algorithm
        && !coll::supported(op, a)
    {
        return Err(format!(
            "{} has no {} algorithm in this model",
            op.name(),
            a.name()
        ));
    }
    let graph = Graph::build(spec);
    let net = FlowNet::new(graph.capacity.clone());
    let names: Vec<String> = spec
        .cluster
        .iter()
        .flat_map(|c| c.nodes())
        .map(|n| n.name)
        .collect();
    let rank_names = ranks
        .iter()
        .map(|&(n, d)| format!("{}.d{d}", names.get(n).map_or("?", String::as_str)))
        .collect();
    let nccl = graph.nccl_comm(&ranks).is_some();
    let mut rows = Vec::new();
    let mut measured = None;
    for &bytes in sizes {
        // A calibration profile's measurement of this call, where one applies.
        let choice = coll::configure(&graph, op, &ranks, bytes, algorithm, protocol)?;
        if let Some(by) = choice.measured {
            let r = coll::simulate(
                &graph,
                &net,
                op,
                choice.algorithm,
                &ranks,
                bytes,
                &choice.options,
            )?;
            rows.push(Row {
                bytes,
                count: (bytes / 4.0) as u64,
                algorithm: choice.algorithm,
                protocol: choice.protocol,
                measured: true,
                result: r,
            });
            measured = Some(by);
            continue;
        }
        // NCCL's pick; without NCCL's model and with nothing fixed, every algorithm the flow
        // model has with the protocol `pick` gives there (Simple; a fixed other is its error).
        let picked = coll::pick(&graph, op, &ranks, bytes, algorithm, protocol)?;
        let tries: Vec<(Algorithm, Protocol)> = if nccl || algorithm.is_some() {
            vec![picked]
        } else {
            candidates(op).into_iter().map(|a| (a, picked.1)).collect()
        };
        let mut best: Option<(Algorithm, Protocol, CollectiveResult)> = None;
        let mut last_err = None;
        for (a, p) in tries {
            let opts = Options {
                protocol: p,
                ..Options::default()
            };
            match coll::simulate(&graph, &net, op, a, &ranks, bytes, &opts) {
                Ok(r) if best.as_ref().is_none_or(|b| r.secs < b.2.secs) => best = Some((a, p, r)),
                Ok(_) => {}
                Err(e) => last_err = Some(format!("{}: {e}", a.name())),
            }
        }
        let (a, p, r) = best
            .ok_or_else(|| last_err.unwrap_or_else(|| "no algorithm could price it".to_string()))?;
        rows.push(Row {
            bytes,
            count: (bytes / 4.0) as u64,
            algorithm: a,
            protocol: p,
            measured: false,
            result: r,
        });
    }
    Ok(Table {
        op,
        ranks,
        rank_names,
        policy,
        nccl,
        measured,
        rows,
    })
}

impl Table {
    /// One line for each size that takes less time than the size before it. That happens only
    /// where NCCL's tuning model, which picks the algorithm, prices it below what the flow
    /// model then runs: over a node count that is not a power of two NCCL's model charges its
    /// tree `log2i(nodes)` levels (`src/graph/tuning.cc`, rounded down) while the double
    /// binary tree NCCL builds (`src/graph/trees.cc`, `ncclGetBtree`) is a level deeper, so
    /// NCCL keeps the tree a size longer than is fastest. Orrery runs what NCCL picks and says
    /// so rather than hiding the fall.
    pub fn falls(&self) -> Vec<String> {
        let mut nodes: Vec<usize> = self.ranks.iter().map(|r| r.0).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let n = nodes.len();
        self.rows
            .windows(2)
            .filter(|w| w[1].result.secs < w[0].result.secs)
            .map(|w| {
                let why = if w[0].algorithm == Algorithm::Tree && n > 1 && !n.is_power_of_two() {
                    format!(
                        "NCCL's tuning model, which picks, prices its tree over {n} nodes at \
                         depth {} (log2 rounded down, src/graph/tuning.cc) while the double \
                         binary tree it builds is {} deep (src/graph/trees.cc); the flow model \
                         runs the tree NCCL builds",
                        n.ilog2(),
                        n.next_power_of_two().ilog2()
                    )
                } else {
                    "NCCL's tuning model, which picks, and the flow model, which times, \
                     disagree on the smaller size's algorithm here"
                        .to_string()
                };
                format!(
                    "{} B by {}/{} ({:.2} us) takes less than {} B by {}/{} ({:.2} us): {why}",
                    w[1].bytes,
                    w[1].algorithm.name(),
                    w[1].protocol.name(),
                    w[1].result.secs * 1e6,
                    w[0].bytes,
                    w[0].algorithm.name(),
                    w[0].protocol.name(),
                    w[0].result.secs * 1e6,
                )
            })
            .collect()
    }

    fn op_word(&self) -> &'static str {
        match self.op {
            Op::ReduceScatter => "reducescatter",
            o => o.name(),
        }
    }

    /// `size_bytes,count,time_us,algbw_GBps,busbw_GBps` (then `algorithm`, `protocol`: the
    /// model's, whose flows a measured row follows; `priced_by`: `model` or `measured`).
    pub fn csv(&self) -> String {
        let mut s = String::from(
            "size_bytes,count,time_us,algbw_GBps,busbw_GBps,algorithm,protocol,priced_by\n",
        );
        for r in &self.rows {
            s.push_str(&format!(
                "{},{},{:.3},{:.3},{:.3},{},{},{}\n",
                r.bytes,
                r.count,
                r.result.secs * 1e6,
                r.result.algbw / 1e9,
                r.result.busbw / 1e9,
                r.algorithm.name(),
                r.protocol.name(),
                if r.measured { "measured" } else { "model" }
            ));
        }
        s
    }
}

impl std::fmt::Display for Table {
    /// nccl-tests' layout: a `#` header naming the ranks, then one line per size.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = self.ranks.len();
        writeln!(
            f,
            "# {} over {p} ranks placed by {} ({}{}), busbw = algbw × {:.4}",
            self.op_word(),
            match self.policy {
                Policy::RayDefault => "ray_default",
                Policy::Spread => "spread",
                Policy::TopologyAware => "topology_aware",
            },
            self.rank_names
                .iter()
                .take(8)
                .cloned()
                .collect::<Vec<_>>()
                .join(" "),
            if p > 8 { " ..." } else { "" },
            busbw_factor(self.op.name(), p)
        )?;
        writeln!(
            f,
            "# idle network; model: src/network/collective (max-min flows, scale-up links at the \
             accelerator's `collective` share, NCCL 2.30.7 latencies and protocols)"
        )?;
        writeln!(
            f,
            "# algorithm/protocol: {}",
            if self.nccl {
                "NCCL's choice by its tuning model (src/graph/tuning.cc) unless fixed"
            } else {
                "no NCCL model for these devices: the fastest the flow model has unless fixed, simple"
            }
        )?;
        if let Some(m) = &self.measured {
            writeln!(
                f,
                "# rows marked `measured`: {m}; their flows follow the model's algorithm"
            )?;
        }
        writeln!(
            f,
            "#{:>12} {:>12} {:>8} {:>6} {:>6} {:>10} {:>8} {:>8}  algorithm protocol",
            "size", "count", "type", "redop", "root", "time", "algbw", "busbw"
        )?;
        writeln!(
            f,
            "#{:>12} {:>12} {:>8} {:>6} {:>6} {:>10} {:>8} {:>8}",
            "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)"
        )?;
        let (redop, root) = match self.op {
            Op::AllReduce | Op::ReduceScatter => ("sum", "-1"),
            Op::Broadcast { .. } => ("none", "0"),
            _ => ("none", "-1"),
        };
        for r in &self.rows {
            writeln!(
                f,
                " {:>12} {:>12} {:>8} {:>6} {:>6} {:>10.2} {:>8.2} {:>8.2}  {:<9} {}",
                r.bytes,
                r.count,
                "float",
                redop,
                root,
                r.result.secs * 1e6,
                r.result.algbw / 1e9,
                r.result.busbw / 1e9,
                if r.measured {
                    "measured"
                } else {
                    r.algorithm.name()
                },
                if r.measured { "-" } else { r.protocol.name() }
            )?;
        }
        for note in self.falls() {
            writeln!(f, "# note: {note}")?;
        }
        Ok(())
    }
}

/// The default `--ranks`: every device of the first node with devices (`1xG`), nccl-tests'
/// single-node run.
pub fn default_ranks(spec: &Spec) -> Result<String, String> {
    let c = spec
        .cluster
        .as_ref()
        .ok_or("the scenario declares no cluster")?;
    c.nodes()
        .filter_map(|n| spec.node_types.get(n.node_type))
        .map(|nt| nt.devices.iter().map(|g| g.at.len()).sum::<usize>())
        .find(|&d| d > 0)
        .map(|d| format!("1x{d}"))
        .ok_or_else(|| "the cluster has no devices".to_string())
}
