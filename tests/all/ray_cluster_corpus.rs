//! Every cluster file of the corpus imports whole: every node type with its node count (hosts
//! of a TPU slice included), and as many accelerators as the file declares, counted here apart
//! from the import (a table of the fixtures' instance types, the YAML's own counts) and compared
//! with the scenario's devices plus the custom resources that carry parts the catalog lacks.
//!
//! The corpus: `tests/fixtures/ray_clusters/` (written for these tests, modelled on Ray's and
//! KubeRay's examples), and, where `ORRERY_RAY_CORPUS` names a folder, every `.yaml` under it
//! (Ray's and KubeRay's own files, gathered as that folder's README says). A file of the external
//! corpus that is not a whole cluster must be refused with exit 2 and its reason.

use orrery::raycluster::yaml::{self, Kind, Node};
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_orrery");

/// Accelerators per machine, from the providers' pages (independent of src/raycluster's
/// tables): AWS P2/P3/P4/P5/G4dn/G5 pages, GCP A2, Azure NCv3/NCasT4_v3/NDasrA100_v4.
const GPUS: &[(&str, u64)] = &[
    ("p2.xlarge", 1),
    ("p3.8xlarge", 4),
    ("g4dn.12xlarge", 4),
    ("p4d.24xlarge", 8),
    ("p5.48xlarge", 8),
    ("g5.12xlarge", 4),
    ("a2-highgpu-8g", 8),
    ("Standard_NC6s_v3", 1),
    ("Standard_NC64as_T4_v3", 4),
    ("Standard_ND96asr_v4", 8),
];

/// Cloud TPU accelerator types: (chips, hosts) (cloud.google.com/tpu/docs/v2, /v4).
const TPUS: &[(&str, u64, u64)] = &[("v4-16", 8, 2), ("v4-8", 4, 1), ("v2-8", 4, 1)];

fn num(n: Option<&Node>) -> Option<u64> {
    match &n?.kind {
        Kind::Str(s) => s
            .trim()
            .trim_matches('"')
            .parse::<f64>()
            .ok()
            .map(|x| x.ceil() as u64),
        _ => None,
    }
}

fn text(n: Option<&Node>) -> Option<&str> {
    match &n?.kind {
        Kind::Str(s) => Some(s.rsplit('/').next().unwrap_or(s)),
        _ => None,
    }
}

/// (nodes, accelerators) a launcher config declares at its minimum.
fn launcher(doc: &Node) -> (u64, u64) {
    let head = text(doc.get("head_node_type")).unwrap_or("");
    let (mut nodes, mut accels) = (0, 0);
    for (name, _, t) in doc
        .get("available_node_types")
        .unwrap()
        .entries("")
        .unwrap()
    {
        let n = if name == head {
            1
        } else {
            num(t.get("min_workers")).unwrap_or(0)
        };
        let cfg = t.get("node_config");
        let instance = cfg.and_then(|c| {
            text(c.get("InstanceType"))
                .or(text(c.get("machineType")))
                .or(text(
                    c.get("azure_arm_parameters").and_then(|a| a.get("vmSize")),
                ))
        });
        let res = |k: &str| num(t.get("resources").and_then(|r| r.get(k)));
        let mut hosts = 1;
        let per = if let Some(tpu) = cfg.and_then(|c| text(c.get("acceleratorType"))) {
            let &(_, chips, h) = TPUS
                .iter()
                .find(|x| x.0 == tpu)
                .expect("a TPU type in TPUS");
            hosts = h;
            chips
        } else if let Some(g) = cfg.and_then(|c| c.get("guestAccelerators")) {
            g.items("")
                .unwrap()
                .iter()
                .map(|a| num(a.get("acceleratorCount")).unwrap())
                .sum()
        } else if let Some(&(_, g)) = instance.and_then(|i| GPUS.iter().find(|x| x.0 == i)) {
            g
        } else {
            res("GPU").or(res("TPU")).unwrap_or(0)
        };
        nodes += n * hosts;
        accels += n * per;
    }
    (nodes, accels)
}

/// (nodes, accelerators) a KubeRay RayCluster (RayJob, RayService, RayCronJob) declares.
fn kuberay(doc: &Node) -> (u64, u64) {
    let mut spec = doc.get("spec").unwrap();
    if let Some(j) = spec.get("jobTemplate") {
        spec = j;
    }
    spec = spec
        .get("rayClusterSpec")
        .or(spec.get("rayClusterConfig"))
        .unwrap_or(spec);
    let per_pod = |g: &Node| -> u64 {
        let c = &g
            .get("template")
            .unwrap()
            .get("spec")
            .unwrap()
            .get("containers")
            .unwrap();
        let c = &c.items("").unwrap()[0];
        let lim = |side: &str, k: &str| {
            num(c
                .get("resources")
                .and_then(|r| r.get(side))
                .and_then(|l| l.get(k)))
        };
        let pod: u64 = ["nvidia.com/gpu", "google.com/tpu", "amd.com/gpu"]
            .iter()
            .map(|k| lim("limits", k).or(lim("requests", k)).unwrap_or(0))
            .sum();
        // What Ray is told where the pod's limits say nothing: `num-gpus`, the group's resources.
        let told = num(g.get("rayStartParams").and_then(|p| p.get("num-gpus")))
            .or(num(g.get("resources").and_then(|r| r.get("GPU"))))
            .or(num(g.get("resources").and_then(|r| r.get("TPU"))));
        if pod > 0 { pod } else { told.unwrap_or(0) }
    };
    let (mut nodes, mut accels) = (1, per_pod(spec.get("headGroupSpec").unwrap()));
    for w in spec
        .get("workerGroupSpecs")
        .map_or(&[][..], |w| w.items("").unwrap())
    {
        let lo = num(w.get("minReplicas")).unwrap_or(0);
        let hi = num(w.get("maxReplicas")).unwrap_or(u64::from(u32::MAX));
        let suspended =
            matches!(w.get("suspend").map(|s| &s.kind), Some(Kind::Str(s)) if s == "true");
        let r = if suspended {
            0
        } else {
            num(w.get("replicas")).unwrap_or(lo).clamp(lo, hi)
        };
        let hosts = num(w.get("numOfHosts")).unwrap_or(1);
        nodes += r * hosts;
        accels += r * hosts * per_pod(w);
    }
    (nodes, accels)
}

