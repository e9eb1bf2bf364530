//! Placement: every expected node below is worked out by hand from Ray's rules
//! (ray-semantics.md and the Ray sources cited in `src/placement/`), with the arithmetic in a
//! comment.

use orrery::placement::*;
use orrery::scenario::workload::{LabelConstraint, PgStrategy, Strategy, parse_label_op};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

const CPU8: &str = "node cpu8 {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}\n";
const GPU4: &str =
    "node gpu4 {\n  cpu sockets 1, cores 16\n  memory 128 GiB\n  device L4 x 4 link none\n}\n";

fn state(src: &str) -> ClusterState {
    let l = orrery::load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    ClusterState::from_spec(l.spec.as_ref().unwrap())
}

fn req(st: &mut ClusterState, pairs: &[(&str, f64)]) -> Request {
    let m: BTreeMap<String, f64> = pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    st.request(&m)
}

fn sel(pairs: &[(&str, &str)]) -> Vec<LabelConstraint> {
    pairs
        .iter()
        .map(|(k, v)| LabelConstraint {
            key: k.to_string(),
            op: parse_label_op(v).unwrap(),
        })
        .collect()
}

fn id(st: &ClusterState, name: &str) -> NodeId {
    st.node_id(name).unwrap_or_else(|| panic!("no node {name}"))
}

const DEFAULT: Strategy = Strategy::Default;

struct T<'a> {
    strategy: &'a Strategy,
    selector: &'a [LabelConstraint],
    preferred: NodeId,
    tenant: Option<usize>,
    policy: Policy,
}

impl Default for T<'_> {
    fn default() -> Self {
        T {
            strategy: &DEFAULT,
            selector: &[],
            preferred: 0,
            tenant: None,
            policy: Policy::RayDefault,
        }
    }
}

fn decide(st: &mut ClusterState, r: &Request, t: &T, rng: &mut ChaCha8Rng) -> Decision {
    let tr = TaskRequest {
        request: r,
        strategy: t.strategy,
        label_selector: t.selector,
        preferred: t.preferred,
        tenant: t.tenant,
        policy: t.policy,
    };
    place_task(st, &tr, rng, None)
}

