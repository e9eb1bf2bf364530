//! `orrery import ray-cluster`: a Ray cluster launcher YAML or a KubeRay `RayCluster` (also the
//! cluster of a `RayJob` or `RayService`) as a `.orr` scenario holding its node types and one
//! cluster. [`yaml`] reads the text with locations, [`launcher`] and [`kuberay`] turn either form
//! into [`Group`]s (one per Ray node type or worker group), [`plan`] maps each group's instance
//! type, accelerators and resources onto the built-in catalog ([`mapping`]), and [`emit`] writes
//! the scenario, formats it canonically and checks that it loads. What cannot be mapped becomes a
//! warning naming the node type; an input of which nothing maps is an error.
//!
//! Field names follow Ray's and KubeRay's own sources: ray-project/ray
//! `doc/source/cluster/vms/references/ray-cluster-configuration.rst` (node types: `node_config`,
//! `resources`, `min_workers`, `max_workers`; `head_node_type`),
//! `python/ray/autoscaler/v2/instance_manager/config.py` (`labels` of a node type),
//! `python/ray/autoscaler/aws/example-full.yaml`, `python/ray/autoscaler/gcp/tpu.yaml`;
//! ray-project/kuberay `ray-operator/apis/ray/v1/raycluster_types.go` (`headGroupSpec`,
//! `workerGroupSpecs`: `groupName`, `replicas`, `minReplicas`, `maxReplicas`, `numOfHosts`,
//! `rayStartParams`, `resources`, `labels`, `template`) and its samples
//! `ray-operator/config/samples/ray-cluster-label-selector.yaml`,
//! `ray-cluster.tpu-v6e-16-multihost.yaml`.

pub mod emit;
pub mod instances;
pub mod kuberay;
pub mod launcher;
pub mod mapping;
pub mod plan;
pub mod yaml;

use std::collections::BTreeMap;
pub use yaml::{Error, Pos};

/// Most node types (groups) one import reads.
pub const MAX_GROUPS: usize = 1000;

/// Which end of a node type's autoscaling range becomes its node count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workers {
    /// `min_workers`; KubeRay's `replicas`.
    Min,
    /// `max_workers`; KubeRay's `maxReplicas`.
    Max,
}

#[derive(Debug, Clone)]
pub struct Options {
    /// The cluster's name (default: the YAML's `cluster_name` / `metadata.name`).
    pub name: Option<String>,
    pub workers: Workers,
    /// The input's file name, written in the output's header comment.
    pub file_name: String,
}

/// One Ray node type (launcher) or group (KubeRay): what the YAML says of it.
#[derive(Debug, Clone, Default)]
pub struct Group {
    pub name: String,
    pub at: Pos,
    pub head: bool,
    /// Nodes imported: replicas x hosts (the head: 1).
    pub count: u64,
    /// Where the count comes from, for the located limit error.
    pub count_at: Pos,
    /// Autoscaling range in the YAML's words, for a comment (`min_workers 0, max_workers 8`).
    pub range: Option<String>,
    /// KubeRay `numOfHosts`: hosts of one replica (a multi-host TPU slice), else 1.
    pub hosts: u64,
    pub replicas: u64,
    pub instance: Option<(String, Pos)>,
    /// The machine's (pod's) vCPUs, where the YAML gives them apart from Ray's `CPU`.
    pub cpus: Option<f64>,
    /// The `CPU` Ray is told the node has.
    pub ray_cpus: Option<(f64, Pos)>,
    /// Host (pod) memory, bytes.
    pub memory: Option<f64>,
    /// Accelerators: how many (GPU / TPU / neuron resources, pod limits) and what they are
    /// (accelerator_type resources and labels, GKE selectors, GCE accelerator types).
    pub accel_count: Option<(f64, Pos)>,
    pub accel_names: Vec<(String, Pos)>,
    /// The Ray resource the count is of (`GPU`, `TPU`, `neuron_cores`, `HPU`).
    pub accel_kind: &'static str,
    /// KubeRay pods: the count above is the pod's share of the machine.
    pub is_pod: bool,
    /// TPU slice topology (`4x4`), for a multi-host group.
    pub topology: Option<(String, Pos)>,
    pub custom: BTreeMap<String, f64>,
    pub labels: BTreeMap<String, String>,
}

