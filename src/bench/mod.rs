//! `orrery bench`: throughput of the event core and of a whole large simulation, with peak
//! memory. Benchmarks live here, not in the timed tests.

pub mod baseline;
mod dense;
mod scenarios;
pub mod simgrid_style;

pub use dense::{DenseRun, DenseSet, dense_flows, dense_flows_in};

pub use scenarios::{
    Contention, contention_scenario, fat_tree_text, leaf_spine_text, leaf_spine_text_at, scenario,
    scenario_with,
};

use crate::engine::{EventQueue, Time, rng_stream};
use crate::network::collective;
use crate::network::drive::Step;
use baseline::{Better, Case};
use rand::RngExt;
use std::fmt::Write as _;
use std::time::Instant;

/// A generated scenario loaded and simulated once (seed 1), with the wall time of each part.
pub struct SimRun {
    pub load_s: f64,
    pub sim_s: f64,
    pub result: crate::sim::RunResult,
}

/// Load and simulate generated scenario `text`.
pub fn simulate_text(name: &str, text: &str) -> Result<SimRun, String> {
    let t0 = Instant::now();
    let loaded = crate::load_str(name, text);
    let spec = loaded.spec.ok_or_else(|| {
        format!(
            "generated scenario is invalid:\n{}",
            crate::diag::render(&loaded.sources, &loaded.diags, false)
        )
    })?;
    let load_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let result = crate::sim::simulate(
        &spec,
        &crate::sim::SimConfig {
            seed: 1,
            ..Default::default()
        },
    );
    Ok(SimRun {
        load_s,
        sim_s: t1.elapsed().as_secs_f64(),
        result,
    })
}

/// Peak resident memory of this process in bytes (Linux), if known.
pub fn peak_rss() -> Option<u64> {
    crate::budget::proc_status_bytes("VmHWM:")
}

/// Events per second through the bare event queue: `pending` events in flight, each pop
/// scheduling one more at a random later time (the hold model of queue benchmarks).
pub fn core_loop(pending: usize, events: u64) -> f64 {
    let mut q: EventQueue<u32> = EventQueue::with_capacity(pending + 1);
    let mut rng = rng_stream(1, 1);
    for k in 0..pending {
        q.at(rng.random_range(0..1_000_000_000), k as u32);
    }
    let t0 = Instant::now();
    let mut n = 0;
    while n < events {
        let Some((t, e)) = q.pop() else { break };
        let dt: Time = rng.random_range(1..1_000_000_000);
        q.at(t + dt, e);
        n += 1;
    }
    n as f64 / t0.elapsed().as_secs_f64()
}

/// Flow-level network throughput: `flows` concurrent transfers (10 MB–1 GB) between GPUs of
/// different nodes of a `nodes`-node DGX H100 fat-tree (racks of 32, non-blocking), started
/// together and run to completion; every completion recomputes the max-min rates of the flows
/// it shared links with. Returns (flow events, seconds).
pub fn flow_network(nodes: u64, flows: usize) -> Result<(u64, f64), String> {
    let (capacity, batch) = fat_tree_flows(nodes, flows)?;
    let t0 = Instant::now();
    let mut net = crate::network::FlowNet::new(capacity);
    net.add_batch(batch);
    let mut events = 1u64;
    while let Step::Finished(f) = net.step(&mut 0.0, None) {
        net.remove(f);
        events += 1;
    }
    Ok((events, t0.elapsed().as_secs_f64()))
}

/// [`flow_network`]'s links (capacities) and flows (path, bytes), seeded: the same every time.
pub fn fat_tree_flows(nodes: u64, flows: usize) -> Result<FatTreeFlows, String> {
    check_sizes(nodes, 1, flows, 0, 0)?;
    let text = fat_tree_text(nodes);
    let loaded = crate::load_str("<flows>", &text);
    let spec = loaded.spec.ok_or("generated fabric is invalid")?;
    let g = crate::network::Graph::build(&spec);
    let mut rng = rng_stream(2, 2);
    let mut batch = Vec::with_capacity(flows);
    for k in 0..flows {
        let a = rng.random_range(0..nodes as usize);
        let mut b = rng.random_range(0..nodes as usize - 1);
        if b >= a {
            b += 1;
        }
        let path = g
            .route(
                (a, rng.random_range(0..8)),
                (b, rng.random_range(0..8)),
                k as u64,
            )
            .ok_or("no route")?;
        batch.push((path, rng.random_range(10e6..1e9)));
    }
    Ok((g.capacity, batch))
}

