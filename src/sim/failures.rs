//! Failures in the simulation: scheduled and random node-level failures, Ray's health-check
//! detection, and recovery (task retries, actor restarts, placement-group bundle rescheduling
//! with priority, training restart from the last checkpoint, replica restarts).
//!
//! Model (Ray semantics from shared/reference/ray-semantics.md):
//! - A crash stops everything on the node at once; the node leaves the scheduler's view at
//!   that moment (no new work lands there).
//! - The GCS declares it dead after `misses × period` of failed health checks (Ray defaults
//!   5 × 3 s = 15 s for a crash, `gcs_health_check_manager.cc`). Recovery starts then: tasks
//!   are retried while `retries` last (default 3), actors restart while `max_restarts` allows,
//!   lost bundles are rescheduled ahead of everything else, replicas are restarted elsewhere.
//!   Requests in flight on a lost replica are lost.
//! - A training job stops at the crash; the work since its last completed checkpoint is lost
//!   (devices × time); when its group is whole again it loads the checkpoint (at the write
//!   rate) and continues from that step.
//! - Random failures form an alternating renewal process per unit (node, rack, slice, zone):
//!   time to failure from the distribution with mean `mtbf`, then repair from the repair
//!   distribution with mean `repair` (none: the unit never comes back). Weibull and lognormal
//!   are parameterised by their mean (scale = mtbf / Γ(1 + 1/shape); μ = ln(mtbf) − σ²/2);
//!   empirical samples are rescaled to mean `mtbf`.
//! - The head node holds the GCS (in memory, Ray's default) and the driver: losing it takes
//!   the whole cluster down until the head comes back, when every node rejoins empty and
//!   waiting work is placed again. GCS fault tolerance with Redis is not modelled.
//! - A GPU-level fault (Xid) takes one device out of service; whatever used it fails at once
//!   and is retried, restarted or re-placed. A compute NIC or link down breaks the collectives
//!   of jobs on the node (they restart from their checkpoint with less bandwidth); losing the
//!   frontend NICs cuts the node off (silent detection: misses × (timeout + period) ≈ 65 s).
//!   A degraded NVLink or NIC slows collectives.

use super::{Ev, Sim, TraceEvent, Work, device_units};
use crate::engine::{Time, rng_stream, stream_id};
use crate::placement::{BundleRequest, NodeId, PgDecision};
use crate::spec::failure::{Detection, Distribution};
use crate::spec::workload::{LabelConstraint, LabelOp, PgStrategy};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution as _, Exp, LogNormal, Weibull};

/// A unit a random failure process fails: its nodes, the device or NIC when the unit is one,
/// and the label of its random stream.
type Unit = (Vec<NodeId>, Option<usize>, Option<usize>, String);

/// A random failure process over one unit (a node, or all nodes of a rack, slice or zone).
pub(crate) struct Process {
    nodes: Vec<NodeId>,
    /// For device failures: which device of `nodes[0]`.
    device: Option<usize>,
    /// For NIC and link failures: which NIC of `nodes[0]`.
    nic: Option<usize>,
    mtbf: f64,
    dist: Distribution,
    repair: Option<f64>,
    repair_dist: Distribution,
    rng: ChaCha8Rng,
}

#[derive(Default)]
pub(crate) struct Failures {
    pub detection: Detection,
    pub down_since: Vec<Option<Time>>,
    pub crash_epoch: Vec<u32>,
    /// Work lost with a node, recovered when the crash is detected: (node, crash epoch, work).
    pub lost: Vec<(NodeId, u32, Work)>,
    /// Placement groups with bundles waiting to be re-placed, in the order they lost them.
    pub lost_pgs: Vec<u32>,
    pub processes: Vec<Process>,
    pub crashes: u64,
    pub detect_times: Vec<f64>,
    pub recovery: Vec<f64>,
    pub tasks_retried: u64,
    pub tasks_failed: u64,
    pub actors_restarted: u64,
    pub actors_lost: u64,
    pub replicas_restarted: u64,
    pub requests_lost: u64,
    pub objects_rebuilt: u64,
    pub objects_lost: u64,
    pub bundles_rescheduled: u64,
    pub lost_device_ns: f64,
    pub node_down_ns: f64,
    pub unsimulated: Vec<String>,
    pub timeline: Vec<crate::sim::metrics::TimelineEvent>,
    /// Per node: fraction of scale-up bandwidth working (degraded NVLink).
    pub nvlink_factor: Vec<f64>,
    /// Per node: its NICs (role, speed) in `<node>.nic<i>` order, and which are down.
    pub nics: Vec<Vec<(String, f64)>>,
    pub nics_down: Vec<Vec<usize>>,
    /// When each (node, crash epoch) went down, until its detection.
    pub crash_times: std::collections::BTreeMap<(NodeId, u32), Time>,
    /// Nodes taken down with the head (they come back with it).
    pub cluster_down: Vec<NodeId>,
    /// NICs running below their speed (a degraded link): (node, NIC) → fraction.
    pub nic_factor: std::collections::BTreeMap<(NodeId, usize), f64>,
    /// Nodes cut off by NIC failures (they rejoin when a NIC comes back).
    pub cut_off: Vec<bool>,
    /// Empirical samples by file name (seconds), passed in by the caller.
    pub empirical: std::collections::BTreeMap<String, Vec<f64>>,
}

