//! `link` statements of an explicit fabric: one link, or the pairs a pattern makes.

use std::collections::BTreeMap;

use super::super::reader::{self as rd, Args, Cx};
use super::super::schema;
use super::{MAX_FABRIC_LINKS, SwitchLink, Topology, Wire, members};
use crate::diag::Diagnostic;
use crate::syntax::ast::{Stmt, Value, ValueKind};

/// The family a value names as a whole (for patterns that need its shape).
fn family_of(cx: &mut Cx, v: &Value, t: &Topology, pattern: &str) -> Option<usize> {
    if let ValueKind::Ident(n) = &v.kind
        && let Some(f) = t.families.iter().position(|f| &f.name == n)
    {
        return Some(f);
    }
    cx.push(
        Diagnostic::error(v.span, format!("pattern `{pattern}` joins the members of one switch family"))
            .with_help("name the family as its `switch` statement does, such as `link t 100 GB/s pattern torus`"),
    );
    None
}

pub(super) fn link(
    cx: &mut Cx,
    a: &mut Args,
    s: &Stmt,
    t: &mut Topology,
    by_name: &BTreeMap<String, Vec<u32>>,
    merged: &mut BTreeMap<(u32, u32), usize>,
) {
    let pattern = match a.opt("pattern") {
        Some(v) => match rd::choice(cx, v, schema::TOPOLOGY_PATTERNS, "link pattern") {
            Some(p) => Some(p),
            None => return,
        },
        None => None,
    };
    let latency = match a.opt("latency") {
        Some(v) => match rd::duration(cx, v) {
            Some(d) => Some(d),
            None => return,
        },
        None => None,
    };
    let kind = match a.opt("kind") {
        Some(v) => match rd::choice(cx, v, schema::WIRES, "link kind") {
            Some(k) => Some(Wire::of_protocol(k)),
            None => return,
        },
        None => None,
    };
    let Some(av) = a.req("the switches it joins") else {
        return;
    };
    let bv = a.next_if(|v| !matches!(v.kind, ValueKind::Quantity { .. }));
    let Some(bw) = a
        .req("a bandwidth per direction, such as `400 Gbps`")
        .and_then(|v| rd::bandwidth(cx, v))
    else {
        return;
    };
    let Some(xs) = members(cx, av, by_name) else {
        return;
    };
    let ys = match bv {
        Some(v) => match members(cx, v, by_name) {
            Some(y) => Some(y),
            None => return,
        },
        None => None,
    };
    let two = |cx: &mut Cx, p: &str| -> bool {
        if ys.is_none() {
            cx.push(
                Diagnostic::error(
                    s.head_span(),
                    format!("pattern `{p}` joins two lists of switches"),
                )
                .with_help(format!("such as `link leaf spine 400 Gbps pattern {p}`")),
            );
        }
        ys.is_some()
    };
    let one = |cx: &mut Cx, p: &str| -> bool {
        if let Some(v) = bv {
            cx.push(
                Diagnostic::error(
                    v.span,
                    format!("pattern `{p}` joins the members of one family"),
                )
                .with_help(format!("such as `link t 100 GB/s pattern {p}`")),
            );
            return false;
        }
        true
    };
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    let budget = MAX_FABRIC_LINKS.saturating_sub(t.links.len());
    let too_many = |cx: &mut Cx, n: u128| -> bool {
        if n > budget as u128 {
            cx.error(
                s.head_span(),
                format!("this statement makes {n} links; an explicit fabric holds at most {MAX_FABRIC_LINKS}"),
            );
            return true;
        }
        false
    };
    match pattern {
        None => {
            let Some(ys) = &ys else {
                cx.push(
                    Diagnostic::error(s.head_span(), "`link` joins two switches").with_help(
                        "such as `link leaf0 spine0 400 Gbps`, or a family with `pattern torus`",
                    ),
                );
                return;
            };
            if xs.len() != 1 || ys.len() != 1 {
                cx.push(
                    Diagnostic::error(s.head_span(), format!("these name {} and {} switches: say how to join them", xs.len(), ys.len()))
                        .with_help("add `pattern all` (every pair) or `pattern pairwise` (the k-th to the k-th)"),
                );
                return;
            }
            pairs.push((xs[0], ys[0]));
        }
        Some("all") => {
            if !two(cx, "all") {
                return;
            }
            let ys = ys.as_deref().unwrap_or_default();
            if too_many(cx, xs.len() as u128 * ys.len() as u128) {
                return;
            }
            for &x in &xs {
                for &y in ys {
                    if x != y {
                        pairs.push((x, y));
                    }
                }
            }
        }
        Some("pairwise") => {
            if !two(cx, "pairwise") {
                return;
            }
            let ys = ys.as_deref().unwrap_or_default();
            if xs.len() != ys.len() {
                cx.error(
                    s.head_span(),
                    format!(
                        "`pattern pairwise` needs lists of one length, found {} and {}",
                        xs.len(),
                        ys.len()
                    ),
                );
                return;
            }
            pairs.extend(xs.iter().copied().zip(ys.iter().copied()));
        }
        Some(p) => {
            if !one(cx, p) {
                return;
            }
            let Some(f) = family_of(cx, av, t, p) else {
                return;
            };
            let fam = t.families[f].clone();
            let n: u32 = fam.dims.iter().product();
            let coord = |k: u32| -> Vec<u32> {
                let mut rem = k;
                let mut c = vec![0; fam.dims.len()];
                for d in (0..fam.dims.len()).rev() {
                    c[d] = rem % fam.dims[d];
                    rem /= fam.dims[d];
                }
                c
            };
            let index =
                |c: &[u32]| -> u32 { c.iter().zip(&fam.dims).fold(0, |acc, (x, d)| acc * d + x) };
            match p {
                "torus" | "mesh" => {
                    let wrap = p == "torus";
                    if fam.wrap.is_some_and(|w| w != wrap) {
                        cx.error(
                            s.head_span(),
                            format!("family `{}` is joined as a torus and as a mesh", fam.name),
                        );
                        return;
                    }
                    t.families[f].wrap = Some(wrap);
                    if too_many(cx, u128::from(n) * fam.dims.len() as u128) {
                        return;
                    }
                    for k in 0..n {
                        let c = coord(k);
                        for d in 0..fam.dims.len() {
                            let len = fam.dims[d];
                            let last = c[d] + 1 == len;
                            if len < 2 || (last && !(wrap && len > 2)) {
                                continue;
                            }
                            let mut nc = c.clone();
                            nc[d] = (c[d] + 1) % len;
                            pairs.push((fam.first + k, fam.first + index(&nc)));
                        }
                    }
                }
                "clique" => {
                    let last = *fam.dims.last().unwrap_or(&1);
                    if too_many(cx, u128::from(n) * u128::from(last.saturating_sub(1)) / 2) {
                        return;
                    }
                    for k in 0..n {
                        let base = k - k % last;
                        for j in k + 1..base + last {
                            pairs.push((fam.first + k, fam.first + j));
                        }
                    }
                }
                _ => {
                    // dragonfly
                    if fam.dims.len() != 2 || fam.dims[0] < 2 {
                        cx.push(
                            Diagnostic::error(av.span, "pattern `dragonfly` joins a two-dimensional family: groups × routers")
                                .with_help("such as `switch g grid 33x16` then `link g 200 Gbps pattern dragonfly`"),
                        );
                        return;
                    }
                    let (groups, routers) = (fam.dims[0], fam.dims[1]);
                    if too_many(cx, u128::from(groups) * u128::from(groups - 1) / 2) {
                        return;
                    }
                    let h = (groups - 1).div_ceil(routers);
                    for g in 0..groups {
                        for k in 0..groups - 1 {
                            let to = (g + k + 1) % groups;
                            if to < g {
                                continue;
                            }
                            let back = (g + groups - to - 1) % groups;
                            pairs.push((
                                fam.first + g * routers + k / h,
                                fam.first + to * routers + back / h,
                            ));
                        }
                    }
                }
            }
        }
    }
    for (x, y) in pairs {
        if x == y {
            cx.error(
                s.head_span(),
                format!("a link from switch `{}` to itself", t.switches[x as usize]),
            );
            return;
        }
        let key = (x.min(y), x.max(y));
        match merged.get(&key) {
            Some(&i) => {
                let l = &mut t.links[i];
                if l.latency.map(|d| d.0) != latency.map(|d| d.0) {
                    cx.push(
                        Diagnostic::error(
                            s.head_span(),
                            format!(
                                "switches `{}` and `{}` are already linked with another latency",
                                t.switches[key.0 as usize], t.switches[key.1 as usize]
                            ),
                        )
                        .with_help("parallel links merge into one: give them one latency"),
                    );
                    return;
                }
                if l.kind.is_some() && kind.is_some() && l.kind != kind {
                    cx.push(
                        Diagnostic::error(
                            s.head_span(),
                            format!(
                                "switches `{}` and `{}` are already linked with kind {}",
                                t.switches[key.0 as usize],
                                t.switches[key.1 as usize],
                                l.kind.map_or("", Wire::name)
                            ),
                        )
                        .with_help("parallel links merge into one: give them one kind"),
                    );
                    return;
                }
                l.kind = l.kind.or(kind);
                l.bandwidth.0 += bw.0;
            }
            None => {
                if t.links.len() >= MAX_FABRIC_LINKS {
                    cx.error(
                        s.head_span(),
                        format!("an explicit fabric holds at most {MAX_FABRIC_LINKS} links"),
                    );
                    return;
                }
                merged.insert(key, t.links.len());
                t.links.push(SwitchLink {
                    a: key.0,
                    b: key.1,
                    bandwidth: bw,
                    latency,
                    kind,
                    span: s.head_span(),
                });
            }
        }
    }
}
