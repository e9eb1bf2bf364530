//! Diagnostics: located errors with a source excerpt, a caret and an optional suggestion.
//!
//! Every stage (syntax, resolve) reports problems as [`Diagnostic`]s that point into a
//! [`SourceMap`] by [`Span`]; stages keep going after an error so that a user sees every
//! problem the front end can recover to, not only the first. Rendering uses
//! `codespan-reporting`, which prints `file:line:column`, the offending line and a caret.

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::term::{self, termcolor};
use excerpt::Excerpt;

mod excerpt;

/// Index of a file in a [`SourceMap`].
pub type FileId = usize;

/// A byte range in one source file. Spans are plain data: they never borrow the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Self {
        Span {
            file,
            start,
            end: end.max(start),
        }
    }
    /// The smallest span covering both (same file assumed).
    pub fn to(self, other: Span) -> Span {
        Span::new(
            self.file,
            self.start.min(other.start),
            self.end.max(other.end),
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

/// One problem, located. `help` carries a suggestion such as "did you mean `H100_SXM`?".
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    pub span: Span,
    pub label: String,
    pub secondary: Vec<(Span, String)>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span,
            label: String::new(),
            secondary: Vec::new(),
            help: None,
        }
    }
    pub fn warning(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(span, message)
        }
    }
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
    pub fn with_help_opt(mut self, help: Option<String>) -> Self {
        self.help = help;
        self
    }
    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Self {
        self.secondary.push((span, label.into()));
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// All source files of one scenario: the root file, its includes and the embedded catalog.
/// Cloning shares the files: a scenario keeps a copy of its map for sweeps, and a 16 MiB
/// file's text and line table were held twice (issue 42).
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    files: Vec<std::sync::Arc<SourceFile>>,
}

#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    /// What the scenario hash covers of this file besides its text: its name as the scenario
    /// refers to it (an include's path relative to the root's folder, a profile's
    /// `calibration/NAME.toml`), and nothing for the root file, so the hash does not depend
    /// on how the path to the scenario was typed.
    pub key: String,
    pub text: String,
    line_starts: Vec<usize>,
    /// All ASCII: a column is a byte count, found without scanning the line.
    ascii: bool,
}

impl SourceMap {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        let name = name.into();
        self.add_keyed(name.clone(), name, text)
    }
    /// Add a file whose scenario-hash key differs from the name shown in messages.
    pub fn add_keyed(
        &mut self,
        name: impl Into<String>,
        key: impl Into<String>,
        text: impl Into<String>,
    ) -> FileId {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        self.files.push(std::sync::Arc::new(SourceFile {
            name: name.into(),
            key: key.into(),
            ascii: text.is_ascii(),
            text,
            line_starts,
        }));
        self.files.len() - 1
    }
    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id]
    }
    pub fn len(&self) -> usize {
        self.files.len()
    }
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, file: FileId, offset: usize) -> (usize, usize) {
        let f = &self.files[file];
        let offset = offset.min(f.text.len());
        let line = f.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = f.line_starts[line];
        let col = match f.text.get(start..offset) {
            Some(s) if !f.ascii => s.chars().count(),
            _ => offset - start,
        };
        (line + 1, col + 1)
    }
    /// `file:line:col` of the start of a span.
    pub fn location(&self, span: Span) -> String {
        let (l, c) = self.line_col(span.file, span.start);
        format!("{}:{}:{}", self.files[span.file].name, l, c)
    }
    pub fn snippet(&self, span: Span) -> &str {
        let t = &self.files[span.file].text;
        t.get(span.start.min(t.len())..span.end.min(t.len()))
            .unwrap_or("")
    }
}

/// At most this many diagnostics are rendered; the rest are counted in one closing line
/// ("and 49900 more errors"), so the output of any input stays small (issue 42).
pub const MAX_SHOWN: usize = 100;

/// Render diagnostics as text (`color` for terminals), at most [`MAX_SHOWN`] of them, then a
/// line counting the others. The first line of each names `file:line:column`; the excerpt
/// follows with a caret under the offending text. Each diagnostic shows only its own lines
/// ([`excerpt`]), long lines cut around the place it points at, so rendering costs what it
/// prints, never a copy or a walk of the whole file.
pub fn render(map: &SourceMap, diags: &[Diagnostic], color: bool) -> String {
    render_omitting(map, diags, Omitted::default(), color)
}

/// [`render`] for a list that `omitted` more diagnostics were left out of when collected
/// ([`Omitted`]); the closing line counts them with the rest.
pub fn render_omitting(
    map: &SourceMap,
    diags: &[Diagnostic],
    omitted: Omitted,
    color: bool,
) -> String {
    let config = term::Config::default();
    let mut out: Vec<u8> = Vec::new();
    let shown = diags.len().min(MAX_SHOWN);
    for d in &diags[..shown] {
        let (cs, files) = to_codespan(d, map);
        if color {
            let mut w = termcolor::Ansi::new(&mut out);
            let _ = term::emit_to_write_style(&mut w, &config, &files, &cs);
        } else {
            let mut w = termcolor::NoColor::new(&mut out);
            let _ = term::emit_to_write_style(&mut w, &config, &files, &cs);
        }
    }
    let mut rest = omitted;
    for d in &diags[shown..] {
        rest.count(d.severity);
    }
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if let Some(line) = rest.sentence() {
        text.push_str(&line);
        text.push_str("\n\n");
    }
    text
}

