//! Files a scenario names beside it: arrival traces and empirical samples.

use std::path::Path;

/// The text of a file named in a scenario, relative to its folder and confined to it as
/// `include` is, with the path to show in errors.
fn read_confined(
    dir: &Path,
    name: &str,
    what: &str,
) -> Result<(String, std::path::PathBuf), String> {
    let root = dir
        .canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", dir.display()))?;
    let path = dir.join(name);
    let canon = path
        .canonicalize()
        .map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?;
    if !canon.starts_with(&root) {
        return Err(format!(
            "{what} file `{name}` is outside the scenario's folder {}",
            root.display()
        ));
    }
    let text = std::fs::read_to_string(&canon)
        .map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?;
    Ok((text, path))
}

/// A column of non-negative seconds (first field of each line; `#` comments and blank lines
/// skipped) from a file named in a scenario. Errors name file:line:column.
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
    Ok(xs)
}

/// Arrival traces named by `arrival trace "FILE"` (rows `arrival_s[,prompt_tokens,
/// output_tokens]`, [`orrery::spec::arrivals`]), each checked against the LLM services that
/// read their tokens from it. Errors name file:line:column, and the scenario's `arrival`
/// line when a row does not suit its service.
pub(super) fn traces(
    spec: &orrery::spec::Spec,
    sources: &orrery::diag::SourceMap,
    file: Option<&Path>,
) -> Result<std::collections::BTreeMap<String, orrery::spec::arrivals::Trace>, String> {
    use orrery::spec::arrivals;
    let mut out = std::collections::BTreeMap::new();
    let dir = file
        .and_then(Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    for w in &spec.workloads {
        for s in &w.services {
            let orrery::spec::workload::Arrival::Trace(name) = &s.arrival else {
                continue;
            };
            let path = dir.join(name);
            let at = |e: arrivals::TraceError| {
                format!("{}:{}:{}: {}", path.display(), e.line, e.column, e.message)
            };
            if !out.contains_key(name) {
                // Token columns are read when any service reading this file reads them.
                let tokens = spec.workloads.iter().flat_map(|w| &w.services).any(|o| {
                    matches!(&o.arrival, orrery::spec::workload::Arrival::Trace(n) if n == name)
                        && o.llm.as_ref().is_some_and(arrivals::reads_tokens)
                });
                let (text, _) = read_confined(dir, name, "trace")?;
                out.insert(name.clone(), arrivals::parse(&text, tokens).map_err(at)?);
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
    spec: &orrery::spec::Spec,
    file: &Path,
) -> Result<std::collections::BTreeMap<String, Vec<f64>>, String> {
    use orrery::spec::failure::Distribution;
    let mut out = std::collections::BTreeMap::new();
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    for f in &spec.failures {
        for r in &f.random {
            for d in [&r.distribution, &r.repair_distribution] {
                if let Distribution::Empirical { path: name } = d
                    && !out.contains_key(name)
                {
                    out.insert(name.clone(), read_seconds(dir, name, "samples")?);
                }
            }
        }
    }
    Ok(out)
}
