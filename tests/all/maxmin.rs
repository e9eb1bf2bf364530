//! Max-min fair sharing against hand-computed answers (shared bottleneck, parking lot,
//! multiple bottlenecks) and, on random networks, against the defining property: every flow
//! crosses a saturated link on which no flow gets more than it (Bertsekas & Gallager, "Data
//! Networks", §6.5.2), and no link is over capacity.

use orrery::network::{FlowId, FlowNet};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

#[test]
fn shared_bottleneck() {
    // Links 0 (cap 10) and 1 (cap 10). A crosses both, B only 1, C only 0.
    // Link 0: A, C → 5 each; link 1: A, B → 5 each.
    let mut n = FlowNet::new(vec![10.0, 10.0]);
    let a = n.add(vec![0, 1], 1e9);
    let b = n.add(vec![1], 1e9);
    let c = n.add(vec![0], 1e9);
    assert!(close(n.rate(a), 5.0) && close(n.rate(b), 5.0) && close(n.rate(c), 5.0));
}

#[test]
fn parking_lot() {
    // A chain of 3 links of capacity 1; a long flow over all three and one short flow per
    // link: each link carries 2 flows, so every flow gets 1/2.
    let mut n = FlowNet::new(vec![1.0; 3]);
    let long = n.add(vec![0, 1, 2], 1e9);
    let shorts: Vec<FlowId> = (0..3).map(|l| n.add(vec![l], 1e9)).collect();
    assert!(close(n.rate(long), 0.5));
    assert!(shorts.iter().all(|s| close(n.rate(*s), 0.5)));
    // With two short flows on the middle link, that link is the bottleneck: 1/3 for the
    // long flow and its two neighbours there; the outer short flows get the rest, 2/3.
    let extra = n.add(vec![1], 1e9);
    assert!(close(n.rate(long), 1.0 / 3.0));
    assert!(close(n.rate(extra), 1.0 / 3.0) && close(n.rate(shorts[1]), 1.0 / 3.0));
    assert!(close(n.rate(shorts[0]), 2.0 / 3.0) && close(n.rate(shorts[2]), 2.0 / 3.0));
}

#[test]
fn multiple_bottlenecks() {
    // Link 0 (cap 1): A, B. Link 1 (cap 10): B, C. Link 0 saturates first at 1/2 for A and
    // B; C takes the rest of link 1: 10 − 1/2 = 9.5.
    let mut n = FlowNet::new(vec![1.0, 10.0]);
    let a = n.add(vec![0], 1e9);
    let b = n.add(vec![0, 1], 1e9);
    let c = n.add(vec![1], 1e9);
    assert!(close(n.rate(a), 0.5) && close(n.rate(b), 0.5) && close(n.rate(c), 9.5));
    // Halving link 1 to 5 changes nothing for A and B; C gets 4.5.
    n.set_capacity(1, 5.0);
    assert!(close(n.rate(c), 4.5));
    // Removing A frees link 0: B and C now share link 1 (cap 5): 2.5 each... but B is also
    // capped by link 0 at 1, so B = 1 and C = 4.
    n.remove(a);
    assert!(close(n.rate(b), 1.0) && close(n.rate(c), 4.0));
}

#[test]
fn independent_components_do_not_disturb_each_other() {
    let mut n = FlowNet::new(vec![10.0, 4.0]);
    let a = n.add(vec![0], 1e9);
    let b = n.add(vec![1], 1e9);
    let c = n.add(vec![1], 1e9);
    assert!(close(n.rate(a), 10.0) && close(n.rate(b), 2.0) && close(n.rate(c), 2.0));
}

