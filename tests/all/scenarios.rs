//! Every file in scenarios/ parses, validates and is in canonical form; the built-in default
//! is the quickstart file.

use std::path::{Path, PathBuf};

fn orr_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(orr_files(&p));
        } else if p.extension().is_some_and(|x| x == "orr") {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn every_scenario_validates_and_is_canonical() {
    let files = orr_files(Path::new("scenarios"));
    for needed in [
        "quickstart.orr",
        "h100_vs_mi300x/h100.orr",
        "h100_vs_mi300x/mi300x.orr",
        "tpu_slices.orr",
        "failure_drill.orr",
        "shared_fabric.orr",
    ] {
        assert!(
            files.iter().any(|f| f.ends_with(needed)),
            "scenarios/{needed} is missing"
        );
    }
    for f in &files {
        let l = orrery::load_file(f).unwrap();
        assert!(
            !l.has_errors(),
            "{} does not validate:\n{}",
            f.display(),
            l.render(false)
        );
        assert!(
            l.diags.is_empty(),
            "{} has warnings:\n{}",
            f.display(),
            l.render(false)
        );
        let text = std::fs::read_to_string(f).unwrap();
        let (tree, _) = orrery::syntax::parse(&text, 0);
        assert_eq!(
            orrery::syntax::fmt::format(&tree).unwrap(),
            text,
            "{} is not canonical: run `orrery fmt --write`",
            f.display()
        );
    }
}

#[test]
fn the_default_scenario_is_the_quickstart_file() {
    let on_disk = std::fs::read_to_string(orrery::DEFAULT_SCENARIO.0).unwrap();
    assert_eq!(on_disk, orrery::DEFAULT_SCENARIO.1);
    let l = orrery::load_str(orrery::DEFAULT_SCENARIO.0, orrery::DEFAULT_SCENARIO.1);
    let spec = l.spec.expect("default scenario validates");
    assert!(spec.cluster.is_some() && !spec.workloads.is_empty() && !spec.experiments.is_empty());
}

#[test]
fn comparison_scenarios_share_their_workload() {
    let h = orrery::load_file(Path::new("scenarios/h100_vs_mi300x/h100.orr"))
        .unwrap()
        .spec
        .unwrap();
    let m = orrery::load_file(Path::new("scenarios/h100_vs_mi300x/mi300x.orr"))
        .unwrap()
        .spec
        .unwrap();
    let names = |s: &orrery::scenario::Spec| {
        s.workloads
            .iter()
            .map(|w| w.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&h), names(&m));
    let devices = |s: &orrery::scenario::Spec| {
        orrery::summary::summarize(s)
            .devices_by_type
            .values()
            .sum::<u64>()
    };
    assert_eq!(
        devices(&h),
        devices(&m),
        "a fair comparison uses equal device counts"
    );
}

/// Mean seconds of communication per step of each training job, from its wall time: the time
/// from its start to its end less its compute and checkpoint writes, over its steps (so every
/// step counts, whatever network share it got).
fn mean_comm(spec: &orrery::scenario::Spec) -> std::collections::BTreeMap<String, f64> {
    use orrery::sim::{SimConfig, simulate};
    // The jobs end within 200 s; a shorter window than the experiment's hour keeps the
    // service's requests few.
    let cfg = SimConfig {
        horizon: Some(400 * orrery::engine::SEC),
        ..SimConfig::default()
    };
    let r = simulate(spec, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(
        r.network_models.iter().all(|m| m.on_graph),
        "{:?}",
        r.network_models
    );
    r.metrics
        .training
        .iter()
        .map(|t| {
            let end = t.finished.expect("the job finishes in the window");
            let comm = end - t.started - t.compute_time - t.checkpoint_time;
            (t.workload.clone(), comm / t.steps_done as f64)
        })
        .collect()
}

#[test]
fn shared_fabric_step_times_depend_on_contention_and_placement() {
    // scenarios/shared_fabric.orr's claim. Under Ray's default both 16-GPU jobs straddle two
    // racks (lang r0.n1 + r1.n0, vision r1.n1 + r2.n0) and both rings cross r1's leaf
    // uplinks: each job's communication is slower with the other running than with the other
    // job's training removed (its placement group kept, so nobody moves). Topology-aware, each
    // job sits in one rack and its ring turns in the leaf: faster again than either.
    let path = Path::new("scenarios/shared_fabric.orr");
    let text = std::fs::read_to_string(path).unwrap();
    let load = |src: &str| {
        let l = orrery::load_str("shared_fabric.orr", src);
        assert!(!l.has_errors(), "{}", l.render(false));
        l.spec.unwrap()
    };
    // Drop a `training NAME on ...` block (its lines up to the closing brace at its indent).
    let without = |name: &str| {
        let head = format!("  training {name} on ");
        let mut out = String::new();
        let mut skipping = false;
        for line in text.lines() {
            if line.starts_with(&head) {
                skipping = true;
            } else if skipping {
                skipping = line != "  }";
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
        assert!(out.len() < text.len(), "no training {name} in the scenario");
        out
    };
    let spec = load(&text);
    let pgs = |s: &orrery::scenario::Spec| {
        let r = orrery::sim::simulate(
            s,
            &orrery::sim::SimConfig {
                horizon: Some(orrery::engine::SEC),
                ..Default::default()
            },
        );
        r.metrics
            .placement_groups
            .iter()
            .map(|p| p.nodes.join(" "))
            .collect::<Vec<_>>()
    };
    let topo = spec.with_policy(orrery::scenario::workload::Policy::TopologyAware);
    assert_eq!(pgs(&spec), ["r0.n1 r1.n0", "r1.n1 r2.n0"]);
    assert_eq!(pgs(&topo), ["r1.n0 r1.n1", "r2.n0 r2.n1"]);

    let both = mean_comm(&spec);
    let lang_alone = mean_comm(&load(&without("vit")))["lang_pretrain"];
    let vision_alone = mean_comm(&load(&without("llm")))["vision_pretrain"];
    let packed = mean_comm(&topo);
    let (lang, vision) = (both["lang_pretrain"], both["vision_pretrain"]);
    // The figures the scenario's header states (ms per step, within 2%): lang 164 together,
    // 150 alone; vision 75 and 56.
    let near = |x: f64, ms: f64| (x - ms * 1e-3).abs() < 0.02 * ms * 1e-3;
    assert!(
        near(lang, 164.0) && near(lang_alone, 150.0),
        "{lang} {lang_alone}"
    );
    assert!(
        near(vision, 75.0) && near(vision_alone, 56.0),
        "{vision} {vision_alone}"
    );
    // Packed: the ring closed form base + latency + 2(p−1)/p·(n/8)/β over p = 16 ranks on 8
    // channels, β = a NIC's 50 GB/s; n = 8 GB (lang), 4 GB (vision). Latency as NCCL's path:
    // of the 2(p−1) = 30 steps a chunk crosses the network on 2 (14 µs each) and NVLink on
    // the rest (3.4 µs each, above the 3 µs net post overhead of Simple).
    let ring = |n: f64| 8.4e-6 + 28.0 * 3.4e-6 + 2.0 * 14e-6 + 30.0 / 16.0 * (n / 8.0) / 50e9;
    assert!(
        (packed["lang_pretrain"] - ring(8e9)).abs() < 1e-6,
        "{packed:?}"
    );
    assert!(
        (packed["vision_pretrain"] - ring(4e9)).abs() < 1e-6,
        "{packed:?}"
    );
    assert!(
        lang > 1.05 * lang_alone,
        "lang {lang} vs alone {lang_alone}"
    );
    assert!(
        vision > 1.2 * vision_alone,
        "vision {vision} vs alone {vision_alone}"
    );
    assert!(
        packed["lang_pretrain"] < 0.5 * lang_alone,
        "lang packed {packed:?} vs spread alone {lang_alone}"
    );
    assert!(
        packed["vision_pretrain"] < 0.5 * vision_alone,
        "vision packed {packed:?} vs spread alone {vision_alone}"
    );
}

#[test]
fn quickstart_failure_fires_and_costs_device_hours() {
    // The quickstart kills r1.n1 at 40 min, inside the pretraining run (about 75 min): one of
    // the gang's nodes under either policy (Ray's r0.n2 r0.n3 r1.n0 r1.n1, topology-aware's
    // r1). The job stops, its bundle moves after detection, and the steps since the last
    // checkpoint (every 30 min) are lost.
    use orrery::sim::{SimConfig, simulate};
    let l = orrery::load_file(Path::new("scenarios/quickstart.orr")).unwrap();
    let spec = l.spec.expect("quickstart validates");
    use orrery::scenario::workload::Policy;
    for (policy, p) in [
        ("ray_default", Policy::RayDefault),
        ("topology_aware", Policy::TopologyAware),
    ] {
        let r = simulate(&spec.clone().with_policy(p), &SimConfig::default());
        let f = &r.metrics.failures;
        assert_eq!(f.node_failures, 1, "{policy}: the kill fires");
        assert_eq!(f.bundles_rescheduled, 1, "{policy}: the gang lost a bundle");
        assert!(
            f.timeline
                .iter()
                .any(|e| e.subject == "pretrain.llm" && e.time == 2400.0),
            "{policy}: {:?}",
            f.timeline
        );
        // The 32 GPUs' time from the last checkpoint to the kill is lost: the checkpoint
        // starts at 30 min and its 1.4 TB take about 14 s over the four nodes' NICs to the
        // store, so the loss is at least the 32 GPUs' (2400 - 1800 - 60) s, and far below
        // their 2400 s.
        assert!(
            f.lost_device_hours > 32.0 * 540.0 / 3600.0
                && f.lost_device_hours < 32.0 * 2400.0 / 3600.0,
            "{policy}: {}",
            f.lost_device_hours
        );
        assert!(r.metrics.makespan > 2400.0);
    }
}

/// The quickstart's pretraining job's mean communication per step (s) under `policy`, over
/// the first 39 min: after the fine-tune, before the failure at 40 min.
fn quickstart_comm_before_the_failure(
    text: &str,
    policy: orrery::scenario::workload::Policy,
) -> f64 {
    use orrery::sim::{SimConfig, simulate};
    let l = orrery::load_str("scenarios/quickstart.orr", text);
    assert!(!l.has_errors(), "{}", l.render(false));
    let r = simulate(
        &l.spec.unwrap().with_policy(policy),
        &SimConfig {
            horizon: Some(39 * 60 * orrery::engine::SEC),
            ..SimConfig::default()
        },
    );
    assert_eq!(r.metrics.failures.node_failures, 0);
    assert!(r.network_models.iter().all(|m| m.on_graph));
    let t = r
        .metrics
        .training
        .iter()
        .find(|t| t.workload == "pretrain")
        .expect("the pretraining job");
    assert!(t.steps_done > 1000, "{}", t.steps_done);
    t.communication_time / t.steps_done as f64
}

#[test]
fn quickstart_policy_comparison_differs_by_the_spine_and_the_report_says_why() {
    // scenarios/quickstart.orr's claim (its header). The fine-tune takes r0.n0 and r0.n1
    // first; Ray's STRICT_SPREAD gives the 4-node pretraining gang the emptiest nodes by id,
    // straddling r0 and r1, where topology_aware packs it into r1. Ray's rings then cross the
    // 2:1 spine: each rail's inter-node ring of the hierarchical allreduce moves
    // 2 (m - 1) / m x S / g = 2 x 3/4 x 28 GB / 8 = 5.25 GB per NIC, at a 200G uplink's
    // 25 GB/s instead of the NIC's 50 GB/s: 105 ms more per step. At 1:1 the same placements
    // cost the same.
    use orrery::experiment::placement::{GroupPlacement, Placement};
    use orrery::experiment::sweep;
    use orrery::scenario::workload::Policy;
    let text = std::fs::read_to_string("scenarios/quickstart.orr").unwrap();
    let l = orrery::load_str("scenarios/quickstart.orr", &text);
    let cfg = sweep::SweepConfig {
        seeds: Some(vec![1]),
        ..Default::default()
    };
    let Ok(plan) = sweep::plan(&l, "scenarios/quickstart.orr", &cfg) else {
        panic!("the quickstart's experiment plans");
    };
    let r = sweep::run_sweep(&plan, &cfg);
    assert_eq!(r.header.params, ["policy"]);
    assert_eq!(r.header.cells, [["ray_default"], ["topology_aware"]]);
    let placement = |c: usize| -> Placement {
        r.runs
            .iter()
            .find(|x| x.cell == c)
            .unwrap()
            .placement
            .clone()
            .unwrap()
    };
    let (ray, topo) = (placement(0), placement(1));
    let gang = |p: &Placement| -> GroupPlacement {
        p.groups
            .iter()
            .find(|g| g.name == "pretrain.gang")
            .unwrap()
            .clone()
    };
    assert_eq!(gang(&ray).created_on, ["r0.n2", "r0.n3", "r1.n0", "r1.n1"]);
    assert_eq!(gang(&ray).racks, 2);
    assert_eq!(gang(&topo).created_on, ["r1.n0", "r1.n1", "r1.n2", "r1.n3"]);
    assert_eq!(gang(&topo).racks, 1);
    // Over the whole run (the replacement after the failure straddles racks under both):
    // Ray's placement communicates longer and finishes later.
    let comm = |p: &Placement| {
        p.jobs
            .iter()
            .find(|j| j.name == "pretrain.llm")
            .unwrap()
            .communication_s
    };
    assert!(comm(&ray) > 1.1 * comm(&topo), "{ray:?} {topo:?}");
    // The figures the scenario's header and the README state (within 2%): 0.342 and 0.284 s
    // per step over the run; about 100 s of makespan.
    let near = |x: f64, y: f64| (x - y).abs() < 0.02 * y;
    assert!(
        near(comm(&ray), 0.342) && near(comm(&topo), 0.284),
        "{ray:?} {topo:?}"
    );
    let k = r
        .header
        .metrics
        .iter()
        .position(|m| m == "makespan")
        .unwrap();
    let makespan = |c: usize| r.cells[c].metrics[k].mean.unwrap();
    let gained = makespan(0) - makespan(1);
    assert!(
        gained > 80.0 && gained < 130.0,
        "{} {}",
        makespan(0),
        makespan(1)
    );
    // The report states the reason from these runs.
    let dir =
        std::env::temp_dir().join(format!("orrery-quickstart-policies-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    orrery::outputs::sweep::write(&dir, &r, &[], None, "table", &[], false).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    for said in [
        "`pretrain.gang` was placed on 2 racks (r0.n2 r0.n3 r1.n0 r1.n1) with policy=ray_default, \
         and on 1 rack (r1.n0 r1.n1 r1.n2 r1.n3) with policy=topology_aware."
            .to_string(),
        format!("`pretrain.llm` communicated {:.3} s per step", comm(&ray)),
        format!("and {:.3} s per step", comm(&topo)),
        "The leaf–spine links carried".to_string(),
    ] {
        assert!(md.contains(&said), "report.md does not say {said:?}:\n{md}");
    }
    // Before the failure, against the closed form; at 1:1, no difference.
    let (ray_pre, topo_pre) = (
        quickstart_comm_before_the_failure(&text, Policy::RayDefault),
        quickstart_comm_before_the_failure(&text, Policy::TopologyAware),
    );
    assert!(
        near(ray_pre, 0.342) && near(topo_pre, 0.237),
        "{ray_pre} {topo_pre}"
    );
    let extra = 5.25e9 / 25e9 - 5.25e9 / 50e9;
    assert!(
        ((ray_pre - topo_pre) - extra).abs() < 0.02 * extra,
        "{ray_pre} - {topo_pre} vs {extra}"
    );
    let flat = text.replace("oversubscription 2:1", "oversubscription 1:1");
    assert_ne!(flat, text);
    let (ray_flat, topo_flat) = (
        quickstart_comm_before_the_failure(&flat, Policy::RayDefault),
        quickstart_comm_before_the_failure(&flat, Policy::TopologyAware),
    );
    assert!(
        (ray_flat - topo_flat).abs() < 0.005 * topo_flat,
        "{ray_flat} {topo_flat}"
    );
    assert!(
        (topo_flat - topo_pre).abs() < 0.005 * topo_pre,
        "{topo_flat} {topo_pre}"
    );
}

#[test]
fn sweep_fabric_oversubscription_sets_the_communication_time() {
    // Two one-node racks; the 16-GPU ring's 8 channels (one per 50 GB/s NIC) each cross from
    // rack to rack, hashed over the leaf's 4 spine links. Every channel carries
    // 2 (n - 1) / n × S / 8 = 1.875 GB of an 8 GB allreduce over each ring edge, so the
    // inter-rack bytes are bandwidth-bound on the busiest spine link: thinning the fabric from
    // 1:1 to 2:1 to 4:1 halves that link's capacity each time and must double, then
    // quadruple, the communication time; and it can be no faster than the 15 GB split evenly
    // over the leaf's 400 GB/s of uplinks (37.5 ms).
    let text = std::fs::read_to_string("scenarios/sweep_fabric.orr").unwrap();
    let comm = |ratio: &str| {
        let t = text
            .replace("oversubscription 1:1", &format!("oversubscription {ratio}"))
            .replace("allreduce 4 GB", "allreduce 8 GB");
        let l = orrery::load_str("sweep_fabric.orr", &t);
        let s = l.spec.expect("valid");
        {
            let m = mean_comm(&s);
            *m.values().next().expect("one job")
        }
    };
    let (c1, c2, c4) = (comm("1:1"), comm("2:1"), comm("4:1"));
    assert!(c1 >= 0.0375, "{c1}");
    assert!((c2 / c1 - 2.0).abs() < 0.03, "{c1} {c2}");
    assert!((c4 / c1 - 4.0).abs() < 0.06, "{c1} {c4}");
}

#[test]
fn heterogeneous_fleet_lands_each_job_and_prices_the_domain_boundary() {
    // scenarios/heterogeneous_fleet.orr's claims: `packed` lands whole in one NVL72 (its
    // topology strategy), `split` over nvl1 and nvl2 (its bundle selectors), the slice gang on
    // the slice's hosts, the service on the H100 nodes; and the closed forms of both jobs'
    // communication: NVLS 16 GB / 534 GB/s = 30.0 ms, stretched by NCCL's chunks (1 + 4.7/128)
    // and the fill of one 24 × 72 × 128 KiB loop: 31.1 to 32.1 ms; ring 2·63/64·16 GB /
    // 200 GB/s = 157.5 ms.
    let l = orrery::load_file(Path::new("scenarios/heterogeneous_fleet.orr")).unwrap();
    assert!(!l.has_errors(), "{}", l.render(false));
    let spec = l.spec.unwrap();
    let r = orrery::sim::simulate(&spec, &orrery::sim::SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let pg = |w: &str| {
        r.metrics
            .placement_groups
            .iter()
            .find(|p| p.workload == w)
            .unwrap()
    };
    let packed = pg("packed");
    assert_eq!(packed.domain.as_deref(), Some("ray.io/gpu-domain=nvl0"));
    assert!(packed.nodes.iter().all(|n| n.starts_with("nvl0.")));
    let split = pg("split");
    assert_eq!(
        split
            .nodes
            .iter()
            .filter(|n| n.starts_with("nvl1."))
            .count(),
        8
    );
    assert_eq!(
        split
            .nodes
            .iter()
            .filter(|n| n.starts_with("nvl2."))
            .count(),
        8
    );
    assert!(pg("tpu_job").nodes.iter().all(|n| n.starts_with("tpu.h")));
    let comm = |w: &str| {
        let t = r.metrics.training.iter().find(|t| t.workload == w).unwrap();
        assert_eq!(t.steps_done, 20);
        t.communication_time / t.steps_done as f64
    };
    let (p, s) = (comm("packed"), comm("split"));
    assert!((0.0311..0.0322).contains(&p), "packed {p}");
    assert!((0.1575..0.1600).contains(&s), "split {s}");
    let svc = &r.metrics.services[0];
    assert!(svc.served > 0);
}

/// Communication per step of each training job of a scenario file, by workload.
fn comm_of(
    path: &str,
) -> (
    orrery::sim::RunResult,
    std::collections::BTreeMap<String, f64>,
) {
    let l = orrery::load_file(Path::new(path)).unwrap();
    assert!(!l.has_errors(), "{}", l.render(false));
    let spec = l.spec.unwrap();
    let r = orrery::sim::simulate(&spec, &orrery::sim::SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let comm = r
        .metrics
        .training
        .iter()
        .map(|t| {
            assert!(t.steps_done > 0);
            (
                t.workload.clone(),
                t.communication_time / t.steps_done as f64,
            )
        })
        .collect();
    (r, comm)
}

fn bisection_of(path: &str) -> f64 {
    let l = orrery::load_file(Path::new(path)).unwrap();
    let spec = l.spec.unwrap();
    orrery::summary::fabric_bisection(&spec, spec.cluster.as_ref().unwrap())
        .unwrap()
        .0
}

#[test]
fn torus_3d_rank_order_decides_link_sharing() {
    // scenarios/torus_3d.orr: the line's ring at its closed form 2·31/32·8 GB / 100 GB/s =
    // 155 ms (+ latency), the shuffled ring twice that; bisection 32 links × 100 GB/s.
    let (_, c) = comm_of("scenarios/torus_3d.orr");
    assert!((0.155..0.157).contains(&c["line"]), "{c:?}");
    assert!((0.310..0.312).contains(&c["shuffled"]), "{c:?}");
    assert!((bisection_of("scenarios/torus_3d.orr") - 3.2e12).abs() < 1.0);
    // Its "what to change": ECMP spreads the shuffled ring's two-hop steps (233 ms), and the
    // bundles in line order price like the line.
    let text = std::fs::read_to_string("scenarios/torus_3d.orr").unwrap();
    let ecmp = text.replace("    routing dimension_order\n", "");
    let spec = orrery::load_str("t.orr", &ecmp).spec.unwrap();
    let r = orrery::sim::simulate(&spec, &orrery::sim::SimConfig::default());
    let t = r
        .metrics
        .training
        .iter()
        .find(|t| t.workload == "shuffled")
        .unwrap();
    let s = t.communication_time / t.steps_done as f64;
    assert!((0.225..0.240).contains(&s), "{s}");
}

#[test]
fn dragonfly_global_links_cost_the_spread_job_four_times() {
    // scenarios/dragonfly.orr: 2·31/32·8 GB at a 200 GB/s local link = 77.5 ms, at a 50 GB/s
    // global link 310 ms; 1,056 routers, 16,368 local and 528 global links.
    let (_, c) = comm_of("scenarios/dragonfly.orr");
    assert!((0.0775..0.0790).contains(&c["in_group"]), "{c:?}");
    assert!((0.310..0.312).contains(&c["across_groups"]), "{c:?}");
    let l = orrery::load_file(Path::new("scenarios/dragonfly.orr")).unwrap();
    let spec = l.spec.unwrap();
    let t = spec.cluster.as_ref().unwrap().fabric.as_ref().unwrap();
    let t = t.topology.as_ref().unwrap();
    assert_eq!((t.switches.len(), t.links.len()), (1056, 16368 + 528));
    assert!((bisection_of("scenarios/dragonfly.orr") - 1.6e12).abs() < 1.0);
}

#[test]
fn rail_planes_lose_a_plane_and_restart_on_seven() {
    // scenarios/rail_planes.orr: healthy 2·31/32·8 GB over 8 × 50 GB/s = 38.75 ms (+ latency);
    // plane3 down takes nic3 of all 8 nodes and restarts the job from its checkpoint; on
    // seven planes a step's communication is at least twice a channel's time.
    let text = std::fs::read_to_string("scenarios/rail_planes.orr").unwrap();
    let healthy = text.replace("  at 10 s down switch plane3 for 20 s\n", "");
    let from_start = text.replace(
        "at 10 s down switch plane3 for 20 s",
        "at 0 s down switch plane3",
    );
    let run = |src: &str| {
        let spec = orrery::load_str("t.orr", src).spec.unwrap();
        orrery::sim::simulate(&spec, &orrery::sim::SimConfig::default())
    };
    let per_step = |r: &orrery::sim::RunResult| {
        let t = &r.metrics.training[0];
        assert_eq!(t.steps_done, 100);
        t.communication_time / t.steps_done as f64
    };
    let h = per_step(&run(&healthy));
    assert!((0.03875..0.0400).contains(&h), "{h}");
    let down = per_step(&run(&from_start));
    assert!(
        down >= 2.0 * 0.03875 && (0.085..0.095).contains(&down),
        "{down}"
    );
    let (r, c) = comm_of("scenarios/rail_planes.orr");
    assert!(c["llm"] > h && c["llm"] < down, "{c:?}");
    let kinds: Vec<&str> = r
        .metrics
        .failures
        .timeline
        .iter()
        .map(|e| e.kind.as_str())
        .collect();
    assert_eq!(kinds[0], "switch_down");
    assert_eq!(kinds.iter().filter(|k| **k == "nic_down").count(), 8);
    assert_eq!(kinds.iter().filter(|k| **k == "job_stopped").count(), 1);
    // Work since the last checkpoint (at most 5 s of 32 GPUs) is lost.
    let lost = r.metrics.failures.lost_work_device_hours;
    assert!(lost > 0.0 && lost <= 32.0 * 5.0 / 3600.0, "{lost}");
}
