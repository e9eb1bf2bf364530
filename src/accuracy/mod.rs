//! `orrery accuracy`: Orrery's predictions against published measurements of real systems.
//!
//! Each row of the shipped table (`accuracy/*.toml`, [`table`]) is a measurement someone
//! published — an nccl-tests bus bandwidth, a queue's closed form — with its source and
//! configuration. Orrery predicts it with the same code paths a user's command runs (the
//! collective through `orrery collectives`' pricing on a catalog node, the queue through the
//! simulation), and the row reports the signed error against its tolerance. One set of
//! parameters per part serves every row: nothing here knows which row it is pricing. Rows
//! marked `fitted` are those some parameter was fitted to; the rest are held out, and the
//! summary gives both sets' errors apart so a fit that only matches its own source shows.
//!
//! Architecture invariant: this module predicts through the public pricing functions
//! (`experiment::collectives`, `sim::simulate`) and never adjusts a prediction per row.

mod harness;
mod predict;
pub mod queueing;
mod serving_rows;
pub mod table;

use crate::network::collective::Op;
use rayon::prelude::*;

/// What a row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Collective,
    Training,
    Serving,
    Queueing,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Collective => "collective",
            Kind::Training => "training",
            Kind::Serving => "serving",
            Kind::Queueing => "queueing",
        }
    }
}

/// How Orrery predicts a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Case {
    /// A collective of `bytes` (as nccl-tests counts them) over `ranks` (`NODESxDEVICES`) of
    /// catalog node type `node`, priced as `orrery collectives` prices it: its bus bandwidth.
    Collective {
        node: String,
        ranks: String,
        op: Op,
        bytes: f64,
    },
    /// A training job (the whole scenario text, built from the row): its simulated seconds
    /// per iteration.
    Training { scenario: String },
    /// An LLM service under a finite load (the whole scenario text, built from the row): its
    /// output tokens per second until the last request finished.
    /// `{ENGINE}` in it is the `engine` line: the row's, or with `trtllm_bench` the batch
    /// limits trtllm-bench computes for it ([`harness::trtllm_bench`]).
    Serving {
        scenario: String,
        engine: String,
        trtllm_bench: bool,
    },
    /// A service of `servers` replicas under Poisson arrivals, exponential or fixed service
    /// times, simulated for `horizon_s` per seed: the mean wait over `seeds` seeds.
    Queueing {
        exponential: bool,
        servers: u32,
        arrivals_per_s: f64,
        service_s: f64,
        horizon_s: u32,
        seeds: u32,
    },
}

/// One published measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Unique within the table: `set@size` for collectives.
    pub id: String,
    pub kind: Kind,
    /// The machine it was measured on, in words.
    pub system: String,
    /// The configuration, in words.
    pub config: String,
    /// Where the figure was published.
    pub source: String,
    /// The figure's name and unit.
    pub metric: &'static str,
    pub published: f64,
    /// Largest |error| (a fraction) the row may have.
    pub tolerance: f64,
    /// Largest median |error| of the rows of its kind, where the table sets one.
    pub median_tolerance: Option<f64>,
    /// Whether a parameter of Orrery was fitted to this row's source.
    pub fitted: bool,
    pub case: Case,
}

/// A row with Orrery's prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub entry: Entry,
    pub predicted: f64,
    /// predicted / published − 1.
    pub error: f64,
    /// Algorithm and protocol or other detail of how it was priced.
    pub priced_by: String,
    /// The known gap ([`table::Gap`]) this row is listed under, if any.
    pub gap: Option<String>,
}

impl Outcome {
    pub fn within(&self) -> bool {
        self.error.abs() <= self.entry.tolerance
    }
}

