//! Collectives decomposed into flows on the link graph, so they contend with other traffic.
//!
//! A collective is a sequence of steps. Each step's flows start together on a copy of the
//! caller's [`FlowNet`] — the flows already there keep competing — and the step lasts until its
//! slowest flow finishes at max-min rates. Every step starts from the same snapshot of that
//! background (a steady load: the traffic the caller sees now), which is what makes two steps
//! with the same flows take exactly the same time (see "Reuse" below).
//!
//! Ops and the algorithms each has (any other pair is an error, never a panic):
//!
//! | op | ring | tree | in-switch | hierarchical | pairwise |
//! |---|---|---|---|---|---|
//! | allreduce | yes | yes | yes | yes | – |
//! | allgather, reduce_scatter | yes | – | – | yes | – |
//! | broadcast | yes (pipelined chain) | – | – | – | – |
//! | alltoall, sendrecv | – | – | – | – | yes |
//!
//! NCCL has no tree or NVLS allgather/broadcast in this model's scope, all-to-all is a set of
//! point-to-point exchanges, and send/recv is point to point by definition.
//!
//! Cost of a step, α: NCCL's per-hop latency of the slowest link kind any of its flows
//! crosses — network (a path through a leaf switch), else PCIe when a path uses neither the
//! NVSwitch nor a direct device-device link, else NVLink — for the call's algorithm and
//! protocol ([`tuning`], NCCL 2.30.7 `src/graph/tuning.cc` `hwLatencies`: ring Simple 14,
//! 5.7 and 3.4 µs; tree Simple 14, 4.0 and 4.0; LL 2.7/1.0/0.6; with one rank per node a
//! ring's network hops pay the tree's network latency, LL 5.0 µs, as NCCL's model charges
//! them: "with ppn=1 latencies are fully exposed"). Under NCCL's model (NVIDIA
//! devices) a call also pays its base latency once (ring Simple 8.4 µs, LL 6.6, LL128 14; NVLS
//! 25 µs, [`NVLS_BASE`]) and its flows' bytes are stretched by the protocol's bandwidth
//! relative to Simple ([`tuning::protocol_stretch`]); elsewhere calls are Simple with the
//! ring's α and no base. Pipelined algorithms (tree, broadcast, in-switch) overlap the α of
//! successive chunks, as NCCL's own model does (latency = stage count × hwLat, not chunk
//! count): they pay α once per pipeline stage and the bandwidth time of every chunk step.
//! Which algorithm and protocol a call runs with, when the caller fixes neither, is NCCL's
//! pick by size ([`pick`]).
//!
//! Closed forms on an uncontended topology (p ranks, n bytes as nccl-tests counts them, β the
//! bottleneck bandwidth per rank and direction, c the chunk, k = ⌈n'/c⌉ chunks of the n' bytes
//! a pipeline carries):
//! (each plus the call's base latency under NCCL's model):
//! - ring allreduce 2(p−1)·α + 2(p−1)/p·n/β; ring allgather and reduce-scatter (p−1)·α +
//!   (p−1)/p·n/β; pairwise all-to-all the same; send/recv α + n/β.
//! - broadcast, a chain from the root: (p−1)·α + (k + p − 2)·c/β, n' = n.
//! - hierarchical allreduce: intra-node reduce-scatter + inter-node allreduce of n/g on g
//!   parallel rings (one per local rank, NCCL's rails) + intra-node allgather — where "node"
//!   is the scale-up domain: a node, or a whole TPU-style slice (its chips share one ICI torus;
//!   XLA reduces over ICI before the data-centre network), [`Graph::scale_up_domain`]:
//!   2[(g−1)α + (g−1)/g·n/β_intra] + 2(m−1)α_net + 2(m−1)/m·(n/g)/β_net over m nodes.
//! - tree: NCCL's double binary tree (two complementary trees, n/2 each, reduce up then
//!   broadcast down, pipelined; across nodes laid over every NIC channel, each with its share);
//!   on an NVSwitch node of 4 ranks: 4α + (4k + 2)·c/β, n' = n/2 (derived in
//!   `tests/all/collectives.rs`).
//! - in-switch: NVLS 25 µs + 2α + (n + n/p + c − c/p)/β; SHARP in the leaf 2α + (n + c)/β.
//!
//! Reuse: the ECMP key of a flow is a hash of its (source, destination) pair — NCCL keeps one
//! connection per peer for the collective's life, so its packets stay on one path — not of the
//! step. With the static background, steps with the same flows therefore have the same
//! duration; each distinct step pattern is simulated once and its duration reused. That is
//! exact, not an approximation ([`Options::reuse`] turns it off to check). A ring allreduce of
//! 8,192 ranks is one simulated step.

