//! Default compute and data-movement models used by the simulation until the calibrated
//! transport and roofline models (issue 4) and profiles (issue 6) replace them behind the same
//! functions. Every figure here is a stated assumption with its source:
//!
//! - Compute: the roofline of [`crate::compute`]: max(FLOP at the dtype's peak × efficiency,
//!   bytes at the memory bandwidth × efficiency) + launch overhead × kernels, with the
//!   efficiencies of the accelerator's calibration profile or stated defaults (compute 0.75:
//!   an H200 bf16 GEMM of 8192³ reaches ~770–800 of 989 TFLOPS, hardware-and-models.md).
//!   Work that declares no memory traffic or kernels takes FLOP / (devices × peak × 0.75).
//! - Collectives: the α–β costs of hardware-and-models.md ("Collective cost"): ring allreduce
//!   2(p−1)α + 2(p−1)/p·n/β; reduce-scatter, allgather and all-to-all (p−1)α + (p−1)/p·n/β;
//!   broadcast (p−1)α + n/β (pipelined). α per step from NCCL's tuning model (src/graph/tuning.cc):
//!   NVLink 3.4 µs, PCIe 5.7 µs, network 14 µs. β is the bottleneck per-device bandwidth: the
//!   scale-up link per direction inside one node, else each device's share of its node's compute
//!   NIC bandwidth. `hierarchical` is reduce-scatter inside nodes, allreduce across nodes on n/g,
//!   allgather inside nodes. The flow-level network model will replace these closed forms.
//! - Object transfers between nodes: 100 µs + bytes / the receiving node's injection bandwidth;
//!   free on the same node (shared-memory object store).
//! - Checkpoints: written at 5 GB/s per node in parallel (a typical parallel file system
//!   client); an assumption to be replaced by the storage path of the transport model.

use crate::engine::Time;
use crate::scenario::Spec;
use crate::scenario::hardware::NodeType;
use crate::scenario::workload::Compute;

/// The default compute efficiency (see [`crate::compute::roofline`](mod@crate::compute::roofline) for its source).
pub const DEFAULT_EFFICIENCY: f64 = crate::compute::DEFAULT_COMPUTE_EFFICIENCY;
pub const ALPHA_NVLINK: f64 = 3.4e-6;
pub const ALPHA_PCIE: f64 = 5.7e-6;
pub const ALPHA_NET: f64 = 14e-6;
pub const TRANSFER_LATENCY: f64 = 100e-6;
pub const CHECKPOINT_BW_PER_NODE: f64 = 5e9;
/// Bandwidth assumed for a node that declares no NIC (a 10 Gb/s management port).
pub const FALLBACK_NIC_BW: f64 = 10e9 / 8.0;

/// Seconds to whole nanoseconds, rounded half away from zero (0 for what is not positive and
/// finite, saturating at the end of the clock).
#[inline]
pub fn secs(t: f64) -> Time {
    if !(t.is_finite() && t > 0.0) {
        return 0;
    }
    let v = t * 1e9;
    if v < 4_503_599_627_370_496.0 {
        // Below 2^52, `round_pos` then `to_u64` without their float round trip: the
        // truncation and the fraction are exact, and the rounded integer is the answer (every
        // arrival's gap comes through here; the conversions were 6% of a serving run).
        let i = v as i64;
        return (i + i64::from(v - i as f64 >= 0.5)) as u64;
    }
    to_u64(round_pos(v))
}

/// `v as u64` (saturating; NaN is 0), through i64 where it fits: x86-64 converts to i64 in
/// one instruction and to u64 in a branchy sequence.
#[inline]
pub fn to_u64(v: f64) -> u64 {
    const I64_END: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if (0.0..I64_END).contains(&v) {
        v as i64 as u64
    } else {
        v as u64
    }
}

/// `v.round()` (half away from zero), bit for bit; quick for `0 ≤ v < 2^52`, without the
/// libm call x86-64's baseline makes for `round` (no SSE4.1 `roundsd`): converting every
/// event's time to nanoseconds was a fifth of an arrival's cost. Below 2^52 the truncation
/// `i` and the fraction `v − i` are exact; from 2^52 every double is an integer already.
#[inline]
pub fn round_pos(v: f64) -> f64 {
    const INTEGRAL: f64 = 4_503_599_627_370_496.0; // 2^52
    if v.is_nan() || v >= INTEGRAL || v.is_sign_negative() {
        return v.round();
    }
    // i64: one instruction each way (u64 is not); no branch on the fraction, which is a coin
    // toss the predictor misses half the time.
    let i = v as i64;
    (i + i64::from(v - i as f64 >= 0.5)) as f64
}

