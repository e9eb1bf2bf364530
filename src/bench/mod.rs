//! `orrery bench`: throughput of the event core and of a whole large simulation, with peak
//! memory. Benchmarks live here, not in the timed tests.

use crate::engine::{EventQueue, Time, rng_stream};
use crate::network::collective;
use crate::network::drive::Step;
use rand::RngExt;
use std::fmt::Write as _;
use std::time::Instant;

/// A generated scenario: `nodes` CPU nodes (64 threads each, in racks of 32) running `tasks`
/// one-CPU tasks in four groups of different lengths, the last two after the first two.
pub fn scenario(nodes: u64, tasks: u64) -> String {
    scenario_with(nodes, tasks, false)
}

/// [`scenario`], and with `remote_inputs` the first two groups each write a 64 MiB output, so
/// every task of the last two reads its producers' outputs (one of `a` for `c`, one of `a`
/// and one of `b` for `d`) from the nodes that ran them: input fetches on the run's network.
pub fn scenario_with(nodes: u64, tasks: u64, remote_inputs: bool) -> String {
    let racks = nodes.div_ceil(32);
    let last = nodes - (racks - 1) * 32;
    let quarter = (tasks / 4).max(1);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "node bench_node {{\n  cpu sockets 2, cores 32, numa 2, threads 64\n  memory 256 GiB\n  nic eth_100g\n}}\n"
    );
    let _ = writeln!(s, "cluster bench {{");
    if racks > 1 {
        let _ = writeln!(
            s,
            "  rack r[0..{}] {{\n    node bench_node x 32\n  }}",
            racks - 2
        );
    }
    let _ = writeln!(
        s,
        "  rack r{} {{\n    node bench_node x {last}\n  }}\n  fabric leaf_spine oversubscription 2:1\n}}\n",
        racks - 1
    );
    let _ = writeln!(s, "workload etl {{");
    for (name, dur, after) in [
        ("a", "30 s", ""),
        ("b", "45 s", ""),
        ("c", "20 s", " after a"),
        ("d", "60 s", " after [a, b]"),
    ] {
        let output = if remote_inputs && after.is_empty() {
            "\n    output 64 MiB"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "  tasks {name} x {quarter}{after} {{\n    resources {{ CPU: 1 }}\n    duration {dur}{output}\n  }}"
        );
    }
    let _ = writeln!(s, "}}");
    s
}

/// Sizes of the contention benchmark ([`contention_scenario`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contention {
    /// Racks of 32 DGX H100 nodes.
    pub racks: u64,
    /// Training jobs, each on its own placement group.
    pub jobs: u64,
    /// Bundles (nodes of 8 GPUs) per job.
    pub bundles: u64,
    /// Task stages, each `after` the one before (consumers fetch their producer's output).
    pub stages: u64,
    pub tasks_per_stage: u64,
    /// Simulated seconds (the experiment's `horizon`).
    pub horizon_s: u64,
}

impl Contention {
    /// The benchmark's sizes: 8,192 GPUs (1,024 DGX H100 in 32 racks), 64 jobs of 128 GPUs,
    /// 12 stages of 4,096 tasks, one simulated hour.
    pub const FULL: Contention = Contention {
        racks: 32,
        jobs: 64,
        bundles: 16,
        stages: 12,
        tasks_per_stage: 4096,
        horizon_s: 3600,
    };
}

