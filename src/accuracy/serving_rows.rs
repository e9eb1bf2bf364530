//! Serving rows of the accuracy table: a published throughput, the scenario Orrery runs
//! for it (the engine the row names, its load, the table's profiles) and its tolerance.

use super::table::words;
use super::{Case, Entry, Kind};
use serde::Deserialize;

/// A published serving throughput: a model-level service on one catalog node under the
/// benchmark's offline load, the table's profiles, Orrery's engine defaults.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ServingRow {
    id: String,
    system: String,
    /// The engine that was measured (words, for the reader: Orrery runs its own engine model).
    engine: String,
    node: String,
    model: String,
    tp: u32,
    precision: String,
    prompt_tokens: u32,
    output_tokens: u32,
    requests: u64,
    /// Published output tokens per second of the whole replica.
    output_tokens_per_s: f64,
    source: String,
    fitted: bool,
    /// The engine Orrery models it as (`vllm`, `trtllm`, `sglang`).
    runs: String,
    /// The harness chose the batch limits (`trtllm-bench`), computed as it computes them.
    #[serde(default)]
    harness: Option<String>,
    /// Batch limits the published command set.
    #[serde(default)]
    max_seqs: Option<u32>,
    #[serde(default)]
    token_budget: Option<u32>,
    /// KV cache dtype when not the weights'.
    #[serde(default)]
    kv: Option<String>,
    /// Replicas of `tp` devices each on the node (data parallel behind one client).
    #[serde(default)]
    replicas: Option<u32>,
    /// Clients of a closed loop (`arrival concurrency N requests M`); none: offline.
    #[serde(default)]
    concurrency: Option<u32>,
    /// Largest decode batch the run captured as a CUDA graph, where it says.
    #[serde(default)]
    graph_batch: Option<u32>,
    /// How the benchmark drew each request's lengths: `fixed` (the default) at
    /// `prompt_tokens`/`output_tokens`, or `uniform` from 1 to them, independently (SGLang's
    /// `bench_serving --dataset-name random` at its default `--random-range-ratio 0`).
    #[serde(default)]
    lengths: Option<String>,
}

/// The entry of serving row `v` of table `name`.
pub(super) fn entry(
    name: &str,
    v: &ServingRow,
    profiles: &[String],
    calibration: &str,
    tolerance: f64,
    median_tolerance: Option<f64>,
) -> Result<Entry, String> {
    words(
        name,
        &v.id,
        profiles
            .iter()
            .map(|p| ("profile", p))
            .chain([
                ("node", &v.node),
                ("model", &v.model),
                ("precision", &v.precision),
                ("runs", &v.runs),
            ])
            .chain(v.kv.iter().map(|k| ("kv", k))),
    )?;
    if !crate::model::engines::WORDS.contains(&v.runs.as_str()) {
        return Err(format!(
            "{name}: {}: runs `{}` is not one of {}",
            v.id,
            v.runs,
            crate::model::engines::WORDS.join(", ")
        ));
    }
    let trtllm_bench = match v.harness.as_deref() {
        None => false,
        Some("trtllm-bench") => true,
        Some(h) => {
            return Err(format!(
                "{name}: {}: harness `{h}` is not known (trtllm-bench)",
                v.id
            ));
        }
    };
    let uniform = match v.lengths.as_deref() {
        None | Some("fixed") => false,
        Some("uniform") => true,
        Some(l) => {
            return Err(format!(
                "{name}: {}: lengths `{l}` is not `fixed` or `uniform`",
                v.id
            ));
        }
    };
    let tokens = |n: u32| {
        if uniform {
            format!("uniform 1..{n}")
        } else {
            format!("fixed {n}")
        }
    };
    let replicas = v.replicas.unwrap_or(1);
    let arrival = match v.concurrency {
        Some(c) if (1..=1_000_000).contains(&c) => {
            format!("concurrency {c} requests {}", v.requests)
        }
        Some(_) => return Err(format!("{name}: {}: concurrency 1 to 1000000", v.id)),
        None => format!("offline {}", v.requests),
    };
    if !(1..=64).contains(&replicas)
        || v.max_seqs.is_some_and(|n| !(1..=65_536).contains(&n))
        || v.token_budget
            .is_some_and(|n| !(1..=1_048_576).contains(&n))
        || v.graph_batch.is_some_and(|n| !(1..=65_536).contains(&n))
    {
        return Err(format!(
            "{name}: {}: replicas 1 to 64, max_seqs and graph_batch 1 to 65536, token_budget 1 to 1048576",
            v.id
        ));
    }
    let mut engine = format!("engine {}", v.runs);
    if let Some(n) = v.max_seqs {
        engine += &format!(" max_seqs {n}");
    }
    if let Some(n) = v.token_budget {
        engine += &format!(" token_budget {n}");
    }
    if let Some(n) = v.graph_batch {
        engine += &format!(" graph_batch {n}");
    }
    if !((1..=64).contains(&v.tp)
        && (1..=1_000_000).contains(&v.requests)
        && (1..=1_000_000).contains(&v.prompt_tokens)
        && (1..=1_000_000).contains(&v.output_tokens)
        && v.output_tokens_per_s.is_finite()
        && v.output_tokens_per_s > 0.0)
    {
        return Err(format!(
            "{name}: {}: tp 1 to 64, 1 to 1000000 requests and tokens, a positive throughput",
            v.id
        ));
    }
    Ok(Entry {
        id: v.id.clone(),
        kind: Kind::Serving,
        system: v.system.clone(),
        config: format!(
            "{} {} tp {}{} on {}, {} requests of {}{}/{} tokens {} as {} (measured: {})",
            v.model,
            v.precision,
            v.tp,
            v.replicas
                .map_or(String::new(), |r| format!(" x {r} replicas")),
            v.node,
            v.requests,
            if uniform { "1 to " } else { "" },
            v.prompt_tokens,
            v.output_tokens,
            v.concurrency
                .map_or("at once".to_string(), |c| format!("by {c} clients")),
            v.runs,
            v.engine
        ),
        source: v.source.clone(),
        metric: "output tok/s",
        published: v.output_tokens_per_s,
        tolerance,
        median_tolerance,
        fitted: v.fitted,
        case: Case::Serving {
            scenario: format!(
                "{calibration}cluster accuracy {{\n  node {node} x 1\n}}\n\nworkload w {{\n  service s {{\n    model {model}\n    parallel tp {tp}\n    precision {precision}{kv}\n    replicas {replicas}\n    resources {{ GPU: {tp} }}\n    arrival {arrival}\n    prompt tokens {isl}\n    output tokens {osl}\n    {{ENGINE}}\n  }}\n}}\n",
                node = v.node,
                model = v.model,
                tp = v.tp,
                precision = v.precision,
                kv = v.kv.as_ref().map_or(String::new(), |k| format!(" kv {k}")),
                isl = tokens(v.prompt_tokens),
                osl = tokens(v.output_tokens),
            ),
            engine,
            trtllm_bench,
        },
    })
}
