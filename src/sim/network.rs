//! The simulation's view of the network: training collectives priced by the flow-level model
//! on the cluster's link graph ([`crate::network::collective`]) instead of closed forms, so
//! where a job is placed — one rack or four, which NICs, an oversubscribed spine, a degraded
//! NVLink or a NIC down — changes its step time the way the topology says.
//!
//! Model: when a job starts, and whenever a node of its group changes bandwidth, each of its
//! collectives is simulated once on the graph as flows (ranks node-major in the job's node
//! order, the first `d` devices of a node holding `d` of its devices), with the job's own flows
//! contending; the step time is reused until the group or its bandwidth changes. Degraded
//! scale-up links and NICs scale those links' capacities; a NIC that is down is taken out of
//! routing and its links carry nothing. Other jobs' traffic is not on the graph while a job's
//! collectives are priced (each job sees an otherwise idle network).
//!
//! Task inputs: a task fetches the share of its input that lives on other nodes — (1 − 1/n) of
//! it on n nodes, the expected remote share when producers spread evenly — with its transport
//! (the task group's `transport`, else its workload's, else Ray's object store), priced on the
//! link graph by [`crate::transport`] without contention from other transfers: the mean over
//! up to [`FETCH_SOURCES`] source nodes spread evenly through the cluster, cached per (group,
//! node). The data sits in device memory at both ends when the task uses devices and both
//! nodes have them, else in host memory ([`crate::transport::plan_host`]). Where a transport
//! cannot move it (NVLink P2P across nodes, a device transport for host data, a node without
//! a NIC), the closed form of [`super::models::transfer_secs`] is used and the run says so.
//!
//! When the flow model cannot price a collective — an algorithm the op does not have, uneven
//! devices per node under `hierarchical`, no NVSwitch for `nvls`, a node with every NIC down,
//! or an O(p²) pattern (all-to-all, broadcast) over more than [`MAX_QUADRATIC_RANKS`] ranks —
//! the closed form of [`super::models`] is used and the run says so in its model sources.

use std::collections::BTreeMap;

use super::Sim;
use crate::network::collective::{self, Algorithm, Op, Options};
use crate::network::{FlowNet, Graph, LinkKind};
use crate::placement::NodeId;
use crate::spec::workload::Collective;

/// All-to-all and broadcast move O(p²) flows: beyond this many ranks they are priced in
/// closed form.
pub const MAX_QUADRATIC_RANKS: usize = 1024;

/// What a collective's price depends on: ranks, op, algorithm, bytes, per-node bandwidth state.
type Key = (Vec<(usize, usize)>, String, String, u64, Vec<NodeState>);
/// A node's bandwidth state: (node, scale-up factor bits, (NIC, factor bits) of NICs not at 1).
type NodeState = (usize, u64, Vec<(usize, u64)>);

/// How one kind of data movement of a run was priced.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct NetworkModel {
    pub kind: MovementKind,
    /// By the flow or transport model on the link graph (false: the closed-form fallback).
    pub on_graph: bool,
    /// What was priced and how, e.g. `collective allreduce ring: flow model on the link graph`.
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MovementKind {
    Collective,
    Fetch,
}

impl std::fmt::Display for NetworkModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl NetState {
    pub(crate) fn note(&mut self, kind: MovementKind, on_graph: bool, text: String) {
        self.notes.insert(NetworkModel {
            kind,
            on_graph,
            text,
        });
    }
}

/// Source nodes a task's remote input is averaged over.
pub const FETCH_SOURCES: usize = 4;

#[derive(Default)]
pub(crate) struct NetState {
    pub graph: Option<Graph>,
    fetch_cache: BTreeMap<(usize, NodeId), f64>,
    cache: BTreeMap<Key, Result<f64, String>>,
    /// How collectives and input fetches were priced ([`RunResult::network_models`]).
    ///
    /// [`RunResult::network_models`]: super::RunResult::network_models
    pub notes: std::collections::BTreeSet<NetworkModel>,
}

/// The flow model's op and algorithm for a declared collective.
pub fn op_and_algorithm(c: &Collective) -> Result<(Op, Algorithm), String> {
    let op = match c.op.as_str() {
        "allreduce" => Op::AllReduce,
        "allgather" => Op::AllGather,
        "reduce_scatter" => Op::ReduceScatter,
        "broadcast" => Op::Broadcast { root: 0 },
        "alltoall" => Op::AllToAll,
        other => return Err(format!("no flow model for `{other}`")),
    };
    let algo = if c.hierarchical {
        Algorithm::Hierarchical
    } else {
        match (op, c.algo.as_deref()) {
            (Op::AllToAll, _) => Algorithm::Pairwise,
            (_, Some("tree")) => Algorithm::Tree,
            (_, Some("nvls")) => Algorithm::InSwitch,
            _ => Algorithm::Ring,
        }
    };
    Ok((op, algo))
}

