//! Whether a (model, layout) pair can be laid out, and the whole numbers it splits into.
//! Every formula in `memory` and `work` divides by these, so they check here first and
//! return a plain message instead of dividing by zero or splitting a head in two.

use super::types::{Attention, Layout, Schedule, Setup, Transformer};

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
    check_with(m, l, &Setup::default())
}

/// Layers of the first, a middle and the last stage of `l` with `s` (Megatron-Core
/// `TransformerConfig.__post_init__`, "Uneven PP", at Megatron-LM d98e8a6: the first and last
/// stages take what they are given, the stages between split the rest evenly); with even
/// stages all three are layers / pp; without middle stages the middle count is 0.
pub fn stage_layers(m: &Transformer, l: &Layout, s: &Setup) -> (u32, u32, u32) {
    let pp = l.pp.max(1);
    if pp == 1 || (s.first_stage.is_none() && s.last_stage.is_none()) {
        let n = m.layers / pp;
        return (n, n, n);
    }
    let middle_stages = pp - u32::from(s.first_stage.is_some()) - u32::from(s.last_stage.is_some());
    let rest = m
        .layers
        .saturating_sub(s.first_stage.unwrap_or(0) + s.last_stage.unwrap_or(0));
    let middle = rest.checked_div(middle_stages).unwrap_or(0);
    (
        s.first_stage.unwrap_or(middle),
        middle,
        s.last_stage.unwrap_or(middle),
    )
}

/// [`check`] with the settings of `s`: context parallelism needs fused attention, a sequence
/// of whole 2·cp chunks (Megatron-LM's load-balanced split gives each rank two chunks) and no
/// expert parallelism (not modelled); uneven stages follow Megatron-Core's rules (each given
/// stage at least one layer and a multiple of `interleave`, the rest split evenly over the
/// stages between, each a multiple of `interleave`).
pub fn check_with(m: &Transformer, l: &Layout, s: &Setup) -> Result<Split, String> {
    if s.cp == 0 {
        return Err("cp must be at least 1".into());
    }
    if s.cp > 1 {
        if l.attention != Attention::Flash {
            return Err("context parallelism needs fused attention (`attention flash`)".into());
        }
        if !m.seq.is_multiple_of(2 * u64::from(s.cp)) {
            return Err(format!(
                "seq ({}) is not a multiple of 2 × cp ({})",
                m.seq,
                2 * s.cp
            ));
        }
        if l.ep > 1 {
            return Err("context parallelism with expert parallelism is not modelled".into());
        }
        if l.sp && !(m.seq / u64::from(s.cp)).is_multiple_of(u64::from(l.tp)) {
            return Err(format!(
                "seq / cp ({}) is not a multiple of tp ({})",
                m.seq / u64::from(s.cp),
                l.tp
            ));
        }
    }
    if s.first_stage.is_none() && s.last_stage.is_none() {
        return check_even(m, l);
    }
    // Uneven stages: check them here, then the rest with an even layer count.
    if l.pp < 2 {
        return Err("uneven stages need pp of at least 2".into());
    }
    let v = match l.schedule {
        Schedule::Interleaved(v) => v.max(1),
        Schedule::OneFOneB => 1,
    };
    for (what, n) in [("first", s.first_stage), ("last", s.last_stage)] {
        if let Some(n) = n {
            if n == 0 {
                return Err(format!("the {what} stage needs at least one layer"));
            }
            if n % v != 0 {
                return Err(format!(
                    "the {what} stage's {n} layers are not a multiple of interleave {v}"
                ));
            }
        }
    }
    let given = s.first_stage.unwrap_or(0) + s.last_stage.unwrap_or(0);
    let middle_stages =
        l.pp - u32::from(s.first_stage.is_some()) - u32::from(s.last_stage.is_some());
    if given > m.layers {
        return Err(format!(
            "the first and last stages' {given} layers exceed the model's {}",
            m.layers
        ));
    }
    let rest = m.layers - given;
    if (rest == 0) != (middle_stages == 0) {
        return Err(format!(
            "{rest} layers are left for {middle_stages} stages between the first and the last"
        ));
    }
    if middle_stages > 0
        && (!rest.is_multiple_of(middle_stages) || !(rest / middle_stages).is_multiple_of(v))
    {
        return Err(format!(
            "the {rest} layers left do not split evenly over {middle_stages} middle stages of whole interleaved chunks ({v})"
        ));
    }
    // Every other rule, on a model whose layers an even split takes.
    let (_, middle, _) = stage_layers(m, l, s);
    let even = Transformer {
        layers: l.pp * v,
        ..m.clone()
    };
    let split = check_even(&even, l)?;
    Ok(Split {
        layers_per_stage: middle,
        ..split
    })
}

fn check_even(m: &Transformer, l: &Layout) -> Result<Split, String> {
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
