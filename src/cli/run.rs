//! `orrery run`.

use super::args::RunArgs;
use super::common::{failure_block, header, load, parse_duration, written_or_fail};
use super::error::Outcome;
use super::inputs::{empirical, traces};
use std::path::PathBuf;

pub(super) fn run(a: RunArgs) -> Outcome {
    let RunArgs {
        file,
        seed,
        out,
        policy,
        failures,
        horizon,
        trace,
        no_plots,
        format,
        ..
    } = a;
    let (file, format) = (file.as_deref(), format.format());
    let l = load(file)?;
    let failure_block = failure_block(
        l.spec.as_ref().expect("no errors means a spec"),
        failures.as_deref(),
    )?;
    let horizon_ns = (horizon.as_deref())
        .map(|h| parse_duration(h).map_err(|e| format!("--horizon: {e}")))
        .transpose()?;
    let overridden = policy.map(|p| {
        l.spec
            .as_ref()
            .expect("no errors means a spec")
            .with_policy(p.policy())
    });
    let spec = overridden
        .as_ref()
        .or(l.spec.as_ref())
        .expect("no errors means a spec");
    let mut h = header(&l, file, seed);
    h.policy = policy.map(|p| p.word().to_string());
    h.failures = failure_block.clone();
    h.horizon = horizon;
    outln!("{}", h.line());
    let inputs = traces(spec, &l.sources, file).and_then(|t| match file {
        Some(f) => Ok((t, empirical(spec, &l.sources, f)?)),
        None => Ok((t, Default::default())),
    });
    let (traces, empirical) = inputs?;
    super::common::gate(&l, spec, horizon_ns, &traces, 1)?;
    let t0 = std::time::Instant::now();
    // On a terminal, a long run shows how far it has got (events, simulated time).
    let progress = super::out::terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:40} {msg} · {elapsed}") {
            bar.set_style(style);
        }
        bar
    });
    let r = orrery::sim::simulate(
        spec,
        &orrery::sim::SimConfig {
            seed,
            traces,
            empirical,
            timeline: true,
            failure_block,
            horizon: horizon_ns,
            progress: progress.clone(),
            ..Default::default()
        },
    );
    if let Some(bar) = &progress {
        bar.finish_and_clear();
    }
    super::common::within_budget()?;
    super::common::sound(&r.violations)?;
    let wall = t0.elapsed().as_secs_f64();
    h.model_sources = r.model_sources.clone();
    // How data movement was priced is known only after the run (it depends on placement).
    h.network_models = r.network_models.iter().map(|m| m.to_string()).collect();
    for m in &h.network_models {
        outln!("network model: {m}");
    }
    h.timeline_limits = r.timeline.limits();
    for m in &h.timeline_limits {
        outln!("timeline: {m}");
    }
    out!("{}", orrery::report::table(&r.metrics));
    outln!(
        "simulated in {wall:.3} s ({} events, {:.0} events/s)",
        r.metrics.events,
        r.metrics.events as f64 / wall.max(1e-9)
    );
    let stem = h
        .scenario
        .rsplit('/')
        .next()
        .unwrap_or("run")
        .trim_end_matches(".orr")
        .to_string();
    let dir = out.unwrap_or_else(|| PathBuf::from("outputs").join(stem));
    super::common::begin_outputs(&dir)?;
    let written = orrery::report::write(&dir, &h, &r.metrics, format).and_then(|mut files| {
        if trace {
            let t = orrery::trace::perfetto(&r.timeline, &h.line());
            orrery::atomic::write_atomic(&dir.join("trace.json"), t.as_bytes())?;
            files.push("trace.json".into());
        }
        Ok(files)
    });
    let t1 = std::time::Instant::now();
    let written = written.map_err(|e| e.to_string()).and_then(|files| {
        orrery::outputs::run::write(&dir, &h, &r, &files, !no_plots, format).map(|w| (files, w))
    });
    written_or_fail(&dir, written, t1)
}
