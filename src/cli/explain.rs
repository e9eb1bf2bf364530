//! `orrery explain`.

use super::common::{header, load};
use super::inputs::traces;
use orrery::diag;
use std::path::Path;
use std::process::ExitCode;

pub(super) fn explain(file: &Path, item: &str, seed: u64) -> ExitCode {
    let l = match load(Some(file)) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let spec = l.spec.as_ref().expect("no errors means a spec");
    let known: Vec<String> = spec
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
        eprintln!(
            "error: no task group, actor, placement group or service `{item}` in {}
  help: {hint}",
            file.display()
        );
        return ExitCode::from(2);
    }
    let traces = match traces(spec, Some(file)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let r = orrery::sim::simulate(
        spec,
        &orrery::sim::SimConfig {
            seed,
            explain: Some(item.to_string()),
            traces,
            ..Default::default()
        },
    );
    outln!("{}", header(&l, Some(file), seed).line());
    match r.explain {
        Some(e) => {
            out!("{e}");
            ExitCode::SUCCESS
        }
        None => {
            outln!(
                "`{item}` was never placed during the run (its dependencies never finished, or the run ended first)"
            );
            ExitCode::SUCCESS
        }
    }
}
