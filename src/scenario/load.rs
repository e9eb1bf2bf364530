//! Loading a scenario: the catalog, the root file and its includes, parsed and resolved into a
//! [`Spec`]. Includes are confined to the root file's folder tree, at most [`MAX_INCLUDE_DEPTH`]
//! deep, and cycles are reported. Calibration profiles named by the scenario are found and
//! read here too ([`profile_dirs`]); their text is parsed by [`crate::profile`].
//! Finding and reading the profiles is `profiles.rs`.
//!
//! Declarations and their registries are `load/decls.rs`; what nodes offer and the scope of
//! requests, `load/scope.rs`.

pub use super::profiles::{
    MAX_PROFILE_BYTES, available_profiles, check_profile_dir, profile_dirs, profile_path,
};
use super::profiles::{ProfileFinder, attach_profiles, calibration_stmt};
use super::reader::{self as rd, Args, Cx};
use super::workload::ResourceScope;
use super::{Spec, cluster, experiment, failure, hardware, model, schema, transport, workload};
use crate::diag::{Diagnostic, FileId, Omitted, SourceMap, Span};
use crate::syntax::{self, Stmt};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod decls;
mod scope;

use decls::{Decl, Registry, decl};
pub use scope::{node_resources, resource_scope};

pub const MAX_INCLUDE_DEPTH: usize = 16;

/// The outcome of loading: the spec when there were no errors, and every diagnostic.
pub struct Loaded {
    pub spec: Option<Spec>,
    pub sources: SourceMap,
    pub diags: Vec<Diagnostic>,
    /// Diagnostics found past the resolver's cap ([`super::reader::MAX_KEPT`]): counted in
    /// every total and the rendered closing line, not kept.
    pub omitted: Omitted,
    pub root: FileId,
    /// The parsed statements before resolving, kept so that sweeps can rewrite and resolve
    /// them again ([`Loaded::with_overrides`]).
    parsed: std::sync::Arc<Parsed>,
}

/// A scenario parsed but not resolved.
struct Parsed {
    items: Vec<(Stmt, Origin)>,
    sources: SourceMap,
    diags: Vec<Diagnostic>,
    dirs: Vec<PathBuf>,
    opts: LoadOptions,
    check: Check,
}

/// A check of a resolved scenario that needs a model above `scenario` (placement's: work no
/// node could ever hold), passed in by `crate::load` so that `scenario` knows nothing of it.
/// Asked only of a scenario without errors, and of each sweep variant; returns what it found.
pub type Check = fn(&Spec, LoadOptions) -> Vec<Diagnostic>;

/// How a scenario is loaded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Work that can never be placed on the declared cluster is a warning, and the run keeps
    /// it pending as Ray would (`--allow-infeasible`), instead of an error.
    pub allow_infeasible: bool,
}

/// One swept value to apply: a parameter (`policy` or a path, see [`super::path`]) and the
/// value as written in the `sweep` line (its span points there).
#[derive(Debug, Clone)]
pub struct Override {
    pub param: String,
    pub value: syntax::Value,
    /// The parameter's span in the `sweep` line.
    pub span: Span,
}

