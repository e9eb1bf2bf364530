//! The command line's one error path. A command returns [`Outcome`]; `?` carries a failure up
//! to `super::dispatch`, which prints it once ([`Error::exit`]) and turns it into the exit
//! status. Exit statuses: 0 success, 1 a check that found a difference (a command's own
//! `Ok`), 2 bad input or an output that cannot be written, 1 for broken invariants.

use std::process::ExitCode;

/// Why a command stopped early.
#[derive(Debug)]
pub(super) enum Error {
    /// Bad input, or an output that cannot be written: printed as `error: MESSAGE` on
    /// standard error, exit 2.
    Input(String),
    /// Already printed where it was found (a scenario's located diagnostics, a refusal, the
    /// list of broken invariants): only the exit status is left.
    Shown(u8),
}

/// What a command returns: its exit status, or why it stopped.
pub(super) type Outcome = Result<ExitCode, Error>;

impl Error {
    /// Prints the error (unless it was already shown) and gives its exit status.
    pub(super) fn exit(self) -> ExitCode {
        match self {
            Error::Input(m) => {
                errln!("error: {m}");
                ExitCode::from(2)
            }
            Error::Shown(code) => ExitCode::from(code),
        }
    }
}

impl From<String> for Error {
    fn from(m: String) -> Self {
        Error::Input(m)
    }
}

impl From<&str> for Error {
    fn from(m: &str) -> Self {
        Error::Input(m.to_string())
    }
}
