//! Failure drills: scheduled failures, random failures with their distributions, and the
//! health-check model that detects them (Ray `src/ray/gcs/gcs_health_check_manager.cc`
//! defaults: first check after 5 s, every 3 s, 10 s timeout, dead after 5 misses).

use super::cluster::Cluster;
use super::hardware::NodeType;
use super::reader::{self as rd, Args, Cx};
use super::schema;
use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::syntax::ast::{Stmt, Value, ValueKind};
use crate::units::{Duration, Fraction};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target {
    pub class: String,
    /// Empty for `head`.
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Distribution {
    Exponential,
    Weibull {
        shape: f64,
    },
    LogNormal {
        sigma: f64,
    },
    Empirical {
        path: String,
        /// Where the scenario names the file (errors about it point here too).
        #[serde(skip)]
        span: crate::diag::Span,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct Scheduled {
    pub at: Duration,
    pub action: String,
    pub target: Target,
    /// How long until the component comes back; permanent when absent.
    pub duration: Option<Duration>,
    /// Remaining capacity for `degrade`.
    pub to: Option<Fraction>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RandomFailure {
    pub class: String,
    pub mtbf: Duration,
    pub distribution: Distribution,
    pub repair: Option<Duration>,
    pub repair_distribution: Distribution,
    /// Its `mtbf` value (work estimates point here).
    #[serde(skip)]
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Detection {
    pub first_check: Duration,
    pub period: Duration,
    pub timeout: Duration,
    pub misses: u32,
}

impl Default for Detection {
    fn default() -> Self {
        Detection {
            first_check: Duration(5_000_000_000),
            period: Duration(3_000_000_000),
            timeout: Duration(10_000_000_000),
            misses: 5,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Failures {
    pub name: Option<String>,
    pub scheduled: Vec<Scheduled>,
    pub random: Vec<RandomFailure>,
    pub detection: Detection,
}

/// The class of a `link A B` target joining two switches of an explicit fabric (never
/// written as a class itself).
pub const SWITCH_LINK: &str = "switch_link";

/// A target class as a message names it.
fn shown(class: &str) -> &str {
    if class == SWITCH_LINK {
        "link between switches"
    } else {
        class
    }
}

/// Which targets each action applies to.
fn action_targets(action: &str) -> &'static [&'static str] {
    match action {
        "kill" => &[
            "node", "device", "nic", "rack", "zone", "slice", "head", "switch",
        ],
        "down" => &["link", "nic", "node", "switch", SWITCH_LINK],
        "degrade" => &["nvlink", "link", "nic", SWITCH_LINK],
        "power_loss" => &["rack", "zone", "slice"],
        "xid" => &["device"],
        _ => &[],
    }
}

pub fn failures(
    cx: &mut Cx,
    cluster: Option<&Cluster>,
    node_types: &BTreeMap<String, NodeType>,
    name: Option<String>,
    stmts: &[Stmt],
) -> Failures {
    let mut f = Failures {
        name,
        ..Failures::default()
    };
    cx.each(stmts, schema::FAILURES, "a failures block", |cx, s, def| {
        let mut a = Args::new(s, def);
        let _ = (|| -> Option<()> {
            match def.key {
                "at" => {
                    cx.no_block(s);
                    let at = rd::duration(cx, a.req("a time such as `2 h`")?)?;
                    let av = a.req("an action")?;
                    let action = rd::choice(cx, av, schema::ACTIONS, "failure action")?;
                    let target = target(cx, &mut a, cluster, node_types)?;
                    if !action_targets(action).contains(&target.class.as_str()) {
                        cx.push(
                            Diagnostic::error(
                                av.span,
                                format!("`{action}` does not apply to a {}", shown(&target.class)),
                            )
                            .with_help(format!(
                                "`{action}` applies to: {}",
                                action_targets(action)
                                    .iter()
                                    .map(|c| shown(c))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )),
                        );
                        return None;
                    }
                    let duration = match a.opt("for") {
                        Some(v) => Some(rd::duration(cx, v)?),
                        None => None,
                    };
                    let to = match a.opt("to") {
                        Some(v) => {
                            let x = rd::fraction(cx, v)?;
                            if x.0 > 1.0 {
                                cx.error(
                                    v.span,
                                    "a degraded link keeps at most 100% of its capacity",
                                );
                                return None;
                            }
                            Some(x)
                        }
                        None => None,
                    };
                    if action == "degrade" && to.is_none() {
                        cx.error(
                            a.end_span(),
                            "`degrade` needs `to PERCENT`, such as `to 50%`",
                        );
                        return None;
                    }
                    if action != "degrade" && to.is_some() {
                        cx.error(s.head_span(), "`to` only applies to `degrade`");
                        return None;
                    }
                    f.scheduled.push(Scheduled {
                        at,
                        action: action.to_string(),
                        target,
                        duration,
                        to,
                    });
                }
                "random" => {
                    cx.no_block(s);
                    let cv = a.req("a component class")?;
                    let class =
                        rd::choice(cx, cv, schema::TARGET_CLASSES, "component class")?.to_string();
                    if class == "switch" && explicit(cluster).is_none() {
                        cx.push(no_explicit(cv.span, cluster));
                        return None;
                    }
                    let mv = a.opt("mtbf").or_else(|| {
                        cx.error(a.end_span(), "`random` needs `mtbf TIME`");
                        None
                    })?;
                    let mtbf = rd::duration(cx, mv)?;
                    if mtbf.0 == 0 {
                        cx.error(mv.span, "MTBF must be greater than zero");
                        return None;
                    }
                    let distribution = optional_distribution(cx, &mut a)?;
                    let (repair, repair_distribution) = match a.opt("repair") {
                        Some(v) => (
                            Some(rd::duration(cx, v)?),
                            optional_distribution(cx, &mut a)?,
                        ),
                        None => (None, Distribution::Exponential),
                    };
                    f.random.push(RandomFailure {
                        class,
                        mtbf,
                        distribution,
                        repair,
                        repair_distribution,
                        span: mv.span,
                    });
                }
                "detection" => {
                    let blk = cx.block(s)?;
                    let mut d = Detection::default();
                    cx.each(
                        &blk.stmts,
                        schema::DETECTION,
                        "a detection block",
                        |cx, s2, def2| {
                            cx.no_block(s2);
                            let mut b = Args::new(s2, def2);
                            let _ = (|| -> Option<()> {
                                let v = b.req("a value")?;
                                match def2.key {
                                    "first_check" => d.first_check = rd::duration(cx, v)?,
                                    "period" => d.period = nonzero(cx, v)?,
                                    "timeout" => d.timeout = rd::duration(cx, v)?,
                                    "misses" => d.misses = rd::count(cx, v, 1, 1000)? as u32,
                                    _ => {}
                                }
                                Some(())
                            })();
                            b.finish(cx);
                        },
                    );
                    f.detection = d;
                }
                _ => {}
            }
            Some(())
        })();
        a.finish(cx);
    });
    f
}

fn nonzero(cx: &mut Cx, v: &Value) -> Option<Duration> {
    let d = rd::duration(cx, v)?;
    if d.0 == 0 {
        cx.error(v.span, "must be greater than zero");
        return None;
    }
    Some(d)
}

/// A distribution word or call that may follow a time (`weibull(shape 0.8)`).
fn optional_distribution(cx: &mut Cx, a: &mut Args) -> Option<Distribution> {
    for w in ["exponential", "weibull", "lognormal", "empirical"] {
        if a.peek_word(w) {
            if w == "exponential" {
                return Some(Distribution::Exponential);
            }
            cx.error(a.end_span(), format!("`{w}` needs its parameter, as in `weibull(shape 0.8)`, `lognormal(sigma 1)` or `empirical(\"file.csv\")`"));
            return None;
        }
    }
    let Some(v) = a.next_if(|v| matches!(v.kind, ValueKind::Call { .. })) else {
        return Some(Distribution::Exponential);
    };
    let ValueKind::Call { name, args } = &v.kind else {
        return None;
    };
    let flat: Vec<&Value> = args.iter().flatten().collect();
    let param = |cx: &mut Cx, word: &str| -> Option<f64> {
        match flat.as_slice() {
            [k, x] if matches!(&k.kind, ValueKind::Ident(n) if n == word) => {
                let p = rd::number(cx, x)?;
                if p <= 0.0 {
                    cx.error(x.span, format!("`{word}` must be greater than zero"));
                    return None;
                }
                Some(p)
            }
            _ => {
                cx.error(v.span, format!("expected `{name}({word} N)`"));
                None
            }
        }
    };
    match name.as_str() {
        "weibull" => Some(Distribution::Weibull {
            shape: param(cx, "shape")?,
        }),
        "lognormal" => Some(Distribution::LogNormal {
            sigma: param(cx, "sigma")?,
        }),
        "empirical" => match flat.as_slice() {
            [p] => Some(Distribution::Empirical {
                path: rd::string(cx, p)?.to_string(),
                span: p.span,
            }),
            _ => {
                cx.error(v.span, "expected `empirical(\"file.csv\")`");
                None
            }
        },
        other => {
            let help = did_you_mean(other, schema::DISTRIBUTIONS.iter().copied());
            cx.push(
                Diagnostic::error(v.span, format!("unknown distribution `{other}`"))
                    .with_help_opt(help),
            );
            None
        }
    }
}

/// `node r3.n1`, `device r3.n1.d5`, `rack r7`, `head`, ...
fn target(
    cx: &mut Cx,
    a: &mut Args,
    cluster: Option<&Cluster>,
    node_types: &BTreeMap<String, NodeType>,
) -> Option<Target> {
    let cv = a.req("a target such as `node r3.n1`")?;
    let class = rd::choice(cx, cv, schema::TARGET_CLASSES, "target kind")?.to_string();
    if class == "head" {
        return Some(Target {
            class,
            name: String::new(),
        });
    }
    let nv = a.req(&format!("the name of the {class}"))?;
    let name = rd::ident(cx, nv, "a name")?.to_string();
    let Some(c) = cluster else {
        cx.error(nv.span, "failure targets need a `cluster` in the scenario");
        return None;
    };
    if class == "switch"
        || (class == "link" && explicit(cluster).is_some_and(|t| t.switch(&name).is_some()))
    {
        return fabric_target(cx, a, c, class == "switch", name, nv.span);
    }
    let ok = match class.as_str() {
        "node" | "nvlink" => node_exists(cx, c, &name, nv.span),
        "rack" | "slice" => {
            let found = c
                .racks
                .iter()
                .any(|r| r.name == name && (class == "rack") == r.slice.is_none());
            if !found {
                let names = c
                    .racks
                    .iter()
                    .filter(|r| (class == "rack") == r.slice.is_none())
                    .map(|r| r.name.as_str());
                let help = did_you_mean(&name, names);
                cx.push(
                    Diagnostic::error(
                        nv.span,
                        format!("no {class} `{name}` in cluster `{}`", c.name),
                    )
                    .with_help_opt(help),
                );
            }
            found
        }
        "zone" => {
            let found = c.zones.contains(&name);
            if !found {
                let help = did_you_mean(&name, c.zones.iter().map(String::as_str));
                cx.push(
                    Diagnostic::error(nv.span, format!("no zone `{name}` in cluster `{}`", c.name))
                        .with_help_opt(help),
                );
            }
            found
        }
        // Devices are `<node>.d<i>`; NICs and their links `<node>.nic<i>`.
        "device" | "nic" | "link" => {
            let prefix = if class == "device" { "d" } else { "nic" };
            match name.rsplit_once('.') {
                Some((node, part))
                    if part
                        .strip_prefix(prefix)
                        .is_some_and(|i| i.parse::<u32>().is_ok()) =>
                {
                    let idx: u32 = part[prefix.len()..].parse().unwrap_or(u32::MAX);
                    match c.find_node(node) {
                        Some(n) => {
                            let nt = &node_types[n.node_type];
                            let have = if class == "device" {
                                nt.device_count()
                            } else {
                                nt.nics.iter().map(|g| g.count).sum()
                            };
                            if idx >= have {
                                cx.error(
                                    nv.span,
                                    format!(
                                        "node `{node}` ({}) has {have} {}s, numbered from 0",
                                        n.node_type,
                                        if class == "device" { "device" } else { "NIC" }
                                    ),
                                );
                                false
                            } else {
                                true
                            }
                        }
                        None => node_exists(cx, c, node, nv.span),
                    }
                }
                _ => {
                    cx.push(Diagnostic::error(
                        nv.span,
                        format!(
                            "a {class} is named `<node>.{prefix}<index>`, such as `r0.n1.{prefix}0`"
                        ),
                    ));
                    false
                }
            }
        }
        _ => true,
    };
    ok.then_some(Target { class, name })
}

/// The explicit fabric of the cluster, if it has one.
fn explicit(c: Option<&Cluster>) -> Option<&super::topology::Topology> {
    c?.fabric.as_ref()?.topology.as_deref()
}

fn no_explicit(span: Span, c: Option<&Cluster>) -> Diagnostic {
    Diagnostic::error(
        span,
        format!(
            "switch failures need an explicit fabric, and cluster `{}` has none",
            c.map_or("", |c| c.name.as_str())
        ),
    )
    .with_help("declare its switches in `fabric explicit { ... }`; a NIC's link fails with `link <node>.nic<i>`")
}

/// `switch NAME`, or `link A B` between two switches of the explicit fabric.
fn fabric_target(
    cx: &mut Cx,
    a: &mut Args,
    c: &Cluster,
    switch: bool,
    name: String,
    span: Span,
) -> Option<Target> {
    let Some(t) = explicit(Some(c)) else {
        cx.push(no_explicit(span, Some(c)));
        return None;
    };
    let Some(sa) = t.switch(&name) else {
        let help = did_you_mean(&name, t.switches.iter().map(String::as_str));
        cx.push(
            Diagnostic::error(
                span,
                format!("no switch `{name}` in the fabric of cluster `{}`", c.name),
            )
            .with_help_opt(help),
        );
        return None;
    };
    if switch {
        return Some(Target {
            class: "switch".into(),
            name,
        });
    }
    let bv = a.req(&format!(
        "the switch at the other end of the link from `{name}`"
    ))?;
    let other = rd::ident(cx, bv, "a switch name")?.to_string();
    let Some(sb) = t.switch(&other) else {
        let help = did_you_mean(&other, t.switches.iter().map(String::as_str));
        cx.push(
            Diagnostic::error(
                bv.span,
                format!("no switch `{other}` in the fabric of cluster `{}`", c.name),
            )
            .with_help_opt(help),
        );
        return None;
    };
    let (lo, hi) = (sa.min(sb), sa.max(sb));
    if !t.links.iter().any(|l| l.a == lo && l.b == hi) {
        cx.error(
            bv.span,
            format!("no link joins switches `{name}` and `{other}`"),
        );
        return None;
    }
    Some(Target {
        class: SWITCH_LINK.into(),
        name: format!("{name} {other}"),
    })
}

fn node_exists(cx: &mut Cx, c: &Cluster, name: &str, span: Span) -> bool {
    if c.find_node(name).is_some() {
        return true;
    }
    let names: Vec<String> = c.nodes().take(10_000).map(|n| n.name).collect();
    let help = did_you_mean(name, names.iter().map(String::as_str));
    cx.push(
        Diagnostic::error(span, format!("no node `{name}` in cluster `{}`", c.name))
            .with_help_opt(help),
    );
    false
}
