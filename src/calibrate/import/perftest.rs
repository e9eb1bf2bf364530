//! perftest (`ib_write_bw`, `ib_read_bw`, `ib_send_bw`, `ib_*_lat`) stdout → [`PerftestTable`].
//!
//! `ctx_print_test_info` (perftest `src/perftest_parameters.c`) prints a dashed
//! `RESULT_LINE`, the title (`                    RDMA_Write BW Test`) and key-value lines,
//! two to a line separated by tabs (` Dual-port       : OFF\t\tDevice         : mlx5_0`); the
//! main program then prints the column header (`RESULT_FMT*` in `src/perftest_parameters.h`)
//! and one row per size (`REPORT_FMT*`). Columns are located by the header's labels: a label
//! is the words up to one ending in `]` (`BW peak[Gb/sec]`, `99% percentile[usec]`) or a
//! lone `#word` (`#bytes`, `#sl`). Bandwidth units: `MB/sec` and `MiB/sec` (perftest since
//! commit 1d202bb, 2024-03-19, prints `MiB` for what was always 2^20 bytes/s) and `Gb/sec`
//! (`--report_gbits`, 10^9 bits/s); latency units: `usec`. Anything else is refused, as is
//! `--report-cycles` latency output, whose header still says `usec` but whose figures are CPU
//! cycles (detected by the `#, cycles` line of its histogram).
//!
//! The first table with rows is read; later ones (the `Local results:` / `Remote results:`
//! tables of `--report-both` duplex runs) are ignored.

use super::record::{Origin, ParseError, PerfKind, PerfRow, PerftestTable};
use super::text::{check_size, check_width, parse_number, tokenize};

/// More rows than this in one file is an error.
const MAX_ROWS: usize = 100_000;

/// The verbs `ctx_print_test_info` names in the title (`testsStr`).
const VERBS: [&str; 6] = [
    "Send",
    "Send_imm",
    "RDMA_Write",
    "RDMA_Write_imm",
    "RDMA_Read",
    "Atomic",
];

/// Whether `text` looks like perftest output: a result header (`#bytes ... #iterations`) or
/// a test title line.
pub fn sniff(text: &str) -> bool {
    text.lines().any(|line| {
        let t = line.trim();
        (t.starts_with("#bytes") && t.contains("#iterations")) || title(t).is_some()
    })
}

/// Parses the stdout of one perftest run (client or server side).
pub fn parse(text: &str) -> Result<PerftestTable, ParseError> {
    check_size(text, "perftest")?;
    let mut origin = Origin::default();
    let mut test: Option<(String, PerfKind, bool)> = None;
    let mut device = None;
    let mut link = None;
    let mut layout: Option<Layout> = None;
    let mut rows: Vec<PerfRow> = Vec::new();
    let mut done = false;

    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if t.starts_with("Version:") {
            origin.version_lines.push(t.to_string());
            continue;
        }
        if test.is_none()
            && let Some(found) = title(t)
        {
            test = Some(found);
            continue;
        }
        if t.starts_with("#bytes") {
            if !rows.is_empty() {
                done = true;
            }
            if !done {
                layout = Some(Layout::from_header(line, number)?);
            }
            continue;
        }
        if t == "#, cycles" {
            return Err(ParseError::new(
                number,
                1,
                "latencies are in CPU cycles (--report-cycles); run without it to get usec",
            ));
        }
        if t.len() >= 10 && t.bytes().all(|b| b == b'-') {
            if !rows.is_empty() {
                done = true;
            }
            continue;
        }
        if layout.is_none() {
            for segment in line.split('\t') {
                let Some((key, value)) = segment.split_once(':') else {
                    continue;
                };
                let (key, value) = (key.trim(), value.trim());
                if value.is_empty() {
                    continue;
                }
                match key {
                    "Device" if device.is_none() => device = Some(value.to_string()),
                    "Link type" if link.is_none() => link = Some(value.to_string()),
                    _ => {}
                }
            }
            continue;
        }
        let Some(layout) = layout.as_ref() else {
            continue;
        };
        if done {
            continue;
        }
        let tokens = tokenize(line);
        let Some(&(_, first)) = tokens.first() else {
            continue;
        };
        if !first.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        rows.push(layout.parse_row(&tokens, line, number)?);
        if rows.len() > MAX_ROWS {
            return Err(ParseError::new(
                number,
                1,
                format!("more than {MAX_ROWS} result rows"),
            ));
        }
    }

    let Some(layout) = layout else {
        return Err(ParseError::new(
            1,
            1,
            "no perftest result table (a ` #bytes  #iterations ...` header) was found",
        ));
    };
    if rows.is_empty() {
        return Err(ParseError::new(
            layout.line,
            1,
            "the perftest result table has no rows",
        ));
    }
    let kind = layout.kind;
    let (test, bidirectional) = match test {
        Some((name, _, bidirectional)) => (name, bidirectional),
        None => (String::new(), false),
    };
    Ok(PerftestTable {
        origin,
        test,
        kind,
        device,
        link,
        bidirectional,
        rows,
    })
}

/// The title line: `RDMA_Write BW Test`, `RDMA_Read Latency Test`, `Send Bidirectional BW Test`.
fn title(t: &str) -> Option<(String, PerfKind, bool)> {
    let words: Vec<&str> = t.split_whitespace().collect();
    if words.last() != Some(&"Test") || !words.first().is_some_and(|w| VERBS.contains(w)) {
        return None;
    }
    let kind = if words.contains(&"BW") {
        PerfKind::Bandwidth
    } else if words.contains(&"Latency") {
        PerfKind::Latency
    } else {
        return None;
    };
    Some((words.join(" "), kind, words.contains(&"Bidirectional")))
}

