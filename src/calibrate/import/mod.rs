//! `orrery calibrate import`: a calibration profile fitted from what standard benchmark tools
//! printed — nccl-tests / rccl-tests `*_perf` tables (collectives), nvbandwidth matrices
//! (host–device and peer copies), perftest `ib_*_bw` / `ib_*_lat` tables (RDMA over a NIC).
//! Vendor-neutral: an AMD node is imported from rccl-tests and perftest the same way.
//!
//! [`record`] holds what the parsers read; [`nccl_tests`], [`nvbandwidth`] and [`perftest`]
//! read one tool each; [`points`] turns records into sizes with repetitions and fits them
//! ([`super::fit`]: piecewise α–β, BIC breakpoints, bootstrap intervals, held-out sizes);
//! this file detects formats, names the accelerator and assembles the [`Profile`] with its
//! provenance. No file system access: the binary reads the files and hands in their text.

pub mod nccl_tests;
pub mod nvbandwidth;
pub mod perftest;
mod points;
pub mod record;
mod text;

use crate::profile::schema::{ImportRecord, Profile, Provenance, SCHEMA_VERSION, Source};
use record::{CollectiveTable, Format, NvbandwidthRun, Origin, ParseError, PerftestTable};

/// One input file.
#[derive(Debug, Clone)]
pub struct Input {
    /// The file as named on the command line.
    pub name: String,
    pub text: String,
    /// Its modification time (ISO 8601).
    pub modified: String,
    /// `FILE@SIZE`: the copy buffer of a plain-text nvbandwidth run (which does not print it).
    pub buffer_bytes: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The accelerator the profile describes; found from the device names when `None`.
    pub accelerator: Option<String>,
    /// Candidate accelerator names (the catalog's and the scenario's) for that search.
    pub known_accelerators: Vec<String>,
    /// A profile whose other figures (compute, memory, launch, paths not imported) are kept.
    pub base: Option<(String, Profile)>,
    /// Fit the in-place half of collective tables instead of the out-of-place one.
    pub in_place: bool,
    pub seed: u64,
    pub command: String,
    pub date: String,
}

