//! Data that actor calls and service requests move on the run's network: an actor's
//! `tensor BYTES to NAME` (each call's result sent to an actor of group NAME of the same
//! workload) and a service's `request BYTES` / `response BYTES` (per request, between the
//! cluster's ingress and the replica). What they mean at run time is in `sim::tensors` and
//! `sim::payloads`; here they are read and checked.

use super::reader::{self as rd, Args, Cx};
use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::syntax::ast::Value;
use crate::units::Bytes;
use serde::Serialize;

/// `tensor BYTES to NAME`: the tensor each method call of an actor sends, and the actor group
/// that receives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tensor {
    pub bytes: Bytes,
    /// An actor group of the same workload (checked), not the sender's own.
    pub to: String,
    #[serde(skip)]
    pub to_span: Span,
}

/// A size of data to move: greater than zero (`what` names it in the error).
pub fn payload_bytes(cx: &mut Cx, v: &Value, what: &str) -> Option<Bytes> {
    let b = rd::bytes(cx, v)?;
    if b.0 == 0 {
        cx.error(
            v.span,
            format!("{what} must be greater than zero (leave the statement out to move nothing)"),
        );
        return None;
    }
    Some(b)
}

/// `tensor BYTES to NAME`.
pub fn tensor(cx: &mut Cx, b: &mut Args) -> Option<Tensor> {
    let bytes = payload_bytes(cx, b.req("a tensor size")?, "a tensor size")?;
    let to = b.need("to", "to ACTOR_GROUP")?;
    let name = rd::ident(cx, to, "an actor group name")?.to_string();
    Some(Tensor {
        bytes,
        to: name,
        to_span: to.span,
    })
}

/// Each actor's `tensor ... to NAME` must name another actor group of workload `workload`.
pub fn check_tensor_targets(cx: &mut Cx, workload: &str, actors: &[super::workload::Actor]) {
    let names: Vec<&str> = actors.iter().map(|a| a.name.as_str()).collect();
    for a in actors {
        let Some(t) = &a.tensor else { continue };
        if t.to == a.name {
            cx.push(
                Diagnostic::error(
                    t.to_span,
                    format!("actor `{}` sends its tensors to itself", a.name),
                )
                .with_help("name another actor group of the workload: the one its results go to"),
            );
        } else if !names.contains(&t.to.as_str()) {
            let help = did_you_mean(&t.to, names.iter().copied().filter(|n| *n != a.name))
                .unwrap_or_else(|| {
                    "declare the receiving actors with `actor NAME x N { ... }` in this workload"
                        .into()
                });
            cx.push(
                Diagnostic::error(
                    t.to_span,
                    format!("no actor group `{}` in workload `{workload}`", t.to),
                )
                .with_help(help),
            );
        }
    }
}
