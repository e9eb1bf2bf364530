//! `orrery catalog`.

use super::args::CatalogArgs;
use super::common::color;
use super::error::{Error, Outcome};
use std::process::ExitCode;

pub(super) fn catalog(a: CatalogArgs) -> Outcome {
    if a.source {
        for (name, text) in orrery::catalog::FILES {
            outln!("# ===== {name} =====");
            out!("{text}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let l = orrery::load_str("<empty>", "");
    if l.has_errors() {
        err!("{}", l.render(color()));
        return Err(Error::Shown(2));
    }
    let s = l.spec.expect("no errors means a spec");
    if a.json {
        let models: Vec<orrery::model::Transformer> = orrery::model::catalog::names()
            .filter_map(orrery::model::catalog::find)
            .collect();
        let v = serde_json::json!({ "schema_version": orrery::catalog::SCHEMA_VERSION, "accelerators": s.accelerators, "nics": s.nics, "node_types": s.node_types, "models": models });
        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(ExitCode::SUCCESS);
    }
    out!("{}", orrery::report::catalog::render(&s));
    Ok(ExitCode::SUCCESS)
}
