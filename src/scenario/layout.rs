//! A training job's model-level form (issue 12): `model NAME` and its parallel layout,
//! `parallel`, `sharding`, `recompute`, `batch` and `precision`, filling
//! [`crate::model::Layout`]. The layout rules are Megatron-LM's (Narayanan et al. 2021,
//! "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM";
//! `megatron/arguments.py` and `schedules.py` assert the same): tensor parallelism splits
//! heads and key/value heads, pipeline stages (and interleaved chunks) take whole layers, the
//! global batch is whole microbatches on every replica, the interleaved schedule needs
//! pipelining and a multiple of `pp` microbatches, sequence parallelism needs tensor
//! parallelism and splits the sequence, and tp × pp × dp is the job's devices.

use super::reader::{self as rd, Args, Cx};
use super::schema;
use super::workload::{ResourceScope, UNIT_INSTANCE, Workload};
use crate::diag::{Diagnostic, Span};
use crate::model::{Attention, Layout, Recompute, Schedule, Setup, Sharding, Transformer};
use crate::syntax::ast::{Stmt, ValueKind};
use serde::Serialize;

/// Largest size of one parallel dimension.
pub const MAX_PARALLEL: u64 = 1_000_000;
/// Largest global batch (samples per iteration).
pub const MAX_BATCH: u64 = 1_000_000_000;
/// The training dtype when `precision` is not given.
pub const DEFAULT_PRECISION: &str = "bf16";

/// Training statements that belong to the model-level form.
pub const KEYS: &[&str] = &[
    "model",
    "parallel",
    "sharding",
    "recompute",
    "attention",
    "batch",
    "precision",
    "overlap",
];

/// A training job that names a model: the model, how it is laid out, in which dtype.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelTraining {
    pub model: crate::model::Transformer,
    pub layout: crate::model::Layout,
    /// The training dtype (`precision`, one of [`schema::DTYPES`]; `bf16` by default).
    pub dtype: String,
    /// `overlap grad_reduce`: the gradient reduction overlapped with the backward pass
    /// (`None`: after it, Megatron-LM's default).
    pub overlap: Option<super::overlap::GradOverlap>,
    /// Context parallelism, uneven stages, `overlap tp_comm` and the narrow GEMM precision
    /// of `precision fp8` ([`crate::model::Setup`]).
    pub setup: Setup,
    /// The `model` statement, where errors about the model (memory fit) point.
    #[serde(skip)]
    pub span: Span,
    /// The `parallel` statement (the `model` statement without one), where errors about
    /// the layout point.
    #[serde(skip)]
    pub layout_span: Span,
}

/// A parallel dimension's size and the span of its value (`None`: not given, 1).
pub(super) type Part = (u32, Option<Span>);

pub(super) struct Parallel {
    pub(super) tp: Part,
    pub(super) pp: Part,
    pub(super) interleave: Part,
    pub(super) dp: Part,
    pub(super) ep: Part,
    pub(super) cp: Part,
    pub(super) first_stage: Part,
    pub(super) last_stage: Part,
    /// The `sp` word.
    pub(super) sp: Option<Span>,
    pub(super) head: Span,
}

/// The model-level statements of one training job, as they are met.
#[derive(Default)]
pub struct JobModel {
    /// The `model` statement's head, and the model when its name is known.
    model: Option<(Span, Option<Transformer>)>,
    parallel: Option<Parallel>,
    sharding: Option<Sharding>,
    recompute: Option<Recompute>,
    attention: Option<Attention>,
    /// `global` and `micro`, with their spans.
    batch: Option<((u64, Span), (u64, Span))>,
    precision: Option<String>,
    overlap: Option<super::overlap::GradOverlap>,
    /// `overlap tp_comm`, where it was named.
    tp_comm: Option<Span>,
    /// Layout statements met (key and head), for "needs `model`".
    layout_stmts: Vec<(&'static str, Span)>,
    /// A statement was wrong (and reported): the layout is not checked further.
    failed: bool,
}

/// `word INT` of a `parallel` statement: `(1, None)` when left out; a part given twice is
/// an error.
fn part(cx: &mut Cx, a: &mut Args, word: &str) -> Result<Part, ()> {
    let mut at = a.stmt.values.iter().filter(|v| is_word(v, word));
    if let (Some(first), Some(second)) = (at.next(), at.next()) {
        cx.push(
            Diagnostic::error(
                second.span,
                format!("`{word}` is given twice in `parallel`"),
            )
            .with_secondary(first.span, "first given here"),
        );
        return Err(());
    }
    match a.opt(word) {
        None if a.stmt.values.iter().any(|v| is_word(v, word)) => Err(()),
        None => Ok((1, None)),
        Some(v) => match rd::count(cx, v, 1, MAX_PARALLEL) {
            Some(n) => Ok((n as u32, Some(v.span))),
            None => Err(()),
        },
    }
}

fn is_word(v: &crate::syntax::ast::Value, w: &str) -> bool {
    matches!(&v.kind, ValueKind::Ident(n) if n == w)
}

impl JobModel {
    /// Whether a `model` statement was written (whether or not its name is known).
    pub fn named(&self) -> bool {
        self.model.is_some()
    }

