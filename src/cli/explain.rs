//! `orrery explain`: the item's first placement in a run of the scenario, as the run made it.

use super::args::ExplainArgs;
use super::common::{header, load};
use super::error::Outcome;
use super::inputs::{empirical, traces};
use orrery::diag;
use orrery::placement::explain::{EXPLAIN_SCHEMA_VERSION, Explanation};
use serde::Serialize;
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

pub(super) fn explain(a: ExplainArgs) -> Outcome {
    let (file, item, seed, policy) = (a.file.as_path(), a.item.as_str(), a.seed, a.policy);
    // Work that can never be placed is only a warning here: saying why is explain's job.
    let l = load(Some(file))?;
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
        return Err(format!(
            "no task group, actor, placement group or service `{item}` in {}
  help: {hint}",
            file.display()
        )
        .into());
    }
    let overridden = policy.map(|p| loaded.with_policy(p.policy()));
    let spec = overridden.as_ref().unwrap_or(loaded);
    let inputs = traces(spec, &l.sources, Some(file))
        .and_then(|t| Ok((t, empirical(spec, &l.sources, file)?)));
    let (traces, empirical) = inputs?;
    super::common::gate(&l, spec, None, &traces, 1)?;
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
    super::common::within_budget()?;
    let mut h = header(&l, Some(file), seed);
    h.policy = policy.map(|p| p.word().to_string());
    let note = r.explain.is_none().then(|| {
        format!(
            "`{item}` was never placed during the run (its dependencies never finished, or the run ended first)"
        )
    });
    if a.json {
        let j = ExplainJson {
            schema_version: EXPLAIN_SCHEMA_VERSION,
            header: h,
            explanation: r.explain,
            note,
        };
        outln!(
            "{}",
            serde_json::to_string_pretty(&j).map_err(|e| e.to_string())?
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}", h.line());
    match (r.explain, note) {
        (Some(e), _) => out!("{}", e.render()),
        (None, Some(n)) => outln!("{n}"),
        (None, None) => {}
    }
    Ok(ExitCode::SUCCESS)
}
