//! The device timeline (what each device did when) and its Perfetto trace, against runs
//! worked out by hand.

use orrery::load_str;
use orrery::scenario::Spec;
use orrery::sim::timeline::{MoveKind, SpanKind};
use orrery::sim::{SimConfig, simulate};

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn cfg() -> SimConfig {
    SimConfig {
        timeline: true,
        ..Default::default()
    }
}

#[test]
fn tasks_steps_and_failures_land_on_the_right_devices() {
    // One DGX H100 (n0) and a second (n1, head). Two 1-GPU tasks of 10 s on n0; a training
    // job on all 8 GPUs of n1 with 3 steps of compute + allreduce; n0 crashes at 5 s, so the
    // tasks' spans end there and n0's devices are failed from 5 s to the end of the run.
    let s = spec(
        "cluster c {\n  node dgx_h100 x 2\n  head n1\n}\nworkload w {\n  tasks t x 2 {\n    resources { GPU: 1 }\n    duration 10 s\n    retries 0\n    strategy node_affinity(n0)\n  }\n  placement_group pg strategy STRICT_PACK {\n    bundle { GPU: 8 }\n  }\n  training job on pg steps 3 {\n    compute 100 TFLOP per device bf16\n    allreduce 1 GB algo ring\n  }\n}\nfailures {\n  at 5 s kill node n0\n}\n",
    );
    let r = simulate(&s, &cfg());
    let t = &r.timeline;
    assert_eq!(t.devices.len(), 16);
    assert_eq!(t.devices[0], "n0.d0");
    assert_eq!(t.devices[9], "n1.d1");
    // n0.d0 ran a task from 0 to the crash at 5 s, then failed until the end.
    let d0 = t.of_device(0);
    assert_eq!(d0[0].0, SpanKind::Compute);
    assert_eq!((d0[0].1, d0[0].2), (0.0, 5.0), "{d0:?}");
    assert_eq!(d0[0].3, "w.t");
    let failed: Vec<_> = d0.iter().filter(|s| s.0 == SpanKind::Failed).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].1, 5.0);
    assert_eq!(failed[0].2, r.metrics.horizon);
    // n1's GPUs: 3 × (compute, communication), back to back, compute = 100 TFLOP / (989 × 0.75).
    let d8 = t.of_device(8);
    let kinds: Vec<_> = d8.iter().map(|s| s.0).collect();
    assert_eq!(
        kinds,
        [SpanKind::Compute, SpanKind::Communication].repeat(3),
        "{d8:?}"
    );
    let compute = 100e12 / (989e12 * 0.75);
    assert!((d8[0].2 - d8[0].1 - compute).abs() < 2e-9);
    for w in d8.windows(2) {
        assert!((w[0].2 - w[1].1).abs() < 1e-12, "gap in {d8:?}");
    }
    // Every device of n1 has the same spans (one record per step covers all 8).
    assert_eq!(t.of_device(15).len(), 6);
    // Without asking, nothing is recorded.
    assert!(
        simulate(&s, &SimConfig::default())
            .timeline
            .spans
            .is_empty()
    );
}

#[test]
fn the_perfetto_trace_has_one_event_per_device_and_span() {
    let s = spec(
        "cluster c {\n  node dgx_h100 x 1\n}\nworkload w {\n  tasks t x 3 {\n    resources { GPU: 2 }\n    duration 1 s\n  }\n}\n",
    );
    let r = simulate(&s, &cfg());
    let json = orrery::trace::perfetto(&r.timeline, "header");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let spans: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
    // 3 tasks × 2 GPUs, each 1 s = 1e6 µs, on node 0, threads = device indices.
    assert_eq!(spans.len(), 6);
    assert!(
        spans
            .iter()
            .all(|e| e["dur"].as_f64() == Some(1e6) && e["pid"] == 0)
    );
    let mut tids: Vec<u64> = spans.iter().map(|e| e["tid"].as_u64().unwrap()).collect();
    tids.sort_unstable();
    tids.dedup();
    assert_eq!(tids, vec![0, 1, 2, 3, 4, 5]);
    assert!(
        ev.iter()
            .any(|e| e["ph"] == "M" && e["args"]["name"] == "n0.d7")
    );
    assert_eq!(v["metadata"]["events"], 6);
    assert_eq!(v["metadata"]["truncated"], false);
}

