//! `orrery fmt`.

use super::common::color;
use orrery::diag::{self, SourceMap};
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) fn fmt(files: &[PathBuf], check: bool, write: bool) -> ExitCode {
    let mut code = ExitCode::SUCCESS;
    for f in files {
        let text = match orrery::files::read_text(f, orrery::files::MAX_INPUT_BYTES) {
            Ok(t) => t,
            Err(e) => {
                errln!("error: {} {e}", f.display());
                code = ExitCode::from(2);
                continue;
            }
        };
        let mut map = SourceMap::new();
        let id = map.add(f.display().to_string(), text.clone());
        let (tree, diags) = orrery::syntax::parse(&text, id);
        if !diags.is_empty() {
            err!("{}", diag::render(&map, &diags, color()));
            code = ExitCode::from(2);
            continue;
        }
        let formatted = match orrery::syntax::fmt::format(&tree) {
            Ok(s) => s,
            Err(span) => {
                let d = diag::Diagnostic::error(span, "`fmt` would drop this comment")
                    .with_help("move comments out of lists, maps and continued lines, onto their own line above the statement");
                err!("{}", diag::render(&map, &[d], color()));
                code = ExitCode::from(2);
                continue;
            }
        };
        if check {
            if formatted != text {
                errln!("{} is not in canonical form", f.display());
                if code == ExitCode::SUCCESS {
                    code = ExitCode::from(1);
                }
            }
        } else if write {
            if formatted != text
                && let Err(e) = orrery::atomic::rewrite(f, formatted.as_bytes())
            {
                errln!("error: cannot write {}: {e}", f.display());
                code = ExitCode::from(2);
            }
        } else {
            out!("{formatted}");
        }
    }
    code
}
