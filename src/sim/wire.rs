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
//! Architecture invariant: this module is the only one that adds, removes or re-rates flows
//! of the run's network; workload modules ask it to start or cancel transfers and learn of
//! completions through [`Wire::complete`]. It knows nothing of tasks, jobs or tenants beyond
//! the opaque [`Owner`] it hands back.

use crate::engine::Time;
use crate::network::{FlowId, FlowNet, Graph, LinkId};

/// Who a transfer belongs to, handed back when it completes. Epochs make completions of
/// work that a failure has since restarted recognisable as stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// A round of job `job`'s collectives (attempt `epoch`).
    Round { job: u32, epoch: u32 },
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
}

/// Handle of a started transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TransferId(u32);

struct Transfer {
    owner: Owner,
    /// Flows not yet finished.
    left: u32,
    flows: Vec<FlowId>,
    live: bool,
}

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
    /// Bytes started and flows started over the run (metrics).
    pub bytes: f64,
    pub flows_started: u64,
    /// Most flows active at once.
    pub peak_active: usize,
    active: usize,
}

const NO_TRANSFER: u32 = u32::MAX;

impl Wire {
    pub fn new(graph: Option<Graph>) -> Wire {
        let net = graph
            .as_ref()
            .map(|g| FlowNet::new(g.capacity.clone()))
            .unwrap_or_default();
        Wire {
            graph,
            net,
            ..Wire::default()
        }
    }

    /// Advance the flows to engine time `now`.
    fn sync(&mut self, now: Time) {
        if now > self.clock {
            self.net.advance((now - self.clock) as f64 / 1e9);
            self.clock = now;
        }
    }

    /// Start `flows` (path, bytes) together for `owner`. `None` when there is nothing to move
    /// (no flows, or no bytes): the caller treats the transfer as done now.
    pub fn start(
        &mut self,
        now: Time,
        flows: impl IntoIterator<Item = (Vec<LinkId>, f64)>,
        owner: Owner,
    ) -> Option<TransferId> {
        self.sync(now);
        let batch: Vec<(Vec<LinkId>, f64)> = flows.into_iter().filter(|(_, b)| *b > 0.0).collect();
        if batch.is_empty() {
            return None;
        }
        self.bytes += batch.iter().map(|(_, b)| b).sum::<f64>();
        let n = batch.len();
        let ids = self.net.add_batch(batch);
        self.flows_started += n as u64;
        self.active += n;
        self.peak_active = self.peak_active.max(self.active);
        let t = Transfer {
            owner,
            left: n as u32,
            flows: ids,
            live: true,
        };
        let id = match self.free.pop() {
            Some(i) => {
                self.transfers[i as usize] = t;
                i
            }
            None => {
                self.transfers.push(t);
                (self.transfers.len() - 1) as u32
            }
        };
        for f in &self.transfers[id as usize].flows {
            let k = f.0 as usize;
            if self.of_flow.len() <= k {
                self.of_flow.resize(k + 1, NO_TRANSFER);
            }
            self.of_flow[k] = id;
        }
        Some(TransferId(id))
    }

    /// Stop a transfer (its owner was killed or restarted); its flows leave the network.
    pub fn cancel(&mut self, now: Time, t: TransferId) {
        self.sync(now);
        let Some(tr) = self.transfers.get_mut(t.0 as usize) else {
            return;
        };
        if !tr.live {
            return;
        }
        tr.live = false;
        let flows = std::mem::take(&mut tr.flows);
        for f in &flows {
            if self.of_flow.get(f.0 as usize) == Some(&t.0) {
                self.of_flow[f.0 as usize] = NO_TRANSFER;
                self.net.remove(*f);
                self.active -= 1;
            }
        }
        self.free.push(t.0);
    }

    /// Change a link's capacity now (failures, degradation, repair).
    pub fn set_capacity(&mut self, now: Time, l: LinkId, capacity: f64) {
        self.sync(now);
        self.net.set_capacity(l, capacity);
    }

    pub fn capacity(&self, l: LinkId) -> f64 {
        self.net.capacity(l)
    }

    /// Finish every flow done by `now`; owners of transfers whose last flow finished are
    /// pushed to `out` in completion order (ties: flow id), for determinism.
    pub fn complete(&mut self, now: Time, out: &mut Vec<Owner>) {
        self.sync(now);
        while let Some((f, dt)) = self.net.next_completion() {
            if dt > 0.0 {
                break;
            }
            self.net.remove(f);
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
    }

    /// Owners of live transfers with a flow that cannot move (a link on its path has no
    /// capacity: a NIC went down), in transfer order.
    pub fn stalled(&self) -> Vec<(TransferId, Owner)> {
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

    /// Engine time of the next flow completion (rounded up to the ns), if any flow moves.
    pub fn next_wake(&mut self) -> Option<Time> {
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