/// Dense peak of an accelerator for `dtype`; falls back to the widest dtype it lists at or
/// above in precision (bf16 → fp16 → tf32 → fp32), so a part without fp8 runs fp8 work at bf16.
pub fn peak(spec: &Spec, accelerator: &str, dtype: &str) -> Option<f64> {
    crate::compute::peak(spec.accelerators.get(accelerator)?, dtype).map(|(_, p)| p)
}

/// Seconds for the work of `c` (its FLOP times `batch`) on `devices` devices of
/// `accelerator`: the roofline model with the accelerator's profile or the defaults.
pub fn compute_secs(spec: &Spec, accelerator: &str, c: &Compute, batch: f64, devices: f64) -> f64 {
    crate::compute::roofline(spec, accelerator, &c.dtype)
        .map_or(0.0, |r| r.secs(&crate::compute::work_of(c, batch), devices))
}

/// Compute-NIC bandwidth of a node (all NICs if none is marked compute).
pub fn injection(spec: &Spec, nt: &NodeType) -> f64 {
    let b = spec.node_injection(nt).0;
    if b > 0.0 { b } else { FALLBACK_NIC_BW }
}

/// Per-direction scale-up bandwidth a collective gets between devices of a node, if they
/// are linked (line rate × [`crate::scenario::hardware::Interconnect::collective_share`]).
pub fn scale_up(spec: &Spec, nt: &NodeType) -> Option<f64> {
    let g = nt.devices.first()?;
    if g.link == "none" {
        return None;
    }
    spec.accelerators
        .get(&g.accelerator)?
        .interconnect
        .as_ref()
        .map(|i| i.per_direction.0 * i.collective_share())
}

/// Where the ranks of a collective sit: devices per node, and the node types.
pub struct Group<'a> {
    /// (node type, devices of the group on that node) per node.
    pub nodes: Vec<(&'a NodeType, u32)>,
    /// Per node, the fraction of its scale-up and of its network bandwidth still working
    /// (a degraded NVLink, a compute NIC down); empty means all 1.
    pub factors: Vec<(f64, f64)>,
}

impl Group<'_> {
    fn ranks(&self) -> u32 {
        self.nodes.iter().map(|n| n.1).sum()
    }
}

/// Seconds for one collective `op` of `bytes` per rank over `group` (closed forms above).
pub fn collective_secs(
    spec: &Spec,
    op: &str,
    bytes: f64,
    hierarchical: bool,
    group: &Group,
) -> f64 {
    let p = f64::from(group.ranks());
    if p <= 1.0 {
        return 0.0;
    }
    // Intra-node link: scale-up if every node has one, else PCIe.
    let factor = |i: usize| group.factors.get(i).copied().unwrap_or((1.0, 1.0));
    let intra = group
        .nodes
        .iter()
        .enumerate()
        .map(|(i, (nt, _))| scale_up(spec, nt).map(|b| b * factor(i).0))
        .try_fold(f64::INFINITY, |m, b| b.map(|b| m.min(b)));
    let (alpha_intra, beta_intra) = match intra {
        Some(b) => (ALPHA_NVLINK, b),
        None => (ALPHA_PCIE, 25e9),
    };
    let per_dev_net = group
        .nodes
        .iter()
        .enumerate()
        .map(|(i, (nt, d))| injection(spec, nt) * factor(i).1 / f64::from((*d).max(1)))
        .fold(f64::INFINITY, f64::min);
    let one_node = group.nodes.len() == 1;
    let flat = |p: f64, alpha: f64, beta: f64, n: f64| -> f64 {
        match op {
            "allreduce" => 2.0 * (p - 1.0) * alpha + 2.0 * (p - 1.0) / p * n / beta,
            "broadcast" => (p - 1.0) * alpha + n / beta,
            _ => (p - 1.0) * alpha + (p - 1.0) / p * n / beta,
        }
    };
    if one_node {
        return flat(p, alpha_intra, beta_intra, bytes);
    }
    let g = f64::from(group.nodes.iter().map(|n| n.1).max().unwrap_or(1));
    let m = group.nodes.len() as f64;
    if hierarchical && g > 1.0 && op == "allreduce" {
        let rs = (g - 1.0) * alpha_intra + (g - 1.0) / g * bytes / beta_intra;
        let inter = 2.0 * (m - 1.0) * ALPHA_NET + 2.0 * (m - 1.0) / m * (bytes / g) / per_dev_net;
        return 2.0 * rs + inter;
    }
    // A flat ring across nodes is bounded by its slowest hop: the network.
    flat(p, ALPHA_NET, per_dev_net.min(beta_intra), bytes)
}

