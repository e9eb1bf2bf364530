//! Readers and checks for a workload's statements: label selectors, strategies, checkpoint
//! storage, transports, compute, policies, tenants, device memory and FLOP checks, quotas.

use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::scenario::reader::{self as rd, Args, Cx};
use crate::scenario::schema;
use crate::syntax::ast::{Stmt, Value, ValueKind};
use crate::units::Bytes;
use std::collections::BTreeMap;

use super::*;

/// Ray's label selector values: `v`, `!v`, `in(a,b)`, `!in(a,b)`.
pub fn parse_label_op(s: &str) -> Option<LabelOp> {
    let s = s.trim();
    let (neg, body) = match s.strip_prefix('!') {
        Some(b) => (true, b.trim()),
        None => (false, s),
    };
    if body == "exists()" {
        return Some(if neg {
            LabelOp::DoesNotExist
        } else {
            LabelOp::Exists
        });
    }
    if let Some(inner) = body.strip_prefix("in(").and_then(|b| b.strip_suffix(')')) {
        let vals: Vec<String> = inner.split(',').map(|x| x.trim().to_string()).collect();
        if vals
            .iter()
            .any(|v| v.is_empty() || v.contains(['(', ')', '!']))
        {
            return None;
        }
        return Some(if neg {
            LabelOp::NotIn(vals)
        } else {
            LabelOp::In(vals)
        });
    }
    if body.is_empty() || body.contains(['(', ')', '!', ',']) {
        return None;
    }
    Some(if neg {
        LabelOp::NotEquals(body.into())
    } else {
        LabelOp::Equals(body.into())
    })
}

pub(in crate::scenario) fn strategy(cx: &mut Cx, v: &Value) -> Option<Strategy> {
    match &v.kind {
        ValueKind::Ident(n) if n == "DEFAULT" => Some(Strategy::Default),
        ValueKind::Ident(n) if n == "SPREAD" => Some(Strategy::Spread),
        ValueKind::Call { name, args } if name == "node_affinity" => {
            let flat: Vec<&Value> = args.iter().flatten().collect();
            let node = flat.first().and_then(|n| rd::ident(cx, n, "a node name"));
            let soft = match flat.get(1) {
                None => false,
                Some(w) if matches!(&w.kind, ValueKind::Ident(s) if s == "soft") => true,
                Some(w) => {
                    cx.error(
                        w.span,
                        "`node_affinity(NODE)` takes only `soft` after the node",
                    );
                    return None;
                }
            };
            if flat.len() > 2 {
                cx.error(
                    v.span,
                    "`node_affinity` takes a node name and optionally `soft`",
                );
                return None;
            }
            Some(Strategy::NodeAffinity {
                node: node?.to_string(),
                soft,
            })
        }
        _ => {
            let n = match &v.kind {
                ValueKind::Ident(n) | ValueKind::Call { name: n, .. } => n.as_str(),
                _ => "",
            };
            let help = if n == "node_affinity" {
                "node affinity names its node in parentheses: `node_affinity(NODE)` or \
                 `node_affinity(NODE soft)`"
                    .into()
            } else {
                did_you_mean(n, ["DEFAULT", "SPREAD", "node_affinity"]).unwrap_or_else(|| {
                    "expected `DEFAULT`, `SPREAD` or `node_affinity(NODE [soft])`".into()
                })
            };
            cx.push(
                Diagnostic::error(
                    v.span,
                    format!("unknown scheduling strategy {}", v.kind.describe()),
                )
                .with_help(help),
            );
            None
        }
    }
}

/// Where a checkpoint goes: `to NAME` (a storage of the cluster, as its index), else the only
/// storage declared; `None` when there is none. Several and no `to` is an error: which one
/// would be a guess.
pub(in crate::scenario) fn checkpoint_storage(
    cx: &mut Cx,
    scope: &ResourceScope,
    to: Option<&Value>,
    at: Span,
) -> Result<Option<usize>, ()> {
    let Some(v) = to else {
        return match scope.storages.len() {
            0 => Ok(None),
            1 => Ok(Some(0)),
            _ => {
                cx.push(
                    Diagnostic::error(
                        at,
                        format!(
                            "the cluster declares {} storages; say which one the checkpoint goes to",
                            scope.storages.len()
                        ),
                    )
                    .with_help(format!("add `to NAME`, one of: {}", scope.storages.join(", "))),
                );
                Err(())
            }
        };
    };
    let n = rd::ident(cx, v, "a storage name").ok_or(())?;
    match scope.storages.iter().position(|s| s == n) {
        Some(i) => Ok(Some(i)),
        None => {
            let help = did_you_mean(n, scope.storages.iter().map(String::as_str))
                .unwrap_or_else(|| {
                    format!("declare it in the cluster: `storage {n} {{ bandwidth 200 GB/s  attach fabric }}`")
                });
            cx.push(Diagnostic::error(v.span, format!("unknown storage `{n}`")).with_help(help));
            Err(())
        }
    }
}

