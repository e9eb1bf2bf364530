//! NCCL's tuning model: what each (algorithm, protocol) costs by NCCL's own estimate, and the
//! pair NCCL picks for a collective of a given size when the scenario does not fix one.
//!
//! Source: NCCL 2.30.7 (github.com/NVIDIA/nccl), `src/graph/tuning.cc`:
//! `ncclTunerConstantsDefaults` (base and per-hop latencies, LL and per-channel bandwidth
//! caps), `ncclTopoTuneModel` (bus bandwidth per algorithm and protocol, latency per op) and
//! `ncclTopoGetAlgoTime` (time = latency + bytes / bandwidth, the tree correction factors, the
//! ring plateau). NCCL picks the enabled pair of least estimated time (`src/enqueue.cc`
//! `topoGetAlgoInfo`).
//!
//! How Orrery uses it. The flow model simulates a collective's bytes on the link graph; this
//! model supplies what the flows cannot know: the protocol's per-hop latency (the step α),
//! its base latency (once per call), and its bandwidth relative to Simple, which stretches the
//! flows' bytes by busBw(Simple) / busBw(protocol) — LL moves 8-byte lines of 4 data bytes
//! (≤ half the bandwidth, and at most NCCL's `llMaxBw`), LL128 128-byte lines of 120. Only
//! NVIDIA devices have it (AMD's RCCL forks the model with its own constants; other vendors'
//! libraries are not NCCL): elsewhere collectives run Simple, ring, as before.
//!
//! Assumptions, each stated where it is used: NCCL's channel count is [`CHANNELS`]; the CPU is
//! Intel-like (net overhead 1 µs; AMD hosts lower `llMaxBw` across nodes); CollNet (SHARP) and
//! PAT are off (NCCL's defaults: `collnetEnable` 0; PAT only with one GPU per node), so the
//! candidates are ring, tree and, on one NVSwitch node with NVLS, NVLS.

use super::{Algorithm, Op};

/// NCCL's three protocols (`src/include/device.h`, `NCCL_PROTO_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// 8-byte lines: 4 data bytes and a 4-byte flag; lowest latency, half the bandwidth.
    LL,
    /// 128-byte lines: 120 data bytes and an 8-byte flag.
    LL128,
    /// Plain copies with a memory fence per step: full bandwidth, highest latency.
    Simple,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::LL, Protocol::LL128, Protocol::Simple];

    pub fn name(self) -> &'static str {
        match self {
            Protocol::LL => "ll",
            Protocol::LL128 => "ll128",
            Protocol::Simple => "simple",
        }
    }

    pub fn parse(s: &str) -> Option<Protocol> {
        match s.to_ascii_lowercase().as_str() {
            "ll" => Some(Protocol::LL),
            "ll128" => Some(Protocol::LL128),
            "simple" => Some(Protocol::Simple),
            _ => None,
        }
    }

    fn idx(self) -> usize {
        self as usize
    }
}

/// The link kind a hop's latency is charged at (`NCCL_HW_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hw {
    NvLink,
    Pci,
    Net,
}

/// GPU generation, NCCL's compute-capability index (`NCCL_*_COMPCAP_IDX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Arch {
    Volta,
    /// SM 8.x: A100, A10, L4, L40 (NCCL groups every SM 8.x with Ampere).
    Ampere,
    Hopper,
    Blackwell,
}

impl Arch {
    /// The generation of an NVIDIA part from its catalog name or model string; `None` for
    /// other vendors and unknown parts (no NCCL tuning model for them).
    pub fn of(vendor: &str, name: &str, model: Option<&str>) -> Option<Arch> {
        if !vendor.eq_ignore_ascii_case("nvidia") {
            return None;
        }
        let s = format!("{name} {}", model.unwrap_or("")).to_ascii_uppercase();
        let has = |k: &[&str]| k.iter().any(|k| s.contains(k));
        if has(&["B200", "B300", "GB200", "GB300", "B100"]) {
            Some(Arch::Blackwell)
        } else if has(&["H100", "H200", "H800", "GH200", "H20"]) {
            Some(Arch::Hopper)
        } else if has(&[
            "A100", "A800", "A10", "A30", "A40", "L4", "L40", "RTX 40", "RTX A",
        ]) {
            Some(Arch::Ampere)
        } else if has(&["V100"]) {
            Some(Arch::Volta)
        } else {
            None
        }
    }

