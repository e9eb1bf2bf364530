//! Placement reaches the price: which devices, NICs and racks a job's placement group holds is
//! what its collectives cross on the run's network. Each case runs the same job under two
//! placements that differ and checks both step times' communication against the ring closed
//! form 2(p−1)α + 2(p−1)/p·n/β worked out by hand from the link graph (src/network/graph.rs),
//! with α NCCL's per-step latency (src/sim/models.rs: 5.7 µs PCIe, 14 µs network).

use orrery::load_str;
use orrery::scenario::Spec;
use orrery::sim::{RunResult, SimConfig, simulate};

/// NCCL's per-step α for a PCIe-only path and for one through a leaf switch.
const ALPHA_PCIE: f64 = 5.7e-6;
const ALPHA_NET: f64 = 14e-6;
/// PCIe per direction: 0.985 GB/s per gen3 lane, doubled per generation
/// (`PcieLink::bandwidth`): gen4 x16 (an L4's link), gen4 x8, gen5 x16 (an H100's link).
const GEN4_X16: f64 = 0.985e9 * 2.0 * 16.0;
const GEN4_X8: f64 = 0.985e9 * 2.0 * 8.0;
/// ConnectX-7 NDR, per direction.
const NDR: f64 = 50e9;
/// The allreduce every job below runs: 1 GB, ring, p = 2 (so 2(p−1)/p = 1 and 2 steps).
const N: f64 = 1e9;

