//! Service payloads on the run's network (`request BYTES`, `response BYTES` in a service).
//!
//! Where requests enter: the cluster's head node (its `head`, else its first node), where
//! Ray Serve's HTTP proxy runs with `proxy_location` HeadOnly. (Serve's default, EveryNode,
//! runs a proxy on every node with a replica behind an external load balancer, which the
//! model does not choose for the client; a scenario's payloads all enter at the head.)
//! A request waits in the service's FIFO queue at the ingress; when a replica takes a batch,
//! each request of it moves from the ingress's host memory to the replica node's host memory
//! (one flow per request) with the workload's transport (its `transport`, else Ray's object
//! store; a run's transport override wins; a tenant's rules apply as for fetches; a transport
//! that moves only device memory leaves the bodies, host memory, to the object store), as
//! [`crate::transport::shared`] splits the plan: its fixed part as a delay, then the flows.
//! The batch computes when its last request has arrived (the replica is busy meanwhile).
//! After it, each response moves back to the ingress the same way, and the request's latency
//! ends when its response has arrived there; the replica takes its next batch at once. A
//! replica on the ingress node moves nothing. Copies between host and device memory inside
//! the replica are part of its service time. Payloads in flight to or from a node that dies
//! are lost with the requests they carry (`failures.requests_lost`), and so are payloads no
//! route can carry (`failures.transfers_unavailable`).

use super::network::{Flow, MovementKind};
use super::timeline::{End, MoveKey, MoveKind};
use super::wire::{Owner, TransferId};
use super::{Ev, Sim, models::secs};
use crate::engine::Time;
use crate::network::LinkId;
use crate::sim::ServiceEv;
use crate::sim::World;
use crate::sim::services::Services;

/// Responses on their way back to the ingress, by slot.
#[derive(Default)]
pub(super) struct Responses {
    pub(super) slots: Vec<Option<Slot>>,
    free: Vec<u32>,
}

pub(super) struct Slot {
    service: u32,
    /// Arrival times of the requests they answer.
    arrivals: Vec<Time>,
    from: usize,
    pub(super) flows: Option<Vec<(Vec<LinkId>, f64)>>,
    pub(super) xfer: Option<TransferId>,
}

impl Sim<'_> {
    /// Routes changed (a NIC went down): tensors and payloads with a flow that cannot move,
    /// or still paying their fixed part over the old routes, start again over the new routes
    /// (paying their fixed part again: conservative, as for fetches).
    pub(super) fn reroute_moves(&mut self, stalled: &[(TransferId, Owner)]) {
        let mut actors: Vec<u32> = (0..self.actors.list.len() as u32)
            .filter(|&a| self.actors.list[a as usize].send_flows.is_some())
            .collect();
        let mut replicas: Vec<u32> = (0..self.services.replicas.len() as u32)
            .filter(|&r| self.services.replicas[r as usize].req_flows.is_some())
            .collect();
        let mut slots: Vec<u32> = (0..self.services.responses.slots.len() as u32)
            .filter(|&i| {
                self.services.responses.slots[i as usize]
                    .as_ref()
                    .is_some_and(|s| s.flows.is_some())
            })
            .collect();
        let mut kv = Vec::new();
        for (_, o) in stalled {
            match *o {
                Owner::Tensor { actor, epoch }
                    if epoch == self.actors.list[actor as usize].epoch =>
                {
                    actors.push(actor)
                }
                Owner::Request { replica, epoch }
                    if epoch == self.services.replicas[replica as usize].epoch =>
                {
                    replicas.push(replica)
                }
                Owner::Response { slot } => slots.push(slot),
                Owner::LlmKv { service, slot, .. } => kv.push((service, slot)),
                _ => {}
            }
        }
        for v in [&mut actors, &mut replicas, &mut slots] {
            v.sort_unstable();
            v.dedup();
        }
        self.services.llm_kv_reroute(&mut self.w, &kv);
        for a in actors {
            self.actors.cancel_tensor(&mut self.w, a as usize);
            self.actors.list[a as usize].epoch += 1;
            let effect = self.actors.send_tensor(&mut self.w, a);
            self.apply(effect);
        }
        for r in replicas {
            self.services.cancel_requests(&mut self.w, r as usize);
            // A new incarnation number makes the queued `TransferGo` stale.
            self.services.replicas[r as usize].epoch += 1;
            let sid = self.services.replicas[r as usize].service;
            let dur = self.services.replicas[r as usize].pending_dur;
            self.services.start_batch(&mut self.w, sid, r, dur);
        }
        for id in slots {
            let Some(slot) = self.services.responses.slots[id as usize].take() else {
                continue;
            };
            self.services.responses.free.push(id);
            if let Some(x) = slot.xfer {
                let now = self.w.now();
                self.w.wire.cancel(now, x);
            }
            let r = u32::MAX;
            let _ = self
                .services
                .respond(&mut self.w, slot.service, r, slot.from, slot.arrivals);
        }
        self.w.rearm_wire();
    }
}

