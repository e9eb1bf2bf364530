//! Rack-scale NVSwitch domains (`scale_up rack`, issue 17 item 1): an NVL72-class rack's trays
//! share one NVLink domain — routes, NCCL's view (one node: NVLS across the rack), failures,
//! labels and `topology_strategy` placement — and what `check` refuses.

use orrery::network::{Graph, LinkKind};
use orrery::sim::{SimConfig, simulate};
use std::process::Command;

fn spec(src: &str) -> orrery::scenario::Spec {
    let l = orrery::load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn file(name: &str, src: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-rackdom-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("s.orr");
    std::fs::write(&f, src).unwrap();
    f
}

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

/// Two NVL72 racks (18 catalog trays each) on a rail-optimized fabric.
const NVL72: &str = "cluster c {\n  fabric rail_optimized\n  rack nvl[0..1] {\n    node gb200_nvl72_tray x 18\n  }\n}\n";

/// busbw (GB/s) of an 8 GiB allreduce over `ranks` ranks, and NCCL's algorithm.
fn allreduce(src: &str, ranks: &str) -> (f64, String) {
    let f = file(&format!("ar{ranks}-{}", src.len()), src);
    let (code, out, err) = orrery(&[
        "collectives",
        f.to_str().unwrap(),
        "--ranks",
        ranks,
        "--sizes",
        "8G",
    ]);
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with("8589934592"))
        .unwrap_or_else(|| panic!("{out}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    (cols[7].parse().unwrap(), cols[8].to_string())
}

#[test]
fn an_nvl72_rack_is_one_nvlink_domain() {
    // 72 ranks in one rack: NCCL sees one node (MNNVL) and picks NVLS; its algbw is the
    // GPU's NVLink collective rate × Blackwell's NVLS efficiency, 721.8 GB/s × 0.74 = 534 GB/s,
    // so busbw = 534 × 2 × 71/72 ≈ 1,053 GB/s, less what NCCL's chunks cost: 24 channels × 72
    // heads of 64 KiB at 8 GiB (src/enqueue.cc), each stretched by 1 + 4.7/64 (981 GB/s), and
    // the pipeline's fill of one such loop (108 MiB of 8 GiB): about 955 GB/s.
    let (bw, algo) = allreduce(NVL72, "72");
    assert_eq!(algo, "nvls");
    assert!(bw > 940.0 && bw < 981.0, "{bw}");
    // Across both racks NCCL runs NVLS trees: each rack's switch reduces, and each GPU's own
    // NIC carries only its 1/72 slice to its peer in the other rack, so the pair of racks
    // keeps most of one rack's rate.
    let (bw2, algo2) = allreduce(NVL72, "144");
    assert_eq!(algo2, "nvls_tree");
    assert!(bw2 > 0.9 * bw && bw2 < bw, "{bw2} vs {bw}");
    // The same 72 GPUs as 18 separate trays (no rack domain) are network-bound as well.
    let trays = "node plain {\n  cpu sockets 2, cores 144, numa 2\n  memory 960 GB\n  pcie gen5\n  switch sw[0..1] numa [0, 1] uplink gen5 x16\n  device GB200 x 4 at sw[0..1] link switch\n  nic ib_ndr_400g x 4 at sw[0..1] role compute\n}\ncluster c {\n  fabric rail_optimized\n  rack r0 {\n    node plain x 18\n  }\n}\n";
    let (bw3, algo3) = allreduce(trays, "72");
    assert_ne!(algo3, "nvls");
    assert!(bw3 <= 200.0, "{bw3}");
    // About 955 against under 200 GB/s: the rack domain is more than four times faster.
    assert!(bw > 4.0 * bw3, "{bw} vs {bw3}");
}

#[test]
fn routes_failures_and_labels_of_a_rack_domain() {
    let s = spec(NVL72);
    let g = Graph::build(&s);
    // Tray 1 to tray 2 of rack nvl0: device → the rack's NVSwitch → device, both NVLink.
    let p = g.route((1, 0), (2, 3), 0).unwrap();
    assert_eq!(p.len(), 2);
    assert!(p.iter().all(|l| g.kind[*l] == LinkKind::ScaleUp));
    assert_eq!(g.scale_up_domain(5), g.scale_up_domain(17));
    assert_ne!(g.scale_up_domain(17), g.scale_up_domain(18));
    // Rack nvl1's trays go through the network.
    let q = g.route((1, 0), (20, 0), 0).unwrap();
    assert!(q.iter().any(|l| g.kind[*l] == LinkKind::Network));
    // A failure of the tray whose vertex holds the switch takes only its own devices' links:
    // 4 devices × 2 directions to the switch, none of the other trays'.
    let to_switch = |n: usize| {
        g.node_links(n)
            .into_iter()
            .filter(|l| g.kind[*l] == LinkKind::ScaleUp)
            .count()
    };
    assert_eq!(to_switch(0), 8);
    assert_eq!(to_switch(7), 8);
    // Placement sees the domain as `ray.io/gpu-domain` = the rack.
    let st = orrery::placement::ClusterState::from_spec(&s);
    assert_eq!(
        st.nodes[7]
            .labels()
            .get("ray.io/gpu-domain")
            .map(String::as_str),
        Some("nvl0")
    );
    assert_eq!(
        st.nodes[30]
            .labels()
            .get("ray.io/gpu-domain")
            .map(String::as_str),
        Some("nvl1")
    );
}

#[test]
fn topology_strategy_puts_a_72_gpu_group_in_one_nvl72() {
    // Rack nvl0 holds a 16-GPU job on its first four trays; an 18-bundle, 72-GPU group under
    // STRICT_PACK over ray.io/gpu-domain cannot go there and lands whole in nvl1.
    let src = format!(
        "{NVL72}workload other {{\n  placement_group a strategy PACK {{\n    bundle {{ GPU: 4 }} x 4\n  }}\n  training t on a steps 100 {{\n    compute 1 PFLOP per device bf16\n  }}\n}}\nworkload big {{\n  placement_group g topology_strategy {{ \"ray.io/gpu-domain\": STRICT_PACK, \"ray.io/node-id\": STRICT_SPREAD }} {{\n    bundle {{ GPU: 4 }} x 18\n  }}\n  training t on g steps 100 {{\n    compute 1 PFLOP per device bf16\n  }}\n}}\n"
    );
    let r = simulate(&spec(&src), &SimConfig::default());
    let g = r
        .metrics
        .placement_groups
        .iter()
        .find(|p| p.workload == "big")
        .unwrap();
    assert_eq!(g.state, "created");
    assert_eq!(g.domain.as_deref(), Some("ray.io/gpu-domain=nvl1"));
    assert!(g.nodes_at_creation.iter().all(|n| n.starts_with("nvl1.")));
    assert_eq!(g.racks_at_creation, 1);
}

#[test]
fn check_refuses_what_no_rack_domain_can_be() {
    let cases = [
        (
            "cluster c {\n  rack r0 {\n    node gb200_nvl72_tray x 19\n  }\n}\n".to_string(),
            "this rack's NVSwitch domain would hold 76 devices; `gb200_nvl72_tray` declares `scale_up rack max 72`",
        ),
        (
            "node t2 from gb200_nvl72_tray {\n  labels { \"k\": \"v\" }\n}\ncluster c {\n  rack r0 {\n    node gb200_nvl72_tray x 2\n    node t2 x 2\n  }\n}\n".to_string(),
            "a rack holds one rack-scale NVSwitch domain: `t2` cannot join the domain of `gb200_nvl72_tray`",
        ),
        (
            "node pcie {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  device L4 x 2 link none\n  scale_up rack\n}\n".to_string(),
            "node type `pcie`: `scale_up rack` needs devices linked by `link switch`",
        ),
        (
            "node n {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  device H100_SXM x 8 link switch\n  scale_up row\n}\n".to_string(),
            "`scale_up` takes `rack`",
        ),
    ];
    for (i, (src, want)) in cases.iter().enumerate() {
        let f = file(&format!("bad{i}"), src);
        let (code, _, err) = orrery(&["check", f.to_str().unwrap()]);
        assert_eq!(code, 2, "{src}: {err}");
        assert!(err.contains(want), "{src}: {err}");
    }
}

#[test]
fn check_lists_each_rack_scale_domain() {
    let f = file("summary", NVL72);
    let (code, out, err) = orrery(&["check", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "scale-up     2 rack-scale NVLink domains (nvl0, nvl1): 72 × GB200 on 18 gb200_nvl72_tray each"
        ),
        "{out}"
    );
    let (code, out, err) = orrery(&["check", f.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let d = &v["scenarios"][0]["summary"]["scale_up_domains"];
    assert_eq!(d.as_array().unwrap().len(), 2, "{d}");
    assert_eq!(d[1]["rack"], "nvl1");
    assert_eq!(d[1]["devices"], 72);
    assert_eq!(d[1]["nodes"], 18);
    // A cluster without rack domains prints no scale-up line.
    let g = file(
        "summary-none",
        "cluster c {\n  rack r0 {\n    node dgx_h100 x 2\n  }\n}\n",
    );
    let (_, out, _) = orrery(&["check", g.to_str().unwrap()]);
    assert!(!out.contains("scale-up"), "{out}");
}
