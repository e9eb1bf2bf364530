//! Reading a flow file: lines of whitespace-separated tokens, two passes (links, then flows,
//! so a flow may name a link declared below it), one located error per wrong line.

use std::collections::HashMap;

use super::{Flow, FlowFile, Link, MAX_FLOWS, MAX_LINKS, MAX_PATH};
use crate::diag::{Diagnostic, FileId, Span};
use crate::syntax::parse::{MAX_ERRORS, MAX_IDENT_CHARS};
use crate::units::{self, Kind};

/// The two lines of the format, for messages.
const LINK_LINE: &str = "link ID BANDWIDTH LATENCY";
const FLOW_LINE: &str = "flow ID BYTES START LINK...";

/// Candidate characters a file's "did you mean" suggestions may compare in all (an unknown
/// link among a million long ids must not cost minutes); past it, no suggestion.
const SUGGEST_BUDGET: usize = 200_000_000;

/// One whitespace-separated token and its byte offset in the file.
#[derive(Clone, Copy)]
struct Tok<'a> {
    s: &'a str,
    at: usize,
}

/// Each line's tokens, comments cut.
fn lines(text: &str) -> impl Iterator<Item = Vec<Tok<'_>>> {
    let mut at = 0;
    text.split_inclusive('\n').map(move |raw| {
        let start = at;
        at += raw.len();
        let body = raw.trim_end_matches(['\n', '\r']);
        let body = body.split('#').next().unwrap_or("");
        let mut toks = Vec::new();
        let mut i = 0;
        for piece in body.split([' ', '\t', '\r']) {
            if !piece.is_empty() {
                toks.push(Tok {
                    s: piece,
                    at: start + i,
                });
            }
            i += piece.len() + 1;
        }
        toks
    })
}

/// Whether `s` is an id: letters, digits, `_`, `-` and `.` (ASCII).
fn is_id(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The leading number of a token and the rest (its unit): `400Gbps` → (400, `Gbps`). The
/// number is the scenario language's: digits (`_` allowed after the first), an optional
/// fraction and exponent, an optional leading `-`.
fn split_number(t: &str) -> Option<(f64, &str)> {
    let b = t.as_bytes();
    let digits = |mut i: usize, under: bool| {
        let first = i;
        while i < b.len() && (b[i].is_ascii_digit() || (under && i > first && b[i] == b'_')) {
            i += 1;
        }
        i
    };
    let d0 = usize::from(b.first() == Some(&b'-'));
    let mut i = digits(d0, true);
    if i == d0 {
        return None;
    }
    if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i = digits(i + 1, false);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let j = i + 1 + usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            i = digits(j, false);
        }
    }
    let num: String = t[..i].chars().filter(|&c| c != '_').collect();
    num.parse::<f64>().ok().map(|x| (x, &t[i..]))
}

/// What a field holds, for messages.
#[derive(Clone, Copy, PartialEq)]
enum Field {
    Bandwidth,
    Latency,
    Start,
    Bytes,
}

impl Field {
    fn kind(self) -> Kind {
        match self {
            Field::Bandwidth => Kind::Bandwidth,
            Field::Latency | Field::Start => Kind::Time,
            Field::Bytes => Kind::Bytes,
        }
    }
    fn upper(self) -> &'static str {
        match self {
            Field::Bandwidth => "BANDWIDTH",
            Field::Latency => "LATENCY",
            Field::Start => "START",
            Field::Bytes => "BYTES",
        }
    }
    /// What is expected, with examples in this format's spelling (no space before the unit).
    fn expected(self) -> &'static str {
        match self {
            Field::Bandwidth => "a bandwidth such as `400Gbps` or `25GB/s`",
            Field::Latency => "a latency such as `1.5us` or `0s`",
            Field::Start => "a start time such as `0s` or `2.5ms`",
            Field::Bytes => "a size: bytes as a bare number (`1000000`) or with a unit (`64MiB`)",
        }
    }
}

/// A kind of quantity with its article, for "found `1us`, a time".
fn a_kind(k: Kind) -> String {
    match k {
        Kind::Bytes => "a size in bytes".into(),
        Kind::Money => "an amount of money".into(),
        Kind::Energy => "an energy".into(),
        Kind::Fraction => "a fraction".into(),
        Kind::Rate => "an event rate".into(),
        k => format!("a {}", k.name()),
    }
}