    fn idx(self) -> usize {
        self as usize
    }
}

/// The algorithms of NCCL's model this crate has (rows of its tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    Tree,
    Ring,
    Nvls,
    NvlsTree,
}

/// `baseLatencies` in µs, [Tree, Ring, NVLS, NVLS Tree][LL, LL128, Simple].
const BASE_LAT: [[f64; 3]; 4] = [
    [6.8, 14.0, 8.4],
    [6.6, 14.0, 8.4],
    [0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0],
];
/// `hwLatencies` in µs, [NVLINK, PCI, NET][Tree, Ring, NVLS, NVLS Tree][LL, LL128, Simple].
const HW_LAT: [[[f64; 3]; 4]; 3] = [
    [
        [0.6, 1.25, 4.0],
        [0.6, 1.9, 3.4],
        [0.0, 0.0, 25.0],
        [0.0, 0.0, 25.0],
    ],
    [
        [1.0, 1.9, 4.0],
        [1.0, 2.5, 5.7],
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0],
    ],
    [
        [5.0, 8.5, 14.0],
        [2.7, 4.0, 14.0],
        [0.0, 0.0, 18.0],
        [0.0, 0.0, 20.9],
    ],
];
/// `perChMaxNVLSTreeBws` in GB/s per channel, [Volta, Ampere, Hopper, Blackwell][N1, N2, N4+].
const NVLS_TREE_BW: [[f64; 3]; 4] = [
    [26.5, 18.5, 10.0],
    [24.0, 23.6, 17.8],
    [0.0, 57.7, 45.5],
    [0.0, 96.0, 80.0],
];
/// `llMaxBws` in GB/s: [Volta-N1 | Intel, Ampere-N1 | AMD, Hopper-N1, Blackwell-N1][N1, N2, N4+]
/// (one node: the GPU's row; several: the CPU vendor's row, Intel = 0).
const LL_MAX_BW: [[f64; 3]; 4] = [
    [39.0, 39.0, 20.4],
    [87.7, 22.5, 19.0],
    [141.0, 45.0, 35.0],
    [282.0, 90.0, 70.0],
];
/// `perChMaxRingLL128Bws`, `perChMaxTreeLL128Bws`, `perChMaxTreeBws` in GB/s per channel,
/// [Volta, Ampere, Hopper, Blackwell][N1, N2, N4+].
const RING_LL128_BW: [[f64; 3]; 4] = [
    [20.0, 20.0, 20.0],
    [20.0, 20.0, 20.0],
    [36.7, 36.7, 36.7],
    [40.0, 40.0, 40.0],
];
const TREE_LL128_BW: [[f64; 3]; 4] = [
    [20.0, 20.0, 20.0],
    [20.0, 20.0, 20.0],
    [36.7, 36.7, 29.0],
    [55.6, 31.67, 20.0],
];
const TREE_BW: [[f64; 3]; 4] = [
    [26.5, 18.5, 10.0],
    [24.0, 23.6, 17.8],
    [38.7, 41.4, 36.0],
    [70.0, 42.8, 24.0],
];
/// `nvlsEfficiency` by generation (0: no NVLS before Hopper).
const NVLS_EFFICIENCY: [f64; 4] = [0.0, 0.0, 0.85, 0.74];
/// `treeCorrectionFactor`, [LL, LL128, Simple][log2(bytes / 64)] for 64 B … 256 MiB.
const TREE_CORRECTION: [[f64; 23]; 3] = [
    [
        1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.0, 1.0, 1.0,
    ],
    [
        1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9,
        0.9, 0.9, 0.9, 1.0, 1.0,
    ],
    [
        0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8,
        0.7, 0.7, 0.8, 0.9, 0.9,
    ],
];
/// Net post overhead per inter-node ring step on an Intel host, µs (`getNetOverhead`; 2 on
/// AMD), tripled for Simple.
pub const NET_OVERHEAD: f64 = 1.0;
/// NCCL's channel count, for the per-channel caps and NVLS's (nChannels − 1) / nChannels.
/// NCCL finds 16 NVLS channels on an 8-GPU Hopper NVSwitch node and at least as many ring
/// channels; at 16 the per-channel caps (36.7 GB/s LL128 ring × 16 = 587 GB/s) bind on no
/// catalog node, so the figure matters little. An assumption, not a measurement.
pub const CHANNELS: f64 = 16.0;

