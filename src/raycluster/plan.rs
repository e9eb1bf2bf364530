//! Each [`Group`] as a node type of the catalog's parts, and what of it could not be mapped.
//!
//! A known instance type gives the whole machine (a catalog node where the catalog has that
//! machine, else its published shape built from catalog accelerators and NICs). Without one
//! (or with one the table lacks, or a KubeRay pod taking part of its machine's accelerators) the
//! node is built from the resources the YAML gives: vCPUs, memory, and accelerators whose type a
//! resource, label or selector names. Ray's own view (`CPU` 0 on a head, a `GPU` count that is
//! not the machine's) cannot be declared apart from the hardware, so a difference is a warning.

use super::instances::{self, Net, Part};
use super::mapping;
use super::yaml::{Error, Pos, error};
use super::{Group, Source};
use crate::scenario::cluster::MAX_NODES;
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
        /// NIC (a catalog one, or one [`nic_for`] declares in the scenario) and count.
        nic: Option<(String, u32)>,
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
    /// What was not mapped, each where the YAML says it.
    pub warnings: Vec<(Pos, String)>,
    pub labels: BTreeMap<String, String>,
    pub resources: BTreeMap<String, f64>,
    /// A multi-host TPU group: its torus (`4x4`), each replica one slice.
    pub slice: Option<String>,
    /// Ethernet NICs the scenario must declare (Mbit/s), for [`nic_for`]'s names.
    pub declare: Vec<u32>,
}

/// A plain Ethernet NIC of `mbps`: the catalog's where it has that speed, else one the scenario
/// declares (`cloud_eth_10g`, `cloud_eth_12500m`); whether it must be declared.
pub fn nic_for(mbps: u32) -> (String, bool) {
    match mbps {
        25_000 => ("eth_25g".into(), false),
        100_000 => ("eth_100g".into(), false),
        m if m % 1000 == 0 => (format!("cloud_eth_{}g", m / 1000), true),
        m => (format!("cloud_eth_{m}m"), true),
    }
}

/// The catalog's node types: threads and devices of a `from` base.
struct Catalog {
    nodes: BTreeMap<String, (u32, u64)>,
}

impl Catalog {
    fn load() -> Catalog {
        let l = crate::load_str("<catalog>", "");
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
        declare: Vec::new(),
    };
    p.labels
        .entry("ray.io/node-group".into())
        .or_insert_with(|| g.name.clone());
    let named = accelerator(g, &mut p.warnings);
    let declared = g.accel_count.map(|(c, _)| c);
    // A KubeRay pod taking part of a known machine: the machine's accelerators.
    let mut machine: Option<(Part, u64, &'static str)> = None;
    if let Some((name, at)) = &g.instance {
        let at = *at;
        if let Some(i) = instances::find(name) {
            let (threads, devices) = match i.base {
                Some(b) => cat
                    .nodes
                    .get(b)
                    .map_or((0, 0), |(t, d)| (u64::from(*t), *d)),
                None => (u64::from(i.vcpus), i.accel.map_or(0, |d| u64::from(d.1))),
            };
            let acc = i.accel.map(|(a, n, l)| (a, u64::from(n), l));
            let partial =
                g.is_pod && declared.is_some_and(|c| devices > 0 && c.ceil() as u64 != devices);
            if partial {
                p.warnings.push((at, format!(
                    "the pod takes {} of {name}'s {devices} accelerators: it is modelled as a node of its own, without the machine's network",
                    fmt_num(declared.unwrap_or(0.0))
                )));
                machine = acc;
            } else {
                p.what = name.clone();
                p.body = Some(match i.base {
                    Some(b) => Body::From(b),
                    None => {
                        let mut device = None;
                        if let Some((part, n, link)) = acc {
                            device = attach(&mut p, part, n as f64, link, at, name);
                        }
                        Body::Full {
                            vcpus: u64::from(i.vcpus),
                            sockets: if i.vcpus >= 48 { 2 } else { 1 },
                            memory: i.memory.to_string(),
                            device,
                            nic: network(&mut p, i.net, at, name),
                            source: Some(i.source),
                        }
                    }
                });
                check_ray_view(g, threads, devices, &mut p.warnings);
            }
        } else if let Some((v, mem)) = mapping::cpu_machine(name) {
            p.what = format!("{name} (no accelerators)");
            let nic = network(&mut p, mapping::cpu_network(name, v), at, name);
            // Accelerators the YAML attaches to a general-purpose machine (GCP N1's
            // `guestAccelerators`, a Ray `GPU` resource).
            let mut device = None;
            if let Some((c, cat_at)) = g.accel_count {
                p.what = format!("{name} with accelerators");
                device = declared_accelerators(g, &mut p, named, c, cat_at, None);
            }
            p.body = Some(Body::Full {
                vcpus: u64::from(v),
                sockets: 1,
                memory: mem,
                device,
                nic,
                source: None,
            });
            check_ray_view(
                g,
                u64::from(v),
                g.accel_count.map_or(0, |c| c.0.ceil() as u64),
                &mut p.warnings,
            );
        } else {
            p.warnings.push((at, format!("instance type `{name}` is not in the import's table: the node is built from its resources")));
        }
    }
    if p.body.is_none() {
        from_resources(g, &mut p, named, machine);
    }
    // A multi-host TPU group forms one slice per replica.
    if let Some((topo, at)) = &g.topology {
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
            _ => p.warnings.push((*at, format!(
                "TPU topology {topo} does not fill {} hosts of {per} chips: imported as separate hosts, not slices",
                g.hosts
            ))),
        }
    }
    p
}

