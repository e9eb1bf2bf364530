//! Checks over a whole workload and the tenants: device requests, restart and rate values,
//! cycles in the task groups' `after` graph, tenant references, requests against quotas.

use crate::diag::{Diagnostic, did_you_mean};
use crate::scenario::reader::{self as rd, Cx};
use crate::syntax::ast::Value;
use crate::units::EventRate;
use std::collections::{BTreeMap, BTreeSet};

use super::*;

/// Whether a request asks for a device (a unit-instance resource such as GPU or TPU).
pub fn requests_device(r: &Resources) -> bool {
    r.iter()
        .any(|(k, v)| UNIT_INSTANCE.contains(&k.as_str()) && *v > 0.0)
}

pub(in crate::scenario) fn restarts(cx: &mut Cx, v: &Value) -> Option<i64> {
    let x = rd::number(cx, v)?;
    if x.fract() != 0.0 || !(-1.0..=1e6).contains(&x) {
        cx.error(
            v.span,
            "expected a whole number of restarts, or -1 for unlimited",
        );
        return None;
    }
    Some(x as i64)
}

pub(in crate::scenario) fn positive_rate(cx: &mut Cx, v: &Value) -> Option<EventRate> {
    let r = rd::event_rate(cx, v)?;
    if r.0 <= 0.0 {
        cx.error(v.span, "an arrival rate must be greater than zero");
        return None;
    }
    Some(r)
}

/// A cycle among `after` dependencies, if any (names in order).
pub(in crate::scenario) fn find_cycle(tasks: &[TaskGroup]) -> Option<Vec<String>> {
    let idx: BTreeMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    // 0 = unvisited, 1 = on stack, 2 = done
    let mut state = vec![0u8; tasks.len()];
    let mut stack: Vec<usize> = Vec::new();
    fn visit(
        i: usize,
        tasks: &[TaskGroup],
        idx: &BTreeMap<&str, usize>,
        state: &mut [u8],
        stack: &mut Vec<usize>,
    ) -> Option<Vec<String>> {
        state[i] = 1;
        stack.push(i);
        for d in &tasks[i].after {
            let Some(&j) = idx.get(d.as_str()) else {
                continue;
            };
            if j == i {
                continue;
            }
            if state[j] == 1 {
                let from = stack.iter().position(|&k| k == j).unwrap_or(0);
                let mut c: Vec<String> = stack[from..]
                    .iter()
                    .map(|&k| tasks[k].name.clone())
                    .collect();
                c.push(tasks[j].name.clone());
                return Some(c);
            }
            if state[j] == 0
                && let Some(c) = visit(j, tasks, idx, state, stack)
            {
                return Some(c);
            }
        }
        stack.pop();
        state[i] = 2;
        None
    }
    for i in 0..tasks.len() {
        if state[i] == 0
            && let Some(c) = visit(i, tasks, &idx, &mut state, &mut stack)
        {
            return Some(c);
        }
    }
    None
}

/// Tenant names referenced by `never_share_node_with` must exist.
pub fn check_tenant_refs(cx: &mut Cx, tenants: &[Tenant]) {
    let names: BTreeSet<&str> = tenants.iter().map(|t| t.name.as_str()).collect();
    for t in tenants {
        for other in &t.never_share_node_with {
            if !names.contains(other.as_str()) {
                let help = did_you_mean(other, names.iter().copied());
                cx.push(
                    Diagnostic::error(
                        t.span,
                        format!("tenant `{}` refers to unknown tenant `{other}`", t.name),
                    )
                    .with_help_opt(help),
                );
            }
        }
    }
}

/// A request of `what` against its tenant's quota (`rules`): needing more of a resource than
/// the quota (to Ray's 0.0001) is an error, since it could never be placed.
pub(in crate::scenario) fn check_quota(
    cx: &mut Cx,
    rules: Option<&Tenant>,
    what: &str,
    r: &Resources,
    at: Span,
) {
    let Some(t) = rules else { return };
    let fixed = |x: f64| (x * 10_000.0).round();
    for (k, q) in &t.quota {
        let need = r.get(k).copied().unwrap_or(0.0);
        if fixed(need) > fixed(*q) {
            let mut d = Diagnostic::error(
                at,
                format!(
                    "{what} needs {} `{k}`, more than tenant `{}`'s quota of {}; it could never be placed",
                    show_amount(k, need),
                    t.name,
                    show_amount(k, *q)
                ),
            );
            if let Some(sp) = t.rule_spans.get("quota") {
                d = d.with_secondary(*sp, "the quota");
            }
            cx.push(d);
        }
    }
}
