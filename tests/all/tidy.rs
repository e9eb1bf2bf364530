//! Tidy checks (issue 43), run with the tests: every Rust file opens with a `//!` comment
//! saying what it is for; a `src` file over 600 lines says why at its top and is on
//! [`LONG_FILES`], which may only shrink; a `src` function over 100 lines is on
//! [`LONG_FUNCTIONS`], which may only shrink (TigerBeetle's ratchet); every `src` file is named
//! in ARCHITECTURE.md's code map; every file of `tests/all/` is a module of `main.rs` (one left
//! out would silently never run).
//!
//! Functions are found as rustfmt lays them out: a line `fn NAME` (after `pub`, `const`,
//! `async` or `unsafe`) whose body opens on it or the lines after, and closes with a `}` at the
//! same indentation.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 100;
/// What the top of a long file says.
const WHY: &str = "//! Why over 600 lines:";

/// Files over 600 lines today, at their length today: each may get shorter (then lower its
/// figure here, or drop it once under 600), never longer.
const LONG_FILES: &[(&str, usize)] = &[];

/// Functions over 100 lines today, at their length today (file, name, lines): each may get
/// shorter, never longer; one cut to 100 lines or fewer must leave the list.
const LONG_FUNCTIONS: &[(&str, &str, usize)] = &[
    ("src/accuracy/predict.rs", "predict", 103),
    ("src/accuracy/serving_rows.rs", "entry", 141),
    ("src/accuracy/table.rs", "parse", 220),
    ("src/sim/estimate.rs", "estimate", 142),
    ("src/calibrate/cuda.rs", "measure", 237),
    ("src/calibrate/cuda_kernels.rs", "measure", 132),
    ("src/calibrate/fit.rs", "fit_path", 159),
    ("src/calibrate/import/mod.rs", "import", 191),
    ("src/calibrate/import/nccl_tests.rs", "parse", 155),
    ("src/calibrate/import/nvbandwidth.rs", "parse_json", 190),
    ("src/calibrate/import/nvbandwidth.rs", "parse_plain", 143),
    ("src/calibrate/import/perftest.rs", "from_header", 102),
    ("src/calibrate/import/perftest.rs", "parse", 117),
    ("src/calibrate/import/points.rs", "collectives", 108),
    ("src/calibrate/import/points.rs", "rdma", 133),
    ("src/calibrate/mod.rs", "summary", 116),
    ("src/calibrate/node_block.rs", "node_block", 149),
    ("src/calibrate/validate/devices.rs", "checks", 127),
    ("src/calibrate/validate/network.rs", "checks", 175),
    ("src/report/catalog.rs", "render", 118),
    ("src/cli/drill.rs", "drill", 152),
    ("src/cli/run.rs", "run", 110),
    ("src/cli/sweep.rs", "sweep", 138),
    ("src/experiment/collectives.rs", "table", 106),
    ("src/experiment/compare.rs", "compare", 102),
    ("src/experiment/drill.rs", "run_drill", 115),
    ("src/experiment/sweep.rs", "merge", 119),
    ("src/model/ops.rs", "layer_kernels_with", 105),
    ("src/model/work.rs", "step_work_with", 165),
    ("src/network/collective/tuning.rs", "estimate", 159),
    ("src/network/graph/build.rs", "build_cluster", 298),
    ("src/network/graph.rs", "nccl_comm", 109),
    ("src/network/graph/routes.rs", "route_vertices", 103),
    ("src/network/rebuild.rs", "rebuild", 102),
    ("src/outputs/drill.rs", "write", 103),
    ("src/outputs/run.rs", "write", 308),
    ("src/outputs/sweep.rs", "write", 141),
    ("src/outputs/timeline.rs", "timeline_rows", 191),
    ("src/placement/bundle.rs", "place_on", 117),
    ("src/placement/bundle_explain.rs", "fill_explain", 127),
    ("src/placement/feasible.rs", "never_placed", 167),
    ("src/placement/feasible.rs", "why_group", 198),
    ("src/placement/state/build.rs", "from_spec", 318),
    ("src/placement/strategies.rs", "run", 228),
    ("src/placement/task.rs", "hybrid_pass", 157),
    ("src/placement/topology.rs", "topology_aware_why", 103),
    ("src/plot/bars.rs", "draw", 150),
    ("src/plot/drill.rs", "draw", 115),
    ("src/profile/load.rs", "validate", 134),
    ("src/profile/paths.rs", "validate", 114),
    ("src/raycluster/kuberay.rs", "group", 119),
    ("src/raycluster/kuberay.rs", "read", 144),
    ("src/raycluster/launcher.rs", "read", 125),
    ("src/raycluster/plan.rs", "one", 120),
    ("src/raycluster/yaml.rs", "parse", 142),
    ("src/report/mod.rs", "table", 279),
    ("src/sim/failures/devices.rs", "device_fault", 119),
    ("src/sim/failures/nodes.rs", "node_crash_one", 120),
    ("src/sim/failures/schedule.rs", "schedule_failures", 208),
    ("src/sim/finish.rs", "finish", 289),
    ("src/sim/llm/metrics.rs", "llm_metrics", 153),
    ("src/sim/llm/pipeline.rs", "llm_pipe", 112),
    ("src/sim/llm/run.rs", "llm_replica_up", 143),
    ("src/sim/placement_groups.rs", "try_pg", 105),
    ("src/scenario/cluster/read.rs", "cluster", 265),
    ("src/scenario/cluster/read.rs", "placement", 125),
    ("src/scenario/experiment.rs", "experiment", 147),
    ("src/scenario/failure.rs", "failures", 144),
    ("src/scenario/failure.rs", "target", 110),
    ("src/scenario/hardware/devices.rs", "accelerator", 164),
    ("src/scenario/hardware/node.rs", "node_type", 256),
    ("src/scenario/layout.rs", "read", 107),
    ("src/scenario/layout_rules.rs", "layout_fits", 142),
    ("src/scenario/load.rs", "resolve", 158),
    ("src/scenario/model.rs", "build", 105),
    ("src/scenario/placement_group.rs", "placement_group", 115),
    ("src/scenario/serving.rs", "finish", 211),
    ("src/scenario/topology/links.rs", "link", 294),
    ("src/scenario/topology/mod.rs", "switch", 103),
    ("src/scenario/topology/resolve.rs", "resolve", 183),
    ("src/scenario/workload/read.rs", "tenant", 154),
    ("src/scenario/workload/block.rs", "workload", 184),
    ("src/summary.rs", "fmt", 161),
    ("src/summary.rs", "summarize", 175),
    ("src/trace/mod.rs", "perfetto", 144),
    ("src/trace/network.rs", "push", 170),
    ("src/transport/exec.rs", "run_plans", 102),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn files(dir: &str) -> Vec<(String, String)> {
    let mut paths = Vec::new();
    rust_files(Path::new(dir), &mut paths);
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p.display().to_string().replace('\\', "/"), text)
        })
        .collect()
}

