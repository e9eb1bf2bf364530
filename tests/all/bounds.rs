//! Bounds on what bad input can cost (issue 42): errors are capped when printed and when
//! collected, reading a file costs memory in proportion to its size, counts near `u64::MAX`
//! are refused before anything is allocated, the thread cap holds whatever the environment
//! says, and one event of a huge amount of work still counts against `--max-events`.
//!
//! Nothing here judges how fast a machine is: cases check counts, sizes and the peak resident
//! memory the kernel reports for the child ([`run`]), which depend on the input alone. The one
//! deadline ([`HANG`]) only turns a hang into a failure.

use std::fs;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Seconds after which a case counts as hung.
const HANG: u64 = 300;

/// What one run of the binary gave.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    /// Peak resident memory of the child, in bytes (`getrusage`'s `ru_maxrss`).
    peak_bytes: u64,
}

/// Runs `orrery ARGS` with `env` added, reading its output as it comes (a child that prints
/// more than a pipe holds is never stuck), and waits for it with `wait4` to learn its peak
/// resident memory. Killed (and the test failed) past [`HANG`].
fn run(args: &[&str], env: &[(&str, &str)]) -> Ran {
    // Reaped below by wait4, which also gives its resource usage.
    #[allow(clippy::zombie_processes)]
    let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = r.read_to_end(&mut b);
            String::from_utf8_lossy(&b).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our own child, not yet waited for; both pointers are valid.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break (status, usage);
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if start.elapsed() > Duration::from_secs(HANG) {
            let _ = child.kill();
            panic!("orrery {args:?} ran past {HANG} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    Ran {
        code,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        peak_bytes: usage.ru_maxrss.max(0) as u64 * 1024,
    }
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-bounds-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// One task asking for `names` custom resources no node offers, `per_line` to a line.
fn unknown_resources(names: usize, per_line: usize) -> String {
    let entries: Vec<String> = (0..names).map(|i| format!("r{i}: 1")).collect();
    let lines: Vec<String> = entries.chunks(per_line).map(|c| c.join(", ")).collect();
    format!(
        "node box {{\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}}\ncluster c {{\n  node box x 1\n}}\n\
         workload w {{\n  tasks t x 1 {{\n    resources {{ {} }}\n    duration 1 s\n  }}\n}}\n",
        lines.join(",\n      ")
    )
}

#[test]
fn fifty_thousand_unknown_resources_print_the_first_hundred_and_a_count() {
    let d = dir("unknown");
    let f = d.join("s.orr");
    fs::write(&f, unknown_resources(50_000, 100)).unwrap();
    let r = run(&["check", f.to_str().unwrap()], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let shown = r.stderr.matches("no node in scope offers resource").count();
    assert_eq!(shown, 100, "{}", &r.stderr[..2000.min(r.stderr.len())]);
    assert!(
        r.stderr.contains("\nand 49900 more errors\n"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("has 50000 errors"), "{}", r.stderr);
    // Every error printed was 13 MB before (each with its excerpt); 100 excerpts now.
    assert!(
        r.stderr.len() < 256 << 10,
        "{} bytes of errors",
        r.stderr.len()
    );
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn errors_on_one_long_line_show_a_window_of_it() {
    // 5,000 unknown names on one 60 KB line: each excerpt printed the whole line (300 MB
    // in all; 50,000 on a 700 KB line reached 8.7 GB in the issue).
    let d = dir("oneline");
    let f = d.join("s.orr");
    fs::write(&f, unknown_resources(5_000, 5_000)).unwrap();
    let r = run(&["check", f.to_str().unwrap()], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("has 5000 errors"), "{}", r.stderr);
    assert!(
        r.stderr.len() < 256 << 10,
        "{} bytes of errors",
        r.stderr.len()
    );
    // The window is around each name: the 100th error's line shows `r99` with a caret.
    let at = r.stderr.find("resource `r99`").unwrap();
    let excerpt: String = r.stderr[at..].chars().take(1500).collect();
    assert!(
        excerpt.contains("…") && excerpt.contains("r99: 1"),
        "{excerpt}"
    );
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn sixteen_mib_of_junk_lines_cost_memory_in_proportion() {
    // Three kinds of junk, each just under the 16 MiB file limit: a word a line (8 million
    // statements), statements of unknown keywords, and lines whose brackets never close.
    let d = dir("junk");
    let limit = 16 << 20;
    let kinds: [(&str, String); 3] = [
        ("words", "a\n".repeat((limit - 16) / 2)),
        ("statements", {
            let mut s = String::new();
            let mut i = 0;
            while s.len() < limit - 64 {
                s.push_str(&format!("junk{i} x\n"));
                i += 1;
            }
            s
        }),
        ("brackets", {
            let mut s = String::new();
            let mut i = 0;
            while s.len() < limit - 64 {
                s.push_str(&format!("junk {i} @@ !! ((\n"));
                i += 1;
            }
            s
        }),
    ];
    for (name, text) in kinds {
        let f = d.join(format!("{name}.orr"));
        fs::write(&f, &text).unwrap();
        let r = run(&["check", f.to_str().unwrap()], &[]);
        assert_eq!(r.code, 2, "{name}: {}", r.stderr);
        assert!(
            r.stderr.len() < 64 << 10,
            "{name}: {} bytes",
            r.stderr.len()
        );
        assert!(r.stderr.contains(" error"), "{name}: {}", r.stderr);
        // More than 6 GiB before; about 0.35 GB now for the worst (a word a line).
        assert!(
            r.peak_bytes < 1 << 30,
            "{name}: {} MB resident",
            r.peak_bytes >> 20
        );
    }
    let words = run(&["check", d.join("words.orr").to_str().unwrap()], &[]);
    assert!(
        words
            .stderr
            .contains("more than 1000000 statements, values and comments in one file"),
        "{}",
        words.stderr
    );
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn bench_refuses_flow_counts_past_its_limit_before_measuring() {
    for flag in ["--flows", "--dense-flows"] {
        for count in ["18446744073709551615", "1000001"] {
            let r = run(&["bench", flag, count], &[]);
            assert_eq!(r.code, 2, "{flag} {count}: {}", r.stderr);
            assert!(
                r.stderr
                    .contains(&format!("{flag} {count} is out of range: 0 to 1000000")),
                "{}",
                r.stderr
            );
            // Refused before the first measurement, not after it.
            assert!(r.stdout.is_empty(), "{}", r.stdout);
        }
    }
}

/// The most threads `pid` had at any of its polls until it exits; its exit status.
fn peak_threads(mut child: std::process::Child) -> (usize, std::process::ExitStatus) {
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let start = Instant::now();
    loop {
        if let Ok(s) = fs::read_to_string(&status)
            && let Some(n) = s
                .lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse::<usize>().ok())
        {
            peak = peak.max(n);
        }
        if let Some(st) = child.try_wait().unwrap() {
            return (peak, st);
        }
        assert!(
            start.elapsed() < Duration::from_secs(HANG),
            "ran past {HANG} s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn rayon_num_threads_cannot_lift_the_thread_cap() {
    // A drill without --threads runs one worker per CPU; RAYON_NUM_THREADS=100000 made rayon
    // start 1,500 and more. Polled, the count can only be under the true peak, so the bound
    // never fails spuriously: at most the cap (4 per CPU) plus a few threads of the process's
    // own (main, the global pool of one per CPU, output).
    let d = dir("threads");
    let child = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args([
            "drill",
            "scenarios/quickstart.orr",
            "--seeds",
            "3",
            "--horizon",
            "10 min",
        ])
        .args(["--no-plots", "--out", d.to_str().unwrap()])
        .env("RAYON_NUM_THREADS", "100000")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (peak, status) = peak_threads(child);
    assert!(status.success(), "{status:?}");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(peak <= 5 * cpus + 8, "{peak} threads on {cpus} CPUs");
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn a_compute_past_the_clock_is_refused_not_a_spin_nor_a_makespan_of_584_years() {
    // 10¹² EFLOP on an H100 is past what the nanosecond clock counts: the task would end at
    // the clock's last instant. Closing the link-traffic windows up to that instant never
    // ended (no window end is past u64::MAX), inside the one event, so --max-events never
    // tripped; then the run reported that instant as its makespan (18,446,744,073.7 s). The
    // run now stops when its next event is at the clock's end: exit 2, nothing written.
    let d = dir("compute");
    let f = d.join("s.orr");
    fs::write(
        &f,
        "cluster c {\n  node dgx_h100 x 1\n}\nworkload w {\n  tasks t x 1 {\n    resources { GPU: 1 }\n    compute 1000000000000 EFLOP bf16\n  }\n}\n",
    )
    .unwrap();
    let out = d.join("out");
    let r = run(
        &[
            "run",
            f.to_str().unwrap(),
            "--max-events",
            "1000",
            "--no-plots",
        ]
        .into_iter()
        .chain(["--out", out.to_str().unwrap()])
        .collect::<Vec<_>>(),
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("error: the simulated clock reached its end, 2^64 ns (584 years)"),
        "{}",
        r.stderr
    );
    assert!(!out.exists(), "a refused run wrote {}", out.display());
    // Within a horizon nothing is wrong: the task is cut at the window's end.
    let r = run(
        &["run", f.to_str().unwrap(), "--horizon", "1h", "--no-plots"]
            .into_iter()
            .chain(["--out", out.to_str().unwrap()])
            .collect::<Vec<_>>(),
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn fifty_thousand_custom_resources_in_a_quota_place_in_linear_time() {
    // A node type, a tenant's quota and 100 tasks each naming 50,000 custom resources. Each
    // map's duplicate check compared every key with those before it, and each allocation and
    // free looked every quota resource up by scanning the request: 2.5 × 10⁹ steps apiece,
    // hours in all. Linear, a second or so; only a hang fails here.
    let d = dir("resources");
    let f = d.join("s.orr");
    let map = |amount: &str| {
        (0..50_000)
            .map(|i| format!("r{i}: {amount}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    fs::write(
        &f,
        format!(
            "node box {{\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  resources {{ {} }}\n}}\n\
             cluster c {{\n  node box x 2\n}}\ntenant t {{\n  quota {{ {} }}\n}}\n\
             workload w tenant t {{\n  tasks a x 100 {{\n    resources {{ {} }}\n    duration 1 s\n  }}\n}}\n",
            map("1000"),
            map("1000"),
            map("1")
        ),
    )
    .unwrap();
    let out = d.join("out");
    let r = run(
        &[
            "run",
            f.to_str().unwrap(),
            "--no-plots",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains(" 100/100 "), "{}", r.stdout);
    let _ = fs::remove_dir_all(&d);
}
