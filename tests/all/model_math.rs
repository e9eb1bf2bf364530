//! The model formulas (`src/model`) against published figures and their own closed forms.

use orrery::model::catalog;
use orrery::model::memory::{bytes_per_param, layer_activation_bytes};
use orrery::model::*;

fn model(name: &str) -> Transformer {
    catalog::find(name).unwrap_or_else(|| panic!("{name} is in the catalog"))
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

fn layout(tp: u32, pp: u32, dp: u32, global_batch: u64, micro_batch: u64) -> Layout {
    Layout {
        tp,
        sp: false,
        pp,
        schedule: Schedule::OneFOneB,
        dp,
        sharding: Sharding::None,
        ep: 1,
        recompute: Recompute::None,
        attention: orrery::model::Attention::Unfused,
        global_batch,
        micro_batch,
    }
}

/// Published parameter counts, each within 1%.
#[test]
fn parameter_counts_match_published_figures() {
    let cases = [
        // Hugging Face's safetensors count on the meta-llama/Meta-Llama-3-8B and -70B pages.
        ("llama3_8b", 8.03e9),
        ("llama3_70b", 70.6e9),
        // Dubey et al. 2024, Table 3: 405B.
        ("llama3_405b", 405e9),
        // Brown et al. 2020, Table 2.1: 175.0B.
        ("gpt3_175b", 175.0e9),
        // Mistral AI, "Mixtral of experts" (Dec 2023): 46.7B total, 12.9B per token.
        ("mixtral_8x7b", 46.7e9),
    ];
    for (name, published) in cases {
        let p = model(name).params();
        assert!(rel(p, published) < 0.01, "{name}: {p:e} vs {published:e}");
    }
    let mixtral = model("mixtral_8x7b");
    assert!(rel(mixtral.active_params(), 12.9e9) < 0.01);
    // A dense model uses every parameter.
    assert_eq!(
        model("llama3_8b").active_params(),
        model("llama3_8b").params()
    );
}

/// GPT-3's layer is 12h² + 13h (Narayanan et al. 2021 §5.1 count 12h² of matrices; the 13h
/// are the biases and two LayerNorms), its embeddings V·h + s·h, exactly.
#[test]
fn gpt_layer_and_embedding_counts_are_exact() {
    let m = model("gpt3_175b");
    let h = m.hidden as f64;
    assert_eq!(m.layer_params(), 12.0 * h * h + 13.0 * h);
    assert_eq!(m.embedding_params(), (m.vocab + m.seq) as f64 * h);
    // Llama has no biases, RMSNorm (h each) and untied embeddings.
    let l = model("llama3_8b");
    let (h, kv) = (l.hidden as f64, l.kv_dim());
    let expect = 2.0 * h * h + 2.0 * h * kv + 3.0 * h * l.ffn as f64 + 2.0 * h;
    assert_eq!(l.layer_params(), expect);
    assert_eq!(l.embedding_params(), 2.0 * l.vocab as f64 * h);
}

/// Narayanan et al. 2021, eq. (3) and its no-recomputation form, for the Megatron models
/// (GeLU, ffn = 4h, MHA), exact to rounding: the iteration total equals the step work's
/// per-microbatch FLOP summed over microbatches, ranks and stages.
#[test]
fn iteration_flop_is_narayanan_equation_3() {
    // Korthikanti et al. 2022, Table 3's pipeline depths, so that the layers divide.
    for (name, pp) in [
        ("megatron_22b", 1),
        ("megatron_175b", 8),
        ("megatron_530b", 35),
        ("megatron_1t", 64),
    ] {
        let m = model(name);
        let (s, l, h, v) = (
            m.seq as f64,
            f64::from(m.layers),
            m.hidden as f64,
            m.vocab as f64,
        );
        let batch = 512.0;
        let full = 96.0 * batch * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
        let none = 72.0 * batch * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h));
        let tokens = batch * s;
        assert!(rel(tokens * m.training_flop_per_token(Recompute::Full), full) < 1e-9);
        assert!(rel(tokens * m.training_flop_per_token(Recompute::None), none) < 1e-9);

        for (recompute, expect) in [(Recompute::Full, full), (Recompute::None, none)] {
            let mut lay = layout(8, pp, 4, 512, 2);
            lay.recompute = recompute;
            let w = step_work(&m, &lay, 2.0).unwrap();
            let ranks = f64::from(lay.tp * lay.pp * lay.dp);
            let per_mb = w.forward_flop + w.backward_flop + w.recompute_flop;
            let edges = f64::from(lay.tp * lay.dp);
            let total = w.microbatches as f64 * (per_mb * ranks + w.edge_flop * edges);
            assert!(rel(total, expect) < 1e-9, "{name} {recompute:?}");
            assert!(rel(w.model_flop, none) < 1e-9);
            assert_eq!(w.tokens, tokens);
        }
    }
}

