//! Every shipped serving scenario answers the question its header asks (issue 40): as in
//! `scenario_answers.rs` (which lists every scenario and its test), each test runs the command
//! the header names and reads the answer from the files it wrote — services.csv,
//! llm_services.csv, tasks.csv, run.json, summary.csv, compare.csv — against a closed form
//! where one exists and against the figure the header states, as printed.

use super::answers::*;
use std::collections::BTreeMap;
use std::path::Path;

/// The rows of `out`'s llm_services.csv by workload.
fn llm(out: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    csv(&out.join("llm_services.csv"))
        .into_iter()
        .map(|r| (r["workload"].clone(), r))
        .collect()
}

#[test]
fn h200_roofline_answer() {
    let f = "scenarios/h200_roofline.orr";
    // Per batch on 2 x H200 (the h200_datasheet profile): 22.3 ms of compute per request,
    // 4.29 s to read the weights, 0.25 s of launches.
    let per_request = 35e12 / (2.0 * 989e12 * 0.794);
    let memory = 35e12 / (2.0 * 4.8e12 * 0.85);
    let launches = 50_000.0 * 5e-6;
    let batch = |b: f64| (b * per_request).max(memory) + launches;
    says(
        f,
        "compute = requests x 35 TFLOP / (2 x 989 TFLOPS x 0.794) = requests x 22.3 ms",
    );
    says(
        f,
        &format!(
            "memory = 35 TB / (2 x 4.8 TB/s x 0.85) = {} s",
            fixed(memory, 2)
        ),
    );
    states(f, memory / per_request, "192 requests (the ridge point)");
    // Prefill: the compute term (and its launches), not the 140 GB read.
    let out = run("roofline", f, &[]);
    let t = csv(&out.join("tasks.csv"));
    let prefill = num(row(&t, "group", "prefill"), "run_mean_s");
    let compute = 280e12 / (2.0 * 989e12 * 0.794) + 200.0 * 5e-6;
    assert!((prefill - compute).abs() < 2e-9, "{prefill} vs {compute}");
    states(f, prefill * 1e3, "each prefill task 179 ms");
    states(
        f,
        140e9 / (2.0 * 4.8e12 * 0.85) * 1e3,
        "against 17 ms to read its 140 GB",
    );
    let s = csv(&out.join("services.csv"));
    let run_rate = num(row(&s, "service", "decode"), "throughput_per_s");
    states(f, run_rate, "the 64-request cell: 55.9 /s");
    says(
        f,
        &format!(
            "4 x 64 / {} s = {} /s",
            fixed(batch(64.0), 2),
            fixed(256.0 / batch(64.0), 1)
        ),
    );
    // Decode: the sweep over `batch max` at a load above every cell's capacity.
    let sweep = dir("roofline-sweep");
    orrery(&[
        "sweep",
        f,
        "--out",
        &sweep.display().to_string(),
        "--no-plots",
    ]);
    let cells = csv(&sweep.join("summary.csv"));
    let rate = |b: u32| {
        num(
            row(
                &cells,
                "workload.llama70b.service.decode.batch.max",
                &b.to_string(),
            ),
            "requests_per_s_mean",
        )
    };
    for b in [1, 16, 64, 128, 192, 256, 512] {
        // Four replicas of full batches back to back, less the start (the prefill tasks
        // hold the GPUs for their first ~3 s) and the batch the 10 min window cuts off.
        let t = batch(f64::from(b));
        let most = 4.0 * f64::from(b) / t;
        let x = rate(b);
        assert!(
            x <= most && x >= most * (1.0 - (t + 3.0) / 600.0),
            "batch {b}: {x} vs {most}"
        );
    }
    says(
        f,
        &format!(
            "1: {}, 16: {}, 64: {}, 128: {}, 192: {}, 256: {}, 512: {} /s",
            fixed(rate(1), 2),
            fixed(rate(16), 1),
            fixed(rate(64), 1),
            fixed(rate(128), 0),
            fixed(rate(192), 0),
            fixed(rate(256), 0),
            fixed(rate(512), 0)
        ),
    );
    // In proportion to the batch up to the ridge, then hardly more.
    states(
        f,
        rate(64) / rate(1),
        "64x the unbatched rate at 64 requests",
    );
    states(f, rate(192) / rate(1), "192x at 192");
    says(
        f,
        &format!("4 / 22.3 ms = {} /s", fixed(4.0 / per_request, 0)),
    );
    states(
        f,
        100.0 * (rate(512) / rate(192) - 1.0),
        "(+3% from 192 to 512)",
    );
    assert_eq!(rate(64), run_rate);
}

