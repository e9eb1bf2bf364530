//! Ray's four bundle strategies over one set of candidate nodes: ray-project/ray
//! `src/ray/raylet/scheduling/policy/bundle_scheduling_policy.cc` (`BundlePackSchedulingPolicy`,
//! `BundleSpreadSchedulingPolicy`, `BundleStrictPackSchedulingPolicy`,
//! `BundleStrictSpreadSchedulingPolicy`), each greedy over the bundles in
//! `SortRequiredResources` order, giving each the best node by `GetBestNode` (scorer
//! `scorer.cc`).
//!
//! **Ties.** `GetBestNode` iterates an `absl::flat_hash_set` of node ids and keeps the first
//! strictly better node, so among equally scored nodes Ray takes whichever its hash order gives
//! first: an order the source leaves unspecified (node ids are random). Orrery takes the lowest
//! node id. With per-bundle label selectors that choice can decide the outcome: a bundle any
//! node passes may take, by lowest id, the one node a later bundle's selector allows, and the
//! greedy fails where another of Ray's possible orders succeeds. So when the plain greedy fails
//! for a group with per-bundle selectors, it runs again with *look-ahead* ties: among the
//! equally scored nodes the lowest id after which the later bundles can still all be given
//! nodes ([`super::assign`]); where scores differ, Ray's greedy is kept as it is. A greedy
//! that still fails waits (Ray's `SchedulingResult::Failed`, retried by the GCS). (Orrery's
//! topology-aware policy, not Ray's, keeps its own order and breaks no tie by look-ahead.)

use super::assign::{self, Match};
use super::explain::Why;
use super::resources::Request;
use super::view::View;
use super::{NodeId, feasible};
use crate::scenario::workload::PgStrategy;

/// A bundle's score on [`super::explain::SCORE_SCALE`]: Ray's least-resource score divided by
/// the number of resources requested; `None` where it does not fit now.
pub(super) fn scaled(v: &View, n: NodeId, req: &Request) -> Option<f64> {
    let s = v.score(n, req);
    (s >= 0.0).then(|| s / req.amounts.len().max(1) as f64)
}

/// Among the equally best positions `tied` (ids ascending), the first for which `keeps` holds,
/// with the lower-id position it passed over; the lowest when none keeps (or without
/// look-ahead).
fn choose(
    v: &mut View,
    tied: &[usize],
    look: bool,
    keeps: &mut dyn FnMut(&mut View, usize) -> bool,
) -> Option<(usize, Option<usize>)> {
    let first = *tied.first()?;
    if !look || tied.len() == 1 {
        return Some((first, None));
    }
    for &p in tied {
        if keeps(v, p) {
            return Some((p, (p != first).then_some(first)));
        }
    }
    Some((first, None))
}

/// The candidates equally best for `req` among the positions `active` allows: all of them
/// with look-ahead, else only [`View::best`]'s pick.
fn ties(
    v: &View,
    req: &Request,
    cands: &[NodeId],
    look: bool,
    active: impl Fn(usize) -> bool,
) -> Vec<usize> {
    if look {
        v.tied(req, cands, active)
    } else {
        v.best(req, cands, active).into_iter().collect()
    }
}

/// The sentence for a tie the look-ahead broke away from the lowest id.
fn passed_over(v: &View, cands: &[NodeId], skipped: Option<usize>) -> String {
    match skipped {
        Some(q) => format!(
            "; {} scores the same and has a lower id, but would leave a later bundle no node (Ray breaks such ties by its hash order; Orrery takes the lowest id that leaves every later bundle a node)",
            v.st.nodes[cands[q]].name()
        ),
        None => String::new(),
    }
}

