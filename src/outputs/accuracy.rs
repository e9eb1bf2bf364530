//! `orrery accuracy`'s folder: `accuracy.csv`, the predicted-against-published plot and
//! `report.md`.

use super::{Report, Written};
use crate::accuracy::{self, Outcome};
use crate::plot;
use std::path::Path;

/// Writes the folder; `printed` is the table as the command printed it. The data files
/// written (`accuracy.csv`), then the plot and report.
pub fn write(
    dir: &Path,
    header: &[(&str, String)],
    outcomes: &[Outcome],
    printed: &str,
    plots: bool,
) -> Result<(Vec<String>, Written), String> {
    crate::atomic::create_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("accuracy.csv");
    crate::atomic::write_atomic(&path, accuracy::csv(outcomes).as_bytes())
        .map_err(|e| format!("cannot write {e}"))?;
    let mut rep = Report::new(
        dir,
        "orrery accuracy: predictions against published measurements",
    );
    rep.facts(header);
    if plots {
        rep.section("Predicted against published");
        let mut kinds: Vec<plot::AccuracyKind> = Vec::new();
        for o in outcomes {
            let name = o.entry.kind.name();
            match kinds.iter_mut().find(|k| k.kind == name) {
                Some(k) => k.points.push((o.entry.published, o.predicted)),
                None => kinds.push(plot::AccuracyKind {
                    kind: name.to_string(),
                    points: vec![(o.entry.published, o.predicted)],
                }),
            }
        }
        let drawn = plot::accuracy(
            &rep.stem("accuracy"),
            "Orrery against published measurements",
            &kinds,
        );
        rep.plot(
            "Predicted against published, log-log, one colour per kind",
            drawn,
        );
    }
    rep.section("Table");
    rep.pre(printed);
    let out = rep.finish(&[(
        "accuracy.csv".to_string(),
        "one line per row: published, predicted, signed error, tolerance, set, source",
    )])?;
    Ok((vec!["accuracy.csv".to_string()], out))
}