impl Services {
    /// Replica `r` was lost: its requests in flight leave the network.
    pub(crate) fn cancel_requests(&mut self, world: &mut World<'_>, r: usize) {
        self.llm_lost(world, r);
        let rep = &mut self.replicas[r];
        rep.req_flows = None;
        if let Some(x) = rep.req_xfer.take() {
            let now = world.now();
            world.wire.cancel(now, x);
            world.rearm_wire();
        }
    }
}

impl Services {
    /// `n` payloads of `bytes` each between the nodes `(from, to)` (host memory): the fixed
    /// seconds and the flows.
    fn payload_flows(
        &mut self,
        world: &mut World<'_>,
        sid: u32,
        (from, to): (usize, usize),
        bytes: f64,
        n: usize,
        key: u32,
    ) -> Result<(f64, Vec<Flow>, String), ()> {
        let (name, what) = self.payload_transport(world, sid);
        if let Some(log) = &mut world.transfers {
            log.push(super::TransferRecord {
                time: world.q.now(),
                tenant: self.list[sid as usize].tenant,
                transport: name.clone(),
                bytes: bytes * n as f64,
            });
        }
        let (fixed, flow) = world
            .price_move(
                MovementKind::Payload,
                &format!(
                    "{what} (ingress {})",
                    world.state.nodes[world.state.head].name()
                ),
                &name,
                (from, 0),
                (to, 0),
                false,
                bytes,
                key,
            )
            .map_err(|_| ())?;
        Ok((
            fixed,
            flow.into_iter()
                .flat_map(|f| std::iter::repeat_n(f, n))
                .collect(),
            name,
        ))
    }

    /// Replica `r` of service `sid` took a batch that computes for `dur`: move its requests
    /// from the ingress first when the service declares `request`.
    pub(super) fn start_batch(&mut self, world: &mut World<'_>, sid: u32, r: u32, dur: Time) {
        let now = world.now();
        let epoch = self.replicas[r as usize].epoch;
        let node = self.replicas[r as usize].node.unwrap_or(0);
        let ingress = world.state.head;
        let req = self.list[sid as usize].request_bytes;
        let n = self.replicas[r as usize].inflight.len();
        if req <= 0.0 || node == ingress || n == 0 {
            self.replicas[r as usize].batch_start = now;
            world
                .q
                .after(dur, Ev::Service(ServiceEv::BatchDone(r, epoch)));
            return;
        }
        let Ok((fixed, flows, name)) = self.payload_flows(world, sid, (ingress, node), req, n, r)
        else {
            // The requests cannot reach the replica: they are lost, and the replica takes
            // its next batch.
            world.losses.requests_lost += n as u64;
            let rep = &mut self.replicas[r as usize];
            rep.inflight.clear();
            rep.batch_start = now;
            world.q.at(now, Ev::Service(ServiceEv::BatchDone(r, epoch)));
            return;
        };
        let bytes = req * n as f64;
        self.begin_payload(
            world,
            MoveKey::Request(r),
            sid,
            (ingress, node),
            bytes,
            &name,
        );
        let rep = &mut self.replicas[r as usize];
        rep.pending_dur = dur;
        rep.req_flows = Some(flows);
        world.transfer_after(secs(fixed), Owner::Request { replica: r, epoch });
    }

    /// Replica `r` of service `sid` on `node` finished a batch answering `done` (arrival
    /// times): record their latencies now, or when their responses reach the ingress. Gives
    /// `done` back when it keeps none of it, for the replica's next batch.
    pub(super) fn respond(
        &mut self,
        world: &mut World<'_>,
        sid: u32,
        r: u32,
        node: usize,
        done: Vec<Time>,
    ) -> Option<Vec<Time>> {
        let now = world.now();
        let ingress = world.state.head;
        let resp = self.list[sid as usize].response_bytes;
        if resp <= 0.0 || node == ingress || done.is_empty() {
            if !done.is_empty() {
                // A request's work ends when it is answered.
                world.makespan = world.makespan.max(now);
            }
            let svc = &mut self.list[sid as usize];
            for a in &done {
                svc.latencies.record_ns(now - a);
            }
            return Some(done);
        }
        let Ok((fixed, flows, name)) =
            self.payload_flows(world, sid, (node, ingress), resp, done.len(), r)
        else {
            // The responses cannot reach the ingress: their requests are lost.
            world.losses.requests_lost += done.len() as u64;
            return Some(done);
        };
        let bytes = resp * done.len() as f64;
        let slot = Slot {
            service: sid,
            arrivals: done,
            from: node,
            flows: Some(flows),
            xfer: None,
        };
        let id = match self.responses.free.pop() {
            Some(i) => {
                self.responses.slots[i as usize] = Some(slot);
                i
            }
            None => {
                self.responses.slots.push(Some(slot));
                (self.responses.slots.len() - 1) as u32
            }
        };
        self.begin_payload(
            world,
            MoveKey::Response(id),
            sid,
            (node, ingress),
            bytes,
            &name,
        );
        world.transfer_after(secs(fixed), Owner::Response { slot: id });
        None
    }

