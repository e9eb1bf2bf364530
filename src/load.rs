//! Loading a scenario the whole way. `scenario` reads and resolves it (syntax, names, units,
//! each statement's rules, profiles, sweeps); the checks that need a model above it then run
//! on the result: placement's, work that no node of the declared cluster could ever hold
//! (`placement::feasible`, the placement functions asked on the empty cluster). Everything
//! that loads a scenario (the CLI, the Python module, the tests) comes through here.

use crate::diag::Diagnostic;
use crate::scenario::{LoadOptions, Loaded, Spec, resolve_file, resolve_str};
use std::path::Path;

/// Load a scenario file. Fails only when the root file itself cannot be read.
pub fn load_file(path: &Path) -> Result<Loaded, String> {
    load_file_with(path, LoadOptions::default())
}

/// [`load_file`] with options.
pub fn load_file_with(path: &Path, opts: LoadOptions) -> Result<Loaded, String> {
    resolve_file(path, opts, placeable)
}

/// Load a scenario held in memory (built-in scenarios, tests). `include` is not available.
pub fn load_str(name: &str, text: &str) -> Loaded {
    load_str_with(name, text, LoadOptions::default())
}

/// [`load_str`] with options.
pub fn load_str_with(name: &str, text: &str, opts: LoadOptions) -> Loaded {
    resolve_str(name, text, opts, placeable)
}

/// Work that can never be placed on the declared cluster: a located error, or with
/// `allow_infeasible` a warning.
fn placeable(spec: &Spec, opts: LoadOptions) -> Vec<Diagnostic> {
    crate::placement::feasible::never_placed(spec)
        .into_iter()
        .map(|n| {
            if n.warning {
                Diagnostic::warning(n.span, n.message)
            } else if opts.allow_infeasible {
                Diagnostic::warning(n.span, n.message).with_help(
                    "--allow-infeasible: the run keeps it pending forever, as Ray would",
                )
            } else {
                Diagnostic::error(n.span, n.message).with_help(
                    "Ray would keep it pending forever; change the request or the cluster, or pass --allow-infeasible to run it and see it pending",
                )
            }
        })
        .collect()
}
