//! `orrery import ray-cluster FILE`: the YAML (a regular file of at most 16 MiB, read through
//! `orrery::files`) as a scenario (`orrery::raycluster`), on standard output or written
//! atomically to `--out`. Errors are `FILE:LINE:COLUMN: error: ...` and exit 2; what could not
//! be mapped is a `FILE:LINE:COLUMN: warning: ...` line each (the field it is about), an error
//! under `--strict`.

use super::args::{RayClusterArgs, WorkersChoice};
use super::error::{Error, Outcome};
use orrery::raycluster::{self, Failure, Options, Workers};
use std::process::ExitCode;

pub(super) fn ray_cluster(a: RayClusterArgs) -> Outcome {
    let file = a.file.as_path();
    let shown = file.display();
    let text = orrery::files::read_text(file, orrery::files::MAX_INPUT_BYTES)
        .map_err(|e| format!("{shown} {e}"))?;
    let opts = Options {
        name: a.name,
        workers: match a.workers {
            WorkersChoice::Min => Workers::Min,
            WorkersChoice::Max => Workers::Max,
        },
        file_name: file
            .file_name()
            .map_or_else(|| shown.to_string(), |n| n.to_string_lossy().into_owned()),
    };
    let imported = match raycluster::import(&text, &opts) {
        Ok(i) => i,
        Err(Failure::Located(e)) => {
            errln!("{shown}:{}:{}: error: {}", e.at.line, e.at.col, e.message);
            return Err(Error::Shown(2));
        }
        Err(Failure::Unmapped { warnings, message }) => {
            for w in &warnings {
                errln!("{shown}:{}:{}: warning: {}", w.at.line, w.at.col, w.message);
            }
            return Err(format!("{shown}: {message}").into());
        }
    };
    for w in &imported.warnings {
        errln!("{shown}:{}:{}: warning: {}", w.at.line, w.at.col, w.message);
    }
    if a.strict && !imported.warnings.is_empty() {
        return Err(Error::Input(format!(
            "{shown}: {} warning(s) and --strict: nothing written",
            imported.warnings.len()
        )));
    }
    match &a.out {
        Some(p) => {
            orrery::atomic::write_atomic(p, imported.text.as_bytes())
                .map_err(|e| format!("cannot write {e}"))?;
            errln!(
                "wrote {} ({} nodes, {} warning(s))",
                p.display(),
                imported.nodes,
                imported.warnings.len()
            );
        }
        None => out!("{}", imported.text),
    }
    Ok(ExitCode::SUCCESS)
}
