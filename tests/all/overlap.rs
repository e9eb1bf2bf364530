//! `overlap grad_reduce` (Megatron-LM's `--overlap-grad-reduce`): a data-parallel job's
//! gradient buckets reduced on the run's network during the last microbatch's backward.
//! Two H100s, each on its own node behind one 400G NIC (β = 50 GB/s per direction), dp 2:
//! a bucket of S parameters is a ring all-reduce of 4S bytes (fp32 gradients) over p = 2,
//! 2α + 4S/β with α = 14 µs (NCCL's network hwLat). The compute C and the backward B of
//! one microbatch come from the roofline and `step_work`, not from the simulation.

use orrery::compute::kernels::kernel_rates;
use orrery::load_str;
use orrery::model::ops::Kernel;
use orrery::model::{StepWork, dtype_bytes, step_work};
use orrery::scenario::Spec;
use orrery::sim::metrics::TrainingMetrics;
use orrery::sim::{SimConfig, simulate};

const ALPHA: f64 = 14e-6;
/// NCCL's base latency of a ring Simple call (`baseLatencies`, NCCL 2.30.7
/// `src/graph/tuning.cc`): once per collective.
const BASE: f64 = 8.4e-6;
const NDR: f64 = 50e9;

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn errors(src: &str) -> String {
    let l = load_str("t.orr", src);
    assert!(l.has_errors(), "expected an error");
    l.render(false)
}

/// Two boxes (two H100s and one NDR NIC each, resources `ra` and `rb` to pin jobs), a
/// 115M-parameter model, and job `a` training it dp 2 with `micro`-sample microbatches,
/// 4 per replica, `extra` in its training block; `more` is appended (other workloads).
fn scenario(micro: u32, extra: &str, more: &str) -> String {
    format!(
        "node box {{\n  cpu sockets 1, cores 32\n  memory 512 GiB\n  switch sw0 uplink gen5 x16\n  \
         device H100_SXM x 2 at sw0 link none\n  nic ib_ndr_400g at sw0 role compute\n  \
         resources {{ ra: 1, rb: 1 }}\n}}\n\
         cluster c {{\n  rack r0 {{\n    node box x 2\n  }}\n}}\n\
         model tiny {{\n  layers 4\n  hidden 1024\n  heads 8\n  vocab 32000\n  seq 1024\n}}\n\
         workload a {{\n  placement_group pg strategy STRICT_SPREAD {{\n    bundle {{ GPU: 1, ra: 1 }} x 2\n  }}\n  \
         training t on pg steps 2 {{\n    model tiny\n    parallel dp 2\n    batch global {} micro {micro}\n{extra}  }}\n}}\n{more}",
        8 * micro
    )
}

fn run(s: &Spec) -> Vec<TrainingMetrics> {
    let r = simulate(s, &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(
        r.network_models.iter().all(|m| m.on_graph),
        "{:?}",
        r.network_models
    );
    r.metrics.training
}

/// (compute C of a step, backward B of the last microbatch, the optimizer step O, gradient
/// parameters P per rank). The optimizer step waits for the reduction (Megatron-LM's
/// `finish_grad_sync()` before `optimizer.step()`), so it follows the last bucket.
fn figures(s: &Spec) -> (f64, f64, f64, f64) {
    let mt = s.workloads[0].training[0].model.as_ref().unwrap();
    let w: StepWork = step_work(&mt.model, &mt.layout, dtype_bytes(&mt.dtype)).unwrap();
    let r = kernel_rates(s, "H100_SXM", "bf16").unwrap();
    let sum = |ks: &[Kernel]| -> f64 { ks.iter().map(|k| r.secs(k.engine, k.flop, k.bytes)).sum() };
    let n = f64::from(w.layers_per_stage);
    let l = &w.layer;
    let slot = n * (sum(&l.forward) + sum(&l.backward) + sum(&l.recompute)) + sum(&w.output);
    let optimizer = sum(&[w.optimizer]);
    // The last microbatch's backward: backward and recomputed kernels, the logits' gradients;
    // it ends before the optimizer step.
    let backward = n * (sum(&l.backward) + sum(&l.recompute)) + sum(&w.output[1..]);
    assert_eq!(w.per_iteration.len(), 1, "{:?}", w.per_iteration);
    let params = w.per_iteration[0].bytes / 4.0;
    (
        w.microbatches as f64 * slot + optimizer,
        backward,
        optimizer,
        params,
    )
}

fn per_step(t: &TrainingMetrics) -> (f64, f64, f64) {
    let n = t.steps_done as f64;
    (t.step_time, t.compute_time / n, t.exposed_comm_time / n)
}

/// Nanosecond rounding of the clock, a few events per bucket.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 200e-9
}

#[test]
fn without_overlap_the_reduction_follows_the_compute_as_before() {
    let s = spec(&scenario(16, "", ""));
    let (c, _, _, p) = figures(&s);
    let t = &run(&s)[0];
    let (step, compute, exposed) = per_step(t);
    assert!(close(compute, c), "{compute} vs {c}");
    let allreduce = BASE + 2.0 * ALPHA + 4.0 * p / NDR;
    assert!(close(step, c + allreduce), "{step} vs {}", c + allreduce);
    assert!(close(exposed, allreduce), "{exposed}");
    // Nothing overlaps: all of the communication is exposed.
    assert_eq!(t.communication_time, t.exposed_comm_time);
}

