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
mod tests {
    use super::*;

    const NEW: &str = "\
# nccl-tests version 2.17.6 nccl-headers=22707 nccl-library=22707
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 2 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   4242 on      dgx01 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   4242 on      dgx01 device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
dgx01:4242:4242 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>
dgx01:4242:4242 [0] NCCL INFO NCCL version 2.27.7+cuda12.9
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong 
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         
           8             2     float     sum      -1    14.02    0.00    0.00       0    13.87    0.00    0.00       0
dgx01:4242:4250 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM
        1024           256     float     sum      -1  1.2e+05    0.01    0.01     N/A    38.55    0.03    0.03       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.01 
#
# Collective test concluded: all_reduce_perf
";

    #[test]
    fn new_format_located_by_header() {
        let tables = parse(NEW, "whatever.txt").unwrap();
        assert_eq!(tables.len(), 1);
        let t = &tables[0];
        assert_eq!(t.format, Format::NcclTests);
        assert_eq!(t.op.as_deref(), Some("allreduce"));
        assert_eq!(t.line, 1);
        assert_eq!((t.ranks, t.nodes), (2, 1));
        assert_eq!(t.origin.hosts, vec!["dgx01"]);
        assert_eq!(t.origin.devices, vec!["NVIDIA H100 80GB HBM3"; 2]);
        assert_eq!(
            t.origin.version_lines,
            vec![
                "# nccl-tests version 2.17.6 nccl-headers=22707 nccl-library=22707",
                "dgx01:4242:4242 [0] NCCL INFO NCCL version 2.27.7+cuda12.9",
            ]
        );
        assert_eq!(t.rows.len(), 2);
        let r = &t.rows[0];
        assert_eq!((r.line, r.bytes, r.count), (14, 8, 2));
        assert_eq!(
            (r.dtype.as_str(), r.redop.as_str(), r.root),
            ("float", "sum", -1)
        );
        assert_eq!(r.out_of_place_us, Some(14.02));
        assert_eq!(r.in_place_us, Some(13.87));
        let r = &t.rows[1];
        assert_eq!((r.line, r.bytes), (16, 1024));
        assert_eq!(r.out_of_place_us, Some(1.2e5));
        assert_eq!(r.in_place_us, Some(38.55));
    }

    #[test]
    fn very_old_format_without_root_and_with_error_column() {
        let text = "\
# nThread 1 nGpus 4 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 
#
# Using devices
#   Rank  0 Pid  31337 on     node01 device  0 [0x18] Tesla V100-SXM2-16GB
#   Rank  1 Pid  31337 on     node01 device  1 [0x3b] Tesla V100-SXM2-16GB
#   Rank  2 Pid  31338 on     node02 device  0 [0x18] Tesla V100-SXM2-16GB
#   Rank  3 Pid  31338 on     node02 device  1 [0x3b] Tesla V100-SXM2-16GB
#
#                                                 out-of-place                    in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2   float     sum    31.50    0.00    0.00  0e+00    30.25    0.00    0.00  0e+00
          64            16   float     sum    32.75    0.00    0.00  0e+00    31.00    0.00    0.00  0e+00
# Out of bounds values : 0 OK
";
        let tables = parse(text, "logs/all_reduce_perf.log").unwrap();
        let t = &tables[0];
        assert_eq!(t.format, Format::NcclTests);
        assert_eq!(t.op.as_deref(), Some("allreduce"));
        assert_eq!((t.ranks, t.nodes), (4, 2));
        assert_eq!(t.origin.hosts, vec!["node01", "node02"]);
        assert_eq!(t.origin.devices[3], "Tesla V100-SXM2-16GB");
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[1].bytes, 64);
        assert_eq!(t.rows[1].count, 16);
        assert_eq!(t.rows[1].redop, "sum");
        assert_eq!(t.rows[1].root, -1);
        assert_eq!(t.rows[1].out_of_place_us, Some(32.75));
        assert_eq!(t.rows[1].in_place_us, Some(31.0));
    }

    #[test]
    fn per_iteration_columns_cputime_and_timestamp() {
        let text = "\
# Collective test starting: all_gather_perf
#                                                              out-of-place (+ per-iteration)                                in-place (+ per-iteration)
#       size         count      type   redop    root  cputime   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%  cputime   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%           timestamp
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%) %Y-%m-%d %H:%M:%S
         256             8     float    none      -1    20.50    0.01    0.01       0    19.00    25.00    24.00     3.10    21.25    0.01    0.01       0    19.50    26.00    25.00     3.20  2025-06-01 12:00:00
