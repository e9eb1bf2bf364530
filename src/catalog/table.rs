//! Plain-text tables of the catalog for `orrery catalog`.

use crate::spec::Spec;
use crate::units::sig3;

/// Left-aligned columns, two spaces apart.
fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (k, c) in r.iter().enumerate() {
            w[k] = w[k].max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| -> String {
        let s: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(k, c)| format!("{c:<width$}", width = w[k]))
            .collect();
        s.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(head.iter().map(|h| h.to_string()).collect());
    out += &line(w.iter().map(|n| "-".repeat(*n)).collect());
    for r in rows {
        out += &line(r.clone());
    }
    out
}

fn opt<T: std::fmt::Display>(x: Option<T>) -> String {
    x.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

pub fn render(s: &Spec) -> String {
    let accs: Vec<Vec<String>> = s
        .accelerators
        .values()
        .map(|a| {
            vec![
                a.name.clone(),
                a.vendor.clone(),
                a.ray_resource.clone(),
                a.memory.to_string(),
                a.memory_bw.to_string(),
                opt(a.flops.get("bf16")),
                opt(a.flops.get("fp8")),
                a.interconnect
                    .as_ref()
                    .map(|i| format!("{} {}/dir", i.kind, i.per_direction))
                    .unwrap_or_else(|| "-".into()),
                opt(a.tdp),
                opt(a.price),
                format!("{:?}", a.tier).to_lowercase(),
            ]
        })
        .collect();
    let nics: Vec<Vec<String>> = s
        .nics
        .values()
        .map(|n| {
            vec![
                n.name.clone(),
                n.protocol.clone(),
                format!("{} Gbps", sig3(n.speed.0 * 8.0 / 1e9)),
                if n.rdma { "yes".into() } else { "no".into() },
                if n.gpudirect {
                    "yes".into()
                } else {
                    "no".into()
                },
                opt(n.latency),
            ]
        })
        .collect();
    let nodes: Vec<Vec<String>> = s
        .node_types
        .values()
        .map(|n| {
            let devs: Vec<String> = n
                .devices
                .iter()
                .map(|d| format!("{} × {} ({})", d.count, d.accelerator, d.link))
                .collect();
            let nics: Vec<String> = n
                .nics
                .iter()
                .map(|g| format!("{} × {} {}", g.count, g.nic, g.role))
                .collect();
            vec![
                n.name.clone(),
                format!("{}s/{}c/{}numa", n.cpu.sockets, n.cpu.cores, n.cpu.numa),
                n.memory.to_string(),
                n.switches.len().to_string(),
                devs.join(", "),
                nics.join(", "),
            ]
        })
        .collect();
    let mut out = String::from("Accelerators (dense peak; scale-up bandwidth per direction)\n\n");
    out += &table(
        &[
            "name", "vendor", "ray", "memory", "mem bw", "bf16", "fp8", "scale-up", "tdp", "price",
            "tier",
        ],
        &accs,
    );
    out += "\nNICs\n\n";
    out += &table(
        &["name", "protocol", "speed", "rdma", "gpudirect", "latency"],
        &nics,
    );
    out += "\nNode types\n\n";
    out += &table(
        &["name", "cpu", "memory", "pcie sw", "devices", "nics"],
        &nodes,
    );
    out += "\n`orrery catalog --source` prints every figure with its source.\n";
    out
}