/// Place and, on Run, allocate (as the engine does); returns the decision.
fn submit(st: &mut ClusterState, r: &Request, t: &T, rng: &mut ChaCha8Rng) -> Decision {
    let d = decide(st, r, t, rng);
    if let Decision::Run(n) = d {
        st.allocate(n, r, t.tenant, t.policy)
            .expect("Run means it fits now");
    }
    d
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

fn counts(st: &ClusterState) -> Vec<i64> {
    st.nodes
        .iter()
        .map(|n| (n.total(0) - n.available(0)) / SCALE)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Resources
// ---------------------------------------------------------------------------------------------

#[test]
fn node_resources_ids_and_labels() {
    let mut st = state(&format!(
        "{GPU4}cluster c {{\n  rack r[0..1] {{\n    node gpu4 x 1\n  }}\n}}\n"
    ));
    assert_eq!(st.ids.id("CPU"), Some(0));
    assert_eq!(st.ids.id("GPU"), Some(1));
    assert_eq!(st.ids.id("memory"), Some(2));
    assert_eq!(st.ids.id("object_store_memory"), Some(3));
    let n = &st.nodes[0];
    assert_eq!(n.name(), "r0.n0");
    // CPU = threads (16); GPU = 4 devices; memory = 70% and object store 30% of 128 GiB.
    assert_eq!(n.total(0), 16 * SCALE);
    assert_eq!(n.total(1), 4 * SCALE);
    let gib = 1024f64.powi(3);
    assert_eq!(n.total(2), to_fixed((128.0 * gib * 0.7).floor()));
    assert_eq!(n.total(3), to_fixed((128.0 * gib * 0.3).floor()));
    assert_eq!(n.total(st.ids.id("accelerator_type:L4").unwrap()), SCALE);
    assert_eq!(n.instances(1).unwrap(), &[SCALE; 4]);
    assert_eq!(n.labels()["ray.io/node-id"], "r0.n0");
    assert_eq!(n.labels()["ray.io/accelerator-type"], "L4");
    assert_eq!(n.rack(), 0);
    assert_eq!(st.nodes[1].rack(), 1);
    // Requests: fixed point, sorted by id, zeros dropped.
    let r = req(&mut st, &[("GPU", 0.5), ("CPU", 1.0), ("foo", 0.0)]);
    assert_eq!(r.amounts, vec![(0, SCALE), (1, SCALE / 2)]);
    assert_eq!(r.get(1), 5_000);
    // 0.1 + 0.2 is exactly 0.3 in fixed point.
    let a = req(&mut st, &[("CPU", 0.1)]);
    let b = req(&mut st, &[("CPU", 0.2)]);
    assert_eq!(a.sum(&b), req(&mut st, &[("CPU", 0.3)]));
}

#[test]
fn fractional_gpu_best_fit_and_whole_gpus() {
    let src = format!("{GPU4}cluster c {{\n  node gpu4 x 1\n}}\n");
    let mut st = state(&src);
    let g = |x: f64| x;
    let take = |st: &mut ClusterState, x: f64| {
        let r = req(st, &[("GPU", g(x))]);
        st.allocate(0, &r, None, Policy::RayDefault).unwrap()
    };
    let inst = |st: &ClusterState| st.nodes[0].instances(1).unwrap().to_vec();
    // 0.5: all four instances are 1.0, best fit ties → lowest index: [0.5, 1, 1, 1].
    take(&mut st, 0.5);
    assert_eq!(inst(&st), vec![5000, 10000, 10000, 10000]);
    // 0.3: best fit = smallest leftover: inst0 leaves 0.2, others 0.7 → inst0: [0.2, 1, 1, 1].
    take(&mut st, 0.3);
    assert_eq!(inst(&st), vec![2000, 10000, 10000, 10000]);
    // 0.5: inst0 has 0.2 < 0.5; inst1..3 tie at 0.5 leftover → inst1: [0.2, 0.5, 1, 1].
    let a = take(&mut st, 0.5);
    assert_eq!(inst(&st), vec![2000, 5000, 10000, 10000]);
    assert_eq!(a.instances, vec![(1, vec![0, 5000, 0, 0])]);
    // 0.2: inst0 leaves 0.0, inst1 0.3 → inst0: [0, 0.5, 1, 1].
    take(&mut st, 0.2);
    assert_eq!(inst(&st), vec![0, 5000, 10000, 10000]);
    // GPU 2: whole instances in index order → inst2, inst3.
    let two = take(&mut st, 2.0);
    assert_eq!(two.instances, vec![(1, vec![0, 0, 10000, 10000])]);
    // 0.5 GPU is left in total, on inst1: a whole GPU is not available, 0.5 is.
    let one = req(&mut st, &[("GPU", 1.0)]);
    assert!(!st.is_available(0, &one));
    assert!(st.is_feasible(0, &one));
    let half = req(&mut st, &[("GPU", 0.5)]);
    assert!(st.is_available(0, &half));
    // Free the 2-GPU allocation: inst2, inst3 back to 1.0.
    st.free(&two, None);
    assert_eq!(inst(&st), vec![0, 5000, 10000, 10000]);
    assert_eq!(st.nodes[0].available(1), 25_000);
}

#[test]
fn fractional_sum_is_not_a_whole_gpu() {
    // Ray's TryAllocate needs instances at exactly 1.0 for the whole part of a demand, so two
    // half-used GPUs (1.0 available in sum) cannot take GPU: 1.
    let mut st = state(
        "node g2 {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  device L4 x 2 link none\n}\ncluster c {\n  node g2 x 1\n}\n",
    );
    let h = req(&mut st, &[("GPU", 0.5)]);
    let a = st.allocate(0, &h, None, Policy::RayDefault).unwrap(); // [0.5, 1]
    st.allocate(0, &h, None, Policy::RayDefault).unwrap(); // best fit inst0 (leftover 0): [0, 1]
    st.allocate(0, &h, None, Policy::RayDefault).unwrap(); // only inst1 holds 0.5: [0, 0.5]
    st.free(&a, None); // a's 0.5 back to inst0: [0.5, 0.5]
    assert_eq!(st.nodes[0].instances(1).unwrap(), &[5000, 5000]);
    assert_eq!(st.nodes[0].available(1), SCALE);
    let one = req(&mut st, &[("GPU", 1.0)]);
    assert!(!st.is_available(0, &one), "no single free GPU");
    assert!(st.allocate(0, &one, None, Policy::RayDefault).is_none());
    assert!(st.is_available(0, &h));
}

// ---------------------------------------------------------------------------------------------
// DEFAULT (hybrid) policy
// ---------------------------------------------------------------------------------------------

fn five_cpu8() -> ClusterState {
    // 1 head + 4 workers, 8 CPUs each (ray-semantics.md, "Observed on a fake 1+4-node cluster").
    state(&format!("{CPU8}cluster c {{\n  node cpu8 x 5\n}}\n"))
}

#[test]
fn observed_four_tasks_all_on_the_head() {
    // Head n0 is preferred. Task i sees the head at (i-1)/8 CPU used: 0, 1/8, 2/8, 3/8, all
    // below the 0.5 spread threshold → score 0 ≤ front (0) → the head wins every time.
    let mut st = five_cpu8();
    let one = req(&mut st, &[("CPU", 1.0)]);
    let mut r = rng(1);
    for _ in 0..4 {
        assert_eq!(
            submit(&mut st, &one, &T::default(), &mut r),
            Decision::Run(0)
        );
    }
    assert_eq!(counts(&st), vec![4, 0, 0, 0, 0]);
}

#[test]
fn observed_twelve_tasks_four_four_four() {
    // k = max(1, floor(5 × 0.2)) = 1, so no randomness. After 4 tasks the head is at 4/8 = 0.5
    // (not < 0.5, so it scores 0.5) and loses to the front (n1, score 0, lowest id among the
    // zeros). n1 takes tasks 5..8 (its scores 0, 1/8, 2/8, 3/8 → 0, and it is first among the
    // zeros by id), then scores 0.5 and n2 takes 9..12: 4/4/4 over three nodes.
    for seed in 0..5 {
        let mut st = five_cpu8();
        let one = req(&mut st, &[("CPU", 1.0)]);
        let mut r = rng(seed);
        let got: Vec<Decision> = (0..12)
            .map(|_| submit(&mut st, &one, &T::default(), &mut r))
            .collect();
        let want: Vec<Decision> = [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
            .into_iter()
            .map(Decision::Run)
            .collect();
        assert_eq!(got, want);
        assert_eq!(counts(&st), vec![4, 4, 4, 0, 0]);
    }
}

#[test]
fn spread_threshold() {
    let mut st = five_cpu8();
    let three = req(&mut st, &[("CPU", 3.0)]);
    let one = req(&mut st, &[("CPU", 1.0)]);
    let mut r = rng(7);
    // n0 at 3/8 = 0.375 < 0.5 → score 0: the preferred node still wins.
    st.allocate(0, &three, None, Policy::RayDefault).unwrap();
    assert_eq!(task::hybrid_score(&st, 0, 0.5), 0.0);
    assert_eq!(
        decide(&mut st, &one, &T::default(), &mut r),
        Decision::Run(0)
    );
    // n0 at 4/8 = 0.5 → score 0.5 > 0 = front (n1) → n1.
    st.allocate(0, &one, None, Policy::RayDefault).unwrap();
    assert_eq!(task::hybrid_score(&st, 0, 0.5), 0.5);
    assert_eq!(
        decide(&mut st, &one, &T::default(), &mut r),
        Decision::Run(1)
    );
    // Memory counts too: n1 with 50% of its memory taken scores 0.5; n2 is front now.
    let half_mem = req(
        &mut st,
        &[("memory", (64.0 * 1024f64.powi(3) * 0.7).floor() / 2.0)],
    );
    st.allocate(1, &half_mem, None, Policy::RayDefault).unwrap();
    assert_eq!(task::hybrid_score(&st, 1, 0.5), 0.5);
    assert_eq!(
        decide(&mut st, &one, &T::default(), &mut r),
        Decision::Run(2)
    );
    // With every node at 0.5 or more, the lowest score wins: n0 at 5/8 = 0.625 after one more,
    // n1..n4 at 0.5 → front n1 (0.5, lowest id); the preferred n0 (0.625) loses.
    let mut st = five_cpu8();
    let four = req(&mut st, &[("CPU", 4.0)]);
    for n in 0..5 {
        st.allocate(n, &four, None, Policy::RayDefault).unwrap();
    }
    st.allocate(0, &one, None, Policy::RayDefault).unwrap();
    assert_eq!(
        decide(&mut st, &one, &T::default(), &mut r),
        Decision::Run(1)
    );
}

#[test]
fn top_k_randomness() {
    // 20 nodes → k = max(1, floor(20 × 0.2)) = 4. The preferred n0 is at 0.5 (score 0.5),
    // every other node scores 0, so the order by (score, id) is n1, n2, ..., n19, n0 and the
    // pick is uniform among the first four: n1..n4.
    let mk = || {
        let mut st = state(&format!("{CPU8}cluster c {{\n  node cpu8 x 20\n}}\n"));
        let four = req(&mut st, &[("CPU", 4.0)]);
        st.allocate(0, &four, None, Policy::RayDefault).unwrap();
        st
    };
    let mut seen = [0usize; 20];
    for seed in 0..400 {
        let mut st = mk();
        let one = req(&mut st, &[("CPU", 1.0)]);
        let d = decide(&mut st, &one, &T::default(), &mut rng(seed));
        let Decision::Run(n) = d else { panic!("{d:?}") };
        assert!(
            (1..=4).contains(&n),
            "seed {seed}: {n} is outside the top k"
        );
        seen[n] += 1;
        // Same seed, same answer.
        assert_eq!(decide(&mut st, &one, &T::default(), &mut rng(seed)), d);
    }
    for (n, &c) in seen.iter().enumerate().take(5).skip(1) {
        // Uniform: about 100 each out of 400.
        assert!(c > 60, "n{n} chosen only {c} times");
    }
}

#[test]
fn queue_when_nothing_is_available_and_infeasible_when_nothing_could_hold_it() {
    let mut st = five_cpu8();
    let eight = req(&mut st, &[("CPU", 8.0)]);
    for n in 0..5 {
        st.allocate(n, &eight, None, Policy::RayDefault).unwrap();
    }
    let one = req(&mut st, &[("CPU", 1.0)]);
    // No node available; all feasible: the preferred node n0 scores 1.0, as do all → it is
    // no worse than the front → Queue at n0.
    assert_eq!(
        decide(&mut st, &one, &T::default(), &mut rng(0)),
        Decision::Queue(0)
    );
    let nine = req(&mut st, &[("CPU", 9.0)]);
    assert_eq!(
        decide(&mut st, &nine, &T::default(), &mut rng(0)),
        Decision::Infeasible
    );
    let gpu = req(&mut st, &[("GPU", 1.0)]);
    assert_eq!(
        decide(&mut st, &gpu, &T::default(), &mut rng(0)),
        Decision::Infeasible
    );
    // Dead nodes are never feasible.
    let mut st = five_cpu8();
    for n in 0..5 {
        st.set_alive(n, false);
    }
    assert_eq!(
        decide(&mut st, &one, &T::default(), &mut rng(0)),
        Decision::Infeasible
    );
}

#[test]
fn avoid_gpu_nodes() {
    // n0 = gpu4 (preferred), n1 = cpu8.
    let src = format!("{CPU8}{GPU4}cluster c {{\n  node gpu4 x 1 name g\n  node cpu8 x 1\n}}\n");
    let mut st = state(&src);
    assert_eq!(st.nodes[0].name(), "g0");
    assert!(st.nodes[0].has_gpu() && !st.nodes[1].has_gpu());
    let cpu = req(&mut st, &[("CPU", 1.0)]);
    let gpu = req(&mut st, &[("GPU", 1.0)]);
    let mut r = rng(3);
    // CPU-only work tries non-GPU nodes first (available ones only): n1, though n0 is preferred.
    assert_eq!(
        submit(&mut st, &cpu, &T::default(), &mut r),
        Decision::Run(1)
    );
    // GPU work ignores the filter: the preferred g0.
    assert_eq!(
        submit(&mut st, &gpu, &T::default(), &mut r),
        Decision::Run(0)
    );
    // Fill the CPU node: the non-GPU pass finds nothing available and the fallback over all
    // nodes picks the preferred g0 (score 1/16 → 0 ≤ front).
    let seven = req(&mut st, &[("CPU", 7.0)]);
    st.allocate(1, &seven, None, Policy::RayDefault).unwrap();
    assert_eq!(
        submit(&mut st, &cpu, &T::default(), &mut r),
        Decision::Run(0)
    );
}

// ---------------------------------------------------------------------------------------------
// SPREAD, node affinity, label selectors
// ---------------------------------------------------------------------------------------------

#[test]
fn spread_round_robin() {
    let mut st = state(&format!("{CPU8}cluster c {{\n  node cpu8 x 4\n}}\n"));
    let two = req(&mut st, &[("CPU", 2.0)]);
    let s = Strategy::Spread;
    let t = T {
        strategy: &s,
        ..T::default()
    };
    let mut r = rng(0);
    // Round robin from index 0: n0, n1, n2, n3, n0, n1 (the index moves past each choice).
    let got: Vec<Decision> = (0..6).map(|_| submit(&mut st, &two, &t, &mut r)).collect();
    assert_eq!(got, [0, 1, 2, 3, 0, 1].map(Decision::Run).to_vec());
    // n2 is full → skipped: next index is 2 → n2 unavailable → n3; then n0.
    let four = req(&mut st, &[("CPU", 6.0)]);
    st.allocate(2, &four, None, Policy::RayDefault).unwrap();
    assert_eq!(submit(&mut st, &two, &t, &mut r), Decision::Run(3));
    assert_eq!(submit(&mut st, &two, &t, &mut r), Decision::Run(0));
    // Policy::Spread makes DEFAULT tasks spread too: next index 1 → n1.
    let t2 = T {
        policy: Policy::Spread,
        ..T::default()
    };
    assert_eq!(submit(&mut st, &two, &t2, &mut r), Decision::Run(1));
    // Nothing available: Ray falls back to hybrid (threshold 0) over feasible nodes. Used now:
    // n0 6, n1 6, n2 8, n3 4 of 8 → scores .75 .75 1 .5; the preferred n0 (.75) is worse than
    // the front n3 (.5); k = max(1, floor(4 × .2)) = 1 → n3, which is unavailable, so
    // ClusterResourceScheduler makes the lease wait on the local (preferred) node n0, which is
    // feasible.
    let five = req(&mut st, &[("CPU", 5.0)]);
    assert_eq!(
        spread(
            &mut st,
            &TaskRequest {
                request: &five,
                strategy: &s,
                label_selector: &[],
                preferred: 0,
                tenant: None,
                policy: Policy::RayDefault
            },
            &mut r
        ),
        Decision::Queue(3)
    );
    assert_eq!(decide(&mut st, &five, &t, &mut r), Decision::Queue(0));
    // A preferred node that could never hold it (dead) does not attract the wait.
    st.set_alive(0, false);
    assert_eq!(decide(&mut st, &five, &t, &mut r), Decision::Queue(3));
}

#[test]
fn node_affinity_soft_and_hard() {
    let mut st = five_cpu8();
    let one = req(&mut st, &[("CPU", 1.0)]);
    let eight = req(&mut st, &[("CPU", 8.0)]);
    let mut r = rng(0);
    let hard = Strategy::NodeAffinity {
        node: "n3".into(),
        soft: false,
    };
    let soft = Strategy::NodeAffinity {
        node: "n3".into(),
        soft: true,
    };
    let th = T {
        strategy: &hard,
        ..T::default()
    };
    let ts = T {
        strategy: &soft,
        ..T::default()
    };
    // Alive and available → Run there.
    assert_eq!(decide(&mut st, &one, &th, &mut r), Decision::Run(3));
    // Alive, feasible, busy → wait there (Ray's default: no spill on unavailable).
    st.allocate(3, &eight, None, Policy::RayDefault).unwrap();
    assert_eq!(decide(&mut st, &one, &th, &mut r), Decision::Queue(3));
    assert_eq!(decide(&mut st, &one, &ts, &mut r), Decision::Queue(3));
    // Dead: hard is infeasible; soft falls back to hybrid → the preferred head n0.
    st.set_alive(3, false);
    assert_eq!(decide(&mut st, &one, &th, &mut r), Decision::Infeasible);
    assert_eq!(decide(&mut st, &one, &ts, &mut r), Decision::Run(0));
    // Infeasible on the target (9 CPUs): hard fails; soft falls back and is infeasible anywhere.
    st.set_alive(3, true);
    let gpu = req(&mut st, &[("CPU", 1.0), ("GPU", 1.0)]);
    assert_eq!(decide(&mut st, &gpu, &th, &mut r), Decision::Infeasible);
    // Unknown node name: hard infeasible.
    let nowhere = Strategy::NodeAffinity {
        node: "zz9".into(),
        soft: false,
    };
    let tn = T {
        strategy: &nowhere,
        ..T::default()
    };
    assert_eq!(decide(&mut st, &one, &tn, &mut r), Decision::Infeasible);
}

fn labelled() -> ClusterState {
    state(&format!(
        "{CPU8}node spot8 from cpu8 {{\n  labels {{ \"market-type\": \"spot\", \"ray.io/node-group\": \"batch\" }}\n}}\nnode od8 from cpu8 {{\n  labels {{ \"market-type\": \"on-demand\", \"ray.io/node-group\": \"web\" }}\n}}\ncluster c {{\n  node cpu8 x 1\n  node spot8 x 2 name s\n  node od8 x 2 name d\n}}\n"
    ))
}

#[test]
fn label_selectors() {
    // n0 (no labels), s0 s1 (spot, batch), d0 d1 (on-demand, web).
    let mut st = labelled();
    let names: Vec<&str> = st.nodes.iter().map(|n| n.name()).collect();
    assert_eq!(names, ["n0", "s0", "s1", "d0", "d1"]);
    let one = req(&mut st, &[("CPU", 1.0)]);
    let mut r = rng(0);
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [usize]);
    let cases: &[Case] = &[
        (&[("market-type", "spot")], &[1, 2]),
        (&[("market-type", "!spot")], &[0, 3, 4]), // a missing label is "not spot"
        (&[("ray.io/node-group", "in(web, batch)")], &[1, 2, 3, 4]),
        (&[("ray.io/node-group", "!in(web)")], &[0, 1, 2]),
        (
            &[("market-type", "!spot"), ("ray.io/node-group", "in(web)")],
            &[3, 4],
        ),
        (&[("ray.io/node-id", "d1")], &[4]),
    ];
    for (s, allowed) in cases {
        let s = sel(s);
        let t = T {
            selector: &s,
            ..T::default()
        };
        let Decision::Run(n) = decide(&mut st, &one, &t, &mut r) else {
            panic!()
        };
        assert!(allowed.contains(&n), "{s:?} chose {n}");
        // Preferred n0 never wins when it does not match; k = 1 → lowest id among matches.
        assert_eq!(n, allowed[0], "{s:?}");
        // SPREAD and affinity respect selectors too.
        let sp = Strategy::Spread;
        let t2 = T {
            selector: &s,
            strategy: &sp,
            ..T::default()
        };
        let Decision::Run(n) = decide(&mut st, &one, &t2, &mut r) else {
            panic!()
        };
        assert!(allowed.contains(&n));
    }
    let s = sel(&[("market-type", "reserved")]);
    let t = T {
        selector: &s,
        ..T::default()
    };
    assert_eq!(decide(&mut st, &one, &t, &mut r), Decision::Infeasible);
    let aff = Strategy::NodeAffinity {
        node: "n0".into(),
        soft: false,
    };
    let s = sel(&[("market-type", "spot")]);
    let t = T {
        selector: &s,
        strategy: &aff,
        ..T::default()
    };
    assert_eq!(decide(&mut st, &one, &t, &mut r), Decision::Infeasible);
}

// ---------------------------------------------------------------------------------------------
// Placement groups
// ---------------------------------------------------------------------------------------------

fn pg(st: &ClusterState, bundles: &[Request], strategy: PgStrategy) -> PgDecision {
    place_bundles(
        st,
        &BundleRequest {
            bundles,
            strategy,
            tenant: None,
            policy: Policy::RayDefault,
            label_selector: &[],
            bundle_selectors: &[],
            domain: None,
        },
        None,
    )
}

fn three_cpu8() -> ClusterState {
    state(&format!("{CPU8}cluster c {{\n  node cpu8 x 3\n}}\n"))
}

#[test]
fn pg_pack() {
    let mut st = three_cpu8();
    let b4 = req(&mut st, &[("CPU", 4.0)]);
    // Empty nodes score (8-4)/8 = 0.5 each → n0 (lowest id); the second bundle still fits on
    // n0 (4 left); the third does not → best remaining node n1.
    assert_eq!(
        pg(&st, &[b4.clone(), b4.clone(), b4.clone()], PgStrategy::Pack),
        PgDecision::Placed(vec![0, 0, 1])
    );
    // With 2 CPUs used on n0: n0 scores (6-4)/6 = 0.33, n1 and n2 0.5 → n1, n1; then n2 (0.5)
    // beats n0 (0.33).
    let two = req(&mut st, &[("CPU", 2.0)]);
    st.allocate(0, &two, None, Policy::RayDefault).unwrap();
    assert_eq!(
        pg(&st, &[b4.clone(), b4.clone(), b4.clone()], PgStrategy::Pack),
        PgDecision::Placed(vec![1, 1, 2])
    );
    // Placing does not allocate.
    assert_eq!(st.nodes[1].available(0), 8 * SCALE);
}

#[test]
fn pg_spread() {
    let mut st = three_cpu8();
    let b2 = req(&mut st, &[("CPU", 2.0)]);
    // Unused nodes first: n0, n1, n2 (ties by id). Then reuse: all at 6 left → score 4/6 each →
    // n0; then n1 (4/6) beats n0 (2/4).
    assert_eq!(
        pg(&st, &vec![b2.clone(); 5], PgStrategy::Spread),
        PgDecision::Placed(vec![0, 1, 2, 0, 1])
    );
}

#[test]
fn pg_strict_pack_and_wait_vs_infeasible() {
    let mut st = three_cpu8();
    let b4 = req(&mut st, &[("CPU", 4.0)]);
    let b5 = req(&mut st, &[("CPU", 5.0)]);
    // Sum 8 fits one node → all on n0.
    assert_eq!(
        pg(&st, &[b4.clone(), b4.clone()], PgStrategy::StrictPack),
        PgDecision::Placed(vec![0, 0])
    );
    // Sum 9 > 8 on every node → infeasible even though each bundle fits somewhere.
    assert_eq!(
        pg(&st, &[b4.clone(), b5.clone()], PgStrategy::StrictPack),
        PgDecision::Infeasible
    );
    // One CPU used everywhere → sum 8 fits nowhere now, but would on an empty node → Wait.
    let one = req(&mut st, &[("CPU", 1.0)]);
    for n in 0..3 {
        st.allocate(n, &one, None, Policy::RayDefault).unwrap();
    }
    assert_eq!(
        pg(&st, &[b4.clone(), b4.clone()], PgStrategy::StrictPack),
        PgDecision::Wait
    );
    // PACK of 4 × {CPU: 8} on 3 nodes: each bundle fits a node, but even the empty cluster holds
    // only 3 → Infeasible. 3 × {CPU: 8} with 1 CPU used everywhere → Wait.
    let b8 = req(&mut st, &[("CPU", 8.0)]);
    assert_eq!(
        pg(&st, &vec![b8.clone(); 4], PgStrategy::Pack),
        PgDecision::Infeasible
    );
    assert_eq!(
        pg(&st, &vec![b8.clone(); 3], PgStrategy::Pack),
        PgDecision::Wait
    );
    assert_eq!(
        pg(&st, &vec![b8.clone(); 3], PgStrategy::Spread),
        PgDecision::Wait
    );
    // A bundle that fits no node is infeasible under every strategy.
    let b9 = req(&mut st, &[("CPU", 9.0)]);
    for s in [
        PgStrategy::Pack,
        PgStrategy::Spread,
        PgStrategy::StrictSpread,
    ] {
        assert_eq!(
            pg(&st, std::slice::from_ref(&b9), s),
            PgDecision::Infeasible
        );
    }
    // Dead nodes do not count: with n1, n2 dead, 2 × {CPU: 8} under PACK is infeasible.
    st.set_alive(1, false);
    st.set_alive(2, false);
    assert_eq!(
        pg(&st, &vec![b8.clone(); 2], PgStrategy::Pack),
        PgDecision::Infeasible
    );
}

#[test]
fn pg_strict_spread() {
    let mut st = three_cpu8();
    let b1 = req(&mut st, &[("CPU", 1.0)]);
    // 4 bundles > 3 nodes → Infeasible (Ray's explicit check).
    assert_eq!(
        pg(&st, &vec![b1.clone(); 4], PgStrategy::StrictSpread),
        PgDecision::Infeasible
    );
    // 3 bundles → one per node, ties by id.
    assert_eq!(
        pg(&st, &vec![b1.clone(); 3], PgStrategy::StrictSpread),
        PgDecision::Placed(vec![0, 1, 2])
    );
    // n1 full → only 2 nodes can take one now → Wait.
    let eight = req(&mut st, &[("CPU", 8.0)]);
    st.allocate(1, &eight, None, Policy::RayDefault).unwrap();
    assert_eq!(
        pg(&st, &vec![b1.clone(); 3], PgStrategy::StrictSpread),
        PgDecision::Wait
    );
    // With n1 dead: 3 bundles > 2 alive nodes → Infeasible.
    st.set_alive(1, false);
    assert_eq!(
        pg(&st, &vec![b1.clone(); 3], PgStrategy::StrictSpread),
        PgDecision::Infeasible
    );
}

#[test]
fn pg_bundle_order() {
    let src = format!("{CPU8}{GPU4}cluster c {{\n  node cpu8 x 1\n  node gpu4 x 1 name g\n}}\n");
    let mut st = state(&src);
    let cpu = req(&mut st, &[("CPU", 1.0)]);
    let gpu = req(&mut st, &[("GPU", 1.0), ("CPU", 1.0)]);
    let custom = req(&mut st, &[("accelerator_type:L4", 0.001)]);
    let mem = req(&mut st, &[("memory", 1e9)]);
    let obj = req(&mut st, &[("object_store_memory", 1e9)]);
    let big_cpu = req(&mut st, &[("CPU", 4.0)]);
    // Ray SortRequiredResources: GPU first, then custom resources, object store, memory, CPU;
    // more first.
    let bundles = vec![
        cpu.clone(),
        mem.clone(),
        big_cpu.clone(),
        obj.clone(),
        custom.clone(),
        gpu.clone(),
    ];
    assert_eq!(sort_bundles(&bundles), vec![5, 4, 3, 1, 2, 0]);
    // SPREAD: the GPU bundle (index 1) goes first, to the only GPU node g0; the CPU bundle then
    // goes to the best unused node n0. The result is in the original order.
    assert_eq!(
        pg(&st, &[cpu.clone(), gpu.clone()], PgStrategy::Spread),
        PgDecision::Placed(vec![0, 1])
    );
}

// ---------------------------------------------------------------------------------------------
// Tenants
// ---------------------------------------------------------------------------------------------

fn tenanted() -> ClusterState {
    state(&format!(
        "{CPU8}node spot8 from cpu8 {{\n  labels {{ \"market-type\": \"spot\" }}\n}}\ncluster c {{\n  node cpu8 x 3\n  node spot8 x 2 name s\n}}\ntenant online {{\n  never_share_node_with [offline]\n  only_nodes {{ \"market-type\": \"!spot\" }}\n}}\ntenant offline {{\n  priority 1\n}}\ntenant other {{\n  priority 2\n}}\n"
    ))
}

#[test]
fn tenant_rules_in_every_policy() {
    // n0 n1 n2 (no labels), s0 s1 (spot). online: never with offline, never on spot.
    let mut st = tenanted();
    let on = st.tenant_index("online");
    let off = st.tenant_index("offline");
    assert!(on.is_some() && off.is_some());
    let one = req(&mut st, &[("CPU", 1.0)]);
    let mut r = rng(0);
    // offline work on the head n0.
    let t_off = T {
        tenant: off,
        ..T::default()
    };
    assert_eq!(submit(&mut st, &one, &t_off, &mut r), Decision::Run(0));
    // DEFAULT: online would prefer n0 but offline is there → n1 (k = 1, lowest id score 0).
    let t_on = T {
        tenant: on,
        ..T::default()
    };
    assert_eq!(submit(&mut st, &one, &t_on, &mut r), Decision::Run(1));
    // Symmetric: offline preferring n1 must avoid it now → n0 (score 0, lowest id).
    let t_off1 = T {
        tenant: off,
        preferred: 1,
        ..T::default()
    };
    assert_eq!(submit(&mut st, &one, &t_off1, &mut r), Decision::Run(0));
    // SPREAD for online: round robin from 0: n0 has offline → skip; n1 → Run(1); next n2;
    // next s0/s1 are spot → skipped, n0 offline → n1.
    let sp = Strategy::Spread;
    let t_on_sp = T {
        tenant: on,
        strategy: &sp,
        ..T::default()
    };
    assert_eq!(submit(&mut st, &one, &t_on_sp, &mut r), Decision::Run(1));
    assert_eq!(submit(&mut st, &one, &t_on_sp, &mut r), Decision::Run(2));
    assert_eq!(submit(&mut st, &one, &t_on_sp, &mut r), Decision::Run(1));
    // Affinity to a spot node is infeasible for online; to n0 it waits (conflict is dynamic).
    let to_s0 = Strategy::NodeAffinity {
        node: "s0".into(),
        soft: false,
    };
    let to_n0 = Strategy::NodeAffinity {
        node: "n0".into(),
        soft: false,
    };
    let t = T {
        tenant: on,
        strategy: &to_s0,
        ..T::default()
    };
    assert_eq!(decide(&mut st, &one, &t, &mut r), Decision::Infeasible);
    let t = T {
        tenant: on,
        strategy: &to_n0,
        ..T::default()
    };
    assert_eq!(decide(&mut st, &one, &t, &mut r), Decision::Queue(0));
    // allocate refuses a violation.
    assert!(st.allocate(0, &one, on, Policy::RayDefault).is_none());
    assert!(st.allocate(3, &one, on, Policy::RayDefault).is_none());
    // Topology-aware (no devices → hybrid) also respects the rules.
    let t = T {
        tenant: on,
        policy: Policy::TopologyAware,
        ..T::default()
    };
    let d = decide(&mut st, &one, &t, &mut r);
    assert!(matches!(d, Decision::Run(1) | Decision::Run(2)), "{d:?}");
    // Bundles: online SPREAD of 3 → only n1 and n2 qualify (n0 offline, s* spot) → the third
    // bundle reuses n1 or n2. STRICT_SPREAD of 3 → n0 could qualify when offline leaves → Wait.
    let b = vec![one.clone(); 3];
    let br = |s| BundleRequest {
        bundles: &b,
        strategy: s,
        tenant: on,
        policy: Policy::RayDefault,
        label_selector: &[],
        bundle_selectors: &[],
        domain: None,
    };
    match place_bundles(&st, &br(PgStrategy::Spread), None) {
        PgDecision::Placed(v) => assert!(v.iter().all(|&n| n == 1 || n == 2), "{v:?}"),
        d => panic!("{d:?}"),
    }
    assert_eq!(
        place_bundles(&st, &br(PgStrategy::StrictSpread), None),
        PgDecision::Wait
    );
    // 4 bundles > 3 non-spot nodes → Infeasible.
    let b4 = vec![one.clone(); 4];
    let br4 = BundleRequest {
        bundles: &b4,
        strategy: PgStrategy::StrictSpread,
        tenant: on,
        policy: Policy::RayDefault,
        label_selector: &[],
        bundle_selectors: &[],
        domain: None,
    };
    assert_eq!(place_bundles(&st, &br4, None), PgDecision::Infeasible);
    // Offline bundles avoid nodes with online work (n1, n2): STRICT_PACK → n0 (or spot).
    let b2 = vec![one.clone(); 2];
    let br_off = BundleRequest {
        bundles: &b2,
        strategy: PgStrategy::StrictPack,
        tenant: off,
        policy: Policy::TopologyAware,
        label_selector: &[],
        bundle_selectors: &[],
        domain: None,
    };
    match place_bundles(&st, &br_off, None) {
        PgDecision::Placed(v) => assert!(v.iter().all(|&n| n != 1 && n != 2), "{v:?}"),
        d => panic!("{d:?}"),
    }
}

/// Randomised: many generated requests under every strategy and policy, tasks and groups,
/// with random frees; after each step, no node holds work of two tenants that must not share,
/// and no tenant's work is outside its `only_nodes`.
#[test]
fn tenant_rules_never_violated_randomised() {
    use proptest::test_runner::{Config, TestRunner};
    use proptest::{prop_assert, prop_assert_eq};
    let mut runner = TestRunner::new(Config {
        cases: 64,
        ..Config::default()
    });
    let step = (0usize..3, 0usize..6, 0usize..3, 1u32..9, 0usize..5, 0u8..10);
    runner
        .run(&proptest::collection::vec(step, 1..120), |steps| {
            let mut st = tenanted();
            let mut r = rng(42);
            let mut live: Vec<(Allocation, Option<usize>)> = Vec::new();
            let one_cpu: Vec<Request> =
                (1..9).map(|c| req(&mut st, &[("CPU", c as f64)])).collect();
            for (tenant, strat, policy, cpus, pref, action) in steps {
                let tenant = Some(tenant);
                let policy = [Policy::RayDefault, Policy::Spread, Policy::TopologyAware][policy];
                let rq = one_cpu[(cpus - 1) as usize].clone();
                if action < 3 && !live.is_empty() {
                    let (a, t) = live.remove(action as usize % live.len());
                    st.free(&a, t);
                } else if action < 5 {
                    // A placement group of 2 bundles.
                    let b = vec![rq.clone(); 2];
                    let s = [
                        PgStrategy::Pack,
                        PgStrategy::Spread,
                        PgStrategy::StrictPack,
                        PgStrategy::StrictSpread,
                    ][strat % 4];
                    let br = BundleRequest {
                        bundles: &b,
                        strategy: s,
                        tenant,
                        policy,
                        label_selector: &[],
                        bundle_selectors: &[],
                        domain: None,
                    };
                    if let PgDecision::Placed(nodes) = place_bundles(&st, &br, None) {
                        for (i, n) in nodes.into_iter().enumerate() {
                            let a = st.allocate(n, &b[i], tenant, policy);
                            prop_assert!(a.is_some(), "placed bundle must allocate");
                            live.push((a.unwrap(), tenant));
                        }
                    }
                } else {
                    let strategies = [
                        Strategy::Default,
                        Strategy::Spread,
                        Strategy::NodeAffinity {
                            node: "n0".into(),
                            soft: true,
                        },
                        Strategy::NodeAffinity {
                            node: "s1".into(),
                            soft: true,
                        },
                        Strategy::NodeAffinity {
                            node: "n2".into(),
                            soft: false,
                        },
                        Strategy::Default,
                    ];
                    let t = T {
                        strategy: &strategies[strat],
                        tenant,
                        policy,
                        preferred: pref,
                        ..T::default()
                    };
                    if let Decision::Run(n) = decide(&mut st, &rq, &t, &mut r) {
                        let a = st.allocate(n, &rq, tenant, policy);
                        prop_assert!(a.is_some(), "Run must allocate");
                        live.push((a.unwrap(), tenant));
                    }
                }
                // Invariants.
                for n in &st.nodes {
                    for (ti, tr) in st.tenants.iter().enumerate() {
                        if n.tenant_count(ti) == 0 {
                            continue;
                        }
                        for &c in &tr.conflicts {
                            prop_assert_eq!(
                                n.tenant_count(c),
                                0,
                                "{} holds {} and {}",
                                n.name(),
                                tr.name,
                                st.tenants[c].name
                            );
                        }
                        prop_assert!(
                            tr.only_nodes.iter().all(|c| c.matches(n.labels())),
                            "{} on {}",
                            tr.name,
                            n.name()
                        );
                    }
                    prop_assert!(n.available(0) >= 0);
                }
            }
            Ok(())
        })
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Topology-aware policy
// ---------------------------------------------------------------------------------------------

fn dgx(n: usize) -> ClusterState {
    state(&format!("cluster c {{\n  node dgx_h100 x {n}\n}}\n"))
}

#[test]
fn topology_aware_allocation_stays_under_few_switches() {
    // dgx_h100: GPUs 0,1 on sw0 (NUMA 0), 2,3 on sw1 (NUMA 0), 4,5 on sw2 (NUMA 1), 6,7 on sw3.
    let mut st = dgx(1);
    let locs = st.nodes[0].topology().devices_of(1).to_vec();
    assert_eq!(
        locs.iter().map(|l| l.switch.unwrap()).collect::<Vec<_>>(),
        vec![0, 0, 1, 1, 2, 2, 3, 3]
    );
    let one = req(&mut st, &[("GPU", 1.0)]);
    let four = req(&mut st, &[("GPU", 4.0)]);
    let two = req(&mut st, &[("GPU", 2.0)]);
    st.allocate(0, &one, None, Policy::RayDefault).unwrap(); // GPU 0
    // Ray: whole GPUs in index order → 1, 2, 3, 4 → switches sw0, sw1, sw2 (3) and both NUMA.
    let mut ray = st.clone();
    let a = ray.allocate(0, &four, None, Policy::RayDefault).unwrap();
    assert_eq!(
        a.instances[0].1,
        vec![0, 10000, 10000, 10000, 10000, 0, 0, 0]
    );
    let l = ray.locality(&a);
    assert_eq!((l.switches, l.numa_nodes), (3, 2));
    // Topology-aware: no switch has 4 free; NUMA 1 (GPUs 4..7) has 4 free, NUMA 0 only 3 →
    // GPUs 4..7 under sw2, sw3: 2 switches, 1 NUMA domain, 4 local compute NICs.
    let mut topo = st.clone();
    let a = topo
        .allocate(0, &four, None, Policy::TopologyAware)
        .unwrap();
    assert_eq!(
        a.instances[0].1,
        vec![0, 0, 0, 0, 10000, 10000, 10000, 10000]
    );
    let l = topo.locality(&a);
    assert_eq!((l.switches, l.numa_nodes, l.cpu_numa), (2, 1, Some(1)));
    assert_eq!(l.local_nics.len(), 4);
    // 2 GPUs after GPU 0: Ray takes 1, 2 (sw0 + sw1); topology-aware takes the best-fitting
    // switch with 2 free: sw1 (GPUs 2, 3; sw1..sw3 tie at 2 free, lowest key) → 1 switch.
    let mut ray = st.clone();
    let a = ray.allocate(0, &two, None, Policy::RayDefault).unwrap();
    assert_eq!(ray.locality(&a).switches, 2);
    let a = st.allocate(0, &two, None, Policy::TopologyAware).unwrap();
    assert_eq!(a.instances[0].1, vec![0, 0, 10000, 10000, 0, 0, 0, 0]);
    assert_eq!(st.locality(&a).switches, 1);
}

#[test]
fn topology_aware_task_fills_fragments() {
    // n1 has GPU 0 in use (sw0 half used). A 1-GPU task under topology_aware: on n1 it takes
    // GPU 1 (the switch group with the fewest free) and leaves no partly used switch (frag 0);
    // on n0 it would break sw0 (frag 1). So n1, although Ray's hybrid picks the preferred n0
    // (score 0).
    let mut st = dgx(2);
    let one = req(&mut st, &[("GPU", 1.0), ("CPU", 1.0)]);
    st.allocate(1, &one, None, Policy::RayDefault).unwrap();
    let mut r = rng(0);
    let topo = T {
        policy: Policy::TopologyAware,
        ..T::default()
    };
    assert_eq!(
        decide(&mut st, &one, &T::default(), &mut r),
        Decision::Run(0)
    );
    assert_eq!(submit(&mut st, &one, &topo, &mut r), Decision::Run(1));
    assert_eq!(st.nodes[1].instances(1).unwrap()[..2], [0, 0]);
}

#[test]
fn topology_aware_group_uses_few_racks() {
    // r0 holds 1 DGX, r1 holds 2. STRICT_SPREAD of 2 × {GPU: 8}: Ray scores every empty node
    // alike → lowest ids r0.n0, r1.n0 (2 racks). Topology-aware: r1 alone covers 16 GPUs → both
    // bundles in r1.
    let st = state(
        "cluster c {\n  rack r0 {\n    node dgx_h100 x 1\n  }\n  rack r1 {\n    node dgx_h100 x 2\n  }\n}\n",
    );
    let mut st = st;
    let b = req(&mut st, &[("GPU", 8.0), ("CPU", 8.0)]);
    let bundles = vec![b.clone(), b.clone()];
    let ray = pg(&st, &bundles, PgStrategy::StrictSpread);
    assert_eq!(ray, PgDecision::Placed(vec![0, 1]));
    let topo = place_bundles(
        &st,
        &BundleRequest {
            bundles: &bundles,
            strategy: PgStrategy::StrictSpread,
            tenant: None,
            policy: Policy::TopologyAware,
            label_selector: &[],
            bundle_selectors: &[],
            domain: None,
        },
        None,
    );
    assert_eq!(topo, PgDecision::Placed(vec![1, 2]));
    assert_eq!(st.racks_spanned(&[1, 2]), 1);
}

// ---------------------------------------------------------------------------------------------
// TPU slices
// ---------------------------------------------------------------------------------------------

fn tpu() -> ClusterState {
    // Two v5p slices of 2x2x4 = 16 chips = 4 hosts of 4 chips each.
    state(
        "cluster c {\n  node cpu_head x 1\n  slice s[0..1] node tpu_v5p_host topology 2x2x4\n}\nnode cpu_head {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}\n",
    )
}

#[test]
fn tpu_slice_resources_labels_and_bundles() {
    let st = tpu();
    assert_eq!(st.slices(), 2);
    let hosts = st.slice_hosts(1);
    let names: Vec<&str> = hosts.iter().map(|&h| st.nodes[h].name()).collect();
    assert_eq!(names, ["s1.h0", "s1.h1", "s1.h2", "s1.h3"]);
    // Pod type = generation + TensorCores: 16 v5p chips × 2 cores = v5p-32.
    assert_eq!(st.slice_info(1).pod_type, "v5p-32");
    let head_res = st.ids.id("TPU-v5p-32-head").unwrap();
    let slice_res = st.ids.id("s1").unwrap();
    for (w, &h) in hosts.iter().enumerate() {
        let n = &st.nodes[h];
        assert_eq!(n.labels()["ray.io/tpu-slice-name"], "s1");
        assert_eq!(n.labels()["ray.io/tpu-worker-id"], w.to_string());
        assert_eq!(n.total(slice_res), SCALE);
        assert_eq!(n.total(head_res), if w == 0 { SCALE } else { 0 });
        assert_eq!(n.total(st.ids.id("TPU").unwrap()), 4 * SCALE);
    }
    // Gang reservation: head bundle + 4 × {TPU: 4, CPU: 1}.
    let b = st.slice_bundles(1);
    assert_eq!(b.len(), 5);
    assert_eq!(b[0].amounts, vec![(head_res, SCALE)]);
    assert_eq!(
        b[1].amounts,
        vec![(0, SCALE), (st.ids.id("TPU").unwrap(), 4 * SCALE)]
    );
    let selector = st.slice_selector(1);
    let place = |st: &ClusterState| {
        place_bundles(
            st,
            &BundleRequest {
                bundles: &b,
                strategy: PgStrategy::Pack,
                tenant: None,
                policy: Policy::RayDefault,
                label_selector: &selector,
                bundle_selectors: &[],
                domain: None,
            },
            None,
        )
    };
    // PACK: the head bundle sorts first (custom resource) and only s1.h0 holds it; the first
    // host bundle packs onto s1.h0 too (TPU 4 free); the others go one per remaining host.
    let p = place(&st);
    assert_eq!(
        p,
        PgDecision::Placed(vec![hosts[0], hosts[0], hosts[1], hosts[2], hosts[3]])
    );
    // A dead host breaks the slice: 4 host bundles cannot fit 3 hosts even when empty.
    let mut st2 = st.clone();
    st2.set_alive(hosts[2], false);
    assert!(!st2.slice_intact(1));
    assert_eq!(place(&st2), PgDecision::Infeasible);
}

#[test]
fn topology_aware_keeps_a_gang_in_one_slice() {
    // One host of s0 is busy. STRICT_SPREAD 4 × {TPU: 4, CPU: 1}: Ray takes the lowest-id free
    // hosts s0.h1, s0.h2, s0.h3, s1.h0 (2 slices). Topology-aware: only s1 has 16 free chips →
    // all four in s1.
    let mut st = tpu();
    let b = req(&mut st, &[("TPU", 4.0), ("CPU", 1.0)]);
    let s0h0 = id(&st, "s0.h0");
    st.allocate(s0h0, &b, None, Policy::RayDefault).unwrap();
    let bundles = vec![b.clone(); 4];
    let mk = |policy| BundleRequest {
        bundles: &bundles,
        strategy: PgStrategy::StrictSpread,
        tenant: None,
        policy,
        label_selector: &[],
        bundle_selectors: &[],
        domain: None,
    };
    let PgDecision::Placed(ray) = place_bundles(&st, &mk(Policy::RayDefault), None) else {
        panic!()
    };
    assert_eq!(st.slices_spanned(&ray), 2);
    let PgDecision::Placed(topo) = place_bundles(&st, &mk(Policy::TopologyAware), None) else {
        panic!()
    };
    assert_eq!(topo, st.slice_hosts(1));
}

#[test]
fn pod_type_names() {
    assert_eq!(tpu_pod_type("TPU_v5p", 64), "v5p-128");
    assert_eq!(tpu_pod_type("TPU-V4", 8), "v4-16");
    assert_eq!(tpu_pod_type("TPU_v5e", 16), "v5litepod-16");
    assert_eq!(tpu_pod_type("v6e", 8), "v6e-8");
}

// ---------------------------------------------------------------------------------------------
// Explain, determinism, empty cluster
// ---------------------------------------------------------------------------------------------

#[test]
fn explain_lists_every_node() {
    let mut st = labelled();
    st.set_alive(2, false);
    let one = req(&mut st, &[("CPU", 1.0)]);
    let s = sel(&[("market-type", "!spot")]);
    let tr = TaskRequest {
        request: &one,
        strategy: &Strategy::Default,
        label_selector: &s,
        preferred: 0,
        tenant: None,
        policy: Policy::RayDefault,
    };
    let mut e = Explain::default();
    let d = place_task(&mut st, &tr, &mut rng(0), Some(&mut e));
    assert_eq!(d, Decision::Run(0));
    assert_eq!(e.candidates.len(), 5);
    assert_eq!(e.candidates[2].verdict, Verdict::Dead);
    assert!(matches!(e.candidates[1].verdict, Verdict::LabelMismatch(_)));
    assert!(e.candidates[0].chosen);
    let text = e.render(&st);
    assert_eq!(text.lines().count(), 5);
    assert!(text.lines().next().unwrap().contains("chosen"), "{text}");
    assert!(text.contains("market-type != spot"), "{text}");
}

#[test]
fn empty_cluster() {
    let mut st = state("tenant a {\n  priority 1\n}\n");
    assert!(st.nodes.is_empty());
    let one = req(&mut st, &[("CPU", 1.0)]);
    assert_eq!(
        decide(&mut st, &one, &T::default(), &mut rng(0)),
        Decision::Infeasible
    );
    let sp = Strategy::Spread;
    let t = T {
        strategy: &sp,
        ..T::default()
    };
    assert_eq!(decide(&mut st, &one, &t, &mut rng(0)), Decision::Infeasible);
    assert_eq!(
        pg(&st, std::slice::from_ref(&one), PgStrategy::Pack),
        PgDecision::Infeasible
    );
}

/// Release-mode timing on a 10,000-node cluster:
/// `cargo test --release --test placement -- --ignored --nocapture perf`.
#[test]
#[ignore]
fn perf_10k_nodes() {
    let mut st = state(&format!(
        "{CPU8}cluster c {{\n  rack r[0..99] {{\n    node dgx_h100 x 100\n  }}\n}}\n"
    ));
    assert_eq!(st.nodes.len(), 10_000);
    let one = req(&mut st, &[("CPU", 1.0)]);
    let g8 = req(&mut st, &[("GPU", 8.0), ("CPU", 8.0)]);
    let mut r = rng(0);
    let time = |label: &str, f: &mut dyn FnMut() -> usize| {
        let t0 = std::time::Instant::now();
        let n = f();
        let dt = t0.elapsed();
        println!(
            "{label}: {n} calls, {:.2} us/call",
            dt.as_secs_f64() * 1e6 / n as f64
        );
    };
    // Fast path: the preferred node is available and scores 0.
    time("place_task DEFAULT, preferred wins", &mut || {
        for _ in 0..100_000 {
            std::hint::black_box(decide(&mut st, &one, &T::default(), &mut r));
        }
        100_000
    });
    // Full scan: the preferred node is at 0.5 or more.
    let half = req(&mut st, &[("CPU", 112.0)]);
    st.allocate(0, &half, None, Policy::RayDefault).unwrap();
    time("place_task DEFAULT, full scan + top-k", &mut || {
        for _ in 0..1_000 {
            std::hint::black_box(decide(&mut st, &one, &T::default(), &mut r));
        }
        1_000
    });
    let sp = Strategy::Spread;
    let t = T {
        strategy: &sp,
        ..T::default()
    };
    time("place_task SPREAD", &mut || {
        for _ in 0..100_000 {
            std::hint::black_box(decide(&mut st, &one, &t, &mut r));
        }
        100_000
    });
    let tt = T {
        policy: Policy::TopologyAware,
        ..T::default()
    };
    time("place_task TOPOLOGY_AWARE GPU: 8", &mut || {
        for _ in 0..200 {
            std::hint::black_box(decide(&mut st, &g8, &tt, &mut r));
        }
        200
    });
    let bundles = vec![g8.clone(); 64];
    for (s, p) in [
        (PgStrategy::StrictSpread, Policy::RayDefault),
        (PgStrategy::Pack, Policy::RayDefault),
        (PgStrategy::StrictSpread, Policy::TopologyAware),
    ] {
        time(
            &format!("place_bundles 64 x GPU:8 {s:?} {p:?}"),
            &mut || {
                for _ in 0..10 {
                    let br = BundleRequest {
                        bundles: &bundles,
                        strategy: s,
                        tenant: None,
                        policy: p,
                        label_selector: &[],
                        bundle_selectors: &[],
                        domain: None,
                    };
                    std::hint::black_box(place_bundles(&st, &br, None));
                }
                10
            },
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The ordered index the DEFAULT policy walks picks exactly what the full scan picks.
// ---------------------------------------------------------------------------------------------

/// The DEFAULT policy's decision for `r` with the ordered index, after checking it equals
/// the full scan's from a clone of the same state and an rng of the same seed.
fn walk_equals_scan(st: &mut ClusterState, r: &Request, t: &T, seed: u64) -> Decision {
    let scan = {
        USE_ORDER_INDEX.with(|u| u.set(false));
        let mut s2 = st.clone();
        let d = decide(&mut s2, r, t, &mut rng(seed));
        USE_ORDER_INDEX.with(|u| u.set(true));
        d
    };
    let walk = decide(st, r, t, &mut rng(seed));
    assert_eq!(walk, scan, "seed {seed}: from n{}", t.preferred);
    walk
}

#[test]
fn indexed_walk_equals_the_reference_scan() {
    // 60 heterogeneous nodes (CPU-only and GPU nodes, 20% top-k = 12), random allocations and
    // frees of mixed requests; before every placement, the same decision is taken with the
    // index and with the scan from clones of the same state and rng.
    let src = format!("{CPU8}{GPU4}cluster c {{\n  node cpu8 x 40\n  node gpu4 x 20\n}}\n");
    let mut st = state(&src);
    let reqs = [
        req(&mut st, &[("CPU", 1.0)]),
        req(&mut st, &[("CPU", 3.0)]),
        req(&mut st, &[("CPU", 2.0), ("GPU", 1.0)]),
        req(&mut st, &[("CPU", 1.0), ("memory", 20e9)]),
        req(&mut st, &[("CPU", 8.0)]),
    ];
    let mut driver = rng(11);
    let mut live: Vec<(Allocation, usize)> = Vec::new();
    let mut compared = 0;
    for step in 0..4000 {
        use rand::RngExt;
        if driver.random_range(0..3) == 0 && !live.is_empty() {
            let k = driver.random_range(0..live.len());
            let (a, _) = live.swap_remove(k);
            st.free(&a, None);
            continue;
        }
        let ri = driver.random_range(0..reqs.len());
        let t = T {
            preferred: driver.random_range(0..60),
            ..T::default()
        };
        let walk = walk_equals_scan(&mut st, &reqs[ri], &t, step as u64);
        compared += 1;
        if let Decision::Run(n) = walk {
            live.push((
                st.allocate(n, &reqs[ri], None, Policy::RayDefault).unwrap(),
                ri,
            ));
        }
    }
    assert!(compared > 2000);
}

#[test]
fn block_walk_equals_the_reference_scan_on_many_nodes() {
    // 1,200 nodes: the order spans blocks (64 to 128 entries each), splits and empties them
    // as nodes load, free, die and come back; before every placement the indexed walk (blocks
    // skipped by their room bounds, `placement::order`) and the scan decide from clones of
    // the same state and rng. Requests are plain, so the block path decides them.
    let src = format!("{CPU8}{GPU4}cluster c {{\n  node cpu8 x 800\n  node gpu4 x 400\n}}\n");
    let mut st = state(&src);
    let reqs = [
        req(&mut st, &[("CPU", 1.0)]),
        req(&mut st, &[("CPU", 4.0)]),
        req(&mut st, &[("CPU", 2.0), ("GPU", 1.0)]),
        req(&mut st, &[("CPU", 8.0)]),
    ];
    let mut driver = rng(17);
    let mut live: Vec<Allocation> = Vec::new();
    let mut dead: Vec<usize> = Vec::new();
    let mut compared = 0;
    for step in 0..6000 {
        use rand::RngExt;
        match driver.random_range(0..12) {
            0..=2 if !live.is_empty() => {
                let k = driver.random_range(0..live.len());
                let a = live.swap_remove(k);
                st.free(&a, None);
                continue;
            }
            3 => {
                let n = driver.random_range(0..1200);
                if st.nodes[n].alive() {
                    live.retain(|a| a.node != n);
                    st.set_alive(n, false);
                    st.reset(n);
                    dead.push(n);
                }
                continue;
            }
            4 if !dead.is_empty() => {
                let n = dead.swap_remove(driver.random_range(0..dead.len()));
                st.set_alive(n, true);
                continue;
            }
            _ => {}
        }
        let ri = driver.random_range(0..reqs.len());
        let t = T {
            preferred: driver.random_range(0..1200),
            ..T::default()
        };
        let walk = walk_equals_scan(&mut st, &reqs[ri], &t, step as u64);
        compared += 1;
        if let Decision::Run(n) = walk {
            live.push(st.allocate(n, &reqs[ri], None, Policy::RayDefault).unwrap());
        }
    }
    assert!(compared > 3000, "{compared}");
}

// ---------------------------------------------------------------------------------------------
// Tenant accelerator allow-lists, quotas, device memory
// ---------------------------------------------------------------------------------------------

const H4: &str = "node h4 {\n  cpu sockets 1, cores 16\n  memory 256 GiB\n  device H100_SXM x 4 link switch\n}\n";
const FAKE: &str =
    "node fake {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  resources { NPU: 2 }\n}\n";

/// n0: cpu8 (no devices), n1: gpu4 (4 × L4, 24 GB), h0: h4 (4 × H100_SXM, 80 GB), f0: NPUs
/// declared with `resources` (NPUs of no accelerator kind). Tenant 0 `inf` may use only L4.
fn accel_cluster(extra: &str) -> ClusterState {
    state(&format!(
        "{CPU8}{GPU4}{H4}{FAKE}cluster c {{\n  node cpu8 x 1\n  node gpu4 x 1\n  node h4 x 1 name h\n  node fake x 1 name f\n}}\ntenant inf {{\n  accelerators [L4]\n{extra}}}\n"
    ))
}

#[test]
fn tenant_accelerators_restrict_tasks() {
    let mut st = accel_cluster("");
    assert_eq!(
        (0..4)
            .map(|i| st.nodes[i].name().to_string())
            .collect::<Vec<_>>(),
        ["n0", "n1", "h0", "f0"]
    );
    let gpu = req(&mut st, &[("GPU", 1.0)]);
    let cpu = req(&mut st, &[("CPU", 1.0)]);
    let mut r = rng(0);
    let inf = T {
        tenant: Some(0),
        preferred: 2,
        ..T::default()
    };
    // Only n1 holds allowed devices: four GPU tasks run there, the fifth waits there (the
    // preferred h0 is not a candidate for the tenant, so it does not queue there).
    for _ in 0..4 {
        assert_eq!(submit(&mut st, &gpu, &inf, &mut r), Decision::Run(1));
    }
    assert_eq!(decide(&mut st, &gpu, &inf, &mut r), Decision::Queue(1));
    // Without the tenant the same request runs on the H100 node.
    let anyone = T {
        preferred: 2,
        ..T::default()
    };
    assert_eq!(decide(&mut st, &gpu, &anyone, &mut r), Decision::Run(2));
    // Hard affinity to a node of another kind, or of unknown kind, is infeasible.
    for node in ["h0", "f0"] {
        let aff = Strategy::NodeAffinity {
            node: node.into(),
            soft: false,
        };
        let t = T {
            strategy: &aff,
            tenant: Some(0),
            ..T::default()
        };
        assert_eq!(
            decide(&mut st, &cpu, &t, &mut r),
            Decision::Infeasible,
            "{node}"
        );
    }
    // Device-free work may use the node without accelerators (n0): DEFAULT avoids GPU nodes.
    assert_eq!(submit(&mut st, &cpu, &inf, &mut r), Decision::Run(0));
    // allocate enforces the rule again.
    assert!(st.allocate(2, &cpu, Some(0), Policy::RayDefault).is_none());
    assert!(st.allocate(3, &cpu, Some(0), Policy::RayDefault).is_none());
    assert!(st.allocate(0, &cpu, Some(0), Policy::RayDefault).is_some());
}

#[test]
fn tenant_accelerators_in_explain_and_bundles() {
    let mut st = accel_cluster("");
    let gpu = req(&mut st, &[("GPU", 1.0)]);
    let tr = TaskRequest {
        request: &gpu,
        strategy: &Strategy::Default,
        label_selector: &[],
        preferred: 0,
        tenant: Some(0),
        policy: Policy::RayDefault,
    };
    let mut e = Explain::default();
    assert_eq!(
        place_task(&mut st, &tr, &mut rng(0), Some(&mut e)),
        Decision::Run(1)
    );
    assert_eq!(e.candidates[0].verdict, Verdict::Infeasible);
    assert_eq!(
        e.candidates[2].verdict,
        Verdict::TenantRule("tenant `inf` accelerators [L4]: node has H100_SXM".into())
    );
    assert_eq!(
        e.candidates[3].verdict,
        Verdict::TenantRule(
            "tenant `inf` accelerators [L4]: node has devices of no declared accelerator kind"
                .into()
        )
    );
    let text = e.render(&st);
    assert!(
        text.contains("tenant rule: tenant `inf` accelerators [L4]: node has H100_SXM"),
        "{text}"
    );
    let bundles = vec![gpu.clone(), gpu.clone()];
    let br = |strategy| BundleRequest {
        bundles: &bundles,
        strategy,
        tenant: Some(0),
        policy: Policy::RayDefault,
        label_selector: &[],
        bundle_selectors: &[],
        domain: None,
    };
    assert_eq!(
        place_bundles(&st, &br(PgStrategy::Pack), None),
        PgDecision::Placed(vec![1, 1])
    );
    // Two nodes would be needed; only n1 is allowed.
    let mut e = Explain::default();
    assert_eq!(
        place_bundles(&st, &br(PgStrategy::StrictSpread), Some(&mut e)),
        PgDecision::Infeasible
    );
    assert_eq!(
        e.candidates[2].verdict,
        Verdict::TenantRule("tenant `inf` accelerators [L4]: node has H100_SXM".into())
    );
}

/// Two gpu4 nodes (8 × L4); tenant 0 `a` may hold 2 GPUs and 20 CPUs at once, tenant 1 `b`
/// has no quota.
fn quota_cluster() -> ClusterState {
    state(&format!(
        "{GPU4}cluster c {{\n  node gpu4 x 2\n}}\ntenant a {{\n  quota {{ GPU: 2, CPU: 20 }}\n}}\ntenant b {{\n  priority 1\n}}\n"
    ))
}

#[test]
fn quota_queues_work_past_it_and_counts_allocations() {
    let mut st = quota_cluster();
    let gpu = req(&mut st, &[("GPU", 1.0), ("CPU", 1.0)]);
    let g = st.ids.id("GPU").unwrap();
    let mut r = rng(0);
    let a = T {
        tenant: Some(0),
        ..T::default()
    };
    assert!(st.quota_allows(Some(0), &gpu));
    assert_eq!(submit(&mut st, &gpu, &a, &mut r), Decision::Run(0));
    let second = st.allocate(1, &gpu, Some(0), Policy::RayDefault).unwrap();
    assert_eq!(st.tenant_held(0, g), 2 * SCALE);
    // Six GPUs are free, but the tenant holds its quota: the third waits (at the submitter's
    // node n0, feasible for it), and allocate refuses it too.
    assert!(!st.quota_allows(Some(0), &gpu));
    assert_eq!(
        st.quota_blocked_by(Some(0), &gpu).as_deref(),
        Some("tenant `a` quota GPU: holds 2, requests 1, quota 2")
    );
    assert_eq!(decide(&mut st, &gpu, &a, &mut r), Decision::Queue(0));
    assert!(st.allocate(0, &gpu, Some(0), Policy::RayDefault).is_none());
    // Work without GPUs is within the CPU quota and runs.
    let cpu = req(&mut st, &[("CPU", 2.0)]);
    assert!(matches!(
        decide(&mut st, &cpu, &a, &mut r),
        Decision::Run(_)
    ));
    // Another tenant, and work without a tenant, are not limited.
    let b = T {
        tenant: Some(1),
        ..T::default()
    };
    assert_eq!(submit(&mut st, &gpu, &b, &mut r), Decision::Run(0));
    assert!(matches!(
        decide(&mut st, &gpu, &T::default(), &mut r),
        Decision::Run(_)
    ));
    assert_eq!(st.quota_blocked_by(None, &gpu), None);
    // Freeing gives the quota back.
    st.free(&second, Some(0));
    assert_eq!(st.tenant_held(0, g), SCALE);
    assert!(st.quota_allows(Some(0), &gpu));
    assert!(matches!(
        decide(&mut st, &gpu, &a, &mut r),
        Decision::Run(_)
    ));
}

#[test]
fn a_request_larger_than_the_quota_is_infeasible() {
    let mut st = quota_cluster();
    let three = req(&mut st, &[("GPU", 3.0)]);
    assert_eq!(
        st.quota_exceeded_by(Some(0), &three).as_deref(),
        Some("tenant `a` quota GPU: requests 3, more than the quota 2")
    );
    let tr = TaskRequest {
        request: &three,
        strategy: &Strategy::Default,
        label_selector: &[],
        preferred: 0,
        tenant: Some(0),
        policy: Policy::RayDefault,
    };
    let mut e = Explain::default();
    assert_eq!(
        place_task(&mut st, &tr, &mut rng(0), Some(&mut e)),
        Decision::Infeasible
    );
    assert_eq!(
        e.candidates[0].verdict,
        Verdict::TenantRule("tenant `a` quota GPU: requests 3, more than the quota 2".into())
    );
    // Fits a node (4 L4) without the tenant.
    assert_eq!(
        decide(&mut st, &three, &T::default(), &mut rng(0)),
        Decision::Run(0)
    );
}

#[test]
fn quota_forgets_allocations_on_dead_nodes() {
    let mut st = quota_cluster();
    let gpu = req(&mut st, &[("GPU", 1.0)]);
    let g = st.ids.id("GPU").unwrap();
    let on1 = st.allocate(1, &gpu, Some(0), Policy::RayDefault).unwrap();
    let _on0 = st.allocate(0, &gpu, Some(0), Policy::RayDefault).unwrap();
    assert_eq!(st.tenant_held(0, g), 2 * SCALE);
    // n1 dies: what the tenant held there stops counting (the simulation drops such
    // allocations without freeing them).
    st.set_alive(1, false);
    assert_eq!(st.tenant_held(0, g), SCALE);
    st.reset(1);
    st.set_alive(1, true);
    assert_eq!(st.tenant_held(0, g), SCALE);
    // A late free of the lost allocation gives back nothing more.
    st.free(&on1, Some(0));
    assert_eq!(st.tenant_held(0, g), SCALE);
    // A reset of an alive node forgets what was held there.
    st.reset(0);
    assert_eq!(st.tenant_held(0, g), 0);
}

#[test]
fn quota_counts_a_placement_group_as_a_whole() {
    let mut st = quota_cluster();
    let gpu = req(&mut st, &[("GPU", 1.0)]);
    let two = vec![gpu.clone(), gpu.clone()];
    let three = vec![gpu.clone(), gpu.clone(), gpu.clone()];
    let br = |bundles| BundleRequest {
        bundles,
        strategy: PgStrategy::Pack,
        tenant: Some(0),
        policy: Policy::RayDefault,
        label_selector: &[],
        bundle_selectors: &[],
        domain: None,
    };
    assert_eq!(
        place_bundles(&st, &br(&two), None),
        PgDecision::Placed(vec![0, 0])
    );
    assert_eq!(
        place_bundles(&st, &br(&three), None),
        PgDecision::Infeasible
    );
    let held = st.allocate(1, &gpu, Some(0), Policy::RayDefault).unwrap();
    let mut e = Explain::default();
    assert_eq!(
        place_bundles(&st, &br(&two), Some(&mut e)),
        PgDecision::Wait
    );
    assert_eq!(
        e.candidates[0].verdict,
        Verdict::TenantRule(
            "tenant `a` quota GPU: holds 1, requests 2, quota 2 (the whole group)".into()
        )
    );
    st.free(&held, Some(0));
    assert_eq!(
        place_bundles(&st, &br(&two), None),
        PgDecision::Placed(vec![0, 0])
    );
}

const GB: u64 = 1_000_000_000;

#[test]
fn device_memory_rules_out_small_devices() {
    // n0: 4 × L4 (24 GB), h0: 4 × H100_SXM (80 GB).
    let mut st = state(&format!(
        "{GPU4}{H4}cluster c {{\n  node gpu4 x 1\n  node h4 x 1 name h\n}}\n"
    ));
    let m = BTreeMap::from([("GPU".to_string(), 1.0)]);
    let big = st.request_with_memory(&m, Some(orrery::units::Bytes(30 * GB)));
    assert_eq!(big.device_memory, 30 * GB);
    assert!(!st.is_feasible(0, &big) && st.is_feasible(1, &big));
    let aff = Strategy::NodeAffinity {
        node: "n0".into(),
        soft: false,
    };
    let to_n0 = T {
        strategy: &aff,
        ..T::default()
    };
    assert_eq!(
        decide(&mut st, &big, &to_n0, &mut rng(0)),
        Decision::Infeasible
    );
    let tr = TaskRequest {
        request: &big,
        strategy: &Strategy::Default,
        label_selector: &[],
        preferred: 0,
        tenant: None,
        policy: Policy::RayDefault,
    };
    let mut e = Explain::default();
    assert_eq!(
        place_task(&mut st, &tr, &mut rng(0), Some(&mut e)),
        Decision::Run(1)
    );
    assert_eq!(e.candidates[0].verdict, Verdict::Infeasible);
    // Bundles: only h0 has devices that large.
    let two = vec![big.clone(), big.clone()];
    let br = |strategy| BundleRequest {
        bundles: &two,
        strategy,
        tenant: None,
        policy: Policy::RayDefault,
        label_selector: &[],
        bundle_selectors: &[],
        domain: None,
    };
    assert_eq!(
        place_bundles(&st, &br(PgStrategy::Spread), None),
        PgDecision::Placed(vec![1, 1])
    );
    assert_eq!(
        place_bundles(&st, &br(PgStrategy::StrictSpread), None),
        PgDecision::Infeasible
    );
    // Without device memory the same request may use the L4s.
    let plain = req(&mut st, &[("GPU", 1.0)]);
    assert!(st.is_feasible(0, &plain));
}

#[test]
fn device_memory_is_consumed_per_device_instance() {
    // One node, 4 × L4 of 24 GB. Half-GPU tasks needing 16 GB each: two fit one device's
    // fractions (0.5 + 0.5) but not its memory (32 GB > 24 GB), so each device takes one.
    let mut st = state(&format!("{GPU4}cluster c {{\n  node gpu4 x 1\n}}\n"));
    let g = st.ids.id("GPU").unwrap();
    let m = BTreeMap::from([("GPU".to_string(), 0.5)]);
    let half16 = st.request_with_memory(&m, Some(orrery::units::Bytes(16 * GB)));
    let mut allocs = Vec::new();
    for k in 0..4 {
        let a = st.allocate(0, &half16, None, Policy::RayDefault).unwrap();
        // Ray's best fit alone would put the second half on device 0 (0.5 left); its memory
        // (8.2 GB left) sends it to the next device.
        assert_eq!(
            a.instances[0].1[k],
            SCALE / 2,
            "task {k}: {:?}",
            a.instances
        );
        assert_eq!(a.device_memory, vec![(g, k, 16 * GB)]);
        allocs.push(a);
    }
    // The L4's 23,034 MiB (the driver's total), less 16 GB.
    let left = 23_034 * 1024 * 1024 - 16 * GB;
    assert_eq!(st.nodes[0].device_memory_free(g).unwrap(), &[left; 4]);
    // Half of every device is free, but no device has 16 GB left: the fifth waits.
    assert!(!st.is_available(0, &half16));
    assert_eq!(
        decide(&mut st, &half16, &T::default(), &mut rng(0)),
        Decision::Queue(0)
    );
    // An 8 GB half still fits next to one.
    let half8 = st.request_with_memory(&m, Some(orrery::units::Bytes(8 * GB)));
    assert!(st.is_available(0, &half8));
    // Freeing gives the memory back.
    st.free(&allocs[2], None);
    assert_eq!(
        st.nodes[0].device_memory_free(g).unwrap()[2],
        23_034 * 1024 * 1024
    );
    assert_eq!(
        decide(&mut st, &half16, &T::default(), &mut rng(0)),
        Decision::Run(0)
    );
    let a = st.allocate(0, &half16, None, Policy::RayDefault).unwrap();
    assert_eq!(a.instances[0].1[2], SCALE / 2);
    // Without device memory, Ray's best fit stacks halves on one device.
    let mut st = state(&format!("{GPU4}cluster c {{\n  node gpu4 x 1\n}}\n"));
    let half = req(&mut st, &[("GPU", 0.5)]);
    let a0 = st.allocate(0, &half, None, Policy::RayDefault).unwrap();
    let a1 = st.allocate(0, &half, None, Policy::RayDefault).unwrap();
    assert_eq!(
        (a0.instances[0].1[0], a1.instances[0].1[0]),
        (SCALE / 2, SCALE / 2)
    );
    assert!(a0.device_memory.is_empty());
    // A reset node starts with all its device memory.
    let mut st = state(&format!("{GPU4}cluster c {{\n  node gpu4 x 1\n}}\n"));
    let _ = st
        .allocate(0, &half16, None, Policy::TopologyAware)
        .unwrap();
    st.reset(0);
    assert_eq!(
        st.nodes[0].device_memory_free(g).unwrap(),
        &[23_034 * 1024 * 1024; 4]
    );
}
