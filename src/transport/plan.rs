//! A transfer as a plan: phases run one after another; a phase pipelines `chunks` equal chunks
//! through its stages; a stage moves each chunk with one flow over a graph path (sharing links
//! max-min with everything else on the network) or with an off-graph copy at a fixed rate
//! (host memcpy), after a fixed latency, paying a per-chunk overhead.
//!
//! Stages of each kind (S, T the devices; H(S), H(T) their hosts' memory, the NUMA root
//! complex; N(S), N(T) their GPU-local NICs; "wire" is the network stage, which pays the
//! transport's `latency` once and `overhead` per chunk):
//!
//! | kind | phases (chunks) |
//! |---|---|
//! | `object_store` | D2H S→H(S) (1) · serialize: `staging` memcpys (1) · push (⌈n/chunk⌉): send copy, wire H(S)→H(T), receive copy · H2D H(T)→T (1). Same node: no push (the store is shared memory). n ≤ `inline`: the push is one wire message, no chunks, no pull protocol. |
//! | `nvlink_p2p` | wire S→T on the node's route (NVSwitch, else PCIe); one node only |
//! | `nccl` | wire S→T on the graph's route (scale-up first, GPU-local NIC, PXN) |
//! | `gloo` | D2H (1) · wire H(S)→H(T) over TCP (⌈n/chunk⌉) · H2D (1) |
//! | `nixl` | wire S→N(S)→N(T)→T (one-sided RDMA); same node: S→T over the scale-up route |
//! | `rdma` | wire H(S)→H(T) through the NICs; same node: loopback through N(S) |
//! | `gpudirect_rdma` | wire S→N(S)→N(T)→T; same node: loopback through N(S) |
//! | `host_staged_rdma` | one pipeline (⌈n/chunk⌉): D2H · wire H(S)→H(T) · H2D |
//! | `tcp` | wire H(S)→H(T); same node: a loopback copy at `memcpy` |
//!
//! The pull protocol of a non-inline object costs [`PULL_MESSAGES`] messages (each the path
//! latency plus `overhead`) before the first chunk. A D2H or H2D copy costs
//! [`COPY_OVERHEAD`] per chunk (launch and completion). Efficiency: D2H/H2D copies move
//! payload / `copy_efficiency` bytes; a wire flow payload / e bytes, e = `scale_up_efficiency`
//! on a path of scale-up links without network links, else `efficiency`; when a path that
//! reads or writes device memory (`nvlink_p2p`, `nccl`, `nixl`, `gpudirect_rdma`) crosses a
//! socket link, e is multiplied by `cross_socket`. Modelling efficiency as extra wire bytes
//! makes a transport's overhead compete for the link like the payload does.
//! The plan's vocabulary (stages, phases, movers, errors) is [`super::stages`].

use super::params::{COPY_OVERHEAD, PULL_MESSAGES, TransportKind, TransportParams};
pub use super::stages::{Mover, Phase, Plan, Stage, StageKind, TransportError};
use crate::network::{Graph, LinkId, LinkKind, Vertex};

/// Most chunks one phase may have (a 1 TiB transfer in 1 MiB chunks).
pub const MAX_CHUNKS: u64 = 1 << 20;

struct Builder<'a> {
    g: &'a Graph,
    p: &'a TransportParams,
    key: u64,
    plan: Plan,
    latency_paid: bool,
}

fn dev((node, device): (usize, usize)) -> Vertex {
    Vertex::Device { node, device }
}

fn has(g: &Graph, path: &[LinkId], k: LinkKind) -> bool {
    path.iter().any(|l| g.kind[*l] == k)
}

impl<'a> Builder<'a> {
    fn new(g: &'a Graph, p: &'a TransportParams, bytes: f64, key: u64) -> Self {
        Builder {
            g,
            p,
            key,
            plan: Plan {
                kind: p.kind,
                bytes,
                inline: false,
                phases: Vec::new(),
                stages: Vec::new(),
                links: Vec::new(),
            },
            latency_paid: false,
        }
    }

