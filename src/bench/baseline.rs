//! `orrery bench`'s recorded baseline: the figures of the last `bench --record`, and each
//! case's speed relative to them.
//!
//! A figure is only comparable with one taken on the same machine under a similar load, so a
//! baseline keeps the machine's CPU count and its load average when it was recorded, and
//! `bench` prints the load now beside the ratios. Timings never gate `cargo test` (a test's
//! verdict must not depend on the machine's speed or load): only `bench --min-ratio R`, in
//! its own mode, exits 1 when a case runs below R times its baseline's speed.

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;

/// The largest baseline file read (a few hundred bytes per case).
pub const MAX_BYTES: u64 = 1 << 20;

/// Where `bench` looks for its baseline unless `--baseline` names another file.
pub const DEFAULT_PATH: &str = "bench/baseline.toml";

/// Whether a larger figure is better (a rate) or a smaller one (a time, a memory peak).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// One measured figure of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The case with its size, e.g. `simulation 10000 nodes x 1000000 tasks`.
    pub name: String,
    pub value: f64,
    /// `events/s`, `s`, ...: a baseline in another unit is not compared.
    pub unit: String,
    pub better: Better,
}

impl Case {
    pub fn new(name: impl Into<String>, value: f64, unit: &str, better: Better) -> Case {
        Case {
            name: name.into(),
            value,
            unit: unit.into(),
            better,
        }
    }

    /// Times as fast as `base` (above 1: faster), when both are positive figures in one unit.
    pub fn speedup(&self, base: &Case) -> Option<f64> {
        if base.unit != self.unit || base.better != self.better {
            return None;
        }
        let (a, b) = (self.value, base.value);
        if !(a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite()) {
            return None;
        }
        Some(match self.better {
            Better::Higher => a / b,
            Better::Lower => b / a,
        })
    }
}

/// The recorded figures and what they were measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// The orrery version that recorded them.
    pub orrery: String,
    /// When (ISO 8601 UTC).
    pub recorded: String,
    /// Logical CPUs of the machine.
    pub cpus: usize,
    /// `/proc/loadavg`'s 1, 5 and 15 minute averages before the run ("unknown" elsewhere).
    pub load: String,
    /// Free text: the revision, what else ran, ...
    #[serde(default)]
    pub note: String,
    #[serde(default, rename = "case")]
    pub cases: Vec<Case>,
}

impl Baseline {
    /// The figure recorded for case `name`.
    pub fn case(&self, name: &str) -> Option<&Case> {
        self.cases.iter().find(|c| c.name == name)
    }
}

/// The baseline at `path`; `Ok(None)` when there is no such file.
pub fn read(path: &Path) -> Result<Option<Baseline>, String> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let text =
        crate::files::read_text(path, MAX_BYTES).map_err(|e| format!("{} {e}", path.display()))?;
    parse(&text)
        .map(Some)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A baseline file's text; errors say where (line and column).
pub fn parse(text: &str) -> Result<Baseline, String> {
    let b: Baseline = toml::from_str(text).map_err(|e| {
        let at = e
            .span()
            .map(|s| {
                let (line, col) = crate::files::line_col(text, s.start);
                format!("{line}:{col}: ")
            })
            .unwrap_or_default();
        format!("{at}{}", e.message())
    })?;
    for c in &b.cases {
        if !(c.value.is_finite() && c.value > 0.0) {
            return Err(format!(
                "case \"{}\": value {} is not a positive number",
                c.name, c.value
            ));
        }
    }
    Ok(b)
}

/// `old` with this run's `cases` recorded over it: a case measured now replaces its old
/// figure, the others stay (with the header of now: their figures are older than it says).
pub fn merge(old: Option<Baseline>, cases: &[Case], note: &str, load: &str) -> Baseline {
    let mut kept: Vec<Case> = old.map(|b| b.cases).unwrap_or_default();
    for c in cases {
        match kept.iter_mut().find(|k| k.name == c.name) {
            Some(k) => *k = c.clone(),
            None => kept.push(c.clone()),
        }
    }
    Baseline {
        orrery: env!("CARGO_PKG_VERSION").into(),
        recorded: crate::calibrate::detect::now_iso8601(),
        cpus: crate::parallel::cpus(),
        load: load.into(),
        note: note.into(),
        cases: kept,
    }
}

/// The baseline file's text.
pub fn render(b: &Baseline) -> String {
    let body = toml::to_string(b).unwrap_or_default();
    format!(
        "# `orrery bench`'s baseline: the figures of the last `orrery bench --record` on this\n\
         # project's machine; `orrery bench` prints each case's speed relative to them.\n\
         # Compare only figures taken on the same machine under a similar load.\n\n{body}"
    )
}

