//! Inference services: replicas (placed with SPREAD) serving a shared FIFO queue fed by
//! Poisson, bursty or trace arrivals (or, for LLM services, a finite benchmark load: a closed
//! loop of clients or every request at once), with optional batching, and their latencies.
//!
//! Architecture invariant: never calls `crate::placement`; replicas are placed through
//! `scheduling` (`submit`, `dispatch`).

use super::schedulable::{Ask, Schedulable};
use super::{Ev, Sim, SimConfig, Work, models, timeline};
use crate::engine::{Time, rng_stream, stream_id};
use crate::placement::{Allocation, NodeId, Request};
use crate::scenario::Spec;
use crate::scenario::workload::Arrival;
use crate::scenario::workload::{Policy, Strategy};
use crate::sim::World;
use models::secs;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use std::collections::VecDeque;

/// Every service (LLM services included) and every replica, by index, and the responses on
/// their way back to the ingress.
#[derive(Default)]
pub(super) struct Services {
    pub(super) list: Vec<Service>,
    pub(super) replicas: Vec<Replica>,
    pub(super) responses: super::payloads::Responses,
    /// The (replica, epoch, flight) of each queued `LlmEv::Pipe`.
    pub(super) pipe_timers: crate::engine::Parked<(u32, u32, u32)>,
}

impl Services {
    pub(super) fn replica(&self, r: u32) -> &Replica {
        &self.replicas[r as usize]
    }
}

pub(super) struct Replica {
    pub(super) service: u32,
    pub(super) node: Option<NodeId>,
    pub(super) alloc: Option<Allocation>,
    pub(super) batch: u32,
    pub(super) epoch: u32,
    /// Requests of the batch in progress (arrival times).
    pub(super) inflight: Vec<Time>,
    /// When the batch in progress started (timeline).
    pub(super) batch_start: Time,
    /// The batch's compute time, and its requests' flows and transfer from the ingress
    /// while they move (`payloads.rs`).
    pub(super) pending_dur: Time,
    pub(super) req_flows: Option<Vec<(Vec<crate::network::LinkId>, f64)>>,
    pub(super) req_xfer: Option<super::wire::TransferId>,
    /// An LLM service's engine while the replica is placed (`sim::llm`), and the requests
    /// routed to it before.
    pub(super) llm: Option<Box<super::llm::LlmReplica>>,
    pub(super) llm_waiting: Vec<super::llm::engine::Seq>,
}

impl Replica {
    /// A replica of service `service`, not placed yet.
    fn unplaced(service: u32) -> Replica {
        Replica {
            service,
            node: None,
            alloc: None,
            batch: 0,
            epoch: 0,
            inflight: Vec::new(),
            batch_start: 0,
            pending_dur: 0,
            req_flows: None,
            req_xfer: None,
            llm: None,
            llm_waiting: Vec::new(),
        }
    }
}

pub(super) struct Service {
    pub(super) workload: usize,
    pub(super) index: usize,
    pub(super) request: Request,
    pub(super) tenant: Option<usize>,
    pub(super) queue: VecDeque<Time>,
    /// The timeline's counter of the queue, once it has one.
    pub(super) queue_counter: Option<usize>,
    pub(super) idle: Vec<u32>,
    pub(super) replicas: Vec<u32>,
    pub(super) rate: f64,
    pub(super) burst: u64,
    /// The gaps between bursts: exponential of rate `rate / burst` (`None`: a rate that is
    /// not positive and finite, no bursts), built once, not per arrival.
    pub(super) gaps: Option<Exp<f64>>,
    pub(super) trace: Vec<Time>,
    /// Each trace row's (prompt, output) tokens, in `trace`'s order (empty: none in the file).
    pub(super) trace_tokens: Vec<(u32, u32)>,
    pub(super) trace_next: usize,
    pub(super) arrived: u64,
    /// Latencies, counting those within each SLO target (the spec's order).
    pub(super) latencies: super::durations::Durations,
    pub(super) waits: super::durations::Durations,
    pub(super) timeout: Option<crate::engine::EventId>,
    /// FLOP per request; memory traffic and kernels per batch.
    pub(super) compute: Option<crate::scenario::workload::Compute>,
    /// `compute`'s time by (node, batch size), in the nanoseconds a batch takes: a node's
    /// accelerator never changes, and pricing a batch (a roofline over the catalog) was a
    /// tenth of a serving run's time.
    pub(super) compute_ns: rustc_hash::FxHashMap<(NodeId, u32), Time>,
    pub(super) service_ns: Option<Time>,
    pub(super) exponential: bool,
    pub(super) batch: Option<(u32, Time)>,
    pub(super) rng: ChaCha8Rng,
    /// Bytes of each request and response between the ingress and a replica (0: none).
    pub(super) request_bytes: f64,
    pub(super) response_bytes: f64,
    /// An LLM service's measurements (`None`: the FLOP-level form).
    pub(super) llm: Option<Box<super::llm::LlmService>>,
}