/// Two ranks' ring all-reduce: NCCL's ring Simple base latency once (8.4 µs, NCCL 2.30.7
/// `src/graph/tuning.cc`), two steps of α, and N/β.
fn ring2(alpha: f64, beta: f64) -> f64 {
    8.4e-6 + 2.0 * alpha + N / beta
}

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn run(src: &str) -> RunResult {
    let r = simulate(&spec(src), &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(
        r.network_models.iter().all(|m| m.on_graph),
        "{:?}",
        r.network_models
    );
    r
}

/// Seconds of communication per step of the run's (only) training job.
fn comm(r: &RunResult) -> f64 {
    let t = &r.metrics.training[0];
    assert!(t.steps_done > 0, "{t:?}");
    t.communication_time / t.steps_done as f64
}

/// The nodes the job's placement group was given.
fn pg_nodes(r: &RunResult) -> Vec<String> {
    let pg = r
        .metrics
        .placement_groups
        .iter()
        .find(|p| p.workload == "job")
        .expect("the job's group");
    assert_eq!(pg.state, "created", "{pg:?}");
    pg.nodes.clone()
}

/// An actor of workload `other` that holds `res` on `node` for an hour (outlasting the job):
/// work already running where the job is placed.
fn holder(name: &str, res: &str, node: &str) -> String {
    format!(
        "  actor {name} {{\n    resources {{ {res} }}\n    calls 1\n    call_duration 1 h\n    strategy node_affinity({node})\n  }}\n"
    )
}

/// A training job on group `pg` (declared by the caller), 3 steps of a 1 GB ring allreduce.
fn job(pg: &str) -> String {
    format!(
        "workload job {{\n{pg}  training t on pg steps 3 {{\n    compute 1 TFLOP per device bf16\n    allreduce 1 GB algo ring\n  }}\n}}\n"
    )
}

#[test]
fn topology_aware_keeps_two_pcie_gpus_under_one_switch() {
    // A PCIe-only box: 8 L4s (gen4 x16 each), two under each of four switches whose uplinks
    // to the root complex are gen4 x8 (15.76 GB/s, half a GPU's link). Another workload's actor
    // holds d0 (it is placed first: workloads start in file order), so sw0 has one free GPU.
    // The job asks for one bundle of 2 GPUs.
    //
    // Ray's default (`TryAllocate`: free instances in index order) takes d1 (sw0) and d2
    // (sw1): the ring's two hops d1 → sw0 → root → sw1 → d2 and back cross both uplinks, so
    // β = 15.76 GB/s. The topology-aware allocator takes the first switch with two free GPUs,
    // sw1 (d2, d3): d2 → sw1 → d3 never leaves the switch, β = the GPUs' own 31.52 GB/s.
    // Neither path crosses a leaf or a scale-up link: α = 5.7 µs (PCIe).
    let box_ = "node l4box {\n  cpu sockets 1, cores 32\n  memory 256 GiB\n  pcie gen4\n  switch sw[0..3] uplink gen4 x8\n  device L4 x 8 at sw[0..3] link none\n}\n";
    let cluster = "cluster c {\n  node l4box x 1\n}\n";
    let src = |policy: &str| {
        format!(
            "{box_}{cluster}workload other {{\n{}}}\n{}",
            holder("h", "GPU: 1", "n0"),
            job(&format!(
                "  placement_group pg strategy PACK policy {policy} {{\n    bundle {{ GPU: 2 }}\n  }}\n"
            ))
        )
    };
    let ray = comm(&run(&src("ray_default")));
    let topo = comm(&run(&src("topology_aware")));
    assert!((ray - ring2(ALPHA_PCIE, GEN4_X8)).abs() < 1e-8, "{ray}");
    assert!((topo - ring2(ALPHA_PCIE, GEN4_X16)).abs() < 1e-8, "{topo}");
    // 63.5 ms vs 31.7 ms per step: the uplink halves the cross-switch ring's rate.
    assert!(ray > 1.9 * topo, "{ray} {topo}");
}

#[test]
fn a_gpu_reaches_the_network_through_its_nearest_nic() {
    // Two nodes, each with two H100s (gen5 x16: 63 GB/s) under their own PCIe switch, switch
    // uplinks gen4 x8 (15.76 GB/s), and one NDR NIC under sw0. The job holds one GPU on each
    // node (a 2-rank ring across the nodes: α = 14 µs, every step crosses the leaf).
    //
    // 1. Nothing else running: Ray's index order gives d0 on both nodes, the NIC under the
    //    same switch (GPUDirect without leaving the switch): d0 → sw0 → nic0 → leaf → nic0 →
    //    sw0 → d0, β = the NIC's 50 GB/s.
    // 2. Actors hold d0 on both nodes, so the job gets d1: its nearest NIC is nic0 under the
    //    other switch, reached over sw1 → root → sw0, β = the uplink's 15.76 GB/s.
    // 3. The same, on nodes with a NIC under each switch: d1 uses nic1 next to it, 50 GB/s
    //    again.
    let node = |name: &str, nics: &str| {
        format!(
            "node {name} {{\n  cpu sockets 1, cores 32\n  memory 512 GiB\n  switch sw[0..1] uplink gen4 x8\n  device H100_SXM x 2 at sw[0..1] link none\n  nic {nics} role compute\n}}\n"
        )
    };
    let pg = "  placement_group pg strategy STRICT_SPREAD {\n    bundle { GPU: 1 } x 2\n  }\n";
    let src = |name: &str, nics: &str, held: bool| {
        let hold = if held {
            format!(
                "workload other {{\n{}{}}}\n",
                holder("h0", "GPU: 1", "r0.n0"),
                holder("h1", "GPU: 1", "r0.n1")
            )
        } else {
            String::new()
        };
        format!(
            "{}cluster c {{\n  rack r0 {{\n    node {name} x 2\n  }}\n}}\n{hold}{}",
            node(name, nics),
            job(pg)
        )
    };
    let near = comm(&run(&src("one_nic", "ib_ndr_400g at sw0", false)));
    let far = comm(&run(&src("one_nic", "ib_ndr_400g at sw0", true)));
    let own = comm(&run(&src("two_nics", "ib_ndr_400g x 2 at sw[0..1]", true)));
    assert!((near - ring2(ALPHA_NET, NDR)).abs() < 1e-8, "{near}");
    assert!((far - ring2(ALPHA_NET, GEN4_X8)).abs() < 1e-8, "{far}");
    assert!((own - ring2(ALPHA_NET, NDR)).abs() < 1e-8, "{own}");
    // 20.0 ms vs 63.5 ms per step.
    assert!(far > 3.0 * near, "{near} {far}");
}

#[test]
fn topology_aware_packs_a_two_node_job_into_one_rack() {
    // Two racks of two nodes, each node one H100 and one NDR NIC under one switch (one NIC per
    // node: one ring channel, no ECMP spread to work out), leaf-spine at 4:1. A leaf's uplink
    // is its 2 × 50 GB/s injection / 4 = 25 GB/s, split over 4 spines: 6.25 GB/s per spine
    // link. An actor holds r0.n1's GPU. The job: one GPU on each of two nodes.
    //
    // Ray's default (STRICT_SPREAD, emptiest node first, ties to the lowest index) puts the
    // bundles on r0.n0 and r1.n0: each direction of the ring crosses one leaf → spine link,
    // β = 6.25 GB/s whatever spine ECMP picks. The topology-aware policy tries single racks
    // that can hold the whole group first: r0 has one free GPU, r1 two, so r1.n0 and r1.n1,
    // whose ring turns in their leaf at the NIC's 50 GB/s. α = 14 µs in both.
    let node = "node one {\n  cpu sockets 1, cores 32\n  memory 512 GiB\n  switch sw0 uplink gen5 x16\n  device H100_SXM x 1 at sw0 link none\n  nic ib_ndr_400g at sw0 role compute\n}\n";
    let cluster = "cluster c {\n  rack r[0..1] {\n    node one x 2\n  }\n  fabric leaf_spine oversubscription 4:1\n}\n";
    let src = |policy: &str| {
        format!(
            "{node}{cluster}workload other {{\n{}}}\n{}",
            holder("h", "GPU: 1", "r0.n1"),
            job(&format!(
                "  placement_group pg strategy STRICT_SPREAD policy {policy} {{\n    bundle {{ GPU: 1 }} x 2\n  }}\n"
            ))
        )
    };
    let ray = run(&src("ray_default"));
    let topo = run(&src("topology_aware"));
    assert_eq!(pg_nodes(&ray), ["r0.n0", "r1.n0"]);
    assert_eq!(pg_nodes(&topo), ["r1.n0", "r1.n1"]);
    let (spread, packed) = (comm(&ray), comm(&topo));
    assert!(
        (spread - ring2(ALPHA_NET, 25e9 / 4.0)).abs() < 1e-8,
        "{spread}"
    );
    assert!((packed - ring2(ALPHA_NET, NDR)).abs() < 1e-8, "{packed}");
    // 160 ms vs 20 ms per step: the spine's 4:1 and its 4-way split cost 8×.
    assert!(spread > 7.0 * packed, "{spread} {packed}");
}
