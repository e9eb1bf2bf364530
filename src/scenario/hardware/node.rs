//! Reading `node_type` blocks: devices, NICs, CPU, PCIe switch trees and NUMA locality, each
//! problem located.

use super::devices::{figure_source, required};
use super::*;
use crate::diag::{Diagnostic, did_you_mean};
use crate::scenario::reader::{self as rd, Args, Cx};
use crate::scenario::schema;
use crate::syntax::ast::{Stmt, ValueKind};

/// What a node statement may refer to.
pub struct HardwareNames<'a> {
    pub accelerators: &'a BTreeMap<String, Accelerator>,
    pub nics: &'a BTreeMap<String, Nic>,
}

pub fn node_type(
    cx: &mut Cx,
    hw: &HardwareNames,
    name: &str,
    span: Span,
    base: Option<&NodeType>,
    stmts: &[Stmt],
) -> Option<NodeType> {
    let mut n = match base {
        Some(b) => NodeType {
            name: name.to_string(),
            span,
            ..b.clone()
        },
        None => NodeType {
            name: name.to_string(),
            cpu: Cpu::default(),
            memory: Bytes(0),
            pcie: None,
            switches: Vec::new(),
            devices: Vec::new(),
            nics: Vec::new(),
            labels: BTreeMap::new(),
            resources: BTreeMap::new(),
            rack_domain: None,
            price: None,
            power: None,
            source: None,
            sources: Sources::new(),
            span,
            given: BTreeSet::new(),
            switch_ids: Default::default(),
        },
    };
    // Statements that list things replace the inherited list as a whole.
    for key in ["switch", "device", "nic"] {
        if stmts.iter().any(|s| s.key.name == key) {
            match key {
                "switch" => {
                    n.switches.clear();
                    n.switch_ids.clear();
                }
                "device" => n.devices.clear(),
                _ => n.nics.clear(),
            }
        }
    }
    // The CPU comes first: NUMA indices in other statements are checked against it.
    let mut order: Vec<&Stmt> = stmts.iter().filter(|s| s.key.name == "cpu").collect();
    order.extend(stmts.iter().filter(|s| s.key.name != "cpu"));
    let ordered: Vec<Stmt> = order.into_iter().cloned().collect();
    let mut numa_span = span;
    cx.each(&ordered, schema::NODE, "a node type", |cx, s, def| {
        cx.no_block(s);
        let mut a = Args::new(s, def);
        let key = def.key;
        if key != "source" {
            figure_source(cx, &mut a, &mut n.sources, key);
        }
        let ok = (|| -> Option<()> {
            match key {
                "cpu" => {
                    let sockets = rd::count(cx, a.need("sockets", "sockets N")?, 1, 64)? as u32;
                    let cores = rd::count(cx, a.need("cores", "cores N")?, 1, MAX_CORES)? as u32;
                    let numa = match a.opt("numa") {
                        Some(v) => rd::count(cx, v, 1, 256)? as u32,
                        None => sockets,
                    };
                    let threads = match a.opt("threads") {
                        Some(v) => rd::count(cx, v, 1, 1 << 22)? as u32,
                        None => cores,
                    };
                    let model = match a.opt("model") {
                        Some(v) => Some(rd::string(cx, v)?.to_string()),
                        None => None,
                    };
                    if threads < cores {
                        cx.error(s.head_span(), format!("{threads} threads for {cores} cores: a core has at least one thread"));
                        return None;
                    }
                    if numa % sockets != 0 {
                        cx.error(s.head_span(), format!("{numa} NUMA domains cannot be split evenly over {sockets} sockets"));
                        return None;
                    }
                    numa_span = s.span;
                    n.cpu = Cpu { sockets, cores, numa, threads, model };
                }
                "memory" => n.memory = rd::bytes(cx, a.req("a size such as `2 TiB`")?)?,
                "pcie" => {
                    let g = rd::choice(cx, a.req("a PCIe generation")?, schema::PCIE_GENS, "PCIe generation")?;
                    n.pcie = g[3..].parse().ok();
                }
                "switch" => {
                    let names = rd::names(cx, a.req("switch names such as `sw[0..3]`")?)?;
                    let numa = match a.opt("numa") {
                        Some(v) => Some((rd::int_list(cx, v, 1023)?, v.span)),
                        None => None,
                    };
                    let parent = match a.opt("under") {
                        Some(v) => {
                            let p = rd::ident(cx, v, "a switch name")?;
                            match n.switch_named(p) {
                                Some(i) => Some(i),
                                None => {
                                    let help = did_you_mean(p, n.switches.iter().map(|s| s.name.as_str()))
                                        .unwrap_or_else(|| "declare the parent switch before its children".into());
                                    cx.push(Diagnostic::error(v.span, format!("no PCIe switch `{p}` in this node")).with_help(help));
                                    return None;
                                }
                            }
                        }
                        None => None,
                    };
                    let uplink = match a.opt("uplink") {
                        Some(v) => {
                            let g = rd::choice(cx, v, schema::PCIE_GENS, "PCIe generation")?;
                            let lanes = match a.next_value() {
                                Some(l) => rd::choice(cx, l, schema::PCIE_LANES, "PCIe width")?[1..].parse().ok()?,
                                None => 16,
                            };
                            Some(PcieLink { generation: g[3..].parse().ok()?, lanes })
                        }
                        None => None,
                    };
                    let count = names.len();
                    let numas = match (&numa, parent) {
                        (Some((list, sp)), _) => spread(cx, list, count, *sp, "switches")?,
                        (None, Some(p)) => vec![u64::from(n.switches[p].numa); count],
                        (None, None) => even_numa(n.cpu.numa.max(1), count),
                    };
                    for ((sw_name, sp), numa) in names.into_iter().zip(numas) {
                        check_numa(cx, numa, &n.cpu, sp, numa_span)?;
                        if n.switch_named(&sw_name).is_some() {
                            cx.error(sp, format!("PCIe switch `{sw_name}` is declared twice"));
                            return None;
                        }
                        let numa = parent.map(|p| n.switches[p].numa).unwrap_or(numa as u32);
                        n.push_switch(PcieSwitch { name: sw_name, numa, parent, uplink });
                    }
                }
                "device" | "nic" => {
                    let tv = a.req(if key == "device" { "an accelerator name" } else { "a NIC name" })?;
                    let tname = rd::ident(cx, tv, "a name")?;
                    let known: Vec<&str> = if key == "device" {
                        hw.accelerators.keys().map(String::as_str).collect()
                    } else {
                        hw.nics.keys().map(String::as_str).collect()
                    };
                    if !known.contains(&tname) {
                        let what = if key == "device" { "accelerator" } else { "NIC" };
                        let help = did_you_mean(tname, known.iter().copied())
                            .unwrap_or_else(|| format!("`orrery catalog` lists the known {what}s"));
                        cx.push(Diagnostic::error(tv.span, format!("unknown {what} `{tname}`")).with_help(help));
                        return None;
                    }
                    let count = match a.opt("x") {
                        Some(v) => rd::count(cx, v, 1, 4096)? as u32,
                        None if key == "nic" => 1,
                        None => {
                            missing(cx, s, "x");
                            return None;
                        }
                    };
                    let at = locate(cx, &mut a, &n, count as usize, numa_span)?;
                    if key == "device" {
                        let acc = &hw.accelerators[tname];
                        let link = match a.opt("link") {
                            Some(v) => rd::choice(cx, v, schema::LINK_TOPOS, "link topology")?,
                            None if acc.interconnect.is_some() && count > 1 => {
                                cx.push(
                                    Diagnostic::error(s.head_span(), format!("`{tname}` has a scale-up interconnect: say how the {count} devices are linked"))
                                        .with_help("add `link switch` (NVSwitch-style), `link mesh`, `link ring`, `link torus` or `link none`"),
                                );
                                return None;
                            }
                            None => "none",
                        };
                        if link != "none" && acc.interconnect.is_none() {
                            cx.error(s.head_span(), format!("`{tname}` declares no scale-up interconnect, so its devices cannot be linked by `{link}`"));
                            return None;
                        }
                        n.devices.push(DeviceGroup { accelerator: tname.to_string(), count, link: link.to_string(), at });
                    } else {
                        let role = match a.opt("role") {
                            Some(v) => rd::choice(cx, v, schema::NIC_ROLES, "NIC role")?,
                            None => "compute",
                        };
                        n.nics.push(NicGroup { nic: tname.to_string(), count, role: role.to_string(), at });
                    }
                }
                "labels" => {
                    let m = rd::map(cx, a.req("a map of labels")?)?;
                    rd::unique_keys(cx, m);
                    for (k, v) in m {
                        let val = rd::ident_or_string(cx, v, "a label value")?;
                        n.labels.insert(k.name.clone(), val.to_string());
                    }
                }
                "resources" => {
                    let m = rd::map(cx, a.req("a map of resources")?)?;
                    rd::unique_keys(cx, m);
                    for (k, v) in m {
                        if crate::scenario::workload::BUILTIN_RESOURCES.contains(&k.name.as_str()) {
                            cx.error(k.span, format!("`{}` is a built-in resource, derived from the node's hardware", k.name));
                            continue;
                        }
                        let x = rd::number(cx, v)?;
                        if x < 0.0 {
                            cx.error(v.span, "a resource amount must not be negative");
                            continue;
                        }
                        n.resources.insert(k.name.clone(), x);
                    }
                }
                "scale_up" => {
                    let v = a.req("`rack`")?;
                    if !matches!(&v.kind, crate::syntax::ast::ValueKind::Ident(w) if w == "rack") {
                        cx.error(v.span, "`scale_up` takes `rack`: the node's NVSwitch domain spans its rack");
                        return None;
                    }
                    let max = match a.opt("max") {
                        Some(m) => Some(rd::count(cx, m, 1, 1_000_000)? as u32),
                        None => None,
                    };
                    n.rack_domain = Some(RackDomain { max_devices: max });
                }
                "price" => n.price = Some(rd::price(cx, a.req("a price")?)?),
                "power" => n.power = Some(rd::power(cx, a.req("a power")?)?),
                "source" => n.source = Some(rd::string(cx, a.req("a source string")?)?.to_string()),
                _ => {}
            }
            Some(())
        })();
        if ok.is_some() {
            n.given.insert(key);
        }
        a.finish(cx);
    });
    if n.rack_domain.is_some() && !n.devices.iter().any(|g| g.link == "switch") {
        let at = stmts
            .iter()
            .find(|s| s.key.name == "scale_up")
            .map_or(span, |s| s.head_span());
        cx.push(
            Diagnostic::error(
                at,
                format!(
                    "node type `{name}`: `scale_up rack` needs devices linked by `link switch`"
                ),
            )
            .with_help("the rack's NVSwitch domain joins the nodes' NVSwitch-linked devices"),
        );
        return None;
    }
    required(cx, &n.given, &["cpu", "memory"], "node type", name, span).then_some(n)
}