/// A machine's accelerators on its node: a catalog part as the node's devices; a part the
/// catalog lacks as the custom resource that carries its count (`GPU:T4`) with Ray's
/// `accelerator_type:T4`, and a warning at `at`.
fn attach(
    p: &mut Plan,
    part: Part,
    n: f64,
    link: &'static str,
    at: Pos,
    whose: &str,
) -> Option<Device> {
    let count = n.ceil().clamp(1.0, 4096.0) as u64;
    match part {
        Part::Catalog(a) => Some((a, count, link)),
        Part::Missing { ray, words } => {
            let key = mapping::missing_resource(ray);
            p.warnings.push((
                at,
                format!(
                    "{whose}'s {count} x {words} are not in the catalog: kept as the custom resource `{key}` {count}, with no device model"
                ),
            ));
            p.resources.insert(key, count as f64);
            p.resources.insert(format!("accelerator_type:{ray}"), 1.0);
            p.labels
                .entry("ray.io/accelerator-type".into())
                .or_insert_with(|| ray.to_string());
            None
        }
    }
}

/// Accelerators the YAML declares (a count, and a type where one is named), as [`attach`]
/// places them; of no known type, a custom resource `GPU:unspecified` (`TPU:...`) keeps the
/// count.
fn declared_accelerators(
    g: &Group,
    p: &mut Plan,
    named: Option<(Part, Pos)>,
    c: f64,
    at: Pos,
    machine: Option<(Part, u64, &'static str)>,
) -> Option<Device> {
    let n = c.ceil() as u64;
    if c.fract() != 0.0 {
        p.warnings.push((
            at,
            format!("{} accelerators (a fraction) rounded up to {n}", fmt_num(c)),
        ));
    }
    let part = named.map(|x| x.0).or(machine.map(|m| m.0));
    match part {
        Some(part) => {
            let link = match (part, machine) {
                (_, Some((_, _, l))) if n > 1 => l,
                (Part::Catalog(a), _) => mapping::default_link(a, n),
                _ => "none",
            };
            let whose = if g.is_pod { "the pod" } else { "the node" };
            attach(p, part, n as f64, link, named.map_or(at, |x| x.1), whose)
        }
        None => {
            let kind = if g.accel_kind.is_empty() {
                "GPU"
            } else {
                g.accel_kind
            };
            let key = format!("{kind}:unspecified");
            p.warnings.push((at, format!(
                "{n} {kind} of unknown type (no accelerator_type resource, ray.io/accelerator-type label, accelerator selector or known instance type): kept as the custom resource `{key}` {n}, with no device model"
            )));
            p.resources.insert(key, n as f64);
            None
        }
    }
}

/// The NIC of a machine's published network; a warning at `at` where there is none.
fn network(p: &mut Plan, net: Net, at: Pos, name: &str) -> Option<(String, u32)> {
    match net {
        Net::Nics(nic, n) => Some((nic.to_string(), n)),
        Net::Mbps(m) | Net::EthNics(_, m) => {
            let n = if let Net::EthNics(n, _) = net { n } else { 1 };
            let (nic, declared) = nic_for(m);
            if declared && !p.declare.contains(&m) {
                p.declare.push(m);
            }
            Some((nic, n))
        }
        Net::Unpublished(why) => {
            p.warnings.push((
                at,
                format!("{name}: {why}, so the node has no NIC and no link to the fabric"),
            ));
            None
        }
    }
}

/// The catalog accelerator the group's names agree on (and where it is named), warning about
/// the rest.
fn accelerator(g: &Group, w: &mut Vec<(Pos, String)>) -> Option<(Part, Pos)> {
    let mut found: Option<(Part, Pos)> = None;
    for (n, at) in &g.accel_names {
        let m = if n == mapping::AMBIGUOUS_A100 {
            w.push((*at, "accelerator type A100 may be the 40 GB or the 80 GB part; the catalog has only A100_80GB, which is used".into()));
            Part::Catalog("A100_80GB")
        } else {
            match mapping::accelerator(n) {
                Some(m) => m,
                None => {
                    w.push((
                        *at,
                        format!("accelerator type `{n}` is not one the import knows"),
                    ));
                    continue;
                }
            }
        };
        match found {
            Some((f, _)) if f != m => w.push((
                *at,
                format!(
                    "accelerator names disagree ({} and {}): {} is used",
                    f.name(),
                    m.name(),
                    f.name()
                ),
            )),
            Some(_) => {}
            None => found = Some((m, *at)),
        }
    }
    found
}

/// Ray's `CPU` and accelerator count against the machine's.
fn check_ray_view(g: &Group, threads: u64, devices: u64, w: &mut Vec<(Pos, String)>) {
    if let Some((c, at)) = g.ray_cpus
        && c != threads as f64
    {
        w.push((at, format!(
            "Ray is told CPU {}, but the machine has {threads} vCPUs: the node offers {threads} (the language derives CPU from the hardware)",
            fmt_num(c)
        )));
    }
    if let Some((c, at)) = g.accel_count
        && c != devices as f64
    {
        w.push((
            at,
            format!(
                "Ray is told of {} accelerators, but the machine has {devices}: the node has {devices}",
                fmt_num(c)
            ),
        ));
    }
}

/// A node from the YAML's own figures; `machine`: the accelerators of the machine a KubeRay
/// pod runs on, where known.
fn from_resources(
    g: &Group,
    p: &mut Plan,
    named: Option<(Part, Pos)>,
    machine: Option<(Part, u64, &'static str)>,
) {
    let Some(cpus) = g.cpus.or(g.ray_cpus.map(|c| c.0)).filter(|c| *c > 0.0) else {
        p.warnings.push((g.at, "no known instance type and no CPU count: nothing to build the node from, so it is left out".into()));
        return;
    };
    let vcpus = (cpus.ceil() as u64).max(1);
    if vcpus > crate::scenario::hardware::MAX_CORES {
        p.warnings.push((
            g.at,
            format!(
                "{vcpus} vCPUs is more than a node can declare ({} cores at most): the node is left out",
                crate::scenario::hardware::MAX_CORES
            ),
        ));
        return;
    }
    if let (Some(_), Some((rc, at))) = (g.cpus, g.ray_cpus)
        && rc != vcpus as f64
    {
        p.warnings.push((at, format!(
            "Ray is told CPU {}, but the pod has {vcpus} vCPUs: the node offers {vcpus} (the language derives CPU from the hardware)",
            fmt_num(rc)
        )));
    }
    let memory = match g.memory {
        Some(m) if m >= 1.0 => bytes(m),
        _ => {
            p.warnings.push((
                g.at,
                format!(
                    "no memory given: {} GiB (4 GiB per vCPU) assumed",
                    4 * vcpus
                ),
            ));
            format!("{} GiB", 4 * vcpus)
        }
    };
    let mut device = None;
    match (g.accel_count, named) {
        (Some((c, at)), _) => {
            device = declared_accelerators(g, p, named, c, at, machine);
        }
        (None, Some((part, at))) => p.warnings.push((
            at,
            format!(
                "{} named but no count of them given: the node has none",
                part.name()
            ),
        )),
        (None, None) => {}
    }
    let at = g.instance.as_ref().map_or(g.at, |i| i.1);
    let why = if g.is_pod {
        "a pod without a known instance type (node.kubernetes.io/instance-type) has no published network figure"
    } else {
        "no known instance type, so no published network figure"
    };
    // A pod taking part of a known machine was said to be without its network already.
    if machine.is_none() {
        p.warnings.push((
            at,
            format!("{why}: the node has no NIC and no link to the fabric"),
        ));
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
