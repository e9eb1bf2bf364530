//! The engine settings a benchmark harness picks for itself, so a row runs the engine as it
//! was measured (not tuned to the row: computed from the row's model, node and lengths, as
//! the harness computes them).

use crate::scenario::Spec;

/// `trtllm-bench`'s batch limits for a model, its tensor-parallel size, and the benchmark's
/// input and output lengths: `calc_engine_setting` and `finetune_setting` of
/// NVIDIA/TensorRT-LLM `tensorrt_llm/bench/build/tuning.py` (read at commit 04cba882, later
/// than the v0.17 tables; the heuristic is the one the benchmark documents, "a slightly
/// optimistic upper bound"). KV bytes per token use max(tp, kv heads) heads; the engine is
/// the parameters at the weights' bytes; 0.95 of what the TP group's memory leaves holds
/// the KV cache of whole requests (input + output tokens). Memory is the catalog's, in GiB
/// as `get_device_memory` reports it. Returns (max_batch_size, max_num_tokens).
pub fn trtllm_bench(spec: &Spec) -> Result<(u32, u32), String> {
    let llm = spec
        .workloads
        .iter()
        .flat_map(|w| w.services.iter())
        .find_map(|s| s.llm.as_ref())
        .ok_or("no LLM service")?;
    // The accelerator of the cluster's (first) node type: the catalog's other types are in
    // `node_types` too.
    let acc = spec
        .cluster
        .as_ref()
        .and_then(|c| c.groups.first())
        .and_then(|g| spec.node_types.get(&g.node_type))
        .and_then(|n| n.devices.first())
        .and_then(|d| spec.accelerators.get(&d.accelerator))
        .ok_or("no accelerator on the cluster's nodes")?;
    let gib = 1024f64.powi(3);
    let m = &llm.model;
    let (tp, pp) = (f64::from(llm.tp), f64::from(llm.pp));
    let elem = crate::model::dtype_bytes(&llm.dtype);
    let kv_elem = crate::model::dtype_bytes(&llm.kv_dtype);
    let heads = tp.max(f64::from(m.kv_heads));
    let per_token = 2.0 * f64::from(m.layers) * heads * m.head_dim as f64 * kv_elem / gib;
    let engine = m.params() * elem / gib;
    let total = acc.memory.0 as f64 / gib * tp * pp;
    let cache = (total - engine) * 0.95;
    let (isl, osl) = (f64::from(llm.prompt.max()), f64::from(llm.output.max()));
    let requests = cache / (per_token * (isl + osl));
    if requests < 1.0 {
        return Err("the KV cache holds no request".into());
    }
    Ok(finetune(requests, isl, osl, pp))
}

/// The `engine` words of the engine trtllm-bench runs for the first LLM service of `spec`:
/// [`trtllm_bench`]'s sequences and tokens, chunked context and the MAX_UTILIZATION
/// scheduler (no whole-request reservation): its `ExecutorSettingsConfig` defaults
/// (`tensorrt_llm/bench/dataclasses/configuration.py` at 000a01de: `chunking = True`,
/// `scheduler_policy = MAX_UTILIZATION`).
pub fn trtllm_bench_words(spec: &Spec) -> Result<String, String> {
    let (bs, tokens) = trtllm_bench(spec)?;
    Ok(format!(
        "max_seqs {bs} token_budget {tokens} chunked_prefill on reserve prompt"
    ))
}

/// `finetune_setting` with optimistic tuning (tuning.py).
fn finetune(requests: f64, isl: f64, osl: f64, pp: f64) -> (u32, u32) {
    let raw_bs = requests.min(4096.0) / pp;
    let raw_token = (raw_bs * (1.0 + isl / osl)).min(32768.0);
    let bs = if raw_bs < 256.0 {
        (32.0 * (raw_bs / 32.0).ceil()).max(64.0)
    } else if raw_bs < 1024.0 {
        128.0 * (raw_bs / 128.0).ceil()
    } else {
        256.0 * (raw_bs / 256.0).ceil()
    };
    let tokens = if raw_token < 4096.0 {
        (256.0 * (raw_token / 256.0).ceil()).max(2048.0)
    } else if raw_token < 8192.0 {
        512.0 * (raw_token / 512.0).ceil()
    } else {
        1024.0 * (raw_token / 1024.0).ceil()
    };
    (bs as u32, tokens as u32)
}

#[cfg(test)]
mod tests {
    use super::{finetune, trtllm_bench};

    #[test]
    fn trtllm_bench_sizes_a_dgx_h100_engine_as_tuning_py() {
        // Llama-3 8B in fp8 (8,030,261,248 parameters, 1 byte each; fp8 KV: 2 × 32 layers ×
        // 8 heads × 128 × 1 byte a token) on one H100 of the catalog's 81,559 MiB (the
        // driver's total), 128/2048 tokens: (79.647 − 7.479) GiB × 0.95 of cache holds 516.2
        // requests of 2,176 tokens, so the batch rounds up to 640 (128s below 1024) and the
        // tokens, 516.2 × (1 + 128/2048) = 548, to the floor of 2048.
        let text = "cluster c {\n  node dgx_h100 x 1\n}\nworkload w {\n  service s {\n    model llama3_8b\n    precision fp8\n    resources { GPU: 1 }\n    arrival offline 10\n    prompt tokens fixed 128\n    output tokens fixed 2048\n    engine trtllm\n  }\n}\n";
        let l = crate::load_str("t.orr", text);
        assert!(!l.has_errors(), "{}", l.render(false));
        let spec = l.spec.unwrap();
        assert_eq!(trtllm_bench(&spec), Ok((640, 2048)));
        assert_eq!(
            super::trtllm_bench_words(&spec).as_deref(),
            Ok("max_seqs 640 token_budget 2048 chunked_prefill on reserve prompt")
        );
    }

    #[test]
    fn finetune_rounds_as_tuning_py() {
        // 515 requests of 128 + 2048 tokens: batch up to the next 128, tokens at least 2048.
        assert_eq!(finetune(515.0, 128.0, 2048.0, 1.0), (640, 2048));
        // Few requests: at least 64 sequences and 2048 tokens.
        assert_eq!(finetune(20.0, 5000.0, 500.0, 1.0), (64, 2048));
        // Long prompts: tokens = batch × (1 + isl/osl), rounded up to 1024 from 8192.
        assert_eq!(finetune(1000.0, 5000.0, 500.0, 1.0), (1024, 11264));
        // Capped: 4096 requests and 32768 tokens.
        assert_eq!(finetune(10_000.0, 5000.0, 500.0, 1.0), (4096, 32768));
        // 2 pipeline stages halve the batch.
        assert_eq!(finetune(600.0, 1000.0, 1000.0, 2.0), (384, 2048));
    }
}
