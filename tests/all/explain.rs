//! `orrery explain` agrees with `run`: on random small cases (seeded) the explained outcome of
//! an item's first placement is what a plain run of the same scenario and seed did with it at
//! t = 0; and the command speaks plainly (node names, rules, one score scale, JSON).

use orrery::load_str_with;
use orrery::placement::ClusterState;
use orrery::placement::explain::{Explanation, Outcome};
use orrery::scenario::LoadOptions;
use orrery::sim::{SimConfig, simulate};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::process::Command;

fn pick<'a, T>(r: &mut ChaCha8Rng, v: &'a [T]) -> &'a T {
    &v[r.random_range(0..v.len())]
}

/// A node type `tN` with random cores and GPUs and a custom `tag` that only the explained task
/// asks for (so its allocation can be told apart in the run's trace; it does not change any
/// score: critical utilization counts CPU, memory and object store).
fn node_type(r: &mut ChaCha8Rng, i: usize) -> String {
    let cores = *pick(r, &[4, 8, 16]);
    let gpus = *pick(r, &[0, 1, 2, 3, 4]);
    let dev = if gpus > 0 {
        format!("  device H100_SXM x {gpus} link none\n")
    } else {
        String::new()
    };
    // Type 0 in pool a, type 1 in pool b, for label selectors and fallbacks.
    let pool = ["a", "b"][i];
    format!(
        "node t{i} {{\n  cpu sockets 1, cores {cores}\n  memory 64 GiB\n{dev}  resources {{ tag: 100 }}\n  labels {{ \"pool\": \"{pool}\" }}\n}}\n"
    )
}

fn amounts(r: &mut ChaCha8Rng) -> String {
    let cpu = *pick(r, &[0, 1, 2, 4, 8]);
    let gpu = *pick(r, &["0", "0.25", "0.5", "0.6", "1", "2", "3"]);
    let mut parts = Vec::new();
    if cpu > 0 {
        parts.push(format!("CPU: {cpu}"));
    }
    if gpu != "0" {
        parts.push(format!("GPU: {gpu}"));
    }
    if parts.is_empty() {
        parts.push("CPU: 1".into());
    }
    parts.join(", ")
}

/// A random scenario and the item to explain.
fn case(r: &mut ChaCha8Rng) -> (String, &'static str) {
    let mut s = node_type(r, 0) + &node_type(r, 1);
    let (a, b) = (r.random_range(1..3), r.random_range(0..3));
    s += &format!("cluster c {{\n  node t0 x {a} name a\n");
    if b > 0 {
        s += &format!("  node t1 x {b} name b\n");
    }
    s += "}\n";
    let policy = *pick(r, &["ray_default", "spread", "topology_aware"]);
    s += &format!("workload w {{\n  policy {policy}\n");
    if r.random_bool(0.7) {
        // Work that holds resources at t = 0 (submitted first, long).
        s += &format!(
            "  tasks f x {} {{\n    resources {{ {} }}\n    duration 1000 s\n  }}\n",
            r.random_range(1..7),
            amounts(r)
        );
    }
    let item = if r.random_bool(0.5) {
        let strategy = *pick(
            r,
            &[
                "DEFAULT",
                "SPREAD",
                "node_affinity(a0 soft)",
                "node_affinity(a0)",
            ],
        );
        // Sometimes a label selector, and then sometimes Ray's fallback_strategy.
        let mut sel = String::new();
        if r.random_bool(0.4) {
            sel += "    label_selector { \"pool\": \"a\" }\n";
            if r.random_bool(0.6) {
                sel += "    fallback label_selector { \"pool\": \"b\" }\n";
            }
        }
        s += &format!(
            "  tasks t x 1 {{\n    resources {{ {}, tag: 1 }}\n    duration 10 s\n    strategy {strategy}\n{sel}  }}\n",
            amounts(r)
        );
        "w.t"
    } else {
        let strategy = *pick(r, &["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"]);
        s += &format!("  placement_group g strategy {strategy} {{\n");
        for _ in 0..r.random_range(1..4) {
            // Sometimes a per-bundle selector (Ray's bundle_label_selector).
            let sel = if r.random_bool(0.35) {
                format!(
                    " label_selector {{ \"pool\": \"{}\" }}",
                    pick(r, &["a", "b", "in(a, b)"])
                )
            } else {
                String::new()
            };
            s += &format!(
                "    bundle {{ {} }} x {}{sel}\n",
                amounts(r),
                r.random_range(1..3)
            );
        }
        s += "  }\n";
        "w.g"
    };
    s += "}\n";
    (s, item)
}

