//! Reading Linux's /sys (and /dev) under a root folder: `/` on the machine itself, or a copy
//! of another machine's tree (the tests build small ones). Only relative symlinks resolve
//! inside a copied tree, as the kernel's own links are; a link that leaves the root is not
//! followed. Every figure is `None` or empty where it is not visible.
//!
//! What it reads, with where the kernel documents it:
//! - PCI functions: `/sys/bus/pci/devices/BDF/{vendor,device,class,numa_node,
//!   max_link_speed,max_link_width}` (Documentation/ABI/testing/sysfs-bus-pci). A function's
//!   place in the PCI tree is the chain of bridges in its resolved path
//!   (`/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/...`): the first is the root port,
//!   and a function with at least two bridges between it and the root port sits behind a PCIe
//!   switch, whose upstream port is the bridge two above it (a switch is an upstream port
//!   with downstream ports under it, PCIe Base Spec §1.3.3).
//! - Network interfaces: `/sys/class/net/IF/{device,speed}` (sysfs-class-net; speed in Mb/s).
//! - RDMA devices: `/sys/class/infiniband/DEV/{device,ports/N/{state,rate,link_layer}}`
//!   (sysfs-class-infiniband; rate as `400 Gb/sec (4X NDR)`).
//! - TPU chips: `/dev/accel*`, else numeric entries of `/dev/vfio` (Ray's count,
//!   `python/ray/_private/accelerators/tpu.py`, `get_current_node_num_accelerators`).

use serde::Serialize;
use std::fs;
use std::path::{Path, PathBuf};

/// A sysfs tree under `root`.
#[derive(Debug, Clone)]
pub struct Sysfs {
    root: PathBuf,
    /// `root` with symlinks resolved (None if it does not resolve: nothing is visible).
    real_root: Option<PathBuf>,
}

/// One PCI function and where it sits.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PciFn {
    /// Bus id, `0000:17:00.0`.
    pub bus: String,
    pub vendor: u16,
    pub device: u16,
    /// Class code (24 bits: class, subclass, programming interface).
    pub class: u32,
    /// The PCI ID database's name for it (`GH100 [H200 SXM 141GB]`), when known.
    pub name: Option<String>,
    pub numa: Option<u32>,
    /// The upstream port of the nearest PCIe switch above it, if it sits behind one.
    pub switch: Option<String>,
    /// Generation and lanes the link can reach: the lower of the function's and its port's
    /// maxima (a Gen5 card in a Gen4 slot trains at Gen4). Maxima, not the current state:
    /// GPUs drop their link to Gen1 when idle.
    pub link: Option<(u8, u8)>,
}

/// An RDMA port.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RdmaPort {
    pub port: u32,
    /// `ACTIVE`, `DOWN`, ... (the text after `N: `).
    pub state: String,
    pub rate_bps: Option<f64>,
    /// `InfiniBand` or `Ethernet` (RoCE).
    pub link_layer: String,
}

/// A network adapter: one PCI function with its interfaces and RDMA device, if any.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Adapter {
    pub pci: Option<PciFn>,
    /// Network interfaces on it with their speed in bits/s where the kernel reports one.
    pub interfaces: Vec<(String, Option<f64>)>,
    /// RDMA device on it (`mlx5_0`) and its ports.
    pub rdma: Option<String>,
    pub ports: Vec<RdmaPort>,
}

impl Adapter {
    /// The adapter's speed in bits/s: the fastest active RDMA port, else the fastest port,
    /// else the fastest interface.
    pub fn speed_bps(&self) -> Option<f64> {
        let active = self.ports.iter().filter(|p| p.state == "ACTIVE");
        active
            .filter_map(|p| p.rate_bps)
            .reduce(f64::max)
            .or_else(|| {
                self.ports
                    .iter()
                    .filter_map(|p| p.rate_bps)
                    .reduce(f64::max)
            })
            .or_else(|| {
                self.interfaces
                    .iter()
                    .filter_map(|(_, s)| *s)
                    .reduce(f64::max)
            })
    }

    pub fn label(&self) -> String {
        let mut names: Vec<&str> = self.rdma.iter().map(String::as_str).collect();
        names.extend(self.interfaces.iter().map(|(n, _)| n.as_str()));
        let at = self
            .pci
            .as_ref()
            .map_or(String::new(), |p| format!(" [{}]", p.bus));
        format!("{}{at}", names.join("/"))
    }
}

