//! The run's data tables as typed rows ([`super::rows`]): one struct per table, its fields the
//! columns. Every row starts with the run's header (`orrery`, `scenario_hash`, `seed`), so
//! files from many runs concatenate into one table.

use super::rows::csv;
use super::{Header, steps};
use crate::sim::metrics::{RunMetrics, Stats};
use crate::sim::utilization::{CpuUtilization, Utilization};
use serde::Serialize;
use std::collections::BTreeMap;

/// `tasks.csv`: per task group, counts, queueing delay and run time statistics (s).
#[derive(Serialize, Default)]
struct TaskRow<'a> {
    orrery: &'a str,
    scenario_hash: &'a str,
    seed: u64,
    workload: &'a str,
    group: &'a str,
    submitted: u64,
    completed: u64,
    infeasible: u64,
    queue_mean_s: f64,
    queue_p50_s: f64,
    queue_p90_s: f64,
    queue_p99_s: f64,
    queue_p999_s: f64,
    queue_max_s: f64,
    run_mean_s: f64,
    run_p50_s: f64,
    run_p90_s: f64,
    run_p99_s: f64,
    run_p999_s: f64,
    run_max_s: f64,
    first_start_s: f64,
    last_end_s: f64,
}

/// `placement_groups.csv`: per placement group, where it landed and how long it waited.
#[derive(Serialize, Default)]
struct PgRow<'a> {
    orrery: &'a str,
    scenario_hash: &'a str,
    seed: u64,
    workload: &'a str,
    group: &'a str,
    bundles: usize,
    state: &'a str,
    pending_time_s: f64,
    attempts: u64,
    racks: usize,
    /// Its nodes, separated by spaces.
    nodes: String,
    /// The fallback option it was placed with.
    option_index: Option<usize>,
    domain: &'a str,
}

/// `training.csv`: per training job, steps and where a step's time goes.
#[derive(Serialize, Default)]
struct TrainingRow<'a> {
    orrery: &'a str,
    scenario_hash: &'a str,
    seed: u64,
    workload: &'a str,
    job: &'a str,
    devices: u32,
    nodes: usize,
    steps_done: u64,
    step_time_s: f64,
    compute_time_s: f64,
    communication_time_s: f64,
    exposed_comm_time_s: f64,
    checkpoint_time_s: f64,
    bubble_time_s: f64,
    started_s: f64,
    finished_s: Option<f64>,
    goodput: f64,
    tokens_per_s: Option<f64>,
    mfu: Option<f64>,
}

/// `services.csv`: per service, throughput, latency (s), waiting and SLO violations.
#[derive(Serialize, Default)]
struct ServiceRow<'a> {
    orrery: &'a str,
    scenario_hash: &'a str,
    seed: u64,
    workload: &'a str,
    service: &'a str,
    replicas: u32,
    arrived: u64,
    served: u64,
    throughput_per_s: f64,
    latency_mean_s: f64,
    latency_p50_s: f64,
    latency_p90_s: f64,
    latency_p99_s: f64,
    latency_p999_s: f64,
    latency_max_s: f64,
    wait_mean_s: f64,
    wait_probability_fraction: f64,
    mean_queue_length_requests: f64,
    slo_violation_fraction: f64,
}

/// `llm_services.csv`: per LLM service, token rates, TTFT/TPOT/E2E (s), KV use; the
/// disaggregation columns are empty for a colocated service.
#[derive(Serialize, Default)]
struct LlmRow<'a> {
    orrery: &'a str,
    scenario_hash: &'a str,
    seed: u64,
    workload: &'a str,
    service: &'a str,
    model: &'a str,
    tp: u32,
    replicas: u32,
    arrived: u64,
    finished: u64,
    preemptions: u64,
    output_tokens_per_s: f64,
    requests_per_s: f64,
    goodput_per_s: f64,
    ttft_mean_s: f64,
    ttft_p50_s: f64,
    ttft_p90_s: f64,
    ttft_p99_s: f64,
    tpot_mean_s: f64,
    tpot_p50_s: f64,
    tpot_p90_s: f64,
    tpot_p99_s: f64,
    inter_token_mean_s: f64,
    inter_token_p99_s: f64,
    e2e_mean_s: f64,
    e2e_p99_s: f64,
    kv_utilization_mean_fraction: f64,
    kv_utilization_peak_fraction: f64,
    prefill_replicas: Option<u32>,
    decode_replicas: Option<u32>,
    kv_transport: Option<&'a str>,
    kv_transfer_mean_s: Option<f64>,
    kv_transfer_p99_s: Option<f64>,
    kv_transfer_bytes: Option<f64>,
}