/// The data one pipeline step of protocol `p` forwards per channel, the chunk the pipelined
/// algorithms (tree, broadcast) move: Simple waits for a whole buffer step before a rank
/// forwards it, 4 MiB / NCCL_STEPS 8 = 512 KiB (`src/init.cc` DEFAULT_BUFFSIZE); LL and
/// LL128 carry a flag in every line, so a rank forwards each line as it lands and the
/// chain's granularity is what its threads move in one pass: LL 512 threads × 8 data bytes
/// of each 16-byte line, 4 KiB; LL128 640 threads × 16 bytes, 15 of each 16 words data,
/// 9,600 bytes (`NCCL_LL_MAX_NTHREADS`, `NCCL_LL128_MAX_NTHREADS`; `src/device/prims_ll.h`,
/// `prims_ll128.h`). NCCL's own model has no pipeline fill at all (time = latency + bytes /
/// bandwidth); the line-sized chunks keep Orrery's fill as small.
pub fn step_bytes(p: Protocol) -> f64 {
    match p {
        Protocol::Simple => 512.0 * 1024.0,
        Protocol::LL => 512.0 * 8.0,
        Protocol::LL128 => 640.0 * 16.0 * 15.0 / 16.0,
    }
}

/// NVLS channels on one node (`src/transport/nvls.cc`, NCCL 2.30: `NVLS_NCHANNELS_SM90` 16,
/// `NVLS_NCHANNELS_SM100_NVL` 24 on one NVLink domain, `NVLS_NCHANNELS_SM100` 32 across nodes).
pub fn nvls_channels(arch: Arch, nodes: usize) -> f64 {
    match arch {
        Arch::Blackwell if nodes > 1 => 32.0,
        Arch::Blackwell => 24.0,
        _ => 16.0,
    }
}

/// NCCL's default NVLS chunk, `NCCL_NVLS_CHUNKSIZE` (`src/transport/nvls.cc`): 128 KiB.
pub const NVLS_MAX_CHUNK: f64 = 128.0 * 1024.0;

/// The chunk NCCL's NVLS allreduce moves per channel and head for a call of `bytes`
/// (`src/enqueue.cc` `calcCollChunking`, NVLS branch): 128 KiB, cut to 64 KiB below
/// 64 × concurrent ops × 128 KiB, to 32 KiB below 8 × ops × 64 KiB, to 16 KiB below 2 × ops ×
/// 32 KiB, where the concurrent ops are channels × heads (one head per rank on one node).
/// With 16 channels and 8 ranks: 128 KiB from 1 GiB, 64 KiB from 64 MiB, 32 KiB from 8 MiB.
pub fn nvls_chunk(arch: Arch, ranks: usize, nodes: usize, bytes: f64) -> f64 {
    let ops = nvls_channels(arch, nodes) * ranks.max(1) as f64;
    let mut c = NVLS_MAX_CHUNK;
    if bytes < 64.0 * ops * c && c > 65536.0 {
        c = 65536.0;
    }
    if bytes < 8.0 * ops * c && c > 32768.0 {
        c = 32768.0;
    }
    if bytes < 2.0 * ops * c && c > 16384.0 {
        c = 16384.0;
    }
    c
}

/// What each NVLS chunk costs beside its bytes, as bytes at the link's rate: a chunk of c
/// moves at c / (c + [`NVLS_CHUNK_OVERHEAD`]) of the bandwidth. NCCL's source has no such
/// figure (its tuning model charges NVLS one latency whatever the size); it is FITTED, once,
/// to NVIDIA's DGX H100 all_reduce_perf sample (NVIDIA/dgxc-benchmarking `nccl/README.md`,
/// commit 841f546, sizes 2 MiB to 16 GiB): 4.7 KiB. Held out (`orrery accuracy`): Azure ND
/// H100 v5 and ND H200 v5, AWS p5.
pub const NVLS_CHUNK_OVERHEAD: f64 = 4.7 * 1024.0;

