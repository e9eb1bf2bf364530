//! What every command leaves behind besides its data files: plots (through [`crate::plot`]) and
//! a `report.md` that states how the results were made, embeds the plots and links every file.
//!
//! This is glue only: it turns results ([`crate::sim::RunResult`], [`crate::experiment::drill::DrillReport`],
//! [`crate::experiment::sweep::SweepResult`], [`crate::experiment::compare::CompareReport`],
//! [`crate::transport::compare::Comparison`]) into the plain structs of `plot` and into
//! Markdown. One file per command: [`run`], [`drill`], [`sweep`], [`compare`],
//! [`transports`]. Every file is written through [`crate::atomic`], so none is ever
//! half-written; a plot that cannot be drawn (say, no samples) is left out and the report says
//! why. No printing: callers get the file names and the notes.

pub mod accuracy;
pub mod compare;
pub mod drill;
pub mod run;
pub mod sweep;
pub mod timeline;
pub mod transports;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What an output step wrote (file names relative to its folder, in order) and what it left
/// out and why.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Written {
    pub files: Vec<String>,
    pub notes: Vec<String>,
}

/// Collects files and the Markdown of one report as plots are drawn.
pub(crate) struct Report {
    pub dir: PathBuf,
    pub md: String,
    pub out: Written,
    /// The first plot whose file could not be written: [`Report::finish`] fails with it.
    failed: Option<String>,
}

impl Report {
    pub fn new(dir: &Path, title: &str) -> Report {
        Report {
            dir: dir.to_path_buf(),
            md: format!("# {}\n\n", md_escape(title)),
            out: Written::default(),
            failed: None,
        }
    }

    /// The path of a plot stem in the folder.
    pub fn stem(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Records a drawn plot (embedding its PNG and linking its SVG), or notes why it is missing
    /// when its data cannot be drawn; a plot whose file could not be written fails the report
    /// ([`Report::finish`]), since a full disk is no property of the results.
    pub fn plot(&mut self, alt: &str, drawn: Result<Vec<PathBuf>, crate::plot::PlotError>) {
        match drawn {
            Ok(paths) => {
                let names: Vec<String> = paths
                    .iter()
                    .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect();
                if let Some(png) = names.iter().find(|n| n.ends_with(".png")) {
                    let _ = write!(self.md, "![{}]({png})", md_escape(alt));
                }
                if let Some(svg) = names.iter().find(|n| n.ends_with(".svg")) {
                    let _ = write!(self.md, "\n([SVG]({svg}))");
                }
                self.md.push_str("\n\n");
                self.out.files.extend(names);
            }
            Err(crate::plot::PlotError::NotDrawn(e)) => self.note(format!("{alt}: not drawn: {e}")),
            Err(crate::plot::PlotError::Write(e)) => {
                self.failed.get_or_insert(e);
            }
        }
    }

    /// A note in the report and in [`Written::notes`].
    pub fn note(&mut self, text: String) {
        let _ = writeln!(self.md, "*{}*\n", md_escape(&text));
        self.out.notes.push(text);
    }

    /// A `## heading`.
    pub fn section(&mut self, title: &str) {
        let _ = writeln!(self.md, "## {}\n", md_escape(title));
    }

    /// A two-column table of (key, value) facts (values in code spans).
    pub fn facts(&mut self, rows: &[(&str, String)]) {
        self.md.push_str("| | |\n|---|---|\n");
        for (k, v) in rows {
            let _ = writeln!(self.md, "| {k} | {} |", code(v));
        }
        self.md.push('\n');
    }

    /// A preformatted block (the printed table).
    pub fn pre(&mut self, text: &str) {
        let _ = writeln!(self.md, "```text\n{}\n```\n", text.trim_end());
    }

    /// A "Files" section linking `data` (name, what it holds) and every plot, then writes
    /// `report.md` atomically. The plots must already be written: if one could not be, that
    /// error (naming its file), and no report.
    pub fn finish(mut self, data: &[(String, &str)]) -> Result<Written, String> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        self.section("Files");
        for (name, what) in data {
            let _ = writeln!(self.md, "- [{name}]({name}): {what}");
        }
        let plots: Vec<String> = self.out.files.clone();
        for p in plots.iter().filter(|p| p.ends_with(".svg")) {
            let _ = writeln!(self.md, "- [{p}]({p}): vector plot");
        }
        self.md.push('\n');
        let path = self.dir.join("report.md");
        crate::atomic::write_atomic(&path, self.md.as_bytes())
            .map_err(|e| format!("cannot write {e}"))?;
        self.out.files.push("report.md".into());
        Ok(self.out)
    }
}

/// Escapes Markdown inline specials in free text.
pub(crate) fn md_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '_' | '[' | ']' | '`' | '|' | '<' | '>' | '#') {
            o.push('\\');
        }
        o.push(c);
    }
    o
}

/// A value as a code span (pipes escaped for tables).
pub(crate) fn code(s: &str) -> String {
    if s.is_empty() {
        return "-".into();
    }
    format!("`{}`", s.replace('`', "'").replace('|', "\\|"))
}

/// A file-name-safe form of a label (`a/b c` → `a_b_c`).
pub(crate) fn slug(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if t.is_empty() { "_".into() } else { t }
}

/// A confidence interval usable as a whisker: both ends present and around the mean.
pub(crate) fn ci(mean: f64, lo: Option<f64>, hi: Option<f64>) -> Option<(f64, f64)> {
    let (lo, hi) = (lo?, hi?);
    (lo.is_finite() && hi.is_finite() && lo <= mean && mean <= hi).then_some((lo, hi))
}

/// The plot name `measure::column` gives a metric key, split into (name, unit) for axes:
/// `makespan_s` → (`makespan`, `s`), `cost_usd` → (`cost`, `$`).
pub(crate) fn name_unit(key: &str) -> (String, String) {
    for (suffix, unit) in [
        ("_s", "s"),
        ("_usd", "$"),
        ("_kwh", "kWh"),
        ("_per_h", "/h"),
        ("_w", "W"),
    ] {
        if let Some(name) = key.strip_suffix(suffix) {
            return (name.replace('_', " "), unit.to_string());
        }
    }
    (key.replace('_', " "), String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(slug("a/b c"), "a_b_c");
        assert_eq!(md_escape("a_b*"), "a\\_b\\*");
        assert_eq!(code("x|y"), "`x\\|y`");
        assert_eq!(ci(1.0, Some(0.5), Some(2.0)), Some((0.5, 2.0)));
        assert_eq!(ci(1.0, Some(1.5), Some(2.0)), None);
        assert_eq!(ci(1.0, None, Some(2.0)), None);
        assert_eq!(name_unit("cost_usd"), ("cost".into(), "$".into()));
        assert_eq!(name_unit("goodput"), ("goodput".into(), String::new()));
    }
}
