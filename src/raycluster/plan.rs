//! Each [`Group`] as a node type of the catalog's parts, and what of it could not be mapped.
//!
//! A known instance type gives the whole machine (a catalog node where the catalog has that
//! machine, else its published shape built from catalog accelerators and NICs). Without one
//! (or with one the table lacks, or a KubeRay pod taking part of its machine's accelerators) the
//! node is built from the resources the YAML gives: vCPUs, memory, and accelerators whose type a
//! resource, label or selector names. Ray's own view (`CPU` 0 on a head, a `GPU` count that is
//! not the machine's) cannot be declared apart from the hardware, so a difference is a warning.

use super::mapping::{self, INSTANCES};
use super::yaml::{Error, error};
use super::{Group, Source};
use crate::spec::cluster::MAX_NODES;
use std::collections::BTreeMap;

const GIB: f64 = 1073741824.0;

/// A catalog accelerator, how many, and their scale-up link.
pub type Device = (&'static str, u64, &'static str);

#[derive(Debug, Clone)]
pub enum Body {
    /// `node NAME from BASE`: a catalog node type.
    From(&'static str),
    Full {
        vcpus: u64,
        sockets: u32,
        memory: String,
        device: Option<Device>,
        nic: Option<(&'static str, u32)>,
        source: Option<&'static str>,
    },
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub group: Group,
    /// The node type's (and rack's) name in the scenario.
    pub ident: String,
    /// `None`: nothing to build the node from (a warning says why).
    pub body: Option<Body>,
    /// What the node is, for its comment (`p5.48xlarge`, `pod: 8 vCPUs, 32 GiB`).
    pub what: String,
    pub warnings: Vec<String>,
    pub labels: BTreeMap<String, String>,
    pub resources: BTreeMap<String, f64>,
    /// A multi-host TPU group: its torus (`4x4`), each replica one slice.
    pub slice: Option<String>,
}

/// The catalog's node types: threads and devices of a `from` base.
struct Catalog {
    nodes: BTreeMap<String, (u32, u64)>,
}

impl Catalog {
    fn load() -> Catalog {
        let l = crate::spec::load_str("<catalog>", "");
        let nodes = l
            .spec
            .map(|s| {
                s.node_types
                    .iter()
                    .map(|(k, n)| {
                        (
                            k.clone(),
                            (
                                n.cpu.threads,
                                n.devices.iter().map(|d| u64::from(d.count)).sum(),
                            ),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        Catalog { nodes }
    }
}

pub fn plan(src: &Source) -> Result<Vec<Plan>, Error> {
    let cat = Catalog::load();
    let mut total = 0u64;
    // Names taken so far: a set, since up to MAX_GROUPS names may collide once sanitized.
    let mut used: rustc_hash::FxHashSet<String> = Default::default();
    let mut plans = Vec::new();
    for g in &src.groups {
        let ident = ident(&g.name, &cat, &used);
        used.insert(ident.clone());
        let p = one(g, ident, &cat);
        total = total.saturating_add(p.group.count);
        if total > MAX_NODES {
            return Err(error(
                g.count_at,
                format!(
                    "`{}`: {} nodes bring the cluster past the limit of {MAX_NODES} nodes",
                    g.name, p.group.count
                ),
            ));
        }
        plans.push(p);
    }
    Ok(plans)
}

fn one(g: &Group, ident: String, cat: &Catalog) -> Plan {
    let mut p = Plan {
        group: g.clone(),
        ident,
        body: None,
        what: String::new(),
        warnings: Vec::new(),
        labels: g.labels.clone(),
        resources: g.custom.clone(),
        slice: None,
    };
    p.labels
        .entry("ray.io/node-group".into())
        .or_insert_with(|| g.name.clone());
    let accel = accelerator(g, &mut p.warnings);
    let declared = g.accel_count.map(|(c, _)| c);
    // A KubeRay pod taking part of a known machine: the machine's accelerators.
    let mut machine: Option<Device> = None;
    if let Some((name, _)) = &g.instance {
        if let Some(i) = INSTANCES.iter().find(|i| i.name == name) {
            let (threads, devices) = match i.base {
                Some(b) => cat
                    .nodes
                    .get(b)
                    .map_or((0, 0), |(t, d)| (u64::from(*t), *d)),
                None => (u64::from(i.vcpus), i.device.map_or(0, |d| u64::from(d.1))),
            };
            let dev = i.device.map(|(a, n, l)| (a, u64::from(n), l));
            let partial =
                g.is_pod && declared.is_some_and(|c| devices > 0 && c.ceil() as u64 != devices);
            if partial {
                p.warnings.push(format!(
                    "the pod takes {} of {name}'s {devices} accelerators: it is modelled as a node of its own, without the machine's network",
                    fmt_num(declared.unwrap_or(0.0))
                ));
                machine = dev;
            } else {
                p.body = Some(match i.base {
                    Some(b) => Body::From(b),
                    None => Body::Full {
                        vcpus: u64::from(i.vcpus),
                        sockets: i.sockets,
                        memory: i.memory.to_string(),
                        device: dev,
                        nic: i.nic,
                        source: Some(i.source),
                    },
                });
                p.what = name.clone();
                if let Some(m) = i.missing {
                    p.warnings.push(format!(
                        "{name}'s {m} are not in the catalog: the node has no accelerators"
                    ));
                }
                if let Some(n) = i.network_note {
                    p.warnings.push(format!(
                        "{name}'s network ({n}) has no catalog NIC: the node has none"
                    ));
                }
                check_ray_view(g, threads, devices, i.missing.is_none(), &mut p.warnings);
            }
        } else if let Some((v, mem)) = mapping::cpu_machine(name) {
            p.body = Some(Body::Full {
                vcpus: u64::from(v),
                sockets: 1,
                memory: mem,
                device: None,
                nic: None,
                source: None,
            });
            p.what = format!("{name} (no accelerators)");
            check_ray_view(g, u64::from(v), 0, true, &mut p.warnings);
        } else {
            p.warnings.push(format!("instance type `{name}` is not in the import's table: the node is built from its resources"));
        }
    }
    if p.body.is_none() {
        from_resources(g, &mut p, accel, machine);
    }
    // A node without a NIC has no link to the fabric: say so once, whatever the reason.
    let no_nic = matches!(&p.body, Some(Body::Full { nic: None, .. }));
    if no_nic
        && !p
            .warnings
            .iter()
            .any(|w| w.contains("NIC") || w.contains("network"))
    {
        p.warnings.push(format!(
            "no catalog NIC for {}: the node has no NIC, so no link to the fabric",
            p.what
        ));
    }
    // A multi-host TPU group forms one slice per replica.
    if let Some((topo, _)) = &g.topology {
        let per = match &p.body {
            Some(Body::From(b)) => cat.nodes.get(*b).map_or(0, |x| x.1),
            Some(Body::Full {
                device: Some((_, n, "torus")),
                ..
            }) => *n,
            _ => 0,
        };
        let chips: Option<u64> = topo
            .split('x')
            .map(|d| d.parse::<u64>().ok().filter(|d| *d > 0))
            .try_fold(1u64, |a, d| a.checked_mul(d?));
        match chips {
            _ if per == 0 => {}
            Some(c) if c > per && c % per == 0 && (g.hosts == 1 || g.hosts == c / per) => {
                p.slice = Some(topo.clone());
                p.group.hosts = c / per;
                p.group.count = p.group.replicas.saturating_mul(c / per);
            }
            Some(c) if c <= per && g.hosts == 1 => {}
            _ => p.warnings.push(format!(
                "TPU topology {topo} does not fill {} hosts of {per} chips: imported as separate hosts, not slices",
                g.hosts
            )),
        }
    }
    p
}

/// The catalog accelerator the group's names agree on, warning about the rest.
fn accelerator(g: &Group, w: &mut Vec<String>) -> Option<&'static str> {
    let mut found: Option<&'static str> = None;
    for (n, _) in &g.accel_names {
        let m = if n == mapping::AMBIGUOUS_A100 {
            w.push("accelerator type A100 may be the 40 GB or the 80 GB part; the catalog has only A100_80GB, which is used".into());
            Ok("A100_80GB")
        } else {
            match mapping::accelerator(n) {
                Some(m) => m,
                None => {
                    w.push(format!(
                        "accelerator type `{n}` is not one the import knows"
                    ));
                    continue;
                }
            }
        };
        match m {
            Ok(a) => match found {
                Some(f) if f != a => w.push(format!(
                    "accelerator names disagree ({f} and {a}): {f} is used"
                )),
                _ => found = Some(a),
            },
            Err(words) => w.push(format!(
                "accelerator type `{n}` ({words}) is not in the catalog"
            )),
        }
    }
    found
}

/// Ray's `CPU` and accelerator count against the machine's.
fn check_ray_view(
    g: &Group,
    threads: u64,
    devices: u64,
    devices_mapped: bool,
    w: &mut Vec<String>,
) {
    if let Some((c, _)) = g.ray_cpus
        && c != threads as f64
    {
        w.push(format!(
            "Ray is told CPU {}, but the machine has {threads} vCPUs: the node offers {threads} (the language derives CPU from the hardware)",
            fmt_num(c)
        ));
    }
    if let Some((c, _)) = g.accel_count
        && devices_mapped
        && c != devices as f64
    {
        w.push(format!(
            "Ray is told of {} accelerators, but the machine has {devices}: the node has {devices}",
            fmt_num(c)
        ));
    }
}

/// A node from the YAML's own figures; `machine`: the accelerators of the machine a KubeRay
/// pod runs on, where known.
fn from_resources(g: &Group, p: &mut Plan, accel: Option<&'static str>, machine: Option<Device>) {
    let Some(cpus) = g.cpus.or(g.ray_cpus.map(|c| c.0)).filter(|c| *c > 0.0) else {
        p.warnings.push("no known instance type and no CPU count: nothing to build the node from, so it is left out".into());
        return;
    };
    let vcpus = (cpus.ceil() as u64).max(1);
    if let (Some(_), Some((rc, _))) = (g.cpus, g.ray_cpus)
        && rc != vcpus as f64
    {
        p.warnings.push(format!(
            "Ray is told CPU {}, but the pod has {vcpus} vCPUs: the node offers {vcpus} (the language derives CPU from the hardware)",
            fmt_num(rc)
        ));
    }
    let memory = match g.memory {
        Some(m) if m >= 1.0 => bytes(m),
        _ => {
            p.warnings.push(format!(
                "no memory given: {} GiB (4 GiB per vCPU) assumed",
                4 * vcpus
            ));
            format!("{} GiB", 4 * vcpus)
        }
    };
    let accel = accel.or(machine.map(|d| d.0));
    let mut device = None;
    match (g.accel_count, accel) {
        (Some((c, _)), Some(a)) => {
            let n = c.ceil() as u64;
            if c.fract() != 0.0 {
                p.warnings.push(format!(
                    "{} accelerators (a fraction) rounded up to {n}",
                    fmt_num(c)
                ));
            }
            let link = match machine {
                Some((_, _, l)) if n > 1 => l,
                _ => mapping::default_link(a, n),
            };
            device = Some((a, n.min(4096), link));
        }
        (Some((c, _)), None) => {
            if g.accel_names.is_empty() {
                p.warnings.push(format!(
                    "{} accelerators of unknown type (no accelerator_type resource, ray.io/accelerator-type label, accelerator selector or known instance type): the node has none",
                    fmt_num(c)
                ));
            } else {
                p.warnings.push(format!(
                    "its {} accelerators are not mapped: the node has none",
                    fmt_num(c)
                ));
            }
        }
        (None, Some(a)) => p.warnings.push(format!(
            "{a} named but no count of them given: the node has none"
        )),
        (None, None) => {}
    }
    if device.is_some() && machine.is_none() {
        p.warnings
            .push("no known instance type, so no network: the node has no NIC".into());
    }
    p.what = match g.is_pod {
        true => format!("pod: {vcpus} vCPUs, {memory}"),
        false => format!("from its resources: {vcpus} vCPUs, {memory}"),
    };
    p.body = Some(Body::Full {
        vcpus,
        sockets: 1,
        memory,
        device,
        nic: None,
        source: None,
    });
}

/// Bytes in the language, in the largest unit that is exact (`40 GB`, `5 GiB`, `123 B`).
pub fn bytes(b: f64) -> String {
    let b = b.ceil() as u64;
    for (u, f) in [
        ("TiB", 1u64 << 40),
        ("GiB", 1 << 30),
        ("TB", 1_000_000_000_000),
        ("GB", 1_000_000_000),
        ("MiB", 1 << 20),
        ("MB", 1_000_000),
    ] {
        if b >= f && b.is_multiple_of(f) {
            return format!("{} {u}", b / f);
        }
    }
    if b as f64 >= GIB {
        // Not whole in any unit: whole MB, rounded up (the language reads a plain `B` too,
        // but a 12-digit figure helps nobody).
        return format!("{} MB", b.div_ceil(1_000_000));
    }
    format!("{b} B")
}

/// A number as the language writes it: no trailing `.0`.
pub fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// `name` with what the scenario language does not read in a name replaced by `_` (letters,
/// digits, `_`; not a digit first), at most 200 characters.
pub(super) fn identifier(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(200)
        .collect();
    if !s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        s.insert(0, '_');
    }
    s
}

/// A name the scenario language reads (letters, digits, `_`), not a catalog name nor one
/// already used.
fn ident(name: &str, cat: &Catalog, used: &rustc_hash::FxHashSet<String>) -> String {
    let s = identifier(name);
    let reserved = [
        "node", "rack", "zone", "slice", "head", "cluster", "fabric", "storage",
    ];
    let base = if cat.nodes.contains_key(&s) || reserved.contains(&s.as_str()) {
        format!("{s}_type")
    } else {
        s
    };
    let mut out = base.clone();
    let mut k = 2;
    while used.contains(&out) {
        out = format!("{base}_{k}");
        k += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn byte_figures() {
        assert_eq!(super::bytes(5.0 * 1073741824.0), "5 GiB");
        assert_eq!(super::bytes(40e9), "40 GB");
        assert_eq!(super::bytes(1000.0), "1000 B");
        assert_eq!(super::bytes(1.5e9 + 1.0), "1501 MB");
    }
}
