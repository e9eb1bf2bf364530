//! What the three parsers share: the input size limit, printf-style numbers, whitespace
//! tokens with their columns (errors name the column a user sees in an editor: characters,
//! 1-based) and the error of a row whose width is not its header's.

use super::record::ParseError;

/// A tool's output larger than the input limit every reader keeps ([`crate::files`]) is
/// refused before it is scanned.
pub(super) fn check_size(text: &str, tool: &str) -> Result<(), ParseError> {
    let limit = crate::files::MAX_INPUT_BYTES;
    if text.len() as u64 > limit {
        return Err(ParseError::new(
            1,
            1,
            format!(
                "input is {} bytes; {tool} output over {limit} bytes is not read",
                text.len()
            ),
        ));
    }
    Ok(())
}

/// `Err` located at the first extra field (or the line's end) when a result row does not have
/// the `expected` fields of the header (`what`) above it.
pub(super) fn check_width(
    tokens: &[(usize, &str)],
    expected: usize,
    line: &str,
    number: usize,
    what: &str,
) -> Result<(), ParseError> {
    if tokens.len() == expected {
        return Ok(());
    }
    let column = match tokens.get(expected) {
        Some(&(column, _)) => column,
        None => line.chars().count() + 1,
    };
    Err(ParseError::new(
        number,
        column,
        format!(
            "result row has {} fields; the {what} above it has {expected}",
            tokens.len()
        ),
    ))
}

/// A number as printf prints one (`38.55`, `1.2e+05`, `inf`, `-nan`).
pub(super) fn parse_number(token: &str) -> Option<f64> {
    let body = token.trim_start_matches(['+', '-']);
    if body.eq_ignore_ascii_case("nan") {
        return Some(f64::NAN);
    }
    if body.eq_ignore_ascii_case("inf") {
        return Some(f64::INFINITY);
    }
    if !body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    token.parse::<f64>().ok()
}

/// Whitespace-separated tokens with their 1-based column in characters.
pub(super) fn tokenize(line: &str) -> Vec<(usize, &str)> {
    let mut tokens = Vec::new();
    let mut start: Option<(usize, usize)> = None;
    let mut column = 0usize;
    for (byte, c) in line.char_indices() {
        column += 1;
        if c.is_whitespace() {
            if let Some((at, col)) = start.take()
                && let Some(token) = line.get(at..byte)
            {
                tokens.push((col, token));
            }
        } else if start.is_none() {
            start = Some((byte, column));
        }
    }
    if let Some((at, col)) = start
        && let Some(token) = line.get(at..)
    {
        tokens.push((col, token));
    }
    tokens
}
