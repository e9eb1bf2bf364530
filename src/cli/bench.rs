//! `orrery bench`.

use super::args::BenchArgs;
use super::error::Outcome;
use std::process::ExitCode;

pub(super) fn bench(a: BenchArgs) -> Outcome {
    let r = orrery::bench::run(
        a.nodes,
        a.tasks,
        a.flows,
        a.dense_flows,
        a.allreduce,
        a.contention,
        a.remote_inputs,
    )?;
    out!("{}", r.text);
    Ok(ExitCode::SUCCESS)
}
