//! Every JSON output carries `schema_version` at its top and a unit in every quantity key
//! (README "JSON outputs"): each number in run.json, summary.json, a shard, compare.json,
//! drill.json, explain, transports, check and catalog is under a key that ends in a unit
//! suffix, names a dimensionless ratio, or is an explicit count or id. A new key without a
//! unit fails here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn orrery(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-json-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Unit words a key (its last dotted part) may be or end in after `_`: seconds, bytes, rates
/// per second / hour / step, dollars, watts, kWh, device-hours, tokens.
const UNITS: &[&str] = &[
    "s",
    "tokens",
    "bytes",
    "per_s",
    "per_h",
    "per_step",
    "usd",
    "w",
    "kwh",
    "device_hours",
    // A time-averaged number of requests (a queue's mean length).
    "requests",
];

/// Dimensionless ratios, named as the CSVs name them (`busy_fraction`, `goodput`,
/// `peak_utilization`, `slo_p99_attainment`, `speedup`, explain's 0–1 `score`).
const RATIOS: &[&str] = &[
    "fraction",
    "utilization",
    "availability",
    "attainment",
    "goodput",
    "speedup",
    "score",
    "mfu",
];

/// Unitless counts and ids: versions, seeds, indices and counts of things.
const COUNTS: &[&str] = &[
    "schema_version",
    "seed",
    "seeds",
    "run",
    "runs",
    "cell",
    "shard",
    "shards",
    "n",
    "count",
    "events",
    "submitted",
    "completed",
    "infeasible",
    "bundles",
    "attempts",
    "racks",
    "racks_at_creation",
    "nodes",
    "devices",
    "steps_done",
    "restarts",
    "replicas_placed",
    "arrived",
    "served",
    "served_within_slo",
    "placed",
    "calls_done",
    "calls_failed",
    "tensors",
    "links",
    "spilled_objects",
    "node_failures",
    "tasks_retried",
    "tasks_failed",
    "actors_restarted",
    "actors_lost",
    "replicas_restarted",
    "requests_lost",
    "transfers_unavailable",
    "objects_rebuilt",
    "objects_lost",
    "bundles_rescheduled",
    "option_index",
    "max_devices",
    "fetches",
    "waited",
    "job_stops",
    "chunks",
    "staging_copies",
    "node",
    "device",
    "cores",
    "threads",
    "sockets",
    "numa",
    "lanes",
    "generation",
    "pcie_generation",
    "switch",
    "parent",
    "dims",
    "chips",
    "hosts",
    "cpu_cores",
    "cpu_threads",
    // Logical CPUs (Ray's `CPU` resource) of a node or node type.
    "cpus",
    "zones",
    "tenants",
    "workloads",
    "failure_blocks",
    "experiments",
    // A model's shape: counts of layers, heads and experts, and widths in elements.
    "layers",
    "heads",
    "kv_heads",
    "head_dim",
    "hidden",
    "ffn",
    "experts",
    "top_k",
    "expert_ffn",
    // An LLM service's counts: tensor-parallel ranks, KV blocks, requests, preemptions,
    // requests within an SLO or undecided by the window, replicas per pool.
    "tp",
    "kv_blocks",
    "finished",
    "dropped",
    "lost",
    "preemptions",
    "within",
    "undecided",
    "prefill_replicas",
    "decode_replicas",
    "nodes_by_type",
    "devices_by_type",
    "resources",
];

/// Whether a key says what its number is: a unit, a ratio or a count (its last dotted part,
/// so `pretrain.llm.step_time_s` and `tasks.per_s` are read by `step_time_s` and `per_s`).
fn says_unit(key: &str) -> bool {
    let last = key.rsplit('.').next().unwrap_or(key);
    let ends = |w: &&str| last == *w || last.ends_with(&format!("_{w}"));
    COUNTS.contains(&last) || UNITS.iter().any(ends) || RATIOS.iter().any(ends)
}

/// Every numeric leaf whose key, and whose parent's key, both fail [`says_unit`] (a parent
/// carries the unit of maps keyed by name, `peak_flop_per_s.bf16`, and of statistics,
/// `makespan_s.mean`); as `path: value`.
fn unitless(v: &serde_json::Value) -> Vec<String> {
    fn walk(v: &serde_json::Value, keys: &mut Vec<String>, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    keys.push(k.clone());
                    walk(x, keys, out);
                    keys.pop();
                }
            }
            serde_json::Value::Array(xs) => xs.iter().for_each(|x| walk(x, keys, out)),
            serde_json::Value::Number(n) => {
                let mut up = keys.iter().rev();
                let own = up.next().is_some_and(|k| says_unit(k));
                let parent = up.next().is_some_and(|k| says_unit(k));
                if !own && !parent {
                    out.push(format!("{}: {n}", keys.join(".")));
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, &mut Vec::new(), &mut out);
    out.sort();
    out.dedup_by(|a, b| a.split(':').next() == b.split(':').next());
    out
}

fn check(name: &str, text: &str) {
    let v: serde_json::Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
    assert!(
        v["schema_version"].as_u64().is_some_and(|n| n >= 1),
        "{name} has no top-level schema_version"
    );
    let bad = unitless(&v);
    assert!(
        bad.is_empty(),
        "{name}: keys without a unit:\n{}",
        bad.join("\n")
    );
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Training, tasks with inputs moved between nodes and a tenant quota, actors sending tensors,
/// a service with an SLO, a node crash and a two-cell sweep: every section of every output.
const SCENARIO: &str = r#"cluster pod {
  rack r[0..1] {
    node dgx_h100 x 2
  }
  fabric leaf_spine oversubscription 2:1 latency 2 us
}

