//! `orrery flows FILE` against hand-computed max-min cases (each with its arithmetic), its
//! output format, its errors, and grammar/orrery.md §4's example.

use orrery::network::flowfile::FlowFile;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn orrery(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn tmp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("orrery-flows-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `orrery flows` on `text`: its lines (the wall line checked and dropped), in order.
fn run_lines(name: &str, text: &str) -> Vec<(String, f64)> {
    let p = tmp(name, text);
    let o = orrery(&["flows", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let mut lines: Vec<&str> = out.lines().collect();
    let wall = lines.pop().expect("a wall line");
    assert!(
        wall.starts_with("# wall ") && wall.contains(" s simulating "),
        "{wall}"
    );
    lines
        .iter()
        .map(|l| {
            let (id, t) = l.split_once(' ').expect("`ID SECONDS`");
            (id.to_string(), t.parse::<f64>().expect("seconds"))
        })
        .collect()
}

/// Runs `text` and returns id → completion seconds.
fn run(name: &str, text: &str) -> BTreeMap<String, f64> {
    run_lines(name, text).into_iter().collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-9)
}

#[track_caller]
fn expect(got: &BTreeMap<String, f64>, want: &[(&str, f64)]) {
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (id, t) in want {
        let g = got[*id];
        assert!(close(g, *t), "flow {id}: got {g}, want {t} ({got:?})");
    }
}

#[test]
fn one_flow_on_one_link() {
    // 1 GB over 10 GB/s takes 0.1 s after the 2 µs latency: 0.000002 + 0.1 = 0.100002 s.
    let got = run("one.flows", "link L 10GB/s 2us\nflow a 1GB 0s L\n");
    expect(&got, &[("a", 0.100002)]);
}

#[test]
fn two_flows_starting_together_share_a_link() {
    // Two 1 GB flows on 1 GB/s: 0.5 GB/s each, both done at 2 · 1 GB / 1 GB/s = 2 s.
    let got = run(
        "two.flows",
        "link L 1GB/s 0s\nflow a 1GB 0s L\nflow b 1000000000 0s L\n",
    );
    expect(&got, &[("a", 2.0), ("b", 2.0)]);
}

#[test]
fn a_staggered_start_splits_the_link_piecewise() {
    // 10 B/s. a (100 B) alone for 0–5 s: 50 B served, 50 left. From 5 s, a and b share
    // 5 B/s each: b (20 B) is done at 5 + 20/5 = 9 s, when a has 50 − 20 = 30 B left, now at
    // 10 B/s: a is done at 9 + 3 = 12 s.
    let got = run(
        "staggered.flows",
        "link L 10B/s 0s\nflow a 100 0s L\nflow b 20 5s L\n",
    );
    expect(&got, &[("a", 12.0), ("b", 9.0)]);
}

#[test]
fn parking_lot() {
    // Three 10 B/s links; long (30 B) crosses all three, s1 (10 B), s2 (20 B), s3 (40 B) one
    // each. Every link carries two flows: 5 B/s each. s1 is done at 10/5 = 2 s (long has 20 B
    // left, s2 10, s3 30); nothing's share changes (L2 and L3 still carry two). s2 is done at
    // 2 + 10/5 = 4 s (long 10 left, s3 20); long at 4 + 10/5 = 6 s (s3 10 left); s3, alone on
    // L3 at 10 B/s, at 6 + 1 = 7 s.
    let got = run(
        "parking.flows",
        "link L1 10B/s 0s\nlink L2 10B/s 0s\nlink L3 10B/s 0s\n\
         flow long 30 0s L1 L2 L3\nflow s1 10 0s L1\nflow s2 20 0s L2\nflow s3 40 0s L3\n",
    );
    expect(
        &got,
        &[("long", 6.0), ("s1", 2.0), ("s2", 4.0), ("s3", 7.0)],
    );
}

#[test]
fn the_shipped_parking_lot() {
    // scenarios/flows/parking_lot.flows: 100 Gbps = 12.5 GB/s links of 1 µs. The short flows
    // join at 1 µs and run alone at 12.5 GB/s until long joins at 3 µs: 25,000 B each. Then
    // 6.25 GB/s each. s1 (1 GB) is done after (1e9 − 25,000)/6.25e9 = 0.159996 s more, at
    // 0.159999 s; by then long has 2,000,025,000 B left, s2 1e9, s3 3e9. s2 at 0.159999 + 0.16
    // = 0.319999 s (long 1,000,025,000 left, s3 2e9); long at 0.319999 + 1,000,025,000/6.25e9
    // = 0.480003 s (s3 999,975,000 left), s3 alone at 12.5 GB/s at 0.480003 + 0.079998 =
    // 0.560001 s.
    let text = std::fs::read_to_string("scenarios/flows/parking_lot.flows").unwrap();
    let got = run("shipped.flows", &text);
    expect(
        &got,
        &[
            ("long", 0.480003),
            ("s1", 0.159999),
            ("s2", 0.319999),
            ("s3", 0.560001),
        ],
    );
}

#[test]
fn a_rate_rises_when_another_bottleneck_frees() {
    // A 10 B/s, B 4 B/s; x crosses A, y crosses A and B, z crosses B. Max-min: B binds first
    // (y, z at 2 each), x takes the rest of A, 8. z (4 B) is done at 4/2 = 2 s; y (20 B) has
    // 16 left, x (50 B) 34. Then y rises to 4 (B alone) and x gets 10 − 4 = 6. y is done at
    // 2 + 16/4 = 6 s, when x has 34 − 24 = 10 left, now at 10 B/s: x at 7 s.
    let got = run(
        "bottlenecks.flows",
        "link A 10B/s 0s\nlink B 4B/s 0s\nflow x 50 0s A\nflow y 20 0s A B\nflow z 4 0s B\n",
    );
    expect(&got, &[("x", 7.0), ("y", 6.0), ("z", 2.0)]);
}

#[test]
fn latency_is_paid_before_joining() {
    // L1 10 B/s with 1 s latency, L2 10 B/s with 0.5 s, L3 10 B/s with 1 ms.
    // b (10 B over L1) joins at 1 s and is alone until a (10 B over L1 L2) joins at 1.5 s: 5 B
    // served. Then 5 B/s each: b is done at 1.5 + 5/5 = 2.5 s; a has 5 left at 2.5 s, alone
    // at 10 B/s: 3 s. z (0 B over L1 L2, starting at 2 s) completes when it would join:
    // 2 + 1.5 = 3.5 s. r crosses L3 twice: it pays 2 ms and loads L3 twice, so it gets 5 B/s:
    // 0.002 + 10/5 = 2.002 s.
    let got = run(
        "latency.flows",
        "link L1 10B/s 1s\nlink L2 10B/s 500ms\nlink L3 10B/s 1ms\n\
         flow a 10 0s L1 L2\nflow b 10 0s L1\nflow z 0 2s L1 L2\nflow r 10 0s L3 L3\n",
    );
    expect(&got, &[("a", 3.0), ("b", 2.5), ("z", 3.5), ("r", 2.002)]);
}

#[test]
fn output_is_sorted_by_id_not_by_completion() {
    // Finishing first to last: b (1 s), a (2 s), 9 (3 s), 10 (4 s), each alone on its link;
    // printed byte-wise by id: 10, 9, a, b.
    let got = run_lines(
        "sorted.flows",
        "link L 1B/s 0s\nlink M 1B/s 0s\nlink N 1B/s 0s\nlink O 1B/s 0s\n\
         flow 10 4 0s O\nflow b 1 0s L\nflow 9 3 0s N\nflow a 2 0s M\n",
    );
    let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["10", "9", "a", "b"]);
    let times: Vec<f64> = got.iter().map(|(_, t)| *t).collect();
    assert_eq!(times, [4.0, 3.0, 2.0, 1.0]);
}

#[test]
fn links_may_follow_the_flows_that_name_them_and_comments_are_ignored() {
    let got = run(
        "order.flows",
        "# a comment line\n\nflow a 8 0s L   # 8 B at 8 B/s\nlink L 64bps 0s\n",
    );
    expect(&got, &[("a", 1.0)]);
}

#[test]
fn the_same_file_gives_the_same_lines() {
    // Many flows that finish together and at nearly the same times.
    let mut text = String::from("link A 100Gbps 1us\nlink B 40Gbps 2us\nlink C 25GB/s 500ns\n");
    for k in 0..300 {
        let path = ["A", "A B", "B C", "C", "A C B"][k % 5];
        text += &format!("flow f{k} {}MiB {}us {path}\n", 1 + k % 7, k % 11);
    }
    let p = tmp("determinism.flows", &text);
    let a = orrery(&["flows", p.to_str().unwrap()]);
    let b = orrery(&["flows", p.to_str().unwrap()]);
    assert!(a.status.success() && b.status.success(), "{}", stderr(&a));
    let body = |o: &Output| {
        let s = String::from_utf8(o.stdout.clone()).unwrap();
        let mut l: Vec<String> = s.lines().map(String::from).collect();
        assert!(l.pop().unwrap().starts_with("# wall "));
        l
    };
    assert_eq!(body(&a), body(&b));
    assert_eq!(body(&a).len(), 300);
}

#[test]
fn the_library_simulates_what_the_binary_prints() {
    let f = FlowFile::parse("link L 10B/s 0s\nflow a 100 0s L\nflow b 20 5s L\n", 0).unwrap();
    assert_eq!(f.links[0].bandwidth, 10.0);
    assert_eq!(f.simulate(), [12.0, 9.0]);
    assert_eq!(f.by_id(), [0, 1]);
}

/// `orrery flows` on `text` fails with exit 2; its stderr.
fn fails(name: &str, text: &str) -> String {
    let p = tmp(name, text);
    let o = orrery(&["flows", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    stderr(&o)
}

#[test]
fn an_unknown_link_is_located_with_a_suggestion() {
    let err = fails(
        "unknown.flows",
        "link spine0 100Gbps 1us\nflow a 1MB 0s spine1\n",
    );
    assert!(
        err.contains("unknown.flows:2:15: unknown link `spine1`")
            && err.contains("did you mean `spine0`?"),
        "{err}"
    );
}

#[test]
fn a_duplicate_id_points_at_both() {
    let err = fails(
        "dup.flows",
        "link L 1Gbps 0s\nlink L 2Gbps 0s\nflow a 1 0s L\nflow a 2 0s L\n",
    );
    assert!(
        err.contains("dup.flows:2:6: link `L` is declared twice")
            && err.contains("dup.flows:4:6: flow `a` is declared twice")
            && err.contains("first declared here"),
        "{err}"
    );
    // Both places are shown: line 1 under line 2's error, line 3 under line 4's.
    assert!(
        err.contains("1 │ link L 1Gbps 0s") && err.contains("3 │ flow a 1 0s L"),
        "{err}"
    );
}

#[test]
fn a_quantity_of_the_wrong_kind_names_the_kind_expected() {
    let err = fails("kind.flows", "link L 1us 0s\nflow a 1GB/s 0s L\n");
    assert!(
        err.contains("kind.flows:1:8: expected a bandwidth such as `400Gbps`")
            && err.contains("found `1us`, a time"),
        "{err}"
    );
    assert!(
        err.contains("kind.flows:2:8: expected a size") && err.contains("a bandwidth"),
        "{err}"
    );
    // A unit after a space is a separate token: the error says how to write it.
    let err = fails("space.flows", "link L 100 Gbps 1us\n");
    assert!(
        err.contains("`100` has no unit") && err.contains("`100Gbps`"),
        "{err}"
    );
    // BYTES may be bare, so there the unit is read as the START.
    let err = fails(
        "space2.flows",
        "link L 1Gbps 0s
flow a 1 GB 0s L
",
    );
    assert!(
        err.contains("space2.flows:2:10: expected a start time")
            && err.contains("`64GB`, not `64 GB`"),
        "{err}"
    );
}

#[test]
fn out_of_range_values_are_refused() {
    for (text, expect) in [
        ("link L 0Gbps 0s\n", "bandwidth must be positive"),
        ("link L -5Gbps 0s\n", "bandwidth must be positive"),
        ("link L 1Gbps -1us\n", "latency cannot be negative"),
        (
            "link L 1Gbps 0s\nflow a -1 0s L\n",
            "size cannot be negative",
        ),
        (
            "link L 1Gbps 0s\nflow a 1 -1s L\n",
            "start cannot be negative",
        ),
        ("link L 1e999Gbps 0s\n", "not a finite bandwidth"),
        ("link L 1Gbps 0s\nflow a nan 0s L\n", "found `nan`"),
        ("link L 1Gbps 0s\nflow a 1 0s\n", "crosses no link"),
        ("link L 1Gbps\n", "missing LATENCY"),
        ("link L 1Gbps 0s 3\n", "unexpected `3`"),
        ("route L 1Gbps 0s\n", "unknown statement `route`"),
        ("link a/b 1Gbps 0s\n", "is not an id"),
    ] {
        let err = fails("range.flows", text);
        assert!(err.contains("range.flows:"), "{text}: {err}");
        assert!(err.contains(expect), "{text}: {err}");
    }
    let long = "x".repeat(257);
    let err = fails("long.flows", &format!("link {long} 1Gbps 0s\n"));
    assert!(err.contains("names are at most 256"), "{err}");
    let path = vec!["L"; orrery::network::flowfile::MAX_PATH + 1].join(" ");
    let err = fails(
        "path.flows",
        &format!("link L 1Gbps 0s\nflow a 1 0s {path}\n"),
    );
    assert!(err.contains("a flow crosses at most 4,096"), "{err}");
}

#[test]
fn a_folder_or_fifo_is_refused_before_reading() {
    let dir = tmp("x", "").parent().unwrap().to_path_buf();
    let o = orrery(&["flows", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is not a regular file (a folder)"),
        "{}",
        stderr(&o)
    );
    let fifo = dir.join("fifo.flows");
    let _ = std::fs::remove_file(&fifo);
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let o = orrery(&["flows", fifo.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is not a regular file (a FIFO)"),
        "{}",
        stderr(&o)
    );
}

/// Fenced blocks of grammar/orrery.md with this info string.
fn doc_blocks(info: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(Path::new("grammar/orrery.md")).unwrap();
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in doc.lines() {
        match &mut cur {
            None if line.trim_end() == format!("```{info}") => cur = Some(String::new()),
            Some(b) if line.trim_end() == "```" => {
                out.push(std::mem::take(b));
                cur = None;
            }
            Some(b) => {
                b.push_str(line);
                b.push('\n');
            }
            None => {}
        }
    }
    out
}

#[test]
fn the_grammar_example_prints_what_the_grammar_says() {
    let examples = doc_blocks("flows");
    let outputs = doc_blocks("flows-output");
    assert!(!examples.is_empty() && examples.len() == outputs.len());
    for (ex, want) in examples.iter().zip(&outputs) {
        let got = run_lines("grammar.flows", ex);
        let mut want: Vec<&str> = want.lines().collect();
        assert!(want.pop().unwrap().starts_with("# wall "));
        let want: Vec<(String, f64)> = want
            .iter()
            .map(|l| {
                let (id, t) = l.split_once(' ').unwrap();
                (id.to_string(), t.parse().unwrap())
            })
            .collect();
        assert_eq!(got, want, "grammar/orrery.md §4:\n{ex}");
    }
}

#[test]
fn more_flows_than_the_limit_are_refused_by_the_library() {
    // A 16 MiB file cannot hold them: the limit is the library's.
    let n = orrery::network::flowfile::MAX_FLOWS;
    let mut text = String::with_capacity(20 * (n + 2));
    text += "link L 1Gbps 0s\n";
    for k in 0..=n {
        text += &format!("flow {k} 1 0s L\n");
    }
    let diags = FlowFile::parse(&text, 0).unwrap_err();
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert!(
        diags[0].message.contains("more than 1,000,000 flows"),
        "{}",
        diags[0].message
    );
}

#[test]
fn extreme_values_end_and_print_inf_past_a_double() {
    // 1e300 bytes at 1e-300 B/s is 1e600 s: past a double.
    let got = run(
        "extreme.flows",
        "link L 1e-300B/s 0s\nlink M 1B/s 0s\nflow a 1e300 0s L\nflow b 1 0s M\n",
    );
    assert_eq!(got["a"], f64::INFINITY);
    assert_eq!(got["b"], 1.0);
}

#[test]
fn a_reader_that_goes_away_ends_it_quietly() {
    use std::process::Stdio;
    // 20,000 lines of output: more than a pipe holds.
    let mut text = String::from("link L 1Gbps 0s\n");
    for k in 0..20_000 {
        text += &format!("flow flow_with_a_longish_name_{k} 1 0s L\n");
    }
    let f = tmp("pipe.flows", &text);
    let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["flows", f.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(141), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
