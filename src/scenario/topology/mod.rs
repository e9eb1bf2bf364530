//! Explicit fabrics: `fabric explicit { switch ... link ... attach ... routing ... route ... }`.
//!
//! A fabric written as switches and the links between them, with patterns that keep large
//! shapes short: `switch g grid 33x16` names a two-dimensional family of 528 routers,
//! `link g pattern clique` joins the routers of each group, `link g pattern dragonfly` joins the
//! groups. Racks `attach` to switches (one switch per rack, or one per rail of a rack with
//! `rails`); routes are computed at build time (`super::super::network::topology`).
//!
//! Pattern definitions (members of a family are numbered row-major, first index most
//! significant; a one-dimensional family `leaf[0..7]` has dims `[8]`):
//! - `all`: every member of the first list to every member of the second.
//! - `pairwise`: the k-th of the first to the k-th of the second (equal lengths).
//! - `torus` / `mesh`: in a grid family, each member to its neighbour along every dimension,
//!   with wrap-around for `torus` where a dimension has more than two members.
//! - `clique`: every pair of members that differ only in their last index (the routers of one
//!   dragonfly group; a one-dimensional family becomes a full clique).
//! - `dragonfly`: in a two-dimensional family `[G, a]` (G groups of a routers), one global
//!   link between every pair of groups, the "consecutive" arrangement of Kim et al., ISCA 2008
//!   ("Technology-Driven, Highly-Scalable Dragonfly Topology") as Hastings et al. name it
//!   (IEEE Cluster 2015, "Comparing Global Link Arrangements for Dragonfly Networks"): group g's
//!   global port k (0 ≤ k < G−1) goes to group (g + k + 1) mod G and sits on router ⌊k / h⌋,
//!   h = ⌈(G − 1) / a⌉ global ports per router.
//!
//! Parallel links written between one pair of switches merge into one (capacities add), so a
//! doubled trunk is two `link` statements or one with twice the bandwidth.

use std::collections::BTreeMap;

use serde::Serialize;

mod links;
mod resolve;

use links::link;
pub(super) use resolve::{RackPorts, resolve};

use super::reader::{self as rd, Args, Cx};
use super::schema;
use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::syntax::ast::{Stmt, Value, ValueKind};
use crate::units::{Bandwidth, Duration};

/// Most switches an explicit fabric may declare.
pub const MAX_SWITCHES: usize = 16_384;
/// Most switch-to-switch links (after merging parallel ones) an explicit fabric may have.
pub const MAX_FABRIC_LINKS: usize = 262_144;
/// Most routing-table entries (attach switches × switches) the routes may need.
pub const MAX_ROUTING_ENTRIES: usize = 1 << 24;

/// A family of switches from one `switch` statement.
#[derive(Debug, Clone, Serialize)]
pub struct Family {
    pub name: String,
    /// Index of its first member among the fabric's switches.
    pub first: u32,
    /// Grid shape (one dimension for `leaf[0..7]` or a single switch).
    pub dims: Vec<u32>,
    /// `Some(true)` once a `torus` pattern joined it, `Some(false)` a `mesh`.
    pub wrap: Option<bool>,
}

/// One full-duplex link between two switches, `a < b`; the bandwidth is per direction.
#[derive(Debug, Clone, Serialize)]
pub struct SwitchLink {
    pub a: u32,
    pub b: u32,
    pub bandwidth: Bandwidth,
    pub latency: Option<Duration>,
    /// `kind`, when the statement gave one.
    pub kind: Option<Wire>,
    /// The statement that made it (for a kind its switches contradict).
    #[serde(skip)]
    pub(super) span: Span,
}

