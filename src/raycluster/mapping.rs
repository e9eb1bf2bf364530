//! What a Ray node type's cloud instance type or accelerator name is in the built-in catalog
//! (`src/catalog/*.orr`). Every entry names its source; only catalog accelerators, NICs and nodes
//! are named (a unit test loads the catalog and checks each), and hardware the catalog lacks
//! (A100 40GB, A10G, T4, TPU v6e, ...) is said so, with what it is, rather than approximated.

/// A cloud machine: its shape as the provider publishes it.
pub struct Instance {
    pub name: &'static str,
    /// vCPUs (Ray's `CPU`): threads; cores = vCPUs / 2, as the catalog counts cloud VMs.
    pub vcpus: u32,
    pub sockets: u32,
    /// Host memory, in the scenario language (`1152 GiB`).
    pub memory: &'static str,
    /// Catalog accelerator, count, scale-up link.
    pub device: Option<(&'static str, u32, &'static str)>,
    /// Accelerators the catalog lacks, in words (`8 x NVIDIA A100 40GB`).
    pub missing: Option<&'static str>,
    /// Catalog NIC and count on the compute (scale-out) network.
    pub nic: Option<(&'static str, u32)>,
    /// The network where no catalog NIC models it, in words.
    pub network_note: Option<&'static str>,
    /// A catalog node type that is this machine (the import then writes `from` it).
    pub base: Option<&'static str>,
    pub source: &'static str,
}

const fn gpu(
    name: &'static str,
    vcpus: u32,
    memory: &'static str,
    device: (&'static str, u32, &'static str),
    nic: Option<(&'static str, u32)>,
    source: &'static str,
) -> Instance {
    Instance {
        name,
        vcpus,
        sockets: 2,
        memory,
        device: Some(device),
        missing: None,
        nic,
        network_note: None,
        base: None,
        source,
    }
}

const fn lacking(
    name: &'static str,
    vcpus: u32,
    memory: &'static str,
    missing: &'static str,
    source: &'static str,
) -> Instance {
    Instance {
        name,
        vcpus,
        sockets: if vcpus >= 64 { 2 } else { 1 },
        memory,
        device: None,
        missing: Some(missing),
        nic: None,
        network_note: None,
        base: None,
        source,
    }
}

const fn catalog(name: &'static str, base: &'static str, source: &'static str) -> Instance {
    Instance {
        name,
        vcpus: 0,
        sockets: 0,
        memory: "",
        device: None,
        missing: None,
        nic: None,
        network_note: None,
        base: Some(base),
        source,
    }
}

const AWS_P4: &str = "https://aws.amazon.com/ec2/instance-types/p4/";
const AWS_P5: &str = "https://aws.amazon.com/ec2/instance-types/p5/";
const AWS_G5: &str = "https://aws.amazon.com/ec2/instance-types/g5/";
const AWS_G6: &str = "https://aws.amazon.com/ec2/instance-types/g6/";
const AWS_TRN1: &str = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trn1-arch.html";
const AWS_INF2: &str = "https://aws.amazon.com/ec2/instance-types/inf2/";
const GCP_A2: &str =
    "https://cloud.google.com/compute/docs/gpus#a100-gpus (A2 Standard / A2 Ultra)";
const GCP_A3: &str = "https://cloud.google.com/compute/docs/accelerator-optimized-machines#a3-vms";
const GCP_G2: &str = "https://cloud.google.com/compute/docs/accelerator-optimized-machines#g2-vms";
const GCP_TPU: &str =
    "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus (TPU machine types)";
const AZ_ND: &str =
    "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ (ND-series)";

/// Accelerated machines by their provider's name (AWS `InstanceType`, GCP `machineType`, Azure
/// `vmSize`, GKE `node.kubernetes.io/instance-type`).
pub static INSTANCES: &[Instance] = &[
    // AWS P4 / P5 (8-GPU HGX boards, NVSwitch; EFA devices of 100 Gb/s: 4 on p4d/p4de, 32 on P5).
    lacking(
        "p4d.24xlarge",
        96,
        "1152 GiB",
        "8 x NVIDIA A100 40GB",
        AWS_P4,
    ),
    gpu(
        "p4de.24xlarge",
        96,
        "1152 GiB",
        ("A100_80GB", 8, "switch"),
        Some(("efa_v2", 4)),
        AWS_P4,
    ),
    gpu(
        "p5.48xlarge",
        192,
        "2048 GiB",
        ("H100_SXM", 8, "switch"),
        Some(("efa_v2", 32)),
        AWS_P5,
    ),
    gpu(
        "p5e.48xlarge",
        192,
        "2048 GiB",
        ("H200", 8, "switch"),
        Some(("efa_v2", 32)),
        AWS_P5,
    ),
    // p5en: 16 EFAv3 of 200 Gb/s; modelled as 32 x 100 Gb/s so the 3,200 Gb/s aggregate is right.
    gpu(
        "p5en.48xlarge",
        192,
        "2048 GiB",
        ("H200", 8, "switch"),
        Some(("efa_v2", 32)),
        AWS_P5,
    ),
    // AWS G5 (NVIDIA A10G: not in the catalog).
    lacking("g5.xlarge", 4, "16 GiB", "1 x NVIDIA A10G", AWS_G5),
    lacking("g5.2xlarge", 8, "32 GiB", "1 x NVIDIA A10G", AWS_G5),
    lacking("g5.4xlarge", 16, "64 GiB", "1 x NVIDIA A10G", AWS_G5),
    lacking("g5.8xlarge", 32, "128 GiB", "1 x NVIDIA A10G", AWS_G5),
    lacking("g5.12xlarge", 48, "192 GiB", "4 x NVIDIA A10G", AWS_G5),
    lacking("g5.16xlarge", 64, "256 GiB", "1 x NVIDIA A10G", AWS_G5),
    lacking("g5.24xlarge", 96, "384 GiB", "4 x NVIDIA A10G", AWS_G5),
    lacking("g5.48xlarge", 192, "768 GiB", "8 x NVIDIA A10G", AWS_G5),
    // AWS G6 (NVIDIA L4, PCIe only).
    gpu("g6.xlarge", 4, "16 GiB", ("L4", 1, "none"), None, AWS_G6),
    gpu("g6.2xlarge", 8, "32 GiB", ("L4", 1, "none"), None, AWS_G6),
    gpu("g6.4xlarge", 16, "64 GiB", ("L4", 1, "none"), None, AWS_G6),
    gpu("g6.8xlarge", 32, "128 GiB", ("L4", 1, "none"), None, AWS_G6),
    gpu(
        "g6.12xlarge",
        48,
        "192 GiB",
        ("L4", 4, "none"),
        None,
        AWS_G6,
    ),
    gpu(
        "g6.16xlarge",
        64,
        "256 GiB",
        ("L4", 1, "none"),
        None,
        AWS_G6,
    ),
    gpu(
        "g6.24xlarge",
        96,
        "384 GiB",
        ("L4", 4, "none"),
        None,
        AWS_G6,
    ),
    catalog("g6.48xlarge", "g6_l4", AWS_G6),
    // AWS Trainium / Inferentia (one device = one chip; NeuronLink torus / ring).
    gpu(
        "trn1.32xlarge",
        128,
        "512 GiB",
        ("Trainium1", 16, "torus"),
        Some(("efa_v2", 8)),
        AWS_TRN1,
    ),
    gpu(
        "trn1n.32xlarge",
        128,
        "512 GiB",
        ("Trainium1", 16, "torus"),
        Some(("efa_v2", 16)),
        AWS_TRN1,
    ),
    catalog(
        "trn2.48xlarge",
        "trn2_48xlarge",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trn2-arch.html",
    ),
    gpu(
        "inf2.xlarge",
        4,
        "16 GiB",
        ("Inferentia2", 1, "none"),
        None,
        AWS_INF2,
    ),
    gpu(
        "inf2.8xlarge",
        32,
        "128 GiB",
        ("Inferentia2", 1, "none"),
        None,
        AWS_INF2,
    ),
    gpu(
        "inf2.24xlarge",
        96,
        "384 GiB",
        ("Inferentia2", 6, "ring"),
        None,
        AWS_INF2,
    ),
    gpu(
        "inf2.48xlarge",
        192,
        "768 GiB",
        ("Inferentia2", 12, "ring"),
        None,
        AWS_INF2,
    ),
    // GCP A2 (A100 40GB: not in the catalog) and A2 Ultra (A100 80GB).
    lacking("a2-highgpu-1g", 12, "85 GB", "1 x NVIDIA A100 40GB", GCP_A2),
    lacking(
        "a2-highgpu-2g",
        24,
        "170 GB",
        "2 x NVIDIA A100 40GB",
        GCP_A2,
    ),
    lacking(
        "a2-highgpu-4g",
        48,
        "340 GB",
        "4 x NVIDIA A100 40GB",
        GCP_A2,
    ),
    lacking(
        "a2-highgpu-8g",
        96,
        "680 GB",
        "8 x NVIDIA A100 40GB",
        GCP_A2,
    ),
    lacking(
        "a2-megagpu-16g",
        96,
        "1360 GB",
        "16 x NVIDIA A100 40GB",
        GCP_A2,
    ),
    gpu(
        "a2-ultragpu-1g",
        12,
        "170 GB",
        ("A100_80GB", 1, "none"),
        None,
        GCP_A2,
    ),
    gpu(
        "a2-ultragpu-2g",
        24,
        "340 GB",
        ("A100_80GB", 2, "switch"),
        None,
        GCP_A2,
    ),
    gpu(
        "a2-ultragpu-4g",
        48,
        "680 GB",
        ("A100_80GB", 4, "switch"),
        None,
        GCP_A2,
    ),
    gpu(
        "a2-ultragpu-8g",
        96,
        "1360 GB",
        ("A100_80GB", 8, "switch"),
        Some(("eth_100g", 1)),
        GCP_A2,
    ),
    // GCP A3: High and Mega use GPUDirect-TCPX(O) NICs, which no catalog NIC models; Ultra has
    // eight 400 Gb/s RoCE ConnectX-7 NICs.
    Instance {
        network_note: Some("4 x 200 Gbps GPUDirect-TCPX NICs"),
        ..gpu(
            "a3-highgpu-8g",
            208,
            "1872 GB",
            ("H100_SXM", 8, "switch"),
            None,
            GCP_A3,
        )
    },
    Instance {
        network_note: Some("8 x 200 Gbps GPUDirect-TCPXO NICs"),
        ..gpu(
            "a3-megagpu-8g",
            208,
            "1872 GB",
            ("H100_SXM", 8, "switch"),
            None,
            GCP_A3,
        )
    },
    gpu(
        "a3-ultragpu-8g",
        224,
        "2952 GB",
        ("H200", 8, "switch"),
        Some(("roce_400g", 8)),
        GCP_A3,
    ),
    // GCP G2 (NVIDIA L4).
    gpu("g2-standard-4", 4, "16 GB", ("L4", 1, "none"), None, GCP_G2),
    gpu("g2-standard-8", 8, "32 GB", ("L4", 1, "none"), None, GCP_G2),
    gpu(
        "g2-standard-12",
        12,
        "48 GB",
        ("L4", 1, "none"),
        None,
        GCP_G2,
    ),
    gpu(
        "g2-standard-16",
        16,
        "64 GB",
        ("L4", 1, "none"),
        None,
        GCP_G2,
    ),
    gpu(
        "g2-standard-24",
        24,
        "96 GB",
        ("L4", 2, "none"),
        None,
        GCP_G2,
    ),
    gpu(
        "g2-standard-32",
        32,
        "128 GB",
        ("L4", 1, "none"),
        None,
        GCP_G2,
    ),
    gpu(
        "g2-standard-48",
        48,
        "192 GB",
        ("L4", 4, "none"),
        None,
        GCP_G2,
    ),
    gpu(
        "g2-standard-96",
        96,
        "384 GB",
        ("L4", 8, "none"),
        None,
        GCP_G2,
    ),
    // GCP TPU VMs (GKE machine types).
    catalog("ct4p-hightpu-4t", "tpu_v4_host", GCP_TPU),
    Instance {
        sockets: 1,
        ..gpu(
            "ct5lp-hightpu-1t",
            24,
            "48 GB",
            ("TPU_v5e", 1, "torus"),
            None,
            GCP_TPU,
        )
    },
    Instance {
        sockets: 1,
        ..gpu(
            "ct5lp-hightpu-4t",
            112,
            "192 GB",
            ("TPU_v5e", 4, "torus"),
            None,
            GCP_TPU,
        )
    },
    catalog("ct5lp-hightpu-8t", "tpu_v5e_host", GCP_TPU),
    catalog("ct5p-hightpu-4t", "tpu_v5p_host", GCP_TPU),
    lacking(
        "ct6e-standard-4t",
        180,
        "720 GB",
        "4 x Google TPU v6e (Trillium)",
        GCP_TPU,
    ),
    lacking(
        "ct6e-standard-8t",
        180,
        "1440 GB",
        "8 x Google TPU v6e (Trillium)",
        GCP_TPU,
    ),
    // Azure ND-series (8 GPUs on NVSwitch or Infinity Fabric, one InfiniBand NIC per GPU).
    lacking(
        "Standard_ND96asr_v4",
        96,
        "900 GiB",
        "8 x NVIDIA A100 40GB",
        AZ_ND,
    ),
    gpu(
        "Standard_ND96amsr_A100_v4",
        96,
        "1900 GiB",
        ("A100_80GB", 8, "switch"),
        Some(("ib_hdr_200g", 8)),
        AZ_ND,
    ),
    gpu(
        "Standard_ND96isr_H100_v5",
        96,
        "1900 GiB",
        ("H100_SXM", 8, "switch"),
        Some(("ib_ndr_400g", 8)),
        AZ_ND,
    ),
    gpu(
        "Standard_ND96isr_H200_v5",
        96,
        "1850 GiB",
        ("H200", 8, "switch"),
        Some(("ib_ndr_400g", 8)),
        AZ_ND,
    ),
    gpu(
        "Standard_ND96isr_MI300X_v5",
        96,
        "1850 GiB",
        ("MI300X", 8, "mesh"),
        Some(("ib_ndr_400g", 8)),
        AZ_ND,
    ),
];

/// A general-purpose CPU machine by its family's rule: (vCPUs, memory in the language).
/// AWS `m5.large` (2 vCPUs; `xlarge` 4, `Nxlarge` 4N) with 4 GiB per vCPU in the m families,
/// 2 in c, 8 in r (https://aws.amazon.com/ec2/instance-types/); GCP `n2-standard-N` (N vCPUs;
/// 4 GB each in standard, 8 in highmem, 1 in highcpu, 3.75 in n1-standard;
/// https://cloud.google.com/compute/docs/general-purpose-machines); Azure `Standard_D16s_v5`
/// (4 GiB per vCPU in D, 8 in E, 2 in F; https://learn.microsoft.com/azure/virtual-machines/sizes/).
pub fn cpu_machine(name: &str) -> Option<(u32, String)> {
    if let Some((family, size)) = name.split_once('.') {
        let mut ch = family.chars();
        let (kind, gen_digit) = (ch.next()?, ch.next()?);
        if !gen_digit.is_ascii_digit() || !family.chars().all(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        let per = match kind {
            'm' => 4,
            'c' => 2,
            'r' => 8,
            _ => return None,
        };
        let v = match size {
            "large" => 2,
            "xlarge" => 4,
            s => {
                4 * s
                    .strip_suffix("xlarge")?
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (2..=48).contains(n))?
            }
        };
        return Some((v, format!("{} GiB", v * per)));
    }
    if let Some(rest) = name.strip_prefix("Standard_") {
        let letter = rest.chars().next()?;
        let digits: String = rest[1..].chars().take_while(char::is_ascii_digit).collect();
        let v: u32 = digits.parse().ok().filter(|n| (1..=416).contains(n))?;
        let per = match letter {
            'D' => 4,
            'E' => 8,
            'F' => 2,
            _ => return None,
        };
        return Some((v, format!("{} GiB", v * per)));
    }
    let mut parts = name.split('-');
    let (family, class, n) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some()
        || ![
            "n1", "n2", "n2d", "n4", "e2", "c2", "c2d", "c3", "c3d", "c4",
        ]
        .contains(&family)
    {
        return None;
    }
    let v: u32 = n.parse().ok().filter(|n| (1..=416).contains(n))?;
    let per_tenths = match (family, class) {
        ("n1", "standard") => 375,
        (_, "standard") => 400,
        (_, "highmem") => 800,
        (_, "highcpu") => 100,
        _ => return None,
    };
    let mb = u64::from(v) * per_tenths * 10;
    Some((v, format!("{mb} MB")))
}

/// The catalog accelerator for a Ray `accelerator_type` (python/ray/util/accelerators/
/// accelerators.py names them), a GKE node label (`cloud.google.com/gke-accelerator`,
/// `cloud.google.com/gke-tpu-accelerator`; https://cloud.google.com/kubernetes-engine/docs/how-to/gpus,
/// .../plan-tpus) or a GCE `guestAccelerators` type. `Ok(name)`: mapped; `Err(words)`: known
/// hardware the catalog lacks; `None`: unknown.
pub fn accelerator(name: &str) -> Option<Result<&'static str, &'static str>> {
    Some(match name {
        "H100" | "nvidia-h100-80gb" | "nvidia-h100-mega-80gb" => Ok("H100_SXM"),
        "H200" | "nvidia-h200-141gb" => Ok("H200"),
        "B200" | "nvidia-b200" => Ok("B200"),
        "GB200" | "nvidia-gb200" => Ok("GB200"),
        // Ray registers "A100" for both sizes; "A100-80G" is its explicit label for the large one.
        "A100-80G" | "nvidia-a100-80gb" => Ok("A100_80GB"),
        "L4" | "nvidia-l4" => Ok("L4"),
        "AMD-Instinct-MI300X-OAM" => Ok("MI300X"),
        "AMD-Instinct-MI250X" => Ok("MI250X"),
        "TPU-V4" | "tpu-v4-podslice" => Ok("TPU_v4"),
        "TPU-V5LITEPOD" | "tpu-v5-lite-podslice" | "tpu-v5-lite-device" => Ok("TPU_v5e"),
        "TPU-V5P" | "tpu-v5p-slice" => Ok("TPU_v5p"),
        "A100-40G" | "nvidia-tesla-a100" => Err("NVIDIA A100 40GB"),
        "A10G" => Err("NVIDIA A10G"),
        "T4" | "nvidia-tesla-t4" => Err("NVIDIA T4"),
        "V100" | "nvidia-tesla-v100" => Err("NVIDIA V100"),
        "P100" | "nvidia-tesla-p100" => Err("NVIDIA P100"),
        "K80" | "nvidia-tesla-k80" => Err("NVIDIA K80"),
        "L40S" => Err("NVIDIA L40S"),
        "H20" => Err("NVIDIA H20"),
        "TPU-V6E" | "tpu-v6e-slice" => Err("Google TPU v6e (Trillium)"),
        "TPU-V2" | "TPU-V3" => Err("Google TPU v2/v3"),
        "Intel-GAUDI" => Err(
            "Intel Gaudi (the catalog has Gaudi2 and Gaudi3, and Ray's name does not say which)",
        ),
        _ => return None,
    })
}

/// `A100`: Ray's name for both A100 sizes; the catalog has only the 80 GB one.
pub const AMBIGUOUS_A100: &str = "A100";

/// How a node's devices are linked when only the accelerator is known (no instance type):
/// what the catalog's nodes of that accelerator use.
pub fn default_link(accel: &str, count: u64) -> &'static str {
    if count <= 1 {
        return "none";
    }
    match accel {
        "H100_SXM" | "H200" | "B200" | "GB200" | "A100_80GB" => "switch",
        "MI300X" | "MI250X" | "Gaudi2" | "Gaudi3" => "mesh",
        "TPU_v4" | "TPU_v5e" | "TPU_v5p" | "Trainium1" | "Trainium2" => "torus",
        "Inferentia2" => "ring",
        _ => "none",
    }
}

/// The Ray resource a catalog accelerator registers under (its `ray_resource`).
pub fn ray_resource(accel: &str) -> &'static str {
    match accel {
        "TPU_v4" | "TPU_v5e" | "TPU_v5p" => "TPU",
        "Trainium1" | "Trainium2" | "Inferentia2" => "neuron_cores",
        "Gaudi2" | "Gaudi3" => "HPU",
        _ => "GPU",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_in_the_catalog() {
        let l = crate::spec::load_str("<catalog>", "");
        let s = l.spec.expect("catalog loads");
        for i in INSTANCES {
            if let Some((a, n, link)) = i.device {
                assert!(s.accelerators.contains_key(a), "{}: {a}", i.name);
                assert!(n >= 1 && ["switch", "mesh", "ring", "torus", "none"].contains(&link));
                assert_eq!(ray_resource(a), s.accelerators[a].ray_resource, "{a}");
            }
            if let Some((nic, _)) = i.nic {
                assert!(s.nics.contains_key(nic), "{}: {nic}", i.name);
            }
            if let Some(b) = i.base {
                assert!(s.node_types.contains_key(b), "{}: {b}", i.name);
            }
        }
        for ray in [
            "H100",
            "H200",
            "B200",
            "A100-80G",
            "L4",
            "AMD-Instinct-MI300X-OAM",
            "TPU-V4",
            "TPU-V5LITEPOD",
            "TPU-V5P",
        ] {
            let a = accelerator(ray).unwrap().unwrap();
            assert!(s.accelerators.contains_key(a), "{ray}");
        }
    }

    #[test]
    fn cpu_families() {
        assert_eq!(cpu_machine("m5.large"), Some((2, "8 GiB".into())));
        assert_eq!(cpu_machine("m6i.8xlarge"), Some((32, "128 GiB".into())));
        assert_eq!(cpu_machine("c5.9xlarge"), Some((36, "72 GiB".into())));
        assert_eq!(cpu_machine("r6i.xlarge"), Some((4, "32 GiB".into())));
        assert_eq!(cpu_machine("n2-standard-8"), Some((8, "32000 MB".into())));
        assert_eq!(cpu_machine("n1-standard-4"), Some((4, "15000 MB".into())));
        assert_eq!(cpu_machine("Standard_D16s_v5"), Some((16, "64 GiB".into())));
        assert_eq!(cpu_machine("p4d.24xlarge"), None);
        assert_eq!(cpu_machine("x1.metal"), None);
    }
}
