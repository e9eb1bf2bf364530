//! The items of a workload block, one reader each: task groups, actor groups, training jobs
//! and services (placement groups are `scenario::placement_group`'s).

use crate::diag::Diagnostic;
use crate::scenario::reader::{self as rd, Args, Cx, MAX_COUNT};
use crate::scenario::schema;
use crate::syntax::ast::Block;
use crate::syntax::ast::Stmt;
use crate::units::{Bytes, Duration, EventRate};

use super::block::State;
use super::*;

/// `tasks NAME x N [after ...] { ... }`: a task group.
pub(super) fn task_group(
    cx: &mut Cx,
    st: State<'_>,
    a: &mut Args,
    item: String,
    blk: &Block,
    s: &Stmt,
) -> Option<()> {
    let State {
        w,
        scope,
        rules,
        name,
        pending_after,
        ..
    } = st;
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
                "resources" => g.resources = resources(cx, scope, b.req("a resource map")?)?,
                "duration" => g.duration = Some(rd::duration(cx, b.req("a time")?)?),
                "compute" => g.compute = Some(compute(cx, &mut b, "")?),
                "output" => g.output = rd::bytes(cx, b.req("a size")?)?,
                "strategy" => g.strategy = strategy(cx, b.req("a strategy")?)?,
                "label_selector" => {
                    g.label_selector = label_selector(cx, b.req("a label selector")?)?
                }
                "fallback" => {
                    fb_spans.push(s2.head_span());
                    g.fallbacks
                        .push(crate::scenario::task_fallback::fallback(cx, &mut b)?)
                }
                "retries" => g.retries = rd::count(cx, b.req("a count")?, 0, 1000)? as u32,
                "retry_delay" => g.retry_delay = rd::duration(cx, b.req("a time")?)?,
                "device_memory" => g.device_memory = Some(device_memory(cx, b.req("a size")?)?),
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
    check_task_group(cx, scope, rules, &g, &fb_spans, blk, s);
    pending_after.push((w.tasks.len(), after));
    w.tasks.push(g);
    Some(())
}

/// `actor NAME [x N] { ... }`: an actor group.
pub(super) fn actor_group(
    cx: &mut Cx,
    st: State<'_>,
    a: &mut Args,
    item: String,
    blk: &Block,
    s: &Stmt,
) -> Option<()> {
    let State {
        w,
        scope,
        rules,
        name,
        ..
    } = st;
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
                "resources" => ac.resources = Some(resources(cx, scope, b.req("a resource map")?)?),
                "calls" => ac.calls = rd::count(cx, b.req("a count")?, 0, 1 << 40)?,
                "call_duration" => ac.call_duration = Some(rd::duration(cx, b.req("a time")?)?),
                "max_restarts" => ac.max_restarts = restarts(cx, b.req("a count or -1")?)?,
                "max_task_retries" => ac.max_task_retries = restarts(cx, b.req("a count or -1")?)?,
                "strategy" => ac.strategy = strategy(cx, b.req("a strategy")?)?,
                "device_memory" => ac.device_memory = Some(device_memory(cx, b.req("a size")?)?),
                "transport" => {
                    let n = transport_ref(cx, scope, b.req("a transport name")?)?;
                    check_tenant_transport(cx, scope, rules, name, &n, s2.head_span());
                    ac.transport = Some(n);
                }
                "label_selector" => {
                    ac.label_selector = label_selector(cx, b.req("a label selector")?)?
                }
                "fallback" => {
                    fb_spans.push(s2.head_span());
                    ac.fallbacks
                        .push(crate::scenario::task_fallback::fallback(cx, &mut b)?)
                }
                "tensor" => ac.tensor = Some(crate::scenario::payloads::tensor(cx, &mut b)?),
                _ => {}
            }
            Some(())
        })();
        b.finish(cx);
    });
    check_actor(cx, scope, rules, &ac, &fb_spans, blk, s);
    w.actors.push(ac);
    Some(())
}

/// `training NAME on PLACEMENT_GROUP { ... }`: a training job.
pub(super) fn training_job(
    cx: &mut Cx,
    st: State<'_>,
    a: &mut Args,
    item: String,
    blk: &Block,
    s: &Stmt,
) -> Option<()> {
    let State {
        w,
        scope,
        rules,
        pending_pg,
        pending_dm,
        ..
    } = st;
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
                    "device_memory" => t.device_memory = Some(device_memory(cx, b.req("a size")?)?),
                    "checkpoint" => {
                        t.checkpoint = Some(checkpoint(cx, scope, &mut b, s2.head_span())?)
                    }
                    k if crate::scenario::layout::KEYS.contains(&k) => {
                        jm.stmt(cx, &scope.models, s2, def2.key, &mut b)?
                    }
                    op => t
                        .collectives
                        .push(collective(cx, &mut b, op, s2.head_span())?),
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
    Some(())
}

/// `service NAME { ... }`: an inference service.
pub(super) fn service(
    cx: &mut Cx,
    st: State<'_>,
    item: String,
    blk: &Block,
    s: &Stmt,
) -> Option<()> {
    let State {
        w,
        scope,
        rules,
        name,
        ..
    } = st;
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
    let mut sm = crate::scenario::serving::ServiceModel::default();
    let has_arrival = service_stmts(cx, scope, &mut sv, &mut sm, blk);
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
    Some(())
}