    /// The object store between host memories: serialisation, then the object inline (at
    /// most `inline` bytes) or, across nodes, pushed in `k` chunks (send copy, TCP with the
    /// pull messages, receive copy). Device copies, if any, are the caller's.
    fn object_store_push(
        &mut self,
        hs: Vertex,
        ht: Vertex,
        same: bool,
        k: u32,
    ) -> Result<(), TransportError> {
        let p = self.p;
        let inline = self.plan.bytes <= p.inline;
        self.plan.inline = inline;
        if p.staging > 0 {
            self.phase(1);
            self.memcpy(StageKind::Serialize, p.memcpy / f64::from(p.staging));
        }
        if inline {
            self.phase(1);
            let path = self.route(hs, ht)?;
            self.wire(path, false, 0.0);
        } else if !same {
            self.phase(k);
            self.memcpy(StageKind::SendCopy, p.memcpy);
            let path = self.route(hs, ht)?;
            let pull = PULL_MESSAGES * (self.g.path_latency(&path) + p.overhead);
            self.wire(path, false, pull);
            self.memcpy(StageKind::RecvCopy, p.memcpy);
        }
        Ok(())
    }

    fn route(&self, a: Vertex, b: Vertex) -> Result<Vec<LinkId>, TransportError> {
        self.g
            .route_vertices(a, b, self.key)
            .ok_or(TransportError::NoRoute { from: a, to: b })
    }

    /// Device-to-device route as the graph picks it (scale-up first, PXN).
    fn dev_route(
        &self,
        s: (usize, usize),
        t: (usize, usize),
    ) -> Result<Vec<LinkId>, TransportError> {
        self.g.route(s, t, self.key).ok_or(TransportError::NoRoute {
            from: dev(s),
            to: dev(t),
        })
    }

    /// A PCIe path between a device and a NIC of its node, never through another device's
    /// scale-up links: the direct route if it has none, else up to the device's root complex
    /// and over to the NIC.
    fn pcie(
        &self,
        d: (usize, usize),
        nic: Vertex,
        to_nic: bool,
    ) -> Result<Vec<LinkId>, TransportError> {
        let (a, b) = if to_nic { (dev(d), nic) } else { (nic, dev(d)) };
        let direct = self.route(a, b)?;
        let up = |p: &[LinkId]| has(self.g, p, LinkKind::ScaleUp) || has(self.g, p, LinkKind::Ici);
        if !up(&direct) {
            return Ok(direct);
        }
        let host = self.g.host_of(d).ok_or(TransportError::NoDevice(d))?;
        let mut p = if to_nic {
            self.route(dev(d), host)?
        } else {
            self.route(nic, host)?
        };
        p.extend(if to_nic {
            self.route(host, nic)?
        } else {
            self.route(host, dev(d))?
        });
        if up(&p) {
            return Err(TransportError::NoRoute { from: a, to: b });
        }
        Ok(p)
    }

    fn nic(&self, d: (usize, usize)) -> Result<Vertex, TransportError> {
        self.g.nic_of(d).ok_or_else(|| TransportError::Unsupported {
            transport: self.p.name.clone(),
            reason: format!("node {} has no compute NIC", d.0),
        })
    }

    /// GPUDirect path S → N(S) → N(T) → T (a NIC loopback on one node).
    fn gdr_path(
        &self,
        s: (usize, usize),
        t: (usize, usize),
    ) -> Result<Vec<LinkId>, TransportError> {
        let (ns, nt) = (self.nic(s)?, self.nic(t)?);
        let mut p = self.pcie(s, ns, true)?;
        p.extend(self.route(ns, nt)?);
        p.extend(self.pcie(t, nt, false)?);
        Ok(p)
    }

    /// Host memory to host memory through the NICs (a loopback through N(S) on one node).
    fn host_path(
        &self,
        s: (usize, usize),
        t: (usize, usize),
        hs: Vertex,
        ht: Vertex,
    ) -> Result<Vec<LinkId>, TransportError> {
        if s.0 != t.0 {
            return self.route(hs, ht);
        }
        let n = self.nic(s)?;
        let mut p = self.route(hs, n)?;
        p.extend(self.route(n, ht)?);
        Ok(p)
    }

    fn phase(&mut self, chunks: u32) {
        let n = self.plan.stages.len();
        self.plan.phases.push(Phase {
            chunks,
            stages: n..n,
        });
    }

