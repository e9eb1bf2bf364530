//! `orrery bench`.

use super::args::BenchArgs;
use super::error::Outcome;
use orrery::bench::baseline;
use std::process::ExitCode;

pub(super) fn bench(a: BenchArgs) -> Outcome {
    if let Some(r) = a.min_ratio
        && !(r.is_finite() && r > 0.0)
    {
        return Err(format!("--min-ratio {r}: must be a positive number").into());
    }
    let path = a
        .baseline
        .clone()
        .unwrap_or_else(|| baseline::DEFAULT_PATH.into());
    // Read (and check) the baseline before measuring anything: a broken file is exit 2 at once.
    let base = baseline::read(&path)?;
    let load = orrery::budget::load_average();
    let r = orrery::bench::run(&orrery::bench::BenchOptions {
        nodes: a.nodes,
        tasks: a.tasks,
        flows: a.flows,
        dense_flows: a.dense_flows,
        allreduce: a.allreduce,
        contention: a.contention,
        remote_inputs: a.remote_inputs,
        drill: a.drill,
        dense_sets: a.dense_sets,
        simgrid_style: a.simgrid_style,
    })?;
    out!("{}", r.text);
    out!("{}", baseline::table(&r.cases, base.as_ref(), &load));
    if a.record {
        let b = baseline::merge(base.clone(), &r.cases, &a.note, &load);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        orrery::atomic::write_atomic(&path, baseline::render(&b).as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        outln!("recorded {} cases in {}", r.cases.len(), path.display());
    }
    if let (Some(min), Some(b)) = (a.min_ratio, &base) {
        let slow = baseline::below(&r.cases, b, min);
        if !slow.is_empty() {
            for s in &slow {
                outln!("below --min-ratio: {s}");
            }
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}
