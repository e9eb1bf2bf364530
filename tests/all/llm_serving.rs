//! LLM services (issue 12, serving): the engine's iterations against closed forms worked
//! out from the model library and the roofline, never from the simulation under test.

use orrery::compute::roofline;
use orrery::load_str;
use orrery::model::serving::{BatchShape, iteration_phases};
use orrery::scenario::Spec;
use orrery::sim::llm::engine::{Engine, Seq};
use orrery::sim::{RunResult, SimConfig, simulate};
use std::collections::BTreeMap;

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

/// One DGX H100 node; one service `chat` with `body`.
fn scenario(body: &str) -> String {
    format!(
        "cluster c {{\n  node dgx_h100 x 1\n  fabric single_switch\n}}\n\n\
         workload w {{\n  service chat {{\n    model llama3_8b\n{body}  }}\n}}\n"
    )
}

fn run(s: &Spec, horizon_s: u64, trace: Option<Vec<f64>>) -> RunResult {
    let mut cfg = SimConfig {
        horizon: Some(horizon_s * 1_000_000_000),
        ..SimConfig::default()
    };
    if let Some(t) = trace {
        cfg.traces = BTreeMap::from([("a.csv".to_string(), t.into())]);
    }
    let r = simulate(s, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    r
}

/// Seconds of one iteration of `shape` on one H100 rank, rounded to the clock's ns.
fn iter_secs(s: &Spec, tp: u32, shape: &BatchShape) -> f64 {
    let llm = s.workloads[0].services[0].llm.as_ref().unwrap();
    let f = llm.footprint();
    let r = roofline(s, "H100_SXM", "bf16").unwrap();
    (orrery::compute::iteration_secs(
        &r,
        &r,
        &llm.engine,
        tp,
        &iteration_phases(&llm.model, tp, &f, shape),
        shape,
        true,
    ) * 1e9)
        .round()
        / 1e9
}

#[test]
fn decode_steady_state_is_memory_bound_and_tpot_is_its_mean_iteration() {
    let (n, out) = (4u64, 64u64);
    let s = spec(&scenario(&format!(
        "    resources {{ GPU: 1 }}\n    arrival trace \"a.csv\"\n    prompt tokens fixed 1\n    output tokens fixed {out}\n"
    )));
    let r = run(&s, 60, Some(vec![0.0; n as usize]));
    let m = &r.metrics.llm_services[0];
    assert_eq!(m.finished, n);
    let llm = s.workloads[0].services[0].llm.as_ref().unwrap();
    let f = llm.footprint();
    let roof = roofline(&s, "H100_SXM", "bf16").unwrap();
    // Iteration k ≥ 2: n decodes over k − 1 cached tokens each; its GEMMs and its attention
    // memory-bound, so its time is (weights + KV read and written + activations) /
    // (bandwidth × ηm), its 291 kernels' launch overhead each (vLLM replays a captured graph
    // for a decode batch) and the engine's host gap.
    let mut decode = 0.0;
    for k in 2..=out {
        let mut b = BatchShape::default();
        for _ in 0..n {
            b.add(1, k - 1, true);
        }
        let p = iteration_phases(&llm.model, 1, &f, &b);
        for w in [p.gemm, p.attention] {
            assert!(w.flop / roof.compute_rate() < w.bytes / roof.memory_rate());
        }
        // Each of the n tokens' activations through 32 layers (GEMMs, elementwise, attention).
        let a = f.act_token_bytes;
        let (ag, ae, aa) = (a.gemm, a.elementwise, a.attention);
        let act = (ag + ae + aa) * 32.0 * n as f64;
        let closed = (f.weights_bytes + f.kv_token_bytes * (n * k) as f64 + act)
            / roof.memory_rate()
            + roof.launch_overhead * (9.0 * 32.0 + 3.0)
            + orrery::model::engines::HOST_GAP_S;
        assert!((iter_secs(&s, 1, &b) - closed).abs() < 1e-9, "{closed}");
        decode += iter_secs(&s, 1, &b);
    }
    let tpot = decode / (out - 1) as f64;
    assert!(
        (m.tpot.mean - tpot).abs() < 1e-9,
        "{} vs {tpot}",
        m.tpot.mean
    );
    assert!((m.tpot.p99 - tpot).abs() < 1e-9);
    let mut first = BatchShape::default();
    for _ in 0..n {
        first.add(1, 0, true);
    }
    assert!((m.ttft.mean - iter_secs(&s, 1, &first)).abs() < 1e-9);
    assert_eq!(m.output_tokens, n * out);
}

#[test]
fn prefill_only_with_one_sequence_is_an_md1_queue() {
    let p = 2048u64;
    let probe = spec(&scenario(&format!(
        "    resources {{ GPU: 1 }}\n    arrival poisson 1 /s\n    prompt tokens fixed {p}\n    output tokens fixed 1\n    engine max_seqs 1\n"
    )));
    let mut b = BatchShape::default();
    b.add(p, 0, true);
    let svc = iter_secs(&probe, 1, &b);
    let rho = 0.5;
    let lambda = rho / svc;
    let s = spec(&scenario(&format!(
        "    resources {{ GPU: 1 }}\n    arrival poisson {lambda} /s\n    prompt tokens fixed {p}\n    output tokens fixed 1\n    engine max_seqs 1\n"
    )));
    let horizon = (20_000.0 / lambda) as u64;
    let r = run(&s, horizon, None);
    let m = &r.metrics.llm_services[0];
    assert!(m.finished > 15_000, "{}", m.finished);
    // Pollaczek–Khinchine for deterministic service: W = ρ S / (2 (1 − ρ)) + S.
    let w = rho * svc / (2.0 * (1.0 - rho)) + svc;
    assert!((m.ttft.mean - w).abs() < 0.04 * w, "{} vs {w}", m.ttft.mean);
    assert_eq!(m.preemptions, 0);
}

/// Drive the engine as the simulation does: schedule, price, complete; returns the time the
/// second request's first token appears.
fn short_behind_long(s: &Spec, chunked: bool) -> f64 {
    let llm = s.workloads[0].services[0].llm.as_ref().unwrap();
    let mut cfg = llm.engine;
    cfg.chunked_prefill = chunked;
    let mut e = Engine::new(cfg, 100_000);
    e.arrive(Seq::new(0, 8000, 4));
    e.arrive(Seq::new(0, 300, 4));
    let mut now = 0.0;
    loop {
        let b = e.schedule();
        now += iter_secs(s, 1, &b.shape);
        let mut first = None;
        let ns = (now * 1e9).round() as u64;
        e.complete(&b, ns, |x| first = Some(x), |_| {});
        if e.running
            .iter()
            .any(|q| q.prompt == 300 && q.first_token.is_some())
        {
            return now;
        }
    }
}

#[test]
fn chunked_prefill_lets_a_short_prompt_share_the_long_prompts_iteration() {
    let s = spec(&scenario(
        "    resources { GPU: 1 }\n    arrival poisson 1 /s\n    prompt tokens fixed 8000\n    output tokens fixed 4\n    engine token_budget 8192\n",
    ));
    let shape = |parts: &[(u64, u64, bool)]| {
        let mut b = BatchShape::default();
        for &(n, c, smp) in parts {
            b.add(n, c, smp);
        }
        iter_secs(&s, 1, &b)
    };
    // On: iteration 1 is the long prompt and 192 tokens of the short one; iteration 2 the
    // long one's first decode and the short one's last 108 tokens.
    let on =
        shape(&[(8000, 0, true), (192, 0, false)]) + shape(&[(1, 8000, true), (108, 192, true)]);
    // Off: the short prompt (300) does not fit the 192 left, so it waits one iteration whole.
    let off = shape(&[(8000, 0, true)]) + shape(&[(1, 8000, true), (300, 0, true)]);
    assert!((short_behind_long(&s, true) - on).abs() < 1e-12);
    assert!((short_behind_long(&s, false) - off).abs() < 1e-12);
    assert!(on != off);
}

/// memory_fraction leaving exactly `blocks` KV blocks on an H100 for `body`'s engine.
fn fraction_for(blocks: f64, body: &str) -> f64 {
    let s = spec(&scenario(body));
    let llm = s.workloads[0].services[0].llm.as_ref().unwrap();
    let f = llm.footprint();
    let mem = s.accelerators["H100_SXM"].memory.0 as f64;
    (f.weights_bytes + f.reserve_bytes + (blocks + 0.5) * f.block_bytes(16)) / mem
}

#[test]
fn kv_exhaustion_preempts_and_every_request_still_finishes() {
    let base = "    resources { GPU: 1 }\n    arrival trace \"a.csv\"\n    prompt tokens fixed 512\n    output tokens fixed 512\n";
    let frac = fraction_for(100.0, base);
    let mut e2e = Vec::new();
    for mode in ["recompute", "swap"] {
        let s = spec(&scenario(&format!(
            "{base}    engine memory_fraction {frac} preempt {mode}\n"
        )));
        let r = run(&s, 600, Some(vec![0.0; 8]));
        let m = &r.metrics.llm_services[0];
        assert_eq!(m.kv_blocks, 100, "{mode}");
        assert_eq!(m.finished, 8, "{mode}");
        assert!(m.preemptions > 0, "{mode}");
        assert!(m.kv_utilization_peak_fraction <= 1.0);
        e2e.push(m.e2e.max);
    }
    // Swap copies the preempted KV back and forth instead of recomputing it.
    assert!(e2e[0] != e2e[1]);
}

#[test]
fn weights_that_do_not_fit_are_a_located_error() {
    let src = "cluster c {\n  node dgx_h100 x 1\n  fabric single_switch\n}\n\nworkload w {\n  service chat {\n    model llama3_70b\n    resources { GPU: 1 }\n    arrival poisson 1 /s\n    prompt tokens fixed 512\n    output tokens fixed 128\n  }\n}\n";
    let l = load_str("t.orr", src);
    assert!(l.has_errors());
    let out = l.render(false);
    assert!(out.contains("t.orr:8:5"), "{out}");
    assert!(out.contains("weights"), "{out}");
}

#[test]
fn flop_statements_with_a_model_and_kinds_without_are_located_errors() {
    let l = load_str(
        "t.orr",
        &scenario(
            "    resources { GPU: 1 }\n    arrival poisson 1 /s\n    prompt tokens fixed 8\n    output tokens fixed 8\n    compute 1 TFLOP per request\n",
        ),
    );
    assert!(
        l.render(false)
            .contains("`compute` cannot be used with `model`")
    );
    let l = load_str(
        "t.orr",
        "cluster c {\n  node dgx_h100 x 1\n  fabric single_switch\n}\nworkload w {\n  service s {\n    resources { GPU: 1 }\n    arrival poisson 1 /s\n    service_time 1 ms\n    slo ttft p99 1 s\n  }\n}\n",
    );
    assert!(
        l.render(false).contains("needs `model`"),
        "{}",
        l.render(false)
    );
    let l = load_str(
        "t.orr",
        &scenario(
            "    resources { GPU: 2 }\n    arrival poisson 1 /s\n    prompt tokens fixed 8\n    output tokens fixed 8\n",
        ),
    );
    assert!(
        l.render(false).contains("requests 2 device"),
        "{}",
        l.render(false)
    );
}

#[test]
fn tp2_pays_its_allreduces_on_the_shared_network_and_runs_are_deterministic() {
    let body = |tp: u32| {
        format!(
            "    parallel tp {tp}\n    resources {{ GPU: {tp} }}\n    arrival poisson 20 /s\n    prompt tokens uniform 100..800\n    output tokens uniform 16..128\n    slo ttft p99 1 s\n"
        )
    };
    let s = spec(&scenario(&body(2)));
    let a = run(&s, 20, None);
    let b = run(&s, 20, None);
    assert_eq!(
        serde_json::to_string(&a.metrics).unwrap(),
        serde_json::to_string(&b.metrics).unwrap()
    );
    assert!(a.network_models.iter().any(|m| m.on_graph));
    assert!(a.metrics.links["scale_up"].link_bytes > 0.0);
    let one = run(&spec(&scenario(&body(1))), 20, None);
    let (m1, m2) = (&one.metrics.llm_services[0], &a.metrics.llm_services[0]);
    // Half the weights per rank: decode iterations are faster with tp 2 on NVLink.
    assert!(m2.tpot.p50 < m1.tpot.p50, "{} {}", m2.tpot.p50, m1.tpot.p50);
}