/// What a plain run (no explanation asked) did with the item at t = 0, in explain's terms:
/// the outcome and the node(s).
fn run_did(spec: &orrery::scenario::Spec, item: &str, seed: u64) -> (Outcome, Vec<String>) {
    let r = simulate(
        spec,
        &SimConfig {
            seed,
            record: true,
            ..Default::default()
        },
    );
    let st = ClusterState::from_spec(spec);
    if item == "w.g" {
        let g = &r.metrics.placement_groups[0];
        return match g.state.as_str() {
            "infeasible" => (Outcome::Infeasible, vec![]),
            "created" if g.pending_time == 0.0 => (Outcome::Placed, g.nodes.clone()),
            _ => (Outcome::Pending, vec![]),
        };
    }
    let t = r.metrics.tasks.iter().find(|t| t.name == "t").unwrap();
    if t.infeasible > 0 {
        return (Outcome::Infeasible, vec![]);
    }
    let tag = st.ids.id("tag").unwrap();
    let at0 = r
        .trace
        .iter()
        .find(|e| e.time == 0 && e.delta == 1 && e.amounts.iter().any(|a| a.0 == tag));
    match at0 {
        Some(e) => (Outcome::Placed, vec![st.nodes[e.node].name().to_string()]),
        None => (Outcome::Queued, vec![]),
    }
}

fn explained(spec: &orrery::scenario::Spec, item: &str, seed: u64) -> Explanation {
    simulate(
        spec,
        &SimConfig {
            seed,
            explain: Some(item.into()),
            ..Default::default()
        },
    )
    .explain
    .expect("the item is placed at t = 0")
}

fn check(text: &str, item: &str, seed: u64) -> Outcome {
    let l = load_str_with(
        "case.orr",
        text,
        LoadOptions {
            allow_infeasible: true,
        },
    );
    assert!(!l.has_errors(), "{text}\n{}", l.render(false));
    let spec = l.spec.unwrap();
    let e = explained(&spec, item, seed);
    assert_eq!(e.time_s, 0.0, "{text}");
    let (outcome, nodes) = run_did(&spec, item, seed);
    let mut enodes = e.nodes.clone();
    if e.outcome != Outcome::Placed {
        enodes.clear();
    }
    assert_eq!(
        (e.outcome, enodes),
        (outcome, nodes),
        "explain and run disagree on {item}, seed {seed}:\n{text}\n{}",
        e.render()
    );
    if e.outcome == Outcome::Infeasible || e.outcome == Outcome::Pending {
        assert!(e.reason.is_some(), "{}", e.render());
    }
    e.outcome
}

#[test]
fn explain_agrees_with_run_on_random_cases() {
    let mut r = ChaCha8Rng::seed_from_u64(0x0e71a1);
    let mut seen = std::collections::BTreeMap::new();
    for i in 0..300 {
        let (text, item) = case(&mut r);
        let o = check(&text, item, i % 7 + 1);
        *seen.entry((item, o.word())).or_insert(0) += 1;
    }
    // The cases cover every outcome of both kinds of item.
    for k in [
        ("w.t", "placed"),
        ("w.t", "queued"),
        ("w.t", "infeasible"),
        ("w.g", "placed"),
        ("w.g", "pending"),
        ("w.g", "infeasible"),
    ] {
        assert!(seen.contains_key(&k), "no case gave {k:?}: {seen:?}");
    }
}

const THREE: &str = "node three {\n  cpu sockets 1, cores 16\n  memory 64 GiB\n  device H100_SXM x 3 link none\n}\nnode four {\n  cpu sockets 1, cores 16\n  memory 64 GiB\n  device H100_SXM x 4 link none\n}\n";

