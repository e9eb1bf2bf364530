//! The KubeRay form: a `RayCluster` (or the cluster of a `RayJob`, `spec.rayClusterSpec`, or a
//! `RayService`, `spec.rayClusterConfig`) with `spec.headGroupSpec` and `spec.workerGroupSpecs`
//! (ray-project/kuberay ray-operator/apis/ray/v1/raycluster_types.go). A Ray node is a pod: its
//! container's limits (requests where no limit) give its CPUs, memory and accelerators;
//! `rayStartParams` (`num-cpus`, `num-gpus`, `memory`, `resources`, `labels`) and the group's
//! `resources` and `labels` say what Ray is told; the pod's `nodeSelector` says what machine and
//! accelerator it runs on.

use super::yaml::{Error, Kind, Node, Pos, error};
use super::{Group, MAX_GROUPS, Source, Workers, quantity};
use crate::scenario::cluster::MAX_NODES;

/// KubeRay's default `maxReplicas` (maxInt32): no bound.
const UNBOUNDED: u64 = 2_147_483_647;

pub fn read(doc: &Node, kind: &str, workers: Workers) -> Result<Source, Error> {
    let mut src = Source {
        form: "KubeRay RayCluster",
        provider: Some("kubernetes".into()),
        ..Source::default()
    };
    if let Some(m) = doc.get("metadata")
        && let Some(n) = m.get("name")
    {
        src.name = Some(n.text("metadata.name")?.to_string());
    }
    let spec = doc
        .get("spec")
        .ok_or_else(|| error(doc.at, format!("a {kind} needs a `spec`")))?;
    spec.entries("spec")?;
    // A RayCronJob's RayJob: `spec.jobTemplate` (ray-operator/apis/ray/v1/raycronjob_types.go).
    let (spec, kind) = match kind {
        "RayCronJob" => (
            spec.get("jobTemplate").ok_or_else(|| {
                error(
                    spec.at,
                    "a RayCronJob needs `spec.jobTemplate` (the RayJob it runs)",
                )
            })?,
            "RayJob",
        ),
        _ => (spec, kind),
    };
    let spec = match kind {
        "RayJob" => spec.get("rayClusterSpec").ok_or_else(|| {
            error(
                spec.at,
                "this RayJob has no `spec.rayClusterSpec` (it submits to an existing cluster)",
            )
        })?,
        "RayService" => spec
            .get("rayClusterConfig")
            .ok_or_else(|| error(spec.at, "a RayService needs `spec.rayClusterConfig`"))?,
        _ => spec,
    };
    spec.entries("the cluster spec")?;
    let head = spec
        .get("headGroupSpec")
        .ok_or_else(|| error(spec.at, "a RayCluster needs `headGroupSpec`"))?;
    let mut g = group(head, "headgroup", "headGroupSpec")?;
    g.head = true;
    g.count = 1;
    g.replicas = 1;
    g.count_at = head.at;
    src.groups.push(g);
    if let Some(ws) = spec.get("workerGroupSpecs") {
        let list = ws.items("workerGroupSpecs")?;
        if list.len() >= MAX_GROUPS {
            return Err(error(
                ws.at,
                format!(
                    "{} worker groups; the most one import reads is {}",
                    list.len(),
                    MAX_GROUPS - 1
                ),
            ));
        }
        for w in list {
            w.entries("a worker group")?;
            let name_node = w
                .get("groupName")
                .ok_or_else(|| error(w.at, "a worker group needs `groupName`"))?;
            let name = name_node.text("groupName")?.to_string();
            let what = format!("worker group `{name}`");
            if src.groups.iter().any(|g| g.name == name) {
                return Err(error(name_node.at, format!("{what} is declared twice")));
            }
            let mut g = group(w, &name, &what)?;
            g.at = name_node.at;
            let num = |k: &str| -> Result<Option<(u64, Pos)>, Error> {
                w.get(k)
                    .map(|n| Ok((n.count(&format!("{what}: {k}"), UNBOUNDED)?, n.at)))
                    .transpose()
            };
            let (replicas, min, max) = (num("replicas")?, num("minReplicas")?, num("maxReplicas")?);
            let hosts = num("numOfHosts")?.map_or(1, |h| h.0);
            if hosts == 0 {
                return Err(error(
                    w.get("numOfHosts").map_or(w.at, |n| n.at),
                    format!("{what}: numOfHosts must be at least 1"),
                ));
            }
            let lo = min.map_or(0, |m| m.0);
            let hi = max.map_or(UNBOUNDED, |m| m.0);
            if lo > hi {
                return Err(error(
                    min.map_or(w.at, |m| m.1),
                    format!("{what}: minReplicas {lo} is more than maxReplicas {hi}"),
                ));
            }
            let suspended = w
                .get("suspend")
                .is_some_and(|s| matches!(&s.kind, Kind::Str(t) if t == "true"));
            let (n, at) = match workers {
                Workers::Min => {
                    // KubeRay keeps replicas within [minReplicas, maxReplicas].
                    let r = replicas.map_or(lo, |r| r.0).clamp(lo, hi);
                    (r, replicas.or(min).map_or(g.at, |r| r.1))
                }
                Workers::Max => {
                    if max.is_none() {
                        return Err(error(
                            g.at,
                            format!(
                                "{what} has no maxReplicas (KubeRay's default is unbounded): `--workers max` needs one"
                            ),
                        ));
                    }
                    (hi, max.map_or(g.at, |m| m.1))
                }
            };
            let n = if suspended { 0 } else { n };
            g.replicas = n;
            g.hosts = hosts;
            g.count = n.checked_mul(hosts).filter(|c| *c <= MAX_NODES).ok_or_else(|| {
                error(at, format!("{what}: {n} replicas of {hosts} hosts exceed the limit of {MAX_NODES} nodes"))
            })?;
            g.count_at = at;
            let upper = if hi == UNBOUNDED {
                "unbounded".to_string()
            } else {
                hi.to_string()
            };
            let mut range = format!(
                "replicas {}, minReplicas {lo}, maxReplicas {upper}",
                replicas.map_or(lo, |r| r.0)
            );
            if hosts > 1 {
                range.push_str(&format!(", numOfHosts {hosts}"));
            }
            if suspended {
                range.push_str(", suspended");
            }
            g.range = Some(range);
            src.groups.push(g);
        }
    }
    Ok(src)
}

