//! LLM services whose requests' prompt and output tokens come from their arrival trace
//! (`prompt tokens trace max N`, rows `arrival_s,prompt_tokens,output_tokens`): each request
//! gets its own row, checked against runs of one request with fixed tokens.

use orrery::load_str;
use orrery::scenario::Spec;
use orrery::scenario::arrivals::Trace;
use orrery::sim::llm::metrics::LlmServiceMetrics;
use orrery::sim::{SimConfig, simulate};
use std::collections::BTreeMap;
use std::process::{Command, Output};

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn errors(src: &str) -> String {
    let l = load_str("t.orr", src);
    assert!(l.has_errors(), "expected errors");
    l.render(false)
}

/// One DGX H100 node; one tp-1 llama3_8b service `chat` reading `a.csv`, with `tokens`.
fn scenario(tokens: &str) -> String {
    format!(
        "cluster c {{\n  node dgx_h100 x 1\n  fabric single_switch\n}}\n\n\
         workload w {{\n  service chat {{\n    model llama3_8b\n    resources {{ GPU: 1 }}\n\
         \x20   arrival trace \"a.csv\"\n{tokens}  }}\n}}\n"
    )
}

const TRACED: &str = "    prompt tokens trace max 4096\n    output tokens trace max 256\n";

fn run(s: &Spec, trace: Trace) -> LlmServiceMetrics {
    run_for(s, trace, 60.0)
}

