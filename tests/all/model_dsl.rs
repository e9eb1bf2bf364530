//! Model-level training jobs (issue 12): `model` blocks and a training job's `model`,
//! `parallel`, `sharding`, `recompute`, `batch` and `precision`. Valid forms fill
//! `orrery::model`'s types field by field; every misuse is a located error, exit 2 through
//! `orrery check`; truncated and mangled model blocks never panic.

use orrery::load_str;
use orrery::model::{Ffn, Moe, Recompute, Schedule, Sharding, catalog};
use std::process::Command;

/// 4 × dgx_h100 (32 GPUs), a placement group of all of them, and a training job whose block
/// is `job`; `models` goes before the workload.
fn scenario(models: &str, job: &str) -> String {
    format!(
        "cluster c {{\n  node dgx_h100 x 4\n}}\n\n{models}\nworkload w {{\n  placement_group pg strategy PACK {{\n    bundle {{ GPU: 8 }} x 4\n  }}\n  training t on pg steps 10 {{\n{job}  }}\n}}\n"
    )
}

const TINY: &str = "model tiny {\n  layers 24\n  hidden 2048\n  heads 16\n  kv_heads 4\n  ffn 5632\n  ffn_kind swiglu\n  vocab 32000\n  seq 4096\n  tied_embeddings\n  moe experts 8 top_k 2 expert_ffn 1408\n  source \"a test model\"\n}\n";

/// `file:line:column` of the `nth` (from 0) occurrence of `needle` in `text`.
fn at(text: &str, needle: &str, nth: usize) -> String {
    let (off, _) = text
        .match_indices(needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("`{needle}` #{nth} not in:\n{text}"));
    let before = &text[..off];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|k| k + 1).unwrap_or(0) + 1;
    format!("s.orr:{line}:{col}")
}

fn ok(text: &str) -> orrery::scenario::Spec {
    let l = load_str("s.orr", text);
    assert!(!l.has_errors(), "unexpected errors:\n{}", l.render(false));
    l.spec.unwrap()
}

