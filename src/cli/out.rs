//! The command line's writers: `out!`/`outln!` for standard output, `err!`/`errln!` for
//! standard error. Both go to the real streams, or, inside [`capture`], to strings: that is how
//! the Python package runs a command in its own process and gets back exactly what the binary
//! would have printed (and nothing can end the host process).

use std::sync::Mutex;

/// Print to standard output like `print!`, but a reader that went away (`orrery catalog |
/// head`) ends the program quietly with status 141 (128 + SIGPIPE, what a shell reports for
/// tools killed by the signal), and any other write error (a full disk behind a redirect) ends
/// it with a message and status 1, instead of the panic of `print!`.
macro_rules! out {
    ($($t:tt)*) => { $crate::cli::out::emit(format_args!($($t)*)) };
}
/// [`out!`] with a newline.
macro_rules! outln {
    () => { $crate::cli::out::emit(format_args!("\n")) };
    ($($t:tt)*) => { $crate::cli::out::emit(format_args!("{}\n", format_args!($($t)*))) };
}
/// Print to standard error (or the capture).
macro_rules! err {
    ($($t:tt)*) => { $crate::cli::out::emit_err(format_args!($($t)*)) };
}
/// [`err!`] with a newline.
macro_rules! errln {
    () => { $crate::cli::out::emit_err(format_args!("\n")) };
    ($($t:tt)*) => { $crate::cli::out::emit_err(format_args!("{}\n", format_args!($($t)*))) };
}

/// What a captured command printed: standard output and standard error.
#[derive(Default)]
struct Sink {
    stdout: String,
    stderr: String,
}

/// The capture in force, if any. One for the process, not per thread: a sweep's worker threads
/// print too. [`capture`] holds [`ONE_AT_A_TIME`], so no two captures share it.
static SINK: Mutex<Option<Sink>> = Mutex::new(None);
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn with_sink<R>(f: impl FnOnce(Option<&mut Sink>) -> R) -> R {
    let mut g = SINK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    f(g.as_mut())
}

/// Runs `f` with everything the command line prints collected instead of printed; what `f`
/// returned, its standard output and its standard error. Calls from several threads take turns
/// (the commands share process-wide settings such as `--allow-infeasible`).
pub fn capture<R>(f: impl FnOnce() -> R) -> (R, String, String) {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *SINK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Sink::default());
    // A panic inside is still a bug, but the capture must not outlive it.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    let sink = SINK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
        .unwrap_or_default();
    match r {
        Ok(r) => (r, sink.stdout, sink.stderr),
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// Whether output is being captured (then there is no terminal: no colour, no progress bars).
pub(crate) fn capturing() -> bool {
    with_sink(|s| s.is_some())
}

/// Whether standard error is a terminal the user watches (progress bars, colour).
pub(crate) fn terminal() -> bool {
    use std::io::IsTerminal;
    !capturing() && std::io::stderr().is_terminal()
}

/// Writes `args` to the capture's stream that `pick` chooses; whether a capture took it.
fn to_sink(args: std::fmt::Arguments, pick: fn(&mut Sink) -> &mut String) -> bool {
    with_sink(|s| {
        s.map(|s| {
            use std::fmt::Write;
            let _ = pick(s).write_fmt(args);
        })
        .is_some()
    })
}

pub(crate) fn emit(args: std::fmt::Arguments) {
    use std::io::Write;
    if to_sink(args, |s| &mut s.stdout) {
        return;
    }
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|()| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("error: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

pub(crate) fn emit_err(args: std::fmt::Arguments) {
    use std::io::Write;
    if !to_sink(args, |s| &mut s.stderr) {
        // Nothing better to do when standard error itself cannot be written.
        let _ = std::io::stderr().lock().write_fmt(args);
    }
}