/// `utilization.csv`: busy and allocated devices per device class and per node type (`scope`):
/// one row at each change of either level (`bin_s` 0), or, for a key with more than
/// `sim::utilization::EXACT` changes, one per bin of `bin_s` seconds holding the levels'
/// means over it.
#[derive(Serialize, Default)]
struct UtilRow<'a> {
    orrery: &'a str,
    scenario_hash: &'a str,
    seed: u64,
    scope: &'a str,
    name: &'a str,
    devices: u64,
    time_s: f64,
    bin_s: f64,
    busy_devices: f64,
    allocated_devices: f64,
}

/// `cpu_utilization.csv`: as [`UtilRow`], in CPUs, per node (`scope` `node`, a node by name)
/// and per node type.
#[derive(Serialize, Default)]
struct CpuRow<'a> {
    orrery: &'a str,
    scenario_hash: &'a str,
    seed: u64,
    scope: &'a str,
    name: &'a str,
    cpus: f64,
    time_s: f64,
    bin_s: f64,
    busy_cpus: f64,
    allocated_cpus: f64,
}

/// `links.csv`: per link class, its links, capacity, bytes moved and utilization.
#[derive(Serialize, Default)]
struct LinkRow<'a> {
    orrery: &'a str,
    scenario_hash: &'a str,
    seed: u64,
    link_class: &'a str,
    links: u64,
    capacity_bytes_per_s: f64,
    link_bytes: f64,
    mean_utilization: f64,
    peak_utilization: f64,
}

/// The CSV files of a run: (file name, contents).
pub fn csv_files(h: &Header, m: &RunMetrics) -> Vec<(&'static str, String)> {
    vec![
        ("tasks.csv", tasks(h, m)),
        ("placement_groups.csv", pgs(h, m)),
        ("training.csv", train(h, m)),
        ("services.csv", svc(h, m)),
        ("llm_services.csv", llm(h, m)),
        ("utilization.csv", util(h, m)),
        ("cpu_utilization.csv", cpu(h, m)),
        ("links.csv", links(h, m)),
    ]
}

/// A statistic's six columns: mean, p50, p90, p99, p99.9, max.
fn six(s: &Stats) -> [f64; 6] {
    [s.mean, s.p50, s.p90, s.p99, s.p999, s.max]
}

fn tasks(h: &Header, m: &RunMetrics) -> String {
    let (orrery, scenario_hash, seed) = (h.orrery.as_str(), h.scenario_hash.as_str(), h.seed);
    csv(m.tasks.iter().map(|t| {
        let [
            queue_mean_s,
            queue_p50_s,
            queue_p90_s,
            queue_p99_s,
            queue_p999_s,
            queue_max_s,
        ] = six(&t.queueing_delay);
        let [
            run_mean_s,
            run_p50_s,
            run_p90_s,
            run_p99_s,
            run_p999_s,
            run_max_s,
        ] = six(&t.run_time);
        TaskRow {
            orrery,
            scenario_hash,
            seed,
            workload: &t.workload,
            group: &t.name,
            submitted: t.submitted,
            completed: t.completed,
            infeasible: t.infeasible,
            queue_mean_s,
            queue_p50_s,
            queue_p90_s,
            queue_p99_s,
            queue_p999_s,
            queue_max_s,
            run_mean_s,
            run_p50_s,
            run_p90_s,
            run_p99_s,
            run_p999_s,
            run_max_s,
            first_start_s: t.first_start,
            last_end_s: t.last_end,
        }
    }))
}

