//! `orrery accuracy`.

use super::args::AccuracyArgs;
use super::common::written_or_fail;
use super::error::Outcome;
use orrery::accuracy;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Prints every row and the summary, writes the folder, and exits 1 if a row is over its
/// tolerance (2 if the table is malformed or a row cannot be priced).
pub(super) fn accuracy(a: AccuracyArgs) -> Outcome {
    let (table, out, plots) = (a.table.as_deref(), a.out, !a.no_plots);
    let loaded = match table {
        None => accuracy::built_in(),
        Some(dir) => read_dir(dir),
    };
    let t0 = std::time::Instant::now();
    let (outcomes, gaps) = loaded.and_then(|(r, g)| Ok((accuracy::evaluate(&r, &g)?, g)))?;
    let mut printed = accuracy::render(&outcomes);
    let over_median = accuracy::medians_over(&outcomes);
    let listed: Vec<&accuracy::table::Gap> = gaps
        .iter()
        .filter(|g| {
            outcomes.iter().any(|o| o.gap.as_ref() == Some(&g.id))
                || over_median
                    .iter()
                    .any(|(k, ..)| g.medians.iter().any(|m| m == k.name()))
        })
        .collect();
    if !listed.is_empty() {
        printed.push_str("\nknown gaps (rows over tolerance for a stated reason, to be closed):\n");
        for g in listed {
            printed.push_str(&format!("- {}: {}\n", g.id, g.why));
        }
    }
    out!("{printed}");
    let over = outcomes.iter().filter(|o| !o.within()).count();
    outln!(
        "\n{} rows, {} over tolerance ({:.2} s)",
        outcomes.len(),
        over,
        t0.elapsed().as_secs_f64()
    );
    let dir = out.unwrap_or_else(|| PathBuf::from("outputs").join("accuracy"));
    let head = [
        ("orrery", env!("CARGO_PKG_VERSION").to_string()),
        (
            "table",
            table.map_or("built in (accuracy/*.toml)".to_string(), |t| {
                t.display().to_string()
            }),
        ),
    ];
    super::common::begin_outputs(&dir)?;
    let t1 = std::time::Instant::now();
    let written = orrery::outputs::accuracy::write(&dir, &head, &outcomes, &printed, plots);
    written_or_fail(&dir, written, t1)?;
    Ok(if over > 0 || !over_median.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Every `*.toml` in `dir` (by name, read only inside `dir`), as one table; `gaps.toml` there
/// lists its known gaps.
fn read_dir(dir: &Path) -> Result<(Vec<accuracy::Entry>, Vec<accuracy::table::Gap>), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut names: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| PathBuf::from(e.file_name()))
        .filter(|n| n.extension().is_some_and(|x| x == "toml"))
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(format!("{}: no *.toml table in the folder", dir.display()));
    }
    let mut rows = Vec::new();
    let mut gaps = Vec::new();
    for n in names {
        let shown = dir.join(&n);
        let (_, text) = orrery::files::read_confined(dir, &n, None, orrery::files::MAX_INPUT_BYTES)
            .map_err(|e| format!("{} {e}", shown.display()))?;
        if n.as_os_str() == "gaps.toml" {
            gaps = accuracy::table::parse_gaps(&shown.display().to_string(), &text)?;
            continue;
        }
        rows.extend(accuracy::table::parse(&shown.display().to_string(), &text)?);
        if rows.len() > accuracy::table::MAX_ROWS {
            return Err(format!(
                "{}: more than {} rows in all",
                dir.display(),
                accuracy::table::MAX_ROWS
            ));
        }
    }
    accuracy::check_ids(&rows)?;
    accuracy::check_gaps(&rows, &gaps)?;
    Ok((rows, gaps))
}
