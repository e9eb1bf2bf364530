//! The closed sets of values some flags take, as enums (clap `ValueEnum`), each turned into
//! the library's own type where the command runs; and the parsers of flags whose values the
//! library reads.

/// `--policy`: a placement policy for every workload.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
#[value(rename_all = "snake_case")]
pub(super) enum PolicyChoice {
    RayDefault,
    Spread,
    TopologyAware,
}

impl PolicyChoice {
    pub(super) fn policy(self) -> orrery::scenario::workload::Policy {
        use orrery::scenario::workload::Policy;
        match self {
            PolicyChoice::RayDefault => Policy::RayDefault,
            PolicyChoice::Spread => Policy::Spread,
            PolicyChoice::TopologyAware => Policy::TopologyAware,
        }
    }

    /// The word as written on the command line (and in results' headers).
    pub(super) fn word(self) -> &'static str {
        match self {
            PolicyChoice::RayDefault => "ray_default",
            PolicyChoice::Spread => "spread",
            PolicyChoice::TopologyAware => "topology_aware",
        }
    }
}

/// `run --format`: how the tables are written.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FormatChoice {
    Csv,
    Parquet,
}

impl FormatChoice {
    pub(super) fn format(self) -> orrery::report::Format {
        match self {
            FormatChoice::Csv => orrery::report::Format::Csv,
            FormatChoice::Parquet => orrery::report::Format::Parquet,
        }
    }
}

/// `import ray-cluster --workers`: which end of an autoscaling range becomes the node count.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WorkersChoice {
    Min,
    Max,
}

pub(super) fn parse_protocol(p: &str) -> Result<orrery::network::collective::Protocol, String> {
    orrery::network::collective::Protocol::parse(p)
        .ok_or_else(|| format!("`{p}` is not a protocol: ll, ll128 or simple"))
}

pub(super) fn parse_device(s: &str) -> Result<orrery::calibrate::Device, String> {
    s.parse()
}
