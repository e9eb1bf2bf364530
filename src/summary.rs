//! What `orrery check` prints: the size of a scenario's cluster and a few closed-form figures
//! (aggregate peak compute, memory, fabric and torus bisection bandwidth, storage bandwidth).
//!
//! Bisection bandwidth (per direction) is the capacity of the weakest balanced cut:
//! - `single_switch`: a non-blocking switch; half the nodes' injection bandwidth.
//! - `leaf_spine`, `fat_tree`, `rail_optimized`: one leaf per rack, each leaf with uplink
//!   capacity = its nodes' injection / oversubscription (or `spine_uplink` when given). With
//!   oversubscription ≥ 1 the weakest cut is rack-aligned, so the figure is the smaller side's
//!   uplink capacity of a balanced split of racks (total / (2 · oversubscription) for equal
//!   racks); a single rack falls back to the leaf's non-blocking half. With two zones or more,
//!   the smaller of that and the zone-aligned cut: a balanced split of the zones' uplinks to
//!   the core (`zone_uplink`, else each zone's leaf uplinks).
//! - A TPU-style slice's torus: the cut across its longest dimension D crosses
//!   chips/D links, twice when D > 2 (wrap-around links) (Dally & Towles, "Principles and
//!   Practices of Interconnection Networks", §3.3); each link carries the device's
//!   per-direction bandwidth divided by its link count (2 per dimension when not given).
//!
//! - `explicit`: the maximum flow from the first half of the racks to the second over the
//!   declared switches and links (`network::bisection`).
//!
//! These are analytical figures for the summary; the flow-level network model reports what
//! traffic actually gets.

use crate::scenario::Spec;
use crate::scenario::cluster::Cluster;
use crate::units::{Bandwidth, Bytes, FlopRate, Power, Price, sig3};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Version of `orrery check --json` (`{"schema_version", "scenarios": [{file, hash,
/// summary}]}`; 2: versioned, quantity keys with their units; 1 was an unversioned list).
pub const SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, Serialize)]
pub struct SliceSummary {
    pub name: String,
    pub dims: Vec<u64>,
    pub chips: u64,
    pub hosts: u32,
    #[serde(rename = "ici_bisection_bytes_per_s")]
    pub ici_bisection: Option<Bandwidth>,
}

/// A rack-scale NVSwitch domain (`scale_up rack`) as `check` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct DomainSummary {
    pub rack: String,
    pub node_type: String,
    pub nodes: u64,
    pub devices: u64,
    pub accelerator: String,
}

/// A storage target as `check` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct StorageSummary {
    pub name: String,
    /// `fabric` or `node_local`.
    pub attach: String,
    /// Aggregate per direction: the system's for `fabric`, per node × nodes for `node_local`.
    #[serde(rename = "bandwidth_bytes_per_s")]
    pub bandwidth: Bandwidth,
    /// The per-node figure of a `node_local` storage.
    #[serde(rename = "per_node_bytes_per_s")]
    pub per_node: Option<Bandwidth>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub cluster: Option<String>,
    pub nodes: u64,
    pub nodes_by_type: BTreeMap<String, u64>,
    pub racks: usize,
    pub zones: usize,
    pub devices_by_type: BTreeMap<String, u64>,
    #[serde(rename = "device_memory_bytes")]
    pub device_memory: Bytes,
    #[serde(rename = "device_memory_bw_bytes_per_s")]
    pub device_memory_bw: Bandwidth,
    #[serde(rename = "host_memory_bytes")]
    pub host_memory: Bytes,
    pub cpu_cores: u64,
    pub cpu_threads: u64,
    /// Aggregate dense peak per dtype.
    #[serde(rename = "peak_flop_per_s")]
    pub peak: BTreeMap<String, FlopRate>,
    pub fabric: Option<String>,
    #[serde(rename = "injection_bytes_per_s")]
    pub injection: Bandwidth,
    #[serde(rename = "bisection_bytes_per_s")]
    pub bisection: Option<Bandwidth>,
    pub slices: Vec<SliceSummary>,
    /// Rack-scale NVLink domains, one per rack that has one.
    pub scale_up_domains: Vec<DomainSummary>,
    pub storage: Vec<StorageSummary>,
    /// Sum of node prices (node `price`, else its devices' prices); `None` if any is unknown.
    #[serde(rename = "price_usd_per_h")]
    pub price: Option<Price>,
    /// Sum of node power (node `power`, else devices' TDP); `None` if any is unknown.
    #[serde(rename = "power_w")]
    pub power: Option<Power>,
    pub tenants: usize,
    pub workloads: usize,
    pub failure_blocks: usize,
    pub experiments: usize,
    pub overridden: Vec<String>,
    /// Which calibration profile prices what: `H200: h200_datasheet (datasheet)`,
    /// `host: cpu_epyc_2vcpu (measured)`.
    pub calibration: Vec<String>,
    /// The maturity tier of each accelerator the cluster has, with its evidence
    /// (`crate::maturity`).
    pub tiers: Vec<crate::maturity::Maturity>,
}

