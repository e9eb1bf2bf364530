//! A service's model-level form (issue 12, serving): `model NAME`, `parallel tp N [pp P]`,
//! `precision`, `prompt tokens ...`, `output tokens ...`, `engine ...`, `slo KIND ...` and
//! `disaggregate ...` ([`super::disagg`]), filling [`LlmServing`], which `sim::llm` runs as
//! one vLLM-style engine per replica.
//!
//! Defaults of `engine` follow vLLM's engine arguments (`vllm/engine/arg_utils.py`, read at
//! commit 00024d31 of vllm-project/vllm): `block_size` 16, `gpu_memory_utilization` 0.9,
//! `max_num_seqs` 256, chunked prefill on (V1), recompute preemption (V1 has no swap);
//! `max_num_batched_tokens` 8192 (its default for the OpenAI server on large GPUs).

use super::engine::engine;
pub use super::engine::{ENGINE_WORDS, EngineConfig, Preempt, Reserve};
use super::reader::{self as rd, Args, Cx};
use super::schema;
use super::workload::{ResourceScope, Service, UNIT_INSTANCE};
use crate::diag::{Diagnostic, Span};
use crate::model::Transformer;
use crate::syntax::ast::{Stmt, ValueKind};
use serde::Serialize;

/// Largest `max_seqs` (running sequences per replica).
pub const MAX_SEQS: u64 = 65_536;
/// Largest `token_budget` (tokens per iteration).
pub const MAX_TOKEN_BUDGET: u64 = 1_048_576;
/// Largest `kv_block` (tokens per KV block).
pub const MAX_KV_BLOCK: u64 = 4_096;
/// Largest prompt or output of one request, in tokens.
pub const MAX_REQUEST_TOKENS: u64 = 1_048_576;

/// Service statements that belong to the model-level form.
pub const KEYS: &[&str] = &[
    "model",
    "parallel",
    "precision",
    "prompt",
    "output",
    "engine",
    "disaggregate",
];
/// Statements of the FLOP-level form, which the model-level form excludes.
pub const FLOP_KEYS: &[&str] = &["compute", "service_time", "batch", "device_memory"];
/// What an LLM service's `slo` may bound.
pub const SLO_KINDS: &[&str] = &["ttft", "tpot", "e2e"];
/// Words of a service's `precision`: a dtype, and `kv` with the KV cache's.
pub const PRECISION_WORDS: &[&str] = &[
    "fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4", "kv",
];

/// Tokens of each request's prompt or output.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Tokens {
    Fixed(u32),
    /// Uniform over `lo..=hi`.
    Uniform(u32, u32),
    /// Each request's row of the service's arrival trace ([`super::arrivals`]), at most
    /// `max` (what memory is planned for, as vLLM's `max_model_len`; a longer row is an error).
    Trace {
        max: u32,
    },
}

impl Tokens {
    pub fn max(self) -> u32 {
        match self {
            Tokens::Fixed(n) => n,
            Tokens::Uniform(_, hi) => hi,
            Tokens::Trace { max } => max,
        }
    }
}

/// One `slo KIND pNN TIME` of an LLM service.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmSlo {
    /// `ttft`, `tpot` or `e2e`.
    pub kind: String,
    pub percentile: String,
    pub target: crate::units::Duration,
}

