//! Running a collective's steps on copies of the background flow network: routes (ECMP keyed
//! by the pair), the per-step α from the link kinds crossed, and reuse of repeated patterns.

use std::collections::HashMap;

use super::super::drive::Step;
use super::super::{FlowNet, Graph, LinkId, Vertex};
use super::tuning::{self, Hw};
use super::{Algorithm, Options, Protocol, Rank};

/// One end of a flow: a rank, or the switch that reduces in the network (in-switch only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum End {
    Rank(Rank),
    /// The reducing switch: a node's NVSwitch or a leaf, numbered by the algorithm.
    Switch(usize),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Flow {
    pub src: End,
    pub dst: End,
    pub bytes: f64,
}

impl Flow {
    /// To or from the reducing switch (an in-switch reduction's flow).
    fn in_switch(&self) -> bool {
        matches!(self.src, End::Switch(_)) || matches!(self.dst, End::Switch(_))
    }

    pub fn new(src: Rank, dst: Rank, bytes: f64) -> Flow {
        Flow {
            src: End::Rank(src),
            dst: End::Rank(dst),
            bytes,
        }
    }
}

/// One round of a collective on a shared network: after `alpha` seconds its chains start
/// together, and the round ends when the last of them has moved its bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub alpha: f64,
    pub chains: Vec<Chain>,
}

/// Bytes moved as one flow over `path` (one hop, or a whole ring's hops end to end).
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    pub path: Vec<LinkId>,
    pub bytes: f64,
}

/// Patterns remembered for reuse: the repeats of a collective are adjacent or one phase
/// apart (hierarchical reduce-scatter … allgather), so a few suffice.
const MEMO: usize = 4;
/// Routes kept at most (an all-to-all over p ranks has p² pairs, each used once).
const ROUTE_CACHE: usize = 1 << 18;

/// Steps of one collective and what they cost so far.
pub(super) struct Runner<'a> {
    pub graph: &'a Graph,
    net: &'a FlowNet,
    pub opts: &'a Options,
    routes: HashMap<(End, End), Vec<LinkId>>,
    /// Paths between ranks and the reducing switch, set by the algorithm (never evicted).
    fixed: HashMap<(End, End), Vec<LinkId>>,
    memo: Vec<(Vec<Flow>, f64)>,
    /// When set, steps are recorded as rounds for a shared network instead of simulated
    /// ([`super::schedule`]); `secs` then only accumulates α.
    record: Option<Vec<Round>>,
    /// Seconds of `secs` already assigned to recorded rounds.
    assigned: f64,
    pub secs: f64,
    pub steps: u64,
    pub flows: u64,
    pub simulated: u64,
    pub events: u64,
    /// The algorithm being run (which column of NCCL's latencies its hops pay).
    pub family: Algorithm,
    /// The protocol it runs with (Simple where NCCL's model does not apply).
    pub protocol: Protocol,
    /// busBw(Simple) / busBw(protocol) by NCCL's model: the flows' bytes are stretched by it.
    pub protocol_stretch: f64,
}

impl Runner<'_> {
    /// The chunk a pipelined algorithm moves per step: the caller's ([`super::Options::chunk`],
    /// Simple's step by default), or with LL and LL128 under NCCL's model their own, smaller or
    /// larger, steps ([`super::tuning::step_bytes`]).
    pub fn pipeline_chunk(&self) -> f64 {
        match self.protocol {
            Protocol::Simple => self.opts.chunk,
            p => super::tuning::step_bytes(p),
        }
    }
}

impl<'a> Runner<'a> {
    pub fn new(graph: &'a Graph, net: &'a FlowNet, opts: &'a Options) -> Self {
        Runner {
            graph,
            net,
            opts,
            routes: HashMap::new(),
            fixed: HashMap::new(),
            memo: Vec::new(),
            record: None,
            assigned: 0.0,
            secs: 0.0,
            steps: 0,
            flows: 0,
            simulated: 0,
            events: 0,
            family: Algorithm::Ring,
            protocol: Protocol::Simple,
            protocol_stretch: 1.0,
        }
    }

    /// Fix the path between a rank and the reducing switch (in-switch algorithms).
    pub fn set_path(&mut self, src: End, dst: End, path: Vec<LinkId>) {
        self.fixed.insert((src, dst), path);
    }

