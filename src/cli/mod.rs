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
mod collectives;
mod common;
mod compare;
mod drill;
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

use args::{Cli, Command};
use clap::Parser;
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
    if let Err(code) = common::start_budget(cli.command.budget()) {
        return code;
    }
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
            format,
            ..
        } => run::run(
            file.as_deref(),
            seed,
            out,
            run::RunChoices {
                policy: policy.as_deref(),
                failures: failures.as_deref(),
                horizon: horizon.as_deref(),
                format: if format == "parquet" {
                    orrery::report::Format::Parquet
                } else {
                    orrery::report::Format::Csv
                },
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
            ..
        } => drill::drill(
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
            ..
        } => sweep::sweep(
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
        } => merge::merge(&shards, &out, !no_plots),
        Command::Compare {
            files,
            seeds,
            failures,
            horizon,
            threads,
            out,
            no_plots,
            ..
        } => compare::compare(
            &files,
            seeds.as_deref(),
            failures.as_deref(),
            horizon.as_deref(),
            threads,
            out,
            !no_plots,
        ),
        Command::Check { files, json, .. } => check::check(&files, json),
        Command::Fmt {
            files,
            check,
            write,
        } => fmt::fmt(&files, check, write),
        Command::Accuracy {
            table,
            out,
            no_plots,
        } => accuracy::accuracy(table.as_deref(), out, !no_plots),
        Command::Catalog { json, source } => catalog::catalog(json, source),
        Command::Import {
            sub:
                args::ImportSub::RayCluster {
                    file,
                    out,
                    strict,
                    name,
                    workers,
                },
        } => import::ray_cluster(&file, out.as_deref(), strict, name, workers == "max"),
        Command::Collectives {
            file,
            op,
            algo,
            proto,
            ranks,
            sizes,
            csv,
        } => collectives::collectives(
            &file,
            collectives::Choices {
                op: &op,
                algo: algo.as_deref(),
                proto: proto.as_deref(),
                ranks: ranks.as_deref(),
                sizes: &sizes,
                csv,
            },
        ),
        Command::Flows { file } => flows::flows(&file),
        Command::Transports {
            file,
            sizes,
            pairs,
            json,
            workload,
            seed,
            out,
            no_plots,
            ..
        } => transports::transports(
            &file,
            sizes.as_deref(),
            pairs.as_deref(),
            json,
            workload.then_some(seed),
            out,
            !no_plots,
        ),
        Command::Calibrate {
            import:
                Some(args::CalibrateSub::Import {
                    files,
                    out,
                    accelerator,
                    base,
                    in_place,
                    seed,
                }),
            ..
        } => calibrate_import::import(&files, &out, accelerator, base.as_deref(), in_place, seed),
        Command::Calibrate {
            import: None,
            device,
            out,
            quick,
            seed,
            check,
        } => calibrate::calibrate(device, out, quick, seed, check),
        Command::Validate {
            file,
            node,
            root,
            record,
        } => validate::validate(&file, &node, root.as_deref(), record),
        Command::Detect { name, root } => validate::detect_node(&name, root.as_deref()),
        Command::Explain {
            file,
            item,
            seed,
            policy,
            json,
            ..
        } => explain::explain(&file, &item, seed, policy.as_deref(), json),
        Command::Bench {
            nodes,
            tasks,
            flows,
            dense_flows,
            allreduce,
            contention,
            remote_inputs,
        } => bench::bench(
            nodes,
            tasks,
            flows,
            dense_flows,
            allreduce,
            contention,
            remote_inputs,
        ),
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