/// A service that names a model: an LLM inference engine per replica.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmServing {
    pub model: Transformer,
    /// Tensor-parallel ranks per pipeline stage.
    pub tp: u32,
    /// Pipeline stages per replica (`parallel tp N pp P`): a replica has tp × pp devices.
    #[serde(skip_serializing_if = "is_one")]
    pub pp: u32,
    /// The dtype of weights and of the GEMMs' inputs (`precision`, `bf16` by default).
    pub dtype: String,
    /// The KV cache's dtype (`precision D kv K`): by default the weights', but fp8 under
    /// fp4 weights (TensorRT-LLM's and vLLM's NVFP4 checkpoints keep an FP8 KV cache).
    pub kv_dtype: String,
    pub prompt: Tokens,
    pub output: Tokens,
    pub engine: EngineConfig,
    pub slo: Vec<LlmSlo>,
    /// Prefill and decode pools with the KV cache moved between them (`disaggregate`);
    /// `None`: every replica prefills and decodes its own requests.
    pub disagg: Option<super::disagg::Disagg>,
    /// The `model` statement, where memory-fit errors point.
    #[serde(skip)]
    pub span: Span,
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// The model-level statements of one service, as they are met.
#[derive(Default)]
pub struct ServiceModel {
    model: Option<(Span, Option<Transformer>)>,
    tp: Option<(u32, Span)>,
    pp: Option<(u32, Span)>,
    precision: Option<String>,
    kv: Option<String>,
    prompt: Option<Tokens>,
    output: Option<Tokens>,
    engine: Option<EngineConfig>,
    slo: Vec<(LlmSlo, Span)>,
    disagg: Option<super::disagg::Pending>,
    /// `slo` statements in the FLOP-level form (no kind), for "needs a kind".
    flop_slo: Vec<Span>,
    failed: bool,
}

fn tokens(cx: &mut Cx, a: &mut Args) -> Option<Tokens> {
    if !a.peek_word("tokens") {
        cx.push(
            Diagnostic::error(
                a.end_span(),
                format!("`{}` needs `tokens`", a.stmt.key.name),
            )
            .with_help(
                "write `tokens fixed 512`, `tokens uniform 100..2000` or `tokens trace max 8192`",
            ),
        );
        return None;
    }
    let kind = rd::choice(
        cx,
        a.req("`fixed`, `uniform` or `trace`")?,
        &["fixed", "uniform", "trace"],
        "token distribution",
    )?;
    if kind == "trace" {
        let v = a.need("max", "max N (the longest the trace may hold)")?;
        return Some(Tokens::Trace {
            max: rd::count(cx, v, 1, MAX_REQUEST_TOKENS)? as u32,
        });
    }
    let v = a.req("a token count")?;
    if kind == "fixed" {
        return Some(Tokens::Fixed(
            rd::count(cx, v, 1, MAX_REQUEST_TOKENS)? as u32
        ));
    }
    match v.kind {
        ValueKind::Range { lo, hi } if lo >= 1 && lo <= hi && hi as u64 <= MAX_REQUEST_TOKENS => {
            Some(Tokens::Uniform(lo as u32, hi as u32))
        }
        _ => {
            cx.push(
                Diagnostic::error(v.span, "expected a token range `LO..HI`")
                    .with_label(format!("from 1 to {MAX_REQUEST_TOKENS}, LO at most HI")),
            );
            None
        }
    }
}

/// Device memory a replica needs on each of its devices: its weights, reserve and the KV
/// cache of one longest request, on its most loaded stage's ranks (placement puts replicas
/// only where that fits).
pub fn device_memory(llm: &LlmServing) -> crate::units::Bytes {
    let f = llm.footprint();
    let k = llm.engine.kv_block;
    let longest = f.blocks_for(u64::from(llm.prompt.max()) + u64::from(llm.output.max()), k) as f64
        * f.block_bytes(k);
    crate::units::Bytes((f.weights_bytes + f.reserve_bytes + longest).ceil() as u64)
}

fn kinded(s: &Stmt) -> bool {
    s.values
        .first()
        .is_some_and(|v| matches!(&v.kind, ValueKind::Ident(n) if SLO_KINDS.contains(&n.as_str())))
}

impl ServiceModel {
    /// Whether `s` (an `slo`) names what it bounds (the model-level form's `slo`).
    pub fn named_slo(&self, s: &Stmt) -> bool {
        kinded(s)
    }

    /// Whether a `model` statement was written.
    pub fn named(&self) -> bool {
        self.model.is_some()
    }

    /// One statement whose key is in [`KEYS`], or an `slo`; `None` when wrong (reported).
    pub fn stmt(
        &mut self,
        cx: &mut Cx,
        declared: &super::model::Declared,
        s: &Stmt,
        a: &mut Args,
    ) -> Option<()> {
        let r = self.read(cx, declared, s, a);
        self.failed |= r.is_none();
        r
    }

