//! The end of a run: the invariant checks (conservation of tasks, nothing held on a dead
//! node) and the metrics of every workload kind, failure and utilization in a [`RunResult`].
//!
//! Architecture invariant: schedules no events and changes no cluster state.

use super::{RunResult, Sim, Work, metrics};
use crate::placement::NodeId;
use crate::sim::World;
use crate::sim::placement_groups::PlacementGroups;
use metrics::*;
use std::collections::BTreeMap;

impl Sim<'_> {
    /// Conservation and liveness checks at the end of a run: every task is exactly one of
    /// completed, failed, infeasible, running, waiting, awaiting retry or not yet submitted;
    /// nothing holds resources on a dead node.
    pub(super) fn check_invariants(&mut self) {
        let mut v = Vec::new();
        for (gi, g) in self.tasks.groups.iter().enumerate() {
            let range = g.first as usize..(g.first + g.count) as usize;
            let completed = g.run.count();
            let running = range
                .clone()
                .filter(|&t| self.tasks.alloc[t].is_some() && !self.tasks.rebuild[t])
                .count() as u64;
            let waiting = self
                .w
                .pending
                .iter()
                .filter(|(k, _)| *k == Work::Task(gi as u32))
                .map(|(_, q)| {
                    q.iter()
                        .filter(|t| !self.tasks.rebuild[**t as usize])
                        .count() as u64
                })
                .sum::<u64>();
            let retrying = self
                .failures
                .lost
                .iter()
                .filter(|(_, _, w)| matches!(w, Work::Task(t) if range.contains(&(*t as usize)) && !self.tasks.rebuild[*t as usize]))
                .count() as u64;
            let unsubmitted = (if g.deps_left > 0 {
                u64::from(g.count)
            } else {
                0
            }) + u64::from(g.delayed);
            let total =
                completed + g.failed + g.infeasible + running + waiting + retrying + unsubmitted;
            if total != u64::from(g.count) {
                v.push(format!("task group {gi}: {completed} completed + {} failed + {} infeasible + {running} running + {waiting} waiting + {retrying} retrying + {unsubmitted} unsubmitted != {} submitted", g.failed, g.infeasible, g.count));
            }
            if u64::from(g.done) != completed + g.failed + g.infeasible {
                v.push(format!(
                    "task group {gi}: done counter {} != completed + failed + infeasible",
                    g.done
                ));
            }
            let flagged = self.tasks.completed[range].iter().filter(|c| **c).count() as u64;
            if flagged != completed {
                v.push(format!("task group {gi}: {flagged} tasks flagged complete but {completed} completions counted"));
            }
        }
        let dead = |n: NodeId| !self.w.state.nodes[n].alive();
        for (t, a) in self.tasks.alloc.iter().enumerate() {
            if let Some(a) = a
                && dead(a.node)
            {
                v.push(format!("task {t} holds resources on dead node {}", a.node));
            }
        }
        for (i, a) in self.actors.list.iter().enumerate() {
            if let Some(al) = &a.alloc
                && dead(al.node)
            {
                v.push(format!(
                    "actor {i} holds resources on dead node {}",
                    al.node
                ));
            }
        }
        for (i, r) in self.services.replicas.iter().enumerate() {
            if let Some(al) = &r.alloc
                && dead(al.node)
            {
                v.push(format!(
                    "replica {i} holds resources on dead node {}",
                    al.node
                ));
            }
        }
        for (i, p) in self.pgs.list.iter().enumerate() {
            for al in p.allocs.iter().flatten() {
                if dead(al.node) {
                    v.push(format!(
                        "placement group {i} holds a bundle on dead node {}",
                        al.node
                    ));
                }
            }
        }
        self.w.violations.extend(v);
    }

    pub(super) fn finish(mut self) -> RunResult {
        self.check_invariants();
        let spec = self.w.spec;
        // The window ends at the horizon; else when the work did (a failure scheduled after it
        // does not stretch utilization); else, if no work finished, at the last event, so that
        // availability still covers the failures.
        let end = self
            .w
            .horizon
            .unwrap_or(if self.w.makespan > 0 {
                self.w.makespan
            } else {
                self.w.q.now()
            })
            .max(self.w.makespan);
        let mut tl = std::mem::take(&mut self.w.tl).finish(end);
        let mut m = RunMetrics {
            makespan: self.w.makespan as f64 / 1e9,
            horizon: end as f64 / 1e9,
            events: self.w.q.processed(),
            ..RunMetrics::default()
        };
        for g in &mut self.tasks.groups {
            let w = &spec.workloads[g.workload];
            m.tasks.push(TaskGroupMetrics {
                workload: w.name.clone(),
                name: w.tasks[g.index].name.clone(),
                submitted: u64::from(g.count),
                completed: g.run.count(),
                infeasible: g.infeasible,
                queueing_delay: g.queueing.stats(),
                run_time: g.run.stats(),
                queueing_samples: g.queueing.samples(),
                first_start: g.first_start.map(|t| t as f64 / 1e9).unwrap_or(0.0),
                last_end: g.last_end as f64 / 1e9,
            });
        }
        m.placement_groups = self.pgs.pg_metrics(&self.w, end);
        for job in &self.jobs.list {
            let w = &spec.workloads[job.workload];
            // Communication per step: the mean over every step that finished (on a shared
            // network it varies with what else is on the wire); the last step's when none did.
            let comm = if job.comm_steps > 0 {
                job.comm_total as f64 / job.comm_steps as f64
            } else {
                job.comm_ns as f64
            };
            let traffic = if job.comm_steps > 0 {
                job.traffic_total as f64 / job.comm_steps as f64
            } else {
                job.comm_ns as f64
            };
            let step = (job.compute_ns as f64 + comm) / 1e9;
            let wall = job
                .started
                .map(|s| (job.finished.unwrap_or(end) - s) as f64 / 1e9)
                .unwrap_or(0.0);
            let compute = job.compute_ns as f64 * job.steps_done as f64 / 1e9;
            // A job still stopped at the end stalls until then.
            let open_stall = job
                .recovering_from
                .or(job.stopped_at)
                .filter(|_| job.finished.is_none())
                .map_or(0.0, |from| {
                    f64::from(job.devices) * end.saturating_sub(from) as f64
                });
            let stalled = job.stalled_device_ns + open_stall;
            self.w.losses.stalled_device_ns += open_stall;
            m.training.push(TrainingMetrics {
                workload: w.name.clone(),
                name: w.training[job.index].name.clone(),
                devices: job.devices,
                nodes: job.nodes,
                steps_done: job.steps_done,
                step_time: step,
                compute_time: compute,
                communication_time: traffic * job.steps_done as f64 / 1e9,
                exposed_comm_time: comm * job.steps_done as f64 / 1e9,
                checkpoint_time: job.ckpt_total as f64 / 1e9,
                bubble_time: job
                    .model
                    .as_ref()
                    .map_or(0.0, |x| x.bubble_ns as f64 * job.steps_done as f64 / 1e9),
                tokens_per_s: job
                    .model
                    .as_ref()
                    .filter(|_| step > 0.0)
                    .map(|x| x.tokens / step),
                mfu: job
                    .model
                    .as_ref()
                    .filter(|x| step > 0.0 && x.peak_flops > 0.0)
                    .map(|x| x.model_flop / (step * x.peak_flops)),
                started: job.started.map(|s| s as f64 / 1e9).unwrap_or(0.0),
                finished: job.finished.map(|f| f as f64 / 1e9),
                // Runtime goodput: the kept steps' time over the job's wall time.
                goodput: if wall > 0.0 {
                    (job.steps_done as f64 * step / wall).min(1.0)
                } else {
                    0.0
                },
                restarts: job.restarts,
                lost_device_hours: (job.lost_device_ns + stalled) / 3.6e12,
                lost_work_device_hours: job.lost_device_ns / 3.6e12,
                stalled_device_hours: stalled / 3.6e12,
            });
        }
        m.llm_services = self.services.llm_metrics(&self.w, end);
        for s in &mut self.services.list {
            let w = &spec.workloads[s.workload];
            let sv = &w.services[s.index];
            if sv.llm.is_some() {
                continue;
            }
            let lat = s.latencies.stats();
            let waiting = s.waits.stats();
            let slo: Vec<(String, f64, f64, bool)> = sv
                .slo
                .iter()
                .enumerate()
                .map(|(i, (p, d))| {
                    let measured = match p.as_str() {
                        "p50" => lat.p50,
                        "p90" => lat.p90,
                        "p99" => lat.p99,
                        _ => lat.p999,
                    };
                    let target = d.0 as f64 / 1e9;
                    let within = s.latencies.within(i);
                    let met =
                        s.arrived == 0 || within as f64 >= super::percentile(p) * s.arrived as f64;
                    (p.clone(), target, measured, met)
                })
                .collect();
            let served_within_slo: Vec<u64> =
                (0..sv.slo.len()).map(|i| s.latencies.within(i)).collect();
            // Within the tightest target: the fewest any SLO counts.
            let within = served_within_slo.iter().copied().min().unwrap_or(0);
            m.services.push(ServiceMetrics {
                workload: w.name.clone(),
                name: sv.name.clone(),
                replicas_placed: s
                    .replicas
                    .iter()
                    .filter(|r| self.services.replicas[**r as usize].node.is_some())
                    .count() as u32,
                arrived: s.arrived,
                served: lat.count,
                throughput: if end > 0 {
                    lat.count as f64 / (end as f64 / 1e9)
                } else {
                    0.0
                },
                wait_probability: if waiting.count > 0 {
                    1.0 - s.waits.within(0) as f64 / waiting.count as f64
                } else {
                    0.0
                },
                mean_queue_length: if end > 0 {
                    waiting.mean * waiting.count as f64 / (end as f64 / 1e9)
                } else {
                    0.0
                },
                waiting,
                latency_samples: s.latencies.samples(),
                latency: lat,
                slo,
                served_within_slo,
                slo_violation_fraction: if s.arrived == 0 || sv.slo.is_empty() {
                    0.0
                } else {
                    s.arrived.saturating_sub(within) as f64 / s.arrived as f64
                },
            });
        }
        for g in &mut self.actors.groups {
            let w = &spec.workloads[g.workload];
            m.actors.push(ActorMetrics {
                workload: w.name.clone(),
                name: w.actors[g.index].name.clone(),
                placed: g.placed,
                infeasible: g.infeasible,
                calls_done: g.calls_done,
                calls_failed: g.calls_failed,
                placement_delay: g.delays.stats(),
                tensors: g.tensors,
                tensor_bytes: g.tensor_bytes,
                tensor_time: g.tensor_secs,
            });
        }
        let (mut devices, mut by_type) = (BTreeMap::new(), BTreeMap::new());
        for a in self.w.node_accel.iter().zip(&self.w.node_types) {
            if let (Some(acc), nt) = a {
                *devices.entry(acc.clone()).or_insert(0) += u64::from(nt.device_count());
                *by_type.entry(nt.name.clone()).or_insert(0) += u64::from(nt.device_count());
            }
        }
        let usage = std::mem::take(&mut self.w.usage);
        (m.utilization, m.utilization_by_node_type) = usage.finish(&devices, &by_type, end);
        (m.cpu_utilization, m.cpu_utilization_by_node_type) = self.w.cpu_utilization(end);
        m.cluster = super::cost::cluster(spec, &self.w.node_types, m.horizon);
        let (links, series) = self.w.wire.link_metrics(end);
        m.links = links;
        tl.links = series;
        m.fetches = self
            .tasks
            .groups
            .iter()
            .filter(|g| g.fetches > 0)
            .map(|g| {
                let w = &spec.workloads[g.workload];
                FetchMetrics {
                    workload: w.name.clone(),
                    name: w.tasks[g.index].name.clone(),
                    fetches: g.fetches,
                    remote_bytes: g.fetched_bytes,
                    mean_secs: g.fetch_ns as f64 / 1e9 / g.fetches as f64,
                }
            })
            .collect();
        m.quota_waits = self
            .w
            .quota
            .wait
            .iter()
            .map(|(t, (n, ns))| QuotaWait {
                tenant: spec.tenants[*t].name.clone(),
                waited: *n,
                total_secs: *ns as f64 / 1e9,
                mean_secs: *ns as f64 / 1e9 / (*n).max(1) as f64,
            })
            .collect();
        m.objects = ObjectMetrics {
            spilled_objects: self.w.store.spilled_objects,
            spilled_bytes: self.w.store.spilled_bytes,
            spill_time: self.w.store.spill_secs,
            restore_time: self.w.store.restore_secs,
            peak_store_fraction: self.w.store.peak_fraction,
        };
        let (f, lost) = (&mut self.failures, &mut self.w.losses);
        let nodes = self.w.node_types.len() as f64;
        let still_down: f64 = f
            .down_since
            .iter()
            .flatten()
            .map(|s| end.saturating_sub(*s) as f64)
            .sum();
        let node_time = nodes * end as f64;
        m.failures = FailureMetrics {
            node_failures: f.crashes,
            time_to_detect: f.detect_times.stats(),
            time_to_recover: lost.recovery.stats(),
            tasks_retried: f.tasks_retried,
            tasks_failed: lost.tasks_failed,
            actors_restarted: f.actors_restarted,
            actors_lost: f.actors_lost,
            replicas_restarted: f.replicas_restarted,
            requests_lost: lost.requests_lost,
            transfers_unavailable: lost.transfers_unavailable,
            objects_rebuilt: f.objects_rebuilt,
            objects_lost: f.objects_lost,
            bundles_rescheduled: f.bundles_rescheduled,
            lost_device_hours: (f.lost_device_ns + lost.stalled_device_ns) / 3.6e12,
            lost_work_device_hours: f.lost_device_ns / 3.6e12,
            stalled_device_hours: lost.stalled_device_ns / 3.6e12,
            node_availability: if node_time > 0.0 {
                1.0 - (f.node_down_ns + still_down) / node_time
            } else {
                1.0
            },
            unsimulated: f.unsimulated.clone(),
            timeline: std::mem::take(&mut lost.timeline),
        };
        RunResult {
            metrics: m,
            explain: self.w.explain,
            trace: self.w.trace.unwrap_or_default(),
            transfers: self.w.transfers.unwrap_or_default(),
            timeline: tl,
            violations: self.w.violations,
            model_sources: crate::compute::model_sources(spec),
            network_models: std::mem::take(&mut self.w.net.notes).into_iter().collect(),
            wire: super::WireTotals {
                flows: self.w.wire.flows_started,
                bytes: self.w.wire.bytes,
                peak_active: self.w.wire.peak_active,
            },
        }
    }
}

