//! Reading lists and maps from a statement's values: names (an ident, a pattern `r[0..3]` or
//! a list), integer lists, maps, each with its located errors.

use super::{Cx, MAX_PATTERN, count};
use crate::diag::{Diagnostic, Span};
use crate::syntax::ast::{MapKey, Value, ValueKind};

/// Names from an ident, a pattern `r[0..3]` or a list of idents, each with its span.
pub fn names(cx: &mut Cx, v: &Value) -> Option<Vec<(String, Span)>> {
    match &v.kind {
        ValueKind::Ident(n) => Some(vec![(n.clone(), v.span)]),
        ValueKind::Pattern { base, lo, hi } => {
            if hi < lo {
                cx.error(
                    v.span,
                    format!("pattern range {lo}..{hi} is empty (the end is before the start)"),
                );
                return None;
            }
            if hi - lo >= MAX_PATTERN {
                cx.error(
                    v.span,
                    format!(
                        "pattern names {} items; the limit is {MAX_PATTERN}",
                        u128::from(hi - lo) + 1
                    ),
                );
                return None;
            }
            Some(
                (*lo..=*hi)
                    .map(|k| (format!("{base}{k}"), v.span))
                    .collect(),
            )
        }
        ValueKind::List(items) => {
            let mut out = Vec::new();
            for it in items {
                out.extend(names(cx, it)?);
            }
            Some(out)
        }
        other => {
            cx.error(
                v.span,
                format!(
                    "expected a name, a pattern such as `r[0..3]` or a list, found {}",
                    other.describe()
                ),
            );
            None
        }
    }
}

/// A list of whole numbers, or a single one.
pub fn int_list(cx: &mut Cx, v: &Value, max: u64) -> Option<Vec<u64>> {
    match &v.kind {
        ValueKind::List(items) => items.iter().map(|it| count(cx, it, 0, max)).collect(),
        _ => count(cx, v, 0, max).map(|x| vec![x]),
    }
}

pub fn map<'a>(cx: &mut Cx, v: &'a Value) -> Option<&'a [(MapKey, Value)]> {
    match &v.kind {
        ValueKind::Map(e) => Some(e),
        other => {
            cx.push(
                Diagnostic::error(
                    v.span,
                    format!("expected a map, found {}", other.describe()),
                )
                .with_help("write `{ key: value, ... }`"),
            );
            None
        }
    }
}

/// Reject duplicate keys in a map.
pub fn unique_keys(cx: &mut Cx, entries: &[(MapKey, Value)]) -> bool {
    // A map of 50,000 keys compared each with those before it took seconds (issue 42): look
    // each key up in the keys seen so far instead.
    let mut first: std::collections::HashMap<&str, Span> =
        std::collections::HashMap::with_capacity(entries.len());
    let mut ok = true;
    for (key, _) in entries {
        match first.entry(key.name.as_str()) {
            std::collections::hash_map::Entry::Occupied(f) => {
                cx.push(
                    Diagnostic::error(key.span, format!("key `{}` is given twice", key.name))
                        .with_secondary(*f.get(), "first given here"),
                );
                ok = false;
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(key.span);
            }
        }
    }
    ok
}
