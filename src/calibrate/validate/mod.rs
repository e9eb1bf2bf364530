//! `orrery validate FILE --node TYPE`: a node type as a scenario declares it against the
//! hardware detected here. CPU sockets, cores, threads, model, memory and NUMA nodes (here);
//! devices: count, model, memory, NUMA node, PCIe link, PCIe switch placement, the link
//! between devices and peer access ([`devices`]); NICs: count, speed, RDMA ports and link
//! layer, NUMA node, switch ([`network`]); and what Ray would register on this node
//! ([`ray`]). Each check says match, mismatch or unknown (not visible here); unknowns are not
//! mismatches. Checks of one kind that all match are one line; each mismatch is its own line.
//!
//! Declared items meet detected ones in order: the node's devices in declaration order with
//! the accelerators in PCI bus order (the order `nvidia-smi` and `CUDA_DEVICE_ORDER=PCI_BUS_ID`
//! use), its RDMA NICs with the RDMA adapters in bus order, its other NICs with the other
//! adapters in bus order.

mod devices;
mod network;
mod ray;

pub use network::{NicClass, adapter_class};

pub use devices::{devices_in_bus_order, pci_model};
pub use ray::{RayView, declared_view, detected_view};

use super::detect::{GpuInventory, Host};
use crate::scenario::Spec;
use crate::scenario::hardware::NodeType;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Match,
    Mismatch,
    Unknown,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub what: String,
    pub declared: String,
    pub detected: String,
    pub verdict: Verdict,
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tag = match self.verdict {
            Verdict::Match => "ok      ",
            Verdict::Mismatch => "MISMATCH",
            Verdict::Unknown => "unknown ",
        };
        write!(
            f,
            "{tag} {}: declared {}, detected {}",
            self.what, self.declared, self.detected
        )
    }
}

pub(super) fn check(what: &str, declared: String, detected: Option<String>, ok: bool) -> Check {
    let (detected, verdict) = match detected {
        None => ("not visible here".to_string(), Verdict::Unknown),
        Some(d) => (
            d,
            if ok {
                Verdict::Match
            } else {
                Verdict::Mismatch
            },
        ),
    };
    Check {
        what: what.into(),
        declared,
        detected,
        verdict,
    }
}

pub(super) fn count(what: &str, declared: u32, detected: Option<u32>) -> Check {
    check(
        what,
        declared.to_string(),
        detected.map(|d| d.to_string()),
        detected == Some(declared),
    )
}

/// Lower-case words of a model name without trademarks, `CPU` and clock speed.
fn words(s: &str) -> Vec<String> {
    s.replace("(R)", " ")
        .replace("(TM)", " ")
        .replace("(tm)", " ")
        .split(|c: char| c.is_whitespace() || c == ',')
        .take_while(|w| *w != "@")
        .map(str::to_lowercase)
        .filter(|w| !w.is_empty() && w != "cpu" && w != "processor")
        .collect()
}

/// Whether every word of the declared model appears in the detected one.
pub fn model_matches(declared: &str, detected: &str) -> bool {
    let d = words(detected);
    words(declared).iter().all(|w| d.contains(w))
}

/// Whether a GPU name (`NVIDIA H200`, `NVIDIA H100 80GB HBM3`, `A100-SXM4-80GB`) is the
/// accelerator `name` (`H200`, `H100_SXM`): the accelerator name's first part is one of the
/// GPU's words, or starts one followed by a non-alphanumeric (`a100-sxm4`; not `l40s` for `L4`).
pub fn gpu_is(name: &str, gpu: &str) -> bool {
    let key = name.split('_').next().unwrap_or(name).to_lowercase();
    words(gpu).iter().any(|w| {
        w.strip_prefix(key.as_str())
            .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_alphanumeric()))
    })
}

/// The checks of a group of items of one kind (`(item, declared, detected, agrees)`): one
/// line when all agree; else one line per item that differs, and one line counting the items
/// not visible here.
pub(super) fn per_item(
    what: &str,
    items: Vec<(String, String, Option<String>, bool)>,
) -> Vec<Check> {
    let n = items.len();
    let plural = |k: usize| if k == 1 { "" } else { "s" };
    let unknown = items.iter().filter(|i| i.2.is_none()).count();
    let mut out: Vec<Check> = Vec::new();
    let mut first_declared: Option<String> = None;
    let mut same = true;
    for (item, declared, detected, ok) in items {
        match &first_declared {
            None => first_declared = Some(declared.clone()),
            Some(f) => same &= *f == declared,
        }
        if let Some(d) = detected
            && !ok
        {
            out.push(check(&format!("{what}, {item}"), declared, Some(d), false));
        }
    }
    let declared = if same {
        first_declared.unwrap_or_default()
    } else {
        "per item".into()
    };
    if unknown > 0 {
        out.push(check(
            &format!("{what} ({unknown} of {n} item{})", plural(n)),
            declared,
            None,
            false,
        ));
    } else if out.is_empty() && n > 0 {
        out.push(Check {
            what: format!("{what} ({n} item{})", plural(n)),
            declared,
            detected: "as declared".into(),
            verdict: Verdict::Match,
        });
    }
    out
}

pub(super) fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// Every check of node type `nt` against `host` (and the CUDA inventory when there is one).
pub fn compare(spec: &Spec, nt: &NodeType, host: &Host, gpus: Option<&GpuInventory>) -> Vec<Check> {
    let mut out = vec![
        count("CPU sockets", nt.cpu.sockets, host.sockets),
        count("CPU cores", nt.cpu.cores, host.cores),
        count("CPU threads", nt.cpu.threads, Some(host.threads)),
        count("NUMA nodes", nt.cpu.numa, host.numa_nodes),
    ];
    if let Some(m) = &nt.cpu.model {
        let ok = host
            .cpu_model
            .as_deref()
            .is_some_and(|d| model_matches(m, d));
        out.push(check("CPU model", m.clone(), host.cpu_model.clone(), ok));
    }
    // The kernel keeps some memory for itself: MemTotal is a little under what is installed.
    let declared = nt.memory.0;
    let ok = host.memory_bytes.is_some_and(|d| {
        (d as f64) >= 0.9 * declared as f64 && (d as f64) <= 1.02 * declared as f64
    });
    out.push(check(
        "memory (MemTotal within -10%/+2%)",
        gib(declared),
        host.memory_bytes.map(gib),
        ok,
    ));

    out.extend(devices::checks(spec, nt, host, gpus));
    out.extend(network::checks(spec, nt, host));
    out.extend(ray::checks(spec, nt, host, gpus));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_match_loosely() {
        assert!(model_matches(
            "Intel Xeon Platinum 8480C",
            "Intel(R) Xeon(R) Platinum 8480C CPU @ 2.00GHz"
        ));
        assert!(!model_matches("Intel Xeon Platinum 8480C", "AMD EPYC 9654"));
        assert!(gpu_is("H200", "NVIDIA H200"));
        assert!(gpu_is("H100_SXM", "NVIDIA H100 80GB HBM3"));
        assert!(!gpu_is("H200", "NVIDIA H100 80GB HBM3"));
        assert!(gpu_is("A100_80GB", "NVIDIA A100-SXM4-80GB"));
        assert!(gpu_is("L4", "NVIDIA L4"));
        assert!(!gpu_is("L4", "NVIDIA L40S"));
        assert!(gpu_is("MI300X", "Instinct MI300X"));
    }
}
