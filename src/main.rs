//! `orrery`: a thin command line over the library. Exit codes: 0 success, 1 a check that
//! found a difference (`fmt --check`), 2 bad input (unreadable file, invalid scenario, bad flag).

use clap::{Parser, Subcommand};
use orrery::diag::{self, SourceMap};
use orrery::spec::{self, Loaded};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
        Command::Run { file, seed, out } => run(file.as_deref(), seed, out),
        Command::Check { files, json } => check(&files, json),
        Command::Fmt {
            files,
            check,
            write,
        } => fmt(&files, check, write),
        Command::Catalog { json, source } => catalog(json, source),
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
                    println!(
                        "{}: ok (scenario hash {})",
                        f.display(),
                        orrery::scenario_hash(&l.sources)
                    );
                    print!("{s}");
                }
            }
            Err(c) => code = c,
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    code
}

fn run(file: Option<&Path>, seed: u64, out: Option<PathBuf>) -> ExitCode {
    let l = match load(file) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let name = file
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| orrery::DEFAULT_SCENARIO.0.to_string());
    println!(
        "orrery {} · scenario {name} · hash {} · seed {seed}",
        env!("CARGO_PKG_VERSION"),
        orrery::scenario_hash(&l.sources)
    );
    print!(
        "{}",
        orrery::summary::summarize(l.spec.as_ref().expect("no errors means a spec"))
    );
    let _ = out;
    println!(
        "note: the scenario is valid; the discrete-event engine that simulates it is not part of this build yet"
    );
    ExitCode::SUCCESS
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
            print!("{formatted}");
        }
    }
    code
}

fn catalog(json: bool, source: bool) -> ExitCode {
    if source {
        for (name, text) in orrery::catalog::FILES {
            println!("# ===== {name} =====");
            print!("{text}");
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
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    print!("{}", orrery::catalog::table::render(&s));
    ExitCode::SUCCESS
}
