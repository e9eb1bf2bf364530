//! The run's one network: the cluster's link graph and a single max-min [`FlowNet`] that
//! every transfer of the simulation shares — training collectives' rounds, task input
//! fetches, checkpoint writes and loads — so two jobs on a hot spine slow each other by
//! exactly what max-min gives.
//!
//! Time: the engine owns the clock (integer ns). The flow network is advanced to the engine's
//! time before every change, and the simulation keeps one wake-up event at the next flow
//! completion, rounded up to the nanosecond (so a transfer never ends before its bytes have
//! moved; it may end up to 1 ns late). A transfer is a set of flows started together; it
//! completes when its last flow does, and its owner is told.
//!
//! Batching: transfers that start at one engine time are staged, not added one by one, and
//! join the network together in one [`FlowNet::add_batch`] — one max-min refill for the lot —
//! when anything next needs the network's state: the next wake-up ([`Wire::next_wake`], which
//! the simulation asks from one flush event per burst of changes, queued at the time of the
//! first behind the events already queued for that time), a completion, a cancel, a capacity
//! change, or the clock moving on. Why: a producer group finishing releases its consumers at
//! the same nanosecond, tens of thousands of fetches whose flows share the spines; added one
//! by one, each refill re-rates every flow on the shared links, O(n²) for the burst. Why it is
//! exact: nothing observes the network between two starts at the same time (no bytes move in
//! zero time, and every reader flushes first), and the max-min allocation of the final set of
//! flows is unique whatever order they arrive in, so every flow gets the rate it would have
//! got added alone; flows join in the order they were started, so their ids — which break
//! completion ties — are those of one-by-one adding. Cancels of flows already on the network
//! are removed together too ([`FlowNet::remove_batch`]), before the staged starts join; a
//! transfer cancelled while still staged never reaches the network. Likewise the flows that
//! finish by one wake-up (same-sized fetches started together finish together) leave in one
//! removal ([`FlowNet::take_finished`]), not one refill each, and their owners hear in flow-id
//! order: to the nanosecond they finished at once. (Removed one by one, the order came out of
//! the refills' rounding; two of the bundled scenarios, quickstart and mixed_inference, place
//! a task differently since.)
//!
//! Architecture invariant: this module is the only one that adds, removes or re-rates flows
//! of the run's network; workload modules ask it to start or cancel transfers and learn of
//! completions through [`Wire::complete`]. It knows nothing of tasks, jobs or tenants beyond
//! the opaque [`Owner`] it hands back.

use super::links::{LinkSeries, LinkTraffic};
use crate::engine::Time;
use crate::network::{FlowId, FlowNet, Graph, LinkId};

/// Who a transfer belongs to, handed back when it completes. Epochs make completions of
/// work that a failure has since restarted recognisable as stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// A round of job `job`'s collectives (attempt `epoch`).
    Round { job: u32, epoch: u32 },
    /// A round of a launch of job `job`'s overlapped gradient stream `stream` (attempt
    /// `epoch`).
    Bucket { job: u32, epoch: u32, stream: u32 },
    /// Task `task`'s input fetch (attempt `epoch`).
    Fetch { task: u32, epoch: u32 },
    /// Job `job`'s checkpoint write, or its load after a restart (attempt `epoch`).
    Checkpoint { job: u32, epoch: u32, load: bool },
    /// Task `task`'s output spilled to its node's disk (attempt `epoch`).
    Spill { task: u32, epoch: u32 },
    /// Task `task`'s spilled inputs read back from disk before its fetch (attempt `epoch`).
    Restore { task: u32, epoch: u32 },
    /// The tensor of actor `actor`'s current call (incarnation `epoch`).
    Tensor { actor: u32, epoch: u32 },
    /// The requests of replica `replica`'s next batch, from the ingress (incarnation `epoch`).
    Request { replica: u32, epoch: u32 },
    /// Responses of a finished batch on their way back to the ingress (`slot` of
    /// `sim::payloads`).
    Response { slot: u32 },
    /// A round of an LLM replica's iteration all-reduce (incarnation `epoch`).
    LlmRound { replica: u32, epoch: u32 },
    /// A round of a pipelined LLM batch (`flight`): a stage's all-reduce, or its send to
    /// the next stage and that stage's all-gather.
    LlmPipe {
        replica: u32,
        epoch: u32,
        flight: u32,
    },
    /// A disaggregated LLM service's KV cache moving to a decode replica (its move slot).
    LlmKv {
        service: u32,
        slot: u32,
        generation: u32,
    },
}

/// Handle of a started transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TransferId(u32);

