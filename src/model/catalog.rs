//! Well-known models by name, with their published shapes and where they come from.
//! `model llama3_70b` in a training job or service refers to these; a scenario's own
//! `model NAME { ... }` block may shadow none of them (a name is one model).

use super::types::{Ffn, Moe, Transformer};

struct Entry {
    name: &'static str,
    layers: u32,
    hidden: u64,
    heads: u32,
    kv_heads: u32,
    ffn: u64,
    ffn_kind: Ffn,
    vocab: u64,
    seq: u64,
    tied: bool,
    moe: Option<(u32, u32)>,
    source: &'static str,
}

const LLAMA3: &str = "Dubey et al. 2024, \"The Llama 3 Herd of Models\", Table 3; \
                      config.json of meta-llama/Meta-Llama-3";
const KORTHIKANTI: &str = "Korthikanti et al. 2022, \"Reducing Activation Recomputation in \
                           Large Transformer Models\", Table 3 (vocabulary 51,200 as in \
                           Narayanan et al. 2021, §5.1)";

const ENTRIES: &[Entry] = &[
    Entry {
        name: "llama3_8b",
        layers: 32,
        hidden: 4096,
        heads: 32,
        kv_heads: 8,
        ffn: 14336,
        ffn_kind: Ffn::SwiGlu,
        vocab: 128_256,
        seq: 8192,
        tied: false,
        moe: None,
        source: LLAMA3,
    },
    Entry {
        name: "llama3_70b",
        layers: 80,
        hidden: 8192,
        heads: 64,
        kv_heads: 8,
        ffn: 28672,
        ffn_kind: Ffn::SwiGlu,
        vocab: 128_256,
        seq: 8192,
        tied: false,
        moe: None,
        source: LLAMA3,
    },
    Entry {
        name: "llama3_405b",
        layers: 126,
        hidden: 16384,
        heads: 128,
        kv_heads: 8,
        ffn: 53248,
        ffn_kind: Ffn::SwiGlu,
        vocab: 128_256,
        seq: 8192,
        tied: false,
        moe: None,
        source: LLAMA3,
    },
    Entry {
        name: "gpt3_175b",
        layers: 96,
        hidden: 12288,
        heads: 96,
        kv_heads: 96,
        ffn: 49152,
        ffn_kind: Ffn::Gelu,
        vocab: 50257,
        seq: 2048,
        tied: true,
        moe: None,
        source: "Brown et al. 2020, \"Language Models are Few-Shot Learners\", Table 2.1",
    },
    Entry {
        name: "mixtral_8x7b",
        layers: 32,
        hidden: 4096,
        heads: 32,
        kv_heads: 8,
        ffn: 14336,
        ffn_kind: Ffn::SwiGlu,
        vocab: 32000,
        seq: 32768,
        tied: false,
        moe: Some((8, 2)),
        source: "Jiang et al. 2024, \"Mixtral of Experts\", Table 1",
    },
    Entry {
        name: "megatron_22b",
        layers: 48,
        hidden: 6144,
        heads: 64,
        kv_heads: 64,
        ffn: 24576,
        ffn_kind: Ffn::Gelu,
        vocab: 51200,
        seq: 2048,
        tied: true,
        moe: None,
        source: KORTHIKANTI,
    },
    Entry {
        name: "megatron_175b",
        layers: 96,
        hidden: 12288,
        heads: 96,
        kv_heads: 96,
        ffn: 49152,
        ffn_kind: Ffn::Gelu,
        vocab: 51200,
        seq: 2048,
        tied: true,
        moe: None,
        source: KORTHIKANTI,
    },
    Entry {
        name: "megatron_530b",
        layers: 105,
        hidden: 20480,
        heads: 128,
        kv_heads: 128,
        ffn: 81920,
        ffn_kind: Ffn::Gelu,
        vocab: 51200,
        seq: 2048,
        tied: true,
        moe: None,
        source: KORTHIKANTI,
    },
    Entry {
        name: "megatron_1t",
        layers: 128,
        hidden: 25600,
        heads: 160,
        kv_heads: 160,
        ffn: 102_400,
        ffn_kind: Ffn::Gelu,
        vocab: 51200,
        seq: 2048,
        tied: true,
        moe: None,
        source: KORTHIKANTI,
    },
];

/// The catalog's model names, in catalog order.
pub fn names() -> impl Iterator<Item = &'static str> {
    ENTRIES.iter().map(|e| e.name)
}

/// The catalog model `name`.
pub fn find(name: &str) -> Option<Transformer> {
    let e = ENTRIES.iter().find(|e| e.name == name)?;
    Some(Transformer {
        name: e.name.to_string(),
        layers: e.layers,
        hidden: e.hidden,
        heads: e.heads,
        kv_heads: e.kv_heads,
        head_dim: e.hidden / u64::from(e.heads),
        ffn: e.ffn,
        ffn_kind: e.ffn_kind,
        vocab: e.vocab,
        seq: e.seq,
        tied_embeddings: e.tied,
        moe: e.moe.map(|(experts, top_k)| Moe {
            experts,
            top_k,
            expert_ffn: e.ffn,
        }),
        source: e.source.to_string(),
    })
}