fn run_for(s: &Spec, trace: Trace, horizon_s: f64) -> LlmServiceMetrics {
    let cfg = SimConfig {
        horizon: Some((horizon_s * 1e9) as u64),
        traces: BTreeMap::from([("a.csv".to_string(), trace)]),
        ..SimConfig::default()
    };
    let r = simulate(s, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    r.metrics.llm_services[0].clone()
}

/// The e2e latency of one request of `prompt` and `output` tokens alone on the replica.
fn alone(prompt: u32, output: u32) -> f64 {
    let s = spec(&scenario(&format!(
        "    prompt tokens fixed {prompt}\n    output tokens fixed {output}\n"
    )));
    let m = run(&s, vec![0.0].into());
    assert_eq!(m.finished, 1);
    m.e2e.mean
}

#[test]
fn each_request_takes_its_rows_tokens_in_time_order() {
    let rows = [(100, 8), (2000, 64), (1, 1)];
    let singles: Vec<f64> = rows.iter().map(|&(p, o)| alone(p, o)).collect();
    assert!(
        singles[1] > singles[0] && singles[0] > singles[2],
        "{singles:?}"
    );
    let s = spec(&scenario(TRACED));
    // Rows written out of time order: sorted by arrival, each keeps its tokens. Ten seconds
    // apart, each request runs alone, exactly as in its single run. The window ends after
    // the last (1 token) could finish but before a 2000-token one could: all three finish
    // only if the tokens moved with their times.
    let trace = Trace::with_tokens(&[(20.0, 1, 1), (0.0, 100, 8), (10.0, 2000, 64)]);
    let m = run_for(&s, trace, 20.0 + (singles[2] + singles[1]) / 2.0);
    assert_eq!((m.arrived, m.finished), (3, 3));
    assert_eq!(m.output_tokens, 8 + 64 + 1);
    let mean = singles.iter().sum::<f64>() / 3.0;
    assert!((m.e2e.mean - mean).abs() < 1e-9, "{} vs {mean}", m.e2e.mean);
    assert!((m.e2e.max - singles[1]).abs() < 1e-9);
}

#[test]
fn equal_rows_run_exactly_as_the_fixed_distribution() {
    let times: Vec<f64> = (0..40).map(|i| f64::from(i) * 0.05).collect();
    let fixed = spec(&scenario(
        "    prompt tokens fixed 512\n    output tokens fixed 128\n",
    ));
    let a = run(&fixed, times.clone().into());
    let rows: Vec<(f64, u32, u32)> = times.iter().map(|&t| (t, 512, 128)).collect();
    let b = run(&spec(&scenario(TRACED)), Trace::with_tokens(&rows));
    // The same engine, batches and clock: every figure but the planned-for maximum.
    assert_eq!(a.finished, 40);
    assert_eq!((a.ttft, a.tpot, a.e2e), (b.ttft, b.tpot, b.e2e));
    assert_eq!(a.output_tokens, b.output_tokens);
    assert_eq!(a.kv_blocks, b.kv_blocks);
}

#[test]
fn one_column_can_come_from_the_trace_and_the_other_from_a_distribution() {
    let s = spec(&scenario(
        "    prompt tokens trace max 4096\n    output tokens fixed 16\n",
    ));
    let m = run(&s, Trace::with_tokens(&[(0.0, 300, 999), (10.0, 30, 1)]));
    assert_eq!(m.output_tokens, 32, "the output column is not read");
}

#[test]
fn tokens_from_a_trace_need_a_trace_arrival_and_a_max_that_fits() {
    let no_trace = scenario(TRACED).replace("arrival trace \"a.csv\"", "arrival poisson 1 /s");
    let e = errors(&no_trace);
    assert!(
        e.contains("`prompt tokens trace` reads the arrival trace"),
        "{e}"
    );
    assert!(e.contains("t.orr:"), "{e}");
    let e = errors(&scenario(
        "    prompt tokens trace\n    output tokens fixed 1\n",
    ));
    assert!(e.contains("needs `max N"), "{e}");
    // Memory is planned for the stated maximum, as for a distribution's largest draw.
    let e = errors(&scenario(
        "    prompt tokens trace max 1000000\n    output tokens fixed 1\n",
    ));
    assert!(e.contains("KV cache of its longest request"), "{e}");
}

fn orrery(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn the_cli_reads_the_token_columns_and_locates_bad_rows_in_both_files() {
    let dir = std::env::temp_dir().join(format!("orrery-llm-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let orr = dir.join("chat.orr");
    std::fs::write(
        &orr,
        scenario(TRACED) + "experiment e {\n  horizon 30 s\n}\n",
    )
    .unwrap();
    let csv = dir.join("a.csv");
    let path = orr.to_str().unwrap();
    std::fs::write(
        &csv,
        "arrival_s,prompt_tokens,output_tokens\n0,100,8\n1.5,2000,64 # long\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = orrery(&["run", path, "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["metrics"]["llm_services"][0]["output_tokens"], 72);
    // A row over the stated maximum: the CSV's line and column, and the `arrival` line.
    std::fs::write(&csv, "0,100,8\n1,100,300\n").unwrap();
    let o = orrery(&["run", path]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("a.csv:2:3: 300 output tokens, over"), "{err}");
    assert!(err.contains("read by service `w.chat`"), "{err}");
    assert!(err.contains("chat.orr:10:5"), "{err}");
    // Rows without token columns.
    std::fs::write(&csv, "0\n1\n").unwrap();
    let o = orrery(&["run", path]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("a.csv:1:1:"), "{err}");
    assert!(
        err.contains("arrival_s,prompt_tokens,output_tokens"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_replay_scenario_misses_the_ttft_slo_that_uniform_tokens_of_the_same_means_meet() {
    let f = std::path::Path::new("scenarios/llm_trace_replay/replay.orr");
    let l = orrery::load_file(f).unwrap();
    assert!(!l.has_errors(), "{}", l.render(false));
    let s = l.spec.unwrap();
    let text = std::fs::read_to_string(f.with_file_name("conversation.csv")).unwrap();
    let trace = orrery::scenario::arrivals::parse(&text, true).unwrap();
    let n = trace.tokens.len() as f64;
    let mean_prompt = trace.tokens.iter().map(|t| f64::from(t.0)).sum::<f64>() / n;
    let mean_output = trace.tokens.iter().map(|t| f64::from(t.1)).sum::<f64>() / n;
    // The uniform workload's ranges have the trace's means.
    assert!((mean_prompt - 1099.0).abs() < 1.0 && (mean_output - 241.0).abs() < 1.0);
    let cfg = SimConfig {
        seed: 1,
        horizon: Some(150 * orrery::engine::SEC),
        traces: BTreeMap::from([("conversation.csv".to_string(), trace)]),
        ..SimConfig::default()
    };
    let r = simulate(&s, &cfg);
    let by = |w: &str| {
        r.metrics
            .llm_services
            .iter()
            .find(|m| m.workload == w)
            .unwrap()
            .clone()
    };
    let (replay, uniform) = (by("replay"), by("uniform"));
    assert_eq!((replay.finished, uniform.finished), (1437, 1437));
    let tps = replay.output_tokens_per_s / uniform.output_tokens_per_s;
    assert!((tps - 1.0).abs() < 0.05, "{tps}");
    assert!(replay.ttft.p99 > 0.150 && uniform.ttft.p99 < 0.150);
    assert!(replay.ttft.p99 > 2.0 * uniform.ttft.p99);
    let ttft = |m: &LlmServiceMetrics| m.slo.iter().find(|x| x.kind == "ttft").unwrap().met;
    assert!(!ttft(&replay) && ttft(&uniform));
}
