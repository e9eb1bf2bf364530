//! The validated model of a scenario (the "Spec"): what later stages consume.
//!
//! Parse-then-resolve: [`load`] parses every file into generic trees, then the resolvers in
//! this module turn statements into typed structures, reporting every problem with its
//! location. Architecture invariant: a `Spec` is only handed out when there were no errors, so
//! the engine never sees an unknown name, a wrong unit or an impossible topology.

pub mod arrivals;
pub mod cluster;
pub mod disagg;
pub mod engine;
pub mod experiment;
pub mod failure;
pub mod hardware;
pub mod layout;
mod layout_rules;
mod llm_shape;
pub mod load;
pub mod model;
pub mod overlap;
pub mod path;
pub mod payloads;
pub mod placement_group;
mod profiles;
pub mod reader;
pub mod schema;
pub mod serving;
mod task_fallback;
pub mod topology;
pub mod transport;
pub mod workload;

use serde::Serialize;
use std::collections::BTreeMap;

pub use cluster::Cluster;
pub use experiment::Experiment;
pub use failure::Failures;
pub use hardware::{Accelerator, Nic, NodeType};
pub use layout::ModelTraining;
pub use load::{Check, LoadOptions, Loaded, Override, resolve_file, resolve_str};
pub use workload::{Tenant, Workload};

impl Spec {
    /// The same scenario with every workload (and placement group) placed by `policy`: how
    /// Ray's DEFAULT and the topology-aware policy are compared on the same work.
    pub fn with_policy(&self, policy: workload::Policy) -> Spec {
        let mut s = self.clone();
        for w in &mut s.workloads {
            w.policy = policy;
            for pg in &mut w.placement_groups {
                pg.policy = Some(policy);
            }
        }
        s
    }

    /// Injection bandwidth of one node: its compute NICs, or all NICs if none is marked
    /// compute.
    pub fn node_injection(&self, nt: &NodeType) -> crate::units::Bandwidth {
        let sum = |compute_only: bool| -> f64 {
            nt.nics
                .iter()
                .filter(|g| !compute_only || g.role == "compute")
                .map(|g| self.nics.get(&g.nic).map_or(0.0, |n| n.speed.0) * f64::from(g.count))
                .sum()
        };
        let c = sum(true);
        crate::units::Bandwidth(if c > 0.0 { c } else { sum(false) })
    }

    /// A node's price per hour: its own, else its devices' (`None` when one has none).
    pub fn node_price(&self, nt: &NodeType) -> Option<f64> {
        self.node_total(nt, nt.price.map(|p| p.0), |a| a.price.map(|p| p.0))
    }

    /// A node's power (W): its own, else its devices' TDP (`None` when one has none).
    pub fn node_power(&self, nt: &NodeType) -> Option<f64> {
        self.node_total(nt, nt.power.map(|p| p.0), |a| a.tdp.map(|p| p.0))
    }

    /// A node's own figure, else the sum of a per-device figure over its devices (`None` when
    /// a device lacks it).
    fn node_total(
        &self,
        nt: &NodeType,
        own: Option<f64>,
        per_device: impl Fn(&Accelerator) -> Option<f64>,
    ) -> Option<f64> {
        if own.is_some() {
            return own;
        }
        nt.devices
            .iter()
            .map(|g| {
                self.accelerators
                    .get(&g.accelerator)
                    .and_then(&per_device)
                    .map(|x| x * f64::from(g.count))
            })
            .sum()
    }
}

/// A whole scenario, validated.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Spec {
    pub accelerators: BTreeMap<String, Accelerator>,
    pub nics: BTreeMap<String, Nic>,
    pub node_types: BTreeMap<String, NodeType>,
    pub cluster: Option<Cluster>,
    pub tenants: Vec<Tenant>,
    pub workloads: Vec<Workload>,
    pub failures: Vec<Failures>,
    pub experiments: Vec<Experiment>,
    /// Models the scenario declares (`model NAME { ... }`), by name; training jobs may also
    /// name the catalog's ([`crate::model::catalog`]).
    pub models: BTreeMap<String, crate::model::Transformer>,
    /// Declared transports (`transport NAME { kind ... }`), in declaration order.
    pub transports: Vec<transport::Transport>,
    /// Names of catalog entries the scenario replaced.
    pub overridden: Vec<String>,
    /// Calibration profiles the accelerators use, by name (`calibration/NAME.toml`).
    pub profiles: BTreeMap<String, crate::profile::Profile>,
    /// The host profile (`calibration NAME` of a profile measured with `--device cpu`): its
    /// `memcpy` fit prices host memory copies in the transports (object store serialisation
    /// and copies, loopbacks). Its name is a key of `profiles`.
    pub host_profile: Option<String>,
}
