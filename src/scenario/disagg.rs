//! `disaggregate prefill N decode M [transport T]` in an LLM service (issue 12, serving):
//! prefill/decode disaggregation, the question Ray Serve's PD serving poses
//! (`ray/llm/_internal/serve/deployments/prefill_decode_disagg/`: a prefill deployment, a
//! decode deployment and a proxy, the KV cache moved by vLLM's `NixlConnector`).
//!
//! The service's replicas become two pools: the first `N` prefill, the next `M` decode, each
//! replica with the service's `parallel tp` and `resources` (one tp for both pools: Ray
//! Serve takes an `LLMConfig` per pool, which could differ; here they do not). The KV cache
//! moves with transport `T` — `nixl` by default, Ray Serve's default connector — which must
//! move device memory to device memory between nodes: `rdma` and `tcp` (host memory at both
//! ends, no device copies priced) and `nvlink_p2p` (one node's devices only) are errors, as
//! is any transport the workload's tenant forbids (checked in `workload.rs`).

use super::reader::{self as rd, Args, Cx};
use super::workload::ResourceScope;
use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::syntax::ast::{Stmt, Value};
use serde::Serialize;

/// Words of `disaggregate`.
pub const WORDS: &[&str] = &["prefill", "decode", "transport"];
/// The KV transport when none is named: Ray Serve's PD default, vLLM's `NixlConnector`.
pub const DEFAULT_TRANSPORT: &str = "nixl";
/// Most replicas in one pool.
pub const MAX_POOL: u64 = 100_000;

/// A disaggregated service's pools and the KV cache's transport.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Disagg {
    pub prefill: u32,
    pub decode: u32,
    /// A built-in kind or a declared transport.
    pub transport: String,
    /// The `disaggregate` statement, where tenant transport errors point.
    #[serde(skip)]
    pub span: Span,
}

/// The statement as read, its transport checked once the scope is known.
#[derive(Debug, Clone)]
pub struct Pending {
    prefill: u32,
    decode: u32,
    transport: Option<Value>,
    span: Span,
}

/// Why a transport kind cannot carry a KV cache between the pools, if it cannot.
pub fn incompatible(kind: &str) -> Option<&'static str> {
    match kind {
        "rdma" | "tcp" => Some(
            "it moves host memory between hosts, and a KV cache lives in device memory at both ends",
        ),
        "nvlink_p2p" => Some(
            "CUDA IPC reaches the devices of one node only, and the pools may be placed on different nodes",
        ),
        _ => None,
    }
}

/// Read `disaggregate prefill N decode M [transport T]` (at `span`).
pub fn read(cx: &mut Cx, a: &mut Args, span: Span) -> Option<Pending> {
    let p = rd::count(cx, a.need("prefill", "prefill N")?, 1, MAX_POOL)? as u32;
    let d = rd::count(cx, a.need("decode", "decode M")?, 1, MAX_POOL)? as u32;
    let transport = a.opt("transport").cloned();
    Some(Pending {
        prefill: p,
        decode: d,
        transport,
        span,
    })
}

/// Check the pools against the service's block (`replicas` excluded: the pools count the
/// replicas) and the transport against the scope.
pub fn finish(cx: &mut Cx, scope: &ResourceScope, p: Pending, stmts: &[Stmt]) -> Option<Disagg> {
    if let Some(s) = stmts.iter().find(|s| s.key.name == "replicas") {
        cx.push(
            Diagnostic::error(
                s.head_span(),
                "`replicas` cannot be used with `disaggregate`",
            )
            .with_secondary(p.span, "the pools")
            .with_help("the prefill and decode pools give the replica count"),
        );
        return None;
    }
    let name = match &p.transport {
        None => DEFAULT_TRANSPORT.to_string(),
        Some(v) => {
            let n = rd::ident(cx, v, "a transport name")?;
            if !scope.transports.contains(n) {
                let help = did_you_mean(n, scope.transports.iter().map(String::as_str))
                    .unwrap_or_else(|| {
                        "declare it with `transport NAME { kind KIND ... }` or name a built-in kind"
                            .into()
                    });
                cx.push(
                    Diagnostic::error(v.span, format!("unknown transport `{n}`")).with_help(help),
                );
                return None;
            }
            n.to_string()
        }
    };
    let kind = scope
        .transport_kinds
        .get(&name)
        .map_or(name.as_str(), String::as_str);
    if let Some(why) = incompatible(kind) {
        let at = p.transport.as_ref().map_or(p.span, |v| v.span);
        let what = if kind == name {
            format!("transport `{name}`")
        } else {
            format!("transport `{name}` (kind {kind})")
        };
        cx.push(
            Diagnostic::error(at, format!("{what} cannot move a KV cache between the pools: {why}"))
                .with_help("use `nixl` (Ray Serve's default), `nccl`, `gpudirect_rdma`, `host_staged_rdma`, `gloo` or `object_store`"),
        );
        return None;
    }
    Some(Disagg {
        prefill: p.prefill,
        decode: p.decode,
        transport: name,
        span: p.span,
    })
}