/// Thousands separators for limits in messages: `1,000,000`.
fn grouped(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A line's error, boxed (it is the rare path).
type Fail = Box<Diagnostic>;

/// A declared link as the parser knows it: index, where its id is, whether its line was valid.
#[derive(Clone, Copy)]
struct Declared {
    index: usize,
    span: Span,
    ok: bool,
}

struct Parser<'a> {
    file: FileId,
    diags: Vec<Diagnostic>,
    /// Set when a pass must stop (too many errors, a count limit).
    stop: bool,
    /// Set when a count limit stopped a pass.
    limited: bool,
    out: FlowFile,
    link_ids: HashMap<&'a str, Declared>,
    /// Link ids in declaration order (suggestions are deterministic).
    link_order: Vec<&'a str>,
    flow_ids: HashMap<&'a str, Span>,
    suggest_left: usize,
}

impl<'a> Parser<'a> {
    fn span(&self, t: Tok<'a>) -> Span {
        Span::new(self.file, t.at, t.at + t.s.len())
    }

    fn error(&mut self, d: impl Into<Fail>) {
        self.diags.push(*d.into());
        if self.diags.len() >= MAX_ERRORS {
            self.stop = true;
        }
    }

    /// A zero-width span just after the last token of a line, for a missing field: `name`
    /// (`BANDWIDTH`), `expected` what it holds, `line` the line's shape.
    fn missing(&mut self, last: Tok<'a>, name: &str, expected: &str, line: &str) {
        let end = last.at + last.s.len();
        let d = Diagnostic::error(
            Span::new(self.file, end, end),
            format!("missing {name}: a {} line is `{line}`", &line[..4]),
        )
        .with_label(format!("expected {expected} here"));
        self.error(d);
    }

    fn missing_field(&mut self, last: Tok<'a>, field: Field, line: &str) {
        self.missing(last, field.upper(), field.expected(), line);
    }

    /// A field's value in base units (bytes/s, seconds, bytes), checked for its range.
    fn quantity(&self, t: Tok<'a>, next: Option<Tok<'a>>, field: Field) -> Result<f64, Fail> {
        let span = self.span(t);
        let want = field.kind();
        let err = |msg: String| Diagnostic::error(span, msg);
        let Some((x, unit)) = split_number(t.s) else {
            let help = units::lookup(t.s).map(|_| {
                format!(
                    "a unit is written right after its number: `64{0}`, not `64 {0}`",
                    t.s
                )
            });
            return Err(Box::new(
                err(format!("expected {}, found `{}`", field.expected(), t.s)).with_help_opt(help),
            ));
        };
        let value = if unit.is_empty() {
            if field != Field::Bytes {
                let help = match next.and_then(|n| units::lookup(n.s)) {
                    Some((k, _)) if k == want => format!(
                        "write the number and its unit as one token: `{}{}`",
                        t.s,
                        next.map_or("", |n| n.s)
                    ),
                    _ => format!(
                        "write the unit right after the number, e.g. `{}{}`",
                        t.s,
                        if field == Field::Bandwidth {
                            "Gbps"
                        } else {
                            "s"
                        }
                    ),
                };
                return Err(Box::new(
                    err(format!(
                        "`{}` has no unit: expected {}",
                        t.s,
                        field.expected()
                    ))
                    .with_help(help),
                ));
            }
            x
        } else {
            match units::lookup(unit) {
                Some((k, f)) if k == want => match field {
                    // Seconds from nanoseconds, by an exact power of ten where it divides.
                    Field::Latency | Field::Start if f < 1e9 => x / (1e9 / f),
                    Field::Latency | Field::Start => x * (f / 1e9),
                    _ => x * f,
                },
                Some((k, _)) => {
                    return Err(Box::new(
                        err(format!(
                            "expected {}, found `{}`, {}",
                            field.expected(),
                            t.s,
                            a_kind(k)
                        ))
                        .with_label(format!("{} here", a_kind(k))),
                    ));
                }
                None => {
                    let same: Vec<&str> = units::UNITS
                        .iter()
                        .filter(|u| u.1 == want)
                        .map(|u| u.0)
                        .collect();
                    return Err(Box::new(
                        err(format!("unknown unit `{unit}` in `{}`", t.s))
                            .with_label(format!("expected {}", field.expected()))
                            .with_help_opt(crate::diag::did_you_mean(unit, same)),
                    ));
                }
            }
        };
        if !value.is_finite() {
            return Err(Box::new(err(format!(
                "`{}` is not a finite {}",
                t.s,
                want.name()
            ))));
        }
        let ok = match field {
            Field::Bandwidth => value > 0.0,
            _ => value >= 0.0,
        };
        if !ok {
            let what = match field {
                Field::Bandwidth => "a link's bandwidth must be positive",
                Field::Latency => "a link's latency cannot be negative",
                Field::Start => "a flow's start cannot be negative",
                Field::Bytes => "a flow's size cannot be negative",
            };
            return Err(Box::new(err(format!("{what}, found `{}`", t.s))));
        }
        Ok(value + 0.0)
    }

