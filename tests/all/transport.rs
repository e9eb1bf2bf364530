//! Transports against closed forms worked out by hand from the link graph: one flow, the object
//! store's staged and chunked pipeline, the inline threshold, GPUDirect locality, max-min
//! sharing of a NIC; the DSL's located errors; `orrery transports`.

use orrery::load_str;
use orrery::network::graph::{DEFAULT_HOP_LATENCY, PCIE_HOP_LATENCY, SOCKET_HOP_LATENCY};
use orrery::network::{FlowNet, Graph, Vertex};
use orrery::scenario::Spec;
use orrery::transport::params::{
    COPY_EFFICIENCY, COPY_OVERHEAD, CROSS_SOCKET, GPUDIRECT_LATENCY, MEMCPY, OBJECT_CHUNK,
    OBJECT_STORE_LATENCY, OBJECT_STORE_OVERHEAD, PULL_MESSAGES, RDMA_EFFICIENCY, RDMA_LATENCY,
    STAGED_CHUNK, TCP_EFFICIENCY,
};
use orrery::transport::{
    Plan, StageKind, TransportError, TransportKind, TransportParams, closed_form, compare, plan,
    run_plan, run_plans,
};
use std::process::{Command, Output};

const KIB: f64 = 1024.0;
const MIB: f64 = KIB * KIB;
const GIB: f64 = MIB * KIB;
/// ConnectX-7 NDR: 400 Gb/s.
const NDR: f64 = 400e9 / 8.0;
/// H100 PCIe gen5 x16 as the catalog declares it (0.985 GB/s per lane × 4 × 16).
const GEN5: f64 = 0.985e9 * 4.0 * 16.0;

/// `near`: two GPUs and one NDR NIC under the same PCIe switch; `far`: the NIC under the other
/// socket's switch. No NVLink, so every path is PCIe.
const NODES: &str = "
node near {
  cpu sockets 2, cores 32, numa 2
  memory 512 GiB
  switch sw[0..1] numa [0, 1] uplink gen5 x16
  device H100_SXM x 2 at sw0 link none
  nic ib_ndr_400g x 1 at sw0 role compute
}
node far from near {
  nic ib_ndr_400g x 1 at sw1 role compute
}
";

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn cluster(node: &str, n: u32) -> Spec {
    spec(&format!(
        "{NODES}cluster c {{\n  rack r0 {{\n    node {node} x {n}\n  }}\n}}\n"
    ))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-9)
}

fn builtin(kind: TransportKind) -> TransportParams {
    TransportParams::defaults(kind)
}

fn idle(g: &Graph) -> FlowNet {
    FlowNet::new(g.capacity.clone())
}

/// Run a plan and check the closed form agrees and the breakdown adds up.
fn secs(g: &Graph, p: &Plan) -> f64 {
    let b = run_plan(&idle(g), p).unwrap();
    let c = closed_form(p, &g.capacity);
    assert!(
        close(b.secs, c.secs),
        "engine {} vs closed form {}",
        b.secs,
        c.secs
    );
    let parts = b.latency_secs + b.overhead_secs + b.staging_secs + b.bandwidth_secs;
    assert!(close(parts, b.secs), "{b:?}");
    b.secs
}

#[test]
fn a_single_flow_transport_is_latency_plus_bytes_over_bottleneck_times_efficiency() {
    // GPU → switch → NIC → leaf → NIC → switch → GPU: 4 PCIe hops, 2 switch hops, the NIC the
    // bottleneck. The DSL sets latency 3 us and efficiency 0.9.
    let s = spec(&format!(
        "{NODES}cluster c {{\n  rack r0 {{\n    node near x 2\n  }}\n}}\n\
         transport fast {{\n  kind gpudirect_rdma\n  latency 3 us\n  efficiency 0.9\n}}\n"
    ));
    let g = Graph::build(&s);
    let p = TransportParams::named(&s, "fast").unwrap();
    assert_eq!((p.latency, p.efficiency), (3e-6, 0.9));
    for n in [4.0 * KIB, MIB, GIB] {
        let pl = plan(&g, &p, (0, 0), (1, 0), n, 0).unwrap();
        assert_eq!(pl.stages.len(), 1);
        let want = 3e-6 + 4.0 * PCIE_HOP_LATENCY + 2.0 * DEFAULT_HOP_LATENCY + n / (NDR * 0.9);
        assert!(
            close(secs(&g, &pl), want),
            "{n}: {} vs {want}",
            secs(&g, &pl)
        );
    }
}

