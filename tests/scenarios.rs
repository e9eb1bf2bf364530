//! Every file in scenarios/ parses, validates and is in canonical form; the built-in default
//! is the quickstart file.

use std::path::{Path, PathBuf};

fn orr_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(orr_files(&p));
        } else if p.extension().is_some_and(|x| x == "orr") {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn every_scenario_validates_and_is_canonical() {
    let files = orr_files(Path::new("scenarios"));
    for needed in [
        "quickstart.orr",
        "h100_vs_mi300x/h100.orr",
        "h100_vs_mi300x/mi300x.orr",
        "tpu_slices.orr",
        "failure_drill.orr",
    ] {
        assert!(
            files.iter().any(|f| f.ends_with(needed)),
            "scenarios/{needed} is missing"
        );
    }
    for f in &files {
        let l = orrery::spec::load_file(f).unwrap();
        assert!(
            !l.has_errors(),
            "{} does not validate:\n{}",
            f.display(),
            l.render(false)
        );
        assert!(
            l.diags.is_empty(),
            "{} has warnings:\n{}",
            f.display(),
            l.render(false)
        );
        let text = std::fs::read_to_string(f).unwrap();
        let (tree, _) = orrery::syntax::parse(&text, 0);
        assert_eq!(
            orrery::syntax::fmt::format(&tree).unwrap(),
            text,
            "{} is not canonical: run `orrery fmt --write`",
            f.display()
        );
    }
}

#[test]
fn the_default_scenario_is_the_quickstart_file() {
    let on_disk = std::fs::read_to_string(orrery::DEFAULT_SCENARIO.0).unwrap();
    assert_eq!(on_disk, orrery::DEFAULT_SCENARIO.1);
    let l = orrery::spec::load_str(orrery::DEFAULT_SCENARIO.0, orrery::DEFAULT_SCENARIO.1);
    let spec = l.spec.expect("default scenario validates");
    assert!(spec.cluster.is_some() && !spec.workloads.is_empty() && !spec.experiments.is_empty());
}

#[test]
fn comparison_scenarios_share_their_workload() {
    let h = orrery::spec::load_file(Path::new("scenarios/h100_vs_mi300x/h100.orr"))
        .unwrap()
        .spec
        .unwrap();
    let m = orrery::spec::load_file(Path::new("scenarios/h100_vs_mi300x/mi300x.orr"))
        .unwrap()
        .spec
        .unwrap();
    let names = |s: &orrery::spec::Spec| {
        s.workloads
            .iter()
            .map(|w| w.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&h), names(&m));
    let devices = |s: &orrery::spec::Spec| {
        orrery::summary::summarize(s)
            .devices_by_type
            .values()
            .sum::<u64>()
    };
    assert_eq!(
        devices(&h),
        devices(&m),
        "a fair comparison uses equal device counts"
    );
}
