//! Typed access to statements: positional values, `option value` pairs, and conversions of
//! values into typed quantities, each failure reported at its location.
//!
//! A statement reads as `key positional... (option value)...`. [`Args`] hands values out
//! in that order and, when done, reports anything left over ("unexpected `foo`; expected one
//! of ..."), so a typo never passes silently.
//! Lists and maps (names, integer lists, maps with unique keys) are read in [`lists`].

mod lists;

use super::schema::StmtDef;
use crate::diag::{Diagnostic, Omitted, Span, did_you_mean};
use crate::syntax::ast::{Block, Stmt, Value, ValueKind};
use crate::units::{self, Kind};
pub use lists::{int_list, map, names, unique_keys};

/// Largest count in a single statement (`x N`) or name pattern.
pub const MAX_COUNT: u64 = 1_000_000;
/// Largest number of names one pattern may expand to.
pub const MAX_PATTERN: u64 = 100_000;

/// Diagnostics a resolver keeps; past this, it counts them ([`Cx::omitted`]) and drops them.
/// A 4 MiB file of unknown statements gave 331,186 errors and half a gigabyte of diagnostics
/// (issue 42); only [`crate::diag::MAX_SHOWN`] of them are ever printed.
pub const MAX_KEPT: usize = 1_000;

/// Collects diagnostics while resolving: the first [`MAX_KEPT`] kept (always at least one
/// error when there is one, so "has errors" stays true), the rest counted in `omitted`.
#[derive(Default)]
pub struct Cx {
    pub diags: Vec<Diagnostic>,
    /// Diagnostics past [`MAX_KEPT`]: counted, not kept.
    pub omitted: Omitted,
    /// Errors ever reported through [`Cx::push`] and [`Cx::error`], kept or not.
    errors: usize,
    /// Whether an error is among `diags`.
    kept_error: bool,
    /// The last [`RECENT`] diagnostics pushed, kept or not: their spans, and whether each is
    /// an error ([`Args::finish`] asks whether its statement just had one).
    recent: std::collections::VecDeque<(Span, bool)>,
}

/// How many of the last diagnostics [`Cx`] remembers whatever its cap.
const RECENT: usize = 8;

impl Cx {
    /// A collector that starts with `diags` (already capped by whoever collected them).
    pub fn with(diags: Vec<Diagnostic>, omitted: Omitted) -> Cx {
        let kept_error = diags.iter().any(Diagnostic::is_error);
        Cx {
            errors: diags.iter().filter(|d| d.is_error()).count() + omitted.errors,
            diags,
            omitted,
            kept_error,
            recent: Default::default(),
        }
    }
    pub fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.push(Diagnostic::error(span, msg));
    }
    pub fn push(&mut self, d: Diagnostic) {
        let error = d.is_error();
        self.errors += usize::from(error);
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((d.span, error));
        if self.diags.len() < MAX_KEPT || (error && !self.kept_error) {
            self.kept_error |= error;
            self.diags.push(d);
        } else {
            self.omitted.count(d.severity);
        }
    }
    /// Whether the resolver is past its cap: work that only finds more diagnostics (such as
    /// a "did you mean" search) can be skipped.
    pub fn full(&self) -> bool {
        self.diags.len() >= MAX_KEPT
    }
    /// Errors reported so far, kept or not: compare before and after a step to learn whether
    /// it found one.
    pub fn error_count(&self) -> usize {
        self.errors
    }

    /// Walk a block's statements: unknown keys and duplicates of single statements are
    /// reported here; `f` sees each accepted statement with its definition.
    pub fn each<'a>(
        &mut self,
        stmts: &'a [Stmt],
        defs: &[StmtDef],
        what: &str,
        mut f: impl FnMut(&mut Cx, &'a Stmt, &StmtDef),
    ) {
        let mut seen: Vec<(&str, Span)> = Vec::new();
        for s in stmts {
            let key = s.key.name.as_str();
            let Some(def) = self.find_def(s, defs, what) else {
                continue;
            };
            if !def.repeat {
                if let Some((_, first)) = seen.iter().find(|(k, _)| *k == key) {
                    let d =
                        Diagnostic::error(s.key.span, format!("`{key}` is given twice in {what}"))
                            .with_secondary(*first, "first given here");
                    self.push(d);
                    continue;
                }
                seen.push((key, s.key.span));
            }
            f(self, s, def);
        }
    }

    /// The definition of a statement's keyword, or an "unknown statement" error.
    pub fn find_def<'d>(
        &mut self,
        s: &Stmt,
        defs: &'d [StmtDef],
        what: &str,
    ) -> Option<&'d StmtDef> {
        let key = s.key.name.as_str();
        let def = defs.iter().find(|d| d.key == key);
        if def.is_none() {
            // Past the cap only the count matters: skip the suggestion (a 16 MiB file of
            // unknown words is millions of them).
            let help = (!self.full())
                .then(|| did_you_mean(key, defs.iter().map(|d| d.key)))
                .flatten()
                .unwrap_or_else(|| {
                    format!(
                        "{what} accepts: {}",
                        defs.iter().map(|d| d.key).collect::<Vec<_>>().join(", ")
                    )
                });
            self.push(
                Diagnostic::error(s.key.span, format!("unknown statement `{key}` in {what}"))
                    .with_help(help),
            );
        }
        def
    }

    /// The block of a statement that must have one.
    pub fn block<'a>(&mut self, s: &'a Stmt) -> Option<&'a Block> {
        if s.block.is_none() {
            self.push(
                Diagnostic::error(
                    s.head_span(),
                    format!("`{}` needs a block `{{ ... }}`", s.key.name),
                )
                .with_label("block expected after this"),
            );
        }
        s.block.as_deref()
    }

    /// Statements that take no block must not have one.
    pub fn no_block(&mut self, s: &Stmt) {
        if let Some(b) = &s.block {
            self.error(b.span, format!("`{}` does not take a block", s.key.name));
        }
    }
}