/// The pieces of the object store's closed form on two `dgx_h100` in one rack: host path
/// root → switch → NIC → leaf → NIC → switch → root, 1.6 µs and NDR-bound; D2H/H2D over the
/// GPU's switch (2 PCIe hops, gen5-bound).
fn object_store_parts(n: f64) -> (f64, f64, f64, f64) {
    let copy = 2.0 * PCIE_HOP_LATENCY + COPY_OVERHEAD + n / (GEN5 * COPY_EFFICIENCY);
    let serialize = n / MEMCPY;
    let path = 4.0 * PCIE_HOP_LATENCY + 2.0 * DEFAULT_HOP_LATENCY;
    (copy, serialize, path, copy)
}

#[test]
fn the_object_store_moves_one_gib_through_d2h_serialize_a_chunk_pipeline_and_h2d() {
    let s = spec("cluster c {\n  rack r0 {\n    node dgx_h100 x 2\n  }\n}\n");
    let g = Graph::build(&s);
    let n = GIB;
    let pl = plan(
        &g,
        &builtin(TransportKind::ObjectStore),
        (0, 0),
        (1, 0),
        n,
        0,
    )
    .unwrap();
    assert!(!pl.inline);
    // ⌈1 GiB / 5 MiB⌉ = 205 equal chunks through send copy → TCP → receive copy.
    assert_eq!(pl.chunks(), 205);
    let (d2h, serialize, path, h2d) = object_store_parts(n);
    let k = 205.0;
    let c = n / k;
    let latency = path + OBJECT_STORE_LATENCY + PULL_MESSAGES * (path + OBJECT_STORE_OVERHEAD);
    let t = [
        c / MEMCPY,
        OBJECT_STORE_OVERHEAD + c / (NDR * TCP_EFFICIENCY),
        c / MEMCPY,
    ];
    let slowest = t.iter().copied().fold(0.0, f64::max);
    let push = latency + t.iter().sum::<f64>() + (k - 1.0) * slowest;
    let want = d2h + serialize + push + h2d;
    let got = secs(&g, &pl);
    assert!(close(got, want), "{got} vs {want}");
    // The memcpy, not the 400G NIC, bounds the push (11.6 GB/s against 45 GB/s).
    assert_eq!(slowest, c / MEMCPY);
    assert_eq!((n / OBJECT_CHUNK).ceil(), k);
}

#[test]
fn objects_up_to_100_kib_travel_inline_and_one_byte_more_does_not() {
    let s = spec("cluster c {\n  rack r0 {\n    node dgx_h100 x 2\n  }\n}\n");
    let g = Graph::build(&s);
    let os = builtin(TransportKind::ObjectStore);
    let n = 100.0 * KIB;
    let inline = plan(&g, &os, (0, 0), (1, 0), n, 0).unwrap();
    assert!(inline.inline);
    assert!(!inline.stages.iter().any(|s| s.kind == StageKind::SendCopy));
    let (d2h, serialize, path, h2d) = object_store_parts(n);
    // One RPC message: no chunks, no pull protocol.
    let rpc = OBJECT_STORE_LATENCY + path + OBJECT_STORE_OVERHEAD + n / (NDR * TCP_EFFICIENCY);
    let want = d2h + serialize + rpc + h2d;
    assert!(close(secs(&g, &inline), want));

    let m = n + 1.0;
    let pushed = plan(&g, &os, (0, 0), (1, 0), m, 0).unwrap();
    assert!(!pushed.inline);
    assert_eq!(pushed.chunks(), 1);
    let (d2h, serialize, path, h2d) = object_store_parts(m);
    let push = OBJECT_STORE_LATENCY
        + path
        + PULL_MESSAGES * (path + OBJECT_STORE_OVERHEAD)
        + 2.0 * m / MEMCPY
        + OBJECT_STORE_OVERHEAD
        + m / (NDR * TCP_EFFICIENCY);
    let want = d2h + serialize + push + h2d;
    assert!(close(secs(&g, &pushed), want));
}

