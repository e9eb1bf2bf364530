//! Ray's `fallback_strategy` for tasks and actors (issue 41, item 3): `fallback label_selector
//! MAP`, one per option, in order. Each rule of ray-project/ray pull request #56369
//! (`GetBestSchedulableNode`: the selectors in order, each replacing the one before, the first
//! with an available node wins, otherwise the lease waits for the first option with a feasible
//! node, infeasible only when no option has one) worked by hand; `check` over every option; the
//! statement's located errors; determinism.

use orrery::placement::ClusterState;
use orrery::sim::{SimConfig, simulate};
use std::process::{Command, Output};

/// A node type `NAME` with `cores` cores and labels `pool: POOL`.
fn node(name: &str, cores: u32, pool: &str) -> String {
    format!(
        "node {name} {{\n  cpu sockets 1, cores {cores}\n  memory 64 GiB\n  labels {{ \"pool\": \"{pool}\" }}\n}}\n"
    )
}

fn spec(src: &str) -> orrery::scenario::Spec {
    let l = orrery::load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

/// Every allocation's start: (seconds, node name), in the order the run made them.
fn starts(src: &str) -> (Vec<(f64, String)>, orrery::sim::RunResult) {
    let s = spec(src);
    let r = simulate(
        &s,
        &SimConfig {
            seed: 1,
            record: true,
            ..Default::default()
        },
    );
    let st = ClusterState::from_spec(&s);
    let v = r
        .trace
        .iter()
        .filter(|e| e.delta == 1)
        .map(|e| (e.time as f64 / 1e9, st.nodes[e.node].name().to_string()))
        .collect();
    (v, r)
}

fn write(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("orrery-fallback-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn orrery(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

/// Workload `w` with `tasks t x N` asking 4 CPUs for 10 s, `lines` in its block.
fn tasks(n: u32, lines: &str) -> String {
    format!(
        "workload w {{\n  tasks t x {n} {{\n    resources {{ CPU: 4 }}\n    duration 10 s\n{lines}  }}\n}}\n"
    )
}

#[test]
fn a_fallback_is_taken_when_the_nodes_before_it_are_only_busy() {
    // a0 (pool a) and b0 (pool b) each hold one task. Three tasks: the first on a0, the second
    // finds a0 busy and falls back to b0, the third waits; makespan 20 s. Without the fallback
    // every task waits for a0: 30 s.
    let base = node("ca", 4, "a")
        + &node("cb", 4, "b")
        + "cluster c {\n  node ca x 1 name a\n  node cb x 1 name b\n}\n";
    let sel = "    label_selector { \"pool\": \"a\" }\n";
    let fb = "    fallback label_selector { \"pool\": \"b\" }\n";
    let (s, r) = starts(&(base.clone() + &tasks(3, &format!("{sel}{fb}"))));
    assert_eq!(s[0], (0.0, "a0".into()));
    assert_eq!(s[1], (0.0, "b0".into()));
    assert_eq!(s[2].0, 10.0);
    assert_eq!(r.metrics.makespan, 20.0);
    let (s, r) = starts(&(base + &tasks(3, sel)));
    assert!(s.iter().all(|(_, n)| n == "a0"), "{s:?}");
    assert_eq!(r.metrics.makespan, 30.0);
}

#[test]
fn a_fallback_is_taken_when_the_nodes_before_it_could_never_hold_it() {
    // a0 has 2 cores: never 4. The fallback's b0 takes every task, one after another; without
    // the fallback the group can never be placed, and `check` says so.
    let base = node("ca", 2, "a")
        + &node("cb", 4, "b")
        + "cluster c {\n  node ca x 1 name a\n  node cb x 1 name b\n}\n";
    let sel = "    label_selector { \"pool\": \"a\" }\n";
    let fb = "    fallback label_selector { \"pool\": \"b\" }\n";
    let (s, _) = starts(&(base.clone() + &tasks(2, &format!("{sel}{fb}"))));
    assert_eq!(s, [(0.0, "b0".to_string()), (10.0, "b0".to_string())]);
    let f = write("never.orr", &(base + &tasks(2, sel)));
    let o = orrery(&["check", &f]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("can never be placed"));
}

#[test]
fn a_fallback_selector_replaces_the_one_before_it_is_not_merged() {
    // x0 (gen h100, zone z0) is too small; y0 (gen a100, zone z1) holds it. The fallback asks
    // only zone z1: merged with the own selector (gen h100 and zone z1) no node would pass.
    let src = "node x {\n  cpu sockets 1, cores 2\n  memory 64 GiB\n  labels { \"gen\": \"h100\", \"zone\": \"z0\" }\n}\nnode y {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  labels { \"gen\": \"a100\", \"zone\": \"z1\" }\n}\ncluster c {\n  node x x 1 name x\n  node y x 1 name y\n}\n".to_string()
        + &tasks(
            1,
            "    label_selector { \"gen\": \"h100\" }\n    fallback label_selector { \"zone\": \"z1\" }\n",
        );
    let (s, _) = starts(&src);
    assert_eq!(s, [(0.0, "y0".to_string())]);
}

#[test]
fn options_are_tried_in_the_order_written_and_the_first_with_room_wins() {
    let base = node("ca", 4, "a")
        + &node("cb", 4, "b")
        + &node("cc", 4, "c")
        + "cluster c {\n  node ca x 1 name a\n  node cb x 1 name b\n  node cc x 1 name c\n}\n";
    let lines = |first: &str, second: &str| {
        format!(
            "    label_selector {{ \"pool\": \"a\" }}\n    fallback label_selector {{ \"pool\": \"{first}\" }}\n    fallback label_selector {{ \"pool\": \"{second}\" }}\n"
        )
    };
    let order = |src: &str| -> Vec<String> { starts(src).0.into_iter().map(|x| x.1).collect() };
    assert_eq!(
        order(&(base.clone() + &tasks(3, &lines("b", "c")))),
        ["a0", "b0", "c0"]
    );
    assert_eq!(
        order(&(base + &tasks(3, &lines("c", "b")))),
        ["a0", "c0", "b0"]
    );
}

#[test]
fn with_no_option_free_it_waits_for_the_first_feasible_option_and_starts_on_the_first_freed_node() {
    // a0 (pool a) can never hold 4 CPUs; b0 is busy for 100 s, c0 for 50 s. The task waits
    // for fallback 1 (b0: the first option with a node that could hold it), and starts on c0
    // at 50 s, the first node any option passes to free up.
    let base = node("ca", 2, "a")
        + &node("cb", 4, "b")
        + &node("cc", 4, "c")
        + "cluster c {\n  node ca x 1 name a\n  node cb x 1 name b\n  node cc x 1 name c\n}\n";
    let src = base
        + "workload w {\n  tasks fb x 1 {\n    resources { CPU: 4 }\n    duration 100 s\n    label_selector { \"pool\": \"b\" }\n  }\n  tasks fc x 1 {\n    resources { CPU: 4 }\n    duration 50 s\n    label_selector { \"pool\": \"c\" }\n  }\n  tasks t x 1 {\n    resources { CPU: 4 }\n    duration 10 s\n    label_selector { \"pool\": \"a\" }\n    fallback label_selector { \"pool\": \"b\" }\n    fallback label_selector { \"pool\": \"c\" }\n  }\n}\n";
    let (s, r) = starts(&src);
    assert_eq!(s[2], (50.0, "c0".to_string()), "{s:?}");
    assert_eq!(r.metrics.makespan, 100.0);
    let f = write("waits.orr", &src);
    let o = orrery(&["explain", &f, "w.t"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    for want in [
        "outcome   queued at b0",
        "it waits for fallback 1, the first option with a node that could hold it",
        "its own label selector: no alive node it passes could ever hold the request",
        "fallback 1: the nodes it passes could hold the request but none has room now",
        "fallback 2: the nodes it passes could hold the request but none has room now",
        "no option has a node with room now: the lease waits for the highest-priority option with a node that could hold it, fallback 1",
    ] {
        assert!(out.contains(want), "want {want:?} in\n{out}");
    }
}

#[test]
fn infeasible_only_when_no_option_can_ever_hold_it_and_check_says_why_for_each() {
    let base = node("ca", 2, "a")
        + &node("cb", 2, "b")
        + "cluster c {\n  node ca x 1 name a\n  node cb x 1 name b\n}\n";
    let lines = "    label_selector { \"pool\": \"a\" }\n    fallback label_selector { \"pool\": \"b\" }\n    fallback label_selector { \"pool\": \"z\" }\n";
    let src = base + &tasks(1, lines);
    let f = write("infeasible.orr", &src);
    let o = orrery(&["check", &f]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for want in [
        "task group `w.t` can never be placed on the declared cluster: it asks {CPU: 4}; the most one eligible node offers is CPU 2 (ca)",
        "nor can any of its 2 fallback options (fallback 1: it asks {CPU: 4}; the most one eligible node offers is CPU 2 (cb)",
        "fallback 2: no node matches its label selector {pool = z})",
    ] {
        assert!(err.contains(want), "want {want:?} in\n{err}");
    }
    // Run as Ray does, pending forever: counted infeasible.
    let l = orrery::load_str_with(
        "t.orr",
        &src,
        orrery::scenario::LoadOptions {
            allow_infeasible: true,
        },
    );
    let r = simulate(&l.spec.unwrap(), &SimConfig::default());
    assert_eq!(r.metrics.tasks[0].infeasible, 1);
    // One option that could hold it is enough for `check`.
    let ok = node("ca", 2, "a")
        + &node("cb", 4, "b")
        + "cluster c {\n  node ca x 1 name a\n  node cb x 1 name b\n}\n"
        + &tasks(1, lines);
    let o = orrery(&["check", &write("feasible.orr", &ok)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn actors_fall_back_too() {
    // The catalog's nodes carry `ray.io/accelerator-type`: H100 on dgx_h100, A100 on hgx_a100.
    // Eight H100s are taken by a long task group; the actor falls back to an A100.
    let src = "cluster c {\n  node dgx_h100 x 1 name h\n  node hgx_a100 x 1 name a\n}\nworkload w {\n  tasks hold x 8 {\n    resources { GPU: 1 }\n    duration 1000 s\n    label_selector { \"ray.io/accelerator-type\": \"H100\" }\n  }\n  actor r {\n    resources { GPU: 1 }\n    label_selector { \"ray.io/accelerator-type\": \"H100\" }\n    fallback label_selector { \"ray.io/accelerator-type\": \"A100\" }\n  }\n}\n";
    let (s, r) = starts(src);
    assert_eq!(s.len(), 9);
    assert!(s[..8].iter().all(|(t, n)| *t == 0.0 && n == "h0"), "{s:?}");
    assert_eq!(s[8], (0.0, "a0".to_string()));
    assert_eq!(r.metrics.actors[0].placed, 1);
}

#[test]
fn a_fallback_that_is_never_taken_or_malformed_is_a_located_error() {
    let base = node("ca", 4, "a") + "cluster c {\n  node ca x 1 name a\n}\n";
    // Eight lines of node type and cluster, then the workload, the group's head, `resources`
    // and `duration`: the lines given start on line 13.
    let cases = [
        (
            "    fallback label_selector { \"pool\": \"a\" }\n",
            "t.orr:13:5",
            "`fallback` is never taken: task group `t` has no `label_selector`, so its own option already allows every node",
        ),
        (
            "    label_selector { \"pool\": \"a\" }\n    fallback label_selector { \"pool\": \"a\" }\n",
            "t.orr:14:5",
            "fallback 1 of task group `t` asks the same label selector as its own `label_selector`, so it is never taken",
        ),
        (
            "    label_selector { \"pool\": \"a\" }\n    fallback label_selector { \"pool\": \"b\" }\n    fallback label_selector { \"pool\": \"b\" }\n",
            "t.orr:15:5",
            "fallback 2 of task group `t` asks the same label selector as fallback 1, so it is never taken",
        ),
        (
            "    label_selector { \"pool\": \"a\" }\n    fallback { \"pool\": \"b\" }\n",
            "t.orr:14:",
            "`fallback` needs `label_selector { KEY: VALUE }`",
        ),
        (
            // The placement-group form, a block, is not a task's.
            "    label_selector { \"pool\": \"a\" }\n    fallback {\n      label_selector { \"pool\": \"b\" }\n    }\n",
            "t.orr:14:",
            "`fallback` does not take a block",
        ),
        (
            "    label_selector { \"pool\": \"a\" }\n    fallback label_selector { \"pool\": \"in(b\" }\n",
            "t.orr:14:",
            "is not a label condition",
        ),
    ];
    for (lines, at, want) in cases {
        let src = base.clone() + &tasks(1, lines);
        let l = orrery::load_str("t.orr", &src);
        assert!(l.has_errors(), "{src}");
        let out = l.render(false);
        assert!(out.contains(want), "want {want:?} in\n{out}");
        assert!(out.contains(at), "want {at} in\n{out}");
    }
    // Actors alike.
    let src = base
        + "workload w {\n  actor r {\n    fallback label_selector { \"pool\": \"a\" }\n  }\n}\n";
    let out = orrery::load_str("t.orr", &src).render(false);
    assert!(
        out.contains("`fallback` is never taken: actor `r` has no `label_selector`"),
        "{out}"
    );
}

#[test]
fn runs_with_fallbacks_are_deterministic() {
    // Hybrid top-k draws under each option: the same seed gives the same bytes.
    let mut src = String::new();
    for (i, p) in ["a", "b", "c"].iter().enumerate() {
        src += &node(&format!("c{i}"), 8, p);
    }
    src += "cluster c {\n  node c0 x 6\n  node c1 x 6\n  node c2 x 6\n}\n";
    src += &tasks(
        60,
        "    label_selector { \"pool\": \"a\" }\n    fallback label_selector { \"pool\": \"!a\" }\n",
    );
    let f = write("det.orr", &src);
    let dir = std::env::temp_dir().join(format!("orrery-fallback-det-{}", std::process::id()));
    let mut runs = Vec::new();
    for k in 0..2 {
        let out = dir.join(k.to_string());
        let o = orrery(&[
            "run",
            &f,
            "--seed",
            "7",
            "--no-plots",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        runs.push(std::fs::read(out.join("tasks.csv")).unwrap());
    }
    assert_eq!(runs[0], runs[1]);
    let (s, _) = starts(&src);
    // The six pool-a nodes n0-n5 (two tasks each) fill first, then the fallback's twelve,
    // then the rest wait.
    let id = |n: &str| n[1..].parse::<usize>().unwrap();
    assert!(s[..12].iter().all(|(t, n)| *t == 0.0 && id(n) < 6), "{s:?}");
    assert!(
        s[12..36].iter().all(|(t, n)| *t == 0.0 && id(n) >= 6),
        "{s:?}"
    );
    assert!(s[36..].iter().all(|(t, _)| *t >= 10.0), "{s:?}");
}
