//! The built-in catalog: complete, sourced, valid and in agreement with the datasheet figures
//! gathered in shared/reference/hardware-and-models.md.

use orrery::load_str;
use orrery::scenario::Spec;

fn catalog() -> Spec {
    let l = load_str("<empty>", "");
    assert!(
        l.diags.is_empty(),
        "the catalog has diagnostics:\n{}",
        l.render(false)
    );
    l.spec.unwrap()
}

#[test]
fn has_every_required_entry() {
    let s = catalog();
    for a in [
        "H100_SXM",
        "H200",
        "GH200",
        "B200",
        "GB200",
        "GB300",
        "A100_80GB",
        "A100_40GB",
        "V100",
        "L4",
        "L40S",
        "A10G",
        "T4",
        "MI300X",
        "MI325X",
        "MI355X",
        "MI250X",
        "TPU_v4",
        "TPU_v5e",
        "TPU_v5p",
        "TPU_v6e",
        "Trainium1",
        "Trainium2",
        "Inferentia2",
        "Gaudi2",
        "Gaudi3",
    ] {
        assert!(s.accelerators.contains_key(a), "accelerator {a} missing");
    }
    for n in [
        "ib_ndr_400g",
        "ib_hdr_200g",
        "roce_100g",
        "roce_200g",
        "roce_400g",
        "efa_v2",
        "ib_xdr_800g",
        "ib_ndr200_200g",
        "eth_200g",
    ] {
        assert!(s.nics.contains_key(n), "NIC {n} missing");
    }
    for n in [
        "dgx_h100",
        "hgx_h200",
        "gh200_4",
        "gb300_nvl72_tray",
        "p4d_a100",
        "p3_v100",
        "g6e_l40s",
        "g5_a10g",
        "g4dn_t4",
        "mi300x_8",
        "mi325x_8",
        "mi355x_8",
        "tpu_v5e_host",
        "tpu_v5p_host",
        "tpu_v6e_host",
        "trn2_48xlarge",
        "gaudi3_8",
    ] {
        assert!(s.node_types.contains_key(n), "node type {n} missing");
    }
}

#[test]
fn every_entry_has_a_source_and_a_tier() {
    let s = catalog();
    for a in s.accelerators.values() {
        assert!(
            a.source.as_deref().is_some_and(|x| !x.is_empty()),
            "{} has no source",
            a.name
        );
        assert!(
            a.tier <= orrery::scenario::hardware::Tier::Datasheet,
            "{}: calibrated and validated tiers come from measured profiles",
            a.name
        );
        assert!(!a.flops.is_empty() && a.memory.0 > 0 && a.memory_bw.0 > 0.0);
    }
    for n in s.nics.values() {
        assert!(n.source.is_some(), "NIC {} has no source", n.name);
    }
    for n in s.node_types.values() {
        assert!(n.source.is_some(), "node type {} has no source", n.name);
        assert!(n.device_count() > 0, "node type {} has no devices", n.name);
    }
}

/// Accelerators with no citable on-demand price: their catalog entry says why in a comment, and a
/// comparison shows the figures computed from it as `n/a (no price in catalog: X)`.
const NO_PRICE: &[&str] = &["GB300", "MI355X", "MI250X", "Gaudi2", "Gaudi3"];
/// Accelerators whose vendor publishes no per-device power (Google TPUs, AWS Neuron chips).
const NO_TDP: &[&str] = &[
    "TPU_v5e",
    "TPU_v5p",
    "TPU_v6e",
    "Trainium1",
    "Trainium2",
    "Inferentia2",
];

