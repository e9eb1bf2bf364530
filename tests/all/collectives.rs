//! Collectives as flows against their closed forms on uncontended topologies, contention from
//! background traffic, nccl-tests bandwidths, and the errors of unsupported requests.
//!
//! β: a collective over an H100's NVLink gets 370.8 GB/s per direction (NCCL's 20.6 GB/s per
//! link × 18, the catalog's `collective`; line rate 450), an in-switch reduction 0.85 of that
//! (NCCL's Hopper `nvlsEfficiency`); an NDR NIC 50 GB/s. The `box` node pairs every GPU with its own NIC under one PCIe switch (gen5
//! x16, wider than the NIC), so the NIC is each rank's bottleneck across nodes.

use orrery::load_str;
use orrery::network::collective::{
    Algorithm, CollectiveResult, DEFAULT_CHUNK, NVLS_BASE, Op, Options, Rank, bandwidths,
    busbw_factor, simulate, supported,
};
use orrery::network::{FlowNet, Graph};
use orrery::scenario::Spec;
use orrery::sim::models::{ALPHA_NET, ALPHA_NVLINK};

const NVLINK: f64 = 370.8e9;
/// NVLink4's line rate per direction: what other traffic gets.
const LINE: f64 = 450e9;
const NVLS: f64 = NVLINK * 0.85;
const NIC: f64 = 50e9;
/// NCCL's base latency of a ring (and tree) call with Simple, once per call
/// (`baseLatencies`, NCCL 2.30.7 `src/graph/tuning.cc`), and the tree's NVLink hop.
const BASE: f64 = 8.4e-6;
const ALPHA_TREE_NVLINK: f64 = 4.0e-6;

const BOX: &str = "node box {\n  cpu sockets 1, cores 16\n  memory 256 GiB\n  pcie gen5\n  switch sw[0..1] numa 0 uplink gen5 x16\n  device H100_SXM x 2 at sw[0..1] link switch\n  nic ib_ndr_400g x 2 at sw[0..1] role compute\n}\n";

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

/// One DGX H100: 8 GPUs on an NVSwitch.
fn dgx() -> Graph {
    Graph::build(&spec("cluster c {\n  node dgx_h100 x 1\n}\n"))
}

/// `nodes` box nodes in one rack.
fn boxes(nodes: usize) -> Graph {
    Graph::build(&spec(&format!(
        "{BOX}cluster c {{\n  rack r0 {{\n    node box x {nodes}\n  }}\n}}\n"
    )))
}

fn gpus(p: usize) -> Vec<Rank> {
    (0..p).map(|d| (0, d)).collect()
}

fn run(g: &Graph, net: &FlowNet, op: Op, a: Algorithm, ranks: &[Rank], n: f64) -> CollectiveResult {
    run_with(g, net, op, a, ranks, n, &Options::default())
}

fn run_with(
    g: &Graph,
    net: &FlowNet,
    op: Op,
    a: Algorithm,
    ranks: &[Rank],
    n: f64,
    o: &Options,
) -> CollectiveResult {
    simulate(g, net, op, a, ranks, n, o).unwrap_or_else(|e| panic!("{op:?} {a:?}: {e}"))
}

fn idle(g: &Graph) -> FlowNet {
    FlowNet::new(g.capacity.clone())
}

#[track_caller]
fn assert_close(got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs(),
        "got {got:e}, want {want:e} (relative error {:e})",
        (got - want).abs() / want.abs()
    );
}

#[test]
fn ring_allreduce_is_the_closed_form_and_one_simulated_step() {
    let g = dgx();
    let (p, n) = (8.0, 1e9);
    let r = run(&g, &idle(&g), Op::AllReduce, Algorithm::Ring, &gpus(8), n);
    assert_close(
        r.secs,
        BASE + 2.0 * (p - 1.0) * ALPHA_NVLINK + 2.0 * (p - 1.0) / p * n / NVLINK,
    );
    assert_eq!((r.steps, r.flows, r.simulated_steps), (14, 14 * 8, 1));
}

#[test]
fn ring_allgather_and_reduce_scatter_are_half_an_allreduce() {
    let g = dgx();
    let (p, n) = (8.0, 3e8);
    let want = BASE + (p - 1.0) * ALPHA_NVLINK + (p - 1.0) / p * n / NVLINK;
    for op in [Op::AllGather, Op::ReduceScatter] {
        let r = run(&g, &idle(&g), op, Algorithm::Ring, &gpus(8), n);
        assert_close(r.secs, want);
        assert_eq!(r.steps, 7);
    }
}

