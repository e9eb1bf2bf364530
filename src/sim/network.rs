//! The simulation's view of the network: what each transfer is on the run's one network
//! ([`super::wire`]), where the data comes from, and how each was priced.
//!
//! Training collectives. When a job starts (and whenever its group or routes change), each of
//! its collectives is decomposed into rounds by [`collective::schedule`] over the ranks of the
//! device instances its placement group actually holds — node-major in the group's node order,
//! devices ascending — so which GPUs (and so which PCIe switch, NUMA node and nearest NICs) the
//! policy chose is what the flows cross. Every step runs those rounds as flows on the shared
//! network after its compute: each round's chains start when the previous round's finish, and
//! the step ends when the last round does, so jobs sharing a spine, and checkpoint or fetch
//! traffic on their NICs, slow each other by exactly the max-min shares.
//!
//! Task inputs come from the object directory: consumer i of a group of C tasks reads, from
//! each producer group of P tasks, the outputs of producers [i·P/C, (i+1)·P/C) (fractions at
//! the ends) from the nodes that hold them (`task_node` of the producer; local ones cost no
//! transfer), from the device the producer ran on to the device the consumer holds (the first
//! device instance of each allocation). Each holder's share moves with the consumer's transport (the task group's
//! `transport`, else its workload's, else Ray's object store) as [`crate::transport::shared`]
//! splits it: the fixed part of its critical path (the slowest holder's) as a delay, then the
//! wire bytes of every holder as flows on the shared network. The data sits in device memory
//! at both ends when the task uses devices and both nodes have them, else in host memory.
//!
//! When the flow model cannot price a collective — an algorithm the op does not have, uneven
//! devices per node under `hierarchical`, no NVSwitch for `nvls`, an O(p²) pattern (all-to-all,
//! broadcast) over more than [`MAX_QUADRATIC_RANKS`] ranks — the closed form of
//! [`super::models`] is used and the run says so in its model sources. A transfer whose
//! transport cannot move the data between its ends (NVLink P2P across nodes, RDMA without an
//! RDMA NIC, no route) is never priced by a formula: it is unavailable, the run says why, and
//! the task, actor call or request that needed it fails (`failures.transfers_unavailable`).

use crate::sim::TaskEv;
use crate::sim::World;
use crate::sim::tasks::Tasks;
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

use super::Sim;
use super::wire::{Owner, Wire};
use crate::engine::Time;
use crate::network::collective::{self, Algorithm, Op, Protocol, Round};
use crate::network::{Graph, LinkId, LinkKind};
use crate::placement::NodeId;
use crate::scenario::workload::Collective;

/// (node, device): where an object lives or a task runs.
pub(super) type Rank = (usize, usize);

/// One flow of a transfer on the run's network: its route and bytes.
pub(super) type Flow = (Vec<LinkId>, f64);

/// All-to-all and broadcast move O(p²) flows: beyond this many ranks they are priced in
/// closed form.
pub const MAX_QUADRATIC_RANKS: usize = 1024;
/// Fetch plans kept for reuse (keyed by transport, holder, consumer node, bytes).
const FETCH_CACHE: usize = 1 << 16;

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
    Checkpoint,
    /// Object spills to a node's disk and restores from it.
    Spill,
    /// Actor calls' tensors.
    Tensor,
    /// Service requests and responses.
    Payload,
    /// KV caches from an LLM service's prefill pool to its decode pool.
    KvCache,
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

/// One holder's share of a fetch on the shared network: the fixed part of its critical path
/// in seconds, its wire flow (route, bytes) if any, and the calibration fits that priced it.
pub(super) type FetchPart = Result<(f64, Option<(Vec<LinkId>, f64)>, Vec<String>), String>;

