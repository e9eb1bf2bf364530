//! Orrery's prediction of one row, through the code paths the commands use.

use super::Case;
use crate::experiment::collectives as coll;
use crate::scenario::Spec;
use crate::sim::{SimConfig, simulate};

/// The predicted figure, in the row's metric, and how it was priced.
pub fn predict(case: &Case) -> Result<(f64, String), String> {
    match case {
        Case::Collective {
            node,
            ranks,
            op,
            bytes,
        } => {
            let nodes: usize = ranks
                .split_once('x')
                .and_then(|(n, _)| n.trim().parse().ok())
                .ok_or_else(|| format!("ranks `{ranks}` is not NODESxDEVICES"))?;
            // One rack of the catalog node on a non-blocking fat tree (nccl-tests' machines:
            // one node, or nodes under one rail-optimised non-blocking fabric).
            let text = format!(
                "cluster accuracy {{\n  rack r0 {{\n    node {node} x {nodes}\n  }}\n  fabric fat_tree\n}}\n"
            );
            let spec = load(&text)?;
            let (placed, policy) = coll::place_ranks(&spec, ranks)?;
            let t = coll::table(&spec, *op, None, None, placed, policy, &[*bytes])?;
            let r = t.rows.first().ok_or("no row priced")?;
            Ok((
                r.result.busbw / 1e9,
                format!("{} {}", r.algorithm.name(), r.protocol.name()),
            ))
        }
        Case::Training { scenario } => {
            let spec = load(scenario)?;
            let r = simulate(&spec, &SimConfig::default());
            if !r.violations.is_empty() {
                return Err(format!("the run broke an invariant: {:?}", r.violations));
            }
            let t = r.metrics.training.first().ok_or("the job did not run")?;
            if t.steps_done == 0 {
                return Err("the job finished no iteration".into());
            }
            Ok((t.step_time, "simulated".to_string()))
        }
        Case::Serving {
            scenario,
            engine,
            trtllm_bench,
        } => {
            let mut line = engine.clone();
            if *trtllm_bench {
                let first = load(&scenario.replace("{ENGINE}", engine))?;
                line = format!("{engine} {}", super::harness::trtllm_bench_words(&first)?);
            }
            let spec = load(&scenario.replace("{ENGINE}", &line))?;
            let r = simulate(&spec, &SimConfig::default());
            if !r.violations.is_empty() {
                return Err(format!("the run broke an invariant: {:?}", r.violations));
            }
            let s = r
                .metrics
                .llm_services
                .first()
                .ok_or("the service did not run")?;
            if s.finished == 0 || s.last_finish_s <= 0.0 {
                return Err("no request finished".into());
            }
            Ok((
                s.output_tokens as f64 / s.last_finish_s,
                format!("simulated, {} requests", s.finished),
            ))
        }
        Case::Queueing {
            exponential,
            servers,
            arrivals_per_s,
            service_s,
            horizon_s,
            seeds,
        } => {
            let text = format!(
                "node box {{\n  cpu sockets 1, cores 8\n  memory 64 GiB\n}}\ncluster c {{\n  node box x {servers}\n}}\nworkload w {{\n  service s {{\n    replicas {servers}\n    resources {{ CPU: 1 }}\n    arrival poisson {arrivals_per_s} /s\n    service_time {} ms{}\n  }}\n}}\nexperiment e {{\n  horizon {horizon_s} s\n}}\n",
                service_s * 1000.0,
                if *exponential { " exponential" } else { "" }
            );
            let spec = load(&text)?;
            let mut sum = 0.0;
            for seed in 1..=u64::from(*seeds) {
                let r = simulate(
                    &spec,
                    &SimConfig {
                        seed,
                        ..Default::default()
                    },
                );
                let s = r
                    .metrics
                    .services
                    .first()
                    .ok_or("the service did not run")?;
                sum += s.waiting.mean;
            }
            Ok((
                sum / f64::from(*seeds) * 1000.0,
                format!("simulated, {seeds} seeds x {horizon_s} s"),
            ))
        }
    }
}

fn load(text: &str) -> Result<Spec, String> {
    let l = crate::load_str("accuracy.orr", text);
    if l.has_errors() {
        return Err(l.render(false));
    }
    l.spec
        .ok_or_else(|| "the scenario did not load".to_string())
}
