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
mod tests {
    use super::*;

    const PLAIN: &str = "\
nvbandwidth Version: v0.8
Built from Git version: v0.8

CUDA Runtime Version: 12090
CUDA Driver Version: 12090
Driver Version: 575.57.08

node7
Device 0: NVIDIA H200 (00000000:18:00)
Device 1: NVIDIA H200 (00000000:2a:00)

Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
           0         1
 0     55.12     54.98

SUM host_to_device_memcpy_ce 110.10

Waived: 
Running device_to_device_memcpy_write_ce.
memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)
           0         1
 0       N/A    389.50
 1    390.25       N/A

SUM device_to_device_memcpy_write_ce 779.75

Running device_to_device_bidirectional_memcpy_read_ce.
memcpy CE GPU(row) <-> GPU(column) Read1 bandwidth (GB/s)
           0         1
 0       N/A    370.00
 1    371.00       N/A

SUM device_to_device_bidirectional_memcpy_read_ce_read1 741.00

memcpy CE GPU(row) <-> GPU(column) Total bandwidth (GB/s)
           0         1
 0       N/A    740.00
 1    742.00       N/A

SUM device_to_device_bidirectional_memcpy_read_ce_total 1482.00

Running host_device_latency_sm.
memory latency SM CPU(row) <-> GPU(column) (ns)
           0         1
 0    812.40    809.10

SUM host_device_latency_sm 1621.50
Running device_to_host_memcpy_sm.
ERROR: something failed