#[test]
fn the_trace_carries_args_counters_and_transfer_arrows() {
    // 24 producers then 5 consumers of their 1 GiB outputs on two 8-GPU nodes: tasks queue
    // (a scheduler counter), consumers fetch from the other node (send/fetch slices with an
    // arrow between them), and the fetches load the network (link-class counters).
    let s = spec(
        "cluster c {\n  node dgx_h100 x 2\n  fabric leaf_spine\n}\nworkload w {\n  tasks a x 24 {\n    resources { GPU: 1 }\n    duration 1 s\n    output 1 GiB\n  }\n  tasks b x 5 after a {\n    resources { GPU: 1 }\n    duration 1 s\n  }\n}\n",
    );
    let r = simulate(&s, &cfg());
    let json = orrery::trace::perfetto(&r.timeline, "header");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let x: Vec<_> = ev
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "compute")
        .collect();
    // Back-to-back tasks of a group on one device share a span: the producers' spans add up
    // to their 24 s.
    let a: f64 = x
        .iter()
        .filter(|e| e["args"]["work"] == "w.a")
        .map(|e| e["dur"].as_f64().unwrap())
        .sum();
    assert!((a - 24e6).abs() < 1e-3, "{a}");
    assert!(
        x.iter()
            .all(|e| e["args"]["devices"] == 1 && e["args"]["kind"] == "compute")
    );
    assert!(x.iter().any(|e| e["args"]["work"] == "w.b"));
    // Every fetch is a slice on its source, one on its consumer and an arrow between them.
    let fetches: Vec<_> = ev.iter().filter(|e| e["name"] == "fetch").collect();
    assert!(
        !fetches.is_empty(),
        "no cross-node fetch: {:?} {:?}",
        r.metrics.fetches,
        r.metrics.links
    );
    for f in &fetches {
        assert!(f["args"]["bytes"].as_f64().unwrap() > 0.0);
        assert!(f["args"]["task"].as_str().unwrap().starts_with("w.b["));
        assert!(f["args"]["transport"].is_string());
        assert_ne!(f["args"]["from"], f["args"]["to"]);
    }
    let starts: Vec<_> = ev.iter().filter(|e| e["ph"] == "s").collect();
    let ends: Vec<_> = ev.iter().filter(|e| e["ph"] == "f").collect();
    // A slice at each end.
    let n = fetches.len() / 2;
    assert_eq!((starts.len(), ends.len()), (n, n));
    for (s, f) in starts.iter().zip(&ends) {
        assert_eq!(s["id"], f["id"]);
        assert_ne!(s["pid"], f["pid"], "an arrow goes from one node to another");
        assert_eq!(f["bp"], "e");
    }
    // Counters: the scheduler's queue went above zero, and the NIC class carried traffic.
    let counter = |name: &str| -> Vec<f64> {
        ev.iter()
            .filter(|e| e["ph"] == "C" && e["name"] == name)
            .map(|e| {
                e["args"]
                    .as_object()
                    .unwrap()
                    .values()
                    .next()
                    .unwrap()
                    .as_f64()
                    .unwrap()
            })
            .collect()
    };
    assert!(counter("scheduler queue").iter().any(|n| *n >= 8.0));
    let nic = counter("link utilization: nic");
    assert!(nic.iter().any(|u| *u > 0.0) && nic.iter().all(|u| (0.0..=1.0).contains(u)));
    // run.json's link metrics: the NIC class carried the fetches' wire shares (a fetch's
    // flow carries its wire bandwidth-seconds, at most its bytes, over at most two NIC links).
    let fetched: f64 = fetches
        .iter()
        .map(|f| f["args"]["bytes"].as_f64().unwrap())
        .sum::<f64>()
        / 2.0;
    let m = &r.metrics.links["nic"];
    assert!(
        m.link_bytes > 0.0 && m.link_bytes <= 2.0 * fetched,
        "{} vs {fetched}",
        m.link_bytes
    );
    assert!(m.peak_utilization > 0.0 && m.peak_utilization <= 1.0);
}

