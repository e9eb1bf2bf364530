//! Arrival trace files (`arrival trace "FILE"`): one request per row,
//! `arrival_s[,prompt_tokens,output_tokens]`, parsed from text (the CLI reads the file,
//! confined to the scenario's folder) and checked against the services that read them.
//!
//! The token columns are what LLM serving traces carry (Azure's LLM inference traces have
//! a timestamp, `ContextTokens` and `GeneratedTokens`; Vidur and vLLM's benchmarks replay
//! such rows). A service reads them with `prompt tokens trace max N` / `output tokens trace
//! max N`; every other service reads the first column only.

use super::serving::{LlmServing, MAX_REQUEST_TOKENS, Tokens};
use serde::Serialize;

/// One arrival trace: arrival times in seconds and, when the file has them, each row's
/// (prompt, output) tokens (`tokens` is then as long as `arrivals`, else empty).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Trace {
    pub arrivals: Vec<f64>,
    pub tokens: Vec<(u32, u32)>,
    /// The file's line of each row (1-based), for errors about a row.
    #[serde(skip)]
    pub lines: Vec<u32>,
}

impl From<Vec<f64>> for Trace {
    fn from(arrivals: Vec<f64>) -> Trace {
        Trace {
            lines: (1..=arrivals.len() as u32).collect(),
            arrivals,
            tokens: Vec::new(),
        }
    }
}

impl Trace {
    /// Rows with tokens: (seconds, prompt, output) each.
    pub fn with_tokens(rows: &[(f64, u32, u32)]) -> Trace {
        Trace {
            arrivals: rows.iter().map(|r| r.0).collect(),
            tokens: rows.iter().map(|r| (r.1, r.2)).collect(),
            lines: (1..=rows.len() as u32).collect(),
        }
    }
}

/// A located problem in a trace's text: 1-based line and column, and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceError {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

/// Parse a trace's text. `#` starts a comment; blank lines are skipped; the first row may
/// be a header of names (no field a number, e.g. `arrival_s,prompt_tokens,output_tokens`).
/// The first field of each row is its arrival in seconds (≥ 0); with `tokens` (a service
/// reads them) the second and third are its prompt and output tokens, each from 1 to
/// [`MAX_REQUEST_TOKENS`]. Further fields are not read.
pub fn parse(text: &str, tokens: bool) -> Result<Trace, TraceError> {
    let mut t = Trace::default();
    let mut first = true;
    for (k, raw) in text.lines().enumerate() {
        let line = (k + 1) as u32;
        let body = raw.split('#').next().unwrap_or("");
        if body.trim().is_empty() {
            continue;
        }
        // Fields with their 1-based columns in the raw line.
        let mut fields = Vec::new();
        let mut at = 0;
        for f in body.split(',') {
            let lead = f.len() - f.trim_start().len();
            fields.push((f.trim(), (at + lead + 1) as u32));
            at += f.len() + 1;
        }
        let header = first && fields.iter().all(|(f, _)| f.parse::<f64>().is_err());
        first = false;
        if header {
            continue;
        }
        let err = |column, message: String| TraceError {
            line,
            column,
            message,
        };
        let (s, col) = fields[0];
        match s.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => t.arrivals.push(x),
            _ => {
                return Err(err(
                    col,
                    format!("expected non-negative seconds, found `{s}`"),
                ));
            }
        }
        if tokens {
            if fields.len() < 3 {
                return Err(err(
                    1,
                    format!(
                        "a service reads its tokens from this trace: a row is \
                         `arrival_s,prompt_tokens,output_tokens`, found {} field(s)",
                        fields.len()
                    ),
                ));
            }
            let mut n = [0u32; 2];
            for (i, what) in ["prompt", "output"].iter().enumerate() {
                let (f, col) = fields[i + 1];
                match f.parse::<u64>() {
                    Ok(x) if (1..=MAX_REQUEST_TOKENS).contains(&x) => n[i] = x as u32,
                    _ => {
                        return Err(err(
                            col,
                            format!(
                                "expected {what} tokens from 1 to {MAX_REQUEST_TOKENS}, found `{f}`"
                            ),
                        ));
                    }
                }
            }
            t.tokens.push((n[0], n[1]));
        }
        t.lines.push(line);
    }
    // A trace with no rows (an empty file, a header alone) would be a service that never gets
    // a request: a mistake, never a workload.
    if t.arrivals.is_empty() {
        return Err(TraceError {
            line: 1,
            column: 1,
            message: "the trace has no arrivals: expected rows of \
                      `arrival_s[,prompt_tokens,output_tokens]`, one per line"
                .into(),
        });
    }
    Ok(t)
}

/// Whether `llm` reads its prompt or output tokens from its arrival trace.
pub fn reads_tokens(llm: &LlmServing) -> bool {
    matches!(llm.prompt, Tokens::Trace { .. }) || matches!(llm.output, Tokens::Trace { .. })
}

/// A trace read by `llm` (an LLM service with `tokens trace`) must carry token columns,
/// and no row may exceed the service's `max`: (line, column, message) of the first that does.
pub fn check_tokens(llm: &LlmServing, t: &Trace) -> Result<(), TraceError> {
    if !reads_tokens(llm) {
        return Ok(());
    }
    if t.tokens.is_empty() && !t.arrivals.is_empty() {
        return Err(TraceError {
            line: t.lines.first().copied().unwrap_or(1),
            column: 1,
            message: "the service reads its tokens from this trace, but it was read without \
                      its token columns"
                .to_string(),
        });
    }
    for (i, &(p, o)) in t.tokens.iter().enumerate() {
        for (what, n, spec, col) in [("prompt", p, llm.prompt, 2), ("output", o, llm.output, 3)] {
            if let Tokens::Trace { max } = spec
                && n > max
            {
                return Err(TraceError {
                    line: t.lines.get(i).copied().unwrap_or(0),
                    column: col,
                    message: format!(
                        "{n} {what} tokens, over the service's `{what} tokens trace max {max}`"
                    ),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_headers_and_errors() {
        let text =
            "# Azure-style\narrival_s,prompt_tokens,output_tokens\n0.5, 100,20\n\n1,7,3,x # y\n";
        let t = parse(text, true).unwrap();
        assert_eq!(t.arrivals, vec![0.5, 1.0]);
        assert_eq!(t.tokens, vec![(100, 20), (7, 3)]);
        assert_eq!(t.lines, vec![3, 5]);
        // Without a service reading tokens only the first column counts.
        let t = parse("0, extra\n2.5\n", false).unwrap();
        assert_eq!((t.arrivals, t.tokens), (vec![0.0, 2.5], vec![]));
        let e = parse("0,1,2\n1\n", true).unwrap_err();
        assert_eq!((e.line, e.column), (2, 1));
        let e = parse("0,1,x\n", true).unwrap_err();
        assert_eq!((e.line, e.column), (1, 5));
        let e = parse("0,0,1\n", true).unwrap_err();
        assert!(e.message.contains("prompt tokens from 1"), "{}", e.message);
        let e = parse("0,1\n", true).unwrap_err();
        assert!(e.message.contains("2 field(s)"), "{}", e.message);
        let e = parse("1\n-1\n", false).unwrap_err();
        assert_eq!((e.line, e.column), (2, 1));
        // Only the first row may be a header.
        assert!(parse("1\nseconds\n", false).is_err());
    }
}