#[test]
fn pairwise_all_to_all_is_p_minus_one_permutations() {
    // Every shift is a permutation: one flow out of and into each GPU's NVLink per step.
    let g = dgx();
    let (p, n) = (8.0, 8e8);
    let r = run(
        &g,
        &idle(&g),
        Op::AllToAll,
        Algorithm::Pairwise,
        &gpus(8),
        n,
    );
    assert_close(
        r.secs,
        (p - 1.0) * ALPHA_NVLINK + (p - 1.0) / p * n / NVLINK,
    );
    assert_eq!((r.steps, r.simulated_steps), (7, 7));
}

#[test]
fn send_recv_is_one_step_inside_and_across_nodes() {
    let g = dgx();
    let n = 2e9;
    let r = run(
        &g,
        &idle(&g),
        Op::SendRecv,
        Algorithm::Pairwise,
        &gpus(2),
        n,
    );
    assert_close(r.secs, ALPHA_NVLINK + n / NVLINK);
    let b = boxes(2);
    let r = run(
        &b,
        &idle(&b),
        Op::SendRecv,
        Algorithm::Pairwise,
        &[(0, 0), (1, 0)],
        n,
    );
    assert_close(r.secs, ALPHA_NET + n / NIC);
}

#[test]
fn broadcast_is_a_pipelined_chain_from_the_root() {
    // p − 1 hops pay α once each; k + p − 2 chunk steps of c/β (every GPU sends and receives at
    // most one chunk per step).
    let g = dgx();
    let (p, c) = (8.0, DEFAULT_CHUNK);
    let k = 16.0;
    let r = run(
        &g,
        &idle(&g),
        Op::Broadcast { root: 3 },
        Algorithm::Ring,
        &gpus(8),
        k * c,
    );
    assert_close(
        r.secs,
        BASE + (p - 1.0) * ALPHA_NVLINK + (k + p - 2.0) * c / NVLINK,
    );
    assert_eq!(r.steps, 16 + 6);
    // A short last chunk: only the final step, the last hop alone, moves it.
    let tail = 1000.0;
    let r = run(
        &g,
        &idle(&g),
        Op::Broadcast { root: 0 },
        Algorithm::Ring,
        &gpus(8),
        k * c + tail,
    );
    let want = BASE + (p - 1.0) * ALPHA_NVLINK + ((k + 1.0 + p - 3.0) * c + tail) / NVLINK;
    assert_close(r.secs, want);
}

#[test]
fn tree_allreduce_matches_its_derived_closed_form() {
    // 2 ranks: each tree is one edge, 1 → 0 and 0 → 1. Step 0 sends both trees' chunk 0 up
    // (one flow each way), steps 1..k−1 add the previous chunk coming down (two each way),
    // step k only the last one down: 2 stages of α and 2c/β + (k−1)·2c/β = n/β.
    let g = dgx();
    let c = DEFAULT_CHUNK;
    let k = 8.0;
    let n = 2.0 * k * c;
    let r = run(&g, &idle(&g), Op::AllReduce, Algorithm::Tree, &gpus(2), n);
    assert_close(r.secs, BASE + 2.0 * ALPHA_TREE_NVLINK + n / NVLINK);
    // 4 ranks on one node: NCCL's trees in a node are chains, A 3 → 2 → 1 → 0 and B the
    // reverse 0 → 1 → 2 → 3, each up then down (6 stages at offsets 0..5, half the bytes
    // each). On the NVSwitch a step lasts L·c/β, L the most flows on one GPU's link in either
    // direction: rank 1 receives in stages {0, 1, 3, 4}, rank 2 sends in {1, 2, 4, 5}, so
    // the k + 5 steps have L = 1, 2, 2, 3, then 4 for steps 4 to k, then 3, 2, 2, 1:
    // T = 6α + (4k + 4)·c/β.
    let r = run(&g, &idle(&g), Op::AllReduce, Algorithm::Tree, &gpus(4), n);
    assert_close(
        r.secs,
        BASE + 6.0 * ALPHA_TREE_NVLINK + (4.0 * k + 4.0) * c / NVLINK,
    );
    assert_eq!(r.steps, 8 + 5);
}