tenant batch {
  quota { GPU: 2 }
}

workload train {
  placement_group gang strategy STRICT_SPREAD {
    bundle { GPU: 4, CPU: 16 } x 2
  }
  training llm on gang steps 20 {
    compute 100 TFLOP per device bf16
    allreduce 1 GB algo ring
    checkpoint every 10 s size 10 GB
  }
}

workload pipe tenant batch {
  tasks produce x 6 {
    resources { GPU: 1 }
    duration 2 s
    output 64 MiB
  }
  tasks consume x 6 after produce {
    resources { GPU: 1 }
    duration 1 s
    strategy SPREAD
  }
}

workload calls {
  actor a x 2 {
    resources { CPU: 1 }
    calls 4
    call_duration 1 s
    tensor 1 MiB to b
  }
  actor b {
    resources { CPU: 1 }
    calls 1
    call_duration 1 s
  }
}

workload chat {
  service chat {
    replicas 2
    resources { GPU: 1, CPU: 4 }
    arrival poisson 20 /s
    service_time 50 ms exponential
    slo p99 500 ms
  }
  service llm {
    model llama3_8b
    resources { GPU: 1 }
    arrival poisson 5 /s
    prompt tokens uniform 64..512
    output tokens fixed 16
    disaggregate prefill 1 decode 1
    slo ttft p99 1 s
  }
}

failures crash {
  at 20 s kill node r0.n1
}

experiment e {
  seeds 1..2
  sweep cluster.pod.fabric.oversubscription in [1:1, 2:1]
  horizon 1 min
  plot timeline, utilization
}
"#;

#[test]
fn every_number_in_every_json_output_says_its_unit() {
    let d = tmp("all");
    let f = d.join("all.orr");
    std::fs::write(&f, SCENARIO).unwrap();
    let copy = d.join("again.orr");
    std::fs::write(&copy, SCENARIO).unwrap();
    let (f, copy) = (f.to_str().unwrap(), copy.to_str().unwrap());
    let out = |name: &str| d.join(name).to_str().unwrap().to_string();

    ok(orrery(&["run", f, "--no-plots", "--out", &out("run")]));
    let run = read(&d.join("run"), "run.json");
    check("run.json", &run);
    // The scenario reaches every section, so the walk above saw their keys.
    let v: serde_json::Value = serde_json::from_str(&run).unwrap();
    let m = &v["metrics"];
    for section in [
        "tasks",
        "training",
        "services",
        "actors",
        "placement_groups",
        "llm_services",
    ] {
        assert!(
            m[section].as_array().is_some_and(|a| !a.is_empty()),
            "{section}"
        );
    }
    assert!(m["services"][0]["slo"][0]["target_s"].is_number(), "{run}");
    assert!(m["failures"]["node_failures"].as_u64() > Some(0));
    assert!(m["quota_waits"].as_array().is_some_and(|a| !a.is_empty()));
    assert!(m["fetches"].as_array().is_some_and(|a| !a.is_empty()));

    check("check --json", &ok(orrery(&["check", f, "--json"])));
    check("catalog --json", &ok(orrery(&["catalog", "--json"])));
    for item in ["train.gang", "pipe.consume", "chat.chat"] {
        let e = ok(orrery(&["explain", f, item, "--json"]));
        check(&format!("explain {item}"), &e);
    }
    let tr = ok(orrery(&[
        "transports",
        f,
        "--json",
        "--workload",
        "--no-plots",
        "--out",
        &out("tr"),
    ]));
    check("transports --json --workload", &tr);
    let v: serde_json::Value = serde_json::from_str(&tr).unwrap();
    assert!(
        v["workload"]["rows"][0]["run_mean_s"]["pipe.consume"].is_number(),
        "{tr}"
    );
    check("transports.json", &read(&d.join("tr"), "transports.json"));

    ok(orrery(&["sweep", f, "--no-plots", "--out", &out("sweep")]));
    let summary = read(&d.join("sweep"), "summary.json");
    check("summary.json", &summary);
    let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
    let cell = &v["cells"][1];
    assert_eq!(
        cell["params"]["cluster.pod.fabric.oversubscription"], "2:1",
        "{cell}"
    );
    assert_eq!(cell["runs"], 2);
    assert_eq!(cell["metrics"]["makespan_s"]["n"], 2, "{cell}");
    ok(orrery(&[
        "sweep",
        f,
        "--shard",
        "0/2",
        "--out",
        &out("shard"),
    ]));
    // Shard 0: with the first run's plot data for the timeline and utilization plots.
    check("shard", &read(&d.join("shard"), "shard-0-of-2.json"));

    ok(orrery(&[
        "compare",
        f,
        copy,
        "--seeds",
        "1..2",
        "--no-plots",
        "--out",
        &out("cmp"),
    ]));
    check("compare.json", &read(&d.join("cmp"), "compare.json"));

    ok(orrery(&[
        "drill",
        f,
        "--seeds",
        "1..2",
        "--no-plots",
        "--out",
        &out("drill"),
    ]));
    check("drill.json", &read(&d.join("drill"), "drill.json"));
}

#[test]
fn a_key_without_a_unit_is_caught() {
    let v = serde_json::json!({
        "schema_version": 1,
        "makespan_s": 3.0,
        "latency": { "mean": 0.2, "p99_s": 0.4 },
        "peak_flop_per_s": { "bf16": 1e15 },
        "cost_usd": { "mean": 1.0 },
        "rows": [{ "throughput": 5.0, "served": 3 }],
    });
    assert_eq!(unitless(&v), ["latency.mean: 0.2", "rows.throughput: 5.0"]);
}
