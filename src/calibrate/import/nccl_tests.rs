//! nccl-tests / rccl-tests `*_perf` stdout → [`CollectiveTable`]s.
//!
//! The table is the one `writeResultHeader` / `writeBenchmarkLinePreamble` /
//! `writeBenchmarkLineBody` print (nccl-tests `src/util.cu`; rccl-tests `src/common.cu`,
//! where the same table is printed inline). Columns are located by the header's labels, never
//! by position: the very old tables (nccl-tests 2.0) lack `redop` or `root` and call the
//! last column `error`, `-I 1` adds `i_min i_max i_p99 i_cv%` to each half, `-C 1` says
//! `cputime` for `time`, `-T 1` adds a two-token `timestamp`, and rccl-tests `--out_of_place 0`
//! prints an `in-place` half only.
//!
//! A file may hold several runs one after another (each opened by `# nccl-tests version`,
//! `# Collective test starting:` or `# nThread`); each run with rows becomes one table. Any
//! other line (NCCL_DEBUG output, MPI banners, warnings) is skipped, except that a line whose
//! first token is an integer, after a result header and before its footer, must be a whole row.

use super::record::{CollectiveRow, CollectiveTable, Format, Origin, ParseError};
use super::text::{check_size, check_width, parse_number, tokenize};

/// More rows than this in one file is an error (the largest real sweeps have a few hundred).
const MAX_ROWS: usize = 100_000;

/// Program names (as in `# Collective test starting: all_reduce_perf` or a file name) and
/// Orrery's name for the collective, longest first so that `all_reduce_perf` is not taken for
/// `reduce_perf`.
const OPS: [(&str, &str); 7] = [
    ("reduce_scatter_perf", "reduce_scatter"),
    ("all_reduce_perf", "allreduce"),
    ("all_gather_perf", "allgather"),
    ("broadcast_perf", "broadcast"),
    ("alltoall_perf", "alltoall"),
    ("sendrecv_perf", "sendrecv"),
    ("reduce_perf", "reduce"),
];

/// Whether `text` looks like nccl-tests or rccl-tests output: a version or test-starting line,
/// or a result header (`size count type ... time algbw busbw`).
pub fn sniff(text: &str) -> bool {
    text.lines().any(|line| {
        let t = line.trim();
        t.starts_with("# nccl-tests version")
            || t.starts_with("rccl-tests: Version")
            || t.starts_with("# Collective test starting:")
            || header_labels(line)
                .is_some_and(|labels| labels.contains(&"algbw") || labels.contains(&"busbw"))
    })
}

