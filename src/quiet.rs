//! Panics a library we call is known to raise on some inputs, caught and turned into errors
//! without the panic's message reaching the terminal. libyaml-safer 0.3 panics on a few
//! malformed YAML texts (a tag followed by `,` in a flow collection: "TODO: What is expected
//! here?"); [`catch`] runs such a call, and the binary's panic hook ([`install_hook`]) stays
//! silent for a panic inside it, while every other panic prints as it always did.
//!
//! Architecture invariant: only calls into third-party code go through [`catch`]; a panic of
//! Orrery's own code is a bug and must be seen.

use std::cell::Cell;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`; `None` when it panicked (its message not printed when the hook is installed).
pub fn catch<T>(f: impl FnOnce() -> T) -> Option<T> {
    let was = QUIET.with(|q| q.replace(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    r.ok()
}

/// Wraps the process's panic hook so that it says nothing for a panic inside [`catch`]. Called
/// once by the binary at start.
pub fn install_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !QUIET.with(Cell::get) {
            previous(info);
        }
    }));
}