/// Split `caps` into two halves of ⌊n/2⌋ and ⌈n/2⌉ items, greedily balancing capacity
/// (largest first, each to the lighter half with room), and return the smaller half's total.
/// Exact for equal capacities, which is what clusters are made of.
pub fn balanced_half(mut caps: Vec<f64>) -> f64 {
    caps.sort_by(|a, b| b.total_cmp(a));
    let room_a = caps.len() / 2;
    let room_b = caps.len() - room_a;
    let (mut a, mut b, mut na, mut nb) = (0.0, 0.0, 0, 0);
    for c in caps {
        if na < room_a && (a <= b || nb == room_b) {
            a += c;
            na += 1;
        } else {
            b += c;
            nb += 1;
        }
    }
    f64::min(a, b)
}

/// Fabric bisection bandwidth per direction (see the module docs), `None` without a fabric.
pub fn fabric_bisection(spec: &Spec, c: &Cluster) -> Option<Bandwidth> {
    let f = c.fabric.as_ref()?;
    if let Some(t) = &f.topology {
        return Some(Bandwidth(explicit_bisection(spec, c, t)));
    }
    let inj = |t: &str| {
        spec.node_types
            .get(t)
            .map(|nt| spec.node_injection(nt).0)
            .unwrap_or(0.0)
    };
    let node_caps = || -> Vec<f64> {
        c.groups
            .iter()
            .flat_map(|g| std::iter::repeat_n(inj(&g.node_type), g.count as usize))
            .collect()
    };
    if f.kind == "single_switch" || c.racks.len() <= 1 {
        return Some(Bandwidth(balanced_half(node_caps())));
    }
    let mut rack_inj = vec![0.0; c.racks.len()];
    for g in &c.groups {
        rack_inj[g.rack] += inj(&g.node_type) * f64::from(g.count);
    }
    let uplinks: Vec<f64> = rack_inj
        .iter()
        .filter(|i| **i > 0.0)
        .map(|i| match f.spine_uplink {
            Some(u) => u.0.min(*i),
            None => i / f.oversubscription,
        })
        .collect();
    if uplinks.len() <= 1 {
        return Some(Bandwidth(balanced_half(node_caps())));
    }
    let racks = balanced_half(uplinks);
    // With zones, a cut along zone boundaries crosses only the zones' uplinks to the core.
    let mut zone_up: BTreeMap<usize, f64> = BTreeMap::new();
    for (r, i) in rack_inj.iter().enumerate().filter(|(_, i)| **i > 0.0) {
        let up = match f.spine_uplink {
            Some(u) => u.0.min(*i),
            None => i / f.oversubscription,
        };
        *zone_up
            .entry(c.racks[r].zone.map_or(0, |z| z + 1))
            .or_default() += up;
    }
    if zone_up.len() > 1 {
        let zones: Vec<f64> = zone_up
            .values()
            .map(|u| f.zone_uplink.map_or(*u, |z| z.0))
            .collect();
        return Some(Bandwidth(racks.min(balanced_half(zones))));
    }
    Some(Bandwidth(racks))
}

