//! `transport NAME { kind KIND ... }`: a transport model with calibrated parameters. Only the
//! parameters given are stored; the rest take the kind's defaults (each with its source) in
//! `crate::transport::params`. Selection (`transport NAME` in a workload, task group or actor)
//! is checked in `workload.rs` against the names this file resolves and the built-in kinds.

use super::reader::{self as rd, Args, Cx};
use super::schema;
use crate::diag::Span;
use crate::syntax::ast::{Stmt, Value, ValueKind};
use crate::units::{Bandwidth, Bytes, Duration};
use serde::Serialize;

/// Smallest chunk other than 0 (no chunking): smaller ones would make a transfer millions of
/// messages for no modelling benefit.
pub const MIN_CHUNK: u64 = 1024;
/// Most host staging copies one transport may declare.
pub const MAX_STAGING: u64 = 16;

/// A declared transport: its kind and the parameters the scenario overrides.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Transport {
    pub name: String,
    pub kind: String,
    pub latency: Option<Duration>,
    pub overhead: Option<Duration>,
    pub efficiency: Option<f64>,
    pub scale_up_efficiency: Option<f64>,
    pub copy_efficiency: Option<f64>,
    pub cross_socket: Option<f64>,
    pub chunk: Option<Bytes>,
    pub inline: Option<Bytes>,
    pub staging: Option<u32>,
    pub memcpy: Option<Bandwidth>,
    pub source: Option<String>,
    #[serde(skip)]
    pub span: Span,
}

/// A factor in (0, 1]: a plain number (`0.9`) or a percentage (`90 %`).
fn factor(cx: &mut Cx, v: &Value, what: &str) -> Option<f64> {
    let x = match &v.kind {
        ValueKind::Quantity { unit: Some(_), .. } => rd::fraction(cx, v)?.0,
        _ => rd::number(cx, v)?,
    };
    if !(x > 0.0 && x <= 1.0) {
        cx.error(
            v.span,
            format!(
                "{what} must be greater than 0 and at most 1 (a fraction of the line rate), found {}",
                crate::units::sig3(x)
            ),
        );
        return None;
    }
    Some(x)
}

/// Resolve one `transport` block; `None` when it has errors (they are reported).
pub fn transport(cx: &mut Cx, name: &str, span: Span, stmts: &[Stmt]) -> Option<Transport> {
    let mut t = Transport {
        name: name.into(),
        span,
        ..Transport::default()
    };
    let errors = cx.error_count();
    cx.each(stmts, schema::TRANSPORT, "a transport", |cx, s, def| {
        cx.no_block(s);
        let mut a = Args::new(s, def);
        let _ = (|| -> Option<()> {
            match def.key {
                "kind" => {
                    t.kind = rd::choice(
                        cx,
                        a.req("a transport kind")?,
                        schema::TRANSPORT_KINDS,
                        "transport kind",
                    )?
                    .to_string()
                }
                "latency" => t.latency = Some(rd::duration(cx, a.req("a time")?)?),
                "overhead" => t.overhead = Some(rd::duration(cx, a.req("a time")?)?),
                "efficiency" => {
                    t.efficiency = Some(factor(cx, a.req("a fraction")?, "efficiency")?)
                }
                "scale_up_efficiency" => {
                    t.scale_up_efficiency =
                        Some(factor(cx, a.req("a fraction")?, "scale_up_efficiency")?)
                }
                "copy_efficiency" => {
                    t.copy_efficiency = Some(factor(cx, a.req("a fraction")?, "copy_efficiency")?)
                }
                "cross_socket" => {
                    t.cross_socket = Some(factor(cx, a.req("a fraction")?, "cross_socket")?)
                }
                "chunk" => {
                    let v = a.req("a size (0 for no chunking)")?;
                    let b = rd::bytes(cx, v)?;
                    if b.0 != 0 && b.0 < MIN_CHUNK {
                        cx.error(v.span, "chunk must be 0 (no chunking) or at least 1 KiB");
                        return None;
                    }
                    t.chunk = Some(b);
                }
                "inline" => t.inline = Some(rd::bytes(cx, a.req("a size")?)?),
                "staging" => {
                    t.staging =
                        Some(
                            rd::count(cx, a.req("a count of host copies")?, 0, MAX_STAGING)? as u32,
                        )
                }
                "memcpy" => t.memcpy = Some(rd::bandwidth(cx, a.req("a bandwidth")?)?),
                "source" => {
                    t.source = Some(rd::string(cx, a.req("a source in quotes")?)?.to_string())
                }
                _ => {}
            }
            Some(())
        })();
        a.finish(cx);
    });
    if t.kind.is_empty() && cx.error_count() == errors {
        cx.push(
            crate::diag::Diagnostic::error(span, format!("transport `{name}` needs a `kind`"))
                .with_help(format!("kinds: {}", schema::TRANSPORT_KINDS.join(", "))),
        );
    }
    (cx.error_count() == errors && !t.kind.is_empty()).then_some(t)
}

