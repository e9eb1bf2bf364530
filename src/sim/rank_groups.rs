//! Which global ranks of a model-level job's layout talk to each other: its tensor-,
//! data-, expert- and expert-data-parallel groups, its context-parallel rings and the pairs
//! of neighbouring pipeline stages, in Megatron-LM's default rank order "tp-cp-ep-dp-pp"
//! (`megatron/core/parallel_state.py`; `model_steps.rs` states the order's assumptions).
//! Pure: layouts in, rank lists out.

use crate::model::{Among, Layout};

/// The global ranks of each group of kind `among` (Megatron order, see the module doc).
pub(super) fn groups(l: &Layout, among: Among) -> Vec<Vec<usize>> {
    let (tp, dp, pp) = (l.tp as usize, l.dp as usize, l.pp as usize);
    let rank = |t: usize, d: usize, p: usize| t + tp * (d + dp * p);
    let mut out = Vec::new();
    match among {
        Among::Tensor => {
            for p in 0..pp {
                for d in 0..dp {
                    out.push((0..tp).map(|t| rank(t, d, p)).collect());
                }
            }
        }
        Among::Data => {
            for p in 0..pp {
                for t in 0..tp {
                    out.push((0..dp).map(|d| rank(t, d, p)).collect());
                }
            }
        }
        Among::Expert => {
            let ep = (l.ep as usize).max(1);
            for p in 0..pp {
                for t in 0..tp {
                    for block in 0..dp / ep {
                        out.push((0..ep).map(|e| rank(t, block * ep + e, p)).collect());
                    }
                }
            }
        }
        Among::ExpertData => {
            // The same position in every expert-parallel block holds the same experts.
            let ep = (l.ep as usize).max(1);
            for p in 0..pp {
                for t in 0..tp {
                    for e in 0..ep {
                        out.push((0..dp / ep).map(|b| rank(t, b * ep + e, p)).collect());
                    }
                }
            }
        }
    }
    out
}

/// Pairs of ranks in neighbouring pipeline stages (stage s, position k) -> (s + 1, k).
pub(super) fn stage_pairs(l: &Layout) -> Vec<Vec<usize>> {
    let width = (l.tp * l.dp) as usize;
    (0..(l.pp as usize).saturating_sub(1))
        .flat_map(|s| (0..width).map(move |k| vec![s * width + k, (s + 1) * width + k]))
        .collect()
}

/// The context-parallel rings of a layout whose data-parallel dimension is dp × cp (see
/// `model_steps::plan`): the cp consecutive positions of that dimension, per tensor rank and stage.
pub(super) fn context_groups(l: &Layout, cp: u32) -> Vec<Vec<usize>> {
    let (tp, cp) = (l.tp as usize, cp as usize);
    let width = l.dp as usize;
    let mut out = Vec::new();
    for p in 0..l.pp as usize {
        for d in 0..width / cp {
            for t in 0..tp {
                out.push((0..cp).map(|c| t + tp * (c + cp * d + width * p)).collect());
            }
        }
    }
    out
}
