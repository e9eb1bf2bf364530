//! LLM services in `compare` and `drill` (`orrery::experiment::kinds`), and which requests an
//! LLM service's SLO attainment counts: those whose outcome the window decides. Expected
//! values come from the roofline of each iteration (as in `tests/all/llm_serving.rs`) and the
//! cluster's price, never from the simulation under test; and the memory fit a service is
//! checked against.

use orrery::compute::roofline;
use orrery::experiment::kinds::{Column, figures};
use orrery::experiment::measure::ClusterFigures;
use orrery::load_str;
use orrery::model::serving::{BatchShape, iteration_phases};
use orrery::scenario::Spec;
use orrery::sim::{RunResult, SimConfig, simulate};
use std::collections::BTreeMap;

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn scenario(body: &str) -> String {
    format!(
        "cluster c {{\n  node dgx_h100 x 1\n  fabric single_switch\n}}\n\n\
         workload w {{\n  service chat {{\n    model llama3_8b\n    resources {{ GPU: 1 }}\n{body}  }}\n}}\n"
    )
}

fn run(s: &Spec, horizon_s: f64, trace: Vec<f64>) -> RunResult {
    let cfg = SimConfig {
        horizon: Some((horizon_s * 1e9) as u64),
        traces: BTreeMap::from([("a.csv".to_string(), trace.into())]),
        ..SimConfig::default()
    };
    let r = simulate(s, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    r
}

/// Seconds one request of a 1-token prompt and `out` output tokens takes alone on one H100
/// (`max_seqs 1`): its prefill iteration, then a decode over k − 1 cached tokens for k = 2..out.
fn request_secs(s: &Spec, out: u64) -> (f64, f64) {
    let llm = s.workloads[0].services[0].llm.as_ref().unwrap();
    let f = llm.footprint();
    let r = roofline(s, "H100_SXM", "bf16").unwrap();
    let secs = |b: &BatchShape| {
        (orrery::compute::iteration_secs(
            &r,
            &r,
            &llm.engine,
            1,
            &iteration_phases(&llm.model, 1, &f, b),
            b,
            true,
        ) * 1e9)
            .round()
            / 1e9
    };
    let mut first = BatchShape::default();
    first.add(1, 0, true);
    let prefill = secs(&first);
    let mut total = prefill;
    for k in 2..=out {
        let mut b = BatchShape::default();
        b.add(1, k - 1, true);
        total += secs(&b);
    }
    (prefill, total)
}

fn value(v: &[(Column, Option<f64>)], key: &str) -> Option<f64> {
    v.iter()
        .find(|(c, _)| c.key == key)
        .unwrap_or_else(|| panic!("no column {key}"))
        .1
}

/// Four requests at t = 0 served one at a time (`max_seqs 1`), each taking D seconds; the
/// window ends at 2.5 D. Request 0 ends at D, request 1 at 2 D, request 2 has its first token
/// at ≈ 2 D and is decoding at the end, request 3 is still queued. Which of them each SLO
/// counts, by hand:
///
/// | SLO | r0 | r1 | r2 | r3 | attained |
/// |---|---|---|---|---|---|
/// | TTFT ≤ 1.5 D | in | in | out (first token ≈ 2 D) | out (none after 2.5 D > 1.5 D) | 2 / 4 |
/// | TTFT ≤ 3 D | in | in | in (first token in time) | undecided (2.5 D < 3 D) | 3 / 3 |
/// | e2e ≤ 3 D | in | in | undecided | undecided | 2 / 2 |
/// | TPOT ≤ 0.75 g | out | out | undecided (its gaps so far bound it by ≈ 0.5 g) | undecided | 0 / 2 |
/// | TPOT ≤ 0.25 g | out | out | out (bound ≈ 0.5 g > 0.25 g) | undecided | 0 / 3 |
///
/// where g = D / (out − 1) is a request's TPOT. Counting every arrived request instead would
/// give 3 / 4 and 2 / 4 in rows 2 and 3: the window's end would count as misses.
#[test]
fn slo_attainment_counts_the_requests_the_window_decides() {
    let out = 2000u64;
    let probe = spec(&scenario(&format!(
        "    arrival trace \"a.csv\"\n    prompt tokens fixed 1\n    output tokens fixed {out}\n    engine max_seqs 1\n"
    )));
    let (prefill, d) = request_secs(&probe, out);
    let g = (d - prefill) / (out - 1) as f64;
    let ms = |x: f64| format!("{} ms", (x * 1e3).round());
    let us = |x: f64| format!("{} us", (x * 1e6).round());
    let slos = [
        ("ttft", ms(1.5 * d)),
        ("ttft", ms(3.0 * d)),
        ("e2e", ms(3.0 * d)),
        ("tpot", us(0.75 * g)),
        ("tpot", us(0.25 * g)),
    ]
    .map(|(k, t)| format!("    slo {k} p50 {t}\n"))
    .concat();
    let s = spec(&scenario(&format!(
        "    arrival trace \"a.csv\"\n    prompt tokens fixed 1\n    output tokens fixed {out}\n    engine max_seqs 1\n{slos}"
    )));
    let r = run(&s, 2.5 * d, vec![0.0; 4]);
    let m = &r.metrics.llm_services[0];
    assert_eq!((m.arrived, m.finished), (4, 2));
    let got: Vec<(u64, u64, f64)> = m
        .slo
        .iter()
        .map(|x| (x.within, x.undecided, x.attainment_fraction))
        .collect();
    assert_eq!(
        got,
        vec![
            (2, 0, 0.5),
            (3, 1, 1.0),
            (2, 2, 1.0),
            (0, 2, 0.0),
            (0, 1, 0.0)
        ]
    );
    let met: Vec<bool> = m.slo.iter().map(|x| x.met).collect();
    assert_eq!(met, vec![true, true, true, false, false]);
}

/// `compare`'s figures for an LLM service are its metrics, keyed with their unit, and its $
/// per million output tokens is its devices' share of the cluster's price over the window.
#[test]
fn llm_service_figures_carry_latencies_tokens_and_price_per_token() {
    let s = spec(&scenario(
        "    replicas 2\n    arrival poisson 4 /s\n    prompt tokens uniform 128..512\n    output tokens uniform 32..128\n    slo ttft p99 500 ms\n    slo tpot p90 20 ms\n",
    ));
    let horizon = 60.0;
    let r = run(&s, horizon, vec![]);
    let m = &r.metrics.llm_services[0];
    assert!(m.finished > 150, "{}", m.finished);
    let fig = ClusterFigures::of(&s);
    let v = figures(&fig, &r.metrics);
    let k = |x: &str| value(&v, &format!("w.chat.{x}"));
    assert_eq!(k("arrived"), Some(m.arrived as f64));
    assert_eq!(k("finished"), Some(m.finished as f64));
    assert_eq!(k("ttft_p50_s"), Some(m.ttft.p50));
    assert_eq!(k("ttft_p99_s"), Some(m.ttft.p99));
    assert_eq!(k("tpot_p99_s"), Some(m.tpot.p99));
    assert_eq!(k("e2e_p50_s"), Some(m.e2e.p50));
    assert_eq!(
        k("output_tokens_per_s"),
        Some(m.output_tokens as f64 / horizon)
    );
    assert_eq!(k("goodput_per_s"), Some(m.goodput_per_s));
    assert_eq!(
        k("slo_ttft_p99_attainment"),
        Some(m.slo[0].attainment_fraction)
    );
    assert_eq!(
        k("slo_tpot_p90_attainment"),
        Some(m.slo[1].attainment_fraction)
    );
    // Two one-GPU replicas of an 8-GPU DGX H100, placed at 0 for the whole window: 2/8 of
    // its price for the window.
    let price = fig.price_per_hour.expect("the catalog prices a DGX H100");
    assert_eq!(fig.devices, 8);
    assert!((m.device_hours - 2.0 * horizon / 3600.0).abs() < 1e-12);
    let usd = price * 2.0 / 8.0 * horizon / 3600.0;
    let want = usd / m.output_tokens as f64 * 1e6;
    let got = k("usd_per_m_tokens").unwrap();
    assert!((got - want).abs() < 1e-12 * want, "{got} vs {want}");
    let label = v
        .iter()
        .find(|(c, _)| c.key == "w.chat.slo_tpot_p90_attainment")
        .map(|(c, _)| c.label.clone())
        .unwrap();
    assert_eq!(label, "w.chat SLO TPOT p90 ≤ 0.02 s: attained (target 90%)");
}

/// The memory fit at `check`: the smallest device of the node types that can host a replica
/// (enough devices of its kind); without a cluster, only when no known device fits.
#[test]
fn the_fit_check_uses_the_devices_a_replica_can_really_get() {
    let svc = "workload w {\n  service chat {\n    model llama3_70b\n    parallel tp 4\n    replicas 1\n    resources { GPU: 4 }\n    arrival poisson 1 /s\n    prompt tokens fixed 512\n    output tokens fixed 64\n  }\n}\n";
    // A workload file on its own (included by clusters it cannot see): 35 GB of weights per
    // rank fit an 80 GB H100, so it is not held to the catalog's 24 GB L4.
    let alone = load_str("w.orr", svc);
    assert!(!alone.has_errors(), "{}", alone.render(false));
    // A one-L4 node cannot host a 4-GPU replica, so only the H100s count.
    let one_l4 = format!(
        "node l4x1 {{\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  device L4 x 1\n}}\n\
         cluster c {{\n  node l4x1 x 1\n  node dgx_h100 x 1\n}}\n{svc}"
    );
    let l = load_str("c.orr", &one_l4);
    assert!(!l.has_errors(), "{}", l.render(false));
    // Eight L4s can: Ray may place the replica there, where it does not fit.
    let eight_l4 = format!("cluster c {{\n  node g6_l4 x 1\n  node dgx_h100 x 1\n}}\n{svc}");
    let l = load_str("c.orr", &eight_l4);
    let text = l.render(false);
    assert!(
        l.has_errors() && text.contains("more than 0.9 of the 22.5 GiB device it can be given"),
        "{text}"
    );
}

/// A replica lost with its node stops holding its devices: one 1-GPU replica on n0 (the only
/// GPU node; the head n1 cannot take it back), n0 killed at 30 s of a 100 s window, holds 30
/// device-seconds, and its $ per token is priced by those.
#[test]
fn a_replica_lost_to_a_failure_stops_paying_for_its_devices() {
    let s = spec(
        "node cpu8 {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}\n\
         cluster c {\n  node dgx_h100 x 1\n  node cpu8 x 1\n  head n1\n}\n\
         workload w {\n  service chat {\n    model llama3_8b\n    resources { GPU: 1 }\n    arrival poisson 2 /s\n    prompt tokens fixed 128\n    output tokens fixed 16\n  }\n}\n\
         failures {\n  at 30 s kill node n0\n}\n",
    );
    let r = run(&s, 100.0, vec![]);
    let m = &r.metrics.llm_services[0];
    assert!((m.device_hours - 30.0 / 3600.0).abs() < 1e-15);
    let fig = ClusterFigures::of(&s);
    let per_device_h = fig.price_per_hour.unwrap() / fig.devices as f64;
    let want = per_device_h * 30.0 / 3600.0 / m.output_tokens as f64 * 1e6;
    let got = value(&figures(&fig, &r.metrics), "w.chat.usd_per_m_tokens").unwrap();
    assert!((got - want).abs() < 1e-12 * want, "{got} vs {want}");
}

/// The hardware-mix scenario's serving answer (README, its header), seed 1: at 14 requests/s
/// TPOT p99 ≤ 50 ms is met on B200 only, and TTFT p99 ≤ 1 s everywhere but on MI300X; the
/// pretraining step is fastest on B200, then MI300X, H200, H100.
#[test]
fn the_hardware_mix_answer_holds() {
    let mut steps = Vec::new();
    for (mix, ttft_met, tpot_met) in [
        ("h100", true, false),
        ("h200", true, false),
        ("mi300x", false, false),
        ("b200", true, true),
    ] {
        let path = format!("scenarios/llama70b_hardware_mix/{mix}.orr");
        let l = orrery::load_file(std::path::Path::new(&path)).unwrap();
        assert!(!l.has_errors(), "{}", l.render(false));
        let s = l.spec.unwrap();
        let r = simulate(
            &s,
            &SimConfig {
                seed: 1,
                ..SimConfig::default()
            },
        );
        assert!(r.violations.is_empty(), "{mix}: {:?}", r.violations);
        let m = &r.metrics.llm_services[0];
        let met: Vec<(&str, bool)> = m.slo.iter().map(|x| (x.kind.as_str(), x.met)).collect();
        assert_eq!(met, vec![("ttft", ttft_met), ("tpot", tpot_met)], "{mix}");
        steps.push(r.metrics.training[0].step_time);
    }
    assert!(
        steps[3] < steps[2] && steps[2] < steps[1] && steps[1] < steps[0],
        "{steps:?}"
    );
}

/// A finite load's rates are per second of the service's run: 40 requests sent at once finish
/// long before a 1 h window ends, and tokens/s, requests/s are over the time until the last
/// one finished, not the hour.
#[test]
fn a_finite_loads_rates_are_over_the_time_it_ran() {
    let s = spec(&scenario(
        "    arrival offline 40\n    prompt tokens fixed 256\n    output tokens fixed 64\n",
    ));
    let r = run(&s, 3600.0, vec![]);
    let m = &r.metrics.llm_services[0];
    assert_eq!(m.finished, 40);
    assert!(
        m.last_finish_s > 0.0 && m.last_finish_s < 60.0,
        "{}",
        m.last_finish_s
    );
    assert_eq!(m.output_tokens, 40 * 64);
    assert_eq!(
        m.output_tokens_per_s,
        m.output_tokens as f64 / m.last_finish_s
    );
    assert_eq!(m.requests_per_s, 40.0 / m.last_finish_s);
    // The run's makespan is its last request's finish, and the report has its samples.
    assert_eq!(r.metrics.makespan, m.last_finish_s);
    assert!(!m.ttft_samples.is_empty() && !m.tpot_samples.is_empty() && !m.e2e_samples.is_empty());
    // Queueing: the first iteration's 8,192-token budget admits 32 prompts of 256 at once
    // (no wait); the other 8 wait for later batches: P(wait > 0) = 8 / 40.
    assert_eq!(m.waiting.count, 40);
    assert_eq!(m.wait_probability, 0.2);
    let lq = m.waiting.mean * 40.0 / r.metrics.horizon;
    assert!((m.mean_queue_length - lq).abs() < 1e-12 && lq > 0.0);
    // KV occupancy over time: its windows' time-weighted mean is the run's mean occupancy
    // (one replica, placed the whole run).
    let end = r.metrics.horizon;
    let pts = &m.kv_series;
    assert!(!pts.is_empty());
    let mean: f64 = pts
        .iter()
        .enumerate()
        .map(|(i, &(t0, f))| {
            let t1 = pts.get(i + 1).map_or(end, |p| p.0);
            f * (t1 - t0)
        })
        .sum::<f64>()
        / end;
    assert!(
        (mean - m.kv_utilization_mean_fraction).abs() < 1e-9,
        "{mean} vs {}",
        m.kv_utilization_mean_fraction
    );
}
