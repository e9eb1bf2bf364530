//! The `orrery` command line: one file per command, `args.rs` the flags, `common.rs` and
//! `inputs.rs` what several commands share, `out.rs` the stdout writers. Exit codes: 0 success,
//! 1 a check that found a difference, 2 bad input.

#[macro_use]
pub mod out;
mod accuracy;
mod args;
mod bench;
mod calibrate;
mod calibrate_import;
mod catalog;
mod check;
mod choices;
mod collectives;
mod common;
mod compare;
mod drill;
mod error;
mod explain;
mod flows;
mod fmt;
mod import;
mod inputs;
mod merge;
mod run;
mod sweep;
mod transports;
mod validate;

use args::{CalibrateArgs, CalibrateSub, Cli, Command, ImportSub};
use clap::Parser;
use error::{Error, Outcome};
use std::process::ExitCode;

/// Parses the command line and runs its command; the exit status.
pub fn main() -> ExitCode {
    orrery::quiet::install_hook();
    dispatch(Cli::parse())
}

/// Runs the command line `argv` (the program's name first, as `std::env::args` gives it)
/// inside this process, printing nothing: its exit status, standard output and standard error,
/// byte for byte what the `orrery` binary would give. Bad flags and `--help` are answered as
/// the binary answers them (status 2 and 0), never by ending the process. The Python package's
/// one entry into the command line.
pub fn run_captured<I, T>(argv: I) -> (u8, String, String)
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    contain_panic(|| run_captured_inner(argv))
}

/// `f`, or, if it panics, what the binary gives for a panic: status 101 and the message on
/// standard error. A panic that crossed into Python became pyo3's `PanicException`, which
/// `except Exception` does not catch (issue 42); this way every failure is a status, which
/// the Python package raises as `OrreryError`.
fn contain_panic(f: impl FnOnce() -> (u8, String, String)) -> (u8, String, String) {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        (
            101,
            String::new(),
            format!("error: internal error (a bug in orrery): {what}\n"),
        )
    })
}

fn run_captured_inner<I, T>(argv: I) -> (u8, String, String)
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    out::capture(|| {
        let code = match Cli::try_parse_from(argv) {
            Ok(cli) => dispatch(cli),
            Err(e) => {
                let text = e.render().to_string();
                if e.use_stderr() {
                    err!("{text}");
                } else {
                    out!("{text}");
                }
                ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
            }
        };
        (0..=u8::MAX)
            .find(|&n| code == ExitCode::from(n))
            .unwrap_or(1)
    })
}

fn dispatch(cli: Cli) -> ExitCode {
    // Before any command can reach rayon's global pool, which would otherwise take its size
    // from RAYON_NUM_THREADS.
    orrery::parallel::init_global();
    common::set_allow_infeasible(cli.command.allow_infeasible());
    command(cli.command).unwrap_or_else(Error::exit)
}

/// Runs one command: its exit status, or why it stopped.
fn command(c: Command) -> Outcome {
    common::start_budget(c.budget())?;
    match c {
        Command::Run(a) => run::run(a),
        Command::Drill(a) => drill::drill(a),
        Command::Sweep(a) => sweep::sweep(a),
        Command::Merge(a) => merge::merge(a),
        Command::Compare(a) => compare::compare(a),
        Command::Check(a) => check::check(a),
        Command::Fmt(a) => fmt::fmt(a),
        Command::Accuracy(a) => accuracy::accuracy(a),
        Command::Catalog(a) => catalog::catalog(a),
        Command::Import {
            sub: ImportSub::RayCluster(a),
        } => import::ray_cluster(a),
        Command::Collectives(a) => collectives::collectives(a),
        Command::Flows(a) => flows::flows(a),
        Command::Transports(a) => transports::transports(a),
        Command::Calibrate(CalibrateArgs {
            import: Some(CalibrateSub::Import(a)),
            ..
        }) => calibrate_import::import(a),
        Command::Calibrate(a) => calibrate::calibrate(a),
        Command::Validate(a) => validate::validate(a),
        Command::Detect(a) => validate::detect_node(a),
        Command::Explain(a) => explain::explain(a),
        Command::Bench(a) => bench::bench(a),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_panic_comes_back_as_status_101() {
        let (code, out, err) = super::contain_panic(|| panic!("boom"));
        assert_eq!((code, out.as_str()), (101, ""));
        assert_eq!(err, "error: internal error (a bug in orrery): boom\n");
        let (code, _, err) = super::contain_panic(|| panic!("{}", 7));
        assert_eq!(code, 101);
        assert!(err.ends_with(": 7\n"), "{err}");
        assert_eq!(super::contain_panic(|| (0, "a".into(), String::new())).0, 0);
    }
}
