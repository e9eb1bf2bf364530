//! `orrery check`.

use super::common::load;
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) fn check(files: &[PathBuf], json: bool) -> ExitCode {
    let mut code = ExitCode::SUCCESS;
    let mut out = Vec::new();
    for f in files {
        match load(Some(f)) {
            Ok(l) => {
                let spec = l.spec.as_ref().expect("no errors means a spec");
                // The files the scenario names are read and checked as a run reads them.
                let traces = match super::inputs::traces(spec, &l.sources, Some(f))
                    .and_then(|t| super::inputs::empirical(spec, &l.sources, f).map(|_| t))
                {
                    Ok(t) => t,
                    Err(e) => {
                        errln!("error: {e}");
                        code = ExitCode::from(2);
                        continue;
                    }
                };
                // One run's lower bounds on work and memory, against the limits.
                let est = match super::common::gate(&l, spec, None, &traces, 1) {
                    Ok(e) => e,
                    Err(c) => {
                        code = c;
                        continue;
                    }
                };
                let lim = super::common::limits();
                let s = orrery::summary::summarize(spec);
                if json {
                    out.push(serde_json::json!({ "file": f.display().to_string(), "hash": orrery::scenario_hash(&l.sources), "summary": s, "work": {
                        "events": est.events().round(),
                        "memory_bytes": est.bytes().round(),
                        "unbounded": est.unbounded,
                        "limits": { "events": lim.max_events, "memory_bytes": lim.max_memory },
                    } }));
                } else {
                    outln!(
                        "{}: ok (scenario hash {})",
                        f.display(),
                        orrery::scenario_hash(&l.sources)
                    );
                    out!("{s}");
                    outln!("work         {}", est.line(lim));
                }
            }
            Err(c) => code = c,
        }
    }
    if json {
        let v = serde_json::json!({ "schema_version": orrery::summary::SCHEMA_VERSION, "scenarios": out });
        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    }
    code
}