/// Selective recomputation redoes only the attention core: 4·B·s²·h per layer.
#[test]
fn selective_recompute_adds_the_attention_core() {
    let m = model("megatron_175b");
    let (s, h, l) = (m.seq as f64, m.hidden as f64, f64::from(m.layers));
    let extra = m.training_flop_per_token(Recompute::Selective)
        - m.training_flop_per_token(Recompute::None);
    assert!(rel(extra, 4.0 * s * h * l) < 1e-12);
}

/// Korthikanti et al. 2022, Table 2, per layer, exactly (16-bit, MHA, GeLU, ffn = 4h).
#[test]
fn layer_activations_follow_korthikanti_table_2() {
    let m = model("megatron_175b");
    let (s, h, a) = (m.seq as f64, m.hidden as f64, f64::from(m.heads));
    let b = 2.0;
    let t = 8.0;
    let sbh = s * b * h;
    let rows = [
        (1, false, Recompute::None, sbh * (34.0 + 5.0 * a * s / h)),
        (
            8,
            false,
            Recompute::None,
            sbh * (10.0 + 24.0 / t + 5.0 * a * s / (h * t)),
        ),
        (
            8,
            true,
            Recompute::None,
            sbh * (34.0 / t + 5.0 * a * s / (h * t)),
        ),
        (8, false, Recompute::Selective, sbh * (10.0 + 24.0 / t)),
        (8, true, Recompute::Selective, sbh * 34.0 / t),
        (8, false, Recompute::Full, sbh * 2.0),
    ];
    for (tp, sp, recompute, expect) in rows {
        let mut l = layout(tp, 1, 1, 2, 2);
        l.sp = sp;
        l.recompute = recompute;
        let got = layer_activation_bytes(&m, &l, 2.0);
        assert!(rel(got, expect) < 1e-12, "tp {tp} sp {sp} {recompute:?}");
    }
}

/// Korthikanti et al. 2022, Figure 1, as Calculon transcribed it (calculon/llm/validation.py,
/// `seqsel_fig1`; configurations validation/seqsel/fig1/*.json, from the paper's Table 3).
/// Figure 1's parameter-and-optimizer bar is 18 bytes × 12·l·h² / (t·p), a stage without the
/// embedding; its activations are the first stage's. So the parameters are checked on a
/// middle stage (or the only one), the activations on the first, each within 5%.
/// The first stage holds the middle's state plus the embeddings, 18 bytes each.
#[test]
fn first_stage_adds_the_embedding_state() {
    let m = model("megatron_1t");
    let l = layout(8, 64, 1, 512, 1);
    let state = |mem: Memory| mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes;
    let first = state(per_rank_at(&m, &l, 2.0, 0).unwrap());
    let middle = state(per_rank_at(&m, &l, 2.0, 1).unwrap());
    let h = m.hidden as f64;
    let embedding = m.vocab as f64 * h / 8.0 + m.seq as f64 * h;
    assert!(rel(first - middle, 18.0 * embedding) < 1e-9);
    assert_eq!(bytes_per_param(2.0), (2.0, 4.0, 12.0));
    assert_eq!(bytes_per_param(4.0), (4.0, 4.0, 8.0));
}

