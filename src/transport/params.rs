//! Transport kinds and their calibratable parameters, each default with its source.
//!
//! Figures marked "assumption" are stated guesses of the right order, to be replaced by
//! calibration (`orrery calibrate`); the others cite a measurement or a configuration default.
//! shared/reference/hardware-and-models.md and ray-semantics.md hold the cited figures.

use crate::scenario::schema;
use crate::scenario::transport::Transport;
use serde::Serialize;

const KIB: f64 = 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

/// PCIe copy-engine efficiency (D2H/H2D `cudaMemcpyAsync`): 25–27 GB/s of 32 GB/s on Gen4 x16
/// (nvbandwidth issues #15, #42), ~52 of 64 GB/s on an H200's Gen5 x16 (Azure
/// AI-benchmarking-guide): 0.78–0.84.
pub const COPY_EFFICIENCY: f64 = 0.8;
/// TCP goodput over line rate: Ethernet, IP and TCP framing leave 1448 payload bytes of 1538 on
/// the wire at a 1500 B MTU (0.94); 0.9 leaves room for ACKs and the stack. A TCP or Gloo
/// stream is further held to the host's memcpy rate (`plan.rs`, the wire stage: the kernel
/// copies every byte at both ends), so on 200–400 Gb/s NICs the copy, not the wire, binds.
pub const TCP_EFFICIENCY: f64 = 0.9;
/// RDMA goodput over line rate: `ib_write_bw` host to host 23 GB/s on a 200 Gb/s (25 GB/s) NIC
/// (perftest #241); NCCL 46–48 GB/s on NDR 400G, 50 GB/s (nccl-tests #290).
pub const RDMA_EFFICIENCY: f64 = 0.92;
/// NVLink goodput over line rate: NVLink4 450 GB/s per direction, ~370 GB/s effective for an
/// NCCL ring (hardware-and-models.md, "Links and transfers").
pub const SCALE_UP_EFFICIENCY: f64 = 0.82;
/// GPUDirect RDMA when the device and its NIC sit under different sockets (the NIC reads device
/// memory through the CPU's root complex and socket link): 11 GB/s against 23 GB/s host to host
/// on the same NIC (perftest #241). NCCL avoids this path for the same reason ("CPUs are very,
/// very bad PCI switches", nccl #465).
pub const CROSS_SOCKET: f64 = 11.0 / 23.0;
/// Ray's object manager chunk: `object_manager_default_chunk_size` = 5 MiB
/// (src/ray/common/ray_config_def.h; ray-semantics.md "Ray Direct Transport").
pub const OBJECT_CHUNK: f64 = 5.0 * MIB;
/// Objects up to this size are returned inline with the task reply, not through the object
/// store: `max_direct_call_object_size` = 100 KiB (ray_config_def.h; ray-semantics.md).
pub const INLINE: f64 = 100.0 * KIB;
/// Serialization into the object store, a host memcpy: Ray's `single client put gigabytes per
/// second` is 11.6 GB/s (Ray 0.7.6 microbenchmark on an m4.16xlarge, Ray docs "Profiling for
/// Ray Developers"; 23.3 GB/s with many clients).
pub const MEMCPY: f64 = 11.6e9;
/// Software latency of a Ray object transfer before any byte moves (worker ↔ raylet IPC, the
/// owner's reply). Assumption: about half a synchronous Ray actor call, 1,595 calls/s = 627 µs
/// per round trip in the same microbenchmark.
pub const OBJECT_STORE_LATENCY: f64 = 300e-6;
/// Cost of one gRPC message of the object manager (a chunk push, a pull request, a location
/// lookup), occupying the sender. Assumption: a unary gRPC call inside a data centre costs tens
/// of microseconds.
pub const OBJECT_STORE_OVERHEAD: f64 = 50e-6;
/// Protocol messages before a pull's first chunk: the receiver asks the owner where the object
/// is, then sends a pull request to the sender's object manager (Ray's ownership-based object
/// directory and pull manager, `src/ray/object_manager/`).
pub const PULL_MESSAGES: f64 = 2.0;
/// CUDA peer-to-peer software latency: 1.8–2.3 µs end to end with peer access (cuda-samples
/// #230), less the graph's two scale-up hops (2 × 0.3 µs, `network::graph`).
pub const P2P_LATENCY: f64 = 1.5e-6;
/// Launch and completion of one copy-engine copy (D2H or H2D, per chunk), occupying the copy
/// stream. Assumption: the order of a CUDA launch and of P2P latency (1.8–2.3 µs, cuda-samples
/// #230).
pub const COPY_OVERHEAD: f64 = 2e-6;
/// NCCL base latency, Ring/Simple: 8.4 µs (NCCL src/graph/tuning.cc; hardware-and-models.md).
pub const NCCL_LATENCY: f64 = 8.4e-6;
/// Kernel TCP small-message one-way latency. Assumption: 10–25 µs inside a data centre
/// (netperf TCP_RR territory); Gloo adds little on top.
pub const TCP_LATENCY: f64 = 25e-6;
/// Per-message cost of a TCP send/receive (system calls, copy setup). Assumption.
pub const TCP_OVERHEAD: f64 = 5e-6;
/// RDMA verbs one-way latency host to host. Assumption: `ib_write_lat` reports 1–2 µs on
/// HDR/NDR (the ConnectX-6 adapter alone is "sub-600 ns").
pub const RDMA_LATENCY: f64 = 2e-6;
/// GPUDirect RDMA one-way latency: the verbs latency plus the NIC's reads of device memory over
/// PCIe. Assumption.
pub const GPUDIRECT_LATENCY: f64 = 3e-6;
/// NIXL one-sided transfer latency: a UCX RDMA put plus NIXL's transfer descriptor and
/// completion notification. Assumption.
pub const NIXL_LATENCY: f64 = 5e-6;
/// Host-staged pipeline chunk: NCCL's staging buffer per channel, `NCCL_BUFFSIZE` = 4 MiB (NCCL
/// environment variables documentation), the granularity a non-GPUDirect transfer cycles
/// through host memory.
pub const STAGED_CHUNK: f64 = 4.0 * MIB;