/// The nodes a failure target names.
fn nodes_of(
    st: &NodeIndex,
    c: &crate::spec::Cluster,
    class: &str,
    name: &str,
) -> Option<Vec<NodeId>> {
    match class {
        "node" => st.by_name.get(name).map(|x| vec![*x]),
        "head" => Some(vec![st.head]),
        "rack" | "slice" => {
            let r = c.rack_index(name)?;
            Some((0..st.racks.len()).filter(|&i| st.racks[i] == r).collect())
        }
        "zone" => {
            let z = c.zones.iter().position(|x| x == name)?;
            Some(
                (0..st.racks.len())
                    .filter(|&i| c.racks[st.racks[i]].zone == Some(z))
                    .collect(),
            )
        }
        _ => None,
    }
}

/// `<node>.nic<i>` → (node, NIC index).
fn nic_of(st: &NodeIndex, name: &str) -> Option<(NodeId, usize)> {
    let (node, part) = name.rsplit_once('.')?;
    let nic = part.strip_prefix("nic")?.parse().ok()?;
    Some((*st.by_name.get(node)?, nic))
}

/// `<node>.d<i>` → (node, device index).
fn device_of(st: &NodeIndex, name: &str) -> Option<(NodeId, usize)> {
    let (node, part) = name.rsplit_once('.')?;
    let dev = part.strip_prefix('d')?.parse().ok()?;
    Some((*st.by_name.get(node)?, dev))
}

/// What failure targets need of the cluster state: names, racks and the head.
pub(crate) struct NodeIndex {
    by_name: std::collections::HashMap<String, NodeId>,
    racks: Vec<usize>,
    head: NodeId,
}

impl crate::placement::ClusterState {
    fn node_index(&self) -> NodeIndex {
        NodeIndex {
            by_name: self
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name().to_string(), i))
                .collect(),
            racks: self.nodes.iter().map(|n| n.rack()).collect(),
            head: self.head,
        }
    }
}

fn sample(
    d: &Distribution,
    mean: f64,
    rng: &mut ChaCha8Rng,
    empirical: &std::collections::BTreeMap<String, Vec<f64>>,
) -> f64 {
    match d {
        Distribution::Exponential => Exp::new(1.0 / mean).map(|e| e.sample(rng)).unwrap_or(mean),
        Distribution::Weibull { shape } => {
            let scale = mean / libm::tgamma(1.0 + 1.0 / shape);
            Weibull::new(scale, *shape)
                .map(|w| w.sample(rng))
                .unwrap_or(mean)
        }
        Distribution::LogNormal { sigma } => {
            let mu = mean.ln() - sigma * sigma / 2.0;
            LogNormal::new(mu, *sigma)
                .map(|l| l.sample(rng))
                .unwrap_or(mean)
        }
        Distribution::Empirical { path } => match empirical.get(path) {
            Some(xs) if !xs.is_empty() => {
                use rand::RngExt;
                let m = xs.iter().sum::<f64>() / xs.len() as f64;
                let x = xs[rng.random_range(0..xs.len())];
                if m > 0.0 { x * mean / m } else { mean }
            }
            _ => mean,
        },
    }
}

impl Failures {
    /// (scale-up, network) bandwidth fractions still working on a node.
    pub(crate) fn bandwidth_factors(&self, n: NodeId) -> (f64, f64) {
        let nv = self.nvlink_factor.get(n).copied().unwrap_or(1.0);
        let Some(nics) = self.nics.get(n) else {
            return (nv, 1.0);
        };
        let compute: Vec<usize> = (0..nics.len())
            .filter(|&i| nics[i].0 == "compute")
            .collect();
        let pool: Vec<usize> = if compute.is_empty() {
            (0..nics.len()).collect()
        } else {
            compute
        };
        let total: f64 = pool.iter().map(|&i| nics[i].1).sum();
        let factor = |i: usize| self.nic_factor.get(&(n, i)).copied().unwrap_or(1.0);
        let up: f64 = pool
            .iter()
            .filter(|i| !self.nics_down[n].contains(i))
            .map(|&i| nics[i].1 * factor(i))
            .sum();
        (nv, if total > 0.0 { up / total } else { 1.0 })
    }
}

