//! `orrery flows`.

use super::args::FlowsArgs;
use super::common::color;
use super::error::{Error, Outcome};
use orrery::diag::{SourceMap, render};
use orrery::network::flowfile::FlowFile;
use orrery::syntax::parse::MAX_ERRORS;
use std::fmt::Write as _;
use std::process::ExitCode;

pub(super) fn flows(a: FlowsArgs) -> Outcome {
    let file = a.file.as_path();
    let text = orrery::files::read_text(file, orrery::files::MAX_INPUT_BYTES)
        .map_err(|e| format!("{} {e}", file.display()))?;
    let mut map = SourceMap::new();
    let id = map.add(file.display().to_string(), text);
    let f = match FlowFile::parse(&map.file(id).text, id) {
        Ok(f) => f,
        Err(diags) => {
            err!("{}", render(&map, &diags, color()));
            // Past the limit the last diagnostic says it stopped there.
            let n = diags.len().min(MAX_ERRORS);
            return Err(Error::Input(format!(
                "{} has {}{n} error{}",
                file.display(),
                if diags.len() > MAX_ERRORS {
                    "more than "
                } else {
                    ""
                },
                if n == 1 { "" } else { "s" }
            )));
        }
    };
    let t0 = std::time::Instant::now();
    let done = f.simulate();
    let wall = t0.elapsed().as_secs_f64();
    // Shortest decimals that read back to the same f64; written in chunks, not a flush a line.
    let mut buf = String::new();
    for i in f.by_id() {
        let _ = writeln!(buf, "{} {}", f.flows[i].id, done[i]);
        if buf.len() >= 1 << 16 {
            out!("{buf}");
            buf.clear();
        }
    }
    out!("{buf}");
    outln!(
        "# wall {wall:.6} s simulating {} flow{} over {} link{}",
        f.flows.len(),
        if f.flows.len() == 1 { "" } else { "s" },
        f.links.len(),
        if f.links.len() == 1 { "" } else { "s" }
    );
    Ok(ExitCode::SUCCESS)
}