/// How a transport moves data; each kind's stages are described in [`super::plan`](mod@super::plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    /// Ray's default: D2H, serialize into the object store, chunked push over TCP, H2D.
    ObjectStore,
    /// Ray Direct Transport over CUDA IPC: a device-to-device copy inside one node.
    NvlinkP2p,
    /// Ray Direct Transport with an NCCL collective group: send/recv device to device.
    Nccl,
    /// Ray Direct Transport with a Gloo group: through host memory over TCP.
    Gloo,
    /// Ray Direct Transport with NIXL: one-sided RDMA (UCX) device to device.
    Nixl,
    /// RDMA verbs (InfiniBand or RoCE) host memory to host memory.
    Rdma,
    /// GPUDirect RDMA: the NIC reads and writes device memory directly.
    GpudirectRdma,
    /// D2H, RDMA host to host, H2D, pipelined in chunks.
    HostStagedRdma,
    /// Plain TCP host memory to host memory.
    Tcp,
}

impl TransportKind {
    /// Moves device memory only: `plan_host` refuses it for objects in host memory.
    pub fn device_only(self) -> bool {
        matches!(
            self,
            TransportKind::NvlinkP2p
                | TransportKind::Nccl
                | TransportKind::Nixl
                | TransportKind::GpudirectRdma
        )
    }

    /// Every kind, in the order comparisons list them.
    pub const ALL: [TransportKind; 9] = [
        TransportKind::ObjectStore,
        TransportKind::NvlinkP2p,
        TransportKind::Nccl,
        TransportKind::Gloo,
        TransportKind::Nixl,
        TransportKind::Rdma,
        TransportKind::GpudirectRdma,
        TransportKind::HostStagedRdma,
        TransportKind::Tcp,
    ];

