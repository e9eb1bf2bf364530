//! The command line: every subcommand and flag (clap derive).

pub(super) use super::choices::{FormatChoice, PolicyChoice, WorkersChoice};
use super::choices::{parse_device, parse_protocol};
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
    Run(RunArgs),
    /// Run a failure drill over many seeds; several scenarios (recovery policies: checkpoint
    /// intervals, retry settings, spare nodes) run side by side.
    Drill(DrillArgs),
    /// Run an experiment's sweeps: every combination of swept values × every seed, in
    /// parallel; writes runs.csv, summary.csv and summary.json (or a shard file with --shard).
    Sweep(SweepArgs),
    /// Merge the shard files of one sweep (folders or files) into the unsharded outputs.
    Merge(MergeArgs),
    /// Compare scenarios (the same workload on different hardware): each kind of work in its
    /// own unit (step time, $/step, tasks/s, requests served/s, SLO attainment), cost and
    /// energy, over seeds.
    Compare(CompareArgs),
    /// Validate scenarios and print what each declares.
    Check(CheckArgs),
    /// Print scenarios in canonical form.
    Fmt(FmtArgs),
    /// Explain an item's first placement in a run: the rules that decided, every node's verdict
    /// and score, and the outcome (the run's own decision). Work that can never be placed is
    /// explained, not refused.
    Explain(ExplainArgs),
    /// Measure the event core and a large simulation (events/s, peak memory).
    Bench(BenchArgs),
    /// Price one collective at many sizes for ranks placed on a scenario's cluster, printed as
    /// nccl-tests prints its table (size, count, type, time, algbw, busbw).
    Collectives(CollectivesArgs),
    /// Run a flow file (`link ID BANDWIDTH LATENCY`, `flow ID BYTES START LINK...`) on
    /// Orrery's max-min flow solver: each flow's completion time in seconds (`ID SECONDS`,
    /// sorted by id), then the wall time (grammar/orrery.md §4).
    Flows(FlowsArgs),
    /// Compare transports (object store, NVLink P2P, NCCL, Gloo, NIXL, RDMA, GPUDirect RDMA,
    /// host-staged RDMA, TCP) on the same transfers over a scenario's cluster.
    Transports(TransportsArgs),
    /// Measure this machine (memcpy, hand-off latency, memory- and compute-bound kernels; with
    /// `--features cuda` the GPUs) and write a calibration profile with its plot; or, with
    /// `import`, fit one from benchmark tools' outputs.
    #[command(args_conflicts_with_subcommands = true)]
    Calibrate(CalibrateArgs),
    /// Compare a node type declared in a scenario with the hardware detected here; exit 1 on a
    /// mismatch.
    Validate(ValidateArgs),
    /// Print a node-type block for this machine, in the scenario language.
    Detect(DetectArgs),
    /// Orrery's predictions against published measurements (nccl-tests tables, queueing
    /// closed forms): each row's source, published figure, prediction, signed error and
    /// tolerance; writes accuracy.csv, a log-log plot and report.md; exits 1 if any row is
    /// over its tolerance.
    Accuracy(AccuracyArgs),
    /// List the built-in catalog of accelerators, NICs and node types.
    Catalog(CatalogArgs),
    /// Turn another tool's description of a cluster into a scenario.
    Import {
        #[command(subcommand)]
        sub: ImportSub,
    },
}

/// The flags of `orrery run`.
#[derive(clap::Args)]
pub(super) struct RunArgs {
    #[command(flatten)]
    pub(super) budget: BudgetArgs,
    pub(super) file: Option<PathBuf>,
    /// Seed for every random stream of the run.
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Where results go (default outputs/<scenario name>).
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
    /// Place every workload with this policy (ray_default, spread, topology_aware).
    #[arg(long, value_enum)]
    pub(super) policy: Option<PolicyChoice>,
    /// Apply only the `failures NAME` block of that name (default: every block).
    #[arg(long, value_name = "NAME")]
    pub(super) failures: Option<String>,
    /// End of the simulated window, as in a scenario (`12 h`, `90 min`; default: the first
    /// experiment's `horizon`, else the end of the work).
    #[arg(long)]
    pub(super) horizon: Option<String>,
    /// Also write trace.json: what every device did when, as a Perfetto / Chrome trace
    /// (pid = node, tid = device).
    #[arg(long)]
    pub(super) trace: bool,
    /// Keep work that can never be placed on the cluster pending forever, as Ray does, with a
    /// warning (default: it is an error, exit 2).
    #[arg(long)]
    pub(super) allow_infeasible: bool,
    /// Write only the data files and report.md, no plots.
    #[arg(long)]
    pub(super) no_plots: bool,
    /// How the tables are written: `csv`, or `parquet` (the same columns, each with one
    /// type, and the schema version and run header in the file's metadata). run.json is
    /// written either way.
    #[arg(long, value_enum, default_value = "csv")]
    pub(super) format: FormatChoice,
}