impl Loaded {
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diags.iter().filter(|d| d.is_error())
    }
    pub fn has_errors(&self) -> bool {
        self.errors().next().is_some()
    }
    /// Every error found, kept or only counted.
    pub fn error_count(&self) -> usize {
        self.errors().count() + self.omitted.errors
    }
    /// The diagnostics as text: the first [`crate::diag::MAX_SHOWN`], then one line counting
    /// the rest (omitted ones included).
    pub fn render(&self, color: bool) -> String {
        crate::diag::render_omitting(&self.sources, &self.diags, self.omitted, color)
    }

    /// The scenario with `overrides` applied to its syntax tree, resolved again: a sweep's
    /// variant, validated like a hand-written scenario. `policy` is applied to the resolved
    /// spec (as `run --policy`); paths rewrite the tree first. An error in the variant is
    /// reported at the `sweep` line: where the resolver's error is elsewhere, it is restated
    /// at the swept value with the other place as a secondary label.
    pub fn with_overrides(&self, overrides: &[Override]) -> Loaded {
        let p = &*self.parsed;
        let mut items = p.items.clone();
        let mut cx = Cx::with(p.diags.clone(), Omitted::default());
        let mut policy = None;
        for o in overrides {
            if !super::experiment::is_path(&o.param) {
                if o.param == "policy" {
                    policy = Some(o.value.clone());
                }
                continue;
            }
            let mut top: Vec<&mut Stmt> = items.iter_mut().map(|(s, _)| s).collect();
            if let Err(e) = super::path::apply(&mut top, &o.param, &o.value) {
                cx.push(Diagnostic::error(
                    o.span,
                    format!("cannot sweep `{}`: {e}", o.param),
                ));
            }
        }
        let mut sources = p.sources.clone();
        let mut profiles = ProfileFinder {
            sources: &mut sources,
            dirs: p.dirs.clone(),
            cache: BTreeMap::new(),
        };
        let before = cx.diags.len();
        let mut spec = if cx.diags.iter().any(Diagnostic::is_error) {
            Spec::default()
        } else {
            resolve(&mut cx, &items, &mut profiles)
        };
        run_check(&mut cx, &spec, p.opts, p.check);
        let new: Vec<Diagnostic> = cx.diags.drain(before..).collect();
        for d in new {
            if !d.is_error() || overrides.iter().any(|o| o.value.span == d.span) {
                cx.diags.push(d);
                continue;
            }
            let at = overrides
                .iter()
                .find(|o| super::experiment::is_path(&o.param))
                .map(|o| o.value.span)
                .unwrap_or(d.span);
            let cell = overrides
                .iter()
                .map(|o| format!("{} = {}", o.param, syntax::fmt::inline(&o.value)))
                .collect::<Vec<_>>()
                .join(", ");
            let label = if d.label.is_empty() {
                d.message.clone()
            } else {
                d.label.clone()
            };
            cx.push(
                Diagnostic::error(at, format!("with {cell}: {}", d.message))
                    .with_secondary(d.span, label)
                    .with_help_opt(d.help),
            );
        }
        if let Some(v) = policy
            && let syntax::ValueKind::Ident(n) = &v.kind
        {
            use super::workload::Policy;
            spec = spec.with_policy(match n.as_str() {
                "spread" => Policy::Spread,
                "topology_aware" => Policy::TopologyAware,
                _ => Policy::RayDefault,
            });
        }
        cx.diags.sort_by_key(|d| (d.span.file, d.span.start));
        let has_errors = cx.diags.iter().any(Diagnostic::is_error);
        Loaded {
            spec: (!has_errors).then_some(spec),
            sources,
            diags: cx.diags,
            omitted: cx.omitted,
            root: self.root,
            parsed: self.parsed.clone(),
        }
    }
}

/// Check every path sweep of every experiment: the path must lead somewhere, and each value,
/// applied alone, must give a valid scenario. Errors are located at the `sweep` line.
fn check_sweeps(loaded: &mut Loaded, experiments: &[experiment::Experiment]) {
    for e in experiments {
        for sw in e.sweeps.iter().filter(|s| experiment::is_path(&s.param)) {
            for v in &sw.items {
                let o = Override {
                    param: sw.param.clone(),
                    value: v.clone(),
                    span: sw.span,
                };
                let variant = loaded.with_overrides(std::slice::from_ref(&o));
                // A path that leads nowhere fails for every value: say it once.
                let path_error = variant.errors().any(|d| d.span == sw.span);
                loaded.omitted.errors += variant.omitted.errors;
                for d in variant.errors() {
                    if loaded.diags.len() < super::reader::MAX_KEPT {
                        loaded.diags.push(d.clone());
                    } else {
                        loaded.omitted.count(d.severity);
                    }
                }
                if path_error {
                    break;
                }
            }
        }
    }
}

/// Where top-level statements came from: the built-in catalog may be overridden.
#[derive(Clone, Copy, PartialEq)]
enum Origin {
    Catalog,
    User,
}

struct Loader {
    sources: SourceMap,
    diags: Vec<Diagnostic>,
    items: Vec<(Stmt, Origin)>,
    /// Folder includes must stay inside; none for in-memory scenarios.
    root_dir: Option<PathBuf>,
    stack: Vec<PathBuf>,
}

/// Resolve a scenario file, then `check` it. Fails only when the root file itself cannot be
/// read. `crate::load_file` is this with the checks of the layers above.
pub fn resolve_file(path: &Path, opts: LoadOptions, check: Check) -> Result<Loaded, String> {
    let text = crate::files::read_text(path, crate::files::MAX_INPUT_BYTES)
        .map_err(|e| format!("{} {e}", path.display()))?;
    let canon = path
        .canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", path.display()))?;
    let root_dir = canon.parent().map(Path::to_path_buf);
    let name = path.display().to_string();
    Ok(load(&name, &text, root_dir, Some(canon), opts, check))
}

