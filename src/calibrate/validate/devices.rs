//! Device checks of `orrery validate`: count (per vendor), model, memory, NUMA node, PCIe
//! link, PCIe switch placement (with the NICs), the link between devices and peer access.

use super::{Check, count, gib, gpu_is, per_item};
use crate::calibrate::detect::{GpuInventory, Host};
use crate::calibrate::sysfs::PciFn;
use crate::scenario::Spec;
use crate::scenario::hardware::{Locality, NodeType};

/// A device as the node type declares it.
pub(super) struct Declared<'a> {
    pub accelerator: &'a str,
    pub at: Option<Locality>,
    /// The scale-up link of its group (`switch`, `mesh`, ..., `none`) and group index.
    pub link: &'a str,
    pub group: usize,
}

/// A device as detected: from the driver's inventory when there is one, else from PCI.
pub(super) struct Detected<'a> {
    pub name: String,
    pub memory: Option<u64>,
    pub pci: Option<&'a PciFn>,
}

pub(super) fn declared(nt: &NodeType) -> Vec<Declared<'_>> {
    nt.devices
        .iter()
        .enumerate()
        .flat_map(|(gi, g)| {
            (0..g.count as usize).map(move |k| Declared {
                accelerator: g.accelerator.as_str(),
                at: g.at.get(k).copied(),
                link: g.link.as_str(),
                group: gi,
            })
        })
        .collect()
}

/// The model part of a PCI name: `GH100 [H200 SXM 141GB]` → `H200 SXM 141GB`; else the
/// whole name; else `PCI 10de:2335`.
pub fn pci_model(f: &PciFn) -> String {
    match &f.name {
        Some(n) => match (n.rfind('['), n.rfind(']')) {
            (Some(a), Some(b)) if a < b => n[a + 1..b].to_string(),
            _ => n.clone(),
        },
        None => format!("PCI {:04x}:{:04x}", f.vendor, f.device),
    }
}

/// PCI vendor of a catalog vendor name, where its devices are identified by PCI class
/// (Google TPUs are counted from /dev instead; others are not identified).
pub fn pci_vendor(vendor: &str) -> Option<u16> {
    match vendor.to_ascii_lowercase().as_str() {
        "nvidia" => Some(0x10de),
        "amd" => Some(0x1002),
        "intel" => Some(0x1da3), // Habana Labs (Gaudi)
        _ => None,
    }
}

/// Detected devices in PCI bus order.
pub(super) fn detected<'a>(host: &'a Host, gpus: Option<&GpuInventory>) -> Vec<Detected<'a>> {
    let pci = |bus: &str| {
        let b = bus.to_ascii_lowercase();
        host.accelerators.iter().find(|f| f.bus == b)
    };
    match gpus {
        Some(inv) => {
            let mut v: Vec<Detected> = inv
                .gpus
                .iter()
                .map(|g| Detected {
                    name: g.name.clone(),
                    memory: Some(g.memory_bytes),
                    pci: g.pci_bus_id.as_deref().and_then(pci),
                })
                .collect();
            v.sort_by(|a, b| {
                let k = |d: &Detected| d.pci.map(|p| p.bus.clone());
                k(a).cmp(&k(b))
            });
            v
        }
        None => host
            .accelerators
            .iter()
            .map(|f| Detected {
                name: pci_model(f),
                memory: None,
                pci: Some(f),
            })
            .collect(),
    }
}

/// Detected devices in PCI bus order: name (driver's, else the PCI database's model), memory
/// (driver only) and PCI function.
pub fn devices_in_bus_order<'a>(
    host: &'a Host,
    gpus: Option<&GpuInventory>,
) -> Vec<(String, Option<u64>, Option<&'a PciFn>)> {
    detected(host, gpus)
        .into_iter()
        .map(|d| (d.name, d.memory, d.pci))
        .collect()
}