    /// One statement whose key is in [`KEYS`]; `None` when it is wrong (reported).
    pub fn stmt(
        &mut self,
        cx: &mut Cx,
        declared: &super::model::Declared,
        s: &Stmt,
        key: &'static str,
        a: &mut Args,
    ) -> Option<()> {
        let r = self.read(cx, declared, s, key, a);
        self.failed |= r.is_none();
        r
    }

    fn read(
        &mut self,
        cx: &mut Cx,
        declared: &super::model::Declared,
        s: &Stmt,
        key: &'static str,
        a: &mut Args,
    ) -> Option<()> {
        let head = s.head_span();
        if key != "model" {
            self.layout_stmts.push((key, head));
        }
        match key {
            "model" => {
                // Written, even if wrong: the job is in the model-level form.
                self.model = Some((head, None));
                let t = super::model::of_statement(cx, declared, a)?;
                self.model = Some((head, t));
            }
            "parallel" => {
                let sp = a
                    .stmt
                    .values
                    .iter()
                    .find(|v| is_word(v, "sp"))
                    .map(|v| v.span);
                a.flag("sp");
                let p = Parallel {
                    tp: part(cx, a, "tp").ok()?,
                    pp: part(cx, a, "pp").ok()?,
                    interleave: part(cx, a, "interleave").ok()?,
                    dp: part(cx, a, "dp").ok()?,
                    ep: part(cx, a, "ep").ok()?,
                    cp: part(cx, a, "cp").ok()?,
                    first_stage: part(cx, a, "first_stage").ok()?,
                    last_stage: part(cx, a, "last_stage").ok()?,
                    sp,
                    head,
                };
                if [
                    p.tp,
                    p.pp,
                    p.interleave,
                    p.dp,
                    p.ep,
                    p.cp,
                    p.first_stage,
                    p.last_stage,
                ]
                .iter()
                .all(|x| x.1.is_none())
                    && sp.is_none()
                {
                    cx.push(
                        Diagnostic::error(a.end_span(), "`parallel` needs at least one part")
                            .with_help("write `parallel tp 8 sp cp 2 pp 4 interleave 2 dp 2 ep 1`, any part left out being 1"),
                    );
                    return None;
                }
                self.parallel = Some(p);
            }
            "sharding" => {
                let v = a.req("`none`, `zero1`, `zero2`, `zero3` or `fsdp`")?;
                self.sharding = Some(match rd::choice(cx, v, schema::SHARDINGS, "sharding")? {
                    "zero1" => Sharding::Zero1,
                    "zero2" => Sharding::Zero2,
                    "zero3" | "fsdp" => Sharding::Zero3,
                    _ => Sharding::None,
                });
            }
            "recompute" => {
                let v = a.req("`none`, `selective` or `full`")?;
                self.recompute = Some(match rd::choice(cx, v, schema::RECOMPUTES, "recompute")? {
                    "selective" => Recompute::Selective,
                    "full" => Recompute::Full,
                    _ => Recompute::None,
                });
            }
            "attention" => {
                let v = a.req("`unfused` or `flash`")?;
                self.attention = Some(match rd::choice(cx, v, schema::ATTENTIONS, "attention")? {
                    "flash" => Attention::Flash,
                    _ => Attention::Unfused,
                });
            }
            "batch" => {
                let g = a.need("global", "global INT")?;
                let global = (rd::count(cx, g, 1, MAX_BATCH)?, g.span);
                let m = a.need("micro", "micro INT")?;
                let micro = (rd::count(cx, m, 1, MAX_BATCH)?, m.span);
                self.batch = Some((global, micro));
            }
            "precision" => {
                let v = a.req("a dtype such as `bf16`")?;
                self.precision = Some(rd::choice(cx, v, schema::DTYPES, "dtype")?.to_string());
            }
            "overlap" => {
                // One `overlap` statement per job (a second is an error where statements are
                // read), naming each overlap it turns on.
                let o = super::overlap::read(cx, a, head)?;
                self.overlap = o.grad;
                self.tp_comm = o.tp_comm;
            }
            _ => {}
        }
        Some(())
    }