    /// The DSL name (`kind gpudirect_rdma`).
    pub fn name(self) -> &'static str {
        match self {
            TransportKind::ObjectStore => "object_store",
            TransportKind::NvlinkP2p => "nvlink_p2p",
            TransportKind::Nccl => "nccl",
            TransportKind::Gloo => "gloo",
            TransportKind::Nixl => "nixl",
            TransportKind::Rdma => "rdma",
            TransportKind::GpudirectRdma => "gpudirect_rdma",
            TransportKind::HostStagedRdma => "host_staged_rdma",
            TransportKind::Tcp => "tcp",
        }
    }

    pub fn from_name(s: &str) -> Option<TransportKind> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Whether the data starts and ends in host memory (the hosts of the given devices).
    pub fn host_endpoints(self) -> bool {
        matches!(self, TransportKind::Rdma | TransportKind::Tcp)
    }
}

/// A transport's parameters (seconds, bytes, bytes per second, fractions).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransportParams {
    /// The declared name, or the kind's name for a built-in.
    pub name: String,
    pub kind: TransportKind,
    /// Software latency paid once per transfer (handshake, RPC), at the first network stage.
    #[serde(rename = "latency_s")]
    pub latency: f64,
    /// Cost per message (chunk) on the network stage; it occupies the stage.
    #[serde(rename = "overhead_s")]
    pub overhead: f64,
    /// Goodput over line rate on network and PCIe-peer paths.
    #[serde(rename = "efficiency_fraction")]
    pub efficiency: f64,
    /// Goodput over line rate on scale-up paths (NVLink, ICI) with no network link.
    #[serde(rename = "scale_up_efficiency_fraction")]
    pub scale_up_efficiency: f64,
    /// Goodput over PCIe bandwidth of device↔host copies.
    #[serde(rename = "copy_efficiency_fraction")]
    pub copy_efficiency: f64,
    /// Factor on GPUDirect efficiency when a device↔NIC path crosses sockets.
    #[serde(rename = "cross_socket_fraction")]
    pub cross_socket: f64,
    /// Pipeline chunk in bytes; 0: one message.
    #[serde(rename = "chunk_bytes")]
    pub chunk: f64,
    /// Objects up to this size travel inline (object store only).
    #[serde(rename = "inline_bytes")]
    pub inline: f64,
    /// Whole-object host copies before sending (serialization).
    #[serde(rename = "staging_copies")]
    pub staging: u32,
    /// Host memcpy rate of staging and loopback copies.
    #[serde(rename = "memcpy_bytes_per_s")]
    pub memcpy: f64,
    /// Measured fits that replace the models above where a scenario names calibration
    /// profiles ([`TransportParams::calibrated`]). In JSON only which profiles were used
    /// (`Fits::sources`): the fitted figures are in the profiles.
    #[serde(skip_serializing_if = "Fits::is_empty", serialize_with = "fit_sources")]
    pub fits: Fits,
}

/// Calibrated α–β fits of copy paths (from `calibration/*.toml`): a stage they cover costs
/// the fit's latency per chunk and moves at the fit's bandwidth for that chunk size (never
/// above the links' capacity) instead of PCIe × `copy_efficiency` or `memcpy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Fits {
    /// Device → host copies of the source device (`d2h_pinned`).
    pub d2h: Option<crate::profile::schema::TransferPath>,
    /// Host → device copies of the destination device (`h2d_pinned`).
    pub h2d: Option<crate::profile::schema::TransferPath>,
    /// Peer copies between devices of one node (`p2p`), for NVLink P2P.
    pub p2p: Option<crate::profile::schema::TransferPath>,
    /// Host memory copies (`memcpy` of the host profile).
    pub memcpy: Option<crate::profile::schema::TransferPath>,
    /// RDMA over the source node's NICs (`nic_rdma`, e.g. imported from perftest), for the
    /// network stage of the RDMA kinds (`rdma`, `gpudirect_rdma`, `host_staged_rdma`, and
    /// `nixl` between nodes).
    pub rdma: Option<crate::profile::schema::TransferPath>,
    /// Which profiles were used (`d2h_pinned from h200_datasheet`, ...).
    pub sources: Vec<String>,
}

