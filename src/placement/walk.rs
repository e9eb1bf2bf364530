//! The hybrid policy's ordered walk for a plain request without rules, block by block over
//! [`super::order`] instead of node by node (`task::hybrid_pass` walks node by node for the
//! other requests and for explanations). Same pick, same draws, same list for the second
//! draw; debug builds check each answer against the node-by-node walk.

use super::task::TaskRequest;
use super::{ClusterState, NodeId};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// The ordered walk's pick for a plain request without rules, found block by block: the
/// preferred node when it has room and scores no worse than the first node with room; else
/// the node at the drawn position r0 among those with room, with r0 (drawn, as the walk
/// draws it, once a node with room is found); `(None, Some(r0))` when fewer than r0 + 1 have
/// room (those pushed on `avail`, in order), `(None, None)` when none has.
pub(super) fn skip_walk(
    st: &mut ClusterState,
    t: &TaskRequest,
    non_gpu: bool,
    k: usize,
    (pref, pref_avail, pref_score): (NodeId, bool, f32),
    rng: &mut ChaCha8Rng,
    avail: &mut Vec<(f32, NodeId)>,
) -> (Option<NodeId>, Option<usize>) {
    let (order, plain) = (&mut st.order, &st.plain);
    // Debug builds check each answer against the node-by-node walk.
    let walked: Vec<(u32, NodeId)> = if cfg!(debug_assertions) {
        order
            .iter()
            .filter(|&&(_, id)| plain.fits(id as usize, t.request, non_gpu))
            .map(|&(key, id)| (key, id as usize))
            .collect()
    } else {
        Vec::new()
    };
    let Ok((key, _)) = order.nth(plain, t.request, non_gpu, 0) else {
        debug_assert!(walked.is_empty());
        return (None, None);
    };
    debug_assert_eq!(walked.first().map(|w| w.0), Some(key));
    if pref_avail && pref_score <= f32::from_bits(key) {
        return (Some(pref), None);
    }
    let r = if k > 1 { rng.random_range(0..k) } else { 0 };
    match order.nth(plain, t.request, non_gpu, r) {
        Ok((_, i)) => {
            debug_assert_eq!(walked.get(r).map(|w| w.1), Some(i));
            (Some(i), Some(r))
        }
        Err(m) => {
            debug_assert_eq!(walked.len(), m);
            // The walk's list of them, for the second draw.
            avail.extend(
                order
                    .iter()
                    .filter(|&&(_, id)| plain.fits(id as usize, t.request, non_gpu))
                    .map(|&(key, id)| (f32::from_bits(key), id as usize)),
            );
            (None, Some(r))
        }
    }
}
