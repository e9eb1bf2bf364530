//! Bad input never panics: truncated, mutated and random scenarios all end in located errors
//! (or a valid spec), never a crash, hang, stack overflow or runaway allocation.

use orrery::load_str;
use orrery::scenario::Loaded;

/// Deterministic xorshift64*, so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "\"",
    ",",
    ":",
    ";",
    "..",
    "x",
    " x 8",
    "1e308",
    "1e999",
    "-",
    "#",
    "\n",
    " ",
    "GiB",
    "TB/s",
    "$/h",
    "%",
    "@",
    "é",
    "\u{0}",
    "99999999999999999999",
    "r[0..3]",
    "r[5..1]",
    "2x2x4",
    "2:1",
    "node",
    "cluster",
    "accelerator",
    "rack",
    "slice",
    "device",
    "nic",
    "at",
    "from",
    "include",
    "workload",
    "tasks",
    "after",
    "resources",
    "{ GPU: 1 }",
    "H100_SXM",
    "dgx_h100",
    "failures",
    "at 1 h kill node",
    "experiment",
    "seeds",
    "sweep",
    "in",
    "weibull(shape",
    "0.8)",
    "\\",
    "\"\\q\"",
];

/// Every diagnostic points inside its file, and the rendering names file:line:col.
fn assert_located(l: &Loaded, input: &str) {
    for d in &l.diags {
        assert!(
            d.span.file < l.sources.len(),
            "bad file id for input {input:?}"
        );
        let len = l.sources.file(d.span.file).text.len();
        assert!(
            d.span.start <= d.span.end && d.span.end <= len,
            "span {:?} outside file (len {len}) for input {input:?}",
            d.span
        );
    }
    if l.has_errors() {
        let out = l.render(false);
        let first = out.lines().next().unwrap_or("");
        let loc = first.split(": ").nth(1).unwrap_or("");
        let parts: Vec<&str> = loc.rsplitn(3, ':').collect();
        assert!(
            parts.len() == 3
                && parts[0].parse::<usize>().is_ok()
                && parts[1].parse::<usize>().is_ok(),
            "first line has no file:line:col: {first:?} for input {input:?}"
        );
    }
}

fn check(input: &str) {
    let l = load_str("fuzz.orr", input);
    assert_located(&l, input);
}

fn corpus() -> Vec<String> {
    let mut c = vec![orrery::DEFAULT_SCENARIO.1.to_string()];
    for (_, text) in orrery::catalog::FILES {
        c.push(text.to_string());
    }
    c
}

#[test]
fn every_truncation_is_handled() {
    for text in corpus() {
        let bounds: Vec<usize> = (0..=text.len())
            .filter(|k| text.is_char_boundary(*k))
            .collect();
        let step = (bounds.len() / 1500).max(1);
        for k in bounds.iter().step_by(step) {
            check(&text[..*k]);
        }
    }
}

#[test]
fn mutations_are_handled() {
    let base = corpus();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..3000 {
        let src = &base[rng.below(base.len())];
        let mut chars: Vec<char> = src.chars().collect();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(chars.len() + 1);
            match rng.below(3) {
                0 if !chars.is_empty() => {
                    let end = (at + 1 + rng.below(20)).min(chars.len());
                    chars.drain(at.min(chars.len())..end);
                }
                1 => {
                    let tok = TOKENS[rng.below(TOKENS.len())];
                    for (k, c) in tok.chars().enumerate() {
                        chars.insert((at + k).min(chars.len()), c);
                    }
                }
                _ if at < chars.len() => {
                    chars[at] = char::from_u32(rng.below(0x250) as u32).unwrap_or('?')
                }
                _ => {}
            }
        }
        let s: String = chars.into_iter().collect();
        check(&s);
    }
}