#[derive(Default)]
pub(crate) struct NetState {
    /// (transport, holder (node, device), consumer (node, device), on device, bytes bits) →
    /// its share on the shared network.
    fetch_cache: HashMap<(String, Rank, Rank, bool, u64), FetchPart>,
    /// How collectives and input fetches were priced ([`RunResult::network_models`]).
    ///
    /// [`RunResult::network_models`]: super::RunResult::network_models
    pub notes: std::collections::BTreeSet<NetworkModel>,
    /// Transfers of fetches in flight, by task.
    pub fetch_xfer: HashMap<u32, super::wire::TransferId>,
    /// Flows waiting for their fetch's fixed part to pass, by task.
    pub pending_fetch: HashMap<u32, Vec<(Vec<LinkId>, f64)>>,
    /// Nodes each task's restore or fetch in progress reads from (a holder's death stops it).
    pub fetch_from: HashMap<u32, Vec<u32>>,
    /// Tasks whose fetch a holder's death stopped, waiting for their lost inputs to be
    /// rebuilt (`failures/inputs.rs`).
    pub await_inputs: std::collections::BTreeSet<u32>,
    /// The wake-up event at the next flow completion, and its time.
    pub wake: Option<(crate::engine::EventId, Time)>,
    /// An [`super::Ev::WireFlush`] is queued: `wake` is brought up to date then.
    pub rearm: bool,
    /// Owners of transfers completed at the last wake (reused buffer).
    done: Vec<Owner>,
}

/// The flow model's op for a declared collective, and the algorithm and protocol it fixes
/// (`None`: NCCL's choice by size, [`collective::pick`]).
pub fn op_and_algorithm(
    c: &Collective,
) -> Result<(Op, Option<Algorithm>, Option<Protocol>), String> {
    let op = match c.op.as_str() {
        "allreduce" => Op::AllReduce,
        "allgather" => Op::AllGather,
        "reduce_scatter" => Op::ReduceScatter,
        "broadcast" => Op::Broadcast { root: 0 },
        "alltoall" => Op::AllToAll,
        other => return Err(format!("no flow model for `{other}`")),
    };
    let algo = if c.hierarchical {
        Some(Algorithm::Hierarchical)
    } else {
        match (op, c.algo.as_deref()) {
            (Op::AllToAll, _) => Some(Algorithm::Pairwise),
            (_, Some("tree")) => Some(Algorithm::Tree),
            (_, Some("nvls")) => Some(Algorithm::InSwitch),
            (_, Some("nvls_tree")) => Some(Algorithm::NvlsTree),
            (_, Some("ring")) => Some(Algorithm::Ring),
            _ => None,
        }
    };
    let proto = match c.proto.as_deref() {
        Some(p) => Some(Protocol::parse(p).ok_or_else(|| format!("no NCCL protocol `{p}`"))?),
        None => None,
    };
    Ok((op, algo, proto))
}

/// The rounds of `c` over `ranks` on `graph` with the algorithm and protocol it fixes or
/// NCCL would pick for its size (returned with them), or why the flow model cannot price it.
pub fn collective_rounds(
    graph: &Graph,
    c: &Collective,
    ranks: &[(usize, usize)],
    net_share: f64,
) -> Result<Rounds, String> {
    let (op, algo, proto) = op_and_algorithm(c)?;
    if matches!(op, Op::AllToAll | Op::Broadcast { .. }) && ranks.len() > MAX_QUADRATIC_RANKS {
        return Err(format!(
            "{} over {} ranks exceeds the flow model's {MAX_QUADRATIC_RANKS}",
            c.op,
            ranks.len()
        ));
    }
    let bytes = c.bytes.0 as f64;
    let mut choice = collective::configure(graph, op, ranks, bytes, algo, proto)?;
    choice.options.net_share = net_share;
    Ok(Rounds {
        rounds: collective::schedule(graph, op, choice.algorithm, ranks, bytes, &choice.options)?,
        algorithm: choice.algorithm,
        protocol: choice.protocol,
        measured: choice.measured,
    })
}

/// A declared collective's rounds and how they were priced.
pub struct Rounds {
    pub rounds: Vec<Round>,
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    /// The calibration profile's fit that priced it, if one did.
    pub measured: Option<String>,
}