    /// The path of a flow: the graph's route, the spine picked by a hash of the pair.
    pub fn path(&mut self, src: End, dst: End) -> Result<&[LinkId], String> {
        if let Some(p) = self.fixed.get(&(src, dst)) {
            return Ok(p);
        }
        if !self.routes.contains_key(&(src, dst)) {
            let (End::Rank(a), End::Rank(b)) = (src, dst) else {
                return Err(format!("no path set between {src:?} and {dst:?}"));
            };
            let p = self
                .graph
                .route(a, b, pair_key(a, b))
                .ok_or_else(|| format!("no route from rank {a:?} to rank {b:?}"))?;
            if self.routes.len() >= ROUTE_CACHE {
                self.routes.clear();
            }
            self.routes.insert((src, dst), p);
        }
        Ok(&self.routes[&(src, dst)])
    }

    /// The link kind NCCL charges a path's hops at: network if it crosses a leaf switch,
    /// NVLink if it goes through the NVSwitch or a direct device-device link, else PCIe
    /// (`None` if empty).
    fn path_hw(graph: &Graph, path: &[LinkId]) -> Option<Hw> {
        if path.is_empty() {
            return None;
        }
        let mut hw = Hw::Pci;
        for &l in path {
            match graph.ends[l] {
                (Vertex::Leaf { .. } | Vertex::Fabric { .. }, _)
                | (_, Vertex::Leaf { .. } | Vertex::Fabric { .. }) => return Some(Hw::Net),
                (Vertex::NvSwitch { .. }, _)
                | (_, Vertex::NvSwitch { .. })
                | (Vertex::Device { .. }, Vertex::Device { .. }) => hw = Hw::NvLink,
                _ => {}
            }
        }
        Some(hw)
    }

    /// How much longer a flow's bytes take over `path` than at line rate: the scale-up
    /// share ([`Graph::collective_stretch`]), the protocol's ([`tuning::protocol_stretch`]),
    /// and, where the path crosses the network, the transport's share of the NIC's line rate
    /// ([`Options::net_share`]: NCCL's socket transport reaches part of it).
    fn stretch(&self, path: &[LinkId], in_switch: bool) -> f64 {
        let net = if self.opts.net_share < 1.0 && Self::path_hw(self.graph, path) == Some(Hw::Net) {
            1.0 / self.opts.net_share
        } else {
            1.0
        };
        self.graph.collective_stretch(path, in_switch) * self.protocol_stretch * net
    }

    /// α of a step (or pipeline stage): NCCL's per-hop latency (`tuning::hop_latency`, the
    /// algorithm's column, the protocol's entry) of the slowest link kind its flows cross,
    /// unless the options fix it.
    pub fn alpha(&mut self, flows: &[Flow]) -> Result<f64, String> {
        if let Some(a) = self.opts.alpha {
            return Ok(a);
        }
        if self.opts.measured.is_some() {
            // The measured α was paid once for the whole call.
            return Ok(0.0);
        }
        let (family, protocol) = (self.family, self.protocol);
        let mut alpha: f64 = 0.0;
        for f in flows {
            let Some(hw) = Self::path_hw(self.graph, self.path(f.src, f.dst)?) else {
                continue;
            };
            alpha = alpha.max(tuning::hop_latency(hw, family, protocol));
            if hw == Hw::Net {
                break;
            }
        }
        Ok(alpha)
    }

