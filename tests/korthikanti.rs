//! The four full-recomputation runs of Korthikanti et al. 2022 (Table 5, Selene, A100 80GB),
//! shipped as scenarios/korthikanti/*.orr, run as model-level jobs: the README's table of
//! predicted against published iteration times is what the simulation gives (so it stays
//! true), and each prediction is a plain model output, not fitted to the figure it is
//! compared with.

use std::path::Path;

use orrery::sim::{SimConfig, simulate};

/// (scenario, model, GPUs, published seconds per iteration: Table 5, "full recompute").
const RUNS: [(&str, &str, u32, f64); 4] = [
    ("22b", "22B", 8, 1.42),
    ("175b", "175B (GPT-3)", 64, 18.13),
    ("530b", "530B (MT-NLG)", 280, 49.05),
    ("1t", "1T", 512, 94.42),
];

fn predicted(file: &str) -> (f64, u32) {
    let path = format!("scenarios/korthikanti/{file}.orr");
    let l = orrery::spec::load_file(Path::new(&path)).unwrap();
    assert!(!l.has_errors(), "{}", l.render(false));
    let r = simulate(l.spec.as_ref().unwrap(), &SimConfig::default());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(
        r.network_models.iter().all(|m| m.on_graph),
        "{:?}",
        r.network_models
    );
    let t = &r.metrics.training[0];
    assert_eq!(t.steps_done, 2, "{t:?}");
    (t.step_time, t.devices)
}

/// The README's rows, as the simulation gives them.
fn rows() -> String {
    let mut out = String::new();
    for (file, name, gpus, published) in RUNS {
        let (secs, devices) = predicted(file);
        assert_eq!(devices, gpus, "{file}");
        let err = 100.0 * (secs / published - 1.0);
        out += &format!("| {name} | {gpus} | {published:.2} s | {secs:.2} s | {err:+.0}% |\n");
    }
    out
}

#[test]
fn the_readme_table_is_what_the_simulation_predicts() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let start = "<!-- korthikanti:begin -->\n";
    let body = readme
        .split_once(start)
        .and_then(|(_, rest)| rest.split_once("<!-- korthikanti:end -->"))
        .map(|(b, _)| b)
        .expect("README has the korthikanti table between its markers");
    let head = "| model | GPUs | published | Orrery | error |\n|---|---|---|---|---|\n";
    assert_eq!(
        body,
        format!("{head}{}", rows()),
        "update README.md's table"
    );
}