/// One strategy over candidate nodes `cands` (ids ascending); `ok(j, n)`: node `n` passes
/// bundle `j`'s label selector; `look`: break ties by look-ahead (module docs). Returns the
/// node of each bundle in the bundles' original order.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    v: &mut View,
    strategy: PgStrategy,
    bundles: &[Request],
    order: &[usize],
    cands: &[NodeId],
    ok: &dyn Fn(usize, NodeId) -> bool,
    look: bool,
    why: &mut Why,
) -> Option<Vec<NodeId>> {
    let mut result = vec![usize::MAX; bundles.len()];
    let mut active = vec![true; cands.len()];
    let mut budget = assign::BUDGET;
    why.say(|| {
        if look {
            "the best node is the one with the highest score; ties go to the lowest node id that leaves every later bundle a node".into()
        } else {
            "the best node is the one with the highest score; ties go to the lowest node id".into()
        }
    });
    match strategy {
        // `BundlePackSchedulingPolicy::Schedule`: the best node for the first remaining bundle,
        // then every remaining bundle that still fits there (in order), then drop the node.
        PgStrategy::Pack => {
            let mut remaining: Vec<usize> = order.to_vec();
            while let Some(&front) = remaining.first() {
                let tied = ties(v, &bundles[front], cands, look, |p| {
                    active[p] && ok(front, cands[p])
                });
                let mut keeps = |v: &mut View, p: usize| {
                    let node = cands[p];
                    let saved = v.save(node);
                    v.subtract(node, &bundles[front]);
                    let mut rest = Vec::new();
                    for &j in &remaining[1..] {
                        if ok(j, node) && v.fits(node, &bundles[j]) {
                            v.subtract(node, &bundles[j]);
                        } else {
                            rest.push(j);
                        }
                    }
                    let others: Vec<NodeId> = (0..cands.len())
                        .filter(|&q| active[q] && q != p)
                        .map(|q| cands[q])
                        .collect();
                    let r = assign::assignable(v, bundles, &rest, &others, ok, &mut budget);
                    v.restore(node, saved);
                    r != Some(false)
                };
                let Some((p, skipped)) = choose(v, &tied, look, &mut keeps) else {
                    why.say(|| format!("PACK: bundle {} fits no node left now", front + 1));
                    return None;
                };
                let node = cands[p];
                let sc = why.on().then(|| scaled(v, node, &bundles[front])).flatten();
                let skip = why.on().then(|| passed_over(v, cands, skipped));
                v.subtract(node, &bundles[front]);
                result[front] = node;
                remaining.remove(0);
                let mut packed = Vec::new();
                let mut k = 0;
                while k < remaining.len() {
                    let j = remaining[k];
                    if ok(j, node) && v.fits(node, &bundles[j]) {
                        v.subtract(node, &bundles[j]);
                        result[j] = node;
                        remaining.remove(k);
                        packed.push((j + 1).to_string());
                    } else {
                        k += 1;
                    }
                }
                why.say(|| {
                    format!(
                        "PACK: bundle {} goes to the best node left, {} (score {:.4}){}{}",
                        front + 1,
                        v.st.nodes[node].name(),
                        sc.unwrap_or(0.0),
                        if packed.is_empty() {
                            String::new()
                        } else {
                            format!(
                                "; bundles {} still fit there and are packed onto it",
                                packed.join(", ")
                            )
                        },
                        skip.unwrap_or_default()
                    )
                });
                active[p] = false;
            }
        }
        // `BundleSpreadSchedulingPolicy::Schedule`: each bundle to the best node not used yet;
        // when none fits, to the best of the nodes already used.
        PgStrategy::Spread => {
            let mut used = vec![false; cands.len()];
            for (i, &j) in order.iter().enumerate() {
                let mut keeps = |v: &mut View, p: usize| {
                    let node = cands[p];
                    let saved = v.save(node);
                    v.subtract(node, &bundles[j]);
                    let r = assign::assignable(v, bundles, &order[i + 1..], cands, ok, &mut budget);
                    v.restore(node, saved);
                    r != Some(false)
                };
                let fresh_ties = ties(v, &bundles[j], cands, look, |p| {
                    active[p] && ok(j, cands[p])
                });
                let (p, skipped, fresh) = match choose(v, &fresh_ties, look, &mut keeps) {
                    Some((p, s)) => {
                        active[p] = false;
                        used[p] = true;
                        (p, s, true)
                    }
                    None => {
                        let used_ties =
                            ties(v, &bundles[j], cands, look, |p| used[p] && ok(j, cands[p]));
                        match choose(v, &used_ties, look, &mut keeps) {
                            Some((p, s)) => (p, s, false),
                            None => {
                                why.say(|| format!("SPREAD: bundle {} fits no node now", j + 1));
                                return None;
                            }
                        }
                    }
                };
                why.say(|| {
                    format!(
                        "SPREAD: bundle {} goes to {} (score {:.4}), {}{}",
                        j + 1,
                        v.st.nodes[cands[p]].name(),
                        scaled(v, cands[p], &bundles[j]).unwrap_or(0.0),
                        if fresh {
                            "the best node not used yet"
                        } else {
                            "the best of the nodes already used (no unused node fits)"
                        },
                        passed_over(v, cands, skipped)
                    )
                });
                v.subtract(cands[p], &bundles[j]);
                result[j] = cands[p];
            }
        }
        // `BundleStrictPackSchedulingPolicy::Schedule`: the sum on the best single node. The
        // GCS scores the summed request; the raylet then commits each bundle on the node's
        // device instances, which can fail where the sum fits (four 0.6-GPU bundles on three
        // GPUs): `bundle::commits` checks that afterwards. On the empty cluster (can it ever be
        // placed?) any node on which the bundles commit one after another will do.
        PgStrategy::StrictPack => {
            let sum = bundles.iter().fold(Request::default(), |acc, x| acc.sum(x));
            let p = if v.empty {
                (0..cands.len()).find(|&p| {
                    let n = cands[p];
                    let holds = (0..bundles.len()).all(|j| ok(j, n))
                        && v.fits(n, &sum)
                        && bundles.iter().all(|b| {
                            let fit = v.fits(n, b);
                            if fit {
                                v.subtract(n, b);
                            }
                            fit
                        });
                    v.forget(n);
                    holds
                })?
            } else {
                let Some(p) = v.best(&sum, cands, |p| (0..bundles.len()).all(|j| ok(j, cands[p])))
                else {
                    why.say(|| {
                        format!(
                            "STRICT_PACK: no node has room for the summed request {} now",
                            feasible::show(v.st, &sum)
                        )
                    });
                    return None;
                };
                why.say(|| {
                    format!(
                        "STRICT_PACK: the summed request {} goes to the best node, {} (score {:.4})",
                        feasible::show(v.st, &sum),
                        v.st.nodes[cands[p]].name(),
                        scaled(v, cands[p], &sum).unwrap_or(0.0)
                    )
                });
                p
            };
            result.iter_mut().for_each(|r| *r = cands[p]);
        }
        // `BundleStrictSpreadSchedulingPolicy::Schedule`: each bundle to the best node not
        // used yet; fail when none fits.
        PgStrategy::StrictSpread => {
            for (i, &j) in order.iter().enumerate() {
                let tied = ties(v, &bundles[j], cands, look, |p| {
                    active[p] && ok(j, cands[p])
                });
                let mut keeps = |v: &mut View, p: usize| {
                    let others: Vec<NodeId> = (0..cands.len())
                        .filter(|&q| active[q] && q != p)
                        .map(|q| cands[q])
                        .collect();
                    let edge = |k: usize, n: NodeId| ok(k, n) && v.fits(n, &bundles[k]);
                    !matches!(
                        assign::matching(&order[i + 1..], &others, &edge, &mut budget),
                        Match::Short { .. }
                    )
                };
                let Some((p, skipped)) = choose(v, &tied, look, &mut keeps) else {
                    why.say(|| format!("STRICT_SPREAD: bundle {} fits no node that holds no bundle of the group yet", j + 1));
                    return None;
                };
                why.say(|| {
                    format!(
                        "STRICT_SPREAD: bundle {} goes to {} (score {:.4}), the best node holding no bundle of the group yet{}",
                        j + 1,
                        v.st.nodes[cands[p]].name(),
                        scaled(v, cands[p], &bundles[j]).unwrap_or(0.0),
                        passed_over(v, cands, skipped)
                    )
                });
                active[p] = false;
                v.subtract(cands[p], &bundles[j]);
                result[j] = cands[p];
            }
        }
    }
    Some(result)
}