/// What a column of the result table holds.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Column {
    Bytes,
    Iterations,
    /// Bytes per second per unit of the column.
    BwPeak(f64),
    BwAverage(f64),
    TMin,
    TTypical,
    TAvg,
    /// A number Orrery does not keep (message rate, percentiles, CPU use, `#sl`, ...).
    Other,
}

#[derive(Debug)]
struct Layout {
    line: usize,
    kind: PerfKind,
    columns: Vec<Column>,
}

impl Layout {
    fn from_header(line: &str, number: usize) -> Result<Layout, ParseError> {
        // Labels: (column of the label, its text, column of its unit after `[`).
        let mut labels: Vec<(usize, String, Option<usize>)> = Vec::new();
        let mut current: Option<(usize, String, Option<usize>)> = None;
        for (column, token) in tokenize(line) {
            if token.starts_with('#') && current.is_none() {
                labels.push((column, token.to_string(), None));
                continue;
            }
            let (_, label, unit_column) =
                current.get_or_insert_with(|| (column, String::new(), None));
            if !label.is_empty() {
                label.push(' ');
            }
            label.push_str(token);
            if let Some(open) = token.find('[') {
                let before = token.get(..open).map_or(0, |b| b.chars().count());
                unit_column.get_or_insert(column + before + 1);
            }
            if token.ends_with(']')
                && let Some(done) = current.take()
            {
                labels.push(done);
            }
        }
        labels.extend(current);

        let mut columns = Vec::with_capacity(labels.len());
        let (mut bandwidth, mut latency) = (false, false);
        for (column, label, unit_column) in &labels {
            let (name, unit) = match label.split_once('[') {
                Some((name, rest)) => (name.trim(), rest.strip_suffix(']')),
                None => (label.as_str(), None),
            };
            let bad_unit = |unit: Option<&str>| {
                let message = match unit {
                    Some(unit) => format!("unknown unit `{unit}` in perftest column `{label}`"),
                    None => format!("perftest column `{label}` has no `[unit]`"),
                };
                ParseError::new(number, unit_column.unwrap_or(*column), message)
            };
            let kind = if name.starts_with("BW") {
                bandwidth = true;
                let scale = match unit {
                    Some("MB/sec") | Some("MiB/sec") => 1_048_576.0,
                    Some("Gb/sec") => 125_000_000.0,
                    other => return Err(bad_unit(other)),
                };
                match name {
                    "BW peak" => Column::BwPeak(scale),
                    "BW average" => Column::BwAverage(scale),
                    _ => Column::Other,
                }
            } else if name.starts_with("t_") || name.ends_with("percentile") {
                latency = true;
                if unit != Some("usec") {
                    return Err(bad_unit(unit));
                }
                match name {
                    "t_min" => Column::TMin,
                    "t_typical" => Column::TTypical,
                    "t_avg" => Column::TAvg,
                    _ => Column::Other,
                }
            } else if name.starts_with("MsgRate") {
                if unit != Some("Mpps") {
                    return Err(bad_unit(unit));
                }
                Column::Other
            } else {
                match name {
                    "#bytes" => Column::Bytes,
                    "#iterations" => Column::Iterations,
                    _ => Column::Other,
                }
            };
            columns.push(kind);
        }
        if !columns.contains(&Column::Iterations) {
            return Err(ParseError::new(
                number,
                1,
                "perftest result header has no `#iterations` column",
            ));
        }
        let kind = match (bandwidth, latency) {
            (true, false) => PerfKind::Bandwidth,
            (false, true) => PerfKind::Latency,
            _ => {
                return Err(ParseError::new(
                    number,
                    1,
                    "perftest result header has neither bandwidth nor latency columns (or both)",
                ));
            }
        };
        Ok(Layout {
            line: number,
            kind,
            columns,
        })
    }

    fn parse_row(
        &self,
        tokens: &[(usize, &str)],
        line: &str,
        number: usize,
    ) -> Result<PerfRow, ParseError> {
        check_width(tokens, self.columns.len(), line, number, "header")?;
        let mut row = PerfRow {
            line: number,
            bytes: 0,
            iterations: 0,
            bw_average: None,
            bw_peak: None,
            t_typical: None,
            t_avg: None,
            t_min: None,
        };
        for (&(column, token), kind) in tokens.iter().zip(&self.columns) {
            let whole = || {
                token.parse::<u64>().map_err(|_| {
                    ParseError::new(number, column, format!("`{token}` is not a whole number"))
                })
            };
            let number_value = || -> Result<f64, ParseError> {
                match parse_number(token) {
                    Some(v) if v.is_finite() && v >= 0.0 => Ok(v),
                    _ => Err(ParseError::new(
                        number,
                        column,
                        format!("`{token}` is not a finite non-negative number"),
                    )),
                }
            };
            match *kind {
                Column::Bytes => row.bytes = whole()?,
                Column::Iterations => row.iterations = whole()?,
                Column::BwPeak(scale) => row.bw_peak = Some(number_value()? * scale),
                Column::BwAverage(scale) => row.bw_average = Some(number_value()? * scale),
                Column::TMin => row.t_min = Some(number_value()? / 1e6),
                Column::TTypical => row.t_typical = Some(number_value()? / 1e6),
                Column::TAvg => row.t_avg = Some(number_value()? / 1e6),
                Column::Other => {
                    if parse_number(token).is_none() {
                        return Err(ParseError::new(
                            number,
                            column,
                            format!("`{token}` is not a number"),
                        ));
                    }
                }
            }
        }
        Ok(row)
    }
}

#[cfg(test)]
#[path = "perftest_tests.rs"]
mod tests;