impl Sim<'_> {
    /// The services of workload `wi`: replicas submitted now, arrivals from time zero.
    pub(super) fn start_services(
        &mut self,
        wi: usize,
        w: &crate::scenario::workload::Workload,
        tenant: Option<usize>,
        cfg: &SimConfig,
    ) {
        // Services: replicas now, arrivals from time zero.
        for (si, s) in w.services.iter().enumerate() {
            let sid = self.services.list.len() as u32;
            let (rate, burst, trace, trace_tokens) = match &s.arrival {
                Arrival::Poisson(r) => (r.0, 1, Vec::new(), Vec::new()),
                Arrival::Bursty { rate, burst } => (rate.0, *burst, Vec::new(), Vec::new()),
                // Finite loads send from the start and then as requests finish (`on_arrival`).
                Arrival::Concurrency { .. } | Arrival::Offline { .. } => {
                    (0.0, 1, Vec::new(), Vec::new())
                }
                Arrival::Trace(path) => {
                    let empty = crate::scenario::arrivals::Trace::default();
                    let tr = cfg.traces.get(path).unwrap_or(&empty);
                    // Rows in time order, ties in file order, their tokens along.
                    let mut order: Vec<usize> = (0..tr.arrivals.len()).collect();
                    order.sort_by_key(|&i| secs(tr.arrivals[i]));
                    let t = order.iter().map(|&i| secs(tr.arrivals[i])).collect();
                    let tokens = if tr.tokens.len() == tr.arrivals.len() {
                        order.iter().map(|&i| tr.tokens[i]).collect()
                    } else {
                        Vec::new()
                    };
                    (0.0, 1, t, tokens)
                }
            };
            let request = self
                .w
                .state
                .request_with_memory(&s.resources, s.device_memory);
            self.services.list.push(Service {
                workload: wi,
                index: si,
                request,
                tenant,
                queue: VecDeque::new(),
                queue_counter: None,
                idle: Vec::new(),
                replicas: Vec::new(),
                rate,
                burst,
                gaps: Exp::new(rate / burst as f64).ok(),
                trace,
                trace_tokens,
                trace_next: 0,
                arrived: 0,
                latencies: super::durations::Durations::with_thresholds(
                    s.slo.iter().map(|(_, d)| d.0 as f64 / 1e9).collect(),
                ),
                // One threshold at 0: the requests that did not wait (P(wait > 0) is the rest).
                waits: super::durations::Durations::with_thresholds(vec![0.0]),
                timeout: None,
                compute: s.compute.clone(),
                compute_ns: Default::default(),
                service_ns: s.service_time.map(|d| d.0),
                exponential: s.exponential,
                batch: s.batch.map(|(m, w)| (m, w.0)),
                rng: rng_stream(
                    cfg.seed,
                    stream_id(&format!("service/{}/{}", w.name, s.name)),
                ),
                request_bytes: s.request.map_or(0.0, |b| b.0 as f64),
                response_bytes: s.response.map_or(0.0, |b| b.0 as f64),
                llm: s.llm.as_ref().map(|_| {
                    Box::new(super::llm::LlmService {
                        closed: super::llm::Closed::at_start(&s.arrival),
                        ..Default::default()
                    })
                }),
            });
            for _ in 0..s.replicas {
                let rid = self.services.replicas.len() as u32;
                self.services.replicas.push(Replica::unplaced(sid));
                self.services.list[sid as usize].replicas.push(rid);
                self.submit(Work::Replica(rid));
            }
            if s.arrival.finite().is_some() {
                // The first requests go at once; the rest as earlier ones finish.
                let now = self.w.now();
                self.w.q.at(now, Ev::Service(ServiceEv::Arrival(sid)));
            } else {
                self.services.schedule_arrival(&mut self.w, sid);
            }
        }
    }

    /// Replica `r` was placed on `node` with `alloc`: an LLM engine comes up, or the replica
    /// joins its service's idle ones and serves the queue.
    pub(super) fn replica_started(&mut self, r: u32, node: NodeId, alloc: Allocation, units: f64) {
        let now = self.w.now();
        self.w.busy(node, units, now);
        let rep = &mut self.services.replicas[r as usize];
        rep.node = Some(node);
        rep.alloc = Some(alloc);
        let s = rep.service;
        if self.services.list[s as usize].llm.is_some() {
            let bw = self.w.health.bandwidth_factors(node);
            self.services.llm_replica_up(&mut self.w, r, bw);
        } else {
            self.services.list[s as usize].idle.push(r);
            self.services.serve(&mut self.w, s);
        }
    }
}