/// Sequence parallelism divides every activation by t (Korthikanti §4.2.2), and 1F1B's first
/// stage holds L layers' worth whatever p (§4.2.3).
#[test]
fn activations_shrink_by_tp_with_sequence_parallelism() {
    let m = model("megatron_22b");
    for recompute in [Recompute::None, Recompute::Selective, Recompute::Full] {
        let mut one = layout(1, 1, 1, 1, 1);
        one.recompute = recompute;
        let mut tp = one.clone();
        tp.tp = 8;
        tp.sp = true;
        let a1 = layer_activation_bytes(&m, &one, 2.0);
        let a8 = layer_activation_bytes(&m, &tp, 2.0);
        assert!(rel(a1 / a8, 8.0) < 1e-12);
    }
    let layers = |pp: u32| {
        let mut l = layout(8, pp, 1, 64, 1);
        l.sp = true;
        let split = check(&m, &l).unwrap();
        memory::in_flight_chunks(&l, &split, 0) * u64::from(split.layers_per_stage)
    };
    assert_eq!(layers(2), 48);
    assert_eq!(layers(8), 48);
}

/// ZeRO-3 holds 1/dp of the unsharded state; ZeRO-1 only the optimizer's share.
#[test]
fn zero_sharding_divides_the_state() {
    let m = model("llama3_70b");
    let dp = 16;
    let base = layout(8, 4, dp, 256, 1);
    let plain = per_rank(&m, &base, 2.0).unwrap();
    for (sharding, w, g, o) in [
        (Sharding::Zero1, 1.0, 1.0, 16.0),
        (Sharding::Zero2, 1.0, 16.0, 16.0),
        (Sharding::Zero3, 16.0, 16.0, 16.0),
    ] {
        let mut l = base.clone();
        l.sharding = sharding;
        let z = per_rank(&m, &l, 2.0).unwrap();
        assert!(rel(z.weights_bytes, plain.weights_bytes / w) < 1e-12);
        assert!(rel(z.gradients_bytes, plain.gradients_bytes / g) < 1e-12);
        assert!(rel(z.optimizer_bytes, plain.optimizer_bytes / o) < 1e-12);
        assert_eq!(z.activations_bytes, plain.activations_bytes);
    }
}

#[test]
fn bubble_is_p_minus_one_over_v_m() {
    let m = model("megatron_175b");
    let mut l = layout(8, 8, 2, 128, 1);
    assert_eq!(step_work(&m, &l, 2.0).unwrap().bubble_fraction, 7.0 / 64.0);
    l.schedule = Schedule::Interleaved(3);
    assert_eq!(step_work(&m, &l, 2.0).unwrap().bubble_fraction, 7.0 / 192.0);
    l.pp = 1;
    l.schedule = Schedule::OneFOneB;
    let w = step_work(&m, &l, 2.0).unwrap();
    assert_eq!(w.bubble_fraction, 0.0);
    assert_eq!(w.p2p_bytes, 0.0);
}

/// Megatron's TP collectives: 4 all-reduces per layer (6 with full recomputation) of
/// b·s·h·dtype each; with SP as many reduce-scatters and two all-gathers more per layer, the
/// backward's re-gather of the two column-parallel linears' inputs (Megatron-LM
/// `tensor_parallel/layers.py`: the input is saved sharded and gathered again for the weight
/// gradient).
#[test]
fn tensor_parallel_collectives_per_microbatch() {
    let m = model("megatron_175b");
    let mut l = layout(8, 8, 1, 64, 2);
    let bytes = 2.0 * 2048.0 * 12288.0 * 2.0;
    let w = step_work(&m, &l, 2.0).unwrap();
    let ar = Comm {
        op: CommOp::AllReduce,
        among: Among::Tensor,
        bytes,
        count: 4 * 12,
    };
    assert_eq!(w.per_microbatch, vec![ar]);
    assert_eq!(w.p2p_bytes, bytes / 8.0);
    l.sp = true;
    l.recompute = Recompute::Full;
    let w = step_work(&m, &l, 2.0).unwrap();
    let ops: Vec<_> = w.per_microbatch.iter().map(|c| (c.op, c.count)).collect();
    // 12 layers: 6 × 12 of each in the forward, backward and recomputed forward, + 2 × 12.
    assert_eq!(ops, [(CommOp::AllGather, 96), (CommOp::ReduceScatter, 72)]);
    assert!(w.per_microbatch.iter().all(|c| c.bytes == bytes));
    // Selective recomputation: 4 × 12 reduce-scatters, 4 × 12 + 2 × 12 all-gathers.
    l.recompute = Recompute::Selective;
    let w = step_work(&m, &l, 2.0).unwrap();
    let ops: Vec<_> = w.per_microbatch.iter().map(|c| (c.op, c.count)).collect();
    assert_eq!(ops, [(CommOp::AllGather, 72), (CommOp::ReduceScatter, 48)]);
    assert_eq!(w.per_iteration, vec![], "dp 1 reduces nothing");
}

