//! `placement_group` statements: bundles with their label selectors, fallback options and
//! the alpha topology strategy, as Ray's `ray.util.placement_group(bundles, strategy,
//! bundle_label_selector, fallback_strategy, topology_strategy)` takes them.
//!
//! Sources (ray-project/ray): `python/ray/util/placement_group.py` (validation:
//! `bundle_label_selector` has one selector per bundle; a fallback option holds only `bundles`
//! and `bundle_label_selector`); the topology strategy's restrictions as Ray 2.57 validates them
//! (`_validate_topology_strategy`: one topology level, at most one label-level and one
//! node-level entry, the node level given as `ray.io/node-id`, the label level only
//! `STRICT_PACK`, and `strategy` and `topology_strategy` never both), and its placement in
//! `src/ray/raylet/scheduling/policy/topology_bundle_scheduling_policy.cc`.

use super::reader::{self as rd, Args, Cx};
use super::schema;
use super::workload::{
    LabelConstraint, PgStrategy, PlacementGroup, ResourceScope, Resources, Tenant, check_quota,
    label_selector, policy, resources,
};
use crate::diag::{Diagnostic, Span};
use crate::syntax::ast::{Block, Stmt, ValueKind};

/// The node-level key of a topology strategy (Ray's default node label).
pub const NODE_LEVEL_KEY: &str = "ray.io/node-id";

/// One way to place the group: its bundles, each with its label selector (Ray's
/// `bundle_label_selector`, empty where none), and where each bundle was written.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PgOption {
    pub bundles: Vec<Resources>,
    pub selectors: Vec<Vec<LabelConstraint>>,
    #[serde(skip)]
    pub spans: Vec<Span>,
}

/// The `placement_group NAME ...` statement `s`, whose block is `blk`.
#[allow(clippy::too_many_arguments)]
pub(super) fn placement_group(
    cx: &mut Cx,
    scope: &ResourceScope,
    rules: Option<&Tenant>,
    a: &mut Args,
    s: &Stmt,
    blk: &Block,
    item: String,
) -> Option<PlacementGroup> {
    let slice = a.flag("slice");
    let has = |w: &str| {
        s.values
            .iter()
            .any(|v| matches!(&v.kind, ValueKind::Ident(n) if n == w))
    };
    if slice && (has("strategy") || has("topology_strategy")) {
        cx.push(
            Diagnostic::error(
                s.head_span(),
                "a `slice` placement group takes no `strategy`",
            )
            .with_help(
                "a slice is reserved as a gang: one bundle per host, packed onto that slice",
            ),
        );
        return None;
    }
    if has("strategy") && has("topology_strategy") {
        // Ray's own message (`placement_group.py`).
        cx.error(
            s.head_span(),
            "`strategy` and `topology_strategy` cannot both be specified",
        );
        return None;
    }
    let (strategy, domain) = if slice {
        (PgStrategy::Pack, None)
    } else if has("topology_strategy") {
        topology_strategy(
            cx,
            a.need("topology_strategy", "topology_strategy { LABEL: STRATEGY }")?,
        )?
    } else {
        let sv = a.need("strategy", "strategy PACK|SPREAD|STRICT_PACK|STRICT_SPREAD")?;
        (pg_strategy(cx, sv)?, None)
    };
    let pol = match a.opt("policy") {
        Some(v) => Some(policy(cx, v)?),
        None => None,
    };
    let mut primary = PgOption::default();
    let mut fallbacks = Vec::new();
    cx.each(
        &blk.stmts,
        schema::PLACEMENT_GROUP,
        "a placement group",
        |cx, s2, def2| {
            if def2.key == "fallback" {
                let f = Args::new(s2, def2);
                f.finish(cx);
                let Some(fb) = cx.block(s2) else { return };
                let mut opt = PgOption::default();
                cx.each(
                    &fb.stmts,
                    schema::PG_FALLBACK,
                    "a fallback option",
                    |cx, s3, def3| {
                        bundle(cx, scope, s3, def3, &mut opt);
                    },
                );
                if opt.bundles.is_empty() {
                    cx.error(s2.head_span(), "a `fallback` option has no bundles");
                }
                fallbacks.push(opt);
                return;
            }
            bundle(cx, scope, s2, def2, &mut primary);
        },
    );
    if slice && !(primary.bundles.is_empty() && fallbacks.is_empty()) {
        cx.error(s.head_span(), format!("slice placement group `{item}` takes its bundles from the slice; remove the `bundle` and `fallback` lines"));
    } else if !slice && primary.bundles.is_empty() {
        cx.error(
            s.head_span(),
            format!("placement group `{item}` has no bundles"),
        );
    }
    // A tenant's quota bounds every option: the one placed is taken whole.
    for (k, o) in std::iter::once(&primary).chain(&fallbacks).enumerate() {
        let mut total = Resources::new();
        for b in &o.bundles {
            for (r, v) in b {
                *total.entry(r.clone()).or_insert(0.0) += v;
            }
        }
        let what = if k == 0 {
            format!("placement group `{item}` (all its bundles together)")
        } else {
            format!("fallback {k} of placement group `{item}` (all its bundles together)")
        };
        check_quota(cx, rules, &what, &total, s.head_span());
    }
    Some(PlacementGroup {
        name: item,
        strategy,
        policy: pol,
        bundles: primary.bundles,
        bundle_selectors: primary.selectors,
        fallbacks,
        domain,
        slice,
        span: s.head_span(),
        bundle_spans: primary.spans,
    })
}