/// (nodes, accelerators) of the scenario the import wrote.
fn imported(orr: &str) -> (u64, u64) {
    let l = orrery::load_str("imported.orr", orr);
    let s = l.spec.expect("the import's scenario loads");
    let c = s.cluster.as_ref().unwrap();
    let (mut nodes, mut accels) = (0, 0);
    for n in c.nodes() {
        let t = &s.node_types[n.node_type];
        nodes += 1;
        accels += t.devices.iter().map(|d| u64::from(d.count)).sum::<u64>();
        accels += t
            .resources
            .iter()
            .filter(|(k, _)| {
                ["GPU:", "TPU:", "HPU:", "neuron_cores:"]
                    .iter()
                    .any(|p| k.starts_with(p))
            })
            .map(|(_, v)| *v as u64)
            .sum::<u64>();
    }
    (nodes, accels)
}

/// Import one file: Ok((declared, imported)), or Err(stderr) where it was refused.
/// (nodes, accelerators).
type Counts = (u64, u64);

fn check(path: &Path) -> Result<(Counts, Counts), String> {
    let o = Command::new(BIN)
        .args(["import", "ray-cluster"])
        .arg(path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if !o.status.success() {
        assert_eq!(o.status.code(), Some(2), "{}: {err}", path.display());
        return Err(err);
    }
    // Every warning is located in the file: FILE:LINE:COLUMN.
    for w in err.lines().filter(|l| l.contains(": warning: ")) {
        let rest = w.strip_prefix(&format!("{}:", path.display())).expect(w);
        let mut it = rest.splitn(3, ':');
        let (line, col) = (it.next().unwrap(), it.next().unwrap());
        assert!(
            line.parse::<u32>().unwrap() >= 1 && col.parse::<u32>().unwrap() >= 1,
            "{w}"
        );
    }
    let text = std::fs::read_to_string(path).unwrap();
    let docs = yaml::parse(&text).unwrap();
    let doc = docs
        .iter()
        .find(|d| {
            d.get("available_node_types").is_some()
                || d.get("kind")
                    .is_some_and(|k| matches!(&k.kind, Kind::Str(s) if s.starts_with("Ray")))
        })
        .unwrap();
    let declared = if doc.get("available_node_types").is_some() {
        launcher(doc)
    } else {
        kuberay(doc)
    };
    Ok((declared, imported(&String::from_utf8_lossy(&o.stdout))))
}

fn yamls(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            yamls(&p, out);
        } else if p.extension().is_some_and(|x| x == "yaml") {
            out.push(p);
        }
    }
    out.sort();
}

#[test]
fn every_fixture_imports_whole_with_every_accelerator() {
    let mut files = Vec::new();
    yamls(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ray_clusters"),
        &mut files,
    );
    assert!(files.len() >= 6, "{files:?}");
    let mut total = 0;
    for f in &files {
        let (declared, got) = check(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(got, declared, "{}: (nodes, accelerators)", f.display());
        total += declared.1;
    }
    // The fixtures' GPUs and TPU chips: AWS 21, Azure 17, GCP GPUs 17, GCP TPUs 16, KubeRay 19,
    // resources only 13.
    assert_eq!(total, 103);
}

#[test]
fn the_external_corpus_imports_whole_where_it_names_one() {
    let Some(dir) = std::env::var_os("ORRERY_RAY_CORPUS") else {
        return;
    };
    let mut files = Vec::new();
    yamls(Path::new(&dir), &mut files);
    assert!(
        !files.is_empty(),
        "ORRERY_RAY_CORPUS names a folder without YAML files"
    );
    let mut whole = 0;
    for f in &files {
        match check(f) {
            Ok((declared, got)) => {
                assert_eq!(got, declared, "{}: (nodes, accelerators)", f.display());
                whole += 1;
            }
            // Not a whole cluster: a template Ray merges into the user's config (no node types,
            // or node types with nothing to build them from), or a RayJob on an existing cluster.
            Err(e) => assert!(
                e.contains("neither a Ray cluster launcher config")
                    || e.contains("nothing in the YAML maps to the catalog")
                    || e.contains("submits to an existing cluster"),
                "{}: {e}",
                f.display()
            ),
        }
    }
    eprintln!("{whole} of {} files import whole", files.len());
}