#[test]
fn mixed_inference_answer() {
    let f = "scenarios/mixed_inference.orr";
    let out = run("mixed", f, &[]);
    let r = json(&out.join("run.json"));
    let m = &r["metrics"];
    let svc = |name: &str| {
        m["services"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()
            .clone()
    };
    let (chat, rerank) = (svc("chat_70b"), svc("rerank"));
    let p = |s: &serde_json::Value, q: &str| s["latency"][q].as_f64().unwrap();
    let met = |s: &serde_json::Value| -> Vec<bool> {
        s["slo"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["met"].as_bool().unwrap())
            .collect()
    };
    assert_eq!(met(&chat), [true, true]);
    assert_eq!(met(&rerank), [false, false]);
    states(
        f,
        p(&chat, "p50_s") * 1e3,
        "(p50 143 ms, p99 315 ms against",
    );
    states(f, p(&chat, "p99_s") * 1e3, "315 ms against 600 ms");
    states(f, p(&rerank, "p50_s"), "(p50 1.02 s, p99 1.11 s against");
    states(f, p(&rerank, "p99_s"), "1.11 s against 80 and 300 ms");
    // A rerank request on one L4 at 75% of its 121 TFLOPS fp16; a batch of 32.
    let one = 2.9e12 / (121e12 * 0.75);
    states(f, one * 1e3, "32 ms on one L4");
    states(f, 32.0 * one, "takes 1.0 s;");
    // The pools.
    let u = |scope: &str, k: &str, what: &str| m[scope][k][what].as_f64().unwrap() * 100.0;
    states(
        f,
        u("utilization", "H200", "busy_fraction"),
        "H200 11.1% busy",
    );
    states(
        f,
        u("utilization", "H200", "allocated_fraction"),
        "100% allocated",
    );
    states(f, u("utilization", "L4", "busy_fraction"), "L4 9.6% busy");
    states(
        f,
        u("utilization", "L4", "allocated_fraction"),
        "19.7% allocated",
    );
    let t = "utilization_by_node_type";
    states(
        f,
        u(t, "l4_ondemand", "busy_fraction"),
        "(on-demand 20% busy",
    );
    states(
        f,
        u(t, "l4_ondemand", "allocated_fraction"),
        "50% allocated by the rerankers",
    );
    states(f, u(t, "l4_spot", "busy_fraction"), "spot 4.5%");
    // The fleet's price: the run's cluster line and run.json.
    let c = &m["cluster"];
    states(
        f,
        c["price_usd_per_h"].as_f64().unwrap(),
        "costs $352.18 per hour",
    );
    states(
        f,
        c["cost_usd"].as_f64().unwrap(),
        "($2,113 over the window",
    );
    assert!(
        (c["cost_usd"].as_f64().unwrap() - 6.0 * c["price_usd_per_h"].as_f64().unwrap()).abs()
            < 1e-6
    );
    // Unbatched, the bursts still queue.
    let text = std::fs::read_to_string(f).unwrap();
    assert!(text.contains("    batch max 32 wait 5 ms\n"));
    let src = dir("mixed-b1-src").join("mixed.orr");
    std::fs::write(
        &src,
        text.replacen(
            "    batch max 32 wait 5 ms\n",
            "    batch max 1 wait 5 ms\n",
            1,
        ),
    )
    .unwrap();
    let b1 = json(&run("mixed-b1", &src.display().to_string(), &[]).join("run.json"));
    let rr = b1["metrics"]["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "rerank")
        .unwrap()
        .clone();
    states(f, p(&rr, "p50_s") * 1e3, "and p50 is 96 ms");
    assert!(!rr["slo"][0]["met"].as_bool().unwrap());
    // The policies: every metric the same to within 0.1%.
    let sweep = dir("mixed-sweep");
    orrery(&[
        "sweep",
        f,
        "--seeds",
        "2",
        "--out",
        &sweep.display().to_string(),
        "--no-plots",
    ]);
    let s = csv(&sweep.join("summary.csv"));
    assert_eq!(s.len(), 3);
    for k in [
        "latency_s",
        "slo_violation_fraction",
        "queueing_delay_s",
        "requests_per_s",
        "utilization",
        "cost_usd",
    ] {
        let v: Vec<f64> = s.iter().map(|r| num(r, &format!("{k}_mean"))).collect();
        let (lo, hi) = (
            v.iter().cloned().fold(f64::MAX, f64::min),
            v.iter().cloned().fold(0.0, f64::max),
        );
        assert!(hi - lo <= 0.001 * hi, "{k}: {v:?}");
    }
    says(f, "to within 0.1%");
}

#[test]
fn llm_serving_answer() {
    let f = "scenarios/llm_serving.orr";
    let l = llm(&run("llm-serving", f, &["--horizon", "300s"]));
    let v = |w: &str, k: &str| num(&l[w], k);
    states(f, v("chat_tp2", "ttft_p50_s") * 1e3, "16.8 ms and TPOT");
    states(
        f,
        v("chat_tp2", "tpot_p50_s") * 1e3,
        "TPOT p50 5.65 ms against",
    );
    states(f, v("chat_tp1", "ttft_p50_s") * 1e3, "tp 1's 21 ms");
    states(f, v("chat_tp1", "tpot_p50_s") * 1e3, "and 7.8 ms");
    let (a, b) = (
        v("chat_tp1", "output_tokens_per_s"),
        v("chat_tp2", "output_tokens_per_s"),
    );
    assert!((a / b - 1.0).abs() < 0.03, "{a} {b}");
    states(
        f,
        100.0 * v("chat_tp1", "kv_utilization_mean_fraction"),
        "(KV 1%)",
    );
}

#[test]
fn llm_pipeline_answer() {
    let f = "scenarios/llm_pipeline.orr";
    let l = llm(&run("llm-pipeline", f, &["--horizon", "300s"]));
    let v = |w: &str, k: &str| num(&l[w], k);
    states(f, v("tp4pp2", "ttft_p50_s"), "(TTFT p50 29.9 s,");
    states(
        f,
        v("tp4pp2", "tpot_p50_s") * 1e3,
        "TPOT p50 99.6 ms against",
    );
    states(f, v("tp8", "ttft_p50_s") * 1e3, "tp 8's 88.5 ms");
    states(f, v("tp8", "tpot_p50_s") * 1e3, "and 38.5 ms)");
    states(f, v("tp4pp2_b512", "ttft_p50_s") * 1e3, "(TTFT p50 94 ms,");
    states(f, v("tp4pp2_b512", "tpot_p50_s") * 1e3, "TPOT p50 36.7 ms)");
    states(f, v("tp8_b512", "ttft_p50_s"), "(TTFT p50 5.9 s)");
}

#[test]
fn llm_disaggregated_answer() {
    let f = "scenarios/llm_disaggregated.orr";
    let l = llm(&run("llm-disagg", f, &[]));
    let v = |w: &str, k: &str| num(&l[w], k);
    let ms = |w: &str, k: &str| v(w, k) * 1e3;
    let (d, c) = ("disaggregated", "colocated");
    assert_eq!(
        (v(d, "prefill_replicas"), v(d, "decode_replicas")),
        (3.0, 5.0)
    );
    states(f, ms(d, "tpot_p50_s"), "(TPOT p50 10.9 ms,");
    states(f, ms(d, "tpot_p99_s"), "p99 11.9 ms, against");
    states(f, ms(c, "tpot_p50_s"), "13.6 and 15.9 ms colocated");
    states(f, ms(c, "tpot_p99_s"), "15.9 ms colocated");
    states(f, ms(d, "ttft_p50_s"), "(TTFT p50 105 ms,");
    states(f, ms(d, "ttft_p99_s"), "p99 477 ms, against");
    states(f, ms(c, "ttft_p50_s"), "72 and 180 ms");
    states(f, ms(c, "ttft_p99_s"), "180 ms: fewer");
    states(f, ms(d, "kv_transfer_mean_s"), "4.9 ms on average");
    states(f, ms(d, "kv_transfer_p99_s"), "p99 19.1 ms");
    states(f, v(d, "e2e_mean_s"), "e2e mean 3.61 s against");
    states(f, v(c, "e2e_mean_s"), "4.43 s,");
    states(f, ms(c, "tpot_p90_s"), "(p90 14.8 ms)");
    states(f, ms(d, "ttft_p90_s"), "(p90 227 ms)");
    states(f, v(d, "goodput_per_s"), "is 33.5 against");
    states(f, v(c, "goodput_per_s"), "1.2 requests/s");
}

#[test]
fn llm_trace_replay_answer() {
    let f = "scenarios/llm_trace_replay/replay.orr";
    let l = llm(&run("replay", f, &[]));
    let v = |w: &str, k: &str| num(&l[w], k);
    states(f, v("replay", "output_tokens_per_s"), "(2,716 and");
    states(f, v("uniform", "output_tokens_per_s"), "2,818)");
    states(f, v("replay", "ttft_p50_s") * 1e3, "TTFT p50 34 vs");
    states(f, v("uniform", "ttft_p50_s") * 1e3, "40 ms,");
    states(f, v("replay", "ttft_p99_s") * 1e3, "TTFT p99 is 279 ms");
    states(f, v("uniform", "ttft_p99_s") * 1e3, "mix's 118 ms");
    assert!(v("replay", "ttft_p99_s") > 0.150 && v("uniform", "ttft_p99_s") < 0.150);
    let p99 = |seed: &str| {
        let l = llm(&run(&format!("replay-{seed}"), f, &["--seed", seed]));
        fixed(num(&l["uniform"], "ttft_p99_s") * 1e3, 0)
    };
    says(
        f,
        &format!("(seeds 2 and 3: {}, {} ms)", p99("2"), p99("3")),
    );
}

#[test]
fn llama70b_hardware_mix_answer() {
    let w = "scenarios/llama70b_hardware_mix/workload.orr";
    let files: Vec<String> = ["h100", "h200", "mi300x", "b200"]
        .iter()
        .map(|m| format!("scenarios/llama70b_hardware_mix/{m}.orr"))
        .collect();
    let out = dir("llama70b");
    let mut args = vec!["compare"];
    args.extend(files.iter().map(String::as_str));
    let o = out.display().to_string();
    args.extend(["--seeds", "1..5", "--out", &o, "--no-plots"]);
    orrery(&args);
    let c = csv(&out.join("compare.csv"));
    let v = |s: &str, k: &str| num(row(&c, "scenario", s), &format!("{k}_mean"));
    let job = |k: &str| format!("pretrain.llama70b.{k}");
    let svc = |k: &str| format!("chat.llama70b.{k}");
    let all = ["h100", "h200", "mi300x", "b200"];
    let list =
        |k: &str, f: &dyn Fn(f64) -> String| all.iter().map(|s| f(v(s, k))).collect::<Vec<_>>();
    let steps = list(&job("step_time_s"), &|x| fixed(x, 1));
    says(
        w,
        &format!(
            "step time H100 {} s, H200 {} s, MI300X {} s, B200 {} s",
            steps[0], steps[1], steps[2], steps[3]
        ),
    );
    let k = list(&job("tokens_per_s"), &|x| format!("{}k", fixed(x / 1e3, 1)));
    says(
        w,
        &format!("tokens/s {}, {}, {}, {}", k[0], k[1], k[2], k[3]),
    );
    let mfu = list(&job("mfu"), &|x| format!("{}%", fixed(100.0 * x, 0)));
    says(
        w,
        &format!("MFU {}, {}, {}, {}", mfu[0], mfu[1], mfu[2], mfu[3]),
    );
    states(
        w,
        v("h100", &job("usd_per_m_tokens")),
        "million tokens 3.07 (H100),",
    );
    states(w, v("h200", &job("usd_per_m_tokens")), "3.15 (H200),");
    states(w, v("mi300x", &job("usd_per_m_tokens")), "1.19 (MI300X),");
    states(w, v("b200", &job("usd_per_m_tokens")), "1.79 (B200) at");
    let tpot = list(&svc("tpot_p50_s"), &|x| {
        fixed(1e3 * x, if x < 0.1 { 1 } else { 0 })
    });
    says(
        w,
        &format!(
            "TPOT p50 {} / {} / {} / {} ms",
            tpot[0], tpot[1], tpot[2], tpot[3]
        ),
    );
    let pct = |x: f64| {
        let p = 100.0 * x;
        format!("{}%", fixed(p, if p < 1.0 { 1 } else { 0 }))
    };
    let att = list(&svc("slo_tpot_p99_attainment"), &pct);
    says(
        w,
        &format!(
            "attained by {} / {} / {} / {} of requests",
            att[0], att[1], att[2], att[3]
        ),
    );
    assert_eq!(v("b200", &svc("slo_tpot_p99_attainment")), 1.0);
    states(
        w,
        100.0 * v("mi300x", &svc("slo_ttft_p99_attainment")),
        "(17% attained,",
    );
    states(w, v("mi300x", &svc("ttft_p50_s")), "TTFT p50 7.7 s:");
    for s in ["h100", "h200", "b200"] {
        let x = v(s, &svc("output_tokens_per_s"));
        assert!((4_250.0..4_500.0).contains(&x), "{s}: {x}");
    }
    says(w, "about 4,300 on the three that keep up");
    let mi = v("mi300x", &svc("output_tokens_per_s"));
    states(w, (mi / 10.0).round() * 10.0, "4,070 on MI300X");
    states(
        w,
        v("h100", &svc("usd_per_m_tokens")),
        "output tokens 3.55 (H100),",
    );
    states(w, v("h200", &svc("usd_per_m_tokens")), "4.03 (H200),");
    states(w, v("mi300x", &svc("usd_per_m_tokens")), "1.88 (MI300X)");
    states(w, v("b200", &svc("usd_per_m_tokens")), "4.29 (B200), only");
    // The training's exposed tensor-parallel traffic, from each run's training.csv.
    let exposed = |m: &str| {
        let t = csv(&run(
            &format!("llama70b-{m}"),
            &format!("scenarios/llama70b_hardware_mix/{m}.orr"),
            &[],
        )
        .join("training.csv"));
        num(&t[0], "exposed_comm_time_s") / num(&t[0], "steps_done")
    };
    states(w, exposed("mi300x"), "(5.05 s exposed against");
    states(w, exposed("h200"), "4.72 s on H200's NVSwitch");
    // Alone (0.2 requests/s), a copy of the folder with the load changed.
    let copy = dir("llama70b-alone-src");
    for f in ["workload.orr", "h200.orr", "mi300x.orr"] {
        let text = std::fs::read_to_string(format!("scenarios/llama70b_hardware_mix/{f}")).unwrap();
        assert!(f != "workload.orr" || text.contains("    arrival poisson 14 /s\n"));
        let text = text.replace(
            "    arrival poisson 14 /s\n",
            "    arrival poisson 0.2 /s\n",
        );
        std::fs::write(copy.join(f), text).unwrap();
    }
    let alone = |m: &str| {
        let l = llm(&run(
            &format!("llama70b-alone-{m}"),
            &copy.join(format!("{m}.orr")).display().to_string(),
            &[],
        ));
        num(&l["chat"], "tpot_p50_s") * 1e3
    };
    states(w, alone("h200"), "(TPOT p50 13.9 against");
    states(w, alone("mi300x"), "15.0 ms:");
}
