//! The built-in hardware catalog: accelerators, NICs and node types, written in the scenario
//! language itself and embedded in the binary. Every figure carries its source; user files
//! override entries by declaring the same name, or derive from them with `from`. Read by
//! `scenario::load`; listed by `report::catalog`.

/// Version of `orrery catalog --json` (2: `schema_version`, quantity keys with their units:
/// `memory_bytes`, `flop_per_s`, `speed_bytes_per_s`, `latency_s`...; 1 was unversioned;
/// 3: `tier` values lower-case, as everywhere else: `datasheet`, not `Datasheet`).
pub const SCHEMA_VERSION: u32 = 3;

/// `(file name, text)` of each catalog file, loaded in this order.
pub const FILES: &[(&str, &str)] = &[
    (
        "<catalog>/accelerators.orr",
        include_str!("accelerators.orr"),
    ),
    (
        "<catalog>/accelerators_amd.orr",
        include_str!("accelerators_amd.orr"),
    ),
    (
        "<catalog>/accelerators_google.orr",
        include_str!("accelerators_google.orr"),
    ),
    (
        "<catalog>/accelerators_aws.orr",
        include_str!("accelerators_aws.orr"),
    ),
    (
        "<catalog>/accelerators_intel.orr",
        include_str!("accelerators_intel.orr"),
    ),
    ("<catalog>/nics.orr", include_str!("nics.orr")),
    ("<catalog>/nodes.orr", include_str!("nodes.orr")),
];
