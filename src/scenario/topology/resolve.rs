//! An explicit fabric checked against the cluster's racks once the cluster is read.

use std::collections::BTreeMap;

use super::super::reader::Cx;
use super::{Attachment, MAX_ROUTING_ENTRIES, Routing, Topology, Wire};
use crate::diag::{Diagnostic, Span, did_you_mean};

/// A rack as an explicit fabric sees it: its name and the NICs its nodes attach to the
/// fabric, as (index k among a node's fabric NICs, NIC name, its `protocol`).
pub(in crate::scenario) struct RackPorts {
    pub name: String,
    pub ports: std::collections::BTreeSet<(usize, String, String)>,
}

/// Resolve the `attach` statements against the cluster's racks, check every rack with NICs
/// is attached once, the attach switches reach one another, what each switch speaks
/// ([`Wire`]) and what `dimension_order` needs.
pub(in crate::scenario) fn resolve(cx: &mut Cx, t: &mut Topology, racks: &[RackPorts], at: Span) {
    t.attach = vec![None; racks.len()];
    if t.broken {
        return;
    }
    let index: BTreeMap<&str, usize> = racks
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name.as_str(), i))
        .collect();
    let mut ok = true;
    let mut attach_span = vec![at; racks.len()];
    for p in std::mem::take(&mut t.pending) {
        let mut rs = Vec::new();
        for (n, sp) in &p.racks {
            match index.get(n.as_str()) {
                Some(&r) if !n.is_empty() => rs.push((r, *sp)),
                _ => {
                    let help = did_you_mean(n, racks.iter().map(|r| r.name.as_str()));
                    cx.push(
                        Diagnostic::error(*sp, format!("no rack `{n}` in this cluster"))
                            .with_help_opt(help),
                    );
                    ok = false;
                }
            }
        }
        if rs.len() != p.racks.len() {
            continue;
        }
        let (nr, ns) = (rs.len(), p.switches.len());
        // (switches per rack, whether racks share them)
        let (per, shared) = match (p.rails, p.each) {
            (true, None) => (ns, true),
            (true, Some(e)) if e * nr == ns => (e, false),
            (false, _) if ns == 1 => (1, true),
            (false, _) if ns == nr => (1, false),
            _ => {
                let help = match p.each {
                    Some(e) => format!("`each {e}` over {nr} racks takes {} switches", e * nr),
                    None => "give one switch per rack, or one switch for them all; with `rails`, every rack's NIC k goes to the k-th switch (`each N`: each rack its own N)".to_string(),
                };
                cx.push(
                    Diagnostic::error(
                        p.span,
                        format!("{nr} racks and {ns} switches do not pair up"),
                    )
                    .with_help(help),
                );
                ok = false;
                continue;
            }
        };
        for (k, (r, sp)) in rs.iter().enumerate() {
            if t.attach[*r].is_some() {
                cx.error(*sp, format!("rack `{}` is attached twice", racks[*r].name));
                ok = false;
                continue;
            }
            let switches = if shared {
                p.switches.clone()
            } else {
                p.switches[k * per..(k + 1) * per].to_vec()
            };
            attach_span[*r] = p.span;
            t.attach[*r] = Some(Attachment {
                switches,
                rails: p.rails,
            });
        }
    }
    if !ok {
        return;
    }
    for (r, rack) in racks.iter().enumerate() {
        let (name, nics) = (&rack.name, !rack.ports.is_empty());
        if nics && t.attach[r].is_none() {
            let what = if name.is_empty() {
                "nodes declared outside any rack have compute NICs, but an explicit fabric attaches racks".to_string()
            } else {
                format!("rack `{name}` has compute NICs but attaches to no switch")
            };
            cx.push(
                Diagnostic::error(at, what)
                    .with_help("add `attach RACKS SWITCHES` to the fabric block"),
            );
            ok = false;
        }
        if !nics && t.attach[r].is_some() {
            t.attach[r] = None;
        }
    }
    if !ok {
        return;
    }
    let attach: std::collections::BTreeSet<u32> = t
        .attach
        .iter()
        .flatten()
        .flat_map(|a| a.switches.iter().copied())
        .collect();
    let n = t.switches.len();
    if attach.len().saturating_mul(n) > MAX_ROUTING_ENTRIES {
        cx.error(
            at,
            format!("routing tables for {} attach switches over {n} switches exceed {MAX_ROUTING_ENTRIES} entries", attach.len()),
        );
        return;
    }
    // Connectivity: every rail's attach switches reach each other (different rails may be
    // separate planes: traffic between them crosses a node's scale-up fabric, as PXN does).
    let mut adj = vec![Vec::new(); n];
    for l in &t.links {
        adj[l.a as usize].push(l.b);
        adj[l.b as usize].push(l.a);
    }
    let mut comp = vec![u32::MAX; n];
    for s0 in 0..n {
        if comp[s0] != u32::MAX {
            continue;
        }
        comp[s0] = s0 as u32;
        let mut stack = vec![s0 as u32];
        while let Some(v) = stack.pop() {
            for &w in &adj[v as usize] {
                if comp[w as usize] == u32::MAX {
                    comp[w as usize] = s0 as u32;
                    stack.push(w);
                }
            }
        }
    }
    let rails = t
        .attach
        .iter()
        .flatten()
        .map(|a| a.switches.len())
        .max()
        .unwrap_or(0);
    for rail in 0..rails {
        let on: Vec<u32> = t
            .attach
            .iter()
            .flatten()
            .map(|a| a.switches[rail % a.switches.len()])
            .collect();
        if let Some(bad) = on
            .iter()
            .find(|s| comp[**s as usize] != comp[on[0] as usize])
        {
            cx.push(
                Diagnostic::error(
                    at,
                    format!(
                        "switch `{}` cannot reach switch `{}`: no path of links joins them",
                        t.switches[*bad as usize], t.switches[on[0] as usize]
                    ),
                )
                .with_help("every rack must reach every other (on the same rail, with `rails`)"),
            );
            return;
        }
    }
    if !wires(cx, t, &comp, racks, &attach_span) {
        return;
    }
    if let Some(Routing::DimensionOrder { family }) = &mut t.routing {
        let fams: std::collections::BTreeSet<usize> = attach
            .iter()
            .filter_map(|s| t.families.iter().rposition(|f| f.first <= *s))
            .collect();
        let sp = t.routing_span.unwrap_or(at);
        match fams.iter().next() {
            Some(&f) if fams.len() == 1 && t.families[f].wrap.is_some() => *family = f,
            _ => {
                cx.push(
                    Diagnostic::error(sp, "`dimension_order` routes through one grid family joined by `pattern torus` or `pattern mesh`, with every rack attached to it")
                        .with_help("use `routing ecmp` for other shapes"),
                );
            }
        }
    }
}