fn fit_sources<S: serde::Serializer>(f: &Fits, s: S) -> Result<S::Ok, S::Error> {
    f.sources.serialize(s)
}

impl Fits {
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }
}

impl TransportParams {
    /// The defaults of a kind (see the constants above for their sources).
    pub fn defaults(kind: TransportKind) -> TransportParams {
        let base = TransportParams {
            name: kind.name().to_string(),
            kind,
            latency: 0.0,
            overhead: 0.0,
            efficiency: RDMA_EFFICIENCY,
            scale_up_efficiency: SCALE_UP_EFFICIENCY,
            copy_efficiency: COPY_EFFICIENCY,
            cross_socket: CROSS_SOCKET,
            chunk: 0.0,
            inline: 0.0,
            staging: 0,
            memcpy: MEMCPY,
            fits: Fits::default(),
        };
        match kind {
            TransportKind::ObjectStore => TransportParams {
                latency: OBJECT_STORE_LATENCY,
                overhead: OBJECT_STORE_OVERHEAD,
                efficiency: TCP_EFFICIENCY,
                chunk: OBJECT_CHUNK,
                inline: INLINE,
                staging: 1,
                ..base
            },
            TransportKind::NvlinkP2p => TransportParams {
                latency: P2P_LATENCY,
                efficiency: COPY_EFFICIENCY,
                ..base
            },
            TransportKind::Nccl => TransportParams {
                latency: NCCL_LATENCY,
                ..base
            },
            TransportKind::Gloo => TransportParams {
                latency: TCP_LATENCY,
                overhead: TCP_OVERHEAD,
                efficiency: TCP_EFFICIENCY,
                ..base
            },
            TransportKind::Nixl => TransportParams {
                latency: NIXL_LATENCY,
                ..base
            },
            TransportKind::Rdma => TransportParams {
                latency: RDMA_LATENCY,
                ..base
            },
            TransportKind::GpudirectRdma => TransportParams {
                latency: GPUDIRECT_LATENCY,
                ..base
            },
            TransportKind::HostStagedRdma => TransportParams {
                latency: RDMA_LATENCY,
                chunk: STAGED_CHUNK,
                ..base
            },
            TransportKind::Tcp => TransportParams {
                latency: TCP_LATENCY,
                overhead: TCP_OVERHEAD,
                efficiency: TCP_EFFICIENCY,
                ..base
            },
        }
    }

    /// A declared transport: its kind's defaults with the given parameters replaced.
    /// `None` for an unknown kind (a validated Spec has none).
    pub fn from_spec(t: &Transport) -> Option<TransportParams> {
        let mut p = TransportParams::defaults(TransportKind::from_name(&t.kind)?);
        p.name = t.name.clone();
        let secs = |d: crate::units::Duration| d.0 as f64 * 1e-9;
        if let Some(d) = t.latency {
            p.latency = secs(d);
        }
        if let Some(d) = t.overhead {
            p.overhead = secs(d);
        }
        if let Some(x) = t.efficiency {
            p.efficiency = x;
        }
        if let Some(x) = t.scale_up_efficiency {
            p.scale_up_efficiency = x;
        }
        if let Some(x) = t.copy_efficiency {
            p.copy_efficiency = x;
        }
        if let Some(x) = t.cross_socket {
            p.cross_socket = x;
        }
        if let Some(b) = t.chunk {
            p.chunk = b.0 as f64;
        }
        if let Some(b) = t.inline {
            p.inline = b.0 as f64;
        }
        if let Some(n) = t.staging {
            p.staging = n;
        }
        if let Some(b) = t.memcpy {
            p.memcpy = b.0;
        }
        Some(p)
    }