// ---- tenant transport rules ------------------------------------------------------------------

/// The transport every tenant may use and the one a forbidden selection falls back to: Ray's
/// object store. It serializes into host memory and pushes chunks over the object manager's
/// gRPC (TCP) connections (`src/ray/object_manager/`), never RDMA, and it is the path every Ray
/// object can take, so no tenant rule can forbid it.
pub const FALLBACK_TRANSPORT: &str = "object_store";

/// Whether transports of this kind move data across nodes with RDMA verbs (InfiniBand or
/// RoCE), which a tenant's `no_rdma` forbids. The one place this is decided:
///
/// * `rdma`, `gpudirect_rdma`, `host_staged_rdma`: RDMA by definition (`src/transport/plan.rs`
///   moves their network stage as verbs writes; `nics.rs` requires `rdma true` NICs).
/// * `nixl`: NIXL moves data with UCX, whose inter-node transports are RDMA verbs (`rc`, `dc`,
///   `ud` over `ib`) when an RDMA NIC is present; the model prices it as a one-sided RDMA put.
/// * `nccl`: counted as RDMA. NCCL's network layer picks its IB-verbs transport (`NET/IB`,
///   with GPUDirect RDMA when the NIC and driver allow) whenever an RDMA-capable NIC is
///   present, and falls back to sockets only when none is or when `NCCL_IB_DISABLE=1` is
///   set (NCCL environment-variable documentation). The model cannot tell a socket-only NCCL
///   from the default one, so a tenant that forbids RDMA cannot be granted NCCL honestly.
/// * `gloo`: not RDMA. Ray's Gloo collective groups use Gloo's TCP transport (host memory
///   over sockets); Gloo's ibverbs transport is not what Ray or PyTorch select by default.
/// * `object_store` (gRPC over TCP), `tcp`, `nvlink_p2p` (CUDA IPC inside one node, no NIC):
///   not RDMA.
pub fn kind_uses_rdma(kind: &str) -> bool {
    matches!(
        kind,
        "rdma" | "gpudirect_rdma" | "host_staged_rdma" | "nixl" | "nccl"
    )
}

/// The kind of a transport name: a declared `transport` block's `kind` (declared blocks
/// replace built-ins of the same name), else the built-in kind of that name.
pub fn kind_of<'a>(declared: &'a [Transport], name: &'a str) -> Option<&'a str> {
    match declared.iter().find(|t| t.name == name) {
        Some(t) => Some(t.kind.as_str()),
        None => schema::TRANSPORT_KINDS.contains(&name).then_some(name),
    }
}

