//! What the benchmark-output parsers read from a file: plain data, no fitting. Each parser
//! (`nccl_tests.rs`, `nvbandwidth.rs`, `perftest.rs`) turns the text one tool prints into
//! these records; `mod.rs` fits them into a profile. Lines and columns are 1-based.

/// A problem in an input file, at a line and column of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl ParseError {
    pub fn new(line: usize, column: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            line,
            column,
            message: message.into(),
        }
    }
}

/// The tools whose output `orrery calibrate import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// NVIDIA nccl-tests `*_perf` (github.com/NVIDIA/nccl-tests).
    NcclTests,
    /// ROCm rccl-tests `*_perf` (github.com/ROCm/rccl-tests), the same table.
    RcclTests,
    /// NVIDIA nvbandwidth, plain text or `--json` (github.com/NVIDIA/nvbandwidth).
    Nvbandwidth,
    /// linux-rdma perftest `ib_*_bw` / `ib_*_lat` (github.com/linux-rdma/perftest).
    Perftest,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::NcclTests => "nccl-tests",
            Format::RcclTests => "rccl-tests",
            Format::Nvbandwidth => "nvbandwidth",
            Format::Perftest => "perftest",
        }
    }
}

/// What a file's header said about where and how it was measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Origin {
    /// Version lines found in the file, verbatim (trimmed), e.g.
    /// `# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807`.
    pub version_lines: Vec<String>,
    /// Host names, in order of first appearance (one per node that took part).
    pub hosts: Vec<String>,
    /// Device names, one per rank or GPU listed, e.g. `NVIDIA H100 80GB HBM3`.
    pub devices: Vec<String>,
    /// Driver version, when the tool printed one.
    pub driver: Option<String>,
}

/// One nccl-tests / rccl-tests run: its result table and the ranks it ran on.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectiveTable {
    pub format: Format,
    pub origin: Origin,
    /// 1-based line where this run's output starts.
    pub line: usize,
    /// The collective in Orrery's names (`allreduce`, `allgather`, `reduce_scatter`,
    /// `alltoall`, `broadcast`, `reduce`, `sendrecv`), from `# Collective test starting:
    /// all_reduce_perf` or, failing that, the file name (`all_reduce_perf.txt`); `None` when
    /// neither says.
    pub op: Option<String>,
    /// Ranks (`#  Rank N ...` lines) and distinct hosts among them.
    pub ranks: usize,
    pub nodes: usize,
    pub rows: Vec<CollectiveRow>,
}

/// One size of a collective table.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectiveRow {
    pub line: usize,
    /// `size` (B), as nccl-tests reports it.
    pub bytes: u64,
    pub count: u64,
    pub dtype: String,
    pub redop: String,
    pub root: i64,
    /// `time` (us) of the out-of-place and in-place runs; `None` where the table has none.
    pub out_of_place_us: Option<f64>,
    pub in_place_us: Option<f64>,
}

/// What an nvbandwidth matrix holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatrixUnit {
    /// GB/s (10^9 bytes per second).
    GBps,
    /// Nanoseconds (the `*_latency_sm` tests).
    Ns,
}

/// One nvbandwidth testcase result.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// Testcase key, e.g. `host_to_device_memcpy_ce`.
    pub testcase: String,
    /// The description line, e.g. `memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)`.
    pub description: String,
    pub unit: MatrixUnit,
    /// 1-based line of the description.
    pub line: usize,
    /// Values by row then column; `None` for `N/A`.
    pub rows: Vec<Vec<Option<f64>>>,
}

/// One nvbandwidth run.
#[derive(Debug, Clone, PartialEq)]
pub struct NvbandwidthRun {
    pub origin: Origin,
    /// The copy buffer size (bytes): `bufferSize` (MiB) in `--json` output; plain text does
    /// not print it (`None`).
    pub buffer_bytes: Option<u64>,
    pub matrices: Vec<Matrix>,
}

/// Bandwidth or latency test of perftest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerfKind {
    Bandwidth,
    Latency,
}

/// One perftest run.
#[derive(Debug, Clone, PartialEq)]
pub struct PerftestTable {
    pub origin: Origin,
    /// The title line without decoration, e.g. `RDMA_Write BW Test`, `RDMA_Read Latency Test`.
    pub test: String,
    pub kind: PerfKind,
    /// `Device : mlx5_0`, `Link type : IB` from the header, when present.
    pub device: Option<String>,
    pub link: Option<String>,
    /// Bidirectional BW test (`Bidirectional` in the title).
    pub bidirectional: bool,
    pub rows: Vec<PerfRow>,
}

/// One size of a perftest table, in SI units.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfRow {
    pub line: usize,
    pub bytes: u64,
    pub iterations: u64,
    /// Bandwidth tests: `BW average` and `BW peak` in bytes per second (MB/sec and MiB/sec
    /// are 2^20 bytes, Gb/sec 10^9 bits).
    pub bw_average: Option<f64>,
    pub bw_peak: Option<f64>,
    /// Latency tests: `t_typical`, `t_avg`, `t_min` in seconds.
    pub t_typical: Option<f64>,
    pub t_avg: Option<f64>,
    pub t_min: Option<f64>,
}