/// The flags of `orrery drill`.
#[derive(clap::Args)]
pub(super) struct DrillArgs {
    #[command(flatten)]
    pub(super) budget: BudgetArgs,
    #[arg(required = true)]
    pub(super) files: Vec<PathBuf>,
    /// Seeds: `N` for 1..N, `N..M` for N to M inclusive (default: the first experiment's
    /// `seeds`, else 1..10).
    #[arg(long)]
    pub(super) seeds: Option<String>,
    /// Worker threads, 1 to 4 per CPU (default: one per CPU). Results do not depend on it.
    #[arg(long)]
    pub(super) threads: Option<usize>,
    /// Where results go (default outputs/<scenario name>-drill).
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
    /// End of the simulated window, as in a scenario (`12 h`, `90 min`; default: the first
    /// experiment's `horizon`).
    #[arg(long)]
    pub(super) horizon: Option<String>,
    /// Run every variant once per placement policy, side by side
    /// (e.g. `--policies ray_default,topology_aware`).
    #[arg(long, value_delimiter = ',', value_enum)]
    pub(super) policies: Vec<PolicyChoice>,
    /// Keep work that can never be placed on the cluster pending forever, as Ray does, with a
    /// warning (default: it is an error, exit 2).
    #[arg(long)]
    pub(super) allow_infeasible: bool,
    /// Write only the data files and report.md, no plots.
    #[arg(long)]
    pub(super) no_plots: bool,
}

/// The flags of `orrery sweep`.
#[derive(clap::Args)]
pub(super) struct SweepArgs {
    #[command(flatten)]
    pub(super) budget: BudgetArgs,
    pub(super) file: PathBuf,
    /// Experiment to run (default: the first).
    #[arg(long)]
    pub(super) experiment: Option<String>,
    /// Seeds: `N` for 1..N, `N..M` for N to M inclusive (default: the experiment's).
    #[arg(long)]
    pub(super) seeds: Option<String>,
    /// Worker threads, 1 to 4 per CPU (default: one per CPU). Results do not depend on it.
    #[arg(long)]
    pub(super) threads: Option<usize>,
    /// `i/n`: run only runs whose number mod n = i and write shard-i-of-n.json.
    #[arg(long)]
    pub(super) shard: Option<String>,
    /// Keep work that can never be placed on the cluster pending forever, as Ray does, with a
    /// warning (default: it is an error, exit 2).
    #[arg(long)]
    pub(super) allow_infeasible: bool,
    /// Where results go (default outputs/<scenario>-<experiment>).
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
    /// Write only the data files and report.md, no plots.
    #[arg(long)]
    pub(super) no_plots: bool,
}

/// The flags of `orrery merge`.
#[derive(clap::Args)]
pub(super) struct MergeArgs {
    #[arg(required = true)]
    pub(super) shards: Vec<PathBuf>,
    #[arg(long)]
    pub(super) out: PathBuf,
    /// Write only the data files and report.md, no plots.
    #[arg(long)]
    pub(super) no_plots: bool,
}

/// The flags of `orrery compare`.
#[derive(clap::Args)]
pub(super) struct CompareArgs {
    #[command(flatten)]
    pub(super) budget: BudgetArgs,
    #[arg(required = true, num_args = 2..)]
    pub(super) files: Vec<PathBuf>,
    /// Seeds: `N` for 1..N, `N..M` for N to M inclusive (default 1..5).
    #[arg(long)]
    pub(super) seeds: Option<String>,
    /// Apply only each scenario's `failures NAME` block of that name (default: every block).
    #[arg(long, value_name = "NAME")]
    pub(super) failures: Option<String>,
    /// End of every scenario's simulated window, as in a scenario (`12 h`, `90 min`;
    /// default: each scenario's first experiment `horizon`, else 1 h with services, else
    /// the end of the work); the table and files say which.
    #[arg(long)]
    pub(super) horizon: Option<String>,
    /// Keep work that can never be placed on the cluster pending forever, as Ray does, with a
    /// warning (default: it is an error, exit 2).
    #[arg(long)]
    pub(super) allow_infeasible: bool,
    /// Worker threads, 1 to 4 per CPU (default: one per CPU). Results do not depend on it.
    #[arg(long)]
    pub(super) threads: Option<usize>,
    /// Where compare.csv and compare.json go (default outputs/compare-<A>-<B>...).
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
    /// Write only the data files and report.md, no plots.
    #[arg(long)]
    pub(super) no_plots: bool,
}

