//! Diagnostics: located errors with a source excerpt, a caret and an optional suggestion.
//!
//! Every stage (syntax, resolve) reports problems as [`Diagnostic`]s that point into a
//! [`SourceMap`] by [`Span`]; stages keep going after an error so that a user sees every
//! problem the front end can recover to, not only the first. Rendering uses
//! `codespan-reporting`, which prints `file:line:column`, the offending line and a caret.

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, termcolor};

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
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    files: Vec<SourceFile>,
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
        self.files.push(SourceFile {
            name: name.into(),
            key: key.into(),
            text,
            line_starts,
        });
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
        let col = f
            .text
            .get(start..offset)
            .map(|s| s.chars().count())
            .unwrap_or(offset - start);
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

/// Render diagnostics as text (`color` for terminals). The first line of each names
/// `file:line:column`; the excerpt follows with a caret under the offending text.
pub fn render(map: &SourceMap, diags: &[Diagnostic], color: bool) -> String {
    let mut files = SimpleFiles::new();
    for f in &map.files {
        files.add(f.name.clone(), f.text.clone());
    }
    let config = term::Config::default();
    let mut out: Vec<u8> = Vec::new();
    for d in diags {
        let cs = to_codespan(d, map);
        if color {
            let mut w = termcolor::Ansi::new(&mut out);
            let _ = term::emit_to_write_style(&mut w, &config, &files, &cs);
        } else {
            let mut w = termcolor::NoColor::new(&mut out);
            let _ = term::emit_to_write_style(&mut w, &config, &files, &cs);
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn to_codespan(d: &Diagnostic, map: &SourceMap) -> CsDiagnostic<FileId> {
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
        start..s.end.min(len).max(start)
    };
    let mut labels = vec![Label::primary(d.span.file, clamp(d.span)).with_message(d.label.clone())];
    for (s, l) in &d.secondary {
        labels.push(Label::secondary(s.file, clamp(*s)).with_message(l.clone()));
    }
    let mut diag = base.with_message(header).with_labels(labels);
    if let Some(h) = &d.help {
        diag = diag.with_notes(vec![format!("help: {h}")]);
    }
    diag
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

    #[test]
    fn suggestions_are_close_or_absent() {
        assert_eq!(suggest("H10", ["H100", "MI300X"]).as_deref(), Some("H100"));
        assert_eq!(suggest("zzz", ["H100", "MI300X"]), None);
    }
}