/// Three DGX H100 nodes (n2 the head) behind a leaf-spine fabric with a parallel file system:
/// producers on n2 whose outputs their consumers on n0 fetch, and a training job on 4 + 4 GPUs
/// of n0 and n1 with an allreduce per step and checkpoints to `pfs`; n1 dies at 1 s, so the
/// job restarts on n0 and n2 and loads its last checkpoint.
const NETWORK_RUN: &str = "cluster c {\n  node dgx_h100 x 3\n  head n2\n  fabric leaf_spine\n  storage pfs {\n    bandwidth 100 GB/s\n    attach fabric\n  }\n}\nworkload w {\n  tasks a x 8 {\n    resources { GPU: 1 }\n    duration 1 s\n    output 1 GiB\n    strategy node_affinity(n2)\n  }\n  tasks b x 4 after a {\n    resources { GPU: 1 }\n    duration 1 s\n    strategy node_affinity(n0)\n  }\n  placement_group pg strategy STRICT_SPREAD {\n    bundle { GPU: 4 } x 2\n  }\n  training job on pg steps 12 {\n    compute 100 TFLOP per device bf16\n    allreduce 1 GB algo ring\n    checkpoint every 500 ms size 10 GB to pfs\n  }\n}\nfailures {\n  at 1 s kill node n1\n}\n";

/// Two hosts with 8 GiB of RAM (outputs past the object store's spilling threshold go to
/// disk), an actor on each sending a tensor per call from `left` to `right`, and a service on
/// `right` whose requests enter at the head, `left`.
const MOVES_RUN: &str = "node left {\n  cpu sockets 1, cores 32\n  memory 8 GiB\n  switch sw0 uplink gen5 x16\n  device H100_SXM x 2 at sw0 link switch\n  nic ib_ndr_400g at sw0 role compute\n  resources { l: 2 }\n}\nnode right {\n  cpu sockets 1, cores 32\n  memory 8 GiB\n  switch sw0 uplink gen5 x16\n  device H100_SXM x 2 at sw0 link switch\n  nic ib_ndr_400g at sw0 role compute\n  resources { r: 2 }\n}\ncluster c {\n  rack r0 {\n    node left x 1\n    node right x 1\n  }\n}\nworkload w {\n  tasks a x 16 {\n    resources { CPU: 1 }\n    duration 10 s\n    output 400 MB\n  }\n  tasks b x 4 after a {\n    resources { CPU: 1 }\n    duration 10 s\n  }\n  actor s x 1 {\n    resources { GPU: 1, l: 1 }\n    calls 3\n    call_duration 1 s\n    tensor 1 GB to r\n  }\n  actor r x 1 {\n    resources { GPU: 1, r: 1 }\n  }\n  service q {\n    resources { CPU: 1, r: 1 }\n    arrival poisson 10 /s\n    service_time 10 ms\n    request 1 MB\n    response 2 MB\n  }\n}\nexperiment e {\n  horizon 30 s\n}\n";

type Json = serde_json::Value;

/// The trace of `src`'s run, parsed.
fn trace_of(src: &str) -> Json {
    let r = simulate(&spec(src), &cfg());
    serde_json::from_str(&orrery::trace::perfetto(&r.timeline, "header")).unwrap()
}

/// Name of each process (pid → name).
fn processes(ev: &[Json]) -> std::collections::BTreeMap<u64, String> {
    ev.iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| {
            let name = e["args"]["name"].as_str().unwrap().to_string();
            (e["pid"].as_u64().unwrap(), name)
        })
        .collect()
}

/// The network slices (on a network, disk or storage thread) of a trace.
fn network_slices(ev: &[Json]) -> Vec<&Json> {
    ev.iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "network")
        .collect()
}