pub(super) fn checks(
    spec: &Spec,
    nt: &NodeType,
    host: &Host,
    gpus: Option<&GpuInventory>,
) -> Vec<Check> {
    let mut out = Vec::new();
    let want = declared(nt);
    let have = detected(host, gpus);
    // Count, per vendor.
    let mut vendors: Vec<&str> = nt
        .devices
        .iter()
        .filter_map(|g| spec.accelerators.get(&g.accelerator))
        .map(|a| a.vendor.as_str())
        .collect();
    vendors.sort_unstable();
    vendors.dedup();
    if vendors.is_empty() {
        vendors.push("");
    }
    for v in vendors {
        let declared: u32 = nt
            .devices
            .iter()
            .filter(|g| {
                spec.accelerators
                    .get(&g.accelerator)
                    .is_some_and(|a| a.vendor == v)
            })
            .map(|g| g.count)
            .sum();
        let what = if v.is_empty() {
            "accelerators".to_string()
        } else {
            format!("{v} devices")
        };
        let detected = if v.eq_ignore_ascii_case("google") {
            Some(host.tpu_chips)
        } else if v.is_empty() {
            Some(have.len() as u32)
        } else {
            pci_vendor(v).map(|id| {
                if gpus.is_some() && id == 0x10de {
                    have.len() as u32
                } else {
                    host.accelerators.iter().filter(|f| f.vendor == id).count() as u32
                }
            })
        };
        out.push(count(&what, declared, detected));
    }
    let pairs: Vec<(usize, &Declared, &Detected)> = want
        .iter()
        .zip(&have)
        .enumerate()
        .map(|(i, (w, h))| (i, w, h))
        .collect();
    out.extend(per_item(
        "device model",
        pairs
            .iter()
            .map(|(i, w, h)| {
                (
                    format!("device {i}"),
                    w.accelerator.to_string(),
                    Some(h.name.clone()),
                    gpu_is(w.accelerator, &h.name),
                )
            })
            .collect(),
    ));
    if gpus.is_some() {
        out.extend(per_item(
            "device memory (within 10%)",
            pairs
                .iter()
                .filter_map(|(i, w, h)| {
                    let a = spec.accelerators.get(w.accelerator)?;
                    let (d, got) = (a.memory.0 as f64, h.memory? as f64);
                    Some((
                        format!("device {i}"),
                        gib(a.memory.0),
                        Some(gib(got as u64)),
                        (got - d).abs() <= 0.1 * d,
                    ))
                })
                .collect(),
        ));
    }
    out.extend(per_item(
        "device NUMA node",
        pairs
            .iter()
            .filter_map(|(i, w, h)| {
                let numa = w.at?.numa;
                let got = h.pci.and_then(|p| p.numa);
                Some((
                    format!("device {i}"),
                    format!("numa {numa}"),
                    got.map(|n| format!("numa {n}")),
                    got == Some(numa),
                ))
            })
            .collect(),
    ));
    out.extend(per_item(
        "device PCIe link (the lower of card and slot maxima)",
        pairs
            .iter()
            .filter_map(|(i, w, h)| {
                let l = spec.accelerators.get(w.accelerator)?.pcie?;
                let got = h.pci.and_then(|p| p.link);
                Some((
                    format!("device {i}"),
                    format!("gen{} x{}", l.generation, l.lanes),
                    got.map(|(g, x)| format!("gen{g} x{x}")),
                    got == Some((l.generation, l.lanes)),
                ))
            })
            .collect(),
    ));
    if let Some(inv) = gpus {
        out.extend(links(spec, &want, &have, inv));
    }
    out
}