/// The values of one statement, handed out in order.
pub struct Args<'a> {
    pub stmt: &'a Stmt,
    used: Vec<bool>,
    words: &'static [&'static str],
    /// Problems found while handing values out; reported by [`Args::finish`].
    diags: Vec<Diagnostic>,
}

impl<'a> Args<'a> {
    pub fn new(stmt: &'a Stmt, def: &StmtDef) -> Self {
        Args {
            stmt,
            used: vec![false; stmt.values.len()],
            words: def.words,
            diags: Vec::new(),
        }
    }

    fn key(&self) -> &str {
        &self.stmt.key.name
    }

    /// Where to point when something is missing: the end of the statement header.
    pub fn end_span(&self) -> Span {
        let h = self.stmt.head_span();
        Span::new(h.file, h.end, h.end)
    }

    /// The next unused value, if any.
    pub fn next_value(&mut self) -> Option<&'a Value> {
        let k = self.used.iter().position(|u| !u)?;
        self.used[k] = true;
        Some(&self.stmt.values[k])
    }

    /// The next value, which must exist.
    pub fn req(&mut self, what: &str) -> Option<&'a Value> {
        let v = self.next_value();
        if v.is_none() {
            self.diags.push(
                Diagnostic::error(self.end_span(), format!("`{}` needs {what}", self.key()))
                    .with_label(format!("expected {what} here")),
            );
        }
        v
    }

    /// The next unused value if it satisfies `pred` (consumed only then).
    pub fn next_if(&mut self, pred: impl Fn(&Value) -> bool) -> Option<&'a Value> {
        let k = self.used.iter().position(|u| !u)?;
        if !pred(&self.stmt.values[k]) {
            return None;
        }
        self.used[k] = true;
        Some(&self.stmt.values[k])
    }

    /// Whether the next unused value is the word `w` (consumed if so).
    pub fn peek_word(&mut self, w: &str) -> bool {
        let Some(k) = self.used.iter().position(|u| !u) else {
            return false;
        };
        if matches!(&self.stmt.values[k].kind, ValueKind::Ident(n) if n == w) {
            self.used[k] = true;
            return true;
        }
        false
    }

    fn find_word(&self, w: &str) -> Option<usize> {
        (0..self.stmt.values.len()).find(|&k| {
            !self.used[k] && matches!(&self.stmt.values[k].kind, ValueKind::Ident(n) if n == w)
        })
    }

    /// `word value` anywhere among the unused values: returns the value.
    pub fn opt(&mut self, word: &str) -> Option<&'a Value> {
        let k = self.find_word(word)?;
        self.used[k] = true;
        match self.stmt.values.get(k + 1) {
            Some(v) if !self.used[k + 1] => {
                self.used[k + 1] = true;
                Some(v)
            }
            _ => {
                let s = self.stmt.values[k].span;
                self.diags.push(
                    Diagnostic::error(s, format!("`{word}` needs a value after it"))
                        .with_label("value expected after this"),
                );
                None
            }
        }
    }

    /// `word value`, which must be present: a missing one is reported as "`key` needs `what`".
    pub fn need(&mut self, word: &str, what: &str) -> Option<&'a Value> {
        if self.find_word(word).is_some() {
            return self.opt(word);
        }
        let d = Diagnostic::error(self.end_span(), format!("`{}` needs `{what}`", self.key()))
            .with_label(format!("expected `{what}` here"));
        self.diags.push(d);
        None
    }

    /// A bare word (flag) anywhere among the unused values.
    pub fn flag(&mut self, word: &str) -> bool {
        match self.find_word(word) {
            Some(k) => {
                self.used[k] = true;
                true
            }
            None => false,
        }
    }

    /// Report values nobody asked for.
    /// Leftovers are not reported after an error in the same statement: they are usually
    /// the consequence of that error, not a second problem.
    pub fn finish(mut self, cx: &mut Cx) {
        for d in std::mem::take(&mut self.diags) {
            cx.push(d);
        }
        let sp = self.stmt.span;
        let errored = cx.recent.iter().any(|&(s, error)| {
            error && s.file == sp.file && s.start >= sp.start && s.start <= sp.end
        });
        if errored {
            return;
        }
        for (k, v) in self.stmt.values.iter().enumerate() {
            if self.used[k] {
                continue;
            }
            let (msg, help) = match &v.kind {
                ValueKind::Ident(n) => (
                    format!("unexpected `{n}` in `{}`", self.key()),
                    did_you_mean(n, self.words.iter().copied()).or_else(|| {
                        (!self.words.is_empty())
                            .then(|| format!("`{}` takes: {}", self.key(), self.words.join(", ")))
                    }),
                ),
                other => (
                    format!("unexpected {} in `{}`", other.describe(), self.key()),
                    None,
                ),
            };
            cx.push(Diagnostic::error(v.span, msg).with_help_opt(help));
        }
    }
}

