//! One network per run: every training job's collectives and every task's input fetch share
//! the cluster's links max-min, checked against closed forms on hand-built clusters.

use orrery::sim::{SimConfig, simulate};
use orrery::spec::{Spec, load_str};

/// NCCL's per-step network α (tuning.cc hwLat, `orrery::sim::models::ALPHA_NET`).
const ALPHA: f64 = 14e-6;
/// ConnectX-7 NDR and a 100 GbE NIC, per direction.
const NDR: f64 = 50e9;
const ETH: f64 = 12.5e9;

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

/// A node type with two H100s and one NIC under one PCIe switch, custom resources `res`.
fn node(name: &str, nic: &str, res: &str) -> String {
    format!(
        "node {name} {{\n  cpu sockets 1, cores 32\n  memory 512 GiB\n  switch sw0 uplink gen5 x16\n  device H100_SXM x 2 at sw0 link none\n  nic {nic} at sw0 role compute\n  resources {{ {res} }}\n}}\n"
    )
}

/// A training job on two nodes holding resource `r`, `steps` steps of a 1 GB ring allreduce.
fn job(name: &str, r: &str, steps: u32) -> String {
    format!(
        "workload {name} {{\n  placement_group pg strategy STRICT_SPREAD {{\n    bundle {{ GPU: 1, {r}: 1 }} x 2\n  }}\n  training t on pg steps {steps} {{\n    compute 1 TFLOP per device bf16\n    allreduce 1 GB algo ring\n  }}\n}}\n"
    )
}