    /// Node `n` died: responses on their way from it are lost with their requests.
    pub(crate) fn lose_responses_from(&mut self, world: &mut World<'_>, n: usize) {
        let now = world.now();
        for id in 0..self.responses.slots.len() {
            let Some(slot) = &self.responses.slots[id] else {
                continue;
            };
            if slot.from != n {
                continue;
            }
            let Some(slot) = self.responses.slots[id].take() else {
                continue;
            };
            self.responses.free.push(id as u32);
            world.losses.requests_lost += slot.arrivals.len() as u64;
            if let Some(x) = slot.xfer {
                world.wire.cancel(now, x);
            }
        }
        world.rearm_wire();
    }
}

impl Services {
    /// Timeline: service `sid`'s `bytes` of payloads between two nodes begin moving now.
    fn begin_payload(
        &mut self,
        world: &mut World<'_>,
        key: MoveKey,
        sid: u32,
        (from, to): (usize, usize),
        bytes: f64,
        transport: &str,
    ) {
        if !world.tl.on {
            return;
        }
        let label = world.label_id(self.label(sid as usize));
        let kind = match key {
            MoveKey::Response(_) => MoveKind::Response,
            _ => MoveKind::Request,
        };
        let (from, to) = (End::Node(from as u32), End::Node(to as u32));
        let now = world.now();
        let p = world
            .tl
            .part(kind, label, None, from, to, bytes, transport, None);
        world.tl.begin(key, now, vec![p]);
    }
}

impl Services {
    /// The transport service `sid`'s payloads move with, and a label for the notes.
    fn payload_transport(&mut self, world: &mut World<'_>, sid: u32) -> (String, String) {
        let s = &self.list[sid as usize];
        let w = &world.spec.workloads[s.workload];
        let what = format!(
            "payloads of service {}.{}",
            w.name, w.services[s.index].name
        );
        let name = world.transport_named([&None, &w.transport]);
        let tenant = s.tenant;
        let name = world.allowed_or_fallback(MovementKind::Payload, tenant, name, &what);
        // A request's body is host memory behind Serve's HTTP proxy, never a device tensor:
        // a transport that moves only device memory (Ray Direct Transport's NCCL, CUDA IPC,
        // GPUDirect) does not carry it, and Serve's actor call moves it through the object
        // store, priced by the object store's own plan.
        let device_only = crate::transport::TransportParams::named(world.spec, &name)
            .is_some_and(|p| p.kind.device_only());
        if device_only {
            world.net.note(
                MovementKind::Payload,
                true,
                format!("{what}: transport {name} moves device memory only; the requests' bodies (host memory) move through Ray's object store, as Serve's calls do"),
            );
            return ("object_store".to_string(), what);
        }
        (name, what)
    }

    /// Replica `r`'s batch has its requests: it computes.
    pub(super) fn on_requests_arrived(&mut self, world: &mut World<'_>, r: u32, epoch: u32) {
        let now = world.now();
        let rep = &mut self.replicas[r as usize];
        if epoch != rep.epoch {
            return;
        }
        rep.req_xfer = None;
        rep.batch_start = now;
        world.tl.arrived(MoveKey::Request(r), now);
        let rep = &mut self.replicas[r as usize];
        let d = rep.pending_dur;
        world
            .q
            .after(d, Ev::Service(ServiceEv::BatchDone(r, epoch)));
    }

    /// Responses reached the ingress: their requests are served.
    pub(super) fn on_responses_arrived(&mut self, world: &mut World<'_>, id: u32) {
        let now = world.now();
        let Some(slot) = self
            .responses
            .slots
            .get_mut(id as usize)
            .and_then(Option::take)
        else {
            return;
        };
        self.responses.free.push(id);
        world.tl.arrived(MoveKey::Response(id), now);
        if !slot.arrivals.is_empty() {
            world.makespan = world.makespan.max(now);
        }
        let svc = &mut self.list[slot.service as usize];
        for a in &slot.arrivals {
            svc.latencies.record_ns(now - a);
        }
    }
}