/// xorshift, so the random cases are reproducible.
fn rng(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn random_networks_satisfy_the_max_min_property() {
    let mut s = 0x1234_5678_9abc_def0u64;
    for case in 0..300 {
        let links = 1 + (rng(&mut s) % 8) as usize;
        let caps: Vec<f64> = (0..links)
            .map(|_| 1.0 + (rng(&mut s) % 100) as f64)
            .collect();
        let mut n = FlowNet::new(caps.clone());
        let mut flows = Vec::new();
        for _ in 0..(1 + rng(&mut s) % 12) {
            let len = 1 + (rng(&mut s) % 3) as usize;
            let mut path: Vec<usize> = (0..len)
                .map(|_| (rng(&mut s) % links as u64) as usize)
                .collect();
            path.sort_unstable();
            path.dedup();
            flows.push((n.add(path.clone(), 1e9), path));
            // Sometimes remove one, to exercise incremental updates.
            if rng(&mut s).is_multiple_of(4) && flows.len() > 1 {
                let k = (rng(&mut s) % flows.len() as u64) as usize;
                let (f, _) = flows.swap_remove(k);
                n.remove(f);
            }
        }
        // Capacity respected.
        for (l, cap) in caps.iter().enumerate() {
            let load: f64 = flows
                .iter()
                .filter(|(_, p)| p.contains(&l))
                .map(|(f, _)| n.rate(*f))
                .sum();
            assert!(
                load <= cap * (1.0 + 1e-9) + 1e-9,
                "case {case}: link {l} over capacity"
            );
        }
        // Every flow has a bottleneck: a saturated link where its rate is the largest.
        for (f, path) in &flows {
            let r = n.rate(*f);
            let has_bottleneck = path.iter().any(|&l| {
                let on: Vec<f64> = flows
                    .iter()
                    .filter(|(_, p)| p.contains(&l))
                    .map(|(g, _)| n.rate(*g))
                    .collect();
                let load: f64 = on.iter().sum();
                let saturated = (load - caps[l]).abs() <= 1e-9 * caps[l].max(1.0);
                saturated && on.iter().all(|x| *x <= r * (1.0 + 1e-9) + 1e-12)
            });
            assert!(
                has_bottleneck,
                "case {case}: flow {f:?} at {r} has no bottleneck"
            );
        }
    }
}

#[test]
fn incremental_updates_equal_a_full_recomputation() {
    // Changes refill only the flows whose bottleneck they may break, growing that set until
    // every flow has a bottleneck again. After every change, every rate must equal what a
    // fresh network with the same flows computes (one progressive filling of all of them).
    // Links may be repeated in a path and capacities may drop to zero (a failed link).
    let mut s = 0x0dd_ba11_u64;
    let cases: usize = std::env::var("MAXMIN_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(200);
    for case in 0..cases {
        let links = 2 + (rng(&mut s) % if case % 4 == 0 { 40 } else { 10 }) as usize;
        let mut caps: Vec<f64> = (0..links)
            .map(|_| 1.0 + (rng(&mut s) % 50) as f64)
            .collect();
        let mut n = FlowNet::new(caps.clone());
        let mut live: Vec<(FlowId, Vec<usize>)> = Vec::new();
        for step in 0..60 {
            match rng(&mut s) % 5 {
                0 | 1 if !live.is_empty() => {
                    let k = (rng(&mut s) % live.len() as u64) as usize;
                    let (f, _) = live.remove(k);
                    n.remove(f);
                }
                2 => {
                    let l = (rng(&mut s) % links as u64) as usize;
                    caps[l] = if rng(&mut s).is_multiple_of(8) {
                        0.0
                    } else {
                        1.0 + (rng(&mut s) % 50) as f64
                    };
                    n.set_capacity(l, caps[l]);
                }
                _ => {
                    let len = 1 + (rng(&mut s) % 6) as usize;
                    let mut path: Vec<usize> = (0..len)
                        .map(|_| (rng(&mut s) % links as u64) as usize)
                        .collect();
                    if !rng(&mut s).is_multiple_of(10) {
                        path.sort_unstable();
                        path.dedup();
                    }
                    live.push((n.add(path.clone(), 1e9), path));
                }
            }
            if let Err(e) = n.audit() {
                panic!("case {case} step {step}: {e}");
            }
            let mut fresh = FlowNet::new(caps.clone());
            let ids = fresh.add_batch(live.iter().map(|(_, p)| (p.clone(), 1e9)));
            for ((f, _), g) in live.iter().zip(&ids) {
                assert!(
                    close(n.rate(*f), fresh.rate(*g)),
                    "case {case} step {step}: {} vs {}",
                    n.rate(*f),
                    fresh.rate(*g)
                );
            }
        }
    }
}

#[test]
fn dense_incremental_updates_and_batches_equal_a_full_recomputation() {
    // Many flows over few links, so a change cascades: the refill's region grows through
    // links it enters and outside flows it must slow down. Batched adds and removes (flows
    // that start or finish together), repeated links, zero-capacity links and repairs.
    let mut s = 0x5eed_f10e_u64;
    let cases: usize = std::env::var("MAXMIN_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .map(|c: usize| (c / 10).max(20))
        .unwrap_or(40);
    for case in 0..cases {
        let links = 3 + (rng(&mut s) % 24) as usize;
        let mut caps: Vec<f64> = (0..links)
            .map(|_| 1.0 + (rng(&mut s) % 20) as f64)
            .collect();
        let mut n = FlowNet::new(caps.clone());
        let mut live: Vec<(FlowId, Vec<usize>)> = Vec::new();
        let path = |s: &mut u64| -> Vec<usize> {
            let len = 1 + (rng(s) % 4) as usize;
            let mut p: Vec<usize> = (0..len).map(|_| (rng(s) % links as u64) as usize).collect();
            if !rng(s).is_multiple_of(10) {
                p.sort_unstable();
                p.dedup();
            }
            p
        };
        for step in 0..120 {
            match rng(&mut s) % 8 {
                0 | 1 if !live.is_empty() => {
                    let k = (rng(&mut s) % live.len() as u64) as usize;
                    let (f, _) = live.swap_remove(k);
                    n.remove(f);
                }
                2 if live.len() > 2 => {
                    let k = 1 + (rng(&mut s) % 3) as usize;
                    let gone: Vec<FlowId> = (0..k.min(live.len()))
                        .map(|_| {
                            let j = (rng(&mut s) % live.len() as u64) as usize;
                            live.swap_remove(j).0
                        })
                        .collect();
                    n.remove_batch(&gone);
                }
                3 => {
                    let l = (rng(&mut s) % links as u64) as usize;
                    caps[l] = if rng(&mut s).is_multiple_of(6) {
                        0.0
                    } else {
                        1.0 + (rng(&mut s) % 20) as f64
                    };
                    n.set_capacity(l, caps[l]);
                }
                4 => {
                    let batch: Vec<Vec<usize>> =
                        (0..1 + rng(&mut s) % 4).map(|_| path(&mut s)).collect();
                    let ids = n.add_batch(batch.iter().map(|p| (p.clone(), 1e9)));
                    live.extend(ids.into_iter().zip(batch));
                }
                _ => {
                    let p = path(&mut s);
                    live.push((n.add(p.clone(), 1e9), p));
                }
            }
            if let Err(e) = n.audit() {
                panic!("case {case} step {step}: {e}");
            }
            let mut fresh = FlowNet::new(caps.clone());
            let ids = fresh.add_batch(live.iter().map(|(_, p)| (p.clone(), 1e9)));
            for ((f, _), g) in live.iter().zip(&ids) {
                assert!(
                    close(n.rate(*f), fresh.rate(*g)),
                    "case {case} step {step}: {} vs {}",
                    n.rate(*f),
                    fresh.rate(*g)
                );
            }
        }
    }
}

#[test]
fn simultaneous_finishes_leave_together() {
    // Two equal flows on one link finish at the same instant; removing them as a batch frees
    // the link for the third.
    let mut n = FlowNet::new(vec![10.0, 10.0]);
    let a = n.add(vec![0], 10.0);
    let b = n.add(vec![0], 10.0);
    let c = n.add(vec![0, 1], 100.0);
    let (f, t) = n.next_completion().unwrap();
    assert!(f == a && close(t, 3.0));
    n.advance(t);
    n.remove_batch(&[a, b]);
    assert!(close(n.rate(c), 10.0) && close(n.remaining(c), 90.0));
    assert_eq!(n.active().count(), 1);
}

// An independent check: textbook progressive filling, recomputed from scratch, against the
// incremental solver on dense random cases.

/// Max-min rates by textbook progressive filling: raise every unfrozen flow together, freeze
/// the flows of each link that fills, repeat. A path may repeat a link (it then loads it as
/// many times); an empty path is unconstrained.
fn reference(caps: &[f64], paths: &[Vec<usize>]) -> Vec<f64> {
    let mut rate = vec![f64::INFINITY; paths.len()];
    let mut frozen: Vec<bool> = paths.iter().map(|p| p.is_empty()).collect();
    while frozen.iter().any(|f| !f) {
        let mut left = caps.to_vec();
        let mut rising = vec![0u32; caps.len()];
        for (k, p) in paths.iter().enumerate() {
            for &l in p {
                if frozen[k] {
                    left[l] -= rate[k];
                } else {
                    rising[l] += 1;
                }
            }
        }
        let share = |l: usize| (left[l] / f64::from(rising[l])).max(0.0);
        let x = (0..caps.len())
            .filter(|&l| rising[l] > 0)
            .map(share)
            .fold(f64::INFINITY, f64::min);
        let full: Vec<bool> = (0..caps.len())
            .map(|l| rising[l] > 0 && share(l) <= x * (1.0 + 1e-12))
            .collect();
        for (k, p) in paths.iter().enumerate() {
            if !frozen[k] && p.iter().any(|&l| full[l]) {
                frozen[k] = true;
                rate[k] = x;
            }
        }
    }
    rate
}

/// The solver's incremental bookkeeping agrees with its flows: each link's load is the exact
#[test]
fn dense_identical_paths_and_capacity_changes_match_the_reference() {
    // Few links and a handful of path shapes, so many flows share a path (a class of equal
    // rates) and every change cascades; capacities drop to zero (a NIC down: its flows must
    // stall at exactly 0) and come back. Bytes are checked too: each flow's remaining bytes
    // follow the reference rates between changes.
    let mut s = 0x0c1a_55e5_u64;
    for case in 0..60 {
        let links = 3 + (rng(&mut s) % 10) as usize;
        let mut caps: Vec<f64> = (0..links)
            .map(|_| 1.0 + (rng(&mut s) % 40) as f64)
            .collect();
        let shapes: Vec<Vec<usize>> = (0..2 + rng(&mut s) % 6)
            .map(|_| {
                let len = 1 + (rng(&mut s) % 4) as usize;
                let mut p: Vec<usize> = (0..len)
                    .map(|_| (rng(&mut s) % links as u64) as usize)
                    .collect();
                if !rng(&mut s).is_multiple_of(8) {
                    p.sort_unstable();
                    p.dedup();
                }
                p
            })
            .collect();
        let mut n = FlowNet::new(caps.clone());
        // (id, path, bytes left by the reference's rates)
        let mut live: Vec<(FlowId, Vec<usize>, f64)> = Vec::new();
        for step in 0..150 {
            match rng(&mut s) % 9 {
                0 | 1 if !live.is_empty() => {
                    let k = (rng(&mut s) % live.len() as u64) as usize;
                    n.remove(live.swap_remove(k).0);
                }
                2 if live.len() > 3 => {
                    let k = (2 + rng(&mut s) % 4).min(live.len() as u64 - 1);
                    let gone: Vec<FlowId> = (0..k)
                        .map(|_| {
                            let j = (rng(&mut s) % live.len() as u64) as usize;
                            live.swap_remove(j).0
                        })
                        .collect();
                    n.remove_batch(&gone);
                }
                3 => {
                    let l = (rng(&mut s) % links as u64) as usize;
                    caps[l] = if rng(&mut s).is_multiple_of(4) {
                        0.0
                    } else {
                        1.0 + (rng(&mut s) % 40) as f64
                    };
                    n.set_capacity(l, caps[l]);
                }
                4 => {
                    let batch: Vec<(Vec<usize>, f64)> = (0..1 + rng(&mut s) % 8)
                        .map(|_| {
                            let p = shapes[(rng(&mut s) % shapes.len() as u64) as usize].clone();
                            (p, 100.0 + (rng(&mut s) % 1000) as f64)
                        })
                        .collect();
                    let ids = n.add_batch(batch.clone());
                    live.extend(ids.into_iter().zip(batch).map(|(f, (p, b))| (f, p, b)));
                }
                5 => {
                    // Time passes at the current rates.
                    let want: Vec<Vec<usize>> = live.iter().map(|x| x.1.clone()).collect();
                    let rates = reference(&caps, &want);
                    let dt = (rng(&mut s) % 100) as f64 / 100.0;
                    n.advance(dt);
                    for (x, r) in live.iter_mut().zip(rates) {
                        x.2 = if r.is_infinite() {
                            0.0
                        } else {
                            (x.2 - r * dt).max(0.0)
                        };
                    }
                }
                _ => {
                    let p = shapes[(rng(&mut s) % shapes.len() as u64) as usize].clone();
                    let b = 100.0 + (rng(&mut s) % 1000) as f64;
                    live.push((n.add(p.clone(), b), p, b));
                }
            }
            let want: Vec<Vec<usize>> = live.iter().map(|x| x.1.clone()).collect();
            let rates = reference(&caps, &want);
            for ((f, p, left), r) in live.iter().zip(&rates) {
                let got = n.rate(*f);
                assert!(
                    close(got, *r),
                    "case {case} step {step}: {got} vs {r} on {p:?}"
                );
                if p.iter().any(|&l| caps[l] == 0.0) {
                    assert_eq!(got, 0.0, "case {case} step {step}: a cut flow must stall");
                }
                let rem = n.remaining(*f);
                assert!(
                    (rem - left).abs() <= 1e-7 * left.max(1.0),
                    "case {case} step {step}: {rem} bytes left vs {left}"
                );
            }
        }
    }
}

#[test]
fn large_batches_filled_from_scratch_match_the_reference() {
    // A batch at least four times as large as the network it joins is filled from scratch
    // (16 flows or more: the first, and later ones after removals); the incremental changes
    // after it, and the next large batch over the flows already there, must agree with the
    // textbook filling, bytes included. Paths repeat links, some are empty (unconstrained),
    // capacities drop to zero and come back.
    let mut s = 0x0ba7_c4e5_u64;
    let cases: usize = std::env::var("MAXMIN_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .map(|c: usize| (c / 10).max(30))
        .unwrap_or(30);
    for case in 0..cases {
        let links = 2 + (rng(&mut s) % 16) as usize;
        let mut caps: Vec<f64> = (0..links)
            .map(|_| 1.0 + (rng(&mut s) % 30) as f64)
            .collect();
        let path = |s: &mut u64| -> Vec<usize> {
            let len = (rng(s) % 5) as usize;
            let mut p: Vec<usize> = (0..len).map(|_| (rng(s) % links as u64) as usize).collect();
            if !rng(s).is_multiple_of(8) {
                p.sort_unstable();
                p.dedup();
            }
            p
        };
        let mut n = FlowNet::new(caps.clone());
        let mut live: Vec<(FlowId, Vec<usize>, f64)> = Vec::new();
        for step in 0..80 {
            match rng(&mut s) % 7 {
                0 | 1 => {
                    let size = 16 + rng(&mut s) % 40;
                    let batch: Vec<(Vec<usize>, f64)> = (0..size)
                        .map(|_| (path(&mut s), 100.0 + (rng(&mut s) % 1000) as f64))
                        .collect();
                    let ids = n.add_batch(batch.clone());
                    // An unconstrained flow is done at once.
                    let left = |p: &Vec<usize>, b: f64| if p.is_empty() { 0.0 } else { b };
                    live.extend(
                        ids.into_iter()
                            .zip(batch)
                            .map(|(f, (p, b))| (f, p.clone(), left(&p, b))),
                    );
                }
                2 if !live.is_empty() => {
                    let k = (1 + rng(&mut s) % 20).min(live.len() as u64);
                    let gone: Vec<FlowId> = (0..k)
                        .map(|_| {
                            let j = (rng(&mut s) % live.len() as u64) as usize;
                            live.swap_remove(j).0
                        })
                        .collect();
                    n.remove_batch(&gone);
                }
                3 => {
                    let l = (rng(&mut s) % links as u64) as usize;
                    caps[l] = if rng(&mut s).is_multiple_of(5) {
                        0.0
                    } else {
                        1.0 + (rng(&mut s) % 30) as f64
                    };
                    n.set_capacity(l, caps[l]);
                }
                4 => {
                    let want: Vec<Vec<usize>> = live.iter().map(|x| x.1.clone()).collect();
                    let rates = reference(&caps, &want);
                    let dt = (rng(&mut s) % 100) as f64 / 100.0;
                    n.advance(dt);
                    for (x, r) in live.iter_mut().zip(rates) {
                        x.2 = if r.is_infinite() {
                            0.0
                        } else {
                            (x.2 - r * dt).max(0.0)
                        };
                    }
                }
                _ => {
                    let p = path(&mut s);
                    let b = 100.0 + (rng(&mut s) % 1000) as f64;
                    let left = if p.is_empty() { 0.0 } else { b };
                    live.push((n.add(p.clone(), b), p, left));
                }
            }
            if let Err(e) = n.audit() {
                panic!("case {case} step {step}: {e}");
            }
            let want: Vec<Vec<usize>> = live.iter().map(|x| x.1.clone()).collect();
            let rates = reference(&caps, &want);
            for ((f, p, left), r) in live.iter().zip(&rates) {
                let got = n.rate(*f);
                assert!(
                    got == *r || close(got, *r),
                    "case {case} step {step}: {got} vs {r} on {p:?}"
                );
                let rem = n.remaining(*f);
                assert!(
                    (rem - left).abs() <= 1e-7 * left.max(1.0),
                    "case {case} step {step}: {rem} bytes left vs {left}"
                );
            }
        }
    }
}

#[test]
fn a_large_batch_on_one_link_shares_it_equally() {
    // 20 flows of 10 bytes start together on a 10 B/s link (filled from scratch): 0.5 B/s
    // each, done in 20 s; then a 21st joins one at a time (incrementally) at t = 10 s.
    let mut n = FlowNet::new(vec![10.0]);
    let ids = n.add_batch((0..20).map(|_| (vec![0], 10.0)));
    assert!(ids.iter().all(|f| close(n.rate(*f), 0.5)));
    n.advance(10.0);
    let late = n.add(vec![0], 100.0);
    assert!(close(n.rate(late), 10.0 / 21.0) && close(n.remaining(ids[3]), 5.0));
    n.audit().unwrap();
}

#[test]
fn the_reference_agrees_with_hand_computed_shares() {
    // Parking lot with a doubled middle link: the long flow and two short ones share link 1
    // (1/3 each), the outer short flows take the rest (2/3); a repeated link counts twice.
    let caps = [1.0, 1.0, 1.0];
    let paths = [vec![0, 1, 2], vec![0], vec![1], vec![1], vec![2]];
    let r = reference(&caps, &paths);
    let want = [1.0 / 3.0, 2.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 2.0 / 3.0];
    assert!(r.iter().zip(want).all(|(a, b)| close(*a, b)), "{r:?}");
    let r = reference(&[6.0], &[vec![0, 0], vec![0]]);
    assert!(close(r[0], 2.0) && close(r[1], 2.0), "{r:?}");
}

#[test]
fn peaks_include_a_rise_caused_by_a_leave_elsewhere() {
    // a on links 0 and 1, b on link 1 only: 5 B/s each, link 0 at half. When b leaves,
    // a takes all of link 1 and link 0 reaches 1.0, though nothing joined link 0.
    let mut m = FlowNet::new(vec![10.0, 10.0]);
    let b = m.add(vec![1], 100.0);
    let _a = m.add(vec![0, 1], 100.0);
    assert!(close(m.peak_utilization(0), 0.5) && close(m.load(0), 5.0));
    assert_eq!(m.peak_utilization(1), 1.0);
    m.remove(b);
    assert!(close(m.load(0), 10.0) && m.peak_utilization(0) == 1.0);
}

#[test]
fn peaks_equal_the_highest_load_seen_on_random_networks() {
    // After every change, each link's recorded peak is the highest load ÷ capacity it has
    // shown at any change so far (loads read from the flows' rates).
    let mut s = 0x5eed_u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    for _ in 0..50 {
        let caps: Vec<f64> = (0..6).map(|_| 1.0 + (next() % 20) as f64).collect();
        let mut n = FlowNet::new(caps.clone());
        let mut seen = vec![0.0f64; caps.len()];
        let mut live = Vec::new();
        for _ in 0..40 {
            if next() % 3 == 0 && !live.is_empty() {
                let k = (next() % live.len() as u64) as usize;
                n.remove(live.swap_remove(k));
            } else {
                let path: Vec<usize> = (0..1 + next() % 3).map(|_| (next() % 6) as usize).collect();
                live.push(n.add(path, 1e9));
            }
            for (l, c) in caps.iter().enumerate() {
                seen[l] = seen[l].max(n.load(l) / c);
                let p = n.peak_utilization(l);
                assert!(
                    (p - seen[l].min(1.0)).abs() < 1e-9,
                    "link {l}: {p} vs {}",
                    seen[l]
                );
            }
        }
    }
}