/// Seconds of communication per step of each training job.
fn comm(s: &Spec) -> Vec<f64> {
    let r = simulate(s, &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(
        r.network_models.iter().all(|m| m.on_graph),
        "{:?}",
        r.network_models
    );
    r.metrics
        .training
        .iter()
        .map(|t| t.communication_time / t.steps_done as f64)
        .collect()
}

#[test]
fn two_equal_jobs_on_one_bottleneck_get_half_of_it_each() {
    // Two nodes, one NDR NIC each; each job holds one GPU on both nodes, so both rings
    // (p = 2: one hop each way) cross the same two NICs. Alone a ring moves n at 50 GB/s:
    // 2α + n/β; together, in lock step, each gets half: 2α + n/(β/2).
    let nodes = node("box", "ib_ndr_400g", "ra: 1, rb: 1");
    let cluster = "cluster c {\n  rack r0 {\n    node box x 2\n  }\n}\n";
    let alone = comm(&spec(&format!("{nodes}{cluster}{}", job("a", "ra", 3))));
    let both = comm(&spec(&format!(
        "{nodes}{cluster}{}{}",
        job("a", "ra", 3),
        job("b", "rb", 3)
    )));
    let n = 1e9;
    assert!(
        (alone[0] - (2.0 * ALPHA + n / NDR)).abs() < 1e-8,
        "{alone:?}"
    );
    for c in &both {
        assert!(
            (c - (2.0 * ALPHA + n / (NDR / 2.0))).abs() < 1e-8,
            "{both:?}"
        );
    }
}

#[test]
fn background_traffic_of_known_rate_removes_exactly_its_share() {
    // Job b spans n0 and a node behind a 100 GbE NIC: its ring runs at 12.5 GB/s wherever it
    // goes, n0's NDR NIC included. Job a (n0 and n1, one step) shares n0's NIC with it and
    // gets what is left: 50 − 12.5 = 37.5 GB/s. b's communication (80 ms) outlasts a's.
    let nodes = format!(
        "{}{}{}",
        node("both", "ib_ndr_400g", "ra: 1, rb: 1"),
        node("only_a", "ib_ndr_400g", "ra: 1"),
        node("slow", "eth_100g", "rb: 1")
    );
    let cluster = "cluster c {\n  rack r0 {\n    node both x 1\n    node only_a x 1\n    node slow x 1\n  }\n}\n";
    let c = comm(&spec(&format!(
        "{nodes}{cluster}{}{}",
        job("a", "ra", 1),
        job("b", "rb", 1)
    )));
    let n = 1e9;
    assert!(
        (c[0] - (2.0 * ALPHA + n / (NDR - ETH))).abs() < 1e-8,
        "{c:?}"
    );
    assert!((c[1] - (2.0 * ALPHA + n / ETH)).abs() < 1e-8, "{c:?}");
}

/// Eight one-NIC nodes in one rack, two of them with the jobs' resources (a 1:1 leaf has 8 × 50 GB/s up: 100 GB/s per spine
/// uplink, so a node's NIC, not the spine, bounds its write), jobs with a 100 GB checkpoint
/// after their first step to storage `s` declared by `storage`; seconds each checkpoint took.
fn checkpoint_secs(storage: &str, jobs: &str) -> Vec<f64> {
    let nodes = format!(
        "{}{}",
        node("box", "ib_ndr_400g", "ra: 1, rb: 1"),
        node("plain", "ib_ndr_400g", "other: 1")
    );
    let text = format!(
        "{nodes}cluster c {{\n  rack r0 {{\n    node box x 2\n    node plain x 6\n  }}\n  fabric leaf_spine\n{storage}}}\n{jobs}"
    );
    let s = spec(&text);
    let r = simulate(&s, &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(
        r.network_models.iter().any(|m| m.on_graph
            && m.text
                .contains("to storage `s` on the run's shared network")),
        "{:?}",
        r.network_models
    );
    r.metrics
        .training
        .iter()
        .map(|t| t.checkpoint_time)
        .collect()
}

fn ckpt_job(name: &str, r: &str, size_gb: u32) -> String {
    format!(
        "workload {name} {{\n  placement_group pg strategy STRICT_SPREAD {{\n    bundle {{ GPU: 1, {r}: 1 }} x 2\n  }}\n  training t on pg steps 2 {{\n    compute 1 TFLOP per device bf16\n    allreduce 1 GB algo ring\n    checkpoint every 1 ms size {size_gb} GB to s\n  }}\n}}\n"
    )
}

#[test]
fn a_checkpoint_moves_each_nodes_share_to_its_storage_over_the_network() {
    // Behind the fabric (400 GB/s, 100 GB/s per spine uplink): each node sends 50 GB through
    // its 50 GB/s NIC: 1 s. To a node-local drive of 2 GB/s: 50 GB / 2 GB/s = 25 s.
    let fabric = "  storage s {\n    bandwidth 400 GB/s\n    attach fabric\n    latency 0 s\n  }\n";
    let local =
        "  storage s {\n    bandwidth 2 GB/s\n    attach node_local\n    latency 0 s\n  }\n";
    let f = checkpoint_secs(fabric, &ckpt_job("a", "ra", 100));
    assert!((f[0] - 50e9 / NDR).abs() < 1e-6, "{f:?}");
    let l = checkpoint_secs(local, &ckpt_job("a", "ra", 100));
    assert!((l[0] - 50e9 / 2e9).abs() < 1e-6, "{l:?}");
    // Two jobs writing at once through the same two NICs get half of each: 2 s.
    let both = checkpoint_secs(
        fabric,
        &format!("{}{}", ckpt_job("a", "ra", 100), ckpt_job("b", "rb", 100)),
    );
    for c in &both {
        assert!((c - 50e9 / (NDR / 2.0)).abs() < 1e-6, "{both:?}");
    }
}

#[test]
fn a_fetch_on_a_nic_that_goes_down_starts_again_over_another_nic() {
    // b reads a's 100 GB outputs, one from the other node, by RDMA over the GPUs' nearest
    // NIC (nic0 on both nodes). nic0 goes down mid-fetch on both: the fetch, stuck on a link
    // with no capacity, starts again over nic1 and finishes, later than without the fault.
    let node = "node two_nic {\n  cpu sockets 1, cores 32\n  memory 512 GiB\n  switch sw0 uplink gen5 x16\n  device H100_SXM x 2 at sw0 link none\n  nic ib_ndr_400g x 2 at sw0 role compute\n}\n";
    let base = format!(
        "{node}cluster c {{\n  rack r0 {{\n    node two_nic x 2\n  }}\n}}\nworkload w {{\n  tasks a x 2 {{\n    resources {{ GPU: 2 }}\n    duration 1 s\n    output 100 GB\n  }}\n  tasks b x 1 after a {{\n    resources {{ GPU: 2 }}\n    duration 1 s\n    transport rdma\n  }}\n}}\n"
    );
    let run = |text: &str| {
        let r = simulate(&spec(text), &SimConfig::default());
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        r.metrics.tasks[1].clone()
    };
    let healthy = run(&base);
    let faulty = run(&format!(
        "{base}failures {{\n  at 1500 ms down nic r0.n0.nic0\n  at 1500 ms down nic r0.n1.nic0\n}}\n"
    ));
    assert_eq!((healthy.completed, faulty.completed), (1, 1));
    assert!(
        faulty.run_time.mean > healthy.run_time.mean + 0.4,
        "{faulty:?} vs {healthy:?}"
    );
}

/// Mean seconds of the input fetches of `consumers` tasks started together on node `b`, each
/// reading `each_gb` GB from the one producer on node `a` by RDMA host to host (CPU tasks),
/// and how many fetches there were.
fn same_instant_fetches(consumers: u32, each_gb: u32) -> (u64, f64) {
    let node = |name: &str, res: &str| {
        format!(
            "node {name} {{\n  cpu sockets 1, cores 64\n  memory 1024 GiB\n  nic ib_ndr_400g\n  resources {{ {res} }}\n}}\n"
        )
    };
    let text = format!(
        "{}{}cluster c {{\n  rack r0 {{\n    node src x 1\n    node dst x 1\n  }}\n}}\nworkload w {{\n  tasks a x 1 {{\n    resources {{ CPU: 1, ra: 1 }}\n    duration 1 s\n    output {} GB\n  }}\n  tasks b x {consumers} after a {{\n    resources {{ CPU: 1, rb: 1 }}\n    duration 1 s\n    transport rdma\n  }}\n}}\n",
        node("src", "ra: 1"),
        node("dst", &format!("rb: {consumers}")),
        consumers * each_gb
    );
    let r = simulate(&spec(&text), &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(
        r.network_models
            .iter()
            .all(|m| m.on_graph || m.kind != orrery::sim::network::MovementKind::Fetch),
        "{:?}",
        r.network_models
    );
    let f = &r.metrics.fetches[0];
    assert_eq!(f.remote_bytes, f64::from(consumers * each_gb) * 1e9);
    (f.fetches, f.mean_secs)
}

#[test]
fn fetches_starting_at_one_instant_share_their_bottleneck_exactly() {
    // 64 consumers on node dst read 1 GB each from the producer's node src, all starting at
    // the same nanosecond (one batch on the network, see sim::wire). Every flow crosses the
    // same bottleneck between the two nodes, so each gets 1/64 of it and all end together:
    // 64 GB at its capacity β after the fixed part. β and the fixed part come from one
    // consumer alone moving 1 GB and 2 GB: fixed + 1 GB/β and fixed + 2 GB/β.
    let (n1, one) = same_instant_fetches(1, 1);
    let (_, two) = same_instant_fetches(1, 2);
    let (n64, shared) = same_instant_fetches(64, 1);
    assert_eq!((n1, n64), (1, 64));
    let beta = 1e9 / (two - one);
    let fixed = one - 1e9 / beta;
    assert!(beta > 10e9 && beta <= NDR && fixed >= 0.0, "{one} {two}");
    let expect = fixed + 64e9 / beta;
    // Completions are rounded up to the nanosecond: `one` and `two` are each up to 1 ns
    // late, which the 64 GB magnify to ~0.2 µs through β (a wrong share is off by far more).
    assert!((shared - expect).abs() < 1e-6, "{shared} vs {expect}");
    // And 64 × 1 GB at once end when one fetch of 64 GB alone would.
    let (_, big) = same_instant_fetches(1, 64);
    assert!((shared - big).abs() < 1e-8, "{shared} vs {big}");
}