// ---- conversions -------------------------------------------------------------------------

/// A quantity of `kind`, in base units. Plain numbers and other kinds are errors.
pub fn quantity(cx: &mut Cx, v: &Value, kind: Kind) -> Option<f64> {
    match &v.kind {
        ValueKind::Quantity { num, unit: Some(u) } => {
            let Some((k, factor)) = units::lookup(u) else {
                cx.error(v.span, format!("unknown unit `{u}`"));
                return None;
            };
            if k != kind {
                cx.push(
                    Diagnostic::error(
                        v.span,
                        format!("expected {}, found {} (`{u}`)", kind.name(), k.name()),
                    )
                    .with_help(format!(
                        "write {} such as `{}`",
                        kind.name(),
                        kind.example()
                    )),
                );
                return None;
            }
            let x = num.value * factor;
            if x < 0.0 {
                cx.error(v.span, format!("{} must not be negative", kind.name()));
                return None;
            }
            Some(x)
        }
        ValueKind::Quantity { unit: None, .. } => {
            cx.push(
                Diagnostic::error(
                    v.span,
                    format!("expected {}, found a number without a unit", kind.name()),
                )
                .with_help(format!("add a unit, as in `{}`", kind.example())),
            );
            None
        }
        ValueKind::Ident(n) if units::lookup(n).is_none() => {
            let help = did_you_mean(n, units::UNITS.iter().filter(|u| u.1 == kind).map(|u| u.0))
                .map(|h| format!("{h} (units follow their number)"))
                .unwrap_or_else(|| format!("write {} such as `{}`", kind.name(), kind.example()));
            cx.push(
                Diagnostic::error(
                    v.span,
                    format!("expected {}, found {}", kind.name(), v.kind.describe()),
                )
                .with_help(help),
            );
            None
        }
        other => {
            cx.push(
                Diagnostic::error(
                    v.span,
                    format!("expected {}, found {}", kind.name(), other.describe()),
                )
                .with_help(format!(
                    "write {} such as `{}`",
                    kind.name(),
                    kind.example()
                )),
            );
            None
        }
    }
}

pub fn bytes(cx: &mut Cx, v: &Value) -> Option<units::Bytes> {
    let x = quantity(cx, v, Kind::Bytes)?;
    if x > 1e21 {
        cx.error(v.span, "size is absurdly large (over 1 ZB)");
        return None;
    }
    Some(units::Bytes(x.round() as u64))
}