/// `orrery check` on `text` (as `s.orr`) must exit 2 with `message` at the `nth` occurrence
/// of `needle`, and must not panic; returns what it printed on stderr.
fn fails_at(text: &str, needle: &str, nth: usize, message: &str) -> String {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("orrery-model-dsl-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("s.orr");
    std::fs::write(&p, text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .current_dir(&dir)
        .args(["check", "s.orr"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{text}\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    let want = format!("{}: {message}", at(text, needle, nth));
    assert!(
        err.contains(&want),
        "expected `{want}` in:\n{err}\nfor:\n{text}"
    );
    err.into_owned()
}

#[test]
fn a_declared_model_with_a_full_layout_fills_every_field() {
    let text = scenario(
        TINY,
        "    model tiny\n    parallel ep 2 dp 4 interleave 3 pp 2 sp tp 4\n    sharding zero2\n    recompute selective\n    batch global 64 micro 2\n    precision fp8\n",
    );
    let s = ok(&text);
    let m = s.workloads[0].training[0].model.as_ref().unwrap();
    let t = &m.model;
    assert_eq!(t, &s.models["tiny"]);
    assert_eq!(
        (
            t.name.as_str(),
            t.layers,
            t.hidden,
            t.heads,
            t.kv_heads,
            t.head_dim
        ),
        ("tiny", 24, 2048, 16, 4, 128)
    );
    assert_eq!(
        (t.ffn, t.ffn_kind, t.vocab, t.seq),
        (5632, Ffn::SwiGlu, 32000, 4096)
    );
    assert!(t.tied_embeddings);
    assert_eq!(
        t.moe,
        Some(Moe {
            experts: 8,
            top_k: 2,
            expert_ffn: 1408
        })
    );
    assert_eq!(t.source, "a test model");
    let l = &m.layout;
    assert_eq!((l.tp, l.sp, l.pp, l.dp, l.ep), (4, true, 2, 4, 2));
    assert_eq!(l.schedule, Schedule::Interleaved(3));
    assert_eq!(l.sharding, Sharding::Zero2);
    assert_eq!(l.recompute, Recompute::Selective);
    assert_eq!((l.global_batch, l.micro_batch), (64, 2));
    assert_eq!(m.dtype, "fp8");
    let w = s.workloads[0].training[0].compute.is_none();
    assert!(w && s.workloads[0].training[0].collectives.is_empty());
}

#[test]
fn a_catalog_model_takes_the_defaults() {
    let s = ok(&scenario(
        "",
        "    model llama3_8b\n    parallel tp 8 pp 4\n    sharding fsdp\n    batch global 32 micro 1\n",
    ));
    let m = s.workloads[0].training[0].model.as_ref().unwrap();
    assert_eq!(m.model, catalog::find("llama3_8b").unwrap());
    assert!(s.models.is_empty());
    let l = &m.layout;
    assert_eq!((l.tp, l.sp, l.pp, l.dp, l.ep), (8, false, 4, 1, 1));
    assert_eq!(l.schedule, Schedule::OneFOneB);
    assert_eq!(l.sharding, Sharding::Zero3, "fsdp is ZeRO-3");
    assert_eq!(l.recompute, Recompute::None);
    assert_eq!(m.dtype, "bf16");
    // `interleave 1` is plain 1F1B, so a sweep may include it.
    let s = ok(&scenario(
        "",
        "    model llama3_8b\n    parallel tp 8 pp 4 interleave 1\n    batch global 32 micro 1\n",
    ));
    let l = &s.workloads[0].training[0].model.as_ref().unwrap().layout;
    assert_eq!(l.schedule, Schedule::OneFOneB);
}

#[test]
fn model_defaults_and_from() {
    let s = ok(&scenario(
        "model gpt {\n  layers 12\n  hidden 768\n  heads 12\n  vocab 50257\n  seq 1024\n}\nmodel long from llama3_8b {\n  seq 32768\n}\nmodel wide from llama3_8b {\n  hidden 8192\n  heads 64\n  tied_embeddings false\n}\nmodel moe8 from gpt {\n  moe experts 8 top_k 2\n  source \"ours\"\n}\n",
        "    model long\n    parallel tp 8 dp 4\n    recompute full\n    batch global 32 micro 1\n",
    ));
    let g = &s.models["gpt"];
    assert_eq!(
        (g.kv_heads, g.head_dim, g.ffn, g.ffn_kind),
        (12, 64, 3072, Ffn::Gelu)
    );
    assert!(!g.tied_embeddings && g.moe.is_none() && g.source.is_empty());
    let base = catalog::find("llama3_8b").unwrap();
    let long = &s.models["long"];
    assert_eq!(long.seq, 32768);
    assert_eq!((long.kv_heads, long.head_dim, long.ffn), (8, 128, 14336));
    assert_eq!(long.source, format!("from llama3_8b: {}", base.source));
    let wide = &s.models["wide"];
    assert_eq!(
        (wide.hidden, wide.heads, wide.kv_heads, wide.head_dim),
        (8192, 64, 8, 128)
    );
    let m = &s.models["moe8"];
    assert_eq!(
        m.moe,
        Some(Moe {
            experts: 8,
            top_k: 2,
            expert_ffn: 3072
        })
    );
    assert_eq!(m.source, "ours");
    assert_eq!(
        s.workloads[0].training[0]
            .model
            .as_ref()
            .unwrap()
            .model
            .name,
        "long"
    );
    // `tied_embeddings false` unties a tied base; `head_dim` lifts the hidden / heads rule.
    let s = ok(&scenario(
        "model untied from gpt3_175b {\n  tied_embeddings false\n}\nmodel odd {\n  layers 2\n  hidden 1000\n  heads 3\n  head_dim 320\n  vocab 100\n  seq 64\n}\n",
        "    model odd\n    parallel dp 32\n    batch global 32 micro 1\n    checkpoint every 1 h size 10 GB\n    device_memory 40 GB\n",
    ));
    assert!(catalog::find("gpt3_175b").unwrap().tied_embeddings);
    assert!(!s.models["untied"].tied_embeddings);
    assert_eq!((s.models["odd"].head_dim, s.models["odd"].ffn), (320, 4000));
    // `checkpoint` and `device_memory` stay with the model-level form.
    let t = &s.workloads[0].training[0];
    assert!(t.checkpoint.is_some() && t.device_memory.is_some() && t.model.is_some());
}

#[test]
fn model_block_errors_are_located() {
    let t = scenario("model m {\n  layers 2\n}\n", "");
    fails_at(
        &t,
        "m {",
        0,
        "model `m` is missing `hidden`, `heads`, `vocab`, `seq`",
    );
    let t = scenario(
        "model m {\n  layers 2\n  hidden 64\n  heads 4\n  vocab 100\n  seq 16\n  ffn_kind swiglu\n}\n",
        "",
    );
    fails_at(&t, "m {", 0, "model `m` is missing `ffn`");
    let full = "  hidden 64\n  heads 4\n  vocab 100\n  seq 16\n";
    // A wrong value is one error: the field is not also missing, and a job naming the model
    // is not told it is unknown.
    let t = scenario(
        &format!("model m {{\n  layers 0\n{full}}}\n"),
        "    model m\n    batch global 8 micro 1\n",
    );
    let err = fails_at(&t, "0\n  hidden", 0, "0 is out of range");
    assert!(err.contains("has 1 error"), "{err}");
    let t = scenario(
        "model m from llama3_8b {\n  moe experts 2 top_k 3\n}\nmodel n from m {\n  seq 8\n}\n",
        "    model n\n    batch global 8 micro 1\n",
    );
    let err = fails_at(&t, "3\n}", 0, "top_k 3 is more than the 2 experts");
    assert!(err.contains("has 1 error"), "{err}");
    let t = scenario(
        &format!("model m {{\n  layers 2\n{full}  moe experts 2 top_k 3\n}}\n"),
        "",
    );
    fails_at(&t, "3\n}", 0, "top_k 3 is more than the 2 experts");
    let t = scenario(
        &format!("model m {{\n  layers 2\n{full}  kv_heads 3\n}}\n"),
        "",
    );
    fails_at(
        &t,
        "3\n}",
        0,
        "4 heads do not split into groups of 3 key/value heads",
    );
    let t = scenario(
        "model m {\n  layers 2\n  hidden 66\n  heads 4\n  vocab 100\n  seq 16\n}\n",
        "",
    );
    fails_at(&t, "66", 0, "`hidden` 66 is not a multiple of `heads` 4");
    let t = scenario(&format!("model llama3_8b {{\n  layers 2\n{full}}}\n"), "");
    fails_at(&t, "llama3_8b {", 0, "`llama3_8b` is a catalog model");
    let t = scenario(
        &format!("model m {{\n  layers 2\n{full}}}\nmodel m {{\n  layers 3\n{full}}}\n"),
        "",
    );
    fails_at(&t, "m {", 1, "model `m` is declared twice");
    let t = scenario("model m from llama3_7b {\n  seq 16\n}\n", "");
    fails_at(&t, "llama3_7b", 0, "unknown model `llama3_7b`");
    let t = scenario(&format!("model m {{\n  layer 2\n{full}}}\n"), "");
    fails_at(&t, "layer 2", 0, "unknown statement `layer` in a model");
    let t = scenario(
        &format!("model m {{\n  layers 2\n{full}  ffn_kind relu\n}}\n"),
        "",
    );
    fails_at(&t, "relu", 0, "unknown feed-forward kind `relu`");
}

#[test]
fn training_errors_are_located() {
    let job = |lines: &str| scenario(TINY, lines);
    let batch = "    batch global 64 micro 2\n";
    // Names.
    let t = job(&format!("    model tinny\n{batch}"));
    fails_at(&t, "tinny", 0, "unknown model `tinny`");
    let t = job(&format!("    model llama3_7b\n{batch}"));
    fails_at(&t, "llama3_7b", 0, "unknown model `llama3_7b`");
    // One form or the other.
    let t = job(&format!(
        "    model tiny\n    parallel tp 4 dp 8\n{batch}    compute 1 PFLOP per device bf16\n"
    ));
    fails_at(&t, "compute 1", 0, "`compute` cannot be used with `model`");
    let t = job(&format!(
        "    allreduce 1 GB\n    model tiny\n    parallel tp 4 dp 8\n{batch}"
    ));
    fails_at(
        &t,
        "allreduce",
        0,
        "`allreduce` cannot be used with `model`",
    );
    for (line, key) in [
        ("    parallel tp 4 dp 8\n", "parallel"),
        ("    sharding zero1\n", "sharding"),
        ("    recompute full\n", "recompute"),
        (batch, "batch"),
        ("    precision bf16\n", "precision"),
    ] {
        let t = job(&format!("    compute 1 PFLOP per device bf16\n{line}"));
        fails_at(
            &t,
            &format!("{key} "),
            0,
            &format!("`{key}` needs `model` in the same training job"),
        );
    }
    let t = job("    model tiny\n    parallel tp 4 dp 8\n");
    fails_at(
        &t,
        "model tiny\n    parallel",
        0,
        "training `t` names a model but no batch",
    );
    let t = job(&format!("    model tiny\n    parallel\n{batch}"));
    fails_at(&t, "\n    batch", 0, "`parallel` needs at least one part");
    let t = job(&format!(
        "    model tiny\n    parallel tp 4 dp 8\n    sharding zero4\n{batch}"
    ));
    fails_at(&t, "zero4", 0, "unknown sharding `zero4`");
    let t = job(&format!(
        "    model tiny\n    parallel tp 4 dp 8\n    precision fp7\n{batch}"
    ));
    fails_at(&t, "fp7", 0, "unknown dtype `fp7`");
    let t = job(&format!(
        "    model tiny\n    parallel tp 4 dp 8 tp 2\n{batch}"
    ));
    fails_at(&t, "tp 2", 0, "`tp` is given twice in `parallel`");
    let t = job(&format!(
        "    model tiny\n    parallel tp 4 dp 8\n    parallel tp 4 dp 8\n{batch}"
    ));
    fails_at(
        &t,
        "parallel",
        1,
        "`parallel` is given twice in a training job",
    );
    let t = job(&format!("    model tiny\n    parallel tp 0 dp 8\n{batch}"));
    fails_at(&t, "0 dp", 0, "0 is out of range");
}

#[test]
fn layouts_must_fit_the_model() {
    let job = |par: &str, batch: &str| {
        scenario(
            &format!(
                "{TINY}model dense {{\n  layers 24\n  hidden 2048\n  heads 16\n  vocab 32000\n  seq 1000\n}}\n"
            ),
            &format!(
                "    model {}\n    parallel {par}\n    batch {batch}\n",
                if par.contains("ep") { "tiny" } else { "dense" }
            ),
        )
    };
    let g = "global 64 micro 2";
    fails_at(
        &job("tp 3 dp 8", g),
        "3 dp 8",
        0,
        "tp 3 does not divide the 16 attention heads of `dense`",
    );
    fails_at(
        &scenario(
            TINY,
            &format!("    model tiny\n    parallel tp 8 dp 4\n    batch {g}\n"),
        ),
        "8 dp 4",
        0,
        "tp 8 does not divide the 4 key/value heads of `tiny`",
    );
    fails_at(
        &job("pp 5 dp 8", g),
        "5 dp 8",
        0,
        "pp 5 stages do not split the 24 layers of `dense` evenly",
    );
    fails_at(
        &job("pp 2 interleave 5 dp 16", g),
        "5 dp 16",
        0,
        "pp 2 × interleave 5 = 10 model chunks do not split the 24 layers of `dense` evenly",
    );
    fails_at(
        &job("tp 4 dp 8", "global 60 micro 2"),
        "60 micro",
        0,
        "global batch 60 is not a whole number of microbatches of 2 on each of the 8 data-parallel replicas",
    );
    fails_at(
        &job("interleave 2 dp 32", g),
        "2 dp 32",
        0,
        "the interleaved schedule (`interleave` above 1) needs pipelining",
    );
    fails_at(
        &job("tp 2 pp 4 interleave 2 dp 4", "global 24 micro 1"),
        "2 dp 4",
        0,
        "the interleaved schedule needs the microbatches per replica (6) to be a multiple of pp 4",
    );
    fails_at(
        &job("sp dp 32", g),
        "sp dp",
        0,
        "sequence parallelism (`sp`) needs tensor parallelism",
    );
    fails_at(
        &job("tp 16 sp dp 2", g),
        "sp dp",
        0,
        "`sp` splits the sequence over the tp ranks, but tp 16 does not divide the sequence of 1000 tokens",
    );
    // Expert parallelism: MoE only, dividing the experts and dp.
    let dense_ep = scenario(
        "",
        &format!("    model llama3_8b\n    parallel tp 8 dp 4 ep 2\n    batch {g}\n"),
    );
    fails_at(
        &dense_ep,
        "2\n    batch",
        0,
        "`ep` splits experts, but `llama3_8b` has none",
    );
    fails_at(
        &job("tp 4 dp 8 ep 3", g),
        "3\n    batch",
        0,
        "ep 3 does not divide the 8 experts of `tiny`",
    );
    fails_at(
        &job("tp 4 dp 8 ep 3", g),
        "3\n    batch",
        0,
        "ep 3 does not divide dp 8",
    );
    fails_at(
        &job("tp 4 pp 4 dp 2 ep 4", g),
        "4\n    batch",
        0,
        "ep 4 does not divide dp 2",
    );
}

#[test]
fn the_layout_must_use_every_device_of_its_group() {
    let t = scenario(
        TINY,
        "    model tiny\n    parallel tp 4 pp 2 dp 2\n    batch global 64 micro 2\n",
    );
    fails_at(
        &t,
        "parallel",
        0,
        "training `t` lays `tiny` over tp 4 × pp 2 × dp 2 = 16 devices, but its placement group requests 32",
    );
    let t = scenario(TINY, "    model tiny\n    batch global 64 micro 2\n");
    fails_at(
        &t,
        "model tiny\n    batch",
        0,
        "training `t` lays `tiny` over tp 1 × pp 1 × dp 1 = 1 device, but its placement group requests 32",
    );
    // A slice group gets a whole slice: its chips.
    let tpu = |par: &str| {
        format!(
            "cluster c {{\n  slice s[0..1] node tpu_v5p_host topology 2x2x4\n}}\n\nworkload w {{\n  placement_group g slice {{\n  }}\n  training t on g steps 10 {{\n    model llama3_8b\n    parallel {par}\n    batch global 32 micro 1\n  }}\n}}\n"
        )
    };
    ok(&tpu("tp 4 dp 4"));
    fails_at(
        &tpu("tp 4 dp 2"),
        "parallel",
        0,
        "training `t` lays `llama3_8b` over tp 4 × pp 1 × dp 2 = 8 devices, but a slice it could get has 16",
    );
}

/// Model scenarios cut short or mangled end in located errors or a valid spec, never a panic.
#[test]
fn truncated_and_mangled_model_blocks_never_panic() {
    let text = scenario(
        &format!("{TINY}model long from llama3_8b {{\n  seq 32768\n}}\n"),
        "    model tiny\n    parallel tp 4 sp pp 2 interleave 3 dp 4 ep 2\n    sharding fsdp\n    recompute full\n    batch global 64 micro 2\n    precision bf16\n",
    );
    ok(&text);
    let located = |src: &str| {
        let l = load_str("m.orr", src);
        for d in &l.diags {
            let len = l.sources.file(d.span.file).text.len();
            assert!(d.span.start <= d.span.end && d.span.end <= len, "{src}");
        }
        if l.has_errors() {
            let first = l.render(false).lines().next().unwrap_or("").to_string();
            assert!(first.contains("m.orr:"), "unlocated: {first}\n{src}");
        }
    };
    for k in (0..=text.len()).filter(|k| text.is_char_boundary(*k)) {
        located(&text[..k]);
    }
    // Each token replaced by junk in turn: values, words and braces.
    let tokens: Vec<(usize, usize)> = text
        .char_indices()
        .filter(|(k, c)| {
            !c.is_whitespace() && (*k == 0 || text[..*k].ends_with(char::is_whitespace))
        })
        .map(|(k, _)| {
            (
                k,
                text[k..]
                    .find(char::is_whitespace)
                    .map_or(text.len(), |e| k + e),
            )
        })
        .collect();
    for (s, e) in tokens {
        for junk in [
            "0",
            "-1",
            "1e999",
            "x",
            "{",
            "}",
            "\"",
            "99999999999",
            "tp",
            "1.5",
        ] {
            located(&format!("{}{junk}{}", &text[..s], &text[e..]));
        }
        located(&format!("{}{}", &text[..s], &text[e..]));
    }
}

/// A swept layout part is validated like a written one, and reported at the swept value.
#[test]
fn a_swept_layout_is_checked_at_its_sweep_line() {
    let text = format!(
        "{}\nexperiment e {{\n  sweep workload.w.training.t.parallel.tp in [4, 8]\n}}\n",
        scenario(
            TINY,
            "    model tiny\n    parallel tp 4 pp 2 dp 4\n    batch global 64 micro 2\n"
        )
    );
    fails_at(
        &text,
        "8]",
        0,
        "tp 8 does not divide the 4 key/value heads of `tiny`",
    );
    let moved = text
        .replace("[4, 8]", "[2, 4]")
        .replace("tp 4 pp 2 dp 4", "pp 2 dp 4 tp 4");
    fails_at(
        &moved,
        "2, 4]",
        0,
        "with workload.w.training.t.parallel.tp = 2: training `t` lays `tiny` over tp 2 × pp 2 × dp 4 = 16 devices",
    );
    ok(&moved.replace("[2, 4]", "[4]"));
}