NOTE: The reported results may not reflect the full capabilities of the platform.
Performance can vary with software drivers, hardware clocks, and system topology.
";

    #[test]
    fn plain_text_with_na_waived_and_error() {
        assert!(sniff(PLAIN));
        let run = parse(PLAIN).unwrap();
        assert_eq!(
            run.origin.version_lines,
            vec![
                "nvbandwidth Version: v0.8",
                "Built from Git version: v0.8",
                "CUDA Runtime Version: 12090",
                "CUDA Driver Version: 12090",
            ]
        );
        assert_eq!(run.origin.driver.as_deref(), Some("575.57.08"));
        assert_eq!(run.origin.hosts, vec!["node7"]);
        assert_eq!(run.origin.devices, vec!["NVIDIA H200", "NVIDIA H200"]);
        assert_eq!(run.buffer_bytes, None);
        let names: Vec<&str> = run.matrices.iter().map(|m| m.testcase.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "host_to_device_memcpy_ce",
                "device_to_device_memcpy_write_ce",
                "device_to_device_bidirectional_memcpy_read_ce_read1",
                "device_to_device_bidirectional_memcpy_read_ce_total",
                "host_device_latency_sm",
            ]
        );
        let h2d = &run.matrices[0];
        assert_eq!(h2d.line, 13);
        assert_eq!(h2d.unit, MatrixUnit::GBps);
        assert_eq!(
            h2d.description,
            "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)"
        );
        assert_eq!(h2d.rows, vec![vec![Some(55.12), Some(54.98)]]);
        let d2d = &run.matrices[1];
        assert_eq!(d2d.line, 21);
        assert_eq!(
            d2d.rows,
            vec![vec![None, Some(389.5)], vec![Some(390.25), None]]
        );
        assert_eq!(run.matrices[3].rows[1], vec![Some(742.0), None]);
        let lat = &run.matrices[4];
        assert_eq!(lat.unit, MatrixUnit::Ns);
        assert_eq!(lat.rows, vec![vec![Some(812.4), Some(809.1)]]);
    }

    #[test]
    fn plain_text_errors_are_located() {
        let bad = PLAIN.replace("389.50", "389.5x");
        let e = parse(&bad).unwrap_err();
        assert_eq!((e.line, e.column), (23, 17));
        let short = PLAIN.replace(" 1    390.25       N/A", " 1    390.25");
        let e = parse(&short).unwrap_err();
        assert_eq!((e.line, e.column), (24, 13));
        assert!(e.message.contains("1 values"), "{}", e.message);
        let e = parse("nvbandwidth Version: v0.8\nWaived: \n").unwrap_err();
        assert_eq!((e.line, e.column), (1, 1));
        assert!(
            e.message.contains("1 testcases were waived"),
            "{}",
            e.message
        );
        let e = parse("memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n").unwrap_err();
        assert_eq!(e.line, 2);
    }

    const JSON: &str = r#"{
	"nvbandwidth" : 
	{
		"CUDA Runtime Version" : 12090,
		"Driver Version" : "575.57.08",
		"GPU Device list" : 
		[
			"0: NVIDIA H200 (00000000:18:00): (node7)",
			"1: NVIDIA H200 (00000000:2a:00): (node7)"
		],
		"bufferSize" : 64,
		"git_version" : "v0.8",
		"testcases" : 
		[
			{
				"bandwidth_description" : "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)",
				"bandwidth_matrix" : 
				[
					[
						"N/A",
						"389.5"
					],
					[
						"390.25",
						"N/A"
					]
				],
				"name" : "device_to_device_memcpy_write_ce",
				"status" : "Passed",
				"sum" : 779.75
			},
			{
				"name" : "device_to_device_memcpy_read_ce",
				"status" : "Waived"
			},
			{
				"bandwidth_description" : "memcpy local GPU(column) bandwidth (GB/s)",
				"bandwidth_matrix" : 
				[
					[
						"1480.5",
						1490
					]
				],
				"name" : "device_local_copy",
				"status" : "Passed",
				"sum" : 2970.5
			}
		],
		"version" : "v0.8"
	}
}
"#;

    #[test]
    fn json_variant() {
        assert!(sniff(JSON));
        let run = parse(JSON).unwrap();
        assert_eq!(run.buffer_bytes, Some(64 << 20));
        assert_eq!(run.origin.driver.as_deref(), Some("575.57.08"));
        assert_eq!(run.origin.hosts, vec!["node7"]);
        assert_eq!(run.origin.devices, vec!["NVIDIA H200", "NVIDIA H200"]);
        assert_eq!(
            run.origin.version_lines,
            vec![
                "nvbandwidth Version: v0.8",
                "Built from Git version: v0.8",
                "CUDA Runtime Version: 12090",
            ]
        );
        assert_eq!(run.matrices.len(), 2);
        let d2d = &run.matrices[0];
        assert_eq!(d2d.testcase, "device_to_device_memcpy_write_ce");
        assert_eq!(d2d.line, 16);
        assert_eq!(
            d2d.rows,
            vec![vec![None, Some(389.5)], vec![Some(390.25), None]]
        );
        let local = &run.matrices[1];
        assert_eq!(local.testcase, "device_local_copy");
        assert_eq!(local.line, 37);
        assert_eq!(local.rows, vec![vec![Some(1480.5), Some(1490.0)]]);
        // Without the key (as nvbandwidth itself prints it) the size is unknown.
        let plain = parse(&JSON.replace("\"bufferSize\" : 64,", "")).unwrap();
        assert_eq!(plain.buffer_bytes, None);
        let per_test = JSON.replace("\"bufferSize\" : 64,", "").replace(
            "\"name\" : \"device_local_copy\",",
            "\"name\" : \"device_local_copy\", \"bufferSize\" : \"2\",",
        );
        assert_eq!(parse(&per_test).unwrap().buffer_bytes, Some(2 << 20));
    }

    #[test]
    fn json_errors_are_located() {
        let broken = JSON.replace("\"389.5\"", "\"389.5\" x");
        let e = parse(&broken).unwrap_err();
        assert_eq!((e.line, e.column), (21, 15));
        let bad_value = JSON.replace("\"390.25\"", "\"fast\"");
        let e = parse(&bad_value).unwrap_err();
        assert_eq!(e.line, 17);
        assert!(e.message.contains("fast"), "{}", e.message);
        let e = parse("{\"other\": 1}").unwrap_err();
        assert!(e.message.contains("nvbandwidth"));
        let e = parse(
            "{\"nvbandwidth\": {\"testcases\": [{\"name\": \"x\", \"status\": \"Waived\"}]}}",
        )
        .unwrap_err();
        assert!(e.message.contains("waived"), "{}", e.message);
    }

    #[test]
    fn garbage_does_not_panic() {
        for text in [
            "{",
            "{\"nvbandwidth\": []}",
            "Device : x",
            "Process 0 (: device 1:",
            "x (GB/s)\n a b\n c",
            "\u{e9}\u{e9} (ns)\n\u{e9}\n\u{e9} 1",
            "{\"nvbandwidth\": {\"bufferSize\": 1e300, \"testcases\": [{\"bandwidth_matrix\": [[\"1\"]]}]}}",
            "{\"nvbandwidth\": {\"GPU Device list\": [\"0: x): (\", \": (\", \")\"]}}",
        ] {
            let _ = parse(text);
        }
    }

    fn check_fixture(run: &NvbandwidthRun) {
        assert_eq!(run.origin.hosts, vec!["dgx01"]);
        assert_eq!(run.origin.devices, vec!["NVIDIA H100 80GB HBM3"; 8]);
        assert_eq!(run.origin.driver.as_deref(), Some("575.57.08"));
        let names: Vec<&str> = run.matrices.iter().map(|m| m.testcase.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "host_to_device_memcpy_ce",
                "device_to_host_memcpy_ce",
                "device_to_device_memcpy_write_ce",
                "device_local_copy",
            ]
        );
        assert_eq!(run.matrices[0].rows.len(), 1);
        assert_eq!(run.matrices[0].rows[0].len(), 8);
        assert_eq!(run.matrices[2].rows.len(), 8);
        for (i, row) in run.matrices[2].rows.iter().enumerate() {
            assert_eq!(row[i], None);
            assert_eq!(row.iter().filter(|v| v.is_some()).count(), 7);
        }
    }

    #[test]
    fn fixtures_plain_and_json() {
        let b64 = include_str!("../../../tests/fixtures/import/nvbandwidth_b64.txt");
        let b512 = include_str!("../../../tests/fixtures/import/nvbandwidth_b512.txt");
        let b2 = include_str!("../../../tests/fixtures/import/nvbandwidth_b2.txt");
        let j64 = include_str!("../../../tests/fixtures/import/nvbandwidth_b64.json");
        let j512 = include_str!("../../../tests/fixtures/import/nvbandwidth_b512.json");
        let j2 = include_str!("../../../tests/fixtures/import/nvbandwidth_b2.json");
        for text in [b64, b512, b2, j64, j512, j2] {
            assert!(sniff(text));
            let run = parse(text).unwrap();
            check_fixture(&run);
            // nvbandwidth prints no buffer size, in either form.
            assert_eq!(run.buffer_bytes, None);
        }
        let plain = parse(b64).unwrap();
        let json = parse(j64).unwrap();
        assert_eq!(plain.origin.version_lines.len(), 4);
        assert_eq!(json.origin.version_lines.len(), 3);
        assert_eq!(plain.matrices[0].rows[0][0], Some(FIXTURE_B64.0));
        assert_eq!(json.matrices[0].rows[0][0], Some(FIXTURE_B64.1));
        assert_eq!(plain.matrices[2].rows[0][1], Some(FIXTURE_B64.2));
        assert_eq!(plain.matrices[3].rows[0][7], Some(FIXTURE_B64.3));
        // Larger buffers amortize the fixed cost: bandwidth rises with the buffer size.
        let h2d = |text: &str| parse(text).ok().and_then(|r| r.matrices[0].rows[0][0]);
        assert!(h2d(b2) < h2d(b64) && h2d(b64) < h2d(b512));
    }

    /// Read off `nvbandwidth_b64.txt` / `.json`: h2d GPU 0 (text, json), d2d 0→1, local GPU 7.
    const FIXTURE_B64: (f64, f64, f64, f64) = (54.48, 54.827, 375.03, 1359.39);
}
