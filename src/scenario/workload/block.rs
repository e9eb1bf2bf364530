//! One `workload NAME { ... }` block, read statement by statement into a [`Workload`].
//!
//! Why over 600 lines: one function, `workload`, which reads every statement kind a block
//! may hold; it is on tests/all/tidy.rs's LONG_FUNCTIONS list, which only shrinks.

use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::scenario::reader::{self as rd, Args, Cx, MAX_COUNT};
use crate::scenario::schema;
use crate::syntax::ast::Stmt;
use crate::units::{Bytes, Duration, EventRate};
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
                    let count = rd::count(cx, a.need("x", "x N")?, 1, MAX_COUNT)?;
                    let after = match a.opt("after") {
                        Some(v) => rd::names(cx, v)?,
                        None => Vec::new(),
                    };
                    let mut g = TaskGroup {
                        name: item,
                        count,
                        after: after.iter().map(|(n, _)| n.clone()).collect(),
                        resources: Resources::from([("CPU".to_string(), 1.0)]),
                        duration: None,
                        compute: None,
                        output: Bytes(0),
                        strategy: Strategy::Default,
                        label_selector: Vec::new(),
                        fallbacks: Vec::new(),
                        retries: 3,
                        retry_delay: Duration(0),
                        transport: None,
                        device_memory: None,
                        span: stmt_span(&blk.stmts, "resources", s.head_span()),
                    };
                    let mut fb_spans = Vec::new();
                    cx.each(&blk.stmts, schema::TASK, "a task group", |cx, s2, def2| {
                        cx.no_block(s2);
                        let mut b = Args::new(s2, def2);
                        let _ = (|| -> Option<()> {
                            match def2.key {
                                "resources" => {
                                    g.resources = resources(cx, scope, b.req("a resource map")?)?
                                }
                                "duration" => {
                                    g.duration = Some(rd::duration(cx, b.req("a time")?)?)
                                }
                                "compute" => g.compute = Some(compute(cx, &mut b, "")?),
                                "output" => g.output = rd::bytes(cx, b.req("a size")?)?,
                                "strategy" => g.strategy = strategy(cx, b.req("a strategy")?)?,
                                "label_selector" => {
                                    g.label_selector =
                                        label_selector(cx, b.req("a label selector")?)?
                                }
                                "fallback" => {
                                    fb_spans.push(s2.head_span());
                                    g.fallbacks.push(crate::scenario::task_fallback::fallback(cx, &mut b)?)
                                }
                                "retries" => {
                                    g.retries = rd::count(cx, b.req("a count")?, 0, 1000)? as u32
                                }
                                "retry_delay" => g.retry_delay = rd::duration(cx, b.req("a time")?)?,
                                "device_memory" => {
                                    g.device_memory = Some(device_memory(cx, b.req("a size")?)?)
                                }
                                "transport" => {
                                    let n = transport_ref(cx, scope, b.req("a transport name")?)?;
                                    check_tenant_transport(cx, scope, rules, name, &n, s2.head_span());
                                    g.transport = Some(n);
                                }
                                _ => {}
                            }
                            Some(())
                        })();
                        b.finish(cx);
                    });
                    if fb_spans.len() == g.fallbacks.len() {
                        crate::scenario::task_fallback::check(
                            cx,
                            &format!("task group `{}`", g.name),
                            &g.label_selector,
                            &g.fallbacks,
                            &fb_spans,
                        );
                    }
                    if g.compute.is_some() && !requests_device(&g.resources) {
                        cx.push(
                            Diagnostic::error(s.head_span(), format!("task group `{}` has `compute` but requests no device", g.name))
                                .with_help("request a device, such as `resources { CPU: 1, GPU: 1 }`, or give a `duration` instead"),
                        );
                    }
                    if g.duration.is_none() && g.compute.is_none() {
                        cx.error(
                            s.head_span(),
                            format!("task group `{}` needs `duration` or `compute`", g.name),
                        );
                    }
                    if let Some(dm) = g.device_memory {
                        check_device_memory(
                            cx,
                            scope,
                            rules,
                            &format!("task group `{}`", g.name),
                            &[&g.resources],
                            dm,
                            stmt_span(&blk.stmts, "device_memory", s.head_span()),
                        );
                    }
                    check_quota(
                        cx,
                        rules,
                        &format!("a task of group `{}`", g.name),
                        &g.resources,
                        stmt_span(&blk.stmts, "resources", s.head_span()),
                    );
                    pending_after.push((w.tasks.len(), after));
                    w.tasks.push(g);
                }
                "actor" => {
                    let count = match a.opt("x") {
                        Some(v) => rd::count(cx, v, 1, MAX_COUNT)?,
                        None => 1,
                    };
                    let mut ac = Actor {
                        name: item,
                        count,
                        resources: None,
                        calls: 0,
                        call_duration: None,
                        max_restarts: 0,
                        max_task_retries: 0,
                        strategy: Strategy::Default,
                        label_selector: Vec::new(),
                        fallbacks: Vec::new(),
                        transport: None,
                        device_memory: None,
                        tensor: None,
                        span: stmt_span(&blk.stmts, "resources", s.head_span()),
                    };
                    let mut fb_spans = Vec::new();
                    cx.each(&blk.stmts, schema::ACTOR, "an actor", |cx, s2, def2| {
                        cx.no_block(s2);
                        let mut b = Args::new(s2, def2);
                        let _ = (|| -> Option<()> {
                            match def2.key {
                                "resources" => {
                                    ac.resources = Some(resources(cx, scope, b.req("a resource map")?)?)
                                }
                                "calls" => ac.calls = rd::count(cx, b.req("a count")?, 0, 1 << 40)?,
                                "call_duration" => {
                                    ac.call_duration = Some(rd::duration(cx, b.req("a time")?)?)
                                }
                                "max_restarts" => {
                                    ac.max_restarts = restarts(cx, b.req("a count or -1")?)?
                                }
                                "max_task_retries" => {
                                    ac.max_task_retries = restarts(cx, b.req("a count or -1")?)?
                                }
                                "strategy" => ac.strategy = strategy(cx, b.req("a strategy")?)?,
                                "device_memory" => {
                                    ac.device_memory = Some(device_memory(cx, b.req("a size")?)?)
                                }
                                "transport" => {
                                    let n = transport_ref(cx, scope, b.req("a transport name")?)?;
                                    check_tenant_transport(cx, scope, rules, name, &n, s2.head_span());
                                    ac.transport = Some(n);
                                }
                                "label_selector" => {
                                    ac.label_selector =
                                        label_selector(cx, b.req("a label selector")?)?
                                }
                                "fallback" => {
                                    fb_spans.push(s2.head_span());
                                    ac.fallbacks.push(crate::scenario::task_fallback::fallback(cx, &mut b)?)
                                }
                                "tensor" => ac.tensor = Some(crate::scenario::payloads::tensor(cx, &mut b)?),
                                _ => {}
                            }
                            Some(())
                        })();
                        b.finish(cx);
                    });
                    if fb_spans.len() == ac.fallbacks.len() {
                        crate::scenario::task_fallback::check(
                            cx,
                            &format!("actor `{}`", ac.name),
                            &ac.label_selector,
                            &ac.fallbacks,
                            &fb_spans,
                        );
                    }
                    if ac.calls > 0 && ac.call_duration.is_none() {
                        cx.error(
                            s.head_span(),
                            format!("actor `{}` makes calls but has no `call_duration`", ac.name),
                        );
                    }
                    let placed = ac
                        .resources
                        .clone()
                        .unwrap_or_else(|| Resources::from([("CPU".to_string(), 1.0)]));
                    if let Some(dm) = ac.device_memory {
                        check_device_memory(
                            cx,
                            scope,
                            rules,
                            &format!("actor `{}`", ac.name),
                            &[&placed],
                            dm,
                            stmt_span(&blk.stmts, "device_memory", s.head_span()),
                        );
                    }
                    check_quota(
                        cx,
                        rules,
                        &format!("actor `{}`", ac.name),
                        &placed,
                        stmt_span(&blk.stmts, "resources", s.head_span()),
                    );
                    w.actors.push(ac);
                }
                "placement_group" => {
                    let g = crate::scenario::placement_group::placement_group(
                        cx,
                        scope,
                        rules,
                        &mut a,
                        s,
                        blk,
                        item,
                    )?;
                    w.placement_groups.push(g);
                }
                "training" => {
                    let pgv = a.need("on", "on PLACEMENT_GROUP")?;
                    let pg = rd::ident(cx, pgv, "a placement group name")?.to_string();
                    let steps = rd::count(cx, a.need("steps", "steps N")?, 1, 1_000_000_000)?;
                    let mut t = Training {
                        name: item,
                        placement_group: pg.clone(),
                        steps,
                        compute: None,
                        collectives: Vec::new(),
                        checkpoint: None,
                        device_memory: None,
                        model: None,
                        span: s.head_span(),
                    };
                    let mut jm = crate::scenario::layout::JobModel::default();
                    cx.each(
                        &blk.stmts,
                        schema::TRAINING,
                        "a training job",
                        |cx, s2, def2| {
                            cx.no_block(s2);
                            let mut b = Args::new(s2, def2);
                            let _ = (|| -> Option<()> {
                                match def2.key {
                                    "compute" => t.compute = Some(compute(cx, &mut b, "device")?),
                                    "device_memory" => {
                                        t.device_memory =
                                            Some(device_memory(cx, b.req("a size")?)?)
                                    }
                                    "checkpoint" => {
                                        let every =
                                            rd::duration(cx, b.need("every", "every TIME")?)?;
                                        let size = rd::bytes(cx, b.need("size", "size BYTES")?)?;
                                        if every.0 == 0 {
                                            cx.error(
                                                s2.head_span(),
                                                "checkpoint interval must be greater than zero",
                                            );
                                            return None;
                                        }
                                        let to = b.opt("to");
                                        let storage =
                                            checkpoint_storage(cx, scope, to, s2.head_span())
                                                .ok()?;
                                        t.checkpoint = Some(Checkpoint {
                                            every,
                                            size,
                                            storage,
                                        });
                                    }
                                    k if crate::scenario::layout::KEYS.contains(&k) => {
                                        jm.stmt(cx, &scope.models, s2, def2.key, &mut b)?
                                    }
                                    op => {
                                        let bytes = rd::bytes(cx, b.req("a message size")?)?;
                                        let mut word = |key, list, what| match b.opt(key) {
                                            Some(v) => rd::choice(cx, v, list, what)
                                                .map(|w| Some(w.to_string())),
                                            None => Some(None),
                                        };
                                        let algo = word(
                                            "algo",
                                            schema::COLLECTIVE_ALGOS,
                                            "collective algorithm",
                                        )?;
                                        let proto =
                                            word("proto", schema::COLLECTIVE_PROTOS, "NCCL protocol")?;
                                        let hierarchical = b.flag("hierarchical");
                                        // NCCL has only Simple for these (NVLS; its send/recv
                                        // for all-to-all); hierarchical is not NCCL's, run Simple.
                                        let simple_only = if algo.as_deref() == Some("nvls") {
                                            Some("`algo nvls` (NCCL runs NVLS with Simple only)")
                                        } else if algo.as_deref() == Some("nvls_tree") {
                                            Some("`algo nvls_tree` (NCCL runs NVLS trees with Simple only)")
                                        } else if op == "alltoall" {
                                            Some("`alltoall` (NCCL's point-to-point copies)")
                                        } else if hierarchical {
                                            Some("`hierarchical` (not an NCCL algorithm; it runs Simple)")
                                        } else {
                                            None
                                        };
                                        if let Some(what) = simple_only
                                            && proto.as_deref().is_some_and(|p| p != "simple")
                                        {
                                            cx.error(
                                                s2.head_span(),
                                                format!("{what} takes `proto simple` or none"),
                                            );
                                            return None;
                                        }
                                        t.collectives.push(Collective {
                                            op: op.to_string(),
                                            bytes,
                                            algo,
                                            proto,
                                            hierarchical,
                                        });
                                    }
                                }
                                Some(())
                            })();
                            b.finish(cx);
                        },
                    );
                    let named = jm.named();
                    t.model = jm.finish(cx, &t.name, &blk.stmts);
                    if t.compute.is_none() && t.collectives.is_empty() && !named {
                        cx.error(
                            s.head_span(),
                            format!(
                                "training `{}` has neither `model`, `compute` nor a collective",
                                t.name
                            ),
                        );
                    }
                    if (named || !t.collectives.is_empty())
                        && let Some(tn) = rules
                        && let Err(why) = crate::scenario::transport::collective_net(Some(tn))
                    {
                        let mut d = Diagnostic::error(
                            s.head_span(),
                            format!("training `{}` runs collectives with NCCL: {why}", t.name),
                        )
                        .with_help(format!(
                            "add `tcp` (NCCL's socket transport) or `nccl` to tenant `{}`'s `transports`",
                            tn.name
                        ));
                        if let Some(sp) = tn.rule_spans.get("transports") {
                            d = d.with_secondary(*sp, "the tenant's rule");
                        }
                        cx.push(d);
                    }
                    if t.device_memory.is_some() {
                        pending_dm.push((
                            w.training.len(),
                            stmt_span(&blk.stmts, "device_memory", s.head_span()),
                        ));
                    }
                    pending_pg.push((w.training.len(), pg, pgv.span));
                    w.training.push(t);
                }
                "service" => {
                    let mut sv = Service {
                        name: item,
                        replicas: 1,
                        resources: Resources::from([("CPU".to_string(), 1.0)]),
                        arrival: Arrival::Poisson(EventRate(0.0)),
                        compute: None,
                        service_time: None,
                        exponential: false,
                        batch: None,
                        slo: Vec::new(),
                        device_memory: None,
                        request: None,
                        response: None,
                        span: stmt_span(&blk.stmts, "resources", s.head_span()),
                        arrival_span: None,
                        llm: None,
                    };
                    let mut has_arrival = false;
                    let mut sm = crate::scenario::serving::ServiceModel::default();
                    cx.each(&blk.stmts, schema::SERVICE, "a service", |cx, s2, def2| {
                        cx.no_block(s2);
                        let mut b = Args::new(s2, def2);
                        let _ = (|| -> Option<()> {
                            match def2.key {
                                "replicas" => {
                                    sv.replicas =
                                        rd::count(cx, b.req("a count")?, 1, 1_000_000)? as u32
                                }
                                "resources" => {
                                    sv.resources = resources(cx, scope, b.req("a resource map")?)?
                                }
                                "arrival" => {
                                    let kind = rd::choice(
                                        cx,
                                        b.req("an arrival process")?,
                                        &["poisson", "bursty", "trace", "concurrency", "offline"],
                                        "arrival process",
                                    )?;
                                    sv.arrival = match kind {
                                        "poisson" => Arrival::Poisson(positive_rate(
                                            cx,
                                            b.req("a rate such as `200 /s`")?,
                                        )?),
                                        "bursty" => {
                                            let rate = positive_rate(cx, b.req("a rate")?)?;
                                            let burst = rd::count(
                                                cx,
                                                b.need("burst", "burst N")?,
                                                1,
                                                1_000_000,
                                            )?;
                                            Arrival::Bursty { rate, burst }
                                        }
                                        "concurrency" => {
                                            let clients = rd::count(
                                                cx,
                                                b.req("a number of clients")?,
                                                1,
                                                MAX_CLOSED_LOOP,
                                            )?;
                                            let requests = rd::count(
                                                cx,
                                                b.need("requests", "requests M")?,
                                                1,
                                                MAX_CLOSED_LOOP,
                                            )?;
                                            Arrival::Concurrency { clients, requests }
                                        }
                                        "offline" => Arrival::Offline {
                                            requests: rd::count(
                                                cx,
                                                b.req("a number of requests")?,
                                                1,
                                                MAX_CLOSED_LOOP,
                                            )?,
                                        },
                                        _ => Arrival::Trace(
                                            rd::string(cx, b.req("a trace file path")?)?
                                                .to_string(),
                                        ),
                                    };
                                    has_arrival = true;
                                    sv.arrival_span = Some(s2.head_span());
                                }
                                "compute" => sv.compute = Some(compute(cx, &mut b, "request")?),
                                "device_memory" => {
                                    sv.device_memory = Some(device_memory(cx, b.req("a size")?)?)
                                }
                                "service_time" => {
                                    sv.service_time = Some(rd::duration(cx, b.req("a time")?)?);
                                    sv.exponential = b.flag("exponential");
                                }
                                "batch" => {
                                    let max = rd::count(cx, b.need("max", "max N")?, 1, 1_000_000)?
                                        as u32;
                                    let wait = rd::duration(cx, b.need("wait", "wait TIME")?)?;
                                    sv.batch = Some((max, wait));
                                }
                                k if k == "slo" || crate::scenario::serving::KEYS.contains(&k) => {
                                    sm.stmt(cx, &scope.models, s2, &mut b)?;
                                    if k != "slo" || sm.named_slo(s2) {
                                        return Some(());
                                    }
                                    let p = rd::choice(
                                        cx,
                                        b.req("a percentile such as `p99`")?,
                                        schema::PERCENTILES,
                                        "percentile",
                                    )?;
                                    let d = rd::duration(cx, b.req("a latency target")?)?;
                                    sv.slo.push((p.to_string(), d));
                                }
                                "request" => {
                                    sv.request = Some(crate::scenario::payloads::payload_bytes(
                                        cx,
                                        b.req("a request size")?,
                                        "a request size",
                                    )?)
                                }
                                "response" => {
                                    sv.response = Some(crate::scenario::payloads::payload_bytes(
                                        cx,
                                        b.req("a response size")?,
                                        "a response size",
                                    )?)
                                }
                                _ => {}
                            }
                            Some(())
                        })();
                        b.finish(cx);
                    });
                    if !has_arrival {
                        cx.error(
                            s.head_span(),
                            format!("service `{}` needs an `arrival` process", sv.name),
                        );
                    }
                    let named = sm.named();
                    if !named && sv.arrival.finite().is_some() {
                        cx.push(
                            Diagnostic::error(
                                sv.arrival_span.unwrap_or(s.head_span()),
                                format!("`arrival concurrency` and `arrival offline` are benchmark loads of a model-level service: service `{}` names no `model`", sv.name),
                            )
                            .with_help("write `arrival poisson RATE` (or `bursty`, `trace`) for a FLOP-level service"),
                        );
                    }
                    sv.llm = sm.finish(cx, scope, &sv, &blk.stmts);
                    if let Some(d) = sv.llm.as_ref().and_then(|l| l.disagg.as_ref()) {
                        // The pools are the replicas; the KV cache's transport obeys the
                        // tenant's rules like any selection.
                        sv.replicas = d.prefill + d.decode;
                        check_tenant_transport(cx, scope, rules, name, &d.transport, d.span);
                    }
                    if named {
                        // The model form checks its own memory fit (`serving`).
                        if let Some(dm) = sv.llm.as_ref().map(crate::scenario::serving::device_memory) {
                            sv.device_memory = Some(dm);
                        }
                    } else {
                        check_flop_service(cx, scope, rules, &sv, &blk.stmts, s.head_span());
                    }
                    check_quota(
                        cx,
                        rules,
                        &format!("a replica of service `{}`", sv.name),
                        &sv.resources,
                        stmt_span(&blk.stmts, "resources", s.head_span()),
                    );
                    w.services.push(sv);
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