fn pgs(h: &Header, m: &RunMetrics) -> String {
    let (orrery, scenario_hash, seed) = (h.orrery.as_str(), h.scenario_hash.as_str(), h.seed);
    csv(m.placement_groups.iter().map(|p| PgRow {
        orrery,
        scenario_hash,
        seed,
        workload: &p.workload,
        group: &p.name,
        bundles: p.bundles,
        state: &p.state,
        pending_time_s: p.pending_time,
        attempts: p.attempts,
        racks: p.racks,
        nodes: p.nodes.join(" "),
        option_index: p.option,
        domain: p.domain.as_deref().unwrap_or(""),
    }))
}

fn train(h: &Header, m: &RunMetrics) -> String {
    let (orrery, scenario_hash, seed) = (h.orrery.as_str(), h.scenario_hash.as_str(), h.seed);
    csv(m.training.iter().map(|t| TrainingRow {
        orrery,
        scenario_hash,
        seed,
        workload: &t.workload,
        job: &t.name,
        devices: t.devices,
        nodes: t.nodes,
        steps_done: t.steps_done,
        step_time_s: t.step_time,
        compute_time_s: t.compute_time,
        communication_time_s: t.communication_time,
        exposed_comm_time_s: t.exposed_comm_time,
        checkpoint_time_s: t.checkpoint_time,
        bubble_time_s: t.bubble_time,
        started_s: t.started,
        finished_s: t.finished,
        goodput: t.goodput,
        tokens_per_s: t.tokens_per_s,
        mfu: t.mfu,
    }))
}

fn svc(h: &Header, m: &RunMetrics) -> String {
    let (orrery, scenario_hash, seed) = (h.orrery.as_str(), h.scenario_hash.as_str(), h.seed);
    csv(m.services.iter().map(|s| {
        let [
            latency_mean_s,
            latency_p50_s,
            latency_p90_s,
            latency_p99_s,
            latency_p999_s,
            latency_max_s,
        ] = six(&s.latency);
        ServiceRow {
            orrery,
            scenario_hash,
            seed,
            workload: &s.workload,
            service: &s.name,
            replicas: s.replicas_placed,
            arrived: s.arrived,
            served: s.served,
            throughput_per_s: s.throughput,
            latency_mean_s,
            latency_p50_s,
            latency_p90_s,
            latency_p99_s,
            latency_p999_s,
            latency_max_s,
            wait_mean_s: s.waiting.mean,
            wait_probability_fraction: s.wait_probability,
            mean_queue_length_requests: s.mean_queue_length,
            slo_violation_fraction: s.slo_violation_fraction,
        }
    }))
}

fn llm(h: &Header, m: &RunMetrics) -> String {
    let (orrery, scenario_hash, seed) = (h.orrery.as_str(), h.scenario_hash.as_str(), h.seed);
    csv(m.llm_services.iter().map(|s| {
        let d = s.disaggregation.as_ref();
        LlmRow {
            orrery,
            scenario_hash,
            seed,
            workload: &s.workload,
            service: &s.name,
            model: &s.model,
            tp: s.tp,
            replicas: s.replicas_placed,
            arrived: s.arrived,
            finished: s.finished,
            preemptions: s.preemptions,
            output_tokens_per_s: s.output_tokens_per_s,
            requests_per_s: s.requests_per_s,
            goodput_per_s: s.goodput_per_s,
            ttft_mean_s: s.ttft.mean,
            ttft_p50_s: s.ttft.p50,
            ttft_p90_s: s.ttft.p90,
            ttft_p99_s: s.ttft.p99,
            tpot_mean_s: s.tpot.mean,
            tpot_p50_s: s.tpot.p50,
            tpot_p90_s: s.tpot.p90,
            tpot_p99_s: s.tpot.p99,
            inter_token_mean_s: s.inter_token.mean,
            inter_token_p99_s: s.inter_token.p99,
            e2e_mean_s: s.e2e.mean,
            e2e_p99_s: s.e2e.p99,
            kv_utilization_mean_fraction: s.kv_utilization_mean_fraction,
            kv_utilization_peak_fraction: s.kv_utilization_peak_fraction,
            prefill_replicas: d.map(|d| d.prefill_replicas),
            decode_replicas: d.map(|d| d.decode_replicas),
            kv_transport: d.map(|d| d.transport.as_str()),
            kv_transfer_mean_s: d.map(|d| d.kv_transfer.mean),
            kv_transfer_p99_s: d.map(|d| d.kv_transfer.p99),
            kv_transfer_bytes: d.map(|d| d.kv_transfer_bytes),
        }
    }))
}

