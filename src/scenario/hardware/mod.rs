//! Accelerators, NICs and node types: their validated model and how statements build it.
//!
//! A declaration may start from another (`from BASE`); the set of statements given so far is
//! tracked so that required figures are checked once, after inheritance.
//! `devices.rs` reads accelerators and NICs; `node.rs` node types.

mod devices;
mod node;

use crate::diag::Span;
use crate::units::{Bandwidth, Bytes, FlopRate, Power, Price};
pub use devices::{accelerator, nic};
pub use node::{HardwareNames, node_type};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Where a figure came from: the statement's own `source`, else the block's.
pub type Sources = BTreeMap<String, String>;

/// How far an accelerator's figures can be trusted, lowest first. `estimated` and
/// `datasheet` are declared (`tier`); `calibrated` and `validated` are computed from a named
/// profile's evidence (`crate::maturity`), never declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Estimated,
    Datasheet,
    Calibrated,
    Validated,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Estimated => "estimated",
            Tier::Datasheet => "datasheet",
            Tier::Calibrated => "calibrated",
            Tier::Validated => "validated",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PcieLink {
    pub generation: u8,
    pub lanes: u8,
}

impl PcieLink {
    /// Theoretical bandwidth per direction (after 128b/130b encoding for gen3+):
    /// gen3 ≈ 0.985, gen4 ≈ 1.97, gen5 ≈ 3.94, gen6 ≈ 7.88 GB/s per lane (PCI-SIG).
    pub fn bandwidth(self) -> Bandwidth {
        let per_lane = 0.985e9 * f64::from(1u32 << (self.generation.saturating_sub(3)));
        Bandwidth(per_lane * f64::from(self.lanes))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interconnect {
    pub kind: String,
    /// Bandwidth per device and per direction (datasheets often quote both directions added).
    #[serde(rename = "per_direction_bytes_per_s")]
    pub per_direction: Bandwidth,
    pub links: Option<u32>,
    /// Per direction, what the vendor's collective library gets over it (`collective BW`:
    /// NCCL's or RCCL's per-link figure × links, `src/graph/topo.h`); `None`: line rate.
    #[serde(rename = "collective_per_direction_bytes_per_s")]
    pub collective: Option<Bandwidth>,
    /// Share of that an in-switch (NVLS) reduction reaches (`nvls F`: NCCL's
    /// `nvlsEfficiency` by compute capability, `src/graph/tuning.cc`); `None`: 1.
    #[serde(rename = "nvls_fraction")]
    pub nvls: Option<f64>,
}

impl Interconnect {
    /// Collective bandwidth over line rate (1 without a `collective` figure).
    pub fn collective_share(&self) -> f64 {
        match self.collective {
            Some(c) if self.per_direction.0 > 0.0 => (c.0 / self.per_direction.0).min(1.0),
            _ => 1.0,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Accelerator {
    pub name: String,
    pub vendor: String,
    pub model: Option<String>,
    pub ray_resource: String,
    /// Ray's `accelerator_type` label (defaults to the name).
    pub accelerator_type: String,
    #[serde(rename = "memory_bytes")]
    pub memory: Bytes,
    #[serde(rename = "memory_bw_bytes_per_s")]
    pub memory_bw: Bandwidth,
    /// Dense peak per dtype.
    #[serde(rename = "flop_per_s")]
    pub flops: BTreeMap<String, FlopRate>,
    pub interconnect: Option<Interconnect>,
    pub pcie: Option<PcieLink>,
    #[serde(rename = "tdp_w")]
    pub tdp: Option<Power>,
    #[serde(rename = "price_usd_per_h")]
    pub price: Option<Price>,
    pub tier: Tier,
    pub source: Option<String>,
    pub sources: Sources,
    /// Calibration profile (`calibration/NAME.toml`) whose figures the compute model uses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Where the profile was named (a `profile` statement or a top-level `calibration`).
    #[serde(skip)]
    pub profile_span: Span,
    #[serde(skip)]
    pub span: Span,
    #[serde(skip)]
    given: BTreeSet<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Nic {
    pub name: String,
    pub vendor: Option<String>,
    pub model: Option<String>,
    #[serde(rename = "speed_bytes_per_s")]
    pub speed: Bandwidth,
    pub protocol: String,
    pub rdma: bool,
    pub gpudirect: bool,
    #[serde(rename = "latency_s", serialize_with = "crate::units::opt_secs")]
    pub latency: Option<crate::units::Duration>,
    #[serde(rename = "price_usd_per_h")]
    pub price: Option<Price>,
    #[serde(rename = "tdp_w")]
    pub tdp: Option<Power>,
    pub source: Option<String>,
    pub sources: Sources,
    #[serde(skip)]
    pub span: Span,
    #[serde(skip)]
    given: BTreeSet<&'static str>,
}

/// Most cores a node's `cpu` statement may declare.
pub const MAX_CORES: u64 = 1 << 20;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Cpu {
    pub sockets: u32,
    pub cores: u32,
    pub numa: u32,
    pub threads: u32,
    pub model: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PcieSwitch {
    pub name: String,
    pub numa: u32,
    /// Index of the parent switch, if this one hangs under another.
    pub parent: Option<usize>,
    pub uplink: Option<PcieLink>,
}

/// Where a device or NIC sits: its NUMA domain and, if any, its PCIe switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Locality {
    pub numa: u32,
    pub switch: Option<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceGroup {
    pub accelerator: String,
    pub count: u32,
    pub link: String,
    /// One entry per device.
    pub at: Vec<Locality>,
}

#[derive(Debug, Clone, Serialize)]
pub struct NicGroup {
    pub nic: String,
    pub count: u32,
    pub role: String,
    pub at: Vec<Locality>,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeType {
    pub name: String,
    pub cpu: Cpu,
    #[serde(rename = "memory_bytes")]
    pub memory: Bytes,
    #[serde(rename = "pcie_generation")]
    pub pcie: Option<u8>,
    pub switches: Vec<PcieSwitch>,
    pub devices: Vec<DeviceGroup>,
    pub nics: Vec<NicGroup>,
    pub labels: BTreeMap<String, String>,
    pub resources: BTreeMap<String, f64>,
    /// `scale_up rack [max N]`: the `link switch` devices of this type's nodes in one rack
    /// share one NVSwitch domain (an NVL72-class rack: its NVLink Switch trays join every
    /// compute tray), holding at most `N` devices (`None`: no bound).
    pub rack_domain: Option<RackDomain>,
    #[serde(rename = "price_usd_per_h")]
    pub price: Option<Price>,
    #[serde(rename = "power_w")]
    pub power: Option<Power>,
    pub source: Option<String>,
    pub sources: Sources,
    #[serde(skip)]
    pub span: Span,
    #[serde(skip)]
    given: BTreeSet<&'static str>,
    /// Index of `switches` by name, so a node of 100,000 switches resolves in linear time.
    #[serde(skip)]
    switch_ids: std::collections::HashMap<String, usize>,
}

/// A scale-up domain spanning a rack (see [`NodeType::rack_domain`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RackDomain {
    pub max_devices: Option<u32>,
}

impl NodeType {
    /// Whether the NICs of `group` join the cluster's fabric: the compute ones, or every NIC
    /// of a node type that names none `compute`. The graph, the explicit fabric's ports and
    /// the injection bandwidth all follow this one rule.
    pub fn on_fabric(&self, group: &NicGroup) -> bool {
        group.role == "compute" || !self.nics.iter().any(|n| n.role == "compute")
    }

    pub fn device_count(&self) -> u32 {
        self.devices.iter().map(|g| g.count).sum()
    }

    /// The index of the switch named `name`.
    pub fn switch_named(&self, name: &str) -> Option<usize> {
        self.switch_ids.get(name).copied()
    }

    fn push_switch(&mut self, sw: PcieSwitch) {
        self.switch_ids.insert(sw.name.clone(), self.switches.len());
        self.switches.push(sw);
    }
}