    /// Parameters a plan can use: finite, non-negative, efficiencies in (0, 1], a positive
    /// memcpy rate. The DSL reports the same problems at their location.
    pub fn validate(&self) -> Result<(), String> {
        let fracs = [
            ("efficiency", self.efficiency),
            ("scale_up_efficiency", self.scale_up_efficiency),
            ("copy_efficiency", self.copy_efficiency),
            ("cross_socket", self.cross_socket),
        ];
        for (what, x) in fracs {
            if !(x > 0.0 && x <= 1.0) {
                return Err(format!("{what} must be in (0, 1], found {x}"));
            }
        }
        let amounts = [
            ("latency", self.latency),
            ("overhead", self.overhead),
            ("chunk", self.chunk),
            ("inline", self.inline),
        ];
        for (what, x) in amounts {
            if !(x.is_finite() && x >= 0.0) {
                return Err(format!("{what} must be finite and not negative, found {x}"));
            }
        }
        if !(self.memcpy.is_finite() && self.memcpy > 0.0) {
            return Err(format!("memcpy must be positive, found {}", self.memcpy));
        }
        Ok(())
    }

    /// Every kind's defaults, named after the kind.
    pub fn builtin() -> Vec<TransportParams> {
        TransportKind::ALL
            .into_iter()
            .map(TransportParams::defaults)
            .collect()
    }

    /// The transports of a scenario: the built-ins, each replaced by a declared transport of
    /// the same name, then the other declared ones in declaration order.
    pub fn of_spec(spec: &crate::scenario::Spec) -> Vec<TransportParams> {
        let mut out = Self::builtin();
        for t in &spec.transports {
            let Some(p) = Self::from_spec(t) else {
                continue;
            };
            match out.iter_mut().find(|q| q.name == p.name) {
                Some(q) => *q = p,
                None => out.push(p),
            }
        }
        out
    }

    /// These parameters with the measured fits of the scenario's calibration profiles: the
    /// source device's accelerator profile for D2H and peer copies, the destination's for
    /// H2D, the host profile for memory copies. Nodes are in the cluster's order.
    pub fn calibrated(
        mut self,
        spec: &crate::scenario::Spec,
        src_node: usize,
        dst_node: usize,
    ) -> Self {
        let profile_of = |node: usize| {
            let c = spec.cluster.as_ref()?;
            let nt = spec.node_types.get(c.node_type_at(node)?)?;
            let acc = spec.accelerators.get(&nt.devices.first()?.accelerator)?;
            let name = acc.profile.as_ref()?;
            Some((name.as_str(), spec.profiles.get(name)?))
        };
        let mut fits = Fits::default();
        let mut take = |name: &str, p: &crate::profile::Profile, path: &str| {
            let t = p.transfer(path).cloned();
            if t.is_some() {
                fits.sources.push(format!("{path} from {name}"));
            }
            t
        };
        if let Some((name, p)) = profile_of(src_node) {
            fits.d2h = take(name, p, "d2h_pinned");
            fits.p2p = take(name, p, "p2p");
            if src_node != dst_node {
                fits.rdma = take(name, p, "nic_rdma");
            }
        }
        if let Some((name, p)) = profile_of(dst_node) {
            fits.h2d = take(name, p, "h2d_pinned");
        }
        if let Some(name) = &spec.host_profile
            && let Some(p) = spec.profiles.get(name)
        {
            fits.memcpy = take(name, p, "memcpy");
        }
        self.fits = fits;
        self
    }

    /// The parameters `name` selects in a scenario (a declared transport or a built-in kind).
    pub fn named(spec: &crate::scenario::Spec, name: &str) -> Option<TransportParams> {
        Self::of_spec(spec).into_iter().find(|p| p.name == name)
    }
}

/// The kinds the schema accepts are exactly the model's kinds.
pub fn schema_kinds_agree() -> bool {
    schema::TRANSPORT_KINDS.len() == TransportKind::ALL.len()
        && schema::TRANSPORT_KINDS
            .iter()
            .all(|k| TransportKind::from_name(k).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_and_model_list_the_same_kinds() {
        assert!(schema_kinds_agree());
        for k in TransportKind::ALL {
            assert_eq!(TransportKind::from_name(k.name()), Some(k));
            assert!(TransportParams::defaults(k).validate().is_ok(), "{k:?}");
        }
    }
}
