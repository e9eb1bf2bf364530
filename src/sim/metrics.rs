//! What a run measures, as data (plots come later): per task group, placement group,
//! training job and service, plus device utilization over time per device class.

use serde::Serialize;
use std::collections::BTreeMap;

pub use super::utilization::{CpuUtilization, UtilTracker, Utilization};

/// Summary statistics of a sample of durations (seconds).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Stats {
    pub count: u64,
    #[serde(rename = "mean_s")]
    pub mean: f64,
    #[serde(rename = "p50_s")]
    pub p50: f64,
    #[serde(rename = "p90_s")]
    pub p90: f64,
    #[serde(rename = "p99_s")]
    pub p99: f64,
    #[serde(rename = "p999_s")]
    pub p999: f64,
    #[serde(rename = "max_s")]
    pub max: f64,
    /// Bound on the relative error of p50 … p999: 0 when they are exact (nearest rank), else
    /// the HDR histogram's (`sim::durations`), which they exceed the exact values by at most.
    #[serde(rename = "quantile_error_fraction")]
    pub quantile_rel_error: f64,
}

/// Most raw samples a metric keeps for plots.
pub const MAX_SAMPLES: usize = 4096;

/// At most [`MAX_SAMPLES`] of ascending `sorted`: all of them, or evenly spaced ranks with the
/// first and last kept (deterministic: a function of the sorted values only).
pub fn bounded_samples(sorted: &[f64]) -> Vec<f64> {
    let n = sorted.len();
    if n <= MAX_SAMPLES {
        return sorted.to_vec();
    }
    (0..MAX_SAMPLES)
        .map(|i| sorted[i * (n - 1) / (MAX_SAMPLES - 1)])
        .collect()
}

