//! What Ray would register on this node, against what the node type makes Orrery simulate:
//! the accelerator resource and its count, `accelerator_type:X`, and the labels
//! `ray.io/accelerator-type` and (TPU) `ray.io/tpu-*`.
//!
//! Ray's rules, read in ray-project/ray (`python/ray/_private/`):
//! - `resource_and_label_spec.py` / `accelerators/__init__.py`: one accelerator kind per node,
//!   the first manager that counts any; the count is capped by the visibility variable's list
//!   (`min(detected, len(visible))`); `accelerator_type:<type>` = 1 when a type is known.
//! - `accelerators/nvidia_gpu.py`: count from NVML, type = the first match of
//!   `\w+\s+([A-Z0-9]+)` on device 0's name (`NVIDIA H100 80GB HBM3` → `H100`);
//!   `CUDA_VISIBLE_DEVICES` (`""` and `NoDevFiles` mean none).
//! - `accelerators/amd_gpu.py`: type from the PCI device id (`amd_product_dict`);
//!   `HIP_VISIBLE_DEVICES`.
//! - `accelerators/tpu.py`: chips from `/dev/accel*` or `/dev/vfio/N`; type `TPU-` + the
//!   generation of `TPU_ACCELERATOR_TYPE` upper-cased (`v4-16` → `TPU-V4`) when it matches
//!   `^v\d+[a-zA-Z]*-\d+$` (Ray also asks the GCE metadata server; Orrery does not);
//!   `TPU_VISIBLE_CHIPS`; slice labels from `TPU_NAME`, `TPU_WORKER_ID`, `TPU_TOPOLOGY`.
//!
//! Without the driver's inventory the NVIDIA name is the PCI database's (`H100 SXM5 80GB`),
//! read as `NVIDIA H100 SXM5 80GB`: the same first token for every current data-centre part,
//! but a derivation, and the check says so.

use super::{Check, check};
use crate::calibrate::detect::{GpuInventory, Host};
use crate::placement::state::{
    LABEL_ACCELERATOR_TYPE, LABEL_TPU_POD_TYPE, LABEL_TPU_SLICE_NAME, LABEL_TPU_TOPOLOGY,
    LABEL_TPU_WORKER_ID,
};
use crate::scenario::Spec;
use crate::scenario::hardware::NodeType;
use std::collections::BTreeMap;

/// Resources and labels of one node as Ray sees it (accelerator-related ones only: CPU and
/// memory are checked against the hardware directly).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RayView {
    pub resources: BTreeMap<String, f64>,
    pub labels: BTreeMap<String, String>,
    /// How a figure was derived where that is not Ray's own way (PCI names).
    pub notes: Vec<String>,
}

/// Ray's NVIDIA type rule: `\w+\s+([A-Z0-9]+)` matched at the start of the name.
pub fn nvidia_type(name: &str) -> Option<String> {
    let word = name
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(name.len());
    if word == 0 {
        return None;
    }
    let rest = &name[word..];
    let after = rest.trim_start();
    if after.len() == rest.len() {
        return None;
    }
    let t: String = after
        .chars()
        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        .collect();
    (!t.is_empty()).then_some(t)
}

/// Ray's `amd_product_dict` (amd_gpu.py), the data-centre entries.
pub fn amd_type(device: u16) -> Option<&'static str> {
    Some(match device {
        0x738c => "AMD-Instinct-MI100",
        0x7408 => "AMD-Instinct-MI250X",
        0x740c => "AMD-Instinct-MI250X-MI250",
        0x740f => "AMD-Instinct-MI210",
        0x74a0 => "AMD-Instinct-MI300A",
        0x74a1 => "AMD-Instinct-MI300X-OAM",
        0x74a2 => "AMD-Instinct-MI308X-OAM",
        0x74a9 => "AMD-Instinct-MI300X-HF",
        0x74a5 => "AMD-Instinct-MI325X-OAM",
        0x75a0 => "AMD-Instinct-MI350X-OAM",
        0x75a3 => "AMD-Instinct-MI355X-OAM",
        _ => return None,
    })
}