    /// The job's model-level form, once every statement of its block (`stmts`) was met: the
    /// layout statements need `model`, `model` excludes `compute` and the collectives, and
    /// the layout must fit the model (all located errors). The device count is checked by
    /// [`check_devices`] once the workload's placement groups are known.
    pub fn finish(self, cx: &mut Cx, job: &str, stmts: &[Stmt]) -> Option<ModelTraining> {
        let Some((span, model)) = self.model else {
            for (key, at) in &self.layout_stmts {
                cx.push(
                    Diagnostic::error(*at, format!("`{key}` needs `model` in the same training job"))
                        .with_help("it describes how a model is laid out: name one (`model llama3_8b`) or remove it"),
                );
            }
            return None;
        };
        for s in stmts {
            let key = s.key.name.as_str();
            if key == "compute" || schema::COLLECTIVES.contains(&key) {
                cx.push(
                    Diagnostic::error(s.key.span, format!("`{key}` cannot be used with `model`"))
                        .with_secondary(span, "the model")
                        .with_help("the model and its layout derive the job's work and communication; remove one form"),
                );
            }
        }
        let model = model?;
        if self.failed {
            return None;
        }
        let Some(((global, gspan), (micro, _))) = self.batch else {
            cx.push(
                Diagnostic::error(span, format!("training `{job}` names a model but no batch"))
                    .with_help(
                        "add `batch global N micro M` (samples per iteration and per microbatch)",
                    ),
            );
            return None;
        };
        let p = self.parallel.unwrap_or(Parallel {
            tp: (1, None),
            pp: (1, None),
            interleave: (1, None),
            dp: (1, None),
            ep: (1, None),
            cp: (1, None),
            first_stage: (1, None),
            last_stage: (1, None),
            sp: None,
            head: span,
        });
        let mut ok = super::layout_rules::layout_fits(cx, &model, &p, global, gspan, micro, span);
        let layout = Layout {
            tp: p.tp.0,
            sp: p.sp.is_some(),
            pp: p.pp.0,
            schedule: if p.interleave.0 > 1 {
                Schedule::Interleaved(p.interleave.0)
            } else {
                Schedule::OneFOneB
            },
            dp: p.dp.0,
            sharding: self.sharding.unwrap_or(Sharding::None),
            ep: p.ep.0,
            recompute: self.recompute.unwrap_or(Recompute::None),
            attention: self.attention.unwrap_or(Attention::Unfused),
            global_batch: global,
            micro_batch: micro,
        };
        if let Some(o) = &self.overlap {
            ok &= super::overlap::check(cx, o, &layout, p.cp.0);
        }
        if let Some(at) = self.tp_comm {
            ok &= super::overlap::check_tp_comm(cx, at, &layout);
        }
        if p.cp.0 > 1 && layout.attention != Attention::Flash {
            cx.push(
                Diagnostic::error(
                    p.cp.1.unwrap_or(p.head),
                    "context parallelism runs attention as TransformerEngine's fused ring attention: it needs `attention flash`",
                )
                .with_help("add `attention flash` to the job, or remove `cp`"),
            );
            ok = false;
        }
        let dtype = self
            .precision
            .unwrap_or_else(|| DEFAULT_PRECISION.to_string());
        let setup = Setup {
            cp: p.cp.0,
            first_stage: p.first_stage.1.map(|_| p.first_stage.0),
            last_stage: p.last_stage.1.map(|_| p.last_stage.0),
            tp_comm_overlap: self.tp_comm.is_some(),
            narrow_gemm_bytes: crate::model::training_widths(&dtype).1,
        };
        ok.then_some(ModelTraining {
            model,
            layout,
            dtype,
            setup,
            overlap: self.overlap,
            span,
            layout_span: p.head,
        })
    }
}

/// Devices a placement group's bundles request (its unit-instance resources: GPU, TPU, …, as
/// the simulation counts a job's devices); a slice group's are the slice's chips, known for
/// each slice of the cluster (`None`: no slice).
fn group_devices(scope: &ResourceScope, pg: &super::workload::PlacementGroup) -> Vec<f64> {
    if pg.slice {
        return scope.slice_chips.iter().map(|c| *c as f64).collect();
    }
    let total = pg
        .bundles
        .iter()
        .flat_map(|b| b.iter())
        .filter(|(k, _)| UNIT_INSTANCE.contains(&k.as_str()))
        .map(|(_, v)| *v)
        .sum();
    vec![total]
}

/// tp × pp × dp must be the devices of the job's placement group (every slice it could get,
/// for a slice group): a located error at the layout, pointing at the group.
pub fn check_devices(cx: &mut Cx, scope: &ResourceScope, w: &Workload) {
    for t in &w.training {
        let Some(m) = &t.model else { continue };
        let Some(pg) = w
            .placement_groups
            .iter()
            .find(|p| p.name == t.placement_group)
        else {
            continue;
        };
        let l = &m.layout;
        let cp = u64::from(m.setup.cp);
        let ranks = u64::from(l.tp) * cp * u64::from(l.pp) * u64::from(l.dp);
        for devices in group_devices(scope, pg) {
            if devices == ranks as f64 {
                continue;
            }
            let shown = crate::units::sig3(devices);
            let what = if pg.slice {
                "a slice it could get has"
            } else {
                "its placement group requests"
            };
            cx.push(
                Diagnostic::error(
                    m.layout_span,
                    format!(
                        "training `{}` lays `{}` over tp {}{} × pp {} × dp {} = {ranks} device{}, but {what} {shown}",
                        t.name,
                        m.model.name,
                        l.tp,
                        if cp > 1 { format!(" × cp {cp}") } else { String::new() },
                        l.pp,
                        l.dp,
                        if ranks == 1 { "" } else { "s" }
                    ),
                )
                .with_secondary(pg.span, format!("placement group `{}`", pg.name))
                .with_help("every device of the group is one rank of the layout: change `parallel` or the bundles"),
            );
            break;
        }
    }
}

/// A model-level job must fit: its per-rank memory (weights, gradients, optimizer state,
/// activations: [`crate::model::per_rank`]) above the largest device its placement group
/// could be given is a located error with the breakdown. Otherwise, unless the job declares
/// `device_memory` itself, that memory becomes its device memory, so placement only puts
/// its bundles where it fits (as `device_memory` does).
pub fn fit_memory(cx: &mut Cx, scope: &ResourceScope, w: &mut Workload) {
    for i in 0..w.training.len() {
        let t = &w.training[i];
        let Some(m) = &t.model else { continue };
        let Some(pg) = w
            .placement_groups
            .iter()
            .find(|p| p.name == t.placement_group)
        else {
            continue;
        };
        let bytes = crate::model::training_widths(&m.dtype).0;
        // A layout that does not divide was reported where it was read.
        let Ok(mem) = crate::model::per_rank_with(&m.model, &m.layout, &m.setup, bytes) else {
            continue;
        };
        let units: Vec<&str> = pg
            .bundles
            .iter()
            .flat_map(|b| b.iter())
            .map(|(k, _)| k.as_str())
            .filter(|k| UNIT_INSTANCE.contains(k))
            .collect();
        let largest = scope
            .node_types
            .iter()
            .flat_map(|nt| nt.devices.iter())
            .filter(|(_, ray, _, _)| pg.slice || units.contains(&ray.as_str()))
            .map(|(_, _, mem, _)| mem.0)
            .max();
        let need = mem.total_bytes();
        let shown = |b: f64| crate::units::gib(b.max(0.0));
        if let Some(largest) = largest
            && need > largest as f64
        {
            cx.push(
                Diagnostic::error(
                    m.span,
                    format!(
                        "training `{}` needs {} per device for `{}` (weights {}, gradients {}, optimizer state {}, activations {}), more than the {} of the largest device its group can get",
                        t.name,
                        shown(need),
                        m.model.name,
                        shown(mem.weights_bytes),
                        shown(mem.gradients_bytes),
                        shown(mem.optimizer_bytes),
                        shown(mem.activations_bytes),
                        shown(largest as f64)
                    ),
                )
                .with_help("shard it further: raise tp or pp, shard the optimizer (`sharding zero1`), recompute activations, or use a smaller micro batch"),
            );
            continue;
        }
        if w.training[i].device_memory.is_none() {
            w.training[i].device_memory = Some(crate::units::Bytes(need.ceil() as u64));
        }
    }
}
