//! What each node offers in Ray's resource vocabulary, and the scope workloads' requests are
//! checked against.

use super::*;

/// Resources offered per node, over the cluster's node types (or every known node type when
/// the scenario has no cluster). Ray's defaults: `CPU` = logical CPUs, `memory` = 70 % and
/// `object_store_memory` = 30 % of host memory, one unit per device under its Ray resource
/// name, `accelerator_type:X` = 1.
pub fn resource_scope(spec: &Spec) -> ResourceScope {
    let types: Vec<&hardware::NodeType> = match &spec.cluster {
        Some(c) if !c.groups.is_empty() => {
            let mut names: Vec<&str> = c.groups.iter().map(|g| g.node_type.as_str()).collect();
            names.sort();
            names.dedup();
            names
                .iter()
                .filter_map(|n| spec.node_types.get(*n))
                .collect()
        }
        _ => spec.node_types.values().collect(),
    };
    let mut max: BTreeMap<String, f64> = BTreeMap::new();
    let mut bump = |k: String, v: f64| {
        let e = max.entry(k).or_insert(0.0);
        *e = e.max(v);
    };
    let mut node_types = Vec::new();
    for nt in types {
        let resources = node_resources(spec, nt);
        for (k, v) in &resources {
            bump(k.clone(), *v);
        }
        let devices = nt
            .devices
            .iter()
            .filter_map(|g| {
                let a = spec.accelerators.get(&g.accelerator)?;
                Some((
                    g.accelerator.clone(),
                    a.ray_resource.clone(),
                    a.memory,
                    g.count,
                ))
            })
            .collect();
        node_types.push(workload::ScopeNodeType {
            name: nt.name.clone(),
            resources,
            devices,
        });
    }
    let transports = spec
        .transports
        .iter()
        .map(|t| t.name.clone())
        .chain(schema::TRANSPORT_KINDS.iter().map(|k| k.to_string()))
        .collect();
    let mut transport_kinds: BTreeMap<String, String> = schema::TRANSPORT_KINDS
        .iter()
        .map(|k| (k.to_string(), k.to_string()))
        .collect();
    for t in &spec.transports {
        transport_kinds.insert(t.name.clone(), t.kind.clone());
    }
    let storages = spec
        .cluster
        .iter()
        .flat_map(|c| c.storage.iter().map(|s| s.name.clone()))
        .collect();
    ResourceScope {
        max_per_node: max,
        transports,
        storages,
        transport_kinds,
        accelerators: spec.accelerators.keys().cloned().collect(),
        node_types,
        cluster_scoped: spec.cluster.as_ref().is_some_and(|c| !c.groups.is_empty()),
        models: spec
            .models
            .iter()
            .map(|(k, t)| (k.clone(), Some(t.clone())))
            .collect(),
        slice_chips: spec
            .cluster
            .iter()
            .flat_map(|c| {
                c.racks
                    .iter()
                    .filter_map(|r| r.slice.as_ref().map(|s| s.chips))
            })
            .collect(),
    }
}

/// The Ray resources one node of this type offers.
pub fn node_resources(spec: &Spec, nt: &hardware::NodeType) -> BTreeMap<String, f64> {
    let mut r = BTreeMap::new();
    r.insert("CPU".to_string(), f64::from(nt.cpu.threads));
    r.insert("memory".to_string(), (nt.memory.0 as f64 * 0.7).floor());
    r.insert(
        "object_store_memory".to_string(),
        (nt.memory.0 as f64 * 0.3).floor(),
    );
    for g in &nt.devices {
        if let Some(acc) = spec.accelerators.get(&g.accelerator) {
            *r.entry(acc.ray_resource.clone()).or_insert(0.0) += f64::from(g.count);
            r.insert(format!("accelerator_type:{}", acc.accelerator_type), 1.0);
        }
    }
    for (k, v) in &nt.resources {
        *r.entry(k.clone()).or_insert(0.0) += v;
    }
    r
}