#[test]
fn nvls_reduces_in_the_nvswitch() {
    // Per chunk: stage 0 sends c up and c/p down, stage 1 c/p up and c down. Steps 0 and k
    // take c/β, the k − 1 overlapped ones (c + c/p)/β: (n + n/p + c − c/p)/β in all. The
    // chunk is NCCL's loop: 16 channels × 8 heads × 32 KiB at 32 MiB (enqueue.cc: 32 KiB
    // from 8 MiB to 64 MiB), each stretched by 1 + 4.7 KiB / 32 KiB.
    let g = dgx();
    let p = 8.0;
    let n = 32.0 * 1024.0 * 1024.0;
    let c = 16.0 * 8.0 * 32768.0;
    let stretch = 1.0 + 4.7 * 1024.0 / 32768.0;
    let r = run(
        &g,
        &idle(&g),
        Op::AllReduce,
        Algorithm::InSwitch,
        &gpus(8),
        n,
    );
    let want = NVLS_BASE + 2.0 * ALPHA_NVLINK + (n + n / p + c - c / p) * stretch / NVLS;
    assert_close(r.secs, want);
    // At 8 GiB (128 KiB chunks) busbw is above the link rate, as measured NVLS is (nccl-tests
    // #212: ~480 GB/s on 8 H100s); at 32 MiB it is not yet.
    assert!(r.busbw < NVLINK, "{}", r.busbw);
    let big = run(
        &g,
        &idle(&g),
        Op::AllReduce,
        Algorithm::InSwitch,
        &gpus(8),
        8.0 * 1024f64.powi(3),
    );
    assert!(big.busbw > NVLINK, "{}", big.busbw);
}

/// NCCL's NVLS tree across two DGX H100s: each node's switch reduces and multicasts, the
/// nodes swap their reduced slices over the NICs (rank i with rank i), pipelined. At a large
/// size it runs at the switch's rate, so its bus bandwidth over 16 ranks lies between the
/// NICs-bound ring's and what one node's NVLS would give the same bytes per rank
/// (30/16 of its algorithm bandwidth against one node's 14/8).
#[test]
fn an_nvls_tree_runs_at_the_switchs_rate_past_the_nics() {
    let two = Graph::build(&spec(
        "cluster c {\n  rack r0 {\n    node dgx_h100 x 2\n  }\n  fabric fat_tree\n}\n",
    ));
    let ranks: Vec<Rank> = (0..2).flat_map(|n| (0..8).map(move |d| (n, d))).collect();
    let n = 4.0 * 1024.0 * 1048576.0;
    let tree = run(
        &two,
        &idle(&two),
        Op::AllReduce,
        Algorithm::NvlsTree,
        &ranks,
        n,
    );
    let ring = run(&two, &idle(&two), Op::AllReduce, Algorithm::Ring, &ranks, n);
    let one = dgx();
    let nvls = run(
        &one,
        &idle(&one),
        Op::AllReduce,
        Algorithm::InSwitch,
        &gpus(8),
        n,
    );
    let bus = |secs: f64, p: f64| n / secs * 2.0 * (p - 1.0) / p;
    let (t, r) = (bus(tree.secs, 16.0), bus(ring.secs, 16.0));
    assert!(t > r * 1.1, "tree {t:e} ring {r:e}");
    assert!(t < bus(nvls.secs, 16.0) * 1.01, "tree {t:e}");
    // Its base is NCCL's latency for it, 25 µs + 2 × 20.9 µs: with the links' α set to 0, a
    // 1 KiB call is that base and its few nanoseconds of bytes.
    let no_alpha = Options {
        alpha: Some(0.0),
        ..Options::default()
    };
    let small = run_with(
        &two,
        &idle(&two),
        Op::AllReduce,
        Algorithm::NvlsTree,
        &ranks,
        1024.0,
        &no_alpha,
    );
    assert!(
        small.secs >= 66.8e-6 && small.secs < 66.9e-6,
        "{}",
        small.secs
    );
}

#[test]
fn sharp_reduces_in_the_leaf_switch() {
    // One rank on each of 4 nodes: up the NIC to the leaf, the result multicast back down.
    let b = boxes(4);
    let c = DEFAULT_CHUNK;
    let n = 32.0 * c;
    let ranks: Vec<Rank> = (0..4).map(|i| (i, 0)).collect();
    let r = run(&b, &idle(&b), Op::AllReduce, Algorithm::InSwitch, &ranks, n);
    assert_close(r.secs, 2.0 * ALPHA_NET + (n + c) / NIC);
}

