//! `orrery collectives`.

use super::args::CollectivesArgs;
use super::common::load;
use super::error::Outcome;
use std::process::ExitCode;

pub(super) fn collectives(a: CollectivesArgs) -> Outcome {
    use orrery::experiment::collectives as ec;
    let file = a.file.as_path();
    let l = load(Some(file))?;
    let spec = l.spec.as_ref().expect("no errors means a spec");
    let sizes = ec::parse_sizes(&a.sizes).map_err(|e| format!("--sizes: {e}"))?;
    let sel = match a.ranks {
        Some(s) => s,
        None => ec::default_ranks(spec)?,
    };
    let (ranks, policy) = ec::place_ranks(spec, &sel).map_err(|e| format!("--ranks: {e}"))?;
    let t = ec::table(spec, a.op, a.algo, a.proto, ranks, policy, &sizes)?;
    if a.csv {
        out!("{}", t.csv());
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "orrery {} · scenario {} · hash {}",
        env!("CARGO_PKG_VERSION"),
        file.display(),
        orrery::scenario_hash(&l.sources)
    );
    out!("{t}");
    Ok(ExitCode::SUCCESS)
}