pub fn bandwidth(cx: &mut Cx, v: &Value) -> Option<units::Bandwidth> {
    let x = quantity(cx, v, Kind::Bandwidth)?;
    positive(cx, v, x, "bandwidth")?;
    if x > 1e18 {
        cx.error(v.span, "bandwidth is absurdly large (over 1 EB/s)");
        return None;
    }
    Some(units::Bandwidth(x))
}

pub fn duration(cx: &mut Cx, v: &Value) -> Option<units::Duration> {
    let x = quantity(cx, v, Kind::Time)?;
    // 1000 years in ns is about 3.2e19, beyond u64; cap at 100 years.
    if x > 100.0 * 365.25 * 86400e9 {
        cx.error(v.span, "time is absurdly long (over 100 years)");
        return None;
    }
    Some(units::Duration(x.round() as u64))
}

macro_rules! simple {
    ($name:ident, $kind:expr, $ty:ident) => {
        pub fn $name(cx: &mut Cx, v: &Value) -> Option<units::$ty> {
            quantity(cx, v, $kind).map(units::$ty)
        }
    };
}
simple!(flop_rate, Kind::FlopRate, FlopRate);
simple!(flop, Kind::Flop, Flop);
simple!(power, Kind::Power, Power);
simple!(price, Kind::Price, Price);
simple!(event_rate, Kind::Rate, EventRate);
simple!(fraction, Kind::Fraction, Fraction);

fn positive(cx: &mut Cx, v: &Value, x: f64, what: &str) -> Option<()> {
    if x <= 0.0 {
        cx.error(v.span, format!("{what} must be greater than zero"));
        return None;
    }
    Some(())
}

/// A plain number (no unit).
pub fn number(cx: &mut Cx, v: &Value) -> Option<f64> {
    match &v.kind {
        ValueKind::Quantity { num, unit: None } => Some(num.value),
        other => {
            cx.error(
                v.span,
                format!("expected a plain number, found {}", other.describe()),
            );
            None
        }
    }
}

/// A whole number in `min..=max`.
pub fn count(cx: &mut Cx, v: &Value, min: u64, max: u64) -> Option<u64> {
    let x = number(cx, v)?;
    if x.fract() != 0.0 {
        cx.error(v.span, format!("expected a whole number, found `{x}`"));
        return None;
    }
    if x < min as f64 || x > max as f64 {
        cx.push(
            Diagnostic::error(
                v.span,
                format!("{} is out of range", crate::syntax::fmt::inline(v)),
            )
            .with_label(format!("expected a whole number from {min} to {max}")),
        );
        return None;
    }
    Some(x as u64)
}

pub fn ident<'a>(cx: &mut Cx, v: &'a Value, what: &str) -> Option<&'a str> {
    match &v.kind {
        ValueKind::Ident(n) => Some(n),
        other => {
            cx.error(
                v.span,
                format!("expected {what}, found {}", other.describe()),
            );
            None
        }
    }
}

pub fn string<'a>(cx: &mut Cx, v: &'a Value) -> Option<&'a str> {
    match &v.kind {
        ValueKind::Str(s) => Some(s),
        other => {
            cx.push(
                Diagnostic::error(
                    v.span,
                    format!("expected a string, found {}", other.describe()),
                )
                .with_help("put text in double quotes"),
            );
            None
        }
    }
}

pub fn ident_or_string<'a>(cx: &mut Cx, v: &'a Value, what: &str) -> Option<&'a str> {
    match &v.kind {
        ValueKind::Ident(n) | ValueKind::Str(n) => Some(n),
        other => {
            cx.error(
                v.span,
                format!("expected {what}, found {}", other.describe()),
            );
            None
        }
    }
}

/// One of a fixed set of words.
pub fn choice(
    cx: &mut Cx,
    v: &Value,
    options: &[&'static str],
    what: &str,
) -> Option<&'static str> {
    let n = ident(cx, v, what)?;
    match options.iter().find(|o| **o == n) {
        Some(o) => Some(o),
        None => {
            let help = did_you_mean(n, options.iter().copied())
                .unwrap_or_else(|| format!("expected one of: {}", options.join(", ")));
            cx.push(Diagnostic::error(v.span, format!("unknown {what} `{n}`")).with_help(help));
            None
        }
    }
}

pub fn boolean(cx: &mut Cx, v: &Value) -> Option<bool> {
    match &v.kind {
        ValueKind::Ident(n) if n == "true" => Some(true),
        ValueKind::Ident(n) if n == "false" => Some(false),
        other => {
            cx.error(
                v.span,
                format!("expected `true` or `false`, found {}", other.describe()),
            );
            None
        }
    }
}
