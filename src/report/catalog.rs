//! Plain-text tables of the catalog (`crate::catalog`) for `orrery catalog`.

use crate::scenario::Spec;
use crate::units::sig3;

/// A [`crate::table`] of `rows` under `head`: the columns in `text` left-aligned, the others
/// (figures) right-aligned.
fn table(head: &[&str], text: &[usize], rows: &[Vec<String>]) -> String {
    let mut t = crate::table::Table::new(head.iter().copied()).left(text);
    for r in rows {
        t.row(r.iter().cloned());
    }
    t.render()
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
                crate::units::gib(a.memory.0 as f64),
                a.memory_bw.to_string(),
                opt(a.flops.get("bf16")),
                opt(a.flops.get("fp8")),
                a.interconnect
                    .as_ref()
                    .map(|i| format!("{} {}/dir", i.kind, i.per_direction))
                    .unwrap_or_else(|| "-".into()),
                opt(a.tdp),
                opt(a.price),
                a.tier.as_str().to_string(),
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
        &[1, 2, 7, 10],
        &accs,
    );
    out += "\nNICs\n\n";
    out += &table(
        &["name", "protocol", "speed", "rdma", "gpudirect", "latency"],
        &[1, 3, 4],
        &nics,
    );
    out += "\nNode types\n\n";
    out += &table(
        &["name", "cpu", "memory", "pcie sw", "devices", "nics"],
        &[1, 4, 5],
        &nodes,
    );
    out += "\nModels (a training job names one: `model NAME`)\n\n";
    let models: Vec<Vec<String>> = crate::model::catalog::names()
        .filter_map(crate::model::catalog::find)
        .map(|m| {
            vec![
                m.name.clone(),
                format!("{}B", sig3(m.params() / 1e9)),
                m.layers.to_string(),
                m.hidden.to_string(),
                format!("{}/{}", m.heads, m.kv_heads),
                m.ffn.to_string(),
                m.vocab.to_string(),
                m.seq.to_string(),
                m.moe
                    .map(|e| format!("{} experts, top {}", e.experts, e.top_k))
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    out += &table(
        &[
            "name", "params", "layers", "hidden", "heads/kv", "ffn", "vocab", "seq", "moe",
        ],
        &[8],
        &models,
    );
    out += "\n`orrery catalog --source` prints every figure with its source (models: \
            src/model/catalog.rs, `--json` holds each model's source). A tdp or price of `-` \
            has no citable figure (the entry's comment says why); figures computed from it \
            read `n/a` in compare, drill and sweep.\n";
    out
}