/// The flags of `orrery check`.
#[derive(clap::Args)]
pub(super) struct CheckArgs {
    #[command(flatten)]
    pub(super) budget: BudgetArgs,
    #[arg(required = true)]
    pub(super) files: Vec<PathBuf>,
    /// Keep work that can never be placed on the cluster pending forever, as Ray does, with a
    /// warning (default: it is an error, exit 2).
    #[arg(long)]
    pub(super) allow_infeasible: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// The flags of `orrery fmt`.
#[derive(clap::Args)]
pub(super) struct FmtArgs {
    #[arg(required = true)]
    pub(super) files: Vec<PathBuf>,
    /// Exit 1 if a file is not in canonical form; print nothing else.
    #[arg(long, conflicts_with = "write")]
    pub(super) check: bool,
    /// Rewrite the files in place.
    #[arg(long)]
    pub(super) write: bool,
}

/// The flags of `orrery explain`.
#[derive(clap::Args)]
pub(super) struct ExplainArgs {
    #[command(flatten)]
    pub(super) budget: BudgetArgs,
    pub(super) file: PathBuf,
    /// `workload.item`: a task group, actor, placement group or service.
    pub(super) item: String,
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Place every workload with this policy (ray_default, spread, topology_aware), as
    /// `run --policy` does.
    #[arg(long, value_enum)]
    pub(super) policy: Option<PolicyChoice>,
    /// Print the explanation as JSON (with its schema version).
    #[arg(long)]
    pub(super) json: bool,
}

/// The flags of `orrery bench`.
#[derive(clap::Args)]
pub(super) struct BenchArgs {
    #[arg(long, default_value_t = 10_000)]
    pub(super) nodes: u64,
    #[arg(long, default_value_t = 1_000_000)]
    pub(super) tasks: u64,
    /// Concurrent flows on a 1,000-node fat-tree for the flow-level network benchmark
    /// (0 skips it; every completion updates the max-min rates it disturbs).
    #[arg(long, default_value_t = 10_000)]
    pub(super) flows: usize,
    /// Flows arriving over 2 s on a 1,024-host oversubscribed leaf-spine for the dense flow
    /// benchmark (0 skips it; the spine saturates, so each event disturbs many flows).
    #[arg(long, default_value_t = 0)]
    pub(super) dense_flows: usize,
    /// GPUs of the ring allreduce benchmark (1 GiB per rank on a DGX H100 fat-tree; 0 skips).
    #[arg(long, default_value_t = 8_192)]
    pub(super) allreduce: usize,
    /// Instead of the --nodes x --tasks simulation, the contention case: 64 training jobs
    /// of 128 GPUs on 8,192 GPUs (1,024 DGX H100, leaf-spine 2:1) with cross-node task
    /// traffic, all on one network, for one simulated hour.
    #[arg(long)]
    pub(super) contention: bool,
    /// In the --nodes x --tasks simulation, the first two task groups write outputs that
    /// the last two read from other nodes (input fetches on the run's network).
    #[arg(long)]
    pub(super) remote_inputs: bool,
    /// Instead of the --nodes x --tasks simulation, README's failure drill:
    /// scenarios/failure_drill.orr over seeds 1 to 20 and 12 simulated hours, on every CPU.
    #[arg(long)]
    pub(super) drill: bool,
    /// The dense flow case on five generated sets (today's, incasts, 1:1 to 8:1
    /// oversubscription, arrivals over 0.5 to 8 s), --dense-flows flows each (50,000 if 0).
    #[arg(long)]
    pub(super) dense_sets: bool,
    /// Also run the --flows case's flows on a SimGrid-style solver (SimGrid's max-min over
    /// each change's connected component, recomputed at every event) and print how many
    /// times as fast Orrery's is (30 s at 10,000 flows on a 2-core machine).
    #[arg(long)]
    pub(super) simgrid_style: bool,
    /// The recorded figures each case is compared with (default bench/baseline.toml).
    #[arg(long)]
    pub(super) baseline: Option<PathBuf>,
    /// Write this run's figures into the baseline file (cases not run keep their figures).
    #[arg(long)]
    pub(super) record: bool,
    /// With --record: a note kept with the figures (the revision, what else ran).
    #[arg(long, default_value = "")]
    pub(super) note: String,
    /// Exit 1 when a case runs below this many times its baseline's speed (e.g. 0.8).
    #[arg(long)]
    pub(super) min_ratio: Option<f64>,
}

/// The flags of `orrery collectives`.
#[derive(clap::Args)]
pub(super) struct CollectivesArgs {
    pub(super) file: PathBuf,
    /// allreduce, allgather, reducescatter, alltoall, broadcast or sendrecv.
    #[arg(long, default_value = "allreduce", value_parser = orrery::experiment::collectives::parse_op)]
    pub(super) op: orrery::network::collective::Op,
    /// ring, tree, nvls, nvls_tree, hierarchical or pairwise (default: NCCL's choice for
    /// each size on NVIDIA devices, by its tuning model; elsewhere the fastest the flow
    /// model has).
    #[arg(long, value_parser = orrery::experiment::collectives::parse_algorithm)]
    pub(super) algo: Option<orrery::network::collective::Algorithm>,
    /// NCCL protocol: ll, ll128 or simple (default: NCCL's choice for each size; simple
    /// where NCCL's model does not apply).
    #[arg(long, value_parser = parse_protocol)]
    pub(super) proto: Option<orrery::network::collective::Protocol>,
    /// `N` (N one-device bundles, PACK) or `NODESxDEVICES` (STRICT_SPREAD), placed by the
    /// scenario's policy on the empty cluster (default: every device of the first node).
    #[arg(long)]
    pub(super) ranks: Option<String>,
    /// `LO..HI` doubling (K, M, G: powers of 1024, as nccl-tests' -b/-e) or a list.
    #[arg(long, default_value = "1K..8G")]
    pub(super) sizes: String,
    /// Print `size_bytes,count,time_us,algbw_GBps,busbw_GBps,algorithm,protocol` rows instead.
    #[arg(long)]
    pub(super) csv: bool,
}

/// The flags of `orrery transports`.
#[derive(clap::Args)]
pub(super) struct TransportsArgs {
    #[command(flatten)]
    pub(super) budget: BudgetArgs,
    pub(super) file: PathBuf,
    /// Transfer sizes (default 4KiB,64KiB,1MiB,64MiB,1GiB).
    #[arg(long)]
    pub(super) sizes: Option<String>,
    /// Device pairs `SRC:DST,...` by name, e.g. `r0.n0.d0:r1.n0.d0` (default: one pair on
    /// a node and one across nodes).
    #[arg(long)]
    pub(super) pairs: Option<String>,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub(super) json: bool,
    /// Also simulate the scenario's workload once per transport (task inputs moved by it)
    /// and compare makespans and task run times with the object store.
    #[arg(long)]
    pub(super) workload: bool,
    /// Seed of the workload runs.
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Where transports.csv, transports.json, the plots and report.md go (default
    /// outputs/<scenario>-transports).
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
    /// Write only the data files and report.md, no plots.
    #[arg(long)]
    pub(super) no_plots: bool,
}

/// The flags of `orrery validate`.
#[derive(clap::Args)]
pub(super) struct ValidateArgs {
    pub(super) file: PathBuf,
    /// The node type (declared in the scenario or the built-in catalog).
    #[arg(long)]
    pub(super) node: String,
    /// Read /proc, /sys and /dev under this folder (a copy of another machine's tree)
    /// instead of this machine's; no driver inventory.
    #[arg(long)]
    pub(super) root: Option<PathBuf>,
    /// Append the result to the calibration profiles the node's accelerators name (a
    /// `[[validation]]` record: what maturity tiers are computed from).
    #[arg(long)]
    pub(super) record: bool,
}

/// The flags of `orrery detect`.
#[derive(clap::Args)]
pub(super) struct DetectArgs {
    /// The node type's name.
    #[arg(long, default_value = "detected")]
    pub(super) name: String,
    /// Read /proc, /sys and /dev under this folder instead of this machine's.
    #[arg(long)]
    pub(super) root: Option<PathBuf>,
}

/// The flags of `orrery accuracy`.
#[derive(clap::Args)]
pub(super) struct AccuracyArgs {
    /// A folder of `*.toml` tables to check instead of the built-in one (accuracy/).
    #[arg(long)]
    pub(super) table: Option<PathBuf>,
    /// Where accuracy.csv, the plot and report.md go (default outputs/accuracy).
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
    /// Write only accuracy.csv and report.md, no plot.
    #[arg(long)]
    pub(super) no_plots: bool,
}

/// The flags of `orrery catalog`.
#[derive(clap::Args)]
pub(super) struct CatalogArgs {
    /// Print the catalog as JSON.
    #[arg(long, conflicts_with = "source")]
    pub(super) json: bool,
    /// Print the catalog's source text (it is written in the scenario language).
    #[arg(long)]
    pub(super) source: bool,
}

/// The flags of `orrery flows`.
#[derive(clap::Args)]
pub(super) struct FlowsArgs {
    pub(super) file: PathBuf,
}

#[derive(Subcommand)]
pub(super) enum ImportSub {
    /// A Ray cluster launcher YAML or a KubeRay RayCluster (RayJob, RayService) as a `.orr`
    /// cluster of catalog hardware; what cannot be mapped is printed as `warning:` lines.
    RayCluster(RayClusterArgs),
}

#[derive(Subcommand)]
pub(super) enum CalibrateSub {
    /// Fit a calibration profile from nccl-tests / rccl-tests `*_perf`, nvbandwidth and
    /// perftest (`ib_*_bw`, `ib_*_lat`) outputs.
    Import(CalibrateImportArgs),
}

/// The flags of `orrery calibrate` (or its `import`).
#[derive(clap::Args)]
pub(super) struct CalibrateArgs {
    #[command(subcommand)]
    pub(super) import: Option<CalibrateSub>,
    /// `cpu` or `cuda:N` (CUDA needs a build with `--features cuda`).
    #[arg(long, default_value = "cpu", value_parser = parse_device)]
    pub(super) device: orrery::calibrate::Device,
    /// Profile to write (default calibration/<device>_<host>.toml); the plot goes beside
    /// it as .svg.
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
    /// Fewer sizes and repetitions: seconds instead of minutes.
    #[arg(long)]
    pub(super) quick: bool,
    /// Seed of the bootstrap intervals (and of the check's chain order).
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// After fitting, time a chain of copies of sizes never fitted against the profile's
    /// prediction and record the figure in the profile (CPU only).
    #[arg(long)]
    pub(super) check: bool,
}

/// The flags of `orrery import ray-cluster`.
#[derive(clap::Args)]
pub(super) struct RayClusterArgs {
    pub(super) file: PathBuf,
    /// Write the scenario here instead of standard output.
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
    /// Any warning is an error (exit 2, nothing written).
    #[arg(long)]
    pub(super) strict: bool,
    /// The cluster's name (default: the YAML's cluster_name or metadata.name).
    #[arg(long)]
    pub(super) name: Option<String>,
    /// Which end of each node type's autoscaling range becomes its node count: `min`
    /// (min_workers; KubeRay replicas) or `max` (max_workers; maxReplicas).
    #[arg(long, value_enum, default_value = "min")]
    pub(super) workers: WorkersChoice,
}

/// The flags of `orrery calibrate import`.
#[derive(clap::Args)]
pub(super) struct CalibrateImportArgs {
    /// Output files of the tools (format detected from their text); a plain-text
    /// nvbandwidth output as `FILE@SIZE`, SIZE its buffer (`512MiB`).
    #[arg(required = true)]
    pub(super) files: Vec<String>,
    /// Profile to write (calibration/NAME.toml).
    #[arg(long)]
    pub(super) out: PathBuf,
    /// The accelerator the profile describes (default: found from the device names).
    #[arg(long)]
    pub(super) accelerator: Option<String>,
    /// A profile whose compute, memory, launch and other paths the new one keeps.
    #[arg(long)]
    pub(super) base: Option<PathBuf>,
    /// Fit nccl-tests' in-place times instead of the out-of-place ones.
    #[arg(long)]
    pub(super) in_place: bool,
    /// Seed of the bootstrap intervals.
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
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
            Command::Run(a) => Some(&a.budget),
            Command::Drill(a) => Some(&a.budget),
            Command::Sweep(a) => Some(&a.budget),
            Command::Compare(a) => Some(&a.budget),
            Command::Check(a) => Some(&a.budget),
            Command::Explain(a) => Some(&a.budget),
            Command::Transports(a) => Some(&a.budget),
            _ => None,
        }
    }

    /// Whether work that can never be placed is a warning rather than an error (explain always
    /// allows it: saying why is its job).
    pub(super) fn allow_infeasible(&self) -> bool {
        match self {
            Command::Run(a) => a.allow_infeasible,
            Command::Drill(a) => a.allow_infeasible,
            Command::Sweep(a) => a.allow_infeasible,
            Command::Compare(a) => a.allow_infeasible,
            Command::Check(a) => a.allow_infeasible,
            Command::Explain(_) => true,
            _ => false,
        }
    }
}
