//! `orrery check`.

use super::args::CheckArgs;
use super::common::load;
use super::error::{Error, Outcome};
use std::path::Path;
use std::process::ExitCode;

/// Checks every file (one's failure does not stop the next); exit 2 if any failed.
pub(super) fn check(a: CheckArgs) -> Outcome {
    let mut code = ExitCode::SUCCESS;
    let mut out = Vec::new();
    for f in &a.files {
        match check_one(f, a.json) {
            Ok(Some(v)) => out.push(v),
            Ok(None) => {}
            Err(e) => code = e.exit(),
        }
    }
    if a.json {
        let v = serde_json::json!({ "schema_version": orrery::summary::SCHEMA_VERSION, "scenarios": out });
        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    }
    Ok(code)
}

/// One file: its summary printed, or its JSON object returned with `json`.
fn check_one(f: &Path, json: bool) -> Result<Option<serde_json::Value>, Error> {
    let l = load(Some(f))?;
    let spec = l.spec.as_ref().expect("no errors means a spec");
    // The files the scenario names are read and checked as a run reads them.
    let traces = super::inputs::traces(spec, &l.sources, Some(f))
        .and_then(|t| super::inputs::empirical(spec, &l.sources, f).map(|_| t))?;
    // One run's lower bounds on work and memory, against the limits.
    let est = super::common::gate(&l, spec, None, &traces, 1)?;
    let lim = super::common::limits();
    let s = orrery::summary::summarize(spec);
    if json {
        return Ok(Some(
            serde_json::json!({ "file": f.display().to_string(), "hash": orrery::scenario_hash(&l.sources), "summary": s, "work": {
                "events": est.events().round(),
                "memory_bytes": est.bytes().round(),
                "unbounded": est.unbounded,
                "limits": { "events": lim.max_events, "memory_bytes": lim.max_memory },
            } }),
        ));
    }
    outln!(
        "{}: ok (scenario hash {})",
        f.display(),
        orrery::scenario_hash(&l.sources)
    );
    out!("{s}");
    outln!("work         {}", est.line(lim));
    Ok(None)
}