/// Checks every flow arrow of a trace and returns how many there are: each id has one start
/// and one end; the start is no later than the end; each lies within a network slice of the
/// same transfer on its thread, the start's on the transfer's source (`from`) and the end's on
/// its destination (`to`).
fn check_arrows(ev: &[Json]) -> usize {
    use std::collections::BTreeMap;
    let names = processes(ev);
    let slices = network_slices(ev);
    let within = |a: &Json| -> &Json {
        let ts = a["ts"].as_f64().unwrap();
        let on: Vec<&&Json> = slices
            .iter()
            .filter(|x| {
                let (t0, d) = (x["ts"].as_f64().unwrap(), x["dur"].as_f64().unwrap());
                x["pid"] == a["pid"] && x["tid"] == a["tid"] && t0 <= ts && ts <= t0 + d + 1e-6
            })
            .collect();
        assert_eq!(
            on.len(),
            1,
            "arrow {a} lies in one slice of its thread: {on:?}"
        );
        on[0]
    };
    let mut by_id: BTreeMap<u64, (Vec<&Json>, Vec<&Json>)> = BTreeMap::new();
    for e in ev {
        match e["ph"].as_str() {
            Some("s") => by_id
                .entry(e["id"].as_u64().unwrap())
                .or_default()
                .0
                .push(e),
            Some("f") => by_id
                .entry(e["id"].as_u64().unwrap())
                .or_default()
                .1
                .push(e),
            _ => {}
        }
    }
    for (id, (s, f)) in &by_id {
        assert_eq!((s.len(), f.len()), (1, 1), "arrow {id}");
        let (s, f) = (s[0], f[0]);
        assert!(s["ts"].as_f64() <= f["ts"].as_f64(), "{s} then {f}");
        assert_eq!(f["bp"], "e");
        let (a, b) = (within(s), within(f));
        assert_eq!(a["args"], b["args"], "both ends are the same transfer");
        assert_eq!(
            (a["ts"].clone(), a["dur"].clone()),
            (b["ts"].clone(), b["dur"].clone())
        );
        // A node's own memory is its process; a disk is `NODE disk` on the node's process; a
        // storage target is its own `storage NAME` process.
        let proc_of = |x: &Json| names[&x["pid"].as_u64().unwrap()].clone();
        let end_is = |x: &Json, end: &str| {
            let p = proc_of(x);
            let tid = x["tid"].as_u64().unwrap();
            if tid >= u64::from(orrery::trace::DISK_TID) {
                end == format!("{p} disk")
            } else {
                end == p || p == format!("storage {end}")
            }
        };
        assert!(
            end_is(a, a["args"]["from"].as_str().unwrap()),
            "{a} starts at its source"
        );
        assert!(
            end_is(b, b["args"]["to"].as_str().unwrap()),
            "{b} ends at its destination"
        );
    }
    by_id.len()
}

/// Slices of one thread never overlap (the trace format wants them nested; transfers get a
/// lane each), and each lane is named for what it carries: `network`, `network 2`, ..., a
/// node's `disk` lanes, a storage target's `io` lanes.
fn check_lanes(ev: &[Json]) {
    let names = processes(ev);
    let thread = |pid: &Json, tid: &Json| -> String {
        ev.iter()
            .find(|e| {
                e["ph"] == "M" && e["name"] == "thread_name" && &e["pid"] == pid && &e["tid"] == tid
            })
            .map(|e| e["args"]["name"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("thread {pid}/{tid} has a name"))
    };
    for x in network_slices(ev) {
        let (pid, tid) = (&x["pid"], x["tid"].as_u64().unwrap());
        let disk = u64::from(orrery::trace::DISK_TID);
        let (base, what) = if tid >= disk {
            (disk, "disk")
        } else if names[&pid.as_u64().unwrap()].starts_with("storage ") {
            (u64::from(orrery::trace::NETWORK_TID), "io")
        } else {
            (u64::from(orrery::trace::NETWORK_TID), "network")
        };
        let want = match tid - base {
            0 => what.to_string(),
            k => format!("{what} {}", k + 1),
        };
        assert_eq!(thread(pid, &x["tid"]), want);
    }
    let mut slices: Vec<(u64, u64, f64, f64)> = network_slices(ev)
        .iter()
        .map(|x| {
            let (t0, d) = (x["ts"].as_f64().unwrap(), x["dur"].as_f64().unwrap());
            (
                x["pid"].as_u64().unwrap(),
                x["tid"].as_u64().unwrap(),
                t0,
                t0 + d,
            )
        })
        .collect();
    slices.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)).then(a.2.total_cmp(&b.2)));
    for w in slices.windows(2) {
        if (w[0].0, w[0].1) == (w[1].0, w[1].1) {
            assert!(w[0].3 <= w[1].2 + 1e-6, "{:?} overlaps {:?}", w[0], w[1]);
        }
    }
}