mod choice;
mod hamiltonian;
mod in_switch;
pub mod measured;
mod pipeline;
mod recurring;
mod ring;
mod run;
mod tree;
pub mod tuning;

use super::drive::Step;
use super::{FlowNet, Graph};
pub use choice::{Choice, configure, pick};
pub use recurring::Recurring;
use run::Runner;
pub use run::{Chain, Round};
pub use tuning::Protocol;

/// A rank: (node, device) in the graph's numbering.
pub type Rank = (usize, usize);

/// NVLS base latency: NCCL's tuning model (src/graph/tuning.cc) charges in-switch reduction
/// 25 µs on top of its steps (shared/reference/hardware-and-models.md).
pub const NVLS_BASE: f64 = 25e-6;

/// Pipeline chunk: NCCL's Simple-protocol step, NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8 = 512 KiB.
pub const DEFAULT_CHUNK: f64 = 512.0 * 1024.0;

/// A collective operation; `n` (the `bytes` argument) is the size nccl-tests reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// n bytes in and out on every rank.
    AllReduce,
    /// n bytes out on every rank (n/p in).
    AllGather,
    /// n bytes in on every rank (n/p out).
    ReduceScatter,
    /// n bytes from `ranks[root]` to every rank.
    Broadcast { root: usize },
    /// n bytes per rank, n/p to each peer.
    AllToAll,
    /// nccl-tests' sendrecv: every rank sends n to the next and receives n from the previous.
    SendRecv,
}

impl Op {
    /// The name the scenario language and [`busbw_factor`] use.
    pub fn name(self) -> &'static str {
        match self {
            Op::AllReduce => "allreduce",
            Op::AllGather => "allgather",
            Op::ReduceScatter => "reduce_scatter",
            Op::Broadcast { .. } => "broadcast",
            Op::AllToAll => "alltoall",
            Op::SendRecv => "sendrecv",
        }
    }
}

/// How an op is decomposed into flows (the table in the module docs says which op has which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Ranks in the given order form a ring; broadcast is the pipelined chain from the root.
    Ring,
    /// NCCL's double binary tree over the ranks in the given order, pipelined.
    Tree,
    /// The switch reduces: NVLS through the NVSwitch (ranks on one node), SHARP-style in the
    /// leaf switch (ranks on several nodes of one rack).
    InSwitch,
    /// NCCL's NVLS_TREE (ranks on several NVSwitch nodes): each node reduces in its switch,
    /// the nodes exchange their reduced slices over a tree of their NICs, each node
    /// multicasts the result.
    NvlsTree,
    /// Reduce-scatter inside nodes, g parallel inter-node rings on n/g, allgather inside nodes.
    Hierarchical,
    /// Direct point-to-point exchanges (all-to-all in p − 1 shifts, send/recv).
    Pairwise,
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::Tree => "tree",
            Algorithm::InSwitch => "nvls",
            Algorithm::NvlsTree => "nvls_tree",
            Algorithm::Hierarchical => "hierarchical",
            Algorithm::Pairwise => "pairwise",
        }
    }
}

/// Whether `op` has `algorithm` in this model (the table in the module docs).
pub fn supported(op: Op, algorithm: Algorithm) -> bool {
    use Algorithm::*;
    match op {
        Op::AllReduce => matches!(algorithm, Ring | Tree | InSwitch | NvlsTree | Hierarchical),
        Op::AllGather | Op::ReduceScatter => matches!(algorithm, Ring | Hierarchical),
        Op::Broadcast { .. } => algorithm == Ring,
        Op::AllToAll | Op::SendRecv => algorithm == Pairwise,
    }
}

