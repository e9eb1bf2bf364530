//! Repeat the flow benchmarks and print the fastest of N runs (less noise than one
//! `orrery bench`):
//! `cargo run --release --example flowbench -- 5 [fat|50k|100k|set0..set4|lightN]`.
//! Timings only: nothing here passes or fails.
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
    // "lightN": bench's fat-tree with N flows, warm (the links and flows built once, the
    // solver run `reps` times), and what making and dropping an empty FlowNet over its
    // 84,256 links costs alone (issue 44: light loads).
    if let Some(n) = only
        .strip_prefix("light")
        .and_then(|n| n.parse::<usize>().ok())
    {
        light(n, reps);
        return;
    }
    // "set0".."set4": one of bench's dense sets at 50k flows, best of `reps`.
    if let Some(k) = only
        .strip_prefix("set")
        .and_then(|k| k.parse::<usize>().ok())
    {
        let set = orrery::bench::DenseSet::ALL[k];
        let mut best = f64::INFINITY;
        let mut last = None;
        for _ in 0..reps {
            let d = orrery::bench::dense_flows_in(50_000, &set).expect("dense");
            best = best.min(d.seconds);
            last = Some(d);
        }
        println!("best of {reps}: {} {best:.3} s", set.name());
        if let Some(d) = last {
            println!("{:?}", d.stats);
            // FLOWBENCH_FINISH=FILE: every flow's finish time, one per line, to compare
            // solvers (issue 44 asks for 1e-9 relative).
            if let Ok(file) = std::env::var("FLOWBENCH_FINISH") {
                let text: String = d.finish.iter().map(|t| format!("{t:e}\n")).collect();
                std::fs::write(file, text).expect("write finish times");
            }
        }
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

fn light(n: usize, reps: usize) {
    use orrery::network::drive::Step;
    let (cap, batch) = orrery::bench::fat_tree_flows(1000, n).expect("fat-tree");
    let (mut best, mut empty) = (f64::INFINITY, f64::INFINITY);
    let mut finish = Vec::with_capacity(n);
    for _ in 0..reps {
        let b = batch.clone();
        finish.clear();
        let t0 = std::time::Instant::now();
        let mut net = orrery::network::FlowNet::new(cap.clone());
        net.add_batch(b);
        let mut now = 0.0;
        while let Step::Finished(f) = net.step(&mut now, None) {
            net.remove(f);
            finish.push((f, now));
        }
        drop(net);
        best = best.min(t0.elapsed().as_secs_f64());
        let t0 = std::time::Instant::now();
        drop(std::hint::black_box(orrery::network::FlowNet::new(
            cap.clone(),
        )));
        empty = empty.min(t0.elapsed().as_secs_f64());
    }
    println!(
        "best of {reps}: {n} flows on {} links {best:.5} s warm; an empty FlowNet made and dropped {empty:.5} s",
        cap.len()
    );
    // FLOWBENCH_FINISH=FILE: each flow and its finish time, in the order they finish.
    if let Ok(file) = std::env::var("FLOWBENCH_FINISH") {
        let text: String = finish
            .iter()
            .map(|(f, t)| format!("{f:?} {t:e}\n"))
            .collect();
        std::fs::write(file, text).expect("write finish times");
    }
}