/// Every function of `text` over [`MAX_FN_LINES`] lines: (name, lines), the longest of a name.
fn long_functions(text: &str) -> BTreeMap<String, usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: BTreeMap<String, usize> = BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let mut rest = trimmed;
        if let Some(r) = rest.strip_prefix("pub") {
            rest = match r.strip_prefix('(') {
                Some(r) => r.split_once(')').map_or("", |(_, r)| r),
                None => r,
            }
            .trim_start();
        }
        for q in ["const ", "async ", "unsafe ", "extern \"C\" "] {
            rest = rest.strip_prefix(q).unwrap_or(rest);
        }
        let Some(sig) = rest.strip_prefix("fn ") else {
            continue;
        };
        let name: String = sig
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The line that opens the body (a declaration without one ends in `;`).
        let Some(open) = (i..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';') || l.ends_with('}')
        }) else {
            continue;
        };
        if !lines[open].trim_end().ends_with('{') {
            continue;
        }
        let close = format!("{indent}}}");
        let Some(end) = (open + 1..lines.len()).find(|&j| lines[j] == close) else {
            continue;
        };
        let n = end - i + 1;
        if n > MAX_FN_LINES {
            let e = out.entry(name).or_default();
            *e = (*e).max(n);
        }
    }
    out
}

#[test]
fn every_rust_file_opens_with_a_doc_comment() {
    let mut bad = Vec::new();
    for dir in ["src", "tests"] {
        for (path, text) in files(dir) {
            if path.starts_with("tests/fixtures") || path.starts_with("tests/fuzz_found") {
                continue;
            }
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            if !first.starts_with("//!") {
                bad.push(path);
            }
        }
    }
    assert!(bad.is_empty(), "files not opening with `//!`: {bad:?}");
}

