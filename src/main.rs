//! `orrery`: a thin command line over the library. Exit codes: 0 success, 1 a check that
//! found a difference (`fmt --check`), 2 bad input (unreadable file, invalid scenario, bad flag).
//! Each command lives in `src/cli/`.

fn main() -> std::process::ExitCode {
    orrery::cli::main()
}