/// Model parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Pipeline chunk in bytes (tree, broadcast, in-switch); [`DEFAULT_CHUNK`].
    pub chunk: f64,
    /// A fixed α per step (or per pipeline stage) instead of the link-kind one: for
    /// calibration and for tests that isolate the bandwidth term. [`NVLS_BASE`] still applies.
    pub alpha: Option<f64>,
    /// Simulate each distinct step pattern once and reuse its duration (exact; see the module
    /// docs). Off simulates every step, to check that.
    pub reuse: bool,
    /// NCCL protocol ([`tuning`]): its base latency once per call, its per-hop α, and its
    /// bandwidth relative to Simple (on NVIDIA devices; elsewhere Simple's). [`pick`] picks
    /// it with the algorithm as NCCL would.
    pub protocol: Protocol,
    /// A calibration profile's measurement of this call ([`measured`]): it pays the fit's α
    /// once and no per-hop α, and its flows are stretched so that it takes the measured time
    /// on an idle network. Set by [`configure`].
    pub measured: Option<measured::Measured>,
    /// The share of a NIC's line rate the call's network hops reach: 1 over NCCL's
    /// InfiniBand-verbs transport (the default wherever an RDMA NIC is present),
    /// [`SOCKET_SHARE`] over its socket transport (`NCCL_IB_DISABLE=1`, what a tenant without
    /// RDMA runs; `scenario::transport::collective_net`). Flows that cross the network are
    /// stretched by its inverse; hops inside a node are not.
    pub net_share: f64,
}

/// The share of a NIC's line rate NCCL's socket transport (`NET/Socket`,
/// `src/transport/net_socket.cc`: the proxy thread copies each chunk through host memory and
/// the kernel's TCP stack, with NCCL's default of one helper thread and one socket per
/// connection) reaches in all-reduce bus bandwidth. Published: 4 to 6 GB/s busbw on 100 GbE
/// (12.5 GB/s), 4 nodes × 8 V100, NCCL 2.8, best settings (NVIDIA/nccl issue #450, January
/// 2021): 0.32 to 0.48; 1.7 GB/s on Azure's 25 Gb/s TCP (3.125 GB/s; NTTTCP measured 25 Gb/s
/// one way, 21 both ways), 2 nodes × 4 V100, NCCL 2.9 (NVIDIA/nccl-tests issue #83, May
/// 2021): 0.54. 0.45 sits inside both: it puts the first at 5.6 GB/s and the second at
/// 1.41 GB/s (17% low). Latencies stay NCCL's network hop latencies (its tuning model does not
/// tell its transports apart).
pub const SOCKET_SHARE: f64 = 0.45;

impl Default for Options {
    fn default() -> Self {
        Options {
            chunk: DEFAULT_CHUNK,
            alpha: None,
            reuse: true,
            protocol: Protocol::Simple,
            measured: None,
            net_share: 1.0,
        }
    }
}

/// What a collective cost, with the bandwidths nccl-tests would report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CollectiveResult {
    pub secs: f64,
    /// n / secs (0 when it took no time).
    pub algbw: f64,
    /// algbw × [`busbw_factor`].
    pub busbw: f64,
    /// Steps of the algorithm (chunk steps for pipelined ones).
    pub steps: u64,
    /// Flows those steps comprise.
    pub flows: u64,
    /// Steps actually run through the flow model (the rest reused a pattern's duration).
    pub simulated_steps: u64,
    /// Flow starts (one per batch) and completions the flow model processed.
    pub flow_events: u64,
}

/// Cost of `op` over `ranks` with `algorithm`, `bytes` as nccl-tests counts them, on a copy of
/// `net` (its flows keep competing; every step sees them as they are now).
pub fn simulate(
    graph: &Graph,
    net: &FlowNet,
    op: Op,
    algorithm: Algorithm,
    ranks: &[Rank],
    bytes: f64,
    opts: &Options,
) -> Result<CollectiveResult, String> {
    validate(op, algorithm, ranks, bytes, opts)?;
    let mut run = Runner::new(graph, net, opts);
    decompose(&mut run, graph, op, algorithm, ranks, bytes)?;
    let p = ranks.len();
    let (algbw, busbw) = bandwidths(op.name(), p, bytes, run.secs);
    Ok(CollectiveResult {
        secs: run.secs,
        algbw,
        busbw,
        steps: run.steps,
        flows: run.flows,
        simulated_steps: run.simulated,
        flow_events: run.events,
    })
}

/// The rounds of `op` over `ranks` for a network shared with other traffic, to be run as
/// events by the caller (the simulation's one network): each round waits its α, then starts
/// its chains together; the next round starts when the last chain of this one has finished.
/// The same decomposition as [`simulate`], with `repeat` identical steps merged into one round
/// (their bytes summed, their α summed) and each ring one chain over all its hops (a ring is a
/// pipeline that moves at its slowest hop's rate). On an idle network the rounds take what
/// [`simulate`] gives wherever a round's flows do not trade bandwidth among themselves (rings,
/// hierarchical rings, pairwise steps, pipelines on disjoint links: every shipped case).
pub fn schedule(
    graph: &Graph,
    op: Op,
    algorithm: Algorithm,
    ranks: &[Rank],
    bytes: f64,
    opts: &Options,
) -> Result<Vec<Round>, String> {
    validate(op, algorithm, ranks, bytes, opts)?;
    let idle = FlowNet::default();
    let mut run = Runner::recording(graph, &idle, opts);
    decompose(&mut run, graph, op, algorithm, ranks, bytes)?;
    Ok(run.into_rounds())
}

