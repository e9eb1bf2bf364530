//! Unit tests of [`FlowNet`]: hand-computed cases, and random dense cases against an
//! independent reference — textbook progressive filling recomputed from scratch, sharing no
//! code with the incremental solver — with the solver's own bookkeeping (loads, ceilings,
//! bottleneck lists) checked against its flows after every change.

use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

#[test]
fn equal_shares_on_one_link() {
    let mut n = FlowNet::new(vec![10.0]);
    let a = n.add(vec![0], 100.0);
    assert!(close(n.rate(a), 10.0));
    let b = n.add(vec![0], 100.0);
    assert!(close(n.rate(a), 5.0) && close(n.rate(b), 5.0));
    n.remove(a);
    assert!(close(n.rate(b), 10.0));
}

#[test]
fn completion_times_follow_the_shares() {
    // 10 and 20 bytes on a 10 B/s link: both at 5 until t = 2, then 10 B/s: t = 3.
    let mut n = FlowNet::new(vec![10.0]);
    let a = n.add(vec![0], 10.0);
    let b = n.add(vec![0], 20.0);
    let (f, t) = n.next_completion().unwrap();
    assert_eq!((f, t), (a, 2.0));
    n.advance(t);
    n.remove(a);
    let (f, t) = n.next_completion().unwrap();
    assert_eq!(f, b);
    assert!(close(t, 1.0));
}

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

/// xorshift, so the random cases are reproducible.
fn rng(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// The solver's incremental bookkeeping agrees with its flows: each link's load is the exact
/// fixed-point sum of its flows' rates, no flow is above its link's ceiling, and the
/// bottleneck lists hold exactly the flows whose bottleneck they are.
fn check_bookkeeping(n: &FlowNet) {
    for l in 0..n.links() {
        let mut load: Load = 0;
        for (g, f) in n.flows.iter().enumerate() {
            if f.alive {
                let times = f.path.iter().filter(|x| **x == l).count() as Load;
                load += times * fixed(f.rate);
                if times > 0 {
                    assert!(f.rate <= n.ceiling[l], "flow {g} above link {l}'s ceiling");
                }
            }
        }
        assert_eq!(load, n.load[l], "link {l}'s load");
        for (p, &g) in n.held[l].iter().enumerate() {
            assert_eq!(n.hot[g as usize].bottleneck as usize, l);
            assert_eq!(n.flows[g as usize].held_pos as usize, p);
        }
        for (p, &(g, k)) in n.on_link[l].iter().enumerate() {
            let f = &n.flows[g as usize];
            assert!(f.alive && f.path[k as usize] == l && f.slots[k as usize] as usize == p);
        }
    }
    let held: usize = n.held.iter().map(Vec::len).sum();
    let with_bottleneck = (0..n.flows.len())
        .filter(|&g| n.flows[g].alive && n.hot[g].bottleneck != NONE)
        .count();
    assert_eq!(held, with_bottleneck);
}

#[test]
fn dense_identical_paths_and_capacity_changes_match_the_reference() {
    // Few links and a handful of path shapes, so many flows share a path (a class of equal
    // rates) and every change cascades; capacities drop to zero (a NIC down: its flows must
    // stall at exactly 0) and come back. Bytes are checked too: each flow's remaining bytes
    // follow the reference rates between changes.
    let mut s = 0xc1a5_5e5u64;
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
            check_bookkeeping(&n);
        }
    }
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
