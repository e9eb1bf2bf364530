//! Transports (issue 4): how bytes get from one device to another — Ray's object store, Ray
//! Direct Transport (NVLink P2P, NCCL and Gloo groups, NIXL), RDMA, GPUDirect RDMA,
//! host-staged RDMA and TCP — each a model with calibratable parameters
//! ([`params`]: latency, per-message overhead, efficiencies, chunk size, staging copies,
//! every default with its source), selectable per workload, task group or actor in the DSL
//! (`transport NAME { kind ... }`, `transport NAME`).
//!
//! A transfer is a [`Plan`] of stages over the link graph ([`plan`](mod@plan), which documents each
//! kind's stages); [`run_plan`] / [`run_plans`] run plans on a copy of a [`FlowNet`] so they
//! share bandwidth max-min with each other and with background traffic, and
//! [`closed_form`] is the same pipeline on an idle network ([`exec`] derives it).
//! [`compare`](mod@compare) puts transports side by side on a scenario's cluster (`orrery transports`).
//!
//! Architecture invariant: no IO and no time beyond the seconds a plan takes; the simulation
//! owns the clock and decides when transfers start.
//!
//! [`FlowNet`]: crate::network::FlowNet

pub mod compare;
pub mod exec;
pub mod nics;
pub mod params;
pub mod plan;
pub mod shared;
pub mod stages;

pub use compare::{Comparison, compare};
pub use exec::{Breakdown, closed_form, run_plan, run_plans};
pub use nics::NicTable;
pub use params::{TransportKind, TransportParams};
pub use plan::{Mover, Phase, Plan, Stage, StageKind, TransportError, plan, plan_host};
pub use shared::{SharedPlan, shared};