/// What NCCL's model sees of a communicator: ranks, nodes, the GPUs' generation, the link
/// kind inside a node, and bus bandwidth inside a node and per node across nodes (GB/s: the
/// graph's collective rates, NCCL's nChannels × bwIntra and × bwInter).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comm {
    pub ranks: usize,
    pub nodes: usize,
    pub arch: Arch,
    pub intra: Hw,
    pub bw_intra: f64,
    pub bw_inter: f64,
    /// The node's NVSwitch reduces (NVLS): one node, NVSwitch, Hopper or later.
    pub nvls: bool,
    /// Every node's switch reduces (NVLS trees): several nodes, NVSwitch, Hopper or later.
    pub nvls_tree: bool,
}

/// NCCL's estimate for one (algorithm, protocol): latency in µs and bus bandwidth in GB/s as
/// `comm->latencies` / `comm->bandwidths` hold them (the bandwidth already algorithm
/// bandwidth, as NCCL converts it), `None` where NCCL disables the pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub latency_us: f64,
    pub bw_gbps: f64,
    /// Bus bandwidth before NCCL's conversion to algorithm bandwidth.
    pub bus_gbps: f64,
}

fn row(a: Algorithm) -> Option<Row> {
    match a {
        Algorithm::Ring => Some(Row::Ring),
        Algorithm::Tree => Some(Row::Tree),
        Algorithm::InSwitch => Some(Row::Nvls),
        Algorithm::NvlsTree => Some(Row::NvlsTree),
        _ => None,
    }
}

fn log2i(n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        (usize::BITS - 1 - n.leading_zeros()) as f64
    }
}