impl Services {
    /// Requests arrive at service `s` (one, or a burst).
    pub(super) fn on_arrival(&mut self, world: &mut World<'_>, s: u32) {
        let now = world.now();
        if let Some(c) = self.list[s as usize]
            .llm
            .as_mut()
            .and_then(|l| l.closed.as_mut())
        {
            // A finite load: the requests due now, together; the next ones come as these finish.
            let n = std::mem::take(&mut c.due);
            if n > 0 {
                self.llm_arrive(world, s, n);
            }
            return;
        }
        if self.list[s as usize].llm.is_some() {
            // Trace arrivals at this same time join the engine together (one iteration).
            let svc = &mut self.list[s as usize];
            let mut n = svc.burst.max(1);
            while svc.trace.get(svc.trace_next) == Some(&now) {
                svc.trace_next += 1;
                n += 1;
            }
            self.llm_arrive(world, s, n);
            self.schedule_arrival(world, s);
            return;
        }
        let svc = &mut self.list[s as usize];
        for _ in 0..svc.burst.max(1) {
            svc.queue.push_back(now);
            svc.arrived += 1;
        }
        self.schedule_arrival(world, s);
        self.serve(world, s);
    }
}

impl Services {
    /// Hand queued requests to idle replicas, honouring batching; the trace's counter of the
    /// service's queue follows.
    pub(super) fn serve(&mut self, world: &mut World<'_>, sid: u32) {
        self.serve_queue(world, sid);
        if world.tl.on {
            let s = &self.list[sid as usize];
            let i = match s.queue_counter {
                Some(i) => i,
                None => {
                    let w = &world.spec.workloads[s.workload];
                    let name = format!("queue {}.{}", w.name, w.services[s.index].name);
                    let i = world.tl.counter_id(&name);
                    self.list[sid as usize].queue_counter = Some(i);
                    i
                }
            };
            let (now, n) = (world.now(), self.list[sid as usize].queue.len() as f64);
            world.tl.counter_at(i, now, n);
        }
    }

