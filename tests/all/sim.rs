//! The simulation against closed forms: M/M/c (Erlang C) and M/D/1 (Pollaczek–Khinchine)
//! waiting times, task waves, the α–β cost of a training step, Ray's placement-group retry
//! backoff, and determinism.

use orrery::accuracy::queueing::erlang_c;
use orrery::load_str;
use orrery::scenario::Spec;
use orrery::sim::{SimConfig, simulate};

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

const GPU_NODE: &str =
    "node gpu1 {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  device L4 x 1\n}\n";

fn service_scenario(c: u32, lambda: f64, mean_ms: f64, exponential: bool, horizon_s: u32) -> Spec {
    spec(&format!(
        "{GPU_NODE}cluster c {{\n  node gpu1 x {c}\n}}\nworkload w {{\n  service s {{\n    replicas {c}\n    resources {{ CPU: 1, GPU: 1 }}\n    arrival poisson {lambda} /s\n    service_time {mean_ms} ms{}\n  }}\n}}\nexperiment e {{\n  horizon {horizon_s} s\n}}\n",
        if exponential { " exponential" } else { "" }
    ))
}

#[test]
fn mmc_waiting_time_matches_erlang_c() {
    // c = 4 replicas, λ = 80/s, μ = 25/s: a = 3.2, ρ = 0.8.
    let (c, lambda, mu) = (4u32, 80.0, 25.0);
    let a = lambda / mu;
    let wq = erlang_c(c, a) / (f64::from(c) * mu - lambda);
    let s = service_scenario(c, lambda, 1000.0 / mu, true, 4000);
    let mut means = Vec::new();
    for seed in 1..=3 {
        let r = simulate(
            &s,
            &SimConfig {
                seed,
                ..Default::default()
            },
        );
        let svc = &r.metrics.services[0];
        assert_eq!(svc.replicas_placed, c);
        assert!(svc.served > 300_000, "served {}", svc.served);
        means.push(svc.waiting.mean);
        // P(wait > 0) is Erlang C's C(c, a) (0.596 here), and the mean queue length Little's
        // λ·Wq: within 5% a seed over 300,000 requests.
        let pw = erlang_c(c, a);
        assert!(
            (svc.wait_probability - pw).abs() < 0.05 * pw,
            "P(wait > 0) {} vs Erlang C {pw}",
            svc.wait_probability
        );
        assert!(
            (svc.mean_queue_length - lambda * wq).abs() < 0.05 * lambda * wq,
            "Lq {} vs {}",
            svc.mean_queue_length,
            lambda * wq
        );
    }
    let mean = means.iter().sum::<f64>() / means.len() as f64;
    let err = (mean - wq).abs() / wq;
    assert!(
        err < 0.05,
        "simulated Wq {mean:.5} s vs Erlang C {wq:.5} s ({:.1}% off; per seed {means:?})",
        err * 100.0
    );
}

#[test]
fn md1_waiting_time_matches_pollaczek_khinchine() {
    // M/D/1: Wq = ρ / (2μ(1−ρ)); λ = 15/s, D = 50 ms: ρ = 0.75, Wq = 75 ms.
    let (lambda, d) = (15.0, 0.05);
    let rho = lambda * d;
    let wq = rho * d / (2.0 * (1.0 - rho));
    let s = service_scenario(1, lambda, d * 1000.0, false, 20000);
    let r = simulate(
        &s,
        &SimConfig {
            seed: 9,
            ..Default::default()
        },
    );
    let w = r.metrics.services[0].waiting.mean;
    assert!(
        (w - wq).abs() / wq < 0.05,
        "simulated {w:.5} s vs {wq:.5} s"
    );
    // Latency = wait + the fixed service time.
    assert!((r.metrics.services[0].latency.mean - w - d).abs() < 1e-6);
}

