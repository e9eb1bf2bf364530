//! nvbandwidth output (plain text or `--json`) → [`NvbandwidthRun`].
//!
//! Plain text is what `Output` (nvbandwidth `output.cpp`) prints: the version and driver
//! lines, the host name and one `Device N: NAME (BUS)` line per GPU, then per testcase
//! `Running KEY.`, its description (`memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)`) and
//! the matrix `operator<<` prints (`inline_common.h`): a row of column labels, rows of a label
//! and values or `N/A`, a blank line and `SUM KEY TOTAL` (`&&&& PERF KEY TOTAL UNIT` with
//! `--perfFormatter`). A testcase that prints `Waived: ...` or `ERROR: ...` / `Error: ...`
//! instead has no matrix and is skipped. The bidirectional device-to-device testcases print
//! three matrices each; a matrix takes its name from the `SUM` line under it
//! (`device_to_device_bidirectional_memcpy_read_ce_total`), falling back to the `Running` key.
//!
//! `--json` is jsoncpp's rendering of `JsonOutput` (`json_output.cpp`): an `nvbandwidth`
//! object with `version`, `git_version`, `CUDA Runtime Version`, `Driver Version`,
//! `GPU Device list` (`"0: NAME (BUS): (HOST)"`) and `testcases` (`name`, `status`,
//! `bandwidth_description`, `bandwidth_matrix` of strings). nvbandwidth (through v0.8)
//! declares a `bufferSize` key but never writes it, in JSON or text: `buffer_bytes` is read
//! from a `bufferSize` (MiB) member of `nvbandwidth`, of the top level or of a testcase when
//! one is there (a wrapper may add it), and is `None` otherwise.

use super::text::{check_size, tokenize};
use serde_json::Value;

use super::record::{Matrix, MatrixUnit, NvbandwidthRun, Origin, ParseError};

/// More matrix rows than this in one file is an error.
const MAX_ROWS: usize = 100_000;

/// Whether `text` looks like nvbandwidth output (plain or JSON).
pub fn sniff(text: &str) -> bool {
    let start = text.trim_start_matches('\u{feff}').trim_start();
    if start.starts_with('{') {
        return start.contains("\"nvbandwidth\"");
    }
    text.lines().any(|line| {
        let t = line.trim();
        t.starts_with("nvbandwidth Version:")
            || (t.starts_with("memcpy ") && t.ends_with("bandwidth (GB/s)"))
    })
}

/// Parses nvbandwidth output, plain text or `--json`.
pub fn parse(text: &str) -> Result<NvbandwidthRun, ParseError> {
    check_size(text, "nvbandwidth")?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with('{') {
        parse_json(text)
    } else {
        parse_plain(text)
    }
}