    fn serve_queue(&mut self, world: &mut World<'_>, sid: u32) {
        let now = world.now();
        loop {
            let s = &mut self.list[sid as usize];
            if s.queue.is_empty() || s.idle.is_empty() {
                return;
            }
            let take = match s.batch {
                None => 1,
                Some((max, wait)) => {
                    let oldest = *s.queue.front().expect("non-empty");
                    if (s.queue.len() as u32) < max && now < oldest + wait {
                        if s.timeout.is_none() {
                            // A stream too: one pending timeout per service.
                            s.timeout = Some(world.q.at_stream(
                                timeout_stream(sid),
                                oldest + wait,
                                Ev::Service(ServiceEv::BatchTimeout(sid)),
                            ));
                        }
                        return;
                    }
                    s.queue.len().min(max as usize) as u32
                }
            };
            if let Some(t) = s.timeout.take() {
                world.q.cancel(t);
            }
            let r = s.idle.pop().expect("non-empty");
            // The replica's last batch's vector, emptied when it answered (no allocation).
            let mut waited = std::mem::take(&mut self.replicas[r as usize].inflight);
            waited.clear();
            let s = &mut self.list[sid as usize];
            for _ in 0..take {
                let a = s.queue.pop_front().expect("non-empty");
                waited.push(a);
            }
            let dur = self.batch_duration(world, sid, r, take);
            let s = &mut self.list[sid as usize];
            for a in &waited {
                s.waits.record_ns(now - a);
            }
            let rep = &mut self.replicas[r as usize];
            rep.batch = take;
            rep.inflight = waited;
            self.start_batch(world, sid, r, dur);
        }
    }

    /// Replica `r` finished a batch; stale batches (the replica was lost) are ignored.
    pub(super) fn on_batch_done(&mut self, world: &mut World<'_>, r: u32, epoch: u32) {
        let now = world.now();
        if epoch != self.replicas[r as usize].epoch {
            return;
        }
        let s = self.replicas[r as usize].service;
        let units = world.device_units(&self.list[s as usize].request);
        let (node, from) = {
            let rep = &self.replicas[r as usize];
            (rep.node.unwrap_or(0), rep.batch_start)
        };
        world.worked(node, units, from, now);
        self.replica_cpus_worked(world, s as usize, node, 1.0, from, now);
        if world.tl.on {
            let rep = &self.replicas[r as usize];
            let devs = world.alloc_devices(rep.node.unwrap_or(0), rep.alloc.as_ref());
            let from = rep.batch_start;
            let label = world.label_id(self.label(s as usize));
            world
                .tl
                .span(&devs, from, now, timeline::SpanKind::Compute, label);
        }
        let done = std::mem::take(&mut self.replicas[r as usize].inflight);
        let node = self.replicas[r as usize].node.unwrap_or(0);
        if let Some(mut done) = self.respond(world, s, r, node, done) {
            done.clear();
            self.replicas[r as usize].inflight = done;
        }
        let svc = &mut self.list[s as usize];
        svc.idle.push(r);
        self.serve(world, s);
    }

    /// The oldest request of service `s` has waited its batch window.
    pub(super) fn on_batch_timeout(&mut self, world: &mut World<'_>, s: u32) {
        self.list[s as usize].timeout = None;
        self.serve(world, s);
    }
}

impl Services {
    /// The CPUs of a replica of service `s` on `node` worked over `[from, to)`: `share` of
    /// them (a pipeline stage's devices over the replica's; 1 for a whole replica).
    pub(super) fn replica_cpus_worked(
        &mut self,
        world: &mut World<'_>,
        s: usize,
        node: NodeId,
        share: f64,
        from: Time,
        to: Time,
    ) {
        let cpus = super::cpu::cpus_of(&self.list[s].request) * share;
        world.cpu_worked(node, cpus, from, to, self.label(s));
    }
}

