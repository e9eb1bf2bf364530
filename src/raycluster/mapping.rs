//! What a Ray accelerator name or a general-purpose CPU machine is in the built-in catalog
//! (`src/catalog/*.orr`); accelerated machines are in [`super::instances`]. Every entry names
//! its source; only catalog accelerators, NICs and nodes are named (a unit test loads the
//! catalog and checks each), and hardware the catalog lacks (A100 40GB, A10G, T4, TPU v6e, ...)
//! is said so, with what it is, rather than approximated.

#[cfg(test)]
use super::instances::INSTANCES;
use super::instances::{Net, Part};

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

/// A general-purpose machine's network as its provider publishes it (per VM; "up to" figures
/// taken as the line rate):
/// - AWS (https://aws.amazon.com/ec2/instance-types/, "Network Bandwidth (Gbps)" per size):
///   m5/r5 (and m5d, r5d) up to 10 at 4xlarge and below, 8xlarge 10, 12xlarge 12, 16xlarge 20,
///   24xlarge and metal 25; c5 up to 10 at 4xlarge and below, 9xlarge and 12xlarge 12, 18xlarge
///   and 24xlarge 25; m6i/r6i/c6i up to 12.5 at 8xlarge and below, 12xlarge 18.75, 16xlarge 25,
///   24xlarge 37.5, 32xlarge 50; m4.10xlarge 10, m4.16xlarge 25 (smaller m4 sizes are only
///   "Moderate" or "High").
/// - GCP (https://cloud.google.com/compute/docs/network-bandwidth): 2 Gbps per vCPU, at most
///   16 Gbps on E2 and 32 Gbps on the other general-purpose families.
/// - Azure (the Dv3/Dsv3 and Dv5/Dsv5 size tables, "Max network bandwidth (Mbps)"): v3 500 Mbps
///   per vCPU up to 30,000; v5 12,500 up to 16 vCPUs, then 500 per vCPU up to 35,000.
pub fn cpu_network(name: &str, vcpus: u32) -> Net {
    const NOT: Net = Net::Unpublished("its family's network is not in the import's table");
    if let Some((family, size)) = name.split_once('.') {
        let x: u32 = match size {
            "large" | "xlarge" => 1,
            "metal" => 1000,
            s => match s.strip_suffix("xlarge").and_then(|n| n.parse().ok()) {
                Some(n) => n,
                None => return NOT,
            },
        };
        let mbps = match family {
            "m5" | "r5" | "m5d" | "r5d" => match x {
                ..=4 => 10_000,
                8 => 10_000,
                12 => 12_000,
                16 => 20_000,
                _ => 25_000,
            },
            "c5" | "c5d" => match x {
                ..=4 => 10_000,
                9 | 12 => 12_000,
                _ => 25_000,
            },
            "m6i" | "r6i" | "c6i" => match x {
                ..=8 => 12_500,
                12 => 18_750,
                16 => 25_000,
                24 => 37_500,
                32 => 50_000,
                _ => return NOT,
            },
            "m4" => match x {
                10 => 10_000,
                16 => 25_000,
                _ => {
                    return Net::Unpublished(
                        "AWS gives m4's network below 10xlarge only as \"Moderate\" or \"High\"",
                    );
                }
            },
            _ => return NOT,
        };
        return Net::Mbps(mbps);
    }
    if let Some(rest) = name.strip_prefix("Standard_") {
        let v = vcpus;
        return if rest.ends_with("_v3") && rest.starts_with('D') {
            Net::Mbps((500 * v).min(30_000))
        } else if rest.ends_with("_v5") && rest.starts_with('D') {
            Net::Mbps(if v <= 16 {
                12_500
            } else {
                (500 * v).min(35_000)
            })
        } else {
            NOT
        };
    }
    let cap = if name.starts_with("e2-") { 16 } else { 32 };
    Net::Mbps((2 * vcpus).min(cap) * 1000)
}