    fn push(&mut self, stage: Stage) {
        self.plan.stages.push(stage);
        if let Some(ph) = self.plan.phases.last_mut() {
            ph.stages.end = self.plan.stages.len();
        }
    }

    fn flow(
        &mut self,
        kind: StageKind,
        path: Vec<LinkId>,
        inflation: f64,
        latency: f64,
        overhead: f64,
    ) {
        let start = self.plan.links.len();
        let latency = latency + self.g.path_latency(&path);
        self.plan.links.extend(path);
        let links = start..self.plan.links.len();
        self.push(Stage {
            kind,
            latency,
            overhead,
            mover: Mover::Flow { links, inflation },
        });
    }

    /// Bytes each chunk of the current phase carries.
    fn chunk_bytes(&self) -> f64 {
        let k = self.plan.phases.last().map_or(1, |p| p.chunks.max(1));
        self.plan.bytes / f64::from(k)
    }

    /// A measured fit's (per-chunk latency, bandwidth) at the current chunk size.
    fn fit(&self, f: Option<&crate::profile::schema::TransferPath>) -> Option<(f64, f64)> {
        let c = self.chunk_bytes();
        let f = f?;
        let seg = f
            .segments
            .iter()
            .find(|s| s.max_bytes.is_none_or(|m| c < m as f64))
            .or(f.segments.last())?;
        (seg.bandwidth_bytes_per_s > 0.0).then_some((seg.latency_s, seg.bandwidth_bytes_per_s))
    }

    /// A PCIe copy between device and host memory: the calibrated fit of its direction when
    /// there is one, else PCIe × `copy_efficiency` plus [`COPY_OVERHEAD`] per chunk.
    fn copy_engine(&mut self, kind: StageKind, path: Vec<LinkId>) {
        let fit = match kind {
            StageKind::D2h => self.fit(self.p.fits.d2h.as_ref()),
            StageKind::H2d => self.fit(self.p.fits.h2d.as_ref()),
            _ => None,
        };
        match fit {
            // Inflating the bytes by capacity / β makes an idle path take exactly c / β; a
            // measured β above the links' capacity is held to it.
            Some((alpha, beta)) => {
                let cap = self.g.path_bottleneck(&path);
                let inflation = if cap.is_finite() {
                    (cap / beta).max(1.0)
                } else {
                    1.0
                };
                let alpha = (alpha - self.g.path_latency(&path)).max(0.0);
                self.flow(kind, path, inflation, 0.0, alpha);
            }
            None => self.flow(kind, path, 1.0 / self.p.copy_efficiency, 0.0, COPY_OVERHEAD),
        }
    }

    /// A host memory copy: the host profile's `memcpy` fit when there is one, else `rate`.
    fn memcpy(&mut self, kind: StageKind, rate: f64) {
        let (overhead, rate) = match self.fit(self.p.fits.memcpy.as_ref()) {
            Some((alpha, beta)) => (alpha, beta * rate / self.p.memcpy),
            None => (0.0, rate),
        };
        self.push(Stage {
            kind,
            latency: 0.0,
            overhead,
            mover: Mover::Copy { rate },
        });
    }

    /// The transport's software latency, paid once, at its first network stage.
    fn software_latency(&mut self) -> f64 {
        if std::mem::replace(&mut self.latency_paid, true) {
            0.0
        } else {
            self.p.latency
        }
    }