/// Diagnostics counted but not kept: past a cap, a collector keeps counting what it drops
/// so that every count a user sees stays exact.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Omitted {
    pub errors: usize,
    pub warnings: usize,
    pub notes: usize,
}

impl Omitted {
    pub fn count(&mut self, severity: Severity) {
        match severity {
            Severity::Error => self.errors += 1,
            Severity::Warning => self.warnings += 1,
            Severity::Note => self.notes += 1,
        }
    }
    pub fn add(&mut self, other: Omitted) {
        self.errors += other.errors;
        self.warnings += other.warnings;
        self.notes += other.notes;
    }
    pub fn is_empty(&self) -> bool {
        *self == Omitted::default()
    }
    /// "and 49900 more errors and 3 more warnings", or nothing when none were left out.
    pub fn sentence(&self) -> Option<String> {
        let part = |n: usize, what: &str| {
            (n > 0).then(|| format!("{n} more {what}{}", if n == 1 { "" } else { "s" }))
        };
        let parts: Vec<String> = [
            part(self.errors, "error"),
            part(self.warnings, "warning"),
            part(self.notes, "note"),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| format!("and {}", parts.join(" and ")))
    }
}

fn to_codespan<'m>(d: &Diagnostic, map: &'m SourceMap) -> (CsDiagnostic<FileId>, Excerpt<'m>) {
    let base = match d.severity {
        Severity::Error => CsDiagnostic::error(),
        Severity::Warning => CsDiagnostic::warning(),
        Severity::Note => CsDiagnostic::note(),
    };
    // The header carries file:line:col so that the location is on the first line even when
    // the renderer's excerpt is cut or the output is grepped.
    let header = format!("{}: {}", map.location(d.span), d.message);
    let clamp = |s: Span| {
        let len = map.file(s.file).text.len();
        let start = s.start.min(len);
        (s.file, start..s.end.min(len).max(start))
    };
    let spans: Vec<(FileId, std::ops::Range<usize>)> = std::iter::once(d.span)
        .chain(d.secondary.iter().map(|s| s.0))
        .map(clamp)
        .collect();
    let excerpt = Excerpt::new(map, &spans);
    let at = |(f, r): &(FileId, std::ops::Range<usize>)| {
        excerpt.offset(*f, r.start)..excerpt.offset(*f, r.end)
    };
    let mut labels = vec![Label::primary(d.span.file, at(&spans[0])).with_message(d.label.clone())];
    for (r, (_, l)) in spans[1..].iter().zip(&d.secondary) {
        labels.push(Label::secondary(r.0, at(r)).with_message(l.clone()));
    }
    let mut diag = base.with_message(header).with_labels(labels);
    if let Some(h) = &d.help {
        diag = diag.with_notes(vec![format!("help: {h}")]);
    }
    (diag, excerpt)
}

/// Closest candidate to `word` by Jaro–Winkler similarity (case-insensitive), for
/// "did you mean" suggestions. Returns nothing when no candidate is reasonably close.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let lw = word.to_ascii_lowercase();
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(&lw, &c.to_ascii_lowercase());
        if score > best.map(|b| b.0).unwrap_or(0.0) {
            best = Some((score, c));
        }
    }
    best.filter(|(s, _)| *s >= 0.8).map(|(_, c)| c.to_string())
}