#[test]
fn the_pipeline_closed_form_holds_for_host_staged_rdma() {
    // k = 256 chunks of 4 MiB through D2H → RDMA → H2D:
    // T = Σ L + Σ t + (k − 1) · max t, at most Σ L + (k + s − 1) · max t.
    let s = spec("cluster c {\n  rack r0 {\n    node dgx_h100 x 2\n  }\n}\n");
    let g = Graph::build(&s);
    let n = GIB;
    let pl = plan(
        &g,
        &builtin(TransportKind::HostStagedRdma),
        (0, 0),
        (1, 0),
        n,
        0,
    )
    .unwrap();
    let k = (n / STAGED_CHUNK).ceil();
    assert_eq!(f64::from(pl.chunks()), k);
    let c = n / k;
    let copy = COPY_OVERHEAD + c / (GEN5 * COPY_EFFICIENCY);
    let wire = c / (NDR * RDMA_EFFICIENCY);
    let t = [copy, wire, copy];
    let latency = 2.0 * PCIE_HOP_LATENCY
        + RDMA_LATENCY
        + 4.0 * PCIE_HOP_LATENCY
        + 2.0 * DEFAULT_HOP_LATENCY
        + 2.0 * PCIE_HOP_LATENCY;
    let max = t.iter().copied().fold(0.0, f64::max);
    let want = latency + t.iter().sum::<f64>() + (k - 1.0) * max;
    let got = secs(&g, &pl);
    assert!(close(got, want), "{got} vs {want}");
    assert!(got <= latency + (k + 3.0 - 1.0) * max);
    // The NIC, not the copies, is the slowest stage here.
    assert_eq!(max, wire);
}

#[test]
fn gpudirect_across_sockets_is_slower_than_under_one_switch() {
    let n = GIB;
    let p = builtin(TransportKind::GpudirectRdma);
    let near = cluster("near", 2);
    let gn = Graph::build(&near);
    let t_near = secs(&gn, &plan(&gn, &p, (0, 0), (1, 0), n, 0).unwrap());
    let want_near = GPUDIRECT_LATENCY
        + 4.0 * PCIE_HOP_LATENCY
        + 2.0 * DEFAULT_HOP_LATENCY
        + n / (NDR * RDMA_EFFICIENCY);
    assert!(close(t_near, want_near));
    // far: GPU → sw0 → root0 → root1 → sw1 → NIC on both ends; the socket link is on the route
    // and the efficiency takes the cross-socket factor (11 vs 23 GB/s, perftest #241).
    let far = cluster("far", 2);
    let gf = Graph::build(&far);
    let pl = plan(&gf, &p, (0, 0), (1, 0), n, 0).unwrap();
    let crosses = pl.links.iter().any(|l| {
        matches!(
            gf.ends[*l],
            (Vertex::Root { numa: 0, .. }, Vertex::Root { numa: 1, .. })
        )
    });
    assert!(crosses, "the route must cross the socket link");
    let t_far = secs(&gf, &pl);
    let want_far = GPUDIRECT_LATENCY
        + 8.0 * PCIE_HOP_LATENCY
        + 2.0 * SOCKET_HOP_LATENCY
        + 2.0 * DEFAULT_HOP_LATENCY
        + n / (NDR * RDMA_EFFICIENCY * CROSS_SOCKET);
    assert!(close(t_far, want_far), "{t_far} vs {want_far}");
    assert!(t_far > 2.0 * t_near);
}

#[test]
fn host_staging_loses_to_gpudirect_under_one_switch_and_wins_across_sockets() {
    let gdr = builtin(TransportKind::GpudirectRdma);
    let staged = builtin(TransportKind::HostStagedRdma);
    let os = builtin(TransportKind::ObjectStore);
    for (node, big_winner) in [("near", "gdr"), ("far", "staged")] {
        let s = cluster(node, 2);
        let g = Graph::build(&s);
        let t = |p: &TransportParams, n: f64| secs(&g, &plan(&g, p, (0, 0), (1, 0), n, 0).unwrap());
        // Small transfers: the copies' latency and launches make staging slower everywhere.
        assert!(t(&gdr, 4.0 * KIB) < t(&staged, 4.0 * KIB), "{node}");
        // Large: staging pipelines at the NIC's rate; GPUDirect across sockets cannot.
        let (a, b) = (t(&gdr, GIB), t(&staged, GIB));
        match big_winner {
            "gdr" => assert!(a < b, "{node}: {a} vs {b}"),
            _ => assert!(b < a, "{node}: {a} vs {b}"),
        }
        // Both beat the object store.
        assert!(a.max(b) < t(&os, GIB));
    }
}

