//! Tests of `nvbandwidth` (src/calibrate/import/nvbandwidth.rs),
//! kept beside it so that the module stays short.

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
    let e =
        parse("{\"nvbandwidth\": {\"testcases\": [{\"name\": \"x\", \"status\": \"Waived\"}]}}")
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