fn missing(cx: &mut Cx, s: &Stmt, word: &str) -> Option<&'static crate::syntax::ast::Value> {
    let h = s.head_span();
    cx.push(
        Diagnostic::error(
            Span::new(h.file, h.end, h.end),
            format!("`{}` needs `{word} ...`", s.key.name),
        )
        .with_label(format!("expected `{word}` here")),
    );
    None
}

/// Spread `count` items over `list`: one each, or an even block each.
fn spread(cx: &mut Cx, list: &[u64], count: usize, span: Span, what: &str) -> Option<Vec<u64>> {
    if list.is_empty() {
        cx.error(span, "the list is empty");
        return None;
    }
    if !count.is_multiple_of(list.len()) {
        cx.push(
            Diagnostic::error(
                span,
                format!(
                    "{count} {what} cannot be spread evenly over {} locations",
                    list.len()
                ),
            )
            .with_help(
                "list one location per item, or a number of locations that divides the count",
            ),
        );
        return None;
    }
    let per = count / list.len();
    Some(
        list.iter()
            .flat_map(|x| std::iter::repeat_n(*x, per))
            .collect(),
    )
}

/// `count` items spread in even blocks over `numa` domains (round up at the end).
fn even_numa(numa: u32, count: usize) -> Vec<u64> {
    (0..count)
        .map(|k| (k as u64 * u64::from(numa)) / count.max(1) as u64)
        .collect()
}