/// Whether `s` is a PCI bus id (`0000:17:00.0`).
fn is_bdf(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && b.iter()
            .enumerate()
            .all(|(i, c)| matches!(i, 4 | 7 | 10) || c.is_ascii_hexdigit())
}

fn hex(s: &str) -> Option<u32> {
    u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// `32.0 GT/s PCIe` → 5 (2.5, 5, 8, 16, 32, 64 GT/s are generations 1 to 6).
pub fn generation(speed: &str) -> Option<u8> {
    let gts: f64 = speed.split_whitespace().next()?.parse().ok()?;
    [2.5, 5.0, 8.0, 16.0, 32.0, 64.0]
        .iter()
        .position(|g| (gts - g).abs() < 0.01)
        .map(|i| i as u8 + 1)
}

/// `400 Gb/sec (4X NDR)` → 4e11 bits/s.
pub fn ib_rate(s: &str) -> Option<f64> {
    let mut w = s.split_whitespace();
    let n: f64 = w.next()?.parse().ok()?;
    match w.next()? {
        "Gb/sec" => Some(n * 1e9),
        "Mb/sec" => Some(n * 1e6),
        _ => None,
    }
}

impl Sysfs {
    pub fn new(root: impl Into<PathBuf>) -> Sysfs {
        let root = root.into();
        let real_root = fs::canonicalize(&root).ok();
        Sysfs { root, real_root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn at(&self, p: &str) -> PathBuf {
        self.root.join(p.trim_start_matches('/'))
    }

    /// `p` under the root with every symlink resolved, if it exists and stays under the root:
    /// a link in a copied tree that leaves it (an absolute `/etc/passwd`, or `../../..` past
    /// the root) is not followed, so nothing outside the root is ever read or listed.
    fn inside(&self, p: &str) -> Option<PathBuf> {
        let real = fs::canonicalize(self.at(p)).ok()?;
        real.starts_with(self.real_root.as_ref()?).then_some(real)
    }

    /// A small text file, trimmed (sysfs attributes are a page at most; 64 KiB is read).
    pub fn read(&self, p: &str) -> Option<String> {
        use std::io::Read;
        let real = self.inside(p)?;
        // Checked before opening: opening a FIFO in a copied tree would block.
        if !fs::metadata(&real).ok()?.is_file() {
            return None;
        }
        let f = fs::File::open(&real).ok()?;
        let mut s = String::new();
        f.take(64 << 10).read_to_string(&mut s).ok()?;
        Some(s.trim().to_string())
    }

    /// Names in a folder, sorted.
    pub fn entries(&self, p: &str) -> Vec<String> {
        let Some(real) = self.inside(p) else {
            return Vec::new();
        };
        let mut v: Vec<String> = fs::read_dir(real)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    pub fn exists(&self, p: &str) -> bool {
        self.inside(p).is_some()
    }

    /// The folder a sysfs link points to, as components below the root (None if it leaves
    /// the root or does not resolve).
    fn resolve(&self, p: &str) -> Option<Vec<String>> {
        let real = self.inside(p)?;
        let rel = real.strip_prefix(self.real_root.as_ref()?).ok()?;
        Some(
            rel.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect(),
        )
    }

    /// The bus id a `device` link (`/sys/class/net/IF/device`) points to.
    pub fn bus_of(&self, link: &str) -> Option<String> {
        self.resolve(link)?.into_iter().rev().find(|c| is_bdf(c))
    }

    /// A PCI function's identity and place.
    pub fn pci(&self, bus: &str) -> Option<PciFn> {
        let bus = bus.to_ascii_lowercase();
        let base = format!("/sys/bus/pci/devices/{bus}");
        let vendor = hex(&self.read(&format!("{base}/vendor"))?)? as u16;
        let device = hex(&self.read(&format!("{base}/device"))?)? as u16;
        let class = self
            .read(&format!("{base}/class"))
            .and_then(|c| hex(&c))
            .unwrap_or(0);
        let numa = self
            .read(&format!("{base}/numa_node"))
            .and_then(|s| s.parse::<i64>().ok())
            .filter(|n| *n >= 0)
            .map(|n| n as u32);
        // Bridges between the root complex and the function, root port first.
        let chain: Vec<String> = self
            .resolve(&base)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| is_bdf(c))
            .collect();
        let bridges = &chain[..chain.len().saturating_sub(1)];
        let switch = (bridges.len() >= 3).then(|| bridges[bridges.len() - 2].clone());
        let link_of = |b: &str| {
            let p = format!("/sys/bus/pci/devices/{b}");
            let g = generation(&self.read(&format!("{p}/max_link_speed"))?)?;
            let w: u8 = self.read(&format!("{p}/max_link_width"))?.parse().ok()?;
            Some((g, w))
        };
        let link = match (link_of(&bus), bridges.last().and_then(|p| link_of(p))) {
            (Some((g, w)), Some((pg, pw))) => Some((g.min(pg), w.min(pw))),
            (own, None) => own,
            (None, _) => None,
        };
        let name = pci_ids::Device::from_vid_pid(vendor, device).map(|d| d.name().to_string());
        Some(PciFn {
            bus,
            vendor,
            device,
            class,
            name,
            numa,
            switch,
            link,
        })
    }

    /// Every PCI function, by bus id.
    pub fn pci_functions(&self) -> Vec<PciFn> {
        self.entries("/sys/bus/pci/devices")
            .iter()
            .filter(|b| is_bdf(b))
            .filter_map(|b| self.pci(b))
            .collect()
    }

    /// Network adapters: interfaces backed by a device and RDMA devices, joined by their PCI
    /// function, in bus order (adapters without a PCI function last, by name).
    pub fn adapters(&self) -> Vec<Adapter> {
        let mut out: Vec<Adapter> = Vec::new();
        let slot = |out: &mut Vec<Adapter>, bus: Option<String>| -> usize {
            if let Some(b) = &bus
                && let Some(i) = out
                    .iter()
                    .position(|a| a.pci.as_ref().is_some_and(|p| &p.bus == b))
            {
                return i;
            }
            out.push(Adapter {
                pci: bus.and_then(|b| self.pci(&b)),
                ..Adapter::default()
            });
            out.len() - 1
        };
        for d in self.entries("/sys/class/infiniband") {
            let bus = self.bus_of(&format!("/sys/class/infiniband/{d}/device"));
            let i = slot(&mut out, bus);
            let ports = self
                .entries(&format!("/sys/class/infiniband/{d}/ports"))
                .into_iter()
                .filter_map(|p| {
                    let n: u32 = p.parse().ok()?;
                    let at =
                        |k: &str| self.read(&format!("/sys/class/infiniband/{d}/ports/{p}/{k}"));
                    Some(RdmaPort {
                        port: n,
                        state: at("state")
                            .map(|s| {
                                s.split_once(':')
                                    .map_or(s.clone(), |(_, t)| t.trim().to_string())
                            })
                            .unwrap_or_default(),
                        rate_bps: at("rate").and_then(|r| ib_rate(&r)),
                        link_layer: at("link_layer").unwrap_or_default(),
                    })
                })
                .collect();
            out[i].rdma = Some(d);
            out[i].ports = ports;
        }
        for n in self.entries("/sys/class/net") {
            let dev = format!("/sys/class/net/{n}/device");
            if !self.exists(&dev) {
                continue; // lo, bridges, veth, ...: no device behind them
            }
            let speed = self
                .read(&format!("/sys/class/net/{n}/speed"))
                .and_then(|s| s.parse::<f64>().ok())
                .filter(|s| *s > 0.0)
                .map(|mbps| mbps * 1e6);
            let bus = self.bus_of(&dev);
            let i = slot(&mut out, bus);
            out[i].interfaces.push((n, speed));
        }
        out.sort_by(|a, b| match (&a.pci, &b.pci) {
            (Some(x), Some(y)) => x.bus.cmp(&y.bus),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.label().cmp(&b.label()),
        });
        out
    }

    /// TPU chips as Ray counts them.
    pub fn tpu_chips(&self) -> u32 {
        let accel = self
            .entries("/dev")
            .iter()
            .filter(|e| e.starts_with("accel"))
            .count();
        if accel > 0 {
            return accel as u32;
        }
        self.entries("/dev/vfio")
            .iter()
            .filter(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()))
            .count() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_formats() {
        assert!(is_bdf("0000:17:00.0"));
        assert!(!is_bdf("pci0000:00"));
        assert_eq!(generation("32.0 GT/s PCIe"), Some(5));
        assert_eq!(generation("2.5 GT/s PCIe"), Some(1));
        assert_eq!(generation("Unknown"), None);
        assert_eq!(ib_rate("400 Gb/sec (4X NDR)"), Some(4e11));
        assert_eq!(ib_rate("25 Gb/sec (1X EDR)"), Some(25e9));
        assert_eq!(ib_rate("garbage"), None);
    }
}
