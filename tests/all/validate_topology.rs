//! `orrery validate --root` and `orrery detect --root` on machines built as /sys trees: a
//! DGX H100-shaped node (4 PCIe switches, each with two H100s and two ConnectX-7 NDR ports;
//! NVSwitches; 2 storage RoCE and 2 plain 100 GbE adapters on the root complexes), then the
//! same with one fault each, which must show as exactly its MISMATCH line.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

fn orrery(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn write(p: &Path, s: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, format!("{s}\n")).unwrap();
}

/// A fault to build into the tree.
#[derive(Default, Clone)]
struct Faults {
    /// GPU k reports this NUMA node.
    gpu_numa: Option<(usize, i32)>,
    /// Compute NIC k's port rate.
    nic_rate: Option<(usize, &'static str)>,
    /// Compute NIC k's port state.
    nic_state: Option<(usize, &'static str)>,
    /// GPU k's slot (its downstream port) tops out at Gen4.
    gpu_gen4_slot: Option<usize>,
    /// Compute NIC k sits under the next switch instead of its own.
    nic_moved: Option<usize>,
    /// Only this many GPUs.
    gpus: Option<usize>,
    /// GPU vendor:device (default 10de:2330, H100 SXM5 80GB).
    gpu_id: Option<(&'static str, &'static str)>,
}

struct Tree {
    root: PathBuf,
}

impl Tree {
    /// A PCI function at `path` (components below /sys/devices), linked from /sys/bus/pci.
    #[allow(clippy::too_many_arguments)] // one sysfs attribute per argument
    fn pci(
        &self,
        path: &str,
        vendor: &str,
        device: &str,
        class: &str,
        numa: i32,
        speed: &str,
        width: u32,
    ) {
        let dir = self.root.join("sys/devices").join(path);
        let bdf = path.rsplit('/').next().unwrap();
        write(&dir.join("vendor"), vendor);
        write(&dir.join("device"), device);
        write(&dir.join("class"), class);
        write(&dir.join("numa_node"), &numa.to_string());
        write(&dir.join("max_link_speed"), speed);
        write(&dir.join("max_link_width"), &width.to_string());
        let bus = self.root.join("sys/bus/pci/devices");
        fs::create_dir_all(&bus).unwrap();
        symlink(format!("../../../devices/{path}"), bus.join(bdf)).unwrap();
    }

    /// An RDMA device and its netdev on PCI function `path`.
    #[allow(clippy::too_many_arguments)] // one sysfs attribute per argument
    fn nic(
        &self,
        path: &str,
        ib: &str,
        net: &str,
        rate: &str,
        state: &str,
        layer: &str,
        eth_mbps: u32,
    ) {
        let depth = |base: &str| "../".repeat(base.matches('/').count() + 1);
        let ibdir = self.root.join("sys/class/infiniband").join(ib);
        fs::create_dir_all(&ibdir).unwrap();
        symlink(
            format!("{}devices/{path}", depth("class/infiniband/x")),
            ibdir.join("device"),
        )
        .unwrap();
        write(&ibdir.join("ports/1/rate"), rate);
        write(&ibdir.join("ports/1/state"), state);
        write(&ibdir.join("ports/1/link_layer"), layer);
        self.net(path, net, eth_mbps);
    }

    fn net(&self, path: &str, net: &str, mbps: u32) {
        let dir = self.root.join("sys/class/net").join(net);
        fs::create_dir_all(&dir).unwrap();
        symlink(format!("../../../devices/{path}"), dir.join("device")).unwrap();
        write(&dir.join("speed"), &mbps.to_string());
    }
}

const G5: &str = "32.0 GT/s PCIe";
const G4: &str = "16.0 GT/s PCIe";
const BRIDGE: &str = "0x060400";

/// The machine, in a fresh folder.
fn dgx(name: &str, f: &Faults) -> PathBuf {
    let root = std::env::temp_dir().join(format!("orrery-sysfs-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    let t = Tree { root: root.clone() };
    write(&root.join("proc/sys/kernel/hostname"), "dgx-test-01");
    write(&root.join("proc/sys/kernel/osrelease"), "6.8.0-test");
    write(
        &root.join("proc/cpuinfo"),
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480C\n",
    );
    // 2 TiB installed; the kernel keeps a little.
    write(
        &root.join("proc/meminfo"),
        "MemTotal:       2113929216 kB\nMemFree: 1 kB",
    );
    for cpu in 0..224u32 {
        let d = root.join(format!("sys/devices/system/cpu/cpu{cpu}/topology"));
        let socket = (cpu % 112) / 56;
        write(&d.join("physical_package_id"), &socket.to_string());
        write(&d.join("core_id"), &(cpu % 56).to_string());
    }
    for n in 0..2 {
        fs::create_dir_all(root.join(format!("sys/devices/system/node/node{n}"))).unwrap();
    }
    let (gv, gd) = f.gpu_id.unwrap_or(("0x10de", "0x2330"));
    let gpus = f.gpus.unwrap_or(8);
    // Four switches: root port dd:01.0 → upstream (dd+1):00.0 → downstream (dd+2):0k.0 → end
    // points (dd+3+k):00.0. Switches 0, 1 on NUMA 0; 2, 3 on NUMA 1.
    for s in 0..4usize {
        let numa = (s / 2) as i32;
        let b = 0x10 + 0x20 * s;
        let dom = if s < 2 { "pci0000:00" } else { "pci0000:80" };
        let rp = format!("{dom}/0000:{b:02x}:01.0");
        let up = format!("{rp}/0000:{:02x}:00.0", b + 1);
        t.pci(&rp, "0x8086", "0x352a", BRIDGE, numa, G5, 16);
        t.pci(&up, "0x1000", "0xc030", BRIDGE, numa, G5, 16);
        for k in 0..4usize {
            let down = format!("{up}/0000:{:02x}:{k:02x}.0", b + 2);
            let ep_bus = b + 3 + k;
            let gpu_idx = 2 * s + k;
            let slot_gen = if k < 2 && f.gpu_gen4_slot == Some(gpu_idx) {
                G4
            } else {
                G5
            };
            t.pci(&down, "0x1000", "0xc030", BRIDGE, numa, slot_gen, 16);
            let ep = format!("{down}/0000:{ep_bus:02x}:00.0");
            if k < 2 {
                if gpu_idx >= gpus {
                    continue;
                }
                let n = match f.gpu_numa {
                    Some((g, n)) if g == gpu_idx => n,
                    _ => numa,
                };
                t.pci(&ep, gv, gd, "0x030200", n, G5, 16);
            } else {
                let nic = 2 * s + (k - 2);
                // A moved NIC hangs under the next switch's fourth downstream port instead.
                let ep = if f.nic_moved == Some(nic) {
                    let b2 = 0x10 + 0x20 * ((s + 1) % 4);
                    let dom2 = if (s + 1) % 4 < 2 {
                        "pci0000:00"
                    } else {
                        "pci0000:80"
                    };
                    let up2 = format!("{dom2}/0000:{b2:02x}:01.0/0000:{:02x}:00.0", b2 + 1);
                    let down2 = format!("{up2}/0000:{:02x}:{:02x}.0", b2 + 2, 8 + k);
                    t.pci(&down2, "0x1000", "0xc030", BRIDGE, numa, G5, 16);
                    format!("{down2}/0000:{:02x}:00.0", b2 + 0x18 + k)
                } else {
                    ep
                };
                t.pci(&ep, "0x15b3", "0x1021", "0x020700", numa, G5, 16);
                let rate = match f.nic_rate {
                    Some((i, r)) if i == nic => r,
                    _ => "400 Gb/sec (4X NDR)",
                };
                let state = match f.nic_state {
                    Some((i, s)) if i == nic => s,
                    _ => "4: ACTIVE",
                };
                t.nic(
                    &ep,
                    &format!("mlx5_{nic}"),
                    &format!("ibp{ep_bus}s0"),
                    rate,
                    state,
                    "InfiniBand",
                    400000,
                );
            }
        }
    }
    // Storage (RoCE 400G) and frontend (100 GbE) adapters on root ports, one per socket; and
    // four NVSwitches (bridges, not accelerators).
    for (i, dom, b) in [(0, "pci0000:00", 0x0a), (1, "pci0000:80", 0x8a)] {
        let rp = format!("{dom}/0000:{b:02x}:02.0");
        t.pci(&rp, "0x8086", "0x352a", BRIDGE, i, G5, 16);
        let ep = format!("{rp}/0000:{:02x}:00.0", b + 1);
        t.pci(&ep, "0x15b3", "0x1021", "0x020000", i, G5, 16);
        t.nic(
            &ep,
            &format!("mlx5_s{i}"),
            &format!("enp{b}s0"),
            "400 Gb/sec (4X NDR)",
            "4: ACTIVE",
            "Ethernet",
            400000,
        );
        let rp2 = format!("{dom}/0000:{b:02x}:03.0");
        t.pci(&rp2, "0x8086", "0x352a", BRIDGE, i, G5, 16);
        let ep2 = format!("{rp2}/0000:{:02x}:00.0", b + 2);
        t.pci(&ep2, "0x8086", "0x1592", "0x020000", i, G4, 16);
        t.net(&ep2, &format!("eno{i}"), 100000);
    }
    for k in 0..4 {
        let rp = format!("pci0000:00/0000:05:0{k}.0");
        t.pci(&rp, "0x8086", "0x352a", BRIDGE, 0, G4, 2);
        t.pci(
            &format!("{rp}/0000:0{}:00.0", 6 + k),
            "0x10de",
            "0x22a3",
            "0x068000",
            0,
            G4,
            2,
        );
    }
    // A loopback and a bridge have no device link and are not adapters.
    fs::create_dir_all(root.join("sys/class/net/lo")).unwrap();
    root
}

fn validate(root: &Path, node: &str, scenario: Option<&str>) -> (i32, String) {
    let dir = root.with_extension("scn");
    fs::create_dir_all(&dir).unwrap();
    let f = dir.join("s.orr");
    fs::write(&f, scenario.unwrap_or("")).unwrap();
    let (code, out, err) = orrery(&[
        "validate",
        f.to_str().unwrap(),
        "--node",
        node,
        "--root",
        root.to_str().unwrap(),
    ]);
    (code, format!("{out}{err}"))
}

fn mismatches(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.starts_with("MISMATCH")).collect()
}

#[test]
fn a_dgx_h100_tree_validates_as_the_catalog_dgx_h100() {
    let root = dgx("clean", &Faults::default());
    let (code, out) = validate(&root, "dgx_h100", None);
    assert_eq!(mismatches(&out), Vec::<&str>::new(), "{out}");
    assert_eq!(code, 0, "{out}");
    for line in [
        "ok       NVIDIA devices: declared 8, detected 8",
        "ok       device model (8 items)",
        "ok       device NUMA node (8 items)",
        "ok       device PCIe link (the lower of card and slot maxima) (8 items): declared gen5 x16",
        "ok       InfiniBand adapters (at least): declared 8, detected 8",
        "ok       NIC link speed (12 items)",
        "ok       RDMA port active (10 items)",
        "ok       PCIe switch placement (20 items)",
        "ok       Ray resource `GPU`: declared 8, detected 8",
        "ok       Ray resource `accelerator_type:H100`: declared 1, detected 1",
        "ok       Ray label `ray.io/accelerator-type`: declared H100, detected H100",
    ] {
        assert!(out.lines().any(|l| l.starts_with(line)), "{line}\n{out}");
    }
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn each_fault_is_its_own_mismatch_line() {
    let cases: Vec<(&str, Faults, Vec<&str>)> = vec![
        (
            "numa",
            Faults {
                gpu_numa: Some((3, 1)),
                ..Default::default()
            },
            vec!["device NUMA node, device 3: declared numa 0, detected numa 1"],
        ),
        (
            "slow-nic",
            Faults {
                nic_rate: Some((5, "200 Gb/sec (4X HDR)")),
                ..Default::default()
            },
            vec!["NIC link speed, nic 5 (mlx5_5/ibp"],
        ),
        (
            "port-down",
            Faults {
                nic_state: Some((2, "1: DOWN")),
                ..Default::default()
            },
            vec!["RDMA port active, nic 2 (mlx5_2/"],
        ),
        (
            "gen4-slot",
            Faults {
                gpu_gen4_slot: Some(6),
                ..Default::default()
            },
            vec![
                "device PCIe link (the lower of card and slot maxima), device 6: declared gen5 x16, detected gen4 x16",
            ],
        ),
        (
            "seven-gpus",
            Faults {
                gpus: Some(7),
                ..Default::default()
            },
            vec![
                "NVIDIA devices: declared 8, detected 7",
                "Ray resource `GPU`: declared 8, detected 7",
            ],
        ),
        (
            "h200-board",
            Faults {
                gpu_id: Some(("0x10de", "0x2335")),
                ..Default::default()
            },
            vec![
                "device model, device 0: declared H100_SXM, detected H200 SXM 141GB",
                "Ray resource `accelerator_type:H100`: declared 1, detected none",
                "Ray resource `accelerator_type:H200`: declared none, detected 1",
                "Ray label `ray.io/accelerator-type`: declared H100, detected H200",
            ],
        ),
    ];
    for (name, faults, expect) in cases {
        let root = dgx(name, &faults);
        let (code, out) = validate(&root, "dgx_h100", None);
        assert_eq!(code, 1, "{name}: {out}");
        let got = mismatches(&out);
        for e in &expect {
            assert!(
                got.iter().any(|l| l.contains(e)),
                "{name}: `{e}` not in\n{out}"
            );
        }
        // Nothing else differs (device model lines: one per device of the wrong board).
        let extra: Vec<&&str> = got
            .iter()
            .filter(|l| {
                let expected = expect.iter().any(|e| l.contains(e));
                let board = name == "h200-board" && l.contains("device model");
                !(expected || board)
            })
            .collect();
        assert!(extra.is_empty(), "{name}: unexpected {extra:?}\n{out}");
        let _ = fs::remove_dir_all(&root);
    }
}

#[test]
fn a_nic_under_another_switch_breaks_the_declared_pairs() {
    let root = dgx(
        "moved",
        &Faults {
            nic_moved: Some(1),
            ..Default::default()
        },
    );
    let (code, out) = validate(&root, "dgx_h100", None);
    assert_eq!(code, 1, "{out}");
    let got = mismatches(&out);
    // The moved adapter leaves switch 0 with one NIC and switch 1 with three. Adapters meet
    // declared NICs in bus order, so declared nic 1 meets the first adapter under switch 1:
    // every item whose company changed has its line (devices 0–3, nics 0–3), and no other.
    assert!(
        got.iter().any(|l| l.contains(
            "PCIe switch placement, nic 1: declared under sw0 with device 0, device 1, nic 0, detected under switch 0000:31:00.0 with device 2, device 3, nic 2, nic 3"
        )),
        "{out}"
    );
    assert!(got.iter().any(|l| l.contains("PCIe switch placement, nic 0: declared under sw0 with device 0, device 1, nic 1, detected under switch 0000:11:00.0 with device 0, device 1")), "{out}");
    assert_eq!(got.len(), 8, "{out}");
    assert!(
        got.iter().all(|l| l.contains("PCIe switch placement")),
        "{out}"
    );
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn detect_prints_a_block_that_validates_on_the_same_machine() {
    let root = dgx("detect", &Faults::default());
    let (code, block, err) = orrery(&["detect", "--name", "box", "--root", root.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    for line in [
        "node box {",
        "  cpu sockets 2, cores 112, numa 2, threads 224, model \"Intel(R) Xeon(R) Platinum 8480C\"",
        "  pcie gen5",
        "  switch [sw0, sw1, sw2, sw3] numa [0, 0, 1, 1]",
        "  device H100_SXM x 8 at [sw0, sw0, sw1, sw1, sw2, sw2, sw3, sw3] link switch",
        "  nic ib_ndr_400g x 8 at [sw0, sw0, sw1, sw1, sw2, sw2, sw3, sw3]",
        "  nic roce_400g x 1 at numa [0]",
    ] {
        assert!(
            block.lines().any(|l| l.starts_with(line)),
            "{line}\n{block}"
        );
    }
    let (code, out) = validate(&root, "box", Some(&block));
    assert_eq!(mismatches(&out), Vec::<&str>::new(), "{block}\n{out}");
    assert_eq!(code, 0, "{out}");
    let (code, _, err) = orrery(&[
        "detect",
        "--name",
        "9lives",
        "--root",
        root.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = orrery(&["detect", "--root", "/nonexistent/x"]);
    assert_eq!(code, 2, "{err}");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn ray_view_follows_rays_visibility_variables_and_tpu_labels() {
    use orrery::calibrate::detect::detect_at;
    use orrery::calibrate::validate::detected_view;
    let root = dgx("ray", &Faults::default());
    let env = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let v = detected_view(
        &detect_at(&root, env(&[("CUDA_VISIBLE_DEVICES", "0,1,2")])),
        None,
    );
    assert_eq!(v.resources.get("GPU"), Some(&3.0));
    assert_eq!(v.resources.get("accelerator_type:H100"), Some(&1.0));
    let v = detected_view(
        &detect_at(&root, env(&[("CUDA_VISIBLE_DEVICES", "")])),
        None,
    );
    assert!(v.resources.is_empty(), "{v:?}");
    let _ = fs::remove_dir_all(&root);
    // A TPU VM: four /dev/accel chips, the GKE variables.
    let tpu = std::env::temp_dir().join(format!("orrery-sysfs-{}-tpu", std::process::id()));
    let _ = fs::remove_dir_all(&tpu);
    for k in 0..4 {
        write(&tpu.join(format!("dev/accel{k}")), "");
    }
    let h = detect_at(
        &tpu,
        env(&[
            ("TPU_ACCELERATOR_TYPE", "v4-16"),
            ("TPU_NAME", "my-slice"),
            ("TPU_WORKER_ID", "1"),
        ]),
    );
    let v = detected_view(&h, None);
    assert_eq!(v.resources.get("TPU"), Some(&4.0));
    assert_eq!(v.resources.get("accelerator_type:TPU-V4"), Some(&1.0));
    assert_eq!(
        v.labels.get("ray.io/tpu-slice-name").map(String::as_str),
        Some("my-slice")
    );
    assert_eq!(
        v.labels.get("ray.io/tpu-worker-id").map(String::as_str),
        Some("1")
    );
    assert_eq!(
        v.labels.get("ray.io/tpu-pod-type").map(String::as_str),
        Some("v4-16")
    );
    let _ = fs::remove_dir_all(&tpu);
}
