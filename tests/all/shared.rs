//! One network per run: every training job's collectives and every task's input fetch share
//! the cluster's links max-min, checked against closed forms on hand-built clusters.

use orrery::load_str;
use orrery::scenario::Spec;
use orrery::sim::{SimConfig, simulate};

/// NCCL's per-step network α (tuning.cc hwLat, `orrery::sim::models::ALPHA_NET`).
const ALPHA: f64 = 14e-6;
/// NCCL's base latency of a ring Simple call (`baseLatencies`, NCCL 2.30.7
/// `src/graph/tuning.cc`): once per collective.
const BASE: f64 = 8.4e-6;
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
        (alone[0] - (BASE + 2.0 * ALPHA + n / NDR)).abs() < 1e-8,
        "{alone:?}"
    );
    for c in &both {
        assert!(
            (c - (BASE + 2.0 * ALPHA + n / (NDR / 2.0))).abs() < 1e-8,
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
        (c[0] - (BASE + 2.0 * ALPHA + n / (NDR - ETH))).abs() < 1e-8,
        "{c:?}"
    );
    assert!(
        (c[1] - (BASE + 2.0 * ALPHA + n / ETH)).abs() < 1e-8,
        "{c:?}"
    );
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

/// A node with 8 GiB of RAM (a 2.58 GB object store, spilling past 2.06 GB) and `extra`.
fn small_node(extra: &str) -> String {
    format!(
        "node small {{\n  cpu sockets 1, cores 8\n  memory 8 GiB\n  nic eth_100g\n{extra}}}\ncluster c {{\n  node small x 1\n}}\n"
    )
}

#[test]
fn a_spill_and_its_restore_move_at_the_disk_bandwidth_on_the_network() {
    // One 3 GB output: over the threshold, it is written to the node's spill disk (no
    // node-local storage declared: 2 GB/s) before `a` completes: 1 s + 1.5 s. `b` reads it
    // back before it runs: 1.5 s + 1 s.
    let text = format!(
        "{}workload w {{\n  tasks a x 1 {{\n    resources {{ CPU: 1 }}\n    duration 1 s\n    output 3 GB\n  }}\n  tasks b x 1 after a {{\n    resources {{ CPU: 1 }}\n    duration 1 s\n  }}\n}}\n",
        small_node("")
    );
    let r = simulate(&spec(&text), &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let o = &r.metrics.objects;
    assert_eq!(o.spilled_objects, 1);
    assert!((o.spill_time - 1.5).abs() < 1e-6, "{o:?}");
    assert!((o.restore_time - 1.5).abs() < 1e-6, "{o:?}");
    assert!((r.metrics.tasks[0].run_time.mean - 2.5).abs() < 1e-6);
    assert!((r.metrics.tasks[1].run_time.mean - 2.5).abs() < 1e-6);
    assert!((r.metrics.makespan - 5.0).abs() < 1e-6);
    assert!(
        r.network_models.iter().any(|m| m.on_graph
            && m.text
                .starts_with("object spill w.a: to each node's spill disk (2 GB/s")),
        "{:?}",
        r.network_models
    );
    // Two outputs spilled at once share the disk: each is written at 1 GB/s (3 s).
    let two = text.replace("tasks a x 1", "tasks a x 2");
    let r = simulate(&spec(&two), &SimConfig::default());
    assert!(
        (r.metrics.tasks[0].run_time.mean - 4.0).abs() < 1e-6,
        "{:?}",
        r.metrics.tasks[0]
    );
    assert!((r.metrics.objects.spill_time - 6.0).abs() < 1e-6);
}

#[test]
fn a_node_local_checkpoint_on_the_spill_disk_halves_the_spill() {
    // One node with a declared 2 GB/s node-local drive: spills go to it. A 200 GB output
    // spills alone in 100 s. A job writing a 2 TB checkpoint to the same drive from its
    // first step (~1 ms) on shares the drive's write direction: the spill gets 1 GB/s, 200 s.
    // `b`'s restore reads the other direction: 100 s either way.
    let base = format!(
        "{}cluster c {{\n  node box x 1\n  storage s {{\n    bandwidth 2 GB/s\n    attach node_local\n    latency 0 s\n  }}\n}}\nworkload w {{\n  tasks a x 1 {{\n    resources {{ CPU: 1 }}\n    duration 10 s\n    output 200 GB\n  }}\n  tasks b x 1 after a {{\n    resources {{ CPU: 1 }}\n    duration 1 s\n  }}\n}}\n",
        node("box", "ib_ndr_400g", "ra: 1")
    );
    let job = "workload t {\n  placement_group pg strategy PACK {\n    bundle { GPU: 1 }\n  }\n  training t on pg steps 2 {\n    compute 1 TFLOP per device bf16\n    checkpoint every 1 ms size 2000 GB to s\n  }\n}\n";
    let run = |text: &str| {
        let r = simulate(&spec(text), &SimConfig::default());
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(
            r.network_models.iter().any(|m| m.on_graph
                && m.text == "object spill w.a: to the drive of node-local storage `s` on the run's shared network"),
            "{:?}",
            r.network_models
        );
        r.metrics.objects.clone()
    };
    let alone = run(&base);
    assert!((alone.spill_time - 100.0).abs() < 1e-6, "{alone:?}");
    assert!((alone.restore_time - 100.0).abs() < 1e-6, "{alone:?}");
    let shared = run(&format!("{base}{job}"));
    assert!((shared.spill_time - 200.0).abs() < 1e-6, "{shared:?}");
    assert!((shared.restore_time - 100.0).abs() < 1e-6, "{shared:?}");
}

/// Two one-NIC nodes, `left` offering `l` and `right` offering `r`, and workload `w`.
fn pair_nodes(link: &str, w: &str) -> String {
    let n = |name: &str, res: &str| {
        format!(
            "node {name} {{\n  cpu sockets 1, cores 32\n  memory 512 GiB\n  switch sw0 uplink gen5 x16\n  device H100_SXM x 2 at sw0 link {link}\n  nic ib_ndr_400g at sw0 role compute\n  resources {{ {res}: 2 }}\n}}\n"
        )
    };
    format!(
        "{}{}cluster c {{\n  rack r0 {{\n    node left x 1\n    node right x 1\n  }}\n}}\n{w}",
        n("left", "l"),
        n("right", "r")
    )
}

fn actor(name: &str, res: &str, tensor: &str) -> String {
    format!(
        "  actor {name} x 1 {{\n    resources {{ GPU: 1, {res}: 1 }}\n    calls 1\n    call_duration 1 s\n{tensor}  }}\n"
    )
}

/// The idle-network fixed seconds and wire seconds of `bytes` from device `src` to `dst`.
fn parts(
    s: &Spec,
    transport: &str,
    src: (usize, usize),
    dst: (usize, usize),
    bytes: f64,
) -> (f64, f64) {
    let g = orrery::network::Graph::build(s);
    let p = orrery::transport::TransportParams::named(s, transport).unwrap();
    let plan = orrery::transport::plan(&g, &p, src, dst, bytes, 0).unwrap();
    let sp = orrery::transport::shared(&plan, &g.capacity);
    (sp.fixed_secs, sp.idle.bandwidth_secs)
}

#[test]
fn two_actor_pairs_across_one_nic_get_half_of_it_each() {
    // s1 → r1 and s2 → r2, both senders on `left`, both receivers on `right`: each 10 GB
    // tensor by GPUDirect RDMA crosses the one NIC of each node. Alone: fixed + wire; together
    // their wire shares halve: fixed + 2 × wire.
    let one = format!(
        "workload w {{\n  transport gpudirect_rdma\n{}{}}}\n",
        actor("s1", "l", "    tensor 10 GB to r1\n"),
        actor("r1", "r", "")
    );
    let two = format!(
        "workload w {{\n  transport gpudirect_rdma\n{}{}{}{}}}\n",
        actor("s1", "l", "    tensor 10 GB to r1\n"),
        actor("s2", "l", "    tensor 10 GB to r2\n"),
        actor("r1", "r", ""),
        actor("r2", "r", "")
    );
    let s = spec(&pair_nodes("none", &one));
    let (fixed, wire) = parts(&s, "gpudirect_rdma", (0, 0), (1, 0), 10e9);
    assert!(wire > 0.1, "{wire}");
    let r = simulate(&s, &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let a = &r.metrics.actors[0];
    assert_eq!((a.calls_done, a.tensors), (1, 1));
    assert!(
        (a.tensor_time - (fixed + wire)).abs() < 1e-6,
        "{a:?} {fixed} {wire}"
    );
    assert!((r.metrics.makespan - (1.0 + fixed + wire)).abs() < 1e-6);
    let r = simulate(&spec(&pair_nodes("none", &two)), &SimConfig::default());
    for a in &r.metrics.actors[..2] {
        assert!((a.tensor_time - (fixed + 2.0 * wire)).abs() < 1e-6, "{a:?}");
    }
    assert!(
        r.network_models.iter().any(|m| m.on_graph
            && m.text == "tensor w.s1 to r1: transport gpudirect_rdma on the shared network"),
        "{:?}",
        r.network_models
    );
}

#[test]
fn a_tensor_inside_a_node_crosses_nvlink_and_across_nodes_the_nic() {
    // Sender and receiver on the two NVLink-joined GPUs of `left` with nvlink_p2p, against the
    // receiver on `right` with GPUDirect RDMA: each takes its plan's time, NVLink the faster.
    let w = |res: &str, t: &str| {
        format!(
            "workload w {{\n  transport {t}\n{}{}}}\n",
            actor("s", "l", "    tensor 10 GB to r\n"),
            actor("r", res, "")
        )
    };
    let local = spec(&pair_nodes("switch", &w("l", "nvlink_p2p")));
    let remote = spec(&pair_nodes("switch", &w("r", "gpudirect_rdma")));
    let (lf, lw) = parts(&local, "nvlink_p2p", (0, 0), (0, 1), 10e9);
    let (rf, rw) = parts(&remote, "gpudirect_rdma", (0, 0), (1, 0), 10e9);
    let t = |s: &Spec| {
        let r = simulate(s, &SimConfig::default());
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(
            r.network_models.iter().all(|m| m.on_graph),
            "{:?}",
            r.network_models
        );
        r.metrics.actors[0].tensor_time
    };
    let (tl, tr) = (t(&local), t(&remote));
    assert!((tl - (lf + lw)).abs() < 1e-6, "{tl} vs {lf} + {lw}");
    assert!((tr - (rf + rw)).abs() < 1e-6, "{tr} vs {rf} + {rw}");
    assert!(tl * 3.0 < tr, "{tl} {tr}");
}

#[test]
fn service_payloads_move_between_the_head_and_the_replica() {
    // The head is `left` (the first node); the replica needs `r`, so it runs on `right`. Each
    // request (1 GB) moves to the replica before its batch computes (1 s), each response
    // (2 GB) back after: latency = request + 1 s + response, each fixed + wire. Two requests
    // in one batch share the NICs: their wire parts take twice as long.
    let svc = |batch: &str| {
        format!(
            "workload w {{\n  transport rdma\n  service s {{\n    resources {{ CPU: 1, r: 1 }}\n    arrival trace \"t\"\n    service_time 1 s\n{batch}    request 1 GB\n    response 2 GB\n  }}\n}}\n"
        )
    };
    let run = |text: &str, arrivals: Vec<f64>| {
        let s = spec(text);
        let cfg = SimConfig {
            traces: [("t".to_string(), arrivals.into())].into(),
            horizon: Some(100 * orrery::engine::SEC),
            ..SimConfig::default()
        };
        let r = simulate(&s, &cfg);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(
            r.network_models
                .iter()
                .any(|m| m.on_graph && m.text.starts_with("payloads of service w.s (ingress ")),
            "{:?}",
            r.network_models
        );
        r.metrics.services[0].latency.clone()
    };
    let s = spec(&pair_nodes("none", &svc("")));
    let host = |bytes: f64, src: usize, dst: usize| {
        let g = orrery::network::Graph::build(&s);
        let p = orrery::transport::TransportParams::named(&s, "rdma").unwrap();
        let plan = orrery::transport::plan_host(&g, &p, src, dst, bytes, 0).unwrap();
        let sp = orrery::transport::shared(&plan, &g.capacity);
        (sp.fixed_secs, sp.idle.bandwidth_secs)
    };
    let (qf, qw) = host(1e9, 0, 1);
    let (pf, pw) = host(2e9, 1, 0);
    let one = run(&pair_nodes("none", &svc("")), vec![0.0]);
    assert_eq!(one.count, 1);
    assert!(
        (one.mean - (qf + qw + 1.0 + pf + pw)).abs() < 1e-6,
        "{one:?}"
    );
    let two = run(
        &pair_nodes("none", &svc("    batch max 2 wait 1 s\n")),
        vec![0.0, 0.0],
    );
    assert_eq!(two.count, 2);
    assert!(
        (two.max - (qf + 2.0 * qw + 1.0 + pf + 2.0 * pw)).abs() < 1e-6,
        "{two:?}"
    );
    // A replica on the ingress node moves nothing: latency = service time.
    let local = svc("").replace("r: 1 }", "l: 1 }");
    let s = spec(&pair_nodes("none", &local));
    let cfg = SimConfig {
        traces: [("t".to_string(), vec![0.0].into())].into(),
        horizon: Some(100 * orrery::engine::SEC),
        ..SimConfig::default()
    };
    let r = simulate(&s, &cfg);
    assert!(
        (r.metrics.services[0].latency.mean - 1.0).abs() < 1e-6,
        "{:?}",
        r.metrics.services[0]
    );
}

#[test]
fn a_fetch_from_a_holder_that_dies_waits_for_the_rebuilt_copy() {
    // `a`'s 100 GB output lives on n1; `b` on n3 fetches it over 100 GbE (~8 s) from 1 s on.
    // n1 dies at 3 s: the fetch stops (the copy is gone), n1 is declared dead at 18 s, `a`
    // re-runs on n2 (lineage reconstruction) until 19 s, and `b` fetches the rebuilt copy from
    // n2, then runs: it cannot finish before 19 s + fetch + 1 s.
    let n = |name: &str, res: &str| {
        format!(
            "node {name} {{\n  cpu sockets 1, cores 8\n  memory 512 GiB\n  nic eth_100g\n  resources {{ {res}: 1 }}\n}}\n"
        )
    };
    let text = |retries: u32| {
        format!(
            "{}{}{}cluster c {{\n  node plain x 1\n  node prod x 2\n  node cons x 1\n}}\nworkload w {{\n  tasks a x 1 {{\n    resources {{ CPU: 1, p: 1 }}\n    duration 1 s\n    output 100 GB\n    retries {retries}\n  }}\n  tasks b x 1 after a {{\n    resources {{ CPU: 1, c: 1 }}\n    duration 1 s\n  }}\n}}\nfailures {{\n  at 3 s kill node n1\n}}\n",
            n("plain", "x"),
            n("prod", "p"),
            n("cons", "c")
        )
    };
    let s = spec(&text(3));
    let g = orrery::network::Graph::build(&s);
    let p = orrery::transport::TransportParams::named(&s, "object_store").unwrap();
    let plan = orrery::transport::plan_host(&g, &p, 2, 3, 100e9, 0).unwrap();
    let fetch = orrery::transport::closed_form(&plan, &g.capacity).secs;
    assert!(fetch > 7.0, "{fetch}");
    let r = simulate(&s, &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.metrics.failures.objects_rebuilt, 1);
    let b = &r.metrics.tasks[1];
    assert_eq!(b.completed, 1);
    // Placed at 1 s; inputs again at 19 s; then the whole fetch and 1 s of work.
    assert!(
        (b.run_time.mean - (18.0 + fetch + 1.0)).abs() < 1e-3,
        "{b:?} {fetch}"
    );
    // Without retries the output cannot be rebuilt: at detection `b` runs without it (the
    // object counts as lost), having moved nothing from the dead node.
    let r = simulate(&spec(&text(0)), &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.metrics.failures.objects_lost, 1);
    let b = &r.metrics.tasks[1];
    assert_eq!(b.completed, 1);
    assert!((b.run_time.mean - 18.0).abs() < 1e-3, "{b:?}");
}

#[test]
fn a_call_waits_for_its_receiver_to_be_placed_and_fails_when_it_is_dead() {
    // The receiver's node dies at 5 s and is back at 35 s. `s`'s first call ends at 10 s with
    // no receiver running: it waits. Restarted (max_restarts 1), the receiver is placed when
    // its node returns, at 35 s: the tensor moves then, and the second call follows. Without
    // restarts the receiver is dead at detection (20 s): both calls fail.
    let w = |restarts: u32| {
        format!(
            "workload w {{\n  transport gpudirect_rdma\n  actor s x 1 {{\n    resources {{ GPU: 1, l: 1 }}\n    calls 2\n    call_duration 10 s\n    tensor 10 GB to r\n  }}\n  actor r x 1 {{\n    resources {{ GPU: 1, r: 1 }}\n    max_restarts {restarts}\n  }}\n}}\nfailures {{\n  at 5 s kill node r0.n1 for 30 s\n}}\n"
        )
    };
    let s = spec(&pair_nodes("none", &w(1)));
    let (fixed, wire) = parts(&s, "gpudirect_rdma", (0, 0), (1, 0), 10e9);
    let r = simulate(&s, &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let a = &r.metrics.actors[0];
    assert_eq!(
        (a.calls_done, a.calls_failed, a.tensors),
        (2, 0, 2),
        "{a:?}"
    );
    let t = fixed + wire;
    assert!(
        (r.metrics.makespan - (35.0 + t + 10.0 + t)).abs() < 1e-3,
        "{}",
        r.metrics.makespan
    );
    let r = simulate(&spec(&pair_nodes("none", &w(0))), &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let a = &r.metrics.actors[0];
    assert_eq!(
        (a.calls_done, a.calls_failed, a.tensors),
        (0, 2, 0),
        "{a:?}"
    );
}

#[test]
fn a_tenants_transport_rules_apply_to_tensors_and_payloads() {
    // A run's override asks for GPUDirect RDMA; tenant `secure` has `no_rdma`: its tensors and
    // payloads fall back to the object store, and the run says so.
    let w = format!(
        "tenant secure {{\n  no_rdma\n}}\nworkload w tenant secure {{\n{}{}  service q {{\n    resources {{ CPU: 1, r: 1 }}\n    arrival poisson 10 /s\n    service_time 1 ms\n    request 1 MB\n    response 1 MB\n  }}\n}}\n",
        actor("s", "l", "    tensor 1 GB to r\n"),
        actor("r", "r", "")
    );
    let s = spec(&pair_nodes("none", &w));
    let cfg = SimConfig {
        transport: Some("gpudirect_rdma".into()),
        record: true,
        horizon: Some(10 * orrery::engine::SEC),
        ..SimConfig::default()
    };
    let r = simulate(&s, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(r.transfers.len() > 2, "{:?}", r.transfers);
    assert!(
        r.transfers.iter().all(|t| t.transport == "object_store"),
        "{:?}",
        r.transfers
    );
    for what in ["tensor w.s to r", "payloads of service w.q"] {
        assert!(
            r.network_models.iter().any(|m| m.text.starts_with(what)
                && m.text.contains("transport gpudirect_rdma not used")),
            "{what}: {:?}",
            r.network_models
        );
    }
    assert_eq!(r.metrics.actors[0].tensors, 1);
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
