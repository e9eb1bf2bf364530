//! Text → generic tree. Tokens are recognised with `nom` over `nom_locate` spans; statements
//! and blocks are parsed by recursive descent so that an error in one statement is reported
//! and the parser carries on with the next one (every recoverable error is reported).
//!
//! Architecture invariant: no panics on any input. Nesting depth and file size are bounded
//! (see [`MAX_DEPTH`], [`MAX_FILE_BYTES`], [`MAX_IDENT_CHARS`]) so hostile input cannot overflow the stack.
//!
//! Values (words, numbers with units, lists, maps, calls) are parsed in `parse/values.rs`.

use super::ast::*;
use super::recover::recover;
use crate::diag::{Diagnostic, FileId, Span};
use nom::branch::alt;
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{char, digit1, one_of, satisfy};
use nom::combinator::{opt, recognize};
use nom::multi::many0_count;
use nom::{IResult, Parser as _};
use nom_locate::LocatedSpan;

mod values;

/// Deepest nesting of blocks, lists, maps and calls accepted.
pub const MAX_DEPTH: usize = 64;
/// Largest source file accepted.
pub const MAX_FILE_BYTES: usize = 16 << 20;
/// The parser stops after this many errors in one file.
pub const MAX_ERRORS: usize = 100;
/// Most statements, values and comments in one file. Each costs a few hundred bytes once
/// parsed: a 16 MiB file of `a` lines is 8 million statements, which took 2.5 GB (issue 42).
/// Patterns (`r[0..31]`) and counts (`x 1000`) write large clusters and workloads in a line,
/// so no scenario comes near it.
pub const MAX_NODES: usize = 1_000_000;
/// Longest identifier accepted. Names reach every trace event and report row that mentions
/// them; a 70,000-character workload name made `run --trace` write gigabytes (issue 16).
pub const MAX_IDENT_CHARS: usize = 256;

pub(super) type In<'a> = LocatedSpan<&'a str>;
type NomRes<'a, T> = IResult<In<'a>, T, nom::error::Error<In<'a>>>;

/// A parse failure inside one statement: where, and what was expected there.
#[derive(Debug)]
struct PErr {
    start: usize,
    end: usize,
    msg: String,
    help: Option<String>,
}

type R<'a, T> = Result<(In<'a>, T), PErr>;

/// Parse one file. Returns the tree (with what could be recovered) and every error found.
pub fn parse(src: &str, file: FileId) -> (File, Vec<Diagnostic>) {
    if src.len() > MAX_FILE_BYTES {
        let d = Diagnostic::error(
            Span::new(file, 0, 0),
            format!(
                "file is {} bytes; the limit is {} bytes",
                src.len(),
                MAX_FILE_BYTES
            ),
        );
        return (File::default(), vec![d]);
    }
    let mut p = Parser {
        file,
        diags: Vec::new(),
        depth: 0,
        fatal: false,
        unplaced: Vec::new(),
        recovery_budget: RECOVERY_SCANS.saturating_mul(src.len()),
        nodes: 0,
        too_many: None,
    };
    let input = In::new(src);
    let (_, stmts, trailing) = p.stmts(input, None);
    if let Some(d) = p.too_many {
        // Refused whole, as a file over the size limit is: what was read of it is no
        // scenario, and its errors would hide this one.
        return (File::default(), vec![d]);
    }
    let file_ast = File {
        stmts,
        trailing,
        unplaced_comments: p.unplaced,
    };
    (file_ast, p.diags)
}

struct Parser {
    file: FileId,
    diags: Vec<Diagnostic>,
    depth: usize,
    /// Set when continuing would only produce noise (nesting limit, too many errors).
    fatal: bool,
    unplaced: Vec<Span>,
    /// Bytes [`recover`] may still scan looking for where a broken statement's brackets close.
    recovery_budget: usize,
    /// Statements, values and comments so far ([`MAX_NODES`]).
    nodes: usize,
    /// The error for a file past [`MAX_NODES`], which is then refused whole.
    too_many: Option<Diagnostic>,
}

/// [`recover`] scans at most this many times the file's size in all. Each recovery may scan
/// to the end of the file for a closing bracket; 100 lines that each open a bracket made a
/// 16 MiB file cost 1.6 GB of scanning (issue 42). Past the budget a broken statement skips
/// just its line, as one whose brackets never balance does.
const RECOVERY_SCANS: usize = 2;

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn ident_text(i: In) -> NomRes<In> {
    recognize((
        satisfy(|c| c.is_ascii_alphabetic() || c == '_'),
        many0_count(alt((
            take_while1(is_ident_char),
            recognize((one_of("-."), take_while1(is_ident_char))),
        ))),
    ))
    .parse(i)
}

