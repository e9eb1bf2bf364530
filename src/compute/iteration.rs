//! One LLM engine iteration on one rank: its kernels priced on the roofline, plus what the
//! engine spends beside them ([`crate::model::engines`]: launches, the scheduler's host gap).

use super::{Roofline, Work};
use crate::model::engine_config::EngineConfig;
use crate::model::engines::{HOST_GAP_S, Launches};
use crate::model::serving::{BatchShape, Phases};

/// Seconds of one iteration's kernels on one rank of engine `e` with `tp` ranks: the GEMMs'
/// roofline plus attention's (each without launches), the launches
/// ([`crate::model::engines::Kind::launch_secs`]; with `graphs off` each kernel's) and, where
/// `host` (the first pipeline stage, which the scheduler feeds), [`HOST_GAP_S`].
pub fn iteration_secs(
    gemm: &Roofline,
    attention: &Roofline,
    e: &EngineConfig,
    tp: u32,
    p: &Phases,
    b: &BatchShape,
    host: bool,
) -> f64 {
    let bare = |w: &Work| Work { kernels: 0.0, ..*w };
    let launch = e.kind.launch_secs(
        tp,
        e.graph_batch,
        &Launches {
            graphs: e.graphs,
            decode_only: b.decode_only(),
            seqs: b.seqs,
            tokens: b.tokens,
            kernels: p.gemm.kernels,
            layers: p.layers,
        },
        gemm.launch_overhead,
    );
    let gap = if host { HOST_GAP_S } else { 0.0 };
    gemm.secs(&bare(&p.gemm), 1.0)
        + attention.secs(&bare(&p.attention), 1.0)
        + gemm.secs(&bare(&p.elementwise), 1.0)
        + launch
        + gap
}