/// What a switch speaks. An InfiniBand host channel adapter plugs only into an InfiniBand
/// switch, a RoCE, Ethernet or EFA NIC only into an Ethernet one, and no link joins the two
/// (gateways are not modelled), so every switch of a connected fabric speaks one.
/// In-network reduction (SHARP) runs only in InfiniBand switches: NVIDIA's SHARP runs on
/// Quantum InfiniBand switches (docs.nvidia.com/networking/display/SHARPv360, Introduction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Wire {
    Infiniband,
    Ethernet,
}

impl Wire {
    /// The switch a NIC of this `protocol` (a catalog NIC's `protocol` word) plugs into.
    pub fn of_protocol(protocol: &str) -> Wire {
        if protocol == "infiniband" {
            Wire::Infiniband
        } else {
            Wire::Ethernet
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Wire::Infiniband => "infiniband",
            Wire::Ethernet => "ethernet",
        }
    }
}

/// How a rack joins the fabric: its compute NICs to `switches` — all of them to the one
/// switch, or with `rails`, the node's k-th compute NIC to `switches[k % len]`.
#[derive(Debug, Clone, Serialize)]
pub struct Attachment {
    pub switches: Vec<u32>,
    pub rails: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Routing {
    /// Shortest paths (fewest switch hops), a next hop chosen per flow among the equal ones.
    Ecmp,
    /// Dimension order through the grid family `family` (first index first, the shorter way
    /// round on a torus).
    DimensionOrder { family: usize },
}

/// A declared route between two attach switches: `from`, `via`..., `to`.
#[derive(Debug, Clone, Serialize)]
pub struct DeclaredRoute {
    pub from: u32,
    pub to: u32,
    pub via: Vec<u32>,
}

/// An explicit fabric, resolved against the cluster's racks.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Topology {
    pub switches: Vec<String>,
    pub families: Vec<Family>,
    pub links: Vec<SwitchLink>,
    /// Per rack (cluster order): its attachment, `None` for a rack with no compute NICs.
    pub attach: Vec<Option<Attachment>>,
    pub routing: Option<Routing>,
    pub routes: Vec<DeclaredRoute>,
    /// Per switch: what it speaks ([`Wire`]), from the kinds of its links and the NICs
    /// attached to its part of the fabric; `None` for a part with neither.
    pub wire: Vec<Option<Wire>>,
    /// Unresolved `attach` statements: rack names, switches, rails, where written.
    #[serde(skip)]
    pub(super) pending: Vec<PendingAttach>,
    #[serde(skip)]
    pub(super) routing_span: Option<Span>,
    /// The block had errors: its attachments are not checked (they would only echo them).
    #[serde(skip)]
    pub(super) broken: bool,
}

#[derive(Debug, Clone)]
pub(super) struct PendingAttach {
    racks: Vec<(String, Span)>,
    switches: Vec<u32>,
    rails: bool,
    /// With `rails ... each N`: each rack its next N switches; without, all of them.
    each: Option<usize>,
    span: Span,
}

impl Topology {
    /// The index of a switch by name.
    pub fn switch(&self, name: &str) -> Option<u32> {
        // Families are few; members are found arithmetically from the family's first index.
        self.switches
            .iter()
            .position(|s| s == name)
            .map(|i| i as u32)
    }

    /// The family and coordinates of switch `s`.
    pub fn coords(&self, s: u32) -> Option<(usize, Vec<u32>)> {
        let f = self.families.iter().rposition(|f| f.first <= s)?;
        let fam = &self.families[f];
        let mut rem = s - fam.first;
        let mut c = vec![0; fam.dims.len()];
        for d in (0..fam.dims.len()).rev() {
            c[d] = rem % fam.dims[d];
            rem /= fam.dims[d];
        }
        Some((f, c))
    }
}

