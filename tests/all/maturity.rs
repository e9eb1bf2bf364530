//! Maturity tiers are computed from evidence (`orrery::maturity`): datasheet figures, a
//! measured or imported profile (calibrated), and held-out predictions within the bound plus a
//! passing `validate --record` on the profile's own host (validated). `check`, run reports and
//! `compare` show them; a comparison across tiers warns.

use orrery::calibrate::record::append_validation;
use orrery::maturity::{HOLDOUT_BOUND, of_spec};
use orrery::profile::schema::ValidationRecord;
use orrery::scenario::hardware::Tier;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn orrery(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A project folder (its own `.git` stops the profile search) with an imported H100 profile
/// `h100_imp`, fitted from the nccl-tests allreduce and allgather fixtures of host `dgx01`.
fn project(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-maturity-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(d.join("calibration")).unwrap();
    fs::create_dir_all(d.join(".git")).unwrap();
    let out = d.join("calibration/h100_imp.toml");
    let (code, _, err) = orrery(&[
        "calibrate",
        "import",
        "tests/fixtures/import/dgx_h100_all_reduce_perf.txt",
        "tests/fixtures/import/dgx_h100_all_gather_perf.txt",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    d
}

const CLUSTER: &str = "cluster c {\n  rack r {\n    node box x 2\n  }\n}\n";

fn scenario(dir: &Path, profile: Option<&str>) -> PathBuf {
    let acc = match profile {
        Some(p) => format!("accelerator H100_SXM from H100_SXM {{\n  profile {p}\n}}\n"),
        None => String::new(),
    };
    let f = dir.join("s.orr");
    fs::write(
        &f,
        format!(
            "{acc}node box {{\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  device H100_SXM x 8 link switch\n}}\n{CLUSTER}"
        ),
    )
    .unwrap();
    f
}

fn spec(f: &Path) -> orrery::scenario::Spec {
    let l = orrery::load_file(f).unwrap();
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn record(host: &str, date: &str, mismatches: u32) -> ValidationRecord {
    ValidationRecord {
        date: date.into(),
        host: host.into(),
        node_type: "box".into(),
        scenario: "s.orr".into(),
        orrery_version: "0.1.0".into(),
        matched: 20,
        mismatches,
        unknown: 1,
        devices: vec!["NVIDIA H100 80GB HBM3".into(); 8],
    }
}

fn with_records(dir: &Path, recs: &[ValidationRecord]) {
    let p = dir.join("calibration/h100_imp.toml");
    let mut text = fs::read_to_string(&p).unwrap();
    for r in recs {
        text = append_validation(&text, r).unwrap();
    }
    fs::write(&p, text).unwrap();
}

fn tier(dir: &Path) -> (Tier, String) {
    let m = of_spec(&spec(&dir.join("s.orr")));
    assert_eq!(m.len(), 1, "{m:?}");
    (m[0].tier, m[0].evidence.clone())
}

#[test]
fn tiers_follow_the_evidence() {
    // No profile: the declared figures' tier.
    let d = project("ladder");
    scenario(&d, None);
    let (t, why) = tier(&d);
    assert_eq!(t, Tier::Datasheet, "{why}");
    assert!(why.contains("no calibration profile"), "{why}");
    // A datasheet-derived profile does not raise it.
    fs::copy(
        "calibration/h200_datasheet.toml",
        d.join("calibration/h200_datasheet.toml"),
    )
    .unwrap();
    scenario(&d, Some("h200_datasheet"));
    let (t, why) = tier(&d);
    assert_eq!(t, Tier::Datasheet, "{why}");
    assert!(why.contains("datasheet-derived"), "{why}");
    // An imported profile with held-out errors within the bound, not yet validated.
    scenario(&d, Some("h100_imp"));
    let (t, why) = tier(&d);
    assert_eq!(t, Tier::Calibrated, "{why}");
    assert!(
        why.contains("held-out error ≤")
            && why.contains("no `orrery validate --record` run recorded"),
        "{why}"
    );
    // Validated elsewhere: not this profile's hardware.
    with_records(&d, &[record("other-box", "2026-12-03T10:00:00Z", 0)]);
    let (t, why) = tier(&d);
    assert_eq!(t, Tier::Calibrated, "{why}");
    assert!(why.contains("only on other hosts"), "{why}");
    // Validated on the host the fixture names (`dgx01`): validated.
    with_records(&d, &[record("dgx01", "2026-12-03T11:00:00Z", 0)]);
    let (t, why) = tier(&d);
    assert_eq!(t, Tier::Validated, "{why}");
    assert!(
        why.contains("validated on dgx01 2026-12-03T11:00:00Z"),
        "{why}"
    );
    // A newer failing validation on that host takes it back.
    with_records(&d, &[record("dgx01", "2026-12-03T12:00:00Z", 2)]);
    let (t, why) = tier(&d);
    assert_eq!(t, Tier::Calibrated, "{why}");
    assert!(why.contains("found 2 mismatches"), "{why}");
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn a_heldout_error_above_the_bound_is_not_validated() {
    let d = project("bound");
    scenario(&d, Some("h100_imp"));
    with_records(&d, &[record("dgx01", "2026-12-03T11:00:00Z", 0)]);
    assert_eq!(tier(&d).0, Tier::Validated);
    // Raise every recorded held-out error above the bound.
    let p = d.join("calibration/h100_imp.toml");
    let text = fs::read_to_string(&p).unwrap();
    let bad = 2.0 * HOLDOUT_BOUND;
    let text: String = text
        .lines()
        .map(|l| {
            if l.starts_with("median_abs_rel_error") || l.starts_with("max_abs_rel_error") {
                format!("{} = {bad}", l.split(" =").next().unwrap())
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(text.contains(&format!("median_abs_rel_error = {bad}")));
    fs::write(&p, text).unwrap();
    let (t, why) = tier(&d);
    assert_eq!(t, Tier::Calibrated, "{why}");
    assert!(why.contains("exceeds 10.0%"), "{why}");
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn a_declared_calibrated_tier_is_an_error() {
    let l = orrery::load_str("s.orr", "accelerator x from H200 {\n  tier calibrated\n}\n");
    assert!(l.has_errors());
    let out = l.render(false);
    assert!(
        out.contains("s.orr:2:8: tier `calibrated` is computed, not declared"),
        "{out}"
    );
    assert!(out.contains("profile NAME"), "{out}");
    assert!(
        !orrery::load_str("s.orr", "accelerator x from H200 {\n  tier estimated\n}\n").has_errors()
    );
}

#[test]
fn validate_record_appends_to_the_profile_and_check_shows_the_tier() {
    let d = project("record");
    let f = scenario(&d, Some("h100_imp"));
    let p = d.join("calibration/h100_imp.toml");
    let before = fs::read_to_string(&p).unwrap();
    // This machine is not an 8-GPU box: exit 1, and the record (with its mismatches) is kept.
    let (code, out, err) = orrery(&["validate", f.to_str().unwrap(), "--node", "box", "--record"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("recorded in profile h100_imp"), "{out}");
    let after = fs::read_to_string(&p).unwrap();
    assert!(after.starts_with(
        &before[..before.find("[[").unwrap()].replace("schema_version = 4", "schema_version = 5")
    ));
    let prof = orrery::profile::parse(&after).unwrap();
    assert_eq!(prof.validation.len(), 1);
    assert!(prof.validation[0].mismatches > 0);
    assert_eq!(prof.validation[0].node_type, "box");
    // `check` names the tier and why it is not validated (this host is not the profile's).
    let (code, out, err) = orrery(&["check", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("tier"))
        .unwrap_or_default();
    assert!(
        line.contains("H100_SXM calibrated (profile h100_imp, imported on dgx01"),
        "{out}"
    );
    assert!(line.contains("only on other hosts"), "{out}");
    let (_, json, _) = orrery(&["check", "--json", f.to_str().unwrap()]);
    assert!(json.contains("\"tier\": \"calibrated\""), "{json}");
    // --record needs a profile and refuses --root.
    let g = d.join("plain.orr");
    fs::write(&g, format!("node box {{\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  device H100_SXM x 8 link switch\n}}\n{CLUSTER}")).unwrap();
    let (code, _, err) = orrery(&["validate", g.to_str().unwrap(), "--node", "box", "--record"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("names no calibration profile"), "{err}");
    let (code, _, err) = orrery(&[
        "validate",
        f.to_str().unwrap(),
        "--node",
        "box",
        "--record",
        "--root",
        d.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn comparing_across_tiers_warns() {
    use orrery::maturity::{Maturity, mixed};
    let m = |a: &str, t: Tier| Maturity {
        accelerator: a.into(),
        tier: t,
        profile: None,
        evidence: String::new(),
    };
    let a = [m("H100_SXM", Tier::Validated)];
    let b = [m("MI300X", Tier::Datasheet)];
    let w = mixed(&[("a", &a), ("b", &b)]).unwrap();
    assert!(
        w.contains("a: H100_SXM validated; b: MI300X datasheet"),
        "{w}"
    );
    let c = [m("H200", Tier::Datasheet)];
    assert_eq!(mixed(&[("b", &b), ("c", &c)]), None);
}

#[test]
fn compare_prints_each_scenarios_tiers_and_warns_when_they_differ() {
    let d = project("compare");
    let work = "workload w {\n  tasks t x 4 {\n    resources { CPU: 1, GPU: 1 }\n    compute 10 TFLOP bf16\n  }\n}\n";
    let calibrated = scenario(&d, Some("h100_imp"));
    let text = fs::read_to_string(&calibrated).unwrap() + work;
    fs::write(d.join("imp.orr"), &text).unwrap();
    scenario(&d, None);
    let text = fs::read_to_string(d.join("s.orr")).unwrap() + work;
    fs::write(d.join("sheet.orr"), &text).unwrap();
    let (a, b) = (d.join("imp.orr"), d.join("sheet.orr"));
    let out_dir = d.join("out");
    let (code, out, err) = orrery(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--seeds",
        "1",
        "--out",
        out_dir.to_str().unwrap(),
        "--no-plots",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines().any(|l| l.starts_with("tiers")
            && l.contains("H100_SXM calibrated")
            && l.contains("H100_SXM datasheet")),
        "{out}"
    );
    assert!(out.contains("warning: the compared hardware is priced at different maturity tiers (imp: H100_SXM calibrated; sheet: H100_SXM datasheet)"), "{out}");
    let json = fs::read_to_string(out_dir.join("compare.json")).unwrap();
    assert!(json.contains("\"warnings\""), "{json}");
    // A drill's header, report and drill.json name the tier too.
    let drill_dir = d.join("drill");
    let (code, out, err) = orrery(&[
        "drill",
        a.to_str().unwrap(),
        "--seeds",
        "1",
        "--out",
        drill_dir.to_str().unwrap(),
        "--no-plots",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("tier: H100_SXM calibrated (profile h100_imp")),
        "{out}"
    );
    let report = fs::read_to_string(drill_dir.join("report.md")).unwrap();
    assert!(report.contains("| tier | `H100_SXM calibrated"), "{report}");
    let json = fs::read_to_string(drill_dir.join("drill.json")).unwrap();
    assert!(json.contains("\"tiers\""), "{json}");
    let _ = fs::remove_dir_all(&d);
}

/// Model-level training and served models say in the run's header when a calibration
/// measurement priced their collectives (as declared training `allreduce`s do).
#[test]
fn model_level_jobs_and_services_name_the_measurement_that_priced_them() {
    let d = project("notes");
    let f = d.join("m.orr");
    fs::write(
        &f,
        "accelerator H100_SXM from H100_SXM {\n  profile h100_imp\n}\n\
         cluster c {\n  node dgx_h100 x 2\n  fabric single_switch\n}\n\
         workload train {\n  placement_group pg strategy STRICT_PACK {\n    bundle { GPU: 8 } x 1\n  }\n\
         \x20 training llama on pg steps 2 {\n    model llama3_8b\n    parallel dp 8\n    sharding zero3\n    recompute full\n    batch global 8 micro 1\n  }\n}\n\
         workload serve {\n  service chat {\n    model llama3_8b\n    parallel tp 8\n    precision bf16\n    replicas 1\n\
         \x20   resources { GPU: 8 }\n    arrival poisson 5 /s\n    prompt tokens uniform 256..512\n    output tokens uniform 16..32\n  }\n}\n",
    )
    .unwrap();
    let out_dir = d.join("out");
    let (code, out, err) = orrery(&[
        "run",
        f.to_str().unwrap(),
        "--horizon",
        "20s",
        "--out",
        out_dir.to_str().unwrap(),
        "--no-plots",
    ]);
    assert_eq!(code, 0, "{err}\n{out}");
    // ZeRO-3 gathers parameters (allgather, measured) and reduce-scatters gradients (not).
    let gathered = "priced by allgather of 8 ranks on 1 node: measured (profile h100_imp";
    assert!(
        out.lines()
            .any(|l| l.starts_with("network model: training llama") && l.contains(gathered)),
        "{out}"
    );
    let measured = "priced by allreduce of 8 ranks on 1 node: measured (profile h100_imp";
    assert!(
        out.lines().any(|l| l
            .starts_with("network model: service serve.chat: tensor-parallel all-reduces")
            && l.contains(measured)),
        "{out}"
    );
    let _ = fs::remove_dir_all(&d);
}