#[test]
fn hierarchical_is_intra_reduce_scatter_inter_rails_intra_allgather() {
    // 4 nodes × 2 GPUs: NVSwitch rings of g = 2 inside, 2 rails of m = 4 nodes across, each
    // rank on its own NIC.
    let b = boxes(4);
    let (g, m, n) = (2.0, 4.0, 1e9);
    let ranks: Vec<Rank> = (0..4).flat_map(|i| [(i, 0), (i, 1)]).collect();
    let half = (g - 1.0) * ALPHA_NVLINK + (g - 1.0) / g * n / NVLINK;
    let inter = |f: f64| f * (m - 1.0) * ALPHA_NET + f * (m - 1.0) / m * (n / g) / NIC;
    let r = run(
        &b,
        &idle(&b),
        Op::AllReduce,
        Algorithm::Hierarchical,
        &ranks,
        n,
    );
    assert_close(r.secs, BASE + 2.0 * half + inter(2.0));
    assert_eq!(r.steps, 1 + 6 + 1);
    // The intra-node allgather repeats the reduce-scatter's pattern: reused, not re-run.
    assert_eq!(r.simulated_steps, 2);
    for op in [Op::ReduceScatter, Op::AllGather] {
        let r = run(&b, &idle(&b), op, Algorithm::Hierarchical, &ranks, n);
        assert_close(r.secs, BASE + half + inter(1.0));
    }
    // Flat: two channels (one per NIC, as NCCL's rings), each a ring with half the bytes that
    // crosses the network every step on its own NIC at the NIC's full rate; a chunk's path
    // crosses it 2(4 − 1) of the 14 steps (NCCL's latency: the network α there, NVLink's on
    // the others).
    let flat = run(&b, &idle(&b), Op::AllReduce, Algorithm::Ring, &ranks, n);
    assert_close(
        flat.secs,
        BASE + 8.0 * ALPHA_NVLINK + 6.0 * ALPHA_NET + 2.0 * 7.0 / 8.0 * (n / 2.0) / NIC,
    );
    // With g = 2 the intra-node phases (at NVLink's collective rate) cost about what the flat
    // ring's extra network bytes do: the two are within 2 % here, as the closed forms say.
    assert!((r.secs - flat.secs).abs() < 0.02 * flat.secs);
}

#[test]
fn a_background_flow_slows_a_collective_by_the_max_min_amount() {
    let g = dgx();
    let (p, n) = (8.0, 8e8);
    let c = n / p;
    // A 1 TB transfer 5 → 1 outlasts the collective: every step's flow into GPU 1 shares that
    // GPU's NVLink with it at half rate, so the bandwidth term doubles.
    let mut busy = idle(&g);
    busy.add(g.route((0, 5), (0, 1), 0).unwrap(), 1e12);
    let r = run(&g, &busy, Op::AllGather, Algorithm::Ring, &gpus(8), n);
    assert_close(
        r.secs,
        BASE + (p - 1.0) * ALPHA_NVLINK + 2.0 * (p - 1.0) / p * n / NVLINK,
    );
    // A short one (b < c) shares the link until it ends: the link moves the step's c (at the
    // collective's share of line rate) and b (at line rate) per step. Every step sees the
    // background as given (a steady load), so each pays it again.
    let b = c / 4.0;
    let mut short = idle(&g);
    short.add(g.route((0, 5), (0, 1), 0).unwrap(), b);
    let r = run(&g, &short, Op::AllGather, Algorithm::Ring, &gpus(8), n);
    assert_close(
        r.secs,
        BASE + (p - 1.0) * ALPHA_NVLINK + (p - 1.0) * (c / NVLINK + b / LINE),
    );
    // Across nodes: a transfer into node 1's NIC halves a send/recv pair's inbound share.
    let bx = boxes(3);
    let mut net = idle(&bx);
    net.add(bx.route((2, 0), (1, 0), 0).unwrap(), 1e12);
    let r = run(
        &bx,
        &net,
        Op::SendRecv,
        Algorithm::Pairwise,
        &[(0, 0), (1, 0)],
        n,
    );
    assert_close(r.secs, ALPHA_NET + n / (NIC / 2.0));
}