/// NCCL's `ncclTopoTuneModel` for one op, algorithm and protocol.
pub fn estimate(c: &Comm, op: Op, a: Algorithm, p: Protocol) -> Option<Estimate> {
    let r = row(a)?;
    let allreduce = matches!(op, Op::AllReduce);
    let gather = matches!(op, Op::AllGather | Op::ReduceScatter);
    let bcast = matches!(op, Op::Broadcast { .. });
    if !matches!(
        op,
        Op::AllReduce | Op::AllGather | Op::ReduceScatter | Op::Broadcast { .. }
    ) {
        return None;
    }
    if (bcast && r != Row::Ring) || (gather && r == Row::Tree) {
        return None;
    }
    // NVLS: Simple only, one node here (multi-node NVLS needs CollNet), allreduce in this
    // crate's decomposition.
    if r == Row::Nvls && (p != Protocol::Simple || !c.nvls || c.nodes != 1 || !allreduce) {
        return None;
    }
    // NVLS trees: Simple, allreduce, several NVSwitch nodes ("Disable NVLS Tree on a single
    // node").
    if r == Row::NvlsTree && (p != Protocol::Simple || !c.nvls_tree || c.nodes < 2 || !allreduce) {
        return None;
    }
    // LL128 is on by default only where the intra-node path is NVLink (`typeIntra <=
    // PATH_NVB` in tuning.cc's protocol enable); the NIC path is assumed PXB/PXN (a NIC
    // under the GPU's PCIe switch, as on HGX/DGX boards), where NCCL keeps it on.
    if p == Protocol::LL128 && c.intra == Hw::Pci {
        return None;
    }
    let n = c.ranks.max(1);
    if n < 2 {
        return None;
    }
    let nodes = c.nodes.max(1);
    let ppn = n as f64 / nodes as f64;
    let i2 = if nodes <= 2 { nodes - 1 } else { 2 };
    let (ai, pi) = (c.arch.idx(), p.idx());
    // LL: one node, the GPU's row; several, the CPU's (Intel assumed).
    let ll_max = LL_MAX_BW[if nodes == 1 { ai } else { 0 }][i2];
    let nsteps = if allreduce {
        2 * (n - 1)
    } else if gather {
        n - 1
    } else {
        n
    } as f64;
    // NCCL's graph search (`src/graph/search.cc`, `ncclTopoCompute`) keeps a ring's bwIntra
    // equal to its bwInter (one speed for the whole ring, so the NICs bound a multi-node
    // ring), and raises a tree's bwIntra up to twice its bwInter; tuning then takes bwIntra
    // up to 2 nodes and bwInter beyond.
    let bus_of = |intra: f64| {
        if nodes == 1 {
            intra
        } else if nodes <= 2 {
            intra.min(if r == Row::Tree {
                2.0 * c.bw_inter
            } else {
                c.bw_inter
            })
        } else {
            c.bw_inter.min(intra)
        }
    };
    let mut bus = bus_of(c.bw_intra);
    if r == Row::Nvls {
        if NVLS_EFFICIENCY[ai] == 0.0 {
            return None;
        }
        // One node: no NIC in the path (multi-node NVLS is not modelled, see above).
        bus = c.bw_intra * NVLS_EFFICIENCY[ai] * (CHANNELS - 1.0) / CHANNELS * 2.0;
    }
    if r == Row::NvlsTree {
        if NVLS_EFFICIENCY[ai] == 0.0 {
            return None;
        }
        // The switch's reduction (pipelining two operations), the NICs (twice bwInter on two
        // nodes: each sends and receives half the tree's traffic), and NCCL's per-channel cap.
        let intra = c.bw_intra * NVLS_EFFICIENCY[ai] * (CHANNELS - 1.0) / CHANNELS * 2.0;
        let inter = c.bw_inter * if nodes <= 2 { 2.0 } else { 1.0 };
        bus = intra.min(inter).min(CHANNELS * NVLS_TREE_BW[ai][i2]);
    }
    match (r, p) {
        (Row::Ring, Protocol::LL) => bus = ll_max.min(bus * 0.5),
        (Row::Ring, Protocol::LL128) => bus = (bus * 0.92).min(CHANNELS * RING_LL128_BW[ai][i2]),
        _ => {}
    }
    if r == Row::Tree && allreduce {
        bus = (bus * 0.92).min(CHANNELS * TREE_BW[ai][i2]);
    }
    match (r, p) {
        (Row::Tree, Protocol::LL) => bus = (bus / 3.8).min(ll_max),
        (Row::Tree, Protocol::LL128) => {
            let f = if nodes == 1 { 7.0 / 9.0 } else { 120.0 / 128.0 };
            bus = (bus * f).min(CHANNELS * TREE_LL128_BW[ai][i2]);
        }
        _ => {}
    }
    let ratio = match r {
        Row::Ring | Row::Nvls | Row::NvlsTree => n as f64 / nsteps,
        Row::Tree => 0.5,
    };
    let algbw = bus * ratio;
    let ri = r as usize;
    let intra_hw = match c.intra {
        Hw::NvLink => 0,
        _ => 1,
    };
    let hw = if nodes == 1 { intra_hw } else { 2 };
    let mut lat = BASE_LAT[ri][pi];
    let mut intra_lat = HW_LAT[intra_hw][ri][pi];
    // With one rank per node latencies are fully exposed: NCCL uses the tree's. (NCCL adds
    // `graphs[a]->latencyInter`, 0 unless the net plugin reports one.)
    let inter_lat = if ppn == 1.0 {
        HW_LAT[2][Row::Tree as usize][pi]
    } else {
        HW_LAT[2][ri][pi]
    };
    match r {
        Row::Ring => {
            let hop = HW_LAT[hw][ri][pi];
            if bcast {
                lat += hop;
            } else {
                let overhead = if nodes > 1 {
                    NET_OVERHEAD * if p == Protocol::Simple { 3.0 } else { 1.0 }
                } else {
                    0.0
                };
                intra_lat = intra_lat.max(overhead);
                let inter_steps = if nodes == 1 {
                    0.0
                } else if allreduce {
                    2.0 * (nodes as f64 - 1.0)
                } else {
                    nodes as f64 - 1.0
                };
                lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
            }
        }
        Row::Tree => {
            lat += 2.0 * ((ppn - 1.0) * intra_lat + log2i(nodes) * inter_lat);
        }
        Row::Nvls => {
            lat = intra_lat;
            if nodes > 1 {
                lat += inter_lat;
            }
        }
        Row::NvlsTree => {
            lat += intra_lat + 2.0 * log2i(nodes) * inter_lat;
        }
    }
    Some(Estimate {
        latency_us: lat,
        bw_gbps: algbw,
        bus_gbps: bus,
    })
}