/// What one group's pod and Ray parameters say.
fn group(spec: &Node, name: &str, what: &str) -> Result<Group, Error> {
    spec.entries(what)?;
    let mut g = Group {
        name: name.to_string(),
        at: spec.at,
        hosts: 1,
        is_pod: true,
        ..Group::default()
    };
    g.labels
        .insert("ray.io/node-group".into(), name.to_string());
    let pod = spec
        .get("template")
        .and_then(|t| t.get("spec"))
        .ok_or_else(|| error(spec.at, format!("{what} needs `template.spec` (the pod)")))?;
    pod.entries(&format!("{what}: template.spec"))?;
    if let Some(cs) = pod.get("containers") {
        let cs = cs.items(&format!("{what}: containers"))?;
        // The Ray container: the one named ray-head / ray-worker, else the first.
        let c = cs
            .iter()
            .find(|c| {
                c.get("name")
                    .is_some_and(|n| matches!(&n.kind, Kind::Str(s) if s.starts_with("ray-")))
            })
            .or_else(|| cs.first());
        if let Some(c) = c
            && let Some(r) = c.get("resources")
        {
            for side in ["requests", "limits"] {
                if let Some(m) = r.get(side) {
                    for (k, _, v) in m.entries(&format!("{what}: resources.{side}"))? {
                        container_resource(&mut g, k, v, what)?;
                    }
                }
            }
        }
    }
    if let Some(sel) = pod.get("nodeSelector") {
        for (k, _, v) in sel.entries(&format!("{what}: nodeSelector"))? {
            let t = v.text(&format!("{what}: nodeSelector `{k}`"))?;
            match k.as_str() {
                "cloud.google.com/gke-accelerator" | "cloud.google.com/gke-tpu-accelerator" => {
                    g.accel_names.push((t.to_string(), v.at))
                }
                "cloud.google.com/gke-tpu-topology" => g.topology = Some((t.to_string(), v.at)),
                "node.kubernetes.io/instance-type" | "beta.kubernetes.io/instance-type" => {
                    g.instance = Some((t.to_string(), v.at))
                }
                _ => {}
            }
        }
    }
    if let Some(p) = spec.get("rayStartParams") {
        for (k, _, v) in p.entries(&format!("{what}: rayStartParams"))? {
            let w = format!("{what}: rayStartParams `{k}`");
            match k.as_str() {
                "num-cpus" => g.ray_cpus = Some((v.number(&w)?, v.at)),
                "num-gpus" => {
                    let x = v.number(&w)?;
                    if x > 0.0 {
                        g.accel_count = Some((x, v.at));
                        g.accel_kind = "GPU";
                    }
                }
                "memory" => ray_resource(&mut g, "memory", v.number(&w)?, v.at),
                "resources" => {
                    for (rk, x) in json_resources(v.text(&w)?).ok_or_else(|| {
                        error(
                            v.at,
                            format!(
                                "{w} must be a JSON map of numbers such as '\"{{\\\"TPU\\\": 4}}\"'"
                            ),
                        )
                    })? {
                        ray_resource(&mut g, &rk, x, v.at);
                    }
                }
                "labels" => {
                    for kv in v
                        .text(&w)?
                        .split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                    {
                        let (lk, lv) = kv
                            .split_once('=')
                            .ok_or_else(|| error(v.at, format!("{w}: `{kv}` is not KEY=VALUE")))?;
                        g.labels
                            .insert(lk.trim().to_string(), lv.trim().to_string());
                    }
                }
                _ => {}
            }
        }
    }
    // The group's own `resources` and `labels` (KubeRay 1.4+) override rayStartParams.
    if let Some(r) = spec.get("resources") {
        for (k, _, v) in r.entries(&format!("{what}: resources"))? {
            let t = v.text(&format!("{what}: resource `{k}`"))?;
            let x = quantity(t).ok_or_else(|| {
                error(
                    v.at,
                    format!("{what}: resource `{k}` must be a number, found `{t}`"),
                )
            })?;
            ray_resource(&mut g, k, x, v.at);
        }
    }
    if let Some(l) = spec.get("labels") {
        for (k, _, v) in l.entries(&format!("{what}: labels"))? {
            g.labels.insert(
                k.clone(),
                v.text(&format!("{what}: label `{k}`"))?.to_string(),
            );
        }
    }
    Ok(g)
}