/// Seconds to move `bytes` between two nodes of the given types (0 on the same node).
pub fn transfer_secs(spec: &Spec, same_node: bool, dst: &NodeType, bytes: f64) -> f64 {
    if same_node || bytes <= 0.0 {
        0.0
    } else {
        TRANSFER_LATENCY + bytes / injection(spec, dst)
    }
}

#[cfg(test)]
mod tests {
    /// `secs`' quick path gives what rounding and converting the nanoseconds give, bit for
    /// bit: random magnitudes, halves, and both sides of 2^52 ns.
    #[test]
    fn secs_rounds_as_round_and_converts() {
        let slow = |t: f64| {
            if t.is_finite() && t > 0.0 {
                super::to_u64(super::round_pos(t * 1e9))
            } else {
                0
            }
        };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut ts: Vec<f64> = (0..200_000)
            .map(|_| 10f64.powf(rng.random_range(-12.0..12.0)))
            .collect();
        ts.extend((0..1000).map(|k| (k as f64 + 0.5) / 1e9));
        let edge = 4_503_599_627_370_496.0 / 1e9;
        ts.extend([
            edge,
            edge * (1.0 - 1e-15),
            edge * (1.0 + 1e-15),
            0.0,
            -1.0,
            f64::NAN,
        ]);
        ts.extend([f64::INFINITY, 1e300, 5e-10, 1.5e-9, 2.5e-9]);
        for t in ts {
            assert_eq!(super::secs(t), slow(t), "{t:e}");
        }
    }

    use super::*;
    use rand::{RngExt, SeedableRng};

    fn spec() -> Spec {
        crate::load_str("t.orr", "").spec.unwrap()
    }

    #[test]
    fn compute_uses_peak_and_efficiency() {
        let s = spec();
        // 989 TFLOPS bf16 × 0.75 on one H100: 1 PFLOP takes 1e15 / 7.4175e14 s.
        let c = Compute {
            flop: crate::units::Flop(1e15),
            dtype: "bf16".into(),
            memory: None,
            kernels: 0,
        };
        let t = compute_secs(&s, "H100_SXM", &c, 1.0, 1.0);
        assert!((t - 1e15 / (989e12 * 0.75)).abs() < 1e-12);
        // MI250X lists no fp8: fp8 work runs at its bf16 rate.
        assert_eq!(peak(&s, "MI250X", "fp8"), peak(&s, "MI250X", "bf16"));
    }

    #[test]
    fn ring_allreduce_matches_the_closed_form_on_one_node() {
        let s = spec();
        let nt = &s.node_types["dgx_h100"];
        let g = Group {
            nodes: vec![(nt, 8)],
            factors: Vec::new(),
        };
        let n = 1e9;
        // NCCL's NVLink4 figure, 20.6 GB/s × 18 links (catalog `collective`).
        let beta = 370.8e9;
        let expect = 2.0 * 7.0 * ALPHA_NVLINK + 2.0 * 7.0 / 8.0 * n / beta;
        assert!((collective_secs(&s, "allreduce", n, false, &g) - expect).abs() < 1e-12);
    }

    #[test]
    fn hierarchical_beats_flat_across_nodes() {
        let s = spec();
        let nt = &s.node_types["dgx_h100"];
        let g = Group {
            nodes: vec![(nt, 8), (nt, 8), (nt, 8), (nt, 8)],
            factors: Vec::new(),
        };
        let flat = collective_secs(&s, "allreduce", 1e9, false, &g);
        let hier = collective_secs(&s, "allreduce", 1e9, true, &g);
        assert!(hier < flat, "{hier} vs {flat}");
    }

    #[test]
    fn round_pos_is_round_bit_for_bit() {
        let edges = [
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            0.499_999_999_999_999_94,
            4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9_007_199_254_740_993.0,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -2.5,
            f64::MIN_POSITIVE,
        ];
        for v in edges {
            assert_eq!(round_pos(v).to_bits(), v.round().to_bits(), "{v}");
            assert_eq!(to_u64(v), v as u64, "{v}");
        }
        for v in [
            9_223_372_036_854_775_807.0,
            9_223_372_036_854_775_808.0,
            1.8e19,
            2e19,
        ] {
            assert_eq!(to_u64(v), v as u64, "{v}");
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..200_000 {
            let e: i32 = rng.random_range(-30..60);
            let v = rng.random::<f64>() * 2f64.powi(e);
            assert_eq!(round_pos(v).to_bits(), v.round().to_bits(), "{v}");
            let h = (v * 2.0).floor() / 2.0; // halves
            assert_eq!(round_pos(h).to_bits(), h.round().to_bits(), "{h}");
            assert_eq!(to_u64(v), v as u64, "{v}");
        }
    }
}