fn parse_plain(text: &str) -> Result<NvbandwidthRun, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut origin = Origin::default();
    let mut matrices = Vec::new();
    let mut running: Option<String> = None;
    let mut skipped = 0usize;
    let mut total_rows = 0usize;
    let mut previous_nonblank: Option<&str> = None;
    let mut index = 0usize;

    while let Some(line) = lines.get(index) {
        let number = index + 1;
        let t = line.trim();
        index += 1;
        if t.is_empty() {
            continue;
        }
        let previous = previous_nonblank.replace(t);

        if t.starts_with("nvbandwidth Version:")
            || t.starts_with("Built from Git version:")
            || t.starts_with("CUDA Runtime Version:")
            || t.starts_with("CUDA Driver Version:")
            || t.starts_with("MPI version:")
        {
            origin.version_lines.push(t.to_string());
            continue;
        }
        if let Some(driver) = t.strip_prefix("Driver Version:") {
            origin.driver = Some(driver.trim().to_string());
            continue;
        }
        if let Some(name) = device_line(t) {
            if origin.devices.is_empty()
                && let Some(host) = previous
                && !host.contains(char::is_whitespace)
                && !host.contains(':')
            {
                push_host(&mut origin.hosts, host);
            }
            origin.devices.push(strip_bus(name).to_string());
            continue;
        }
        if let Some((host, name)) = process_line(t) {
            push_host(&mut origin.hosts, host);
            origin.devices.push(strip_bus(name).to_string());
            continue;
        }
        if let Some(key) = t.strip_prefix("Running ").and_then(|k| k.strip_suffix('.')) {
            running = Some(key.trim().to_string());
            continue;
        }
        if t.starts_with("Waived:") || t.starts_with("ERROR:") || t.starts_with("Error:") {
            skipped += 1;
            running = None;
            continue;
        }
        let Some(unit) = description_unit(t) else {
            continue;
        };

        // A description: the matrix follows.
        let header_number = index + 1;
        let Some(header) = lines.get(index).map(|l| l.trim()).filter(|l| !l.is_empty()) else {
            return Err(ParseError::new(
                header_number,
                1,
                format!("the description at line {number} is not followed by a matrix"),
            ));
        };
        let columns = header.split_whitespace().count();
        index += 1;
        let mut rows = Vec::new();
        while let Some(row_line) = lines.get(index) {
            if row_line.trim().is_empty() {
                break;
            }
            let row_number = index + 1;
            index += 1;
            rows.push(parse_row(row_line, row_number, columns)?);
            total_rows += 1;
            if total_rows > MAX_ROWS {
                return Err(ParseError::new(
                    row_number,
                    1,
                    format!("more than {MAX_ROWS} matrix rows"),
                ));
            }
        }
        if rows.is_empty() {
            return Err(ParseError::new(
                header_number + 1,
                1,
                format!("the matrix at line {header_number} has no rows"),
            ));
        }
        // `SUM KEY TOTAL` after the blank line names the matrix.
        let mut name = running.clone();
        let mut look = index;
        while let Some(next) = lines.get(look) {
            let n = next.trim();
            look += 1;
            if n.is_empty() {
                continue;
            }
            let key = n
                .strip_prefix("SUM ")
                .or_else(|| n.strip_prefix("&&&& PERF "))
                .and_then(|rest| rest.split_whitespace().next());
            if let Some(key) = key {
                name = Some(key.to_string());
                index = look;
            }
            break;
        }
        matrices.push(Matrix {
            testcase: name.unwrap_or_default(),
            description: t.to_string(),
            unit,
            line: number,
            rows,
        });
        previous_nonblank = None;
    }

    if matrices.is_empty() {
        let why = if skipped > 0 {
            format!(" ({skipped} testcases were waived or failed)")
        } else {
            String::new()
        };
        return Err(ParseError::new(
            1,
            1,
            format!("no nvbandwidth result matrix was found{why}"),
        ));
    }
    Ok(NvbandwidthRun {
        origin,
        buffer_bytes: None,
        matrices,
    })
}

/// One matrix row: a label, then `columns` values or `N/A`.
fn parse_row(line: &str, number: usize, columns: usize) -> Result<Vec<Option<f64>>, ParseError> {
    let tokens = tokenize(line);
    if tokens.len() != columns + 1 {
        let column = match tokens.get(columns + 1) {
            Some(&(column, _)) => column,
            None => line.chars().count() + 1,
        };
        return Err(ParseError::new(
            number,
            column,
            format!(
                "matrix row has {} values; its header has {columns} columns",
                tokens.len().saturating_sub(1)
            ),
        ));
    }
    tokens
        .iter()
        .skip(1)
        .map(|&(column, token)| value(token).map_err(|m| ParseError::new(number, column, m)))
        .collect()
}

/// A matrix cell: `N/A` or a finite, non-negative number.
fn value(token: &str) -> Result<Option<f64>, String> {
    if token == "N/A" {
        return Ok(None);
    }
    let numeric = token.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    match token.parse::<f64>() {
        Ok(v) if numeric && v.is_finite() => Ok(Some(v)),
        _ => Err(format!(
            "matrix value `{token}` is neither a non-negative number nor `N/A`"
        )),
    }
}

/// The unit of a description line: `... bandwidth (GB/s)` or `... (ns)`.
fn description_unit(t: &str) -> Option<MatrixUnit> {
    if t.ends_with("(GB/s)") {
        Some(MatrixUnit::GBps)
    } else if t.ends_with("(ns)") {
        Some(MatrixUnit::Ns)
    } else {
        None
    }
}

/// `Device 0: NVIDIA H100 80GB HBM3 (00000000:18:00)` → the part after `: `.
fn device_line(t: &str) -> Option<&str> {
    let rest = t.strip_prefix("Device ")?;
    let (index, name) = rest.split_once(": ")?;
    (!index.is_empty() && index.bytes().all(|b| b.is_ascii_digit())).then_some(name.trim())
}