#[test]
fn four_fractional_bundles_strict_pack_on_three_gpus() {
    // Alone on a 3-GPU node: the sum (2.4) fits the node's totals, the bundles do not fit its
    // devices (0.6 each, one per device): never placed, by explain and run alike.
    let alone = format!(
        "{THREE}cluster c {{\n  node three x 1\n}}\nworkload w {{\n  placement_group g strategy STRICT_PACK {{\n    bundle {{ GPU: 0.6 }} x 4\n  }}\n}}\n"
    );
    assert_eq!(check(&alone, "w.g", 1), Outcome::Infeasible);
    // With a 4-GPU node whose GPUs are busy at t = 0: pending (it fits there later).
    let later = format!(
        "{THREE}cluster c {{\n  node three x 1\n  node four x 1\n}}\nworkload w {{\n  tasks f x 1 {{\n    resources {{ GPU: 4 }}\n    duration 100 s\n  }}\n  placement_group g strategy STRICT_PACK {{\n    bundle {{ GPU: 0.6 }} x 4\n  }}\n}}\n"
    );
    assert_eq!(check(&later, "w.g", 1), Outcome::Pending);
}

#[test]
fn explain_speaks_plainly() {
    let text = format!(
        "{THREE}cluster c {{\n  node three x 1\n  node four x 1\n}}\nworkload w {{\n  tasks f x 1 {{\n    resources {{ GPU: 4 }}\n    duration 100 s\n  }}\n  tasks t x 1 {{\n    resources {{ CPU: 1 }}\n    duration 1 s\n  }}\n  placement_group g strategy STRICT_PACK {{\n    bundle {{ GPU: 0.6 }} x 4\n  }}\n}}\n"
    );
    let dir = std::env::temp_dir().join(format!("orrery-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("plain.orr");
    std::fs::write(&p, text).unwrap();
    let f = p.to_str().unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let out = run(&["explain", f, "w.g"]);
    for want in [
        "w.g (placement group) at t=0.000000 s, policy ray_default, strategy STRICT_PACK",
        "bundles   {GPU: 0.6} x 4",
        "summed    {GPU: 2.4}",
        "outcome   pending",
        "why       not every bundle fits now",
        "rules that decided, in order:",
        "STRICT_PACK: the summed request {GPU: 2.4} goes to the best node, n0",
        "bundle 4 does not fit the devices of n0 after the bundles before it",
        "score: 0 to 1, higher is preferred",
    ] {
        assert!(out.contains(want), "want `{want}` in\n{out}");
    }
    let line = |node: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{node} ")))
            .unwrap_or_else(|| panic!("no line for {node} in\n{out}"))
            .to_string()
    };
    // The 3-GPU node scores the sum (0.2) but can never hold the bundles device by device.
    assert!(
        line("n0").contains(
            "the sum fits, but its devices could never hold the bundles one after another"
        ) && line("n0").contains("0.2000"),
        "{out}"
    );
    assert!(
        line("n1").contains("busy (could hold it, not now)"),
        "{out}"
    );
    for debug in ["Placed(", "Run(", "Queue(", "Some(", "Wait", "[0,"] {
        assert!(!out.contains(debug), "debug output `{debug}` in\n{out}");
    }
    let out = run(&["explain", f, "w.t"]);
    for want in [
        "outcome   placed on n0",
        "GPU avoidance (scheduler_avoid_gpu_nodes)",
        "spread threshold 0.5",
        "local preference",
        "<- chosen",
    ] {
        assert!(out.contains(want), "want `{want}` in\n{out}");
    }
    let json = run(&["explain", f, "w.g", "--json", "--policy", "spread"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["header"]["policy"], "spread");
    let e = &v["explanation"];
    assert_eq!(e["schema_version"], 2);
    assert_eq!(e["policy"], "spread");
    assert_eq!(e["outcome"], "pending");
    assert_eq!(e["summed_request"], "{GPU: 2.4}");
    assert_eq!(e["candidates"][0]["node"], "n0");
    // Each score names what it scores (an entry of `scored`), not only its position.
    let score = &e["candidates"][0]["scores"][0];
    assert_eq!(score["scored"], e["scored"][0], "{score}");
    assert!(score.get("score").is_some(), "{score}");
    assert_eq!(
        e["candidates"][1]["verdict"],
        "busy (could hold it, not now)"
    );
}

/// Writes `text` and returns what `orrery explain FILE ITEM` prints (exit 0).
fn explain_text(name: &str, text: &str, item: &str) -> String {
    let dir = std::env::temp_dir().join(format!("orrery-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["explain", p.to_str().unwrap(), item])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The line of `node` in explain's node table.
fn node_line(out: &str, node: &str) -> String {
    out.lines()
        .find(|l| l.starts_with(&format!("{node} ")))
        .unwrap_or_else(|| panic!("no line for {node} in\n{out}"))
        .to_string()
}

/// A node type `NAME` with `gpus` H100s (none: a CPU-only node) labelled `pool: POOL`.
fn pool_node(name: &str, gpus: u32, pool: &str) -> String {
    let dev = if gpus > 0 {
        format!("  device H100_SXM x {gpus} link switch\n")
    } else {
        String::new()
    };
    format!(
        "node {name} {{\n  cpu sockets 1, cores 16\n  memory 256 GiB\n{dev}  labels {{ \"pool\": \"{pool}\" }}\n}}\n"
    )
}

#[test]
fn group_verdicts_name_the_bundle_selector_that_decided() {
    // STRICT_PACK: one node must pass both bundles' selectors, and none does. The reason says
    // so (no word of device fractions), and each node names the bundle whose selector excludes
    // it.
    let pools = pool_node("ga", 8, "a") + &pool_node("gb", 8, "b");
    let text = format!(
        "{pools}cluster c {{\n  node ga x 1\n  node gb x 1\n}}\nworkload w {{\n  placement_group g strategy STRICT_PACK {{\n    bundle {{ GPU: 4 }} label_selector {{ \"pool\": \"b\" }}\n    bundle {{ GPU: 4 }} label_selector {{ \"pool\": \"!b\" }}\n  }}\n}}\n"
    );
    let out = explain_text("strict_pack_selectors.orr", &text, "w.g");
    assert!(out.contains("outcome   infeasible"), "{out}");
    assert!(
        out.contains("STRICT_PACK puts all 2 bundles on one node, and no eligible node passes every bundle's label selector (bundle 1: {pool = b}; bundle 2: {pool != b})"),
        "{out}"
    );
    assert!(!out.contains("fraction"), "{out}");
    assert!(
        node_line(&out, "n0").contains(
            "label mismatch: pool = b (bundle 1's label selector; STRICT_PACK puts every bundle on one node)"
        ),
        "{out}"
    );
    assert!(
        node_line(&out, "n1").contains("label mismatch: pool != b (bundle 2's label selector"),
        "{out}"
    );
    // PACK: n0 (pool a, 8 GPUs) may take only bundle 2; n1 (pool b, 4 GPUs) only bundle 1,
    // which it could never hold; n2 (pool c) neither. The 8-GPU bundle's score is not shown
    // on n0, which has 8 GPUs free but is not allowed it.
    let pools = pool_node("ga", 8, "a") + &pool_node("gb", 4, "b") + &pool_node("gc", 8, "c");
    let text = format!(
        "{pools}cluster c {{\n  node ga x 1\n  node gb x 1\n  node gc x 1\n}}\nworkload w {{\n  placement_group g strategy PACK {{\n    bundle {{ GPU: 8 }} label_selector {{ \"pool\": \"b\" }}\n    bundle {{ GPU: 4 }} label_selector {{ \"pool\": \"a\" }}\n  }}\n}}\n"
    );
    let out = explain_text("pack_selectors.orr", &text, "w.g");
    assert!(
        out.contains("bundle 1 fits no node's totals among those its label selector allows"),
        "{out}"
    );
    let n0 = node_line(&out, "n0");
    assert!(
        n0.contains("fits now (its label selectors let only bundle 2 onto it)"),
        "{out}"
    );
    assert!(n0.contains("  -  "), "no score for bundle 1 on n0: {out}");
    assert!(
        node_line(&out, "n1").contains(
            "infeasible (could never hold the request) (its label selectors let only bundle 1 onto it)"
        ),
        "{out}"
    );
    assert!(
        node_line(&out, "n2").contains(
            "label mismatch: no bundle's label selector passes it (bundle 1: pool = b; bundle 2: pool = a)"
        ),
        "{out}"
    );
    assert!(out.contains("score[1]: bundle 1 {GPU: 8}"), "{out}");
    assert!(out.contains("score[2]: bundle 2 {GPU: 4}"), "{out}");
}

#[test]
fn gpu_avoidance_says_what_kept_it_off_the_nodes_without_gpus() {
    // The node without GPUs is excluded by the task's label selector: explain says that, not
    // that it had no room.
    let pools = pool_node("cpu", 0, "a") + &pool_node("gpu", 8, "b");
    let cluster = "cluster c {\n  node cpu x 1\n  node gpu x 1\n}\n";
    let text = format!(
        "{pools}{cluster}workload w {{\n  tasks t x 1 {{\n    resources {{ CPU: 1 }}\n    duration 1 s\n    label_selector {{ \"pool\": \"b\" }}\n  }}\n}}\n"
    );
    let out = explain_text("avoid_label.orr", &text, "w.t");
    assert!(
        out.contains("no node without GPUs can take it now (of the 1 alive without GPUs: all excluded by its label selector), so every node was considered"),
        "{out}"
    );
    assert!(!out.contains("had room"), "{out}");
    // Busy: a long task holds the node without GPUs.
    let text = format!(
        "{pools}{cluster}workload w {{\n  tasks f x 1 {{\n    resources {{ CPU: 16 }}\n    duration 100 s\n    label_selector {{ \"pool\": \"a\" }}\n  }}\n  tasks t x 1 {{\n    resources {{ CPU: 1 }}\n    duration 1 s\n  }}\n}}\n"
    );
    let out = explain_text("avoid_busy.orr", &text, "w.t");
    assert!(
        out.contains("(of the 1 alive without GPUs: all have no room now"),
        "{out}"
    );
    assert!(out.contains("outcome   placed on n1"), "{out}");
}

#[test]
fn explain_says_which_fallback_placed_a_task_and_why_the_earlier_did_not() {
    // n0 (pool a) is busy; the fallback's n1 (pool b) places the task.
    let pools = pool_node("ca", 0, "a") + &pool_node("cb", 0, "b");
    let text = format!(
        "{pools}cluster c {{\n  node ca x 1\n  node cb x 1\n}}\nworkload w {{\n  tasks f x 1 {{\n    resources {{ CPU: 16 }}\n    duration 100 s\n    label_selector {{ \"pool\": \"a\" }}\n  }}\n  tasks t x 1 {{\n    resources {{ CPU: 4 }}\n    duration 1 s\n    label_selector {{ \"pool\": \"a\" }}\n    fallback label_selector {{ \"pool\": \"b\" }}\n  }}\n}}\n"
    );
    let out = explain_text("fallback.orr", &text, "w.t");
    for want in [
        "outcome   placed on n1",
        "fallback strategy (Ray's fallback_strategy): the label selectors are tried in order, each in place of the one before, and the first with a node that has room now wins: its own label selector {pool = a}, then fallback 1 {pool = b}",
        "its own label selector: the nodes it passes could hold the request but none has room now (the policy's pick, n0, is busy), so the next option is tried",
        "fallback 1 places it: n1 has room now",
    ] {
        assert!(out.contains(want), "want {want:?} in\n{out}");
    }
    assert!(
        node_line(&out, "n0").contains(
            "label mismatch: pool = b (fallback 1's label selector) (its own label selector passes it, but there it is busy (could hold it, not now))"
        ),
        "{out}"
    );
    assert!(
        node_line(&out, "n1").contains("fits now (judged for fallback 1)"),
        "{out}"
    );
}
