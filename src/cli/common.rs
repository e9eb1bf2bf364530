//! What several commands share: loading a scenario, the results header, `--seeds`,
//! `--horizon`, `--policy` and `--failures` parsing, the progress bar and the closing lines.

use super::error::{Error, Outcome};
use orrery::diag;
use orrery::parallel::THREADS_PER_CPU;
use orrery::scenario::{self, Loaded};
use std::path::Path;
use std::process::ExitCode;

pub(super) fn color() -> bool {
    super::out::terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// `--allow-infeasible` of the command being run (set once, by `super::main`, before it runs):
/// every scenario the command loads is loaded with it.
static ALLOW_INFEASIBLE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub(super) fn set_allow_infeasible(allow: bool) {
    ALLOW_INFEASIBLE.store(allow, std::sync::atomic::Ordering::Relaxed);
}

/// Load a scenario and print its diagnostics; an error (after printing them) when it has
/// errors.
pub(super) fn load(file: Option<&Path>) -> Result<Loaded, Error> {
    let opts = scenario::LoadOptions {
        allow_infeasible: ALLOW_INFEASIBLE.load(std::sync::atomic::Ordering::Relaxed),
    };
    let loaded = match file {
        Some(p) => orrery::load_file_with(p, opts)?,
        None => orrery::load_str_with(orrery::DEFAULT_SCENARIO.0, orrery::DEFAULT_SCENARIO.1, opts),
    };
    if !loaded.diags.is_empty() {
        err!("{}", loaded.render(color()));
    }
    if loaded.has_errors() {
        let n = loaded.error_count();
        errln!(
            "error: {} has {n} error{}",
            file.map(|p| p.display().to_string())
                .unwrap_or_else(|| orrery::DEFAULT_SCENARIO.0.into()),
            if n == 1 { "" } else { "s" }
        );
        return Err(Error::Shown(2));
    }
    Ok(loaded)
}

pub(super) fn header(l: &Loaded, file: Option<&Path>, seed: u64) -> orrery::report::Header {
    orrery::report::Header {
        orrery: env!("CARGO_PKG_VERSION").to_string(),
        scenario: file
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| orrery::DEFAULT_SCENARIO.0.to_string()),
        scenario_hash: orrery::scenario_hash(&l.sources),
        seed,
        policy: None,
        failures: None,
        horizon: None,
        model_sources: l
            .spec
            .as_ref()
            .map(orrery::compute::model_sources)
            .unwrap_or_default(),
        network_models: Vec::new(),
        timeline_limits: Vec::new(),
        tiers: l
            .spec
            .as_ref()
            .map(|s| {
                orrery::maturity::of_spec(s)
                    .iter()
                    .map(orrery::maturity::Maturity::line)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// `--failures NAME`: a `failures` block the scenario names (else exit 2, naming them).
pub(super) fn failure_block(
    spec: &orrery::scenario::Spec,
    name: Option<&str>,
) -> Result<Option<String>, String> {
    let Some(name) = name else { return Ok(None) };
    let names: Vec<String> = orrery::experiment::drill::variants(spec)
        .into_iter()
        .flatten()
        .collect();
    if names.iter().any(|n| n == name) {
        return Ok(Some(name.to_string()));
    }
    Err(if names.is_empty() {
        format!("--failures {name}: the scenario has no named `failures` block")
    } else {
        let hint = diag::did_you_mean(name, names.iter().map(String::as_str))
            .map(|h| format!("; {h}"))
            .unwrap_or_default();
        format!(
            "--failures {name}: no `failures {name}` block (the scenario names {}){hint}",
            names.join(", ")
        )
    })
}

/// `12 h` → (`12`, `h`): the leading number (underscores dropped) and the unit after it.
fn number_and_unit(s: &str) -> (String, &str) {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    (t[..split].replace('_', ""), t[split..].trim())
}

/// A duration as the language writes it (`12 h`, `90min`, `1.5 d`), in nanoseconds.
pub(super) fn parse_duration(s: &str) -> Result<u64, String> {
    let (num, unit) = number_and_unit(s);
    let bad = || format!("expected a duration such as `12 h` or `90 min`, found `{s}`");
    let x: f64 = num.parse().map_err(|_| bad())?;
    match orrery::units::lookup(unit) {
        Some((orrery::units::Kind::Time, f)) if x.is_finite() && x > 0.0 && x * f < 1.8e19 => {
            Ok((x * f).round() as u64)
        }
        _ => Err(bad()),
    }
}

/// Broken invariants of any run end the command with exit 1 before anything is written, as
/// `run` does: a figure from a run that broke them cannot be trusted. At most 20 are listed.
pub(super) fn sound(violations: &[String]) -> Result<(), Error> {
    if violations.is_empty() {
        return Ok(());
    }
    errln!(
        "internal error: {} broken invariant{} (a bug in orrery; please report it with this scenario):",
        violations.len(),
        if violations.len() == 1 { "" } else { "s" }
    );
    for v in violations.iter().take(20) {
        errln!("  {v}");
    }
    if violations.len() > 20 {
        errln!("  ... and {} more", violations.len() - 20);
    }
    Err(Error::Shown(1))
}

/// `--threads` of every command: 1 to [`THREADS_PER_CPU`] × the CPUs here; absent, one per
/// CPU (0 to the pool, which `orrery::parallel` sizes whatever `RAYON_NUM_THREADS` says).
pub(super) fn check_threads(t: Option<usize>) -> Result<usize, String> {
    let cpus = orrery::parallel::cpus();
    let max = orrery::parallel::max_threads();
    match t {
        None => Ok(0),
        Some(0) => Err("--threads must be at least 1".into()),
        Some(n) if n > max => Err(format!(
            "--threads {n}: at most {max} ({THREADS_PER_CPU} per CPU, {cpus} CPU{} here)",
            if cpus == 1 { "" } else { "s" }
        )),
        Some(n) => Ok(n),
    }
}

/// `--seeds` of every command: `N` is seeds 1..N (N of them), `N..M` is N to M inclusive
/// (`3..3` is seed 3 alone), as an experiment's `seeds` reads.
pub(super) fn parse_seeds(s: &str) -> Result<Vec<u64>, String> {
    let bad = || format!("--seeds: expected `N` (seeds 1..N) or `N..M`, found `{s}`");
    let (lo, hi) = match s.split_once("..") {
        Some((a, b)) => (a.trim(), b.trim()),
        None => ("1", s.trim()),
    };
    let lo: u64 = lo.parse().map_err(|_| bad())?;
    let hi: u64 = hi.parse().map_err(|_| bad())?;
    if !s.contains("..") && hi == 0 {
        return Err("--seeds must be at least 1".into());
    }
    if hi < lo {
        return Err(bad());
    }
    if hi - lo >= orrery::scenario::experiment::MAX_SEEDS {
        return Err(format!(
            "--seeds: at most {} seeds",
            orrery::scenario::experiment::MAX_SEEDS
        ));
    }
    Ok((lo..=hi).collect())
}

pub(super) fn progress_bar(len: u64) -> Option<indicatif::ProgressBar> {
    super::out::terminal().then(|| {
        let bar = indicatif::ProgressBar::new(len);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} runs · {elapsed} (eta {eta})",
        ) {
            bar.set_style(style);
        }
        bar
    })
}

pub(super) fn file_stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into())
}

