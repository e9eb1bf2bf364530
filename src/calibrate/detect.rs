//! What this machine is, read from Linux's /proc and /sys (each figure `None` or empty where it
//! is not visible): host name, kernel, CPU model, sockets, physical cores, hardware threads,
//! memory, NUMA nodes, network interfaces (physical ones: those backed by a device), RDMA
//! devices and NVIDIA PCI functions. `orrery calibrate` records it as provenance and
//! `orrery validate` compares it with a declared node type. With the `cuda` feature the GPU
//! inventory comes from the driver instead (`cuda.rs`).

use serde::Serialize;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Host {
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: Option<String>,
    pub sockets: Option<u32>,
    pub cores: Option<u32>,
    pub threads: u32,
    pub memory_bytes: Option<u64>,
    pub numa_nodes: Option<u32>,
    /// Network interfaces backed by a device (not `lo`, bridges, `ifb`, veth...), with their
    /// speed in bits/s where the kernel reports one.
    pub nics: Vec<(String, Option<f64>)>,
    /// RDMA devices (/sys/class/infiniband).
    pub rdma: Vec<String>,
    /// NVIDIA display/3D controller PCI functions (bus ids), from /sys/bus/pci.
    pub nvidia_pci: Vec<String>,
}

/// One GPU as the driver reports it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Gpu {
    pub name: String,
    pub memory_bytes: u64,
    pub sm_count: Option<u32>,
    pub compute_capability: Option<(u32, u32)>,
    pub pci_bus_id: Option<String>,
    pub numa_node: Option<i64>,
}

/// The GPUs and whether each pair can reach the other's memory directly (`p2p[i][j]`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct GpuInventory {
    pub driver: String,
    pub gpus: Vec<Gpu>,
    pub p2p: Vec<Vec<bool>>,
    /// The link kind between each ordered pair as the driver lets us tell it (`links[i][j]`:
    /// `nvlink`, `pcie`, `none`; `self` on the diagonal; empty where unknown).
    #[serde(default)]
    pub links: Vec<Vec<String>>,
}

fn read(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

fn entries(dir: &str) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// NUMA nodes visible in /sys/devices/system/node (None when the folder is absent).
pub fn numa_nodes() -> Option<u32> {
    let n = entries("/sys/devices/system/node")
        .iter()
        .filter(|e| {
            e.strip_prefix("node")
                .is_some_and(|d| d.parse::<u32>().is_ok())
        })
        .count();
    (n > 0).then_some(n as u32)
}

/// The NUMA node of a PCI device (`0000:17:00.0`), when the kernel knows it.
pub fn pci_numa_node(bus_id: &str) -> Option<i64> {
    let id = bus_id.to_ascii_lowercase();
    read(format!("/sys/bus/pci/devices/{id}/numa_node")).and_then(|s| s.parse().ok())
}

pub fn detect() -> Host {
    let hostname = read("/proc/sys/kernel/hostname")
        .or_else(|| read("/etc/hostname"))
        .unwrap_or_else(|| "unknown".into());
    let kernel = read("/proc/sys/kernel/osrelease")
        .map(|r| format!("Linux {r}"))
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    // Topology from /sys: one entry per online logical CPU.
    let mut packages = BTreeSet::new();
    let mut cores = BTreeSet::new();
    let mut threads = 0u32;
    for e in entries("/sys/devices/system/cpu") {
        let Some(n) = e.strip_prefix("cpu").filter(|d| d.parse::<u32>().is_ok()) else {
            continue;
        };
        let base = format!("/sys/devices/system/cpu/cpu{n}/topology");
        let (Some(pkg), Some(core)) = (
            read(format!("{base}/physical_package_id")),
            read(format!("{base}/core_id")),
        ) else {
            continue;
        };
        threads += 1;
        packages.insert(pkg.clone());
        cores.insert((pkg, core));
    }
    let avail = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let threads = if threads == 0 { avail } else { threads };
    let memory_bytes = read("/proc/meminfo").and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|k| k.parse::<u64>().ok())
            .map(|k| k * 1024)
    });
    let nics = entries("/sys/class/net")
        .into_iter()
        .filter(|n| Path::new(&format!("/sys/class/net/{n}/device")).exists())
        .map(|n| {
            let speed = read(format!("/sys/class/net/{n}/speed"))
                .and_then(|s| s.parse::<f64>().ok())
                .filter(|s| *s > 0.0)
                .map(|mbps| mbps * 1e6);
            (n, speed)
        })
        .collect();
    let nvidia_pci = entries("/sys/bus/pci/devices")
        .into_iter()
        .filter(|d| {
            let base = format!("/sys/bus/pci/devices/{d}");
            read(format!("{base}/vendor")).as_deref() == Some("0x10de")
                && read(format!("{base}/class")).is_some_and(|c| c.starts_with("0x03"))
        })
        .collect();
    Host {
        hostname,
        kernel,
        cpu_model,
        sockets: (!packages.is_empty()).then_some(packages.len() as u32),
        cores: (!cores.is_empty()).then_some(cores.len() as u32),
        threads,
        memory_bytes,
        numa_nodes: numa_nodes(),
        nics,
        rdma: entries("/sys/class/infiniband"),
        nvidia_pci,
    }
}

/// Now as ISO 8601 UTC (`2026-11-29T10:00:00Z`), from the system clock.
pub fn now_iso8601() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    iso8601(secs)
}

/// Seconds since 1970-01-01 UTC as ISO 8601 (`2026-11-29T10:00:00Z`).
pub fn iso8601(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn detects_something_and_dates_are_iso() {
        let h = super::detect();
        assert!(h.threads >= 1);
        let d = super::now_iso8601();
        assert_eq!(d.len(), 20, "{d}");
        assert!(d.starts_with("20") && d.ends_with('Z'));
    }
}