/// Every built-in table's rows, in file order, and the built-in known gaps.
pub fn built_in() -> Result<(Vec<Entry>, Vec<table::Gap>), String> {
    let mut rows = Vec::new();
    for (name, text) in table::BUILT_IN {
        rows.extend(table::parse(name, text)?);
    }
    check_ids(&rows)?;
    let gaps = table::parse_gaps(table::GAPS.0, table::GAPS.1)?;
    check_gaps(&rows, &gaps)?;
    Ok((rows, gaps))
}

/// Every row a gap names exists.
pub fn check_gaps(rows: &[Entry], gaps: &[table::Gap]) -> Result<(), String> {
    let ids: std::collections::HashSet<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    for g in gaps {
        if let Some(r) = g.rows.iter().find(|r| !ids.contains(r.as_str())) {
            return Err(format!(
                "gap `{}` names row `{r}`, which no table has",
                g.id
            ));
        }
        if let Some(k) = g
            .medians
            .iter()
            .find(|k| !rows.iter().any(|r| r.kind.name() == k.as_str()))
        {
            return Err(format!("gap `{}` names kind `{k}`, which no row has", g.id));
        }
    }
    Ok(())
}

/// No two rows share an id.
pub fn check_ids(rows: &[Entry]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::with_capacity(rows.len());
    match rows.iter().find(|r| !seen.insert(r.id.as_str())) {
        Some(r) => Err(format!("two rows are named `{}`", r.id)),
        None => Ok(()),
    }
}

/// Orrery's prediction of every row (in parallel; the result is in row order and does not
/// depend on the thread count). A row that cannot be priced is an error naming it.
pub fn evaluate(rows: &[Entry], gaps: &[table::Gap]) -> Result<Vec<Outcome>, String> {
    rows.par_iter()
        .map(|e| {
            let (predicted, priced_by) =
                predict::predict(&e.case).map_err(|m| format!("row `{}`: {m}", e.id))?;
            let gap = gaps
                .iter()
                .find(|g| g.rows.contains(&e.id))
                .map(|g| g.id.clone());
            Ok(Outcome {
                entry: e.clone(),
                predicted,
                error: predicted / e.published - 1.0,
                priced_by,
                gap,
            })
        })
        .collect()
}

/// Errors of one group of rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    pub rows: usize,
    pub within: usize,
    /// Median |error| (a fraction).
    pub median: f64,
    /// Largest |error|.
    pub max: f64,
}

fn stats<'a>(rows: impl Iterator<Item = &'a Outcome>) -> Option<Stats> {
    let mut errs = Vec::new();
    let mut within = 0;
    for o in rows {
        errs.push(o.error.abs());
        within += usize::from(o.within());
    }
    if errs.is_empty() {
        return None;
    }
    errs.sort_by(f64::total_cmp);
    let n = errs.len();
    let median = if n % 2 == 1 {
        errs[n / 2]
    } else {
        (errs[n / 2 - 1] + errs[n / 2]) / 2.0
    };
    Some(Stats {
        rows: n,
        within,
        median,
        max: errs[n - 1],
    })
}

/// Per kind: (kind, all rows, fitted rows, held-out rows).
pub type Summary = Vec<(Kind, Stats, Option<Stats>, Option<Stats>)>;

/// Kinds whose median |error| is over their median tolerance: (kind, median, tolerance).
pub fn medians_over(outcomes: &[Outcome]) -> Vec<(Kind, f64, f64)> {
    summary(outcomes)
        .into_iter()
        .filter_map(|(k, all, _, _)| {
            let tol = outcomes
                .iter()
                .filter(|o| o.entry.kind == k)
                .find_map(|o| o.entry.median_tolerance)?;
            (all.median > tol).then_some((k, all.median, tol))
        })
        .collect()
}

/// The summary by kind, fitted and held-out rows apart.
pub fn summary(outcomes: &[Outcome]) -> Summary {
    let mut kinds: Vec<Kind> = outcomes.iter().map(|o| o.entry.kind).collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .filter_map(|k| {
            let of = |f: Option<bool>| {
                stats(
                    outcomes
                        .iter()
                        .filter(|o| o.entry.kind == k && f.is_none_or(|f| o.entry.fitted == f)),
                )
            };
            Some((k, of(None)?, of(Some(true)), of(Some(false))))
        })
        .collect()
}