/// A service block's statements into `sv` (and its model form into `sm`); whether one of
/// them was its `arrival`.
fn service_stmts(
    cx: &mut Cx,
    scope: &ResourceScope,
    sv: &mut Service,
    sm: &mut crate::scenario::serving::ServiceModel,
    blk: &Block,
) -> bool {
    let mut has_arrival = false;
    cx.each(&blk.stmts, schema::SERVICE, "a service", |cx, s2, def2| {
        cx.no_block(s2);
        let mut b = Args::new(s2, def2);
        let _ = (|| -> Option<()> {
            match def2.key {
                "replicas" => sv.replicas = rd::count(cx, b.req("a count")?, 1, 1_000_000)? as u32,
                "resources" => sv.resources = resources(cx, scope, b.req("a resource map")?)?,
                "arrival" => {
                    sv.arrival = arrival(cx, &mut b)?;
                    has_arrival = true;
                    sv.arrival_span = Some(s2.head_span());
                }
                "compute" => sv.compute = Some(compute(cx, &mut b, "request")?),
                "device_memory" => sv.device_memory = Some(device_memory(cx, b.req("a size")?)?),
                "service_time" => {
                    sv.service_time = Some(rd::duration(cx, b.req("a time")?)?);
                    sv.exponential = b.flag("exponential");
                }
                "batch" => {
                    let max = rd::count(cx, b.need("max", "max N")?, 1, 1_000_000)? as u32;
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
    has_arrival
}

/// `arrival KIND ...`: the load a service gets (Poisson, bursty, a trace, or a benchmark's
/// closed loop or offline batch).
fn arrival(cx: &mut Cx, b: &mut Args) -> Option<Arrival> {
    let kind = rd::choice(
        cx,
        b.req("an arrival process")?,
        &["poisson", "bursty", "trace", "concurrency", "offline"],
        "arrival process",
    )?;
    Some(match kind {
        "poisson" => Arrival::Poisson(positive_rate(cx, b.req("a rate such as `200 /s`")?)?),
        "bursty" => {
            let rate = positive_rate(cx, b.req("a rate")?)?;
            let burst = rd::count(cx, b.need("burst", "burst N")?, 1, 1_000_000)?;
            Arrival::Bursty { rate, burst }
        }
        "concurrency" => {
            let clients = rd::count(cx, b.req("a number of clients")?, 1, MAX_CLOSED_LOOP)?;
            let requests = rd::count(cx, b.need("requests", "requests M")?, 1, MAX_CLOSED_LOOP)?;
            Arrival::Concurrency { clients, requests }
        }
        "offline" => Arrival::Offline {
            requests: rd::count(cx, b.req("a number of requests")?, 1, MAX_CLOSED_LOOP)?,
        },
        _ => Arrival::Trace(rd::string(cx, b.req("a trace file path")?)?.to_string()),
    })
}

/// `checkpoint every TIME size BYTES [to STORAGE]` of a training job (at `at`).
fn checkpoint(cx: &mut Cx, scope: &ResourceScope, b: &mut Args, at: Span) -> Option<Checkpoint> {
    let every = rd::duration(cx, b.need("every", "every TIME")?)?;
    let size = rd::bytes(cx, b.need("size", "size BYTES")?)?;
    if every.0 == 0 {
        cx.error(at, "checkpoint interval must be greater than zero");
        return None;
    }
    let to = b.opt("to");
    let storage = checkpoint_storage(cx, scope, to, at).ok()?;
    Some(Checkpoint {
        every,
        size,
        storage,
    })
}

/// A training job's collective statement (`allreduce BYTES [algo A] [proto P]
/// [hierarchical]`, ...), at `at`.
fn collective(cx: &mut Cx, b: &mut Args, op: &str, at: Span) -> Option<Collective> {
    let bytes = rd::bytes(cx, b.req("a message size")?)?;
    let mut word = |key, list, what| match b.opt(key) {
        Some(v) => rd::choice(cx, v, list, what).map(|w| Some(w.to_string())),
        None => Some(None),
    };
    let algo = word("algo", schema::COLLECTIVE_ALGOS, "collective algorithm")?;
    let proto = word("proto", schema::COLLECTIVE_PROTOS, "NCCL protocol")?;
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
        cx.error(at, format!("{what} takes `proto simple` or none"));
        return None;
    }
    Some(Collective {
        op: op.to_string(),
        bytes,
        algo,
        proto,
        hierarchical,
    })
}

/// A task group's checks once its block is read: its fallbacks, `compute` without a device,
/// a duration or compute at all, device memory, its tenant's quota.
fn check_task_group(
    cx: &mut Cx,
    scope: &ResourceScope,
    rules: Option<&Tenant>,
    g: &TaskGroup,
    fb_spans: &[Span],
    blk: &Block,
    s: &Stmt,
) {
    if fb_spans.len() == g.fallbacks.len() {
        crate::scenario::task_fallback::check(
            cx,
            &format!("task group `{}`", g.name),
            &g.label_selector,
            &g.fallbacks,
            fb_spans,
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
}

/// An actor group's checks once its block is read: its fallbacks, calls without a duration,
/// device memory and its tenant's quota on what it holds to be placed.
fn check_actor(
    cx: &mut Cx,
    scope: &ResourceScope,
    rules: Option<&Tenant>,
    ac: &Actor,
    fb_spans: &[Span],
    blk: &Block,
    s: &Stmt,
) {
    if fb_spans.len() == ac.fallbacks.len() {
        crate::scenario::task_fallback::check(
            cx,
            &format!("actor `{}`", ac.name),
            &ac.label_selector,
            &ac.fallbacks,
            fb_spans,
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
}