/// Takes away `dir`'s completion marker (creating the folder if missing) before a command
/// writes its first file there ([`orrery::atomic::begin`]), or fails with exit 2 naming why.
pub(super) fn begin_outputs(dir: &Path) -> Result<(), Error> {
    orrery::atomic::begin(dir)
        .map_err(|e| Error::Input(format!("cannot write results to {}: {e}", dir.display())))
}

/// Reports a command's written data files and its plots and report, or fails with exit 2.
pub(super) fn written_or_fail(
    dir: &Path,
    written: Result<(Vec<String>, orrery::outputs::Written), String>,
    t1: std::time::Instant,
) -> Outcome {
    let (files, w) =
        written.map_err(|e| format!("cannot write results to {}: {e}", dir.display()))?;
    let all: Vec<String> = files.iter().chain(&w.files).cloned().collect();
    orrery::atomic::own_folder(dir, &all)
        .map_err(|e| format!("cannot tidy {}: {e}", dir.display()))?;
    outln!("wrote {} in {}", files.join(", "), dir.display());
    outputs_done(&w, t1);
    Ok(ExitCode::SUCCESS)
}

/// Prints what the outputs step wrote, its notes and its time.
pub(super) fn outputs_done(w: &orrery::outputs::Written, t1: std::time::Instant) {
    for n in &w.notes {
        errln!("note: {n}");
    }
    outln!(
        "plots and report: {} ({:.2} s)",
        w.files.join(", "),
        t1.elapsed().as_secs_f64()
    );
}