/// Resolve a scenario held in memory (built-in scenarios, tests; `include` is not available),
/// then `check` it.
pub fn resolve_str(name: &str, text: &str, opts: LoadOptions, check: Check) -> Loaded {
    load(name, text, None, None, opts, check)
}

/// The findings of `check`, for a scenario without other errors.
fn run_check(cx: &mut Cx, spec: &Spec, opts: LoadOptions, check: Check) {
    if cx.diags.iter().any(Diagnostic::is_error) {
        return;
    }
    for d in check(spec, opts) {
        cx.push(d);
    }
}

fn load(
    name: &str,
    text: &str,
    root_dir: Option<PathBuf>,
    canon: Option<PathBuf>,
    opts: LoadOptions,
    check: Check,
) -> Loaded {
    let mut l = Loader {
        sources: SourceMap::new(),
        diags: Vec::new(),
        items: Vec::new(),
        root_dir,
        stack: Vec::new(),
    };
    let (catalog, catalog_diags) = parsed_catalog();
    for (fname, ftext) in crate::catalog::FILES {
        l.sources.add(*fname, *ftext);
    }
    l.diags.extend(catalog_diags.iter().cloned());
    l.items
        .extend(catalog.iter().map(|s| (s.clone(), Origin::Catalog)));
    let root = l.sources.add_keyed(name, "", text);
    let dirs = profile_dirs(l.root_dir.as_deref());
    l.file(root, text, canon, 0);
    let mut cx = Cx::with(std::mem::take(&mut l.diags), Omitted::default());
    let mut profiles = ProfileFinder {
        sources: &mut l.sources,
        dirs,
        cache: BTreeMap::new(),
    };
    // Kept for sweeps, which rewrite and resolve them again; resolving only reads them.
    let parsed = Parsed {
        items: l.items,
        sources: profiles.sources.clone(),
        diags: cx.diags.clone(),
        dirs: profiles.dirs.clone(),
        opts,
        check,
    };
    let spec = resolve(&mut cx, &parsed.items, &mut profiles);
    run_check(&mut cx, &spec, opts, check);
    let has_errors = cx.diags.iter().any(Diagnostic::is_error);
    let experiments = spec.experiments.clone();
    let mut loaded = Loaded {
        spec: (!has_errors).then_some(spec),
        sources: l.sources,
        diags: cx.diags,
        omitted: cx.omitted,
        root,
        parsed: std::sync::Arc::new(parsed),
    };
    if !has_errors {
        check_sweeps(&mut loaded, &experiments);
        if loaded.has_errors() {
            loaded.spec = None;
        }
    }
    // Report in file order, as a reader meets the problems.
    loaded.diags.sort_by_key(|d| (d.span.file, d.span.start));
    loaded
}

/// The catalog's statements, parsed once per process. Catalog files always take the first
/// file ids of a [`SourceMap`], in [`crate::catalog::FILES`] order, so the spans stay valid.
fn parsed_catalog() -> &'static (Vec<Stmt>, Vec<Diagnostic>) {
    static CATALOG: std::sync::OnceLock<(Vec<Stmt>, Vec<Diagnostic>)> = std::sync::OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut stmts = Vec::new();
        let mut diags = Vec::new();
        for (id, (_, text)) in crate::catalog::FILES.iter().enumerate() {
            let (file, d) = syntax::parse(text, id);
            diags.extend(d);
            stmts.extend(file.stmts);
        }
        (stmts, diags)
    })
}

impl Loader {
    fn file(&mut self, id: FileId, text: &str, canon: Option<PathBuf>, depth: usize) {
        let (file, d) = syntax::parse(text, id);
        self.diags.extend(d);
        if let Some(c) = &canon {
            self.stack.push(c.clone());
        }
        // Moved over from the back of the parsed vector, which is shrunk as it empties, so a
        // file's statements are held about once, not twice, at the peak: a 16 MiB file of
        // one-word statements is over a million of them (issue 42).
        let mut stmts = file.stmts;
        stmts.reverse();
        self.items.reserve(stmts.len());
        while let Some(s) = stmts.pop() {
            if stmts.len() % (1 << 16) == 0 {
                stmts.shrink_to_fit();
            }
            if s.key.name == "include" {
                self.include(&s, canon.as_deref(), depth);
            } else {
                self.items.push((s, Origin::User));
            }
        }
        if canon.is_some() {
            self.stack.pop();
        }
    }

