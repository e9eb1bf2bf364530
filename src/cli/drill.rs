//! `orrery drill`.

use super::common::{
    broken, check_threads, header, load, parse_duration, parse_seeds, policy_named, written_or_fail,
};
use super::inputs::{empirical, traces};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(super) fn drill(
    files: &[PathBuf],
    seeds: Option<&str>,
    threads: Option<usize>,
    out: Option<PathBuf>,
    horizon: Option<&str>,
    policies: &[String],
    plots: bool,
) -> ExitCode {
    let seeds = match seeds.map(parse_seeds).transpose() {
        Ok(s) => s,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let threads = match check_threads(threads) {
        Ok(t) => t,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let horizon = match horizon.map(parse_duration).transpose() {
        Ok(h) => h,
        Err(e) => {
            errln!("error: --horizon: {e}");
            return ExitCode::from(2);
        }
    };
    // Load every scenario first: bad input anywhere stops before any simulation.
    let mut loaded = Vec::new();
    for file in files {
        let l = match load(Some(file)) {
            Ok(l) => l,
            Err(c) => return c,
        };
        let spec = l.spec.as_ref().expect("no errors means a spec");
        let inputs = traces(spec, &l.sources, Some(file))
            .and_then(|t| Ok((t, empirical(spec, &l.sources, file)?)));
        let (traces, empirical) = match inputs {
            Ok(x) => x,
            Err(e) => {
                errln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        if let Err(c) = super::common::gate(
            &l,
            spec,
            horizon,
            &traces,
            super::common::runs_at_once(threads),
        ) {
            return c;
        }
        let cfg = orrery::experiment::drill::DrillConfig {
            seeds: seeds.clone(),
            threads,
            horizon,
            traces,
            empirical,
            progress: None,
        };
        loaded.push((file.clone(), l, cfg));
    }
    let seed_lists: Vec<Vec<u64>> = loaded
        .iter()
        .map(|(_, l, cfg)| orrery::experiment::drill::seeds(l.spec.as_ref().expect("spec"), cfg))
        .collect();
    if seed_lists.windows(2).any(|w| w[0] != w[1]) {
        errln!(
            "error: the scenarios ask for different seeds; pass --seeds to run them side by side"
        );
        return ExitCode::from(2);
    }
    let seed_list = seed_lists[0].clone();
    let window = horizon
        .or_else(|| {
            let spec = loaded[0].1.spec.as_ref()?;
            spec.experiments.first()?.horizon.map(|d| d.0)
        })
        .map(|ns| ns as f64 / 1e9);
    let stem = |p: &Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "run".into())
    };
    let mut h = header(
        &loaded[0].1,
        Some(&loaded[0].0),
        seed_list.first().copied().unwrap_or(1),
    );
    if loaded.len() > 1 {
        h.scenario = loaded
            .iter()
            .map(|(f, _, _)| f.display().to_string())
            .collect::<Vec<_>>()
            .join(" vs ");
        h.scenario_hash = loaded
            .iter()
            .map(|(_, l, _)| orrery::scenario_hash(&l.sources))
            .collect::<Vec<_>>()
            .join("+");
    }
    outln!("{}", orrery::experiment::drill::header_line(&h, &seed_list));
    let per_policy = policies.len().max(1) as u64;
    let runs: u64 = per_policy
        * loaded
            .iter()
            .map(|(_, l, _)| {
                (seed_list.len()
                    * orrery::experiment::drill::runs_per_seed(l.spec.as_ref().expect("spec")))
                    as u64
            })
            .sum::<u64>();
    let bar = super::out::terminal().then(|| {
        let bar = indicatif::ProgressBar::new(runs);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} runs · {elapsed} (eta {eta})",
        ) {
            bar.set_style(style);
        }
        bar
    });
    let t0 = std::time::Instant::now();
    let mut reports = Vec::new();
    let several_files = loaded.len() > 1;
    for (file, l, mut cfg) in loaded {
        cfg.progress = bar.clone();
        let spec = l.spec.as_ref().expect("spec");
        if policies.is_empty() {
            reports.push((
                stem(&file),
                orrery::experiment::drill::run_drill(spec, &cfg),
            ));
        }
        for p in policies {
            let label = if several_files {
                format!("{}@{p}", stem(&file))
            } else {
                p.clone()
            };
            reports.push((
                label,
                orrery::experiment::drill::run_drill(&spec.with_policy(policy_named(p)), &cfg),
            ));
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let dir_name = match files {
        [one] => stem(one),
        _ => files
            .iter()
            .map(|f| stem(f))
            .collect::<Vec<_>>()
            .join("-vs-"),
    };
    let r = if reports.len() == 1 {
        reports.pop().expect("one").1
    } else {
        orrery::experiment::drill::merge(reports)
    };
    if let Some(c) = super::common::over_budget().or_else(|| broken(&r.violations)) {
        return c;
    }
    let table = orrery::experiment::drill::table(&r);
    out!("{table}");
    outln!("{runs} runs in {wall:.2} s");
    let dir = out.unwrap_or_else(|| PathBuf::from("outputs").join(format!("{dir_name}-drill")));
    if let Err(c) = super::common::begin_outputs(&dir) {
        return c;
    }
    let t1 = std::time::Instant::now();
    let written = orrery::experiment::drill::write(&dir, &h, &r)
        .map_err(|e| e.to_string())
        .and_then(|files| {
            orrery::outputs::drill::write(&dir, &h, &r, window, &table, &files, plots)
                .map(|w| (files, w))
        });
    written_or_fail(&dir, written, t1)
}