/// Read the block of `fabric explicit`.
pub(super) fn topology(cx: &mut Cx, stmts: &[Stmt]) -> Topology {
    let mut t = Topology::default();
    let mut by_name: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut merged: BTreeMap<(u32, u32), usize> = BTreeMap::new();
    let before = cx.error_count();
    cx.each(stmts, schema::TOPOLOGY, "an explicit fabric", |cx, s, def| {
        let mut a = Args::new(s, def);
        match def.key {
            "switch" => switch(cx, &mut a, &mut t, &mut by_name),
            "link" => link(cx, &mut a, s, &mut t, &by_name, &mut merged),
            "attach" => {
                let rails = a.flag("rails");
                let each = match a.opt("each") {
                    Some(v) => match rd::count(cx, v, 1, MAX_SWITCHES as u64) {
                        Some(n) if rails => Some(n as usize),
                        Some(_) => {
                            cx.error(v.span, "`each` gives each rack its own rails: write `attach rails RACKS SWITCHES each N`");
                            None
                        }
                        None => None,
                    },
                    None => None,
                };
                let racks = a.req("racks").and_then(|v| rd::names(cx, v));
                let sw = a.req("switches").and_then(|v| members(cx, v, &by_name));
                if let (Some(racks), Some(switches)) = (racks, sw) {
                    t.pending.push(PendingAttach {
                        racks,
                        switches,
                        rails,
                        each,
                        span: s.head_span(),
                    });
                }
            }
            "routing" => {
                if let Some(v) = a.req("`ecmp` or `dimension_order`")
                    && let Some(w) = rd::choice(cx, v, schema::ROUTINGS, "routing")
                {
                    t.routing = Some(if w == "ecmp" {
                        Routing::Ecmp
                    } else {
                        Routing::DimensionOrder { family: 0 }
                    });
                    t.routing_span = Some(v.span);
                }
            }
            "route" => route(cx, &mut a, s, &mut t, &by_name),
            _ => {}
        }
        a.finish(cx);
    });
    t.broken = cx.error_count() > before;
    t
}

fn switch(cx: &mut Cx, a: &mut Args, t: &mut Topology, by_name: &mut BTreeMap<String, Vec<u32>>) {
    let grid = a.opt("grid");
    let Some(v) = a.req("a switch name, such as `spine0`, `leaf[0..7]` or `t grid 4x4x4`") else {
        return;
    };
    // (family name, dims, member names)
    let (name, dims, names): (String, Vec<u32>, Vec<String>) = match (&v.kind, grid) {
        (ValueKind::Ident(n), Some(g)) => {
            let ValueKind::Dims(d) = &g.kind else {
                cx.error(
                    g.span,
                    format!(
                        "expected a grid shape such as `4x4x4`, found {}",
                        g.kind.describe()
                    ),
                );
                return;
            };
            let total = d.iter().try_fold(1u64, |p, x| p.checked_mul(*x));
            match total {
                Some(n) if n >= 1 && n <= MAX_SWITCHES as u64 && d.iter().all(|x| *x >= 1) => {}
                _ => {
                    cx.error(
                        g.span,
                        format!(
                            "a grid holds 1 to {MAX_SWITCHES} switches, each dimension at least 1"
                        ),
                    );
                    return;
                }
            }
            let dims: Vec<u32> = d.iter().map(|x| *x as u32).collect();
            let total: u32 = dims.iter().product();
            let names = (0..total)
                .map(|k| {
                    let mut rem = k;
                    let mut c = vec![0; dims.len()];
                    for i in (0..dims.len()).rev() {
                        c[i] = rem % dims[i];
                        rem /= dims[i];
                    }
                    let parts: Vec<String> = c.iter().map(u32::to_string).collect();
                    format!("{n}.{}", parts.join("."))
                })
                .collect();
            (n.clone(), dims, names)
        }
        (ValueKind::Ident(n), None) => (n.clone(), vec![1], vec![n.clone()]),
        (ValueKind::Pattern { base, .. }, None) => {
            let Some(ns) = rd::names(cx, v) else { return };
            (
                base.clone(),
                vec![ns.len() as u32],
                ns.into_iter().map(|x| x.0).collect(),
            )
        }
        (_, Some(g)) => {
            cx.error(
                g.span,
                "`grid` names its family with a plain name: `switch t grid 4x4x4`",
            );
            return;
        }
        (other, None) => {
            cx.error(
                v.span,
                format!(
                    "expected a switch name or a pattern such as `leaf[0..7]`, found {}",
                    other.describe()
                ),
            );
            return;
        }
    };
    if t.switches.len() + names.len() > MAX_SWITCHES {
        cx.error(
            v.span,
            format!("an explicit fabric holds at most {MAX_SWITCHES} switches"),
        );
        return;
    }
    for n in std::iter::once(&name).chain(&names) {
        if by_name.contains_key(n) {
            cx.error(v.span, format!("switch name `{n}` is declared twice"));
            return;
        }
    }
    let first = t.switches.len() as u32;
    let ids: Vec<u32> = (first..first + names.len() as u32).collect();
    for (k, n) in names.iter().enumerate() {
        if *n != name {
            by_name.insert(n.clone(), vec![ids[k]]);
        }
    }
    by_name.insert(name.clone(), ids);
    t.switches.extend(names);
    t.families.push(Family {
        name,
        first,
        dims,
        wrap: None,
    });
}

