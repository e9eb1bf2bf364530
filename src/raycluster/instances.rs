//! Cloud machines with accelerators, as their providers publish them: vCPUs, memory, the number
//! and model of accelerators, and the network. One row per instance type, each naming the page
//! it comes from. An accelerator the catalog has is named by its catalog name; one it lacks by
//! Ray's accelerator type (python/ray/util/accelerators/accelerators.py), kept on the node as a
//! custom resource by the import rather than dropped.

/// An accelerator part: in the catalog, or not (Ray's name for it and what it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Catalog(&'static str),
    Missing {
        ray: &'static str,
        words: &'static str,
    },
}

impl Part {
    /// The part in words: the catalog's name, or what the part is.
    pub fn name(self) -> &'static str {
        match self {
            Part::Catalog(a) => a,
            Part::Missing { words, .. } => words,
        }
    }
}

/// A machine's network to other machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Net {
    /// Catalog NICs: name and count (EFA, InfiniBand, RoCE).
    Nics(&'static str, u32),
    /// Plain Ethernet of this many Mbit/s per VM (the provider's "up to" figure where it gives
    /// one: the burst a VM may reach, which the import models as the NIC's line rate).
    Mbps(u32),
    /// Ethernet NICs without RDMA: count and Mbit/s each (GCP A3's GPUDirect-TCPX(O) NICs).
    EthNics(u32, u32),
    /// The provider publishes no figure (its words).
    Unpublished(&'static str),
}

pub struct Instance {
    pub name: &'static str,
    pub vcpus: u32,
    /// Host memory in the scenario language.
    pub memory: &'static str,
    /// Accelerator, count, scale-up link.
    pub accel: Option<(Part, u32, &'static str)>,
    pub net: Net,
    /// A catalog node type that is this machine (written `from` it).
    pub base: Option<&'static str>,
    pub source: &'static str,
}

const fn miss(ray: &'static str, words: &'static str) -> Part {
    Part::Missing { ray, words }
}

const K80: Part = miss("K80", "NVIDIA K80");
const V100: Part = Part::Catalog("V100");
const V100_32: Part = miss("V100", "NVIDIA V100 32GB");
const T4: Part = Part::Catalog("T4");
const A10G: Part = Part::Catalog("A10G");
const L40S: Part = Part::Catalog("L40S");
const A100_40: Part = Part::Catalog("A100_40GB");
const H100_NVL: Part = miss("H100", "NVIDIA H100 NVL 94GB");
const TPU_V6E: Part = Part::Catalog("TPU_v6e");
const A100_80: Part = Part::Catalog("A100_80GB");
const H100: Part = Part::Catalog("H100_SXM");
const H200: Part = Part::Catalog("H200");
const L4: Part = Part::Catalog("L4");
const TPU_V5E: Part = Part::Catalog("TPU_v5e");
const TRN1: Part = Part::Catalog("Trainium1");
const INF2: Part = Part::Catalog("Inferentia2");

const fn up(gbps: u32) -> Net {
    Net::Mbps(gbps * 1000)
}
const fn efa(n: u32) -> Net {
    Net::Nics("efa_v2", n)
}

/// A row: name, vCPUs, memory, accelerator and count and link, network, source.
const fn r(
    name: &'static str,
    vcpus: u32,
    memory: &'static str,
    accel: (Part, u32, &'static str),
    net: Net,
    source: &'static str,
) -> Instance {
    Instance {
        name,
        vcpus,
        memory,
        accel: Some(accel),
        net,
        base: None,
        source,
    }
}

/// A machine the catalog has as a node type.
const fn node(name: &'static str, base: &'static str, source: &'static str) -> Instance {
    Instance {
        name,
        vcpus: 0,
        memory: "",
        accel: None,
        net: Net::Unpublished(""),
        base: Some(base),
        source,
    }
}

// AWS: the instance-type pages (GPUs, vCPUs, memory, network bandwidth per size) and the EC2
// accelerated-computing specifications, https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html.
const P2: &str = "https://aws.amazon.com/ec2/instance-types/p2/";
const P3: &str = "https://aws.amazon.com/ec2/instance-types/p3/";
const P4: &str = "https://aws.amazon.com/ec2/instance-types/p4/";
const P5: &str = "https://aws.amazon.com/ec2/instance-types/p5/";
const G4: &str = "https://aws.amazon.com/ec2/instance-types/g4/";
const G5: &str = "https://aws.amazon.com/ec2/instance-types/g5/";
const G6: &str = "https://aws.amazon.com/ec2/instance-types/g6/";
const G6E: &str = "https://aws.amazon.com/ec2/instance-types/g6e/";
const TRN1_SRC: &str = "https://aws.amazon.com/ec2/instance-types/trn1/";
const INF2_SRC: &str = "https://aws.amazon.com/ec2/instance-types/inf2/";
// GCP: https://cloud.google.com/compute/docs/accelerator-optimized-machines (A2, A3, G2: GPUs,
// vCPUs, memory, maximum network bandwidth) and .../gpus; TPU hosts:
// https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus.
const GCP_A2: &str = "https://cloud.google.com/compute/docs/accelerator-optimized-machines#a2-vms";
const GCP_A3: &str = "https://cloud.google.com/compute/docs/accelerator-optimized-machines#a3-vms";
const GCP_G2: &str = "https://cloud.google.com/compute/docs/accelerator-optimized-machines#g2-vms";
const GCP_TPU: &str = "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus";
// Azure: the size pages under https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/
// (vCPUs, memory, GPUs, expected network bandwidth; InfiniBand per GPU on ND).
const AZ_NCV3: &str = "https://learn.microsoft.com/azure/virtual-machines/ncv3-series";
const AZ_NCT4: &str = "https://learn.microsoft.com/azure/virtual-machines/nct4-v3-series";
const AZ_NCA100: &str = "https://learn.microsoft.com/azure/virtual-machines/nc-a100-v4-series";
const AZ_NCH100: &str = "https://learn.microsoft.com/azure/virtual-machines/ncads-h100-v5";
const AZ_NDV2: &str = "https://learn.microsoft.com/azure/virtual-machines/ndv2-series";
const AZ_NDA100: &str = "https://learn.microsoft.com/azure/virtual-machines/nda100-v4-series";
const AZ_NDA100M: &str = "https://learn.microsoft.com/azure/virtual-machines/ndm-a100-v4-series";
const AZ_NDH100: &str = "https://learn.microsoft.com/azure/virtual-machines/nd-h100-v5-series";
const AZ_NDH200: &str =
    "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-h200-v5-series";
const AZ_NDMI300X: &str =
    "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ndmi300xv5-series";

const NONE: &str = "none";
const SW: &str = "switch";
const MESH: &str = "mesh";
const AWS_HIGH: Net = Net::Unpublished("AWS gives p2.xlarge's network only as \"High\"");
const AZ_NCV3_NET: Net = Net::Unpublished("Azure publishes no network bandwidth for NCv3 sizes");

/// Accelerated machines by their provider's name (AWS `InstanceType`, GCP `machineType`, Azure
/// `vmSize`, a Kubernetes node's `node.kubernetes.io/instance-type`).
#[rustfmt::skip]
pub static INSTANCES: &[Instance] = &[
    // AWS P2 (NVIDIA K80: AWS counts each of a K80 board's two GPUs).
    r("p2.xlarge", 4, "61 GiB", (K80, 1, NONE), AWS_HIGH, P2),
    r("p2.8xlarge", 32, "488 GiB", (K80, 8, NONE), up(10), P2),
    r("p2.16xlarge", 64, "732 GiB", (K80, 16, NONE), up(25), P2),
    // AWS P3 (V100 16GB on NVLink; p3dn: V100 32GB and a 100 Gb/s EFA).
    r("p3.2xlarge", 8, "61 GiB", (V100, 1, NONE), up(10), P3),
    r("p3.8xlarge", 32, "244 GiB", (V100, 4, MESH), up(10), P3),
    r("p3.16xlarge", 64, "488 GiB", (V100, 8, MESH), up(25), P3),
    r("p3dn.24xlarge", 96, "768 GiB", (V100_32, 8, MESH), efa(1), P3),
    // AWS P4 / P5 (8-GPU HGX boards; EFA devices of 100 Gb/s: 4 on p4d/p4de, 32 on P5).
    r("p4d.24xlarge", 96, "1152 GiB", (A100_40, 8, SW), efa(4), P4),
    r("p4de.24xlarge", 96, "1152 GiB", (A100_80, 8, SW), efa(4), P4),
    r("p5.4xlarge", 16, "256 GiB", (H100, 1, NONE), efa(1), P5),
    r("p5.48xlarge", 192, "2048 GiB", (H100, 8, SW), efa(32), P5),
    r("p5e.48xlarge", 192, "2048 GiB", (H200, 8, SW), efa(32), P5),
    // p5en: 16 EFAv3 of 200 Gb/s, modelled as 32 x 100 Gb/s (the same 3,200 Gb/s).
    r("p5en.48xlarge", 192, "2048 GiB", (H200, 8, SW), efa(32), P5),
    // AWS G4dn (NVIDIA T4).
    r("g4dn.xlarge", 4, "16 GiB", (T4, 1, NONE), up(25), G4),
    r("g4dn.2xlarge", 8, "32 GiB", (T4, 1, NONE), up(25), G4),
    r("g4dn.4xlarge", 16, "64 GiB", (T4, 1, NONE), up(25), G4),
    r("g4dn.8xlarge", 32, "128 GiB", (T4, 1, NONE), up(50), G4),
    r("g4dn.16xlarge", 64, "256 GiB", (T4, 1, NONE), up(50), G4),
    r("g4dn.12xlarge", 48, "192 GiB", (T4, 4, NONE), up(50), G4),
    r("g4dn.metal", 96, "384 GiB", (T4, 8, NONE), up(100), G4),
    // AWS G5 (NVIDIA A10G).
    r("g5.xlarge", 4, "16 GiB", (A10G, 1, NONE), up(10), G5),
    r("g5.2xlarge", 8, "32 GiB", (A10G, 1, NONE), up(10), G5),
    r("g5.4xlarge", 16, "64 GiB", (A10G, 1, NONE), up(25), G5),
    r("g5.8xlarge", 32, "128 GiB", (A10G, 1, NONE), up(25), G5),
    r("g5.16xlarge", 64, "256 GiB", (A10G, 1, NONE), up(25), G5),
    r("g5.12xlarge", 48, "192 GiB", (A10G, 4, NONE), up(40), G5),
    r("g5.24xlarge", 96, "384 GiB", (A10G, 4, NONE), up(50), G5),
    r("g5.48xlarge", 192, "768 GiB", (A10G, 8, NONE), up(100), G5),
    // AWS G6 (NVIDIA L4, PCIe only).
    r("g6.xlarge", 4, "16 GiB", (L4, 1, NONE), up(10), G6),
    r("g6.2xlarge", 8, "32 GiB", (L4, 1, NONE), up(10), G6),
    r("g6.4xlarge", 16, "64 GiB", (L4, 1, NONE), up(25), G6),
    r("g6.8xlarge", 32, "128 GiB", (L4, 1, NONE), up(25), G6),
    r("g6.16xlarge", 64, "256 GiB", (L4, 1, NONE), up(25), G6),
    r("g6.12xlarge", 48, "192 GiB", (L4, 4, NONE), up(40), G6),
    r("g6.24xlarge", 96, "384 GiB", (L4, 4, NONE), up(50), G6),
    node("g6.48xlarge", "g6_l4", G6),
    // AWS G6e (NVIDIA L40S).
    r("g6e.xlarge", 4, "32 GiB", (L40S, 1, NONE), up(20), G6E),
    r("g6e.2xlarge", 8, "64 GiB", (L40S, 1, NONE), up(20), G6E),
    r("g6e.4xlarge", 16, "128 GiB", (L40S, 1, NONE), up(20), G6E),
    r("g6e.8xlarge", 32, "256 GiB", (L40S, 1, NONE), up(25), G6E),
    r("g6e.16xlarge", 64, "512 GiB", (L40S, 1, NONE), up(35), G6E),
    r("g6e.12xlarge", 48, "384 GiB", (L40S, 4, NONE), up(100), G6E),
    r("g6e.24xlarge", 96, "768 GiB", (L40S, 4, NONE), up(200), G6E),
    r("g6e.48xlarge", 192, "1536 GiB", (L40S, 8, NONE), up(400), G6E),
    // AWS Trainium / Inferentia (one device = one chip; NeuronLink torus / ring).
    r("trn1.2xlarge", 8, "32 GiB", (TRN1, 1, NONE), up(12), TRN1_SRC),
    r("trn1.32xlarge", 128, "512 GiB", (TRN1, 16, "torus"), efa(8), TRN1_SRC),
    r("trn1n.32xlarge", 128, "512 GiB", (TRN1, 16, "torus"), efa(16), TRN1_SRC),
    node("trn2.48xlarge", "trn2_48xlarge", "https://aws.amazon.com/ec2/instance-types/trn2/"),
    r("inf2.xlarge", 4, "16 GiB", (INF2, 1, NONE), up(15), INF2_SRC),
    r("inf2.8xlarge", 32, "128 GiB", (INF2, 1, NONE), up(25), INF2_SRC),
    r("inf2.24xlarge", 96, "384 GiB", (INF2, 6, "ring"), up(50), INF2_SRC),
    r("inf2.48xlarge", 192, "768 GiB", (INF2, 12, "ring"), up(100), INF2_SRC),
    // GCP A2 Standard (A100 40GB) and A2 Ultra (A100 80GB).
    r("a2-highgpu-1g", 12, "85 GB", (A100_40, 1, NONE), up(24), GCP_A2),
    r("a2-highgpu-2g", 24, "170 GB", (A100_40, 2, SW), up(32), GCP_A2),
    r("a2-highgpu-4g", 48, "340 GB", (A100_40, 4, SW), up(50), GCP_A2),
    r("a2-highgpu-8g", 96, "680 GB", (A100_40, 8, SW), up(100), GCP_A2),
    r("a2-megagpu-16g", 96, "1360 GB", (A100_40, 16, SW), up(100), GCP_A2),
    r("a2-ultragpu-1g", 12, "170 GB", (A100_80, 1, NONE), up(24), GCP_A2),
    r("a2-ultragpu-2g", 24, "340 GB", (A100_80, 2, SW), up(32), GCP_A2),
    r("a2-ultragpu-4g", 48, "680 GB", (A100_80, 4, SW), up(50), GCP_A2),
    r("a2-ultragpu-8g", 96, "1360 GB", (A100_80, 8, SW), up(100), GCP_A2),
    // GCP A3: High 4 and Mega 8 GPUDirect-TCPX(O) NICs of 200 Gb/s (Ethernet, no RDMA);
    // Ultra 8 ConnectX-7 RoCE NICs of 400 Gb/s.
    r("a3-highgpu-8g", 208, "1872 GB", (H100, 8, SW), Net::EthNics(4, 200_000), GCP_A3),
    r("a3-megagpu-8g", 208, "1872 GB", (H100, 8, SW), Net::EthNics(8, 200_000), GCP_A3),
    r("a3-ultragpu-8g", 224, "2952 GB", (H200, 8, SW), Net::Nics("roce_400g", 8), GCP_A3),
    // GCP G2 (NVIDIA L4).
    r("g2-standard-4", 4, "16 GB", (L4, 1, NONE), up(10), GCP_G2),
    r("g2-standard-8", 8, "32 GB", (L4, 1, NONE), up(16), GCP_G2),
    r("g2-standard-12", 12, "48 GB", (L4, 1, NONE), up(16), GCP_G2),
    r("g2-standard-16", 16, "64 GB", (L4, 1, NONE), up(32), GCP_G2),
    r("g2-standard-24", 24, "96 GB", (L4, 2, NONE), up(32), GCP_G2),
    r("g2-standard-32", 32, "128 GB", (L4, 1, NONE), up(32), GCP_G2),
    r("g2-standard-48", 48, "192 GB", (L4, 4, NONE), up(50), GCP_G2),
    r("g2-standard-96", 96, "384 GB", (L4, 8, NONE), up(100), GCP_G2),
    // GCP TPU VM hosts (GKE machine types).
    node("ct4p-hightpu-4t", "tpu_v4_host", GCP_TPU),
    r("ct5lp-hightpu-1t", 24, "48 GB", (TPU_V5E, 1, "torus"), up(100), GCP_TPU),
    r("ct5lp-hightpu-4t", 112, "192 GB", (TPU_V5E, 4, "torus"), up(200), GCP_TPU),
    node("ct5lp-hightpu-8t", "tpu_v5e_host", GCP_TPU),
    node("ct5p-hightpu-4t", "tpu_v5p_host", GCP_TPU),
    r("ct6e-standard-1t", 44, "448 GB", (TPU_V6E, 1, NONE), up(200), GCP_TPU),
    r("ct6e-standard-4t", 180, "720 GB", (TPU_V6E, 4, "torus"), up(200), GCP_TPU),
    r("ct6e-standard-8t", 180, "1440 GB", (TPU_V6E, 8, "torus"), up(200), GCP_TPU),
    // Azure NC-series.
    r("Standard_NC6s_v3", 6, "112 GiB", (V100, 1, NONE), AZ_NCV3_NET, AZ_NCV3),
    r("Standard_NC12s_v3", 12, "224 GiB", (V100, 2, NONE), AZ_NCV3_NET, AZ_NCV3),
    r("Standard_NC24s_v3", 24, "448 GiB", (V100, 4, NONE), AZ_NCV3_NET, AZ_NCV3),
    r("Standard_NC24rs_v3", 24, "448 GiB", (V100, 4, NONE), AZ_NCV3_NET, AZ_NCV3),
    r("Standard_NC4as_T4_v3", 4, "28 GiB", (T4, 1, NONE), Net::Mbps(8000), AZ_NCT4),
    r("Standard_NC8as_T4_v3", 8, "56 GiB", (T4, 1, NONE), Net::Mbps(8000), AZ_NCT4),
    r("Standard_NC16as_T4_v3", 16, "110 GiB", (T4, 1, NONE), Net::Mbps(8000), AZ_NCT4),
    r("Standard_NC64as_T4_v3", 64, "440 GiB", (T4, 4, NONE), Net::Mbps(32000), AZ_NCT4),
    r("Standard_NC24ads_A100_v4", 24, "220 GiB", (A100_80, 1, NONE), up(20), AZ_NCA100),
    r("Standard_NC48ads_A100_v4", 48, "440 GiB", (A100_80, 2, NONE), up(40), AZ_NCA100),
    r("Standard_NC96ads_A100_v4", 96, "880 GiB", (A100_80, 4, NONE), up(80), AZ_NCA100),
    r("Standard_NC40ads_H100_v5", 40, "320 GiB", (H100_NVL, 1, NONE), up(40), AZ_NCH100),
    r("Standard_NC80adis_H100_v5", 80, "640 GiB", (H100_NVL, 2, NONE), up(80), AZ_NCH100),
    // Azure ND-series (8 GPUs; one InfiniBand NIC per GPU, NDv2 one 100 Gb/s EDR).
    r("Standard_ND40rs_v2", 40, "672 GiB", (V100_32, 8, MESH), Net::Unpublished("NDv2's one 100 Gb/s EDR InfiniBand NIC has no catalog NIC"), AZ_NDV2),
    r("Standard_ND96asr_v4", 96, "900 GiB", (A100_40, 8, SW), Net::Nics("ib_hdr_200g", 8), AZ_NDA100),
    r("Standard_ND96amsr_A100_v4", 96, "1900 GiB", (A100_80, 8, SW), Net::Nics("ib_hdr_200g", 8), AZ_NDA100M),
    r("Standard_ND96isr_H100_v5", 96, "1900 GiB", (H100, 8, SW), Net::Nics("ib_ndr_400g", 8), AZ_NDH100),
    r("Standard_ND96isr_H200_v5", 96, "1850 GiB", (H200, 8, SW), Net::Nics("ib_ndr_400g", 8), AZ_NDH200),
    r("Standard_ND96isr_MI300X_v5", 96, "1850 GiB", (Part::Catalog("MI300X"), 8, MESH), Net::Nics("ib_ndr_400g", 8), AZ_NDMI300X),
];

/// The machine of that name in [`INSTANCES`].
pub fn find(name: &str) -> Option<&'static Instance> {
    INSTANCES.iter().find(|i| i.name == name)
}

/// A Cloud TPU accelerator type (`v4-16`, `v5litepod-16`, `v5p-32`, `v6e-8`, `v2-8`) as a slice:
/// the GKE machine of each host, the chips in all, and the slice's topology where it spans more
/// than one host. The number is TensorCores for v2, v3, v4 and v5p (two per chip) and chips for
/// v5e and v6e; hosts hold 4 chips (v5e and v6e slices of 8 chips are one 8-chip host).
/// https://cloud.google.com/tpu/docs/v4, /v5e, /v5p, /v6e (accelerator types and topologies),
/// https://cloud.google.com/tpu/docs/system-architecture-tpu-vm (v2, v3).
pub fn tpu_slice(t: &str) -> Option<TpuSlice> {
    let (generation, n) = t.split_once('-')?;
    let n: u32 = n.parse().ok().filter(|n| *n >= 1 && *n <= 65_536)?;
    let (chips, per_host, host, part) = match generation {
        "v2" => (n / 2, 4, None, miss("TPU-V2", "Google TPU v2")),
        "v3" => (n / 2, 4, None, miss("TPU-V3", "Google TPU v3")),
        "v4" => (n / 2, 4, Some("ct4p-hightpu-4t"), Part::Catalog("TPU_v4")),
        "v5p" => (n / 2, 4, Some("ct5p-hightpu-4t"), Part::Catalog("TPU_v5p")),
        "v5litepod" | "v5e" => match n {
            1 => (1, 1, Some("ct5lp-hightpu-1t"), TPU_V5E),
            4 => (4, 4, Some("ct5lp-hightpu-4t"), TPU_V5E),
            8 => (8, 8, Some("ct5lp-hightpu-8t"), TPU_V5E),
            _ => (n, 4, Some("ct5lp-hightpu-4t"), TPU_V5E),
        },
        "v6e" => match n {
            1 => (1, 1, Some("ct6e-standard-1t"), TPU_V6E),
            4 => (4, 4, Some("ct6e-standard-4t"), TPU_V6E),
            8 => (8, 8, Some("ct6e-standard-8t"), TPU_V6E),
            _ => (n, 4, Some("ct6e-standard-4t"), TPU_V6E),
        },
        _ => return None,
    };
    if chips == 0 || chips % per_host != 0 {
        return None;
    }
    let hosts = chips / per_host;
    // The slice's shape: 3-D for v4 and v5p (2x2x1 a host, doubling z, then y, then x), 2-D
    // for v5e and v6e (2x2 a host, doubling the smaller side).
    let topology = (hosts > 1 && host.is_some()).then(|| {
        let three_d = matches!(generation, "v4" | "v5p");
        let mut d = if three_d {
            vec![2u32, 2, 1]
        } else {
            vec![2u32, 2]
        };
        let mut left = chips / 4;
        while left > 1 {
            let i = (0..d.len()).rev().min_by_key(|&i| d[i]).unwrap_or(0);
            d[i] *= 2;
            left /= 2;
        }
        d.sort_unstable();
        d.iter().map(u32::to_string).collect::<Vec<_>>().join("x")
    });
    Some(TpuSlice {
        chips,
        hosts,
        per_host,
        host,
        part,
        topology,
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TpuSlice {
    pub chips: u32,
    pub hosts: u32,
    pub per_host: u32,
    /// The GKE machine type of a host, where the table has it.
    pub host: Option<&'static str>,
    pub part: Part,
    pub topology: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpu_slices() {
        let s = tpu_slice("v4-16").unwrap();
        assert_eq!(
            (s.chips, s.hosts, s.topology.as_deref()),
            (8, 2, Some("2x2x2"))
        );
        let s = tpu_slice("v4-8").unwrap();
        assert_eq!((s.chips, s.hosts, s.topology), (4, 1, None));
        let s = tpu_slice("v5litepod-16").unwrap();
        assert_eq!(
            (s.chips, s.hosts, s.topology.as_deref()),
            (16, 4, Some("4x4"))
        );
        let s = tpu_slice("v5p-128").unwrap();
        assert_eq!(
            (s.chips, s.hosts, s.topology.as_deref()),
            (64, 16, Some("4x4x4"))
        );
        assert_eq!(
            tpu_slice("v2-8").unwrap().part,
            miss("TPU-V2", "Google TPU v2")
        );
        assert_eq!(tpu_slice("v6e-8").unwrap().hosts, 1);
        assert_eq!(
            tpu_slice("v6e-256").unwrap().topology.as_deref(),
            Some("16x16")
        );
        assert_eq!(tpu_slice("v4-3"), None);
        assert_eq!(tpu_slice("x9-8"), None);
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = INSTANCES.iter().map(|i| i.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len());
    }
}
