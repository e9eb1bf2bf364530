//! Prefill/decode disaggregation (`disaggregate prefill N decode M transport T`): one request
//! on an idle cluster against prefill + KV transfer + decode in closed form, KV transfers
//! sharing a bottleneck max-min, tenant and transport errors located, determinism, and a
//! colocated service unaffected. Closed forms from the model library, the roofline and the
//! transport parameters, never from the simulation under test.

use orrery::compute::roofline;
use orrery::load_str;
use orrery::model::serving::{BatchShape, iteration_phases};
use orrery::network::graph::{DEFAULT_HOP_LATENCY, PCIE_HOP_LATENCY};
use orrery::scenario::Spec;
use orrery::sim::{RunResult, SimConfig, simulate};
use orrery::transport::params::{NIXL_LATENCY, RDMA_EFFICIENCY};
use std::collections::BTreeMap;

/// ConnectX-7 NDR, the DGX H100's compute NICs: 400 Gb/s.
const NDR: f64 = 400e9 / 8.0;

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

/// `nodes` DGX H100s on one switch; service `chat` of Llama-3 8B with `body`.
fn scenario(nodes: u32, body: &str) -> String {
    format!(
        "cluster c {{\n  node dgx_h100 x {nodes}\n  fabric single_switch\n}}\n\n\
         workload w {{\n  service chat {{\n    model llama3_8b\n    resources {{ GPU: 1 }}\n{body}  }}\n}}\n"
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

/// Nanoseconds of one iteration of `shape` on one H100 rank, as the clock rounds it.
fn iter_ns(s: &Spec, shape: &BatchShape) -> u64 {
    let llm = s.workloads[0].services[0].llm.as_ref().unwrap();
    let f = llm.footprint();
    let r = roofline(s, "H100_SXM", "bf16").unwrap();
    (orrery::compute::iteration_secs(
        &r,
        &r,
        &llm.engine,
        1,
        &iteration_phases(&llm.model, 1, &f, shape),
        shape,
        true,
    ) * 1e9)
        .round() as u64
}

fn one(n: u64, c: u64) -> BatchShape {
    let mut b = BatchShape::default();
    b.add(n, c, true);
    b
}

/// NIXL between two nodes' GPUs on one switch: GPU → PCIe switch → NIC → switch → NIC →
/// PCIe switch → GPU (four PCIe hops, two network hops), NIC-bound at the RDMA goodput;
/// `sharers` flows on the source NIC split it max-min. The fixed part is paid as a delay
/// (rounded to the ns), the wire share ends on the next ns.
fn nixl_ns(bytes: f64, sharers: f64) -> u64 {
    let fixed = NIXL_LATENCY + 4.0 * PCIE_HOP_LATENCY + 2.0 * DEFAULT_HOP_LATENCY;
    let wire = bytes * sharers / (NDR * RDMA_EFFICIENCY);
    (fixed * 1e9).round() as u64 + (wire * 1e9).ceil() as u64
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs()
}

#[test]
fn one_request_is_prefill_then_kv_transfer_then_decode_exactly() {
    let (p, k) = (2000u64, 6u64);
    let s = spec(&scenario(
        2,
        &format!(
            "    arrival trace \"a.csv\"\n    prompt tokens fixed {p}\n    output tokens fixed {k}\n    disaggregate prefill 1 decode 1 transport nixl\n"
        ),
    ));
    let r = run(&s, 60, Some(vec![0.0]));
    let m = &r.metrics.llm_services[0];
    assert_eq!(m.finished, 1);
    let llm = s.workloads[0].services[0].llm.as_ref().unwrap();
    let f = llm.footprint();
    // The prompt on the prefill replica (it samples one token, discarded by the proxy).
    let prefill = iter_ns(&s, &one(p, 0));
    // Its KV cache: prompt tokens × per-token KV bytes, node 0 → node 1.
    let bytes = p as f64 * f.kv_token_bytes;
    let kv = nixl_ns(bytes, 1.0);
    // The decode replica recomputes the last prompt token over the others, samples the first
    // token, then decodes one token per iteration over the growing context.
    let first = iter_ns(&s, &one(1, p - 1));
    let rest: u64 = (2..=k).map(|j| iter_ns(&s, &one(1, p + j - 2))).sum();
    let ttft = (prefill + kv + first) as f64 / 1e9;
    let e2e = (prefill + kv + first + rest) as f64 / 1e9;
    assert!(close(m.ttft.mean, ttft), "{} vs {ttft}", m.ttft.mean);
    assert!(close(m.e2e.mean, e2e), "{} vs {e2e}", m.e2e.mean);
    let tpot = rest as f64 / 1e9 / (k - 1) as f64;
    assert!(close(m.tpot.mean, tpot), "{} vs {tpot}", m.tpot.mean);
    let d = m.disaggregation.as_ref().expect("disaggregated");
    assert_eq!((d.prefill_replicas, d.decode_replicas), (1, 1));
    assert_eq!(d.transport, "nixl");
    assert_eq!(d.kv_transfer.count, 1);
    assert!(close(d.kv_transfer.mean, kv as f64 / 1e9));
    assert_eq!(d.kv_transfer_bytes, bytes);
    assert_eq!(m.output_tokens, k);
    assert!(
        r.network_models
            .iter()
            .any(|n| n.on_graph && n.text.contains("KV cache") && n.text.contains("nixl"))
    );
}

#[test]
fn two_kv_caches_leaving_one_gpu_share_its_nic_max_min() {
    let p = 1500u64;
    // Three nodes: the prefill replica on node 0, one decode replica on each other node; the
    // two prompts prefill in one iteration and their KV caches leave GPU 0's NIC together.
    let s = spec(&scenario(
        3,
        &format!(
            "    arrival trace \"a.csv\"\n    prompt tokens fixed {p}\n    output tokens fixed 4\n    disaggregate prefill 1 decode 2 transport nixl\n"
        ),
    ));
    let r = run(&s, 60, Some(vec![0.0, 0.0]));
    let m = &r.metrics.llm_services[0];
    assert_eq!(m.finished, 2);
    let f = s.workloads[0].services[0].llm.as_ref().unwrap().footprint();
    let bytes = p as f64 * f.kv_token_bytes;
    let d = m.disaggregation.as_ref().unwrap();
    assert_eq!(d.kv_transfer.count, 2);
    // Each gets half the NIC: twice the wire time of one alone.
    let shared = nixl_ns(bytes, 2.0) as f64 / 1e9;
    assert!(
        close(d.kv_transfer.mean, shared),
        "{} vs {shared}",
        d.kv_transfer.mean
    );
    assert!(close(d.kv_transfer.max, shared));
    assert_eq!(d.kv_transfer_bytes, 2.0 * bytes);
    // Both decode on their own replica: the same TTFT.
    assert!(close(m.ttft.max, m.ttft.mean));
}

fn errors(src: &str) -> String {
    let l = load_str("t.orr", src);
    assert!(l.has_errors(), "no error:\n{src}");
    l.render(false)
}

const TENANT: &str =
    "tenant locked {\n  no_rdma\n}\n\ntenant listed {\n  transports [object_store, gloo]\n}\n\n";

fn tenant_scenario(tenant: &str, transport: &str) -> String {
    format!(
        "{TENANT}cluster c {{\n  node dgx_h100 x 2\n  fabric single_switch\n}}\n\n\
         workload w tenant {tenant} {{\n  service chat {{\n    model llama3_8b\n    resources {{ GPU: 1 }}\n    arrival poisson 1 /s\n    prompt tokens fixed 64\n    output tokens fixed 8\n    disaggregate prefill 1 decode 1{transport}\n  }}\n}}\n"
    )
}

#[test]
fn a_transport_the_tenant_forbids_is_a_located_error() {
    // `no_rdma` forbids NIXL (UCX verbs), named or the default.
    for t in [" transport nixl", ""] {
        let out = errors(&tenant_scenario("locked", t));
        assert!(out.contains("t.orr:21:5"), "{out}");
        assert!(out.contains("no_rdma"), "{out}");
    }
    let out = errors(&tenant_scenario("listed", " transport nccl"));
    assert!(
        out.contains("t.orr:21:5") && out.contains("allows only"),
        "{out}"
    );
    // What the tenant allows loads.
    spec(&tenant_scenario("locked", " transport object_store"));
    spec(&tenant_scenario("listed", " transport gloo"));
}

#[test]
fn unknown_and_incompatible_transports_and_replicas_are_located_errors() {
    let body = |extra: &str| {
        scenario(
            2,
            &format!(
                "    arrival poisson 1 /s\n    prompt tokens fixed 64\n    output tokens fixed 8\n{extra}"
            ),
        )
    };
    let out = errors(&body(
        "    disaggregate prefill 1 decode 1 transport nixll\n",
    ));
    assert!(
        out.contains("unknown transport `nixll`") && out.contains("t.orr:13:47"),
        "{out}"
    );
    for t in ["tcp", "rdma", "nvlink_p2p"] {
        let out = errors(&body(&format!(
            "    disaggregate prefill 1 decode 1 transport {t}\n"
        )));
        assert!(
            out.contains("cannot move a KV cache") && out.contains("t.orr:13:47"),
            "{out}"
        );
    }
    let out = errors(&body(
        "    replicas 2\n    disaggregate prefill 1 decode 1\n",
    ));
    assert!(
        out.contains("`replicas` cannot be used with `disaggregate`"),
        "{out}"
    );
    let out = errors(&body("    disaggregate prefill 0 decode 1\n"));
    assert!(out.contains("t.orr:13:26"), "{out}");
    // A declared transport of a kind that moves device memory is accepted.
    let s = spec(&format!(
        "transport kv {{\n  kind gpudirect_rdma\n  latency 4 us\n}}\n\n{}",
        body("    disaggregate prefill 1 decode 1 transport kv\n")
    ));
    let d = s.workloads[0].services[0]
        .llm
        .as_ref()
        .unwrap()
        .disagg
        .clone()
        .unwrap();
    assert_eq!((d.prefill, d.decode, d.transport.as_str()), (1, 1, "kv"));
    assert_eq!(s.workloads[0].services[0].replicas, 2);
}

const MIXED: &str = "    arrival poisson 30 /s\n    prompt tokens uniform 100..1500\n    output tokens uniform 16..200\n";

#[test]
fn runs_are_deterministic_and_every_request_is_accounted_for() {
    let s = spec(&scenario(
        2,
        &format!("{MIXED}    disaggregate prefill 1 decode 2 transport nixl\n"),
    ));
    let a = run(&s, 10, None);
    let b = run(&s, 10, None);
    assert_eq!(
        serde_json::to_string(&a.metrics).unwrap(),
        serde_json::to_string(&b.metrics).unwrap()
    );
    let m = &a.metrics.llm_services[0];
    let d = m.disaggregation.as_ref().unwrap();
    assert!(m.finished > 200, "{}", m.finished);
    // Every finished request's KV cache moved; some may still be decoding at the end.
    assert!(d.kv_transfer.count >= m.finished);
    assert!(d.kv_transfer.count <= m.arrived);
    assert!(a.metrics.links["nic"].link_bytes >= d.kv_transfer_bytes);
}

#[test]
fn a_colocated_service_is_unchanged_beside_a_disaggregated_one() {
    let colocated = format!("{MIXED}    replicas 2\n");
    let alone = spec(&scenario(2, &colocated));
    let with = spec(&format!(
        "{}\nworkload pd {{\n  service chat {{\n    model llama3_8b\n    resources {{ GPU: 1 }}\n{MIXED}    disaggregate prefill 2 decode 2\n  }}\n}}\n",
        scenario(2, &colocated)
    ));
    let a = run(&alone, 10, None);
    let b = run(&with, 10, None);
    let (x, y) = (&a.metrics.llm_services[0], &b.metrics.llm_services[0]);
    assert_eq!((x.workload.as_str(), y.workload.as_str()), ("w", "w"));
    assert!(x.disaggregation.is_none());
    assert_eq!(
        serde_json::to_string(x).unwrap(),
        serde_json::to_string(y).unwrap()
    );
    assert!(b.metrics.llm_services[1].disaggregation.is_some());
}

#[test]
fn the_scenario_runs_and_moves_kv_caches() {
    let l = orrery::load_file(std::path::Path::new("scenarios/llm_disaggregated.orr")).unwrap();
    assert!(!l.has_errors(), "{}", l.render(false));
    let s = l.spec.unwrap();
    let r = run(&s, 5, None);
    let pd: Vec<_> = r
        .metrics
        .llm_services
        .iter()
        .filter(|m| m.disaggregation.is_some())
        .collect();
    assert!(!pd.is_empty());
    for m in &r.metrics.llm_services {
        assert!(m.finished > 0, "{}", m.workload);
    }
    assert!(
        pd.iter()
            .all(|m| m.disaggregation.as_ref().unwrap().kv_transfer_bytes > 0.0)
    );
}

#[test]
fn a_decode_replica_lost_loses_its_requests_and_the_rest_keep_finishing() {
    let src = format!(
        "{}\nfailures f {{\n  at 3 s kill node n1\n}}\n",
        scenario(
            3,
            "    arrival poisson 30 /s\n    prompt tokens uniform 1000..4000\n    output tokens uniform 16..200\n    disaggregate prefill 1 decode 2\n",
        )
    );
    let s = spec(&src);
    let before = run(&s, 3, None).metrics.llm_services[0].finished;
    let r = run(&s, 8, None);
    let m = &r.metrics.llm_services[0];
    // The replica on n1 (a decode replica: the prefill one is on n0) takes its running and
    // arriving requests with it; the other decode replica keeps serving.
    assert!(m.lost > 0, "{}", m.lost);
    assert!(m.finished > before, "{} vs {before}", m.finished);
    assert!(m.finished + m.lost + m.dropped <= m.arrived);
    assert_eq!(r.metrics.failures.requests_lost, m.lost);
}

/// The window decides an SLO only from what the client has seen: a request whose KV cache is
/// still moving when the window ends has no first token yet (the prefill replica's sampled
/// token is discarded by the proxy), so a TTFT target not yet passed leaves it undecided, and
/// one already passed is a miss.
#[test]
fn a_request_cut_off_between_prefill_and_decode_is_undecided_or_missed() {
    let p = 2000u64;
    let body = |slo: &str| {
        format!(
            "    arrival trace \"a.csv\"\n    prompt tokens fixed {p}\n    output tokens fixed 6\n    disaggregate prefill 1 decode 1 transport nixl\n    slo ttft p50 {slo}\n"
        )
    };
    let probe = spec(&scenario(2, &body("10 s")));
    let llm = probe.workloads[0].services[0].llm.as_ref().unwrap();
    let bytes = p as f64 * llm.footprint().kv_token_bytes;
    // Half-way through the KV transfer.
    let end = iter_ns(&probe, &one(p, 0)) + nixl_ns(bytes, 1.0) / 2;
    let at_end = |s: &Spec| {
        let cfg = SimConfig {
            horizon: Some(end),
            traces: BTreeMap::from([("a.csv".to_string(), vec![0.0].into())]),
            ..SimConfig::default()
        };
        let r = simulate(s, &cfg);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        let m = &r.metrics.llm_services[0];
        assert_eq!((m.arrived, m.finished), (1, 0));
        let x = &m.slo[0];
        (x.within, x.undecided, x.attainment_fraction)
    };
    assert_eq!(at_end(&probe), (0, 1, 1.0));
    let us = end / 2_000;
    assert_eq!(
        at_end(&spec(&scenario(2, &body(&format!("{us} us"))))),
        (0, 0, 0.0)
    );
}