fn number_text(i: In) -> NomRes<In> {
    recognize((
        opt(char('-')),
        digit1,
        many0_count(alt((digit1, tag("_")))),
        opt((char('.'), digit1)),
        opt((one_of("eE"), opt(one_of("+-")), digit1)),
    ))
    .parse(i)
}

pub(super) fn off(i: &In) -> usize {
    i.location_offset()
}

fn peek(i: &In) -> Option<char> {
    i.fragment().chars().next()
}

pub(super) fn advance<'a>(i: In<'a>, n: usize) -> In<'a> {
    use nom::Input;
    i.take_from(n.min(i.fragment().len()))
}

/// Skip spaces and tabs (not newlines).
fn spaces(i: In) -> In {
    let n = i.fragment().len() - i.fragment().trim_start_matches([' ', '\t', '\r']).len();
    advance(i, n)
}

impl Parser {
    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.file, start, end)
    }

    fn err(&self, i: &In, msg: impl Into<String>) -> PErr {
        let start = off(i);
        let len = i
            .fragment()
            .chars()
            .next()
            .map(|c| c.len_utf8())
            .unwrap_or(0);
        PErr {
            start,
            end: start + len,
            msg: msg.into(),
            help: None,
        }
    }

    /// An identifier, refused past [`MAX_IDENT_CHARS`] (identifiers are ASCII: bytes = chars).
    fn ident<'a>(&self, i: In<'a>) -> Result<(In<'a>, In<'a>), Option<PErr>> {
        let (rest, name) = ident_text(i).map_err(|_| None)?;
        if name.fragment().len() > MAX_IDENT_CHARS {
            let start = off(&name);
            return Err(Some(PErr {
                start,
                end: start + name.fragment().len(),
                msg: format!(
                    "a name of {} characters; names are at most {MAX_IDENT_CHARS}",
                    name.fragment().len()
                ),
                help: None,
            }));
        }
        Ok((rest, name))
    }

    fn report(&mut self, e: PErr) {
        if self.diags.len() >= MAX_ERRORS {
            self.fatal = true;
            return;
        }
        let d = Diagnostic::error(self.span(e.start, e.end), e.msg).with_help_opt(e.help);
        self.diags.push(d);
        if self.diags.len() >= MAX_ERRORS {
            let at = self.span(e.start, e.end);
            self.diags
                .push(Diagnostic::error(at, "too many errors; stopping here"));
            self.fatal = true;
        }
    }

    fn enter(&mut self, i: &In) -> Result<(), PErr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.fatal = true;
            return Err(self.err(i, format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    /// Counts one statement, value or comment starting at `i`; past [`MAX_NODES`] the file is
    /// abandoned with one error there.
    fn node(&mut self, i: &In) -> Result<(), PErr> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            self.fatal = true;
            let e = self.err(
                i,
                format!("more than {MAX_NODES} statements, values and comments in one file"),
            );
            if self.too_many.is_none() {
                let at = self.span(e.start, e.end);
                self.too_many = Some(Diagnostic::error(at, e.msg.clone()).with_help(
                    "write large clusters and workloads with patterns (`r[0..31]`) and counts (`x 1000`)",
                ));
            }
            return Err(e);
        }
        Ok(())
    }

    /// Comments, blank lines and `;` between statements. `line_has_content` says whether
    /// the current line already held something (so its newline is not a blank line).
    fn trivia<'a>(
        &mut self,
        mut i: In<'a>,
        out: &mut Vec<Trivia>,
        mut line_has_content: bool,
    ) -> In<'a> {
        loop {
            i = spaces(i);
            match peek(&i) {
                Some('\n') => {
                    // Blank lines in a row print as one: keep one.
                    if !line_has_content && out.last() != Some(&Trivia::Blank) {
                        out.push(Trivia::Blank);
                    }
                    line_has_content = false;
                    i = advance(i, 1);
                }
                Some('#') => {
                    if let Err(e) = self.node(&i) {
                        self.report(e);
                        return i;
                    }
                    let (rest, text) = comment(i);
                    out.push(Trivia::Comment(text));
                    line_has_content = true;
                    i = rest;
                }
                Some(';') => {
                    line_has_content = true;
                    i = advance(i, 1);
                }
                _ => return i,
            }
        }
    }

    /// Skip whitespace, newlines and comments inside brackets (comments there are unplaced).
    fn skip_all<'a>(&mut self, mut i: In<'a>) -> In<'a> {
        loop {
            i = spaces(i);
            match peek(&i) {
                Some('\n') => i = advance(i, 1),
                Some('#') => {
                    let start = off(&i);
                    let counted = !self.fatal && self.node(&i).map_err(|e| self.report(e)).is_ok();
                    let (rest, _) = comment(i);
                    if counted {
                        self.unplaced.push(self.span(start, off(&rest)));
                    }
                    i = rest;
                }
                _ => return i,
            }
        }
    }

    /// A sequence of statements, up to `}` (when `open` is the span of the `{`) or the end.
    fn stmts<'a>(&mut self, mut i: In<'a>, open: Option<Span>) -> (In<'a>, Vec<Stmt>, Vec<Trivia>) {
        let mut stmts = Vec::new();
        let mut pending = Vec::new();
        let mut line_has_content = open.is_some();
        loop {
            i = self.trivia(i, &mut pending, line_has_content);
            if self.fatal {
                return (i, stmts, pending);
            }
            match peek(&i) {
                None => {
                    if let Some(o) = open {
                        let e = Diagnostic::error(o, "this block is never closed")
                            .with_label("unclosed `{`")
                            .with_help("add a `}` at the end of the block");
                        self.diags.push(e);
                    }
                    return (i, stmts, pending);
                }
                Some('}') => {
                    if open.is_some() {
                        return (i, stmts, pending);
                    }
                    let e = self.err(&i, "unexpected `}` with no block open");
                    self.report(e);
                    i = advance(i, 1);
                    line_has_content = true;
                }
                Some(_) => {
                    let start = i;
                    match self.stmt(i) {
                        Ok((rest, mut s)) => {
                            s.leading = std::mem::take(&mut pending);
                            stmts.push(s);
                            i = rest;
                            line_has_content = true;
                        }
                        Err(e) => {
                            let at = e.start;
                            self.report(e);
                            pending.clear();
                            i = recover(start, at, &mut self.recovery_budget);
                            line_has_content = true;
                        }
                    }
                }
            }
        }
    }

    /// One statement: `key values [block]`, then a terminator.
    fn stmt<'a>(&mut self, i: In<'a>) -> R<'a, Stmt> {
        self.node(&i)?;
        let start = off(&i);
        let (mut i, key) = match self.ident(i) {
            Ok(r) => r,
            Err(Some(e)) => return Err(e),
            Err(None) => {
                let mut e = self.err(
                    &i,
                    format!("expected a statement keyword, found {}", found(&i)),
                );
                if peek(&i).is_some_and(|c| c.is_ascii_digit()) {
                    e.help =
                        Some("statements start with a keyword, such as `memory 80 GiB`".into());
                }
                return Err(e);
            }
        };
        let key = Ident {
            name: key.fragment().to_string(),
            span: self.span(start, off(&i)),
        };
        let mut values = Vec::new();
        let mut commas = Vec::new();
        let mut block = None;
        loop {
            i = spaces(i);
            match peek(&i) {
                None | Some('\n') | Some(';') | Some('}') | Some('#') => break,
                Some(',') => {
                    if values.is_empty() || commas.last() == Some(&(values.len() - 1)) {
                        return Err(self.err(&i, "expected a value before `,`"));
                    }
                    commas.push(values.len() - 1);
                    i = advance(i, 1);
                    i = spaces(i);
                    // A line that ends with a comma continues on the next one.
                    if matches!(peek(&i), Some('\n') | Some('#')) {
                        i = self.skip_all(i);
                    }
                }
                Some('{') if !self.is_map(i) => {
                    let (rest, b) = self.block(i)?;
                    block = Some(Box::new(b));
                    i = spaces(rest);
                    if !matches!(
                        peek(&i),
                        None | Some('\n') | Some(';') | Some('}') | Some('#')
                    ) {
                        return Err(self.err(
                            &i,
                            format!(
                                "expected the end of the statement after its block, found {}",
                                found(&i)
                            ),
                        ));
                    }
                    break;
                }
                Some(_) => {
                    let (rest, v) = self.value(i)?;
                    values.push(v);
                    i = rest;
                }
            }
        }
        let end = off(&i);
        let mut trailing_comment = None;
        if peek(&i) == Some('#') {
            let (rest, text) = comment(i);
            trailing_comment = Some(text);
            i = rest;
        }
        let span = self.span(start, end);
        // A vector's first push reserves four values; most statements hold one or two, and a
        // 16 MiB file of one-word statements spent 1 GB on the spare room (issue 42).
        values.shrink_to_fit();
        Ok((
            i,
            Stmt {
                key,
                values,
                commas,
                block,
                span,
                leading: Vec::new(),
                trailing_comment,
            },
        ))
    }

    fn block<'a>(&mut self, i: In<'a>) -> R<'a, Block> {
        let open = self.span(off(&i), off(&i) + 1);
        self.enter(&i)?;
        let (i, stmts, closing) = self.stmts(advance(i, 1), Some(open));
        self.depth -= 1;
        if self.fatal && peek(&i) != Some('}') {
            return Err(PErr {
                start: open.start,
                end: open.end,
                msg: "block abandoned".into(),
                help: None,
            });
        }
        if peek(&i) != Some('}') {
            // stmts() already reported the unclosed block.
            return Ok((
                i,
                Block {
                    stmts,
                    closing,
                    span: open,
                },
            ));
        }
        let span = open.to(self.span(off(&i), off(&i) + 1));
        Ok((
            advance(i, 1),
            Block {
                stmts,
                closing,
                span,
            },
        ))
    }

    /// Does the `{` at `i` open a map (`{ key: value }`) rather than a block?
    fn is_map(&self, i: In) -> bool {
        let mut j = advance(i, 1);
        loop {
            j = spaces(j);
            match peek(&j) {
                Some('\n') => j = advance(j, 1),
                Some('#') => j = comment(j).0,
                _ => break,
            }
        }
        let after_key = if peek(&j) == Some('"') {
            match string_lit(j) {
                Ok((rest, _)) => rest,
                Err(_) => return false,
            }
        } else {
            match ident_text(j) {
                Ok((rest, _)) => rest,
                Err(_) => return false,
            }
        };
        peek(&spaces(after_key)) == Some(':')
    }

    fn expect<'a>(&self, i: In<'a>, what: &str, desc: &str) -> Result<In<'a>, PErr> {
        if i.fragment().starts_with(what) {
            Ok(advance(i, what.len()))
        } else {
            Err(self.err(&i, format!("expected {desc}, found {}", found(&i))))
        }
    }
}