#[test]
fn long_files_say_why_and_only_shrink() {
    let listed: BTreeMap<&str, usize> = LONG_FILES.iter().copied().collect();
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for (path, text) in files("src") {
        let n = text.lines().count();
        if n <= MAX_FILE_LINES {
            if listed.contains_key(path.as_str()) {
                problems.push(format!("{path}: {n} lines now: take it off LONG_FILES"));
            }
            // A file that has come under the limit no longer says why it is over it.
            if text
                .lines()
                .take_while(|l| l.starts_with("//!"))
                .any(|l| l.starts_with(WHY))
            {
                problems.push(format!(
                    "{path}: {n} lines, yet its top says why it is over {MAX_FILE_LINES}: \
                     take that line off"
                ));
            }
            continue;
        }
        seen.push(path.clone());
        match listed.get(path.as_str()) {
            None => problems.push(format!(
                "{path}: {n} lines, over {MAX_FILE_LINES}: split it (a new long file is not \
                 listed)"
            )),
            Some(&max) if n > max => problems.push(format!(
                "{path}: {n} lines, longer than its {max} on LONG_FILES: it may only shrink"
            )),
            Some(&max) if n < max => problems.push(format!(
                "{path}: {n} lines, shorter than its {max} on LONG_FILES: lower the figure"
            )),
            Some(_) => {}
        }
        let top: Vec<&str> = text.lines().take_while(|l| l.starts_with("//!")).collect();
        if !top.iter().any(|l| l.starts_with(WHY)) {
            problems.push(format!(
                "{path}: over {MAX_FILE_LINES} lines without `{WHY}` at its top"
            ));
        }
    }
    for (path, _) in LONG_FILES {
        if !seen.iter().any(|p| p == path) && !Path::new(path).exists() {
            problems.push(format!("{path} is on LONG_FILES but does not exist"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn long_functions_only_shrink() {
    let mut listed: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (f, name, n) in LONG_FUNCTIONS {
        listed.insert((f, name), *n);
    }
    let mut problems = Vec::new();
    let mut found: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (path, text) in files("src") {
        for (name, n) in long_functions(&text) {
            found.insert((path.clone(), name), n);
        }
    }
    for ((path, name), n) in &found {
        match listed.get(&(path.as_str(), name.as_str())) {
            None => problems.push(format!(
                "{path}: fn {name} is {n} lines, over {MAX_FN_LINES}: split it"
            )),
            Some(&max) if *n > max => problems.push(format!(
                "{path}: fn {name} is {n} lines, longer than its {max} on LONG_FUNCTIONS"
            )),
            Some(&max) if *n < max => problems.push(format!(
                "{path}: fn {name} is {n} lines, shorter than its {max}: lower the figure"
            )),
            Some(_) => {}
        }
    }
    for ((path, name), max) in &listed {
        if !found.contains_key(&(path.to_string(), name.to_string())) {
            problems.push(format!(
                "{path}: fn {name} (listed at {max}) is {MAX_FN_LINES} lines or fewer, or gone: \
                 take it off LONG_FUNCTIONS"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_function_finder_measures_what_rustfmt_lays_out() {
    let body = "        x += 1;\n".repeat(MAX_FN_LINES);
    let text = format!(
        "impl A {{\n    pub(crate) fn long(&self) {{\n{body}    }}\n\n    fn short() {{}}\n}}\n\nfn decl();\n"
    );
    let found = long_functions(&text);
    assert_eq!(found.get("long"), Some(&(MAX_FN_LINES + 2)));
    assert_eq!(found.len(), 1, "{found:?}");
}

#[test]
fn every_src_file_is_in_the_code_map() {
    let map = std::fs::read_to_string("ARCHITECTURE.md").unwrap();
    let mut missing = Vec::new();
    for (path, _) in files("src") {
        let p = Path::new(&path);
        let name = p.file_name().unwrap().to_str().unwrap();
        let dir = p.parent().unwrap().display().to_string();
        let folder = p.parent().unwrap().file_name().unwrap().to_str().unwrap();
        let named = map.contains(&path)
            || if name == "mod.rs" {
                map.contains(&format!("{dir}/"))
            } else {
                map.contains(name)
                    && (map.contains(&format!("{dir}/")) || map.contains(&format!("{folder}/")))
            };
        if !named {
            missing.push(path);
        }
    }
    assert!(
        missing.is_empty(),
        "not in ARCHITECTURE.md's code map: {missing:?}"
    );
}

#[test]
fn every_file_of_tests_all_is_a_module() {
    let main = std::fs::read_to_string("tests/all/main.rs").unwrap();
    let mut missing = Vec::new();
    for (path, _) in files("tests/all") {
        let stem = Path::new(&path)
            .file_stem()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        if stem != "main" && !main.lines().any(|l| l == format!("mod {stem};")) {
            missing.push(path);
        }
    }
    assert!(
        missing.is_empty(),
        "not declared in tests/all/main.rs (never run): {missing:?}"
    );
}