/// Parses nccl-tests / rccl-tests stdout. `file_name` (a path or a base name) names the
/// collective when the output does not (rccl-tests and nccl-tests before 2.x print no
/// `# Collective test starting:` line).
pub fn parse(text: &str, file_name: &str) -> Result<Vec<CollectiveTable>, ParseError> {
    check_size(text, "nccl-tests")?;
    let op_from_file = op_from_name(base_name(file_name));
    let mut tables = Vec::new();
    let mut run = Run::new(1);
    let mut total_rows = 0usize;
    let mut first_header: Option<usize> = None;

    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }

        // Markers that open a run, in the order nccl-tests prints them.
        let marker = if trimmed.starts_with("# nccl-tests version") {
            Some(Stage::Version)
        } else if trimmed.starts_with("# Collective test starting:") {
            Some(Stage::Starting)
        } else if is_nthread_line(trimmed) {
            Some(Stage::NThread)
        } else {
            None
        };
        if let Some(stage) = marker {
            if run.stage >= stage {
                let done = std::mem::replace(&mut run, Run::new(number));
                done.finish(&op_from_file, &mut tables);
            } else if run.stage == Stage::Nothing {
                run.line = number;
            }
            run.stage = stage;
            match stage {
                Stage::Version => push_unique(&mut run.origin.version_lines, trimmed),
                Stage::Starting => {
                    let program = trimmed
                        .get("# Collective test starting:".len()..)
                        .unwrap_or("")
                        .trim();
                    run.op = op_from_name(program);
                }
                _ => {}
            }
            continue;
        }

        if trimmed.starts_with("rccl-tests: Version") {
            push_unique(&mut run.origin.version_lines, trimmed);
            run.rccl_version = true;
            continue;
        }
        if let Some(message) = library_version(trimmed) {
            if !run.library_versions.iter().any(|m| m == message) {
                run.library_versions.push(message.to_string());
                run.origin.version_lines.push(trimmed.to_string());
            }
            continue;
        }

        if trimmed.starts_with('#') {
            if let Some(rank) = parse_rank_line(trimmed) {
                if run.stage >= Stage::Header {
                    // Rank lines after a table: a run without version markers (very old
                    // nccl-tests) follows.
                    let done = std::mem::replace(&mut run, Run::new(number));
                    done.finish(&op_from_file, &mut tables);
                } else if run.stage == Stage::Nothing {
                    run.line = number;
                }
                run.stage = run.stage.max(Stage::Ranks);
                run.add_rank(rank);
                continue;
            }
            if let Some(labels) = header_labels(line) {
                if run.stage >= Stage::Header && (!run.rows.is_empty() || run.closed) {
                    let done = std::mem::replace(&mut run, Run::new(number));
                    done.finish(&op_from_file, &mut tables);
                } else if run.stage == Stage::Nothing {
                    run.line = number;
                }
                let halves = run.title.take().unwrap_or(Halves::Both);
                run.layout = Some(Layout::from_labels(&labels, halves, number)?);
                run.stage = Stage::Header;
                run.closed = false;
                first_header.get_or_insert(number);
                continue;
            }
            if run.rows.is_empty() {
                let has_out = trimmed.contains("out-of-place");
                let has_in = trimmed.replace("out-of-place", "").contains("in-place");
                if has_out || has_in {
                    run.title = Some(match (has_out, has_in) {
                        (true, true) => Halves::Both,
                        (true, false) => Halves::OutOfPlace,
                        _ => Halves::InPlace,
                    });
                    continue;
                }
            }
            if let Some(program) = trimmed.strip_prefix("# Collective test concluded:") {
                if run.op.is_none() {
                    run.op = op_from_name(program.trim());
                }
                run.closed = true;
                continue;
            }
            if trimmed.starts_with("# Out of bounds values")
                || trimmed.starts_with("# Avg bus bandwidth")
                || trimmed.starts_with("# Errors with asterisks")
            {
                run.closed = true;
            }
            continue;
        }

        // A data row: first token an integer, after a header, before the footer.
        let Some(layout) = run.layout.as_ref() else {
            continue;
        };
        if run.closed {
            continue;
        }
        let tokens = tokenize(line);
        let Some(&(_, first)) = tokens.first() else {
            continue;
        };
        if !is_unsigned(first) {
            continue;
        }
        let row = layout.parse_row(&tokens, line, number)?;
        total_rows += 1;
        if total_rows > MAX_ROWS {
            return Err(ParseError::new(
                number,
                1,
                format!("more than {MAX_ROWS} result rows; this is not a benchmark sweep"),
            ));
        }
        run.rows.push(row);
    }
    run.finish(&op_from_file, &mut tables);

    if tables.is_empty() {
        let message = match first_header {
            Some(line) => format!(
                "no nccl-tests/rccl-tests result rows were found (the result header at line \
                 {line} has no rows under it)"
            ),
            None => "no nccl-tests/rccl-tests result table was found".to_string(),
        };
        return Err(ParseError::new(1, 1, message));
    }
    Ok(tables)
}

/// How far a run's output has got; a marker at or before the current stage opens a new run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Nothing,
    Version,
    Starting,
    NThread,
    Ranks,
    Header,
}

/// Which halves a one-`time` table has, from the title line above its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Halves {
    Both,
    OutOfPlace,
    InPlace,
}

struct Run {
    line: usize,
    stage: Stage,
    origin: Origin,
    library_versions: Vec<String>,
    op: Option<String>,
    ranks: usize,
    rccl_version: bool,
    rccl_rank_shape: bool,
    title: Option<Halves>,
    layout: Option<Layout>,
    closed: bool,
    rows: Vec<CollectiveRow>,
}

impl Run {
    fn new(line: usize) -> Run {
        Run {
            line,
            stage: Stage::Nothing,
            origin: Origin::default(),
            library_versions: Vec::new(),
            op: None,
            ranks: 0,
            rccl_version: false,
            rccl_rank_shape: false,
            title: None,
            layout: None,
            closed: false,
            rows: Vec::new(),
        }
    }

    fn add_rank(&mut self, rank: RankLine) {
        self.ranks += 1;
        if !self.origin.hosts.contains(&rank.host) {
            self.origin.hosts.push(rank.host);
        }
        self.origin.devices.push(rank.device);
        self.rccl_rank_shape |= rank.rccl_shape;
    }

