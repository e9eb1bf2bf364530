//! Tests of `tuning` (src/network/collective/tuning.rs),
//! kept beside it so that the module stays short.
//!
//! Figures worked by hand from `src/graph/tuning.cc` (NCCL 2.30.7) for a DGX H100 node:
//! 8 ranks, NVSwitch, NCCL's 18 × 20.6 = 370.8 GB/s of NVLink per GPU, 8 × 50 GB/s NICs.
use super::*;

fn dgx(nodes: usize) -> Comm {
    Comm {
        ranks: 8 * nodes,
        nodes,
        arch: Arch::Hopper,
        intra: Hw::NvLink,
        bw_intra: 370.8,
        bw_inter: 400.0,
        nvls: nodes == 1,
        nvls_tree: nodes > 1,
    }
}

fn est(c: &Comm, a: Algorithm, p: Protocol) -> Estimate {
    estimate(c, Op::AllReduce, a, p).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn one_node_ring_latencies_and_bandwidths() {
    let c = dgx(1);
    // LL: 6.6 + 14 × 0.6 µs; min(llMaxBw 141, 370.8 / 2) × 8 / 14.
    let e = est(&c, Algorithm::Ring, Protocol::LL);
    assert!(close(e.latency_us, 15.0), "{e:?}");
    assert!(close(e.bw_gbps, 141.0 * 8.0 / 14.0), "{e:?}");
    // LL128: 14 + 14 × 1.9; min(370.8 × 0.92, 16 × 36.7).
    let e = est(&c, Algorithm::Ring, Protocol::LL128);
    assert!(close(e.latency_us, 40.6), "{e:?}");
    assert!(close(e.bus_gbps, 370.8 * 0.92), "{e:?}");
    // Simple: 8.4 + 14 × 3.4; the full 370.8.
    let e = est(&c, Algorithm::Ring, Protocol::Simple);
    assert!(close(e.latency_us, 56.0), "{e:?}");
    assert!(close(e.bus_gbps, 370.8), "{e:?}");
}

#[test]
fn one_node_tree_and_nvls() {
    let c = dgx(1);
    // Tree Simple: 8.4 + 2 × 7 × 4.0; min(370.8 × 0.92, 16 × 38.7) × 0.5.
    let e = est(&c, Algorithm::Tree, Protocol::Simple);
    assert!(close(e.latency_us, 64.4), "{e:?}");
    assert!(close(e.bw_gbps, 370.8 * 0.92 * 0.5), "{e:?}");
    // Tree LL: 370.8 × 0.92 / 3.8 (under llMaxBw).
    let e = est(&c, Algorithm::Tree, Protocol::LL);
    assert!(close(e.bus_gbps, 370.8 * 0.92 / 3.8), "{e:?}");
    assert!(close(e.latency_us, 6.8 + 14.0 * 0.6), "{e:?}");
    // NVLS: 25 µs (replacing the base); 370.8 × 0.85 × 15/16 × 2, × 8 / 14.
    let e = est(&c, Algorithm::InSwitch, Protocol::Simple);
    assert!(close(e.latency_us, 25.0), "{e:?}");
    assert!(
        close(e.bw_gbps, 370.8 * 0.85 * 15.0 / 16.0 * 2.0 * 8.0 / 14.0),
        "{e:?}"
    );
    assert!(estimate(&c, Op::AllReduce, Algorithm::InSwitch, Protocol::LL).is_none());
    assert!(estimate(&c, Op::AllGather, Algorithm::Tree, Protocol::Simple).is_none());
}

#[test]
fn nccl_picks_ll_ring_then_nvls_on_one_node() {
    let c = dgx(1);
    let ar = |b: f64| choose(&c, Op::AllReduce, b, None, None).unwrap();
    assert_eq!(ar(1024.0), (Algorithm::Ring, Protocol::LL));
    assert_eq!(
        ar(8.0 * 1024f64.powi(3)),
        (Algorithm::InSwitch, Protocol::Simple)
    );
    // The LL-ring / NVLS crossover: 15 + b / 80.57 = 25 + b / 337.7 (µs, bytes / 1000).
    let x = 10.0 * 1000.0
        / (14.0 / (8.0 * 141.0) - 1.0 / (370.8 * 0.85 * 15.0 / 16.0 * 2.0 * 8.0 / 14.0));
    assert_eq!(ar(x * 0.99).0, Algorithm::Ring);
    assert_eq!(ar(x * 1.01).0, Algorithm::InSwitch);
    // Without NVLS (an A100 node) large allreduces go ring Simple.
    let a100 = Comm {
        arch: Arch::Ampere,
        nvls: false,
        nvls_tree: false,
        bw_intra: 240.0,
        ..c
    };
    assert_eq!(
        choose(&a100, Op::AllReduce, 1e9, None, None).unwrap(),
        (Algorithm::Ring, Protocol::Simple)
    );
    // Allgather has only the ring here.
    assert_eq!(
        choose(&c, Op::AllGather, 1e9, None, None).unwrap().0,
        Algorithm::Ring
    );
}

#[test]
fn nvls_trees_across_two_nodes_take_the_switchs_rate_and_the_trees_latency() {
    let c = dgx(2);
    let e = est(&c, Algorithm::NvlsTree, Protocol::Simple);
    // min(370.8 × 0.85 × 15/16 × 2, 2 × 400, 16 × 57.7): the switch's.
    let bus = 370.8 * 0.85 * 15.0 / 16.0 * 2.0;
    assert!(close(e.bus_gbps, bus), "{e:?}");
    assert!(close(e.bw_gbps, bus * 16.0 / 30.0), "{e:?}");
    // 25 µs on NVLink and 2 × log2(2) × 20.9 µs on the network.
    assert!(close(e.latency_us, 25.0 + 2.0 * 20.9), "{e:?}");
    assert!(close(nvls_tree_base(2), 66.8e-6));
    assert!(close(nvls_tree_base(8), (25.0 + 6.0 * 20.9) * 1e-6));
    // Simple only, allreduce only, never on one node.
    assert!(estimate(&c, Op::AllReduce, Algorithm::NvlsTree, Protocol::LL).is_none());
    assert!(estimate(&c, Op::AllGather, Algorithm::NvlsTree, Protocol::Simple).is_none());
    assert!(
        estimate(
            &dgx(1),
            Op::AllReduce,
            Algorithm::NvlsTree,
            Protocol::Simple
        )
        .is_none()
    );
    // NCCL takes it across two DGX H100s from 4 MiB (the tree's LL128 below): past the
    // NICs' ring.
    let mib = 1048576.0;
    for size in [4.0 * mib, 1024.0 * mib] {
        assert_eq!(
            choose(&c, Op::AllReduce, size, None, None),
            Some((Algorithm::NvlsTree, Protocol::Simple))
        );
    }
    assert_ne!(
        choose(&c, Op::AllReduce, 2.0 * mib, None, None).map(|x| x.0),
        Some(Algorithm::NvlsTree)
    );
}

#[test]
fn two_nodes_ring_is_bound_by_the_nics_and_pays_the_net_hops() {
    let c = Comm {
        bw_intra: 450.0,
        ..dgx(2)
    };
    // Ring: one speed for intra and inter (search.cc), so min(450, 400).
    let e = est(&c, Algorithm::Ring, Protocol::Simple);
    assert!(close(e.bus_gbps, 400.0), "{e:?}");
    // 30 steps, 2 of them across the net at 14 µs, 28 at max(3.4, 3 × 1 µs overhead).
    assert!(close(e.latency_us, 8.4 + 28.0 * 3.4 + 2.0 * 14.0), "{e:?}");
    // Tree: bwIntra up to 2 × bwInter: 450 × 0.92 under 16 × 41.4.
    let e = est(&c, Algorithm::Tree, Protocol::Simple);
    assert!(close(e.bus_gbps, 450.0 * 0.92), "{e:?}");
    assert!(
        close(e.latency_us, 8.4 + 2.0 * (7.0 * 4.0 + 1.0 * 14.0)),
        "{e:?}"
    );
    // Ring Simple's plateau: latency × 1.4 once each channel carries 64 B per rank.
    let t = time(&c, Op::AllReduce, Algorithm::Ring, Protocol::Simple, 1e6).unwrap();
    assert!(close(
        t,
        (e_lat(&c) * 1.4 + 1e6 / (1000.0 * 400.0 * 16.0 / 30.0)) * 1e-6
    ));
    assert!(estimate(&c, Op::AllReduce, Algorithm::InSwitch, Protocol::Simple).is_none());
}

fn e_lat(c: &Comm) -> f64 {
    est(c, Algorithm::Ring, Protocol::Simple).latency_us
}

#[test]
fn tree_correction_applies_by_size() {
    let c = dgx(1);
    let e = est(&c, Algorithm::Tree, Protocol::Simple);
    // 64 KiB: log2(65536 / 64) = 10 → factor 0.6 for Simple.
    let t = time(
        &c,
        Op::AllReduce,
        Algorithm::Tree,
        Protocol::Simple,
        65536.0,
    )
    .unwrap();
    assert!(close(
        t,
        (e.latency_us + 65536.0 / (1000.0 * e.bw_gbps * 0.6)) * 1e-6
    ));
}

#[test]
fn protocol_stretch_is_the_simple_to_protocol_bandwidth_ratio() {
    let c = dgx(1);
    let s = protocol_stretch(&c, Op::AllReduce, Algorithm::Ring, Protocol::LL);
    assert!(close(s, 370.8 / 141.0), "{s}");
    let s = protocol_stretch(&c, Op::AllReduce, Algorithm::Ring, Protocol::LL128);
    assert!(close(s, 1.0 / 0.92), "{s}");
    assert_eq!(
        protocol_stretch(&c, Op::AllReduce, Algorithm::Ring, Protocol::Simple),
        1.0
    );
}

#[test]
fn no_ll128_over_pcie() {
    let c = Comm {
        intra: Hw::Pci,
        arch: Arch::Ampere,
        nvls: false,
        nvls_tree: false,
        bw_intra: 25.0,
        ..dgx(1)
    };
    assert!(estimate(&c, Op::AllReduce, Algorithm::Ring, Protocol::LL128).is_none());
    assert!(estimate(&c, Op::AllReduce, Algorithm::Ring, Protocol::LL).is_some());
}

#[test]
fn nvls_chunks_shrink_with_the_message_as_enqueue_cc_cuts_them() {
    // 16 channels × 8 heads on one Hopper node: 128 KiB from 1 GiB, 64 KiB from 64 MiB,
    // 32 KiB from 8 MiB, 16 KiB below.
    let c = |b: f64| nvls_chunk(Arch::Hopper, 8, 1, b);
    let mib = 1024.0 * 1024.0;
    assert_eq!(c(1024.0 * mib), 131072.0);
    assert_eq!(c(1024.0 * mib - 1.0), 65536.0);
    assert_eq!(c(64.0 * mib), 65536.0);
    assert_eq!(c(64.0 * mib - 1.0), 32768.0);
    assert_eq!(c(8.0 * mib), 32768.0);
    assert_eq!(c(8.0 * mib - 1.0), 16384.0);
    assert_eq!(c(1.0), 16384.0);
    // Blackwell on one NVLink domain has 24 channels: the thresholds move up by 1.5.
    assert_eq!(nvls_chunk(Arch::Blackwell, 8, 1, 1024.0 * mib), 65536.0);
    assert_eq!(nvls_chunk(Arch::Blackwell, 8, 1, 1536.0 * mib), 131072.0);
}

#[test]
fn generations_from_catalog_names() {
    assert_eq!(Arch::of("NVIDIA", "H200", None), Some(Arch::Hopper));
    assert_eq!(Arch::of("nvidia", "b200", None), Some(Arch::Blackwell));
    assert_eq!(Arch::of("NVIDIA", "L4", None), Some(Arch::Ampere));
    assert_eq!(Arch::of("AMD", "MI300X", None), None);
    assert_eq!(Protocol::parse("LL128"), Some(Protocol::LL128));
    assert_eq!(Protocol::parse("fast"), None);
}