#[test]
fn collectives_and_checkpoints_are_network_slices_with_args_and_arrows_join_the_right_nodes() {
    let v = trace_of(NETWORK_RUN);
    let ev = v["traceEvents"].as_array().unwrap();
    let names = processes(ev);
    let net = network_slices(ev);
    // Collectives: one slice per node of the group per step, on a node that is in the group,
    // at the same times as the job's communication on that node's devices.
    let coll: Vec<&&Json> = net.iter().filter(|x| x["name"] == "collective").collect();
    assert!(!coll.is_empty());
    let comm: Vec<&Json> = ev
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "communication")
        .collect();
    let mut groups = std::collections::BTreeSet::new();
    for c in &coll {
        let a = &c["args"];
        assert_eq!(a["job"], "w.job");
        assert_eq!(a["group"], "pg");
        assert_eq!(a["algorithm"], "allreduce ring");
        assert_eq!(a["ranks"], 8);
        assert_eq!(a["bytes"].as_f64(), Some(1e9));
        assert_eq!(a["model"], "flow model on the shared network");
        let nodes: Vec<&str> = a["nodes"].as_str().unwrap().split(", ").collect();
        assert_eq!(nodes.len(), 2);
        assert!(
            nodes.contains(&names[&c["pid"].as_u64().unwrap()].as_str()),
            "{c}"
        );
        assert!(
            comm.iter().any(|d| d["pid"] == c["pid"]
                && d["ts"] == c["ts"]
                && d["dur"] == c["dur"]
                && d["args"]["step"] == a["step"]),
            "{c} matches a communication span of its node"
        );
        let same = coll
            .iter()
            .filter(|o| o["ts"] == c["ts"] && o["args"]["step"] == a["step"])
            .count();
        assert_eq!(same, 2, "one slice per node of the group");
        groups.insert(a["nodes"].as_str().unwrap().to_string());
    }
    // n1 died at 1 s: the job ran on n0 + n1, then on n0 + n2.
    assert_eq!(
        groups.into_iter().collect::<Vec<_>>(),
        ["n0, n1".to_string(), "n0, n2".to_string()]
    );
    // Checkpoints: each node writes its half of the 10 GB to `pfs`, its own process; after
    // the restart each node loads its half back, at the step the job resumes from.
    assert!(names.values().any(|n| n == "storage pfs"), "{names:?}");
    let of = |kind: &str| -> Vec<&&Json> { net.iter().filter(|x| x["name"] == kind).collect() };
    let (writes, loads) = (of("checkpoint write"), of("checkpoint load"));
    assert!(!writes.is_empty() && !loads.is_empty());
    for w in &writes {
        let a = &w["args"];
        assert_eq!(
            (a["job"].as_str(), a["to"].as_str()),
            (Some("w.job"), Some("pfs"))
        );
        assert_eq!(a["bytes"].as_f64(), Some(5e9));
        assert_eq!(a["transport"], "storage (fabric)");
        assert!(a["step"].as_u64().unwrap() > 0);
    }
    let resumed: Vec<_> = loads.iter().map(|l| l["args"]["step"].clone()).collect();
    assert!(loads.iter().all(|l| l["args"]["from"] == "pfs"));
    assert!(
        writes.iter().any(|w| w["args"]["step"] == resumed[0]),
        "the load reads a checkpoint that was written"
    );
    // Fetches: the consumers read the producers' outputs from the other nodes.
    let fetches = of("fetch");
    assert!(!fetches.is_empty());
    for f in &fetches {
        assert!(f["args"]["task"].as_str().unwrap().starts_with("w.b["));
        assert!(f["args"]["bytes"].as_f64().unwrap() > 0.0);
        assert_ne!(f["args"]["from"], f["args"]["to"]);
    }
    // Every transfer but a collective has an arrow, every arrow joins its ends.
    let arrows = check_arrows(ev);
    assert_eq!(2 * arrows, net.len() - coll.len());
    check_lanes(ev);
    let m = &v["metadata"];
    assert_eq!(m["network_dropped"], 0);
    assert_eq!(m["truncated"], false);
    assert_eq!(
        m["network_transfers"].as_u64(),
        Some((arrows + coll.len() / 2) as u64)
    );
    // The same scenario and seed give the same trace, byte for byte.
    assert_eq!(v, trace_of(NETWORK_RUN));
}