/// A container resource (limits are read after requests, so they win).
fn container_resource(g: &mut Group, k: &str, v: &Node, what: &str) -> Result<(), Error> {
    let t = v.text(&format!("{what}: resource `{k}`"))?;
    let x = quantity(t).ok_or_else(|| {
        error(
            v.at,
            format!("{what}: resource `{k}` must be a Kubernetes quantity, found `{t}`"),
        )
    })?;
    match k {
        "cpu" => g.cpus = Some(x),
        "memory" => g.memory = Some(x),
        "nvidia.com/gpu"
        | "amd.com/gpu"
        | "google.com/tpu"
        | "aws.amazon.com/neuron"
        | "habana.ai/gaudi"
            if x > 0.0 =>
        {
            g.accel_count = Some((x, v.at));
            g.accel_kind = match k {
                "google.com/tpu" => "TPU",
                "aws.amazon.com/neuron" => "neuron_cores",
                "habana.ai/gaudi" => "HPU",
                _ => "GPU",
            };
        }
        _ => {}
    }
    Ok(())
}

/// A Ray resource told to the node (rayStartParams `resources`, the group's `resources`).
fn ray_resource(g: &mut Group, k: &str, x: f64, at: Pos) {
    match k {
        "CPU" => g.ray_cpus = Some((x, at)),
        "GPU" | "TPU" | "neuron_cores" | "HPU" => {
            if x > 0.0 {
                g.accel_count = Some((x, at));
                g.accel_kind = kind_of(k);
            }
        }
        // Ray's `memory` (what tasks may reserve) sizes the node only where the pod does not:
        // the simulator offers 70% of a node's memory as `memory`, hence / 0.7.
        "memory" => {
            if g.memory.is_none() {
                g.memory = Some((x / 0.7).ceil());
            }
        }
        "object_store_memory" => {}
        _ => match k.strip_prefix("accelerator_type:") {
            Some(t) => g.accel_names.push((t.to_string(), at)),
            None => {
                g.custom.insert(k.to_string(), x);
            }
        },
    }
}

/// The Ray resource name of an accelerator count, as a static string.
pub(super) fn kind_of(k: &str) -> &'static str {
    match k {
        "TPU" => "TPU",
        "neuron_cores" => "neuron_cores",
        "HPU" => "HPU",
        _ => "GPU",
    }
}

/// `'"{\"TPU\": 4}"'` (KubeRay's doubly quoted form) or `{"TPU": 4}`: name and amount.
fn json_resources(t: &str) -> Option<Vec<(String, f64)>> {
    let t = t.trim();
    let inner: String = if t.starts_with('"') {
        serde_json::from_str(t).ok()?
    } else {
        t.to_string()
    };
    let v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&inner).ok()?;
    v.into_iter()
        .map(|(k, x)| Some((k, x.as_f64().filter(|f| f.is_finite() && *f >= 0.0)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ray_start_resources() {
        assert_eq!(
            super::json_resources(r#""{\"TPU\": 4}""#),
            Some(vec![("TPU".into(), 4.0)])
        );
        assert_eq!(
            super::json_resources(r#"{"a": 1, "b": 2.5}"#)
                .unwrap()
                .len(),
            2
        );
        assert_eq!(super::json_resources(r#"{"a": -1}"#), None);
        assert_eq!(super::json_resources("TPU=4"), None);
    }
}