    /// α of `repeat` steps of flat rings across nodes whose chunks cross the network on
    /// `crossings` of them ([`Runner::step_rings`]).
    fn path_alpha(
        &mut self,
        rings: &[Vec<Flow>],
        repeat: u64,
        crossings: u64,
    ) -> Result<f64, String> {
        if let Some(a) = self.opts.alpha {
            return Ok(repeat as f64 * a);
        }
        if self.opts.measured.is_some() {
            return Ok(0.0);
        }
        let (family, protocol) = (self.family, self.protocol);
        let (mut intra, mut net): (f64, Option<f64>) = (0.0, None);
        let mut any_intra = false;
        for f in rings.iter().flatten() {
            let Some(hw) = Self::path_hw(self.graph, self.path(f.src, f.dst)?) else {
                continue;
            };
            let a = tuning::hop_latency(hw, family, protocol);
            if hw == Hw::Net {
                net = Some(net.map_or(a, |n: f64| n.max(a)));
            } else {
                any_intra = true;
                intra = intra.max(a);
            }
        }
        let Some(mut net) = net else {
            return Ok(repeat as f64 * intra);
        };
        if !any_intra {
            // One rank per node: every hop of the ring crosses the network. NCCL's model then
            // charges the tree's network latency per hop ("With ppn=1 latencies are fully
            // exposed, use the Tree network latency", `tuning.cc`; LL 5.0 µs, not the ring's
            // 2.7), as `tuning::estimate` does.
            net = net.max(tuning::hop_latency(Hw::Net, Algorithm::Tree, protocol));
        }
        // NET_OVERHEAD is in µs.
        let overhead = tuning::NET_OVERHEAD
            * 1e-6
            * if protocol == Protocol::Simple {
                3.0
            } else {
                1.0
            };
        let step = intra.max(overhead);
        Ok((repeat - crossings) as f64 * step + crossings as f64 * net)
    }

    /// A runner that records rounds instead of simulating them ([`super::schedule`]).
    pub fn recording(graph: &'a Graph, net: &'a FlowNet, opts: &'a Options) -> Self {
        let mut r = Runner::new(graph, net, opts);
        r.record = Some(Vec::new());
        r
    }

    /// The recorded rounds, the α left over after the last one as a final empty round.
    pub fn into_rounds(mut self) -> Vec<Round> {
        let mut rounds = self.record.take().unwrap_or_default();
        let tail = self.secs - self.assigned;
        if tail > 0.0 {
            rounds.push(Round {
                alpha: tail,
                chains: Vec::new(),
            });
        }
        rounds
    }

    /// Record one round: the α accumulated since the last round, then `chains`.
    fn push_round(&mut self, chains: Vec<Chain>) {
        let alpha = self.secs - self.assigned;
        self.assigned = self.secs;
        if let Some(r) = &mut self.record {
            r.push(Round { alpha, chains });
        }
    }

    /// `repeat` identical steps of `flows`, each paying its α (a data-dependent sequence: the
    /// next step forwards what this one received).
    pub fn step(&mut self, flows: &[Flow], repeat: u64) -> Result<(), String> {
        if repeat == 0 {
            return Ok(());
        }
        let alpha = self.alpha(flows)?;
        self.secs += repeat as f64 * alpha;
        self.transfer(flows, repeat)
    }

    /// `repeat` identical steps of rings (each ring's flows in ring order, every hop moving the
    /// same bytes), each step paying its α. Simulated like [`Runner::step`] over all their
    /// flows; recorded as one chain per ring: a ring forwards what it received, so in steady
    /// state every hop moves at the rate of its slowest (NCCL's ring is a pipeline over
    /// its connections), which one flow over all the hops' links is under max-min.
    ///
    /// `crossings`: `None`, every step pays the α of the slowest link kind its flows cross
    /// (rings whose every hop is alike: one node's, or one rank per node); `Some(n)`, a flat
    /// ring across nodes, whose chunk crosses the network on only `n` of its steps: NCCL's
    /// path latency (`tuning.cc`, "Inter-node rings still have to launch nsteps * net
    /// overhead"): every step pays the intra-node hop's α or the net post overhead (1 µs,
    /// tripled for Simple), whichever is larger, and `n` of them the network hop's α instead.
    pub fn step_rings(
        &mut self,
        rings: &[Vec<Flow>],
        repeat: u64,
        crossings: Option<u64>,
    ) -> Result<(), String> {
        if repeat == 0 {
            return Ok(());
        }
        let alpha = match crossings {
            None => {
                let mut alpha: f64 = 0.0;
                for r in rings {
                    alpha = alpha.max(self.alpha(r)?);
                }
                repeat as f64 * alpha
            }
            Some(n) => self.path_alpha(rings, repeat, n.min(repeat))?,
        };
        self.secs += alpha;
        if self.record.is_none() {
            let all: Vec<Flow> = rings.iter().flatten().copied().collect();
            return self.transfer(&all, repeat);
        }
        self.steps += repeat;
        let mut chains = Vec::with_capacity(rings.len());
        for r in rings {
            let Some(first) = r.first() else { continue };
            let mut path = Vec::new();
            for f in r {
                path.extend_from_slice(self.path(f.src, f.dst)?);
            }
            self.flows += repeat * r.len() as u64;
            let stretch = self.stretch(&path, false);
            chains.push(Chain {
                path,
                bytes: first.bytes * repeat as f64 * stretch,
            });
        }
        self.push_round(chains);
        Ok(())
    }