impl Sim<'_> {
    pub(crate) fn init_network(&mut self) {
        if self.spec.cluster.is_some() {
            self.net.graph = Some(Graph::build(self.spec));
        }
    }

    /// Seconds of one collective over the job's group by the flow model, or why it cannot.
    pub(crate) fn flow_collective_secs(
        &mut self,
        c: &Collective,
        per_node: &BTreeMap<NodeId, u32>,
    ) -> Result<f64, String> {
        let Some(graph) = &self.net.graph else {
            return Err("no cluster graph".into());
        };
        let (op, algo) = op_and_algorithm(c)?;
        let ranks: Vec<(usize, usize)> = per_node
            .iter()
            .flat_map(|(n, d)| (0..*d as usize).map(move |k| (*n, k)))
            .collect();
        if matches!(op, Op::AllToAll | Op::Broadcast { .. }) && ranks.len() > MAX_QUADRATIC_RANKS {
            return Err(format!(
                "{} over {} ranks exceeds the flow model's {MAX_QUADRATIC_RANKS}",
                c.op,
                ranks.len()
            ));
        }
        let state: Vec<NodeState> = per_node
            .keys()
            .map(|&n| {
                let nv = self.failures.nvlink_factor.get(n).copied().unwrap_or(1.0);
                let nics = (0..self.failures.nics.get(n).map_or(0, Vec::len))
                    .filter_map(|i| {
                        let f = if self.failures.nics_down[n].contains(&i) {
                            0.0
                        } else {
                            self.failures
                                .nic_factor
                                .get(&(n, i))
                                .copied()
                                .unwrap_or(1.0)
                        };
                        (f != 1.0).then_some((i, f.to_bits()))
                    })
                    .collect();
                (n, nv.to_bits(), nics)
            })
            .collect();
        let key: Key = (
            ranks.clone(),
            c.op.clone(),
            algo.name().to_string(),
            c.bytes.0,
            state.clone(),
        );
        if let Some(r) = self.net.cache.get(&key) {
            return r.clone();
        }
        // Apply the group's bandwidth state to a copy of the graph's capacities.
        let mut g2: Option<Graph> = None;
        let mut caps = graph.capacity.clone();
        for (n, nv, nics) in &state {
            let nv = f64::from_bits(*nv);
            if nv != 1.0 {
                for l in graph.node_links(*n) {
                    if graph.kind[l] == LinkKind::ScaleUp {
                        caps[l] *= nv;
                    }
                }
            }
            for (i, f) in nics {
                let f = f64::from_bits(*f);
                for l in graph.nic_links(*n, *i) {
                    caps[l] *= f;
                }
                if f == 0.0 {
                    g2.get_or_insert_with(|| graph.clone()).disable_nic(*n, *i);
                }
            }
        }
        let g = g2.as_ref().unwrap_or(graph);
        let net = FlowNet::new(caps);
        let r = collective::simulate(
            g,
            &net,
            op,
            algo,
            &ranks,
            c.bytes.0 as f64,
            &Options::default(),
        )
        .map(|r| r.secs);
        self.net.cache.insert(key, r.clone());
        r
    }

    /// Seconds for a task of group `gi` on `node` to fetch its remote input (module docs).
    pub(crate) fn fetch_secs(&mut self, gi: usize, node: NodeId, on_device: bool) -> f64 {
        let n = self.node_types.len();
        let g = &self.groups[gi];
        let bytes = g.input_bytes * (1.0 - 1.0 / n.max(1) as f64);
        if n <= 1 || bytes <= 0.0 {
            return 0.0;
        }
        if let Some(&s) = self.net.fetch_cache.get(&(gi, node)) {
            return s;
        }
        let spec = self.spec;
        let w = &spec.workloads[g.workload];
        let ts = &w.tasks[g.index];
        let name = self
            .transport_override
            .clone()
            .or_else(|| ts.transport.clone())
            .or_else(|| w.transport.clone())
            .unwrap_or_else(|| "object_store".to_string());
        let what = format!("object fetch {}.{}: transport {name}", w.name, ts.name);
        type Priced = (f64, std::collections::BTreeSet<String>);
        let priced = (|| -> Result<Priced, String> {
            let graph = self.net.graph.as_ref().ok_or("no cluster graph")?;
            let base = crate::transport::TransportParams::named(spec, &name)
                .ok_or_else(|| format!("unknown transport `{name}`"))?;
            let step = (n / FETCH_SOURCES).max(1);
            let mut calibrated = std::collections::BTreeSet::new();
            let mut total = 0.0;
            let mut count = 0;
            for k in 1..=FETCH_SOURCES {
                let src = (node + k * step) % n;
                if src == node || (k > 1 && (node + (k - 1) * step) % n == src) {
                    continue;
                }
                let params = base.clone().calibrated(spec, src, node);
                calibrated.extend(params.fits.sources.iter().cloned());
                let device =
                    on_device && self.node_accel[src].is_some() && self.node_accel[node].is_some();
                let plan = if device {
                    crate::transport::plan(graph, &params, (src, 0), (node, 0), bytes, k as u64)
                } else {
                    crate::transport::plan_host(graph, &params, src, node, bytes, k as u64)
                }
                .map_err(|e| e.to_string())?;
                total += crate::transport::closed_form(&plan, &graph.capacity).secs;
                count += 1;
            }
            if count == 0 || !total.is_finite() {
                return Err("no source could reach the node".into());
            }
            Ok((total / count as f64, calibrated))
        })();
        let secs = match priced {
            Ok((s, calibrated)) => {
                let cal = if calibrated.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; {}",
                        calibrated.into_iter().collect::<Vec<_>>().join(", ")
                    )
                };
                self.net.note(
                    MovementKind::Fetch,
                    true,
                    format!("{what} on the link graph (uncontended{cal})"),
                );
                s
            }
            Err(e) => {
                self.net.note(
                    MovementKind::Fetch,
                    false,
                    format!("{what}: closed form ({e})"),
                );
                super::models::transfer_secs(spec, false, self.node_types[node], bytes)
            }
        };
        self.net.fetch_cache.insert((gi, node), secs);
        secs
    }
}
