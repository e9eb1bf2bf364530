//! What the three parsers share: printf-style numbers and whitespace tokens with their
//! columns (errors name the column a user sees in an editor: characters, 1-based).

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
