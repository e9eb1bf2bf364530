//! `orrery validate`.

use super::common::load;
use orrery::diag;
use std::path::Path;
use std::process::ExitCode;

pub(super) fn validate(file: &Path, node: &str) -> ExitCode {
    use orrery::calibrate::{detect, validate::Verdict};
    let l = match load(Some(file)) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let spec = l.spec.as_ref().expect("no errors means a spec");
    let Some(nt) = spec.node_types.get(node) else {
        let hint = diag::did_you_mean(node, spec.node_types.keys().map(String::as_str))
            .unwrap_or_else(|| {
                format!(
                    "node types: {}",
                    spec.node_types
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
        eprintln!(
            "error: no node type `{node}` in {} or the catalog\n  help: {hint}",
            file.display()
        );
        return ExitCode::from(2);
    };
    let host = detect::detect();
    let gpus = gpu_inventory();
    outln!(
        "node type `{node}` against {} ({}{})",
        host.hostname,
        host.cpu_model.as_deref().unwrap_or("unknown CPU"),
        match &gpus {
            Some(g) => format!(", {} GPU(s), driver {}", g.gpus.len(), g.driver),
            None => String::new(),
        }
    );
    let checks = orrery::calibrate::validate::compare(spec, nt, &host, gpus.as_ref());
    for c in &checks {
        outln!("{c}");
    }
    let bad = checks
        .iter()
        .filter(|c| c.verdict == Verdict::Mismatch)
        .count();
    if bad > 0 {
        outln!("{bad} mismatch{}", if bad == 1 { "" } else { "es" });
        ExitCode::from(1)
    } else {
        outln!("node type `{node}` agrees with this machine");
        ExitCode::SUCCESS
    }
}

#[cfg(feature = "cuda")]
pub(super) fn gpu_inventory() -> Option<orrery::calibrate::detect::GpuInventory> {
    match orrery::calibrate::cuda::inventory() {
        Ok(inv) => Some(inv),
        Err(e) => {
            eprintln!("note: {e}; GPU names, memory and P2P are not checked");
            None
        }
    }
}

#[cfg(not(feature = "cuda"))]
pub(super) fn gpu_inventory() -> Option<orrery::calibrate::detect::GpuInventory> {
    None
}