fn check_numa(cx: &mut Cx, numa: u64, cpu: &Cpu, span: Span, cpu_span: Span) -> Option<()> {
    if numa >= u64::from(cpu.numa.max(1)) {
        let d = Diagnostic::error(
            span,
            format!(
                "NUMA domain {numa} does not exist: the node has {} (numbered from 0)",
                cpu.numa.max(1)
            ),
        );
        cx.push(if cpu_span != span {
            d.with_secondary(cpu_span, "NUMA domains declared here")
        } else {
            d
        });
        return None;
    }
    Some(())
}

/// `at sw[0..3]`, `at [sw0, sw1]` or `at numa [0, 1]`; without `at`, even over NUMA domains.
fn locate(
    cx: &mut Cx,
    a: &mut Args,
    n: &NodeType,
    count: usize,
    cpu_span: Span,
) -> Option<Vec<Locality>> {
    let Some(v) = a.opt("at") else {
        return Some(
            even_numa(n.cpu.numa.max(1), count)
                .into_iter()
                .map(|numa| Locality {
                    numa: numa as u32,
                    switch: None,
                })
                .collect(),
        );
    };
    if matches!(&v.kind, ValueKind::Ident(w) if w == "numa") {
        let lv = a.next_value().or_else(|| {
            cx.error(v.span, "`at numa` needs a NUMA index or a list of them");
            None
        })?;
        let list = rd::int_list(cx, lv, 1023)?;
        let numas = spread(cx, &list, count, lv.span, "items")?;
        for x in &numas {
            check_numa(cx, *x, &n.cpu, lv.span, cpu_span)?;
        }
        return Some(
            numas
                .into_iter()
                .map(|numa| Locality {
                    numa: numa as u32,
                    switch: None,
                })
                .collect(),
        );
    }
    let names = rd::names(cx, v)?;
    let mut idx = Vec::with_capacity(names.len());
    for (sw, sp) in &names {
        match n.switch_named(sw) {
            Some(i) => idx.push(i as u64),
            None => {
                let help = did_you_mean(sw, n.switches.iter().map(|s| s.name.as_str())).unwrap_or_else(|| {
                    if n.switches.is_empty() {
                        "this node declares no PCIe switches; add `switch NAME` or use `at numa N`".into()
                    } else {
                        format!("switches here: {}", n.switches.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", "))
                    }
                });
                cx.push(
                    Diagnostic::error(*sp, format!("no PCIe switch `{sw}` in this node"))
                        .with_help(help),
                );
                return None;
            }
        }
    }
    let at = spread(cx, &idx, count, v.span, "items")?;
    Some(
        at.into_iter()
            .map(|i| Locality {
                numa: n.switches[i as usize].numa,
                switch: Some(i as usize),
            })
            .collect(),
    )
}