/// `Process 0 (host): device 0: NAME (BUS)` (multinode builds) → host and name.
fn process_line(t: &str) -> Option<(&str, &str)> {
    let rest = t.strip_prefix("Process ")?;
    let open = rest.find('(')?;
    let close = rest.find("): device ")?;
    let host = rest.get(open + 1..close)?;
    let after = rest.get(close + "): device ".len()..)?;
    let (_, name) = after.split_once(": ")?;
    Some((host, name.trim()))
}

/// Drops a trailing ` (00000000:18:00)` PCI address.
fn strip_bus(name: &str) -> &str {
    let Some(open) = name.rfind(" (") else {
        return name;
    };
    let Some(bus) = name.get(open + 2..).and_then(|b| b.strip_suffix(')')) else {
        return name;
    };
    if !bus.is_empty()
        && bus
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
    {
        name.get(..open).unwrap_or(name).trim_end()
    } else {
        name
    }
}

fn push_host(hosts: &mut Vec<String>, host: &str) {
    if !host.is_empty() && !hosts.iter().any(|h| h == host) {
        hosts.push(host.to_string());
    }
}

fn parse_json(text: &str) -> Result<NvbandwidthRun, ParseError> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        let line = e.line().max(1);
        ParseError::new(
            line,
            char_column(text, line, e.column()),
            format!("invalid JSON: {e}"),
        )
    })?;
    let Some(nvb) = root.get("nvbandwidth").and_then(Value::as_object) else {
        return Err(ParseError::new(1, 1, "JSON has no \"nvbandwidth\" object"));
    };
    let mut origin = Origin::default();
    let scalar = |v: &Value| -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    };
    for (key, label) in [
        ("version", "nvbandwidth Version"),
        ("git_version", "Built from Git version"),
        ("CUDA Runtime Version", "CUDA Runtime Version"),
    ] {
        if let Some(v) = nvb.get(key).and_then(scalar) {
            origin.version_lines.push(format!("{label}: {v}"));
        }
    }
    origin.driver = nvb.get("Driver Version").and_then(scalar);
    if let Some(host) = nvb.get("Hostname").and_then(Value::as_str) {
        push_host(&mut origin.hosts, host);
    }
    for entry in nvb
        .get("GPU Device list")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        // "0: NVIDIA H100 80GB HBM3 (00000000:18:00): (dgx01)"
        let rest = match entry.split_once(": ") {
            Some((index, rest)) if index.bytes().all(|b| b.is_ascii_digit()) => rest,
            _ => entry,
        };
        let name = match (rest.rfind(": ("), rest.strip_suffix(')')) {
            (Some(at), Some(inner)) => {
                push_host(&mut origin.hosts, inner.get(at + 3..).unwrap_or(""));
                rest.get(..at).unwrap_or(rest)
            }
            _ => rest,
        };
        origin.devices.push(strip_bus(name.trim()).to_string());
    }

    let description_lines = key_lines(text, "\"bandwidth_description\"");
    let matrix_lines = key_lines(text, "\"bandwidth_matrix\"");
    let mut buffer_mib = root
        .get("bufferSize")
        .and_then(mib)
        .or_else(|| nvb.get("bufferSize").and_then(mib));
    let mut matrices = Vec::new();
    let mut skipped = 0usize;
    let mut total_rows = 0usize;
    let (mut nth_description, mut nth_matrix) = (0usize, 0usize);
    let testcases = nvb.get("testcases").and_then(Value::as_array);
    for testcase in testcases.into_iter().flatten() {
        let Some(testcase) = testcase.as_object() else {
            continue;
        };
        if buffer_mib.is_none() {
            buffer_mib = testcase.get("bufferSize").and_then(mib);
        }
        let description = testcase
            .get("bandwidth_description")
            .and_then(Value::as_str);
        let desc_line = description.and_then(|_| {
            nth_description += 1;
            description_lines.get(nth_description - 1).copied()
        });
        let Some(rows) = testcase.get("bandwidth_matrix") else {
            skipped += 1;
            continue;
        };
        nth_matrix += 1;
        let at = matrix_lines.get(nth_matrix - 1).copied().unwrap_or(1);
        if testcase
            .get("status")
            .and_then(Value::as_str)
            .is_some_and(|s| s != "Passed")
        {
            skipped += 1;
            continue;
        }
        let name = testcase
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let unit = match description.and_then(description_unit) {
            Some(unit) => unit,
            None if name.contains("latency") => MatrixUnit::Ns,
            None => MatrixUnit::GBps,
        };
        let Some(rows) = rows.as_array() else {
            return Err(ParseError::new(
                at,
                1,
                format!("`{name}`: bandwidth_matrix is not an array"),
            ));
        };
        let mut parsed: Vec<Vec<Option<f64>>> = Vec::with_capacity(rows.len().min(MAX_ROWS));
        for row in rows {
            let Some(row) = row.as_array() else {
                return Err(ParseError::new(
                    at,
                    1,
                    format!("`{name}`: a bandwidth_matrix row is not an array"),
                ));
            };
            let cells = row
                .iter()
                .map(json_cell)
                .collect::<Result<Vec<_>, String>>()
                .map_err(|m| ParseError::new(at, 1, format!("`{name}`: {m}")))?;
            if parsed
                .first()
                .is_some_and(|first| first.len() != cells.len())
            {
                return Err(ParseError::new(
                    at,
                    1,
                    format!("`{name}`: bandwidth_matrix rows differ in length"),
                ));
            }
            total_rows += 1;
            if total_rows > MAX_ROWS {
                return Err(ParseError::new(
                    at,
                    1,
                    format!("more than {MAX_ROWS} matrix rows"),
                ));
            }
            parsed.push(cells);
        }
        if parsed.is_empty() {
            skipped += 1;
            continue;
        }
        matrices.push(Matrix {
            testcase: name,
            description: description.unwrap_or_default().to_string(),
            unit,
            line: desc_line.unwrap_or(at),
            rows: parsed,
        });
    }
    if matrices.is_empty() {
        let mut why = String::new();
        if skipped > 0 {
            why = format!(" ({skipped} testcases were waived or failed)");
        }
        if let Some(error) = nvb.get("error").and_then(Value::as_str) {
            why = format!("{why}; nvbandwidth said: {error}");
        }
        return Err(ParseError::new(
            1,
            1,
            format!("no nvbandwidth result matrix was found{why}"),
        ));
    }
    let buffer_bytes = match buffer_mib {
        Some(mib) if mib.is_finite() && mib >= 0.0 && mib * 1_048_576.0 < 9.0e18 => {
            Some((mib * 1_048_576.0).round() as u64)
        }
        Some(mib) => {
            return Err(ParseError::new(
                1,
                1,
                format!("bufferSize {mib} MiB is out of range"),
            ));
        }
        None => None,
    };
    Ok(NvbandwidthRun {
        origin,
        buffer_bytes,
        matrices,
    })
}