impl Sim<'_> {
    fn mark(&mut self, kind: &str, subject: String) {
        let time = self.now() as f64 / 1e9;
        self.failures
            .timeline
            .push(crate::sim::metrics::TimelineEvent {
                time,
                kind: kind.to_string(),
                subject,
            });
    }

    /// Schedule the scenario's failures (every `failures` block, or only `only` when given).
    pub(crate) fn schedule_failures(
        &mut self,
        seed: u64,
        only: Option<&str>,
        empirical: &std::collections::BTreeMap<String, Vec<f64>>,
    ) {
        let spec = self.spec;
        let n = self.node_types.len();
        self.failures.down_since = vec![None; n];
        self.failures.crash_epoch = vec![0; n];
        self.failures.nvlink_factor = vec![1.0; n];
        self.failures.nics_down = vec![Vec::new(); n];
        self.failures.cut_off = vec![false; n];
        self.failures.nics = self
            .node_types
            .iter()
            .map(|nt| {
                nt.nics
                    .iter()
                    .flat_map(|g| {
                        let speed = spec.nics.get(&g.nic).map(|x| x.speed.0).unwrap_or(0.0);
                        std::iter::repeat_n((g.role.clone(), speed), g.count as usize)
                    })
                    .collect()
            })
            .collect();
        self.failures.empirical = empirical.clone();
        let Some(c) = &spec.cluster else { return };
        let blocks: Vec<&crate::spec::Failures> = spec
            .failures
            .iter()
            .filter(|f| only.is_none_or(|o| f.name.as_deref() == Some(o)))
            .collect();
        if let Some(b) = blocks.first() {
            self.failures.detection = b.detection;
        }
        let st = self.state.node_index();
        let nodes_of = |class: &str, name: &str| nodes_of(&st, c, class, name);
        for b in &blocks {
            for f in &b.scheduled {
                // Each failure kind: the event that starts it and the one that ends it.
                let named = |name: &str| st.by_name.get(name).copied();
                let pair = match (f.target.class.as_str(), f.action.as_str()) {
                    ("device", "xid" | "kill") => device_of(&st, &f.target.name).map(|(n, d)| {
                        (
                            Ev::DeviceFault(n as u32, d as u32),
                            Ev::DeviceRepair(n as u32, d as u32),
                        )
                    }),
                    ("nvlink", "degrade") => named(&f.target.name).zip(f.to).map(|(n, to)| {
                        (
                            Ev::NvlinkDegrade(n as u32, (to.0 * 1000.0).round() as u32),
                            Ev::NvlinkRestore(n as u32),
                        )
                    }),
                    ("nic" | "link", "down" | "kill") => {
                        nic_of(&st, &f.target.name).map(|(n, i)| {
                            (
                                Ev::NicDown(n as u32, i as u32),
                                Ev::NicUp(n as u32, i as u32),
                            )
                        })
                    }
                    ("nic" | "link", "degrade") => {
                        nic_of(&st, &f.target.name).zip(f.to).map(|((n, i), to)| {
                            (
                                Ev::NicDegrade(n as u32, i as u32, (to.0 * 1000.0).round() as u32),
                                Ev::NicDegrade(n as u32, i as u32, 1000),
                            )
                        })
                    }
                    ("node", "down") => named(&f.target.name)
                        .map(|n| (Ev::NodeUnreachable(n as u32), Ev::NodeRepair(n as u32))),
                    _ => None,
                };
                if let Some((down, up)) = pair {
                    self.q.at(f.at.0, down);
                    if let Some(d) = f.duration {
                        self.q.at(f.at.0.saturating_add(d.0), up);
                    }
                    continue;
                }
                let simulated = matches!(f.action.as_str(), "kill" | "power_loss");
                match (simulated, nodes_of(&f.target.class, &f.target.name)) {
                    (true, Some(nodes)) => {
                        for node in nodes {
                            self.q.at(f.at.0, Ev::NodeCrash(node as u32));
                            if let Some(d) = f.duration {
                                self.q
                                    .at(f.at.0.saturating_add(d.0), Ev::NodeRepair(node as u32));
                            }
                        }
                    }
                    _ => self.failures.unsimulated.push(format!(
                        "at {}: {} {} {}",
                        f.at, f.action, f.target.class, f.target.name
                    )),
                }
            }
            for (k, r) in b.random.iter().enumerate() {
                // Failure units: (nodes, device, NIC, stream label). Labels name the unit, so
                // adding a unit never shifts another unit's randomness.
                let bn = b.name.as_deref().unwrap_or("");
                let whole = |units: Vec<Vec<NodeId>>| -> Vec<Unit> {
                    units
                        .into_iter()
                        .enumerate()
                        .map(|(u, nodes)| {
                            (
                                nodes,
                                None,
                                None,
                                format!("failure/{bn}/{k}/{}/{u}", r.class),
                            )
                        })
                        .collect()
                };
                let units = match r.class.as_str() {
                    // The head has its own class (`random head`): its loss is the cluster's.
                    "node" => whole(
                        (0..n)
                            .filter(|&i| i != self.state.head)
                            .map(|i| vec![i])
                            .collect(),
                    ),
                    "head" => whole(vec![vec![self.state.head]]),
                    "rack" => whole(
                        c.racks
                            .iter()
                            .filter(|rk| rk.slice.is_none() && !rk.name.is_empty())
                            .filter_map(|rk| nodes_of("rack", &rk.name))
                            .collect(),
                    ),
                    "slice" => whole(
                        c.racks
                            .iter()
                            .filter(|rk| rk.slice.is_some())
                            .filter_map(|rk| nodes_of("slice", &rk.name))
                            .collect(),
                    ),
                    "zone" => whole(c.zones.iter().filter_map(|z| nodes_of("zone", z)).collect()),
                    "nic" | "link" => (0..n)
                        .flat_map(|node| {
                            (0..self.failures.nics[node].len()).map(move |nic| (node, nic))
                        })
                        .map(|(node, nic)| {
                            (
                                vec![node],
                                None,
                                Some(nic),
                                format!("failure/{bn}/{k}/{}/{node}/{nic}", r.class),
                            )
                        })
                        .collect(),
                    "device" => (0..n)
                        .flat_map(|node| {
                            (0..self.node_types[node].device_count() as usize)
                                .map(move |dev| (node, dev))
                        })
                        .map(|(node, dev)| {
                            (
                                vec![node],
                                Some(dev),
                                None,
                                format!("failure/{bn}/{k}/device/{node}/{dev}"),
                            )
                        })
                        .collect(),
                    other => {
                        self.failures
                            .unsimulated
                            .push(format!("random {other} failures (mtbf {})", r.mtbf));
                        continue;
                    }
                };
                for (nodes, device, nic, label) in units {
                    let p = self.failures.processes.len();
                    self.failures.processes.push(Process {
                        nodes,
                        device,
                        nic,
                        mtbf: r.mtbf.0 as f64,
                        dist: r.distribution.clone(),
                        repair: r.repair.map(|d| d.0 as f64),
                        repair_dist: r.repair_distribution.clone(),
                        rng: rng_stream(seed, stream_id(&label)),
                    });
                    let first = self.next_ttf(p);
                    self.q.at(first, Ev::RandomFailure(p as u32));
                }
            }
        }
    }

    fn next_ttf(&mut self, p: usize) -> Time {
        let f = &mut self.failures;
        let pr = &mut f.processes[p];
        let x = sample(&pr.dist, pr.mtbf, &mut pr.rng, &f.empirical);
        self.q.now().saturating_add(x.max(1.0) as Time)
    }

    pub(crate) fn random_failure(&mut self, p: usize) {
        let nodes = self.failures.processes[p].nodes.clone();
        let device = self.failures.processes[p].device;
        let nic = self.failures.processes[p].nic;
        match (device, nic) {
            (Some(d), _) => self.device_fault(nodes[0], d),
            (None, Some(i)) => self.nic_down(nodes[0], i),
            (None, None) => {
                for &n in &nodes {
                    self.node_crash(n);
                }
            }
        }
        let f = &mut self.failures;
        let pr = &mut f.processes[p];
        if let Some(mean) = pr.repair {
            let d = sample(&pr.repair_dist, mean, &mut pr.rng, &f.empirical).max(1.0) as Time;
            let back = self.q.now().saturating_add(d);
            for &n in &nodes {
                self.q.at(
                    back,
                    match (device, nic) {
                        (Some(d), _) => Ev::DeviceRepair(n as u32, d as u32),
                        (None, Some(i)) => Ev::NicUp(n as u32, i as u32),
                        (None, None) => Ev::NodeRepair(n as u32),
                    },
                );
            }
            // The next failure is measured from the repair (alternating renewal process).
            let x = sample(&pr.dist, pr.mtbf, &mut pr.rng, &f.empirical).max(1.0) as Time;
            self.q
                .at(back.saturating_add(x), Ev::RandomFailure(p as u32));
        }
    }

    fn drop_alloc(&mut self, node: NodeId, tenant: Option<usize>, units: f64) {
        let now = self.now();
        if let Some(t) = &mut self.trace {
            t.push(TraceEvent {
                time: now,
                node,
                tenant,
                delta: -1,
            });
        }
        self.busy(node, -units, now);
    }

    pub(crate) fn node_crash(&mut self, n: NodeId) {
        self.node_crash_with(n, false);
    }

    /// A node stops: `silent` when it does not crash but stops answering (packets dropped),
    /// which the health checks only notice by timing out.
    pub(crate) fn node_crash_with(&mut self, n: NodeId, silent: bool) {
        if !self.state.nodes[n].alive() {
            return;
        }
        if n == self.state.head && self.failures.cluster_down.is_empty() {
            // The head holds the GCS (in memory: Ray's default, no Redis) and the driver:
            // losing it takes the whole cluster down; raylets exit without their GCS.
            self.mark("cluster_loss", self.state.nodes[n].name().to_string());
            let others: Vec<NodeId> = (0..self.state.nodes.len())
                .filter(|&m| m != n && self.state.nodes[m].alive())
                .collect();
            self.failures.cluster_down = others.clone();
            self.failures.cluster_down.push(n);
            self.node_crash_one(n, silent);
            for m in others {
                self.node_crash_one(m, false);
            }
            return;
        }
        self.node_crash_one(n, silent);
    }

    fn node_crash_one(&mut self, n: NodeId, silent: bool) {
        let now = self.now();
        let devs = self.tl.node_devices(n);
        self.tl.fail(&devs, now);
        self.state.set_alive(n, false);
        self.mark("crash", self.state.nodes[n].name().to_string());
        self.failures.crashes += 1;
        self.failures.down_since[n] = Some(now);
        self.failures.crash_epoch[n] += 1;
        let epoch = self.failures.crash_epoch[n];
        self.failures.crash_times.insert((n, epoch), now);
        // Tasks running there.
        for t in 0..self.task_node.len() {
            if self.task_node[t] as usize != n || self.task_alloc[t].is_none() {
                continue;
            }
            self.record_task(t, now);
            self.task_alloc[t] = None;
            self.task_epoch[t] += 1;
            let gi = self.group_of(t as u32);
            let units = device_units(&self.state, &self.unit_ids, &self.groups[gi].request);
            self.failures.lost_device_ns += units * (now - self.task_start[t]) as f64;
            self.drop_alloc(n, self.groups[gi].tenant, units);
            self.failures.lost.push((n, epoch, Work::Task(t as u32)));
        }
        self.lose_outputs(n, epoch);
        self.store_lost(n);
        // Actors.
        for a in 0..self.actors.len() {
            let ac = &self.actors[a];
            if ac.node != Some(n) || ac.dead {
                continue;
            }
            let (tenant, holds) = (self.actor_groups[ac.group].tenant, ac.alloc.is_some());
            let units = if holds {
                device_units(&self.state, &self.unit_ids, &ac.request)
            } else {
                0.0
            };
            self.lose_actor_call(a);
            let ac = &mut self.actors[a];
            ac.epoch += 1;
            ac.node = None;
            if ac.alloc.take().is_some() {
                self.drop_alloc(n, tenant, units);
            }
            self.failures.lost.push((n, epoch, Work::Actor(a as u32)));
        }
        // Service replicas.
        for r in 0..self.replicas.len() {
            if self.replicas[r].node != Some(n) {
                continue;
            }
            let s = self.replicas[r].service as usize;
            let units = device_units(&self.state, &self.unit_ids, &self.services[s].request);
            let rep = &mut self.replicas[r];
            rep.epoch += 1;
            rep.node = None;
            self.failures.requests_lost += rep.inflight.len() as u64;
            rep.inflight.clear();
            if rep.alloc.take().is_some() {
                let tenant = self.services[s].tenant;
                self.drop_alloc(n, tenant, units);
            }
            self.services[s].idle.retain(|x| *x as usize != r);
            self.failures.lost.push((n, epoch, Work::Replica(r as u32)));
        }
        // Placement-group bundles, and the jobs that run on them.
        for p in 0..self.pgs.len() {
            let hit: Vec<usize> = (0..self.pgs[p].allocs.len())
                .filter(|&i| {
                    self.pgs[p].nodes.get(i) == Some(&n) && self.pgs[p].allocs[i].is_some()
                })
                .collect();
            if hit.is_empty() {
                continue;
            }
            let tenant = self.pgs[p].tenant;
            for i in hit {
                self.pgs[p].allocs[i] = None;
                self.drop_alloc(n, tenant, 0.0);
            }
            if self.pgs[p].slice {
                // A slice is lost as a unit: give back what the group holds on the other hosts.
                for i in 0..self.pgs[p].allocs.len() {
                    if let Some(a) = self.pgs[p].allocs[i].take() {
                        self.free(&a, tenant);
                    }
                }
            }
            if self.pgs[p].lost_since.is_none() {
                self.pgs[p].lost_since = Some(now);
            }
            for j in self.pgs[p].jobs.clone() {
                self.stop_job(j as usize);
            }
        }
        // A crashed raylet refuses health checks at once: dead after `misses` checks, one
        // per `period` (Ray: 5 × 3 s ≈ 15 s).
        // Silent loss: each check waits its full timeout before counting as missed
        // (Ray: 5 × (10 s + 3 s) ≈ 65 s).
        let d = self.failures.detection;
        let per_miss = if silent {
            d.period.0 + d.timeout.0
        } else {
            d.period.0
        };
        self.q.after(
            per_miss.saturating_mul(u64::from(d.misses)),
            Ev::NodeDetected(n as u32, epoch),
        );
    }

    /// A GPU-level fault: the device leaves service; whatever used it fails at once (the
    /// process dies on the CUDA error, so the owner sees it without a health check) and is
    /// retried, restarted or re-placed right away; the node stays up.
    pub(crate) fn device_fault(&mut self, n: NodeId, dev: usize) {
        let now = self.now();
        if !self.state.nodes[n].alive() {
            return;
        }
        let Some((rid, k)) = self.state.fail_device(n, dev) else {
            return;
        };
        if let Some(d) = self.tl.device(n, dev) {
            self.tl.fail(&[d], now);
        }
        self.mark("xid", format!("{}.d{dev}", self.state.nodes[n].name()));
        let uses = |a: &crate::placement::Allocation| {
            a.node == n
                && a.instances
                    .iter()
                    .any(|(id, per)| *id == rid && per.get(k).is_some_and(|x| *x > 0))
        };
        for t in 0..self.task_alloc.len() {
            if !self.task_alloc[t].as_ref().is_some_and(uses) {
                continue;
            }
            self.record_task(t, now);
            let a = self.task_alloc[t].take().expect("checked");
            let gi = self.group_of(t as u32);
            let units = device_units(&self.state, &self.unit_ids, &self.groups[gi].request);
            self.failures.lost_device_ns += units * (now - self.task_start[t]) as f64;
            let tenant = self.groups[gi].tenant;
            self.free(&a, tenant);
            self.busy(n, -units, now);
            self.task_epoch[t] += 1;
            if self.task_retries[t] > 0 {
                self.task_retries[t] -= 1;
                self.failures.tasks_retried += 1;
                self.retry_task(t as u32);
            } else if self.task_rebuild[t] {
                self.task_rebuild[t] = false;
                self.failures.objects_lost += 1;
                self.unblock_dependents(gi);
            } else {
                self.failures.tasks_failed += 1;
                self.groups[gi].failed += 1;
                self.task_done_bookkeeping(gi);
            }
        }
        for a in 0..self.actors.len() {
            if !self.actors[a].alloc.as_ref().is_some_and(uses) {
                continue;
            }
            let alloc = self.actors[a].alloc.take().expect("checked");
            let g = self.actors[a].group;
            let units = device_units(&self.state, &self.unit_ids, &self.actors[a].request);
            self.free(&alloc, self.actor_groups[g].tenant);
            self.busy(n, -units, now);
            self.lose_actor_call(a);
            let ac = &mut self.actors[a];
            ac.epoch += 1;
            ac.node = None;
            if ac.restarts_left != 0 {
                if ac.restarts_left > 0 {
                    ac.restarts_left -= 1;
                }
                ac.submitted = now;
                self.failures.actors_restarted += 1;
                self.submit(Work::Actor(a as u32));
            } else {
                ac.dead = true;
                let left = std::mem::take(&mut ac.calls_left);
                self.actor_groups[ac.group].calls_failed += left;
                self.failures.actors_lost += 1;
            }
        }
        for r in 0..self.replicas.len() {
            if !self.replicas[r].alloc.as_ref().is_some_and(uses) {
                continue;
            }
            let s = self.replicas[r].service as usize;
            let alloc = self.replicas[r].alloc.take().expect("checked");
            let units = device_units(&self.state, &self.unit_ids, &self.services[s].request);
            self.free(&alloc, self.services[s].tenant);
            self.busy(n, -units, now);
            let rep = &mut self.replicas[r];
            rep.epoch += 1;
            rep.node = None;
            self.failures.requests_lost += rep.inflight.len() as u64;
            rep.inflight.clear();
            self.services[s].idle.retain(|x| *x as usize != r);
            self.failures.replicas_restarted += 1;
            self.submit(Work::Replica(r as u32));
        }
        for p in 0..self.pgs.len() {
            let hit: Vec<usize> = (0..self.pgs[p].allocs.len())
                .filter(|&i| self.pgs[p].allocs[i].as_ref().is_some_and(uses))
                .collect();
            if hit.is_empty() {
                continue;
            }
            let tenant = self.pgs[p].tenant;
            for j in self.pgs[p].jobs.clone() {
                self.stop_job(j as usize);
            }
            for i in hit {
                let a = self.pgs[p].allocs[i].take().expect("checked");
                self.free(&a, tenant);
            }
            if self.pgs[p].slice {
                for i in 0..self.pgs[p].allocs.len() {
                    if let Some(a) = self.pgs[p].allocs[i].take() {
                        self.free(&a, tenant);
                    }
                }
            }
            self.pgs[p].lost_since.get_or_insert(now);
            if !self.failures.lost_pgs.contains(&(p as u32)) {
                self.failures.lost_pgs.push(p as u32);
            }
        }
        self.dispatch(n);
    }

    /// NVLink on a node degraded to `f` of its bandwidth (1 restores it): collectives slow
    /// down from the next step; nothing fails.
    pub(crate) fn nvlink_degrade(&mut self, n: NodeId, f: f64) {
        if let Some(x) = self.failures.nvlink_factor.get_mut(n) {
            *x = f;
        }
        let what = if f < 1.0 {
            "nvlink_degraded"
        } else {
            "nvlink_restored"
        };
        self.mark(what, self.state.nodes[n].name().to_string());
        self.refresh_jobs_on(n);
    }

    /// A NIC or its link goes down. Losing the node's frontend NICs (or every NIC when it
    /// has no frontend one) cuts it off: the GCS sees silent health-check timeouts and
    /// declares it dead. Losing a compute NIC breaks the collectives of jobs on the node
    /// (NCCL errors out): they restart from their checkpoint on the same group, now with
    /// less network bandwidth. A storage NIC changes nothing the simulation models.
    pub(crate) fn nic_down(&mut self, n: NodeId, i: usize) {
        if !self.state.nodes[n].alive()
            || self.failures.nics[n].len() <= i
            || self.failures.nics_down[n].contains(&i)
        {
            return;
        }
        self.failures.nics_down[n].push(i);
        self.mark("nic_down", format!("{}.nic{i}", self.state.nodes[n].name()));
        let nics = &self.failures.nics[n];
        let frontend: Vec<usize> = (0..nics.len())
            .filter(|&k| nics[k].0 == "frontend")
            .collect();
        let down = &self.failures.nics_down[n];
        let cut_off = if frontend.is_empty() {
            (0..nics.len()).all(|k| down.contains(&k))
        } else {
            frontend.iter().all(|k| down.contains(k))
        };
        let compute = nics[i].0 == "compute";
        if cut_off {
            self.failures.cut_off[n] = true;
            self.node_crash_with(n, true);
        } else if compute {
            for j in 0..self.jobs.len() {
                let job = &self.jobs[j];
                if job.started.is_some()
                    && job.finished.is_none()
                    && job.stopped_at.is_none()
                    && self.pgs[job.pg as usize].nodes.contains(&n)
                {
                    self.stop_job(j);
                    self.start_job(j as u32);
                }
            }
        }
    }

    /// A NIC or link running at a fraction of its speed (1 restores it): collectives over the
    /// node slow down from the next step; nothing fails.
    pub(crate) fn nic_degrade(&mut self, n: NodeId, i: usize, f: f64) {
        if f >= 1.0 {
            self.failures.nic_factor.remove(&(n, i));
        } else {
            self.failures.nic_factor.insert((n, i), f);
        }
        let what = if f < 1.0 {
            "nic_degraded"
        } else {
            "nic_restored"
        };
        self.mark(what, format!("{}.nic{i}", self.state.nodes[n].name()));
        self.refresh_jobs_on(n);
    }

    pub(crate) fn nic_up(&mut self, n: NodeId, i: usize) {
        let Some(pos) = self
            .failures
            .nics_down
            .get(n)
            .and_then(|d| d.iter().position(|x| *x == i))
        else {
            return;
        };
        self.failures.nics_down[n].swap_remove(pos);
        self.mark("nic_up", format!("{}.nic{i}", self.state.nodes[n].name()));
        if std::mem::take(&mut self.failures.cut_off[n]) {
            self.node_repair(n);
        } else {
            self.refresh_jobs_on(n);
        }
    }

    pub(crate) fn device_repair(&mut self, n: NodeId, dev: usize) {
        if let Some(d) = self.tl.device(n, dev) {
            let now = self.now();
            self.tl.repair(&[d], now);
        }
        if self.state.repair_device(n, dev) {
            self.mark(
                "device_repaired",
                format!("{}.d{dev}", self.state.nodes[n].name()),
            );
            self.dispatch(n);
        }
    }

    /// Outputs of finished tasks stored on a node that died (lineage reconstruction, Ray's
    /// default): an output still needed by a dependent group with tasks yet to start is
    /// rebuilt by re-running the task that made it (counted against its `retries`, as Ray
    /// counts reconstruction against `max_retries`); the dependents' tasks that have not
    /// started wait until every lost input is back. Outputs nobody needs any more are not
    /// rebuilt. (Objects created by `ray.put` cannot be rebuilt; workloads here create none.)
    fn lose_outputs(&mut self, n: NodeId, epoch: u32) {
        for gi in 0..self.groups.len() {
            let g = &self.groups[gi];
            let ts = &self.spec.workloads[g.workload].tasks[g.index];
            let needy: Vec<u32> = g
                .dependents
                .iter()
                .copied()
                .filter(|d| self.groups[*d as usize].started < self.groups[*d as usize].count)
                .collect();
            if needy.is_empty() || ts.output.0 == 0 {
                continue;
            }
            for t in g.first..g.first + g.count {
                let t = t as usize;
                if !self.task_completed[t]
                    || self.task_rebuild[t]
                    || self.task_node[t] as usize != n
                {
                    continue;
                }
                self.task_rebuild[t] = true;
                for d in &needy {
                    self.groups[*d as usize].blocked += 1;
                }
                self.failures.lost.push((n, epoch, Work::Task(t as u32)));
            }
        }
    }

    /// A lost output was rebuilt: unblock its consumers.
    pub(crate) fn rebuilt(&mut self, t: u32, gi: usize, node: NodeId) {
        let now = self.now();
        self.task_rebuild[t as usize] = false;
        if let Some(a) = self.task_alloc[t as usize].take() {
            self.free(&a, self.groups[gi].tenant);
        }
        let units = device_units(&self.state, &self.unit_ids, &self.groups[gi].request);
        self.busy(node, -units, now);
        self.failures.objects_rebuilt += 1;
        self.store_output(t, gi, node);
        self.unblock_dependents(gi);
        self.dispatch(node);
    }

    /// One lost input of each dependent of `gi` is settled (rebuilt, or given up on).
    fn unblock_dependents(&mut self, gi: usize) {
        for d in self.groups[gi].dependents.clone() {
            let g = &mut self.groups[d as usize];
            if g.blocked > 0 {
                g.blocked -= 1;
                if g.blocked == 0 {
                    self.kick_class(d);
                }
            }
        }
    }

    /// A task group that was blocked may run again: place its waiting tasks with the full
    /// policy (resources may have freed anywhere while it was blocked).
    fn kick_class(&mut self, g: u32) {
        let Some(k) = self
            .pending
            .iter()
            .position(|(key, _)| *key == Work::Task(g))
        else {
            return;
        };
        let waiting: Vec<u32> = self.pending[k].1.drain(..).collect();
        for t in waiting {
            self.submit(Work::Task(t));
        }
    }

    /// An actor died with a method call running: Ray retries it on the restarted actor while
    /// `max_task_retries` allows (default 0: the call fails).
    fn lose_actor_call(&mut self, a: usize) {
        let ac = &mut self.actors[a];
        if ac.calls_left == 0 || ac.dead {
            return;
        }
        if ac.task_retries_left != 0 {
            if ac.task_retries_left > 0 {
                ac.task_retries_left -= 1;
            }
        } else {
            ac.calls_left -= 1;
            self.actor_groups[ac.group].calls_failed += 1;
        }
    }

    /// A failure hit the job's group: the job stops, losing the work since its checkpoint.
    fn stop_job(&mut self, j: usize) {
        let now = self.now();
        let job = &self.jobs[j];
        if job.finished.is_some() || job.stopped_at.is_some() || job.started.is_none() {
            return;
        }
        let pg = job.pg as usize;
        // Devices of the group stop being busy (the lost ones already were dropped).
        for (b, node) in self.pgs[pg]
            .bundles
            .clone()
            .iter()
            .zip(self.pgs[pg].nodes.clone())
        {
            let units = device_units(&self.state, &self.unit_ids, b);
            self.busy(node, -units, now);
        }
        let job = &mut self.jobs[j];
        if now < job.ckpt_at {
            // The checkpoint being written is incomplete: the previous one is the last good one.
            job.ckpt_steps = job.prev_ckpt_steps;
            job.ckpt_at = job.prev_ckpt_at;
        }
        // Work since the later of the last good checkpoint and the moment computing resumed
        // (a job still loading its checkpoint has computed nothing since).
        let since = job.ckpt_at.max(job.progress_from);
        let lost = f64::from(job.devices) * now.saturating_sub(since) as f64;
        job.lost_device_ns += lost;
        self.failures.lost_device_ns += lost;
        let redo = job.steps_done - job.ckpt_steps;
        job.steps_done = job.ckpt_steps;
        job.steps_left += redo;
        job.epoch += 1;
        job.stopped_at = Some(now);
        let (w, i) = (self.jobs[j].workload, self.jobs[j].index);
        let name = format!(
            "{}.{}",
            self.spec.workloads[w].name, self.spec.workloads[w].training[i].name
        );
        self.mark("job_stopped", name);
    }

    pub(crate) fn node_detected(&mut self, n: NodeId, epoch: u32) {
        let now = self.now();
        if let Some(since) = self.failures.crash_times.remove(&(n, epoch)) {
            self.failures.detect_times.push((now - since) as f64 / 1e9);
        }
        self.mark("detected", self.state.nodes[n].name().to_string());
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.failures.lost)
            .into_iter()
            .partition(|(node, e, _)| *node == n && *e == epoch);
        self.failures.lost = rest;
        for (_, _, w) in mine {
            match w {
                Work::Task(t) => {
                    if self.task_retries[t as usize] > 0 {
                        self.task_retries[t as usize] -= 1;
                        self.failures.tasks_retried += 1;
                        self.retry_task(t);
                    } else if self.task_rebuild[t as usize] {
                        // Ray raises ObjectLostError in the consumers; the simulation lets
                        // them run and counts the object as lost.
                        self.task_rebuild[t as usize] = false;
                        self.failures.objects_lost += 1;
                        let gi = self.group_of(t);
                        self.unblock_dependents(gi);
                    } else {
                        self.failures.tasks_failed += 1;
                        let gi = self.group_of(t);
                        self.groups[gi].failed += 1;
                        self.task_done_bookkeeping(gi);
                    }
                }
                Work::Actor(a) => {
                    let ac = &mut self.actors[a as usize];
                    if ac.restarts_left != 0 {
                        if ac.restarts_left > 0 {
                            ac.restarts_left -= 1;
                        }
                        ac.submitted = now;
                        self.failures.actors_restarted += 1;
                        self.submit(Work::Actor(a));
                    } else {
                        ac.dead = true;
                        let left = std::mem::take(&mut ac.calls_left);
                        self.actor_groups[ac.group].calls_failed += left;
                        self.failures.actors_lost += 1;
                    }
                }
                Work::Replica(r) => {
                    self.failures.replicas_restarted += 1;
                    self.submit(Work::Replica(r));
                }
            }
        }
        // Lost bundles are rescheduled when the node is declared dead, ahead of other work.
        for p in 0..self.pgs.len() {
            if self.pgs[p].lost_since.is_some()
                && !self.failures.lost_pgs.contains(&(p as u32))
                && self.pgs[p].nodes.contains(&n)
            {
                self.failures.lost_pgs.push(p as u32);
            }
        }
        self.repair_pgs();
    }

    pub(crate) fn node_repair(&mut self, n: NodeId) {
        if n == self.state.head && !self.failures.cluster_down.is_empty() {
            // The cluster comes back with its head: every node rejoins.
            for m in std::mem::take(&mut self.failures.cluster_down) {
                self.node_repair_one(m);
            }
            return;
        }
        self.node_repair_one(n);
    }

    fn node_repair_one(&mut self, n: NodeId) {
        let now = self.now();
        if self.state.nodes[n].alive() {
            return;
        }
        let devs = self.tl.node_devices(n);
        self.tl.repair(&devs, now);
        if let Some(since) = self.failures.down_since[n].take() {
            self.failures.node_down_ns += (now - since) as f64;
        }
        self.mark("repaired", self.state.nodes[n].name().to_string());
        self.state.reset(n);
        self.state.set_alive(n, true);
        // Only this node became available: `dispatch` re-places lost bundles first, then
        // every waiting class (see the module docs of `sim`).
        self.dispatch(n);
    }

    /// A slice group lost its slice: take the first intact slice whose gang fits.
    fn repair_slice_pg(&mut self, p: usize) {
        let Some((bundles, selector)) = self.slice_gang(p as u32) else {
            return;
        };
        let pg = &self.pgs[p];
        let br = BundleRequest {
            bundles: &bundles,
            strategy: PgStrategy::Pack,
            tenant: pg.tenant,
            policy: pg.policy,
            label_selector: &selector,
        };
        let PgDecision::Placed(nodes) = crate::placement::place_bundles(&self.state, &br, None)
        else {
            return;
        };
        let (tenant, policy) = (pg.tenant, pg.policy);
        let Some(allocs) = self.allocate_all(&bundles, &nodes, tenant, policy) else {
            return;
        };
        self.failures.bundles_rescheduled += bundles.len() as u64;
        self.mark("bundles_rescheduled", self.pg_name(p));
        let pg = &mut self.pgs[p];
        pg.bundles = bundles;
        pg.nodes = nodes;
        pg.allocs = allocs.into_iter().map(Some).collect();
        pg.lost_since = None;
        self.failures.lost_pgs.retain(|x| *x as usize != p);
        for j in self.pgs[p].jobs.clone() {
            if self.jobs[j as usize].stopped_at.is_some() {
                self.start_job(j);
            }
        }
    }

    fn pg_name(&self, p: usize) -> String {
        let pg = &self.pgs[p];
        format!(
            "{}.{}",
            self.spec.workloads[pg.workload].name,
            self.spec.workloads[pg.workload].placement_groups[pg.index].name
        )
    }

    /// Try to re-place the lost bundles of every group waiting for them, in order.
    pub(crate) fn repair_pgs(&mut self) {
        let list = self.failures.lost_pgs.clone();
        for p in list {
            self.repair_pg(p as usize);
        }
    }

    fn repair_pg(&mut self, p: usize) {
        if self.pgs[p].slice {
            self.repair_slice_pg(p);
            return;
        }
        let lost: Vec<usize> = (0..self.pgs[p].allocs.len())
            .filter(|&i| self.pgs[p].allocs[i].is_none())
            .collect();
        if lost.is_empty() {
            self.failures.lost_pgs.retain(|x| *x as usize != p);
            return;
        }
        let pg = &self.pgs[p];
        let subset: Vec<_> = lost.iter().map(|&i| pg.bundles[i].clone()).collect();
        // STRICT_SPREAD: the replacements must avoid the nodes the group still holds.
        let mut selector: Vec<LabelConstraint> = Vec::new();
        if pg.strategy == PgStrategy::StrictSpread {
            let held: Vec<String> = (0..pg.allocs.len())
                .filter(|i| pg.allocs[*i].is_some())
                .map(|i| self.state.nodes[pg.nodes[i]].name().to_string())
                .collect();
            if !held.is_empty() {
                selector.push(LabelConstraint {
                    key: "ray.io/node-id".into(),
                    op: LabelOp::NotIn(held),
                });
            }
        }
        let br = BundleRequest {
            bundles: &subset,
            strategy: pg.strategy,
            tenant: pg.tenant,
            policy: pg.policy,
            label_selector: &selector,
        };
        let PgDecision::Placed(nodes) = crate::placement::place_bundles(&self.state, &br, None)
        else {
            return;
        };
        let (tenant, policy) = (pg.tenant, pg.policy);
        let Some(allocs) = self.allocate_all(&subset, &nodes, tenant, policy) else {
            return;
        };
        for ((&i, node), a) in lost.iter().zip(nodes).zip(allocs) {
            self.pgs[p].nodes[i] = node;
            self.pgs[p].allocs[i] = Some(a);
            self.failures.bundles_rescheduled += 1;
        }
        self.mark("bundles_rescheduled", self.pg_name(p));
        self.pgs[p].lost_since = None;
        self.failures.lost_pgs.retain(|x| *x as usize != p);
        for j in self.pgs[p].jobs.clone() {
            if self.jobs[j as usize].stopped_at.is_some() {
                self.start_job(j);
            }
        }
    }
}