/// The contention benchmark's scenario: `racks` racks of 32 DGX H100 on a 2:1 oversubscribed
/// leaf-spine, `jobs` training jobs of `bundles` × 8 GPUs each sharing it — even jobs a
/// STRICT_SPREAD group with a flat ring allreduce, odd ones a PACK group with a hierarchical
/// one — and a pipeline of CPU task stages whose consumers read their producers' 2 GiB
/// outputs from other nodes, all on the run's one network, for `horizon_s` simulated seconds.
///
/// Sizes per job: a 14B-parameter dense model, data parallel: bf16 gradients 14e9 × 2 B =
/// 28 GB allreduced every step; 600 TFLOP per device per step (about 0.8 s of H100 bf16 at
/// the datasheet efficiency), so a step is about a second with its allreduce under contention;
/// a 224 GB checkpoint (14e9 × 16 B, weights and Adam state) every 10 minutes.
pub fn contention_scenario(c: &Contention) -> String {
    let racks = c.racks.max(1);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "cluster contention {{\n  rack r[0..{}] {{\n    node dgx_h100 x 32\n  }}\n  fabric leaf_spine oversubscription 2:1\n  # Checkpoints go behind the spines. Assumption: 1 GB/s per GPU of the full 8,192-GPU case (DDN's stated minimum).\n  storage pfs {{\n    bandwidth 8192 GB/s\n    attach fabric\n  }}\n}}\n",
        racks - 1
    );
    let _ = writeln!(s, "workload train {{");
    for j in 0..c.jobs {
        let (strategy, algo) = if j % 2 == 0 {
            ("STRICT_SPREAD", "algo ring")
        } else {
            ("PACK", "algo ring hierarchical")
        };
        let _ = writeln!(
            s,
            "  placement_group g{j} strategy {strategy} {{\n    bundle {{ GPU: 8, CPU: 96 }} x {}\n  }}",
            c.bundles.max(1)
        );
        let _ = writeln!(
            s,
            "  training j{j} on g{j} steps 1000000 {{\n    compute 600 TFLOP per device bf16\n    allreduce 28 GB {algo}\n    checkpoint every 10 min size 224 GB\n  }}"
        );
    }
    let _ = writeln!(s, "}}\n");
    if c.stages > 0 && c.tasks_per_stage > 0 {
        let _ = writeln!(s, "workload etl {{");
        for k in 0..c.stages {
            let after = if k > 0 {
                format!(" after s{}", k - 1)
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "  tasks s{k} x {}{after} {{\n    resources {{ CPU: 4 }}\n    duration 5 min\n    output 2 GiB\n  }}",
                c.tasks_per_stage
            );
        }
        let _ = writeln!(s, "}}\n");
    }
    let _ = writeln!(
        s,
        "experiment hour {{\n  horizon {} s\n}}",
        c.horizon_s.max(1)
    );
    s
}

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
/// A non-blocking fat-tree of `nodes` DGX H100 nodes in racks of 32, as scenario text (the
/// benchmarks' cluster).
pub fn fat_tree_text(nodes: u64) -> String {
    let racks = nodes.max(1).div_ceil(32);
    let last = nodes.max(1) - (racks - 1) * 32;
    let mut text = String::from("cluster fabric {\n");
    if racks > 1 {
        text += &format!(
            "  rack r[0..{}] {{\n    node dgx_h100 x 32\n  }}\n",
            racks - 2
        );
    }
    text += &format!(
        "  rack r{} {{\n    node dgx_h100 x {last}\n  }}\n  fabric fat_tree\n}}\n",
        racks - 1
    );
    text
}

pub fn flow_network(nodes: u64, flows: usize) -> Result<(u64, f64), String> {
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
    let t0 = Instant::now();
    let mut net = crate::network::FlowNet::new(g.capacity.clone());
    net.add_batch(batch);
    let mut events = 1u64;
    while let Step::Finished(f) = net.step(&mut 0.0, None) {
        net.remove(f);
        events += 1;
    }
    Ok((events, t0.elapsed().as_secs_f64()))
}

/// The dense flow benchmark's cluster: 32 racks of 32 one-NIC (100 GbE) hosts on a leaf-spine
/// fabric oversubscribed 4:1, so the spine saturates long before the host links.
pub fn leaf_spine_text() -> String {
    let mut s = String::from(
        "node host {\n  cpu sockets 1, cores 32, numa 1, threads 64\n  memory 256 GiB\n  nic eth_100g\n}\n\n",
    );
    s += "cluster dense {\n  rack r[0..31] {\n    node host x 32\n  }\n  fabric leaf_spine oversubscription 4:1\n}\n";
    s
}

/// What [`dense_flows`] measured.
pub struct DenseRun {
    /// Flow events (arrivals and completions).
    pub events: u64,
    pub seconds: f64,
    pub peak_active: usize,
    /// Simulated seconds until the last flow finished.
    pub makespan: f64,
}

/// Dense flow-level benchmark: `flows` transfers (10–200 MB, uniform) between random distinct
/// hosts of a 1,024-host leaf-spine ([`leaf_spine_text`]), arriving at uniform random times
/// over 2 s, driven as an event loop — the next event is the next arrival or the next
/// completion, whichever is first. The spine saturates, so a thousand flows or more share it
/// at once and every event disturbs many of them. Seeded: the same run every time.
pub fn dense_flows(flows: usize) -> Result<DenseRun, String> {
    check_sizes(1, 1, 0, flows, 0)?;
    use crate::network::Vertex;
    let loaded = crate::load_str("<dense>", &leaf_spine_text());
    let spec = loaded.spec.ok_or_else(|| {
        format!(
            "generated leaf-spine is invalid:\n{}",
            crate::diag::render(&loaded.sources, &loaded.diags, false)
        )
    })?;
    let g = crate::network::Graph::build(&spec);
    let hosts = 1024usize;
    let mut rng = rng_stream(3, 3);
    let mut arrivals = Vec::with_capacity(flows);
    for k in 0..flows {
        let a = rng.random_range(0..hosts);
        let mut b = rng.random_range(0..hosts - 1);
        if b >= a {
            b += 1;
        }
        let nic = |node| Vertex::Nic { node, nic: 0 };
        let path = g
            .route_vertices(nic(a), nic(b), k as u64)
            .ok_or("no route")?;
        let at: f64 = rng.random_range(0.0..2.0);
        arrivals.push((at, path, rng.random_range(10e6..200e6)));
    }
    arrivals.sort_by(|x, y| x.0.total_cmp(&y.0));
    let t0 = Instant::now();
    let mut net = crate::network::FlowNet::new(g.capacity.clone());
    let (mut now, mut events, mut peak, mut active) = (0.0f64, 0u64, 0usize, 0usize);
    let mut next = arrivals.into_iter().peekable();
    loop {
        match net.step(&mut now, next.peek().map(|a| a.0)) {
            Step::Finished(f) => {
                net.remove(f);
                active -= 1;
            }
            Step::Reached => {
                let (_, path, bytes) = next.next().expect("peeked");
                net.add(path, bytes);
                active += 1;
                peak = peak.max(active);
            }
            Step::Stuck => break,
        }
        events += 1;
    }
    Ok(DenseRun {
        events,
        seconds: t0.elapsed().as_secs_f64(),
        peak_active: peak,
        makespan: now,
    })
}

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
    pub text: String,
}

