//! The link graph and routes against hand-worked topologies, and flow-level sharing over it
//! against the closed-form bisection bandwidth `orrery check` prints.

use orrery::load_str;
use orrery::network::{FlowNet, Graph, Vertex};
use orrery::scenario::Spec;

fn spec(src: &str) -> Spec {
    let l = load_str("t.orr", src);
    assert!(!l.has_errors(), "{}", l.render(false));
    l.spec.unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

#[test]
fn devices_of_one_node_talk_through_the_nvswitch() {
    let s = spec("cluster c {\n  node dgx_h100 x 1\n}\n");
    let g = Graph::build(&s);
    let p = g.route((0, 0), (0, 1), 0).unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!(
        g.ends[p[0]],
        (
            Vertex::Device { node: 0, device: 0 },
            Vertex::NvSwitch { node: 0 }
        )
    );
    assert!(close(g.capacity[p[0]], 450e9));
    // Two senders into one receiver share its NVLink: 225 GB/s each.
    let mut n = FlowNet::new(g.capacity.clone());
    let a = n.add(p, 1e12);
    let b = n.add(g.route((0, 2), (0, 1), 0).unwrap(), 1e12);
    assert!(close(n.rate(a), 225e9) && close(n.rate(b), 225e9));
}

#[test]
fn traffic_between_nodes_leaves_through_the_gpu_local_nic() {
    // dgx_h100: GPUs 0,1 and compute NICs 0,1 under PCIe switch 0. GPU 1 → node 1 GPU 1 goes
    // GPU → sw0 → NIC (same switch: GPUDirect, no CPU) → leaf → NIC → sw0 → GPU, 400 Gb/s
    // = 50 GB/s at the NICs.
    let s = spec("cluster c {\n  rack r0 {\n    node dgx_h100 x 2\n  }\n}\n");
    let g = Graph::build(&s);
    let p = g.route((0, 1), (1, 1), 0).unwrap();
    let hops: Vec<_> = p.iter().map(|l| g.ends[*l]).collect();
    assert_eq!(
        hops[0],
        (
            Vertex::Device { node: 0, device: 1 },
            Vertex::Switch { node: 0, switch: 0 }
        )
    );
    assert!(matches!(hops[1].1, Vertex::Nic { node: 0, .. }));
    assert!(
        !hops
            .iter()
            .any(|(a, b)| matches!(a, Vertex::Root { .. }) || matches!(b, Vertex::Root { .. })),
        "{hops:?}"
    );
    let mut n = FlowNet::new(g.capacity.clone());
    let f = n.add(p, 1e12);
    assert!(close(n.rate(f), 50e9));
}

#[test]
fn cross_rack_flows_get_exactly_the_closed_form_bisection() {
    // 2 racks × 2 DGX nodes, leaf-spine 2:1. Each rack injects 2 × 8 × 50 GB/s = 800 GB/s;
    // its uplink is 400 GB/s, 100 GB/s to each of 4 spines. 16 flows from every GPU of rack 0
    // to rack 1, spread over the spines by ECMP: 4 per spine link, 25 GB/s each, 400 GB/s in
    // all — the bisection `orrery check` computes, total / (2 × 2).
    let s = spec(
        "cluster c {\n  rack r[0..1] {\n    node dgx_h100 x 2\n  }\n  fabric leaf_spine oversubscription 2:1\n}\n",
    );
    let g = Graph::build(&s);
    let mut n = FlowNet::new(g.capacity.clone());
    let mut flows = Vec::new();
    for k in 0..16usize {
        let (src, dst) = ((k / 8, k % 8), (2 + k / 8, k % 8));
        flows.push(n.add(g.route(src, dst, k as u64).unwrap(), 1e12));
    }
    let total: f64 = flows.iter().map(|f| n.rate(*f)).sum();
    let bisection = orrery::summary::fabric_bisection(&s, s.cluster.as_ref().unwrap())
        .unwrap()
        .0;
    assert!(close(total, 400e9), "{total}");
    assert!(close(total, bisection), "{total} vs {bisection}");
    assert!(flows.iter().all(|f| close(n.rate(*f), 25e9)));
}

#[test]
fn gpus_without_a_local_nic_cross_the_socket() {
    // A node with 2 GPUs on NUMA 1 and its only NIC on NUMA 0: traffic between nodes goes
    // GPU → root 1 → root 0 (socket link) → NIC.
    let s = spec(
        "node split {\n  cpu sockets 2, cores 16\n  memory 256 GiB\n  device L4 x 2 at numa 1\n  nic roce_400g at numa 0\n}\ncluster c {\n  rack r0 {\n    node split x 2\n  }\n}\n",
    );
    let g = Graph::build(&s);
    let p = g.route((0, 0), (1, 0), 0).unwrap();
    assert!(p.iter().any(|l| matches!(
        g.ends[*l],
        (Vertex::Root { numa: 1, .. }, Vertex::Root { numa: 0, .. })
    )));
}

#[test]
fn ring_allreduce_as_flows_equals_the_closed_form_when_uncontended() {
    // 8 GPUs of one DGX H100 in a ring through the NVSwitch: each step's 8 flows use
    // distinct links at β = 370.8 GB/s (NCCL's NVLink4 figure, the catalog's `collective`;
    // line rate 450), so t = 2(p−1)·α + 2(p−1)/p · n/β exactly.
    use orrery::network::collective::{bandwidths, ring_allreduce_secs};
    let s = spec("cluster c {\n  node dgx_h100 x 1\n}\n");
    let g = Graph::build(&s);
    let net = FlowNet::new(g.capacity.clone());
    let ranks: Vec<(usize, usize)> = (0..8).map(|d| (0, d)).collect();
    let (n, alpha, beta) = (1e9, 3.4e-6, 370.8e9);
    let t = ring_allreduce_secs(&g, &net, &ranks, n, alpha).unwrap();
    let closed = 2.0 * 7.0 * alpha + 2.0 * 7.0 / 8.0 * n / beta;
    assert!((t - closed).abs() < 1e-12, "{t} vs {closed}");
    // nccl-tests: busbw of an uncontended ring approaches β as α vanishes.
    let (_, busbw) = bandwidths(
        "allreduce",
        8,
        n,
        ring_allreduce_secs(&g, &net, &ranks, n, 0.0).unwrap(),
    );
    assert!((busbw - beta).abs() / beta < 1e-9);
    // With a competing 1 TB transfer into GPU 1, the step that sends into GPU 1 halves its
    // rate there, and every step waits for it: the bandwidth term doubles.
    let mut busy = FlowNet::new(g.capacity.clone());
    busy.add(g.route((0, 5), (0, 1), 0).unwrap(), 1e12);
    let slow = ring_allreduce_secs(&g, &busy, &ranks, n, alpha).unwrap();
    let expect = 2.0 * 7.0 * alpha + 2.0 * 2.0 * 7.0 / 8.0 * n / beta;
    assert!((slow - expect).abs() < 1e-9, "{slow} vs {expect}");
}

#[test]
fn slice_chips_form_a_torus_with_dimension_ordered_routes() {
    // A 4x4x4 v5p slice: 16 hosts of 4 chips. ICI per link = 600 GB/s per direction / 6 links.
    let s = spec(
        "cluster c {\n  slice s0 node tpu_v5p_host topology 4x4x4\n  rack ctl {\n    node ray_head_vm x 1\n  }\n}\nnode ray_head_vm {\n  cpu sockets 1, cores 8, numa 1, threads 16\n  memory 64 GB\n}\n",
    );
    let g = Graph::build(&s);
    // Chip 0 (host 0 dev 0, coords 0,0,0) to chip 63 (host 15 dev 3, coords 3,3,3): one hop
    // back round each dimension's wrap-around: 3 hops.
    let p = g.route((0, 0), (15, 3), 0).unwrap();
    assert_eq!(
        p.len(),
        3,
        "{:?}",
        p.iter().map(|l| g.ends[*l]).collect::<Vec<_>>()
    );
    for l in &p {
        assert!(close(g.capacity[*l], 600e9 / 6.0));
        assert_eq!(g.kind[*l], orrery::network::LinkKind::Ici);
    }
    // Chip 0 to chip 2 (coords 2,0,0): two hops along x, through chip 1 (same host).
    let p = g.route((0, 0), (0, 2), 0).unwrap();
    assert_eq!(g.ends[p[0]].1, Vertex::Device { node: 0, device: 1 });
    assert_eq!(p.len(), 2);
    // Chip 0 to chip 21 (coords 1,1,1): x then y then z.
    let p = g.route((0, 0), (5, 1), 0).unwrap();
    let hops: Vec<_> = p.iter().map(|l| g.ends[*l].1).collect();
    assert_eq!(
        hops,
        vec![
            Vertex::Device { node: 0, device: 1 },
            Vertex::Device { node: 1, device: 1 },
            Vertex::Device { node: 5, device: 1 },
        ]
    );
    // Every chip has 6 ICI neighbours in a 4x4x4 torus.
    let ici = (0..g.ends.len())
        .filter(|l| g.kind[*l] == orrery::network::LinkKind::Ici)
        .count();
    assert_eq!(ici, 64 * 6);
}

#[test]
fn rail_optimized_routes_stay_on_the_destination_rail() {
    // Two DGX H100 in two racks, one leaf per rail. GPU 0 (rail 0) sends to node 1 GPU 5
    // (rail 5): it first crosses NVLink to GPU 5 of its own node (PXN), then rail 5.
    let s = spec(
        "cluster c {\n  rack r[0..1] {\n    node dgx_h100 x 1\n  }\n  fabric rail_optimized latency 2 us\n}\n",
    );
    let g = Graph::build(&s);
    let p = g.route((0, 0), (1, 5), 0).unwrap();
    let hops: Vec<_> = p.iter().map(|l| g.ends[*l]).collect();
    assert_eq!(hops[0].1, Vertex::NvSwitch { node: 0 });
    assert_eq!(hops[1].1, Vertex::Device { node: 0, device: 5 });
    let leaves: Vec<_> = hops
        .iter()
        .filter_map(|(_, b)| match b {
            Vertex::Leaf { rack, rail } => Some((*rack, *rail)),
            _ => None,
        })
        .collect();
    assert_eq!(leaves, vec![(0, 5), (1, 5)]);
    // Latency: 2 NVLink hops, PCIe hops to and from the NICs, 4 fabric hops at 2 us.
    let fabric: f64 = p
        .iter()
        .filter(|l| g.kind[**l] == orrery::network::LinkKind::Network)
        .map(|l| g.latency[*l])
        .sum();
    assert!(close(fabric, 4.0 * 2e-6), "{fabric}");
    assert!(g.path_latency(&p) > fabric);
    // Host memory of GPU 5 is its socket's root complex; a host-to-host route exists.
    let h = g.host_of((0, 5)).unwrap();
    assert!(matches!(h, Vertex::Root { node: 0, .. }));
    assert!(g.route_vertices(h, g.host_of((1, 0)).unwrap(), 1).is_some());
}

#[test]
fn zones_meet_in_a_core_at_their_uplink() {
    // Two zones of one rack each (2 DGX nodes, non-blocking leaves: 800 GB/s up per rack),
    // joined at `zone_uplink 1.6 Tbps` = 200 GB/s per zone, 50 GB/s per spine. 16 flows from
    // every GPU of zone west to zone east cross the core: 4 per spine, 12.5 GB/s each, 200 GB/s
    // in all — the zone-aligned bisection `orrery check` computes.
    let s = spec(
        "cluster c {\n  zone west {\n    rack w0 {\n      node dgx_h100 x 2\n    }\n  }\n  zone east {\n    rack e0 {\n      node dgx_h100 x 2\n    }\n  }\n  fabric leaf_spine zone_uplink 1.6 Tbps\n}\n",
    );
    let g = Graph::build(&s);
    let p = g.route((0, 0), (2, 0), 1).unwrap();
    let hops: Vec<_> = p.iter().map(|l| g.ends[*l].1).collect();
    assert!(hops.contains(&Vertex::Core), "{hops:?}");
    assert!(hops.contains(&Vertex::Spine { zone: 1, spine: 1 }));
    assert!(hops.contains(&Vertex::Spine { zone: 2, spine: 1 }));
    // Inside a zone no traffic reaches the core.
    let inside = g.route((0, 0), (1, 0), 1).unwrap();
    assert!(!inside.iter().any(|l| g.ends[*l].1 == Vertex::Core));
    let mut n = FlowNet::new(g.capacity.clone());
    let flows: Vec<_> = (0..16usize)
        .map(|k| {
            let (src, dst) = ((k / 8, k % 8), (2 + k / 8, k % 8));
            n.add(g.route(src, dst, k as u64).unwrap(), 1e12)
        })
        .collect();
    let total: f64 = flows.iter().map(|f| n.rate(*f)).sum();
    assert!(close(total, 200e9), "{total}");
    assert!(flows.iter().all(|f| close(n.rate(*f), 12.5e9)));
    let bisection = orrery::summary::fabric_bisection(&s, s.cluster.as_ref().unwrap())
        .unwrap()
        .0;
    assert!(close(bisection, 200e9), "{bisection}");
    // Without zone_uplink the zones are joined without further oversubscription.
    let open = spec(
        "cluster c {\n  zone west {\n    rack w0 {\n      node dgx_h100 x 2\n    }\n  }\n  zone east {\n    rack e0 {\n      node dgx_h100 x 2\n    }\n  }\n  fabric leaf_spine\n}\n",
    );
    let b = orrery::summary::fabric_bisection(&open, open.cluster.as_ref().unwrap())
        .unwrap()
        .0;
    assert!(close(b, 800e9), "{b}");
}

// ---- storage targets ---------------------------------------------------------------------

/// One rack of 4 DGX H100 on a non-blocking leaf-spine fabric (or in two zones), a 100 GB/s
/// fabric storage and a 12 GB/s local drive per node.
fn storage_spec(zones: bool) -> Spec {
    let racks = if zones {
        "  zone a {\n    rack r0 {\n      node dgx_h100 x 4\n    }\n  }\n  zone b {\n    rack r1 {\n      node dgx_h100 x 4\n    }\n  }\n"
    } else {
        "  rack r0 {\n    node dgx_h100 x 4\n  }\n"
    };
    spec(&format!(
        "cluster c {{\n{racks}  fabric leaf_spine\n  storage pfs {{\n    bandwidth 100 GB/s\n    attach fabric\n    latency 200 us\n  }}\n  storage nvme {{\n    bandwidth 12 GB/s\n    attach node_local\n  }}\n}}\n"
    ))
}

#[test]
fn fabric_storage_hangs_under_the_spines_with_an_even_share_of_its_bandwidth() {
    use orrery::network::LinkKind;
    let s = storage_spec(false);
    let g = Graph::build(&s);
    // Node 1 writes from host memory: host → ... → compute NIC → leaf → spine → storage.
    let p = g.route_to_storage(1, 0, 0).unwrap();
    let hops: Vec<_> = p.iter().map(|l| g.ends[*l]).collect();
    assert_eq!(hops[0].0, Vertex::Root { node: 1, numa: 0 }, "{hops:?}");
    let at = |pred: &dyn Fn(&Vertex) -> bool| hops.iter().position(|(_, b)| pred(b));
    let nic = at(&|v| matches!(v, Vertex::Nic { node: 1, .. })).unwrap();
    let leaf = at(&|v| matches!(v, Vertex::Leaf { rack: 0, .. })).unwrap();
    let spine = at(&|v| matches!(v, Vertex::Spine { spine: 0, .. })).unwrap();
    assert!(
        nic < leaf && leaf < spine && spine == hops.len() - 2,
        "{hops:?}"
    );
    assert_eq!(hops.last().unwrap().1, Vertex::Storage { index: 0 });
    let last = *p.last().unwrap();
    assert_eq!(g.kind[last], LinkKind::Storage);
    // 100 GB/s over 4 spine uplinks: 25 GB/s each, the path's bottleneck (NIC 50 GB/s, leaf
    // uplink 4 × 8 × 50 / 4 = 400 GB/s per spine).
    assert!(close(g.capacity[last], 25e9));
    assert!(close(g.path_bottleneck(&p), 25e9));
    assert!(close(g.latency[last], 200e-6));
    // The read back crosses the same links the other way.
    let back = g.route_from_storage(1, 0, 0).unwrap();
    let rev: Vec<_> = back.iter().map(|l| g.ends[*l]).collect();
    let want: Vec<_> = hops.iter().rev().map(|(a, b)| (*b, *a)).collect();
    assert_eq!(rev, want);
    assert!(close(g.path_latency(&back), g.path_latency(&p)));
    // No such storage or node: no route.
    assert!(g.route_to_storage(1, 2, 0).is_none());
    assert!(g.route_to_storage(9, 0, 0).is_none());
}

#[test]
fn storage_routes_spread_keys_over_nics_and_uplinks_and_share_the_aggregate() {
    let s = storage_spec(false);
    let g = Graph::build(&s);
    let uplink = |key: u64| g.ends[*g.route_to_storage(0, 0, key).unwrap().last().unwrap()].0;
    let spines: std::collections::BTreeSet<_> = (0..4).map(uplink).collect();
    assert_eq!(spines.len(), 4, "{spines:?}");
    let nic = |key: u64| {
        g.route_to_storage(0, 0, key)
            .unwrap()
            .iter()
            .find_map(|l| match g.ends[*l].1 {
                Vertex::Nic { nic, .. } => Some(nic),
                _ => None,
            })
            .unwrap()
    };
    let nics: std::collections::BTreeSet<_> = (0..8).map(nic).collect();
    assert_eq!(nics.len(), 8, "the 8 compute NICs in turn: {nics:?}");
    // 16 writers (4 nodes × 4 keys) share the storage's 100 GB/s, 25 GB/s per uplink.
    let mut n = FlowNet::new(g.capacity.clone());
    let flows: Vec<_> = (0..16u64)
        .map(|k| n.add(g.route_to_storage((k / 4) as usize, 0, k).unwrap(), 1e12))
        .collect();
    let total: f64 = flows.iter().map(|f| n.rate(*f)).sum();
    assert!(close(total, 100e9), "{total}");
}

#[test]
fn with_zones_fabric_storage_hangs_under_the_core() {
    let s = storage_spec(true);
    let g = Graph::build(&s);
    for node in [0, 5] {
        let p = g.route_to_storage(node, 0, 3).unwrap();
        let hops: Vec<_> = p.iter().map(|l| g.ends[*l]).collect();
        assert_eq!(
            hops[hops.len() - 2],
            (
                Vertex::Spine {
                    zone: 1 + node / 4,
                    spine: 3
                },
                Vertex::Core
            ),
            "{hops:?}"
        );
        assert_eq!(
            hops.last().unwrap(),
            &(Vertex::Core, Vertex::Storage { index: 0 })
        );
        // One uplink: the whole 100 GB/s.
        assert!(close(g.capacity[*p.last().unwrap()], 100e9));
    }
}

#[test]
fn node_local_storage_is_a_drive_on_each_nodes_host_memory() {
    use orrery::network::LinkKind;
    let s = storage_spec(false);
    let g = Graph::build(&s);
    for node in 0..4 {
        let p = g.route_to_storage(node, 1, 7).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(
            g.ends[p[0]],
            (
                Vertex::Root { node, numa: 0 },
                Vertex::Disk { node, storage: 1 }
            )
        );
        assert_eq!(g.kind[p[0]], LinkKind::Storage);
        assert!(close(g.path_bottleneck(&p), 12e9));
        // The default latency: 100 µs (an assumption of the spec).
        assert!(close(g.latency[p[0]], 100e-6));
        let back = g.route_from_storage(node, 1, 7).unwrap();
        assert_eq!(
            g.ends[back[0]],
            (
                Vertex::Disk { node, storage: 1 },
                Vertex::Root { node, numa: 0 }
            )
        );
        // A node's drive goes down with it.
        assert!(g.node_links(node).contains(&p[0]));
    }
}

/// ECMP spreads over the spines the fabric declares: with `spines 8` each leaf's 400 GB/s
/// uplink is 8 links of 50 GB/s, cross-rack routes use all 8 (key mod 8), and 16 flows between
/// the racks get 2 per spine link, 25 GB/s each: the same bisection as with 4 spines. A
/// single switch has no spines to declare; an explicit fabric declares its own.
#[test]
fn ecmp_spreads_over_the_spines_the_fabric_declares() {
    let s = spec(
        "cluster c {\n  rack r[0..1] {\n    node dgx_h100 x 2\n  }\n  fabric leaf_spine oversubscription 2:1 spines 8\n}\n",
    );
    let g = Graph::build(&s);
    assert_eq!(g.spines, 8);
    let ups: Vec<f64> = (0..g.ends.len())
        .filter(|&l| {
            matches!(
                g.ends[l],
                (Vertex::Leaf { rack: 0, .. }, Vertex::Spine { .. })
            )
        })
        .map(|l| g.capacity[l])
        .collect();
    assert_eq!(ups.len(), 8);
    assert!(ups.iter().all(|c| close(*c, 50e9)), "{ups:?}");
    let mut used = std::collections::BTreeSet::new();
    let mut n = FlowNet::new(g.capacity.clone());
    let mut flows = Vec::new();
    for k in 0..16usize {
        let (src, dst) = ((k / 8, k % 8), (2 + k / 8, k % 8));
        let p = g.route(src, dst, k as u64).unwrap();
        for l in &p {
            if let (_, Vertex::Spine { spine, .. }) = g.ends[*l] {
                used.insert(spine);
            }
        }
        flows.push(n.add(p, 1e12));
    }
    assert_eq!(used.len(), 8);
    assert!(flows.iter().all(|f| close(n.rate(*f), 25e9)));
    for bad in [
        "  fabric single_switch spines 8\n",
        "  fabric leaf_spine spines 0\n",
        "  fabric leaf_spine spines 100000\n",
    ] {
        let l = load_str(
            "t.orr",
            &format!("cluster c {{\n  rack r[0..1] {{\n    node dgx_h100 x 2\n  }}\n{bad}}}\n"),
        );
        assert!(l.has_errors(), "{bad}");
        assert!(l.render(false).contains("t.orr:5:"), "{}", l.render(false));
    }
}