impl Services {
    pub(super) fn schedule_arrival(&mut self, world: &mut World<'_>, sid: u32) {
        let now = world.now();
        let s = &mut self.list[sid as usize];
        let next = if !s.trace.is_empty() || s.rate == 0.0 {
            let t = s.trace.get(s.trace_next).copied();
            s.trace_next += 1;
            t
        } else {
            // Bursts arrive as a Poisson process of rate/burst; each brings `burst` requests.
            let gap: f64 = s
                .gaps
                .map(|e| e.sample(&mut s.rng))
                .unwrap_or(f64::INFINITY);
            Some(now.saturating_add(secs(gap)))
        };
        if let Some(t) = next
            && world.horizon.is_none_or(|h| t <= h)
        {
            // A service's arrivals are a stream: each schedules the next (the engine keeps the
            // first services' pending arrival outside its heap, in the same order).
            world
                .q
                .at_stream(arrival_stream(sid), t, Ev::Service(ServiceEv::Arrival(sid)));
        }
    }

    pub(super) fn batch_duration(
        &mut self,
        world: &mut World<'_>,
        sid: u32,
        r: u32,
        b: u32,
    ) -> Time {
        let node = self.replicas[r as usize].node.unwrap_or(0);
        let s = &mut self.list[sid as usize];
        let t = match (&s.compute, s.service_ns) {
            (Some(c), _) => {
                let request = &s.request;
                return *s.compute_ns.entry((node, b)).or_insert_with(|| {
                    let units = world.device_units(request);
                    let acc = world.node_accel[node].as_deref().unwrap_or_default();
                    secs(models::compute_secs(
                        world.spec,
                        acc,
                        c,
                        f64::from(b),
                        units,
                    ))
                    .max(1)
                });
            }
            (None, Some(ns)) if s.exponential => Exp::new(1e9 / ns as f64)
                .map(|e| e.sample(&mut s.rng))
                .unwrap_or(0.0),
            (None, Some(ns)) => ns as f64 / 1e9,
            _ => 0.0,
        };
        secs(t).max(1)
    }
}

/// The engine's stream of service `sid`'s arrivals ([`crate::engine::EventQueue::at_stream`]).
fn arrival_stream(sid: u32) -> usize {
    2 * sid as usize
}

/// The engine's stream of service `sid`'s batch timeouts.
fn timeout_stream(sid: u32) -> usize {
    2 * sid as usize + 1
}

/// The events of services: arrivals and batches.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ServiceEv {
    Arrival(u32),
    BatchDone(u32, u32),
    BatchTimeout(u32),
}

impl Services {
    pub(super) fn on_service_event(&mut self, world: &mut World<'_>, ev: ServiceEv) {
        match ev {
            ServiceEv::Arrival(s) => self.on_arrival(world, s),
            ServiceEv::BatchDone(r, epoch) => self.on_batch_done(world, r, epoch),
            ServiceEv::BatchTimeout(s) => self.on_batch_timeout(world, s),
        }
    }
}

/// Replicas spread (Ray Serve's default), unless the workload places topology-aware.
static SPREAD: Strategy = Strategy::Spread;
static TOPOLOGY_AWARE: Strategy = Strategy::Default;

impl Schedulable for Services {
    fn class_of(&self, r: u32) -> u32 {
        self.replicas[r as usize].service
    }

    fn class_tenant(&self, s: u32) -> Option<usize> {
        self.list[s as usize].tenant
    }

    fn ask<'s>(&self, spec: &'s Spec, r: u32) -> Ask<'s> {
        let s = &self.list[self.replicas[r as usize].service as usize];
        let policy = spec.workloads[s.workload].policy;
        Ask {
            request: s.request.clone(),
            strategy: if policy == Policy::TopologyAware {
                &TOPOLOGY_AWARE
            } else {
                &SPREAD
            },
            selector: &[],
            fallbacks: &[],
            tenant: s.tenant,
            policy,
        }
    }

    /// Services keep no count of replicas that can never be placed.
    fn infeasible(&mut self, _: &mut World<'_>, _: u32) {}

    fn item_name(&self, spec: &Spec, r: u32) -> String {
        let s = &self.list[self.replicas[r as usize].service as usize];
        let w = &spec.workloads[s.workload];
        format!("{}.{}", w.name, w.services[s.index].name)
    }
}