#[test]
fn task_waves_and_dependencies() {
    // 2 nodes × 8 CPUs. a: 16 tasks of 10 s run at once; b: 32 tasks of 5 s after a run in
    // two waves: makespan 10 + 5 + 5 = 20 s; half of b waits 5 s.
    let s = spec(
        "node cpu8 {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}\ncluster c {\n  node cpu8 x 2\n}\nworkload w {\n  tasks a x 16 {\n    resources { CPU: 1 }\n    duration 10 s\n  }\n  tasks b x 32 after a {\n    resources { CPU: 1 }\n    duration 5 s\n  }\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    let m = &r.metrics;
    assert_eq!(m.makespan, 20.0);
    let b = &m.tasks[1];
    assert_eq!((b.completed, b.first_start, b.last_end), (32, 10.0, 20.0));
    assert_eq!(b.queueing_delay.p50, 0.0);
    assert_eq!(b.queueing_delay.max, 5.0);
    // 16 CPU-busy tasks carry no devices: no device utilization is recorded.
    assert!(m.utilization.is_empty());
}

#[test]
fn infeasible_tasks_are_reported_not_run() {
    // An error at load, unless allowed (Ray's pending forever), as here.
    let src = "node cpu8 {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}\ncluster c {\n  node cpu8 x 2\n}\nworkload w {\n  tasks big x 3 {\n    resources { CPU: 16 }\n    duration 1 s\n  }\n}\n";
    assert!(load_str("t.orr", src).has_errors());
    let l = orrery::load_str_with(
        "t.orr",
        src,
        orrery::scenario::LoadOptions {
            allow_infeasible: true,
        },
    );
    assert!(!l.has_errors(), "{}", l.render(false));
    let s = l.spec.unwrap();
    let r = simulate(&s, &SimConfig::default());
    assert_eq!(
        (r.metrics.tasks[0].completed, r.metrics.tasks[0].infeasible),
        (0, 3)
    );
}

#[test]
fn training_step_is_compute_plus_ring_allreduce() {
    let s = spec(
        "cluster c {\n  node dgx_h100 x 1\n}\nworkload w {\n  placement_group pg strategy STRICT_PACK {\n    bundle { GPU: 8 }\n  }\n  training t on pg steps 10 {\n    compute 1 PFLOP per device bf16\n    allreduce 1 GB algo ring\n  }\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    let t = &r.metrics.training[0];
    // compute: 1e15 / (989e12 × 0.75); ring on one NVSwitch node (NCCL's protocol for it at
    // 1 GB: Simple), p = 8, base 8.4 µs, α = 3.4 µs, β = 370.8 GB/s (NCCL's NVLink4 figure,
    // the catalog's `collective`; line rate 450).
    let compute = 1e15 / (989e12 * 0.75);
    let comm = 8.4e-6 + 2.0 * 7.0 * 3.4e-6 + 2.0 * 7.0 / 8.0 * 1e9 / 370.8e9;
    assert!(
        (t.step_time - (compute + comm)).abs() < 2e-9,
        "{} vs {}",
        t.step_time,
        compute + comm
    );
    assert_eq!(t.steps_done, 10);
    assert_eq!(t.devices, 8);
    let fin = t.finished.unwrap();
    assert!((fin - 10.0 * (compute + comm)).abs() < 1e-7);
    // Runtime goodput: every step kept and nothing else took time (communication is part of
    // a step), so 1.
    assert!((t.goodput - 1.0).abs() < 1e-6);
    assert_eq!(r.metrics.placement_groups[0].state, "created");
    // The 8 devices are busy exactly while the job runs.
    assert!((r.metrics.utilization["H100_SXM"].busy_fraction - 1.0).abs() < 1e-6);
    assert!((r.metrics.utilization["H100_SXM"].allocated_fraction - 1.0).abs() < 1e-6);
}

#[test]
fn placement_group_waits_with_rays_backoff() {
    // The node's 8 GPUs are busy for 30 s; the group retries at 0, then 100 ms × 1.5^k
    // (capped at 1 s) and is created at the first retry at or after 30 s.
    let s = spec(
        "cluster c {\n  node dgx_h100 x 1\n}\nworkload hog {\n  tasks t x 1 {\n    resources { GPU: 8 }\n    duration 30 s\n  }\n}\nworkload w {\n  placement_group pg strategy PACK {\n    bundle { GPU: 8 }\n  }\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    let (mut t, mut d, mut attempts) = (0.0f64, 0.1f64, 1u64);
    while t < 30.0 - 1e-9 {
        t += d;
        d = (d * 1.5).min(1.0);
        attempts += 1;
    }
    let p = &r.metrics.placement_groups[0];
    assert_eq!(p.state, "created");
    assert!(
        (p.pending_time - t).abs() < 1e-6,
        "{} vs {t}",
        p.pending_time
    );
    assert_eq!(p.attempts, attempts);
}

#[test]
fn same_seed_same_bytes_different_seed_may_differ() {
    let text = std::fs::read_to_string("scenarios/quickstart.orr").unwrap();
    let s = spec(&text);
    let a = serde_json::to_string(
        &simulate(
            &s,
            &SimConfig {
                seed: 3,
                ..Default::default()
            },
        )
        .metrics,
    )
    .unwrap();
    let b = serde_json::to_string(
        &simulate(
            &s,
            &SimConfig {
                seed: 3,
                ..Default::default()
            },
        )
        .metrics,
    )
    .unwrap();
    assert_eq!(a, b);
}

#[test]
fn every_scenario_runs() {
    for f in [
        "quickstart.orr",
        "tpu_slices.orr",
        "failure_drill.orr",
        "mixed_inference.orr",
        "h100_vs_mi300x/h100.orr",
        "h100_vs_mi300x/mi300x.orr",
    ] {
        let l = orrery::load_file(std::path::Path::new(&format!("scenarios/{f}"))).unwrap();
        let s = l.spec.expect(f);
        let r = simulate(
            &s,
            &SimConfig {
                seed: 1,
                horizon: Some(600_000_000_000),
                ..Default::default()
            },
        );
        assert!(r.metrics.events > 0, "{f} produced no events");
        // Check's lower bound (orrery::sim::estimate) holds for the run it bounds.
        let est = orrery::sim::estimate::estimate(&s, Some(600.0), &Default::default());
        assert!(
            est.events() <= r.metrics.events as f64,
            "{f}: estimate {} > {} events",
            est.events(),
            r.metrics.events
        );
    }
}

#[test]
fn node_death_reschedules_lost_bundles_and_restarts_from_the_checkpoint() {
    // Three DGX nodes (n2 is the Ray head, so losing n0 is not losing the cluster); a 2-bundle
    // STRICT_SPREAD group lands on the emptiest nodes by id: n0, n1.
    // Steps take 10 s (7.4175 PFLOP at 989 TFLOPS × 0.75); a 100 GB checkpoint every 60 s
    // takes 100e9 / (5 GB/s × 2 nodes) = 10 s, so the first completes at 60 + 10 = 70 s.
    // n0 dies at 100 s, is declared dead at 115 s (5 misses × 3 s); its bundle moves to n2;
    // the job reloads the checkpoint (10 s) and resumes at 125 s. Lost: 16 GPUs × (100 − 70) s.
    let s = spec(
        "cluster c {\n  node dgx_h100 x 3\n  head n2\n}\nworkload w {\n  placement_group pg strategy STRICT_SPREAD {\n    bundle { GPU: 8 } x 2\n  }\n  training t on pg steps 30 {\n    compute 7.4175 PFLOP per device bf16\n    checkpoint every 60 s size 100 GB\n  }\n}\nfailures {\n  at 100 s kill node n0\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    let f = &r.metrics.failures;
    assert_eq!(f.node_failures, 1);
    assert!((f.time_to_detect.mean - 15.0).abs() < 1e-9);
    assert_eq!(f.bundles_rescheduled, 1);
    assert!(
        (f.time_to_recover.mean - 25.0).abs() < 1e-6,
        "{}",
        f.time_to_recover.mean
    );
    let t = &r.metrics.training[0];
    assert_eq!((t.restarts, t.steps_done), (1, 30));
    // Work thrown away: 16 GPUs × (100 − 70) s; stalled: 16 GPUs × (125 − 100) s from the
    // crash until it computes again; lost device-hours: both.
    assert!(
        (t.lost_work_device_hours - 16.0 * 30.0 / 3600.0).abs() < 1e-6,
        "{}",
        t.lost_work_device_hours
    );
    assert!(
        (t.stalled_device_hours - 16.0 * 25.0 / 3600.0).abs() < 1e-6,
        "{}",
        t.stalled_device_hours * 3600.0
    );
    assert!((t.lost_device_hours - 16.0 * 55.0 / 3600.0).abs() < 1e-6);
    assert!((f.lost_device_hours - t.lost_device_hours).abs() < 1e-9);
    assert!((f.stalled_device_hours - t.stalled_device_hours).abs() < 1e-9);
    assert_eq!(r.metrics.placement_groups[0].nodes, vec!["n2", "n1"]);
    assert!(r.metrics.failures.unsimulated.is_empty());
}

#[test]
fn tasks_on_a_dead_node_are_retried_after_detection() {
    // 2 nodes × 8 CPUs. DEFAULT policy: the head (n0) takes tasks while under 50 % (4 of 8),
    // then, with k = max(1, ⌊2 × 0.2⌋) = 1, the best remaining node n1 takes the other 4.
    // n1 dies at 10 s and is declared dead at 25 s: its 4 tasks are retried on n0's free
    // CPUs and end at 125 s.
    let s = spec(
        "node cpu8 {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}\ncluster c {\n  node cpu8 x 2\n}\nworkload w {\n  tasks t x 8 {\n    resources { CPU: 1 }\n    duration 100 s\n  }\n}\nfailures {\n  at 10 s kill node n1\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    assert_eq!(r.metrics.failures.tasks_retried, 4);
    assert_eq!(r.metrics.tasks[0].completed, 8);
    assert_eq!(r.metrics.makespan, 125.0);
    assert!(r.metrics.failures.node_availability < 1.0);
}

#[test]
fn a_slice_is_reserved_as_a_gang_and_lost_as_a_unit() {
    // Two v5p slices of 2x2x4 = 16 chips on 4 hosts each. The group takes slice s0 whole: a
    // head bundle on worker 0 plus one bundle per host. When host s0.h2 dies, the whole slice
    // is lost: at detection (15 s later) the group moves to s1, all 5 bundles re-placed.
    let s = spec(
        "cluster c {\n  slice s[0..1] node tpu_v5p_host topology 2x2x4\n}\nworkload w {\n  placement_group g slice {}\n  training t on g steps 40 {\n    compute 100 PFLOP per device bf16\n    checkpoint every 2 min size 10 GB\n  }\n}\nfailures {\n  at 5 min kill node s0.h2\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    let pg = &r.metrics.placement_groups[0];
    assert_eq!(pg.bundles, 5);
    assert!(
        pg.nodes.iter().all(|n| n.starts_with("s1.")),
        "{:?}",
        pg.nodes
    );
    let t = &r.metrics.training[0];
    assert_eq!((t.devices, t.restarts, t.steps_done), (16, 1, 40));
    assert_eq!(r.metrics.failures.bundles_rescheduled, 5);
    // Nothing stays allocated on the surviving hosts of the broken slice.
    let rec = simulate(
        &s,
        &SimConfig {
            record: true,
            ..Default::default()
        },
    );
    let mut held = std::collections::BTreeMap::new();
    for e in &rec.trace {
        *held.entry(e.node).or_insert(0i64) += i64::from(e.delta);
    }
    assert!(held.values().all(|v| *v == 0), "{held:?}");
}

#[test]
fn a_gpu_fault_moves_the_group_at_once_and_the_node_stays_up() {
    // An Xid on n0's GPU 3 at 100 s: the 8-GPU bundle cannot stay on a node with 7 good GPUs,
    // so it moves to n1 immediately (no health-check delay: the worker dies on the CUDA
    // error); the job reloads its checkpoint (100 GB at 5 GB/s = 20 s) and resumes at 120 s.
    // n0 stays up and keeps serving CPU work.
    let s = spec(
        "cluster c {\n  node dgx_h100 x 2\n}\nworkload w {\n  placement_group pg strategy STRICT_PACK {\n    bundle { GPU: 8 }\n  }\n  training t on pg steps 20 {\n    compute 7.4175 PFLOP per device bf16\n    checkpoint every 60 s size 100 GB\n  }\n}\nfailures {\n  at 100 s xid device n0.d3\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    let f = &r.metrics.failures;
    assert_eq!(f.node_failures, 0);
    assert!(f.unsimulated.is_empty(), "{:?}", f.unsimulated);
    assert_eq!(r.metrics.placement_groups[0].nodes, vec!["n1"]);
    assert!(
        (f.time_to_recover.mean - 20.0).abs() < 1e-6,
        "{}",
        f.time_to_recover.mean
    );
    assert_eq!(
        (
            r.metrics.training[0].restarts,
            r.metrics.training[0].steps_done
        ),
        (1, 20)
    );
    assert!(
        f.timeline
            .iter()
            .any(|e| e.kind == "xid" && e.subject == "n0.d3")
    );
    assert!(r.violations.is_empty(), "{:?}", r.violations);
}

#[test]
fn nic_faults_restart_collectives_or_cut_the_node_off() {
    // dgx_h100 NICs: nic0..7 compute (400G), nic8..9 storage, nic10..11 frontend.
    let base = "cluster c {\n  node dgx_h100 x 3\n  head n2\n}\nworkload w {\n  placement_group pg strategy STRICT_SPREAD {\n    bundle { GPU: 8 } x 2\n  }\n  training t on pg steps 30 {\n    compute 7.4175 PFLOP per device bf16\n    allreduce 10 GB algo ring hierarchical\n    checkpoint every 60 s size 100 GB\n  }\n}\n";
    // A compute NIC: NCCL fails, the job restarts at once on the same nodes, slower network.
    let s = spec(&format!(
        "{base}failures {{\n  at 100 s down link n0.nic0 for 10 min\n}}\n"
    ));
    let r = simulate(&s, &SimConfig::default());
    assert_eq!(r.metrics.failures.node_failures, 0);
    assert_eq!(r.metrics.training[0].restarts, 1);
    assert_eq!(r.metrics.placement_groups[0].nodes, vec!["n0", "n1"]);
    // Both frontend NICs: the node is cut off; silent health-check timeouts declare it dead
    // after 5 × (3 s + 10 s) = 65 s and the bundle moves to n2.
    let s = spec(&format!(
        "{base}failures {{\n  at 100 s down nic n0.nic10\n  at 100 s down nic n0.nic11\n}}\n"
    ));
    let r = simulate(&s, &SimConfig::default());
    let f = &r.metrics.failures;
    assert_eq!(f.node_failures, 1);
    assert!(
        (f.time_to_detect.mean - 65.0).abs() < 1e-9,
        "{}",
        f.time_to_detect.mean
    );
    assert!(
        r.metrics.placement_groups[0]
            .nodes
            .contains(&"n2".to_string())
    );
    assert!(f.unsimulated.is_empty(), "{:?}", f.unsimulated);
    assert!(r.violations.is_empty());
}

#[test]
fn degraded_nvlink_slows_collectives_without_failing() {
    // One node, 8 GPUs, 4 GB ring allreduce per step: halving NVLink from 100 s on doubles
    // the bandwidth term of the steps that start after it, and nothing restarts.
    let base = "cluster c {\n  node dgx_h100 x 1\n}\nworkload w {\n  placement_group pg strategy STRICT_PACK {\n    bundle { GPU: 8 }\n  }\n  training t on pg steps 100 {\n    compute 7.4175 PFLOP per device bf16\n    allreduce 4 GB algo ring\n  }\n}\n";
    let healthy = simulate(&spec(base), &SimConfig::default())
        .metrics
        .training[0]
        .finished
        .unwrap();
    let s = spec(&format!(
        "{base}failures {{\n  at 100 s degrade nvlink n0 to 50%\n}}\n"
    ));
    let r = simulate(&s, &SimConfig::default());
    let t = &r.metrics.training[0];
    assert_eq!(t.restarts, 0);
    let slow = t.finished.unwrap();
    // At the collective's NVLink bandwidth, 370.8 GB/s (catalog `collective`).
    let beta_term = 2.0 * 7.0 / 8.0 * 4e9 / 370.8e9;
    // Steps after the change pay the bandwidth term twice: finish later by roughly
    // (steps left) × beta_term.
    assert!(
        slow > healthy + 80.0 * beta_term && slow < healthy + 100.0 * beta_term,
        "{healthy} → {slow}"
    );
}

#[test]
fn crashes_during_a_checkpoint_write_or_load() {
    // 10 s steps, a checkpoint every 100 s that takes 10 s to write (50 GB at 5 GB/s), so
    // good checkpoints complete at 110, 210, 310, 410 s and a write runs from 500 to 510 s.
    // n0 dies at 505 s, mid-write: that checkpoint never completes, so the job goes back to
    // the one of 410 s and loses 8 GPUs × 95 s. Declared dead at 520 s, the group moves to n1
    // and loads (520–530 s); n1 dies at 525 s, mid-load, losing nothing more (nothing was
    // computed since). Declared dead at 540 s, the group moves to n2, loads until 550 s and
    // computes again: one recovery of 550 − 505 = 45 s.
    let s = spec(
        "cluster c {\n  node dgx_h100 x 3\n  head n2\n}\nworkload w {\n  placement_group pg strategy STRICT_PACK {\n    bundle { GPU: 8 }\n  }\n  training t on pg steps 60 {\n    compute 7.4175 PFLOP per device bf16\n    checkpoint every 100 s size 50 GB\n  }\n}\nfailures {\n  at 505 s kill node n0\n  at 525 s kill node n1\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    let t = &r.metrics.training[0];
    assert!(
        (t.lost_work_device_hours - 8.0 * 95.0 / 3600.0).abs() < 1e-6,
        "{}",
        t.lost_work_device_hours * 3600.0
    );
    // Stalled from the first crash until it computes again: 8 GPUs × (550 − 505) s.
    assert!(
        (t.stalled_device_hours - 8.0 * 45.0 / 3600.0).abs() < 1e-6,
        "{}",
        t.stalled_device_hours * 3600.0
    );
    let f = &r.metrics.failures;
    assert_eq!(f.time_to_recover.count, 1);
    assert!(
        (f.time_to_recover.mean - 45.0).abs() < 1e-6,
        "{}",
        f.time_to_recover.mean
    );
    assert_eq!(t.steps_done, 60);
    assert_eq!(r.metrics.placement_groups[0].nodes, vec!["n2"]);
    assert!(f.time_to_detect.max <= 15.0 + 1e-9);
}

#[test]
fn losing_the_head_loses_the_cluster_until_it_returns() {
    // Ray keeps the GCS in memory on the head by default: when the head (n0) dies at 100 s
    // every node goes down with it; when it returns at 400 s the whole cluster rejoins and
    // the job resumes from its checkpoint.
    let s = spec(
        "cluster c {\n  node dgx_h100 x 2\n}\nworkload w {\n  placement_group pg strategy STRICT_PACK {\n    bundle { GPU: 8 }\n  }\n  training t on pg steps 60 {\n    compute 7.4175 PFLOP per device bf16\n    checkpoint every 60 s size 10 GB\n  }\n}\nfailures {\n  at 100 s kill head for 5 min\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    let f = &r.metrics.failures;
    assert_eq!(f.node_failures, 2);
    assert!(f.timeline.iter().any(|e| e.kind == "cluster_loss"));
    assert_eq!(
        f.timeline.iter().filter(|e| e.kind == "repaired").count(),
        2
    );
    let t = &r.metrics.training[0];
    assert_eq!((t.restarts, t.steps_done), (1, 60));
    assert!(t.finished.unwrap() > 400.0);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
}

#[test]
fn actor_calls_are_retried_only_as_max_task_retries_allows() {
    // One actor making 10 calls of 20 s, pinned to n1 by soft node affinity. n1 dies at 50 s
    // (during call 3); once it is declared dead the actor restarts (max_restarts 1) on n0.
    let scenario = |retries: i32| {
        spec(&format!(
            "node cpu8 {{\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}}\ncluster c {{\n  node cpu8 x 2\n}}\nworkload w {{\n  actor a {{\n    resources {{ CPU: 1 }}\n    calls 10\n    call_duration 20 s\n    max_restarts 1\n    max_task_retries {retries}\n    strategy node_affinity(n1 soft)\n  }}\n}}\nfailures {{\n  at 50 s kill node n1\n}}\n"
        ))
    };
    let r = simulate(&scenario(0), &SimConfig::default());
    let a = &r.metrics.actors[0];
    assert_eq!(
        (a.calls_done, a.calls_failed),
        (9, 1),
        "the call in flight fails"
    );
    assert_eq!(r.metrics.failures.actors_restarted, 1);
    let r = simulate(&scenario(-1), &SimConfig::default());
    let a = &r.metrics.actors[0];
    assert_eq!(
        (a.calls_done, a.calls_failed),
        (10, 0),
        "the call in flight is retried"
    );
    assert!(r.violations.is_empty());
}

#[test]
fn outputs_lost_with_a_node_are_rebuilt_from_lineage() {
    // 2 nodes × 8 CPUs (n1 is the head). `a`: 16 tasks of 10 s with 1 GB outputs, 8 on each
    // node, done at 10 s. `b` (after a): 32 tasks of 30 s, 16 start at 10 s, 16 wait. n0 dies
    // at 20 s: its 8 running `b` tasks are lost, and so are the 8 `a` outputs it held, which
    // the 16 `b` tasks yet to start still need. At 35 s (declared dead) the 8 `a` tasks re-run
    // on n1 as n1 frees up, then the waiting `b` tasks go.
    let s = spec(
        "node cpu8 {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  nic eth_100g\n}\ncluster c {\n  node cpu8 x 2\n  head n1\n}\nworkload w {\n  tasks a x 16 {\n    resources { CPU: 1 }\n    duration 10 s\n    output 1 GB\n  }\n  tasks b x 32 after a {\n    resources { CPU: 1 }\n    duration 30 s\n  }\n}\nfailures {\n  at 20 s kill node n0\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    let f = &r.metrics.failures;
    assert_eq!(f.objects_rebuilt, 8, "{f:?}");
    assert_eq!(f.objects_lost, 0);
    assert_eq!(
        r.metrics.tasks[0].completed, 16,
        "rebuilt outputs are not counted twice"
    );
    assert_eq!(r.metrics.tasks[1].completed, 32);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    // Without outputs nothing needs rebuilding.
    let plain = spec(&s_without_outputs());
    let r = simulate(&plain, &SimConfig::default());
    assert_eq!(r.metrics.failures.objects_rebuilt, 0);
}

fn s_without_outputs() -> String {
    "node cpu8 {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  nic eth_100g\n}\ncluster c {\n  node cpu8 x 2\n  head n1\n}\nworkload w {\n  tasks a x 16 {\n    resources { CPU: 1 }\n    duration 10 s\n  }\n  tasks b x 32 after a {\n    resources { CPU: 1 }\n    duration 30 s\n  }\n}\nfailures {\n  at 20 s kill node n0\n}\n".to_string()
}

#[test]
fn outputs_beyond_the_spilling_threshold_go_to_disk_and_cost_a_restore() {
    // Nodes with 8 GiB of RAM: a 2.58 GB object store (30 %), spilling past 80 % = 2.06 GB.
    // `a`: 16 tasks (8 per node) with 400 MB outputs: 5 fit per node (2.0 GB), 3 spill per
    // node. `b` reads 16 × 400 MB / 4 tasks = 1.6 GB each, 6/16 of it spilled:
    // 0.6 GB / 2 GB/s = 0.3 s from disk, on top of the network fetch: the remote half,
    // 0.8 GB, through Ray's object store between the two hosts (its closed form is checked
    // by hand in tests/all/transport.rs).
    let text = |mb: u32| {
        format!(
            "node small {{\n  cpu sockets 1, cores 8\n  memory 8 GiB\n  nic eth_100g\n}}\ncluster c {{\n  node small x 2\n}}\nworkload w {{\n  tasks a x 16 {{\n    resources {{ CPU: 1 }}\n    duration 10 s\n    output {mb} MB\n  }}\n  tasks b x 4 after a {{\n    resources {{ CPU: 1 }}\n    duration 10 s\n  }}\n}}\n"
        )
    };
    let r = simulate(&spec(&text(400)), &SimConfig::default());
    let o = &r.metrics.objects;
    assert_eq!(o.spilled_objects, 6);
    assert!((o.spilled_bytes - 2.4e9).abs() < 1.0);
    let sp = spec(&text(400));
    let g = orrery::network::Graph::build(&sp);
    let params = orrery::transport::TransportParams::named(&sp, "object_store").unwrap();
    let plan = orrery::transport::plan_host(&g, &params, 1, 0, 0.8e9, 1).unwrap();
    let fetch = orrery::transport::closed_form(&plan, &g.capacity).secs;
    // Serialising and pushing 0.8 GB at the object store's ~11.6 GB/s memcpy: ~0.14 s.
    assert!(fetch > 0.1 && fetch < 0.2, "{fetch}");
    assert!(
        r.network_models.iter().any(|m| m.on_graph
            && m.text
                == "object fetch w.b: transport object_store on the shared network, from the producers' nodes"),
        "{:?}",
        r.network_models
    );
    // Each `b` reads 4 producers' outputs from wherever they are (the object directory): none,
    // some or all of them remote, so its run time lies between 10 s + the restore and that
    // plus fetching all 1.6 GB (the four fetches share the NIC: at most 4× slower wire).
    let whole = orrery::transport::closed_form(
        &orrery::transport::plan_host(&g, &params, 1, 0, 1.6e9, 1).unwrap(),
        &g.capacity,
    )
    .secs;
    let b = &r.metrics.tasks[1].run_time;
    assert!(b.mean >= 10.3 - 1e-6, "{b:?}");
    assert!(b.max <= 10.3 + 4.0 * whole + 1e-6, "{b:?}");
    assert!(b.max >= 10.3 + fetch, "someone fetched remotely: {b:?}");
    // Small outputs never spill.
    let r = simulate(&spec(&text(100)), &SimConfig::default());
    assert_eq!(r.metrics.objects.spilled_objects, 0);
}

#[test]
fn retries_wait_out_their_delay() {
    // As `tasks_on_a_dead_node_are_retried_after_detection`, with a 30 s retry delay: the
    // four lost tasks are resubmitted at 25 + 30 = 55 s and end at 155 s.
    let s = spec(
        "node cpu8 {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}\ncluster c {\n  node cpu8 x 2\n}\nworkload w {\n  tasks t x 8 {\n    resources { CPU: 1 }\n    duration 100 s\n    retry_delay 30 s\n  }\n}\nfailures {\n  at 10 s kill node n1\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    assert_eq!(r.metrics.makespan, 155.0);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
}

#[test]
fn a_degraded_nic_slows_collectives_across_nodes_without_failing() {
    let base = "cluster c {\n  node dgx_h100 x 2\n}\nworkload w {\n  placement_group pg strategy STRICT_SPREAD {\n    bundle { GPU: 8 } x 2\n  }\n  training t on pg steps 50 {\n    compute 7.4175 PFLOP per device bf16\n    allreduce 10 GB algo ring hierarchical\n  }\n}\n";
    let healthy = simulate(&spec(base), &SimConfig::default())
        .metrics
        .training[0]
        .clone();
    let s = spec(&format!(
        "{base}failures {{\n  at 1 s degrade link n0.nic0 to 50% for 1 h\n}}\n"
    ));
    let r = simulate(&s, &SimConfig::default());
    let t = &r.metrics.training[0];
    assert_eq!(t.restarts, 0);
    assert!(
        r.metrics.failures.unsimulated.is_empty(),
        "{:?}",
        r.metrics.failures.unsimulated
    );
    // n0's compute bandwidth drops to (7 × 50 + 25) / 400 = 93.75 %: every step after the first
    // pays the inter-node term 1/0.9375 times.
    assert!(t.finished.unwrap() > healthy.finished.unwrap());
    assert!(t.step_time > healthy.step_time);
}

#[test]
fn an_oversubscribed_spine_slows_a_cross_rack_ring_by_its_share() {
    // Two DGX H100 nodes, a flat ring allreduce of 1 GB over their 16 GPUs, on 8 channels of
    // n/8. In one rack each channel's inter-node hops run at a NIC's 50 GB/s; across two racks
    // behind an 8:1 spine each leaf has 8 × 50 / 8 = 50 GB/s up, split over 4 spines of
    // 12.5 GB/s. The flow model prices each channel by its slowest hop: latency +
    // 2(p−1)/p·(n/8)/β, p = 16, the latency NCCL's path: of the 30 steps a chunk crosses the
    // network on 2 (14 µs each) and NVLink on 28 (3.4 µs each).
    let run = |racks: &str| {
        let s = spec(&format!(
            "cluster c {{\n{racks}  fabric leaf_spine oversubscription 8:1\n}}\nworkload w {{\n  placement_group pg strategy STRICT_SPREAD {{\n    bundle {{ GPU: 8 }} x 2\n  }}\n  training t on pg steps 10 {{\n    compute 1 TFLOP per device bf16\n    allreduce 1 GB algo ring\n  }}\n}}\n"
        ));
        let r = simulate(&s, &SimConfig::default());
        assert!(
            r.network_models.iter().any(|m| m.on_graph
                && m.text
                    == "collective allreduce ring: ring simple on the run's shared network (flow model)"),
            "{:?}",
            r.network_models
        );
        r.metrics.training[0].step_time
    };
    let compute = 1e12 / (989e12 * 0.75);
    // NCCL's ring Simple base latency (8.4 µs) once per call, then the ring's steps.
    let comm = |beta: f64| 8.4e-6 + 28.0 * 3.4e-6 + 2.0 * 14e-6 + 2.0 * 15.0 / 16.0 * 1e9 / beta;
    let same = run("  rack r0 {\n    node dgx_h100 x 2\n  }\n");
    let split =
        run("  rack r0 {\n    node dgx_h100 x 1\n  }\n  rack r1 {\n    node dgx_h100 x 1\n  }\n");
    // One rack: 8 channels (one per NIC, as NCCL's rings), each at a NIC's 50 GB/s.
    assert!((same - compute - comm(8.0 * 50e9)).abs() < 1e-8, "{same}");
    // Two racks: the 8 channels' cross-rack hops hash (ECMP by pair) onto the 4 spine links
    // unevenly; the busiest carries 3 of them, so every channel (a pipeline at its slowest
    // hop) moves at 12.5/3 GB/s.
    assert!(
        (split - compute - comm(8.0 * 12.5e9 / 3.0)).abs() < 1e-8,
        "{split}"
    );
}

/// The contention benchmark's scenario at a tiny size (4 jobs of 32 GPUs on one rack, three
/// task stages): every job steps on the shared network, the stages complete in order and the
/// consumers' fetches are flows on it. Counts only, no timing.
#[test]
fn contention_bench_case_runs_small() {
    use orrery::bench::{Contention, contention_scenario, simulate_text};
    let c = Contention {
        racks: 1,
        jobs: 4,
        bundles: 4,
        stages: 3,
        tasks_per_stage: 64,
        horizon_s: 660,
    };
    let run = simulate_text("<contention>", &contention_scenario(&c)).unwrap();
    let r = &run.result;
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let m = &r.metrics;
    assert_eq!(m.horizon, 660.0);
    assert_eq!(m.training.len(), 4);
    for t in &m.training {
        assert_eq!(t.devices, 32, "{}", t.name);
        // ~0.8 s of compute a step: hundreds of steps in 11 minutes, never more than 825.
        assert!(t.steps_done > 300 && t.steps_done < 825, "{t:?}");
        assert!(t.communication_time > 0.0, "{t:?}");
        assert!(t.checkpoint_time > 0.0, "{t:?}");
    }
    let done: Vec<u64> = m.tasks.iter().map(|t| t.completed).collect();
    assert_eq!(done, vec![64, 64, 0], "5-minute stages, one after another");
    use orrery::sim::network::MovementKind;
    for kind in [MovementKind::Collective, MovementKind::Fetch] {
        assert!(
            r.network_models
                .iter()
                .any(|n| n.kind == kind && n.on_graph),
            "{kind:?}: {:?}",
            r.network_models
        );
    }
    assert!(
        r.network_models.iter().all(|n| n.on_graph),
        "{:?}",
        r.network_models
            .iter()
            .filter(|n| !n.on_graph)
            .collect::<Vec<_>>()
    );
    let steps: u64 = m.training.iter().map(|t| t.steps_done).sum();
    assert!(r.wire.flows > steps, "{:?} for {steps} steps", r.wire);
    assert!(r.wire.peak_active > 0 && r.wire.bytes > 0.0);
}

/// The N-node × M-task benchmark with remote inputs at a tiny size: every task completes and
/// the consumers' reads of other nodes' outputs are flows on the run's network (at most one per
/// producer read: 1 for each task of `c`, 2 for each of `d`); without them, no flows.
#[test]
fn remote_inputs_bench_case_runs_small() {
    use orrery::bench::{scenario_with, simulate_text};
    let run = simulate_text("<bench>", &scenario_with(64, 400, true)).unwrap();
    let r = &run.result;
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let done: u64 = r.metrics.tasks.iter().map(|t| t.completed).sum();
    assert_eq!(done, 400);
    assert!(
        r.network_models
            .iter()
            .any(|n| n.on_graph && n.text.contains("object fetch etl.d")),
        "{:?}",
        r.network_models
    );
    assert!(r.wire.flows > 0 && r.wire.flows <= 300, "{:?}", r.wire);
    // Each flow carries a 64 MiB output (a transport's inefficiency is extra wire bytes).
    assert!(r.wire.bytes >= r.wire.flows as f64 * 64.0 * 1024.0 * 1024.0 * 0.999);
    let plain = simulate_text("<bench>", &scenario_with(64, 400, false)).unwrap();
    assert_eq!(plain.result.wire.flows, 0);
    let done: u64 = plain.result.metrics.tasks.iter().map(|t| t.completed).sum();
    assert_eq!(done, 400);
}

#[test]
fn mmc_replicas_are_busy_at_the_offered_load_and_allocated_throughout() {
    // c = 4 replicas, λ = 75/s, μ = 25/s: ρ = λ / (c μ) = 0.75. Busy utilization is the
    // fraction of replica-time serving a request: ρ in expectation. With ~270,000 requests
    // over 3,600 s (seed 1), the busy fraction's standard error is well under 0.5 %, so a 2 %
    // tolerance fails only if busy time is not service time; the replicas are allocated (held)
    // all the time, busy or not: exactly 100 %.
    let s = service_scenario(4, 75.0, 40.0, true, 3600);
    let r = simulate(
        &s,
        &SimConfig {
            seed: 1,
            ..Default::default()
        },
    );
    let u = &r.metrics.utilization["L4"];
    assert_eq!(u.devices, 4);
    assert!(
        (u.busy_fraction - 0.75).abs() < 0.02,
        "busy {}",
        u.busy_fraction
    );
    assert!(
        (u.allocated_fraction - 1.0).abs() < 1e-9,
        "allocated {}",
        u.allocated_fraction
    );
    // The same per node type (every node is a `gpu1`).
    let t = &r.metrics.utilization_by_node_type["gpu1"];
    assert_eq!(t.devices, 4);
    assert_eq!(t.busy_fraction, u.busy_fraction);
    assert_eq!(t.allocated_fraction, u.allocated_fraction);
}

#[test]
fn a_collectives_scale_up_bytes_are_stretched_by_line_over_collective_rate() {
    // One ring allreduce of 1 GB over a DGX H100's 8 GPUs: each rank sends 2(p−1)/p · n, and
    // each send crosses two NVLink links (up to the NVSwitch, down to the next rank). The
    // flows run at the catalog's `collective` 370.8 GB/s of the 450 GB/s line, so each counts
    // 450 / 370.8 times its payload (README, "links").
    let s = spec(
        "cluster c {\n  node dgx_h100 x 1\n}\nworkload w {\n  placement_group pg strategy PACK {\n    bundle { GPU: 8 }\n  }\n  training t on pg steps 1 {\n    compute 1 TFLOP per device bf16\n    allreduce 1 GB algo ring\n  }\n}\n",
    );
    let r = simulate(&s, &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let payload = 8.0 * 2.0 * 7.0 / 8.0 * 1e9 * 2.0;
    let got = r.metrics.links["scale_up"].link_bytes;
    let want = payload * 450.0 / 370.8;
    assert!((got - want).abs() / want < 1e-9, "{got} vs {want}");
}