/// One-way point-to-point sends of `bytes` from each pair's first rank to its second, at
/// once, as rounds on `graph` (a pipeline stage's activations to the next stage's ranks;
/// [`Op::SendRecv`] is nccl-tests' two-way ring). One step: its α and one flow per pair.
pub fn sends(
    graph: &Graph,
    pairs: &[(Rank, Rank)],
    bytes: f64,
    opts: &Options,
) -> Result<Vec<Round>, String> {
    if pairs.is_empty() || !(bytes.is_finite() && bytes >= 0.0) {
        return Err(format!("{} sends of {bytes} bytes", pairs.len()));
    }
    let idle = FlowNet::default();
    let mut run = Runner::recording(graph, &idle, opts);
    let flows: Vec<run::Flow> = pairs
        .iter()
        .map(|&(a, b)| run::Flow::new(a, b, bytes))
        .collect();
    run.step(&flows, 1)?;
    Ok(run.into_rounds())
}

/// Seconds for `rounds` run one after another from time 0 on a copy of `background` (its
/// flows keep competing and leave when they finish): how the simulation runs a schedule,
/// without the engine. Errors if a chain can never finish.
pub fn run_rounds(background: &FlowNet, rounds: &[Round]) -> Result<f64, String> {
    let mut net = background.clone();
    let mut elapsed = 0.0;
    for r in rounds {
        net.advance(r.alpha);
        elapsed += r.alpha;
        let ids = net.add_batch(
            r.chains
                .iter()
                .filter(|c| c.bytes > 0.0)
                .map(|c| (c.path.clone(), c.bytes)),
        );
        let mut mine = std::collections::BTreeSet::from_iter(ids.iter().map(|f| f.0));
        while !mine.is_empty() {
            let Step::Finished(f) = net.step(&mut elapsed, None) else {
                return Err("a chain cannot progress: a link on its path has no capacity".into());
            };
            net.remove(f);
            mine.remove(&f.0);
        }
    }
    Ok(elapsed)
}

fn validate(
    op: Op,
    algorithm: Algorithm,
    ranks: &[Rank],
    bytes: f64,
    opts: &Options,
) -> Result<(), String> {
    if !supported(op, algorithm) {
        let have: Vec<&str> = [
            Algorithm::Ring,
            Algorithm::Tree,
            Algorithm::InSwitch,
            Algorithm::NvlsTree,
            Algorithm::Hierarchical,
            Algorithm::Pairwise,
        ]
        .into_iter()
        .filter(|a| supported(op, *a))
        .map(Algorithm::name)
        .collect();
        return Err(format!(
            "{} has no {} algorithm (it has: {})",
            op.name(),
            algorithm.name(),
            have.join(", ")
        ));
    }
    if !(bytes.is_finite() && bytes >= 0.0) {
        return Err(format!(
            "message size must be a finite byte count, got {bytes}"
        ));
    }
    if !(opts.chunk.is_finite() && opts.chunk > 0.0) {
        return Err(format!(
            "chunk must be a positive byte count, got {}",
            opts.chunk
        ));
    }
    if let Some(a) = opts.alpha
        && !(a.is_finite() && a >= 0.0)
    {
        return Err(format!("alpha must be a non-negative time, got {a}"));
    }
    let mut seen = std::collections::HashSet::with_capacity(ranks.len());
    if let Some(r) = ranks.iter().find(|r| !seen.insert(**r)) {
        return Err(format!("rank {r:?} appears twice in the group"));
    }
    let p = ranks.len();
    if let Op::Broadcast { root } = op
        && root >= p.max(1)
    {
        return Err(format!("broadcast root {root} is not one of the {p} ranks"));
    }
    Ok(())
}

