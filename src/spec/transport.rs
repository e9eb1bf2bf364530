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
    let errors = cx.diags.len();
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
    if t.kind.is_empty() && cx.diags.len() == errors {
        cx.push(
            crate::diag::Diagnostic::error(span, format!("transport `{name}` needs a `kind`"))
                .with_help(format!("kinds: {}", schema::TRANSPORT_KINDS.join(", "))),
        );
    }
    (cx.diags[errors..].iter().all(|d| !d.is_error()) && !t.kind.is_empty()).then_some(t)
}
