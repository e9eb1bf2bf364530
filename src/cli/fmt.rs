//! `orrery fmt`.

use super::args::FmtArgs;
use super::common::color;
use super::error::{Error, Outcome};
use orrery::diag::{self, SourceMap};
use std::path::Path;
use std::process::ExitCode;

/// Formats every file (one's failure does not stop the next): exit 2 if any could not be
/// read, parsed or written; else with `--check` 1 if any is not in canonical form.
pub(super) fn fmt(a: FmtArgs) -> Outcome {
    let mut code = ExitCode::SUCCESS;
    for f in &a.files {
        match fmt_one(f, a.check, a.write) {
            Ok(true) => {}
            Ok(false) => {
                if code == ExitCode::SUCCESS {
                    code = ExitCode::from(1);
                }
            }
            Err(e) => code = e.exit(),
        }
    }
    Ok(code)
}

/// One file; `false` when `check` finds it is not in canonical form.
fn fmt_one(f: &Path, check: bool, write: bool) -> Result<bool, Error> {
    let text = orrery::files::read_text(f, orrery::files::MAX_INPUT_BYTES)
        .map_err(|e| format!("{} {e}", f.display()))?;
    let mut map = SourceMap::new();
    let id = map.add(f.display().to_string(), text.clone());
    let (tree, diags) = orrery::syntax::parse(&text, id);
    if !diags.is_empty() {
        err!("{}", diag::render(&map, &diags, color()));
        return Err(Error::Shown(2));
    }
    let formatted = orrery::syntax::fmt::format(&tree).map_err(|span| {
        let d = diag::Diagnostic::error(span, "`fmt` would drop this comment")
            .with_help("move comments out of lists, maps and continued lines, onto their own line above the statement");
        err!("{}", diag::render(&map, &[d], color()));
        Error::Shown(2)
    })?;
    if check {
        if formatted != text {
            errln!("{} is not in canonical form", f.display());
            return Ok(false);
        }
    } else if write {
        if formatted != text {
            orrery::atomic::rewrite(f, formatted.as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", f.display()))?;
        }
    } else {
        out!("{formatted}");
    }
    Ok(true)
}
