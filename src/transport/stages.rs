//! What a transport plan is made of: stages (what moves the bytes, over which links, at what
//! rate), phases of chunked stages, the whole plan with its fixed latency, and why a plan
//! cannot be made (`plan.rs` builds them).

use super::params::TransportKind;
use super::plan::MAX_CHUNKS;
use crate::network::{Graph, LinkId, Vertex};
use serde::Serialize;
use std::fmt;
use std::ops::Range;

/// What a stage does; the breakdown counts every kind but `Wire` as staging.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StageKind {
    /// Device to host memory over PCIe (copy engine).
    D2h,
    /// Serialization into a buffer or store: host memcpy.
    Serialize,
    /// The sender copies a chunk into its message (object store push).
    SendCopy,
    /// Over the network or scale-up fabric.
    Wire,
    /// The receiver copies a chunk out of its message into the store.
    RecvCopy,
    /// Host to device memory over PCIe.
    H2d,
    /// Host to host on one node (TCP loopback): a memcpy.
    Loopback,
}

impl StageKind {
    pub fn name(self) -> &'static str {
        match self {
            StageKind::D2h => "d2h",
            StageKind::Serialize => "serialize",
            StageKind::SendCopy => "send_copy",
            StageKind::Wire => "wire",
            StageKind::RecvCopy => "recv_copy",
            StageKind::H2d => "h2d",
            StageKind::Loopback => "loopback",
        }
    }

    /// Time spent here is bandwidth-bound network time, not staging.
    pub fn is_wire(self) -> bool {
        self == StageKind::Wire
    }
}

/// How a stage moves a chunk.
#[derive(Debug, Clone, PartialEq)]
pub enum Mover {
    /// One flow over `Plan::links[links]` of chunk × `inflation` bytes (inflation = 1 /
    /// efficiency). An empty path costs nothing.
    Flow { links: Range<usize>, inflation: f64 },
    /// A copy off the graph at `rate` bytes per second.
    Copy { rate: f64 },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub kind: StageKind,
    /// Seconds between a chunk leaving the previous stage and reaching this one (path latency,
    /// software latency); it delays chunks but does not occupy the stage.
    pub latency: f64,
    /// Seconds per chunk, occupying the stage (per-message overhead).
    pub overhead: f64,
    pub mover: Mover,
}

/// Stages `stages` of the plan pipelined over `chunks` equal chunks.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub chunks: u32,
    pub stages: Range<usize>,
}

/// One transfer, ready to run on a [`crate::network::FlowNet`] ([`super::run_plan`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub kind: TransportKind,
    /// Payload bytes.
    pub bytes: f64,
    /// Sent inline (object store, at most `inline` bytes).
    pub inline: bool,
    pub phases: Vec<Phase>,
    pub stages: Vec<Stage>,
    /// Every flow's path, concatenated; stages index into it.
    pub links: Vec<LinkId>,
}

impl Plan {
    /// The links of a stage's flow (empty for copies).
    pub fn path(&self, s: &Stage) -> &[LinkId] {
        match &s.mover {
            Mover::Flow { links, .. } => &self.links[links.clone()],
            Mover::Copy { .. } => &[],
        }
    }

    /// Chunks of the most chunked phase.
    pub fn chunks(&self) -> u32 {
        self.phases.iter().map(|p| p.chunks).max().unwrap_or(0)
    }

    /// The NICs the plan's wire stages cross, as (node, NIC index).
    pub fn nics(&self, graph: &Graph) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for s in self.stages.iter().filter(|s| s.kind.is_wire()) {
            for l in self.path(s) {
                let (a, b) = graph.ends[*l];
                for v in [a, b] {
                    if let Vertex::Nic { node, nic } = v
                        && !out.contains(&(node, nic))
                    {
                        out.push((node, nic));
                    }
                }
            }
        }
        out
    }
}

/// Why a transfer cannot be planned or run.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportError {
    /// No such (node, device) in the graph.
    NoDevice((usize, usize)),
    NoRoute {
        from: Vertex,
        to: Vertex,
    },
    /// The transport cannot connect these endpoints (CUDA IPC across nodes, RDMA without an
    /// RDMA NIC, ...).
    Unsupported {
        transport: String,
        reason: String,
    },
    BadParams(String),
    BadSize(f64),
    TooManyChunks(u64),
    /// A plan's links are not in the network it was given.
    WrongNetwork,
}

impl TransportError {
    /// The error in words with each node named by `node` (its index to its name).
    pub fn describe(&self, node: &dyn Fn(usize) -> String) -> String {
        match self {
            TransportError::NoRoute { from, to } => format!(
                "no route from {} to {}",
                from.describe(node),
                to.describe(node)
            ),
            other => other.to_string(),
        }
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::NoDevice((n, d)) => write!(f, "no device {d} on node {n}"),
            TransportError::NoRoute { from, to } => write!(f, "no route from {from} to {to}"),
            TransportError::Unsupported { transport, reason } => {
                write!(f, "{transport}: {reason}")
            }
            TransportError::BadParams(m) => write!(f, "bad transport parameters: {m}"),
            TransportError::BadSize(b) => write!(f, "bad transfer size {b}"),
            TransportError::TooManyChunks(k) => {
                write!(f, "{k} chunks in one transfer; the limit is {MAX_CHUNKS}")
            }
            TransportError::WrongNetwork => {
                write!(f, "the plan's links are not in the given network")
            }
        }
    }
}

impl std::error::Error for TransportError {}