/// Link capacities and flows (path, bytes), as [`fat_tree_flows`] makes them.
pub type FatTreeFlows = (Vec<f64>, Vec<(Vec<crate::network::LinkId>, f64)>);

/// Most flows `--flows` and `--dense-flows` take: a hundred times the default. A count near
/// `u64::MAX` overflowed the capacity of the flows' vector, a panic (issue 42).
pub const MAX_FLOWS: usize = 1_000_000;
/// Most GPUs `--allreduce` takes: eight per node of the most nodes a scenario may have.
pub const MAX_ALLREDUCE: usize = 8 * crate::scenario::reader::MAX_COUNT as usize;
/// Most tasks `--tasks` takes: four groups of at most `x 1000000` each.
pub const MAX_TASKS: u64 = 4 * crate::scenario::reader::MAX_COUNT;

/// Every size in range, checked before anything is built or measured: the flag, the figure and
/// the limit when one is not.
fn check_sizes(
    nodes: u64,
    tasks: u64,
    flows: usize,
    dense_flows: usize,
    allreduce: usize,
) -> Result<(), String> {
    let nodes_max = crate::scenario::reader::MAX_COUNT;
    let checks: [(&str, u64, u64, u64); 5] = [
        ("--nodes", nodes, 1, nodes_max),
        ("--tasks", tasks, 1, MAX_TASKS),
        ("--flows", flows as u64, 0, MAX_FLOWS as u64),
        ("--dense-flows", dense_flows as u64, 0, MAX_FLOWS as u64),
        ("--allreduce", allreduce as u64, 0, MAX_ALLREDUCE as u64),
    ];
    for (flag, value, lo, hi) in checks {
        if value < lo || value > hi {
            return Err(format!("{flag} {value} is out of range: {lo} to {hi}"));
        }
    }
    Ok(())
}

pub struct BenchReport {
    /// Each case's figures, as they were measured.
    pub text: String,
    /// The figures compared with the baseline (`baseline.rs`).
    pub cases: Vec<Case>,
}

/// What `orrery bench` measures (the CLI's flags).
#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub nodes: u64,
    pub tasks: u64,
    pub flows: usize,
    pub dense_flows: usize,
    pub allreduce: usize,
    pub contention: bool,
    pub remote_inputs: bool,
    /// README's failure drill (`scenarios/failure_drill.orr`, 20 seeds over 12 h) instead of
    /// the --nodes x --tasks simulation.
    pub drill: bool,
    /// The dense case on every [`DenseSet::ALL`] (`dense_flows` flows each, 50,000 if 0).
    pub dense_sets: bool,
    /// The `flows` case's flows also on the SimGrid-style solver ([`simgrid_style`]).
    pub simgrid_style: bool,
}

/// README's failure drill: the shipped scenario, built in so `bench` reads no file.
pub const DRILL_SCENARIO: &str = include_str!("../../scenarios/failure_drill.orr");
/// Its seeds (`--seeds 20`: 1 to 20) and window (`--horizon "12 h"`).
pub const DRILL_SEEDS: u64 = 20;
pub const DRILL_HORIZON_S: u64 = 12 * 3600;

