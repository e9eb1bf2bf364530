//! `orrery import ray-cluster`: each YAML under scenarios/ray_clusters/ imports to a scenario
//! that checks, with the node counts, accelerators, labels and warnings expected of it; bad
//! input is refused with a located error (exit 2); the output is deterministic; an imported
//! cluster runs a workload.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_orrery");

fn yaml(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/ray_clusters")
        .join(name)
}

fn orrery(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Import `name` to a temporary .orr, check that it checks; (scenario, stderr of the import).
fn import_checked(name: &str, extra: &[&str]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("imported.orr");
    let p = yaml(name);
    let mut args = vec![
        "import",
        "ray-cluster",
        p.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = orrery(&args);
    assert!(o.status.success(), "{name}: {}", text(&o.stderr));
    let c = orrery(&["check", out.to_str().unwrap()]);
    assert!(
        c.status.success(),
        "{name} does not check: {}{}",
        text(&c.stdout),
        text(&c.stderr)
    );
    (std::fs::read_to_string(&out).unwrap(), text(&o.stderr))
}

/// The warning lines of an import's stderr, each `LINE:COLUMN: warning: ...` (the file's name
/// before them cut).
fn warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(": warning: "))
        .map(|l| l.split_once(".yaml:").map_or(l, |x| x.1))
        .collect()
}

#[test]
fn aws_launcher_maps_every_node_type() {
    let (s, err) = import_checked("aws_p5_autoscaler.yaml", &[]);
    // Every node type maps whole, each with the NIC of its published network: the head's
    // m5.2xlarge up to 10 Gb/s (declared), the L4 nodes' g6.12xlarge 40 Gb/s (declared).
    assert_eq!(warnings(&err), Vec::<&str>::new());
    for want in [
        "nic cloud_eth_10g {",
        "  speed 10000 Mbps",
        "  nic cloud_eth_10g x 1 role compute",
        "  nic cloud_eth_40g x 1 role compute",
    ] {
        assert!(s.lines().any(|l| l == want), "missing `{want}` in\n{s}");
    }
    for want in [
        "node gpu_h100 {",
        "  cpu sockets 2, cores 96, threads 192",
        "  memory 2048 GiB",
        "  device H100_SXM x 8 link switch",
        "  nic efa_v2 x 32 role compute",
        "    \"team\": \"pretraining\",",
        "    \"ray.io/market-type\": \"on-demand\",",
        "  resources { \"large_model\": 1 }",
        "  device L4 x 4 link none",
        "    node gpu_h100 x 2",
        "    node gpu_l4 x 1",
        "    node ray_head_default x 1",
        "  head ray_head_default.n0",
        "cluster llm_training {",
        "# Autoscaling range in the YAML: min_workers 2, max_workers 8.",
    ] {
        assert!(s.lines().any(|l| l == want), "missing `{want}` in\n{s}");
    }
    // The head (m5.2xlarge) is a CPU machine: 8 vCPUs, 32 GiB, no device.
    let head = s
        .split("node ray_head_default {")
        .nth(1)
        .unwrap()
        .split('}')
        .next()
        .unwrap();
    assert!(
        head.contains("cpu sockets 1, cores 4, threads 8")
            && head.contains("memory 32 GiB")
            && !head.contains("device")
    );
    // `--workers max` takes the other end of each range.
    let (m, _) = import_checked("aws_p5_autoscaler.yaml", &["--workers", "max"]);
    assert!(
        m.contains("    node gpu_h100 x 8\n") && m.contains("    node gpu_l4 x 4\n"),
        "{m}"
    );
}

