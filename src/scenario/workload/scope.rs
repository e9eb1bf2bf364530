//! What resource requests may name in scope (the biggest node's amounts, the transports,
//! storages, accelerators and node types a workload may use), and reading a request.

use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::scenario::reader::{self as rd, Cx};
use crate::syntax::ast::{MapKey, Value};
use crate::units::Bytes;
use std::collections::{BTreeMap, BTreeSet};

use super::*;

/// What resource requests may name, and what the biggest node offers of each; which
/// transports a `transport` selection may name.
pub struct ResourceScope {
    /// Largest amount of each resource on any one node type in scope.
    pub max_per_node: BTreeMap<String, f64>,
    /// Declared transports and the built-in kinds.
    pub transports: BTreeSet<String>,
    /// The cluster's storage targets, in declaration order (checkpoints name them).
    pub storages: Vec<String>,
    /// The kind of each name in `transports` (a built-in kind is its own kind).
    pub transport_kinds: BTreeMap<String, String>,
    /// Every accelerator name (declared and catalog).
    pub accelerators: BTreeSet<String>,
    /// The node types in scope (the cluster's, or all when there is none).
    pub node_types: Vec<ScopeNodeType>,
    /// Whether `node_types` are a cluster's (else every known type: a workload file
    /// included by clusters it cannot see, so checks that need the hardware are lenient).
    pub cluster_scoped: bool,
    /// The scenario's declared models (training jobs may also name catalog models).
    pub models: crate::scenario::model::Declared,
    /// Chips of each TPU-style slice of the cluster: the devices a slice group gets.
    pub slice_chips: Vec<u64>,
}

/// What a node type offers, for checks that need more than the per-resource maximum.
pub struct ScopeNodeType {
    pub name: String,
    /// [`crate::scenario::load::node_resources`].
    pub resources: BTreeMap<String, f64>,
    /// Per device group: accelerator name, its Ray resource, its memory per device, the
    /// number of devices.
    pub devices: Vec<(String, String, Bytes, u32)>,
}

impl ResourceScope {
    fn check(&self, cx: &mut Cx, key: &MapKey, amount: f64, span: Span) -> bool {
        let name = key.name.as_str();
        if let Some(t) = name.strip_prefix("accelerator_type:") {
            if !self.max_per_node.contains_key(name) {
                let types: Vec<&str> = self
                    .max_per_node
                    .keys()
                    .filter_map(|k| k.strip_prefix("accelerator_type:"))
                    .collect();
                let help = did_you_mean(t, types.iter().copied())
                    .map(|h| {
                        h.replace('`', "`accelerator_type:")
                            .replacen("`accelerator_type:", "`", 1)
                    })
                    .unwrap_or_else(|| {
                        format!("accelerator types in this cluster: {}", types.join(", "))
                    });
                cx.push(
                    Diagnostic::error(key.span, format!("no node offers accelerator type `{t}`"))
                        .with_help(help),
                );
                return false;
            }
        } else if !self.max_per_node.contains_key(name) && !BUILTIN_RESOURCES.contains(&name) {
            // Past the cap the diagnostic is only counted: skip the search over every declared
            // resource, which made 50,000 unknown names against 50,000 declared quadratic.
            let help = (!cx.full())
                .then(|| {
                    did_you_mean(
                        name,
                        self.max_per_node
                            .keys()
                            .map(String::as_str)
                            .chain(BUILTIN_RESOURCES.iter().copied()),
                    )
                })
                .flatten()
                .unwrap_or_else(|| {
                    "declare custom resources on node types with `resources { NAME: N }`".into()
                });
            cx.push(
                Diagnostic::error(
                    key.span,
                    format!("no node in scope offers resource `{name}`"),
                )
                .with_help(help),
            );
            return false;
        }
        if amount < 0.0 {
            cx.error(span, "a resource request must not be negative");
            return false;
        }
        if UNIT_INSTANCE.contains(&name) && amount > 1.0 && amount.fract() != 0.0 {
            cx.push(
                Diagnostic::error(span, format!("`{name}: {amount}`: requests above 1 must be whole"))
                    .with_help("Ray tracks these per device: a fraction shares one device, more than one takes whole devices"),
            );
            return false;
        }
        if (amount * 10_000.0).fract().abs() > 1e-9
            && name != "memory"
            && name != "object_store_memory"
        {
            cx.push(Diagnostic::warning(
                span,
                format!("Ray keeps resource amounts to 0.0001; `{amount}` will be rounded"),
            ));
        }
        true
    }
}

/// `{ CPU: 1, GPU: 0.5, memory: 4 GiB }`. Byte resources take sizes, the rest plain numbers.
pub(in crate::scenario) fn resources(
    cx: &mut Cx,
    scope: &ResourceScope,
    v: &Value,
) -> Option<Resources> {
    let m = rd::map(cx, v)?;
    if !rd::unique_keys(cx, m) {
        return None;
    }
    let mut out = Resources::new();
    let mut ok = true;
    for (k, val) in m {
        let amount = if k.name == "memory" || k.name == "object_store_memory" {
            rd::bytes(cx, val).map(|b| b.0 as f64)
        } else {
            rd::number(cx, val)
        };
        match amount {
            Some(x) if scope.check(cx, k, x, val.span) => {
                out.insert(k.name.clone(), x);
            }
            _ => ok = false,
        }
    }
    // A request no node could ever hold is found after resolving, on the cluster itself
    // (`crate::placement::feasible`, called by `crate::scenario::load`).
    ok.then_some(out)
}

pub(in crate::scenario) fn label_selector(cx: &mut Cx, v: &Value) -> Option<Vec<LabelConstraint>> {
    let m = rd::map(cx, v)?;
    rd::unique_keys(cx, m);
    let mut out = Vec::new();
    for (k, val) in m {
        let s = rd::ident_or_string(cx, val, "a label value")?;
        let op = parse_label_op(s).or_else(|| {
            cx.push(
                Diagnostic::error(val.span, format!("`{s}` is not a label condition"))
                    .with_help("write \"value\", \"!value\", \"in(a, b)\", \"!in(a, b)\", \"exists()\" or \"!exists()\""),
            );
            None
        })?;
        out.push(LabelConstraint {
            key: k.name.clone(),
            op,
        });
    }
    Some(out)
}