";
        let t = &parse(text, "x").unwrap()[0];
        assert_eq!(t.op.as_deref(), Some("allgather"));
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.rows[0].redop, "none");
        assert_eq!(t.rows[0].out_of_place_us, Some(20.5));
        assert_eq!(t.rows[0].in_place_us, Some(21.25));
    }

    #[test]
    fn rccl_in_place_only() {
        let text = "\
# nThread 1 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
rccl-tests: Version develop:ae3e635
# Using devices
#   Rank  0 Pid  77777 on       mi01 device  0 [0000:0c:00.0] AMD Instinct MI300X
#   Rank  1 Pid  77778 on       mi01 device  1 [0000:22:00.0] AMD Instinct MI300X
#
#                                                        in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)      
        1024           256     float     sum      -1    25.31    0.04    0.04      0
        2048           512     float     sum      -1    26.10    0.08    0.08     1*
# Errors with asterisks indicate errors that have exceeded the maximum threshold.
# Out of bounds values : 0 OK
";
        let tables = parse(text, "/runs/mi300x_all_reduce_perf.txt").unwrap();
        let t = &tables[0];
        assert_eq!(t.format, Format::RcclTests);
        assert_eq!(t.op.as_deref(), Some("allreduce"));
        assert_eq!((t.ranks, t.nodes), (2, 1));
        assert_eq!(
            t.origin.version_lines,
            vec!["rccl-tests: Version develop:ae3e635"]
        );
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0].out_of_place_us, None);
        assert_eq!(t.rows[0].in_place_us, Some(25.31));
        assert_eq!(t.rows[1].in_place_us, Some(26.1));
    }

    #[test]
    fn rccl_shape_without_version_line() {
        let text = "\
#   Rank  0 Pid  77777 on       mi01 device  0 [0000:0c:00.0] AMD Instinct MI300X
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
           8             2     float     sum      -1    10.00    0.00    0.00      0    10.50    0.00    0.00      0
";
        let t = &parse(text, "broadcast_perf.out").unwrap()[0];
        assert_eq!(t.format, Format::RcclTests);
        assert_eq!(t.op.as_deref(), Some("broadcast"));
        assert_eq!(t.rows[0].in_place_us, Some(10.5));
    }

    #[test]
    fn several_runs_in_one_file() {
        let second = NEW.replace("all_reduce_perf", "reduce_scatter_perf");
        let text = format!("{NEW}{second}");
        let tables = parse(&text, "both.txt").unwrap();
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[0].op.as_deref(), Some("allreduce"));
        assert_eq!(tables[1].op.as_deref(), Some("reduce_scatter"));
        let first_len = NEW.lines().count();
        assert_eq!(tables[1].line, first_len + 1);
        assert_eq!(tables[1].ranks, 2);
        assert_eq!(tables[1].rows.len(), 2);
        assert_eq!(tables[1].rows[0].line, first_len + 14);
        assert_eq!(tables[1].origin.version_lines.len(), 2);
    }

    #[test]
    fn bad_rows_are_located() {
        let bad_number = NEW.replace("1.2e+05", "1.2e+0x");
        let e = parse(&bad_number, "x").unwrap_err();
        assert_eq!((e.line, e.column), (16, 55));
        assert!(e.message.contains("1.2e+0x"), "{}", e.message);

        let short = NEW.replace("    13.87    0.00    0.00       0", "    13.87");
        let e = parse(&short, "x").unwrap_err();
        assert_eq!(e.line, 14);
        assert_eq!(e.column, 95);
        assert!(e.message.contains("10 fields"), "{}", e.message);

        let long = NEW.replace(
            "13.87    0.00    0.00       0",
            "13.87    0.00    0.00       0  7",
        );
        let e = parse(&long, "x").unwrap_err();
        assert_eq!((e.line, e.column), (14, 121));

        let wrong = NEW.replace(
            "    38.55    0.03    0.03       0",
            "    38.55    0.03    0.03     bad",
        );
        let e = parse(&wrong, "x").unwrap_err();
        assert_eq!((e.line, e.column), (16, 116));
    }

    #[test]
    fn no_table_is_an_error_at_line_one() {
        let e = parse("hello\nNCCL INFO nothing\n", "all_reduce_perf.txt").unwrap_err();
        assert_eq!((e.line, e.column), (1, 1));
        assert!(e.message.contains("no nccl-tests/rccl-tests result table"));
        let header_only: String = NEW.lines().take(13).map(|l| format!("{l}\n")).collect();
        let e = parse(&header_only, "x").unwrap_err();
        assert!(e.message.contains("line 12"), "{}", e.message);
    }

    #[test]
    fn op_names_longest_first() {
        assert_eq!(
            op_from_name("all_reduce_perf").as_deref(),
            Some("allreduce")
        );
        assert_eq!(op_from_name("reduce_perf").as_deref(), Some("reduce"));
        assert_eq!(
            op_from_name("reduce_scatter_perf_mpi").as_deref(),
            Some("reduce_scatter")
        );
        assert_eq!(op_from_name("alltoall_perf").as_deref(), Some("alltoall"));
        assert_eq!(op_from_name("sendrecv_perf").as_deref(), Some("sendrecv"));
        assert_eq!(op_from_name("hypercube_perf"), None);
        let no_start = NEW.replace("# Collective test starting: all_reduce_perf\n", "");
        // The footer still names it.
        let t = &parse(&no_start, "reduce_perf.txt").unwrap()[0];
        assert_eq!(t.op.as_deref(), Some("allreduce"));
        let no_names = no_start.replace("# Collective test concluded: all_reduce_perf\n", "");
        let t = &parse(&no_names, "dir/reduce_perf.txt").unwrap()[0];
        assert_eq!(t.op.as_deref(), Some("reduce"));
        // Only the base name counts.
        assert_eq!(
            parse(&no_names, "all_reduce_perf/x.txt").unwrap()[0].op,
            None
        );
    }

    #[test]
    fn sniffs() {
        assert!(sniff(NEW));
        assert!(!sniff("nvbandwidth Version: v0.8\n"));
        assert!(!sniff(" #bytes     #iterations    BW peak[Gb/sec]\n"));
    }

    #[test]
    fn garbage_does_not_panic() {
        for text in [
            "#  Rank",
            "#  Rank 1 on",
            "#  Rank 1 on h device 0 ]x[",
            "# size count time\n1",
            "# size count type time\n12 \u{e9}",
            "# size count type time timestamp\n1 2 x 3\n",
            "# Collective test starting:",
        ] {
            let _ = parse(text, "");
        }
    }

    /// First and last rows' (size, out-of-place us, in-place us), read off the fixture files.
    fn check_ends(t: &CollectiveTable, first: (u64, f64, f64), last: (u64, f64, f64)) {
        let (Some(a), Some(b)) = (t.rows.first(), t.rows.last()) else {
            panic!("no rows");
        };
        assert_eq!(
            (a.bytes, a.out_of_place_us, a.in_place_us),
            (first.0, Some(first.1), Some(first.2))
        );
        assert_eq!(
            (b.bytes, b.out_of_place_us, b.in_place_us),
            (last.0, Some(last.1), Some(last.2))
        );
    }

    #[test]
    fn fixture_dgx_h100_all_reduce() {
        let text = include_str!("../../../tests/fixtures/import/dgx_h100_all_reduce_perf.txt");
        assert!(sniff(text));
        let tables = parse(text, "dgx_h100_all_reduce_perf.txt").unwrap();
        assert_eq!(tables.len(), 1);
        let t = &tables[0];
        assert_eq!(t.format, Format::NcclTests);
        assert_eq!(t.op.as_deref(), Some("allreduce"));
        assert_eq!((t.ranks, t.nodes), (8, 1));
        assert_eq!(t.origin.hosts, vec!["dgx01"]);
        assert_eq!(t.origin.devices, vec!["NVIDIA H100 80GB HBM3"; 8]);
        assert_eq!(t.origin.version_lines.len(), 2);
        assert_eq!(t.rows.len(), 31);
        assert_eq!((t.rows[0].bytes, t.rows[0].count), (8, 2));
        assert_eq!((t.rows[30].bytes, t.rows[30].count), (8 << 30, 2 << 30));
        assert!(t.rows.iter().all(|r| r.redop == "sum" && r.root == -1));
        check_ends(t, FIXTURE_DGX_AR.0, FIXTURE_DGX_AR.1);
    }

    #[test]
    fn fixture_two_node_all_reduce() {
        let text = include_str!("../../../tests/fixtures/import/two_node_all_reduce_perf.txt");
        let t = &parse(text, "two_node_all_reduce_perf.txt").unwrap()[0];
        assert_eq!(t.format, Format::NcclTests);
        assert_eq!(t.op.as_deref(), Some("allreduce"));
        assert_eq!((t.ranks, t.nodes), (16, 2));
        assert_eq!(t.origin.hosts, vec!["dgx01", "dgx02"]);
        assert_eq!(t.rows.len(), 21);
        assert_eq!(t.rows[0].bytes, 1024);
        assert_eq!(t.rows[20].bytes, 1 << 30);
        check_ends(t, FIXTURE_TWO_NODE.0, FIXTURE_TWO_NODE.1);
    }

    #[test]
    fn fixture_mi300x_all_reduce() {
        let text = include_str!("../../../tests/fixtures/import/mi300x_all_reduce_perf.txt");
        let t = &parse(text, "tests/fixtures/import/mi300x_all_reduce_perf.txt").unwrap()[0];
        assert_eq!(t.format, Format::RcclTests);
        assert_eq!(t.op.as_deref(), Some("allreduce"));
        assert_eq!((t.ranks, t.nodes), (8, 1));
        assert_eq!(t.origin.hosts, vec!["mi01"]);
        assert_eq!(t.origin.devices, vec!["AMD Instinct MI300X"; 8]);
        assert_eq!(t.rows.len(), 31);
        check_ends(t, FIXTURE_MI300X.0, FIXTURE_MI300X.1);
    }

    #[test]
    fn fixture_dgx_h100_all_gather() {
        let text = include_str!("../../../tests/fixtures/import/dgx_h100_all_gather_perf.txt");
        let t = &parse(text, "dgx_h100_all_gather_perf.txt").unwrap()[0];
        assert_eq!(t.op.as_deref(), Some("allgather"));
        assert_eq!((t.ranks, t.nodes), (8, 1));
        assert!(t.rows.iter().all(|r| r.redop == "none"));
        assert_eq!(t.rows.len(), FIXTURE_DGX_AG.2);
        check_ends(t, FIXTURE_DGX_AG.0, FIXTURE_DGX_AG.1);
    }

    type Ends = ((u64, f64, f64), (u64, f64, f64));
    const FIXTURE_DGX_AR: Ends = ((8, 13.93, 13.86), (8 << 30, 40305.9, 41137.2));
    const FIXTURE_TWO_NODE: Ends = ((1024, 30.15, 30.14), (1 << 30, 10702.5, 10877.4));
    const FIXTURE_MI300X: Ends = ((8, 18.12, 18.18), (8 << 30, 48940.0, 48882.0));
    const FIXTURE_DGX_AG: ((u64, f64, f64), (u64, f64, f64), usize) =
        ((1024, 11.99, 11.95), (8 << 30, 20544.6, 20881.3), 24);
}