#[test]
fn gcp_launcher_with_tpu_and_an_unmodelled_network() {
    let (s, err) = import_checked("gcp_a3_tpu.yaml", &[]);
    // A3 High's four 200 Gb/s GPUDirect-TCPX NICs as Ethernet NICs without RDMA; the head's
    // n2-standard-8 at 2 Gb/s per vCPU.
    assert_eq!(warnings(&err), Vec::<&str>::new());
    assert!(s.contains("node ray_tpu from tpu_v4_host {"), "{s}");
    assert!(s.contains("    node ray_tpu x 2\n"));
    assert!(s.contains("  device H200 x 8 link switch\n  nic roce_400g x 8 role compute\n"));
    assert!(
        s.contains("  device H100_SXM x 8 link switch\n  nic cloud_eth_200g x 4 role compute\n"),
        "{s}"
    );
    assert!(s.contains("  nic cloud_eth_16g x 1 role compute\n"), "{s}");
    assert!(s.contains("    node ray_h200 x 2\n") && s.contains("    node ray_h100 x 1\n"));
    // --strict: a warning is an error and nothing is written.
    let o = orrery(&[
        "import",
        "ray-cluster",
        yaml("kuberay_h100.yaml").to_str().unwrap(),
        "--strict",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    assert!(
        text(&o.stderr).contains("4 warning(s) and --strict: nothing written"),
        "{}",
        text(&o.stderr)
    );
    // With nothing unmapped, --strict writes the scenario.
    let o = orrery(&[
        "import",
        "ray-cluster",
        yaml("gcp_a3_tpu.yaml").to_str().unwrap(),
        "--strict",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn kuberay_pods_labels_and_resources() {
    let (s, err) = import_checked("kuberay_h100.yaml", &[]);
    assert_eq!(
        warnings(&err),
        [
            "13:17: warning: `headgroup`: Ray is told CPU 0, but the pod has 8 vCPUs: the node offers 8 (the language derives CPU from the hardware)",
            "12:5: warning: `headgroup`: a pod without a known instance type (node.kubernetes.io/instance-type) has no published network figure: the node has no NIC and no link to the fabric",
            "27:16: warning: `gpu-h100`: a pod without a known instance type (node.kubernetes.io/instance-type) has no published network figure: the node has no NIC and no link to the fabric",
            "52:16: warning: `cpu-pool`: a pod without a known instance type (node.kubernetes.io/instance-type) has no published network figure: the node has no NIC and no link to the fabric",
        ]
    );
    for want in [
        "node gpu_h100 {",
        "  cpu sockets 1, cores 100, threads 200",
        "  memory 1600 GiB",
        "  device H100_SXM x 8 link switch",
        "  labels { \"cloud\": \"gke\", \"ray.io/market-type\": \"on-demand\", \"ray.io/node-group\": \"gpu-h100\" }",
        "  resources { \"trainer\": 1 }",
        "    node gpu_h100 x 4",
        "    node cpu_pool x 2",
        "  head headgroup.n0",
        "cluster h100_train {",
    ] {
        assert!(s.lines().any(|l| l == want), "missing `{want}` in\n{s}");
    }
}

#[test]
fn kuberay_multi_host_tpu_groups_are_slices() {
    let (s, err) = import_checked("kuberay_tpu_v5e.yaml", &[]);
    assert_eq!(
        warnings(&err),
        [
            "11:5: warning: `headgroup`: a pod without a known instance type (node.kubernetes.io/instance-type) has no published network figure: the node has no NIC and no link to the fabric",
            "22:16: warning: `tpu-group`: a pod without a known instance type (node.kubernetes.io/instance-type) has no published network figure: the node has no NIC and no link to the fabric",
        ]
    );
    assert!(s.contains("  device TPU_v5e x 4 link torus\n"), "{s}");
    assert!(
        s.contains("  slice tpu_group[0..1] node tpu_group topology 4x4\n"),
        "{s}"
    );
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.orr");
    std::fs::write(&f, &s).unwrap();
    let c = text(&orrery(&["check", f.to_str().unwrap()]).stdout);
    assert!(
        c.contains("9 (1 × headgroup, 8 × tpu_group) in 1 rack, 2 slices"),
        "{c}"
    );
}

#[test]
fn unmappable_types_are_named_and_the_rest_imported() {
    let (s, err) = import_checked("unmappable.yaml", &[]);
    assert_eq!(
        warnings(&err),
        [
            "10:28: warning: `head`: Ray is told CPU 0, but the machine has 16 vCPUs: the node offers 16 (the language derives CPU from the hardware)",
            "17:27: warning: `k80`: p2.8xlarge's 8 x NVIDIA K80 are not in the catalog: kept as the custom resource `GPU:K80` 8, with no device model",
            "22:27: warning: `v100_32g`: p3dn.24xlarge's 8 x NVIDIA V100 32GB are not in the catalog: kept as the custom resource `GPU:V100` 8, with no device model",
            "27:27: warning: `mystery`: instance type `x9z.mega` is not in the import's table: the node is built from its resources",
            "23:5: warning: `mystery`: no known instance type and no CPU count: nothing to build the node from, so it is left out",
        ]
    );
    assert!(
        s.contains("node v100_32g {\n  cpu sockets 2, cores 48, threads 96\n  memory 768 GiB\n  nic efa_v2 x 1 role compute\n"),
        "{s}"
    );
    assert!(
        s.contains("  resources { \"GPU:V100\": 8, \"accelerator_type:V100\": 1 }\n"),
        "{s}"
    );
    assert!(!s.contains("node mystery"));
    let o = orrery(&[
        "import",
        "ray-cluster",
        yaml("unmappable.yaml").to_str().unwrap(),
        "--strict",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
}

#[test]
fn an_input_that_maps_nothing_is_an_error() {
    let p = yaml("nothing_maps.yaml");
    let o = orrery(&["import", "ray-cluster", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let e = text(&o.stderr);
    assert_eq!(warnings(&e).len(), 4, "{e}");
    assert!(e.ends_with(&format!(
        "error: {}: nothing in the YAML maps to the catalog: no node type has a known instance type or a CPU count\n",
        p.display()
    )), "{e}");
}

/// Exit 2 and exactly this one line on stderr (`FILE:` prefixed).
fn refused(yaml_text: &str, want: &str) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c.yaml");
    std::fs::write(&f, yaml_text).unwrap();
    let o = orrery(&["import", "ray-cluster", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
    assert_eq!(text(&o.stderr), format!("{}:{want}\n", f.display()));
}

#[test]
fn malformed_yaml_is_located() {
    refused(
        "cluster_name: x\navailable_node_types: [1, 2\nhead_node_type: a\n",
        "3:15: error: invalid YAML: while parsing a flow sequence: did not find expected ',' or ']'",
    );
    refused(
        "available_node_types:\n  a: 1\n  a: 2\n",
        "3:3: error: the key `a` appears twice in one mapping",
    );
}

#[test]
fn wrong_structure_is_located() {
    refused(
        "cluster_name: x\navailable_node_types:\n  - a\n",
        "3:3: error: available_node_types must be a mapping, found a list",
    );
    refused(
        "available_node_types:\n  w:\n    min_workers: -1\n",
        "3:18: error: node type `w`: min_workers must not be negative, found -1",
    );
    refused(
        "available_node_types:\n  w:\n    min_workers: 3\n    max_workers: 2\n",
        "3:18: error: node type `w`: min_workers 3 is more than max_workers 2",
    );
    refused(
        "available_node_types:\n  a: {resources: {CPU: 1}}\nhead_node_type: b\n",
        "3:17: error: head_node_type `b` is not one of `available_node_types`",
    );
    refused(
        "apiVersion: ray.io/v1\nkind: RayCluster\nspec:\n  headGroupSpec:\n    template: {spec: {}}\n  workerGroupSpecs:\n  - groupName: w\n    minReplicas: 5\n    maxReplicas: 2\n    template: {spec: {}}\n",
        "8:18: error: worker group `w`: minReplicas 5 is more than maxReplicas 2",
    );
    refused(
        "kind: Deployment\n",
        "1:1: error: neither a Ray cluster launcher config (no `available_node_types`) nor a KubeRay `RayCluster`, `RayJob`, `RayService` or `RayCronJob`",
    );
}

#[test]
fn node_counts_past_the_limits_are_refused() {
    refused(
        "available_node_types:\n  w:\n    min_workers: 2000000\n",
        "3:18: error: node type `w`: min_workers is 2000000; the most this import reads is 1000000",
    );
    refused(
        "available_node_types:\n  a:\n    resources: {CPU: 1}\n    min_workers: 600000\n  b:\n    resources: {CPU: 1}\n    min_workers: 600000\n",
        "7:18: error: `b`: 600000 nodes bring the cluster past the limit of 1000000 nodes",
    );
}

#[test]
fn only_regular_files_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let o = orrery(&["import", "ray-cluster", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "error: {} is not a regular file (a folder)\n",
            dir.path().display()
        )
    );
}

#[test]
fn output_is_deterministic() {
    for name in [
        "aws_p5_autoscaler.yaml",
        "kuberay_h100.yaml",
        "kuberay_tpu_v5e.yaml",
    ] {
        let p = yaml(name);
        let a = orrery(&["import", "ray-cluster", p.to_str().unwrap()]);
        let b = orrery(&["import", "ray-cluster", p.to_str().unwrap()]);
        assert!(a.status.success());
        assert_eq!(a.stdout, b.stdout, "{name}");
        assert!(!a.stdout.is_empty());
    }
}

#[test]
fn an_imported_cluster_runs_a_workload() {
    let (s, _) = import_checked("aws_p5_autoscaler.yaml", &["--name", "imported"]);
    assert!(s.contains("cluster imported {"));
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("run.orr");
    let workload = "\nworkload smoke {\n  tasks prep x 8 {\n    resources { CPU: 4 }\n    duration 10 s\n  }\n  tasks train x 2 after prep {\n    resources { GPU: 8 }\n    compute 100 TFLOP bf16\n  }\n}\n";
    std::fs::write(&f, format!("{s}{workload}")).unwrap();
    let out = dir.path().join("out");
    let o = orrery(&[
        "run",
        f.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-plots",
    ]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    assert!(out.join("run.json").exists());
}

/// Import YAML text (written to a temporary file) and check the result; (scenario, stderr).
fn import_text(yaml_text: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c.yaml");
    let out = dir.path().join("c.orr");
    std::fs::write(&f, yaml_text).unwrap();
    let o = orrery(&[
        "import",
        "ray-cluster",
        f.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let c = orrery(&["check", out.to_str().unwrap()]);
    assert!(c.status.success(), "{}{}", text(&c.stdout), text(&c.stderr));
    (std::fs::read_to_string(&out).unwrap(), text(&o.stderr))
}

#[test]
fn rayjob_clusters_instance_selectors_and_azure_sizes() {
    // A RayJob's cluster; a pod on a whole p5.48xlarge is the machine, one taking 2 of an
    // a3-ultragpu-8g's 8 GPUs is a node of its own.
    let (s, err) = import_text(
        "apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: job}\nspec:\n  entrypoint: python train.py\n  rayClusterSpec:\n    headGroupSpec:\n      template: {spec: {containers: [{name: ray-head, resources: {limits: {cpu: \"4\", memory: 16Gi}}}]}}\n    workerGroupSpecs:\n    - groupName: whole\n      replicas: 2\n      template:\n        spec:\n          containers: [{name: ray-worker, resources: {limits: {cpu: \"192\", memory: 2000Gi, nvidia.com/gpu: \"8\"}}}]\n          nodeSelector: {node.kubernetes.io/instance-type: p5.48xlarge}\n    - groupName: part\n      replicas: 1\n      template:\n        spec:\n          containers: [{name: ray-worker, resources: {limits: {cpu: \"48\", memory: 400Gi, nvidia.com/gpu: \"2\"}}}]\n          nodeSelector: {node.kubernetes.io/instance-type: a3-ultragpu-8g}\n",
    );
    assert_eq!(
        warnings(&err),
        [
            "8:7: warning: `headgroup`: a pod without a known instance type (node.kubernetes.io/instance-type) has no published network figure: the node has no NIC and no link to the fabric",
            "21:60: warning: `part`: the pod takes 2 of a3-ultragpu-8g's 8 accelerators: it is modelled as a node of its own, without the machine's network",
        ]
    );
    assert!(s.contains("node whole {\n  cpu sockets 2, cores 96, threads 192\n  memory 2048 GiB\n  device H100_SXM x 8 link switch\n  nic efa_v2 x 32 role compute\n"), "{s}");
    assert!(s.contains("node part {\n  cpu sockets 1, cores 24, threads 48\n  memory 400 GiB\n  device H200 x 2 link switch\n"), "{s}");
    assert!(s.contains("cluster job {"));
    // Azure: `azure_arm_parameters.vmSize`.
    let (s, err) = import_text(
        "cluster_name: az\nprovider: {type: azure, location: westus2}\navailable_node_types:\n  head: {node_config: {azure_arm_parameters: {vmSize: Standard_D8s_v5}}}\n  mi300x:\n    min_workers: 1\n    node_config: {azure_arm_parameters: {vmSize: Standard_ND96isr_MI300X_v5}}\nhead_node_type: head\n",
    );
    // The head's Standard_D8s_v5: Azure's 12,500 Mbps.
    assert_eq!(warnings(&err), Vec::<&str>::new());
    assert!(
        s.contains("  nic cloud_eth_12500m x 1 role compute\n"),
        "{s}"
    );
    assert!(
        s.contains("  device MI300X x 8 link mesh\n  nic ib_ndr_400g x 8 role compute\n"),
        "{s}"
    );
    assert!(s.contains("  memory 32 GiB\n"), "{s}");
}

#[test]
fn strict_passes_when_everything_maps() {
    // Every node a whole p5.48xlarge: accelerators and NICs all in the catalog.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p5.yaml");
    std::fs::write(
        &f,
        "cluster_name: p5s\nprovider: {type: aws, region: us-east-1}\nhead_node_type: gpu\navailable_node_types:\n  gpu:\n    node_config: {InstanceType: p5.48xlarge}\n    resources: {CPU: 192, GPU: 8}\n    min_workers: 3\n    max_workers: 3\n",
    )
    .unwrap();
    let o = orrery(&["import", "ray-cluster", f.to_str().unwrap(), "--strict"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(warnings(&text(&o.stderr)).is_empty(), "{}", text(&o.stderr));
    let s = text(&o.stdout);
    assert!(s.contains("  nic efa_v2 x 32 role compute\n"), "{s}");
}

#[test]
fn lines_end_where_yaml_says_they_do() {
    // A lone CR ends a line in YAML (1.2, 5.4) as LF and CRLF do: the error is on line 5 in all
    // three (found by the raycluster fuzz target, whose own line count was LF-only).
    let dir = tempfile::tempdir().unwrap();
    for (name, eol) in [("lf", "\n"), ("crlf", "\r\n"), ("cr", "\r")] {
        let f = dir.path().join(format!("{name}.yaml"));
        let body = [
            "cluster_name: x",
            "provider: {type: aws}",
            "available_node_types:",
            "  a: [1,",
            "",
        ];
        std::fs::write(&f, body.join(eol)).unwrap();
        let o = orrery(&["import", "ray-cluster", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2));
        assert!(
            text(&o.stderr).starts_with(&format!("{}:5:1: error: invalid YAML", f.display())),
            "{name}: {}",
            text(&o.stderr)
        );
    }
}

/// Instance families whose GPUs the catalog now has import as those devices, not as custom
/// resources: A100 40GB (p4d), A10G (g5), T4 (g4dn), L40S (g6e), V100 16GB (p3), and a GKE
/// T4 by its accelerator label; nothing is warned about them.
#[test]
fn instances_whose_parts_the_catalog_has_import_as_devices() {
    let (s, err) = import_text(
        "cluster_name: fleet\nmax_workers: 10\nprovider: {type: aws, region: us-east-1}\navailable_node_types:\n  head:\n    resources: {}\n    node_config: {InstanceType: p4d.24xlarge}\n  g5:\n    min_workers: 1\n    max_workers: 1\n    node_config: {InstanceType: g5.12xlarge}\n  g4dn:\n    min_workers: 1\n    max_workers: 1\n    node_config: {InstanceType: g4dn.12xlarge}\n  g6e:\n    min_workers: 1\n    max_workers: 1\n    node_config: {InstanceType: g6e.48xlarge}\n  p3:\n    min_workers: 1\n    max_workers: 1\n    node_config: {InstanceType: p3.16xlarge}\nhead_node_type: head\n",
    );
    assert!(!err.contains("not in the catalog"), "{err}");
    for line in [
        "device A100_40GB x 8",
        "device A10G x 4",
        "device T4 x 4",
        "device L40S x 8",
        "device V100 x 8",
    ] {
        assert!(s.contains(line), "{line} in:\n{s}");
    }
    assert!(!s.contains("\"GPU:"), "{s}");
}

#[test]
fn a_yaml_the_parser_library_panics_on_is_a_located_error_and_no_panic_message() {
    // libyaml-safer 0.3 panics ("TODO: What is expected here?") on a tag followed by `,` in a
    // flow collection (the raycluster fuzzer's find). The import says where, and the panic's
    // own message never reaches the terminal (`orrery::quiet`).
    let file = Path::new("tests/fuzz_found/raycluster/tag-comma-in-flow-dc1c7b76.yaml");
    let o = orrery(&["import", "ray-cluster", file.to_str().unwrap()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "2:43: error: invalid YAML: the YAML parser (libyaml-safer) failed on this text"
        ),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