impl Sim<'_> {
    /// Flows finished: tell their transfers' owners.
    pub(crate) fn on_wire(&mut self) {
        self.w.net.wake = None;
        let now = self.w.now();
        let mut done = std::mem::take(&mut self.w.net.done);
        done.clear();
        self.w.wire.complete(now, &mut done);
        for o in &done {
            self.on_transfer_done(*o);
        }
        self.w.net.done = done;
        // What the owners started at this time joins now; a flush they queued finds
        // nothing left to do.
        self.w.rearm_now();
    }

    /// Routes changed (a NIC went down): fetches stuck on a link with no capacity start again
    /// over the new routes (from the start: the bytes already moved are sent again, a
    /// conservative stand-in for Ray's per-chunk pull retries).
    pub(crate) fn reroute_stalled(&mut self) {
        self.w.net.fetch_cache.clear();
        // Fetches in flight on a dead link start again; fetches still paying their fixed part
        // (their flows were routed before the change) are routed again.
        let stalled = self.w.wire.stalled();
        let tasks: Vec<(u32, u32)> = stalled
            .iter()
            .filter_map(|(_, o)| match *o {
                Owner::Fetch { task, epoch } => Some((task, epoch)),
                _ => None,
            })
            .collect();
        // Tensors and service payloads stuck (or routed before the change) are sent again.
        self.reroute_moves(&stalled);
        let mut waiting: Vec<u32> = self.w.net.pending_fetch.keys().copied().collect();
        waiting.sort_unstable();
        for task in waiting {
            // Not on the wire yet: route its flows again, keeping its fixed part's event.
            let gi = self.tasks.group_of(task);
            let node = self.tasks.node[task as usize] as usize;
            let units = self.w.device_units(&self.tasks.groups[gi].request);
            match self
                .tasks
                .fetch_plan(&mut self.w, task, gi, node, units > 0.0)
            {
                Ok((_, flows)) => {
                    self.w.net.pending_fetch.insert(task, flows);
                }
                // No route any more: the task fails when its fixed part would have ended.
                Err(()) => {
                    let epoch = self.tasks.epoch[task as usize];
                    self.w.q.at(
                        self.w.q.now(),
                        super::Ev::Task(TaskEv::FetchFailed(task, epoch)),
                    );
                }
            }
        }
        for (task, epoch) in tasks {
            if epoch == self.tasks.epoch[task as usize] {
                self.w.cancel_fetch(task);
                let gi = self.tasks.group_of(task);
                let node = self.tasks.node[task as usize] as usize;
                let units = self.w.device_units(&self.tasks.groups[gi].request);
                self.tasks
                    .start_fetch(&mut self.w, task, gi, node, units, 0.0);
            }
        }
        self.w.rearm_wire();
    }
}

impl World<'_> {
    /// Capacities of node `n`'s links on the shared network from its failure state: scale-up
    /// links at the NVLink factor, each NIC's links at its factor (0 when down).
    pub(crate) fn apply_node_bandwidth(&mut self, n: NodeId) {
        let now = self.now();
        let Some(graph) = &self.wire.graph else {
            return;
        };
        let nv = self.health.nvlink_factor.get(n).copied().unwrap_or(1.0);
        let mut changes: Vec<(LinkId, f64)> = graph
            .node_links(n)
            .into_iter()
            .filter(|l| graph.kind[*l] == LinkKind::ScaleUp)
            .map(|l| (l, graph.capacity[l] * nv))
            .collect();
        for i in 0..self.health.nics.get(n).map_or(0, Vec::len) {
            let f = if self.health.nics_down[n].contains(&i) {
                0.0
            } else {
                self.health.nic_factor.get(&(n, i)).copied().unwrap_or(1.0)
            };
            changes.extend(
                graph
                    .nic_links(n, i)
                    .into_iter()
                    .map(|l| (l, graph.capacity[l] * f)),
            );
        }
        for (l, c) in changes {
            if self.wire.capacity(l) != c {
                self.wire.set_capacity(now, l, c);
            }
        }
        self.rearm_wire();
    }
}

