//! Helpers of the scenario-answer tests (`tests/all/scenario_answers*.rs`): run a command of the
//! `orrery` binary into a fresh folder, read its CSV and JSON files back, and hold a figure of
//! the output against the scenario's header comment, which must state it as printed.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Run `orrery ARGS`; its standard output. Fails the test when the command fails.
pub fn orrery(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "orrery {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A fresh folder for one command's outputs.
pub fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-answer-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `orrery run FILE --out DIR --no-plots EXTRA...` into a fresh folder named `name`.
pub fn run(name: &str, file: &str, extra: &[&str]) -> PathBuf {
    let out = dir(name);
    let o = out.display().to_string();
    let mut args = vec!["run", file, "--out", &o, "--no-plots"];
    args.extend_from_slice(extra);
    orrery(&args);
    out
}

/// Rows of a CSV file as maps from column name to cell (no quoted commas in these tables'
/// numeric rows; a quoted field is unquoted).
pub fn csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let head: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    lines
        .map(|l| {
            head.iter()
                .cloned()
                .zip(l.split(',').map(|c| c.trim_matches('"').to_string()))
                .collect()
        })
        .collect()
}

/// A number of a CSV row.
pub fn num(row: &BTreeMap<String, String>, col: &str) -> f64 {
    let cell = row
        .get(col)
        .unwrap_or_else(|| panic!("no column {col} in {row:?}"));
    cell.parse()
        .unwrap_or_else(|_| panic!("{col} = {cell:?} is not a number"))
}

/// The row of `rows` whose `col` is `value`.
pub fn row<'a>(
    rows: &'a [BTreeMap<String, String>],
    col: &str,
    value: &str,
) -> &'a BTreeMap<String, String> {
    rows.iter()
        .find(|r| r.get(col).map(String::as_str) == Some(value))
        .unwrap_or_else(|| panic!("no row with {col} = {value}"))
}

pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The scenario's leading comment block, its lines joined by spaces without the `#`.
pub fn header(file: &str) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let Some(c) = line.strip_prefix('#') else {
            break;
        };
        out.push(' ');
        out.push_str(c.trim());
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `file`'s header says `text` (whitespace as in a paragraph: line breaks are spaces).
pub fn says(file: &str, text: &str) {
    let h = header(file);
    let want = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        h.contains(&want),
        "{file}'s header does not say {want:?}:\n{h}"
    );
}

/// `value` printed with `decimals` decimals, thousands separated by commas.
pub fn fixed(value: f64, decimals: usize) -> String {
    let s = format!("{value:.decimals$}");
    let (int, frac) = s.split_once('.').map_or((s.as_str(), ""), |(a, b)| (a, b));
    let (sign, digits) = int.strip_prefix('-').map_or(("", int), |d| ("-", d));
    let mut grouped = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    if frac.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{frac}")
    }
}

/// The figure `value` of the run is what `file`'s header states as `claim` (`"77.8 ms"`,
/// `"1,278 chip-hours lost"`, `"(cluster cost $32,256 against"`): the claim's first word that
/// is a number (less a leading `(`, `$` or `+` and a trailing `)`, `,`, `;`, `:`, `%` or `x`) is
/// `value` printed with as many decimals, and the header says the claim.
pub fn states(file: &str, value: f64, claim: &str) {
    let number = claim
        .split_whitespace()
        .map(|w| {
            w.trim_start_matches(['(', '$', '+'])
                .trim_end_matches([')', ',', ';', ':', '%', 'x'])
        })
        .find(|w| !w.is_empty() && w.replace(',', "").parse::<f64>().is_ok())
        .unwrap_or_else(|| panic!("no number in {claim:?}"));
    let decimals = number.split_once('.').map_or(0, |(_, f)| f.len());
    assert_eq!(
        fixed(value, decimals),
        number,
        "{file}: the run gives {value}, the header says {claim:?}"
    );
    says(file, claim);
}

/// Every `.orr` file under `dir`, recursively, sorted.
pub fn orr_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(orr_files(&p));
        } else if p.extension().is_some_and(|x| x == "orr") {
            out.push(p);
        }
    }
    out.sort();
    out
}