    /// A network stage: `device` when it reads or writes device memory (socket penalty).
    fn wire(&mut self, path: Vec<LinkId>, device: bool, extra: f64) {
        let g = self.g;
        let mut e = if !has(g, &path, LinkKind::Network)
            && (has(g, &path, LinkKind::ScaleUp) || has(g, &path, LinkKind::Ici))
        {
            self.p.scale_up_efficiency
        } else {
            self.p.efficiency
        };
        if device && has(g, &path, LinkKind::Socket) {
            e *= self.p.cross_socket;
        }
        // NVLink P2P with a measured peer-copy fit: its latency and bandwidth, end to end.
        if self.p.kind == TransportKind::NvlinkP2p
            && let Some((alpha, beta)) = self.fit(self.p.fits.p2p.as_ref())
        {
            self.measured_wire(path, alpha, beta, extra, 1.0);
            return;
        }
        // An RDMA kind between nodes with a measured NIC fit (perftest): its latency and
        // bandwidth over the network stage, in place of the software latency and
        // `efficiency` (the socket penalty, not part of what perftest saw, still applies).
        let rdma_kind = matches!(
            self.p.kind,
            TransportKind::Rdma
                | TransportKind::GpudirectRdma
                | TransportKind::HostStagedRdma
                | TransportKind::Nixl
        );
        if rdma_kind
            && has(g, &path, LinkKind::Network)
            && let Some((alpha, beta)) = self.fit(self.p.fits.rdma.as_ref())
        {
            let socket = if device && has(g, &path, LinkKind::Socket) {
                self.p.cross_socket
            } else {
                1.0
            };
            self.measured_wire(path, alpha, beta, extra, socket);
            return;
        }
        // TCP (and Gloo, over TCP) copy every byte through the kernel on send and receive,
        // the copy a loopback on one node performs: one stream moves at most the host's
        // memcpy rate however fast the NIC, so between nodes it is never faster than within
        // one.
        let mut inflation = 1.0 / e;
        if matches!(self.p.kind, TransportKind::Tcp | TransportKind::Gloo) && self.p.memcpy > 0.0 {
            let cap = g.path_bottleneck(&path);
            if cap.is_finite() {
                inflation = inflation.max(cap / self.p.memcpy);
            }
        }
        let latency = self.software_latency() + extra;
        self.flow(StageKind::Wire, path, inflation, latency, self.p.overhead);
    }

    /// A network stage at a measured fit's α and β (held to the links' capacity), its
    /// bandwidth further scaled by `share`: α was measured end to end, so the graph's hop
    /// latencies are part of it, and it replaces the transport's software latency.
    fn measured_wire(&mut self, path: Vec<LinkId>, alpha: f64, beta: f64, extra: f64, share: f64) {
        self.latency_paid = true;
        let g = self.g;
        let cap = g.path_bottleneck(&path);
        let inflation = if cap.is_finite() {
            (cap / beta).max(1.0)
        } else {
            1.0
        } / share;
        let alpha = (alpha - g.path_latency(&path)).max(0.0);
        self.flow(
            StageKind::Wire,
            path,
            inflation,
            alpha + extra,
            self.p.overhead,
        );
    }

    /// A TCP loopback on one node: a memcpy that is the transport's network stage.
    fn loopback(&mut self) {
        let latency = self.software_latency();
        self.push(Stage {
            kind: StageKind::Loopback,
            latency,
            overhead: self.p.overhead,
            mover: Mover::Copy {
                rate: self.p.memcpy,
            },
        });
    }

    fn finish(mut self) -> Plan {
        if !self.latency_paid
            && let Some(s) = self.plan.stages.first_mut()
        {
            s.latency += self.p.latency;
        }
        self.plan
    }
}

/// Chunks of a pipelined phase: ⌈bytes / chunk⌉ (1 without chunking or bytes).
pub fn chunk_count(bytes: f64, chunk: f64) -> Result<u32, TransportError> {
    if chunk <= 0.0 || bytes <= 0.0 {
        return Ok(1);
    }
    let k = (bytes / chunk).ceil();
    if k > MAX_CHUNKS as f64 {
        return Err(TransportError::TooManyChunks(k.min(u64::MAX as f64) as u64));
    }
    Ok(k as u32)
}

