//! Reading `accelerator` and `nic` blocks (and the helpers node types share: a figure's
//! source, a PCIe link, required statements), each problem located.

use super::*;
use crate::diag::Diagnostic;
use crate::scenario::reader::{self as rd, Args, Cx};
use crate::scenario::schema;
use crate::syntax::ast::{Stmt, ValueKind};

/// A source given on the figure's own line (`memory 80 GB source "..."`).
pub(super) fn figure_source(cx: &mut Cx, a: &mut Args, sources: &mut Sources, key: &str) {
    if let Some(v) = a.opt("source")
        && let Some(s) = rd::string(cx, v)
    {
        sources.insert(key.to_string(), s.to_string());
    }
}

fn pcie_link(cx: &mut Cx, a: &mut Args) -> Option<PcieLink> {
    let g = a.req("a PCIe generation such as `gen5`")?;
    let generation = rd::choice(cx, g, schema::PCIE_GENS, "PCIe generation")?[3..]
        .parse()
        .ok()?;
    let lanes = match a.next_value() {
        Some(v) => rd::choice(cx, v, schema::PCIE_LANES, "PCIe width")?[1..]
            .parse()
            .ok()?,
        None => 16,
    };
    Some(PcieLink { generation, lanes })
}

pub(super) fn required(
    cx: &mut Cx,
    given: &BTreeSet<&'static str>,
    keys: &[&str],
    what: &str,
    name: &str,
    span: Span,
) -> bool {
    let missing: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| !given.contains(k))
        .collect();
    if missing.is_empty() {
        return true;
    }
    cx.push(
        Diagnostic::error(
            span,
            format!(
                "{what} `{name}` is missing {}",
                missing
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .with_label("declared here"),
    );
    false
}

pub fn accelerator(
    cx: &mut Cx,
    name: &str,
    span: Span,
    base: Option<&Accelerator>,
    stmts: &[Stmt],
) -> Option<Accelerator> {
    let mut acc = match base {
        Some(b) => Accelerator {
            name: name.to_string(),
            span,
            ..b.clone()
        },
        None => Accelerator {
            name: name.to_string(),
            vendor: String::new(),
            model: None,
            ray_resource: String::new(),
            accelerator_type: name.to_string(),
            memory: Bytes(0),
            memory_bw: Bandwidth(0.0),
            flops: BTreeMap::new(),
            interconnect: None,
            pcie: None,
            tdp: None,
            price: None,
            tier: Tier::Estimated,
            source: None,
            sources: Sources::new(),
            profile: None,
            profile_span: span,
            span,
            given: BTreeSet::new(),
        },
    };
    if base.is_some() && !stmts.iter().any(|s| s.key.name == "accelerator_type") {
        acc.accelerator_type = base.map(|b| b.accelerator_type.clone()).unwrap_or_default();
    }
    cx.each(stmts, schema::ACCELERATOR, "an accelerator", |cx, s, def| {
        cx.no_block(s);
        let mut a = Args::new(s, def);
        let key = def.key;
        if key != "source" {
            figure_source(cx, &mut a, &mut acc.sources, key);
        }
        let ok = (|| -> Option<()> {
            match key {
                "vendor" => acc.vendor = rd::ident_or_string(cx, a.req("a vendor")?, "a vendor")?.to_string(),
                "model" => acc.model = Some(rd::string(cx, a.req("a model name")?)?.to_string()),
                "ray_resource" => acc.ray_resource = rd::ident(cx, a.req("a Ray resource name")?, "a Ray resource name")?.to_string(),
                "accelerator_type" => acc.accelerator_type = rd::ident_or_string(cx, a.req("an accelerator type")?, "an accelerator type")?.to_string(),
                "memory" => acc.memory = rd::bytes(cx, a.req("a size such as `80 GB`")?)?,
                "memory_bw" => acc.memory_bw = rd::bandwidth(cx, a.req("a bandwidth such as `3.35 TB/s`")?)?,
                "flops" => {
                    acc.flops.clear();
                    let mut any = false;
                    while let Some(d) = a.next_value() {
                        let dt = rd::choice(cx, d, schema::DTYPES, "dtype")?;
                        let v = a.req("a compute rate such as `989 TFLOPS`")?;
                        let r = rd::flop_rate(cx, v)?;
                        if acc.flops.insert(dt.to_string(), r).is_some() {
                            cx.error(d.span, format!("dtype `{dt}` is given twice"));
                        }
                        any = true;
                    }
                    if !any {
                        cx.error(s.key.span, "`flops` needs at least one `dtype rate` pair, such as `bf16 989 TFLOPS`");
                        return None;
                    }
                }
                "interconnect" => {
                    let kind = rd::choice(cx, a.req("a link kind such as `nvlink`")?, schema::LINK_KINDS, "link kind")?;
                    if kind == "none" {
                        acc.interconnect = None;
                    } else {
                        let bw = rd::bandwidth(cx, a.req("a bandwidth")?)?;
                        let per_dir = a.flag("per_direction");
                        let bidir = a.flag("bidirectional");
                        if per_dir == bidir {
                            cx.push(
                                Diagnostic::error(s.head_span(), "say whether the bandwidth is `per_direction` or `bidirectional`")
                                    .with_help("datasheets often quote both directions added (NVLink4: 900 GB/s bidirectional = 450 GB/s per direction)"),
                            );
                            return None;
                        }
                        let links = match a.opt("links") {
                            Some(v) => Some(rd::count(cx, v, 1, 1024)? as u32),
                            None => None,
                        };
                        let per_direction = if bidir { Bandwidth(bw.0 / 2.0) } else { bw };
                        let collective = match a.opt("collective") {
                            Some(v) => {
                                let c = rd::bandwidth(cx, v)?;
                                if !(c.0 > 0.0 && c.0 <= per_direction.0) {
                                    cx.push(
                                        Diagnostic::error(v.span, format!("collective bandwidth {c} is not above 0 and at most the {per_direction} per direction"))
                                            .with_help("`collective` is per direction: what NCCL/RCCL reach over the link, at most its line rate"),
                                    );
                                    return None;
                                }
                                Some(c)
                            }
                            None => None,
                        };
                        let nvls = match a.opt("nvls") {
                            Some(v) => {
                                let f = rd::number(cx, v)?;
                                if !(f > 0.0 && f <= 1.0) {
                                    cx.error(v.span, format!("nvls efficiency {f} is not in (0, 1]"));
                                    return None;
                                }
                                Some(f)
                            }
                            None => None,
                        };
                        acc.interconnect = Some(Interconnect { kind: kind.to_string(), per_direction, links, collective, nvls });
                    }
                }
                "pcie" => acc.pcie = Some(pcie_link(cx, &mut a)?),
                "tdp" => acc.tdp = Some(rd::power(cx, a.req("a power such as `700 W`")?)?),
                "price" => acc.price = Some(rd::price(cx, a.req("a price such as `2.99 $/h`")?)?),
                "tier" => {
                    let v = a.req("a tier")?;
                    if let ValueKind::Ident(t) = &v.kind
                        && (t == "calibrated" || t == "validated")
                    {
                        cx.push(
                            Diagnostic::error(v.span, format!("tier `{t}` is computed, not declared"))
                                .with_help(
                                    "`tier` says where the figures come from (`datasheet` or `estimated`); name a measured or imported calibration profile with `profile NAME` and the tier follows its evidence",
                                ),
                        );
                        return None;
                    }
                    acc.tier = match rd::choice(cx, v, schema::TIERS, "tier")? {
                        "datasheet" => Tier::Datasheet,
                        _ => Tier::Estimated,
                    }
                }
                "source" => acc.source = Some(rd::string(cx, a.req("a source string")?)?.to_string()),
                "profile" => {
                    let v = a.req("a calibration profile name such as `h200_datasheet`")?;
                    acc.profile = Some(rd::ident(cx, v, "a calibration profile name")?.to_string());
                    acc.profile_span = v.span;
                }
                _ => {}
            }
            Some(())
        })();
        if ok.is_some() {
            acc.given.insert(key);
        }
        a.finish(cx);
    });
    let ok = required(
        cx,
        &acc.given,
        &["vendor", "ray_resource", "memory", "memory_bw", "flops"],
        "accelerator",
        name,
        span,
    );
    ok.then_some(acc)
}

pub fn nic(cx: &mut Cx, name: &str, span: Span, base: Option<&Nic>, stmts: &[Stmt]) -> Option<Nic> {
    let mut nic = match base {
        Some(b) => Nic {
            name: name.to_string(),
            span,
            ..b.clone()
        },
        None => Nic {
            name: name.to_string(),
            vendor: None,
            model: None,
            speed: Bandwidth(0.0),
            protocol: String::new(),
            rdma: false,
            gpudirect: false,
            latency: None,
            price: None,
            tdp: None,
            source: None,
            sources: Sources::new(),
            span,
            given: BTreeSet::new(),
        },
    };
    cx.each(stmts, schema::NIC, "a NIC", |cx, s, def| {
        cx.no_block(s);
        let mut a = Args::new(s, def);
        let key = def.key;
        if key != "source" {
            figure_source(cx, &mut a, &mut nic.sources, key);
        }
        let ok = (|| -> Option<()> {
            match key {
                "vendor" => {
                    nic.vendor =
                        Some(rd::ident_or_string(cx, a.req("a vendor")?, "a vendor")?.to_string())
                }
                "model" => nic.model = Some(rd::string(cx, a.req("a model name")?)?.to_string()),
                "speed" => nic.speed = rd::bandwidth(cx, a.req("a speed such as `400 Gbps`")?)?,
                "protocol" => {
                    nic.protocol =
                        rd::choice(cx, a.req("a protocol")?, schema::NIC_PROTOCOLS, "protocol")?
                            .to_string()
                }
                "rdma" => nic.rdma = rd::boolean(cx, a.req("`true` or `false`")?)?,
                "gpudirect" => nic.gpudirect = rd::boolean(cx, a.req("`true` or `false`")?)?,
                "latency" => {
                    nic.latency = Some(rd::duration(cx, a.req("a time such as `1.5 us`")?)?)
                }
                "price" => nic.price = Some(rd::price(cx, a.req("a price")?)?),
                "tdp" => nic.tdp = Some(rd::power(cx, a.req("a power")?)?),
                "source" => {
                    nic.source = Some(rd::string(cx, a.req("a source string")?)?.to_string())
                }
                _ => {}
            }
            Some(())
        })();
        if ok.is_some() {
            nic.given.insert(key);
        }
        a.finish(cx);
    });
    if nic.gpudirect && !nic.rdma && nic.given.contains("gpudirect") {
        cx.error(
            span,
            format!("NIC `{name}` claims GPUDirect without RDMA; GPUDirect RDMA needs `rdma true`"),
        );
    }
    required(cx, &nic.given, &["speed", "protocol"], "NIC", name, span).then_some(nic)
}
