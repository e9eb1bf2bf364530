//! The binary's stdout writers: `out!` and `outln!` print through [`emit`].

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

pub(super) fn emit(args: std::fmt::Arguments) {
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