struct Transfer {
    owner: Owner,
    /// Flows not yet finished.
    left: u32,
    /// Its flows on the network (empty while they are staged).
    flows: Vec<FlowId>,
    live: bool,
    /// Bumped each time the slot is reused, so staged flows of a cancelled transfer whose
    /// slot went to a new one are recognised as stale.
    generation: u32,
}

/// A flow started at the network's clock and not yet on the network: (transfer, its
/// generation, path, bytes).
type Staged = (u32, u32, Vec<LinkId>, f64);

#[derive(Default)]
pub(crate) struct Wire {
    pub graph: Option<Graph>,
    net: FlowNet,
    /// Engine time the flow network has been advanced to.
    clock: Time,
    /// Transfer of each flow id (index = `FlowId.0`).
    of_flow: Vec<u32>,
    transfers: Vec<Transfer>,
    free: Vec<u32>,
    /// Flows started at `clock` that join the network at the next flush, in start order.
    staged: Vec<Staged>,
    /// Flows of transfers cancelled at `clock`, leaving the network at the next flush.
    doomed: Vec<FlowId>,
    /// Ids of the last flush's batch, or of the flows the last completion finished (reused
    /// buffer).
    ids: Vec<FlowId>,
    /// Bytes started and flows started over the run (metrics).
    pub bytes: f64,
    pub flows_started: u64,
    /// Most flows active at once.
    pub peak_active: usize,
    active: usize,
    /// Bytes and peak load per link class (`sim::links`).
    traffic: LinkTraffic,
}

const NO_TRANSFER: u32 = u32::MAX;

impl Wire {
    /// The run's network over `graph`; `series`: also record each link class's traffic over
    /// time ([`Wire::link_metrics`]).
    pub fn new(graph: Option<Graph>, series: bool) -> Wire {
        let net = graph
            .as_ref()
            .map(|g| FlowNet::new(g.capacity.clone()))
            .unwrap_or_default();
        let traffic = graph
            .as_ref()
            .map(|g| LinkTraffic::new(g, series))
            .unwrap_or_default();
        Wire {
            graph,
            net,
            traffic,
            ..Wire::default()
        }
    }