#[test]
fn nvlink_p2p_within_a_node_beats_every_other_transport_at_every_size() {
    let s = spec("cluster c {\n  node dgx_h100 x 1\n}\n");
    let c = compare(
        &s,
        &orrery::transport::compare::DEFAULT_SIZES,
        &[((0, 0), (0, 1))],
    )
    .unwrap();
    let cells = &c.pairs[0].cells;
    for &n in &c.sizes {
        let row: Vec<_> = cells.iter().filter(|x| x.bytes == n).collect();
        assert_eq!(row.len(), TransportKind::ALL.len());
        let p2p = row.iter().find(|x| x.transport == "nvlink_p2p").unwrap();
        let t = p2p.breakdown.unwrap().secs;
        for other in row.iter().filter(|x| x.transport != "nvlink_p2p") {
            let o = other.breakdown.unwrap().secs;
            assert!(t < o, "{n} B: nvlink_p2p {t} vs {} {o}", other.transport);
        }
        // NVLink 450 GB/s × 0.82 for the bandwidth part.
        let b = p2p.breakdown.unwrap();
        assert!(close(b.bandwidth_secs, n / (450e9 * 0.82)));
    }
}

#[test]
fn nvlink_p2p_does_not_cross_nodes() {
    let s = cluster("near", 2);
    let g = Graph::build(&s);
    let r = plan(
        &g,
        &builtin(TransportKind::NvlinkP2p),
        (0, 0),
        (1, 0),
        MIB,
        0,
    );
    assert!(
        matches!(r, Err(TransportError::Unsupported { .. })),
        "{r:?}"
    );
    let r = plan(&g, &builtin(TransportKind::Nccl), (0, 0), (9, 0), MIB, 0);
    assert_eq!(r, Err(TransportError::NoDevice((9, 0))));
}

#[test]
fn two_transfers_through_one_nic_each_get_half_of_it() {
    // Both GPUs of `near` use its single NIC: max-min gives each flow 25 GB/s.
    let s = cluster("near", 2);
    let g = Graph::build(&s);
    let p = builtin(TransportKind::GpudirectRdma);
    let n = GIB;
    let a = plan(&g, &p, (0, 0), (1, 0), n, 0).unwrap();
    let b = plan(&g, &p, (0, 1), (1, 1), n, 1).unwrap();
    let lat = GPUDIRECT_LATENCY + 4.0 * PCIE_HOP_LATENCY + 2.0 * DEFAULT_HOP_LATENCY;
    let both = run_plans(&idle(&g), &[(0.0, &a), (0.0, &b)]).unwrap();
    let half = lat + n / (RDMA_EFFICIENCY * NDR / 2.0);
    for r in &both {
        assert!(close(r.secs, half), "{} vs {half}", r.secs);
    }
    // The same with the other transfer as a long background flow on its path.
    let mut bg = idle(&g);
    bg.add(b.links.clone(), 1e15);
    assert!(close(run_plan(&bg, &a).unwrap().secs, half));
    // Alone it has the whole NIC.
    assert!(close(
        run_plan(&idle(&g), &a).unwrap().secs,
        lat + n / (RDMA_EFFICIENCY * NDR)
    ));
    // On a dgx_h100 each GPU has its own NIC: no sharing.
    let s = spec("cluster c {\n  rack r0 {\n    node dgx_h100 x 2\n  }\n}\n");
    let g = Graph::build(&s);
    let a = plan(&g, &p, (0, 0), (1, 0), n, 0).unwrap();
    let b = plan(&g, &p, (0, 1), (1, 1), n, 1).unwrap();
    let both = run_plans(&idle(&g), &[(0.0, &a), (0.0, &b)]).unwrap();
    assert!(close(both[0].secs, lat + n / (RDMA_EFFICIENCY * NDR)));
}

#[test]
fn a_background_flow_that_ends_mid_transfer_gives_its_share_back() {
    // Background of w0 wire bytes alone on the path until the transfer's data starts at L;
    // then both at C/2 until it ends; then the transfer alone at C.
    let s = cluster("near", 2);
    let g = Graph::build(&s);
    let p = builtin(TransportKind::GpudirectRdma);
    let n = GIB;
    let a = plan(&g, &p, (0, 0), (1, 0), n, 0).unwrap();
    let lat = GPUDIRECT_LATENCY + 4.0 * PCIE_HOP_LATENCY + 2.0 * DEFAULT_HOP_LATENCY;
    let cap = NDR;
    let w0 = 2e8;
    let mut bg = idle(&g);
    bg.add(a.links.clone(), w0);
    let left = w0 - cap * lat;
    let shared = left / (cap / 2.0);
    let wire = n / RDMA_EFFICIENCY;
    let want = lat + shared + (wire - cap / 2.0 * shared) / cap;
    let got = run_plan(&bg, &a).unwrap().secs;
    assert!(close(got, want), "{got} vs {want}");
    // A transfer over a dead link never finishes.
    let mut dead = idle(&g);
    dead.set_capacity(a.links[2], 0.0);
    assert!(run_plan(&dead, &a).unwrap().secs.is_infinite());
}