#[test]
fn reusing_identical_steps_is_exact() {
    // Two racks of two DGX nodes on a 2:1 leaf-spine, loaded by a background flow on a spine
    // path: reuse must give exactly what simulating every step does.
    let s = spec(
        "cluster c {\n  rack r[0..1] {\n    node dgx_h100 x 2\n  }\n  fabric leaf_spine oversubscription 2:1\n}\n",
    );
    let g = Graph::build(&s);
    let mut net = idle(&g);
    for k in 0..4 {
        net.add(g.route((0, 7), (2, 0), k).unwrap(), 1e12);
    }
    let ranks: Vec<Rank> = (0..32).map(|d| (d / 8, d % 8)).collect();
    let all = Options {
        reuse: false,
        ..Options::default()
    };
    for (op, a) in [
        (Op::AllReduce, Algorithm::Ring),
        (Op::AllReduce, Algorithm::Hierarchical),
        (Op::AllReduce, Algorithm::Tree),
        (Op::Broadcast { root: 5 }, Algorithm::Ring),
    ] {
        // A broadcast's 8 channels carry an eighth each: 1 GB gives each more chunks than
        // the chain has hops, so steady steps repeat.
        let n = if a == Algorithm::Ring && matches!(op, Op::Broadcast { .. }) {
            1e9
        } else {
            1e8
        };
        let fast = run(&g, &net, op, a, &ranks, n);
        let slow = run_with(&g, &net, op, a, &ranks, n, &all);
        // Equal up to summation order (k·t against t + … + t).
        assert!(
            (fast.secs - slow.secs).abs() <= 1e-12 * slow.secs,
            "{op:?} {a:?}: {} vs {}",
            fast.secs,
            slow.secs
        );
        assert_eq!((fast.steps, fast.flows), (slow.steps, slow.flows));
        assert_eq!(slow.simulated_steps, slow.steps);
        assert!(
            fast.simulated_steps < slow.simulated_steps,
            "{op:?} {a:?}: {} {}",
            fast.simulated_steps,
            slow.simulated_steps
        );
    }
}

#[test]
fn a_ring_across_a_fat_tree_is_bound_by_the_nics() {
    // 512 GPUs on 64 DGX nodes: 8 channels, one per NIC (NCCL's rings over all of a node's
    // NICs); each channel's hop between nodes goes NIC to NIC at 50 GB/s with n/(8p), so every
    // step moves n/(8p) at the NIC rate; one simulated step. Latency as NCCL's path: a chunk
    // crosses the network 2(64 − 1) times, paying the network α there and NVLink's (above the
    // net post overhead, 3 µs for Simple) on the other steps.
    let s =
        spec("cluster c {\n  rack r[0..1] {\n    node dgx_h100 x 32\n  }\n  fabric fat_tree\n}\n");
    let g = Graph::build(&s);
    let ranks: Vec<Rank> = (0..512).map(|d| (d / 8, d % 8)).collect();
    let (p, n) = (512.0, 1e9);
    let r = run(&g, &idle(&g), Op::AllReduce, Algorithm::Ring, &ranks, n);
    let alpha = (1022.0 - 126.0) * ALPHA_NVLINK.max(3e-6) + 126.0 * ALPHA_NET;
    assert_close(r.secs, BASE + alpha + 2.0 * (p - 1.0) * n / (8.0 * p) / NIC);
    assert_eq!((r.steps, r.simulated_steps), (1022, 1));
}

#[test]
fn bandwidths_are_nccl_tests() {
    let g = dgx();
    let n = 1e9;
    for (op, a, factor) in [
        (Op::AllReduce, Algorithm::Ring, 1.75),
        (Op::AllGather, Algorithm::Ring, 0.875),
        (Op::ReduceScatter, Algorithm::Ring, 0.875),
        (Op::AllToAll, Algorithm::Pairwise, 0.875),
        (Op::Broadcast { root: 0 }, Algorithm::Ring, 1.0),
        (Op::SendRecv, Algorithm::Pairwise, 1.0),
    ] {
        assert_eq!(busbw_factor(op.name(), 8), factor, "{op:?}");
        let r = run(&g, &idle(&g), op, a, &gpus(8), n);
        assert_close(r.algbw, n / r.secs);
        assert_close(r.busbw, r.algbw * factor);
        assert_eq!(bandwidths(op.name(), 8, n, r.secs), (r.algbw, r.busbw));
    }
    // An uncontended ring allreduce without α reports busbw = the link rate.
    let zero = Options {
        alpha: Some(0.0),
        ..Options::default()
    };
    let r = run_with(
        &g,
        &idle(&g),
        Op::AllReduce,
        Algorithm::Ring,
        &gpus(8),
        n,
        &zero,
    );
    assert_close(r.busbw, NVLINK);
}

const OPS: [Op; 6] = [
    Op::AllReduce,
    Op::AllGather,
    Op::ReduceScatter,
    Op::Broadcast { root: 0 },
    Op::AllToAll,
    Op::SendRecv,
];
const ALGOS: [Algorithm; 5] = [
    Algorithm::Ring,
    Algorithm::Tree,
    Algorithm::InSwitch,
    Algorithm::Hierarchical,
    Algorithm::Pairwise,
];