/// The catalog accelerator for a Ray `accelerator_type` (python/ray/util/accelerators/
/// accelerators.py names them), a GKE node label (`cloud.google.com/gke-accelerator`,
/// `cloud.google.com/gke-tpu-accelerator`; https://cloud.google.com/kubernetes-engine/docs/how-to/gpus,
/// .../plan-tpus) or a GCE `guestAccelerators` type. `Ok(name)`: mapped; `Err(words)`: known
/// hardware the catalog lacks; `None`: unknown.
pub fn accelerator(name: &str) -> Option<Part> {
    const fn m(ray: &'static str, words: &'static str) -> Part {
        Part::Missing { ray, words }
    }
    Some(match name {
        "H100" | "nvidia-h100-80gb" | "nvidia-h100-mega-80gb" => Part::Catalog("H100_SXM"),
        "H200" | "nvidia-h200-141gb" => Part::Catalog("H200"),
        "B200" | "nvidia-b200" => Part::Catalog("B200"),
        "GB200" | "nvidia-gb200" => Part::Catalog("GB200"),
        // Ray registers "A100" for both sizes; "A100-80G" is its explicit label for the large one.
        "A100-80G" | "nvidia-a100-80gb" => Part::Catalog("A100_80GB"),
        "L4" | "nvidia-l4" => Part::Catalog("L4"),
        "AMD-Instinct-MI300X-OAM" => Part::Catalog("MI300X"),
        "AMD-Instinct-MI250X" => Part::Catalog("MI250X"),
        "TPU-V4" | "tpu-v4-podslice" => Part::Catalog("TPU_v4"),
        "TPU-V5LITEPOD" | "tpu-v5-lite-podslice" | "tpu-v5-lite-device" => Part::Catalog("TPU_v5e"),
        "TPU-V5P" | "tpu-v5p-slice" => Part::Catalog("TPU_v5p"),
        "A100-40G" | "nvidia-tesla-a100" => Part::Catalog("A100_40GB"),
        "A10G" => Part::Catalog("A10G"),
        "T4" | "nvidia-tesla-t4" => Part::Catalog("T4"),
        // Ray's "V100" names both the 16 GB and the 32 GB part; the catalog has the 16 GB one.
        "V100" | "nvidia-tesla-v100" => m("V100", "NVIDIA V100"),
        "P100" | "nvidia-tesla-p100" => m("P100", "NVIDIA P100"),
        "P4" | "nvidia-tesla-p4" => m("P4", "NVIDIA P4"),
        "K80" | "nvidia-tesla-k80" => m("K80", "NVIDIA K80"),
        "L40S" => Part::Catalog("L40S"),
        "H20" => m("H20", "NVIDIA H20"),
        "TPU-V6E" | "tpu-v6e-slice" => Part::Catalog("TPU_v6e"),
        "TPU-V2" => m("TPU-V2", "Google TPU v2"),
        "TPU-V3" => m("TPU-V3", "Google TPU v3"),
        "Intel-GAUDI" => m(
            "Intel-GAUDI",
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

/// The custom resource that carries a part the catalog lacks: Ray's resource and its type
/// (`GPU:T4`, `TPU:TPU-V6E`), so the count stays on the node and a workload can ask for it.
pub fn missing_resource(ray: &str) -> String {
    let r = if ray.starts_with("TPU") {
        "TPU"
    } else if ray.contains("GAUDI") {
        "HPU"
    } else {
        "GPU"
    };
    format!("{r}:{ray}")
}

/// The Ray resource a catalog accelerator registers under (its `ray_resource`).
pub fn ray_resource(accel: &str) -> &'static str {
    match accel {
        "TPU_v4" | "TPU_v5e" | "TPU_v5p" | "TPU_v6e" => "TPU",
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
        let l = crate::load_str("<catalog>", "");
        let s = l.spec.expect("catalog loads");
        for i in INSTANCES {
            if let Some((part, n, link)) = i.accel {
                assert!(n >= 1 && ["switch", "mesh", "ring", "torus", "none"].contains(&link));
                if let Part::Catalog(a) = part {
                    assert!(s.accelerators.contains_key(a), "{}: {a}", i.name);
                    assert_eq!(ray_resource(a), s.accelerators[a].ray_resource, "{a}");
                }
            }
            if let Net::Nics(nic, _) = i.net {
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
            let Some(Part::Catalog(a)) = accelerator(ray) else {
                panic!("{ray}")
            };
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
        assert_eq!(cpu_network("m5.large", 2), Net::Mbps(10_000));
        assert_eq!(cpu_network("m5.24xlarge", 96), Net::Mbps(25_000));
        assert_eq!(cpu_network("m4.16xlarge", 64), Net::Mbps(25_000));
        assert!(matches!(cpu_network("m4.large", 2), Net::Unpublished(_)));
        assert_eq!(cpu_network("n1-standard-2", 2), Net::Mbps(4_000));
        assert_eq!(cpu_network("n2-standard-32", 32), Net::Mbps(32_000));
        assert_eq!(cpu_network("e2-standard-16", 16), Net::Mbps(16_000));
        assert_eq!(cpu_network("Standard_D2s_v3", 2), Net::Mbps(1_000));
        assert_eq!(cpu_network("Standard_D8s_v5", 8), Net::Mbps(12_500));
        assert_eq!(missing_resource("K80"), "GPU:K80");
        assert_eq!(missing_resource("TPU-V3"), "TPU:TPU-V3");
    }
}