/// Run (or record) the algorithm's steps.
fn decompose(
    run: &mut Runner,
    graph: &Graph,
    op: Op,
    algorithm: Algorithm,
    ranks: &[Rank],
    bytes: f64,
) -> Result<(), String> {
    if ranks.len() < 2 {
        return Ok(());
    }
    // Under NCCL's model: the algorithm's column of hop latencies, the protocol's bandwidth
    // stretch and its base latency once per call. Elsewhere (RCCL's constants are its own and
    // not modelled) Simple with the ring's α, the one this crate always charged, and no base.
    let base;
    (run.family, run.protocol, run.protocol_stretch, base) = match graph.nccl_comm(ranks) {
        Some(c) => {
            let p = run.opts.protocol;
            let stretch = tuning::protocol_stretch(&c, op, algorithm, p);
            (algorithm, p, stretch, tuning::base_latency(algorithm, p))
        }
        None => (Algorithm::Ring, Protocol::Simple, 1.0, 0.0),
    };
    if let Some(m) = run.opts.measured {
        // The model's bandwidth time on an idle network, no α, Simple: the stretch makes the
        // call's flows take bytes / algbw of the fit there (see `measured`).
        let bare = Options {
            alpha: Some(0.0),
            protocol: Protocol::Simple,
            measured: None,
            ..*run.opts
        };
        let idle = FlowNet::new(graph.capacity.clone());
        let mut t0 = simulate(graph, &idle, op, algorithm, ranks, bytes, &bare)?.secs;
        // NVLS on one node pays its base even with a fixed α: not bandwidth time.
        if algorithm == Algorithm::InSwitch
            && ranks
                .iter()
                .all(|r| graph.nvswitch(r.0) == graph.nvswitch(ranks[0].0))
        {
            t0 -= NVLS_BASE;
        }
        // T₀ ran with Simple's own stretch (1 unless the algorithm's Simple differs): keep it.
        let s0 = graph.nccl_comm(ranks).map_or(1.0, |c| {
            tuning::protocol_stretch(&c, op, algorithm, Protocol::Simple)
        });
        run.protocol_stretch = if t0 > 0.0 {
            s0 * bytes / m.algbw / t0
        } else {
            1.0
        };
        run.secs += m.alpha;
    } else if run.opts.alpha.is_none() {
        run.secs += base;
    }
    match (op, algorithm) {
        (Op::Broadcast { root }, _) => pipeline::broadcast(run, ranks, root, bytes),
        (_, Algorithm::Ring) => ring::ring(run, op, ranks, bytes),
        (_, Algorithm::Hierarchical) => ring::hierarchical(run, op, ranks, bytes),
        (Op::AllToAll, _) => ring::all_to_all(run, ranks, bytes),
        (Op::SendRecv, _) => ring::send_recv(run, ranks, bytes),
        (_, Algorithm::Tree) => tree::allreduce(run, ranks, bytes),
        (_, Algorithm::InSwitch) => in_switch::allreduce(run, graph, ranks, bytes),
        (_, Algorithm::NvlsTree) => in_switch::nvls_tree(run, graph, ranks, bytes),
        _ => unreachable!("supported() admitted {op:?} with {algorithm:?}"),
    }
}

/// Seconds for a ring allreduce of `bytes` per rank over `ranks` (in ring order), each step
/// paying `alpha` seconds, on a copy of `net`; `None` when a route is missing or a flow can
/// never finish. Shorthand for [`simulate`] with a fixed α.
pub fn ring_allreduce_secs(
    graph: &Graph,
    net: &FlowNet,
    ranks: &[Rank],
    bytes: f64,
    alpha: f64,
) -> Option<f64> {
    let opts = Options {
        alpha: Some(alpha),
        ..Options::default()
    };
    simulate(
        graph,
        net,
        Op::AllReduce,
        Algorithm::Ring,
        ranks,
        bytes,
        &opts,
    )
    .ok()
    .map(|r| r.secs)
}

/// nccl-tests bus-bandwidth factor of a collective over `p` ranks: 2(p−1)/p for allreduce, 1
/// for broadcast, reduce and sendrecv, (p−1)/p otherwise (allgather, reduce-scatter, alltoall).
pub fn busbw_factor(op: &str, p: usize) -> f64 {
    if p == 0 {
        return 0.0;
    }
    let p = p as f64;
    match op {
        "allreduce" => 2.0 * (p - 1.0) / p,
        "broadcast" | "reduce" | "sendrecv" => 1.0,
        _ => (p - 1.0) / p,
    }
}

/// (algbw, busbw) in bytes per second for `bytes` moved in `secs`, as nccl-tests reports them.
pub fn bandwidths(op: &str, p: usize, bytes: f64, secs: f64) -> (f64, f64) {
    let algbw = if secs > 0.0 { bytes / secs } else { 0.0 };
    (algbw, algbw * busbw_factor(op, p))
}
