//! Tests of `perftest` (src/calibrate/import/perftest.rs),
//! kept beside it so that the module stays short.

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