#[test]
fn a_reduction_shorter_than_the_backward_exposes_only_the_last_bucket() {
    // 8 buckets; each takes less than the B/8 between two being ready, so each is done
    // before the next is ready and only the last, ready when the compute ends, is exposed.
    let s0 = spec(&scenario(32, "", ""));
    let (_, b, _, p) = figures(&s0);
    let bucket = (p / 8.0).ceil();
    let s = spec(&scenario(
        32,
        &format!("    overlap grad_reduce bucket {bucket}\n"),
        "",
    ));
    let (c, b2, o, p2) = figures(&s);
    assert_eq!((b, p), (b2, p2));
    let one = |params: f64| BASE + 2.0 * ALPHA + 4.0 * params / NDR;
    assert!(one(bucket) < b / 8.0, "{} vs {}", one(bucket), b / 8.0);
    let last = p - 7.0 * bucket;
    // The last is ready when the backward ends; the optimizer step's O waits for it.
    assert!(o > 0.0);
    let t = &run(&s)[0];
    let (step, compute, exposed) = per_step(t);
    assert!(close(compute, c));
    let end = (c - o) + one(last) + o;
    assert!(close(step, end), "{step} vs {end}");
    assert!(close(exposed, end - c), "{exposed}");
    // All eight buckets were on the wire, seven of them hidden by the compute.
    let traffic = t.communication_time / t.steps_done as f64;
    assert!(close(traffic, 7.0 * one(bucket) + one(last)), "{traffic}");
}

#[test]
fn a_reduction_longer_than_the_backward_runs_back_to_back_from_the_first_bucket() {
    // One-sample microbatches: each bucket takes longer than the B/8 between two being
    // ready, so from the first (ready B/8 into the last backward) the communicator never
    // idles and the reduction outlasts the backward: the step ends at C - O - B + B/8 plus
    // every bucket's 2α and all 4P bytes at β, then the optimizer step's O.
    let s0 = spec(&scenario(1, "", ""));
    let (_, b, _, p) = figures(&s0);
    let bucket = (p / 8.0).ceil();
    let s = spec(&scenario(
        1,
        &format!("    overlap grad_reduce bucket {bucket}\n"),
        "",
    ));
    let (c, _, o, _) = figures(&s);
    assert!(
        BASE + 2.0 * ALPHA + 4.0 * bucket / NDR > b / 8.0,
        "not the long case"
    );
    let end = c - o - b + b / 8.0 + 8.0 * (BASE + 2.0 * ALPHA) + 4.0 * p / NDR + o;
    let (step, _, exposed) = per_step(&run(&s)[0]);
    assert!(close(step, end), "{step} vs {end}");
    assert!(close(exposed, end - c), "{exposed}");
}

#[test]
fn another_job_on_the_same_nics_halves_the_overlapped_reduction() {
    // Job b rings 100 GB over the same two NICs for seconds, the whole of a's run: while
    // both have flows each gets β/2 (max-min), so a's back-to-back reduction moves its 4P
    // bytes at 25 GB/s (b has the NIC alone only during a's α).
    let b_job = "workload b {\n  placement_group pg strategy STRICT_SPREAD {\n    bundle { GPU: 1, rb: 1 } x 2\n  }\n  \
                 training t on pg steps 1 {\n    compute 1 GFLOP per device bf16\n    allreduce 100 GB algo ring\n  }\n}\n";
    let s0 = spec(&scenario(1, "", ""));
    let (c, b, o, p) = figures(&s0);
    let bucket = (p / 8.0).ceil();
    let overlap = format!("    overlap grad_reduce bucket {bucket}\n");
    let alone = run(&spec(&scenario(1, &overlap, "")));
    let both = run(&spec(&scenario(1, &overlap, b_job)));
    let shared = c - o - b + b / 8.0 + 8.0 * (BASE + 2.0 * ALPHA) + 4.0 * p / (NDR / 2.0) + o;
    assert!(both[1].step_time > 1.0, "b outlasts a: {:?}", both[1]);
    assert!(
        close(both[0].step_time, shared),
        "{} vs {shared}",
        both[0].step_time
    );
    assert!(
        close(both[0].step_time - alone[0].step_time, 4.0 * p / NDR),
        "{} - {}",
        both[0].step_time,
        alone[0].step_time
    );
}

#[test]
fn overlap_where_it_makes_no_sense_is_a_located_error() {
    let dp1 = scenario(16, "    overlap grad_reduce\n", "")
        .replace("parallel dp 2", "parallel tp 1")
        .replace(
            "bundle { GPU: 1, ra: 1 } x 2",
            "bundle { GPU: 1, ra: 1 } x 1",
        );
    let e = errors(&dp1);
    assert!(e.contains("t.orr:29:5") && e.contains("dp is 1"), "{e}");
    let z3 = scenario(16, "    sharding zero3\n    overlap grad_reduce\n", "");
    let e = errors(&z3);
    assert!(e.contains("t.orr:30:5") && e.contains("zero1"), "{e}");
    let typo = scenario(16, "    overlap grad_reduc\n", "");
    let e = errors(&typo);
    assert!(
        e.contains("t.orr:29:13") && e.contains("grad_reduce"),
        "{e}"
    );
    let zero = scenario(16, "    overlap grad_reduce bucket 0\n", "");
    assert!(errors(&zero).contains("out of range"));
    let no_model = "workload w {\n  placement_group pg {\n    bundle { GPU: 1 }\n  }\n  training t on pg steps 1 {\n    compute 1 TFLOP per device bf16\n    overlap grad_reduce\n  }\n}\n";
    assert!(errors(no_model).contains("needs `model`"));
}