/// What a reader found: the cluster and its groups.
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// `Ray cluster launcher` or `KubeRay RayCluster`.
    pub form: &'static str,
    pub name: Option<String>,
    pub provider: Option<String>,
    pub groups: Vec<Group>,
    /// Cluster-wide notes for the header comment.
    pub notes: Vec<String>,
}

/// Something not mapped: where in the YAML (the field it is about) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    pub at: Pos,
    pub message: String,
}

/// A successful import: the scenario text and what was not mapped.
#[derive(Debug, Clone)]
pub struct Imported {
    pub text: String,
    pub warnings: Vec<Warning>,
    pub nodes: u64,
}

/// Why nothing was written.
#[derive(Debug, Clone)]
pub enum Failure {
    /// A malformed or wrongly shaped YAML.
    Located(Error),
    /// Nothing mapped (the warnings say why), or the scenario written does not load (a bug,
    /// its message).
    Unmapped {
        warnings: Vec<Warning>,
        message: String,
    },
}

/// Import `text` (the YAML).
pub fn import(text: &str, opts: &Options) -> Result<Imported, Failure> {
    let docs = yaml::parse(text).map_err(Failure::Located)?;
    let src = read(&docs, opts.workers).map_err(Failure::Located)?;
    let plans = plan::plan(&src).map_err(Failure::Located)?;
    emit::emit(&src, plans, opts)
}

/// Pick the document that is a cluster and read it.
fn read(docs: &[yaml::Node], workers: Workers) -> Result<Source, Error> {
    for d in docs {
        if d.get("available_node_types").is_some() {
            return launcher::read(d, workers);
        }
        if let Some(k) = d.get("kind")
            && let yaml::Kind::Str(k) = &k.kind
            && ["RayCluster", "RayJob", "RayService", "RayCronJob"].contains(&k.as_str())
        {
            return kuberay::read(d, k, workers);
        }
    }
    let at = docs
        .first()
        .map(|d| d.at)
        .unwrap_or(Pos { line: 1, col: 1 });
    if docs
        .iter()
        .any(|d| d.get("head_node").is_some() || d.get("worker_nodes").is_some())
    {
        return Err(yaml::error(
            at,
            "this is the legacy cluster launcher format (`head_node`, `worker_nodes`); only `available_node_types` is read",
        ));
    }
    Err(yaml::error(
        at,
        "neither a Ray cluster launcher config (no `available_node_types`) nor a KubeRay `RayCluster`, `RayJob`, `RayService` or `RayCronJob`",
    ))
}

/// A Kubernetes quantity (`500m`, `8`, `40G`, `5Gi`, `1e3`) as a number.
pub fn quantity(s: &str) -> Option<f64> {
    let s = s.trim();
    const SUFFIXES: &[(&str, f64)] = &[
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("Pi", 1125899906842624.0),
        ("m", 1e-3),
        ("k", 1e3),
        ("K", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
    ];
    let (num, f) = SUFFIXES
        .iter()
        .find_map(|(u, f)| s.strip_suffix(u).map(|n| (n, *f)))
        .unwrap_or((s, 1.0));
    let x: f64 = num.parse().ok()?;
    let v = x * f;
    (v.is_finite() && v >= 0.0).then_some(v)
}

#[cfg(test)]
mod tests {
    #[test]
    fn quantities() {
        assert_eq!(super::quantity("500m"), Some(0.5));
        assert_eq!(super::quantity("5Gi"), Some(5.0 * 1073741824.0));
        assert_eq!(super::quantity("40G"), Some(40e9));
        assert_eq!(super::quantity("8"), Some(8.0));
        assert_eq!(super::quantity("-1"), None);
        assert_eq!(super::quantity("lots"), None);
    }
}
