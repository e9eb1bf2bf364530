//! `orrery transports`.

use super::args::TransportsArgs;
use super::common::{file_stem, load, outputs_done};
use super::error::Outcome;
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) fn transports(a: TransportsArgs) -> Outcome {
    use orrery::transport::compare as tc;
    let file = a.file.as_path();
    let l = load(Some(file))?;
    let spec = l.spec.as_ref().expect("no errors means a spec");
    // The comparison's error is reported after the workload's (a missing trace first).
    let compared = (|| {
        let sizes = match &a.sizes {
            Some(s) => tc::parse_sizes(s)?,
            None => tc::DEFAULT_SIZES.to_vec(),
        };
        let pairs = match &a.pairs {
            Some(p) => tc::parse_pairs(spec, p)?,
            None => Vec::new(),
        };
        tc::compare(spec, &sizes, &pairs)
    })();
    let w = if a.workload {
        // The files the scenario names, as `run` reads them: a missing trace is an error.
        let t = super::inputs::traces(spec, &l.sources, Some(file))?;
        let e = super::inputs::empirical(spec, &l.sources, file)?;
        super::common::gate(&l, spec, None, &t, 1)?;
        let w = orrery::experiment::transports::compare_workload(spec, a.seed, &t, &e);
        super::common::within_budget()?;
        Some(w)
    } else {
        None
    };
    let c = compared?;
    let dir = a.out.unwrap_or_else(|| {
        PathBuf::from("outputs").join(format!("{}-transports", file_stem(file)))
    });
    let mut printed = c.to_string();
    if let Some(w) = &w {
        printed.push_str(&format!("\n{w}"));
    }
    let head = [
        ("orrery", env!("CARGO_PKG_VERSION").to_string()),
        ("scenario", file.display().to_string()),
        ("scenario hash", orrery::scenario_hash(&l.sources)),
    ];
    super::common::begin_outputs(&dir)?;
    let t1 = std::time::Instant::now();
    let plots = !a.no_plots;
    let written = orrery::outputs::transports::write(&dir, &head, &c, w.as_ref(), &printed, plots)
        .and_then(|w| {
            orrery::atomic::own_folder(&dir, &w.files)
                .map_err(|e| e.to_string())
                .map(|()| w)
        })
        .map_err(|e| format!("cannot write results to {}: {e}", dir.display()))?;
    if a.json {
        // With --json stdout is the JSON alone.
        for n in &written.notes {
            errln!("note: {n}");
        }
        let text = orrery::outputs::transports::to_json(&c, w.as_ref());
        outln!("{}", text.unwrap_or_default());
    } else {
        outln!("wrote {} in {}", written.files.join(", "), dir.display());
        outputs_done(&written, t1);
        out!("{c}");
        if let Some(w) = w {
            out!("\n{w}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