/// The scale-up link and peer access between every pair of devices (driver inventory only).
fn links(spec: &Spec, want: &[Declared], have: &[Detected], inv: &GpuInventory) -> Vec<Check> {
    let mut out = Vec::new();
    if inv.gpus.len() < 2 {
        return out;
    }
    // Inventory index of each detected device (they are sorted by bus id).
    let index = |d: &Detected| {
        inv.gpus.iter().position(|g| {
            g.pci_bus_id
                .as_deref()
                .map(str::to_ascii_lowercase)
                .as_deref()
                == d.pci.map(|p| p.bus.as_str())
        })
    };
    let idx: Vec<Option<usize>> = have.iter().map(index).collect();
    let mut kinds = Vec::new();
    let mut peers = Vec::new();
    for a in 0..want.len().min(have.len()) {
        for b in a + 1..want.len().min(have.len()) {
            let (Some(ia), Some(ib)) = (idx[a], idx[b]) else {
                continue;
            };
            let (wa, wb) = (&want[a], &want[b]);
            let scale_up = wa.group == wb.group && wa.link != "none";
            let kind = spec
                .accelerators
                .get(wa.accelerator)
                .and_then(|x| x.interconnect.as_ref())
                .map(|i| i.kind.as_str());
            let pair = format!("devices {a}–{b}");
            let got = inv
                .links
                .get(ia)
                .and_then(|r| r.get(ib))
                .filter(|s| !s.is_empty())
                .cloned();
            if kind == Some("nvlink") {
                let expect = if scale_up { "nvlink" } else { "pcie" };
                let ok = got
                    .as_deref()
                    .is_some_and(|g| g == expect || (!scale_up && g == "none"));
                kinds.push((pair.clone(), expect.to_string(), got, ok));
            }
            let both = inv.p2p[ia].get(ib).copied().unwrap_or(false)
                && inv.p2p[ib].get(ia).copied().unwrap_or(false);
            peers.push((
                pair,
                if scale_up {
                    "peer access (scale-up link)".to_string()
                } else {
                    "not required (no scale-up link)".to_string()
                },
                Some(
                    if both {
                        "peer access"
                    } else {
                        "no peer access"
                    }
                    .to_string(),
                ),
                both || !scale_up,
            ));
        }
    }
    out.extend(per_item("link between devices (driver)", kinds));
    out.extend(per_item("P2P between devices", peers));
    out
}

/// Where each item (devices, then NICs) sits relative to the PCIe switches, declared against
/// detected: two items share a switch in the declaration exactly when they do here.
pub(super) fn switch_groups(
    nt: &NodeType,
    items: &[(String, Option<Locality>, Option<&PciFn>)],
) -> Vec<Check> {
    let declared_sw = |i: usize| items[i].1.and_then(|l| l.switch);
    let detected_sw = |i: usize| items[i].2.map(|p| p.switch.clone());
    let visible: Vec<usize> = (0..items.len()).filter(|&i| items[i].2.is_some()).collect();
    let peers = |i: usize, same: &dyn Fn(usize) -> bool| -> Vec<usize> {
        visible
            .iter()
            .copied()
            .filter(|&j| j != i && same(j))
            .collect()
    };
    let names = |v: &[usize]| -> String {
        if v.is_empty() {
            "alone".into()
        } else {
            format!(
                "with {}",
                v.iter()
                    .map(|&j| items[j].0.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    };
    let rows = (0..items.len())
        .filter(|&i| items[i].1.is_some())
        .map(|i| {
            let d = declared_sw(i);
            let dp = match d {
                Some(s) => peers(i, &|j| declared_sw(j) == Some(s)),
                None => Vec::new(),
            };
            let where_d = match d {
                Some(s) => format!(
                    "under {} {}",
                    nt.switches.get(s).map_or("?", |w| w.name.as_str()),
                    names(&dp)
                ),
                None => "on a root port, no switch".to_string(),
            };
            let detected = detected_sw(i).map(|h| {
                let hp = match &h {
                    Some(s) => peers(i, &|j| detected_sw(j).flatten().as_deref() == Some(s)),
                    None => Vec::new(),
                };
                let text = match &h {
                    Some(s) => format!("under switch {s} {}", names(&hp)),
                    None => "on a root port, no switch".to_string(),
                };
                (text, hp == dp && h.is_some() == d.is_some())
            });
            let ok = detected.as_ref().is_some_and(|(_, ok)| *ok);
            (items[i].0.clone(), where_d, detected.map(|(t, _)| t), ok)
        })
        .collect();
    per_item("PCIe switch placement", rows)
}
