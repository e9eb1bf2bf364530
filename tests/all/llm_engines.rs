//! Serving engines (issue 39, item 1): `engine vllm|trtllm|sglang`, their defaults, what an
//! iteration pays beside its kernels, their own all-reduce kernels and `precision D kv K`,
//! against closed forms from the model library, never from the simulation under test.

use orrery::compute::roofline;
use orrery::load_str;
use orrery::model::engines::{HOST_GAP_S, Kind, custom_allreduce_secs};
use orrery::model::serving::{BatchShape, iteration_phases};
use orrery::scenario::Spec;
use orrery::scenario::serving::Reserve;
use orrery::sim::{RunResult, SimConfig, simulate};
use std::collections::BTreeMap;

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn scenario(node: &str, body: &str) -> String {
    format!(
        "cluster c {{\n  node {node} x 1\n  fabric single_switch\n}}\n\n\
         workload w {{\n  service chat {{\n    model llama3_8b\n{body}  }}\n}}\n"
    )
}

fn run(s: &Spec, trace: Vec<f64>) -> RunResult {
    let cfg = SimConfig {
        horizon: Some(600 * 1_000_000_000),
        traces: BTreeMap::from([("a.csv".to_string(), trace.into())]),
        ..SimConfig::default()
    };
    let r = simulate(s, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    r
}

#[test]
fn each_engine_brings_its_defaults_and_words_override_them() {
    let e = |line: &str| {
        let s = spec(&scenario(
            "dgx_h100",
            &format!(
                "    resources {{ GPU: 1 }}\n    arrival poisson 1 /s\n    prompt tokens fixed 8\n    output tokens fixed 8\n    {line}\n"
            ),
        ));
        s.workloads[0].services[0].llm.as_ref().unwrap().engine
    };
    let v = e("engine vllm");
    assert_eq!(
        (v.kind, v.max_seqs, v.kv_block, v.chunked_prefill),
        (Kind::Vllm, 256, 16, true)
    );
    let t = e("engine trtllm");
    assert_eq!(
        (t.kind, t.max_seqs, t.kv_block, t.chunked_prefill),
        (Kind::Trtllm, 2048, 32, false)
    );
    let g = e("engine sglang max_seqs 700 graphs off");
    assert_eq!(
        (g.kind, g.max_seqs, g.kv_block, g.graphs),
        (Kind::Sglang, 700, 1, false)
    );
    // SGLang runs prefill and decode batches apart, admits by look-ahead, and keeps a share
    // of memory that shrinks with the devices of a replica; vLLM and TensorRT-LLM mix.
    assert_eq!((g.mixed, g.reserve), (false, Reserve::Lookahead));
    assert!(v.mixed && t.mixed);
    assert_eq!(
        (v.memory_fraction, t.memory_fraction, g.memory_fraction),
        (0.9, 0.9, 0.88)
    );
    let g = e("engine sglang mixed on reserve off memory_fraction 0.7");
    assert_eq!(
        (g.mixed, g.reserve, g.memory_fraction),
        (true, Reserve::Off, 0.7)
    );
    let tp = |n: u32, line: &str| {
        let s = spec(&scenario(
            "dgx_h100",
            &format!(
                "    parallel tp {n}
    resources {{ GPU: {n} }}
    arrival poisson 1 /s
    prompt tokens fixed 8
    output tokens fixed 8
    {line}
"
            ),
        ));
        s.workloads[0].services[0]
            .llm
            .as_ref()
            .unwrap()
            .engine
            .memory_fraction
    };
    assert_eq!(
        [2, 4, 8].map(|n| tp(n, "engine sglang")),
        [0.87, 0.85, 0.81]
    );
    assert_eq!(tp(8, "engine sglang memory_fraction 0.9"), 0.9);
    assert_eq!(tp(8, "engine vllm"), 0.9);
    // The largest batch captured as a graph, where the run says.
    assert_eq!(e("engine trtllm graph_batch 8192").graph_batch, Some(8192));
    assert_eq!(e("engine vllm").graph_batch, None);
    // Unchunked, a request must fit the budget whole, output too, since vLLM recomputes a
    // preempted one; TensorRT-LLM never preempts, so only its prompt must.
    let unchunked = |kind: &str| {
        load_str(
            "t.orr",
            &scenario(
                "dgx_h100",
                &format!("    resources {{ GPU: 1 }}\n    arrival poisson 1 /s\n    prompt tokens fixed 2048\n    output tokens fixed 2048\n    engine {kind} token_budget 2048 chunked_prefill off\n"),
            ),
        )
        .has_errors()
    };
    assert!(unchunked("vllm"));
    assert!(!unchunked("trtllm"));
    // `reserve off` is TensorRT-LLM's MAX_UTILIZATION: optimistic, so the whole request again.
    assert!(unchunked("trtllm reserve off"));
    // `reserve prompt` (MAX_UTILIZATION as trtllm-bench runs it) preempts too.
    assert!(unchunked("trtllm reserve prompt"));
    assert_eq!(e("engine trtllm").reserve, Reserve::Request);
    assert_eq!(e("engine trtllm reserve off").reserve, Reserve::Off);
    assert_eq!(e("engine trtllm reserve prompt").reserve, Reserve::Prompt);
    assert_eq!(e("engine vllm").reserve, Reserve::Off);
    assert_eq!(e("engine vllm reserve on").reserve, Reserve::Request);
    // No engine word: vLLM's.
    assert_eq!(e("engine token_budget 4096").kind, Kind::Vllm);
    // A word that is no engine is an error at its place.
    let l = load_str(
        "t.orr",
        &scenario(
            "dgx_h100",
            "    resources { GPU: 1 }\n    arrival poisson 1 /s\n    prompt tokens fixed 8\n    output tokens fixed 8\n    engine tensorrt\n",
        ),
    );
    assert!(l.has_errors());
    let text = l.render(false);
    assert!(
        text.contains("tensorrt") && text.contains("t.orr:13:"),
        "{text}"
    );
    // A graph size of 0, and `kv` without its dtype or with an unknown one, are errors at
    // their line.
    for (line, what) in [
        ("engine vllm graph_batch 0", "graph_batch"),
        ("precision fp8 kv", "kv"),
        ("precision fp8 kv fp7", "fp7"),
    ] {
        let l = load_str(
            "t.orr",
            &scenario(
                "dgx_h100",
                &format!(
                    "    resources {{ GPU: 1 }}\n    arrival poisson 1 /s\n    prompt tokens fixed 8\n    output tokens fixed 8\n    {line}\n"
                ),
            ),
        );
        assert!(l.has_errors(), "{line}");
        let text = l.render(false);
        assert!(text.contains("t.orr:13:"), "{line}: {text}");
        assert!(text.contains(what), "{line}: {text}");
    }
}

#[test]
fn the_kv_cache_has_its_own_dtype() {
    let llm = |p: &str| {
        let s = spec(&scenario(
            "dgx_h100",
            &format!(
                "    resources {{ GPU: 1 }}\n    arrival poisson 1 /s\n    precision {p}\n    prompt tokens fixed 8\n    output tokens fixed 8\n"
            ),
        ));
        s.workloads[0].services[0].llm.clone().unwrap()
    };
    assert_eq!(llm("fp8").kv_dtype, "fp8");
    // NVFP4 weights keep an FP8 cache; `kv` says otherwise.
    assert_eq!(llm("fp4").kv_dtype, "fp8");
    assert_eq!(llm("fp8 kv bf16").kv_dtype, "bf16");
    let (f8, f16) = (llm("fp8").footprint(), llm("fp8 kv bf16").footprint());
    assert_eq!(f16.kv_token_bytes, 2.0 * f8.kv_token_bytes);
    assert_eq!(f16.weights_bytes, f8.weights_bytes);
    // 2 × 32 layers × 8 KV heads × 128 × 1 byte under fp4 weights (an fp8 cache).
    assert_eq!(llm("fp4").footprint().kv_token_bytes, 65_536.0);
}

/// Seconds of one iteration of `b` of the service in `s`, as the clock keeps them.
fn iter_secs(s: &Spec, acc: &str, b: &BatchShape) -> f64 {
    let llm = s.workloads[0].services[0].llm.as_ref().unwrap();
    let r = roofline(s, acc, "bf16").unwrap();
    let p = iteration_phases(&llm.model, llm.tp, &llm.footprint(), b);
    (orrery::compute::iteration_secs(&r, &r, &llm.engine, llm.tp, &p, b, true) * 1e9).round() / 1e9
}

#[test]
fn a_decode_iteration_is_two_rooflines_a_graph_and_the_host_gap() {
    // One request of a 1-token prompt and 2 output tokens: its first iteration (1 token,
    // a decode-shaped batch) replays a graph; with `graphs off` it launches every kernel.
    for graphs in ["on", "off"] {
        let s = spec(&scenario(
            "dgx_h100",
            &format!(
                "    resources {{ GPU: 1 }}\n    arrival trace \"a.csv\"\n    prompt tokens fixed 1\n    output tokens fixed 2\n    engine vllm graphs {graphs}\n"
            ),
        ));
        let r = run(&s, vec![0.0]);
        let m = &r.metrics.llm_services[0];
        let llm = s.workloads[0].services[0].llm.as_ref().unwrap();
        let roof = roofline(&s, "H100_SXM", "bf16").unwrap();
        let f = llm.footprint();
        let mut b = BatchShape::default();
        b.add(1, 0, true);
        // Memory-bound all: weights, the one token's KV written, its activations through 32
        // layers; 291 kernels, each L inside a graph and 2L launched from the host.
        let a = f.act_token_bytes;
        let (ag, ae, aa) = (a.gemm, a.elementwise, a.attention);
        let launches = if graphs == "on" { 1.0 } else { 2.0 } * (9.0 * 32.0 + 3.0);
        let closed = (f.weights_bytes + f.kv_token_bytes + (ag + ae + aa) * 32.0)
            / roof.memory_rate()
            + launches * roof.launch_overhead
            + HOST_GAP_S;
        assert!(
            (iter_secs(&s, "H100_SXM", &b) - closed).abs() < 1e-9,
            "{closed}"
        );
        assert!((m.ttft.mean - iter_secs(&s, "H100_SXM", &b)).abs() < 1e-9);
    }
}

#[test]
fn tensor_parallel_all_reduces_run_the_engines_kernel_on_hopper_nvlink() {
    for (kind, node, acc) in [
        ("vllm", "dgx_h100", "H100_SXM"),
        ("sglang", "dgx_h100", "H100_SXM"),
        ("vllm", "hgx_a100", "A100_80GB"),
    ] {
        let s = spec(&scenario(
            node,
            &format!(
                "    parallel tp 2\n    resources {{ GPU: 2 }}\n    arrival trace \"a.csv\"\n    prompt tokens fixed 1\n    output tokens fixed 2\n    engine {kind}\n"
            ),
        ));
        let r = run(&s, vec![0.0]);
        let m = &r.metrics.llm_services[0];
        let mut b = BatchShape::default();
        b.add(1, 0, true);
        let own = r
            .network_models
            .iter()
            .any(|n| n.text.contains("own one-node kernel"));
        if node == "dgx_h100" {
            // 2 × 32 all-reduces of 1 token × 4096 × 2 bytes (8 KiB): the measured figure.
            let k = Kind::from_word(kind).unwrap();
            let ar = custom_allreduce_secs(k, 2, 8192.0).unwrap();
            let want = iter_secs(&s, acc, &b) + ((64.0 * ar) * 1e9).round() / 1e9;
            assert!(own);
            assert!(
                (m.ttft.mean - want).abs() < 2e-9,
                "{kind}: {} vs {want}",
                m.ttft.mean
            );
        } else {
            // No figure for A100: NCCL's, on the network, slower than nothing.
            assert!(!own);
            assert!(m.ttft.mean > iter_secs(&s, acc, &b));
        }
    }
}

#[test]
fn tensorrt_llm_reserves_whole_requests_and_never_preempts() {
    // 400 requests of 1000 + 3000 tokens at once on one H100 (bf16 Llama-3 8B): vLLM's
    // admission runs out of blocks and preempts; TensorRT-LLM's reserves every admitted
    // request's blocks and never does.
    let pre = |kind: &str| {
        let s = spec(&scenario(
            "dgx_h100",
            &format!(
                "    resources {{ GPU: 1 }}\n    arrival offline 400\n    prompt tokens fixed 1000\n    output tokens fixed 3000\n    engine {kind} max_seqs 400 chunked_prefill on\n"
            ),
        ));
        let r = run(&s, Vec::new());
        let m = &r.metrics.llm_services[0];
        assert_eq!(m.finished, 400);
        m.preemptions
    };
    assert!(pre("vllm") > 0);
    assert_eq!(pre("trtllm"), 0);
    // SGLang admits a request only when the pool lasts until the running ones finish.
    assert_eq!(pre("sglang"), 0);
    assert!(pre("trtllm reserve off") > 0);
    // MAX_UTILIZATION readmits a paused request only when its whole context fits, so it is
    // not paused again chunk after chunk as under `reserve off`.
    // (Chunks of 512 tokens: a 1000-token prompt takes two.)
    let (off, prompt) = (
        pre("trtllm reserve off token_budget 512"),
        pre("trtllm reserve prompt token_budget 512"),
    );
    assert!(prompt > 0 && prompt < off, "prompt {prompt}, off {off}");
}
