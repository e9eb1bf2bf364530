//! The command line: every subcommand and flag (clap derive).

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "orrery",
    version,
    about = "Declarative cluster simulator with real-device calibration"
)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// Run a scenario (the built-in quickstart when no file is given).
    Run {
        #[command(flatten)]
        budget: BudgetArgs,
        file: Option<PathBuf>,
        /// Seed for every random stream of the run.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where results go (default outputs/<scenario name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Place every workload with this policy (ray_default, spread, topology_aware).
        #[arg(long, value_parser = ["ray_default", "spread", "topology_aware"])]
        policy: Option<String>,
        /// Apply only the `failures NAME` block of that name (default: every block).
        #[arg(long, value_name = "NAME")]
        failures: Option<String>,
        /// End of the simulated window, as in a scenario (`12 h`, `90 min`; default: the first
        /// experiment's `horizon`, else the end of the work).
        #[arg(long)]
        horizon: Option<String>,
        /// Also write trace.json: what every device did when, as a Perfetto / Chrome trace
        /// (pid = node, tid = device).
        #[arg(long)]
        trace: bool,
        /// Keep work that can never be placed on the cluster pending forever, as Ray does, with a
        /// warning (default: it is an error, exit 2).
        #[arg(long)]
        allow_infeasible: bool,
        /// Write only the data files and report.md, no plots.
        #[arg(long)]
        no_plots: bool,
        /// How the tables are written: `csv`, or `parquet` (the same columns, each with one
        /// type, and the schema version and run header in the file's metadata). run.json is
        /// written either way.
        #[arg(long, value_parser = ["csv", "parquet"], default_value = "csv")]
        format: String,
    },
    /// Run a failure drill over many seeds; several scenarios (recovery policies: checkpoint
    /// intervals, retry settings, spare nodes) run side by side.
    Drill {
        #[command(flatten)]
        budget: BudgetArgs,
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Seeds: `N` for 1..N, `N..M` for N to M inclusive (default: the first experiment's
        /// `seeds`, else 1..10).
        #[arg(long)]
        seeds: Option<String>,
        /// Worker threads, 1 to 4 per CPU (default: one per CPU). Results do not depend on it.
        #[arg(long)]
        threads: Option<usize>,
        /// Where results go (default outputs/<scenario name>-drill).
        #[arg(long)]
        out: Option<PathBuf>,
        /// End of the simulated window, as in a scenario (`12 h`, `90 min`; default: the first
        /// experiment's `horizon`).
        #[arg(long)]
        horizon: Option<String>,
        /// Run every variant once per placement policy, side by side
        /// (e.g. `--policies ray_default,topology_aware`).
        #[arg(long, value_delimiter = ',', value_parser = ["ray_default", "spread", "topology_aware"])]
        policies: Vec<String>,
        /// Keep work that can never be placed on the cluster pending forever, as Ray does, with a
        /// warning (default: it is an error, exit 2).
        #[arg(long)]
        allow_infeasible: bool,
        /// Write only the data files and report.md, no plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Run an experiment's sweeps: every combination of swept values × every seed, in
    /// parallel; writes runs.csv, summary.csv and summary.json (or a shard file with --shard).
    Sweep {
        #[command(flatten)]
        budget: BudgetArgs,
        file: PathBuf,
        /// Experiment to run (default: the first).
        #[arg(long)]
        experiment: Option<String>,
        /// Seeds: `N` for 1..N, `N..M` for N to M inclusive (default: the experiment's).
        #[arg(long)]
        seeds: Option<String>,
        /// Worker threads, 1 to 4 per CPU (default: one per CPU). Results do not depend on it.
        #[arg(long)]
        threads: Option<usize>,
        /// `i/n`: run only runs whose number mod n = i and write shard-i-of-n.json.
        #[arg(long)]
        shard: Option<String>,
        /// Keep work that can never be placed on the cluster pending forever, as Ray does, with a
        /// warning (default: it is an error, exit 2).
        #[arg(long)]
        allow_infeasible: bool,
        /// Where results go (default outputs/<scenario>-<experiment>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write only the data files and report.md, no plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Merge the shard files of one sweep (folders or files) into the unsharded outputs.
    Merge {
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        /// Write only the data files and report.md, no plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Compare scenarios (the same workload on different hardware): each kind of work in its
    /// own unit (step time, $/step, tasks/s, requests served/s, SLO attainment), cost and
    /// energy, over seeds.
    Compare {
        #[command(flatten)]
        budget: BudgetArgs,
        #[arg(required = true, num_args = 2..)]
        files: Vec<PathBuf>,
        /// Seeds: `N` for 1..N, `N..M` for N to M inclusive (default 1..5).
        #[arg(long)]
        seeds: Option<String>,
        /// Apply only each scenario's `failures NAME` block of that name (default: every block).
        #[arg(long, value_name = "NAME")]
        failures: Option<String>,
        /// End of every scenario's simulated window, as in a scenario (`12 h`, `90 min`;
        /// default: each scenario's first experiment `horizon`, else 1 h with services, else
        /// the end of the work); the table and files say which.
        #[arg(long)]
        horizon: Option<String>,
        /// Keep work that can never be placed on the cluster pending forever, as Ray does, with a
        /// warning (default: it is an error, exit 2).
        #[arg(long)]
        allow_infeasible: bool,
        /// Worker threads, 1 to 4 per CPU (default: one per CPU). Results do not depend on it.
        #[arg(long)]
        threads: Option<usize>,
        /// Where compare.csv and compare.json go (default outputs/compare-<A>-<B>...).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write only the data files and report.md, no plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Validate scenarios and print what each declares.
    Check {
        #[command(flatten)]
        budget: BudgetArgs,
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Keep work that can never be placed on the cluster pending forever, as Ray does, with a
        /// warning (default: it is an error, exit 2).
        #[arg(long)]
        allow_infeasible: bool,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print scenarios in canonical form.
    Fmt {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Exit 1 if a file is not in canonical form; print nothing else.
        #[arg(long, conflicts_with = "write")]
        check: bool,
        /// Rewrite the files in place.
        #[arg(long)]
        write: bool,
    },
    /// Explain an item's first placement in a run: the rules that decided, every node's verdict
    /// and score, and the outcome (the run's own decision). Work that can never be placed is
    /// explained, not refused.
    Explain {
        #[command(flatten)]
        budget: BudgetArgs,
        file: PathBuf,
        /// `workload.item`: a task group, actor, placement group or service.
        item: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Place every workload with this policy (ray_default, spread, topology_aware), as
        /// `run --policy` does.
        #[arg(long, value_parser = ["ray_default", "spread", "topology_aware"])]
        policy: Option<String>,
        /// Print the explanation as JSON (with its schema version).
        #[arg(long)]
        json: bool,
    },
    /// Measure the event core and a large simulation (events/s, peak memory).
    Bench {
        #[arg(long, default_value_t = 10_000)]
        nodes: u64,
        #[arg(long, default_value_t = 1_000_000)]
        tasks: u64,
        /// Concurrent flows on a 1,000-node fat-tree for the flow-level network benchmark
        /// (0 skips it; every completion updates the max-min rates it disturbs).
        #[arg(long, default_value_t = 10_000)]
        flows: usize,
        /// Flows arriving over 2 s on a 1,024-host oversubscribed leaf-spine for the dense flow
        /// benchmark (0 skips it; the spine saturates, so each event disturbs many flows).
        #[arg(long, default_value_t = 0)]
        dense_flows: usize,
        /// GPUs of the ring allreduce benchmark (1 GiB per rank on a DGX H100 fat-tree; 0 skips).
        #[arg(long, default_value_t = 8_192)]
        allreduce: usize,
        /// Instead of the --nodes x --tasks simulation, the contention case: 64 training jobs
        /// of 128 GPUs on 8,192 GPUs (1,024 DGX H100, leaf-spine 2:1) with cross-node task
        /// traffic, all on one network, for one simulated hour.
        #[arg(long)]
        contention: bool,
        /// In the --nodes x --tasks simulation, the first two task groups write outputs that
        /// the last two read from other nodes (input fetches on the run's network).
        #[arg(long)]
        remote_inputs: bool,
    },
    /// Price one collective at many sizes for ranks placed on a scenario's cluster, printed as
    /// nccl-tests prints its table (size, count, type, time, algbw, busbw).
    Collectives {
        file: PathBuf,
        /// allreduce, allgather, reducescatter, alltoall, broadcast or sendrecv.
        #[arg(long, default_value = "allreduce")]
        op: String,
        /// ring, tree, nvls, nvls_tree, hierarchical or pairwise (default: NCCL's choice for
        /// each size on NVIDIA devices, by its tuning model; elsewhere the fastest the flow
        /// model has).
        #[arg(long)]
        algo: Option<String>,
        /// NCCL protocol: ll, ll128 or simple (default: NCCL's choice for each size; simple
        /// where NCCL's model does not apply).
        #[arg(long)]
        proto: Option<String>,
        /// `N` (N one-device bundles, PACK) or `NODESxDEVICES` (STRICT_SPREAD), placed by the
        /// scenario's policy on the empty cluster (default: every device of the first node).
        #[arg(long)]
        ranks: Option<String>,
        /// `LO..HI` doubling (K, M, G: powers of 1024, as nccl-tests' -b/-e) or a list.
        #[arg(long, default_value = "1K..8G")]
        sizes: String,
        /// Print `size_bytes,count,time_us,algbw_GBps,busbw_GBps,algorithm,protocol` rows instead.
        #[arg(long)]
        csv: bool,
    },
    /// Run a flow file (`link ID BANDWIDTH LATENCY`, `flow ID BYTES START LINK...`) on
    /// Orrery's max-min flow solver: each flow's completion time in seconds (`ID SECONDS`,
    /// sorted by id), then the wall time (grammar/orrery.md §4).
    Flows { file: PathBuf },
    /// Compare transports (object store, NVLink P2P, NCCL, Gloo, NIXL, RDMA, GPUDirect RDMA,
    /// host-staged RDMA, TCP) on the same transfers over a scenario's cluster.
    Transports {
        #[command(flatten)]
        budget: BudgetArgs,
        file: PathBuf,
        /// Transfer sizes (default 4KiB,64KiB,1MiB,64MiB,1GiB).
        #[arg(long)]
        sizes: Option<String>,
        /// Device pairs `SRC:DST,...` by name, e.g. `r0.n0.d0:r1.n0.d0` (default: one pair on
        /// a node and one across nodes).
        #[arg(long)]
        pairs: Option<String>,
        /// Print the comparison as JSON.
        #[arg(long)]
        json: bool,
        /// Also simulate the scenario's workload once per transport (task inputs moved by it)
        /// and compare makespans and task run times with the object store.
        #[arg(long)]
        workload: bool,
        /// Seed of the workload runs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where transports.csv, transports.json, the plots and report.md go (default
        /// outputs/<scenario>-transports).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write only the data files and report.md, no plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Measure this machine (memcpy, hand-off latency, memory- and compute-bound kernels; with
    /// `--features cuda` the GPUs) and write a calibration profile with its plot; or, with
    /// `import`, fit one from benchmark tools' outputs.
    #[command(args_conflicts_with_subcommands = true)]
    Calibrate {
        #[command(subcommand)]
        import: Option<CalibrateSub>,
        /// `cpu` or `cuda:N` (CUDA needs a build with `--features cuda`).
        #[arg(long, default_value = "cpu", value_parser = parse_device)]
        device: orrery::calibrate::Device,
        /// Profile to write (default calibration/<device>_<host>.toml); the plot goes beside
        /// it as .svg.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Fewer sizes and repetitions: seconds instead of minutes.
        #[arg(long)]
        quick: bool,
        /// Seed of the bootstrap intervals (and of the check's chain order).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// After fitting, time a chain of copies of sizes never fitted against the profile's
        /// prediction and record the figure in the profile (CPU only).
        #[arg(long)]
        check: bool,
    },
    /// Compare a node type declared in a scenario with the hardware detected here; exit 1 on a
    /// mismatch.
    Validate {
        file: PathBuf,
        /// The node type (declared in the scenario or the built-in catalog).
        #[arg(long)]
        node: String,
        /// Read /proc, /sys and /dev under this folder (a copy of another machine's tree)
        /// instead of this machine's; no driver inventory.
        #[arg(long)]
        root: Option<PathBuf>,
        /// Append the result to the calibration profiles the node's accelerators name (a
        /// `[[validation]]` record: what maturity tiers are computed from).
        #[arg(long)]
        record: bool,
    },
    /// Print a node-type block for this machine, in the scenario language.
    Detect {
        /// The node type's name.
        #[arg(long, default_value = "detected")]
        name: String,
        /// Read /proc, /sys and /dev under this folder instead of this machine's.
        #[arg(long)]
        root: Option<PathBuf>,
    },
    /// Orrery's predictions against published measurements (nccl-tests tables, queueing
    /// closed forms): each row's source, published figure, prediction, signed error and
    /// tolerance; writes accuracy.csv, a log-log plot and report.md; exits 1 if any row is
    /// over its tolerance.
    Accuracy {
        /// A folder of `*.toml` tables to check instead of the built-in one (accuracy/).
        #[arg(long)]
        table: Option<PathBuf>,
        /// Where accuracy.csv, the plot and report.md go (default outputs/accuracy).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write only accuracy.csv and report.md, no plot.
        #[arg(long)]
        no_plots: bool,
    },
    /// List the built-in catalog of accelerators, NICs and node types.
    Catalog {
        /// Print the catalog as JSON.
        #[arg(long, conflicts_with = "source")]
        json: bool,
        /// Print the catalog's source text (it is written in the scenario language).
        #[arg(long)]
        source: bool,
    },
    /// Turn another tool's description of a cluster into a scenario.
    Import {
        #[command(subcommand)]
        sub: ImportSub,
    },
}

#[derive(Subcommand)]
pub(super) enum ImportSub {
    /// A Ray cluster launcher YAML or a KubeRay RayCluster (RayJob, RayService) as a `.orr`
    /// cluster of catalog hardware; what cannot be mapped is printed as `warning:` lines.
    RayCluster {
        file: PathBuf,
        /// Write the scenario here instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Any warning is an error (exit 2, nothing written).
        #[arg(long)]
        strict: bool,
        /// The cluster's name (default: the YAML's cluster_name or metadata.name).
        #[arg(long)]
        name: Option<String>,
        /// Which end of each node type's autoscaling range becomes its node count: `min`
        /// (min_workers; KubeRay replicas) or `max` (max_workers; maxReplicas).
        #[arg(long, value_parser = ["min", "max"], default_value = "min")]
        workers: String,
    },
}

#[derive(Subcommand)]
pub(super) enum CalibrateSub {
    /// Fit a calibration profile from nccl-tests / rccl-tests `*_perf`, nvbandwidth and
    /// perftest (`ib_*_bw`, `ib_*_lat`) outputs.
    Import {
        /// Output files of the tools (format detected from their text); a plain-text
        /// nvbandwidth output as `FILE@SIZE`, SIZE its buffer (`512MiB`).
        #[arg(required = true)]
        files: Vec<String>,
        /// Profile to write (calibration/NAME.toml).
        #[arg(long)]
        out: PathBuf,
        /// The accelerator the profile describes (default: found from the device names).
        #[arg(long)]
        accelerator: Option<String>,
        /// A profile whose compute, memory, launch and other paths the new one keeps.
        #[arg(long)]
        base: Option<PathBuf>,
        /// Fit nccl-tests' in-place times instead of the out-of-place ones.
        #[arg(long)]
        in_place: bool,
        /// Seed of the bootstrap intervals.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

/// `--max-events` and `--max-memory` of every command that simulates (`orrery::budget`).
#[derive(clap::Args, Clone, Default)]
pub(super) struct BudgetArgs {
    /// Most events one simulation may handle, 1 to 10^15 (default 500000000; `5e8` and
    /// `500_000_000` also read). A scenario whose lower bound exceeds it is refused before it
    /// runs (exit 2); a run that passes it stops, and nothing is written (exit 2).
    #[arg(long, value_name = "N")]
    pub(super) max_events: Option<String>,
    /// Most memory the process may hold, 16 MiB to 64 TiB (`8 GiB`, the default; `512 MiB`):
    /// checked against the scenario's lower bound (times the runs at once) before the runs, and
    /// against the heap the process holds while they run and while their outputs are written.
    #[arg(long, value_name = "BYTES")]
    pub(super) max_memory: Option<String>,
}

impl Command {
    /// The budget flags of a command that simulates.
    pub(super) fn budget(&self) -> Option<&BudgetArgs> {
        match self {
            Command::Run { budget, .. }
            | Command::Drill { budget, .. }
            | Command::Sweep { budget, .. }
            | Command::Compare { budget, .. }
            | Command::Check { budget, .. }
            | Command::Explain { budget, .. }
            | Command::Transports { budget, .. } => Some(budget),
            _ => None,
        }
    }

    /// Whether work that can never be placed is a warning rather than an error (explain always
    /// allows it: saying why is its job).
    pub(super) fn allow_infeasible(&self) -> bool {
        match self {
            Command::Run {
                allow_infeasible, ..
            }
            | Command::Drill {
                allow_infeasible, ..
            }
            | Command::Sweep {
                allow_infeasible, ..
            }
            | Command::Compare {
                allow_infeasible, ..
            }
            | Command::Check {
                allow_infeasible, ..
            } => *allow_infeasible,
            Command::Explain { .. } => true,
            _ => false,
        }
    }
}

fn parse_device(s: &str) -> Result<orrery::calibrate::Device, String> {
    s.parse()
}