#[test]
fn unsupported_combinations_are_errors() {
    let g = dgx();
    let mut have = Vec::new();
    for op in OPS {
        for a in ALGOS {
            let r = simulate(&g, &idle(&g), op, a, &gpus(4), 1e6, &Options::default());
            assert_eq!(r.is_ok(), supported(op, a), "{op:?} {a:?}: {r:?}");
            match r {
                Ok(_) => have.push((op.name(), a.name())),
                Err(e) => assert!(
                    e.contains(op.name()) && e.contains("has no") && e.contains(a.name()),
                    "{e}"
                ),
            }
        }
    }
    assert_eq!(
        have,
        [
            ("allreduce", "ring"),
            ("allreduce", "tree"),
            ("allreduce", "nvls"),
            ("allreduce", "hierarchical"),
            ("allgather", "ring"),
            ("allgather", "hierarchical"),
            ("reduce_scatter", "ring"),
            ("reduce_scatter", "hierarchical"),
            ("broadcast", "ring"),
            ("alltoall", "pairwise"),
            ("sendrecv", "pairwise"),
        ]
    );
}

#[test]
fn impossible_groups_are_errors() {
    let g = dgx();
    let o = Options::default();
    let err = |g: &Graph, op: Op, a: Algorithm, ranks: &[Rank]| {
        simulate(g, &idle(g), op, a, ranks, 1e6, &o).unwrap_err()
    };
    assert!(err(&g, Op::AllReduce, Algorithm::Ring, &[(0, 1), (0, 1)]).contains("twice"));
    assert!(err(&g, Op::Broadcast { root: 4 }, Algorithm::Ring, &gpus(4)).contains("root"));
    assert!(err(&g, Op::AllReduce, Algorithm::Ring, &[(0, 0), (0, 9)]).contains("no route"));
    let uneven = [(0, 0), (0, 1), (1, 0)];
    let b = boxes(2);
    assert!(err(&b, Op::AllReduce, Algorithm::Hierarchical, &uneven).contains("same number"));
    // In-switch needs an NVSwitch on one node, one leaf across nodes.
    let pcie = Graph::build(&spec(
        "node plain {\n  cpu sockets 1, cores 16\n  memory 64 GiB\n  device L4 x 2 link none\n  nic roce_400g\n}\ncluster c {\n  rack r[0..1] {\n    node plain x 1\n  }\n  fabric leaf_spine oversubscription 1:1\n}\n",
    ));
    assert!(err(&pcie, Op::AllReduce, Algorithm::InSwitch, &[(0, 0), (0, 1)]).contains("NVSwitch"));
    // Its RoCE NICs plug into Ethernet leaves, where SHARP does not reduce; on InfiniBand
    // the two racks' leaves still differ.
    assert!(
        err(&pcie, Op::AllReduce, Algorithm::InSwitch, &[(0, 0), (1, 0)])
            .contains("InfiniBand switches")
    );
    let ib = Graph::build(&spec(
        "node plain {\n  cpu sockets 1, cores 16\n  memory 64 GiB\n  device L4 x 2 link none\n  nic ib_ndr_400g\n}\ncluster c {\n  rack r[0..1] {\n    node plain x 1\n  }\n  fabric leaf_spine oversubscription 1:1\n}\n",
    ));
    assert!(err(&ib, Op::AllReduce, Algorithm::InSwitch, &[(0, 0), (1, 0)]).contains("one leaf"));
    // An NVLS tree needs two or more NVSwitch nodes with as many ranks on each.
    assert!(err(&g, Op::AllReduce, Algorithm::NvlsTree, &gpus(8)).contains("two or more"));
    let two = Graph::build(&spec(
        "cluster c {\n  rack r0 {\n    node dgx_h100 x 2\n  }\n  fabric fat_tree\n}\n",
    ));
    assert!(
        err(
            &two,
            Op::AllReduce,
            Algorithm::NvlsTree,
            &[(0, 0), (0, 1), (1, 0)]
        )
        .contains("same number")
    );
    // A dead link on the path: the step can never finish.
    let mut dead = idle(&g);
    dead.set_capacity(g.route((0, 0), (0, 1), 0).unwrap()[0], 0.0);
    let e = simulate(
        &g,
        &dead,
        Op::SendRecv,
        Algorithm::Pairwise,
        &gpus(2),
        1e6,
        &o,
    )
    .unwrap_err();
    assert!(e.contains("cannot progress"), "{e}");
    let bad = Options {
        chunk: 0.0,
        ..Options::default()
    };
    assert!(
        simulate(
            &g,
            &idle(&g),
            Op::AllReduce,
            Algorithm::Tree,
            &gpus(2),
            1e6,
            &bad
        )
        .is_err()
    );
    assert!(
        simulate(
            &g,
            &idle(&g),
            Op::AllReduce,
            Algorithm::Ring,
            &gpus(2),
            f64::NAN,
            &o
        )
        .is_err()
    );
}

