//! `orrery explain`: the item's first placement in a run of the scenario, as the run made it.

use super::common::{header, load, policy_named};
use super::inputs::{empirical, traces};
use orrery::diag;
use orrery::placement::explain::{EXPLAIN_SCHEMA_VERSION, Explanation};
use serde::Serialize;
use std::path::Path;
use std::process::ExitCode;

/// `orrery explain --json`.
#[derive(Serialize)]
struct ExplainJson {
    schema_version: u32,
    header: orrery::report::Header,
    /// `null` when the item was never placed during the run (`note` says so).
    explanation: Option<Explanation>,
    note: Option<String>,
}

pub(super) fn explain(
    file: &Path,
    item: &str,
    seed: u64,
    policy: Option<&str>,
    json: bool,
) -> ExitCode {
    // Work that can never be placed is only a warning here: saying why is explain's job.
    let l = match load(Some(file)) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let loaded = l.spec.as_ref().expect("no errors means a spec");
    let known: Vec<String> = loaded
        .workloads
        .iter()
        .flat_map(|w| {
            w.tasks
                .iter()
                .map(|t| &t.name)
                .chain(w.actors.iter().map(|a| &a.name))
                .chain(w.placement_groups.iter().map(|p| &p.name))
                .chain(w.services.iter().map(|s| &s.name))
                .map(move |n| format!("{}.{n}", w.name))
        })
        .collect();
    if !known.iter().any(|k| k == item) {
        let hint = diag::did_you_mean(item, known.iter().map(String::as_str))
            .unwrap_or_else(|| format!("items: {}", known.join(", ")));
        errln!(
            "error: no task group, actor, placement group or service `{item}` in {}
  help: {hint}",
            file.display()
        );
        return ExitCode::from(2);
    }
    let overridden = policy.map(|p| loaded.with_policy(policy_named(p)));
    let spec = overridden.as_ref().unwrap_or(loaded);
    let inputs = traces(spec, &l.sources, Some(file))
        .and_then(|t| Ok((t, empirical(spec, &l.sources, file)?)));
    let (traces, empirical) = match inputs {
        Ok(x) => x,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(c) = super::common::gate(&l, spec, None, &traces, 1) {
        return c;
    }
    let r = orrery::sim::simulate(
        spec,
        &orrery::sim::SimConfig {
            seed,
            explain: Some(item.to_string()),
            traces,
            empirical,
            ..Default::default()
        },
    );
    if let Some(c) = super::common::over_budget() {
        return c;
    }
    let mut h = header(&l, Some(file), seed);
    h.policy = policy.map(str::to_string);
    let note = r.explain.is_none().then(|| {
        format!(
            "`{item}` was never placed during the run (its dependencies never finished, or the run ended first)"
        )
    });
    if json {
        let j = ExplainJson {
            schema_version: EXPLAIN_SCHEMA_VERSION,
            header: h,
            explanation: r.explain,
            note,
        };
        match serde_json::to_string_pretty(&j) {
            Ok(s) => outln!("{s}"),
            Err(e) => {
                errln!("error: {e}");
                return ExitCode::from(2);
            }
        }
        return ExitCode::SUCCESS;
    }
    outln!("{}", h.line());
    match (r.explain, note) {
        (Some(e), _) => out!("{}", e.render()),
        (None, Some(n)) => outln!("{n}"),
        (None, None) => {}
    }
    ExitCode::SUCCESS
}