#[test]
fn rdma_transports_need_rdma_nics() {
    // The same node with a 100G Ethernet NIC without RDMA.
    let s = spec(&format!(
        "{NODES}node eth from near {{\n  nic eth_100g x 1 at sw0 role compute\n}}\n\
         cluster c {{\n  rack r0 {{\n    node eth x 2\n  }}\n}}\n"
    ));
    let c = compare(&s, &[MIB], &[]).unwrap();
    let cross = c.pairs.iter().find(|p| p.label == "cross node").unwrap();
    for cell in cross
        .cells
        .iter()
        .filter(|c| c.kind != TransportKind::NvlinkP2p)
    {
        let rdma = matches!(
            cell.kind,
            TransportKind::Rdma
                | TransportKind::GpudirectRdma
                | TransportKind::HostStagedRdma
                | TransportKind::Nixl
        );
        assert_eq!(
            cell.breakdown.is_none(),
            rdma,
            "{}: {:?}",
            cell.transport,
            cell.error
        );
        if rdma {
            assert!(cell.error.as_deref().unwrap().contains("has no RDMA"));
        }
    }
}

#[test]
fn declared_transports_override_and_are_selected_by_name() {
    let s = spec(
        "transport object_store {\n  kind object_store\n  chunk 1 MiB\n  memcpy 20 GB/s\n}\n\
         transport wan {\n  kind tcp\n  efficiency 50 %\n  overhead 20 us\n  chunk 64 KiB\n}\n\
         workload w {\n  transport wan\n  tasks t x 1 {\n    duration 1 s\n    transport nccl\n  }\n  actor a {\n    transport object_store\n  }\n}\n",
    );
    let all = TransportParams::of_spec(&s);
    assert_eq!(all.len(), TransportKind::ALL.len() + 1);
    let os = TransportParams::named(&s, "object_store").unwrap();
    assert_eq!((os.chunk, os.memcpy, os.inline), (MIB, 20e9, 100.0 * KIB));
    let wan = TransportParams::named(&s, "wan").unwrap();
    assert_eq!(
        (wan.kind, wan.efficiency, wan.overhead, wan.chunk),
        (TransportKind::Tcp, 0.5, 20e-6, 64.0 * KIB)
    );
    let w = &s.workloads[0];
    assert_eq!(w.transport.as_deref(), Some("wan"));
    assert_eq!(w.tasks[0].transport.as_deref(), Some("nccl"));
    assert_eq!(w.actors[0].transport.as_deref(), Some("object_store"));
    // A chunked TCP transfer pays the overhead per message: 16 × (20 us + 64 KiB / rate), the
    // rate C × 0.5 or the host's memcpy, whichever is lower (the kernel copies each byte).
    let s2 = spec(&format!(
        "{NODES}cluster c {{\n  rack r0 {{\n    node near x 2\n  }}\n}}\n\
         transport wan {{\n  kind tcp\n  efficiency 50 %\n  overhead 20 us\n  chunk 64 KiB\n}}\n"
    ));
    let g = Graph::build(&s2);
    let wan = TransportParams::named(&s2, "wan").unwrap();
    let pl = plan(&g, &wan, (0, 0), (1, 0), MIB, 0).unwrap();
    let path = 4.0 * PCIE_HOP_LATENCY + 2.0 * DEFAULT_HOP_LATENCY;
    let want = 25e-6 + path + 16.0 * (20e-6 + 64.0 * KIB / (NDR * 0.5).min(MEMCPY));
    assert!(close(secs(&g, &pl), want));
}

/// Errors of `src` rendered without color.
fn errors(src: &str) -> String {
    let l = load_str("t.orr", src);
    assert!(l.has_errors(), "expected errors in:\n{src}");
    l.render(false)
}