#[test]
fn one_rank_costs_nothing() {
    let g = dgx();
    for op in OPS {
        for a in ALGOS.into_iter().filter(|a| supported(op, *a)) {
            let r = run(&g, &idle(&g), op, a, &gpus(1), 1e9);
            assert_eq!(
                (r.secs, r.algbw, r.busbw, r.steps, r.flows),
                (0.0, 0.0, 0.0, 0, 0),
                "{op:?} {a:?}"
            );
        }
    }
    // Two ranks do cost something (the check above can fail).
    assert!(run(&g, &idle(&g), Op::AllReduce, Algorithm::Ring, &gpus(2), 1e9).secs > 0.0);
}

#[test]
fn bench_allreduce_reports_events_and_the_simulated_time() {
    use orrery::bench::bench_allreduce;
    // 512 GPUs, 1 GiB: one simulated step of 8 channels × 512 flows (1 start event, 4,096
    // completions) and the NIC-bound closed form of the fat-tree test.
    let (events, wall, secs) = bench_allreduce(512).unwrap();
    let (p, n) = (512.0, (1u64 << 30) as f64);
    assert_eq!(events, 1 + 8 * 512);
    assert!(wall > 0.0);
    let alpha = (1022.0 - 126.0) * ALPHA_NVLINK.max(3e-6) + 126.0 * ALPHA_NET;
    assert_close(secs, BASE + alpha + 2.0 * (p - 1.0) * n / (8.0 * p) / NIC);
    assert!(bench_allreduce(0).is_err());
}

#[test]
fn hierarchical_over_slices_reduces_on_ici_before_the_data_centre_network() {
    // Two 2x2x2 TPU v5p slices (2 hosts of 4 chips each, 2 NICs per host, chips alternating
    // over them) on a leaf-spine whose spines are never the bottleneck (ECMP could otherwise
    // put 3 of the 8 cross-slice flows on one spine). A slice is one scale-up domain: the allreduce
    // reduce-scatters over ICI inside each slice, then runs g = 8 parallel rings (one per chip
    // index) across the m = 2 slices on n/8, then all-gathers over ICI. Only that middle phase
    // touches the NICs: 2(m − 1) steps of n/(g·m) bytes at S/2 (two chips share a NIC of speed
    // S). Halving the NICs' speed therefore adds exactly 2 · n/16 · (2/S' − 2/S).
    let run = |nic: &str| {
        let s = spec(&format!(
            "nic dcn {{\n  speed {nic}\n  protocol ethernet\n  rdma false\n  gpudirect false\n}}\nnode host {{\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  device TPU_v5p x 4 link torus\n  nic dcn x 2 role compute\n}}\ncluster c {{\n  slice s[0..1] node host topology 2x2x2\n  fabric leaf_spine spine_uplink 10 Tbps\n}}\n"
        ));
        let g = Graph::build(&s);
        let ranks: Vec<Rank> = (0..4).flat_map(|h| (0..4).map(move |d| (h, d))).collect();
        let net = FlowNet::new(g.capacity.clone());
        let n = 16e9;
        let hier = simulate(
            &g,
            &net,
            Op::AllReduce,
            Algorithm::Hierarchical,
            &ranks,
            n,
            &Options::default(),
        )
        .unwrap();
        let flat = simulate(
            &g,
            &net,
            Op::AllReduce,
            Algorithm::Ring,
            &ranks,
            n,
            &Options::default(),
        )
        .unwrap();
        (hier.secs, flat.secs)
    };
    let (h100, f100) = run("100 Gbps");
    let (h50, _) = run("50 Gbps");
    assert!(h100 < f100, "hierarchical {h100} vs flat {f100}");
    let n = 16e9;
    let expect = 2.0 * n / 16.0 * (2.0 / 6.25e9 - 2.0 / 12.5e9);
    assert!(
        ((h50 - h100) - expect).abs() < 1e-9 * expect,
        "{} vs {expect}",
        h50 - h100
    );
}

