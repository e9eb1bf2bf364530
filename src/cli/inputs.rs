//! Files a scenario names beside it: arrival traces and empirical samples.

use std::path::Path;

/// The text of a file named in a scenario, relative to its folder and confined to it as
/// `include` is, with the path to show in errors.
fn read_confined(
    dir: &Path,
    name: &str,
    what: &str,
) -> Result<(String, std::path::PathBuf), String> {
    use orrery::files::{MAX_INPUT_BYTES, ReadError, read_confined as read};
    let path = dir.join(name);
    match read(dir, Path::new(name), None, MAX_INPUT_BYTES) {
        Ok((_, text)) => Ok((text, path)),
        Err(ReadError::Outside(root)) => Err(format!(
            "{what} file `{name}` is outside the scenario's folder {}",
            root.display()
        )),
        Err(e) => Err(format!("{what} {} {e}", path.display())),
    }
}

/// A column of non-negative seconds (first field of each line; `#` comments and blank lines
/// skipped; at least one) from a file named in a scenario. Errors name file:line:column.
pub(super) fn read_seconds(dir: &Path, name: &str, what: &str) -> Result<Vec<f64>, String> {
    let (text, path) = read_confined(dir, name, what)?;
    let mut xs = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let field = line.split(',').next().unwrap_or("").trim();
        match field.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => xs.push(x),
            _ => {
                return Err(format!(
                    "{}:{}:1: expected non-negative seconds, found `{field}`",
                    path.display(),
                    k + 1
                ));
            }
        }
    }
    // No samples is no distribution to draw from: refused where it is, as a bad line is.
    if xs.is_empty() {
        return Err(format!(
            "{}:1:1: no samples: expected one non-negative duration in seconds per line",
            path.display()
        ));
    }
    Ok(xs)
}

/// Arrival traces named by `arrival trace "FILE"` (rows `arrival_s[,prompt_tokens,
/// output_tokens]`, [`orrery::scenario::arrivals`]), each checked against the LLM services that
/// read their tokens from it. Errors name file:line:column, and the scenario's `arrival`
/// line when a row does not suit its service.
pub(super) fn traces(
    spec: &orrery::scenario::Spec,
    sources: &orrery::diag::SourceMap,
    file: Option<&Path>,
) -> Result<std::collections::BTreeMap<String, orrery::scenario::arrivals::Trace>, String> {
    use orrery::scenario::arrivals;
    let mut out = std::collections::BTreeMap::new();
    let dir = file
        .and_then(Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    for w in &spec.workloads {
        for s in &w.services {
            let orrery::scenario::workload::Arrival::Trace(name) = &s.arrival else {
                continue;
            };
            let path = dir.join(name);
            let at = |e: arrivals::TraceError| {
                format!("{}:{}:{}: {}", path.display(), e.line, e.column, e.message)
            };
            if !out.contains_key(name) {
                // Token columns are read when any service reading this file reads them.
                let tokens = spec.workloads.iter().flat_map(|w| &w.services).any(|o| {
                    matches!(&o.arrival, orrery::scenario::workload::Arrival::Trace(n) if n == name)
                        && o.llm.as_ref().is_some_and(arrivals::reads_tokens)
                });
                // Errors about the file also name the scenario line that named it.
                let named_at = s
                    .arrival_span
                    .map(|sp| format!(" (named by `arrival trace` at {})", sources.location(sp)))
                    .unwrap_or_default();
                let (text, _) =
                    read_confined(dir, name, "trace").map_err(|e| format!("{e}{named_at}"))?;
                let trace =
                    arrivals::parse(&text, tokens).map_err(|e| format!("{}{named_at}", at(e)))?;
                out.insert(name.clone(), trace);
            }
            let t = &out[name];
            if let Some(llm) = &s.llm {
                arrivals::check_tokens(llm, t).map_err(|e| {
                    let named = s
                        .arrival_span
                        .map(|sp| {
                            format!(
                                " (read by service `{}.{}`, {})",
                                w.name,
                                s.name,
                                sources.location(sp)
                            )
                        })
                        .unwrap_or_default();
                    format!("{}{named}", at(e))
                })?;
            }
        }
    }
    Ok(out)
}

/// Samples of `empirical("FILE")` distributions (one duration per line).
pub(super) fn empirical(
    spec: &orrery::scenario::Spec,
    sources: &orrery::diag::SourceMap,
    file: &Path,
) -> Result<std::collections::BTreeMap<String, Vec<f64>>, String> {
    use orrery::scenario::failure::Distribution;
    let mut out = std::collections::BTreeMap::new();
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    for f in &spec.failures {
        for r in &f.random {
            for d in [&r.distribution, &r.repair_distribution] {
                if let Distribution::Empirical { path: name, span } = d
                    && !out.contains_key(name)
                {
                    let samples = read_seconds(dir, name, "samples").map_err(|e| {
                        format!("{e} (named by `empirical` at {})", sources.location(*span))
                    })?;
                    out.insert(name.clone(), samples);
                }
            }
        }
    }
    Ok(out)
}