    /// `repeat` identical steps of `flows` without α (pipeline steps: the caller pays its
    /// stages' α once).
    pub fn transfer(&mut self, flows: &[Flow], repeat: u64) -> Result<(), String> {
        if repeat == 0 {
            return Ok(());
        }
        self.steps += repeat;
        self.flows += repeat * flows.len() as u64;
        if self.record.is_some() {
            // Identical steps merge into one round of flows carrying all their bytes: under a
            // steady background the same as `repeat` lock-step rounds whenever a round's
            // slowest flow stays slowest (the flows of one pattern do not trade bandwidth).
            let mut chains = Vec::with_capacity(flows.len());
            for f in flows {
                let path = self.path(f.src, f.dst)?.to_vec();
                let stretch = self.stretch(&path, f.in_switch());
                chains.push(Chain {
                    path,
                    bytes: f.bytes * repeat as f64 * stretch,
                });
            }
            self.push_round(chains);
            return Ok(());
        }
        if !self.opts.reuse {
            for _ in 0..repeat {
                self.secs += self.simulate(flows)?;
            }
            return Ok(());
        }
        let secs = match self.memo.iter().find(|(f, _)| f.as_slice() == flows) {
            Some((_, s)) => *s,
            None => {
                let s = self.simulate(flows)?;
                if self.memo.len() == MEMO {
                    self.memo.remove(0);
                }
                self.memo.push((flows.to_vec(), s));
                s
            }
        };
        self.secs += repeat as f64 * secs;
        Ok(())
    }

    /// Seconds until the last of `flows` finishes, all started together on a copy of the
    /// background (whose flows compete, and leave the copy when they finish).
    fn simulate(&mut self, flows: &[Flow]) -> Result<f64, String> {
        let mut batch = Vec::with_capacity(flows.len());
        let mut stretched = Vec::with_capacity(flows.len());
        for f in flows {
            let path = self.path(f.src, f.dst)?.to_vec();
            let b = f.bytes * self.stretch(&path, f.in_switch());
            stretched.push(b);
            batch.push((path, b));
        }
        let mut net = self.net.clone();
        let ids = net.add_batch(batch);
        self.simulated += 1;
        self.events += 1 + ids.len() as u64;
        // Flows finish in no particular order and often all at once: `done` counts the leading
        // flows known finished (bytes only decrease), so checking costs O(flows) per step.
        let finished =
            |net: &FlowNet, i: usize| net.remaining(ids[i]) <= 1e-6 + 1e-12 * stretched[i];
        let mut mine = vec![false; ids.iter().map(|f| f.0 as usize + 1).max().unwrap_or(0)];
        for f in &ids {
            mine[f.0 as usize] = true;
        }
        let (mut done, mut elapsed) = (0, 0.0);
        loop {
            while done < ids.len() && finished(&net, done) {
                done += 1;
            }
            if done == ids.len() {
                return Ok(elapsed);
            }
            let Step::Finished(f) = net.step(&mut elapsed, None) else {
                let (src, dst) = (flows[done].src, flows[done].dst);
                return Err(format!(
                    "the flow from {src:?} to {dst:?} cannot progress: a link on its path has no capacity"
                ));
            };
            if !mine.get(f.0 as usize).copied().unwrap_or(false) {
                self.events += 1;
            }
            net.remove(f);
        }
    }
}

/// ECMP key of a pair: a connection keeps its path for the whole collective.
fn pair_key(a: Rank, b: Rank) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for v in [a.0, a.1, b.0, b.1] {
        h = (h ^ v as u64).wrapping_mul(0x0100_0000_01b3);
    }
    // splitmix64 finaliser: spread FNV's low bits, which pick the spine.
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}
