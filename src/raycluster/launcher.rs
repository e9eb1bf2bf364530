//! The Ray cluster launcher form: `cluster_name`, `provider`, `max_workers`,
//! `available_node_types: {NAME: {node_config, resources, labels, min_workers, max_workers}}`,
//! `head_node_type` (ray-project/ray doc/source/cluster/vms/references/ray-cluster-configuration.rst).

use super::instances::{Part, tpu_slice};
use super::yaml::{Error, Kind, Node, error};
use super::{Group, MAX_GROUPS, Source, Workers};
use crate::scenario::cluster::MAX_NODES;

/// Ray's default `max_workers` when the config gives none (the reference above: default 2).
const DEFAULT_MAX_WORKERS: u64 = 2;

pub fn read(doc: &Node, workers: Workers) -> Result<Source, Error> {
    let mut src = Source {
        form: "Ray cluster launcher",
        ..Source::default()
    };
    if let Some(n) = doc.get("cluster_name") {
        src.name = Some(n.text("cluster_name")?.to_string());
    }
    if let Some(p) = doc.get("provider") {
        p.entries("provider")?;
        if let Some(t) = p.get("type") {
            src.provider = Some(t.text("provider.type")?.to_string());
        }
    }
    let cluster_max = match doc.get("max_workers") {
        Some(n) => Some(n.count("max_workers", MAX_NODES)?),
        None => None,
    };
    let types_node = doc.get("available_node_types").expect("the caller checked");
    let types = types_node.entries("available_node_types")?;
    if types.is_empty() {
        return Err(error(
            types_node.at,
            "`available_node_types` declares no node type",
        ));
    }
    if types.len() > MAX_GROUPS {
        return Err(error(
            types_node.at,
            format!(
                "{} node types; the most one import reads is {MAX_GROUPS}",
                types.len()
            ),
        ));
    }
    let head = match doc.get("head_node_type") {
        Some(h) => {
            let name = h.text("head_node_type")?;
            if !types.iter().any(|(k, _, _)| k == name) {
                return Err(error(
                    h.at,
                    format!("head_node_type `{name}` is not one of `available_node_types`"),
                ));
            }
            Some(name.to_string())
        }
        None => None,
    };
    for (name, at, t) in types {
        let what = format!("node type `{name}`");
        t.entries(&what)?;
        let mut g = Group {
            name: name.clone(),
            at: *at,
            head: head.as_deref() == Some(name.as_str()),
            hosts: 1,
            ..Group::default()
        };
        let min = match t.get("min_workers") {
            Some(n) => Some((n.count(&format!("{what}: min_workers"), MAX_NODES)?, n.at)),
            None => None,
        };
        let max = match t.get("max_workers") {
            Some(n) => Some((n.count(&format!("{what}: max_workers"), MAX_NODES)?, n.at)),
            None => None,
        };
        if let (Some((lo, at)), Some((hi, _))) = (min, max)
            && lo > hi
        {
            return Err(error(
                at,
                format!("{what}: min_workers {lo} is more than max_workers {hi}"),
            ));
        }
        if g.head {
            g.count = 1;
            g.count_at = *at;
            g.replicas = 1;
        } else {
            let lo = min.map_or(0, |m| m.0);
            // A node type without max_workers takes the cluster's (Ray fills it in so).
            let hi = max
                .map(|m| m.0)
                .or(cluster_max)
                .unwrap_or(DEFAULT_MAX_WORKERS)
                .max(lo);
            g.range = Some(format!("min_workers {lo}, max_workers {hi}"));
            let (n, at) = match workers {
                Workers::Min => (lo, min.map_or(*at, |m| m.1)),
                Workers::Max => (hi, max.map_or(*at, |m| m.1)),
            };
            g.count = n;
            g.count_at = at;
            g.replicas = n;
        }
        if let Some(r) = t.get("resources") {
            resources(&mut g, r, &what)?;
        }
        if let Some(l) = t.get("labels") {
            for (k, _, v) in l.entries(&format!("{what}: labels"))? {
                g.labels.insert(
                    k.clone(),
                    v.text(&format!("{what}: label `{k}`"))?.to_string(),
                );
            }
        }
        if let Some(c) = t.get("node_config") {
            node_config(&mut g, c, &what)?;
        }
        src.groups.push(g);
    }
    if head.is_none() {
        src.notes
            .push("the YAML names no head_node_type: the first node is Ray's head".into());
    }
    if let Some(m) = cluster_max {
        let sum: u64 = src.groups.iter().filter(|g| !g.head).map(|g| g.count).sum();
        if sum > m {
            src.notes.push(format!(
                "the node types' {sum} workers exceed the cluster's max_workers {m}, which Ray would not launch past"
            ));
        }
    }
    Ok(src)
}

