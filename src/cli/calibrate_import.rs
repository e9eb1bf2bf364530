//! `orrery calibrate import FILE... --out calibration/NAME.toml`: read the tools' outputs
//! (regular files only, at most [`MAX_INPUT`] bytes each, the limit enforced while reading),
//! fit them (`orrery::calibrate::import`), check the profile reads back, write it atomically.

use super::args::CalibrateImportArgs;
use super::error::{Error, Outcome};
use orrery::calibrate::import::{self, ImportOptions, Input};
use orrery::files::line_col;
use std::path::Path;
use std::process::ExitCode;

/// Largest input file read (the scenario limit).
const MAX_INPUT: u64 = orrery::files::MAX_INPUT_BYTES;

/// `FILE` or `FILE@SIZE` (SIZE with a unit of bytes: `512MiB`).
fn split_size(arg: &str) -> Result<(&str, Option<u64>), String> {
    let Some((file, size)) = arg.rsplit_once('@') else {
        return Ok((arg, None));
    };
    let cut = size
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(size.len());
    let (num, unit) = size.split_at(cut);
    let x: f64 = num
        .parse()
        .map_err(|_| format!("`{arg}`: `@{size}` is not a size such as `@512MiB`"))?;
    let f = match orrery::units::lookup(unit.trim()) {
        Some((orrery::units::Kind::Bytes, f)) => f,
        _ => {
            return Err(format!(
                "`{arg}`: `@{size}` needs a unit of bytes (`@512MiB`; nvbandwidth's `-b` is MiB)"
            ));
        }
    };
    let b = (x * f).round();
    if !(1.0..=1e15).contains(&b) {
        return Err(format!("`{arg}`: a buffer from 1 B to 1 PB"));
    }
    Ok((file, Some(b as u64)))
}

/// A regular file's text, refusing anything larger than [`MAX_INPUT`] before reading past it.
fn read(path: &Path) -> Result<(String, String), String> {
    let shown = path.display();
    let (text, meta) =
        orrery::files::read_text_meta(path, MAX_INPUT).map_err(|e| format!("{shown} {e}"))?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or_else(
            || "unknown".to_string(),
            |d| orrery::calibrate::detect::iso8601(d.as_secs()),
        );
    Ok((text, modified))
}

/// Names the fit may match device names against: the catalog's accelerators.
fn known_accelerators() -> Vec<String> {
    let l = orrery::load_str("<catalog>", "");
    l.spec
        .map(|s| s.accelerators.keys().cloned().collect())
        .unwrap_or_default()
}

pub(super) fn import(a: CalibrateImportArgs) -> Outcome {
    let out = a.out.as_path();
    if out.extension().and_then(|e| e.to_str()) != Some("toml") {
        return Err(Error::Input(format!(
            "--out {}: a profile is calibration/NAME.toml",
            out.display()
        )));
    }
    let mut inputs = Vec::with_capacity(a.files.len());
    for arg in &a.files {
        let (file, buffer_bytes) = split_size(arg)?;
        let (text, modified) = read(Path::new(file))?;
        inputs.push(Input {
            name: file.to_string(),
            text,
            modified,
            buffer_bytes,
        });
    }
    let base = match a.base.as_deref() {
        None => None,
        Some(p) => {
            let (text, _) = read(p)?;
            match orrery::profile::parse(&text) {
                Ok(prof) => Some((
                    p.file_stem()
                        .map_or_else(|| p.display().to_string(), |s| s.to_string_lossy().into()),
                    prof,
                )),
                Err(errs) => {
                    for e in errs {
                        let (line, col) = line_col(&text, e.span.start);
                        errln!("{}:{line}:{col}: error: {}", p.display(), e.message);
                    }
                    return Err(Error::Shown(2));
                }
            }
        }
    };
    let o = ImportOptions {
        accelerator: a.accelerator,
        known_accelerators: known_accelerators(),
        base,
        in_place: a.in_place,
        seed: a.seed,
        command: std::iter::once("orrery".to_string())
            .chain(std::env::args().skip(1))
            .collect::<Vec<_>>()
            .join(" "),
        date: orrery::calibrate::detect::now_iso8601(),
    };
    let imported = import::import(&inputs, &o).map_err(|e| match e.file {
        Some(f) => {
            errln!("{f}:{}:{}: error: {}", e.line, e.column, e.message);
            Error::Shown(2)
        }
        None => Error::Input(e.message),
    })?;
    let text =
        (imported.profile.to_toml()).map_err(|e| format!("cannot write the profile: {e}"))?;
    // The profile must read back as written: a fit the schema rejects is a bug, not a file.
    if let Err(errs) = orrery::profile::parse(&text) {
        let first = errs.first().map_or_else(String::new, |e| e.message.clone());
        return Err(Error::Input(format!(
            "the fitted profile does not validate: {first}"
        )));
    }
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        orrery::atomic::create_dir(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    orrery::atomic::write_atomic(out, text.as_bytes()).map_err(|e| format!("cannot write {e}"))?;
    outln!(
        "profile for {} (source imported, schema {})",
        imported.profile.provenance.accelerator,
        imported.profile.schema_version
    );
    for r in &imported.report {
        outln!("  {r}");
    }
    outln!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}