#[test]
fn shared_network_rounds_take_what_the_private_simulation_gives_on_an_idle_network() {
    // The schedule the simulation runs on its one network (merged repeats, a ring as one
    // chain over its hops) against the step-by-step simulation, for every algorithm on the
    // fabrics the other tests use.
    use orrery::network::collective::{run_rounds, schedule};
    let b = boxes(4);
    let fat = Graph::build(&spec(
        "cluster c {\n  rack r[0..1] {\n    node dgx_h100 x 4\n  }\n  fabric fat_tree\n}\n",
    ));
    let two: Vec<Rank> = (0..4).flat_map(|i| [(i, 0), (i, 1)]).collect();
    let dgx: Vec<Rank> = (0..32).map(|d| (d / 8, d % 8)).collect();
    let cases: Vec<(&Graph, Op, Algorithm, &[Rank])> = vec![
        (&b, Op::AllReduce, Algorithm::Ring, &two),
        (&b, Op::AllReduce, Algorithm::Hierarchical, &two),
        (&b, Op::AllGather, Algorithm::Hierarchical, &two),
        (&b, Op::ReduceScatter, Algorithm::Ring, &two),
        (&b, Op::AllReduce, Algorithm::Tree, &two),
        (&b, Op::AllToAll, Algorithm::Pairwise, &two),
        (&fat, Op::AllReduce, Algorithm::Ring, &dgx),
        (&fat, Op::AllReduce, Algorithm::Hierarchical, &dgx),
        (&fat, Op::AllGather, Algorithm::Ring, &dgx),
    ];
    for (g, op, a, ranks) in cases {
        let net = idle(g);
        let want = run(g, &net, op, a, ranks, 1e9).secs;
        let rounds = schedule(g, op, a, ranks, 1e9, &Options::default()).unwrap();
        let got = run_rounds(&net, &rounds).unwrap();
        assert!(
            (got - want).abs() <= 1e-9 * want,
            "{op:?} {a:?} over {} ranks: rounds {got} vs steps {want}",
            ranks.len()
        );
        // A ring round is one chain per ring (channel), not one flow per hop.
        if a == Algorithm::Ring {
            assert!(rounds.iter().all(|r| r.chains.len() <= 8), "{op:?}");
        }
    }
}

/// On a fully meshed node (MI300X: seven Infinity Fabric links of 64 GB/s per direction per
/// device, of which RCCL's collectives get 48, `GFX94X_XGMI_WIDTH`) a ring collective runs
/// p − 1 rings, arc-disjoint Hamiltonian cycles of the mesh, each on its own directed links,
/// so it moves at all 7 links' bandwidth: the closed form with 7 × 48 = 336 GB/s (the
/// catalog's `collective` figure) where one ring would give 48.
#[test]
fn a_mesh_node_runs_one_ring_per_link() {
    // Eight fully linked devices: seven arc-disjoint Hamiltonian rings, each on its own
    // 48 GB/s links, so the rings together use all seven links of every device.
    let g = Graph::build(&spec("cluster c {\n  node mi300x_8 x 1\n}\n"));
    let (p, n) = (8.0, 1e9);
    let link = 48e9;
    let r = run(&g, &idle(&g), Op::AllReduce, Algorithm::Ring, &gpus(8), n);
    assert_close(
        r.secs,
        2.0 * (p - 1.0) * ALPHA_NVLINK + 2.0 * (p - 1.0) / p * n / (7.0 * link),
    );
    assert_eq!(r.flows, 14 * 8 * 7);
    // Four devices have no three arc-disjoint Hamiltonian cycles (Tillson): two rings, one
    // each way round.
    let r = run(&g, &idle(&g), Op::AllGather, Algorithm::Ring, &gpus(4), n);
    assert_close(r.secs, 3.0 * ALPHA_NVLINK + 3.0 / 4.0 * n / (2.0 * link));
    // An NVSwitch node keeps one ring: every ring would share the same switch links.
    let g = dgx();
    let r = run(&g, &idle(&g), Op::AllReduce, Algorithm::Ring, &gpus(8), n);
    assert_eq!(r.flows, 14 * 8);
}

/// Across nodes NCCL lays its double binary trees over every channel, each channel leaving a
/// node through its own NIC (as its rings do): two nodes of two GPUs, each GPU with its own NIC,
/// give two channels, so the pipeline carries twice the flows, each channel half the bytes.
#[test]
fn a_tree_across_nodes_runs_on_every_nics_channel() {
    let b = boxes(2);
    let c = DEFAULT_CHUNK;
    let n = 16.0 * c;
    let ranks: Vec<Rank> = vec![(0, 0), (0, 1), (1, 0), (1, 1)];
    let r = run(&b, &idle(&b), Op::AllReduce, Algorithm::Tree, &ranks, n);
    // k = (n/2)/c = 8 chunks; 2 trees × 2(p − 1) = 12 stages per channel, each moving k chunks.
    assert_eq!(r.flows, 2 * 12 * 8);
    // One node keeps one tree: 12 stages.
    let g = dgx();
    let one = run(&g, &idle(&g), Op::AllReduce, Algorithm::Tree, &gpus(4), n);
    assert_eq!(one.flows, 12 * 8);
}