/// `transport NAME`: a declared transport or a built-in kind.
pub(in crate::scenario) fn transport_ref(
    cx: &mut Cx,
    scope: &ResourceScope,
    v: &Value,
) -> Option<String> {
    let n = rd::ident(cx, v, "a transport name")?;
    if !scope.transports.contains(n) {
        let help =
            did_you_mean(n, scope.transports.iter().map(String::as_str)).unwrap_or_else(|| {
                "declare it with `transport NAME { kind KIND ... }` or name a built-in kind".into()
            });
        cx.push(Diagnostic::error(v.span, format!("unknown transport `{n}`")).with_help(help));
        return None;
    }
    Some(n.to_string())
}

pub(in crate::scenario) fn policy(cx: &mut Cx, v: &Value) -> Option<Policy> {
    Some(
        match rd::choice(cx, v, schema::POLICIES, "placement policy")? {
            "spread" => Policy::Spread,
            "topology_aware" => Policy::TopologyAware,
            _ => Policy::RayDefault,
        },
    )
}

/// `compute 1.2 PFLOP per device bf16 [memory 3 TB] [kernels 2000]` (or `per request`, or
/// no `per` in a task group). `memory` and `kernels` may come in any order after the amount.
pub(in crate::scenario) fn compute(cx: &mut Cx, a: &mut Args, per: &str) -> Option<Compute> {
    let memory = match a.opt("memory") {
        Some(v) => Some(rd::bytes(cx, v)?),
        None => None,
    };
    let kernels = match a.opt("kernels") {
        Some(v) => rd::count(cx, v, 0, MAX_KERNELS)?,
        None => 0,
    };
    let f = rd::flop(cx, a.req("an amount of work such as `1.2 PFLOP`")?)?;
    if !per.is_empty() {
        let ok = a.peek_word("per") && a.peek_word(per);
        if !ok {
            cx.error(
                a.end_span(),
                format!("expected `per {per}` after the amount"),
            );
            return None;
        }
    }
    let dt = rd::choice(
        cx,
        a.req("a dtype such as `bf16`")?,
        schema::DTYPES,
        "dtype",
    )?;
    Some(Compute {
        flop: f,
        dtype: dt.to_string(),
        memory,
        kernels,
    })
}