/// Whether tenant `t` may use transport `name` of kind `kind`; the error names the tenant and
/// the rule. Order: the object store is always allowed ([`FALLBACK_TRANSPORT`]); then
/// `no_rdma` (see [`kind_uses_rdma`]); then the `transports` allow-list, which names
/// built-in kinds or declared transports.
pub fn tenant_allows_transport(
    t: &super::workload::Tenant,
    name: &str,
    kind: &str,
) -> Result<(), String> {
    if name == FALLBACK_TRANSPORT {
        return Ok(());
    }
    let what = if name == kind {
        format!("transport `{name}`")
    } else {
        format!("transport `{name}` (kind {kind})")
    };
    if t.no_rdma && kind_uses_rdma(kind) {
        return Err(format!(
            "tenant `{}` has `no_rdma` and {what} uses RDMA",
            t.name
        ));
    }
    if let Some(list) = &t.transports
        && !list.iter().any(|x| x == name)
    {
        return Err(format!(
            "tenant `{}` allows only `transports [{}]`; {what} is not among them",
            t.name,
            list.join(", ")
        ));
    }
    Ok(())
}

/// How a tenant's collectives cross nodes. NCCL moves inter-node data over its
/// InfiniBand-verbs transport (`NET/IB`, RDMA) whenever an RDMA NIC is present, and over its
/// socket transport (`NET/Socket`, TCP through host memory) when verbs are disabled
/// (`NCCL_IB_DISABLE=1`, NCCL's environment-variable documentation). Hops inside a node
/// (NVLink, PCIe peer-to-peer) use no NIC and no rule applies to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollectiveNet {
    /// NCCL's verbs transport at the NIC's line rate (transport `nccl`).
    Verbs,
    /// NCCL's socket transport, at `network::collective::SOCKET_SHARE` of it
    /// (transport `tcp`).
    Socket,
}

impl CollectiveNet {
    /// The transport kind its traffic counts as (`nccl` is RDMA, `tcp` is not).
    pub fn transport(self) -> &'static str {
        match self {
            CollectiveNet::Verbs => "nccl",
            CollectiveNet::Socket => "tcp",
        }
    }
}

/// The inter-node transport of collectives run by work of tenant `t`: NCCL's verbs where the
/// tenant allows `nccl`; its socket transport where it does not (`no_rdma`, or an allow-list
/// without `nccl`) but allows `tcp`; otherwise an error naming the rules. No tenant: verbs.
pub fn collective_net(t: Option<&super::workload::Tenant>) -> Result<CollectiveNet, String> {
    let Some(t) = t else {
        return Ok(CollectiveNet::Verbs);
    };
    let Err(verbs) = tenant_allows_transport(t, "nccl", "nccl") else {
        return Ok(CollectiveNet::Verbs);
    };
    match tenant_allows_transport(t, "tcp", "tcp") {
        Ok(()) => Ok(CollectiveNet::Socket),
        Err(_) => Err(format!(
            "{verbs}, and `tcp` (NCCL's socket transport) is not among its transports either, \
             so collectives across nodes have no transport"
        )),
    }
}

/// Run-time check for the simulation (e.g. `orrery transports --workload`, which forces one
/// transport on every workload): `Ok` if work of tenant `tenant` (an index into
/// [`Spec::tenants`](super::Spec), the same numbering as `placement::ClusterState::tenants`)
/// may move its objects with transport `name`; otherwise why not. An index past the tenants
/// (no tenant) allows everything; an unknown name is taken to be its own kind.
pub fn allowed_transport(spec: &super::Spec, tenant: usize, name: &str) -> Result<(), String> {
    let Some(t) = spec.tenants.get(tenant) else {
        return Ok(());
    };
    let kind = kind_of(&spec.transports, name).unwrap_or(name);
    tenant_allows_transport(t, name, kind)
}

/// What the simulation uses instead when [`allowed_transport`] refuses: the object store,
/// which every tenant may use (see [`FALLBACK_TRANSPORT`]).
pub fn fallback_transport(spec: &super::Spec, tenant: usize) -> &'static str {
    let _ = (spec, tenant);
    FALLBACK_TRANSPORT
}
