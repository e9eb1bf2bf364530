//! Work that can never be placed on the declared cluster is a located error at `check` and
//! `run` (exit 2) saying what was asked and the most one node offers; `--allow-infeasible`
//! keeps Ray's pending-forever behaviour with one warning; work that exactly fills a node
//! passes.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Node types: `gpu3` (16 cores, 3 H100, labelled serving, a custom `fpga: 1`) and `gpu8`
/// (32 cores, 8 H100).
const NODES: &str = "node gpu3 {
  cpu sockets 1, cores 16
  memory 256 GiB
  device H100_SXM x 3 link none
  labels { \"ray.io/node-group\": \"serving\" }
  resources { fpga: 1 }
}
node gpu8 {
  cpu sockets 1, cores 32
  memory 512 GiB
  device H100_SXM x 8 link switch
}
";

fn cluster(three: u32, eight: u32) -> String {
    let mut s = format!("{NODES}cluster c {{\n");
    if three > 0 {
        s += &format!("  node gpu3 x {three} name a\n");
    }
    if eight > 0 {
        s += &format!("  node gpu8 x {eight} name b\n");
    }
    s + "}\n"
}

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("orrery-infeasible-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn orrery(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `check` fails with exit 2 and one located error containing every `want`, and so does
/// `run`; `check --allow-infeasible` passes with the same text once, as a warning.
fn never(name: &str, text: &str, at: &str, want: &[&str]) {
    let p = write(name, text);
    let f = p.to_str().unwrap();
    let o = orrery(&["check", f]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains(&format!("{name}:{at}: ")),
        "want {name}:{at}:\n{e}"
    );
    assert!(
        e.contains("can never be placed on the declared cluster"),
        "{e}"
    );
    for w in want {
        assert!(e.contains(w), "want `{w}` in\n{e}");
    }
    assert_eq!(e.matches("can never be placed").count(), 1, "{e}");
    let out = std::env::temp_dir().join(format!(
        "orrery-infeasible-out-{}-{name}",
        std::process::id()
    ));
    let o = orrery(&["run", f, "--no-plots", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("{name}:{at}: ")));
    let o = orrery(&["check", "--allow-infeasible", f]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(
        e.contains(&format!("warning: {}", p.display())) || e.contains("warning: "),
        "{e}"
    );
    assert_eq!(
        e.matches("can never be placed").count(),
        1,
        "printed once:\n{e}"
    );
}

#[test]
fn a_task_larger_than_every_node() {
    let s = cluster(1, 2)
        + "workload w {\n  tasks t x 2 {\n    resources { GPU: 16, CPU: 1 }\n    duration 1 s\n  }\n}\n";
    never(
        "task.orr",
        &s,
        "19:5",
        &[
            "task group `w.t`",
            "it asks {CPU: 1, GPU: 16}",
            "GPU 8 (gpu8)",
        ],
    );
}

#[test]
fn resources_that_no_node_has_together() {
    // gpu3 has the fpga, gpu8 the eight GPUs: each fits somewhere, never both on one node.
    let s = cluster(1, 1)
        + "workload w {\n  actor a {\n    resources { GPU: 4, fpga: 1 }\n    calls 1\n    call_duration 1 s\n  }\n}\n";
    never(
        "together.orr",
        &s,
        "19:5",
        &[
            "actor `w.a`",
            "{GPU: 4, fpga: 1}",
            "GPU 8 (gpu8), fpga 1 (gpu3)",
            "no node has all of it together",
        ],
    );
}

#[test]
fn a_service_replica_larger_than_every_node() {
    let s = cluster(1, 1)
        + "workload w {\n  service s {\n    replicas 2\n    resources { CPU: 100 }\n    arrival poisson 1 /s\n    service_time 1 ms\n  }\n}\n";
    never(
        "service.orr",
        &s,
        "20:5",
        &["a replica of service `w.s`", "{CPU: 100}", "CPU 32 (gpu8)"],
    );
}

#[test]
fn a_label_selector_leaves_only_nodes_too_small() {
    // Only gpu3 is labelled serving: 4 GPUs fit gpu8 but the selector leaves gpu3.
    let s = cluster(2, 1)
        + "workload w {\n  tasks t x 1 {\n    resources { GPU: 4 }\n    label_selector { \"ray.io/node-group\": \"serving\" }\n    duration 1 s\n  }\n}\n";
    never("labels.orr", &s, "19:5", &["{GPU: 4}", "GPU 3 (gpu3)"]);
    let s = cluster(2, 1)
        + "workload w {\n  tasks t x 1 {\n    resources { GPU: 1 }\n    label_selector { \"ray.io/node-group\": \"training\" }\n    duration 1 s\n  }\n}\n";
    never(
        "nolabel.orr",
        &s,
        "19:5",
        &["no node matches its label selector {ray.io/node-group = training}"],
    );
}

#[test]
fn a_tenant_allow_list_leaves_only_nodes_too_small() {
    let s = cluster(1, 1)
        + "tenant t {\n  only_nodes { \"ray.io/node-group\": \"serving\" }\n}\nworkload w tenant t {\n  placement_group g strategy PACK {\n    bundle { GPU: 4 }\n  }\n  training j on g steps 1 {\n    compute 1 TFLOP per device bf16\n  }\n}\n";
    never(
        "tenant.orr",
        &s,
        "22:12",
        &[
            "placement group `w.g` (the ranks of training `j`)",
            "its bundle asks {GPU: 4}",
            "GPU 3 (gpu3)",
        ],
    );
}

#[test]
fn hard_node_affinity_to_a_node_too_small() {
    let s = cluster(1, 1)
        + "workload w {\n  tasks t x 1 {\n    resources { GPU: 4 }\n    strategy node_affinity(a0)\n    duration 1 s\n  }\n}\n";
    never(
        "affinity.orr",
        &s,
        "19:5",
        &["node_affinity(a0) leaves only a0", "GPU 3 (gpu3)"],
    );
}

#[test]
fn a_bundle_larger_than_every_node_under_each_strategy() {
    for strategy in ["PACK", "SPREAD", "STRICT_SPREAD", "STRICT_PACK"] {
        let s = cluster(0, 2)
            + &format!(
                "workload w {{\n  placement_group g strategy {strategy} {{\n    bundle {{ GPU: 8 }}\n    bundle {{ GPU: 16 }}\n  }}\n}}\n"
            );
        never(
            &format!("bundle-{strategy}.orr"),
            &s,
            "19:12",
            &["bundle 2 of 2 asks {GPU: 16}", "GPU 8 (gpu8)"],
        );
    }
}

#[test]
fn strict_pack_whose_sum_exceeds_every_node() {
    let s = cluster(1, 2)
        + "workload w {\n  placement_group g strategy STRICT_PACK {\n    bundle { GPU: 8 } x 2\n  }\n}\n";
    never(
        "pack.orr",
        &s,
        "18:3",
        &[
            "STRICT_PACK puts all 2 bundles on one node, together {GPU: 16}",
            "GPU 8 (gpu8)",
        ],
    );
}

#[test]
fn strict_pack_that_fits_the_totals_but_not_the_devices() {
    // Four 0.6-GPU bundles sum to 2.4 <= 3 GPUs, but each device holds one 0.6 only: Ray's
    // raylet cannot commit the fourth, and the group would stay pending forever.
    let s = cluster(1, 0)
        + "workload w {\n  placement_group g strategy STRICT_PACK {\n    bundle { GPU: 0.6 } x 4\n  }\n}\n";
    never(
        "frac.orr",
        &s,
        "17:3",
        &[
            "together {GPU: 2.4}",
            "not its devices one bundle after another",
        ],
    );
}

#[test]
fn strict_spread_with_more_bundles_than_nodes() {
    let s = cluster(0, 8)
        + "workload w {\n  placement_group g strategy STRICT_SPREAD {\n    bundle { GPU: 8 } x 9\n  }\n}\n";
    never(
        "spread.orr",
        &s,
        "17:3",
        &[
            "STRICT_SPREAD needs a different node for each of its 9 bundles, and 8 nodes are eligible",
        ],
    );
}

#[test]
fn allow_infeasible_runs_and_keeps_the_work_pending() {
    let s = cluster(0, 1)
        + "workload w {\n  tasks t x 2 {\n    resources { GPU: 16 }\n    duration 1 s\n  }\n  placement_group g strategy STRICT_SPREAD {\n    bundle { GPU: 1 } x 2\n  }\n  training j on g steps 1 {\n    compute 1 TFLOP per device bf16\n  }\n}\n";
    let p = write("allow.orr", &s);
    let out = std::env::temp_dir().join(format!("orrery-infeasible-allow-{}", std::process::id()));
    let o = orrery(&[
        "run",
        p.to_str().unwrap(),
        "--allow-infeasible",
        "--no-plots",
        "--out",
        out.to_str().unwrap(),
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert_eq!(e.matches("warning: ").count(), 2, "each item once:\n{e}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("infeasible"), "{stdout}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    let text = run.to_string();
    assert!(
        text.contains("\"infeasible\":2"),
        "both tasks infeasible (pending forever): {text}"
    );
    assert!(text.contains("\"state\":\"infeasible\""), "{text}");
}

#[test]
fn work_that_exactly_fills_a_node_passes() {
    // gpu8: 32 cores (32 CPUs) and 8 GPUs; gpu3: 3 GPUs, 1 fpga.
    let s = cluster(2, 2)
        + "workload w {\n  tasks t x 1 {\n    resources { CPU: 32, GPU: 8 }\n    duration 1 s\n  }\n  actor a {\n    resources { GPU: 3, fpga: 1 }\n    calls 1\n    call_duration 1 s\n  }\n  placement_group p strategy STRICT_PACK {\n    bundle { GPU: 0.5 } x 6\n  }\n  placement_group s strategy STRICT_SPREAD {\n    bundle { GPU: 3 } x 4\n  }\n  placement_group q strategy PACK {\n    bundle { GPU: 8 }\n    bundle { GPU: 3, fpga: 1 }\n  }\n}\n";
    let p = write("full.orr", &s);
    let o = orrery(&["check", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("never be placed"), "{}", stderr(&o));
}

#[test]
fn every_shipped_scenario_passes_check() {
    let mut files = Vec::new();
    for e in std::fs::read_dir("scenarios").unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            for f in std::fs::read_dir(&p).unwrap() {
                files.push(f.unwrap().path());
            }
        } else {
            files.push(p);
        }
    }
    files.retain(|p| p.extension().is_some_and(|x| x == "orr"));
    assert!(files.len() >= 8, "{files:?}");
    for f in files {
        let l = orrery::load_file(&f).unwrap();
        assert!(!l.has_errors(), "{}: {}", f.display(), l.render(false));
        assert!(
            !l.render(false).contains("never be placed"),
            "{}: {}",
            f.display(),
            l.render(false)
        );
    }
}

#[test]
fn a_sweep_value_that_makes_work_infeasible_is_reported_at_the_sweep_line() {
    let s = cluster(0, 2)
        + "workload w {\n  placement_group g strategy STRICT_SPREAD {\n    bundle { GPU: 8 } x 2\n  }\n}\nexperiment e {\n  sweep cluster.c.node.x in [2, 1]\n}\n";
    let l = orrery::load_str("sweep.orr", &s);
    let e = l.render(false);
    assert!(l.has_errors(), "{e}");
    assert!(
        e.contains(
            "sweep.orr:22:33: with cluster.c.node.x = 1: placement group `w.g` can never be placed"
        ),
        "{e}"
    );
    assert_eq!(l.errors().count(), 1, "only the value 1:\n{e}");
}

#[test]
fn drill_sweep_and_compare_refuse_it_too_and_explain_says_why() {
    let s = cluster(0, 1)
        + "workload w {\n  placement_group g strategy STRICT_SPREAD {\n    bundle { GPU: 8 } x 2\n  }\n}\nexperiment e {\n  seeds 1..2\n  sweep policy in [ray_default, spread]\n}\n";
    let p = write("others.orr", &s);
    let f = p.to_str().unwrap();
    let out = std::env::temp_dir().join(format!("orrery-infeasible-others-{}", std::process::id()));
    let o = out.to_str().unwrap();
    for args in [
        vec!["drill", f, "--no-plots", "--out", o],
        vec!["sweep", f, "--no-plots", "--out", o],
        vec!["compare", f, f, "--no-plots", "--out", o],
    ] {
        let r = orrery(&args);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", stderr(&r));
        assert!(
            stderr(&r).contains("others.orr:17:3: placement group `w.g` can never be placed"),
            "{}",
            stderr(&r)
        );
        let mut allowed = args.clone();
        allowed.push("--allow-infeasible");
        let r = orrery(&allowed);
        assert_eq!(r.status.code(), Some(0), "{allowed:?}: {}", stderr(&r));
    }
    // explain allows it (one warning) and gives the reason.
    let r = orrery(&["explain", f, "w.g"]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(
        stderr(&r).matches("can never be placed").count(),
        1,
        "{}",
        stderr(&r)
    );
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(text.contains("outcome   infeasible"), "{text}");
    assert!(
        text.contains("why       STRICT_SPREAD needs a different node for each of its 2 bundles, and 1 node is eligible; Ray keeps it pending forever"),
        "{text}"
    );
}