pub fn tenant(
    cx: &mut Cx,
    scope: &ResourceScope,
    name: &str,
    span: Span,
    stmts: &[Stmt],
) -> Tenant {
    let mut t = Tenant {
        name: name.into(),
        never_share_node_with: Vec::new(),
        only_nodes: Vec::new(),
        no_rdma: false,
        transports: None,
        accelerators: None,
        quota: Resources::new(),
        priority: 0,
        span,
        rule_spans: BTreeMap::new(),
    };
    cx.each(stmts, schema::TENANT, "a tenant", |cx, s, def| {
        cx.no_block(s);
        t.rule_spans.insert(def.key.to_string(), s.head_span());
        let mut a = Args::new(s, def);
        let _ = (|| -> Option<()> {
            match def.key {
                "transports" => {
                    let mut list = Vec::new();
                    for (n, sp) in rd::names(cx, a.req("a list of transports")?)? {
                        if !scope.transports.contains(&n) {
                            let help =
                                did_you_mean(&n, scope.transports.iter().map(String::as_str))
                                    .unwrap_or_else(|| {
                                        "name a built-in transport kind or a declared `transport`"
                                            .into()
                                    });
                            cx.push(
                                Diagnostic::error(sp, format!("unknown transport `{n}`"))
                                    .with_help(help),
                            );
                            return None;
                        }
                        list.push(n);
                    }
                    t.transports = Some(list);
                }
                "accelerators" => {
                    let mut list = Vec::new();
                    for (n, sp) in rd::names(cx, a.req("a list of accelerator kinds")?)? {
                        if !scope.accelerators.contains(&n) {
                            let help =
                                did_you_mean(&n, scope.accelerators.iter().map(String::as_str))
                                    .unwrap_or_else(|| {
                                        "name a declared or catalog accelerator".into()
                                    });
                            cx.push(
                                Diagnostic::error(sp, format!("unknown accelerator `{n}`"))
                                    .with_help(help),
                            );
                            return None;
                        }
                        list.push(n);
                    }
                    t.accelerators = Some(list);
                }
                "never_share_node_with" => {
                    t.never_share_node_with = rd::names(cx, a.req("tenant names")?)?
                        .into_iter()
                        .map(|(n, _)| n)
                        .collect();
                }
                "only_nodes" => t.only_nodes = label_selector(cx, a.req("a label selector map")?)?,
                "no_rdma" => t.no_rdma = true,
                "quota" => {
                    let m = rd::map(cx, a.req("a resource map")?)?;
                    rd::unique_keys(cx, m);
                    for (k, v) in m {
                        let name = k.name.as_str();
                        let amount = if name == "memory" || name == "object_store_memory" {
                            rd::bytes(cx, v).map(|b| b.0 as f64)
                        } else {
                            rd::number(cx, v)
                        };
                        let Some(x) = amount else { continue };
                        if !scope.max_per_node.contains_key(name)
                            && !BUILTIN_RESOURCES.contains(&name)
                        {
                            let help = did_you_mean(
                                name,
                                scope
                                    .max_per_node
                                    .keys()
                                    .map(String::as_str)
                                    .chain(BUILTIN_RESOURCES.iter().copied()),
                            );
                            cx.push(
                                Diagnostic::error(
                                    k.span,
                                    format!("no node in scope offers resource `{name}`"),
                                )
                                .with_help_opt(help),
                            );
                            continue;
                        }
                        if x < 0.0 {
                            cx.error(v.span, "a quota must not be negative");
                            continue;
                        }
                        t.quota.insert(k.name.clone(), x);
                    }
                }
                "priority" => {
                    let v = a.req("a priority")?;
                    let p = rd::number(cx, v)?;
                    if p.fract() != 0.0 || p.abs() > 1e6 {
                        cx.error(
                            v.span,
                            "priority is a whole number between -1000000 and 1000000",
                        );
                        return None;
                    }
                    t.priority = p as i64;
                }
                _ => {}
            }
            Some(())
        })();
        a.finish(cx);
    });
    if t.no_rdma
        && let Some(list) = &t.transports
    {
        for n in list {
            let kind = scope
                .transport_kinds
                .get(n)
                .map(String::as_str)
                .unwrap_or(n);
            if crate::scenario::transport::kind_uses_rdma(kind) {
                let at = t.rule_spans.get("transports").copied().unwrap_or(span);
                let mut d = Diagnostic::error(
                    at,
                    format!(
                        "tenant `{name}` has `no_rdma` but allows transport `{n}`, which uses RDMA"
                    ),
                );
                if let Some(sp) = t.rule_spans.get("no_rdma") {
                    d = d.with_secondary(*sp, "RDMA forbidden here");
                }
                cx.push(d);
            }
        }
    }
    t
}

/// `device_memory SIZE`: more than zero.
pub(in crate::scenario) fn device_memory(cx: &mut Cx, v: &Value) -> Option<Bytes> {
    let b = rd::bytes(cx, v)?;
    if b.0 == 0 {
        cx.error(v.span, "device memory must be greater than zero");
        return None;
    }
    Some(b)
}

/// Work (`what`, at `at`, with the resource requests `reqs`: one, or a placement group's
/// bundles) that declares `device_memory dm` per device. Its candidate node types are those in
/// scope that could hold a request asking for a device (every resource in amount) and pass
/// the tenant's `accelerators` rule; if none of them has enough devices of at least `dm`, it
/// could never be placed: a located error with the numbers. A request of no device is an
/// error too (the statement would mean nothing).
pub(in crate::scenario) fn check_device_memory(
    cx: &mut Cx,
    scope: &ResourceScope,
    rules: Option<&Tenant>,
    what: &str,
    reqs: &[&Resources],
    dm: Bytes,
    at: Span,
) {
    let dev: Vec<&Resources> = reqs
        .iter()
        .copied()
        .filter(|r| requests_device(r))
        .collect();
    if dev.is_empty() {
        cx.push(
            Diagnostic::error(
                at,
                format!("{what} has `device_memory` but requests no device"),
            )
            .with_help("request a device, such as `resources { GPU: 1 }`"),
        );
        return;
    }
    let allowed = rules.and_then(|t| t.accelerators.as_ref());
    let mut small: Vec<String> = Vec::new();
    let mut any = false;
    for r in dev {
        for nt in &scope.node_types {
            let holds = r
                .iter()
                .all(|(k, v)| *v <= 0.0 || nt.resources.get(k).is_some_and(|x| x >= v));
            let kinds_ok = allowed.is_none_or(|list| {
                if nt.devices.is_empty() {
                    !nt.resources
                        .iter()
                        .any(|(k, v)| UNIT_INSTANCE.contains(&k.as_str()) && *v > 0.0)
                } else {
                    nt.devices.iter().all(|d| list.contains(&d.0))
                }
            });
            if !holds || !kinds_ok {
                continue;
            }
            any = true;
            // Enough devices of each requested unit resource with at least `dm`? Units given
            // with `resources` and no device have unknown memory and count as large enough.
            let fits = r.iter().all(|(k, v)| {
                if !UNIT_INSTANCE.contains(&k.as_str()) || *v <= 0.0 {
                    return true;
                }
                let of_kind: Vec<&(String, String, Bytes, u32)> =
                    nt.devices.iter().filter(|d| &d.1 == k).collect();
                let total = nt.resources.get(k).copied().unwrap_or(0.0);
                let count = |big_only: bool| -> f64 {
                    of_kind
                        .iter()
                        .filter(|d| !big_only || d.2 >= dm)
                        .map(|d| f64::from(d.3))
                        .sum()
                };
                let big = count(true);
                let unknown = (total - count(false)).max(0.0);
                big + unknown >= v.ceil()
            });
            if fits {
                return;
            }
            for d in nt
                .devices
                .iter()
                .filter(|d| r.get(&d.1).is_some_and(|v| *v > 0.0))
            {
                let s = format!("{} has {}", d.0, crate::units::gib(d.2.0 as f64));
                if !small.contains(&s) {
                    small.push(s);
                }
            }
        }
    }
    if any {
        cx.push(
            Diagnostic::error(
                at,
                format!(
                    "{what} needs {} of device memory per device; {}",
                    crate::units::gib(dm.0 as f64),
                    small.join(", ")
                ),
            )
            .with_help("no node it could be placed on has devices that large: lower `device_memory` or request a larger accelerator"),
        );
    }
}