    fn read(
        &mut self,
        cx: &mut Cx,
        declared: &super::model::Declared,
        s: &Stmt,
        a: &mut Args,
    ) -> Option<()> {
        let head = s.head_span();
        match s.key.name.as_str() {
            "model" => {
                self.model = Some((head, None));
                let t = super::model::of_statement(cx, declared, a)?;
                self.model = Some((head, t));
            }
            "parallel" => {
                let max = super::layout::MAX_PARALLEL;
                let v = a.need("tp", "tp N")?;
                self.tp = Some((rd::count(cx, v, 1, max)? as u32, v.span));
                if let Some(v) = a.opt("pp") {
                    self.pp = Some((rd::count(cx, v, 1, max)? as u32, v.span));
                }
            }
            "precision" => {
                let v = a.req("a dtype such as `bf16`")?;
                self.precision = Some(rd::choice(cx, v, schema::DTYPES, "dtype")?.to_string());
                if let Some(v) = a.opt("kv") {
                    self.kv =
                        Some(rd::choice(cx, v, schema::DTYPES, "KV cache dtype")?.to_string());
                }
            }
            "prompt" => self.prompt = Some(tokens(cx, a)?),
            "output" => self.output = Some(tokens(cx, a)?),
            "engine" => self.engine = Some(engine(cx, a)?),
            "disaggregate" => self.disagg = Some(super::disagg::read(cx, a, head)?),
            "slo" => {
                if !kinded(s) {
                    self.flop_slo.push(head);
                    return Some(());
                }
                let kind = rd::choice(cx, a.req("an SLO kind")?, SLO_KINDS, "SLO kind")?;
                let p = rd::choice(
                    cx,
                    a.req("a percentile such as `p99`")?,
                    schema::PERCENTILES,
                    "percentile",
                )?;
                let d = rd::duration(cx, a.req("a latency target")?)?;
                self.slo.push((
                    LlmSlo {
                        kind: kind.to_string(),
                        percentile: p.to_string(),
                        target: d,
                    },
                    head,
                ));
            }
            _ => {}
        }
        Some(())
    }

