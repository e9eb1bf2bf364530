//! Data movement over a link graph (issue 4 in progress): the cluster's links built from the
//! Spec with routes over them ([`graph`]), and flow-level max-min bandwidth sharing
//! ([`flows`]). Transports, collectives as flows and the calibrated models come next.

mod audit;
pub mod bisection;
mod classes;
pub mod collective;
pub mod drive;
mod filling;
pub mod flowfile;
pub mod flows;
pub mod graph;
mod link_lists;
mod rebuild;
mod storage;
pub mod topology;

pub use filling::SolverStats;
pub use flows::{FlowId, FlowNet, LinkId};
pub use graph::{Graph, LinkKind, MeasuredCollectives, Vertex};
pub use storage::SPILL_DISK_BW;