impl Stats {
    /// Exact order statistics ([`crate::quantile`], nearest rank) of `xs` in seconds.
    pub fn of(xs: &mut [f64]) -> Stats {
        if xs.is_empty() {
            return Stats::default();
        }
        xs.sort_by(f64::total_cmp);
        let q = |p: f64| crate::quantile::of_sorted(xs, p);
        Stats {
            count: xs.len() as u64,
            mean: xs.iter().sum::<f64>() / xs.len() as f64,
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            max: xs[xs.len() - 1],
            quantile_rel_error: 0.0,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TaskGroupMetrics {
    pub workload: String,
    pub name: String,
    pub submitted: u64,
    pub completed: u64,
    /// Tasks no node could ever run (reported, never placed).
    pub infeasible: u64,
    /// Ready (dependencies met) → running, seconds.
    pub queueing_delay: Stats,
    /// Running → done, seconds (input fetch included).
    pub run_time: Stats,
    /// Queueing delays (s) for the CDF plot: all of them, or [`MAX_SAMPLES`] evenly spaced
    /// order statistics (the extremes kept), in ascending order. Not in `run.json`.
    #[serde(skip)]
    pub queueing_samples: Vec<f64>,
    #[serde(rename = "first_start_s")]
    pub first_start: f64,
    #[serde(rename = "last_end_s")]
    pub last_end: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct PgMetrics {
    pub workload: String,
    pub name: String,
    pub bundles: usize,
    /// "created", "pending" (never fit during the run) or "infeasible".
    pub state: String,
    /// Seconds from request to creation (or to the end of the run if never created).
    #[serde(rename = "pending_time_s")]
    pub pending_time: f64,
    pub attempts: u64,
    /// Each bundle's node at the end of the run (a failure may have moved some).
    pub nodes: Vec<String>,
    pub racks: usize,
    /// Each bundle's node when the group was created (what the policy chose), and its racks.
    pub nodes_at_creation: Vec<String>,
    pub racks_at_creation: usize,
    /// Which option the group was created with: 0 its own bundles, k its k-th `fallback`
    /// (Ray's fallback strategy); absent until created.
    #[serde(rename = "option_index")]
    pub option: Option<usize>,
    /// `LABEL=VALUE`: the domain its topology strategy put it in; absent without one.
    pub domain: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TrainingMetrics {
    pub workload: String,
    pub name: String,
    pub devices: u32,
    pub nodes: usize,
    pub steps_done: u64,
    #[serde(rename = "step_time_s")]
    pub step_time: f64,
    #[serde(rename = "compute_time_s")]
    pub compute_time: f64,
    /// Seconds some of the job's communication was in flight (overlapped with its compute
    /// or not), over its steps.
    #[serde(rename = "communication_time_s")]
    pub communication_time: f64,
    /// Of the step time, what is not compute: communication the compute did not hide (step
    /// time − compute time), over its steps; `communication_time_s` without overlap.
    #[serde(rename = "exposed_comm_time_s")]
    pub exposed_comm_time: f64,
    #[serde(rename = "checkpoint_time_s")]
    pub checkpoint_time: f64,
    /// Of the compute time, the pipeline bubble (a model-level job's stages idle while the
    /// pipeline fills and drains); 0 for a job declared by its FLOP.
    #[serde(rename = "bubble_time_s")]
    pub bubble_time: f64,
    /// Model-level jobs only: tokens trained per second of step time, and the model FLOP
    /// utilization (model FLOP of a step, without recomputation, over the step time and the
    /// devices' dense peak).
    pub tokens_per_s: Option<f64>,
    pub mfu: Option<f64>,
    #[serde(rename = "started_s")]
    pub started: f64,
    #[serde(rename = "finished_s")]
    pub finished: Option<f64>,
    /// Runtime goodput: the time of the steps kept (steps kept × mean step time) over the
    /// job's wall time (its start to its finish, or the window's end), so checkpoint writes,
    /// restarts, stalls and work lost to failures count against it and a job that never
    /// failed nor checkpointed has 1 (Google Cloud, "Introducing ML Productivity Goodput",
    /// 2024-04-10, its Runtime Goodput; docs.cloud.google.com/tpu/docs/goodput: "time spent
    /// making productive, preserved training progress").
    pub goodput: f64,
    pub restarts: u64,
    /// Device-hours failures cost the job: `lost_work_device_hours + stalled_device_hours`.
    pub lost_device_hours: f64,
    /// Device-hours of computed work thrown away (since the last good checkpoint).
    pub lost_work_device_hours: f64,
    /// Device-hours its devices sat stalled waiting on recovery: from the stop (the failure)
    /// until it computes again (detection, rescheduling, checkpoint load), or until the end of
    /// the window if it never does, at the job's device count.
    pub stalled_device_hours: f64,
}

/// In `run.json` each SLO is one object (`SloJson`) rather than the tuple and the parallel
/// `served_within_slo` list, so no figure's meaning hangs on its position.
#[derive(Debug, Clone, Default)]
pub struct ServiceMetrics {
    pub workload: String,
    pub name: String,
    pub replicas_placed: u32,
    pub arrived: u64,
    pub served: u64,
    /// Requests served per second of the window.
    pub throughput: f64,
    pub latency: Stats,
    pub waiting: Stats,
    /// P(wait > 0): the fraction of the requests that started that waited for a replica
    /// (for M/M/c, Erlang C's C(c, a); `tests/all/sim.rs`).
    pub wait_probability: f64,
    /// Mean number of requests waiting for a replica over the window: their waits summed / W
    /// (Little's law, L_q = λ W_q).
    pub mean_queue_length: f64,
    /// Request latencies (s) for the CDF plot, bounded as
    /// [`TaskGroupMetrics::queueing_samples`]. Not in `run.json`.
    pub latency_samples: Vec<f64>,
    /// Per SLO: (percentile, target seconds, measured seconds over the served requests, met).
    /// Met when the SLO's attainment (below) reaches its percentile: a request that arrived
    /// and was never served counts against it like one served too late.
    pub slo: Vec<(String, f64, f64, bool)>,
    /// Per SLO (in `slo` order): requests served within its target.
    pub served_within_slo: Vec<u64>,
    /// Fraction of arrived requests not served within the tightest SLO target: served too
    /// late, lost to a failure, or still queued or in flight at the end of the window.
    pub slo_violation_fraction: f64,
}

/// One SLO of a service as `run.json` writes it.
#[derive(Serialize)]
struct SloJson<'a> {
    /// `p99`, `p50`, ...
    percentile: &'a str,
    target_s: f64,
    /// The percentile of the served requests' latencies.
    measured_s: f64,
    served_within_slo: u64,
    met: bool,
}

impl Serialize for ServiceMetrics {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            workload: &'a str,
            name: &'a str,
            replicas_placed: u32,
            arrived: u64,
            served: u64,
            throughput_per_s: f64,
            latency: &'a Stats,
            waiting: &'a Stats,
            wait_probability_fraction: f64,
            mean_queue_length_requests: f64,
            slo: Vec<SloJson<'a>>,
            slo_violation_fraction: f64,
        }
        Json {
            workload: &self.workload,
            name: &self.name,
            replicas_placed: self.replicas_placed,
            arrived: self.arrived,
            served: self.served,
            throughput_per_s: self.throughput,
            latency: &self.latency,
            waiting: &self.waiting,
            wait_probability_fraction: self.wait_probability,
            mean_queue_length_requests: self.mean_queue_length,
            slo: self
                .slo
                .iter()
                .enumerate()
                .map(|(i, (p, target, measured, met))| SloJson {
                    percentile: p,
                    target_s: *target,
                    measured_s: *measured,
                    served_within_slo: self.served_within_slo.get(i).copied().unwrap_or(0),
                    met: *met,
                })
                .collect(),
            slo_violation_fraction: self.slo_violation_fraction,
        }
        .serialize(ser)
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ActorMetrics {
    pub workload: String,
    pub name: String,
    pub placed: u64,
    pub infeasible: u64,
    pub calls_done: u64,
    /// Method calls lost with the actor and not retried (`max_task_retries`).
    pub calls_failed: u64,
    pub placement_delay: Stats,
    /// Tensors its calls delivered (`tensor ... to`), their bytes, and their seconds from
    /// the end of a call's compute to the tensor's arrival, summed.
    pub tensors: u64,
    pub tensor_bytes: f64,
    #[serde(rename = "tensor_time_s")]
    pub tensor_time: f64,
}

/// Traffic of one class of links over the run (`sim::links` says how it is measured).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct LinkClassMetrics {
    /// Directed links of the class in the cluster's graph.
    pub links: u64,
    /// Their summed nominal capacity, bytes per second.
    pub capacity_bytes_per_s: f64,
    /// Bytes the run's network carried on links of the class, summed over its links (a flow
    /// crossing two spine links counts twice): every finished flow's bytes on each link of its
    /// path, a cancelled one's what it had moved. A transfer's flow is its wire share
    /// (`transport::shared`: the wire bandwidth-seconds of its critical path at the route's
    /// bottleneck), so a staging-bound transfer puts fewer bytes on the wire than its payload.
    pub link_bytes: f64,
    /// `link_bytes` / (capacity × horizon): the class's mean utilization.
    pub mean_utilization: f64,
    /// Highest load ÷ capacity any one link of the class carried during the run (1.0: a link
    /// of the class was a bottleneck), exact (`FlowNet::peak_utilization`).
    pub peak_utilization: f64,
}

/// Task outputs in the nodes' object stores.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ObjectMetrics {
    /// Outputs that did not fit under the spilling threshold and went to local disk.
    pub spilled_objects: u64,
    pub spilled_bytes: f64,
    /// Seconds spent writing spills to disk and reading spilled inputs back, summed over
    /// objects and consuming tasks.
    #[serde(rename = "spill_time_s")]
    pub spill_time: f64,
    #[serde(rename = "restore_time_s")]
    pub restore_time: f64,
    /// Highest fill of any node's object store.
    pub peak_store_fraction: f64,
}

/// One step of a failure and its recovery, for the recovery timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimelineEvent {
    /// Seconds since the start of the run.
    #[serde(rename = "time_s")]
    pub time: f64,
    /// `crash`, `detected`, `repaired`, `job_stopped`, `job_resumed`, `bundles_rescheduled`,
    /// `tasks_retried`, `actor_restarted`, `replica_restarted`.
    pub kind: String,
    /// The node, job or group concerned.
    pub subject: String,
}

/// What failures did to a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FailureMetrics {
    pub node_failures: u64,
    /// Crash → declared dead, seconds.
    pub time_to_detect: Stats,
    /// Crash → a stopped training job computing again (checkpoint loaded), seconds.
    pub time_to_recover: Stats,
    pub tasks_retried: u64,
    pub tasks_failed: u64,
    pub actors_restarted: u64,
    pub actors_lost: u64,
    pub replicas_restarted: u64,
    pub requests_lost: u64,
    /// Transfers whose transport could not move the data between their ends (NVLink P2P
    /// across nodes, RDMA without an RDMA NIC, no route): the task, call or request that
    /// needed each failed, and `network_models` says why.
    pub transfers_unavailable: u64,
    /// Task outputs lost with their node and rebuilt from lineage, or lost for good.
    pub objects_rebuilt: u64,
    pub objects_lost: u64,
    pub bundles_rescheduled: u64,
    /// Device-hours failures cost: `lost_work_device_hours + stalled_device_hours`.
    pub lost_device_hours: f64,
    /// Device-hours of work thrown away (tasks killed mid-run, training since its checkpoint).
    pub lost_work_device_hours: f64,
    /// Device-hours training jobs' devices sat stalled waiting on recovery
    /// ([`TrainingMetrics::stalled_device_hours`], summed).
    pub stalled_device_hours: f64,
    /// Fraction of node-time nodes were up over the simulated window.
    pub node_availability: f64,
    /// Failure statements the simulation does not model yet (device, NIC, link faults).
    pub unsimulated: Vec<String>,
    pub timeline: Vec<TimelineEvent>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct RunMetrics {
    #[serde(rename = "makespan_s")]
    pub makespan: f64,
    #[serde(rename = "horizon_s")]
    pub horizon: f64,
    pub events: u64,
    pub tasks: Vec<TaskGroupMetrics>,
    pub placement_groups: Vec<PgMetrics>,
    pub training: Vec<TrainingMetrics>,
    pub services: Vec<ServiceMetrics>,
    /// Services that name a model (`sim::llm`): TTFT, TPOT, tokens/s, KV use, SLOs.
    pub llm_services: Vec<super::llm::metrics::LlmServiceMetrics>,
    pub actors: Vec<ActorMetrics>,
    /// Per device class (accelerator).
    pub utilization: BTreeMap<String, Utilization>,
    /// Per node type with accelerators.
    pub utilization_by_node_type: BTreeMap<String, Utilization>,
    /// What the cluster costs over the window (`sim::cost`).
    pub cluster: ClusterCost,
    /// Logical CPUs per node with CPUs, by name (`sim::cpu`).
    pub cpu_utilization: BTreeMap<String, CpuUtilization>,
    /// Logical CPUs per node type with CPUs.
    pub cpu_utilization_by_node_type: BTreeMap<String, CpuUtilization>,
    /// Per link class of the run's network (`sim::links::CLASSES`), classes with links only.
    pub links: BTreeMap<String, LinkClassMetrics>,
    pub failures: FailureMetrics,
    pub objects: ObjectMetrics,
    /// Per tenant with a quota that held work back: how much waited on it, and how long.
    pub quota_waits: Vec<QuotaWait>,
    /// Per task group that fetched inputs from other nodes: what placement made it move.
    pub fetches: Vec<FetchMetrics>,
}

/// The cluster's price and power, and what they come to over the run's window: the price is
/// the sum over nodes of the node's `price`, else its devices' `price` × count; the power the
/// node's `power`, else its devices' `tdp` × count (TDP × time: an upper bound, idle power is
/// not modelled). `None` when a node or device has no figure. The same figures `orrery check`
/// prints and `compare` and `sweep` use (`experiment::measure::cost`, `energy`).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ClusterCost {
    pub price_usd_per_h: Option<f64>,
    /// Price × the window.
    pub cost_usd: Option<f64>,
    pub power_w: Option<f64>,
    /// Power × the window.
    pub energy_kwh: Option<f64>,
}

