//! Tests of `nccl_tests` (src/calibrate/import/nccl_tests.rs),
//! kept beside it so that the module stays short.

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
