//! NIC checks of `orrery validate`: how many, link speed, RDMA ports up and their link layer,
//! NUMA node, and (with the devices) PCIe switch placement.

use super::devices::{self, switch_groups};
use super::{Check, check, per_item};
use crate::calibrate::detect::Host;
use crate::calibrate::sysfs::Adapter;
use crate::scenario::Spec;
use crate::scenario::hardware::{Locality, NodeType};

/// Speeds agree within this share: link rates are exact (400 Gb/s NDR reads `400 Gb/sec`).
const SPEED_TOLERANCE: f64 = 0.03;

/// What a declared NIC meets: adapters of its class, in bus order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NicClass {
    /// RDMA with an InfiniBand link layer.
    InfiniBand,
    /// RDMA over anything else (RoCE's Ethernet, EFA).
    OtherRdma,
    /// No RDMA device.
    Plain,
}

impl NicClass {
    fn what(self) -> &'static str {
        match self {
            NicClass::InfiniBand => "InfiniBand adapters (at least)",
            NicClass::OtherRdma => "RDMA Ethernet/EFA adapters (at least)",
            NicClass::Plain => "other network adapters (at least)",
        }
    }
}

pub fn adapter_class(a: &Adapter) -> NicClass {
    match &a.rdma {
        None => NicClass::Plain,
        Some(_) if a.ports.iter().any(|p| p.link_layer == "InfiniBand") => NicClass::InfiniBand,
        Some(_) => NicClass::OtherRdma,
    }
}

struct Declared<'a> {
    nic: &'a str,
    rdma: bool,
    /// bits/s
    speed: f64,
    protocol: &'a str,
    at: Option<Locality>,
}

fn gbps(bps: f64) -> String {
    format!("{} Gb/s", (bps / 1e8).round() / 10.0)
}

pub(super) fn checks(spec: &Spec, nt: &NodeType, host: &Host) -> Vec<Check> {
    let want: Vec<Declared> = nt
        .nics
        .iter()
        .flat_map(|g| {
            let n = spec.nics.get(&g.nic);
            (0..g.count as usize).map(move |k| Declared {
                nic: g.nic.as_str(),
                rdma: n.is_some_and(|n| n.rdma),
                speed: n.map_or(0.0, |n| n.speed.0 * 8.0),
                protocol: n.map_or("", |n| n.protocol.as_str()),
                at: g.at.get(k).copied(),
            })
        })
        .collect();
    let class = |w: &Declared| match (w.rdma, w.protocol) {
        (false, _) => NicClass::Plain,
        (true, "infiniband") => NicClass::InfiniBand,
        (true, _) => NicClass::OtherRdma,
    };
    let mut out = Vec::new();
    let listing = |v: &[&Adapter]| {
        v.iter()
            .map(|a| match a.speed_bps() {
                Some(s) => format!("{} {}", a.label(), gbps(s)),
                None => a.label(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let classes = [NicClass::InfiniBand, NicClass::OtherRdma, NicClass::Plain];
    let of_class: Vec<Vec<&Adapter>> = classes
        .iter()
        .map(|c| {
            host.adapters
                .iter()
                .filter(|a| adapter_class(a) == *c)
                .collect()
        })
        .collect();
    for (ci, c) in classes.iter().enumerate() {
        let declared = want.iter().filter(|w| class(w) == *c).count();
        let found = &of_class[ci];
        if declared == 0 && found.is_empty() {
            continue;
        }
        out.push(check(
            c.what(),
            declared.to_string(),
            Some(if found.is_empty() {
                "0".to_string()
            } else {
                format!("{} ({})", found.len(), listing(found))
            }),
            found.len() >= declared,
        ));
    }
    // Declared NIC k of its class meets the k-th detected adapter of that class.
    let mut next = [0usize; 3];
    let paired: Vec<(usize, &Declared, Option<&Adapter>)> = want
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let ci = classes.iter().position(|c| *c == class(w)).unwrap_or(2);
            next[ci] += 1;
            (i, w, of_class[ci].get(next[ci] - 1).copied())
        })
        .collect();
    let present: Vec<_> = paired
        .iter()
        .filter_map(|(i, w, a)| Some((*i, *w, (*a)?)))
        .collect();
    out.extend(per_item(
        "NIC link speed",
        present
            .iter()
            .map(|(i, w, a)| {
                let got = a.speed_bps();
                (
                    format!("nic {i} ({} as {})", a.label(), w.nic),
                    gbps(w.speed),
                    got.map(gbps),
                    got.is_some_and(|g| (g - w.speed).abs() <= SPEED_TOLERANCE * w.speed),
                )
            })
            .collect(),
    ));
    let rd: Vec<_> = present.iter().filter(|(_, w, _)| w.rdma).collect();
    out.extend(per_item(
        "RDMA port active",
        rd.iter()
            .map(|(i, _, a)| {
                let states: Vec<String> = a
                    .ports
                    .iter()
                    .map(|p| format!("port {} {}", p.port, p.state))
                    .collect();
                (
                    format!("nic {i} ({})", a.label()),
                    "an ACTIVE port".to_string(),
                    (!a.ports.is_empty()).then(|| states.join(", ")),
                    a.ports.iter().any(|p| p.state == "ACTIVE"),
                )
            })
            .collect(),
    ));
    out.extend(per_item(
        "RDMA link layer",
        rd.iter()
            .filter_map(|(i, w, a)| {
                let expect = match w.protocol {
                    "infiniband" => "InfiniBand",
                    "roce" => "Ethernet",
                    _ => return None, // EFA and plain Ethernet have no RDMA port of their own kind
                };
                let got = a
                    .ports
                    .iter()
                    .find(|p| !p.link_layer.is_empty())
                    .map(|p| p.link_layer.clone());
                Some((
                    format!("nic {i} ({})", a.label()),
                    format!("{expect} ({})", w.protocol),
                    got.clone(),
                    got.as_deref() == Some(expect),
                ))
            })
            .collect(),
    ));
    out.extend(per_item(
        "NIC NUMA node",
        present
            .iter()
            .filter_map(|(i, w, a)| {
                let numa = w.at?.numa;
                let got = a.pci.as_ref().and_then(|p| p.numa);
                Some((
                    format!("nic {i} ({})", a.label()),
                    format!("numa {numa}"),
                    got.map(|n| format!("numa {n}")),
                    got == Some(numa),
                ))
            })
            .collect(),
    ));
    // PCIe switch placement of devices and NICs together.
    let dev_want = devices::declared(nt);
    let dev_have = devices::detected(host, None);
    let mut items: Vec<(
        String,
        Option<Locality>,
        Option<&crate::calibrate::sysfs::PciFn>,
    )> = dev_want
        .iter()
        .enumerate()
        .map(|(i, w)| {
            (
                format!("device {i}"),
                w.at,
                dev_have.get(i).and_then(|h| h.pci),
            )
        })
        .collect();
    items.extend(
        paired
            .iter()
            .map(|(i, w, a)| (format!("nic {i}"), w.at, a.and_then(|a| a.pci.as_ref()))),
    );
    if nt.switches.is_empty() && items.iter().all(|i| i.1.is_none_or(|l| l.switch.is_none())) {
        // No switch declared: nothing to place (a node may leave PCIe switches out).
        return out;
    }
    out.extend(switch_groups(nt, &items));
    out
}
