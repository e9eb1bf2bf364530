//! `orrery import ray-cluster FILE`: the YAML (a regular file of at most 16 MiB, read through
//! `orrery::files`) as a scenario (`orrery::raycluster`), on standard output or written
//! atomically to `--out`. Errors are `FILE:LINE:COLUMN: error: ...` and exit 2; what could not
//! be mapped is a `FILE:LINE:COLUMN: warning: ...` line each (the field it is about), an error
//! under `--strict`.

use orrery::raycluster::{self, Failure, Options, Workers};
use std::path::Path;
use std::process::ExitCode;

pub(super) fn ray_cluster(
    file: &Path,
    out: Option<&Path>,
    strict: bool,
    name: Option<String>,
    max: bool,
) -> ExitCode {
    let shown = file.display();
    let text = match orrery::files::read_text(file, orrery::files::MAX_INPUT_BYTES) {
        Ok(t) => t,
        Err(e) => {
            errln!("error: {shown} {e}");
            return ExitCode::from(2);
        }
    };
    let opts = Options {
        name,
        workers: if max { Workers::Max } else { Workers::Min },
        file_name: file
            .file_name()
            .map_or_else(|| shown.to_string(), |n| n.to_string_lossy().into_owned()),
    };
    let imported = match raycluster::import(&text, &opts) {
        Ok(i) => i,
        Err(Failure::Located(e)) => {
            errln!("{shown}:{}:{}: error: {}", e.at.line, e.at.col, e.message);
            return ExitCode::from(2);
        }
        Err(Failure::Unmapped { warnings, message }) => {
            for w in &warnings {
                errln!("{shown}:{}:{}: warning: {}", w.at.line, w.at.col, w.message);
            }
            errln!("error: {shown}: {message}");
            return ExitCode::from(2);
        }
    };
    for w in &imported.warnings {
        errln!("{shown}:{}:{}: warning: {}", w.at.line, w.at.col, w.message);
    }
    if strict && !imported.warnings.is_empty() {
        errln!(
            "error: {shown}: {} warning(s) and --strict: nothing written",
            imported.warnings.len()
        );
        return ExitCode::from(2);
    }
    match out {
        Some(p) => {
            if let Err(e) = orrery::atomic::write_atomic(p, imported.text.as_bytes()) {
                errln!("error: cannot write {e}");
                return ExitCode::from(2);
            }
            errln!(
                "wrote {} ({} nodes, {} warning(s))",
                p.display(),
                imported.nodes,
                imported.warnings.len()
            );
        }
        None => out!("{}", imported.text),
    }
    ExitCode::SUCCESS
}
