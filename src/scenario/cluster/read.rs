//! Reading a `cluster` block: zones, racks, slices and node groups, the fabric, and each
//! rack's scale-up domain, every problem located.

use super::storage::{attach_span, storage};
use super::*;
use crate::diag::{Diagnostic, did_you_mean};
use crate::scenario::hardware::NodeType;
use crate::scenario::reader::{self as rd, Args, Cx};
use crate::scenario::schema;
use crate::syntax::ast::{Stmt, ValueKind};
use std::collections::BTreeMap;

struct Builder<'a> {
    node_types: &'a BTreeMap<String, NodeType>,
    c: Cluster,
    /// Next free index per (rack, prefix).
    next: BTreeMap<(usize, String), u32>,
    total: u64,
    rack_spans: BTreeMap<String, Span>,
    /// Per rack with a rack-scale NVSwitch domain (`scale_up rack`): its node type, the
    /// devices so far, and where that type was first placed.
    domains: BTreeMap<usize, (String, u64, Span)>,
}

pub fn cluster(
    cx: &mut Cx,
    node_types: &BTreeMap<String, NodeType>,
    nics: &BTreeMap<String, crate::scenario::hardware::Nic>,
    name: &str,
    span: Span,
    stmts: &[Stmt],
) -> Cluster {
    let mut b = Builder {
        domains: BTreeMap::new(),
        node_types,
        c: Cluster {
            name: name.to_string(),
            zones: Vec::new(),
            racks: Vec::new(),
            groups: Vec::new(),
            fabric: None,
            head: None,
            storage: Vec::new(),
            span,
        },
        next: BTreeMap::new(),
        total: 0,
        rack_spans: BTreeMap::new(),
    };
    let mut head: Option<(String, Span)> = None;
    let mut fabric_span: Option<Span> = None;
    // Where each `attach fabric` was written, checked against the fabric once all is read.
    let mut fabric_attached: Vec<(String, Span)> = Vec::new();
    cx.each(stmts, schema::CLUSTER, "a cluster", |cx, s, def| {
        let mut a = Args::new(s, def);
        match def.key {
            "storage" => {
                if let Some(st) = storage(cx, &mut a, s, &b.c.storage) {
                    if st.attach == Attach::Fabric {
                        let at = attach_span(s).unwrap_or(st.span);
                        fabric_attached.push((st.name.clone(), at));
                    }
                    b.c.storage.push(st);
                }
            }
            "zone" => {
                let Some(zv) = a.req("a zone name") else {
                    return;
                };
                let Some(z) = rd::ident(cx, zv, "a zone name") else {
                    return;
                };
                if b.c.zones.iter().any(|x| x == z) {
                    cx.error(zv.span, format!("zone `{z}` is declared twice"));
                    return;
                }
                b.c.zones.push(z.to_string());
                let zi = b.c.zones.len() - 1;
                if let Some(blk) = cx.block(s) {
                    cx.each(&blk.stmts, schema::ZONE, "a zone", |cx, s2, def2| {
                        b.placement(cx, s2, def2, Some(zi))
                    });
                }
            }
            "rack" | "slice" | "node" => {
                b.placement(cx, s, def, None);
                return;
            }
            "fabric" => {
                let f = (|| -> Option<Fabric> {
                    let kind = rd::choice(
                        cx,
                        a.req("a fabric kind")?,
                        schema::FABRIC_KINDS,
                        "fabric kind",
                    )?;
                    let topology = if kind == "explicit" {
                        let Some(blk) = &s.block else {
                            cx.push(
                                Diagnostic::error(s.head_span(), "`fabric explicit` needs a block of switches and links")
                                    .with_help("such as `fabric explicit { switch leaf[0..3]  switch spine0  link leaf spine0 400 Gbps pattern all  attach r[0..3] leaf }`"),
                            );
                            return None;
                        };
                        for w in ["oversubscription", "spine_uplink", "zone_uplink", "spines"] {
                            if let Some(v) = a.opt(w) {
                                cx.push(
                                    Diagnostic::error(v.span, format!("`{w}` does not apply to an explicit fabric"))
                                        .with_help("its links' bandwidths say what each carries"),
                                );
                                return None;
                            }
                        }
                        Some(Box::new(crate::scenario::topology::topology(cx, &blk.stmts)))
                    } else {
                        cx.no_block(s);
                        None
                    };
                    let oversubscription = match a.opt("oversubscription") {
                        Some(v) => match &v.kind {
                            ValueKind::Ratio(x, y) if x.value >= y.value && y.value > 0.0 => {
                                x.value / y.value
                            }
                            ValueKind::Ratio(..) => {
                                cx.push(
                                    Diagnostic::error(
                                        v.span,
                                        "oversubscription below 1:1 is not a real fabric",
                                    )
                                    .with_help("write it as downlink:uplink, such as `2:1`"),
                                );
                                return None;
                            }
                            other => {
                                cx.error(
                                    v.span,
                                    format!(
                                        "expected a ratio such as `2:1`, found {}",
                                        other.describe()
                                    ),
                                );
                                return None;
                            }
                        },
                        None => 1.0,
                    };
                    let latency = match a.opt("latency") {
                        Some(v) => Some(rd::duration(cx, v)?),
                        None => None,
                    };
                    let spine_uplink = match a.opt("spine_uplink") {
                        Some(v) => Some(rd::bandwidth(cx, v)?),
                        None => None,
                    };
                    let zone_uplink = match a.opt("zone_uplink") {
                        Some(v) => Some(rd::bandwidth(cx, v)?),
                        None => None,
                    };
                    let spines = match a.opt("spines") {
                        Some(v) => {
                            if kind == "single_switch" {
                                cx.push(
                                    Diagnostic::error(v.span, "`spines` does not apply to a single switch")
                                        .with_help("a `leaf_spine`, `fat_tree` or `rail_optimized` fabric has spines"),
                                );
                                return None;
                            }
                            rd::count(cx, v, 1, MAX_SPINES)? as usize
                        }
                        None => SPINES,
                    };
                    if spine_uplink.is_some() && oversubscription != 1.0 {
                        cx.push(
                            Diagnostic::error(s.head_span(), "give either `oversubscription` or `spine_uplink`, not both")
                                .with_help("`spine_uplink` is each leaf's uplink capacity to the spine; oversubscription then follows from it"),
                        );
                        return None;
                    }
                    Some(Fabric {
                        kind: kind.to_string(),
                        oversubscription,
                        latency,
                        spine_uplink,
                        zone_uplink,
                        topology,
                        spines,
                    })
                })();
                b.c.fabric = f;
                fabric_span = Some(s.head_span());
            }
            "head" => {
                cx.no_block(s);
                if let Some(v) = a.req("a node name")
                    && let Some(n) = rd::ident(cx, v, "a node name") {
                        head = Some((n.to_string(), v.span));
                    }
            }
            _ => {}
        }
        a.finish(cx);
    });
    if let Some((h, sp)) = head {
        if b.c.find_node(&h).is_none() {
            let names: Vec<String> = b.c.nodes().take(10_000).map(|n| n.name).collect();
            let help = did_you_mean(&h, names.iter().map(String::as_str));
            cx.push(
                Diagnostic::error(sp, format!("no node `{h}` in cluster `{name}`"))
                    .with_help_opt(help),
            );
        } else {
            b.c.head = Some(h);
        }
    }
    if b.c.fabric.is_none() && fabric_span.is_none() {
        for (st, at) in &fabric_attached {
            cx.push(
                Diagnostic::error(
                    *at,
                    format!("storage `{st}` attaches to the fabric, but cluster `{name}` has no `fabric`"),
                )
                .with_help("declare one (such as `fabric leaf_spine`), or use `attach node_local` for drives in each node"),
            );
        }
    }
    if let (Some(f), Some(at)) = (&mut b.c.fabric, fabric_span)
        && let Some(t) = &mut f.topology
    {
        // Each rack's fabric NICs as the graph attaches them: a node's compute NICs (all of
        // them if none is), the k-th of them to the k-th attach switch.
        let mut ports = vec![std::collections::BTreeSet::new(); b.c.racks.len()];
        for g in &b.c.groups {
            let Some(nt) = node_types.get(&g.node_type).filter(|_| g.count > 0) else {
                continue;
            };
            let mut k = 0;
            for group in nt.nics.iter().filter(|n| nt.on_fabric(n)) {
                let protocol = nics
                    .get(&group.nic)
                    .map_or_else(String::new, |n| n.protocol.clone());
                for _ in &group.at {
                    ports[g.rack].insert((k, group.nic.clone(), protocol.clone()));
                    k += 1;
                }
            }
        }
        let with_nics: Vec<crate::scenario::topology::RackPorts> =
            b.c.racks
                .iter()
                .zip(ports)
                .map(|(r, ports)| crate::scenario::topology::RackPorts {
                    name: r.name.clone(),
                    ports,
                })
                .collect();
        crate::scenario::topology::resolve(cx, t, &with_nics, at);
        for (st, at) in &fabric_attached {
            cx.push(
                Diagnostic::error(*at, format!("storage `{st}` attaches to the fabric, but an explicit fabric has no place for it yet"))
                    .with_help("use `attach node_local`, or a leaf_spine fabric"),
            );
        }
    }
    if b.c.groups.is_empty() {
        cx.push(Diagnostic::warning(
            span,
            format!("cluster `{name}` has no nodes"),
        ));
    }
    if let (Some(f), Some(at)) = (&b.c.fabric, fabric_span)
        && f.zone_uplink.is_some()
        && b.c
            .racks
            .iter()
            .map(|r| r.zone)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            < 2
    {
        cx.push(
            Diagnostic::warning(
                at,
                "`zone_uplink` has no effect: every rack is in the same zone",
            )
            .with_help("declare racks inside `zone NAME { ... }` blocks"),
        );
    }
    b.c
}

