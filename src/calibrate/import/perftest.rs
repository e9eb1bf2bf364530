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
mod tests {
    use super::*;

    const MIB: f64 = 1_048_576.0;

    fn bw_text(unit: &str) -> String {
        format!(
            "\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
 Number of qps   : 1\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 PCIe relax order: Unsupported\t\tLock-free\t: Unsupported
 TX depth        : 128
 CQ Moderation   : 100
 Mtu             : 4096[B]
 Link type       : IB
 Max inline data : 0[B]
 rdma_cm QPs\t : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
 local address: LID 0x01 QPN 0x0123 PSN 0x4f5e6d RKey 0x1fff00 VAddr 0x007f3c2a800000
 remote address: LID 0x02 QPN 0x0456 PSN 0x7a8b9c RKey 0x2fff00 VAddr 0x007f1b2c400000
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]
 2          5000             0.19               0.19   \t\t     11.928311
 65536      5000             392.10             391.85 \t\t     0.747385
---------------------------------------------------------------------------------------
"
        )
    }

    #[test]
    fn bandwidth_units() {
        for (unit, scale) in [("MB/sec", MIB), ("MiB/sec", MIB), ("Gb/sec", 1.25e8)] {
            let table = parse(&bw_text(unit)).unwrap();
            assert_eq!(table.test, "RDMA_Write BW Test");
            assert_eq!(table.kind, PerfKind::Bandwidth);
            assert!(!table.bidirectional);
            assert_eq!(table.device.as_deref(), Some("mlx5_0"));
            assert_eq!(table.link.as_deref(), Some("IB"));
            assert_eq!(table.rows.len(), 2);
            let r = &table.rows[1];
            assert_eq!((r.line, r.bytes, r.iterations), (20, 65536, 5000));
            assert_eq!(r.bw_peak, Some(392.10 * scale));
            assert_eq!(r.bw_average, Some(391.85 * scale));
            assert_eq!((r.t_avg, r.t_min, r.t_typical), (None, None, None));
        }
        let e = parse(&bw_text("KB/sec")).unwrap_err();
        assert_eq!((e.line, e.column), (18, 36));
        assert!(e.message.contains("KB/sec"), "{}", e.message);
    }

    #[test]
    fn latency_table() {
        let text = "\
---------------------------------------------------------------------------------------
                    RDMA_Read Latency Test
 Dual-port       : OFF\t\tDevice         : mlx5_2
 Link type       : Ethernet
 Outstand reads  : 16
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 2       1000          1.98           4.12         2.05     \t       2.07        \t0.00   \t\t2.31    \t\t4.12   
 8388608 1000          177.10         179.94       177.32   \t       177.40      \t0.00   \t\t178.90  \t\t179.94 
---------------------------------------------------------------------------------------
Version: 6.22
";
        let table = parse(text).unwrap();
        assert_eq!(table.test, "RDMA_Read Latency Test");
        assert_eq!(table.kind, PerfKind::Latency);
        assert_eq!(table.device.as_deref(), Some("mlx5_2"));
        assert_eq!(table.link.as_deref(), Some("Ethernet"));
        assert_eq!(table.origin.version_lines, vec!["Version: 6.22"]);
        assert_eq!(table.rows.len(), 2);
        let r = &table.rows[1];
        assert_eq!((r.bytes, r.iterations), (8388608, 1000));
        assert_eq!(r.t_min, Some(177.10 / 1e6));
        assert_eq!(r.t_typical, Some(177.32 / 1e6));
        assert_eq!(r.t_avg, Some(177.40 / 1e6));
        assert_eq!(r.bw_average, None);
    }

    #[test]
    fn duration_latency_qos_and_per_port() {
        let text = "\
                    Send Latency Test
 #bytes        #iterations       t_avg[usec]    tps average
 2       98304            1.52           657894.74
";
        let t = parse(text).unwrap();
        assert_eq!(t.kind, PerfKind::Latency);
        assert_eq!(t.rows[0].t_avg, Some(1.52 / 1e6));
        assert_eq!(t.rows[0].t_typical, None);

        let qos = "\
                    Send Bidirectional BW Test
 #bytes    #sl      #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536    3           1000           180.00            179.50                  0.342369

";
        let t = parse(qos).unwrap();
        assert!(t.bidirectional);
        assert_eq!(t.test, "Send Bidirectional BW Test");
        assert_eq!(t.rows[0].iterations, 1000);
        assert_eq!(t.rows[0].bw_average, Some(179.5 * 1.25e8));

        let per_port = "\
 #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]   BW Port1[MiB/sec]   MsgRate Port1[Mpps]   BW Port2[MiB/sec]   MsgRate Port2[Mpps]
 65536      5000           23000.00            22900.00\t\t   0.366400        11450.00            0.183200              11450.00            0.183200
";
        let t = parse(per_port).unwrap();
        assert_eq!(t.test, "");
        assert_eq!(t.rows[0].bw_peak, Some(23000.0 * MIB));

        let cpu = "\
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]    CPU_Util[%]
 1024       5000             95.00              94.80   \t\t     11.572266\t    12.50
";
        assert_eq!(parse(cpu).unwrap().rows[0].bw_average, Some(94.8 * 1.25e8));
    }

    #[test]
    fn only_the_first_table_is_read() {
        let mut text = bw_text("Gb/sec");
        text.push_str("\n Local results: \n");
        text.push_str(
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n",
        );
        text.push_str(" 2          5000             9.00               9.00   \t\t     1.0\n");
        let t = parse(&text).unwrap();
        assert_eq!(t.rows.len(), 2);
    }

    #[test]
    fn bad_rows_and_cycles_are_errors() {
        let text = bw_text("Gb/sec").replace("391.85", "39l.85");
        let e = parse(&text).unwrap_err();
        assert_eq!((e.line, e.column), (20, 49));
        let text = bw_text("Gb/sec").replace("     0.747385", "");
        let e = parse(&text).unwrap_err();
        assert_eq!((e.line, e.column), (20, 58));
        assert!(e.message.contains("4 fields"), "{}", e.message);
        let cycles = "#, cycles\n1, 2\n #bytes #iterations    t_min[usec]\n 2 1000 3.0\n";
        let e = parse(cycles).unwrap_err();
        assert_eq!((e.line, e.column), (1, 1));
        let e = parse("hello\n").unwrap_err();
        assert_eq!((e.line, e.column), (1, 1));
    }

    #[test]
    fn sniffs() {
        assert!(sniff(&bw_text("MiB/sec")));
        assert!(sniff("                    RDMA_Read Latency Test\n"));
        assert!(!sniff("# nccl-tests version 2.17.6\n"));
    }

    #[test]
    fn garbage_does_not_panic() {
        for text in [
            " #bytes",
            " #bytes [",
            " #bytes #iterations BW[",
            " #bytes #iterations t_min[usec]\n 99999999999999999999999 1 1",
            " #bytes #iterations t_min[usec]\n 1 1 \u{e9}",
            "\u{e9}Test",
        ] {
            let _ = parse(text);
        }
    }

    #[test]
    fn fixture_ib_write_bw_gbits() {
        let text = include_str!("../../../tests/fixtures/import/ib_write_bw.txt");
        assert!(sniff(text));
        let t = parse(text).unwrap();
        assert_eq!(t.test, "RDMA_Write BW Test");
        assert_eq!(t.kind, PerfKind::Bandwidth);
        assert_eq!(t.device.as_deref(), Some("mlx5_0"));
        assert_eq!(t.link.as_deref(), Some("IB"));
        assert_eq!(t.rows.len(), 23);
        assert_eq!(t.rows[0].bytes, 2);
        assert_eq!(t.rows[22].bytes, 8 << 20);
        assert!(t.rows.iter().all(|r| r.iterations == 5000));
        FIXTURE_GBITS.check(&t);
    }

    #[test]
    fn fixture_ib_write_bw_mib() {
        let text = include_str!("../../../tests/fixtures/import/ib_write_bw_mib.txt");
        let t = parse(text).unwrap();
        assert_eq!(t.test, "RDMA_Write BW Test");
        assert_eq!(t.rows.len(), 23);
        FIXTURE_MIB.check(&t);
    }

    #[test]
    fn fixture_ib_read_lat() {
        let text = include_str!("../../../tests/fixtures/import/ib_read_lat.txt");
        let t = parse(text).unwrap();
        assert_eq!(t.test, "RDMA_Read Latency Test");
        assert_eq!(t.kind, PerfKind::Latency);
        assert_eq!(t.device.as_deref(), Some("mlx5_0"));
        assert_eq!(t.link.as_deref(), Some("IB"));
        assert_eq!(t.rows.len(), 23);
        assert!(t.rows.iter().all(|r| r.iterations == 1000));
        assert_eq!(t.rows[0].t_typical, Some(FIXTURE_LAT.0 / 1e6));
        assert_eq!(t.rows[22].t_typical, Some(FIXTURE_LAT.1 / 1e6));
        assert_eq!(t.rows[22].t_min, Some(FIXTURE_LAT.2 / 1e6));
    }

    struct Expect {
        first_avg: f64,
        last_avg: f64,
        last_peak: f64,
        scale: f64,
    }

    impl Expect {
        fn check(&self, t: &PerftestTable) {
            assert_eq!(t.rows[0].bw_average, Some(self.first_avg * self.scale));
            assert_eq!(t.rows[22].bw_average, Some(self.last_avg * self.scale));
            assert_eq!(t.rows[22].bw_peak, Some(self.last_peak * self.scale));
        }
    }

    const FIXTURE_GBITS: Expect = Expect {
        first_avg: 0.19,
        last_avg: 388.54,
        last_peak: 389.56,
        scale: 1.25e8,
    };
    const FIXTURE_MIB: Expect = Expect {
        first_avg: 22.77,
        last_avg: 47206.88,
        last_peak: 47388.50,
        scale: MIB,
    };
    const FIXTURE_LAT: (f64, f64, f64) = (2.15, 175.33, 174.60);
}