impl PlacementGroups {
    /// Each placement group's state at the end (`end`: when the window closed).
    fn pg_metrics(&self, world: &World<'_>, end: crate::engine::Time) -> Vec<PgMetrics> {
        let spec = world.spec;
        let mut out = Vec::with_capacity(self.list.len());
        for pg in &self.list {
            let w = &spec.workloads[pg.workload];
            let racks = |nodes: &[NodeId]| {
                let mut r: Vec<usize> =
                    nodes.iter().map(|n| world.state.nodes[*n].rack()).collect();
                r.sort_unstable();
                r.dedup();
                r.len()
            };
            let names = |nodes: &[NodeId]| {
                nodes
                    .iter()
                    .map(|n| world.state.nodes[*n].name().to_string())
                    .collect()
            };
            out.push(PgMetrics {
                workload: w.name.clone(),
                name: w.placement_groups[pg.index].name.clone(),
                bundles: pg.bundles.len(),
                state: if pg.created.is_some() {
                    "created"
                } else if pg.infeasible {
                    "infeasible"
                } else {
                    "pending"
                }
                .into(),
                pending_time: (pg.created.unwrap_or(end) - pg.requested) as f64 / 1e9,
                attempts: pg.attempts,
                nodes: names(&pg.nodes),
                racks: racks(&pg.nodes),
                nodes_at_creation: names(&pg.created_nodes),
                racks_at_creation: racks(&pg.created_nodes),
                option: pg.created.map(|_| pg.option),
                domain: pg
                    .domain
                    .as_ref()
                    .zip(pg.domain_value.as_ref())
                    .map(|(k, v)| format!("{k}={v}")),
            });
        }
        out
    }
}