    fn include(&mut self, s: &Stmt, from: Option<&Path>, depth: usize) {
        let mut cx = Cx::default();
        let mut a = Args::new(s, &schema::TOP[0]);
        let path = a
            .req("a file path in quotes")
            .and_then(|v| rd::string(&mut cx, v).map(|p| (p.to_string(), v.span)));
        cx.no_block(s);
        a.finish(&mut cx);
        self.diags.append(&mut cx.diags);
        let Some((rel, span)) = path else { return };
        let err = |msg: String| Diagnostic::error(span, msg);
        let (Some(root), Some(from)) = (&self.root_dir, from) else {
            self.diags.push(err(
                "`include` is only available in scenario files on disk".into()
            ));
            return;
        };
        if depth + 1 > MAX_INCLUDE_DEPTH {
            self.diags.push(err(format!(
                "includes nest deeper than {MAX_INCLUDE_DEPTH} files"
            )));
            return;
        }
        let target = from.parent().unwrap_or(Path::new(".")).join(&rel);
        let canon = match target.canonicalize() {
            Ok(c) => c,
            Err(e) => {
                self.diags.push(err(format!("cannot include `{rel}`: {e}")));
                return;
            }
        };
        if !canon.starts_with(root) {
            self.diags.push(
                err(format!("`{rel}` is outside the scenario's folder"))
                    .with_help(format!("included files must be inside {}", root.display())),
            );
            return;
        }
        if self.stack.contains(&canon) {
            self.diags.push(err(format!(
                "`{rel}` includes itself (directly or through other files)"
            )));
            return;
        }
        let text = match crate::files::read_text(&canon, crate::files::MAX_INPUT_BYTES) {
            Ok(t) => t,
            Err(e) => {
                self.diags.push(err(format!("`{rel}` {e}")));
                return;
            }
        };
        let shown = canon
            .strip_prefix(root)
            .map(|p| p.display().to_string())
            .unwrap_or(rel.clone());
        let id = self.sources.add(shown, text.clone());
        self.file(id, &text, Some(canon), depth + 1);
    }
}

