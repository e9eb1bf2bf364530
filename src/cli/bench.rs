//! `orrery bench`.

use std::process::ExitCode;

pub(super) fn bench(
    nodes: u64,
    tasks: u64,
    flows: usize,
    dense_flows: usize,
    allreduce: usize,
    contention: bool,
    remote_inputs: bool,
) -> ExitCode {
    match orrery::bench::run(
        nodes,
        tasks,
        flows,
        dense_flows,
        allreduce,
        contention,
        remote_inputs,
    ) {
        Ok(r) => {
            out!("{}", r.text);
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
