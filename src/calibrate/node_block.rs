//! `orrery detect [--name N]`: a node-type block for the machine it runs on, in the scenario
//! language, so a user starts from what is there. Every line is something `validate` checks,
//! and a block printed here validates against the machine that printed it. What cannot be
//! seen or named is left out with a comment saying so, never guessed.
//!
//! - Accelerators are named from the catalog by the driver's or the PCI database's name
//!   ([`catalog_accelerator`]); one not in the catalog is a comment.
//! - NICs are named from the catalog by protocol (RDMA link layer), RDMA and speed; one
//!   without a catalog match is a comment.
//! - PCIe switches are declared when a device or NIC sits behind one; NUMA nodes from /sys.
//! - `link`: `switch` when NVSwitch functions are visible (PCI class 0x0680 from NVIDIA),
//!   else `mesh` when the driver reports NVLink between every pair, else `none`.

use super::detect::{GpuInventory, Host};
use super::sysfs::{Adapter, PciFn};
use super::validate::{devices_in_bus_order, gpu_is};
use crate::scenario::Spec;
use std::fmt::Write;

/// The catalog accelerator a device name is: the one whose name's first part is in the
/// device's name and whose other parts (`SXM`) are too; PCIe and SXM forms never cross.
pub fn catalog_accelerator<'a>(spec: &'a Spec, name: &str, memory: Option<u64>) -> Option<&'a str> {
    let words: Vec<String> = name
        .split(|c: char| c.is_whitespace() || c == '-' || c == ',')
        .map(str::to_lowercase)
        .filter(|w| !w.is_empty())
        .collect();
    let pcie = words.iter().any(|w| w == "pcie");
    let mut cands: Vec<(&str, usize, f64)> = spec
        .accelerators
        .values()
        .filter(|a| gpu_is(&a.name, name))
        .filter_map(|a| {
            let parts: Vec<String> = a.name.split('_').skip(1).map(str::to_lowercase).collect();
            let sxm = parts.iter().any(|p| p.starts_with("sxm"));
            if sxm && pcie || parts.iter().any(|p| p == "pcie") && !pcie {
                return None;
            }
            let hits = parts
                .iter()
                .filter(|p| words.iter().any(|w| w.starts_with(p.as_str())))
                .count();
            let mem_gap = memory.map_or(0.0, |m| (a.memory.0 as f64 - m as f64).abs());
            Some((a.name.as_str(), hits, mem_gap))
        })
        .collect();
    cands.sort_by(|x, y| y.1.cmp(&x.1).then(x.2.total_cmp(&y.2)).then(x.0.cmp(y.0)));
    cands.first().map(|c| c.0)
}

/// The catalog NIC an adapter is: same protocol and RDMA, speed within 3%.
pub fn catalog_nic<'a>(spec: &'a Spec, a: &Adapter) -> Option<&'a str> {
    let speed = a.speed_bps()?;
    let layer = a
        .ports
        .iter()
        .find(|p| !p.link_layer.is_empty())
        .map(|p| p.link_layer.as_str());
    let protocol = match (a.rdma.is_some(), layer) {
        (true, Some("InfiniBand")) => "infiniband",
        (true, _) => "roce",
        (false, _) => "ethernet",
    };
    spec.nics
        .values()
        .filter(|n| n.protocol == protocol && n.rdma == a.rdma.is_some())
        .filter(|n| (n.speed.0 * 8.0 - speed).abs() <= 0.03 * speed)
        .map(|n| n.name.as_str())
        .min()
}

