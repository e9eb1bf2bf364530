//! Orrery's topology-aware policy for tasks and actors (not Ray's; [`super::task`] dispatches
//! to it under `Policy::TopologyAware`).

use super::NodeId;
use super::explain::Why;
use super::resources::{domain_rank, fragmentation, from_fixed, try_allocate_topo};
use super::state::ClusterState;
use super::task::{Decision, SPREAD_THRESHOLD, TaskRequest, available, candidate, hybrid_why};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

/// Orrery's topology-aware policy (not in Ray; Ray's REP "Topology Aware Scheduling" is open
/// design work). Candidates are filtered exactly as in Ray (alive, feasible, labels, tenant
/// rules). For a request of whole devices (GPU, TPU, ...), among the available nodes it picks
/// the smallest key
///
/// 1. domain rank ([`domain_rank`]): the devices fit under one PCIe switch (0), one NUMA
///    domain (1), one NVLink/NVSwitch domain (2), or must span (3);
/// 2. fragmentation after the allocation ([`fragmentation`]: partly used switches);
/// 3. closeness to the preferred node: the node itself, then its rack, then elsewhere;
/// 4. free devices left on the node (best fit, keeping whole nodes free for large requests);
/// 5. node id.
///
/// Requests without device demand, and requests for which no node is available now, are
/// placed by Ray's hybrid policy (so queueing behaves as in Ray). No randomness is drawn on
/// the topology path.
pub fn topology_aware(st: &mut ClusterState, t: &TaskRequest, rng: &mut ChaCha8Rng) -> Decision {
    topology_aware_why(st, t, rng, &mut Why(None))
}

pub(super) fn topology_aware_why(
    st: &mut ClusterState,
    t: &TaskRequest,
    rng: &mut ChaCha8Rng,
    why: &mut Why,
) -> Decision {
    let dev = t
        .request
        .amounts
        .iter()
        .find(|(id, _)| st.ids.is_unit_instance(*id))
        .copied();
    let Some((dev_id, demand)) = dev else {
        why.say(|| {
            "topology-aware policy: no device requested, so Ray's hybrid policy places it".into()
        });
        return hybrid_why(st, t, SPREAD_THRESHOLD, rng, why);
    };
    let n = st.nodes.len();
    let pref = if t.preferred < n {
        t.preferred
    } else {
        st.head
    };
    let pref_rack = st.nodes.get(pref).map(|x| x.rack());
    // (rank, fragmentation, closeness, devices left, id)
    type Key = (u8, usize, u8, i64, NodeId);
    type Eval = Option<(u8, usize, i64)>;
    let mut best: Option<(Key, NodeId)> = None;
    // Nodes of one type with the same free devices score alike: memoise (rank, fragmentation,
    // devices left) per (topology, instance availabilities) for this call.
    let mut memo: HashMap<(usize, u64), (Vec<i64>, Eval)> = HashMap::new();
    let mut scratch: Vec<i64> = Vec::new();
    let mut out: Vec<i64> = Vec::new();
    for i in 0..n {
        if !candidate(st, i, t) || !available(st, i, t) {
            continue;
        }
        let node = &st.nodes[i];
        let Some(inst) = node.instances_for(dev_id, t.request.device_memory) else {
            continue;
        };
        let inst: &[i64] = &inst;
        let locs = node.topology().devices_of(dev_id);
        let key = (
            std::ptr::from_ref(node.topology()) as usize,
            fingerprint(inst),
        );
        let eval = match memo.get(&key) {
            Some((v, e)) if v.as_slice() == inst => *e,
            _ => {
                let e = domain_rank(inst, locs, demand).and_then(|rank| {
                    scratch.clear();
                    scratch.extend_from_slice(inst);
                    out.clear();
                    out.resize(inst.len(), 0);
                    try_allocate_topo(&mut scratch, locs, demand, &mut out).then(|| {
                        (
                            rank,
                            fragmentation(&scratch, locs),
                            scratch.iter().sum::<i64>(),
                        )
                    })
                });
                memo.entry(key).or_insert_with(|| (inst.to_vec(), e));
                e
            }
        };
        let Some((rank, frag, left)) = eval else {
            continue;
        };
        let close = if i == pref {
            0
        } else if Some(node.rack()) == pref_rack {
            1
        } else {
            2
        };
        let key = (rank, frag, close, left, i);
        if best.as_ref().is_none_or(|b| key < b.0) {
            best = Some((key, i));
        }
    }
    match best {
        Some((key, i)) => {
            why.say(|| {
                format!(
                    "topology-aware policy: among nodes with room, the smallest (domain rank {}, fragmentation {}, closeness {}, devices left {}, node id) wins: {} (rank 0 = one PCIe switch, 1 = one NUMA domain, 2 = one NVLink domain, 3 = spans; closeness 0 = the preferred node, 1 = its rack, 2 = elsewhere; the node id breaks ties)",
                    key.0,
                    key.1,
                    key.2,
                    from_fixed(key.3),
                    st.nodes[i].name()
                )
            });
            Decision::Run(i)
        }
        None => {
            why.say(|| "topology-aware policy: no node has room for the devices now, so Ray's hybrid policy places it (and queues it as Ray would)".into());
            hybrid_why(st, t, SPREAD_THRESHOLD, rng, why)
        }
    }
}

/// FNV-1a over instance availabilities (a memo key; hits are verified against the values).
fn fingerprint(v: &[i64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for x in v {
        h ^= *x as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