/// Ray's TPU type from a pod type (`v5litepod-8` → `TPU-V5LITEPOD`), if well formed.
pub fn tpu_type(pod_type: &str) -> Option<String> {
    let (generation, cores) = pod_type.split_once('-')?;
    let digits = generation.strip_prefix('v')?;
    let n = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    let ok = n > 0
        && digits[n..].chars().all(|c| c.is_ascii_alphabetic())
        && !cores.is_empty()
        && cores.bytes().all(|b| b.is_ascii_digit());
    ok.then(|| format!("TPU-{}", generation.to_uppercase()))
}

/// How many of `n` devices a visibility variable leaves (Ray: `min(n, len(list))`).
fn visible(n: u32, var: Option<&String>) -> u32 {
    match var.map(String::as_str) {
        None => n,
        Some("") | Some("NoDevFiles") => 0,
        Some(v) => n.min(v.split(',').count() as u32),
    }
}

/// What the node type makes Orrery register (`scenario::load::node_resources` and the node
/// labels of `placement::state`).
pub fn declared_view(spec: &Spec, nt: &NodeType) -> RayView {
    let all = crate::scenario::load::node_resources(spec, nt);
    let mut v = RayView::default();
    let accel_resources: Vec<String> = nt
        .devices
        .iter()
        .filter_map(|g| spec.accelerators.get(&g.accelerator))
        .map(|a| a.ray_resource.clone())
        .collect();
    for (k, x) in all {
        if k.starts_with("accelerator_type:") || accel_resources.contains(&k) {
            v.resources.insert(k, x);
        }
    }
    let first = nt
        .devices
        .first()
        .and_then(|g| spec.accelerators.get(&g.accelerator));
    v.labels = nt.labels.clone();
    if let Some(a) = first {
        v.labels
            .entry(LABEL_ACCELERATOR_TYPE.into())
            .or_insert_with(|| a.accelerator_type.clone());
        if a.ray_resource == "TPU" {
            for l in [
                LABEL_TPU_SLICE_NAME,
                LABEL_TPU_WORKER_ID,
                LABEL_TPU_POD_TYPE,
            ] {
                v.labels
                    .entry(l.into())
                    .or_insert_with(|| "(set by its slice)".into());
            }
        }
    }
    v
}

/// What Ray would register on this machine.
pub fn detected_view(host: &Host, gpus: Option<&GpuInventory>) -> RayView {
    let mut v = RayView::default();
    let env = &host.ray_env;
    let nvidia: Vec<_> = host
        .accelerators
        .iter()
        .filter(|f| f.vendor == 0x10de)
        .collect();
    let amd: Vec<_> = host
        .accelerators
        .iter()
        .filter(|f| f.vendor == 0x1002)
        .collect();
    let n_nvidia = gpus.map_or(nvidia.len() as u32, |g| g.gpus.len() as u32);
    let (resource, n, kind) = if n_nvidia > 0 {
        (
            "GPU",
            visible(n_nvidia, env.get("CUDA_VISIBLE_DEVICES")),
            "nvidia",
        )
    } else if !amd.is_empty() {
        (
            "GPU",
            visible(amd.len() as u32, env.get("HIP_VISIBLE_DEVICES")),
            "amd",
        )
    } else if host.tpu_chips > 0 {
        (
            "TPU",
            visible(host.tpu_chips, env.get("TPU_VISIBLE_CHIPS")),
            "tpu",
        )
    } else {
        return v;
    };
    if n == 0 {
        return v;
    }
    v.resources.insert(resource.into(), f64::from(n));
    let ty = match kind {
        "nvidia" => match gpus.and_then(|g| g.gpus.first()) {
            Some(g) => nvidia_type(&g.name),
            None => {
                let model = super::devices::pci_model(nvidia[0]);
                v.notes.push(format!(
                    "type from the PCI name `{model}` (no driver inventory): Ray reads NVML's name"
                ));
                nvidia_type(&format!("NVIDIA {model}"))
            }
        },
        "amd" => amd_type(amd[0].device).map(str::to_string),
        _ => env.get("TPU_ACCELERATOR_TYPE").and_then(|t| tpu_type(t)),
    };
    if let Some(t) = ty {
        v.resources.insert(format!("accelerator_type:{t}"), 1.0);
        v.labels.insert(LABEL_ACCELERATOR_TYPE.into(), t);
    }
    if kind == "tpu" {
        for (label, var) in [
            (LABEL_TPU_SLICE_NAME, "TPU_NAME"),
            (LABEL_TPU_WORKER_ID, "TPU_WORKER_ID"),
            (LABEL_TPU_TOPOLOGY, "TPU_TOPOLOGY"),
            (LABEL_TPU_POD_TYPE, "TPU_ACCELERATOR_TYPE"),
        ] {
            if let Some(x) = env.get(var) {
                v.labels.insert(label.into(), x.clone());
            }
        }
    }
    v
}

