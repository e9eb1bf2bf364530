//! The generic syntax tree every `.orr` file parses into, whatever it describes.
//!
//! Architecture invariant: this module knows nothing of accelerators, nodes or workloads;
//! meaning is given by `spec::`. Spans are kept for diagnostics; comments and blank lines are
//! kept so that `orrery fmt` can print the file back without losing them.

use crate::diag::Span;

/// A parsed file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct File {
    pub stmts: Vec<Stmt>,
    /// Comments and blank lines after the last statement.
    pub trailing: Vec<Trivia>,
    /// Comments the tree has no place for (inside a list, or on a continuation line); `fmt`
    /// refuses to drop them silently.
    pub unplaced_comments: Vec<Span>,
}

/// A comment line or a blank line before a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Trivia {
    Comment(String),
    Blank,
}

/// `key value value, value { block }`
#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub key: Ident,
    pub values: Vec<Value>,
    /// Indices `i` such that a comma follows `values[i]` (kept for `fmt`; meaningless otherwise).
    pub commas: Vec<usize>,
    /// Boxed: most statements have none, and the box keeps every statement 64 bytes smaller.
    pub block: Option<Box<Block>>,
    pub span: Span,
    pub leading: Vec<Trivia>,
    pub trailing_comment: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    /// Comments and blank lines before the closing `}`.
    pub closing: Vec<Trivia>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    pub kind: ValueKind,
    pub span: Span,
}

/// A number as written (the text is kept so that `fmt` never changes a figure) and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Number {
    pub text: String,
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ValueKind {
    Ident(String),
    Str(String),
    /// A number with an optional unit: `8`, `80 GiB`, `3.35 TB/s`.
    Quantity {
        num: Number,
        unit: Option<String>,
    },
    /// `r[0..31]`: names r0 … r31.
    Pattern {
        base: String,
        lo: u64,
        hi: u64,
    },
    /// `1..20`, inclusive.
    Range {
        lo: i64,
        hi: i64,
    },
    /// `2x2x4`.
    Dims(Vec<u64>),
    /// `2:1`.
    Ratio(Number, Number),
    List(Vec<Value>),
    Map(Vec<(MapKey, Value)>),
    /// `weibull(shape 0.8)`, `in(a, b)`: comma-separated groups of values.
    Call {
        name: String,
        args: Vec<Vec<Value>>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct MapKey {
    pub name: String,
    pub quoted: bool,
    pub span: Span,
}

impl ValueKind {
    /// A short description for "expected X, found Y" messages.
    pub fn describe(&self) -> String {
        match self {
            ValueKind::Ident(n) => format!("name `{n}`"),
            ValueKind::Str(_) => "a string".into(),
            ValueKind::Quantity { unit: None, .. } => "a plain number".into(),
            ValueKind::Quantity { unit: Some(u), .. } => match crate::units::lookup(u) {
                Some((k, _)) => format!("{} (`{u}`)", k.name()),
                None => format!("a quantity in `{u}`"),
            },
            ValueKind::Pattern { .. } => "a name pattern".into(),
            ValueKind::Range { .. } => "a range".into(),
            ValueKind::Dims(_) => "dimensions".into(),
            ValueKind::Ratio(..) => "a ratio".into(),
            ValueKind::List(_) => "a list".into(),
            ValueKind::Map(_) => "a map".into(),
            ValueKind::Call { name, .. } => format!("`{name}(...)`"),
        }
    }
}

impl File {
    /// The same tree with every span zeroed: two parses of equivalent text compare equal.
    pub fn without_spans(&self) -> File {
        let mut f = self.clone();
        f.stmts.iter_mut().for_each(Stmt::clear_spans);
        f.unplaced_comments.clear();
        f
    }
}

impl File {
    /// The tree without spans and without comments or blank lines: what `fmt` must preserve
    /// exactly (it normalises blank lines, so those are compared apart).
    pub fn structure(&self) -> File {
        fn strip(stmts: &mut [Stmt]) {
            for s in stmts {
                s.leading.clear();
                s.trailing_comment = None;
                if let Some(b) = &mut s.block {
                    b.closing.clear();
                    strip(&mut b.stmts);
                }
            }
        }
        let mut f = self.without_spans();
        f.trailing.clear();
        strip(&mut f.stmts);
        f
    }

    /// Every comment, in the order `fmt` prints them.
    pub fn comments(&self) -> Vec<String> {
        fn texts(ts: &[Trivia], out: &mut Vec<String>) {
            out.extend(ts.iter().filter_map(|t| match t {
                Trivia::Comment(c) => Some(c.clone()),
                Trivia::Blank => None,
            }));
        }
        fn walk(stmts: &[Stmt], out: &mut Vec<String>) {
            for s in stmts {
                texts(&s.leading, out);
                if let Some(b) = &s.block {
                    walk(&b.stmts, out);
                    texts(&b.closing, out);
                }
                out.extend(s.trailing_comment.clone());
            }
        }
        let mut out = Vec::new();
        walk(&self.stmts, &mut out);
        texts(&self.trailing, &mut out);
        out
    }
}

impl Stmt {
    fn clear_spans(&mut self) {
        self.span = Span::default();
        self.key.span = Span::default();
        self.values.iter_mut().for_each(Value::clear_spans);
        if let Some(b) = &mut self.block {
            b.span = Span::default();
            b.stmts.iter_mut().for_each(Stmt::clear_spans);
        }
    }
    /// Span of the statement's header (key and values, without its block).
    pub fn head_span(&self) -> Span {
        self.values.iter().fold(self.key.span, |s, v| s.to(v.span))
    }
}

impl Value {
    fn clear_spans(&mut self) {
        self.span = Span::default();
        match &mut self.kind {
            ValueKind::List(vs) => vs.iter_mut().for_each(Value::clear_spans),
            ValueKind::Map(es) => es.iter_mut().for_each(|(k, v)| {
                k.span = Span::default();
                v.clear_spans();
            }),
            ValueKind::Call { args, .. } => args.iter_mut().flatten().for_each(Value::clear_spans),
            _ => {}
        }
    }
}