pub fn run(opt: &BenchOptions) -> Result<BenchReport, String> {
    check_sizes(
        opt.nodes,
        opt.tasks,
        opt.flows,
        opt.dense_flows,
        opt.allreduce,
    )?;
    let mut r = BenchReport {
        text: String::new(),
        cases: Vec::new(),
    };
    for pending in [1_000usize, 1_000_000] {
        let rate = core_loop(pending, 10_000_000);
        let _ = writeln!(
            r.text,
            "event core: {:.1} M events/s with {pending} pending events (10 M events)",
            rate / 1e6
        );
        r.cases.push(Case::new(
            format!("event core, {pending} pending"),
            rate,
            "events/s",
            Better::Higher,
        ));
    }
    if opt.flows > 0 {
        case_flows(&mut r, opt.flows, opt.simgrid_style)?;
    }
    if opt.dense_sets {
        let flows = if opt.dense_flows > 0 {
            opt.dense_flows
        } else {
            50_000
        };
        for set in &DenseSet::ALL {
            case_dense(&mut r, flows, set)?;
        }
    } else if opt.dense_flows > 0 {
        case_dense(&mut r, opt.dense_flows, &DenseSet::TODAY)?;
    }
    if opt.allreduce > 0 {
        case_allreduce(&mut r, opt.allreduce)?;
    }
    if opt.drill {
        case_drill(&mut r)?;
    } else if opt.contention {
        case_contention(&mut r)?;
    } else {
        case_simulation(&mut r, opt.nodes, opt.tasks, opt.remote_inputs)?;
    }
    match peak_rss() {
        Some(b) => {
            let _ = writeln!(r.text, "  peak memory {}", crate::units::Bytes(b));
        }
        None => {
            let _ = writeln!(r.text, "  peak memory unknown (no /proc/self/status)");
        }
    }
    Ok(r)
}

fn case_flows(r: &mut BenchReport, flows: usize, simgrid: bool) -> Result<(), String> {
    let (fe, fs) = flow_network(1000, flows)?;
    let _ = writeln!(
        r.text,
        "flow network: {flows} flows on a 1000-node fat-tree, {fe} flow events in {fs:.2} s ({:.0} flow events/s)",
        fe as f64 / fs
    );
    let name = format!("flow network, {flows} flows");
    r.cases.push(Case::new(name, fs, "s", Better::Lower));
    if !simgrid {
        return Ok(());
    }
    // The same flows on a SimGrid-style solver (per-flow max-min over the changed component
    // at every event, simgrid_style.rs), measured here, now, on this machine.
    let (se, ss) = simgrid_style::simgrid_style_flow_network(1000, flows)?;
    debug_assert_eq!(se, fe);
    let _ = writeln!(
        r.text,
        "  the same flows on a SimGrid-style solver (SimGrid's max-min over each change's connected component, lazy finishes; no SimGrid precision rounding or actors): {ss:.2} s; FlowNet {:.1}x as fast",
        ss / fs
    );
    let name = format!("SimGrid-style solver, {flows} flows");
    r.cases.push(Case::new(name, ss, "s", Better::Lower));
    Ok(())
}

fn case_dense(r: &mut BenchReport, flows: usize, set: &DenseSet) -> Result<(), String> {
    let d = self::dense_flows_in(flows, set)?;
    let what = if *set == DenseSet::TODAY {
        // The line and case name `--dense-flows` has always printed.
        "over 2 s on a 1,024-host leaf-spine (4:1)".to_string()
    } else {
        format!("on a 1,024-host leaf-spine, {}", set.name())
    };
    let _ = writeln!(
        r.text,
        "dense flows: {flows} flows {what}, peak {} active, {:.2} s simulated: {} flow events in {:.2} s ({:.0} flow events/s)",
        d.peak_active,
        d.makespan,
        d.events,
        d.seconds,
        d.events as f64 / d.seconds
    );
    // Why a set is slow: how far each event's change spreads through the filling.
    let (st, per) = (d.stats, |n: u64| n as f64 / d.events.max(1) as f64);
    let _ = writeln!(
        r.text,
        "  solver per flow event: {:.1} rate classes refilled ({:.1} tracked links each), {:.1} links saturated, {:.1} link-queue entries; {} links made tracked, {} made slack",
        per(st.admitted),
        st.admitted_links as f64 / st.admitted.max(1) as f64,
        per(st.saturated),
        per(st.queue_pops),
        st.promoted,
        st.demoted
    );
    let name = if *set == DenseSet::TODAY {
        format!("dense flows, {flows} flows")
    } else {
        format!("dense flows, {flows} flows, {}", set.name())
    };
    r.cases.push(Case::new(name, d.seconds, "s", Better::Lower));
    Ok(())
}

