//! Where parsing resumes after a broken statement, within a budget of scanning.

use super::parse::{In, advance, off};

/// After an error in the statement that starts at `start`, skip to where the next one can
/// begin: the end of the statement's line at bracket depth zero (a block the statement opened
/// is skipped whole), or a `}` that closes the enclosing block. If the statement's brackets
/// never balance (or `budget`, the bytes left to scan, runs out), skip just the rest of the
/// line where the error is.
pub(super) fn recover<'a>(start: In<'a>, err_at: usize, budget: &mut usize) -> In<'a> {
    let s = start.fragment();
    let mut depth: i64 = 0;
    let mut in_str = false;
    let mut escaped = false;
    let mut in_comment = false;
    let scan = &s[..floor_boundary(s, *budget)];
    // What was scanned is spent; a scan that stops early gives the rest back.
    *budget -= scan.len();
    let mut stop = |k: usize| {
        *budget += scan.len() - k;
        advance(start, k)
    };
    for (k, c) in scan.char_indices() {
        if in_comment {
            if c == '\n' {
                in_comment = false;
            } else {
                continue;
            }
        }
        if in_str {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                '\n' => in_str = false,
                _ => {}
            }
            if c != '\n' {
                continue;
            }
        }
        match c {
            '"' => in_str = true,
            '#' => in_comment = true,
            '{' | '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            '}' => {
                if depth == 0 {
                    return stop(k);
                }
                depth -= 1;
            }
            '\n' | ';' if depth <= 0 => return stop(k),
            _ => {}
        }
    }
    // Unbalanced to the end (or as far as the budget goes): skip the rest of the line where
    // the error is.
    let rel = err_at.saturating_sub(off(&start)).min(s.len());
    let rel = (0..=rel)
        .rev()
        .find(|r| s.is_char_boundary(*r))
        .unwrap_or(0);
    let line_end = s[rel..].find('\n').map(|n| rel + n).unwrap_or(s.len());
    advance(start, line_end.max(rel + 1).min(s.len()))
}

/// The largest char boundary of `s` at or before `i`.
fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
