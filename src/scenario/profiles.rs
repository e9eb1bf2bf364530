//! The calibration profiles a scenario names: the folders searched, each `NAME.toml` found
//! and read (confined to its folder, bounded in size), parsed by [`crate::profile`], its
//! text joining the scenario's sources, and attached to the accelerators that name it.

use super::reader::{self as rd, Args, Cx};
use super::{Spec, schema};
use crate::diag::{Diagnostic, SourceMap, Span};
use crate::syntax::Stmt;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest profile file read (the scenario limit).
pub const MAX_PROFILE_BYTES: u64 = crate::files::MAX_INPUT_BYTES;

/// Folders searched for `NAME.toml`, nearest first: the `calibration/` folder of the
/// scenario's folder or of the nearest folder above it that has one (the search stops there,
/// and at a folder holding `.git`: the repository root), then `./calibration/` of the current
/// directory. In-memory scenarios search only the current directory.
pub fn profile_dirs(scenario_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(start) = scenario_dir {
        for d in start.ancestors() {
            let c = d.join("calibration");
            if c.is_dir() {
                dirs.push(c);
                break;
            }
            if d.join(".git").exists() {
                break;
            }
        }
    }
    let cwd = Path::new("calibration");
    if cwd.is_dir() {
        let same = |p: &PathBuf| match (p.canonicalize(), cwd.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !dirs.iter().any(same) {
            dirs.push(cwd.to_path_buf());
        }
    }
    dirs
}

/// A calibration folder must resolve inside the folder that holds it (the scenario's, one above
/// it, or the current one): a `calibration/` that is a symlink to somewhere else is refused,
/// never read or written through, as an `include` leaving the scenario's folder is.
pub fn check_profile_dir(dir: &Path) -> Result<(), crate::files::ReadError> {
    let holder = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::files::confined_dir(dir, holder).map(drop)
}

/// The file of profile `name`: `NAME.toml` in the first of `dirs` that has one.
pub fn profile_path(dirs: &[PathBuf], name: &str) -> Option<PathBuf> {
    let file = format!("{name}.toml");
    dirs.iter().map(|d| d.join(&file)).find(|p| p.is_file())
}

/// Profile names (file stems of `*.toml`) available in `dirs`, sorted.
pub fn available_profiles(dirs: &[PathBuf]) -> Vec<String> {
    let mut names: Vec<String> = dirs
        .iter()
        .filter(|d| check_profile_dir(d).is_ok())
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let p = e.path();
            (p.extension()? == "toml")
                .then(|| p.file_stem()?.to_str().map(str::to_string))
                .flatten()
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Finds, reads and parses the profiles a scenario names, once each. A profile's text joins
/// the scenario's sources, so its errors are located like any other and the scenario hash
/// covers the figures a run used.
pub(super) struct ProfileFinder<'a> {
    pub(super) sources: &'a mut SourceMap,
    pub(super) dirs: Vec<PathBuf>,
    /// `None`: looked for and reported already.
    pub(super) cache: BTreeMap<String, Option<crate::profile::Profile>>,
}

impl ProfileFinder<'_> {
    fn get(&mut self, cx: &mut Cx, name: &str, at: Span) -> Option<&crate::profile::Profile> {
        if !self.cache.contains_key(name) {
            let p = self.load(cx, name, at);
            self.cache.insert(name.to_string(), p);
        }
        self.cache.get(name).and_then(Option::as_ref)
    }

    fn load(&mut self, cx: &mut Cx, name: &str, at: Span) -> Option<crate::profile::Profile> {
        let file = format!("{name}.toml");
        let Some(path) = profile_path(&self.dirs, name) else {
            let available = available_profiles(&self.dirs);
            let help = crate::diag::did_you_mean(name, available.iter().map(String::as_str))
                .unwrap_or_else(|| {
                    if self.dirs.is_empty() {
                        "no `calibration/` folder next to the scenario, above it or in the current directory".to_string()
                    } else if available.is_empty() {
                        format!("no profiles in {}", self.shown_dirs())
                    } else {
                        format!("profiles in {}: {}", self.shown_dirs(), available.join(", "))
                    }
                });
            cx.push(
                Diagnostic::error(at, format!("unknown calibration profile `{name}`"))
                    .with_label(format!("no `{file}` found"))
                    .with_help(help),
            );
            return None;
        };
        let shown = shown_path(&path);
        // Confined to its calibration folder, itself inside the folder holding it: a profile
        // (or a `calibration/`) that is a symlink to elsewhere is refused before it is read
        // (its text would be echoed in errors).
        let dir = path.parent().unwrap_or(Path::new("."));
        if let Err(e) = check_profile_dir(dir) {
            cx.error(at, format!("calibration folder {} {e}", shown_path(dir)));
            return None;
        }
        let text = match crate::files::read_confined(dir, Path::new(&file), None, MAX_PROFILE_BYTES)
        {
            Ok((_, t)) => t,
            Err(e) => {
                cx.error(at, format!("calibration profile {shown} {e}"));
                return None;
            }
        };
        let id = self
            .sources
            .add_keyed(shown, format!("calibration/{file}"), text.clone());
        match crate::profile::parse(&text) {
            Ok(p) => Some(p),
            Err(errs) => {
                for e in errs {
                    cx.push(
                        Diagnostic::error(Span::new(id, e.span.start, e.span.end), e.message)
                            .with_help_opt(e.help)
                            .with_secondary(at, format!("profile `{name}` used here")),
                    );
                }
                None
            }
        }
    }

    fn shown_dirs(&self) -> String {
        self.dirs
            .iter()
            .map(|d| shown_path(d))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A path as errors show it: relative to the current directory when inside it.
/// The path to show for `p`, relative to the current folder where it is below it. The
/// folder is resolved, the file's own name is not: a symlink shows as itself, never as what
/// it points to.
fn shown_path(p: &Path) -> String {
    let abs = match (
        p.parent().and_then(|d| d.canonicalize().ok()),
        p.file_name(),
    ) {
        (Some(d), Some(f)) => d.join(f),
        _ => p.to_path_buf(),
    };
    std::env::current_dir()
        .ok()
        .and_then(|c| c.canonicalize().ok())
        .and_then(|c| abs.strip_prefix(c).ok().map(Path::to_path_buf))
        .unwrap_or(abs)
        .display()
        .to_string()
}

/// `calibration NAME`: the profile applies to the accelerator it describes.
pub(super) fn calibration_stmt(
    cx: &mut Cx,
    s: &Stmt,
    def: &schema::StmtDef,
) -> Option<(String, Span)> {
    let mut a = Args::new(s, def);
    let r = a
        .req("a calibration profile name such as `h200_datasheet`")
        .and_then(|v| {
            rd::ident(cx, v, "a calibration profile name").map(|n| (n.to_string(), v.span))
        });
    cx.no_block(s);
    a.finish(cx);
    r
}

/// Load every profile the scenario names and attach each to its accelerator.
pub(super) fn attach_profiles(
    cx: &mut Cx,
    spec: &mut Spec,
    calibrations: &[(String, Span)],
    profiles: &mut ProfileFinder,
) {
    // `profile NAME` inside accelerator blocks.
    for acc in spec.accelerators.values() {
        let Some(name) = &acc.profile else { continue };
        let Some(p) = profiles.get(cx, name, acc.profile_span) else {
            continue;
        };
        let described = &p.provenance.accelerator;
        if described != &acc.name && described != &acc.accelerator_type {
            cx.push(
                Diagnostic::warning(
                    acc.profile_span,
                    format!(
                        "profile `{name}` describes accelerator `{described}`, not `{}`",
                        acc.name
                    ),
                )
                .with_help("check that the profile was measured on this device"),
            );
        }
        spec.profiles.insert(name.clone(), p.clone());
    }
    // Top-level `calibration NAME`: the accelerator the profile describes.
    for (name, at) in calibrations {
        let Some(p) = profiles.get(cx, name, *at) else {
            continue;
        };
        let target = p.provenance.accelerator.clone();
        let p = p.clone();
        // A host profile (measured with `--device cpu`) calibrates host memory copies.
        if target == "cpu" && !spec.accelerators.contains_key("cpu") {
            if let Some(other) = &spec.host_profile
                && other != name
            {
                cx.push(Diagnostic::error(
                    *at,
                    format!("the host already uses calibration profile `{other}`"),
                ));
                continue;
            }
            spec.host_profile = Some(name.clone());
            spec.profiles.insert(name.clone(), p);
            continue;
        }
        let Some(acc) = spec.accelerators.get_mut(&target) else {
            let help =
                crate::diag::did_you_mean(&target, spec.accelerators.keys().map(String::as_str))
                    .map(|h| format!("{h} (fix `provenance.accelerator` in the profile)"))
                    .unwrap_or_else(|| {
                        "use `profile NAME` inside the accelerator's block instead".to_string()
                    });
            cx.push(
                Diagnostic::error(
                    *at,
                    format!("profile `{name}` describes accelerator `{target}`, which this scenario does not have"),
                )
                .with_help(help),
            );
            continue;
        };
        match &acc.profile {
            Some(other) if other != name => {
                cx.push(
                    Diagnostic::error(
                        *at,
                        format!(
                            "accelerator `{target}` already uses calibration profile `{other}`"
                        ),
                    )
                    .with_secondary(acc.profile_span, "named here"),
                );
                continue;
            }
            _ => {
                acc.profile = Some(name.clone());
                acc.profile_span = *at;
            }
        }
        spec.profiles.insert(name.clone(), p);
    }
}