fn case_allreduce(r: &mut BenchReport, gpus: usize) -> Result<(), String> {
    let (fe, wall, sim) = bench_allreduce(gpus)?;
    let (_, busbw) = crate::network::collective::bandwidths("allreduce", gpus, BENCH_BYTES, sim);
    let _ = writeln!(
        r.text,
        "allreduce: ring over {gpus} GPUs, 1 GiB per rank: {sim:.4} s simulated (busbw {:.1} GB/s), {fe} flow events in {wall:.2} s",
        busbw / 1e9
    );
    let name = format!("allreduce, {gpus} GPUs");
    r.cases.push(Case::new(name, wall, "s", Better::Lower));
    Ok(())
}

fn case_contention(r: &mut BenchReport) -> Result<(), String> {
    let c = Contention::FULL;
    let run = simulate_text("<contention>", &contention_scenario(&c))?;
    let m = &run.result.metrics;
    let steps: u64 = m.training.iter().map(|t| t.steps_done).sum();
    let done: u64 = m.tasks.iter().map(|t| t.completed).sum();
    let step = m.training.iter().map(|t| t.step_time).sum::<f64>() / m.training.len().max(1) as f64;
    let w = run.result.wire;
    let _ = writeln!(
        r.text,
        "contention: {} GPUs ({} DGX H100, leaf-spine 2:1), {} training jobs of {} GPUs and {} tasks on one network, {:.0} s simulated",
        c.racks * 32 * 8,
        c.racks * 32,
        c.jobs,
        c.bundles * 8,
        c.stages * c.tasks_per_stage,
        m.horizon
    );
    let _ = writeln!(
        r.text,
        "  {steps} steps (mean step {:.0} ms), {done} tasks completed; {} flows started ({} flow events), peak {} active, {:.1} PB of flow bytes",
        step * 1e3,
        w.flows,
        2 * w.flows,
        w.peak_active,
        w.bytes / 1e15
    );
    let _ = writeln!(
        r.text,
        "  load {:.2} s, simulate {:.2} s: {} events, {:.3} M events/s",
        run.load_s,
        run.sim_s,
        m.events,
        m.events as f64 / run.sim_s / 1e6
    );
    r.cases
        .push(Case::new("contention", run.sim_s, "s", Better::Lower));
    Ok(())
}

