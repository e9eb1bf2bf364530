//! `orrery transports`.

use super::common::{file_stem, load, outputs_done};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(super) fn transports(
    file: &Path,
    sizes: Option<&str>,
    pairs: Option<&str>,
    json: bool,
    workload: Option<u64>,
    out: Option<PathBuf>,
    plots: bool,
) -> ExitCode {
    use orrery::transport::compare as tc;
    let l = match load(Some(file)) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let spec = l.spec.as_ref().expect("no errors means a spec");
    let r = (|| {
        let sizes = match sizes {
            Some(s) => tc::parse_sizes(s)?,
            None => tc::DEFAULT_SIZES.to_vec(),
        };
        let pairs = match pairs {
            Some(p) => tc::parse_pairs(spec, p)?,
            None => Vec::new(),
        };
        tc::compare(spec, &sizes, &pairs)
    })();
    let w = match workload {
        None => None,
        Some(seed) => {
            // The files the scenario names, as `run` reads them: a missing trace is an error.
            let inputs = super::inputs::traces(spec, &l.sources, Some(file))
                .and_then(|t| Ok((t, super::inputs::empirical(spec, &l.sources, file)?)));
            match inputs {
                Ok((t, e)) => {
                    if let Err(c) = super::common::gate(&l, spec, None, &t, 1) {
                        return c;
                    }
                    let w = orrery::experiment::transports::compare_workload(spec, seed, &t, &e);
                    if let Some(c) = super::common::over_budget() {
                        return c;
                    }
                    Some(w)
                }
                Err(e) => {
                    errln!("error: {e}");
                    return ExitCode::from(2);
                }
            }
        }
    };
    let dir = out.unwrap_or_else(|| {
        PathBuf::from("outputs").join(format!("{}-transports", file_stem(file)))
    });
    if let Ok(c) = &r {
        let mut printed = c.to_string();
        if let Some(w) = &w {
            printed.push_str(&format!("\n{w}"));
        }
        let head = [
            ("orrery", env!("CARGO_PKG_VERSION").to_string()),
            ("scenario", file.display().to_string()),
            ("scenario hash", orrery::scenario_hash(&l.sources)),
        ];
        if let Err(c) = super::common::begin_outputs(&dir) {
            return c;
        }
        let t1 = std::time::Instant::now();
        let written =
            orrery::outputs::transports::write(&dir, &head, c, w.as_ref(), &printed, plots)
                .and_then(|w| {
                    orrery::atomic::own_folder(&dir, &w.files)
                        .map_err(|e| e.to_string())
                        .map(|()| w)
                });
        match written {
            // With --json stdout is the JSON alone.
            Ok(w) if json => {
                for n in &w.notes {
                    errln!("note: {n}");
                }
            }
            Ok(w) => {
                outln!("wrote {} in {}", w.files.join(", "), dir.display());
                outputs_done(&w, t1);
            }
            Err(e) => {
                errln!("error: cannot write results to {}: {e}", dir.display());
                return ExitCode::from(2);
            }
        }
    }
    match r {
        Ok(c) if json => {
            let text = orrery::outputs::transports::to_json(&c, w.as_ref());
            outln!("{}", text.unwrap_or_default());
            ExitCode::SUCCESS
        }
        Ok(c) => {
            out!("{c}");
            if let Some(w) = w {
                out!("\n{w}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