pub fn run(
    nodes: u64,
    tasks: u64,
    flows: usize,
    dense_flows: usize,
    allreduce: usize,
    contention: bool,
    remote_inputs: bool,
) -> Result<BenchReport, String> {
    check_sizes(nodes, tasks, flows, dense_flows, allreduce)?;
    let mut o = String::new();
    for pending in [1_000usize, 1_000_000] {
        let rate = core_loop(pending, 10_000_000);
        let _ = writeln!(
            o,
            "event core: {:.1} M events/s with {pending} pending events (10 M events)",
            rate / 1e6
        );
    }
    if flows > 0 {
        let (fe, fs) = flow_network(1000, flows)?;
        let _ = writeln!(
            o,
            "flow network: {flows} flows on a 1000-node fat-tree, {fe} flow events in {fs:.2} s ({:.0} flow events/s)",
            fe as f64 / fs
        );
    }
    if dense_flows > 0 {
        let d = self::dense_flows(dense_flows)?;
        let _ = writeln!(
            o,
            "dense flows: {dense_flows} flows over 2 s on a 1,024-host leaf-spine (4:1), peak {} active, {:.2} s simulated: {} flow events in {:.2} s ({:.0} flow events/s)",
            d.peak_active,
            d.makespan,
            d.events,
            d.seconds,
            d.events as f64 / d.seconds
        );
    }
    if allreduce > 0 {
        let (fe, wall, sim) = bench_allreduce(allreduce)?;
        let bytes = BENCH_BYTES;
        let (_, busbw) = crate::network::collective::bandwidths("allreduce", allreduce, bytes, sim);
        let _ = writeln!(
            o,
            "allreduce: ring over {allreduce} GPUs, 1 GiB per rank: {sim:.4} s simulated (busbw {:.1} GB/s), {fe} flow events in {wall:.2} s",
            busbw / 1e9
        );
    }
    if contention {
        let c = Contention::FULL;
        let run = simulate_text("<contention>", &contention_scenario(&c))?;
        let m = &run.result.metrics;
        let steps: u64 = m.training.iter().map(|t| t.steps_done).sum();
        let done: u64 = m.tasks.iter().map(|t| t.completed).sum();
        let step =
            m.training.iter().map(|t| t.step_time).sum::<f64>() / m.training.len().max(1) as f64;
        let w = run.result.wire;
        let _ = writeln!(
            o,
            "contention: {} GPUs ({} DGX H100, leaf-spine 2:1), {} training jobs of {} GPUs and {} tasks on one network, {:.0} s simulated",
            c.racks * 32 * 8,
            c.racks * 32,
            c.jobs,
            c.bundles * 8,
            c.stages * c.tasks_per_stage,
            m.horizon
        );
        let _ = writeln!(
            o,
            "  {steps} steps (mean step {:.0} ms), {done} tasks completed; {} flows started ({} flow events), peak {} active, {:.1} PB of flow bytes",
            step * 1e3,
            w.flows,
            2 * w.flows,
            w.peak_active,
            w.bytes / 1e15
        );
        let _ = writeln!(
            o,
            "  load {:.2} s, simulate {:.2} s: {} events, {:.3} M events/s",
            run.load_s,
            run.sim_s,
            m.events,
            m.events as f64 / run.sim_s / 1e6
        );
    } else {
        let run = simulate_text("<bench>", &scenario_with(nodes, tasks, remote_inputs))?;
        let r = &run.result;
        let done: u64 = r.metrics.tasks.iter().map(|t| t.completed).sum();
        let _ = writeln!(
            o,
            "simulation: {nodes} nodes, {tasks} tasks ({done} completed{}), makespan {:.1} s simulated",
            if remote_inputs {
                format!(
                    "; {} remote-input flows, {:.1} TB fetched",
                    r.wire.flows,
                    r.wire.bytes / 1e12
                )
            } else {
                String::new()
            },
            r.metrics.makespan
        );
        let _ = writeln!(
            o,
            "  load {:.2} s, simulate {:.2} s: {} events, {:.2} M events/s, {:.0} tasks/s",
            run.load_s,
            run.sim_s,
            r.metrics.events,
            r.metrics.events as f64 / run.sim_s / 1e6,
            done as f64 / run.sim_s
        );
    }
    match peak_rss() {
        Some(b) => {
            let _ = writeln!(o, "  peak memory {}", crate::units::Bytes(b));
        }
        None => {
            let _ = writeln!(o, "  peak memory unknown (no /proc/self/status)");
        }
    }
    Ok(BenchReport { text: o })
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