/// An amount of resource `k` as the DSL writes it: bytes for memory, else a number.
pub(in crate::scenario) fn show_amount(k: &str, x: f64) -> String {
    if k == "memory" || k == "object_store_memory" {
        Bytes(x.max(0.0) as u64).to_string()
    } else {
        crate::units::sig3(x)
    }
}

/// Work (`what`, requesting `r`, at `at`) that alone needs more of a resource than its
/// tenant's `quota` could never be placed: a located error. Amounts compare in Ray's
/// 1/10000 units, as placement does.
/// The FLOP-level form's own rules for service `sv` (head at `head`): a `compute` service
/// requests a device, exactly one of `compute` and `service_time`, its `device_memory` fits.
pub(in crate::scenario) fn check_flop_service(
    cx: &mut Cx,
    scope: &ResourceScope,
    rules: Option<&Tenant>,
    sv: &Service,
    stmts: &[Stmt],
    head: Span,
) {
    if sv.compute.is_some() && !requests_device(&sv.resources) {
        cx.error(
            head,
            format!(
                "service `{}` has `compute` but its replicas request no device",
                sv.name
            ),
        );
    }
    if sv.compute.is_some() == sv.service_time.is_some() {
        cx.error(
            head,
            format!(
                "service `{}` needs exactly one of `compute` and `service_time`",
                sv.name
            ),
        );
    }
    if let Some(dm) = sv.device_memory {
        check_device_memory(
            cx,
            scope,
            rules,
            &format!("service `{}`", sv.name),
            &[&sv.resources],
            dm,
            stmt_span(stmts, "device_memory", head),
        );
    }
}
/// The head of the first `key` statement of a block, else `or`.
pub(in crate::scenario) fn stmt_span(stmts: &[Stmt], key: &str, or: Span) -> Span {
    stmts
        .iter()
        .find(|x| x.key.name == key)
        .map(|x| x.head_span())
        .unwrap_or(or)
}

/// A `transport NAME` selection (at `at`) by work of tenant `rules`: a located error naming
/// the tenant and the rule if the tenant forbids it
/// ([`crate::scenario::transport::tenant_allows_transport`]).
pub(in crate::scenario) fn check_tenant_transport(
    cx: &mut Cx,
    scope: &ResourceScope,
    rules: Option<&Tenant>,
    workload: &str,
    name: &str,
    at: Span,
) {
    let Some(t) = rules else { return };
    let kind = scope
        .transport_kinds
        .get(name)
        .map(String::as_str)
        .unwrap_or(name);
    if let Err(why) = crate::scenario::transport::tenant_allows_transport(t, name, kind) {
        let rule = if t.no_rdma && crate::scenario::transport::kind_uses_rdma(kind) {
            "no_rdma"
        } else {
            "transports"
        };
        let mut d = Diagnostic::error(
            at,
            format!("workload `{workload}` may not use transport `{name}`: {why}"),
        )
        .with_help(format!(
            "select a transport tenant `{}` allows, such as `{}`",
            t.name,
            crate::scenario::transport::FALLBACK_TRANSPORT
        ));
        if let Some(sp) = t.rule_spans.get(rule) {
            d = d.with_secondary(*sp, "the tenant's rule");
        }
        cx.push(d);
    }
}