/// The limits of the command being run (set once by `super::main` from `--max-events` and
/// `--max-memory`, before it runs).
static LIMITS: std::sync::Mutex<Option<orrery::budget::Limits>> = std::sync::Mutex::new(None);

fn set_limits(l: orrery::budget::Limits) {
    *LIMITS.lock().unwrap_or_else(|e| e.into_inner()) = Some(l);
    orrery::budget::set(Some(l));
}

/// Sets the command's limits from its budget flags, or none for a command without them. Either
/// way an earlier command's trip is cleared: in one process (Python's), a run stopped by a
/// limit must not keep a later command from writing its files. A bad flag is exit 2.
pub(super) fn start_budget(b: Option<&super::args::BudgetArgs>) -> Result<(), Error> {
    match b.map(parse_budget) {
        Some(l) => set_limits(l?),
        None => {
            *LIMITS.lock().unwrap_or_else(|e| e.into_inner()) = None;
            orrery::budget::set(None);
        }
    }
    Ok(())
}

pub(super) fn limits() -> orrery::budget::Limits {
    LIMITS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .unwrap_or_default()
}

/// `--max-events N` (1 to 10^15: `500000000`, `5e8`, `500_000_000`) and `--max-memory BYTES`
/// (16 MiB to 64 TiB, as the language writes sizes: `8 GiB`).
pub(super) fn parse_budget(b: &super::args::BudgetArgs) -> Result<orrery::budget::Limits, String> {
    let mut l = orrery::budget::Limits::default();
    if let Some(s) = &b.max_events {
        let x: f64 = s.trim().replace('_', "").parse().map_err(|_| {
            format!("--max-events: expected a count such as 500000000 or 5e8, found `{s}`")
        })?;
        if !(1.0..=1e15).contains(&x) || x.fract() != 0.0 {
            return Err(format!(
                "--max-events {s}: must be a whole number from 1 to 10^15"
            ));
        }
        l.max_events = x as u64;
    }
    if let Some(s) = &b.max_memory {
        let (num, unit) = number_and_unit(s);
        let bad =
            || format!("--max-memory: expected a size such as `8 GiB` or `512 MiB`, found `{s}`");
        let x: f64 = num.parse().map_err(|_| bad())?;
        let bytes = match orrery::units::lookup(unit) {
            Some((orrery::units::Kind::Bytes, f)) if x.is_finite() => x * f,
            _ => return Err(bad()),
        };
        if !((16u64 << 20) as f64..=(64u64 << 40) as f64).contains(&bytes) {
            return Err(format!("--max-memory {s}: must be from 16 MiB to 64 TiB"));
        }
        l.max_memory = bytes as u64;
    }
    Ok(l)
}

/// Refuses, located and with exit 2, a scenario whose work or memory lower bounds
/// (`orrery::sim::estimate`) exceed the limits, `at_once` runs sharing the memory; else the
/// estimate.
pub(super) fn gate(
    l: &Loaded,
    spec: &orrery::scenario::Spec,
    horizon: Option<u64>,
    traces: &std::collections::BTreeMap<String, orrery::scenario::arrivals::Trace>,
    at_once: usize,
) -> Result<orrery::sim::estimate::Estimate, Error> {
    let window = orrery::sim::window(spec, horizon).seconds;
    let e = orrery::sim::estimate::estimate(spec, window, traces);
    let fallback = orrery::diag::Span::new(l.root, 0, 0);
    match e.refusal(limits(), at_once, fallback) {
        Some(d) => {
            err!("{}", orrery::diag::render(&l.sources, &[d], color()));
            Err(Error::Shown(2))
        }
        None => Ok(e),
    }
}

/// Runs at once with `threads` worker threads (0: one per CPU).
pub(super) fn runs_at_once(threads: usize) -> usize {
    if threads > 0 {
        threads
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// After a command's runs: the budget a run passed, if one did (exit 2, nothing written).
pub(super) fn within_budget() -> Result<(), Error> {
    orrery::budget::tripped().map_or(Ok(()), |why| Err(Error::Input(why)))
}
