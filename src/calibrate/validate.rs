//! `orrery validate FILE --node TYPE`: a node type as a scenario declares it against the
//! hardware detected here: CPU sockets, cores, threads, model, memory, NUMA nodes; device
//! count, model, memory and the P2P matrix (names, memory and P2P only where the CUDA
//! inventory is available); network interfaces and RDMA devices. Each check says match,
//! mismatch or unknown (not visible here); unknowns are not mismatches.

use super::detect::{GpuInventory, Host};
use crate::spec::Spec;
use crate::spec::hardware::NodeType;
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

fn check(what: &str, declared: String, detected: Option<String>, ok: bool) -> Check {
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

fn count(what: &str, declared: u32, detected: Option<u32>) -> Check {
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

/// Whether a GPU name (`NVIDIA H200`, `NVIDIA H100 80GB HBM3`) is the accelerator `name`
/// (`H200`, `H100_SXM`): the accelerator name's first part appears in the GPU's words.
pub fn gpu_is(name: &str, gpu: &str) -> bool {
    let key = name.split('_').next().unwrap_or(name).to_lowercase();
    words(gpu).iter().any(|w| *w == key || w.starts_with(&key))
}

fn gib(b: u64) -> String {
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

    // Accelerators.
    let declared_devices: u32 = nt.devices.iter().map(|d| d.count).sum();
    let names: Vec<&str> = nt.devices.iter().map(|d| d.accelerator.as_str()).collect();
    let all_nvidia = nt.devices.iter().all(|d| {
        spec.accelerators
            .get(&d.accelerator)
            .is_some_and(|a| a.vendor.eq_ignore_ascii_case("nvidia"))
    });
    let declared_text = if names.is_empty() {
        "0".to_string()
    } else {
        nt.devices
            .iter()
            .map(|d| format!("{} × {}", d.count, d.accelerator))
            .collect::<Vec<_>>()
            .join(" + ")
    };
    match gpus {
        Some(inv) => {
            let n = inv.gpus.len() as u32;
            let mut listed: Vec<String> = Vec::new();
            for g in &inv.gpus {
                if listed.last().is_none_or(|l| !l.ends_with(&g.name)) {
                    listed.push(g.name.clone());
                }
            }
            out.push(check(
                "devices",
                declared_text.clone(),
                Some(format!("{n} ({})", listed.join(", "))),
                n == declared_devices,
            ));
            // Device i is of the group that covers index i in declaration order.
            let expected: Vec<&str> = nt
                .devices
                .iter()
                .flat_map(|d| std::iter::repeat_n(d.accelerator.as_str(), d.count as usize))
                .collect();
            for (i, (g, want)) in inv.gpus.iter().zip(&expected).enumerate() {
                out.push(check(
                    &format!("device {i} model"),
                    want.to_string(),
                    Some(g.name.clone()),
                    gpu_is(want, &g.name),
                ));
                if let Some(a) = spec.accelerators.get(*want) {
                    let d = a.memory.0 as f64;
                    let got = g.memory_bytes as f64;
                    out.push(check(
                        &format!("device {i} memory (within 10%)"),
                        gib(a.memory.0),
                        Some(gib(g.memory_bytes)),
                        (got - d).abs() <= 0.1 * d,
                    ));
                }
            }
            let linked = nt.devices.iter().any(|d| d.link != "none");
            if inv.gpus.len() >= 2 {
                let missing: Vec<String> = (0..inv.p2p.len())
                    .flat_map(|i| (0..inv.p2p.len()).map(move |j| (i, j)))
                    .filter(|&(i, j)| i != j && !inv.p2p[i].get(j).copied().unwrap_or(false))
                    .map(|(i, j)| format!("{i}→{j}"))
                    .collect();
                let detected = if missing.is_empty() {
                    "every pair".to_string()
                } else {
                    format!("no peer access for {}", missing.join(" "))
                };
                out.push(check(
                    "P2P between devices",
                    if linked {
                        "every pair (scale-up link)".into()
                    } else {
                        "not required (no scale-up link)".into()
                    },
                    Some(detected),
                    !linked || missing.is_empty(),
                ));
            }
        }
        None if all_nvidia => {
            let n = host.nvidia_pci.len() as u32;
            out.push(check(
                "devices (NVIDIA PCI functions)",
                declared_text,
                Some(n.to_string()),
                n == declared_devices,
            ));
            if declared_devices > 0 && n > 0 {
                out.push(check(
                    "device models, memory and P2P",
                    names.join(", "),
                    None,
                    false,
                ));
            }
        }
        None => out.push(check("devices", declared_text, None, false)),
    }

    // Network.
    let declared_nics: u32 = nt.nics.iter().map(|n| n.count).sum();
    let declared_rdma: u32 = nt
        .nics
        .iter()
        .filter(|g| spec.nics.get(&g.nic).is_some_and(|n| n.rdma))
        .map(|g| g.count)
        .sum();
    let found = host.nics.len() as u32;
    out.push(check(
        "network interfaces (at least)",
        declared_nics.to_string(),
        Some(format!(
            "{found} ({})",
            host.nics
                .iter()
                .map(|(n, s)| match s {
                    Some(bps) => format!("{n} {} Gb/s", bps / 1e9),
                    None => n.clone(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        )),
        found >= declared_nics,
    ));
    let rdma = host.rdma.len() as u32;
    out.push(check(
        "RDMA devices (at least)",
        declared_rdma.to_string(),
        Some(rdma.to_string()),
        rdma >= declared_rdma,
    ));
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
    }
}
