//! `orrery drill`.

use super::args::DrillArgs;
use super::common::{
    check_threads, header, load, parse_duration, parse_seeds, sound, within_budget, written_or_fail,
};
use super::error::Outcome;
use super::inputs::{empirical, traces};
use std::path::{Path, PathBuf};

pub(super) fn drill(a: DrillArgs) -> Outcome {
    let DrillArgs {
        files,
        seeds,
        threads,
        out,
        horizon,
        policies,
        no_plots,
        ..
    } = a;
    let seeds = seeds.as_deref().map(parse_seeds).transpose()?;
    let threads = check_threads(threads)?;
    let horizon = (horizon.as_deref().map(parse_duration).transpose())
        .map_err(|e| format!("--horizon: {e}"))?;
    // Load every scenario first: bad input anywhere stops before any simulation.
    let mut loaded = Vec::new();
    for file in &files {
        let l = load(Some(file))?;
        let spec = l.spec.as_ref().expect("no errors means a spec");
        let inputs = traces(spec, &l.sources, Some(file))
            .and_then(|t| Ok((t, empirical(spec, &l.sources, file)?)));
        let (traces, empirical) = inputs?;
        super::common::gate(
            &l,
            spec,
            horizon,
            &traces,
            super::common::runs_at_once(threads),
        )?;
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
        return Err(
            "the scenarios ask for different seeds; pass --seeds to run them side by side".into(),
        );
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
        for p in &policies {
            let label = if several_files {
                format!("{}@{}", stem(&file), p.word())
            } else {
                p.word().to_string()
            };
            reports.push((
                label,
                orrery::experiment::drill::run_drill(&spec.with_policy(p.policy()), &cfg),
            ));
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let dir_name = match files.as_slice() {
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
    within_budget()?;
    sound(&r.violations)?;
    let table = orrery::experiment::drill::table(&r);
    out!("{table}");
    outln!("{runs} runs in {wall:.2} s");
    let dir = out.unwrap_or_else(|| PathBuf::from("outputs").join(format!("{dir_name}-drill")));
    super::common::begin_outputs(&dir)?;
    let t1 = std::time::Instant::now();
    let written = orrery::experiment::drill::write(&dir, &h, &r)
        .map_err(|e| e.to_string())
        .and_then(|files| {
            orrery::outputs::drill::write(&dir, &h, &r, window, &table, &files, !no_plots)
                .map(|w| (files, w))
        });
    written_or_fail(&dir, written, t1)
}