    /// Flows on the network that belong to a live transfer.
    fn live(of_flow: &[u32]) -> impl Iterator<Item = FlowId> + Clone + '_ {
        of_flow
            .iter()
            .enumerate()
            .filter(|(_, t)| **t != NO_TRANSFER)
            .map(|(k, _)| FlowId(k as u32))
    }

    /// Advance the flows to engine time `now`, flushing what was staged at the old time
    /// first (it started then).
    fn sync(&mut self, now: Time) {
        if now > self.clock {
            self.flush();
            if self.traffic.crosses(now) {
                let live = Self::live(&self.of_flow);
                self.traffic.windows_to(&self.net, live, self.clock, now);
            }
            self.net.advance((now - self.clock) as f64 / 1e9);
            self.clock = now;
        }
    }

    /// Per link class: bytes moved and mean and peak utilization over `[0, end]`, and the
    /// time series when recorded (`sim::links`).
    pub fn link_metrics(
        &mut self,
        end: Time,
    ) -> (
        std::collections::BTreeMap<String, super::metrics::LinkClassMetrics>,
        Option<LinkSeries>,
    ) {
        self.flush();
        let traffic = std::mem::take(&mut self.traffic);
        // Flows started after `clock` and before `end` cannot exist: every start syncs first.
        traffic.finish(
            &self.net,
            Self::live(&self.of_flow),
            self.clock,
            end.max(self.clock),
        )
    }

    /// Put the staged changes on the network: cancelled flows leave in one removal, then the
    /// staged flows join in one batch, in start order (module docs: why this is exact).
    fn flush(&mut self) {
        if !self.doomed.is_empty() {
            self.net.remove_batch(&self.doomed);
            self.doomed.clear();
        }
        if self.staged.is_empty() {
            return;
        }
        let transfers = &self.transfers;
        let current = |t: u32, generation: u32| {
            let tr = &transfers[t as usize];
            tr.live && tr.generation == generation
        };
        self.staged.retain(|(t, g, _, _)| current(*t, *g));
        if self.staged.is_empty() {
            return;
        }
        let mut staged = std::mem::take(&mut self.staged);
        for (_, _, p, b) in &staged {
            self.traffic.joining(p, *b);
        }
        let mut ids = std::mem::take(&mut self.ids);
        ids.clear();
        ids.extend(
            self.net.add_batch(
                staged
                    .iter_mut()
                    .map(|(_, _, p, b)| (std::mem::take(p), *b)),
            ),
        );
        self.traffic.joined(&ids);
        for ((t, _, _, _), f) in staged.iter().zip(&ids) {
            let k = f.0 as usize;
            if self.of_flow.len() <= k {
                self.of_flow.resize(k + 1, NO_TRANSFER);
            }
            self.of_flow[k] = *t;
            self.transfers[*t as usize].flows.push(*f);
        }
        self.active += ids.len();
        self.peak_active = self.peak_active.max(self.active);
        staged.clear();
        self.staged = staged;
        self.ids = ids;
    }

    /// Start `flows` (path, bytes) together for `owner`; they are staged and join the
    /// network with every other transfer started at `now` (module docs). `None` when there
    /// is nothing to move (no flows, or no bytes): the caller treats the transfer as done now.
    pub fn start(
        &mut self,
        now: Time,
        flows: impl IntoIterator<Item = (Vec<LinkId>, f64)>,
        owner: Owner,
    ) -> Option<TransferId> {
        self.sync(now);
        let before = self.staged.len();
        let mut bytes = 0.0;
        for (path, b) in flows {
            if b > 0.0 {
                bytes += b;
                self.staged.push((NO_TRANSFER, 0, path, b));
            }
        }
        let n = self.staged.len() - before;
        if n == 0 {
            return None;
        }
        self.bytes += bytes;
        self.flows_started += n as u64;
        let id = match self.free.pop() {
            Some(i) => {
                let tr = &mut self.transfers[i as usize];
                tr.generation = tr.generation.wrapping_add(1);
                (tr.owner, tr.left, tr.live) = (owner, n as u32, true);
                tr.flows.clear();
                i
            }
            None => {
                self.transfers.push(Transfer {
                    owner,
                    left: n as u32,
                    flows: Vec::new(),
                    live: true,
                    generation: 0,
                });
                (self.transfers.len() - 1) as u32
            }
        };
        let generation = self.transfers[id as usize].generation;
        for s in &mut self.staged[before..] {
            (s.0, s.1) = (id, generation);
        }
        Some(TransferId(id))
    }

    /// Stop a transfer (its owner was killed or restarted); its flows leave the network with
    /// the other changes at this time (or, still staged, never join it).
    pub fn cancel(&mut self, now: Time, t: TransferId) {
        self.sync(now);
        let Some(tr) = self.transfers.get_mut(t.0 as usize) else {
            return;
        };
        if !tr.live {
            return;
        }
        tr.live = false;
        for f in tr.flows.drain(..) {
            if self.of_flow.get(f.0 as usize) == Some(&t.0) {
                self.of_flow[f.0 as usize] = NO_TRANSFER;
                self.traffic.leave(f, self.net.remaining(f));
                self.doomed.push(f);
                self.active -= 1;
            }
        }
        self.free.push(t.0);
    }

    /// Change a link's capacity now (failures, degradation, repair).
    pub fn set_capacity(&mut self, now: Time, l: LinkId, capacity: f64) {
        self.sync(now);
        self.flush();
        self.net.set_capacity(l, capacity);
    }

    pub fn capacity(&self, l: LinkId) -> f64 {
        self.net.capacity(l)
    }

    /// Finish every flow done by `now`; owners of transfers whose last flow finished are
    /// pushed to `out` in flow-id order (they all finished at this wake-up's nanosecond),
    /// for determinism.
    pub fn complete(&mut self, now: Time, out: &mut Vec<Owner>) {
        self.sync(now);
        self.flush();
        let mut done = std::mem::take(&mut self.ids);
        done.clear();
        self.net.take_finished(&mut done);
        if !done.is_empty() {
            // Flows that finish together leave together: one refill (module docs). They all
            // finished within the nanosecond before `now`, so at the engine's resolution at
            // once: their owners hear in flow-id order, not in the order of their finish
            // times' last bits (which rounding in the solver may reorder).
            done.sort_unstable();
            self.net.remove_batch(&done);
            for f in &done {
                self.traffic.leave(*f, 0.0);
            }
        }
        for f in &done {
            self.active -= 1;
            let t = self
                .of_flow
                .get(f.0 as usize)
                .copied()
                .unwrap_or(NO_TRANSFER);
            if t == NO_TRANSFER {
                continue;
            }
            self.of_flow[f.0 as usize] = NO_TRANSFER;
            let tr = &mut self.transfers[t as usize];
            tr.left -= 1;
            if tr.left == 0 && tr.live {
                tr.live = false;
                tr.flows.clear();
                out.push(tr.owner);
                self.free.push(t);
            }
        }
        self.ids = done;
    }

    /// Owners of live transfers with a flow that cannot move (a link on its path has no
    /// capacity: a NIC went down), in transfer order.
    pub fn stalled(&mut self) -> Vec<(TransferId, Owner)> {
        self.flush();
        self.transfers
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                t.live
                    && t.flows.iter().any(|f| {
                        self.of_flow
                            .get(f.0 as usize)
                            .is_some_and(|x| *x != NO_TRANSFER)
                            && self.net.rate(*f) == 0.0
                            && self.net.remaining(*f) > 0.0
                    })
            })
            .map(|(i, t)| (TransferId(i as u32), t.owner))
            .collect()
    }

    /// Engine time of the next flow completion (rounded up to the ns), if any flow moves;
    /// puts what was staged on the network first.
    pub fn next_wake(&mut self) -> Option<Time> {
        self.flush();
        let (_, dt) = self.net.next_completion()?;
        if !dt.is_finite() {
            return None;
        }
        let ns = (dt * 1e9).ceil();
        Some(
            self.clock
                .saturating_add(if ns >= 1.0 { ns as Time } else { 0 }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wire over bare links of these capacities (bytes per second).
    fn wire(capacities: Vec<f64>) -> Wire {
        Wire {
            net: FlowNet::new(capacities),
            ..Wire::default()
        }
    }

    /// Transfers of various shapes over four links: (links of each flow, bytes).
    fn transfers() -> Vec<Vec<(Vec<LinkId>, f64)>> {
        let mut out = Vec::new();
        for k in 0..40u32 {
            let b = 1e6 * f64::from(1 + k % 7);
            let mut flows = vec![(vec![(k % 4) as usize, 3], b)];
            if k % 3 == 0 {
                flows.push((vec![1, 2], 2.0 * b));
            }
            if k % 5 == 0 {
                flows.push((vec![0], 0.0)); // nothing to move: not a flow
            }
            out.push(flows);
        }
        out
    }

    /// Every completion until the network drains: (engine time, owner) in order.
    fn drain(w: &mut Wire) -> Vec<(Time, Owner)> {
        let mut out = Vec::new();
        let mut done = Vec::new();
        while let Some(t) = w.next_wake() {
            done.clear();
            w.complete(t, &mut done);
            out.extend(done.iter().map(|o| (t, *o)));
        }
        out
    }

    #[test]
    fn transfers_started_at_one_time_get_the_rates_of_one_by_one_starts() {
        let caps = vec![10e9, 4e9, 25e9, 12e9];
        let owner = |k: usize| Owner::Fetch {
            task: k as u32,
            epoch: 0,
        };
        // One by one: each start reaches the network (next_wake flushes) before the next.
        let mut single = wire(caps.clone());
        let mut batched = wire(caps);
        let mut ids = Vec::new();
        for (k, flows) in transfers().into_iter().enumerate() {
            let a = single.start(5, flows.clone(), owner(k));
            single.next_wake();
            let b = batched.start(5, flows, owner(k));
            assert_eq!(a, b);
            ids.push(a);
        }
        // All forty join in one batch here.
        batched.next_wake();
        assert_eq!(single.active, batched.active);
        assert_eq!(single.peak_active, batched.peak_active);
        assert_eq!(
            (single.flows_started, single.bytes),
            (batched.flows_started, batched.bytes)
        );
        for (a, b) in single.transfers.iter().zip(&batched.transfers) {
            assert_eq!(a.flows, b.flows, "flow ids are those of one-by-one starts");
            for f in &a.flows {
                let (x, y) = (single.net.rate(*f), batched.net.rate(*f));
                assert!((x - y).abs() <= 1e-12 * x.abs(), "{f:?}: {x} vs {y}");
            }
        }
        let (s, b) = (drain(&mut single), drain(&mut batched));
        assert_eq!(s.len(), 40);
        assert_eq!(
            s, b,
            "same completions at the same nanoseconds in the same order"
        );
    }

    #[test]
    fn a_transfer_cancelled_while_staged_never_reaches_the_network() {
        let mut w = wire(vec![1e9]);
        let a = w.start(0, [(vec![0], 1e9)], Owner::Fetch { task: 0, epoch: 0 });
        let b = w.start(0, [(vec![0], 1e9)], Owner::Fetch { task: 1, epoch: 0 });
        w.cancel(0, a.expect("bytes to move"));
        // Its slot goes to a new transfer at the same time: the cancelled flows stay out.
        let c = w.start(0, [(vec![0], 3e9)], Owner::Fetch { task: 2, epoch: 0 });
        assert_eq!(c, a);
        assert!(b.is_some());
        assert_eq!(
            w.start(0, [(vec![0], 0.0)], Owner::Fetch { task: 3, epoch: 0 }),
            None
        );
        // Two flows at 0.5 GB/s: task 1 (1 GB) at 2 s; task 2 then has 2 GB left, alone at
        // 1 GB/s: 4 s.
        let got = drain(&mut w);
        assert_eq!(
            got,
            vec![
                (2_000_000_000, Owner::Fetch { task: 1, epoch: 0 }),
                (4_000_000_000, Owner::Fetch { task: 2, epoch: 0 }),
            ]
        );
        assert_eq!((w.active, w.peak_active), (0, 2));
    }

    /// A wire over a NIC link (10 GB/s) and a leaf-spine link (5 GB/s) that records the
    /// link classes' traffic over time.
    fn fabric() -> Wire {
        use crate::network::{LinkKind, Vertex};
        let mut g = Graph::default();
        g.capacity = vec![10e9, 5e9];
        g.latency = vec![0.0, 0.0];
        g.kind = vec![LinkKind::Network, LinkKind::Network];
        g.ends = vec![
            (
                Vertex::Nic { node: 0, nic: 0 },
                Vertex::Leaf { rack: 0, rail: 0 },
            ),
            (
                Vertex::Leaf { rack: 0, rail: 0 },
                Vertex::Spine { zone: 0, spine: 0 },
            ),
        ];
        let traffic = LinkTraffic::new(&g, true);
        Wire {
            net: FlowNet::new(g.capacity.clone()),
            traffic,
            ..Wire::default()
        }
    }

    #[test]
    fn one_flow_moves_its_bytes_on_each_class_of_its_path() {
        // 10 GB over NIC (10 GB/s) then leaf-spine (5 GB/s): 5 GB/s for 2 s; the run is 4 s.
        // Each class moved 10 GB; the leaf-spine link was the bottleneck (peak 1.0) for half
        // the run (mean 0.5); the NIC ran at half its capacity (peak 0.5) for half the run.
        let mut w = fabric();
        w.start(0, [(vec![0, 1], 10e9)], Owner::Fetch { task: 0, epoch: 0 });
        assert_eq!(
            drain(&mut w),
            vec![(2_000_000_000, Owner::Fetch { task: 0, epoch: 0 })]
        );
        let (m, series) = w.link_metrics(4_000_000_000);
        let (nic, spine) = (&m["nic"], &m["leaf_spine"]);
        assert_eq!((nic.links, spine.links), (1, 1));
        assert!((nic.link_bytes - 10e9).abs() < 1.0 && (spine.link_bytes - 10e9).abs() < 1.0);
        assert_eq!(spine.peak_utilization, 1.0);
        assert!((nic.peak_utilization - 0.5).abs() < 1e-12);
        assert!((spine.mean_utilization - 0.5).abs() < 1e-9);
        assert!((nic.mean_utilization - 0.25).abs() < 1e-9);
        // Over time: the spine class is full in every window of the first 2 s, idle after.
        let series = series.expect("recorded");
        let u = series.utilization();
        let (_, pts) = u.iter().find(|(c, _)| c == "leaf_spine").unwrap();
        for &(t, x) in pts {
            let want = if t + series.window_s <= 2.0 {
                1.0
            } else if t >= 2.0 {
                0.0
            } else {
                x
            };
            assert!((x - want).abs() < 1e-6, "window at {t} s: {x}");
        }
        let total: f64 = series.classes[1].2.iter().sum();
        assert!((total - 10e9).abs() < 1.0, "{total}");
    }

    #[test]
    fn a_cancelled_flow_counts_only_what_it_moved() {
        // 10 GB at 5 GB/s, cancelled at 1 s: 5 GB moved on each link.
        let mut w = fabric();
        let x = w.start(0, [(vec![0, 1], 10e9)], Owner::Fetch { task: 0, epoch: 0 });
        w.next_wake();
        w.cancel(1_000_000_000, x.unwrap());
        assert_eq!(w.next_wake(), None);
        let (m, _) = w.link_metrics(2_000_000_000);
        assert!(
            (m["leaf_spine"].link_bytes - 5e9).abs() < 1.0,
            "{:?}",
            m["leaf_spine"]
        );
        assert!((m["nic"].link_bytes - 5e9).abs() < 1.0);
        assert!((m["leaf_spine"].mean_utilization - 0.5).abs() < 1e-9);
    }
}