/// A step series: (time, level) at each change.
type Series = [(f64, f64)];

/// A utilization record's two step series: (busy, allocated).
trait Levels {
    fn levels(&self) -> (&Series, &Series);
}

impl Levels for Utilization {
    fn levels(&self) -> (&Series, &Series) {
        (&self.busy_series, &self.allocated_series)
    }
}

impl Levels for CpuUtilization {
    fn levels(&self) -> (&Series, &Series) {
        (&self.busy_series, &self.allocated_series)
    }
}

/// Every key's step function in each scope, with both levels at each change: (scope, name,
/// the key's entry, time, busy, allocated). What `utilization.csv` and `cpu_utilization.csv`
/// hold, in devices and in CPUs.
fn step_rows<'a, U: Levels>(
    scopes: [(&'static str, &'a BTreeMap<String, U>); 2],
) -> impl Iterator<Item = (&'static str, &'a str, &'a U, f64, f64, f64)> + 'a {
    scopes
        .into_iter()
        .flat_map(|(scope, map)| map.iter().map(move |(name, u)| (scope, name.as_str(), u)))
        .flat_map(|(scope, name, u)| {
            let (busy, held) = u.levels();
            steps(busy, held)
                .into_iter()
                .map(move |(t, b, a)| (scope, name, u, t, b, a))
        })
}

fn util(h: &Header, m: &RunMetrics) -> String {
    let (orrery, scenario_hash, seed) = (h.orrery.as_str(), h.scenario_hash.as_str(), h.seed);
    let scopes = [
        ("device_class", &m.utilization),
        ("node_type", &m.utilization_by_node_type),
    ];
    csv(
        step_rows(scopes).map(|(scope, name, u, time_s, busy, held)| UtilRow {
            orrery,
            scenario_hash,
            seed,
            scope,
            name,
            devices: u.devices,
            time_s,
            bin_s: u.series_resolution_s,
            busy_devices: busy,
            allocated_devices: held,
        }),
    )
}

fn cpu(h: &Header, m: &RunMetrics) -> String {
    let (orrery, scenario_hash, seed) = (h.orrery.as_str(), h.scenario_hash.as_str(), h.seed);
    let scopes = [
        ("node", &m.cpu_utilization),
        ("node_type", &m.cpu_utilization_by_node_type),
    ];
    csv(
        step_rows(scopes).map(|(scope, name, u, time_s, busy, held)| CpuRow {
            orrery,
            scenario_hash,
            seed,
            scope,
            name,
            cpus: u.cpus,
            time_s,
            bin_s: u.series_resolution_s,
            busy_cpus: busy,
            allocated_cpus: held,
        }),
    )
}

fn links(h: &Header, m: &RunMetrics) -> String {
    let (orrery, scenario_hash, seed) = (h.orrery.as_str(), h.scenario_hash.as_str(), h.seed);
    csv(m.links.iter().map(|(class, l)| LinkRow {
        orrery,
        scenario_hash,
        seed,
        link_class: class,
        links: l.links,
        capacity_bytes_per_s: l.capacity_bytes_per_s,
        link_bytes: l.link_bytes,
        mean_utilization: l.mean_utilization,
        peak_utilization: l.peak_utilization,
    }))
}