    fn finish(self, op_from_file: &Option<String>, tables: &mut Vec<CollectiveTable>) {
        if self.rows.is_empty() {
            return;
        }
        let format = if self.rccl_version || self.rccl_rank_shape {
            Format::RcclTests
        } else {
            Format::NcclTests
        };
        tables.push(CollectiveTable {
            format,
            line: self.line,
            op: self.op.or_else(|| op_from_file.clone()),
            ranks: self.ranks,
            nodes: self.origin.hosts.len(),
            origin: self.origin,
            rows: self.rows,
        });
    }
}

/// What a table's header says about where each field of a row is.
#[derive(Debug)]
struct Layout {
    /// Whitespace-separated tokens a row has (the timestamp counts two).
    tokens: usize,
    size: usize,
    count: usize,
    dtype: usize,
    redop: Option<usize>,
    root: Option<usize>,
    out_time: Option<usize>,
    in_time: Option<usize>,
    /// Token indices that must hold a number (bandwidths, per-iteration figures).
    numbers: Vec<usize>,
    /// Token indices of `#wrong` / `error`: a number, `N/A`, or a number with a trailing `*`.
    wrong: Vec<usize>,
}

impl Layout {
    fn from_labels(labels: &[&str], halves: Halves, line: usize) -> Result<Layout, ParseError> {
        let mut layout = Layout {
            tokens: 0,
            size: 0,
            count: 0,
            dtype: 0,
            redop: None,
            root: None,
            out_time: None,
            in_time: None,
            numbers: Vec::new(),
            wrong: Vec::new(),
        };
        let (mut count, mut dtype) = (None, None);
        let mut times = Vec::new();
        for &label in labels {
            let at = layout.tokens;
            match label {
                "size" => layout.size = at,
                "count" => count = Some(at),
                "type" => dtype = Some(at),
                "redop" => layout.redop = Some(at),
                "root" => layout.root = Some(at),
                "time" | "cputime" => times.push(at),
                "#wrong" | "error" => layout.wrong.push(at),
                "algbw" | "busbw" | "i_min" | "i_max" | "i_p99" | "i_cv%" => {
                    layout.numbers.push(at)
                }
                _ => {}
            }
            layout.tokens += if label == "timestamp" { 2 } else { 1 };
        }
        let (Some(count), Some(dtype)) = (count, dtype) else {
            return Err(ParseError::new(
                line,
                1,
                "result header lacks a `count` or `type` column",
            ));
        };
        layout.count = count;
        layout.dtype = dtype;
        match (times.as_slice(), halves) {
            ([out, inp, ..], _) => {
                layout.out_time = Some(*out);
                layout.in_time = Some(*inp);
            }
            ([only], Halves::OutOfPlace) => layout.out_time = Some(*only),
            ([only], _) => layout.in_time = Some(*only),
            ([], _) => {
                return Err(ParseError::new(
                    line,
                    1,
                    "result header has no `time` column",
                ));
            }
        }
        Ok(layout)
    }

    fn parse_row(
        &self,
        tokens: &[(usize, &str)],
        line: &str,
        number: usize,
    ) -> Result<CollectiveRow, ParseError> {
        check_width(tokens, self.tokens, line, number, "table header")?;
        let field = |index: usize| -> Result<(usize, &str), ParseError> {
            tokens.get(index).copied().ok_or_else(|| {
                ParseError::new(number, 1, "internal error: result column out of range")
            })
        };
        let unsigned = |index: usize, what: &str| -> Result<u64, ParseError> {
            let (column, token) = field(index)?;
            token.parse::<u64>().map_err(|_| {
                ParseError::new(
                    number,
                    column,
                    format!("{what} `{token}` is not a whole number"),
                )
            })
        };
        let time = |index: Option<usize>| -> Result<Option<f64>, ParseError> {
            let Some(index) = index else {
                return Ok(None);
            };
            let (column, token) = field(index)?;
            match parse_number(token) {
                Some(value) if value.is_finite() && value >= 0.0 => Ok(Some(value)),
                _ => Err(ParseError::new(
                    number,
                    column,
                    format!("time `{token}` is not a finite non-negative number of us"),
                )),
            }
        };
        for &index in &self.numbers {
            let (column, token) = field(index)?;
            if parse_number(token).is_none() {
                return Err(ParseError::new(
                    number,
                    column,
                    format!("`{token}` is not a number"),
                ));
            }
        }
        for &index in &self.wrong {
            let (column, token) = field(index)?;
            let value = token.strip_suffix('*').unwrap_or(token);
            if token != "N/A" && parse_number(value).is_none() {
                return Err(ParseError::new(
                    number,
                    column,
                    format!("`#wrong` value `{token}` is neither a number nor `N/A`"),
                ));
            }
        }
        let root = match self.root {
            Some(index) => {
                let (column, token) = field(index)?;
                token.parse::<i64>().map_err(|_| {
                    ParseError::new(number, column, format!("root `{token}` is not an integer"))
                })?
            }
            None => -1,
        };
        let redop = match self.redop {
            Some(index) => field(index)?.1.to_string(),
            None => "none".to_string(),
        };
        Ok(CollectiveRow {
            line: number,
            bytes: unsigned(self.size, "size")?,
            count: unsigned(self.count, "count")?,
            dtype: field(self.dtype)?.1.to_string(),
            redop,
            root,
            out_of_place_us: time(self.out_time)?,
            in_place_us: time(self.in_time)?,
        })
    }
}

