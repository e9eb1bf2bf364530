//! `orrery validate` and `orrery detect`.

use super::args::{DetectArgs, ValidateArgs};
use super::common::load;
use super::error::{Error, Outcome};
use orrery::calibrate::detect::{self, GpuInventory, Host};
use orrery::diag;
use orrery::scenario::load::MAX_PROFILE_BYTES;
use std::path::Path;
use std::process::ExitCode;

/// The machine to look at: this one (with the driver's inventory where the `cuda` feature
/// can read one), or a copied tree under `root` (no driver).
fn machine(root: Option<&Path>) -> Result<(Host, Option<GpuInventory>), Error> {
    match root {
        None => Ok((detect::detect(), gpu_inventory())),
        Some(r) if r.is_dir() => Ok((detect::detect_at(r, Default::default()), None)),
        Some(r) => Err(Error::Input(format!(
            "--root {}: not a folder",
            r.display()
        ))),
    }
}

pub(super) fn validate(a: ValidateArgs) -> Outcome {
    use orrery::calibrate::validate::Verdict;
    let (file, node, root, record) = (
        a.file.as_path(),
        a.node.as_str(),
        a.root.as_deref(),
        a.record,
    );
    if record && root.is_some() {
        return Err(
            "--record vouches for the machine validate runs on; it cannot be used with --root"
                .into(),
        );
    }
    let l = load(Some(file))?;
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
        return Err(Error::Input(format!(
            "no node type `{node}` in {} or the catalog\n  help: {hint}",
            file.display()
        )));
    };
    // Profiles to record into, found before any checking (a bad target is exit 2).
    let targets = if record {
        record_targets(spec, nt, file)?
    } else {
        Vec::new()
    };
    let (host, gpus) = machine(root)?;
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
    let n = |v: Verdict| checks.iter().filter(|c| c.verdict == v).count() as u32;
    let (bad, matched, unknown) = (n(Verdict::Mismatch), n(Verdict::Match), n(Verdict::Unknown));
    for (name, path) in &targets {
        let rec = orrery::profile::schema::ValidationRecord {
            date: detect::now_iso8601(),
            host: host.hostname.clone(),
            node_type: node.to_string(),
            scenario: file.file_name().map_or_else(
                || file.display().to_string(),
                |f| f.to_string_lossy().into_owned(),
            ),
            orrery_version: env!("CARGO_PKG_VERSION").to_string(),
            matched,
            mismatches: bad,
            unknown,
            devices: devices_seen(&host, gpus.as_ref()),
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let file = Path::new(path.file_name().unwrap_or_default());
        let written = orrery::scenario::load::check_profile_dir(dir)
            .map_err(|e| format!("calibration folder {} {e}", dir.display()))
            .and_then(|()| {
                orrery::files::read_confined(dir, file, None, MAX_PROFILE_BYTES)
                    .map(|(_, t)| t)
                    .map_err(|e| format!("{} {e}", path.display()))
            })
            .and_then(|t| orrery::calibrate::record::append_validation(&t, &rec))
            .and_then(|t| {
                orrery::atomic::write_atomic(path, t.as_bytes())
                    .map_err(|e| format!("cannot write {e}"))
            });
        written.map_err(|e| format!("profile {name}: {e}"))?;
        outln!(
            "recorded in profile {name} ({}): {matched} matched, {bad} mismatched, {unknown} not visible",
            path.display()
        );
    }
    if bad > 0 {
        outln!("{bad} mismatch{}", if bad == 1 { "" } else { "es" });
        Ok(ExitCode::from(1))
    } else {
        outln!("node type `{node}` agrees with this machine");
        Ok(ExitCode::SUCCESS)
    }
}

/// The devices a record names: the driver's names, else the PCI database's.
fn devices_seen(host: &Host, gpus: Option<&GpuInventory>) -> Vec<String> {
    orrery::calibrate::validate::devices_in_bus_order(host, gpus)
        .into_iter()
        .map(|(n, _, _)| n)
        .collect()
}

/// The profiles the node's accelerators name, and their files.
fn record_targets(
    spec: &orrery::scenario::Spec,
    nt: &orrery::scenario::NodeType,
    file: &Path,
) -> Result<Vec<(String, std::path::PathBuf)>, String> {
    let mut names: Vec<&str> = nt
        .devices
        .iter()
        .filter_map(|g| spec.accelerators.get(&g.accelerator)?.profile.as_deref())
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        return Err(format!(
            "node type `{}` names no calibration profile (its accelerators have no `profile`): nothing to record into",
            nt.name
        ));
    }
    let dirs = orrery::scenario::load::profile_dirs(file.parent());
    names
        .into_iter()
        .map(|n| {
            orrery::scenario::load::profile_path(&dirs, n)
                .map(|p| (n.to_string(), p))
                .ok_or_else(|| format!("profile `{n}` has no file in the calibration folders"))
        })
        .collect()
}

pub(super) fn detect_node(a: DetectArgs) -> Outcome {
    let (name, root) = (a.name.as_str(), a.root.as_deref());
    let ident = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident {
        return Err(Error::Input(format!(
            "--name {name:?} is not a name (letters, digits, `_`, starting with a letter)"
        )));
    }
    let (host, gpus) = machine(root)?;
    let catalog = orrery::load_str("<catalog>", "");
    let Some(spec) = catalog.spec.as_ref() else {
        return Err("the built-in catalog does not load".into());
    };
    let fs = orrery::calibrate::sysfs::Sysfs::new(root.unwrap_or(Path::new("/")));
    let nvswitches = fs
        .pci_functions()
        .iter()
        .filter(|f| f.vendor == 0x10de && f.class >> 8 == 0x0680)
        .count();
    let block =
        orrery::calibrate::node_block::node_block(spec, name, &host, gpus.as_ref(), nvswitches);
    // What is printed must read back as a node type.
    let back = orrery::load_str("detected.orr", &block);
    if back.has_errors() {
        return Err(Error::Input(format!(
            "the detected block does not read back (a bug):\n{block}\n{}",
            back.render(false)
        )));
    }
    out!("{block}");
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "cuda")]
pub(super) fn gpu_inventory() -> Option<GpuInventory> {
    match orrery::calibrate::cuda::inventory() {
        Ok(inv) => Some(inv),
        Err(e) => {
            errln!("note: {e}; GPU names, memory and P2P are not checked");
            None
        }
    }
}

#[cfg(not(feature = "cuda"))]
pub(super) fn gpu_inventory() -> Option<GpuInventory> {
    None
}