/// The comparison table: each case, its figure, the baseline's and how many times as fast.
pub fn table(cases: &[Case], base: Option<&Baseline>, load: &str) -> String {
    let mut o = String::new();
    match base {
        Some(b) => {
            let _ = writeln!(
                o,
                "against the baseline recorded {} by orrery {} ({} CPUs, load {}{}); load now {load}:",
                b.recorded,
                b.orrery,
                b.cpus,
                b.load,
                if b.note.is_empty() {
                    String::new()
                } else {
                    format!("; {}", b.note)
                }
            );
        }
        None => {
            let _ = writeln!(
                o,
                "no baseline recorded (`orrery bench --record` writes one); load now {load}:"
            );
        }
    }
    let mut t = crate::table::Table::new(["case", "now", "baseline", "speed vs baseline"]);
    for c in cases {
        let old = base.and_then(|b| b.case(&c.name));
        let ratio = old.and_then(|o| c.speedup(o));
        t.row(vec![
            c.name.clone(),
            figure(c.value, &c.unit),
            old.map_or_else(|| "-".into(), |o| figure(o.value, &o.unit)),
            ratio.map_or_else(|| "-".into(), |r| format!("{r:.2}x")),
        ]);
    }
    o.push_str(&t.render());
    o
}

/// The cases running below `min` times their baseline's speed, one line each.
pub fn below(cases: &[Case], base: &Baseline, min: f64) -> Vec<String> {
    cases
        .iter()
        .filter_map(|c| {
            let r = c.speedup(base.case(&c.name)?)?;
            (r < min).then(|| format!("{}: {r:.2}x its baseline's speed (below {min})", c.name))
        })
        .collect()
}

fn figure(v: f64, unit: &str) -> String {
    if v >= 1e6 {
        format!("{:.2} M {unit}", v / 1e6)
    } else if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else if v >= 0.01 {
        format!("{v:.3} {unit}")
    } else {
        format!("{v:.2e} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, v: f64, better: Better) -> Case {
        Case::new(
            name,
            v,
            if better == Better::Higher {
                "events/s"
            } else {
                "s"
            },
            better,
        )
    }

    #[test]
    fn speedup_reads_rates_and_times_each_their_way() {
        let rate = case("a", 2e6, Better::Higher);
        assert_eq!(rate.speedup(&case("a", 1e6, Better::Higher)), Some(2.0));
        let time = case("b", 2.0, Better::Lower);
        assert_eq!(time.speedup(&case("b", 1.0, Better::Lower)), Some(0.5));
        // Another unit is not compared.
        assert_eq!(rate.speedup(&case("a", 1.0, Better::Lower)), None);
    }

    #[test]
    fn record_keeps_unmeasured_cases_and_round_trips() {
        let old = merge(
            None,
            &[case("a", 1.0, Better::Lower), case("b", 5.0, Better::Lower)],
            "",
            "0.1 0.2 0.3",
        );
        let new = merge(
            Some(old),
            &[
                case("b", 4.0, Better::Lower),
                case("c", 9e6, Better::Higher),
            ],
            "r1",
            "1 1 1",
        );
        let names: Vec<&str> = new.cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(new.case("b").map(|c| c.value), Some(4.0));
        assert_eq!(parse(&render(&new)), Ok(new));
    }

    #[test]
    fn min_ratio_flags_only_slower_cases() {
        let base = merge(
            None,
            &[
                case("a", 1.0, Better::Lower),
                case("b", 1e6, Better::Higher),
            ],
            "",
            "",
        );
        let now = [
            case("a", 1.5, Better::Lower),
            case("b", 0.9e6, Better::Higher),
            case("new", 1.0, Better::Lower),
        ];
        let slow = below(&now, &base, 0.8);
        assert_eq!(slow.len(), 1, "{slow:?}");
        assert!(slow[0].starts_with("a: 0.67x"));
        let t = table(&now, Some(&base), "0 0 0");
        assert!(t.contains("0.67x") && t.contains("0.90x"), "{t}");
    }

    #[test]
    fn a_broken_file_is_an_error_with_its_line() {
        let e = parse("orrery = \"0.1.0\"\nrecorded = 3\n").unwrap_err();
        assert!(e.starts_with("2:"), "{e}");
        let bad = "orrery = \"x\"\nrecorded = \"t\"\ncpus = 2\nload = \"\"\n[[case]]\nname = \"a\"\nvalue = -1.0\nunit = \"s\"\nbetter = \"lower\"\n";
        assert!(parse(bad).unwrap_err().contains("not a positive number"));
    }
}
