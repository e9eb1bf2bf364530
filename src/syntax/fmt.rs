//! Canonical form of a tree (`orrery fmt`): two-space indentation, one space between values,
//! `, ` after a comma, `# ` before comment text, at most one blank line in a row, numbers
//! exactly as written. `parse(format(t)) == t` (spans aside) and `format` is idempotent;
//! both are property-tested in `tests/all/fmt_roundtrip.rs`.

use super::ast::*;
use std::fmt::Write;

/// Lines longer than this print their top-level lists and maps one entry per line.
pub const WIDTH: usize = 100;

/// Print `file` canonically. Fails (naming the comment) rather than silently drop a comment
/// the tree has no place for, such as one inside a multi-line list.
pub fn format(file: &File) -> Result<String, crate::diag::Span> {
    if let Some(s) = file.unplaced_comments.first() {
        return Err(*s);
    }
    let mut out = String::new();
    for (k, s) in file.stmts.iter().enumerate() {
        stmt(&mut out, s, 0, k == 0);
    }
    trivia(&mut out, &file.trailing, 0, file.stmts.is_empty(), true);
    Ok(out)
}

fn indent(out: &mut String, level: usize) {
    out.extend(std::iter::repeat_n("  ", level));
}

/// Comments and blank lines; blanks collapse to one and vanish at the start of a block/file
/// and at its end.
fn trivia(out: &mut String, items: &[Trivia], level: usize, at_start: bool, at_end: bool) {
    let mut blank = false;
    let mut emitted = !at_start;
    for t in items {
        match t {
            Trivia::Blank => blank = true,
            Trivia::Comment(c) => {
                if blank && emitted {
                    out.push('\n');
                }
                blank = false;
                emitted = true;
                indent(out, level);
                comment(out, c);
                out.push('\n');
            }
        }
    }
    if blank && emitted && !at_end {
        out.push('\n');
    }
}

fn comment(out: &mut String, c: &str) {
    if c.is_empty() {
        out.push('#');
    } else {
        let _ = write!(out, "# {c}");
    }
}

fn stmt(out: &mut String, s: &Stmt, level: usize, first: bool) {
    trivia(out, &s.leading, level, first, false);
    indent(out, level);
    let line_start = out.len() - 2 * level;
    out.push_str(&s.key.name);
    for (k, v) in s.values.iter().enumerate() {
        out.push(' ');
        let flat = inline(v);
        let col = out.len() - line_start;
        if col + flat.len() > WIDTH && matches!(v.kind, ValueKind::List(_) | ValueKind::Map(_)) {
            multiline(out, v, level);
        } else {
            out.push_str(&flat);
        }
        if s.commas.contains(&k) {
            out.push(',');
        }
    }
    if let Some(b) = &s.block {
        if b.stmts.is_empty() && b.closing.iter().all(|t| *t == Trivia::Blank) {
            out.push_str(" {}");
        } else {
            out.push_str(" {\n");
            for (k, inner) in b.stmts.iter().enumerate() {
                stmt(out, inner, level + 1, k == 0);
            }
            trivia(out, &b.closing, level + 1, b.stmts.is_empty(), true);
            indent(out, level);
            out.push('}');
        }
    }
    if let Some(c) = &s.trailing_comment {
        out.push_str("  ");
        comment(out, c);
    }
    out.push('\n');
}

fn multiline(out: &mut String, v: &Value, level: usize) {
    let (open, close, items): (char, char, Vec<String>) = match &v.kind {
        ValueKind::List(vs) => ('[', ']', vs.iter().map(inline).collect()),
        ValueKind::Map(es) => ('{', '}', es.iter().map(|(k, v)| entry(k, v)).collect()),
        _ => unreachable!("multiline is only called for lists and maps"),
    };
    out.push(open);
    out.push('\n');
    for it in items {
        indent(out, level + 1);
        out.push_str(&it);
        out.push_str(",\n");
    }
    indent(out, level);
    out.push(close);
}

fn entry(k: &MapKey, v: &Value) -> String {
    let key = if k.quoted {
        quote(&k.name)
    } else {
        k.name.clone()
    };
    format!("{key}: {}", inline(v))
}

/// A value on one line.
pub fn inline(v: &Value) -> String {
    match &v.kind {
        ValueKind::Ident(n) => n.clone(),
        ValueKind::Str(s) => quote(s),
        ValueKind::Quantity { num, unit: None } => num.text.clone(),
        ValueKind::Quantity { num, unit: Some(u) } if u == "%" => format!("{}%", num.text),
        ValueKind::Quantity { num, unit: Some(u) } => format!("{} {u}", num.text),
        ValueKind::Pattern { base, lo, hi } => format!("{base}[{lo}..{hi}]"),
        ValueKind::Range { lo, hi } => format!("{lo}..{hi}"),
        ValueKind::Dims(d) => d
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join("x"),
        ValueKind::Ratio(a, b) => format!("{}:{}", a.text, b.text),
        ValueKind::List(vs) => {
            format!("[{}]", vs.iter().map(inline).collect::<Vec<_>>().join(", "))
        }
        ValueKind::Map(es) => {
            format!(
                "{{ {} }}",
                es.iter()
                    .map(|(k, v)| entry(k, v))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        ValueKind::Call { name, args } => {
            let groups: Vec<String> = args
                .iter()
                .map(|g| g.iter().map(inline).collect::<Vec<_>>().join(" "))
                .collect();
            format!("{name}({})", groups.join(", "))
        }
    }
}

/// A string literal with the escapes the parser understands.
pub fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}