/// An explicit fabric's bisection (`network::bisection`): each rack's injection on each of
/// its attach switches, node k's compute NIC j on switch `j mod m`, as the graph links them.
fn explicit_bisection(spec: &Spec, c: &Cluster, t: &crate::scenario::topology::Topology) -> f64 {
    let mut inj: Vec<Vec<f64>> = t
        .attach
        .iter()
        .map(|a| vec![0.0; a.as_ref().map_or(0, |a| a.switches.len())])
        .collect();
    for g in &c.groups {
        let Some(nt) = spec.node_types.get(&g.node_type) else {
            continue;
        };
        let speeds = nt.nics.iter().filter(|n| nt.on_fabric(n)).flat_map(|n| {
            let s = spec.nics.get(&n.nic).map_or(0.0, |x| x.speed.0);
            std::iter::repeat_n(s, n.count as usize)
        });
        let Some(row) = inj.get_mut(g.rack).filter(|r| !r.is_empty()) else {
            continue;
        };
        let m = row.len();
        for (k, s) in speeds.enumerate() {
            row[k % m] += s * f64::from(g.count);
        }
    }
    crate::network::bisection::explicit_bisection(t, &inj)
}

/// Bisection of a slice's ICI torus per direction (see the module docs).
pub fn torus_bisection(
    dims: &[u64],
    chips: u64,
    per_direction: Bandwidth,
    links: Option<u32>,
) -> Bandwidth {
    let d = dims.iter().copied().max().unwrap_or(1);
    if d <= 1 {
        return Bandwidth(0.0);
    }
    let crossing = (chips / d) * if d > 2 { 2 } else { 1 };
    let links = links.map(f64::from).unwrap_or(2.0 * dims.len() as f64);
    Bandwidth(crossing as f64 * per_direction.0 / links)
}

