//! Repeat the flow benchmarks and print the fastest of N runs (less noise than one
//! `orrery bench`): `cargo run --release --example flowbench -- 5 [fat|50k|100k|set0..set4]`. Timings
//! only: nothing here passes or fails.
fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    // Optional second argument: only "fat", "50k" or "100k".
    let only = std::env::args().nth(2).unwrap_or_default();
    let on = |name: &str| only.is_empty() || only == name;
    let mut best = [f64::INFINITY; 3];
    for _ in 0..reps {
        if on("fat") {
            let (_, fat) = orrery::bench::flow_network(1000, 10_000).expect("fat-tree");
            best[0] = best[0].min(fat);
        }
        for (k, n, name) in [(1, 50_000, "50k"), (2, 100_000, "100k")] {
            if !on(name) {
                continue;
            }
            let d = orrery::bench::dense_flows(n).expect("dense");
            best[k] = best[k].min(d.seconds);
        }
    }
    // "set0".."set4": one of bench's dense sets at 50k flows, best of `reps`.
    if let Some(k) = only
        .strip_prefix("set")
        .and_then(|k| k.parse::<usize>().ok())
    {
        let set = orrery::bench::DenseSet::ALL[k];
        let mut best = f64::INFINITY;
        for _ in 0..reps {
            let d = orrery::bench::dense_flows_in(50_000, &set).expect("dense");
            best = best.min(d.seconds);
            // FLOWBENCH_FINISH=FILE: every flow's finish time, one per line, to compare
            // solvers (issue 44 asks for 1e-9 relative).
            if let Ok(file) = std::env::var("FLOWBENCH_FINISH") {
                let text: String = d.finish.iter().map(|t| format!("{t:e}\n")).collect();
                std::fs::write(file, text).expect("write finish times");
            }
        }
        println!("best of {reps}: {} {best:.3} s", set.name());
        let d = orrery::bench::dense_flows_in(50_000, &set).expect("dense");
        println!("{:?}", d.stats);

        return;
    }
    let names = ["fat-tree 10k", "dense 50k", "dense 100k"];
    let shown: Vec<String> = names
        .iter()
        .zip(best)
        .filter(|(_, t)| t.is_finite())
        .map(|(n, t)| format!("{n} {t:.3} s"))
        .collect();
    println!("best of {reps}: {}", shown.join(", "));
}