#[test]
fn spills_restores_tensors_and_payloads_are_network_slices_with_arrows() {
    let v = trace_of(MOVES_RUN);
    let ev = v["traceEvents"].as_array().unwrap();
    let net = network_slices(ev);
    let of = |kind: &str| -> Vec<&&Json> { net.iter().filter(|x| x["name"] == kind).collect() };
    let (left, right) = ("r0.n0", "r0.n1");
    // Spills go from a node to its own disk (no storage declared), restores come back.
    let spills = of("spill");
    assert!(!spills.is_empty());
    for s in &spills {
        let a = &s["args"];
        assert!(a["task"].as_str().unwrap().starts_with("w.a["));
        assert_eq!(
            a["to"].as_str().unwrap(),
            format!("{} disk", a["from"].as_str().unwrap())
        );
        assert_eq!(a["bytes"].as_f64(), Some(400e6));
    }
    let restores = of("restore");
    assert!(!restores.is_empty());
    for s in &restores {
        let a = &s["args"];
        assert!(a["task"].as_str().unwrap().starts_with("w.b["));
        assert_eq!(
            a["from"].as_str().unwrap(),
            format!("{} disk", a["to"].as_str().unwrap())
        );
    }
    // Each call's 1 GB tensor goes from the sender on `left` to the receiver on `right`.
    let tensors = of("tensor");
    assert_eq!(tensors.len(), 2 * 3, "three calls, a slice at each end");
    for t in &tensors {
        let a = &t["args"];
        assert_eq!(
            (a["actor"].as_str(), a["bytes"].as_f64()),
            (Some("w.s[0]"), Some(1e9))
        );
        assert_eq!(
            (a["from"].as_str(), a["to"].as_str()),
            (Some(left), Some(right))
        );
    }
    // Requests enter at the head (`left`) and go to the replica on `right`; responses return.
    let (req, resp) = (of("request"), of("response"));
    assert!(!req.is_empty() && !resp.is_empty());
    assert!(
        req.iter()
            .all(|x| x["args"]["from"] == left && x["args"]["to"] == right)
    );
    assert!(
        resp.iter()
            .all(|x| x["args"]["from"] == right && x["args"]["to"] == left)
    );
    assert!(req.iter().all(|x| x["args"]["service"] == "w.q"));
    let arrows = check_arrows(ev);
    assert_eq!(2 * arrows, net.len());
    check_lanes(ev);
    // Spills of one node overlap: its disk thread has more than one lane.
    assert!(
        net.iter()
            .any(|x| x["tid"].as_u64() == Some(u64::from(orrery::trace::DISK_TID) + 1))
    );
    assert_eq!(v, trace_of(MOVES_RUN));
}

#[test]
fn transfers_past_the_limit_are_counted_in_the_trace_and_the_run_header() {
    // 210,000 steps of a job whose collective is priced in closed form (hierarchical over
    // uneven devices per node): one transfer record each, more than the timeline keeps.
    let steps = orrery::sim::timeline::MAX_TRANSFERS + 10_000;
    let src = format!(
        "cluster c {{\n  node dgx_h100 x 2\n}}\nworkload w {{\n  placement_group pg strategy STRICT_SPREAD {{\n    bundle {{ GPU: 1 }}\n    bundle {{ GPU: 2 }}\n  }}\n  training job on pg steps {steps} {{\n    allreduce 1 MB algo ring hierarchical\n  }}\n}}\n"
    );
    let r = simulate(&spec(&src), &cfg());
    let t = &r.timeline;
    let max = orrery::sim::timeline::MAX_TRANSFERS;
    assert_eq!(t.transfers.len(), max);
    assert_eq!(t.transfers_dropped, 10_000);
    // The first steps are kept, in order.
    assert_eq!(t.transfers[max - 1].step, Some(max as u32 - 1));
    assert!(t.transfers.iter().all(|x| x.kind == MoveKind::Collective));
    // The trace says so in its metadata: here of a timeline that kept one transfer of 10,001
    // (writing 400,000 slices would only make the test slow).
    let mut small = orrery::sim::timeline::Timeline {
        nodes: vec!["n0".into(), "n1".into()],
        labels: t.labels.clone(),
        groups: t.groups.clone(),
        transfers_dropped: 10_000,
        ..Default::default()
    };
    small.transfers.push(t.transfers[0].clone());
    let v: Json = serde_json::from_str(&orrery::trace::perfetto(&small, "header")).unwrap();
    let m = &v["metadata"];
    assert_eq!(m["network_transfers"].as_u64(), Some(1));
    assert_eq!(m["network_dropped"].as_u64(), Some(10_000));
    assert_eq!(m["truncated"], true);
    let ev = v["traceEvents"].as_array().unwrap();
    assert_eq!(
        network_slices(ev).len(),
        2,
        "one collective slice per node of its group"
    );
    // And so does the run's header.
    let said = format!("10000 network transfers after the first {max} were not recorded");
    assert_eq!(t.limits(), vec![said.clone()]);
    let h = orrery::report::Header {
        orrery: "test".into(),
        scenario: "t.orr".into(),
        scenario_hash: "0".into(),
        seed: 1,
        policy: None,
        failures: None,
        horizon: None,
        model_sources: Vec::new(),
        network_models: Vec::new(),
        timeline_limits: t.limits(),
        tiers: Vec::new(),
    };
    assert!(
        h.line().ends_with(&format!("\ntimeline: {said}")),
        "{}",
        h.line()
    );
}
