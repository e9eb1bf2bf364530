//! `orrery`: a thin command line over the library. Exit codes: 0 success, 1 a check that
//! found a difference (`fmt --check`), 2 bad input (unreadable file, invalid scenario, bad flag).

use clap::{Parser, Subcommand};
use orrery::diag::{self, SourceMap};
use orrery::spec::{self, Loaded};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Print to standard output like `print!`, but a reader that went away (`orrery catalog |
/// head`) ends the program quietly with status 141 (128 + SIGPIPE, what a shell reports for
/// tools killed by the signal), and any other write error (a full disk behind a redirect) ends
/// it with a message and status 1, instead of the panic of `print!`.
macro_rules! out {
    ($($t:tt)*) => { emit(format_args!($($t)*)) };
}
/// [`out!`] with a newline.
macro_rules! outln {
    () => { emit(format_args!("\n")) };
    ($($t:tt)*) => { emit(format_args!("{}\n", format_args!($($t)*))) };
}

fn emit(args: std::fmt::Arguments) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|()| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("error: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

#[derive(Parser)]
#[command(
    name = "orrery",
    version,
    about = "Declarative cluster simulator with real-device calibration"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario (the built-in quickstart when no file is given).
    Run {
        file: Option<PathBuf>,
        /// Seed for every random stream of the run.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where results go (default outputs/<scenario name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Place every workload with this policy (ray_default, spread, topology_aware).
        #[arg(long, value_parser = ["ray_default", "spread", "topology_aware"])]
        policy: Option<String>,
        /// Apply only the `failures NAME` block of that name (default: every block).
        #[arg(long, value_name = "NAME")]
        failures: Option<String>,
        /// End of the simulated window, as in a scenario (`12 h`, `90 min`; default: the first
        /// experiment's `horizon`, else the end of the work).
        #[arg(long)]
        horizon: Option<String>,
        /// Also write trace.json: what every device did when, as a Perfetto / Chrome trace
        /// (pid = node, tid = device).
        #[arg(long)]
        trace: bool,
        /// Write only the data files and report.md, no plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Run a failure drill over many seeds; several scenarios (recovery policies: checkpoint
    /// intervals, retry settings, spare nodes) run side by side.
    Drill {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Seeds: `N` for 1..N, `N..M` for N to M inclusive (default: the first experiment's
        /// `seeds`, else 1..10).
        #[arg(long)]
        seeds: Option<String>,
        /// Worker threads (default: one per CPU). Results do not depend on it.
        #[arg(long)]
        threads: Option<usize>,
        /// Where results go (default outputs/<scenario name>-drill).
        #[arg(long)]
        out: Option<PathBuf>,
        /// End of the simulated window, as in a scenario (`12 h`, `90 min`; default: the first
        /// experiment's `horizon`).
        #[arg(long)]
        horizon: Option<String>,
        /// Run every variant once per placement policy, side by side
        /// (e.g. `--policies ray_default,topology_aware`).
        #[arg(long, value_delimiter = ',', value_parser = ["ray_default", "spread", "topology_aware"])]
        policies: Vec<String>,
        /// Write only the data files and report.md, no plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Run an experiment's sweeps: every combination of swept values × every seed, in
    /// parallel; writes runs.csv, summary.csv and summary.json (or a shard file with --shard).
    Sweep {
        file: PathBuf,
        /// Experiment to run (default: the first).
        #[arg(long)]
        experiment: Option<String>,
        /// Seeds: `N` for 1..N, `N..M` for N to M inclusive (default: the experiment's).
        #[arg(long)]
        seeds: Option<String>,
        /// Worker threads (default: one per CPU). Results do not depend on it.
        #[arg(long)]
        threads: Option<usize>,
        /// `i/n`: run only runs whose number mod n = i and write shard-i-of-n.json.
        #[arg(long)]
        shard: Option<String>,
        /// Where results go (default outputs/<scenario>-<experiment>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write only the data files and report.md, no plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Merge the shard files of one sweep (folders or files) into the unsharded outputs.
    Merge {
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        /// Write only the data files and report.md, no plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Compare scenarios (the same workload on different hardware): makespan, throughput,
    /// cost, energy, perf/$ and perf/W over seeds.
    Compare {
        #[arg(required = true, num_args = 2..)]
        files: Vec<PathBuf>,
        /// Seeds: `N` for 1..N, `N..M` for N to M inclusive (default 1..5).
        #[arg(long)]
        seeds: Option<String>,
        /// Apply only each scenario's `failures NAME` block of that name (default: every block).
        #[arg(long, value_name = "NAME")]
        failures: Option<String>,
        /// Worker threads (default: one per CPU). Results do not depend on it.
        #[arg(long)]
        threads: Option<usize>,
        /// Where compare.csv and compare.json go (default outputs/compare-<A>-<B>...).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write only the data files and report.md, no plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Validate scenarios and print what each declares.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print scenarios in canonical form.
    Fmt {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Exit 1 if a file is not in canonical form; print nothing else.
        #[arg(long, conflicts_with = "write")]
        check: bool,
        /// Rewrite the files in place.
        #[arg(long)]
        write: bool,
    },
    /// Show every candidate node and its verdict for the first placement of an item.
    Explain {
        file: PathBuf,
        /// `workload.item`: a task group, actor, placement group or service.
        item: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Measure the event core and a large simulation (events/s, peak memory).
    Bench {
        #[arg(long, default_value_t = 10_000)]
        nodes: u64,
        #[arg(long, default_value_t = 1_000_000)]
        tasks: u64,
        /// Concurrent flows on a 1,000-node fat-tree for the flow-level network benchmark
        /// (0 skips it; every completion updates the max-min rates it disturbs).
        #[arg(long, default_value_t = 10_000)]
        flows: usize,
        /// Flows arriving over 2 s on a 1,024-host oversubscribed leaf-spine for the dense flow
        /// benchmark (0 skips it; the spine saturates, so each event disturbs many flows).
        #[arg(long, default_value_t = 0)]
        dense_flows: usize,
        /// GPUs of the ring allreduce benchmark (1 GiB per rank on a DGX H100 fat-tree; 0 skips).
        #[arg(long, default_value_t = 8_192)]
        allreduce: usize,
        /// Instead of the --nodes x --tasks simulation, the contention case: 64 training jobs
        /// of 128 GPUs on 8,192 GPUs (1,024 DGX H100, leaf-spine 2:1) with cross-node task
        /// traffic, all on one network, for one simulated hour.
        #[arg(long)]
        contention: bool,
        /// In the --nodes x --tasks simulation, the first two task groups write outputs that
        /// the last two read from other nodes (input fetches on the run's network).
        #[arg(long)]
        remote_inputs: bool,
    },
    /// Compare transports (object store, NVLink P2P, NCCL, Gloo, NIXL, RDMA, GPUDirect RDMA,
    /// host-staged RDMA, TCP) on the same transfers over a scenario's cluster.
    Transports {
        file: PathBuf,
        /// Transfer sizes (default 4KiB,64KiB,1MiB,64MiB,1GiB).
        #[arg(long)]
        sizes: Option<String>,
        /// Device pairs `SRC:DST,...` by name, e.g. `r0.n0.d0:r1.n0.d0` (default: one pair on
        /// a node and one across nodes).
        #[arg(long)]
        pairs: Option<String>,
        /// Print the comparison as JSON.
        #[arg(long)]
        json: bool,
        /// Also simulate the scenario's workload once per transport (task inputs moved by it)
        /// and compare makespans and task run times with the object store.
        #[arg(long)]
        workload: bool,
        /// Seed of the workload runs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where transports.csv, transports.json, the plots and report.md go (default
        /// outputs/<scenario>-transports).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write only the data files and report.md, no plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Measure this machine (memcpy, hand-off latency, memory- and compute-bound kernels; with
    /// `--features cuda` the GPUs) and write a calibration profile with its plot.
    Calibrate {
        /// `cpu` or `cuda:N` (CUDA needs a build with `--features cuda`).
        #[arg(long, default_value = "cpu", value_parser = parse_device)]
        device: orrery::calibrate::Device,
        /// Profile to write (default calibration/<device>_<host>.toml); the plot goes beside
        /// it as .svg.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Fewer sizes and repetitions: seconds instead of minutes.
        #[arg(long)]
        quick: bool,
        /// Seed of the bootstrap intervals.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Compare a node type declared in a scenario with the hardware detected here; exit 1 on a
    /// mismatch.
    Validate {
        file: PathBuf,
        /// The node type (declared in the scenario or the built-in catalog).
        #[arg(long)]
        node: String,
    },
    /// List the built-in catalog of accelerators, NICs and node types.
    Catalog {
        /// Print the catalog as JSON.
        #[arg(long, conflicts_with = "source")]
        json: bool,
        /// Print the catalog's source text (it is written in the scenario language).
        #[arg(long)]
        source: bool,
    },
}

fn color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            file,
            seed,
            out,
            policy,
            failures,
            horizon,
            trace,
            no_plots,
        } => run(
            file.as_deref(),
            seed,
            out,
            RunChoices {
                policy: policy.as_deref(),
                failures: failures.as_deref(),
                horizon: horizon.as_deref(),
            },
            trace,
            !no_plots,
        ),
        Command::Drill {
            files,
            seeds,
            threads,
            out,
            horizon,
            policies,
            no_plots,
        } => drill(
            &files,
            seeds.as_deref(),
            threads,
            out,
            horizon.as_deref(),
            &policies,
            !no_plots,
        ),
        Command::Sweep {
            file,
            experiment,
            seeds,
            threads,
            shard,
            out,
            no_plots,
        } => sweep(
            &file,
            experiment,
            seeds.as_deref(),
            threads,
            shard.as_deref(),
            out,
            !no_plots,
        ),
        Command::Merge {
            shards,
            out,
            no_plots,
        } => merge(&shards, &out, !no_plots),
        Command::Compare {
            files,
            seeds,
            failures,
            threads,
            out,
            no_plots,
        } => compare(
            &files,
            seeds.as_deref(),
            failures.as_deref(),
            threads,
            out,
            !no_plots,
        ),
        Command::Check { files, json } => check(&files, json),
        Command::Fmt {
            files,
            check,
            write,
        } => fmt(&files, check, write),
        Command::Catalog { json, source } => catalog(json, source),
        Command::Transports {
            file,
            sizes,
            pairs,
            json,
            workload,
            seed,
            out,
            no_plots,
        } => transports(
            &file,
            sizes.as_deref(),
            pairs.as_deref(),
            json,
            workload.then_some(seed),
            out,
            !no_plots,
        ),
        Command::Calibrate {
            device,
            out,
            quick,
            seed,
        } => calibrate(device, out, quick, seed),
        Command::Validate { file, node } => validate(&file, &node),
        Command::Explain { file, item, seed } => explain(&file, &item, seed),
        Command::Bench {
            nodes,
            tasks,
            flows,
            dense_flows,
            allreduce,
            contention,
            remote_inputs,
        } => match orrery::bench::run(
            nodes,
            tasks,
            flows,
            dense_flows,
            allreduce,
            contention,
            remote_inputs,
        ) {
            Ok(r) => {
                out!("{}", r.text);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
    }
}

/// Load a scenario and print its diagnostics; `None` (after printing) when it has errors.
fn load(file: Option<&Path>) -> Result<Loaded, ExitCode> {
    let loaded = match file {
        Some(p) => spec::load_file(p).map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(2)
        })?,
        None => spec::load_str(orrery::DEFAULT_SCENARIO.0, orrery::DEFAULT_SCENARIO.1),
    };
    if !loaded.diags.is_empty() {
        eprint!("{}", loaded.render(color()));
    }
    if loaded.has_errors() {
        let n = loaded.errors().count();
        eprintln!(
            "error: {} has {n} error{}",
            file.map(|p| p.display().to_string())
                .unwrap_or_else(|| orrery::DEFAULT_SCENARIO.0.into()),
            if n == 1 { "" } else { "s" }
        );
        return Err(ExitCode::from(2));
    }
    Ok(loaded)
}

fn check(files: &[PathBuf], json: bool) -> ExitCode {
    let mut code = ExitCode::SUCCESS;
    let mut out = Vec::new();
    for f in files {
        match load(Some(f)) {
            Ok(l) => {
                let s =
                    orrery::summary::summarize(l.spec.as_ref().expect("no errors means a spec"));
                if json {
                    out.push(serde_json::json!({ "file": f.display().to_string(), "hash": orrery::scenario_hash(&l.sources), "summary": s }));
                } else {
                    outln!(
                        "{}: ok (scenario hash {})",
                        f.display(),
                        orrery::scenario_hash(&l.sources)
                    );
                    out!("{s}");
                }
            }
            Err(c) => code = c,
        }
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    code
}

fn header(l: &Loaded, file: Option<&Path>, seed: u64) -> orrery::report::Header {
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
    }
}

/// A column of non-negative seconds (first field of each line; `#` comments and blank lines
/// skipped) from a file named in a scenario, relative to its folder and confined to it as
/// `include` is. Errors name file:line:column.
fn read_seconds(dir: &Path, name: &str, what: &str) -> Result<Vec<f64>, String> {
    let root = dir
        .canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", dir.display()))?;
    let path = dir.join(name);
    let canon = path
        .canonicalize()
        .map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?;
    if !canon.starts_with(&root) {
        return Err(format!(
            "{what} file `{name}` is outside the scenario's folder {}",
            root.display()
        ));
    }
    let text = std::fs::read_to_string(&canon)
        .map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?;
    let mut xs = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let field = line.split(',').next().unwrap_or("").trim();
        match field.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => xs.push(x),
            _ => {
                return Err(format!(
                    "{}:{}:1: expected non-negative seconds, found `{field}`",
                    path.display(),
                    k + 1
                ));
            }
        }
    }
    Ok(xs)
}

/// Arrival traces named by `arrival trace "FILE"` (one arrival time per line).
fn traces(
    spec: &orrery::spec::Spec,
    file: Option<&Path>,
) -> Result<std::collections::BTreeMap<String, Vec<f64>>, String> {
    let mut out = std::collections::BTreeMap::new();
    let dir = file
        .and_then(Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    for w in &spec.workloads {
        for s in &w.services {
            if let orrery::spec::workload::Arrival::Trace(name) = &s.arrival {
                out.insert(name.clone(), read_seconds(dir, name, "trace")?);
            }
        }
    }
    Ok(out)
}

fn policy_named(name: &str) -> orrery::spec::workload::Policy {
    use orrery::spec::workload::Policy;
    match name {
        "spread" => Policy::Spread,
        "topology_aware" => Policy::TopologyAware,
        _ => Policy::RayDefault,
    }
}

/// What `run` was told to change of the scenario's own choices.
struct RunChoices<'a> {
    policy: Option<&'a str>,
    failures: Option<&'a str>,
    horizon: Option<&'a str>,
}

/// `--failures NAME`: a `failures` block the scenario names (else exit 2, naming them).
fn failure_block(spec: &orrery::spec::Spec, name: Option<&str>) -> Result<Option<String>, String> {
    let Some(name) = name else { return Ok(None) };
    let names: Vec<String> = orrery::drill::variants(spec)
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

fn run(
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
            eprintln!("error: {e}");
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
    let inputs = traces(spec, file).and_then(|t| match file {
        Some(f) => Ok((t, empirical(spec, f)?)),
        None => Ok((t, Default::default())),
    });
    let (traces, empirical) = match inputs {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let t0 = std::time::Instant::now();
    let r = orrery::sim::simulate(
        spec,
        &orrery::sim::SimConfig {
            seed,
            traces,
            empirical,
            timeline: true,
            failure_block,
            horizon: horizon_ns,
            ..Default::default()
        },
    );
    if !r.violations.is_empty() {
        eprintln!(
            "internal error: the run broke its invariants (a bug in orrery; please report it with this scenario):"
        );
        for v in &r.violations {
            eprintln!("  {v}");
        }
        return ExitCode::from(1);
    }
    let wall = t0.elapsed().as_secs_f64();
    h.model_sources = r.model_sources.clone();
    // How data movement was priced is known only after the run (it depends on placement).
    h.network_models = r.network_models.iter().map(|m| m.to_string()).collect();
    for m in &h.network_models {
        outln!("network model: {m}");
    }
    out!("{}", orrery::report::table(&r.metrics));
    outln!(
        "simulated in {wall:.3} s ({:.2} M events/s)",
        r.metrics.events as f64 / wall.max(1e-9) / 1e6
    );
    let stem = h
        .scenario
        .rsplit('/')
        .next()
        .unwrap_or("run")
        .trim_end_matches(".orr")
        .to_string();
    let dir = out.unwrap_or_else(|| PathBuf::from("outputs").join(stem));
    let written = orrery::report::write(&dir, &h, &r.metrics).and_then(|mut files| {
        if trace {
            let t = orrery::trace::perfetto(&r.timeline, &h.line());
            orrery::atomic::write_atomic(&dir.join("trace.json"), t.as_bytes())?;
            files.push("trace.json".into());
        }
        Ok(files)
    });
    let t1 = std::time::Instant::now();
    let written = written.map_err(|e| e.to_string()).and_then(|files| {
        orrery::outputs::run::write(&dir, &h, &r, &files, plots).map(|w| (files, w))
    });
    written_or_fail(&dir, written, t1)
}

/// Samples of `empirical("FILE")` distributions (one duration per line).
fn empirical(
    spec: &orrery::spec::Spec,
    file: &Path,
) -> Result<std::collections::BTreeMap<String, Vec<f64>>, String> {
    use orrery::spec::failure::Distribution;
    let mut out = std::collections::BTreeMap::new();
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    for f in &spec.failures {
        for r in &f.random {
            for d in [&r.distribution, &r.repair_distribution] {
                if let Distribution::Empirical { path: name } = d
                    && !out.contains_key(name)
                {
                    out.insert(name.clone(), read_seconds(dir, name, "samples")?);
                }
            }
        }
    }
    Ok(out)
}

/// A duration as the language writes it (`12 h`, `90min`, `1.5 d`), in nanoseconds.
fn parse_duration(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = (t[..split].replace('_', ""), t[split..].trim());
    let bad = || format!("expected a duration such as `12 h` or `90 min`, found `{s}`");
    let x: f64 = num.parse().map_err(|_| bad())?;
    match orrery::units::lookup(unit) {
        Some((orrery::units::Kind::Time, f)) if x.is_finite() && x > 0.0 && x * f < 1.8e19 => {
            Ok((x * f).round() as u64)
        }
        _ => Err(bad()),
    }
}

fn drill(
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
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if threads == Some(0) {
        eprintln!("error: --threads must be at least 1");
        return ExitCode::from(2);
    }
    let horizon = match horizon.map(parse_duration).transpose() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: --horizon: {e}");
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
        let inputs = traces(spec, Some(file)).and_then(|t| Ok((t, empirical(spec, file)?)));
        let (traces, empirical) = match inputs {
            Ok(x) => x,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let cfg = orrery::drill::DrillConfig {
            seeds: seeds.clone(),
            threads: threads.unwrap_or(0),
            horizon,
            traces,
            empirical,
            progress: None,
        };
        loaded.push((file.clone(), l, cfg));
    }
    let seed_lists: Vec<Vec<u64>> = loaded
        .iter()
        .map(|(_, l, cfg)| orrery::drill::seeds(l.spec.as_ref().expect("spec"), cfg))
        .collect();
    if seed_lists.windows(2).any(|w| w[0] != w[1]) {
        eprintln!(
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
    outln!("{}", orrery::drill::header_line(&h, &seed_list));
    let per_policy = policies.len().max(1) as u64;
    let runs: u64 = per_policy
        * loaded
            .iter()
            .map(|(_, l, _)| {
                (seed_list.len() * orrery::drill::runs_per_seed(l.spec.as_ref().expect("spec")))
                    as u64
            })
            .sum::<u64>();
    let bar = std::io::stderr().is_terminal().then(|| {
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
            reports.push((stem(&file), orrery::drill::run_drill(spec, &cfg)));
        }
        for p in policies {
            let label = if several_files {
                format!("{}@{p}", stem(&file))
            } else {
                p.clone()
            };
            reports.push((
                label,
                orrery::drill::run_drill(&spec.with_policy(policy_named(p)), &cfg),
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
        orrery::drill::merge(reports)
    };
    let table = orrery::drill::table(&r);
    out!("{table}");
    outln!("{runs} runs in {wall:.2} s");
    let dir = out.unwrap_or_else(|| PathBuf::from("outputs").join(format!("{dir_name}-drill")));
    let t1 = std::time::Instant::now();
    let written = orrery::drill::write(&dir, &h, &r)
        .map_err(|e| e.to_string())
        .and_then(|files| {
            orrery::outputs::drill::write(&dir, &h, &r, window, &table, &files, plots)
                .map(|w| (files, w))
        });
    written_or_fail(&dir, written, t1)
}

fn explain(file: &Path, item: &str, seed: u64) -> ExitCode {
    let l = match load(Some(file)) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let spec = l.spec.as_ref().expect("no errors means a spec");
    let known: Vec<String> = spec
        .workloads
        .iter()
        .flat_map(|w| {
            w.tasks
                .iter()
                .map(|t| &t.name)
                .chain(w.actors.iter().map(|a| &a.name))
                .chain(w.placement_groups.iter().map(|p| &p.name))
                .chain(w.services.iter().map(|s| &s.name))
                .map(move |n| format!("{}.{n}", w.name))
        })
        .collect();
    if !known.iter().any(|k| k == item) {
        let hint = diag::did_you_mean(item, known.iter().map(String::as_str))
            .unwrap_or_else(|| format!("items: {}", known.join(", ")));
        eprintln!(
            "error: no task group, actor, placement group or service `{item}` in {}
  help: {hint}",
            file.display()
        );
        return ExitCode::from(2);
    }
    let traces = match traces(spec, Some(file)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let r = orrery::sim::simulate(
        spec,
        &orrery::sim::SimConfig {
            seed,
            explain: Some(item.to_string()),
            traces,
            ..Default::default()
        },
    );
    outln!("{}", header(&l, Some(file), seed).line());
    match r.explain {
        Some(e) => {
            out!("{e}");
            ExitCode::SUCCESS
        }
        None => {
            outln!(
                "`{item}` was never placed during the run (its dependencies never finished, or the run ended first)"
            );
            ExitCode::SUCCESS
        }
    }
}

fn fmt(files: &[PathBuf], check: bool, write: bool) -> ExitCode {
    let mut code = ExitCode::SUCCESS;
    for f in files {
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", f.display());
                code = ExitCode::from(2);
                continue;
            }
        };
        let mut map = SourceMap::new();
        let id = map.add(f.display().to_string(), text.clone());
        let (tree, diags) = orrery::syntax::parse(&text, id);
        if !diags.is_empty() {
            eprint!("{}", diag::render(&map, &diags, color()));
            code = ExitCode::from(2);
            continue;
        }
        let formatted = match orrery::syntax::fmt::format(&tree) {
            Ok(s) => s,
            Err(span) => {
                let d = diag::Diagnostic::error(span, "`fmt` would drop this comment")
                    .with_help("move comments out of lists, maps and continued lines, onto their own line above the statement");
                eprint!("{}", diag::render(&map, &[d], color()));
                code = ExitCode::from(2);
                continue;
            }
        };
        if check {
            if formatted != text {
                eprintln!("{} is not in canonical form", f.display());
                if code == ExitCode::SUCCESS {
                    code = ExitCode::from(1);
                }
            }
        } else if write {
            if formatted != text
                && let Err(e) = orrery::atomic::write_atomic(f, formatted.as_bytes())
            {
                eprintln!("error: cannot write {}: {e}", f.display());
                code = ExitCode::from(2);
            }
        } else {
            out!("{formatted}");
        }
    }
    code
}

fn transports(
    file: &Path,
    sizes: Option<&str>,
    pairs: Option<&str>,
    json: bool,
    workload: Option<u64>,
    out: Option<PathBuf>,
    plots: bool,
) -> ExitCode {
    use orrery::transport::compare as tc;
    let l = match load(Some(file)) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let spec = l.spec.as_ref().expect("no errors means a spec");
    let r = (|| {
        let sizes = match sizes {
            Some(s) => tc::parse_sizes(s)?,
            None => tc::DEFAULT_SIZES.to_vec(),
        };
        let pairs = match pairs {
            Some(p) => tc::parse_pairs(spec, p)?,
            None => Vec::new(),
        };
        tc::compare(spec, &sizes, &pairs)
    })();
    let w = workload.map(|seed| orrery::transport_workload::compare_workload(spec, seed));
    let dir = out.unwrap_or_else(|| {
        PathBuf::from("outputs").join(format!("{}-transports", file_stem(file)))
    });
    if let Ok(c) = &r {
        let mut printed = c.to_string();
        if let Some(w) = &w {
            printed.push_str(&format!("\n{w}"));
        }
        let head = [
            ("orrery", env!("CARGO_PKG_VERSION").to_string()),
            ("scenario", file.display().to_string()),
            ("scenario hash", orrery::scenario_hash(&l.sources)),
        ];
        let t1 = std::time::Instant::now();
        match orrery::outputs::transports::write(&dir, &head, c, w.as_ref(), &printed, plots) {
            // With --json stdout is the JSON alone.
            Ok(w) if json => {
                for n in &w.notes {
                    eprintln!("note: {n}");
                }
            }
            Ok(w) => {
                outln!("wrote {} in {}", w.files.join(", "), dir.display());
                outputs_done(&w, t1);
            }
            Err(e) => {
                eprintln!("error: cannot write results to {}: {e}", dir.display());
                return ExitCode::from(2);
            }
        }
    }
    match r {
        Ok(c) if json => {
            // Without --workload the transfer comparison alone, as before.
            let v = match w {
                Some(w) => serde_json::json!({ "transfers": c, "workload": w }),
                None => serde_json::json!(c),
            };
            outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Ok(c) => {
            out!("{c}");
            if let Some(w) = w {
                out!("\n{w}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn catalog(json: bool, source: bool) -> ExitCode {
    if source {
        for (name, text) in orrery::catalog::FILES {
            outln!("# ===== {name} =====");
            out!("{text}");
        }
        return ExitCode::SUCCESS;
    }
    let l = spec::load_str("<empty>", "");
    if l.has_errors() {
        eprint!("{}", l.render(color()));
        return ExitCode::from(2);
    }
    let s = l.spec.expect("no errors means a spec");
    if json {
        let v = serde_json::json!({ "accelerators": s.accelerators, "nics": s.nics, "node_types": s.node_types });
        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    out!("{}", orrery::catalog::table::render(&s));
    ExitCode::SUCCESS
}

fn parse_device(s: &str) -> Result<orrery::calibrate::Device, String> {
    s.parse()
}

fn calibrate(
    device: orrery::calibrate::Device,
    out: Option<PathBuf>,
    quick: bool,
    seed: u64,
) -> ExitCode {
    use orrery::calibrate;
    let mut o = calibrate::Options::new(device, quick, seed);
    o.command = std::iter::once("orrery".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ");
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(calibrate::steps(&o));
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {msg} · {elapsed}")
        {
            bar.set_style(style);
        }
        o.progress = Some(bar);
    }
    let result = calibrate::calibrate(&o);
    if let Some(bar) = &o.progress {
        bar.finish_and_clear();
    }
    let cal = match result {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let out = out.unwrap_or_else(|| {
        let host: String = cal
            .host
            .hostname
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        let dev = device.to_string().replace(':', "");
        PathBuf::from("calibration").join(format!("{dev}_{host}.toml"))
    });
    // Write first: a closed stdout must not lose a measurement.
    match calibrate::write(&cal, &out) {
        Ok(files) => {
            let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            out!("{}", cal.summary());
            outln!("wrote {}", names.join(", "));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn validate(file: &Path, node: &str) -> ExitCode {
    use orrery::calibrate::{detect, validate::Verdict};
    let l = match load(Some(file)) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let spec = l.spec.as_ref().expect("no errors means a spec");
    let Some(nt) = spec.node_types.get(node) else {
        let hint = diag::did_you_mean(node, spec.node_types.keys().map(String::as_str))
            .unwrap_or_else(|| {
                format!(
                    "node types: {}",
                    spec.node_types
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
        eprintln!(
            "error: no node type `{node}` in {} or the catalog\n  help: {hint}",
            file.display()
        );
        return ExitCode::from(2);
    };
    let host = detect::detect();
    let gpus = gpu_inventory();
    outln!(
        "node type `{node}` against {} ({}{})",
        host.hostname,
        host.cpu_model.as_deref().unwrap_or("unknown CPU"),
        match &gpus {
            Some(g) => format!(", {} GPU(s), driver {}", g.gpus.len(), g.driver),
            None => String::new(),
        }
    );
    let checks = orrery::calibrate::validate::compare(spec, nt, &host, gpus.as_ref());
    for c in &checks {
        outln!("{c}");
    }
    let bad = checks
        .iter()
        .filter(|c| c.verdict == Verdict::Mismatch)
        .count();
    if bad > 0 {
        outln!("{bad} mismatch{}", if bad == 1 { "" } else { "es" });
        ExitCode::from(1)
    } else {
        outln!("node type `{node}` agrees with this machine");
        ExitCode::SUCCESS
    }
}

#[cfg(feature = "cuda")]
fn gpu_inventory() -> Option<orrery::calibrate::detect::GpuInventory> {
    match orrery::calibrate::cuda::inventory() {
        Ok(inv) => Some(inv),
        Err(e) => {
            eprintln!("note: {e}; GPU names, memory and P2P are not checked");
            None
        }
    }
}

#[cfg(not(feature = "cuda"))]
fn gpu_inventory() -> Option<orrery::calibrate::detect::GpuInventory> {
    None
}

/// `--seeds` of every command: `N` is seeds 1..N (N of them), `N..M` is N to M inclusive
/// (`3..3` is seed 3 alone), as an experiment's `seeds` reads.
fn parse_seeds(s: &str) -> Result<Vec<u64>, String> {
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
    if hi - lo >= orrery::spec::experiment::MAX_SEEDS {
        return Err(format!(
            "--seeds: at most {} seeds",
            orrery::spec::experiment::MAX_SEEDS
        ));
    }
    Ok((lo..=hi).collect())
}

fn progress_bar(len: u64) -> Option<indicatif::ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(len);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} runs · {elapsed} (eta {eta})",
        ) {
            bar.set_style(style);
        }
        bar
    })
}

fn file_stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into())
}

fn sweep(
    file: &Path,
    experiment: Option<String>,
    seeds: Option<&str>,
    threads: Option<usize>,
    shard: Option<&str>,
    out: Option<PathBuf>,
    plots: bool,
) -> ExitCode {
    let fail = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    if threads == Some(0) {
        return fail("--threads must be at least 1".into());
    }
    let seeds = match seeds.map(parse_seeds).transpose() {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let shard = match shard
        .map(|s| {
            let bad = || format!("--shard: expected `i/n` with i < n, found `{s}`");
            let (i, n) = s.split_once('/').ok_or_else(bad)?;
            let (i, n): (usize, usize) = (
                i.trim().parse().map_err(|_| bad())?,
                n.trim().parse().map_err(|_| bad())?,
            );
            if n == 0 || i >= n {
                return Err(bad());
            }
            Ok((i, n))
        })
        .transpose()
    {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let l = match load(Some(file)) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let spec = l.spec.as_ref().expect("no errors means a spec");
    let (traces, empirical) =
        match traces(spec, Some(file)).and_then(|t| Ok((t, empirical(spec, file)?))) {
            Ok(x) => x,
            Err(e) => return fail(e),
        };
    let mut cfg = orrery::sweep::SweepConfig {
        experiment,
        seeds,
        threads: threads.unwrap_or(0),
        shard,
        traces,
        empirical,
        progress: None,
    };
    let plan = match orrery::sweep::plan(&l, &file.display().to_string(), &cfg) {
        Ok(p) => p,
        Err(orrery::sweep::PlanError::Message(m)) => return fail(m),
        Err(orrery::sweep::PlanError::Invalid(v)) => {
            eprint!("{}", v.render(color()));
            return fail(format!(
                "a sweep of {} makes an invalid scenario",
                file.display()
            ));
        }
    };
    let h = &plan.header;
    let runs = match shard {
        Some((i, n)) => (i..h.runs()).step_by(n).count(),
        None => h.runs(),
    };
    outln!(
        "orrery {} · scenario {} · hash {} · experiment {} · {} cells × seeds {} = {} runs{}",
        h.orrery,
        h.scenario,
        h.scenario_hash,
        h.experiment,
        h.cells.len(),
        h.seeds_label(),
        h.runs(),
        shard
            .map(|(i, n)| format!(" · shard {i}/{n}: {runs} runs"))
            .unwrap_or_default()
    );
    cfg.progress = progress_bar(runs as u64);
    let dir = out.unwrap_or_else(|| {
        PathBuf::from("outputs").join(format!("{}-{}", file_stem(file), h.experiment))
    });
    let t0 = std::time::Instant::now();
    let written = match shard {
        Some((i, n)) => {
            let rows = orrery::sweep::run(&plan, &cfg);
            let s = orrery::sweep::Shard {
                header: plan.header.clone(),
                shard: i,
                shards: n,
                runs: rows,
            };
            orrery::sweep::write_shard(&dir, &s).map(|f| vec![f])
        }
        None => {
            let r = orrery::sweep::run_sweep(&plan, &cfg);
            let table = sweep_table(&r);
            out!("{table}");
            eprintln!("simulated in {:.2} s", t0.elapsed().as_secs_f64());
            let t1 = std::time::Instant::now();
            let lines = experiment_plots(&l, &r.header.experiment);
            // Timeline and utilisation plots show one run: the first cell's first seed.
            let representative = (plots
                && lines
                    .iter()
                    .any(|p| p.kind == "timeline" || p.kind == "utilization"))
            .then(|| {
                plan.specs.first().map(|s| {
                    orrery::sim::simulate(
                        s,
                        &orrery::sim::SimConfig {
                            seed: r.header.seeds.first().copied().unwrap_or(1),
                            traces: cfg.traces.clone(),
                            empirical: cfg.empirical.clone(),
                            timeline: true,
                            ..Default::default()
                        },
                    )
                })
            })
            .flatten();
            let written = orrery::sweep::write(&dir, &r);
            return sweep_outputs(
                &dir,
                &r,
                written,
                &lines,
                representative.as_ref(),
                &table,
                plots,
                t1,
            );
        }
    };
    eprintln!("simulated in {:.2} s", t0.elapsed().as_secs_f64());
    match written {
        Ok(f) => {
            outln!("wrote {} in {}", f.join(", "), dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => fail(format!("cannot write results to {}: {e}", dir.display())),
    }
}

fn sweep_table(r: &orrery::sweep::SweepResult) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let h = &r.header;
    let _ = write!(out, "{}", h.params.join("  "));
    for m in &h.metrics {
        let _ = write!(out, "  {}", orrery::measure::column(m));
    }
    out.push('\n');
    for c in &r.cells {
        let vals: Vec<&str> = c.params.iter().map(|(_, v)| v.as_str()).collect();
        let _ = write!(out, "{}", vals.join("  "));
        for a in &c.metrics {
            let cell = match (a.mean, a.half_width()) {
                (Some(m), Some(hw)) => {
                    format!("{} ± {}", orrery::units::sig3(m), orrery::units::sig3(hw))
                }
                (Some(m), None) => orrery::units::sig3(m),
                _ => "-".into(),
            };
            let _ = write!(out, "  {cell}");
        }
        out.push('\n');
    }
    out
}

/// The `plot` lines of the named experiment of a loaded scenario.
fn experiment_plots(l: &Loaded, name: &str) -> Vec<orrery::spec::experiment::Plot> {
    l.spec
        .as_ref()
        .and_then(|s| s.experiments.iter().find(|e| e.name == name))
        .map(|e| e.plots.clone())
        .unwrap_or_default()
}

/// Plots and report.md of a whole sweep, after its data files.
#[allow(clippy::too_many_arguments)]
fn sweep_outputs(
    dir: &Path,
    r: &orrery::sweep::SweepResult,
    written: std::io::Result<Vec<String>>,
    lines: &[orrery::spec::experiment::Plot],
    representative: Option<&orrery::sim::RunResult>,
    table: &str,
    plots: bool,
    t1: std::time::Instant,
) -> ExitCode {
    let written = written.map_err(|e| e.to_string()).and_then(|files| {
        orrery::outputs::sweep::write(dir, r, lines, representative, table, &files, plots)
            .map(|w| (files, w))
    });
    written_or_fail(dir, written, t1)
}

/// Reports a command's written data files and its plots and report, or fails with exit 2.
fn written_or_fail(
    dir: &Path,
    written: Result<(Vec<String>, orrery::outputs::Written), String>,
    t1: std::time::Instant,
) -> ExitCode {
    match written {
        Ok((files, w)) => {
            outln!("wrote {} in {}", files.join(", "), dir.display());
            outputs_done(&w, t1);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: cannot write results to {}: {e}", dir.display());
            ExitCode::from(2)
        }
    }
}

/// Prints what the outputs step wrote, its notes and its time.
fn outputs_done(w: &orrery::outputs::Written, t1: std::time::Instant) {
    for n in &w.notes {
        eprintln!("note: {n}");
    }
    outln!(
        "plots and report: {} ({:.2} s)",
        w.files.join(", "),
        t1.elapsed().as_secs_f64()
    );
}

fn merge(shards: &[PathBuf], out: &Path, plots: bool) -> ExitCode {
    let r = orrery::sweep::shard_files(shards)
        .and_then(|f| orrery::sweep::read_shards(&f))
        .and_then(orrery::sweep::merge);
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    outln!(
        "merged {} runs of {} · experiment {} · hash {}",
        r.runs.len(),
        r.header.scenario,
        r.header.experiment,
        r.header.scenario_hash,
    );
    // The experiment's plot lines, when its scenario can still be read (and is unchanged).
    let lines = spec::load_file(Path::new(&r.header.scenario))
        .ok()
        .filter(|l| l.spec.is_some() && orrery::scenario_hash(&l.sources) == r.header.scenario_hash)
        .map(|l| experiment_plots(&l, &r.header.experiment))
        .unwrap_or_default();
    let t1 = std::time::Instant::now();
    let written = orrery::sweep::write(out, &r);
    sweep_outputs(out, &r, written, &lines, None, &sweep_table(&r), plots, t1)
}

fn compare(
    files: &[PathBuf],
    seeds: Option<&str>,
    failures: Option<&str>,
    threads: Option<usize>,
    out: Option<PathBuf>,
    plots: bool,
) -> ExitCode {
    let fail = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    if threads == Some(0) {
        return fail("--threads must be at least 1".into());
    }
    let seeds = match parse_seeds(seeds.unwrap_or("1..5")) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let mut entries = Vec::new();
    for f in files {
        let l = match load(Some(f)) {
            Ok(l) => l,
            Err(c) => return c,
        };
        let spec = l.spec.clone().expect("no errors means a spec");
        let failure_block = match failure_block(&spec, failures) {
            Ok(b) => b,
            Err(e) => return fail(format!("{}: {e}", f.display())),
        };
        let (traces, empirical) =
            match traces(&spec, Some(f)).and_then(|t| Ok((t, empirical(&spec, f)?))) {
                Ok(x) => x,
                Err(e) => return fail(e),
            };
        entries.push(orrery::compare::Entry {
            name: file_stem(f),
            file: f.display().to_string(),
            scenario_hash: orrery::scenario_hash(&l.sources),
            spec,
            traces,
            empirical,
            failure_block,
        });
    }
    outln!(
        "orrery {} · compare {} · seeds {}{}",
        env!("CARGO_PKG_VERSION"),
        entries
            .iter()
            .map(|e| format!("{} (hash {})", e.file, e.scenario_hash))
            .collect::<Vec<_>>()
            .join(" vs "),
        orrery::drill::seeds_label(&seeds),
        failures
            .map(|f| format!(" · failures {f}"))
            .unwrap_or_default()
    );
    let bar = progress_bar((entries.len() * seeds.len()) as u64);
    let r = orrery::compare::compare(&entries, &seeds, threads.unwrap_or(0), bar);
    let table = orrery::compare::table(&r);
    out!("{table}");
    let dir = out.unwrap_or_else(|| {
        PathBuf::from("outputs").join(format!(
            "compare-{}",
            entries
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join("-")
        ))
    });
    let t1 = std::time::Instant::now();
    let written = orrery::compare::write(&dir, &r)
        .map_err(|e| e.to_string())
        .and_then(|files| {
            orrery::outputs::compare::write(&dir, &r, &table, &files, plots).map(|w| (files, w))
        });
    written_or_fail(&dir, written, t1)
}