/// A `bandwidth_matrix` cell: `"N/A"`, a numeric string (as nvbandwidth writes them) or a
/// number.
fn json_cell(cell: &Value) -> Result<Option<f64>, String> {
    match cell {
        Value::String(s) => value(s.trim()),
        Value::Number(n) => match n.as_f64() {
            Some(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
            _ => Err(format!("matrix value `{n}` is not a non-negative number")),
        },
        Value::Null => Ok(None),
        other => Err(format!(
            "matrix value `{other}` is neither a number nor \"N/A\""
        )),
    }
}

/// A `bufferSize` value in MiB, number or numeric string.
fn mib(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
}

/// 1-based lines on which `needle` occurs, once per occurrence, in order.
fn key_lines(text: &str, needle: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .flat_map(|(i, l)| std::iter::repeat_n(i + 1, l.matches(needle).count()))
        .collect()
}

/// serde_json's column (bytes into the line) as a 1-based column in characters.
fn char_column(text: &str, line: usize, byte_column: usize) -> usize {
    let Some(l) = text.lines().nth(line.saturating_sub(1)) else {
        return byte_column.max(1);
    };
    let mut end = byte_column.saturating_sub(1).min(l.len());
    while end > 0 && !l.is_char_boundary(end) {
        end -= 1;
    }
    l.get(..end).map_or(1, |p| p.chars().count() + 1)
}

#[cfg(test)]
#[path = "nvbandwidth_tests.rs"]
mod tests;