    /// An id token, or its error.
    fn id(&self, t: Tok<'a>) -> Result<&'a str, Fail> {
        let span = self.span(t);
        if t.s.len() > MAX_IDENT_CHARS {
            return Err(Box::new(Diagnostic::error(
                span,
                format!(
                    "a name of {} characters; names are at most {MAX_IDENT_CHARS}",
                    t.s.chars().count()
                ),
            )));
        }
        if !is_id(t.s) {
            return Err(Box::new(Diagnostic::error(
                span,
                format!(
                    "`{}` is not an id: ids are ASCII letters, digits, `_`, `-` and `.`",
                    t.s
                ),
            )));
        }
        Ok(t.s)
    }

    /// A `link` line (pass 1). Its id is declared even when its values are wrong, so flows
    /// naming it are not also reported.
    fn link(&mut self, toks: &[Tok<'a>]) {
        if self.out.links.len() >= MAX_LINKS {
            let d = Diagnostic::error(
                self.span(toks[0]),
                format!(
                    "more than {} links: a flow file holds at most that many",
                    grouped(MAX_LINKS)
                ),
            );
            self.error(d);
            self.stop = true;
            self.limited = true;
            return;
        }
        let Some(&id_tok) = toks.get(1) else {
            return self.missing(toks[0], "ID", "the link's id", LINK_LINE);
        };
        let id = match self.id(id_tok) {
            Ok(id) => id,
            Err(d) => return self.error(d),
        };
        let span = self.span(id_tok);
        if let Some(first) = self.link_ids.get(id) {
            let d = Diagnostic::error(span, format!("link `{id}` is declared twice"))
                .with_label("declared again here")
                .with_secondary(first.span, "first declared here");
            return self.error(d);
        }
        let index = self.out.links.len();
        let values = self.link_values(toks);
        let ok = values.is_ok();
        let (bandwidth, latency) = match values {
            Ok(v) => v,
            Err(d) => {
                if let Some(d) = d {
                    self.error(d);
                }
                (f64::NAN, f64::NAN)
            }
        };
        self.link_ids.insert(id, Declared { index, span, ok });
        self.link_order.push(id);
        self.out.links.push(Link {
            id: id.to_string(),
            bandwidth,
            latency,
        });
    }

    /// A link line's bandwidth and latency; `Err(None)` when the error was reported already.
    fn link_values(&mut self, toks: &[Tok<'a>]) -> Result<(f64, f64), Option<Fail>> {
        let Some(&bw) = toks.get(2) else {
            self.missing_field(toks[1], Field::Bandwidth, LINK_LINE);
            return Err(None);
        };
        let bandwidth = self.quantity(bw, toks.get(3).copied(), Field::Bandwidth)?;
        let Some(&lat) = toks.get(3) else {
            self.missing_field(bw, Field::Latency, LINK_LINE);
            return Err(None);
        };
        let latency = self.quantity(lat, toks.get(4).copied(), Field::Latency)?;
        if let Some(&extra) = toks.get(4) {
            return Err(Some(Box::new(
                Diagnostic::error(
                    self.span(extra),
                    format!("unexpected `{}`: a link line is `{LINK_LINE}`", extra.s),
                )
                .with_label("after the link's latency"),
            )));
        }
        Ok((bandwidth, latency))
    }

    /// A `flow` line (pass 2, every link declared).
    fn flow(&mut self, toks: &[Tok<'a>]) {
        if self.out.flows.len() >= MAX_FLOWS {
            let d = Diagnostic::error(
                self.span(toks[0]),
                format!(
                    "more than {} flows: a flow file holds at most that many",
                    grouped(MAX_FLOWS)
                ),
            );
            self.error(d);
            self.stop = true;
            self.limited = true;
            return;
        }
        if let Err(Some(d)) = self.flow_line(toks) {
            self.error(d);
        }
    }

    fn flow_line(&mut self, toks: &[Tok<'a>]) -> Result<(), Option<Fail>> {
        let Some(&id_tok) = toks.get(1) else {
            self.missing(toks[0], "ID", "the flow's id", FLOW_LINE);
            return Err(None);
        };
        let id = self.id(id_tok)?;
        let span = self.span(id_tok);
        if let Some(&first) = self.flow_ids.get(id) {
            return Err(Some(Box::new(
                Diagnostic::error(span, format!("flow `{id}` is declared twice"))
                    .with_label("declared again here")
                    .with_secondary(first, "first declared here"),
            )));
        }
        self.flow_ids.insert(id, span);
        let Some(&b) = toks.get(2) else {
            self.missing_field(id_tok, Field::Bytes, FLOW_LINE);
            return Err(None);
        };
        let bytes = self.quantity(b, toks.get(3).copied(), Field::Bytes)?;
        let Some(&s) = toks.get(3) else {
            self.missing_field(b, Field::Start, FLOW_LINE);
            return Err(None);
        };
        let start = self.quantity(s, toks.get(4).copied(), Field::Start)?;
        if toks.len() < 5 {
            return Err(Some(Box::new(
                Diagnostic::error(
                    Span::new(self.file, s.at + s.s.len(), s.at + s.s.len()),
                    format!("flow `{id}` crosses no link: a flow line is `{FLOW_LINE}`"),
                )
                .with_label("expected the ids of the links it crosses here"),
            )));
        }
        if toks.len() - 4 > MAX_PATH {
            return Err(Some(Box::new(Diagnostic::error(
                self.span(toks[4 + MAX_PATH]),
                format!(
                    "a path of {} links: a flow crosses at most {}",
                    toks.len() - 4,
                    grouped(MAX_PATH)
                ),
            ))));
        }
        let mut path = Vec::with_capacity(toks.len() - 4);
        let mut ok = true;
        for &t in &toks[4..] {
            match self.link_ids.get(t.s) {
                Some(l) => {
                    ok &= l.ok;
                    path.push(l.index);
                }
                None => return Err(Some(Box::new(self.unknown_link(t)))),
            }
        }
        if ok {
            self.out.flows.push(Flow {
                id: id.to_string(),
                bytes,
                start,
                path,
            });
        }
        Ok(())
    }

    fn unknown_link(&mut self, t: Tok<'a>) -> Diagnostic {
        let span = self.span(t);
        if let Err(d) = self.id(t) {
            return *d;
        }
        // Candidates: ids within 3 characters of its length (a cheap filter), compared until
        // the file's budget is spent.
        let n = t.s.len();
        let left = std::cell::Cell::new(self.suggest_left);
        let candidates = self
            .link_order
            .iter()
            .copied()
            .filter(|c| c.len().abs_diff(n) <= 3)
            .take_while(|c| {
                let cost = c.len() * n;
                let ok = left.get() >= cost;
                left.set(left.get().saturating_sub(cost));
                ok
            });
        let help = crate::diag::did_you_mean(t.s, candidates);
        self.suggest_left = left.get();
        Diagnostic::error(span, format!("unknown link `{}`", t.s))
            .with_label("no `link` line declares it")
            .with_help_opt(help)
    }
}

/// [`FlowFile::parse`].
pub(super) fn parse(text: &str, file: FileId) -> Result<FlowFile, Vec<Diagnostic>> {
    let mut p = Parser {
        file,
        diags: Vec::new(),
        stop: false,
        limited: false,
        out: FlowFile::default(),
        link_ids: HashMap::new(),
        link_order: Vec::new(),
        flow_ids: HashMap::new(),
        suggest_left: SUGGEST_BUDGET,
    };
    // Pass 1: links (and unknown statements), so a flow may name a link declared below it.
    for toks in lines(text) {
        if p.stop {
            break;
        }
        match toks.first().map(|t| t.s) {
            None | Some("flow") => {}
            Some("link") => p.link(&toks),
            Some(other) => {
                let d = Diagnostic::error(
                    p.span(toks[0]),
                    format!(
                        "unknown statement `{other}`: a line is `{LINK_LINE}` or `{FLOW_LINE}`"
                    ),
                )
                .with_help_opt(crate::diag::did_you_mean(other, ["link", "flow"]));
                p.error(d);
            }
        }
    }
    let first_pass = std::mem::take(&mut p.diags);
    // Past the links' limit the links are not all known: flows would be misreported.
    p.stop = p.limited;
    for toks in lines(text) {
        if p.stop {
            break;
        }
        if toks.first().is_some_and(|t| t.s == "flow") {
            p.flow(&toks);
        }
    }
    if first_pass.is_empty() && p.diags.is_empty() {
        return Ok(p.out);
    }
    // Each pass stopped after MAX_ERRORS, so the first MAX_ERRORS of both together, by
    // place, are the file's first MAX_ERRORS.
    let mut all = first_pass;
    all.append(&mut p.diags);
    all.sort_by_key(|d| d.span.start);
    if all.len() > MAX_ERRORS {
        all.truncate(MAX_ERRORS);
        let at = all[MAX_ERRORS - 1].span;
        all.push(Diagnostic::error(at, "too many errors; stopping here"));
    }
    Err(all)
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