/// `resources: {CPU, GPU, memory, object_store_memory, TPU, "accelerator_type:X", custom...}`.
fn resources(g: &mut Group, r: &Node, what: &str) -> Result<(), Error> {
    for (k, kat, v) in r.entries(&format!("{what}: resources"))? {
        let x = v.number(&format!("{what}: resource `{k}`"))?;
        match k.as_str() {
            "CPU" => g.ray_cpus = Some((x, v.at)),
            "GPU" | "TPU" | "neuron_cores" | "HPU" => {
                if x > 0.0 {
                    g.accel_count = Some((x, v.at));
                    g.accel_kind = super::kuberay::kind_of(k);
                }
            }
            // Ray's `memory` is what tasks may reserve; the simulator offers 70% of a node's
            // memory as `memory` (scenario::load::node_resources), so the host gets memory / 0.7.
            "memory" => g.memory = Some((x / 0.7).ceil()),
            "object_store_memory" => {}
            _ => match k.strip_prefix("accelerator_type:") {
                Some(t) => g.accel_names.push((t.to_string(), *kat)),
                None => {
                    g.custom.insert(k.clone(), x);
                }
            },
        }
    }
    Ok(())
}

/// The provider's machine: AWS `InstanceType`; GCP `machineType` (a name or a URL ending in
/// one), `guestAccelerators`, TPU `acceleratorType` / `acceleratorConfig`; Azure
/// `azure_arm_parameters.vmSize`.
fn node_config(g: &mut Group, c: &Node, what: &str) -> Result<(), Error> {
    c.entries(&format!("{what}: node_config"))?;
    for key in ["InstanceType", "machineType"] {
        if let Some(n) = c.get(key) {
            let t = n.text(&format!("{what}: {key}"))?;
            g.instance = Some((last_segment(t).to_string(), n.at));
        }
    }
    if let Some(arm) = c.get("azure_arm_parameters")
        && let Some(n) = arm.get("vmSize")
    {
        g.instance = Some((n.text(&format!("{what}: vmSize"))?.to_string(), n.at));
    }
    if let Some(ga) = c.get("guestAccelerators") {
        // A single mapping is accepted as well as a list (Ray's old GCP examples write one).
        let list: Vec<&Node> = match &ga.kind {
            Kind::Map(_) => vec![ga],
            _ => ga
                .items(&format!("{what}: guestAccelerators"))?
                .iter()
                .collect(),
        };
        for a in list {
            if let Some(t) = a.get("acceleratorType") {
                let name = last_segment(t.text(&format!("{what}: acceleratorType"))?).to_string();
                g.accel_names.push((name, t.at));
            }
            if let Some(n) = a.get("acceleratorCount") {
                let x = n.count(&format!("{what}: acceleratorCount"), 4096)? as f64;
                g.accel_count = Some((x, n.at));
                g.accel_kind = "GPU";
            }
        }
    }
    // GCP TPU VMs: `acceleratorType: v4-16`, a slice of one or more hosts (the GKE machine of
    // each host, and the slice's topology where it spans several).
    if let Some(n) = c.get("acceleratorType") {
        let t = n.text(&format!("{what}: acceleratorType"))?;
        match tpu_slice(t) {
            Some(s) => {
                g.accel_names.push((ray_tpu_name(s.part).to_string(), n.at));
                g.accel_count = Some((f64::from(s.per_host), n.at));
                g.accel_kind = "TPU";
                match s.host {
                    Some(machine) => g.instance = Some((machine.to_string(), n.at)),
                    // No host machine in the table (v2, v3): each replica is its hosts.
                    None => {
                        g.hosts = u64::from(s.hosts);
                        g.count = g.replicas.saturating_mul(g.hosts);
                    }
                }
                if let Some(topo) = s.topology {
                    g.topology = Some((topo, n.at));
                }
            }
            None => g.instance = Some((format!("TPU {t}"), n.at)),
        }
    }
    if let Some(cfg) = c.get("acceleratorConfig") {
        let ty = cfg
            .get("type")
            .map(|t| t.text(&format!("{what}: acceleratorConfig.type")))
            .transpose()?;
        if let Some(topo) = cfg.get("topology") {
            let t = topo.text(&format!("{what}: acceleratorConfig.topology"))?;
            g.topology = Some((t.to_string(), topo.at));
        }
        // A multi-host slice's hosts: the 4-chip machine of each generation (the GCP TPU docs
        // cited at `tpu_host`).
        let (name, host) = match ty.map(str::to_ascii_uppercase).as_deref() {
            Some("V4") => ("TPU-V4", "ct4p-hightpu-4t"),
            Some("V5LITEPOD") | Some("V5E") => ("TPU-V5LITEPOD", "ct5lp-hightpu-4t"),
            Some("V5P") => ("TPU-V5P", "ct5p-hightpu-4t"),
            Some(other) => {
                g.accel_names.push((format!("TPU-{other}"), cfg.at));
                return Ok(());
            }
            None => return Ok(()),
        };
        g.accel_names.push((name.to_string(), cfg.at));
        g.instance.get_or_insert((host.to_string(), cfg.at));
    }
    Ok(())
}

/// Ray's accelerator type of a TPU part.
fn ray_tpu_name(p: Part) -> &'static str {
    match p {
        Part::Catalog("TPU_v4") => "TPU-V4",
        Part::Catalog("TPU_v5p") => "TPU-V5P",
        Part::Catalog(_) => "TPU-V5LITEPOD",
        Part::Missing { ray, .. } => ray,
    }
}

/// `zones/us-central1-a/machineTypes/n1-standard-8` -> `n1-standard-8`.
fn last_segment(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}
