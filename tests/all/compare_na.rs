//! A comparison never drops a row (issue 40, item 6): a scenario whose hardware has no price or
//! TDP in the catalog keeps its column in `orrery compare`'s table, with `n/a (why)` where a
//! figure needs the missing one, and its slot in every plot panel, listed with the reason.

use orrery::experiment::compare::{CompareReport, Entry, compare, table};
use orrery::load_str;

/// The same training job on a catalog DGX H100 (priced and powered) and on a box of an
/// accelerator declared here without `price` or `tdp`.
const JOB: &str = "workload w {\n  placement_group pg strategy PACK {\n    bundle { GPU: 8 }\n  }\n  \
    training t on pg steps 4 {\n    compute 1 PFLOP per device bf16\n  }\n}\n";

const PRICED: &str = "cluster c {\n  node dgx_h100 x 1\n}\n";

const UNPRICED: &str = "accelerator Prototype {\n  vendor Acme\n  model \"Acme prototype\"\n  \
    ray_resource GPU\n  memory 80 GB\n  memory_bw 3 TB/s\n  flops bf16 1000 TFLOPS\n  \
    tier estimated\n  source \"test part: no price, no tdp\"\n}\n\
    node proto_box {\n  cpu sockets 2, cores 64\n  memory 1 TiB\n  \
    device Prototype x 8 link none\n  source \"test node\"\n}\n\
    cluster c {\n  node proto_box x 1\n}\n";

fn entry(name: &str, src: &str) -> Entry {
    let l = load_str(&format!("{name}.orr"), src);
    assert!(!l.has_errors(), "{}", l.render(false));
    Entry {
        name: name.into(),
        file: format!("{name}.orr"),
        scenario_hash: String::new(),
        spec: l.spec.unwrap(),
        traces: Default::default(),
        empirical: Default::default(),
        failure_block: None,
        horizon: None,
    }
}

fn report() -> CompareReport {
    compare(
        &[
            entry("dgx", &format!("{PRICED}{JOB}")),
            entry("proto", &format!("{UNPRICED}{JOB}")),
        ],
        &[1, 2],
        1,
        None,
    )
}

/// The table line of a figure (`  w.t $/step ...`), split into its cells.
fn line<'a>(t: &'a str, label: &str) -> &'a str {
    t.lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no line {label} in\n{t}"))
}

#[test]
fn an_unpriced_scenario_keeps_its_column_and_says_why() {
    let r = report();
    assert_eq!(r.rows.len(), 2);
    let proto = &r.rows[1];
    assert_eq!(proto.price_usd_per_h, None);
    assert_eq!(
        proto.price_missing.as_deref(),
        Some("no price in catalog: Prototype")
    );
    assert_eq!(
        proto.power_missing.as_deref(),
        Some("no tdp in catalog: Prototype")
    );
    // The priced scenario says nothing is missing.
    assert_eq!(r.rows[0].price_missing, None);
    assert_eq!(r.rows[0].power_missing, None);
    let t = table(&r);
    // Its own figures are there; the ones that need a price or a TDP say why they are not.
    let step = line(&t, "w.t step time");
    assert!(!step.contains("n/a") && !step.contains(" - "), "{step}");
    let usd = line(&t, "w.t $/step");
    assert!(
        usd.contains("$") && usd.contains("n/a (no price in catalog: Prototype)"),
        "{usd}"
    );
    let kwh = line(&t, "w.t kWh/step");
    assert!(kwh.contains("n/a (no tdp in catalog: Prototype)"), "{kwh}");
    let cost = line(&t, "cluster cost");
    assert!(
        cost.contains("n/a (no price in catalog: Prototype)"),
        "{cost}"
    );
    let energy = line(&t, "cluster energy");
    assert!(
        energy.contains("n/a (no tdp in catalog: Prototype)"),
        "{energy}"
    );
    assert!(
        t.contains("n/a: computed from a price or TDP the catalog does not have"),
        "{t}"
    );
    // The JSON says why too; the CSV keeps the row with empty fields.
    let files = orrery::experiment::compare::files(&r);
    let json: serde_json::Value = serde_json::from_str(&files[1].1).unwrap();
    assert_eq!(json["schema_version"], 4);
    assert_eq!(
        json["rows"][1]["price_missing"],
        "no price in catalog: Prototype"
    );
    assert!(json["rows"][0].get("price_missing").is_none());
    assert_eq!(files[0].1.lines().count(), 3, "{}", files[0].1);
}