/// `# text` up to the end of the line; returns the text after `#` without trailing spaces
/// and without one leading space (`fmt` writes `# text` back, so `#x` and `# x` are the same
/// comment, while deeper indentation inside a comment is kept).
fn comment(i: In) -> (In, String) {
    let line = i.fragment().split('\n').next().unwrap_or("");
    let body = line[1..].trim_end();
    let text = body.strip_prefix(' ').unwrap_or(body).to_string();
    (advance(i, line.len()), text)
}

/// A string literal with `\"`, `\\`, `\n`, `\t` escapes; no raw newlines.
fn string_lit(i: In) -> Result<(In, String), StrErr> {
    let s = i.fragment();
    let mut out = String::new();
    let mut chars = s.char_indices().skip(1);
    while let Some((k, c)) = chars.next() {
        match c {
            '"' => return Ok((advance(i, k + 1), out)),
            '\n' => {
                return Err(StrErr {
                    at: 0,
                    msg: "unterminated string: add a closing `\"`",
                });
            }
            '\\' => match chars.next() {
                Some((_, '"')) => out.push('"'),
                Some((_, '\\')) => out.push('\\'),
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((k2, _)) => {
                    return Err(StrErr {
                        at: k2 - 1,
                        msg: "unknown escape; use \\\" \\\\ \\n or \\t",
                    });
                }
                None => break,
            },
            c => out.push(c),
        }
    }
    Err(StrErr {
        at: 0,
        msg: "unterminated string: add a closing `\"`",
    })
}

struct StrErr {
    at: usize,
    msg: &'static str,
}

impl StrErr {
    fn into_perr(self, start: usize) -> PErr {
        PErr {
            start: start + self.at,
            end: start + self.at + 1,
            msg: self.msg.into(),
            help: None,
        }
    }
}

/// How to name what was found at `i` in an error message.
fn found(i: &In) -> String {
    match peek(i) {
        None => "the end of the file".into(),
        Some('\n') => "the end of the line".into(),
        Some(c) if is_ident_char(c) => {
            let w: String = i
                .fragment()
                .chars()
                .take_while(|c| is_ident_char(*c))
                .take(40)
                .collect();
            format!("`{w}`")
        }
        Some(c) => format!("`{c}`"),
    }
}
