//! TEMP (not committed): the bench's N-node, M-task simulation alone, for profiling.
fn main() {
    let a: Vec<u64> = std::env::args()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    let text = orrery::bench::scenario_with(a[0], a[1], false);
    let run = orrery::bench::simulate_text("<bench>", &text).unwrap();
    println!(
        "simulate {:.3} s, {} events",
        run.sim_s, run.result.metrics.events
    );
}
