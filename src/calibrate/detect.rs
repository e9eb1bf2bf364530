//! What this machine is, read from Linux's /proc and /sys (each figure `None` or empty where it
//! is not visible): host name, kernel, CPU model, sockets, physical cores, hardware threads,
//! memory, NUMA nodes, network adapters (interfaces backed by a device, RDMA devices and
//! their ports), accelerator PCI functions with their NUMA node, PCIe switch and link
//! ([`super::sysfs`]), TPU chips, and the environment Ray's accelerator managers read. `orrery calibrate` records it as provenance and
//! `orrery validate` compares it with a declared node type. With the `cuda` feature the GPU
//! inventory comes from the driver instead (`cuda.rs`).

use super::sysfs::{Adapter, PciFn, Sysfs};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
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
    /// Network adapters (interfaces backed by a device, RDMA devices), by PCI bus id.
    pub adapters: Vec<Adapter>,
    /// Accelerator PCI functions (GPUs and other accelerators of known vendors), by bus id.
    pub accelerators: Vec<PciFn>,
    /// TPU chips (`/dev/accel*` or `/dev/vfio/N`), as Ray counts them.
    pub tpu_chips: u32,
    /// The environment variables Ray's accelerator managers read (`CUDA_VISIBLE_DEVICES`,
    /// `TPU_NAME`, ...), those that are set.
    pub ray_env: BTreeMap<String, String>,
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

/// PCI vendors whose display or processing-accelerator functions are accelerators: NVIDIA,
/// AMD, Intel Habana (Gaudi); Intel's own GPUs share Intel's vendor id with everything else
/// Intel makes and are not listed.
const ACCELERATOR_VENDORS: &[u16] = &[0x10de, 0x1002, 0x1da3];

/// Whether a PCI function is an accelerator: a known vendor's display controller (class
/// 0x03) or processing accelerator (0x12). NVSwitches are bridges (0x0680) and are not.
pub fn is_accelerator(f: &PciFn) -> bool {
    ACCELERATOR_VENDORS.contains(&f.vendor) && matches!(f.class >> 16, 0x03 | 0x12)
}

/// The variables Ray's accelerator managers read (`python/ray/_private/accelerators/`:
/// nvidia_gpu.py, amd_gpu.py, tpu.py).
pub const RAY_ENV: &[&str] = &[
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "TPU_VISIBLE_CHIPS",
    "TPU_NAME",
    "TPU_WORKER_ID",
    "TPU_ACCELERATOR_TYPE",
    "TPU_TOPOLOGY",
];

/// NUMA nodes visible in /sys/devices/system/node (None when the folder is absent).
fn numa_nodes(fs: &Sysfs) -> Option<u32> {
    let n = fs
        .entries("/sys/devices/system/node")
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
    Sysfs::new("/")
        .pci(bus_id)
        .and_then(|p| p.numa)
        .map(i64::from)
}

/// This machine.
pub fn detect() -> Host {
    let env = RAY_ENV
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect();
    detect_at(Path::new("/"), env)
}

/// The machine whose /proc, /sys and /dev are under `root`, with Ray's variables `ray_env`.
pub fn detect_at(root: &Path, ray_env: BTreeMap<String, String>) -> Host {
    let fs = Sysfs::new(root);
    let hostname = fs
        .read("/proc/sys/kernel/hostname")
        .or_else(|| fs.read("/etc/hostname"))
        .unwrap_or_else(|| "unknown".into());
    let kernel = fs
        .read("/proc/sys/kernel/osrelease")
        .map(|r| format!("Linux {r}"))
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    let cpuinfo = fs.read("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    // Topology from /sys: one entry per online logical CPU.
    let mut packages = BTreeSet::new();
    let mut cores = BTreeSet::new();
    let mut threads = 0u32;
    for e in fs.entries("/sys/devices/system/cpu") {
        let Some(n) = e.strip_prefix("cpu").filter(|d| d.parse::<u32>().is_ok()) else {
            continue;
        };
        let base = format!("/sys/devices/system/cpu/cpu{n}/topology");
        let (Some(pkg), Some(core)) = (
            fs.read(&format!("{base}/physical_package_id")),
            fs.read(&format!("{base}/core_id")),
        ) else {
            continue;
        };
        threads += 1;
        packages.insert(pkg.clone());
        cores.insert((pkg, core));
    }
    let threads = if threads == 0 && root == Path::new("/") {
        std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
    } else {
        threads
    };
    let memory_bytes = fs.read("/proc/meminfo").and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|k| k.parse::<u64>().ok())
            .map(|k| k * 1024)
    });
    let accelerators = fs
        .pci_functions()
        .into_iter()
        .filter(is_accelerator)
        .collect();
    Host {
        hostname,
        kernel,
        cpu_model,
        sockets: (!packages.is_empty()).then_some(packages.len() as u32),
        cores: (!cores.is_empty()).then_some(cores.len() as u32),
        threads,
        memory_bytes,
        numa_nodes: numa_nodes(&fs),
        adapters: fs.adapters(),
        accelerators,
        tpu_chips: fs.tpu_chips(),
        ray_env,
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