#[test]
fn bad_transport_parameters_are_located_errors() {
    let e = errors("transport t {\n  kind gpudirect_rdma\n  efficiency -0.5\n}\n");
    assert!(
        e.contains("t.orr:3:14") && e.contains("efficiency must be greater than 0"),
        "{e}"
    );
    let e = errors("transport t {\n  kind gpudirect_rdma\n  efficiency 1.5\n}\n");
    assert!(e.contains("t.orr:3:14") && e.contains("at most 1"), "{e}");
    let e = errors("transport t {\n  kind gpudirect_rdam\n}\n");
    assert!(
        e.contains("t.orr:2:8")
            && e.contains("unknown transport kind `gpudirect_rdam`")
            && e.contains("gpudirect_rdma"),
        "{e}"
    );
    let e = errors("transport t {\n  latency 3 us\n}\n");
    assert!(
        e.contains("t.orr:1:11") && e.contains("needs a `kind`"),
        "{e}"
    );
    let e = errors("transport t {\n  kind tcp\n  chunk 100 B\n}\n");
    assert!(
        e.contains("t.orr:3:9") && e.contains("at least 1 KiB"),
        "{e}"
    );
    let e = errors("transport t {\n  kind tcp\n  latency 3 GB\n}\n");
    assert!(
        e.contains("t.orr:3:11") && e.contains("expected time"),
        "{e}"
    );
    let e = errors("transport t {\n  kind tcp\n}\ntransport t {\n  kind rdma\n}\n");
    assert!(
        e.contains("t.orr:4:11") && e.contains("declared twice"),
        "{e}"
    );
    let e = errors(
        "workload w {\n  tasks a x 1 {\n    duration 1 s\n    transport nvlink_p2\n  }\n}\n",
    );
    assert!(
        e.contains("t.orr:4:15")
            && e.contains("unknown transport `nvlink_p2`")
            && e.contains("nvlink_p2p"),
        "{e}"
    );
}