impl Tasks {
    /// Bytes task `t` (of group `gi`) reads from each node other than `node`, from the
    /// object directory (module docs).
    pub(crate) fn input_holders(
        &self,
        world: &World<'_>,
        t: u32,
        gi: usize,
        node: NodeId,
    ) -> BTreeMap<Rank, f64> {
        let g = &self.groups[gi];
        let c = f64::from(g.count.max(1));
        let i = f64::from(t - g.first);
        let mut out: BTreeMap<Rank, f64> = BTreeMap::new();
        for (a, p) in self.groups.iter().enumerate() {
            if !p.dependents.contains(&(gi as u32)) {
                continue;
            }
            let o = world.spec.workloads[p.workload].tasks[p.index].output.0 as f64;
            if o <= 0.0 {
                continue;
            }
            let pc = f64::from(p.count);
            let (lo, hi) = (i * pc / c, (i + 1.0) * pc / c);
            let first = lo.floor() as u32;
            let last = (hi.ceil() as u32).min(p.count);
            for k in first..last {
                let share = (hi.min(f64::from(k + 1)) - lo.max(f64::from(k))).max(0.0);
                let pt = (self.groups[a].first + k) as usize;
                let holder = self.node[pt];
                if share <= 0.0
                    || holder == u32::MAX
                    || holder as usize == node
                    || !self.output_alive(world, pt, holder as usize)
                {
                    continue;
                }
                let dev = self.dev[pt] as usize;
                *out.entry((holder as usize, dev)).or_insert(0.0) += share * o;
            }
        }
        out
    }

    /// Task `t` of group `gi` on `node`: the fixed seconds of its input fetch and the flows it
    /// then moves on the shared network (module docs); closed forms where no plan applies.
    pub(crate) fn fetch_plan(
        &mut self,
        world: &mut World<'_>,
        t: u32,
        gi: usize,
        node: NodeId,
        on_device: bool,
    ) -> Result<(f64, Vec<Flow>), ()> {
        let holders = self.input_holders(world, t, gi, node);
        if holders.is_empty() {
            return Ok((0.0, Vec::new()));
        }
        let mut from: Vec<u32> = holders.keys().map(|(n, _)| *n as u32).collect();
        from.dedup();
        world.net.fetch_from.insert(t, from);
        let spec = world.spec;
        let name = self.fetch_transport(world, gi);
        let (w, ts) = {
            let g = &self.groups[gi];
            let w = &spec.workloads[g.workload];
            (w, &w.tasks[g.index])
        };
        let what = format!("object fetch {}.{}: transport {name}", w.name, ts.name);
        let g = &mut self.groups[gi];
        g.fetches += 1;
        g.fetched_bytes += holders.values().sum::<f64>();
        if let Some(log) = &mut world.transfers {
            log.push(super::TransferRecord {
                time: world.q.now(),
                tenant: self.groups[gi].tenant,
                transport: name.clone(),
                bytes: holders.values().sum(),
            });
        }
        if world.tl.on {
            use super::timeline::{End, MoveKind};
            let label = world.label_id(self.label(gi));
            let (to, now) = (End::Node(node as u32), world.q.now());
            let parts = holders
                .iter()
                .map(|(src, b)| {
                    let from = End::Node(src.0 as u32);
                    world
                        .tl
                        .part(MoveKind::Fetch, label, Some(t), from, to, *b, &name, None)
                })
                .collect();
            world
                .tl
                .begin(super::timeline::MoveKey::Fetch(t), now, parts);
        }
        let (mut fixed, mut flows) = (0.0f64, Vec::with_capacity(holders.len()));
        let here = (node, self.dev[t as usize] as usize);
        for (&src, &bytes) in &holders {
            let device =
                on_device && world.node_accel[src.0].is_some() && world.node_accel[node].is_some();
            let part = world.cached_part(&name, src, here, device, bytes, t);
            match part {
                Ok((f, wire, calibrated)) => {
                    let cal = if calibrated.is_empty() {
                        String::new()
                    } else {
                        format!("; {}", calibrated.join(", "))
                    };
                    world.net.note(
                        MovementKind::Fetch,
                        true,
                        format!("{what} on the shared network, from the producers' nodes{cal}"),
                    );
                    fixed = fixed.max(f);
                    flows.extend(wire);
                }
                Err(e) => {
                    world.unavailable(MovementKind::Fetch, &what, &e);
                    return Err(());
                }
            }
        }
        Ok((fixed, flows))
    }
}

