//! `orrery catalog`.

use super::common::color;
use std::process::ExitCode;

pub(super) fn catalog(json: bool, source: bool) -> ExitCode {
    if source {
        for (name, text) in orrery::catalog::FILES {
            outln!("# ===== {name} =====");
            out!("{text}");
        }
        return ExitCode::SUCCESS;
    }
    let l = orrery::load_str("<empty>", "");
    if l.has_errors() {
        err!("{}", l.render(color()));
        return ExitCode::from(2);
    }
    let s = l.spec.expect("no errors means a spec");
    if json {
        let models: Vec<orrery::model::Transformer> = orrery::model::catalog::names()
            .filter_map(orrery::model::catalog::find)
            .collect();
        let v = serde_json::json!({ "schema_version": orrery::catalog::SCHEMA_VERSION, "accelerators": s.accelerators, "nics": s.nics, "node_types": s.node_types, "models": models });
        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    out!("{}", orrery::report::catalog::render(&s));
    ExitCode::SUCCESS
}