fn orrery(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn the_transports_command_prints_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let o = orrery(&[
        "transports",
        "scenarios/quickstart.orr",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    for w in [
        "same node",
        "cross node",
        "object_store",
        "nvlink_p2p",
        "host_staged_rdma",
        "1 GiB",
        "speedup",
    ] {
        assert!(out.contains(w), "missing {w}:\n{out}");
    }
    let o = orrery(&[
        "transports",
        "scenarios/quickstart.orr",
        "--json",
        "--sizes",
        "1MiB, 2 GiB",
        "--pairs",
        "r0.n0.d0:r1.n0.d7",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema_version"], 2);
    assert_eq!(
        v["sizes_bytes"],
        serde_json::json!([1048576.0, 2147483648.0])
    );
    let pair = &v["pairs"][0];
    assert_eq!(pair["dst"]["name"], "r1.n0.d7");
    assert_eq!(
        pair["cells"].as_array().unwrap().len(),
        2 * TransportKind::ALL.len()
    );
}

#[test]
fn the_transports_command_rejects_bad_input_with_exit_2() {
    let dir = std::env::temp_dir().join(format!("orrery-transport-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.orr");
    std::fs::write(&bad, "transport t {\n  kind tcp\n  efficiency 2\n}\n").unwrap();
    let o = orrery(&["transports", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.orr:3:14"));
    let nocluster = dir.join("nocluster.orr");
    std::fs::write(&nocluster, "transport t {\n  kind tcp\n}\n").unwrap();
    let o = orrery(&["transports", nocluster.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no cluster"));
    for args in [
        ["--sizes", "12 parsecs"],
        ["--sizes", "-4KiB"],
        ["--pairs", "r0.n0.d0:r9.n0.d0"],
        ["--pairs", "r0.n0.d9:r0.n0.d0"],
    ] {
        let o = orrery(&["transports", "scenarios/quickstart.orr", args[0], args[1]]);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&o.stderr).starts_with("error: "));
    }
    let o = orrery(&["transports", "no/such/file.orr"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_same_workload_runs_under_each_transport_against_the_object_store() {
    // 16 producers write 256 MB each from GPUs; 8 consumers read 512 MB each, half of it
    // from the other node. Direct GPU transports skip the object store's copies and
    // serialisation, so the consumers run faster; NVLink P2P cannot cross nodes: that
    // transport is unavailable for this workload, and the comparison says why.
    let s = orrery::load_str(
        "t.orr",
        "cluster c {\n  rack r0 {\n    node dgx_h100 x 2\n  }\n}\nworkload w {\n  tasks make x 16 {\n    resources { GPU: 1 }\n    duration 1 s\n    output 256 MB\n  }\n  tasks use x 8 after make {\n    resources { GPU: 1 }\n    duration 1 s\n  }\n}\n",
    )
    .spec
    .unwrap();
    let c = orrery::experiment::transports::compare_workload(
        &s,
        1,
        &Default::default(),
        &Default::default(),
    );
    let row = |n: &str| c.rows.iter().find(|r| r.transport == n).unwrap();
    let run = |n: &str| row(n).run_mean[1].1;
    assert_eq!(row("object_store").speedup, Some(1.0));
    assert!(
        run("nccl") < run("object_store"),
        "{} vs {}",
        run("nccl"),
        run("object_store")
    );
    assert!(run("gpudirect_rdma") < run("host_staged_rdma") + 1e-9);
    // 256 MB through D2H, serialisation, a 5 MiB-chunk push and H2D: tens of ms.
    assert!(run("object_store") > 1.02, "{}", run("object_store"));
    assert!(row("object_store").available());
    // The consumers reading from the other node fail under NVLink P2P: no makespan to compare.
    let p2p = row("nvlink_p2p");
    assert!(
        p2p.transfers_unavailable > 0 && p2p.unavailable.len() == 1,
        "{p2p:?}"
    );
    assert_eq!((p2p.makespan, p2p.speedup), (None, None));
    // The producers read nothing: their run time is their duration under every transport.
    assert!(c.rows.iter().all(|r| (r.run_mean[0].1 - 1.0).abs() < 1e-9));
}

#[test]
fn calibration_profiles_replace_the_copy_and_memcpy_models() {
    // H200 nodes with the datasheet-derived H200 profile (D2H/H2D: 10 µs + bytes / 52 GB/s)
    // and this machine's measured host profile (memcpy): the object store's device copies
    // take the fitted latency per chunk and run at the fitted bandwidth, its host copies at
    // the measured memcpy rate.
    let s = spec(
        "calibration h200_datasheet\ncalibration cpu_epyc_2vcpu\ncluster c {\n  rack r0 {\n    node hgx_h200 x 2\n  }\n}\n",
    );
    let g = Graph::build(&s);
    let base = TransportParams::named(&s, "object_store").unwrap();
    let p = base.clone().calibrated(&s, 0, 1);
    assert_eq!(
        p.fits.sources,
        [
            "d2h_pinned from h200_datasheet",
            "p2p from h200_datasheet",
            "h2d_pinned from h200_datasheet",
            "memcpy from cpu_epyc_2vcpu"
        ]
    );
    let bytes = 1e9;
    let pl = orrery::transport::plan(&g, &p, (0, 0), (1, 0), bytes, 1).unwrap();
    let d2h = pl
        .stages
        .iter()
        .find(|st| st.kind == orrery::transport::StageKind::D2h)
        .unwrap();
    let path = pl.path(d2h);
    let cap = g.path_bottleneck(path);
    match d2h.mover {
        orrery::transport::Mover::Flow { inflation, .. } => {
            assert!((inflation - cap / 52e9).abs() < 1e-12, "{inflation}")
        }
        _ => panic!("a device copy is a flow"),
    }
    assert!((d2h.overhead - (10e-6 - g.path_latency(path))).abs() < 1e-15);
    // On an idle network the whole D2H stage takes latency + 1 GB / 52 GB/s.
    let one = orrery::transport::closed_form(&pl, &g.capacity);
    let plain = orrery::transport::plan(&g, &base, (0, 0), (1, 0), bytes, 1).unwrap();
    let plain = orrery::transport::closed_form(&plain, &g.capacity);
    assert!(one.secs != plain.secs);
    // Host copies: the measured memcpy, not the default 11.6 GB/s.
    let ser = pl
        .stages
        .iter()
        .find(|st| st.kind == orrery::transport::StageKind::Serialize)
        .unwrap();
    let cpu = &s.profiles["cpu_epyc_2vcpu"];
    let fit = cpu.transfer("memcpy").unwrap();
    let top = fit.segments.last().unwrap();
    match ser.mover {
        orrery::transport::Mover::Copy { rate } => {
            assert!((rate - top.bandwidth_bytes_per_s).abs() < 1.0, "{rate}")
        }
        _ => panic!("serialisation is a memory copy"),
    }
    // Without profiles nothing changes.
    let none = spec("cluster c {\n  rack r0 {\n    node hgx_h200 x 2\n  }\n}\n");
    assert!(
        TransportParams::named(&none, "object_store")
            .unwrap()
            .calibrated(&none, 0, 1)
            .fits
            .is_empty()
    );
}

#[test]
fn on_the_shared_network_a_plan_is_its_fixed_part_then_its_wire_bytes_as_one_flow() {
    // Idle: fixed + wire flow = the closed form, for a wire-bound (RDMA) and a staging-bound
    // (object store) transfer. Against a background flow on the same NIC the wire share takes
    // exactly twice as long (max-min halves the NIC), the fixed part does not change.
    use orrery::transport::shared;
    let s = spec("cluster c {\n  rack r0 {\n    node dgx_h100 x 2\n  }\n}\n");
    let g = Graph::build(&s);
    for kind in [TransportKind::Rdma, TransportKind::ObjectStore] {
        let pl = plan(&g, &builtin(kind), (0, 0), (1, 0), GIB, 0).unwrap();
        let sp = shared(&pl, &g.capacity);
        let (path, bytes) = sp.wire.clone().expect("crosses the network");
        let alone = {
            let mut net = idle(&g);
            let f = net.add(path.clone(), bytes);
            net.next_completion().map(|(id, dt)| {
                assert_eq!(id, f);
                dt
            })
        }
        .unwrap();
        assert!(
            close(sp.fixed_secs + alone, closed_form(&pl, &g.capacity).secs),
            "{kind:?}"
        );
        let mut net = idle(&g);
        let bottleneck = path
            .iter()
            .copied()
            .min_by(|a, b| g.capacity[*a].total_cmp(&g.capacity[*b]))
            .unwrap();
        net.add(vec![bottleneck], f64::INFINITY);
        let f = net.add(path, bytes);
        let shared_dt = loop {
            let (id, dt) = net.next_completion().unwrap();
            if id == f {
                break dt;
            }
        };
        assert!(
            close(shared_dt, 2.0 * alone),
            "{kind:?}: {shared_dt} vs {alone}"
        );
    }
}

#[test]
fn a_run_names_the_calibration_profiles_that_priced_its_fetches() {
    // b reads a's outputs, one from the other node, in device memory through the object
    // store: its D2H/H2D copies come from the H200 profile, and the run says so.
    let s = spec(
        "calibration h200_datasheet\ncluster c {\n  rack r0 {\n    node hgx_h200 x 2\n  }\n}\nworkload w {\n  tasks a x 2 {\n    resources { GPU: 8 }\n    duration 1 s\n    output 1 GB\n  }\n  tasks b x 1 after a {\n    resources { GPU: 8 }\n    duration 1 s\n  }\n}\n",
    );
    let r = orrery::sim::simulate(&s, &orrery::sim::SimConfig::default());
    assert!(
        r.network_models.iter().any(|m| m.on_graph
            && m.text.starts_with(
                "object fetch w.b: transport object_store on the shared network, from the producers' nodes; "
            )
            && m.text.contains("d2h_pinned from h200_datasheet")),
        "{:?}",
        r.network_models
    );
}

/// TCP and Gloo copy every byte through the kernel at both ends, the copy a loopback on one
/// node is: between nodes one stream moves at most the host's memcpy rate, so it is never
/// faster than within a node, at any size, and on a 400 Gb/s NIC a large transfer runs at
/// that copy rate, not the wire's.
#[test]
fn tcp_between_nodes_is_never_faster_than_within_one() {
    let s = spec("cluster c {\n  rack r0 {\n    node dgx_h100 x 2\n  }\n  fabric leaf_spine\n}\n");
    let c = compare(
        &s,
        &orrery::transport::compare::DEFAULT_SIZES,
        &[((0, 0), (0, 1)), ((0, 0), (1, 0))],
    )
    .unwrap();
    for kind in ["tcp", "gloo"] {
        for &n in &c.sizes {
            let t = |pair: usize| {
                c.pairs[pair]
                    .cells
                    .iter()
                    .find(|x| x.bytes == n && x.transport == kind)
                    .and_then(|x| x.breakdown)
                    .unwrap()
            };
            let (within, between) = (t(0), t(1));
            assert!(
                between.secs >= within.secs,
                "{kind} {n} B: between nodes {} < within {}",
                between.secs,
                within.secs
            );
        }
    }
    let g = Graph::build(&s);
    let p = plan(&g, &builtin(TransportKind::Tcp), (0, 0), (1, 0), GIB, 0).unwrap();
    let b = run_plan(&idle(&g), &p).unwrap();
    assert!(close(b.bandwidth_secs, GIB / MEMCPY), "{b:?}");
}
