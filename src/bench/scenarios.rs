//! The scenarios `orrery bench` simulates, generated as text: the N-node, M-task cluster
//! (with or without remote inputs), the contention case, the fat-tree of the flow and
//! allreduce benchmarks and the dense case's leaf-spine.

use std::fmt::Write as _;

/// A generated scenario: `nodes` CPU nodes (64 threads each, in racks of 32) running `tasks`
/// one-CPU tasks in four groups of different lengths, the last two after the first two.
pub fn scenario(nodes: u64, tasks: u64) -> String {
    scenario_with(nodes, tasks, false)
}

/// [`scenario`], and with `remote_inputs` the first two groups each write a 64 MiB output, so
/// every task of the last two reads its producers' outputs (one of `a` for `c`, one of `a`
/// and one of `b` for `d`) from the nodes that ran them: input fetches on the run's network.
pub fn scenario_with(nodes: u64, tasks: u64, remote_inputs: bool) -> String {
    let racks = nodes.div_ceil(32);
    let last = nodes - (racks - 1) * 32;
    let quarter = (tasks / 4).max(1);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "node bench_node {{\n  cpu sockets 2, cores 32, numa 2, threads 64\n  memory 256 GiB\n  nic eth_100g\n}}\n"
    );
    let _ = writeln!(s, "cluster bench {{");
    if racks > 1 {
        let _ = writeln!(
            s,
            "  rack r[0..{}] {{\n    node bench_node x 32\n  }}",
            racks - 2
        );
    }
    let _ = writeln!(
        s,
        "  rack r{} {{\n    node bench_node x {last}\n  }}\n  fabric leaf_spine oversubscription 2:1\n}}\n",
        racks - 1
    );
    let _ = writeln!(s, "workload etl {{");
    for (name, dur, after) in [
        ("a", "30 s", ""),
        ("b", "45 s", ""),
        ("c", "20 s", " after a"),
        ("d", "60 s", " after [a, b]"),
    ] {
        let output = if remote_inputs && after.is_empty() {
            "\n    output 64 MiB"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "  tasks {name} x {quarter}{after} {{\n    resources {{ CPU: 1 }}\n    duration {dur}{output}\n  }}"
        );
    }
    let _ = writeln!(s, "}}");
    s
}

/// Sizes of the contention benchmark ([`contention_scenario`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contention {
    /// Racks of 32 DGX H100 nodes.
    pub racks: u64,
    /// Training jobs, each on its own placement group.
    pub jobs: u64,
    /// Bundles (nodes of 8 GPUs) per job.
    pub bundles: u64,
    /// Task stages, each `after` the one before (consumers fetch their producer's output).
    pub stages: u64,
    pub tasks_per_stage: u64,
    /// Simulated seconds (the experiment's `horizon`).
    pub horizon_s: u64,
}

impl Contention {
    /// The benchmark's sizes: 8,192 GPUs (1,024 DGX H100 in 32 racks), 64 jobs of 128 GPUs,
    /// 12 stages of 4,096 tasks, one simulated hour.
    pub const FULL: Contention = Contention {
        racks: 32,
        jobs: 64,
        bundles: 16,
        stages: 12,
        tasks_per_stage: 4096,
        horizon_s: 3600,
    };
}

/// The contention benchmark's scenario: `racks` racks of 32 DGX H100 on a 2:1 oversubscribed
/// leaf-spine, `jobs` training jobs of `bundles` × 8 GPUs each sharing it — even jobs a
/// STRICT_SPREAD group with a flat ring allreduce, odd ones a PACK group with a hierarchical
/// one — and a pipeline of CPU task stages whose consumers read their producers' 2 GiB
/// outputs from other nodes, all on the run's one network, for `horizon_s` simulated seconds.
///
/// Sizes per job: a 14B-parameter dense model, data parallel: bf16 gradients 14e9 × 2 B =
/// 28 GB allreduced every step; 600 TFLOP per device per step (about 0.8 s of H100 bf16 at
/// the datasheet efficiency), so a step is about a second with its allreduce under contention;
/// a 224 GB checkpoint (14e9 × 16 B, weights and Adam state) every 10 minutes.
pub fn contention_scenario(c: &Contention) -> String {
    let racks = c.racks.max(1);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "cluster contention {{\n  rack r[0..{}] {{\n    node dgx_h100 x 32\n  }}\n  fabric leaf_spine oversubscription 2:1\n  # Checkpoints go behind the spines. Assumption: 1 GB/s per GPU of the full 8,192-GPU case (DDN's stated minimum).\n  storage pfs {{\n    bandwidth 8192 GB/s\n    attach fabric\n  }}\n}}\n",
        racks - 1
    );
    let _ = writeln!(s, "workload train {{");
    for j in 0..c.jobs {
        let (strategy, algo) = if j % 2 == 0 {
            ("STRICT_SPREAD", "algo ring")
        } else {
            ("PACK", "algo ring hierarchical")
        };
        let _ = writeln!(
            s,
            "  placement_group g{j} strategy {strategy} {{\n    bundle {{ GPU: 8, CPU: 96 }} x {}\n  }}",
            c.bundles.max(1)
        );
        let _ = writeln!(
            s,
            "  training j{j} on g{j} steps 1000000 {{\n    compute 600 TFLOP per device bf16\n    allreduce 28 GB {algo}\n    checkpoint every 10 min size 224 GB\n  }}"
        );
    }
    let _ = writeln!(s, "}}\n");
    if c.stages > 0 && c.tasks_per_stage > 0 {
        let _ = writeln!(s, "workload etl {{");
        for k in 0..c.stages {
            let after = if k > 0 {
                format!(" after s{}", k - 1)
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "  tasks s{k} x {}{after} {{\n    resources {{ CPU: 4 }}\n    duration 5 min\n    output 2 GiB\n  }}",
                c.tasks_per_stage
            );
        }
        let _ = writeln!(s, "}}\n");
    }
    let _ = writeln!(
        s,
        "experiment hour {{\n  horizon {} s\n}}",
        c.horizon_s.max(1)
    );
    s
}

/// A non-blocking fat-tree of `nodes` DGX H100 nodes in racks of 32, as scenario text (the
/// benchmarks' cluster).
pub fn fat_tree_text(nodes: u64) -> String {
    let racks = nodes.max(1).div_ceil(32);
    let last = nodes.max(1) - (racks - 1) * 32;
    let mut text = String::from("cluster fabric {\n");
    if racks > 1 {
        text += &format!(
            "  rack r[0..{}] {{\n    node dgx_h100 x 32\n  }}\n",
            racks - 2
        );
    }
    text += &format!(
        "  rack r{} {{\n    node dgx_h100 x {last}\n  }}\n  fabric fat_tree\n}}\n",
        racks - 1
    );
    text
}

/// The dense flow benchmark's cluster: 32 racks of 32 one-NIC (100 GbE) hosts on a leaf-spine
/// fabric oversubscribed 4:1, so the spine saturates long before the host links.
pub fn leaf_spine_text() -> String {
    leaf_spine_text_at(4)
}

/// The same cluster with the leaf-spine oversubscribed `oversubscription`:1.
pub fn leaf_spine_text_at(oversubscription: u32) -> String {
    let mut s = String::from(
        "node host {\n  cpu sockets 1, cores 32, numa 1, threads 64\n  memory 256 GiB\n  nic eth_100g\n}\n\n",
    );
    s += &format!(
        "cluster dense {{\n  rack r[0..31] {{\n    node host x 32\n  }}\n  fabric leaf_spine oversubscription {oversubscription}:1\n}}\n"
    );
    s
}
