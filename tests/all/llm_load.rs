//! Benchmark loads of an LLM service (issue 39, item 1): `arrival offline M` (every request at
//! time zero, as vLLM's benchmark_throughput and trtllm-bench throughput send them) and
//! `arrival concurrency N requests M` (a closed loop of N clients, as benchmark_serving's
//! --max-concurrency and genai-perf's --concurrency run). Checked against what the loads
//! mean, not against the engine's own figures: one client's requests run back to back, so
//! the run lasts exactly the sum of their latencies; N clients never have more than N
//! requests in flight; a finite load ends the run when its last request finishes, so its
//! rates are over that time.

use orrery::load_str;
use orrery::scenario::Spec;
use orrery::sim::{RunResult, SimConfig, simulate};

fn scenario(arrival: &str) -> String {
    format!(
        "cluster c {{\n  node dgx_h100 x 1\n  fabric single_switch\n}}\n\n\
         workload w {{\n  service chat {{\n    model llama3_8b\n    resources {{ GPU: 1 }}\n    arrival {arrival}\n    prompt tokens uniform 100..400\n    output tokens uniform 50..200\n  }}\n}}\n"
    )
}

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn run(s: &Spec) -> RunResult {
    let r = simulate(s, &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    r
}

#[test]
fn one_client_sends_each_request_when_the_last_one_finished() {
    let r = run(&spec(&scenario("concurrency 1 requests 12")));
    let m = &r.metrics.llm_services[0];
    assert_eq!((m.arrived, m.finished), (12, 12));
    // Back to back from time zero: the last finishes at the sum of the latencies (each
    // rounded to the clock's nanosecond), and nothing ever waits for another request.
    let sum = m.e2e.mean * 12.0;
    assert!(
        (m.last_finish_s - sum).abs() < 1e-6,
        "{} vs {sum}",
        m.last_finish_s
    );
    // The run ends with the load: its window is the time to the last request.
    assert_eq!(
        orrery::sim::window(&spec(&scenario("concurrency 1 requests 12")), None).horizon,
        None
    );
    assert!((m.output_tokens_per_s - m.output_tokens as f64 / m.last_finish_s).abs() < 1e-9);
}

#[test]
fn n_clients_keep_at_most_n_requests_in_flight() {
    // With 4 clients and 40 requests, the first 4 go at time zero and each later one when an
    // earlier one finished: the mean latency × requests is at most 4 × the run's length
    // (at most 4 in flight at any time), and the run is longer than one client's share.
    let r = run(&spec(&scenario("concurrency 4 requests 40")));
    let m = &r.metrics.llm_services[0];
    assert_eq!((m.arrived, m.finished), (40, 40));
    assert!(m.e2e.mean * 40.0 <= 4.0 * m.last_finish_s + 1e-6);
    let one = run(&spec(&scenario("concurrency 1 requests 40")));
    let one = &one.metrics.llm_services[0];
    // Batching 4 at a time beats one by one, but not by more than 4×.
    assert!(m.last_finish_s < one.last_finish_s);
    assert!(m.last_finish_s * 4.0 > one.last_finish_s);
}

#[test]
fn offline_is_every_client_at_once() {
    // Offline 30 is 30 clients with one request each: the same requests at time zero.
    let a = run(&spec(&scenario("offline 30")));
    let b = run(&spec(&scenario("concurrency 30 requests 30")));
    let (a, b) = (&a.metrics.llm_services[0], &b.metrics.llm_services[0]);
    assert_eq!(a.finished, 30);
    assert_eq!(
        (a.output_tokens, a.last_finish_s, a.ttft.p50),
        (b.output_tokens, b.last_finish_s, b.ttft.p50)
    );
    // All arrive together, so the last request's first token comes after every prefill:
    // the longest TTFT is within the run.
    assert!(a.ttft.max <= a.last_finish_s);
}

#[test]
fn finite_loads_are_for_model_level_services_and_bounded() {
    let cases = [
        (
            "node box {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}\ncluster c {\n  node box x 1\n}\nworkload w {\n  service s {\n    replicas 1\n    resources { CPU: 1 }\n    arrival offline 10\n    service_time 1 ms\n  }\n}\n".to_string(),
            "names no `model`",
        ),
        (scenario("concurrency 0 requests 10"), "from 1 to 1000000"),
        (scenario("concurrency 4"), "requests"),
        (scenario("offline 2000000"), "1000000"),
    ];
    for (src, want) in cases {
        let l = load_str("t.orr", &src);
        assert!(l.has_errors(), "{src}");
        let text = l.render(false);
        assert!(text.contains(want), "{want}: {text}");
    }
}