/// NCCL's estimated seconds for `bytes` with (a, p) (`ncclTopoGetAlgoTime`, one op in flight).
pub fn time(c: &Comm, op: Op, a: Algorithm, p: Protocol, bytes: f64) -> Option<f64> {
    let e = estimate(c, op, a, p)?;
    let mut bw = e.bw_gbps;
    if bw <= 0.0 {
        return None;
    }
    let mut lat = e.latency_us;
    let log = if bytes >= 64.0 {
        log2i((bytes as usize) >> 6) as i64
    } else {
        -1
    };
    if a == Algorithm::Tree && matches!(op, Op::AllReduce) && (0..23).contains(&log) {
        bw *= TREE_CORRECTION[p.idx()][log as usize];
    }
    if a == Algorithm::Ring
        && p == Protocol::Simple
        && c.nodes > 1
        && matches!(op, Op::AllReduce)
        && bytes / (CHANNELS * c.ranks as f64) >= 64.0
    {
        // "Plateau effect of ring".
        lat *= if c.arch < Arch::Ampere { 1.9 } else { 1.4 };
    }
    Some((lat + bytes / (1000.0 * bw)) * 1e-6)
}

/// The (algorithm, protocol) NCCL picks for `bytes`, either or both fixed by the caller:
/// least estimated time among the pairs it enables (ring and tree for allreduce, NVLS on one
/// NVSwitch node; ring otherwise). Ties go to the earlier pair in NCCL's order (tree before
/// ring before NVLS, LL before LL128 before Simple). `None`: no enabled pair.
pub fn choose(
    c: &Comm,
    op: Op,
    bytes: f64,
    algorithm: Option<Algorithm>,
    protocol: Option<Protocol>,
) -> Option<(Algorithm, Protocol)> {
    let mut best: Option<(f64, Algorithm, Protocol)> = None;
    for a in [
        Algorithm::Tree,
        Algorithm::Ring,
        Algorithm::InSwitch,
        Algorithm::NvlsTree,
    ] {
        if algorithm.is_some_and(|x| x != a) {
            continue;
        }
        for p in Protocol::ALL {
            if protocol.is_some_and(|x| x != p) {
                continue;
            }
            let Some(t) = time(c, op, a, p, bytes) else {
                continue;
            };
            if best.is_none_or(|(b, _, _)| t < b) {
                best = Some((t, a, p));
            }
        }
    }
    best.map(|(_, a, p)| (a, p))
}

/// How much slower than Simple `p` moves bytes with `a` by NCCL's model: busBw(Simple) /
/// busBw(p), at least 1 (the flows' bytes are stretched by it).
pub fn protocol_stretch(c: &Comm, op: Op, a: Algorithm, p: Protocol) -> f64 {
    if p == Protocol::Simple {
        return 1.0;
    }
    match (estimate(c, op, a, Protocol::Simple), estimate(c, op, a, p)) {
        (Some(s), Some(x)) if x.bus_gbps > 0.0 => (s.bus_gbps / x.bus_gbps).max(1.0),
        _ => 1.0,
    }
}

/// Per-hop latency in seconds of `p` on a hop of kind `hw` for algorithm family `a` (ring
/// steps; tree and pipelined chains use the tree's column).
pub fn hop_latency(hw: Hw, a: Algorithm, p: Protocol) -> f64 {
    let r = match a {
        Algorithm::Tree => Row::Tree,
        _ => Row::Ring,
    } as usize;
    let h = match hw {
        Hw::NvLink => 0,
        Hw::Pci => 1,
        Hw::Net => 2,
    };
    HW_LAT[h][r][p.idx()] * 1e-6
}

/// NCCL's latency for an NVLS tree over `nodes` nodes, seconds: its NVLink term (25 µs) and
/// two network terms per tree level (20.9 µs each), `latencies[NVLS_TREE]` in tuning.cc. The
/// in-switch decomposition charges it as its base.
pub fn nvls_tree_base(nodes: usize) -> f64 {
    let r = Row::NvlsTree as usize;
    (HW_LAT[0][r][2] + 2.0 * log2i(nodes) * HW_LAT[2][r][2]) * 1e-6
}

/// Base latency in seconds of one call with (a, p); NVLS's 25 µs is charged by the in-switch
/// decomposition itself ([`super::NVLS_BASE`]).
pub fn base_latency(a: Algorithm, p: Protocol) -> f64 {
    match a {
        Algorithm::Tree => BASE_LAT[0][p.idx()] * 1e-6,
        Algorithm::InSwitch | Algorithm::NvlsTree | Algorithm::Pairwise => 0.0,
        _ => BASE_LAT[1][p.idx()] * 1e-6,
    }
}

#[cfg(test)]
#[path = "tuning_tests.rs"]
mod tests;