    /// The service's model-level form once its whole block (`stmts`) was read: the
    /// model-level statements need `model`, `model` excludes the FLOP-level statements, the
    /// replica requests exactly `tp` devices, and the model must fit on them.
    pub fn finish(
        self,
        cx: &mut Cx,
        scope: &ResourceScope,
        sv: &Service,
        stmts: &[Stmt],
    ) -> Option<LlmServing> {
        let Some((span, model)) = self.model else {
            for s in stmts {
                let k = s.key.name.as_str();
                if KEYS.contains(&k) {
                    cx.push(
                        Diagnostic::error(s.key.span, format!("`{k}` needs `model` in the same service"))
                            .with_help("it describes an LLM engine: name a model (`model llama3_8b`) or remove it"),
                    );
                }
            }
            for (_, at) in &self.slo {
                cx.push(
                    Diagnostic::error(
                        *at,
                        "an SLO kind (`ttft`, `tpot`, `e2e`) needs `model` in the same service",
                    )
                    .with_help("a FLOP-level service's SLO is on its latency: `slo p99 50 ms`"),
                );
            }
            return None;
        };
        let n = cx.error_count();
        for s in stmts {
            let k = s.key.name.as_str();
            if FLOP_KEYS.contains(&k) || k == "request" || k == "response" {
                cx.push(
                    Diagnostic::error(s.key.span, format!("`{k}` cannot be used with `model`"))
                        .with_secondary(span, "the model")
                        .with_help(
                            "the model and its engine derive the service's work; remove one form",
                        ),
                );
            }
        }
        for at in &self.flop_slo {
            cx.push(
                Diagnostic::error(*at, "an LLM service's `slo` names what it bounds").with_help(
                    "write `slo ttft p99 500 ms`, `slo tpot p99 50 ms` or `slo e2e p99 10 s`",
                ),
            );
        }
        let model = model?;
        if self.failed || cx.error_count() != n {
            return None;
        }
        let (tp, tp_at) = self.tp.unwrap_or((1, span));
        let (pp, pp_at) = self.pp.unwrap_or((1, tp_at));
        if pp > model.layers {
            cx.error(
                pp_at,
                format!(
                    "pp {pp} is more pipeline stages than the {} layers of `{}`",
                    model.layers, model.name
                ),
            );
            return None;
        }
        if pp > 1 && self.disagg.is_some() {
            cx.push(
                Diagnostic::error(
                    pp_at,
                    "pipeline parallelism is not modelled for disaggregated services",
                )
                .with_help(
                    "serve the prefill and decode pools with `parallel tp N` (their KV caches \
                     move rank to rank), or remove `disaggregate`",
                ),
            );
            return None;
        }
        let kv = u64::from(model.kv_heads);
        let t = u64::from(tp);
        if u64::from(model.heads) % t != 0 {
            cx.error(
                tp_at,
                format!(
                    "tp {tp} does not divide the {} attention heads of `{}`",
                    model.heads, model.name
                ),
            );
            return None;
        }
        if kv % t != 0 && t % kv != 0 {
            cx.error(
                tp_at,
                format!(
                    "tp {tp} and the {kv} key/value heads of `{}` do not divide one another",
                    model.name
                ),
            );
            return None;
        }
        let devices: f64 = sv
            .resources
            .iter()
            .filter(|(k, _)| UNIT_INSTANCE.contains(&k.as_str()))
            .map(|(_, v)| *v)
            .sum();
        if devices != f64::from(tp) * f64::from(pp) {
            let at = stmts
                .iter()
                .find(|s| s.key.name == "resources")
                .map_or(span, |s| s.head_span());
            let (layout, help) = if pp > 1 {
                (
                    format!("tp {tp} pp {pp} ({} devices)", tp * pp),
                    "each device of a replica is one rank of one pipeline stage: request `GPU: tp × pp`",
                )
            } else {
                (
                    format!("tp {tp}"),
                    "each device of a replica is one tensor-parallel rank: request `GPU: tp`",
                )
            };
            cx.push(
                Diagnostic::error(at, format!("service `{}` serves `{}` with {layout}, but each replica requests {} device(s)", sv.name, model.name, crate::units::sig3(devices)))
                    .with_secondary(tp_at, "the layout")
                    .with_help(help),
            );
            return None;
        }
        let (Some(prompt), Some(output)) = (self.prompt, self.output) else {
            cx.push(
                Diagnostic::error(
                    span,
                    format!(
                        "service `{}` names a model but not its requests' tokens",
                        sv.name
                    ),
                )
                .with_help("add `prompt tokens fixed 512` and `output tokens fixed 128`"),
            );
            return None;
        };
        let traced = [("prompt", prompt), ("output", output)]
            .into_iter()
            .find(|(_, t)| matches!(t, Tokens::Trace { .. }));
        if let Some((what, _)) = traced
            && !matches!(sv.arrival, super::workload::Arrival::Trace(_))
        {
            let at = stmts
                .iter()
                .find(|s| s.key.name == what)
                .map_or(span, |s| s.head_span());
            cx.push(
                Diagnostic::error(at, format!("`{what} tokens trace` reads the arrival trace's token columns, but service `{}` has no `arrival trace`", sv.name))
                    .with_help("write `arrival trace \"FILE\"` with rows `arrival_s,prompt_tokens,output_tokens`, or draw the tokens (`tokens uniform 100..2000`)"),
            );
            return None;
        }
        let disagg = match self.disagg {
            Some(p) => Some(super::disagg::finish(cx, scope, p, stmts)?),
            None => None,
        };
        let mut e = self.engine.unwrap_or_default();
        if !e.memory_fraction_given {
            e.memory_fraction = e.kind.memory_fraction(tp * pp);
        }
        // A preempted request is recomputed, output included; an engine that reserves whole
        // requests never preempts, so only a prompt must fit.
        let (longest, what) = if e.reserve == Reserve::Request {
            (u64::from(prompt.max()), "prompt, never preempted")
        } else {
            (
                u64::from(prompt.max()) + u64::from(output.max()),
                "prompt and output, recomputed after preemption",
            )
        };
        if !e.chunked_prefill && longest > u64::from(e.token_budget) {
            let at = stmts
                .iter()
                .find(|s| s.key.name == "engine")
                .map_or(span, |s| s.head_span());
            cx.push(
                Diagnostic::error(at, format!("without chunked prefill a request of up to {longest} tokens ({what}) never fits the token_budget of {}", e.token_budget))
                    .with_help("raise token_budget or turn `chunked_prefill on` (vLLM asks max_num_batched_tokens ≥ max_model_len likewise)"),
            );
            return None;
        }
        let dtype = self
            .precision
            .unwrap_or_else(|| super::layout::DEFAULT_PRECISION.to_string());
        let kv_dtype = self.kv.unwrap_or_else(|| {
            if dtype == "fp4" {
                "fp8".to_string()
            } else {
                dtype.clone()
            }
        });
        let llm = LlmServing {
            model,
            tp,
            pp,
            dtype,
            kv_dtype,
            prompt,
            output,
            engine: e,
            slo: self.slo.into_iter().map(|(s, _)| s).collect(),
            disagg,
            span,
        };
        fit(cx, scope, sv, &llm).then_some(llm)
    }
}