fn pg_strategy(cx: &mut Cx, v: &crate::syntax::ast::Value) -> Option<PgStrategy> {
    Some(
        match rd::choice(cx, v, schema::PG_STRATEGIES, "placement group strategy")? {
            "PACK" => PgStrategy::Pack,
            "SPREAD" => PgStrategy::Spread,
            "STRICT_PACK" => PgStrategy::StrictPack,
            _ => PgStrategy::StrictSpread,
        },
    )
}

/// `topology_strategy { "ray.io/gpu-domain": STRICT_PACK, "ray.io/node-id": PACK }`: the
/// node-level strategy (PACK when `ray.io/node-id` is not given) and the label whose domains
/// the group is strictly packed into.
fn topology_strategy(
    cx: &mut Cx,
    v: &crate::syntax::ast::Value,
) -> Option<(PgStrategy, Option<String>)> {
    let m = rd::map(cx, v)?;
    if !rd::unique_keys(cx, m) {
        return None;
    }
    let mut node = PgStrategy::Pack;
    let mut domain: Option<(String, Span)> = None;
    for (k, val) in m {
        if k.name == NODE_LEVEL_KEY {
            node = pg_strategy(cx, val)?;
            continue;
        }
        if let Some((_, first)) = &domain {
            cx.push(
                Diagnostic::error(
                    k.span,
                    "a topology strategy takes one topology label (besides `ray.io/node-id`)",
                )
                .with_secondary(*first, "the topology label")
                .with_help("Ray's alpha topology_strategy supports one topology level"),
            );
            return None;
        }
        match &val.kind {
            ValueKind::Ident(n) if n == "STRICT_PACK" => {}
            _ => {
                cx.push(
                    Diagnostic::error(
                        val.span,
                        format!("only STRICT_PACK is supported for topology label `{}`", k.name),
                    )
                    .with_help("Ray's alpha topology_strategy packs a group into one domain of the label; the node-level strategy goes under \"ray.io/node-id\""),
                );
                return None;
            }
        }
        domain = Some((k.name.clone(), k.span));
    }
    Some((node, domain.map(|d| d.0)))
}

/// `bundle MAP [x N] [label_selector MAP]`, added to `opt`.
fn bundle(cx: &mut Cx, scope: &ResourceScope, s: &Stmt, def: &schema::StmtDef, opt: &mut PgOption) {
    cx.no_block(s);
    let mut b = Args::new(s, def);
    let _ = (|| -> Option<()> {
        let map = b.req("a bundle map such as `{ GPU: 8, CPU: 96 }`")?;
        let r = resources(cx, scope, map)?;
        let n = match b.opt("x") {
            Some(v) => rd::count(cx, v, 1, 100_000)?,
            None => 1,
        };
        let sel = match b.opt("label_selector") {
            Some(v) => label_selector(cx, v)?,
            None => Vec::new(),
        };
        if r.values().all(|x| *x == 0.0) {
            cx.error(s.head_span(), "a bundle must request some resource");
            return None;
        }
        opt.bundles.extend(std::iter::repeat_n(r, n as usize));
        opt.selectors.extend(std::iter::repeat_n(sel, n as usize));
        opt.spans.extend(std::iter::repeat_n(map.span, n as usize));
        Some(())
    })();
    b.finish(cx);
}
