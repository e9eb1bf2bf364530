//! `orrery bench` figure for collectives: a flat ring allreduce over thousands of GPUs.

use std::time::Instant;

use super::super::{FlowNet, Graph};
use super::{Algorithm, Op, Options, Rank, simulate};

/// Message of the benchmark allreduce: 1 GiB per rank, nccl-tests' usual largest size.
pub const BENCH_BYTES: f64 = (1u64 << 30) as f64;

/// Ring allreduce of [`BENCH_BYTES`] over the first `devices` GPUs (node-major) of a fat tree
/// of DGX H100 nodes in racks of 32, on an idle network. Returns (flow events, wall seconds of
/// the collective simulation, simulated seconds of the collective); building the graph is not
/// timed.
pub fn bench_allreduce(devices: usize) -> Result<(u64, f64, f64), String> {
    if devices == 0 {
        return Err("the allreduce needs at least one device".into());
    }
    let text = crate::bench::fat_tree_text(devices.div_ceil(8) as u64);
    let spec = crate::spec::load_str("<collective>", &text)
        .spec
        .ok_or("generated fabric is invalid")?;
    let graph = Graph::build(&spec);
    let net = FlowNet::new(graph.capacity.clone());
    let ranks: Vec<Rank> = (0..devices).map(|d| (d / 8, d % 8)).collect();
    let t0 = Instant::now();
    let r = simulate(
        &graph,
        &net,
        Op::AllReduce,
        Algorithm::Ring,
        &ranks,
        BENCH_BYTES,
        &Options::default(),
    )?;
    Ok((r.flow_events, t0.elapsed().as_secs_f64(), r.secs))
}