fn resolve(cx: &mut Cx, items: &[(Stmt, Origin)], profiles: &mut ProfileFinder) -> Spec {
    // Sort declarations by kind, reporting unknown top-level keywords.
    let mut by_kind: BTreeMap<&'static str, Vec<Decl>> = BTreeMap::new();
    let mut calibrations: Vec<(String, Span)> = Vec::new();
    for (s, origin) in items {
        let Some(def) = cx.find_def(s, schema::TOP, "a scenario") else {
            continue;
        };
        if def.key == "calibration" {
            calibrations.extend(calibration_stmt(cx, s, def));
        } else if let Some(d) = decl(cx, s, def, *origin, def.key == "failures") {
            by_kind.entry(def.key).or_default().push(d);
        }
    }
    let mut spec = Spec::default();

    let mut accs = Registry::new();
    for d in by_kind.remove("accelerator").unwrap_or_default() {
        let Ok(base) = accs.base(cx, "accelerator", &d) else {
            continue;
        };
        if let Some(a) = hardware::accelerator(cx, &d.name, d.span, base.as_ref(), d.body()) {
            accs.add(cx, "accelerator", &d, a, &mut spec.overridden);
        }
    }
    let mut nics = Registry::new();
    for d in by_kind.remove("nic").unwrap_or_default() {
        let Ok(base) = nics.base(cx, "NIC", &d) else {
            continue;
        };
        if let Some(n) = hardware::nic(cx, &d.name, d.span, base.as_ref(), d.body()) {
            nics.add(cx, "NIC", &d, n, &mut spec.overridden);
        }
    }
    spec.accelerators = accs.into_map();
    spec.nics = nics.into_map();
    attach_profiles(cx, &mut spec, &calibrations, profiles);
    let mut nodes = Registry::new();
    for d in by_kind.remove("node").unwrap_or_default() {
        let Ok(base) = nodes.base(cx, "node type", &d) else {
            continue;
        };
        let hw = hardware::HardwareNames {
            accelerators: &spec.accelerators,
            nics: &spec.nics,
        };
        if let Some(n) = hardware::node_type(cx, &hw, &d.name, d.span, base.as_ref(), d.body()) {
            nodes.add(cx, "node type", &d, n, &mut spec.overridden);
        }
    }
    spec.node_types = nodes.into_map();

    let mut transport_names: BTreeMap<String, Span> = BTreeMap::new();
    for d in by_kind.remove("transport").unwrap_or_default() {
        if let Some(&first) = transport_names.get(&d.name) {
            cx.push(
                Diagnostic::error(d.span, format!("transport `{}` is declared twice", d.name))
                    .with_secondary(first, "first declared here"),
            );
            continue;
        }
        transport_names.insert(d.name.clone(), d.span);
        spec.transports
            .extend(transport::transport(cx, &d.name, d.span, d.body()));
    }

    let model_decls = by_kind.remove("model").unwrap_or_default();
    let model_decls: Vec<model::ModelDecl> = model_decls
        .iter()
        .map(|d| model::ModelDecl {
            name: &d.name,
            span: d.span,
            base: d.extra.as_ref().map(|(b, sp)| (b.as_str(), *sp)),
            body: d.body(),
        })
        .collect();
    let declared = model::declare(cx, &model_decls);
    spec.models = declared
        .iter()
        .filter_map(|(k, t)| Some((k.clone(), t.clone()?)))
        .collect();

    let clusters = by_kind.remove("cluster").unwrap_or_default();
    if let Some(second) = clusters.get(1) {
        cx.push(
            Diagnostic::error(second.span, "a scenario has at most one cluster")
                .with_secondary(clusters[0].span, "the first cluster")
                .with_help("compare clusters by putting each in its own scenario file (`orrery compare A.orr B.orr`)"),
        );
    }
    if let Some(d) = clusters.first() {
        spec.cluster = Some(cluster::cluster(
            cx,
            &spec.node_types,
            &spec.nics,
            &d.name,
            d.span,
            d.body(),
        ));
    }

    let mut scope = resource_scope(&spec);
    scope.models = declared;
    let mut tenant_names: BTreeMap<String, Span> = BTreeMap::new();
    for d in by_kind.remove("tenant").unwrap_or_default() {
        if let Some(first) = tenant_names.get(&d.name) {
            cx.push(
                Diagnostic::error(d.span, format!("tenant `{}` is declared twice", d.name))
                    .with_secondary(*first, "first declared here"),
            );
            continue;
        }
        tenant_names.insert(d.name.clone(), d.span);
        spec.tenants
            .push(workload::tenant(cx, &scope, &d.name, d.span, d.body()));
    }
    workload::check_tenant_refs(cx, &spec.tenants);
    let mut workload_names: BTreeMap<String, Span> = BTreeMap::new();
    for d in by_kind.remove("workload").unwrap_or_default() {
        if let Some(first) = workload_names.get(&d.name) {
            cx.push(
                Diagnostic::error(d.span, format!("workload `{}` is declared twice", d.name))
                    .with_secondary(*first, "first declared here"),
            );
            continue;
        }
        workload_names.insert(d.name.clone(), d.span);
        if let Some((t, sp)) = &d.extra
            && !tenant_names.contains_key(t)
        {
            let help = crate::diag::did_you_mean(t, tenant_names.keys().map(String::as_str))
                .unwrap_or_else(|| format!("declare it with `tenant {t} {{ ... }}`"));
            cx.push(Diagnostic::error(*sp, format!("unknown tenant `{t}`")).with_help(help));
        }
        let tenant = d.extra.as_ref().map(|(t, _)| t.clone());
        let rules = tenant
            .as_ref()
            .and_then(|t| spec.tenants.iter().find(|x| &x.name == t));
        let w = workload::workload(cx, &scope, &d.name, d.span, tenant.clone(), rules, d.body());
        spec.workloads.push(w);
    }

    for d in by_kind.remove("failures").unwrap_or_default() {
        let name = (!d.name.is_empty()).then(|| d.name.clone());
        spec.failures.push(failure::failures(
            cx,
            spec.cluster.as_ref(),
            &spec.node_types,
            name,
            d.body(),
        ));
    }
    for d in by_kind.remove("experiment").unwrap_or_default() {
        spec.experiments
            .push(experiment::experiment(cx, &d.name, d.span, d.body()));
    }
    spec
}