/// A task group's input fetches from the nodes holding its producers' outputs (an input
/// fetch that restarts after a NIC fault counts again).
#[derive(Debug, Clone, Default, Serialize)]
pub struct FetchMetrics {
    pub workload: String,
    pub name: String,
    pub fetches: u64,
    /// Bytes read from other nodes (local inputs move nothing).
    pub remote_bytes: f64,
    /// Mean seconds from a task's start until its inputs had arrived.
    #[serde(rename = "mean_s")]
    pub mean_secs: f64,
}

impl RunMetrics {
    /// The metrics whose percentiles come from a histogram (`Stats::quantile_rel_error` > 0),
    /// named `workload.item.metric`, in output order.
    pub fn approximate_quantiles(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut see = |name: String, s: &Stats| {
            if s.quantile_rel_error > 0.0 {
                out.push(name);
            }
        };
        for g in &self.tasks {
            see(
                format!("{}.{}.queueing_delay", g.workload, g.name),
                &g.queueing_delay,
            );
            see(format!("{}.{}.run_time", g.workload, g.name), &g.run_time);
        }
        for v in &self.services {
            see(format!("{}.{}.latency", v.workload, v.name), &v.latency);
            see(format!("{}.{}.waiting", v.workload, v.name), &v.waiting);
        }
        for v in &self.llm_services {
            for (k, s) in [
                ("ttft", &v.ttft),
                ("tpot", &v.tpot),
                ("inter_token", &v.inter_token),
                ("e2e", &v.e2e),
            ] {
                see(format!("{}.{}.{k}", v.workload, v.name), s);
            }
            if let Some(d) = &v.disaggregation {
                see(
                    format!("{}.{}.kv_transfer", v.workload, v.name),
                    &d.kv_transfer,
                );
            }
        }
        for a in &self.actors {
            see(
                format!("{}.{}.placement_delay", a.workload, a.name),
                &a.placement_delay,
            );
        }
        see(
            "failures.time_to_detect".into(),
            &self.failures.time_to_detect,
        );
        see(
            "failures.time_to_recover".into(),
            &self.failures.time_to_recover,
        );
        out
    }
}

/// Work a tenant's quota held back: tasks, actors and replicas queued while it was full,
/// counted from when they queued to when they started.
#[derive(Debug, Clone, Default, Serialize)]
pub struct QuotaWait {
    pub tenant: String,
    pub waited: u64,
    #[serde(rename = "total_s")]
    pub total_secs: f64,
    #[serde(rename = "mean_s")]
    pub mean_secs: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut xs: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Stats::of(&mut xs);
        assert_eq!((s.p50, s.p90, s.p99, s.max), (50.0, 90.0, 99.0, 100.0));
        assert_eq!(s.mean, 50.5);
        assert_eq!(Stats::of(&mut []).count, 0);
    }

    #[test]
    fn bounded_samples_keep_extremes_and_order() {
        let xs: Vec<f64> = (0..10_000).map(f64::from).collect();
        let b = bounded_samples(&xs);
        assert_eq!(b.len(), MAX_SAMPLES);
        assert_eq!((b[0], b[MAX_SAMPLES - 1]), (0.0, 9_999.0));
        assert!(b.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(bounded_samples(&xs[..10]), xs[..10].to_vec());
    }
}