/// Data-parallel gradient reduction: one fp32 all-reduce of a stage's gradients, or ZeRO's
/// reduce-scatter and all-gather; MoE experts reduce among their own dp / ep replicas and
/// exchange tokens by all-to-all.
#[test]
fn data_and_expert_parallel_collectives() {
    let m = model("mixtral_8x7b");
    let mut l = layout(2, 1, 8, 64, 1);
    l.ep = 4;
    l.sp = true;
    let w = step_work(&m, &l, 2.0).unwrap();
    let split = check(&m, &l).unwrap();
    let p = memory::stage_params(&m, &l, &split, 0);
    let among: Vec<_> = w.per_iteration.iter().map(|c| (c.op, c.among)).collect();
    assert_eq!(
        among,
        [
            (CommOp::AllReduce, Among::Data),
            (CommOp::AllReduce, Among::ExpertData)
        ]
    );
    assert_eq!(w.per_iteration[0].bytes, 4.0 * p.dense);
    assert_eq!(w.per_iteration[1].bytes, 4.0 * p.expert);
    let a2a = w
        .per_microbatch
        .iter()
        .find(|c| c.op == CommOp::AllToAll)
        .unwrap();
    assert_eq!(a2a.count, 4 * 32);
    assert_eq!(a2a.bytes, 32768.0 * 4096.0 * 2.0 * 2.0 / 2.0);
    // Experts per rank: 8 experts over ep 4 and tp 2.
    let one = m.layer_split().expert_one;
    assert!(rel(p.expert, 32.0 * 2.0 * one / 2.0) < 1e-12);

    l.sharding = Sharding::Zero3;
    l.recompute = Recompute::Full;
    let w = step_work(&m, &l, 2.0).unwrap();
    let first = &w.per_iteration[0];
    assert_eq!(
        (first.op, first.count),
        (CommOp::AllGather, 3 * w.microbatches)
    );
    assert_eq!(first.bytes, 2.0 * p.dense);
}

