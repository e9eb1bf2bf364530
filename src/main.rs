//! `orrery`: a thin command line over the library. Exit codes: 0 success, 1 a check that
//! found a difference (`fmt --check`), 2 bad input (unreadable file, invalid scenario, bad flag).
//! Each command lives in `src/cli/`.

/// Counts the heap, so that `--max-memory` bounds what runs allocate (`orrery::budget::alloc`).
#[global_allocator]
static HEAP: orrery::budget::alloc::Counting = orrery::budget::alloc::Counting;

fn main() -> std::process::ExitCode {
    orrery::cli::main()
}