/// The weights, reserve and one longest request's KV cache (on the most loaded stage's
/// ranks) must fit in `memory_fraction` of the smallest device a replica can be given (of the node types with enough such
/// devices for one replica); a located error with the breakdown. Without a cluster (a
/// workload file included by clusters it cannot see) only when no known device fits.
fn fit(cx: &mut Cx, scope: &ResourceScope, sv: &Service, llm: &LlmServing) -> bool {
    let units: Vec<(&str, f64)> = sv
        .resources
        .iter()
        .filter(|(k, _)| UNIT_INSTANCE.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    let can_host = scope.node_types.iter().flat_map(|nt| {
        nt.devices.iter().filter(|(_, ray, _, n)| {
            units
                .iter()
                .any(|(u, need)| u == ray && f64::from(*n) >= *need)
        })
    });
    let mems = can_host.map(|(_, _, mem, _)| mem.0);
    let given = if scope.cluster_scoped {
        mems.min()
    } else {
        mems.max()
    };
    let Some(smallest) = given else {
        return true;
    };
    let f = llm.footprint();
    let usable = smallest as f64 * llm.engine.memory_fraction;
    let longest = f.blocks_for(
        u64::from(llm.prompt.max()) + u64::from(llm.output.max()),
        llm.engine.kv_block,
    ) as f64
        * f.block_bytes(llm.engine.kv_block);
    if f.weights_bytes + f.reserve_bytes + longest <= usable {
        return true;
    }
    let b = |x: f64| crate::units::gib(x.max(0.0));
    let (whose, help) = if llm.pp > 1 {
        (
            format!(
                " on its most loaded pipeline stage, {} of its {} layers over {} stages,",
                f.layers, llm.model.layers, llm.pp
            ),
            "raise tp or pp, use a narrower precision, shorten the requests or lower token_budget",
        )
    } else {
        (
            String::new(),
            "raise tp (or add pipeline stages, `pp`), use a narrower precision, shorten the requests or lower token_budget",
        )
    };
    cx.push(
        Diagnostic::error(
            llm.span,
            format!(
                "service `{}` needs {} per device for `{}`{whose} (weights {}, activation reserve {}, KV cache of its longest request {}), more than {} of the {} device it can be given",
                sv.name,
                b(f.weights_bytes + f.reserve_bytes + longest),
                llm.model.name,
                b(f.weights_bytes),
                b(f.reserve_bytes),
                b(longest),
                llm.engine.memory_fraction,
                b(smallest as f64)
            ),
        )
        .with_help(help),
    );
    false
}