pub(super) fn checks(
    spec: &Spec,
    nt: &NodeType,
    host: &Host,
    gpus: Option<&GpuInventory>,
) -> Vec<Check> {
    let want = declared_view(spec, nt);
    let have = detected_view(host, gpus);
    let note = if have.notes.is_empty() {
        String::new()
    } else {
        format!(" [{}]", have.notes.join("; "))
    };
    let mut out = Vec::new();
    let mut keys: Vec<&String> = want.resources.keys().chain(have.resources.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let (w, h) = (want.resources.get(k), have.resources.get(k));
        let fmt = |x: Option<&f64>| x.map_or("none".to_string(), |x| format!("{x}"));
        let mut detected = fmt(h);
        if k.starts_with("accelerator_type:") {
            detected.push_str(&note);
            if w.is_none()
                && let Some(t) = k.strip_prefix("accelerator_type:")
            {
                detected.push_str(&format!(
                    " (to match, declare `accelerator_type {t}` in the accelerator block)"
                ));
            }
        }
        out.push(check(
            &format!("Ray resource `{k}`"),
            fmt(w),
            Some(detected),
            w == h,
        ));
    }
    let mut labels: Vec<&String> = want
        .labels
        .keys()
        .chain(have.labels.keys())
        .filter(|k| k.starts_with("ray.io/accelerator") || k.starts_with("ray.io/tpu"))
        .collect();
    labels.sort();
    labels.dedup();
    for k in labels {
        let (w, h) = (want.labels.get(k), have.labels.get(k));
        let slice_set = w.is_some_and(|w| w == "(set by its slice)");
        let ok = if slice_set { h.is_some() } else { w == h };
        // A TPU label Orrery sets from the cluster is not visible without the TPU variables.
        let detected = match h {
            Some(h) => Some(h.clone()),
            None if slice_set => None,
            None => Some("none".into()),
        };
        out.push(check(
            &format!("Ray label `{k}`"),
            w.cloned().unwrap_or_else(|| "none".into()),
            detected,
            ok,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ray_type_rules() {
        assert_eq!(
            nvidia_type("NVIDIA H100 80GB HBM3").as_deref(),
            Some("H100")
        );
        assert_eq!(
            nvidia_type("NVIDIA A100-SXM4-80GB").as_deref(),
            Some("A100")
        );
        assert_eq!(nvidia_type("Tesla V100-SXM2-16GB").as_deref(), Some("V100"));
        assert_eq!(nvidia_type("NVIDIA"), None);
        assert_eq!(nvidia_type("NVIDIA h100"), None);
        assert_eq!(tpu_type("v4-16").as_deref(), Some("TPU-V4"));
        assert_eq!(tpu_type("v5litepod-8").as_deref(), Some("TPU-V5LITEPOD"));
        assert_eq!(tpu_type("v5p"), None);
        assert_eq!(tpu_type("x4-16"), None);
        assert_eq!(amd_type(0x74a1), Some("AMD-Instinct-MI300X-OAM"));
        assert_eq!(amd_type(0x74a5), Some("AMD-Instinct-MI325X-OAM"));
        assert_eq!(amd_type(0x75a3), Some("AMD-Instinct-MI355X-OAM"));
        assert_eq!(visible(8, Some(&"0,1".to_string())), 2);
        assert_eq!(visible(8, Some(&"NoDevFiles".to_string())), 0);
        assert_eq!(visible(8, None), 8);
    }
}