#[test]
fn random_token_soup_is_handled() {
    let mut rng = Rng(42);
    for _ in 0..3000 {
        let n = 1 + rng.below(60);
        let s: String = (0..n)
            .map(|_| TOKENS[rng.below(TOKENS.len())])
            .collect::<Vec<_>>()
            .join(if rng.below(2) == 0 { " " } else { "" });
        check(&s);
    }
}

#[test]
fn hostile_sizes_are_rejected_not_obeyed() {
    for src in [
        "cluster c {\n  node dgx_h100 x 1e308\n}\n",
        "cluster c {\n  node dgx_h100 x 1e999\n}\n",
        "cluster c {\n  rack r[0..18446744073709551615] { node dgx_h100 x 1 }\n}\n",
        "cluster c {\n  rack r[0..999999999999999999999] { node dgx_h100 x 1 }\n}\n",
        "cluster c {\n  slice s0 node tpu_v5p_host topology 4294967296x4294967296x4294967296\n}\n",
        "experiment e {\n  seeds 0..9223372036854775807\n}\n",
        "failures {\n  at 1e300 h kill head\n}\n",
        "accelerator a from H100_SXM {\n  memory 1e30 PB\n}\n",
    ] {
        let l = load_str("h.orr", src);
        assert!(l.has_errors(), "accepted {src}");
        assert_located(&l, src);
    }
    let deep = format!(
        "workload w {{\n  tasks t x 1 {{\n    resources {}\n  }}\n}}\n",
        "{ a: ".repeat(10_000)
    );
    let l = load_str("d.orr", &deep);
    assert!(l.render(false).contains("nesting deeper than 64"));
}

/// Mutants that still validate must also simulate: no panic, no broken run invariant.
#[test]
fn valid_mutants_simulate_cleanly() {
    // The quickstart with fewer training steps: 2,000 (and the fine-tune's 1,000) steps of
    // flow-level collectives make each simulation ~1 s in a debug build, and more steps
    // exercise nothing new.
    let base = orrery::DEFAULT_SCENARIO
        .1
        .replace("steps 2000", "steps 50")
        .replace("steps 1000", "steps 25");
    assert!(
        !base.contains("steps 2000") && !base.contains("steps 1000") && base.contains("steps 25"),
        "the quickstart's step counts moved"
    );
    let mut rng = Rng(0xfeed_beef);
    let mut simulated = 0;
    for _ in 0..600 {
        let mut chars: Vec<char> = base.chars().collect();
        let at = rng.below(chars.len());
        match rng.below(3) {
            0 => {
                let end = (at + 1 + rng.below(6)).min(chars.len());
                chars.drain(at..end);
            }
            1 => {
                let tok = [
                    "1",
                    "0",
                    "9",
                    "x 2",
                    "0.5",
                    "GPU",
                    "CPU",
                    "STRICT_PACK",
                    "SPREAD",
                    "after extract",
                    "2 h",
                    "1 ms",
                ][rng.below(12)];
                for (k, c) in tok.chars().enumerate() {
                    chars.insert((at + k).min(chars.len()), c);
                }
            }
            _ => chars[at] = char::from(b'0' + rng.below(10) as u8),
        }
        let text: String = chars.into_iter().collect();
        let l = load_str("m.orr", &text);
        let Some(spec) = l.spec else { continue };
        let tasks: u64 = spec
            .workloads
            .iter()
            .flat_map(|w| &w.tasks)
            .map(|t| t.count)
            .sum();
        let steps: u64 = spec
            .workloads
            .iter()
            .flat_map(|w| &w.training)
            .map(|t| t.steps)
            .sum();
        if tasks > 50_000 || steps > 100_000 {
            continue;
        }
        let r = orrery::sim::simulate(
            &spec,
            &orrery::sim::SimConfig {
                seed: 1,
                horizon: Some(4 * 3_600_000_000_000),
                ..Default::default()
            },
        );
        assert!(r.violations.is_empty(), "{:?}\n{text}", r.violations);
        simulated += 1;
    }
    assert!(simulated > 200, "only {simulated} mutants validated");
}