/// Plan a transfer of `bytes` from device `src` to device `dst` ((node, device) in the graph's
/// numbering); `key` picks among equal routes (ECMP). Host-endpoint kinds (`rdma`, `tcp`)
/// move the bytes between the hosts' memories of those devices.
pub fn plan(
    graph: &Graph,
    params: &TransportParams,
    src: (usize, usize),
    dst: (usize, usize),
    bytes: f64,
    key: u64,
) -> Result<Plan, TransportError> {
    params.validate().map_err(TransportError::BadParams)?;
    if !(bytes.is_finite() && bytes >= 0.0) {
        return Err(TransportError::BadSize(bytes));
    }
    let hs = graph.host_of(src).ok_or(TransportError::NoDevice(src))?;
    let ht = graph.host_of(dst).ok_or(TransportError::NoDevice(dst))?;
    let same = src.0 == dst.0;
    let k = chunk_count(bytes, params.chunk)?;
    let mut b = Builder::new(graph, params, bytes, key);
    match params.kind {
        TransportKind::ObjectStore => {
            b.phase(1);
            b.copy_engine(StageKind::D2h, b.route(dev(src), hs)?);
            b.object_store_push(hs, ht, same, k)?;
            b.phase(1);
            b.copy_engine(StageKind::H2d, b.route(ht, dev(dst))?);
        }
        TransportKind::NvlinkP2p => {
            if !same {
                return Err(TransportError::Unsupported {
                    transport: params.name.clone(),
                    reason: "CUDA IPC / NVLink P2P reaches devices of one node only".into(),
                });
            }
            b.phase(k);
            b.wire(b.dev_route(src, dst)?, true, 0.0);
        }
        TransportKind::Nccl => {
            b.phase(k);
            b.wire(b.dev_route(src, dst)?, true, 0.0);
        }
        TransportKind::Gloo => {
            b.phase(1);
            b.copy_engine(StageKind::D2h, b.route(dev(src), hs)?);
            b.phase(k);
            if same {
                b.loopback();
            } else {
                b.wire(b.route(hs, ht)?, false, 0.0);
            }
            b.phase(1);
            b.copy_engine(StageKind::H2d, b.route(ht, dev(dst))?);
        }
        TransportKind::Nixl => {
            let path = if same {
                b.dev_route(src, dst)?
            } else {
                b.gdr_path(src, dst)?
            };
            b.phase(k);
            b.wire(path, true, 0.0);
        }
        TransportKind::Rdma => {
            b.phase(k);
            b.wire(b.host_path(src, dst, hs, ht)?, false, 0.0);
        }
        TransportKind::GpudirectRdma => {
            b.phase(k);
            b.wire(b.gdr_path(src, dst)?, true, 0.0);
        }
        TransportKind::HostStagedRdma => {
            b.phase(k);
            b.copy_engine(StageKind::D2h, b.route(dev(src), hs)?);
            b.wire(b.host_path(src, dst, hs, ht)?, false, 0.0);
            b.copy_engine(StageKind::H2d, b.route(ht, dev(dst))?);
        }
        TransportKind::Tcp => {
            b.phase(k);
            if same {
                b.loopback();
            } else {
                b.wire(b.route(hs, ht)?, false, 0.0);
            }
        }
    }
    Ok(b.finish())
}

/// Plan a transfer of `bytes` that lives in host memory — a CPU task's output in the object
/// store — from `src_node` to `dst_node` (host memory of NUMA domain 0 at both ends). The
/// object store serializes and pushes without device copies; TCP and Gloo go host to host;
/// RDMA kinds go host to host through the NICs (a loopback memcpy on one node). Kinds that
/// only move device memory (NVLink P2P, NCCL, NIXL, GPUDirect RDMA) are `Unsupported`.
pub fn plan_host(
    graph: &Graph,
    params: &TransportParams,
    src_node: usize,
    dst_node: usize,
    bytes: f64,
    key: u64,
) -> Result<Plan, TransportError> {
    params.validate().map_err(TransportError::BadParams)?;
    if !(bytes.is_finite() && bytes >= 0.0) {
        return Err(TransportError::BadSize(bytes));
    }
    let (hs, ht) = (
        Vertex::Root {
            node: src_node,
            numa: 0,
        },
        Vertex::Root {
            node: dst_node,
            numa: 0,
        },
    );
    let same = src_node == dst_node;
    let k = chunk_count(bytes, params.chunk)?;
    let mut b = Builder::new(graph, params, bytes, key);
    match params.kind {
        TransportKind::ObjectStore => {
            b.object_store_push(hs, ht, same, k)?;
        }
        TransportKind::Gloo
        | TransportKind::Tcp
        | TransportKind::Rdma
        | TransportKind::HostStagedRdma => {
            b.phase(k);
            if same {
                b.loopback();
            } else {
                b.wire(b.route(hs, ht)?, false, 0.0);
            }
        }
        TransportKind::NvlinkP2p
        | TransportKind::Nccl
        | TransportKind::Nixl
        | TransportKind::GpudirectRdma => {
            return Err(TransportError::Unsupported {
                transport: params.name.clone(),
                reason: "it moves device memory; this object is in host memory".into(),
            });
        }
    }
    Ok(b.finish())
}