impl Builder<'_> {
    fn add_rack(
        &mut self,
        cx: &mut Cx,
        name: &str,
        span: Span,
        zone: Option<usize>,
        slice: Option<SliceShape>,
    ) -> Option<usize> {
        if let Some(first) = self.rack_spans.get(name) {
            cx.push(
                Diagnostic::error(span, format!("rack or slice `{name}` is declared twice"))
                    .with_secondary(*first, "first declared here"),
            );
            return None;
        }
        self.rack_spans.insert(name.to_string(), span);
        self.c.racks.push(Rack {
            name: name.to_string(),
            zone,
            slice,
        });
        Some(self.c.racks.len() - 1)
    }

    fn node_type(&self, cx: &mut Cx, v: &crate::syntax::ast::Value) -> Option<String> {
        let t = rd::ident(cx, v, "a node type")?;
        if !self.node_types.contains_key(t) {
            let help =
                did_you_mean(t, self.node_types.keys().map(String::as_str)).unwrap_or_else(|| {
                    "declare it with `node NAME { ... }`; `orrery catalog` lists built-in ones"
                        .into()
                });
            cx.push(Diagnostic::error(v.span, format!("unknown node type `{t}`")).with_help(help));
            return None;
        }
        Some(t.to_string())
    }

    fn add_group(
        &mut self,
        cx: &mut Cx,
        rack: usize,
        node_type: String,
        count: u64,
        prefix: String,
        span: Span,
    ) -> Option<()> {
        self.total += count;
        if self.total > MAX_NODES {
            cx.error(
                span,
                format!(
                    "the cluster would have {} nodes; the limit is {MAX_NODES}",
                    self.total
                ),
            );
            return None;
        }
        if let Some(nt) = self.node_types.get(&node_type)
            && let Some(d) = nt.rack_domain
        {
            let e = self
                .domains
                .entry(rack)
                .or_insert_with(|| (node_type.clone(), 0, span));
            if e.0 != node_type {
                cx.push(
                    Diagnostic::error(span, format!("a rack holds one rack-scale NVSwitch domain: `{node_type}` cannot join the domain of `{}`", e.0))
                        .with_secondary(e.2, "the rack's domain starts here")
                        .with_help("put each `scale_up rack` node type in racks of its own"),
                );
                return None;
            }
            e.1 += count * u64::from(nt.device_count());
            if let Some(max) = d.max_devices
                && e.1 > u64::from(max)
            {
                cx.push(
                    Diagnostic::error(span, format!("this rack's NVSwitch domain would hold {} devices; `{node_type}` declares `scale_up rack max {max}`", e.1))
                        .with_help("spread the nodes over more racks"),
                );
                return None;
            }
        }
        let next = self.next.entry((rack, prefix.clone())).or_insert(0);
        let first = *next;
        *next += count as u32;
        self.c.groups.push(NodeGroup {
            rack,
            node_type,
            count: count as u32,
            prefix,
            first,
        });
        Some(())
    }

    /// `rack`, `slice` or `node` inside the cluster or a zone.
    fn placement(&mut self, cx: &mut Cx, s: &Stmt, def: &schema::StmtDef, zone: Option<usize>) {
        let mut a = Args::new(s, def);
        let _ = (|| -> Option<()> {
            match def.key {
                "rack" => {
                    let names = rd::names(cx, a.req("rack names such as `r[0..15]`")?)?;
                    let blk = cx.block(s)?;
                    for (rname, sp) in names {
                        let Some(ri) = self.add_rack(cx, &rname, sp, zone, None) else {
                            continue;
                        };
                        let mut stop = false;
                        cx.each(&blk.stmts, schema::RACK, "a rack", |cx, s2, def2| {
                            if !stop && self.node_stmt(cx, s2, def2, ri).is_none() {
                                stop = true; // report once, not once per rack
                            }
                        });
                        if stop {
                            break;
                        }
                    }
                }
                "slice" => {
                    cx.no_block(s);
                    let names = rd::names(cx, a.req("slice names")?)?;
                    let tv = a.opt("node").or_else(|| {
                        cx.error(s.head_span(), "`slice` needs `node TYPE`");
                        None
                    })?;
                    let t = self.node_type(cx, tv)?;
                    let dv = a.opt("topology").or_else(|| {
                        cx.error(s.head_span(), "`slice` needs `topology` such as `2x2x4`");
                        None
                    })?;
                    let ValueKind::Dims(dims) = &dv.kind else {
                        cx.error(
                            dv.span,
                            format!(
                                "expected a torus shape such as `4x4` or `2x2x4`, found {}",
                                dv.kind.describe()
                            ),
                        );
                        return None;
                    };
                    let Some(chips) = dims
                        .iter()
                        .try_fold(1u64, |acc, d| acc.checked_mul(*d))
                        .filter(|c| *c <= MAX_NODES * 64)
                    else {
                        cx.error(
                            dv.span,
                            format!(
                                "the slice has too many chips; the limit is {}",
                                MAX_NODES * 64
                            ),
                        );
                        return None;
                    };
                    if dims.contains(&0) || dims.len() > 3 {
                        cx.error(
                            dv.span,
                            "a slice torus has one to three dimensions, none of them zero",
                        );
                        return None;
                    }
                    let nt = &self.node_types[&t];
                    let per_host = u64::from(nt.device_count());
                    if per_host == 0 || nt.devices.iter().any(|g| g.link != "torus") {
                        cx.push(
                            Diagnostic::error(tv.span, format!("node type `{t}` cannot host a slice: its devices are not linked as a `torus`"))
                                .with_secondary(nt.span, "node type declared here"),
                        );
                        return None;
                    }
                    if chips % per_host != 0 {
                        cx.error(dv.span, format!("{chips} chips do not fill whole `{t}` hosts of {per_host} chips each"));
                        return None;
                    }
                    let hosts = chips / per_host;
                    if hosts > MAX_NODES {
                        cx.error(
                            dv.span,
                            format!("{hosts} hosts exceed the limit of {MAX_NODES} nodes"),
                        );
                        return None;
                    }
                    for (sname, sp) in names {
                        let shape = SliceShape {
                            dims: dims.clone(),
                            chips,
                            hosts: hosts as u32,
                        };
                        let Some(ri) = self.add_rack(cx, &sname, sp, zone, Some(shape)) else {
                            continue;
                        };
                        self.add_group(cx, ri, t.clone(), hosts, "h".into(), dv.span)?;
                    }
                }
                "node" => {
                    cx.no_block(s);
                    let rack = match zone {
                        Some(z) => self.c.zones[z].clone(),
                        None => String::new(),
                    };
                    let ri = match self.c.rack_index(&rack) {
                        Some(ri) => ri,
                        None => {
                            self.c.racks.push(Rack {
                                name: rack,
                                zone,
                                slice: None,
                            });
                            self.c.racks.len() - 1
                        }
                    };
                    return self.node_stmt(cx, s, def, ri);
                }
                _ => {}
            }
            Some(())
        })();
        if def.key != "node" {
            a.finish(cx);
        }
    }

    /// `node TYPE x N [name PREFIX]` in rack `ri`.
    fn node_stmt(&mut self, cx: &mut Cx, s: &Stmt, def: &schema::StmtDef, ri: usize) -> Option<()> {
        cx.no_block(s);
        let mut a = Args::new(s, def);
        let r = (|| -> Option<()> {
            let t = self.node_type(cx, a.req("a node type")?)?;
            let cv = a.opt("x").or_else(|| {
                let h = s.head_span();
                cx.push(
                    Diagnostic::error(
                        Span::new(h.file, h.end, h.end),
                        "`node` needs a count, as in `node dgx_h100 x 4`",
                    )
                    .with_label("expected `x N` here"),
                );
                None
            })?;
            let count = rd::count(cx, cv, 1, MAX_NODES)?;
            let prefix = match a.opt("name") {
                Some(v) => rd::ident(cx, v, "a name prefix")?.to_string(),
                None => "n".to_string(),
            };
            if prefix.ends_with(|c: char| c.is_ascii_digit()) || prefix.contains('.') {
                cx.error(
                    s.head_span(),
                    format!("name prefix `{prefix}` must not end in a digit or contain `.`"),
                );
                return None;
            }
            self.add_group(cx, ri, t, count, prefix, cv.span)
        })();
        a.finish(cx);
        r
    }
}
