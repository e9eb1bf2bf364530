//! `model NAME [from BASE] { ... }`: a transformer declared in the scenario (issue 12),
//! filling [`crate::model::Transformer`]. The catalog ([`crate::model::catalog`]) holds the
//! well-known ones; a declaration may start from one of them or from an earlier declaration
//! (`from`), but may not reuse a catalog name: a name is one model.
//!
//! Defaults: `kv_heads` = `heads` (multi-head attention), `head_dim` = `hidden / heads`,
//! `ffn_kind gelu` with `ffn` = 4 × `hidden` (GPT-3 and Megatron-LM's GPT models; a SwiGLU
//! model must give `ffn`, as no single rule fixes its width), untied embeddings, no MoE,
//! `expert_ffn` = `ffn`. With `from`, a statement replaces the inherited value and nothing
//! else, except that `head_dim` follows `hidden / heads` when either changes without it.

use super::reader::{self as rd, Args, Cx};
use super::schema;
use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::model::{Ffn, Moe, Transformer, catalog};
use crate::syntax::ast::Stmt;
use std::collections::BTreeMap;

/// Largest values accepted: far above any published model, low enough that the formulas'
/// products (layers × hidden² × …) stay well inside f64's exact integers.
pub const MAX_LAYERS: u64 = 10_000;
/// `hidden`, `head_dim`, `ffn` and `expert_ffn` (2^24).
pub const MAX_WIDTH: u64 = 16_777_216;
pub const MAX_HEADS: u64 = 65_536;
pub const MAX_VOCAB: u64 = 100_000_000;
pub const MAX_SEQ: u64 = 100_000_000;
pub const MAX_EXPERTS: u64 = 65_536;

/// One `model` declaration: its name, the name's span, `from BASE` and the block.
pub struct ModelDecl<'a> {
    pub name: &'a str,
    pub span: Span,
    pub base: Option<(&'a str, Span)>,
    pub body: &'a [Stmt],
}

/// A value as written, with its span.
type At<T> = Option<(T, Span)>;

struct MoeGiven {
    experts: u64,
    top_k: u64,
    expert_ffn: Option<u64>,
}

/// What a block gives, before defaults and the base apply.
#[derive(Default)]
struct Given {
    layers: At<u64>,
    hidden: At<u64>,
    heads: At<u64>,
    kv_heads: At<u64>,
    head_dim: At<u64>,
    ffn: At<u64>,
    ffn_kind: Option<Ffn>,
    vocab: At<u64>,
    seq: At<u64>,
    tied: Option<bool>,
    moe: Option<MoeGiven>,
    source: Option<String>,
    /// A statement was wrong (reported): the model is not built.
    failed: bool,
}

/// The scenario's declared models by name; `None`: declared but invalid (reported there, so
/// work naming it says nothing more).
pub type Declared = BTreeMap<String, Option<Transformer>>;

/// The model `name`: a scenario declaration, else the catalog's; `Some(None)` for an invalid
/// declaration, `None` for a name nobody declares.
pub fn find(declared: &Declared, name: &str) -> Option<Option<Transformer>> {
    declared
        .get(name)
        .cloned()
        .or_else(|| catalog::find(name).map(Some))
}

/// The model a `model NAME` statement (of a training job or a service) names: `None` when
/// the statement is malformed, `Some(None)` when the name is unknown (reported) or its
/// declaration invalid.
pub fn of_statement(cx: &mut Cx, declared: &Declared, a: &mut Args) -> Option<Option<Transformer>> {
    let v = a.req("a model name such as `llama3_8b`")?;
    let n = rd::ident(cx, v, "a model name")?;
    let t = find(declared, n);
    if t.is_none() {
        unknown(cx, declared, n, v.span);
    }
    Some(t.flatten())
}

/// "unknown model `name`", suggesting the nearest declared or catalog name, else listing the
/// catalog.
pub fn unknown(cx: &mut Cx, declared: &Declared, name: &str, at: Span) {
    let mut names: Vec<&str> = declared.keys().map(String::as_str).collect();
    for n in catalog::names() {
        names.push(n);
    }
    let help = did_you_mean(name, names.iter().copied()).unwrap_or_else(|| {
        format!(
            "catalog models: {}; or declare one with `model {name} {{ ... }}` (before any model derived from it)",
            catalog::names().collect::<Vec<_>>().join(", ")
        )
    });
    cx.push(Diagnostic::error(at, format!("unknown model `{name}`")).with_help(help));
}