fn list<T: std::fmt::Display>(v: &[T]) -> String {
    format!(
        "[{}]",
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Where items sit: `at [sw0, sw1]` when all are behind switches, `at numa [...]` when all
/// have a NUMA node, else nothing.
fn at(items: &[&PciFn], switches: &[(String, Option<u32>)]) -> String {
    let sw: Option<Vec<String>> = items
        .iter()
        .map(|p| {
            let s = p.switch.as_ref()?;
            switches
                .iter()
                .position(|(b, _)| b == s)
                .map(|i| format!("sw{i}"))
        })
        .collect();
    if let Some(sw) = sw
        && !sw.is_empty()
    {
        return format!(" at {}", list(&sw));
    }
    let numa: Option<Vec<u32>> = items.iter().map(|p| p.numa).collect();
    match numa {
        Some(n) if !n.is_empty() => format!(" at numa {}", list(&n)),
        _ => String::new(),
    }
}

/// Consecutive items of the same kind.
fn runs<'a>(items: &[(&'a str, &'a PciFn)]) -> Vec<(&'a str, Vec<&'a PciFn>)> {
    let mut out: Vec<(&str, Vec<&PciFn>)> = Vec::new();
    for (k, p) in items {
        match out.last_mut() {
            Some((last, v)) if last == k => v.push(p),
            _ => out.push((k, vec![p])),
        }
    }
    out
}

/// The block for `host`, named `name`.
pub fn node_block(
    spec: &Spec,
    name: &str,
    host: &Host,
    gpus: Option<&GpuInventory>,
    nvswitches: usize,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Detected on {} ({}) by orrery {} at {}. Figures not visible here are left out;",
        host.hostname,
        host.kernel,
        env!("CARGO_PKG_VERSION"),
        super::detect::now_iso8601()
    );
    let _ = writeln!(
        s,
        "# `orrery validate FILE --node {name}` checks it against this machine."
    );
    let _ = writeln!(s, "node {name} {{");
    let mut notes: Vec<String> = Vec::new();
    match (host.sockets, host.cores) {
        (Some(so), Some(c)) => {
            let mut l = format!("  cpu sockets {so}, cores {c}");
            if let Some(n) = host.numa_nodes {
                let _ = write!(l, ", numa {n}");
            }
            let _ = write!(l, ", threads {}", host.threads);
            if let Some(m) = &host.cpu_model {
                let _ = write!(l, ", model {m:?}");
            }
            let _ = writeln!(s, "{l}");
        }
        _ => notes.push("CPU topology not visible: declare `cpu sockets S, cores C`".into()),
    }
    match host.memory_bytes {
        Some(b) => {
            let _ = writeln!(s, "  memory {} MiB", b >> 20);
        }
        None => notes.push("memory not visible: declare `memory`".into()),
    }
    // Devices, by catalog name, in bus order.
    let devices = devices_in_bus_order(host, gpus);
    let mut named: Vec<(&str, &PciFn)> = Vec::new();
    for (dname, memory, pci) in &devices {
        match (catalog_accelerator(spec, dname, *memory), pci) {
            (Some(a), Some(p)) => named.push((a, p)),
            (Some(a), None) => notes.push(format!(
                "device `{dname}` ({a}) has no PCI function visible: not declared"
            )),
            (None, _) => notes.push(format!(
                "device `{dname}` is not in the catalog: declare an accelerator for it"
            )),
        }
    }
    // NICs with a catalog match.
    let mut nics: Vec<(&str, &PciFn, &Adapter)> = Vec::new();
    for a in &host.adapters {
        match (catalog_nic(spec, a), &a.pci) {
            (Some(n), Some(p)) => nics.push((n, p, a)),
            _ => notes.push(format!(
                "adapter {} ({}) has no catalog NIC of its protocol and speed: not declared",
                a.label(),
                a.speed_bps()
                    .map_or("speed unknown".into(), |b| format!("{} Gb/s", b / 1e9))
            )),
        }
    }
    // Switches in bus order of their upstream ports.
    let mut switches: Vec<(String, Option<u32>)> = Vec::new();
    for p in named
        .iter()
        .map(|(_, p)| *p)
        .chain(nics.iter().map(|(_, p, _)| *p))
    {
        if let Some(sw) = &p.switch
            && !switches.iter().any(|(b, _)| b == sw)
        {
            switches.push((sw.clone(), p.numa));
        }
    }
    switches.sort();
    if let Some(g) = named.iter().filter_map(|(_, p)| p.link.map(|l| l.0)).max() {
        let _ = writeln!(s, "  pcie gen{g}");
    }
    if !switches.is_empty() {
        let names: Vec<String> = (0..switches.len()).map(|i| format!("sw{i}")).collect();
        let numa: Option<Vec<u32>> = switches.iter().map(|(_, n)| *n).collect();
        let _ = write!(s, "  switch {}", list(&names));
        if let Some(n) = numa {
            let _ = write!(s, " numa {}", list(&n));
        }
        let _ = writeln!(
            s,
            "  # upstream ports {}",
            switches
                .iter()
                .map(|(b, _)| b.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut kinds: Vec<&str> = named.iter().map(|(a, _)| *a).collect();
    kinds.sort_unstable();
    kinds.dedup();
    if kinds.len() > 1 {
        notes.push(format!(
            "several accelerator kinds ({}): Ray registers one per node",
            kinds.join(", ")
        ));
    }
    let all_nvlink = gpus.is_some_and(|g| {
        g.links.len() >= 2
            && g.links
                .iter()
                .enumerate()
                .all(|(i, r)| r.iter().enumerate().all(|(j, l)| i == j || l == "nvlink"))
    });
    // One line per run of the same kind in bus order: `validate` meets declared items with
    // detected ones in order, so the order is kept.
    for run in runs(&named) {
        let (k, items) = run;
        let link = if named.len() < 2 {
            ""
        } else if nvswitches > 0 {
            " link switch"
        } else if all_nvlink {
            " link mesh"
        } else {
            " link none"
        };
        let _ = writeln!(
            s,
            "  device {k} x {}{}{link}",
            items.len(),
            at(&items, &switches)
        );
    }
    let nic_items: Vec<(&str, &PciFn)> = nics.iter().map(|(n, p, _)| (*n, *p)).collect();
    for (k, items) in runs(&nic_items) {
        let _ = writeln!(s, "  nic {k} x {}{}", items.len(), at(&items, &switches));
    }
    for n in notes {
        let _ = writeln!(s, "  # {n}");
    }
    let _ = writeln!(s, "}}");
    s
}