/// What each connected part of the fabric speaks: the kinds its links declare, then the NICs
/// plugged into it; every switch of a part must agree ([`Wire`]). `comp` gives each switch's
/// part (a switch index); false after an error.
fn wires(cx: &mut Cx, t: &mut Topology, comp: &[u32], racks: &[RackPorts], at: &[Span]) -> bool {
    let n = t.switches.len();
    // Per part: what it speaks, and what said so first.
    let mut wire: Vec<Option<(Wire, String)>> = vec![None; n];
    for l in &t.links {
        let Some(k) = l.kind else { continue };
        let (a, b) = (&t.switches[l.a as usize], &t.switches[l.b as usize]);
        match &wire[comp[l.a as usize] as usize] {
            None => {
                wire[comp[l.a as usize] as usize] =
                    Some((k, format!("the link between `{a}` and `{b}`")))
            }
            Some((w, by)) if *w != k => {
                cx.push(
                    Diagnostic::error(
                        l.span,
                        format!("the link between `{a}` and `{b}` is {}, but {by}, in the same part of the fabric, is {}", k.name(), w.name()),
                    )
                    .with_help("a switch speaks one kind and no link joins an InfiniBand switch to an Ethernet one (gateways are not modelled): give the links of one fabric one kind"),
                );
                return false;
            }
            _ => {}
        }
    }
    for (r, rack) in racks.iter().enumerate() {
        let Some(a) = &t.attach[r] else { continue };
        for (k, nic, protocol) in &rack.ports {
            let s = a.switches[k % a.switches.len()];
            let w = Wire::of_protocol(protocol);
            let part = comp[s as usize] as usize;
            match &wire[part] {
                None => {
                    wire[part] = Some((
                        w,
                        format!("NIC `{nic}` ({protocol}) of rack `{}`", rack.name),
                    ));
                }
                Some((x, by)) if *x != w => {
                    cx.push(
                        Diagnostic::error(
                            at[r],
                            format!(
                                "rack `{}` plugs NIC `{nic}` ({protocol}, which needs an {} switch) into switch `{}`, but {by} makes that part of the fabric {}",
                                rack.name,
                                w.name(),
                                t.switches[s as usize],
                                x.name()
                            ),
                        )
                        .with_help("an InfiniBand adapter plugs only into InfiniBand switches, a RoCE, Ethernet or EFA NIC only into Ethernet ones: change the NIC, the link kinds, or attach it to another fabric part"),
                    );
                    return false;
                }
                _ => {}
            }
        }
    }
    t.wire = (0..n)
        .map(|s| wire[comp[s] as usize].as_ref().map(|w| w.0))
        .collect();
    true
}
