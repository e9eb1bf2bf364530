//! Accelerators, NICs and node types: their validated model and how statements build it.
//!
//! A declaration may start from another (`from BASE`); the set of statements given so far is
//! tracked so that required figures are checked once, after inheritance.
//!
//! Why over 600 lines: not split yet (issue 43); tests/all/tidy.rs holds it at this length.

use super::reader::{self as rd, Args, Cx};
use super::schema;
use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::syntax::ast::{Stmt, ValueKind};
use crate::units::{Bandwidth, Bytes, FlopRate, Power, Price};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Where a figure came from: the statement's own `source`, else the block's.
pub type Sources = BTreeMap<String, String>;

/// How far an accelerator's figures can be trusted, lowest first. `estimated` and
/// `datasheet` are declared (`tier`); `calibrated` and `validated` are computed from a named
/// profile's evidence (`crate::maturity`), never declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Estimated,
    Datasheet,
    Calibrated,
    Validated,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Estimated => "estimated",
            Tier::Datasheet => "datasheet",
            Tier::Calibrated => "calibrated",
            Tier::Validated => "validated",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PcieLink {
    pub generation: u8,
    pub lanes: u8,
}

impl PcieLink {
    /// Theoretical bandwidth per direction (after 128b/130b encoding for gen3+):
    /// gen3 ≈ 0.985, gen4 ≈ 1.97, gen5 ≈ 3.94, gen6 ≈ 7.88 GB/s per lane (PCI-SIG).
    pub fn bandwidth(self) -> Bandwidth {
        let per_lane = 0.985e9 * f64::from(1u32 << (self.generation.saturating_sub(3)));
        Bandwidth(per_lane * f64::from(self.lanes))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interconnect {
    pub kind: String,
    /// Bandwidth per device and per direction (datasheets often quote both directions added).
    #[serde(rename = "per_direction_bytes_per_s")]
    pub per_direction: Bandwidth,
    pub links: Option<u32>,
    /// Per direction, what the vendor's collective library gets over it (`collective BW`:
    /// NCCL's or RCCL's per-link figure × links, `src/graph/topo.h`); `None`: line rate.
    #[serde(rename = "collective_per_direction_bytes_per_s")]
    pub collective: Option<Bandwidth>,
    /// Share of that an in-switch (NVLS) reduction reaches (`nvls F`: NCCL's
    /// `nvlsEfficiency` by compute capability, `src/graph/tuning.cc`); `None`: 1.
    #[serde(rename = "nvls_fraction")]
    pub nvls: Option<f64>,
}

impl Interconnect {
    /// Collective bandwidth over line rate (1 without a `collective` figure).
    pub fn collective_share(&self) -> f64 {
        match self.collective {
            Some(c) if self.per_direction.0 > 0.0 => (c.0 / self.per_direction.0).min(1.0),
            _ => 1.0,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Accelerator {
    pub name: String,
    pub vendor: String,
    pub model: Option<String>,
    pub ray_resource: String,
    /// Ray's `accelerator_type` label (defaults to the name).
    pub accelerator_type: String,
    #[serde(rename = "memory_bytes")]
    pub memory: Bytes,
    #[serde(rename = "memory_bw_bytes_per_s")]
    pub memory_bw: Bandwidth,
    /// Dense peak per dtype.
    #[serde(rename = "flop_per_s")]
    pub flops: BTreeMap<String, FlopRate>,
    pub interconnect: Option<Interconnect>,
    pub pcie: Option<PcieLink>,
    #[serde(rename = "tdp_w")]
    pub tdp: Option<Power>,
    #[serde(rename = "price_usd_per_h")]
    pub price: Option<Price>,
    pub tier: Tier,
    pub source: Option<String>,
    pub sources: Sources,
    /// Calibration profile (`calibration/NAME.toml`) whose figures the compute model uses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Where the profile was named (a `profile` statement or a top-level `calibration`).
    #[serde(skip)]
    pub profile_span: Span,
    #[serde(skip)]
    pub span: Span,
    #[serde(skip)]
    given: BTreeSet<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Nic {
    pub name: String,
    pub vendor: Option<String>,
    pub model: Option<String>,
    #[serde(rename = "speed_bytes_per_s")]
    pub speed: Bandwidth,
    pub protocol: String,
    pub rdma: bool,
    pub gpudirect: bool,
    #[serde(rename = "latency_s", serialize_with = "crate::units::opt_secs")]
    pub latency: Option<crate::units::Duration>,
    #[serde(rename = "price_usd_per_h")]
    pub price: Option<Price>,
    #[serde(rename = "tdp_w")]
    pub tdp: Option<Power>,
    pub source: Option<String>,
    pub sources: Sources,
    #[serde(skip)]
    pub span: Span,
    #[serde(skip)]
    given: BTreeSet<&'static str>,
}

/// Most cores a node's `cpu` statement may declare.
pub const MAX_CORES: u64 = 1 << 20;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Cpu {
    pub sockets: u32,
    pub cores: u32,
    pub numa: u32,
    pub threads: u32,
    pub model: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PcieSwitch {
    pub name: String,
    pub numa: u32,
    /// Index of the parent switch, if this one hangs under another.
    pub parent: Option<usize>,
    pub uplink: Option<PcieLink>,
}

/// Where a device or NIC sits: its NUMA domain and, if any, its PCIe switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Locality {
    pub numa: u32,
    pub switch: Option<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceGroup {
    pub accelerator: String,
    pub count: u32,
    pub link: String,
    /// One entry per device.
    pub at: Vec<Locality>,
}

#[derive(Debug, Clone, Serialize)]
pub struct NicGroup {
    pub nic: String,
    pub count: u32,
    pub role: String,
    pub at: Vec<Locality>,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeType {
    pub name: String,
    pub cpu: Cpu,
    #[serde(rename = "memory_bytes")]
    pub memory: Bytes,
    #[serde(rename = "pcie_generation")]
    pub pcie: Option<u8>,
    pub switches: Vec<PcieSwitch>,
    pub devices: Vec<DeviceGroup>,
    pub nics: Vec<NicGroup>,
    pub labels: BTreeMap<String, String>,
    pub resources: BTreeMap<String, f64>,
    /// `scale_up rack [max N]`: the `link switch` devices of this type's nodes in one rack
    /// share one NVSwitch domain (an NVL72-class rack: its NVLink Switch trays join every
    /// compute tray), holding at most `N` devices (`None`: no bound).
    pub rack_domain: Option<RackDomain>,
    #[serde(rename = "price_usd_per_h")]
    pub price: Option<Price>,
    #[serde(rename = "power_w")]
    pub power: Option<Power>,
    pub source: Option<String>,
    pub sources: Sources,
    #[serde(skip)]
    pub span: Span,
    #[serde(skip)]
    given: BTreeSet<&'static str>,
    /// Index of `switches` by name, so a node of 100,000 switches resolves in linear time.
    #[serde(skip)]
    switch_ids: std::collections::HashMap<String, usize>,
}

/// A scale-up domain spanning a rack (see [`NodeType::rack_domain`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RackDomain {
    pub max_devices: Option<u32>,
}

impl NodeType {
    /// Whether the NICs of `group` join the cluster's fabric: the compute ones, or every NIC
    /// of a node type that names none `compute`. The graph, the explicit fabric's ports and
    /// the injection bandwidth all follow this one rule.
    pub fn on_fabric(&self, group: &NicGroup) -> bool {
        group.role == "compute" || !self.nics.iter().any(|n| n.role == "compute")
    }

    pub fn device_count(&self) -> u32 {
        self.devices.iter().map(|g| g.count).sum()
    }

    /// The index of the switch named `name`.
    pub fn switch_named(&self, name: &str) -> Option<usize> {
        self.switch_ids.get(name).copied()
    }

    fn push_switch(&mut self, sw: PcieSwitch) {
        self.switch_ids.insert(sw.name.clone(), self.switches.len());
        self.switches.push(sw);
    }
}

/// A source given on the figure's own line (`memory 80 GB source "..."`).
fn figure_source(cx: &mut Cx, a: &mut Args, sources: &mut Sources, key: &str) {
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

fn required(
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
                        if super::workload::BUILTIN_RESOURCES.contains(&k.name.as_str()) {
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