/// A layout that does not divide is an error, never a panic or a division by zero.
#[test]
fn bad_layouts_are_plain_errors() {
    let m = model("llama3_8b");
    let mixtral = model("mixtral_8x7b");
    let ok = layout(8, 4, 2, 64, 2);
    assert!(step_work(&m, &ok, 2.0).is_ok());
    let cases: Vec<(Transformer, Layout, &str)> = vec![
        (
            m.clone(),
            Layout {
                tp: 3,
                ..ok.clone()
            },
            "heads (32) is not a multiple of tp (3)",
        ),
        (
            m.clone(),
            Layout {
                tp: 16,
                ..ok.clone()
            },
            "kv_heads (8) is not a multiple of tp (16)",
        ),
        (
            m.clone(),
            Layout {
                pp: 3,
                ..ok.clone()
            },
            "layers (32)",
        ),
        (
            m.clone(),
            Layout {
                schedule: Schedule::Interleaved(3),
                ..ok.clone()
            },
            "pp × chunks (12)",
        ),
        (
            m.clone(),
            Layout {
                schedule: Schedule::Interleaved(0),
                ..ok.clone()
            },
            "at least 1",
        ),
        (
            m.clone(),
            Layout {
                global_batch: 63,
                ..ok.clone()
            },
            "global_batch (63)",
        ),
        (
            m.clone(),
            Layout {
                dp: 0,
                ..ok.clone()
            },
            "dp must be at least 1",
        ),
        (
            m.clone(),
            Layout {
                micro_batch: 0,
                ..ok.clone()
            },
            "micro_batch must be",
        ),
        (
            m.clone(),
            Layout {
                ep: 2,
                ..ok.clone()
            },
            "needs a mixture-of-experts",
        ),
        (
            mixtral.clone(),
            Layout {
                ep: 3,
                dp: 3,
                global_batch: 48,
                ..ok.clone()
            },
            "experts (8)",
        ),
        (
            mixtral,
            Layout {
                ep: 4,
                ..ok.clone()
            },
            "dp (2) is not a multiple of ep (4)",
        ),
    ];
    for (model, l, want) in cases {
        let e = step_work(&model, &l, 2.0).unwrap_err();
        assert!(e.contains(want), "{e:?} lacks {want:?}");
        assert_eq!(per_rank(&model, &l, 2.0).unwrap_err(), e);
    }
    // Counts that would overflow saturate instead.
    let huge = Layout {
        global_batch: u64::MAX,
        micro_batch: 1,
        dp: 1,
        schedule: Schedule::Interleaved(2),
        ..ok.clone()
    };
    assert_eq!(step_work(&m, &huge, 2.0).unwrap().microbatches, u64::MAX);
    assert!(per_rank(&m, &huge, 2.0).is_ok());
    assert!(step_work(&m, &ok, 0.0).is_err());
    assert!(per_rank(&m, &ok, f64::NAN).is_err());
    assert!(per_rank_at(&m, &ok, 2.0, 4).is_err());
}

/// The per-kernel accounting (`model::ops`, Calculon's) and the per-token FLOP count
/// (`model::flop`, Narayanan et al.'s) are written independently: the matrix kernels of a
/// layer must add up to exactly the latter, forward, backward (2×) and recomputed, for MHA
/// GeLU, GQA SwiGLU and MoE models, with and without tensor parallelism.
#[test]
fn matrix_kernels_add_up_to_the_flop_count() {
    use orrery::model::ops::{Engine, Kernel, layer_kernels, output_kernels};
    // Megatron-LM's MoE router is replicated on every tensor-parallel rank
    // (`megatron/core/transformer/moe/router.py`: its weight is not split), where the
    // per-token count divides the whole layer by tp: compared apart.
    let matrix = |ks: &[Kernel]| -> f64 {
        ks.iter()
            .filter(|k| k.engine == Engine::Matrix && k.name != "router")
            .map(|k| k.flop)
            .sum()
    };
    for (name, tp) in [
        ("megatron_22b", 8),
        ("gpt3_175b", 1),
        ("llama3_70b", 8),
        ("mixtral_8x7b", 2),
    ] {
        let m = model(name);
        for recompute in [Recompute::None, Recompute::Selective, Recompute::Full] {
            let mut l = layout(tp, 1, 1, 4, 2);
            l.recompute = recompute;
            let k = layer_kernels(&m, &l, 2.0);
            let tokens = (m.seq * l.micro_batch) as f64 / f64::from(tp);
            let router = 2.0 * m.router_params();
            let fw = tokens * (m.layer_forward_flop_per_token() - router);
            let re = tokens
                * (m.recompute_flop_per_token(recompute) / f64::from(m.layers)
                    - if recompute == Recompute::Full {
                        router
                    } else {
                        0.0
                    });
            let routed: f64 = k
                .forward
                .iter()
                .filter(|k| k.name == "router")
                .map(|k| k.flop)
                .sum();
            assert_eq!(routed, tokens * f64::from(tp) * router, "{name}");
            assert!(rel(matrix(&k.forward), fw) < 1e-12, "{name} forward");
            assert!(
                rel(matrix(&k.backward), 2.0 * fw) < 1e-12,
                "{name} backward"
            );
            if recompute == Recompute::None {
                assert_eq!(matrix(&k.recompute), 0.0, "{name}");
            } else {
                assert!(
                    rel(matrix(&k.recompute), re) < 1e-12,
                    "{name} {recompute:?}"
                );
            }
            let out = tokens * m.output_forward_flop_per_token();
            assert!(
                rel(matrix(&output_kernels(&m, &l, 2.0)), 3.0 * out) < 1e-12,
                "{name}"
            );
        }
    }
}

