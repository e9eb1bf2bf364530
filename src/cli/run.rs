//! `orrery run`.

use super::common::{failure_block, header, load, parse_duration, policy_named, written_or_fail};
use super::inputs::{empirical, traces};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What `run` was told to change of the scenario's own choices.
pub(super) struct RunChoices<'a> {
    pub(super) policy: Option<&'a str>,
    pub(super) failures: Option<&'a str>,
    pub(super) horizon: Option<&'a str>,
    pub(super) format: orrery::report::Format,
}

pub(super) fn run(
    file: Option<&Path>,
    seed: u64,
    out: Option<PathBuf>,
    choices: RunChoices,
    trace: bool,
    plots: bool,
) -> ExitCode {
    let RunChoices {
        policy,
        failures,
        horizon,
        format,
    } = choices;
    let l = match load(file) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let chosen = failure_block(l.spec.as_ref().expect("no errors means a spec"), failures)
        .and_then(|f| {
            let h = horizon
                .map(|h| parse_duration(h).map_err(|e| format!("--horizon: {e}")))
                .transpose()?;
            Ok((f, h))
        });
    let (failure_block, horizon_ns) = match chosen {
        Ok(x) => x,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let overridden = policy.map(|p| {
        l.spec
            .as_ref()
            .expect("no errors means a spec")
            .with_policy(policy_named(p))
    });
    let spec = overridden
        .as_ref()
        .or(l.spec.as_ref())
        .expect("no errors means a spec");
    let mut h = header(&l, file, seed);
    h.policy = policy.map(str::to_string);
    h.failures = failure_block.clone();
    h.horizon = horizon.map(str::to_string);
    outln!("{}", h.line());
    let inputs = traces(spec, &l.sources, file).and_then(|t| match file {
        Some(f) => Ok((t, empirical(spec, &l.sources, f)?)),
        None => Ok((t, Default::default())),
    });
    let (traces, empirical) = match inputs {
        Ok(x) => x,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(c) = super::common::gate(&l, spec, horizon_ns, &traces, 1) {
        return c;
    }
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
    if let Some(c) = super::common::over_budget().or_else(|| super::common::broken(&r.violations)) {
        return c;
    }
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
    if let Err(c) = super::common::begin_outputs(&dir) {
        return c;
    }
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
        orrery::outputs::run::write(&dir, &h, &r, &files, plots, format).map(|w| (files, w))
    });
    written_or_fail(&dir, written, t1)
}