/// The scenario's model declarations, in order: a name must be new (neither a catalog model
/// nor declared before) and `from` must name a catalog model or an earlier declaration.
pub fn declare(cx: &mut Cx, decls: &[ModelDecl]) -> Declared {
    let mut out = Declared::new();
    let mut spans: BTreeMap<&str, Span> = BTreeMap::new();
    for d in decls {
        let g = given(cx, d.body);
        if catalog::find(d.name).is_some() {
            cx.push(
                Diagnostic::error(
                    d.span,
                    format!(
                        "`{}` is a catalog model; a scenario's model needs a name of its own",
                        d.name
                    ),
                )
                .with_help(format!(
                    "to change it, derive a variant: `model my_{0} from {0} {{ ... }}`",
                    d.name
                )),
            );
            continue;
        }
        if let Some(first) = spans.get(d.name) {
            cx.push(
                Diagnostic::error(d.span, format!("model `{}` is declared twice", d.name))
                    .with_secondary(*first, "first declared here"),
            );
            continue;
        }
        spans.insert(d.name, d.span);
        let base = match d.base {
            None => Some(None),
            Some((b, at)) => match find(&out, b) {
                Some(t) => t.map(Some),
                None => {
                    unknown(cx, &out, b, at);
                    None
                }
            },
        };
        let t = match base {
            Some(base) if !g.failed => build(cx, d.name, d.span, base.as_ref(), g),
            _ => None,
        };
        out.insert(d.name.to_string(), t);
    }
    out
}

/// `KEY INT` in `1..=max`.
fn int(cx: &mut Cx, a: &mut Args, max: u64) -> Option<(u64, Span)> {
    let v = a.req("a whole number")?;
    Some((rd::count(cx, v, 1, max)?, v.span))
}

fn given(cx: &mut Cx, stmts: &[Stmt]) -> Given {
    let mut g = Given::default();
    cx.each(stmts, schema::MODEL, "a model", |cx, s, def| {
        cx.no_block(s);
        let mut a = Args::new(s, def);
        let ok = (|| -> Option<()> {
            match def.key {
                "layers" => g.layers = Some(int(cx, &mut a, MAX_LAYERS)?),
                "hidden" => g.hidden = Some(int(cx, &mut a, MAX_WIDTH)?),
                "heads" => g.heads = Some(int(cx, &mut a, MAX_HEADS)?),
                "kv_heads" => g.kv_heads = Some(int(cx, &mut a, MAX_HEADS)?),
                "head_dim" => g.head_dim = Some(int(cx, &mut a, MAX_WIDTH)?),
                "ffn" => g.ffn = Some(int(cx, &mut a, MAX_WIDTH)?),
                "vocab" => g.vocab = Some(int(cx, &mut a, MAX_VOCAB)?),
                "seq" => g.seq = Some(int(cx, &mut a, MAX_SEQ)?),
                "ffn_kind" => {
                    let v = a.req("`gelu` or `swiglu`")?;
                    let k = rd::choice(cx, v, schema::FFN_KINDS, "feed-forward kind")?;
                    g.ffn_kind = Some(if k == "gelu" { Ffn::Gelu } else { Ffn::SwiGlu });
                }
                "tied_embeddings" => {
                    g.tied = Some(match a.next_value() {
                        Some(v) => rd::boolean(cx, v)?,
                        None => true,
                    })
                }
                "moe" => {
                    let ev = a.need("experts", "experts INT")?;
                    let experts = rd::count(cx, ev, 1, MAX_EXPERTS)?;
                    let kv = a.need("top_k", "top_k INT")?;
                    let top_k = rd::count(cx, kv, 1, MAX_EXPERTS)?;
                    let expert_ffn = match a.opt("expert_ffn") {
                        Some(v) => Some(rd::count(cx, v, 1, MAX_WIDTH)?),
                        None => None,
                    };
                    if top_k > experts {
                        cx.error(
                            kv.span,
                            format!("top_k {top_k} is more than the {experts} experts a token can be routed to"),
                        );
                        return None;
                    }
                    g.moe = Some(MoeGiven {
                        experts,
                        top_k,
                        expert_ffn,
                    });
                }
                "source" => g.source = Some(rd::string(cx, a.req("a source in quotes")?)?.into()),
                _ => {}
            }
            Some(())
        })();
        g.failed |= ok.is_none();
        a.finish(cx);
    });
    g
}