/// The switches a value names: a family name (all its members), a member, a pattern or a list.
fn members(cx: &mut Cx, v: &Value, by_name: &BTreeMap<String, Vec<u32>>) -> Option<Vec<u32>> {
    let names = rd::names(cx, v)?;
    let mut out = Vec::new();
    for (n, sp) in names {
        match by_name.get(&n) {
            Some(ids) => out.extend(ids),
            None => {
                let help = did_you_mean(&n, by_name.keys().map(String::as_str))
                    .unwrap_or_else(|| "declare it with `switch NAME` first".to_string());
                cx.push(
                    Diagnostic::error(sp, format!("no switch `{n}` in this fabric"))
                        .with_help(help),
                );
                return None;
            }
        }
    }
    Some(out)
}

fn route(
    cx: &mut Cx,
    a: &mut Args,
    s: &Stmt,
    t: &mut Topology,
    by_name: &BTreeMap<String, Vec<u32>>,
) {
    let via = a.opt("via");
    let ends = [a.req("the first switch"), a.req("the last switch")];
    let [Some(x), Some(y)] = ends else { return };
    let one = |cx: &mut Cx, v: &Value| -> Option<u32> {
        let m = members(cx, v, by_name)?;
        if m.len() != 1 {
            cx.error(v.span, "a route runs between two single switches");
            return None;
        }
        Some(m[0])
    };
    let (Some(from), Some(to)) = (one(cx, x), one(cx, y)) else {
        return;
    };
    let mid = match via {
        Some(v) => match members(cx, v, by_name) {
            Some(m) => m,
            None => return,
        },
        None => Vec::new(),
    };
    let hops: Vec<u32> = std::iter::once(from)
        .chain(mid.iter().copied())
        .chain([to])
        .collect();
    let linked: std::collections::BTreeSet<(u32, u32)> =
        t.links.iter().map(|l| (l.a, l.b)).collect();
    for w in hops.windows(2) {
        if !linked.contains(&(w[0].min(w[1]), w[0].max(w[1]))) {
            cx.push(
                Diagnostic::error(
                    s.head_span(),
                    format!(
                        "this route steps from `{}` to `{}`, which no link joins",
                        t.switches[w[0] as usize], t.switches[w[1] as usize]
                    ),
                )
                .with_help("declare the links before the routes that use them"),
            );
            return;
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    if !hops.iter().all(|h| seen.insert(*h)) {
        cx.error(s.head_span(), "a route visits a switch twice");
        return;
    }
    if t.routes.iter().any(|r| r.from == from && r.to == to) {
        cx.error(s.head_span(), "this route is declared twice");
        return;
    }
    t.routes.push(DeclaredRoute { from, to, via: mid });
}