/// The printed table: one line per row, then the summary.
pub fn render(outcomes: &[Outcome]) -> String {
    let mut t = crate::table::Table::new([
        "row",
        "kind",
        "metric",
        "published",
        "Orrery",
        "error",
        "tolerance",
        "set",
        "ok",
        "known gap",
        "priced by",
    ])
    .left(&[1, 2, 7, 8, 9, 10]);
    for o in outcomes {
        t.row([
            o.entry.id.clone(),
            o.entry.kind.name().to_string(),
            o.entry.metric.to_string(),
            fmt3(o.entry.published),
            fmt3(o.predicted),
            format!("{:+.1}%", o.error * 100.0),
            format!("{:.0}%", o.entry.tolerance * 100.0),
            if o.entry.fitted { "fitted" } else { "held out" }.to_string(),
            if o.within() { "yes" } else { "NO" }.to_string(),
            o.gap.clone().unwrap_or_default(),
            o.priced_by.clone(),
        ]);
    }
    let mut s = t.render();
    s.push('\n');
    s.push_str(&summary_text(outcomes));
    s
}

/// The summary table, then a line for each kind whose median is over its median tolerance
/// (what README shows).
pub fn summary_text(outcomes: &[Outcome]) -> String {
    let mut s = render_summary(&summary(outcomes));
    for (k, median, tol) in medians_over(outcomes) {
        s.push_str(&format!(
            "{}: median |error| {:.1}% is over its {:.0}%\n",
            k.name(),
            median * 100.0,
            tol * 100.0
        ));
    }
    s
}

/// The summary table: rows within tolerance, median and largest |error| per kind and set.
pub fn render_summary(sum: &Summary) -> String {
    let mut t =
        crate::table::Table::new(["kind", "set", "rows", "within", "median |err|", "max |err|"])
            .left(&[1]);
    for (k, all, fitted, held) in sum {
        for (set, s) in [
            ("all", Some(all)),
            ("fitted", fitted.as_ref()),
            ("held out", held.as_ref()),
        ] {
            if let Some(s) = s {
                t.row([
                    k.name().to_string(),
                    set.to_string(),
                    s.rows.to_string(),
                    s.within.to_string(),
                    format!("{:.1}%", s.median * 100.0),
                    format!("{:.1}%", s.max * 100.0),
                ]);
            }
        }
    }
    t.render()
}

/// `accuracy.csv`: one line per row, every field the printed table has plus the row's
/// system, configuration and source.
pub fn csv(outcomes: &[Outcome]) -> String {
    /// One row of the table: the published figure, the prediction, and how far apart.
    #[derive(serde::Serialize, Default)]
    struct Row<'a> {
        id: &'a str,
        kind: &'a str,
        system: &'a str,
        config: &'a str,
        metric: String,
        published: f64,
        predicted: f64,
        /// Signed relative error, 6 decimals.
        error: String,
        tolerance: f64,
        fitted: bool,
        within: bool,
        gap: &'a str,
        priced_by: &'a str,
        source: &'a str,
    }
    crate::report::rows::csv(outcomes.iter().map(|o| {
        let e = &o.entry;
        Row {
            id: &e.id,
            kind: e.kind.name(),
            system: &e.system,
            config: &e.config,
            metric: e.metric.to_string(),
            published: e.published,
            predicted: o.predicted,
            error: format!("{:.6}", o.error),
            tolerance: e.tolerance,
            fitted: e.fitted,
            within: o.within(),
            gap: o.gap.as_deref().unwrap_or(""),
            priced_by: &o.priced_by,
            source: &e.source,
        }
    }))
}

/// Three significant digits.
fn fmt3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}
