//! One `workload NAME { ... }` block, read statement by statement into a [`Workload`]: its
//! policy and transport here, each item by its reader in `items.rs` (placement groups by
//! `scenario::placement_group`), then the checks that need the whole block (`after`
//! names and cycles, device memory on placement groups, placement groups named).

use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::scenario::reader::{self as rd, Args, Cx};
use crate::scenario::schema;
use crate::syntax::ast::Stmt;
use std::collections::BTreeMap;

use super::*;

/// Workload `name`'s block (`body`), read with the resources, transports and hardware in
/// `scope`, for tenant `tenant` under its `rules`; errors go to `cx`.
pub fn workload(
    cx: &mut Cx,
    scope: &ResourceScope,
    name: &str,
    span: Span,
    tenant: Option<String>,
    rules: Option<&Tenant>,
    stmts: &[Stmt],
) -> Workload {
    let mut w = Workload {
        name: name.into(),
        tenant,
        policy: Policy::RayDefault,
        tasks: Vec::new(),
        actors: Vec::new(),
        placement_groups: Vec::new(),
        training: Vec::new(),
        services: Vec::new(),
        transport: None,
        span,
    };
    let mut names: BTreeMap<String, Span> = BTreeMap::new();
    let mut pending_after: Vec<(usize, Vec<(String, Span)>)> = Vec::new();
    let mut pending_pg: Vec<(usize, String, Span)> = Vec::new();
    let mut pending_dm: Vec<(usize, Span)> = Vec::new();
    cx.each(stmts, schema::WORKLOAD, "a workload", |cx, s, def| {
        let mut a = Args::new(s, def);
        let _ = (|| -> Option<()> {
            if def.key == "policy" {
                cx.no_block(s);
                w.policy = policy(cx, a.req("a policy")?)?;
                return Some(());
            }
            if def.key == "transport" {
                cx.no_block(s);
                let n = transport_ref(cx, scope, a.req("a transport name")?)?;
                check_tenant_transport(cx, scope, rules, name, &n, s.head_span());
                w.transport = Some(n);
                return Some(());
            }
            let nv = a.req("a name")?;
            let item = rd::ident(cx, nv, "a name")?.to_string();
            if let Some(first) = names.get(&item) {
                cx.push(
                    Diagnostic::error(
                        nv.span,
                        format!("`{item}` is already defined in workload `{name}`"),
                    )
                    .with_secondary(*first, "first defined here"),
                );
                return None;
            }
            names.insert(item.clone(), nv.span);
            let blk = cx.block(s)?;
            match def.key {
                "tasks" => {
                    let st = State {
                        w: &mut w,
                        scope,
                        rules,
                        name,
                        pending_after: &mut pending_after,
                        pending_pg: &mut pending_pg,
                        pending_dm: &mut pending_dm,
                    };
                    items::task_group(cx, st, &mut a, item, blk, s)?;
                }
                "actor" => {
                    let st = State {
                        w: &mut w,
                        scope,
                        rules,
                        name,
                        pending_after: &mut pending_after,
                        pending_pg: &mut pending_pg,
                        pending_dm: &mut pending_dm,
                    };
                    items::actor_group(cx, st, &mut a, item, blk, s)?;
                }
                "placement_group" => {
                    let g = crate::scenario::placement_group::placement_group(
                        cx, scope, rules, &mut a, s, blk, item,
                    )?;
                    w.placement_groups.push(g);
                }
                "training" => {
                    let st = State {
                        w: &mut w,
                        scope,
                        rules,
                        name,
                        pending_after: &mut pending_after,
                        pending_pg: &mut pending_pg,
                        pending_dm: &mut pending_dm,
                    };
                    items::training_job(cx, st, &mut a, item, blk, s)?;
                }
                "service" => {
                    let st = State {
                        w: &mut w,
                        scope,
                        rules,
                        name,
                        pending_after: &mut pending_after,
                        pending_pg: &mut pending_pg,
                        pending_dm: &mut pending_dm,
                    };
                    items::service(cx, st, item, blk, s)?;
                }
                _ => {}
            }
            Some(())
        })();
        a.finish(cx);
    });
    crate::scenario::payloads::check_tensor_targets(cx, name, &w.actors);
    // Dependencies between task groups must name task groups and form no cycle.
    let task_names: Vec<String> = w.tasks.iter().map(|t| t.name.clone()).collect();
    for (i, after) in &pending_after {
        for (dep, sp) in after {
            if !task_names.contains(dep) {
                let help = did_you_mean(dep, task_names.iter().map(String::as_str));
                cx.push(
                    Diagnostic::error(*sp, format!("no task group `{dep}` in workload `{name}`"))
                        .with_help_opt(help),
                );
            } else if dep == &w.tasks[*i].name {
                cx.error(*sp, format!("task group `{dep}` cannot run after itself"));
            }
        }
    }
    if let Some(cycle) = find_cycle(&w.tasks) {
        cx.error(
            span,
            format!(
                "task groups depend on each other in a cycle: {}",
                cycle.join(" → ")
            ),
        );
    }
    crate::scenario::layout::fit_memory(cx, scope, &mut w);
    // A training job's device memory applies to each device of its placement group's bundles.
    for (i, at) in pending_dm {
        let t = &w.training[i];
        let (Some(dm), Some(pg)) = (
            t.device_memory,
            w.placement_groups
                .iter()
                .find(|p| p.name == t.placement_group),
        ) else {
            continue;
        };
        if pg.slice {
            continue;
        }
        let bundles: Vec<&Resources> = pg.bundles.iter().collect();
        check_device_memory(
            cx,
            scope,
            rules,
            &format!("training `{}`", t.name),
            &bundles,
            dm,
            at,
        );
    }
    crate::scenario::layout::check_devices(cx, scope, &w);
    let pgs: Vec<&str> = w.placement_groups.iter().map(|p| p.name.as_str()).collect();
    for (_, pg, sp) in pending_pg {
        if !pgs.contains(&pg.as_str()) {
            let help = did_you_mean(&pg, pgs.iter().copied()).unwrap_or_else(|| {
                "declare it with `placement_group NAME strategy ... { bundle ... }`".into()
            });
            cx.push(
                Diagnostic::error(
                    sp,
                    format!("no placement group `{pg}` in workload `{name}`"),
                )
                .with_help(help),
            );
        }
    }
    w
}

/// What the readers of a workload block's items share: the workload being built, what it
/// may name, its tenant's rules, and the checks that wait for the whole block.
pub(super) struct State<'a> {
    pub(super) w: &'a mut Workload,
    pub(super) scope: &'a ResourceScope,
    pub(super) rules: Option<&'a Tenant>,
    pub(super) name: &'a str,
    pub(super) pending_after: &'a mut Vec<(usize, Vec<(String, Span)>)>,
    pub(super) pending_pg: &'a mut Vec<(usize, String, Span)>,
    pub(super) pending_dm: &'a mut Vec<(usize, Span)>,
}