#[test]
fn every_accelerator_has_a_sourced_price_and_tdp_or_is_a_listed_gap() {
    let s = catalog();
    for a in s.accelerators.values() {
        let n = a.name.as_str();
        // Both ways: a gap that gains a figure must leave the list.
        assert_eq!(
            a.price.is_none(),
            NO_PRICE.contains(&n),
            "{n}: price {:?}; NO_PRICE lists {NO_PRICE:?}",
            a.price
        );
        assert_eq!(
            a.tdp.is_none(),
            NO_TDP.contains(&n),
            "{n}: tdp {:?}; NO_TDP lists {NO_TDP:?}",
            a.tdp
        );
        if a.price.is_some() {
            let src = a.sources.get("price").map(String::as_str).unwrap_or("");
            // A price names where it was listed and when (a year).
            assert!(
                src.len() > 40 && (2017..=2030).any(|y| src.contains(&y.to_string())),
                "{n}: price source {src:?}"
            );
        }
        if a.tdp.is_some() {
            assert!(
                a.sources.get("tdp").is_some_and(|x| !x.is_empty()),
                "{n}: tdp without a source"
            );
        }
    }
    for n in NO_PRICE.iter().chain(NO_TDP) {
        assert!(s.accelerators.contains_key(*n), "{n} is not in the catalog");
    }
}

#[test]
fn figures_match_the_reference_datasheets() {
    let s = catalog();
    let a = |n: &str| &s.accelerators[n];
    let bf16 = |n: &str| a(n).flops["bf16"].0;
    // (name, memory bytes, memory bandwidth B/s, dense bf16 FLOP/s) from hardware-and-models.md;
    // memory is the driver's total where the catalog cites one (nvidia-smi 81,559 MiB for the
    // datasheet's "80 GB" H100, 143,771 MiB for H200; rocm-smi 205,822,885,888 B for MI300X);
    // TPU v5p memory per Google's current v5p page, which gives it in GiB (older pages: "95GB").
    const MIB: f64 = 1024.0 * 1024.0;
    let expected = [
        ("H100_SXM", 81559.0 * MIB, 3.35e12, 989e12),
        ("H200", 143771.0 * MIB, 4.8e12, 989e12),
        ("MI300X", 205822885888.0, 5.3e12, 1307e12),
        ("TPU_v5e", 16e9, 819e9, 197e12),
        ("TPU_v5p", 95.0 * 1024f64.powi(3), 2765e9, 459e12),
        ("Trainium2", 96.0 * 1024f64.powi(3), 2.9e12, 667e12),
        ("Gaudi3", 128e9, 3.7e12, 1835e12),
    ];
    for (n, mem, bw, fl) in expected {
        assert!(
            (a(n).memory.0 as f64 - mem).abs() / mem < 0.01,
            "{n} memory {}",
            a(n).memory
        );
        assert!(
            (a(n).memory_bw.0 - bw).abs() / bw < 0.01,
            "{n} bandwidth {}",
            a(n).memory_bw
        );
        assert!((bf16(n) - fl).abs() / fl < 0.01, "{n} bf16 {}", bf16(n));
    }
    // NVLink4: 900 GB/s both directions = 450 GB/s per direction.
    assert_eq!(
        a("H100_SXM").interconnect.as_ref().unwrap().per_direction.0,
        450e9
    );
    assert_eq!(s.nics["ib_ndr_400g"].speed.0, 50e9);
}

#[test]
fn dgx_h100_pairs_each_gpu_with_a_local_nic() {
    let s = catalog();
    let n = &s.node_types["dgx_h100"];
    let compute = n.nics.iter().find(|g| g.role == "compute").unwrap();
    for loc in &n.devices[0].at {
        assert!(loc.switch.is_some());
        assert!(
            compute.at.iter().any(|c| c.switch == loc.switch),
            "a GPU has no NIC under its switch"
        );
    }
    assert_eq!(n.cpu.numa, 2);
    assert_eq!(n.devices[0].link, "switch");
}

#[test]
fn catalog_files_are_canonical() {
    for (name, text) in orrery::catalog::FILES {
        let (tree, d) = orrery::syntax::parse(text, 0);
        assert!(d.is_empty());
        assert_eq!(
            &orrery::syntax::fmt::format(&tree).unwrap(),
            text,
            "{name} is not canonical"
        );
    }
}