fn case_simulation(
    r: &mut BenchReport,
    nodes: u64,
    tasks: u64,
    remote_inputs: bool,
) -> Result<(), String> {
    let run = simulate_text("<bench>", &scenario_with(nodes, tasks, remote_inputs))?;
    let res = &run.result;
    let done: u64 = res.metrics.tasks.iter().map(|t| t.completed).sum();
    let remote = if remote_inputs {
        format!(
            "; {} remote-input flows, {:.1} TB fetched",
            res.wire.flows,
            res.wire.bytes / 1e12
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        r.text,
        "simulation: {nodes} nodes, {tasks} tasks ({done} completed{remote}), makespan {:.1} s simulated",
        res.metrics.makespan
    );
    let rate = res.metrics.events as f64 / run.sim_s;
    let _ = writeln!(
        r.text,
        "  load {:.2} s, simulate {:.2} s: {} events, {:.2} M events/s, {:.0} tasks/s",
        run.load_s,
        run.sim_s,
        res.metrics.events,
        rate / 1e6,
        done as f64 / run.sim_s
    );
    let name = format!(
        "simulation, {nodes} nodes x {tasks} tasks{}",
        if remote_inputs { ", remote inputs" } else { "" }
    );
    r.cases
        .push(Case::new(name, rate, "events/s", Better::Higher));
    Ok(())
}

/// README's failure drill, timed: the scenario's drill over seeds 1 to 20 and 12 simulated
/// hours, on every CPU, as `orrery drill scenarios/failure_drill.orr --seeds 20 --horizon
/// "12 h"` runs it (without writing its files).
fn case_drill(r: &mut BenchReport) -> Result<(), String> {
    let t0 = Instant::now();
    let loaded = crate::load_str("scenarios/failure_drill.orr", DRILL_SCENARIO);
    let spec = loaded
        .spec
        .ok_or("the built-in failure drill scenario is invalid")?;
    let cfg = crate::experiment::drill::DrillConfig {
        seeds: Some((1..=DRILL_SEEDS).collect()),
        horizon: Some(DRILL_HORIZON_S * crate::engine::SEC),
        ..Default::default()
    };
    let report = crate::experiment::drill::run_drill(&spec, &cfg);
    let wall = t0.elapsed().as_secs_f64();
    let runs: usize = report
        .baselines
        .iter()
        .chain(&report.variants)
        .map(|v| v.runs.len())
        .sum();
    let _ = writeln!(
        r.text,
        "failure drill: scenarios/failure_drill.orr, {runs} runs (seeds 1 to {DRILL_SEEDS}, {} h each) on {} threads in {wall:.2} s",
        DRILL_HORIZON_S / 3600,
        crate::parallel::pool_size(0)
    );
    r.cases.push(Case::new(
        format!("failure drill, {runs} runs"),
        wall,
        "s",
        Better::Lower,
    ));
    Ok(())
}

// The collective figure: a flat ring allreduce over thousands of GPUs.

/// Message of the benchmark allreduce: 1 GiB per rank, nccl-tests' usual largest size.
pub const BENCH_BYTES: f64 = (1u64 << 30) as f64;

/// Ring allreduce of [`BENCH_BYTES`] over the first `devices` GPUs (node-major) of a fat tree
/// of DGX H100 nodes in racks of 32, on an idle network. Returns (flow events, wall seconds of
/// the collective simulation, simulated seconds of the collective); building the graph is not
/// timed.
pub fn bench_allreduce(devices: usize) -> Result<(u64, f64, f64), String> {
    if devices == 0 {
        return Err("the allreduce needs at least one device".into());
    }
    let text = fat_tree_text(devices.div_ceil(8) as u64);
    let spec = crate::load_str("<collective>", &text)
        .spec
        .ok_or("generated fabric is invalid")?;
    let graph = crate::network::Graph::build(&spec);
    let net = crate::network::FlowNet::new(graph.capacity.clone());
    let ranks: Vec<collective::Rank> = (0..devices).map(|d| (d / 8, d % 8)).collect();
    let t0 = Instant::now();
    let r = collective::simulate(
        &graph,
        &net,
        collective::Op::AllReduce,
        collective::Algorithm::Ring,
        &ranks,
        BENCH_BYTES,
        &collective::Options::default(),
    )?;
    Ok((r.flow_events, t0.elapsed().as_secs_f64(), r.secs))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_dense_set_runs_its_flows_to_completion() {
        for set in &super::DenseSet::ALL {
            let d = super::dense_flows_in(600, set).unwrap();
            // One event per arrival and one per completion.
            assert_eq!(d.events, 1200, "{}", set.name());
            assert!(d.makespan > 0.0 && d.peak_active >= 1, "{}", set.name());
            // Every flow finished, the last at the makespan; the solver counted its work.
            assert!(d.finish.iter().all(|&t| t > 0.0 && t <= d.makespan));
            assert_eq!(d.finish.iter().fold(0.0f64, |a, &t| a.max(t)), d.makespan);
            assert!(d.stats.refills > 0 && d.stats.admitted > 0 && d.stats.saturated > 0);
        }
        // Today's set is what `--dense-flows` always ran.
        let (a, b) = (
            super::dense_flows(600).unwrap(),
            super::dense_flows_in(600, &super::DenseSet::TODAY).unwrap(),
        );
        assert_eq!((a.events, a.peak_active), (b.events, b.peak_active));
        assert_eq!(a.makespan.to_bits(), b.makespan.to_bits());
    }

    #[test]
    fn the_built_in_drill_is_the_shipped_scenario_and_loads() {
        let shipped = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scenarios/failure_drill.orr"
        ))
        .unwrap();
        assert_eq!(super::DRILL_SCENARIO, shipped);
        let loaded = crate::load_str("failure_drill.orr", super::DRILL_SCENARIO);
        assert!(loaded.spec.is_some());
    }
}
