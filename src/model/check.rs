//! Whether a (model, layout) pair can be laid out, and the whole numbers it splits into.
//! Every formula in `memory` and `work` divides by these, so they check here first and
//! return a plain message instead of dividing by zero or splitting a head in two.

use super::types::{Layout, Schedule, Transformer};

/// The integer split of a valid layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// Microbatches per iteration per replica: global_batch / (micro_batch × dp).
    pub microbatches: u64,
    /// Model chunks per pipeline stage: 1 for 1F1B, `v` interleaved.
    pub chunks: u32,
    /// Layers one stage holds (all its chunks): layers / pp.
    pub layers_per_stage: u32,
    /// Data-parallel replicas of one expert shard: dp / ep (dp for a dense model).
    pub expert_dp: u32,
}

/// Checks `m` and `l` and returns their split, or why they do not divide.
pub fn check(m: &Transformer, l: &Layout) -> Result<Split, String> {
    let positive = [
        ("layers", u64::from(m.layers)),
        ("hidden", m.hidden),
        ("heads", u64::from(m.heads)),
        ("kv_heads", u64::from(m.kv_heads)),
        ("head_dim", m.head_dim),
        ("ffn", m.ffn),
        ("vocab", m.vocab),
        ("seq", m.seq),
        ("tp", u64::from(l.tp)),
        ("pp", u64::from(l.pp)),
        ("dp", u64::from(l.dp)),
        ("ep", u64::from(l.ep)),
        ("global_batch", l.global_batch),
        ("micro_batch", l.micro_batch),
    ];
    for (name, v) in positive {
        if v == 0 {
            return Err(format!("{name} must be at least 1"));
        }
    }
    let divides = |what: &str, n: u64, by: &str, d: u64| {
        if n.is_multiple_of(d) {
            Ok(())
        } else {
            Err(format!("{what} ({n}) is not a multiple of {by} ({d})"))
        }
    };
    divides("heads", m.heads.into(), "kv_heads", m.kv_heads.into())?;
    divides("heads", m.heads.into(), "tp", l.tp.into())?;
    divides("kv_heads", m.kv_heads.into(), "tp", l.tp.into())?;
    let chunks = match l.schedule {
        Schedule::OneFOneB => 1,
        Schedule::Interleaved(0) => return Err("interleaved chunks must be at least 1".into()),
        Schedule::Interleaved(v) => v,
    };
    let stages = u64::from(l.pp) * u64::from(chunks);
    divides("layers", m.layers.into(), "pp × chunks", stages)?;
    let per_step = l.micro_batch.saturating_mul(l.dp.into());
    divides("global_batch", l.global_batch, "micro_batch × dp", per_step)?;
    match m.moe {
        None if l.ep > 1 => {
            return Err(format!(
                "ep ({}) needs a mixture-of-experts model; {} is dense",
                l.ep, m.name
            ));
        }
        None => divides("ffn", m.ffn, "tp", l.tp.into())?,
        Some(e) => {
            if e.experts == 0 || e.top_k == 0 || e.expert_ffn == 0 {
                return Err("experts, top_k and expert_ffn must be at least 1".into());
            }
            if e.top_k > e.experts {
                return Err(format!(
                    "top_k ({}) exceeds the number of experts ({})",
                    e.top_k, e.experts
                ));
            }
            divides("experts", e.experts.into(), "ep", l.ep.into())?;
            divides("dp", l.dp.into(), "ep", l.ep.into())?;
            divides("expert_ffn", e.expert_ffn, "tp", l.tp.into())?;
        }
    }
    Ok(Split {
        microbatches: l.global_batch / per_step,
        chunks,
        layers_per_stage: m.layers / l.pp,
        expert_dp: l.dp / l.ep,
    })
}

/// Checks a dtype's size in bytes (finite and positive).
pub fn check_dtype(dtype_bytes: f64) -> Result<(), String> {
    if dtype_bytes.is_finite() && dtype_bytes > 0.0 {
        Ok(())
    } else {
        Err(format!("dtype bytes must be positive, not {dtype_bytes}"))
    }
}