/// Calculon's byte counts for two kernels, by hand: the query projection reads its input
/// and weights and writes its output; the softmax reads and writes the b·a/t·s² scores.
#[test]
fn kernel_bytes_are_their_inputs_outputs_and_weights() {
    use orrery::model::ops::layer_kernels;
    let m = model("megatron_22b");
    let l = layout(8, 1, 1, 4, 4);
    let k = layer_kernels(&m, &l, 2.0);
    let (s, b, h) = (2048.0, 4.0, 6144.0);
    let q = k.forward.iter().find(|k| k.name == "query").unwrap();
    let (mm, n, kk) = (b * s, h, h / 8.0);
    assert_eq!(q.bytes, 2.0 * (mm * n + n * kk + mm * kk));
    let sm = k.forward.iter().find(|k| k.name == "softmax").unwrap();
    assert_eq!(sm.bytes, 2.0 * 2.0 * b * (64.0 / 8.0) * s * s);
    assert_eq!(sm.flop, 5.0 * b * (64.0 / 8.0) * s * s);
}

/// `attention flash`: the scores, softmax, dropout and weighted sum become one fused kernel
/// per pass, FlashAttention's own count (Dao-AILab/flash-attention
/// `benchmarks/benchmark_flash_attention.py`: forward 4·b·s²·heads·hd, halved when causal,
/// backward 2.5 times the forward), its memory traffic only Q, K, V, O (and their gradients),
/// and no s × s activations kept (the same activation memory as selective recomputation).
#[test]
fn fused_attention_is_one_kernel_of_flashattentions_flop() {
    let m = model("llama3_8b");
    let unfused = layout(1, 1, 1, 1, 1);
    let flash = Layout {
        attention: Attention::Flash,
        ..unfused.clone()
    };
    let k = ops::layer_kernels(&m, &flash, 2.0);
    let names: Vec<&str> = k.forward.iter().map(|k| k.name).collect();
    assert!(names.contains(&"flash_attention"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| ["scores", "softmax", "attend"].contains(n))
    );
    let (s, q, kv) = (8192.0, 32.0 * 128.0, 8.0 * 128.0);
    let fw = k
        .forward
        .iter()
        .find(|k| k.name == "flash_attention")
        .unwrap();
    assert_eq!(fw.flop, 4.0 * s * s * q / 2.0);
    assert_eq!(fw.bytes, 2.0 * s * (2.0 * q + 2.0 * kv));
    let bw = k
        .backward
        .iter()
        .find(|k| k.name == "flash_attention")
        .unwrap();
    assert_eq!(bw.flop, 2.5 * fw.flop);
    assert_eq!(bw.bytes, 2.0 * s * (4.0 * q + 4.0 * kv));
    // Everything else is the same kernels.
    let u = ops::layer_kernels(&m, &unfused, 2.0);
    let other = |k: &ops::LayerKernels| -> Vec<&str> {
        k.forward
            .iter()
            .map(|k| k.name)
            .filter(|n| !["scores", "softmax", "attend", "flash_attention"].contains(n))
            .collect()
    };
    assert_eq!(other(&u), other(&k));
    // No s × s activations: what selective recomputation keeps.
    let selective = Layout {
        recompute: Recompute::Selective,
        ..unfused.clone()
    };
    assert_eq!(
        layer_activation_bytes(&m, &flash, 2.0),
        layer_activation_bytes(&m, &selective, 2.0)
    );
    assert!(layer_activation_bytes(&m, &unfused, 2.0) > layer_activation_bytes(&m, &flash, 2.0));
}