/// A problem, in a file (at a line and column, when it is about one).
#[derive(Debug, Clone, PartialEq)]
pub struct ImportError {
    pub file: Option<String>,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl ImportError {
    fn general(message: impl Into<String>) -> ImportError {
        ImportError {
            file: None,
            line: 0,
            column: 0,
            message: message.into(),
        }
    }

    fn at(file: &str, e: ParseError) -> ImportError {
        ImportError {
            file: Some(file.to_string()),
            line: e.line,
            column: e.column,
            message: e.message,
        }
    }
}

/// The profile and what was done, one line each (paths fitted, held-out errors, skipped).
#[derive(Debug, Clone)]
pub struct Imported {
    pub profile: Profile,
    pub report: Vec<String>,
}

/// Which tool printed `text`.
pub fn sniff(text: &str) -> Option<Format> {
    if nccl_tests::sniff(text) {
        Some(if text.contains("rccl-tests") {
            Format::RcclTests
        } else {
            Format::NcclTests
        })
    } else if nvbandwidth::sniff(text) {
        Some(Format::Nvbandwidth)
    } else if perftest::sniff(text) {
        Some(Format::Perftest)
    } else {
        None
    }
}

/// What one file held.
pub(super) enum Parsed {
    Collectives(Vec<CollectiveTable>),
    Copies(NvbandwidthRun),
    Rdma(PerftestTable),
}

/// FNV-1a 64 of the bytes, as 16 hex digits.
fn fnv1a64(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Fit `inputs` into a profile.
pub fn import(inputs: &[Input], o: &ImportOptions) -> Result<Imported, ImportError> {
    if inputs.is_empty() {
        return Err(ImportError::general("no input files"));
    }
    let mut parsed = Vec::new();
    let mut records = Vec::new();
    let mut origins: Vec<&Origin> = Vec::new();
    for inp in inputs {
        let format = sniff(&inp.text).ok_or_else(|| {
            ImportError::at(
                &inp.name,
                ParseError::new(
                    1,
                    1,
                    "not an output of nccl-tests, rccl-tests, nvbandwidth or perftest (no header \
                     of theirs found)",
                ),
            )
        })?;
        let p = match format {
            Format::NcclTests | Format::RcclTests => Parsed::Collectives(
                nccl_tests::parse(&inp.text, &inp.name)
                    .map_err(|e| ImportError::at(&inp.name, e))?,
            ),
            Format::Nvbandwidth => {
                let mut run =
                    nvbandwidth::parse(&inp.text).map_err(|e| ImportError::at(&inp.name, e))?;
                if let Some(b) = inp.buffer_bytes {
                    match run.buffer_bytes {
                        Some(j) if j != b => {
                            return Err(ImportError::at(
                                &inp.name,
                                ParseError::new(
                                    1,
                                    1,
                                    format!(
                                        "`@{b}` disagrees with the buffer size the file states ({j} bytes)"
                                    ),
                                ),
                            ));
                        }
                        _ => run.buffer_bytes = Some(b),
                    }
                }
                if run.buffer_bytes.is_none() {
                    return Err(ImportError::at(
                        &inp.name,
                        ParseError::new(
                            1,
                            1,
                            "nvbandwidth does not print its buffer size (plain text or `--json`): \
                             name the file as `FILE@SIZE`, SIZE the `-b` it ran with (`-b 512` is \
                             `nvb.txt@512MiB`)",
                        ),
                    ));
                }
                Parsed::Copies(run)
            }
            Format::Perftest => {
                Parsed::Rdma(perftest::parse(&inp.text).map_err(|e| ImportError::at(&inp.name, e))?)
            }
        };
        records.push(ImportRecord {
            file: inp.name.clone(),
            tool: format.name().to_string(),
            version_lines: Vec::new(),
            file_date: inp.modified.clone(),
            fnv1a64: fnv1a64(&inp.text),
            used_for: Vec::new(),
        });
        parsed.push(p);
    }
    for (p, r) in parsed.iter().zip(records.iter_mut()) {
        let mut lines = Vec::new();
        match p {
            Parsed::Collectives(ts) => {
                for t in ts {
                    origins.push(&t.origin);
                    lines.extend(t.origin.version_lines.iter().cloned());
                }
            }
            Parsed::Copies(run) => {
                origins.push(&run.origin);
                lines.extend(run.origin.version_lines.iter().cloned());
            }
            Parsed::Rdma(t) => lines.extend(t.origin.version_lines.iter().cloned()),
        }
        lines.dedup();
        r.version_lines = lines;
    }
    // `NVIDIA H100 80GB HBM3 (00000000:18:00): (dgx01)` (nvbandwidth's device list) is the
    // device `NVIDIA H100 80GB HBM3`.
    let devices: Vec<&str> = origins
        .iter()
        .flat_map(|o| o.devices.iter())
        .map(|d| d.split(" (").next().unwrap_or(d).trim())
        // A rank line cut short names no device (found by the fuzzer): not a device name.
        .filter(|d| !d.is_empty())
        .collect();
    let accelerator = name_accelerator(&devices, o)?;

    let mut report = Vec::new();
    let fitted = points::fit_all(inputs, &parsed, &mut records, o, &mut report)?;
    if fitted.collective.is_empty() && fitted.transfer.is_empty() {
        return Err(ImportError::general(format!(
            "nothing to fit: {}",
            if report.is_empty() {
                "the files hold no table Orrery uses".to_string()
            } else {
                report.join("; ")
            }
        )));
    }

    let mut hosts: Vec<&str> = origins
        .iter()
        .flat_map(|o| o.hosts.iter().map(String::as_str))
        .filter(|h| !h.is_empty())
        .collect();
    hosts.sort_unstable();
    hosts.dedup();
    let driver = origins
        .iter()
        .find_map(|o| o.driver.clone())
        .unwrap_or_else(|| "not printed by the tools".to_string());
    let mut notes = vec![format!(
        "fitted by `orrery calibrate import` from {} file{}",
        inputs.len(),
        if inputs.len() == 1 { "" } else { "s" }
    )];
    let mut profile = Profile {
        schema_version: SCHEMA_VERSION,
        provenance: Provenance {
            source: Source::Imported,
            accelerator: accelerator.clone(),
            device: devices
                .first()
                .map_or_else(|| accelerator.clone(), |d| d.to_string()),
            driver,
            host: if hosts.is_empty() {
                "not printed by the tools".to_string()
            } else {
                hosts.join(", ")
            },
            date: o.date.clone(),
            orrery_version: env!("CARGO_PKG_VERSION").to_string(),
            command: o.command.clone(),
            seed: o.seed,
            notes: None,
            imports: records,
        },
        compute: Default::default(),
        memory: None,
        launch: None,
        vector: Default::default(),
        transfer: fitted.transfer,
        collective: fitted.collective,
        p2p_matrix: Vec::new(),
        validation: Vec::new(),
    };
    if let Some((name, base)) = &o.base {
        notes.push(format!(
            "compute, memory, launch and paths not imported kept from profile {name} ({}, {}, `{}`)",
            base.provenance.source.as_str(),
            base.provenance.date,
            base.provenance.command
        ));
        profile.compute = base.compute.clone();
        profile.memory = base.memory.clone();
        profile.launch = base.launch.clone();
        profile.vector = base.vector.clone();
        // The copy matrix is the base's hardware; its validation records vouch for the base's
        // figures, not these, so they are not carried over.
        profile.p2p_matrix = base.p2p_matrix.clone();
        for t in &base.transfer {
            if profile.transfer(&t.path).is_none() {
                profile.transfer.push(t.clone());
            }
        }
        for c in &base.collective {
            if profile
                .collective(&c.op, c.ranks as usize, c.nodes as usize)
                .is_none()
            {
                profile.collective.push(c.clone());
            }
        }
    }
    profile.provenance.notes = Some(notes.join("; "));
    Ok(Imported { profile, report })
}

/// The accelerator the devices are: the one given, else the only known name every device
/// name matches ([`super::validate::gpu_is`]).
fn name_accelerator(devices: &[&str], o: &ImportOptions) -> Result<String, ImportError> {
    let mut distinct: Vec<&str> = devices.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    // A name given is trusted: it may be a scenario's own accelerator (`my_h100 from
    // H100_SXM`), which no device name spells.
    if let Some(a) = &o.accelerator {
        return Ok(a.clone());
    }
    if distinct.len() > 1 {
        return Err(ImportError::general(format!(
            "the files measured different devices ({}): import each accelerator's files separately",
            distinct.join(", ")
        )));
    }
    let Some(d) = distinct.first() else {
        return Err(ImportError::general(
            "the files name no device (perftest prints none): say which accelerator the profile \
             is for with `--accelerator NAME`",
        ));
    };
    let cands: Vec<&String> = o
        .known_accelerators
        .iter()
        .filter(|a| super::validate::gpu_is(a, d))
        .collect();
    match cands.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(ImportError::general(format!(
            "no known accelerator is `{d}`: name it with `--accelerator NAME`"
        ))),
        many => Err(ImportError::general(format!(
            "`{d}` could be {}: name it with `--accelerator NAME`",
            many.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" or ")
        ))),
    }
}