#[test]
fn the_plot_keeps_an_unpriced_scenario_with_the_reason() {
    let r = report();
    let panels = orrery::outputs::compare::metric_bars(&r);
    // Every panel has a slot for both scenarios: a bar, or an n/a with why.
    for p in &panels {
        let mut groups: Vec<&str> = p.bars.iter().map(|b| b.group.as_str()).collect();
        groups.extend(p.missing.iter().map(|m| m.group.as_str()));
        groups.sort();
        assert_eq!(groups, ["dgx", "proto"], "panel {} dropped a row", p.name);
    }
    let panel = |label: &str| {
        panels
            .iter()
            .find(|p| p.name.contains(label))
            .unwrap_or_else(|| panic!("no panel {label}"))
    };
    for (label, why) in [
        ("$/step", "no price in catalog: Prototype"),
        ("cluster cost", "no price in catalog: Prototype"),
        ("kWh/step", "no tdp in catalog: Prototype"),
        ("cluster energy", "no tdp in catalog: Prototype"),
    ] {
        let p = panel(label);
        assert_eq!(p.bars.len(), 1, "{label}");
        assert_eq!(p.bars[0].group, "dgx");
        assert_eq!(p.missing.len(), 1, "{label}");
        assert_eq!(p.missing[0].group, "proto");
        assert_eq!(p.missing[0].why, why);
    }
    // And the drawing shows it.
    let d = std::env::temp_dir().join(format!("orrery-compare-na-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let stem = d.join("comparison");
    orrery::plot::comparison(&stem, "dgx vs proto", "95% CI", &panels).unwrap();
    let svg = std::fs::read_to_string(d.join("comparison.svg")).unwrap();
    assert!(svg.contains("n/a (not plotted): proto: no price in catalog: Prototype"));
    assert!(svg.contains("proto: no tdp in catalog: Prototype"));
    let _ = std::fs::remove_dir_all(&d);
}

/// A panel no scenario has a value for is still drawn when the reason is a missing price: the
/// whole comparison of unpriced hardware says `n/a` rather than losing its cost panels.
#[test]
fn a_panel_with_only_unpriced_rows_is_kept() {
    let r = compare(
        &[entry("proto", &format!("{UNPRICED}{JOB}"))],
        &[1],
        1,
        None,
    );
    let panels = orrery::outputs::compare::metric_bars(&r);
    let cost = panels
        .iter()
        .find(|p| p.name.contains("cluster cost"))
        .expect("the cost panel is kept");
    assert!(cost.bars.is_empty());
    assert_eq!(cost.missing[0].why, "no price in catalog: Prototype");
    let d = std::env::temp_dir().join(format!("orrery-compare-na1-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    orrery::plot::comparison(&d.join("c"), "proto", "95% CI", &panels).unwrap();
    let svg = std::fs::read_to_string(d.join("c.svg")).unwrap();
    assert!(svg.contains("n/a for every group"), "{svg}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A catalog part with no citable price (GB300: `contact sales` everywhere) keeps its column:
/// its cost figures say why, while its energy, from the tray's `power`, is computed.
#[test]
fn a_catalog_part_without_a_price_reads_n_a_with_its_name() {
    let gb300 = "cluster c {\n  rack r {\n    node gb300_nvl72_tray x 2\n  }\n}\n";
    // A tray has 4 GPUs: the same job as two bundles of 4.
    let job4 = JOB.replace(
        "bundle { GPU: 8 }",
        "bundle { GPU: 4 }\n    bundle { GPU: 4 }",
    );
    let r = compare(
        &[
            entry("dgx", &format!("{PRICED}{JOB}")),
            entry("gb300", &format!("{gb300}{job4}")),
        ],
        &[1],
        1,
        None,
    );
    assert_eq!(r.rows.len(), 2);
    assert_eq!(
        r.rows[1].price_missing.as_deref(),
        Some("no price in catalog: GB300")
    );
    assert_eq!(r.rows[1].power_missing, None);
    let t = table(&r);
    assert!(
        line(&t, "cluster cost").contains("n/a (no price in catalog: GB300)"),
        "{t}"
    );
    assert!(!line(&t, "cluster energy").contains("n/a"), "{t}");
}