/// The labels of a result header line (`#  size  count  type  redop  root  time ...`), or
/// `None` when `line` is not one.
fn header_labels(line: &str) -> Option<Vec<&str>> {
    let rest = line.trim_start().strip_prefix('#')?;
    let labels: Vec<&str> = rest.split_whitespace().collect();
    let has_time = labels.iter().any(|l| *l == "time" || *l == "cputime");
    (labels.first() == Some(&"size") && labels.contains(&"count") && has_time).then_some(labels)
}

/// `# nThread 1 nGpus 8 ...` (nccl-tests 1.0 printed it without the `#`).
fn is_nthread_line(trimmed: &str) -> bool {
    let rest = trimmed.strip_prefix('#').unwrap_or(trimmed).trim_start();
    rest.starts_with("nThread ") && rest.contains("nGpus")
}

/// The `NCCL version 2.21.5+cuda12.4` (or `RCCL version ...`) message of an NCCL_DEBUG line,
/// with or without its `host:pid:tid [dev] NCCL INFO ` prefix.
fn library_version(trimmed: &str) -> Option<&str> {
    let message = match trimmed.find("NCCL INFO ") {
        Some(at) => trimmed.get(at + "NCCL INFO ".len()..)?.trim(),
        None => trimmed,
    };
    let rest = message
        .strip_prefix("NCCL version ")
        .or_else(|| message.strip_prefix("RCCL version "))?;
    rest.starts_with(|c: char| c.is_ascii_digit())
        .then_some(message)
}

struct RankLine {
    host: String,
    device: String,
    rccl_shape: bool,
}

/// `#  Rank  0 Group  0 Pid  12345 on     node01 device  0 [0000:18:00] NVIDIA H100 80GB HBM3`
/// (nccl-tests ≥ 2.13), `#   Rank  0 Pid  1234 on host device  0 [0x18] Tesla V100` (older),
/// `#   Rank  0 Pid  1234 on host device  0 [0000:0c:00.0] AMD Instinct MI300X` (rccl-tests).
fn parse_rank_line(trimmed: &str) -> Option<RankLine> {
    let rest = trimmed.strip_prefix('#')?.trim_start();
    let after_rank = rest.strip_prefix("Rank ")?;
    let words: Vec<&str> = after_rank.split_whitespace().collect();
    if !words.first().is_some_and(|w| is_unsigned(w)) {
        return None;
    }
    let host = words
        .iter()
        .position(|w| *w == "on")
        .and_then(|at| words.get(at + 1))?
        .to_string();
    let has_group = words.contains(&"Group");
    let (bus, device) = match (after_rank.find('['), after_rank.find(']')) {
        (Some(open), Some(close)) if open < close => (
            after_rank.get(open + 1..close).unwrap_or(""),
            after_rank.get(close + 1..).unwrap_or("").trim(),
        ),
        _ => ("", ""),
    };
    Some(RankLine {
        host,
        device: device.to_string(),
        rccl_shape: !has_group && !bus.is_empty() && !bus.starts_with("0x"),
    })
}

/// The collective a program or file name names (`all_reduce_perf`, `dgx_all_reduce_perf.txt`).
fn op_from_name(name: &str) -> Option<String> {
    OPS.iter()
        .find(|(program, _)| name.contains(program))
        .map(|(_, op)| op.to_string())
}

fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

fn push_unique(lines: &mut Vec<String>, line: &str) {
    if !lines.iter().any(|l| l == line) {
        lines.push(line.to_string());
    }
}

fn is_unsigned(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
#[path = "nccl_tests_tests.rs"]
mod tests;