/// "did you mean `X`?" when a close candidate exists.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    suggest(word, candidates).map(|c| format!("did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        let mut m = SourceMap::new();
        let f = m.add("a.orr", "ab\ncdé\nx");
        assert_eq!(m.line_col(f, 0), (1, 1));
        assert_eq!(m.line_col(f, 3), (2, 1));
        assert_eq!(m.line_col(f, 7), (2, 4)); // after the two-byte é
        assert_eq!(m.location(Span::new(f, 8, 9)), "a.orr:3:1");
    }

    #[test]
    fn render_names_location_and_help() {
        let mut m = SourceMap::new();
        let f = m.add("s.orr", "device H10 x 8\n");
        let d = Diagnostic::error(Span::new(f, 7, 10), "unknown accelerator `H10`")
            .with_help("did you mean `H100`?");
        let out = render(&m, &[d], false);
        assert!(out.contains("s.orr:1:8"), "{out}");
        assert!(out.contains("^^^"), "{out}");
        assert!(out.contains("did you mean `H100`?"), "{out}");
    }

    /// The renderer over the whole files, as `render` worked before excerpts.
    fn render_whole(map: &SourceMap, d: &Diagnostic) -> String {
        let mut files = codespan_reporting::files::SimpleFiles::new();
        for f in &map.files {
            files.add(f.name.clone(), f.text.clone());
        }
        let (mut cs, _) = to_codespan(d, map);
        let clamp = |s: Span| {
            let len = map.file(s.file).text.len();
            let start = s.start.min(len);
            start..s.end.min(len).max(start)
        };
        cs.labels[0].range = clamp(d.span);
        for (l, (s, _)) in cs.labels[1..].iter_mut().zip(&d.secondary) {
            l.range = clamp(*s);
        }
        let mut out = Vec::new();
        let mut w = termcolor::NoColor::new(&mut out);
        term::emit_to_write_style(&mut w, &term::Config::default(), &files, &cs).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn same_as_whole_file() {
        // Random files of short lines (some blank, some non-ASCII), random spans within and
        // across lines and files: the excerpt renders exactly what the whole file did.
        struct Rng(u64);
        impl Rng {
            fn below(&mut self, n: usize) -> usize {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                (self.0 % n as u64) as usize
            }
        }
        fn span(r: &mut Rng, m: &SourceMap, f: usize) -> Span {
            let text = &m.file(f).text;
            let len = text.len();
            let mut a = r.below(len + 2);
            let long = r.below(3) == 0;
            let mut b = (a + r.below(if long { len + 1 } else { 8 })).min(len + 3);
            while a < len && !text.is_char_boundary(a) {
                a += 1;
            }
            while b < len && !text.is_char_boundary(b) {
                b += 1;
            }
            Span::new(f, a, b)
        }
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..400 {
            let mut m = SourceMap::new();
            for f in 0..2 {
                let mut text = String::new();
                for l in 0..r.below(40) + 1 {
                    match r.below(5) {
                        0 => {}
                        1 => text.push_str("  é ∈ x"),
                        _ => text.push_str(&format!("stmt{l} {}", "ab ".repeat(r.below(12)))),
                    }
                    text.push('\n');
                }
                if r.below(2) == 0 {
                    text.push_str("last");
                }
                m.add(format!("f{f}.orr"), text);
            }
            let mut d = Diagnostic::error(span(&mut r, &m, 0), "problem").with_label("here");
            for _ in 0..r.below(3) {
                let f = r.below(2);
                d = d.with_secondary(span(&mut r, &m, f), "and here");
            }
            if case % 2 == 0 {
                d = d.with_help("try this");
            }
            assert_eq!(
                render(&m, std::slice::from_ref(&d), false),
                render_whole(&m, &d),
                "{d:?}"
            );
        }
    }

    #[test]
    fn long_lines_are_cut_around_the_label() {
        let mut m = SourceMap::new();
        let line = format!("{}BAD{}\n", "x".repeat(100_000), "y".repeat(100_000));
        let f = m.add("long.orr", line);
        let d = Diagnostic::error(Span::new(f, 100_000, 100_003), "bad");
        let out = render(&m, &[d], false);
        assert!(
            out.len() < 2 * excerpt::MAX_LINE_BYTES,
            "{} bytes",
            out.len()
        );
        assert!(out.contains("long.orr:1:100001"), "{out}");
        assert!(
            out.contains("…xxx") && out.contains("BADyyy") && out.contains("y…"),
            "{out}"
        );
        // The caret sits under BAD: as many columns in as BAD is in the shown line.
        let shown = out.lines().find(|l| l.contains("BAD")).unwrap();
        let caret = out.lines().find(|l| l.contains("^^^")).unwrap();
        assert_eq!(
            shown.chars().position(|c| c == 'B'),
            caret.chars().position(|c| c == '^')
        );
    }

    #[test]
    fn a_label_over_many_lines_shows_its_ends() {
        let mut m = SourceMap::new();
        let text: String = (0..1_000_000).map(|i| format!("line {i}\n")).collect();
        let f = m.add("big.orr", text.clone());
        let d = Diagnostic::error(Span::new(f, 0, text.len() - 1), "whole file");
        let out = render(&m, std::slice::from_ref(&d), false);
        assert!(
            out.contains("line 0") && out.contains("line 999999"),
            "{out}"
        );
        assert!(out.lines().count() < 20, "{out}");
    }

    #[test]
    fn rendering_stops_after_max_shown() {
        let mut m = SourceMap::new();
        let f = m.add("a.orr", "x\n");
        let mut diags = vec![Diagnostic::error(Span::new(f, 0, 1), "bad"); MAX_SHOWN + 5];
        diags.push(Diagnostic::warning(Span::new(f, 0, 1), "odd"));
        let out = render(&m, &diags, false);
        assert_eq!(out.matches("error: a.orr:1:1: bad").count(), MAX_SHOWN);
        assert!(
            out.ends_with("and 5 more errors and 1 more warning\n\n"),
            "{out}"
        );
        let omitted = Omitted {
            errors: 10,
            ..Omitted::default()
        };
        let out = render_omitting(&m, &diags[..1], omitted, false);
        assert!(out.ends_with("and 10 more errors\n\n"), "{out}");
    }

    #[test]
    fn suggestions_are_close_or_absent() {
        assert_eq!(suggest("H10", ["H100", "MI300X"]).as_deref(), Some("H100"));
        assert_eq!(suggest("zzz", ["H100", "MI300X"]), None);
    }
}