impl World<'_> {
    /// A transfer `what` cannot move (`why`): noted as unavailable and counted; the caller
    /// fails the work that needed it.
    pub(super) fn unavailable(&mut self, kind: MovementKind, what: &str, why: &str) {
        self.losses.transfers_unavailable += 1;
        self.net.note(
            kind,
            false,
            format!("{what}: unavailable ({why}); the work that needed it fails"),
        );
    }

    pub(crate) fn init_network(&mut self) {
        let graph = self.spec.cluster.as_ref().map(|_| Graph::build(self.spec));
        self.wire = Wire::new(graph, self.tl.on);
    }

    /// The network changed: its wake-up event is brought up to date by an [`Ev::WireFlush`]
    /// queued now, after the events already queued for this time, so the transfers those
    /// start join the network together with this one (see [`super::wire`]). Call after any
    /// change.
    ///
    /// [`Ev::WireFlush`]: super::Ev::WireFlush
    pub(crate) fn rearm_wire(&mut self) {
        if !self.net.rearm {
            self.net.rearm = true;
            let now = self.now();
            self.q.at(now, super::Ev::WireFlush);
        }
    }

    /// Keep one wake-up event at the next flow completion (putting the staged transfers on
    /// the network first).
    pub(crate) fn rearm_now(&mut self) {
        self.net.rearm = false;
        let next = self.wire.next_wake();
        if self.net.wake.map(|(_, t)| t) == next {
            return;
        }
        if let Some((id, _)) = self.net.wake.take() {
            self.q.cancel(id);
        }
        if let Some(t) = next {
            let id = self.q.at(t, super::Ev::Wire);
            self.net.wake = Some((id, t));
        }
    }

    /// A NIC is back: new fetches may route over it again.
    pub(crate) fn net_routes_changed(&mut self) {
        self.net.fetch_cache.clear();
    }

    /// [`World::price_part`], remembered by (transport, ends, endpoints, bytes): the same
    /// transfer between the same ranks is priced once.
    pub(super) fn cached_part(
        &mut self,
        name: &str,
        src: Rank,
        dst: Rank,
        device: bool,
        bytes: f64,
        key: u32,
    ) -> FetchPart {
        let k = (name.to_string(), src, dst, device, bytes.to_bits());
        if let Some(p) = self.net.fetch_cache.get(&k) {
            return p.clone();
        }
        let p = self.price_part(name, src, dst, device, bytes, key);
        if self.net.fetch_cache.len() >= FETCH_CACHE {
            self.net.fetch_cache.clear();
        }
        self.net.fetch_cache.insert(k, p.clone());
        p
    }

    /// One holder's share: a transport plan split for the shared network.
    fn price_part(
        &self,
        name: &str,
        (src, sd): Rank,
        (dst, dd): Rank,
        device: bool,
        bytes: f64,
        key: u32,
    ) -> FetchPart {
        let spec = self.spec;
        let graph = self.wire.graph.as_ref().ok_or("no cluster graph")?;
        let params = crate::transport::TransportParams::named(spec, name)
            .ok_or_else(|| format!("unknown transport `{name}`"))?
            .calibrated(spec, src, dst);
        let plan = if device {
            crate::transport::plan(graph, &params, (src, sd), (dst, dd), bytes, u64::from(key))
        } else {
            crate::transport::plan_host(graph, &params, src, dst, bytes, u64::from(key))
        }
        .map_err(|e| {
            e.describe(&|n| {
                spec.cluster
                    .as_ref()
                    .and_then(|c| c.node_name_at(n))
                    .unwrap_or_else(|| format!("node {n}"))
            })
        })?;
        let sp = crate::transport::shared(&plan, &graph.capacity);
        if !sp.idle.secs.is_finite() {
            return Err("no route from the holder".into());
        }
        Ok((sp.fixed_secs, sp.wire, params.fits.sources.clone()))
    }
}