pub fn summarize(spec: &Spec) -> Summary {
    let mut s = Summary {
        cluster: None,
        nodes: 0,
        nodes_by_type: BTreeMap::new(),
        racks: 0,
        zones: 0,
        devices_by_type: BTreeMap::new(),
        device_memory: Bytes(0),
        device_memory_bw: Bandwidth(0.0),
        host_memory: Bytes(0),
        cpu_cores: 0,
        cpu_threads: 0,
        peak: BTreeMap::new(),
        fabric: None,
        injection: Bandwidth(0.0),
        bisection: None,
        slices: Vec::new(),
        scale_up_domains: Vec::new(),
        storage: Vec::new(),
        price: Some(Price(0.0)),
        power: Some(Power(0.0)),
        tenants: spec.tenants.len(),
        workloads: spec.workloads.len(),
        failure_blocks: spec.failures.len(),
        experiments: spec.experiments.len(),
        tiers: Vec::new(),
        overridden: spec.overridden.clone(),
        calibration: {
            let kind = |name: &str| {
                spec.profiles
                    .get(name)
                    .map(|p| {
                        format!(
                            "{name} ({})",
                            format!("{:?}", p.provenance.source).to_lowercase()
                        )
                    })
                    .unwrap_or_else(|| name.to_string())
            };
            let mut c: Vec<String> = spec
                .accelerators
                .values()
                .filter_map(|a| Some(format!("{}: {}", a.name, kind(a.profile.as_ref()?))))
                .collect();
            c.extend(
                spec.host_profile
                    .as_deref()
                    .map(|h| format!("host: {}", kind(h))),
            );
            c
        },
    };
    s.tiers = crate::maturity::of_spec(spec);
    let Some(c) = &spec.cluster else {
        s.price = None;
        s.power = None;
        return s;
    };
    s.cluster = Some(c.name.clone());
    s.zones = c.zones.len();
    s.racks = c.racks.iter().filter(|r| r.slice.is_none()).count();
    for g in &c.groups {
        let n = u64::from(g.count);
        let Some(nt) = spec.node_types.get(&g.node_type) else {
            continue;
        };
        s.nodes += n;
        *s.nodes_by_type.entry(g.node_type.clone()).or_insert(0) += n;
        s.host_memory.0 = s
            .host_memory
            .0
            .saturating_add(nt.memory.0.saturating_mul(n));
        s.cpu_cores += u64::from(nt.cpu.cores) * n;
        s.cpu_threads += u64::from(nt.cpu.threads) * n;
        s.injection.0 += spec.node_injection(nt).0 * n as f64;
        s.price = s
            .price
            .and_then(|p| spec.node_price(nt).map(|x| Price(p.0 + x * n as f64)));
        s.power = s
            .power
            .and_then(|p| spec.node_power(nt).map(|x| Power(p.0 + x * n as f64)));
        if nt.rack_domain.is_some() {
            let rack = &c.racks[g.rack].name;
            match s.scale_up_domains.iter_mut().find(|d| &d.rack == rack) {
                Some(d) => {
                    d.nodes += n;
                    d.devices += u64::from(nt.device_count()) * n;
                }
                None => s.scale_up_domains.push(DomainSummary {
                    rack: rack.clone(),
                    node_type: g.node_type.clone(),
                    nodes: n,
                    devices: u64::from(nt.device_count()) * n,
                    accelerator: nt
                        .devices
                        .first()
                        .map(|d| d.accelerator.clone())
                        .unwrap_or_default(),
                }),
            }
        }
        for d in &nt.devices {
            let k = u64::from(d.count) * n;
            *s.devices_by_type.entry(d.accelerator.clone()).or_insert(0) += k;
            if let Some(a) = spec.accelerators.get(&d.accelerator) {
                s.device_memory.0 = s
                    .device_memory
                    .0
                    .saturating_add(a.memory.0.saturating_mul(k));
                s.device_memory_bw.0 += a.memory_bw.0 * k as f64;
                for (dt, r) in &a.flops {
                    s.peak.entry(dt.clone()).or_insert(FlopRate(0.0)).0 += r.0 * k as f64;
                }
            }
        }
    }
    if let Some(f) = &c.fabric {
        s.fabric = Some(if let Some(t) = &f.topology {
            // What its switches speak (`topology::Wire`), one word per kind present.
            let wires: std::collections::BTreeSet<&str> =
                t.wire.iter().flatten().map(|w| w.name()).collect();
            let wires: Vec<&str> = wires.into_iter().collect();
            format!(
                "{} ({} switches, {} links{}{})",
                f.kind,
                t.switches.len(),
                t.links.len(),
                if wires.is_empty() { "" } else { ", " },
                wires.join(" and ")
            )
        } else if f.oversubscription > 1.0 {
            format!("{} {}:1", f.kind, sig3(f.oversubscription))
        } else {
            f.kind.clone()
        });
        s.bisection = fabric_bisection(spec, c);
    }
    for st in &c.storage {
        use crate::scenario::cluster::Attach;
        let (bandwidth, per_node) = match st.attach {
            Attach::Fabric => (st.bandwidth, None),
            Attach::NodeLocal => (
                Bandwidth(st.bandwidth.0 * s.nodes as f64),
                Some(st.bandwidth),
            ),
        };
        s.storage.push(StorageSummary {
            name: st.name.clone(),
            attach: st.attach.name().to_string(),
            bandwidth,
            per_node,
        });
    }
    for (ri, r) in c.racks.iter().enumerate() {
        let Some(shape) = &r.slice else { continue };
        let ici = c
            .groups
            .iter()
            .find(|g| g.rack == ri)
            .and_then(|g| spec.node_types.get(&g.node_type))
            .and_then(|nt| nt.devices.first())
            .and_then(|d| spec.accelerators.get(&d.accelerator))
            .and_then(|a| a.interconnect.as_ref())
            .map(|ic| torus_bisection(&shape.dims, shape.chips, ic.per_direction, ic.links));
        s.slices.push(SliceSummary {
            name: r.name.clone(),
            dims: shape.dims.clone(),
            chips: shape.chips,
            hosts: shape.hosts,
            ici_bisection: ici,
        });
    }
    s
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut o = String::new();
        match &self.cluster {
            None => {
                let _ = writeln!(o, "no cluster declared");
            }
            Some(name) => {
                let by_type: Vec<String> = self
                    .nodes_by_type
                    .iter()
                    .map(|(t, n)| format!("{n} × {t}"))
                    .collect();
                let _ = writeln!(o, "cluster      {name}");
                let _ = writeln!(
                    o,
                    "nodes        {} ({}) in {}, {}, {}",
                    self.nodes,
                    by_type.join(", "),
                    plural(self.racks, "rack"),
                    plural(self.slices.len(), "slice"),
                    plural(self.zones, "zone")
                );
                let devs: Vec<String> = self
                    .devices_by_type
                    .iter()
                    .map(|(t, n)| format!("{n} × {t}"))
                    .collect();
                let _ = writeln!(
                    o,
                    "devices      {}",
                    if devs.is_empty() {
                        "none".into()
                    } else {
                        devs.join(", ")
                    }
                );
                let _ = writeln!(
                    o,
                    "memory       {} on devices ({} aggregate bandwidth), {} host",
                    self.device_memory, self.device_memory_bw, self.host_memory
                );
                let _ = writeln!(
                    o,
                    "cpu          {} cores, {} threads",
                    self.cpu_cores, self.cpu_threads
                );
                let peak: Vec<String> = crate::scenario::schema::DTYPES
                    .iter()
                    .filter_map(|d| self.peak.get(*d).map(|r| format!("{d} {r}")))
                    .collect();
                let _ = writeln!(
                    o,
                    "peak (dense) {}",
                    if peak.is_empty() {
                        "n/a".into()
                    } else {
                        peak.join(", ")
                    }
                );
                match (&self.fabric, self.bisection) {
                    (Some(k), Some(b)) => {
                        let _ = writeln!(
                            o,
                            "fabric       {k}: injection {} total, bisection {} per direction",
                            self.injection, b
                        );
                    }
                    _ => {
                        let _ = writeln!(
                            o,
                            "fabric       none declared (injection {} total)",
                            self.injection
                        );
                    }
                }
                // Rack-scale NVLink domains, alike ones on one line.
                let mut shown: Vec<(String, Vec<&str>)> = Vec::new();
                for d in &self.scale_up_domains {
                    let what = format!(
                        "{} × {} on {} {}",
                        d.devices, d.accelerator, d.nodes, d.node_type
                    );
                    match shown.iter_mut().find(|(w, _)| *w == what) {
                        Some((_, racks)) => racks.push(&d.rack),
                        None => shown.push((what, vec![&d.rack])),
                    }
                }
                for (what, racks) in &shown {
                    let _ = writeln!(
                        o,
                        "scale-up     {} ({}): {what}{}",
                        plural(racks.len(), "rack-scale NVLink domain"),
                        racks.join(", "),
                        if racks.len() > 1 { " each" } else { "" }
                    );
                }
                for sl in &self.slices {
                    let dims: Vec<String> = sl.dims.iter().map(u64::to_string).collect();
                    let bis = sl
                        .ici_bisection
                        .map(|b| format!(", ICI bisection {b} per direction"))
                        .unwrap_or_default();
                    let _ = writeln!(
                        o,
                        "slice        {}: {} chips ({}) on {} hosts{bis}",
                        sl.name,
                        sl.chips,
                        dims.join("x"),
                        sl.hosts
                    );
                }
                for st in &self.storage {
                    let per_node = st
                        .per_node
                        .map(|b| format!(" ({b} per node × {} nodes)", self.nodes))
                        .unwrap_or_default();
                    let _ = writeln!(
                        o,
                        "storage      {}: {}, {} per direction{per_node}",
                        st.name, st.attach, st.bandwidth
                    );
                }
                let _ = writeln!(
                    o,
                    "price        {}",
                    self.price
                        .map(|p| p.to_string())
                        .unwrap_or_else(|| "unknown (a node or device has no price)".into())
                );
                let _ = writeln!(
                    o,
                    "power        {}",
                    self.power
                        .map(|p| p.to_string())
                        .unwrap_or_else(|| "unknown (a node or device has no power figure)".into())
                );
            }
        }
        let _ = writeln!(
            o,
            "declared     {}, {}, {}, {}",
            plural(self.tenants, "tenant"),
            plural(self.workloads, "workload"),
            plural(self.failure_blocks, "failure block"),
            plural(self.experiments, "experiment")
        );
        if !self.calibration.is_empty() {
            let _ = writeln!(o, "calibration  {}", self.calibration.join(", "));
        }
        for m in &self.tiers {
            let _ = writeln!(o, "tier         {}", m.line());
        }
        if !self.overridden.is_empty() {
            let _ = writeln!(
                o,
                "overrides    catalog entries: {}",
                self.overridden.join(", ")
            );
        }
        f.write_str(&o)
    }
}