/// The transformer a block describes, over its base; missing or inconsistent fields are
/// errors (at the field, else at the model's name).
fn build(
    cx: &mut Cx,
    name: &str,
    span: Span,
    base: Option<&Transformer>,
    g: Given,
) -> Option<Transformer> {
    let pick = |x: &At<u64>, b: Option<u64>| x.map(|(v, _)| v).or(b);
    let layers = pick(&g.layers, base.map(|b| u64::from(b.layers)));
    let hidden = pick(&g.hidden, base.map(|b| b.hidden));
    let heads = pick(&g.heads, base.map(|b| u64::from(b.heads)));
    let vocab = pick(&g.vocab, base.map(|b| b.vocab));
    let seq = pick(&g.seq, base.map(|b| b.seq));
    let ffn_kind = g.ffn_kind.or(base.map(|b| b.ffn_kind)).unwrap_or(Ffn::Gelu);
    let ffn = pick(&g.ffn, base.map(|b| b.ffn)).or_else(|| {
        (ffn_kind == Ffn::Gelu)
            .then(|| hidden.map(|h| 4 * h))
            .flatten()
    });
    let mut missing: Vec<&str> = [
        ("layers", layers.is_some()),
        ("hidden", hidden.is_some()),
        ("heads", heads.is_some()),
        ("vocab", vocab.is_some()),
        ("seq", seq.is_some()),
    ]
    .iter()
    .filter(|(_, ok)| !ok)
    .map(|(k, _)| *k)
    .collect();
    let no_ffn = ffn.is_none() && hidden.is_some();
    if no_ffn {
        missing.push("ffn");
    }
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|m| format!("`{m}`")).collect();
        let d = Diagnostic::error(
            span,
            format!("model `{name}` is missing {}", list.join(", ")),
        )
        .with_label("declared here");
        cx.push(if no_ffn {
            d.with_help("`ffn` defaults to 4 × hidden only with `ffn_kind gelu`; a `swiglu` model must give it")
        } else {
            d
        });
        return None;
    }
    let (layers, hidden, heads, vocab, seq, ffn) = (layers?, hidden?, heads?, vocab?, seq?, ffn?);
    // A key/value head serves a whole group of query heads (GQA; MHA when equal).
    let kv_heads = pick(&g.kv_heads, base.map(|b| u64::from(b.kv_heads))).unwrap_or(heads);
    if heads % kv_heads != 0 {
        let at = g.kv_heads.or(g.heads).map(|x| x.1).unwrap_or(span);
        cx.error(
            at,
            format!("{heads} heads do not split into groups of {kv_heads} key/value heads: `heads` must be a multiple of `kv_heads`"),
        );
        return None;
    }
    let derived = g.hidden.is_some() || g.heads.is_some() || base.is_none();
    let head_dim = match (g.head_dim, base) {
        (Some((d, _)), _) => d,
        (None, Some(b)) if !derived => b.head_dim,
        _ if hidden % heads == 0 => hidden / heads,
        _ => {
            let at = g.hidden.or(g.heads).map(|x| x.1).unwrap_or(span);
            cx.push(
                Diagnostic::error(
                    at,
                    format!("`hidden` {hidden} is not a multiple of `heads` {heads}, so `head_dim` has no default"),
                )
                .with_help("give `head_dim` or change `hidden` or `heads`"),
            );
            return None;
        }
    };
    let moe = match g.moe {
        Some(m) => Some(Moe {
            experts: m.experts as u32,
            top_k: m.top_k as u32,
            expert_ffn: m.expert_ffn.unwrap_or(ffn),
        }),
        None => base.and_then(|b| b.moe),
    };
    let source = g.source.unwrap_or_else(|| match base {
        Some(b) if b.source.is_empty() => format!("from {}", b.name),
        Some(b) => format!("from {}: {}", b.name, b.source),
        None => String::new(),
    });
    Some(Transformer {
        name: name.to_string(),
        layers: layers as u32,
        hidden,
        heads: heads as u32,
        kv_heads: kv_heads as u32,
        head_dim,
        ffn,
        ffn_kind,
        vocab,
        seq,
        tied_embeddings: g.tied.or(base.map(|b| b.tied_embeddings)).unwrap_or(false),
        moe,
        source,
    })
}
