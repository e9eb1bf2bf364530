//! Resolution errors: each names file:line:column, shows the source with a caret, and
//! suggests a fix where one exists; every error the resolver can reach is reported.

use orrery::load_str;

/// Rendered diagnostics of a scenario that must fail.
fn errs(src: &str) -> String {
    let l = load_str("s.orr", src);
    assert!(l.has_errors(), "expected errors for:\n{src}");
    l.render(false)
}

fn ok(src: &str) -> orrery::scenario::Spec {
    let l = load_str("s.orr", src);
    assert!(!l.has_errors(), "unexpected errors:\n{}", l.render(false));
    l.spec.unwrap()
}

const NODE: &str = "node box {\n  cpu sockets 2, cores 64\n  memory 1 TiB\n  switch sw[0..1]\n  device H100_SXM x 4 at sw[0..1] link switch\n  nic ib_ndr_400g x 2 at sw[0..1]\n}\n";

#[test]
fn unknown_accelerator_suggests_the_closest() {
    let out = errs(
        "node a {\n  cpu sockets 1, cores 8\n  memory 64 GiB\n  device H100 x 8 link switch\n}\n",
    );
    assert!(out.contains("s.orr:4:10"), "{out}");
    assert!(out.contains("unknown accelerator `H100`"), "{out}");
    assert!(
        out.contains("did you mean `H100_SXM`?") || out.contains("did you mean `H200`?"),
        "{out}"
    );
    assert!(out.contains("^^^^"), "{out}");
}

#[test]
fn unknown_statement_suggests_the_keyword() {
    let out = errs(
        "accelerator x {\n  vendor acme\n  ray_resource GPU\n  memroy 80 GB\n  memory_bw 2 TB/s\n  flops bf16 100 TFLOPS\n}\n",
    );
    assert!(out.contains("s.orr:4:3"), "{out}");
    assert!(out.contains("did you mean `memory`?"), "{out}");
    assert!(out.contains("missing `memory`"), "{out}");
}

#[test]
fn a_quantity_of_the_wrong_kind_is_an_error_at_its_location() {
    let out = errs(
        "accelerator x {\n  vendor acme\n  ray_resource GPU\n  memory 3.35 TB/s\n  memory_bw 80 GB\n  flops bf16 100 TFLOPS\n}\n",
    );
    assert!(
        out.contains("s.orr:4:10: expected bytes, found bandwidth (`TB/s`)"),
        "{out}"
    );
    assert!(
        out.contains("s.orr:5:13: expected bandwidth, found bytes (`GB`)"),
        "{out}"
    );
    let out = errs(
        "accelerator x {\n  vendor acme\n  ray_resource GPU\n  memory 80\n  memory_bw 1 TB/s\n  flops bf16 100 TFLOPS\n}\n",
    );
    assert!(out.contains("found a number without a unit"), "{out}");
    assert!(out.contains("add a unit"), "{out}");
}

#[test]
fn scale_up_bandwidth_must_say_its_direction() {
    let out = errs("accelerator x from H100_SXM {\n  interconnect nvlink 900 GB/s\n}\n");
    assert!(
        out.contains("per_direction") && out.contains("bidirectional"),
        "{out}"
    );
    let s = ok(
        "accelerator x from H100_SXM {\n  interconnect nvlink 900 GB/s bidirectional links 18\n}\n",
    );
    assert_eq!(
        s.accelerators["x"]
            .interconnect
            .as_ref()
            .unwrap()
            .per_direction
            .0,
        450e9
    );
}

#[test]
fn duplicate_names_point_at_both() {
    let out = errs(&format!("{NODE}{NODE}"));
    assert!(out.contains("node type `box` is declared twice"), "{out}");
    assert!(out.contains("first declared here"), "{out}");
    let out =
        errs("cluster a {\n  rack r0 { node dgx_h100 x 1 }\n  rack r0 { node dgx_h100 x 1 }\n}\n");
    assert!(out.contains("`r0` is declared twice"), "{out}");
}

#[test]
fn catalog_entries_can_be_replaced_or_derived() {
    let s = ok(
        "accelerator H100_SXM from H100_SXM {\n  price 1.99 $/h\n}\naccelerator cheap from H200 {\n  price 2.5 $/h source \"contract\"\n}\n",
    );
    assert_eq!(s.accelerators["H100_SXM"].price.unwrap().0, 1.99);
    assert_eq!(s.overridden, vec!["H100_SXM".to_string()]);
    assert_eq!(
        s.accelerators["cheap"].memory,
        s.accelerators["H200"].memory
    );
    assert_eq!(s.accelerators["cheap"].sources["price"], "contract");
}

#[test]
fn a_nic_on_a_missing_pcie_switch_is_impossible_topology() {
    let out = errs(
        "node a {\n  cpu sockets 2, cores 64\n  memory 1 TiB\n  switch sw[0..1]\n  nic ib_ndr_400g x 2 at [sw0, sw7]\n}\n",
    );
    assert!(out.contains("s.orr:5:32"), "{out}");
    assert!(out.contains("no PCIe switch `sw7`"), "{out}");
    let out = errs(
        "node a {\n  cpu sockets 2, cores 64\n  memory 1 TiB\n  nic ib_ndr_400g x 2 at sw0\n}\n",
    );
    assert!(out.contains("declares no PCIe switches"), "{out}");
}

#[test]
fn numa_and_even_spreading_are_checked() {
    let out = errs(
        "node a {\n  cpu sockets 2, cores 64\n  memory 1 TiB\n  switch sw[0..1] numa [0, 2]\n}\n",
    );
    assert!(out.contains("NUMA domain 2 does not exist"), "{out}");
    let out = errs(
        "node a {\n  cpu sockets 2, cores 64\n  memory 1 TiB\n  switch sw[0..2]\n  device L4 x 8 at sw[0..2]\n}\n",
    );
    assert!(
        out.contains("8 items cannot be spread evenly over 3 locations"),
        "{out}"
    );
}

#[test]
fn topology_places_devices_and_nics() {
    let s = ok(NODE);
    let n = &s.node_types["box"];
    let sw: Vec<Option<usize>> = n.devices[0].at.iter().map(|l| l.switch).collect();
    assert_eq!(sw, vec![Some(0), Some(0), Some(1), Some(1)]);
    let numa: Vec<u32> = n.devices[0].at.iter().map(|l| l.numa).collect();
    assert_eq!(numa, vec![0, 0, 1, 1]);
    assert_eq!(n.nics[0].at[1].switch, Some(1));
}

#[test]
fn absurd_counts_are_rejected() {
    let out = errs("cluster c {\n  node dgx_h100 x 1e15\n}\n");
    assert!(out.contains("s.orr:2:19"), "{out}");
    assert!(out.contains("out of range"), "{out}");
    let out = errs("cluster c {\n  rack r[0..99999] { node dgx_h100 x 100 }\n}\n");
    assert!(out.contains("limit is 1000000"), "{out}");
    let out = errs("cluster c {\n  rack r[0..100000000] { node dgx_h100 x 1 }\n}\n");
    assert!(out.contains("the limit is 100000"), "{out}");
}

#[test]
fn ten_thousand_nodes_is_a_few_lines() {
    let s = ok(
        "cluster big {\n  zone a {\n    rack r[0..624] { node dgx_h100 x 8 }\n  }\n  zone b {\n    rack q[0..624] { node hgx_h200 x 8 }\n  }\n  fabric fat_tree oversubscription 2:1\n}\n",
    );
    let c = s.cluster.as_ref().unwrap();
    assert_eq!(c.node_count(), 10_000);
    assert_eq!(c.find_node("q624.n7").unwrap().node_type, "hgx_h200");
    assert!(c.find_node("q625.n0").is_none());
    assert_eq!(c.nodes().nth(9).unwrap().name, "r1.n1");
}

#[test]
fn missing_and_misspelled_resources() {
    let out = errs(&format!(
        "cluster c {{\n  node box x 2\n}}\n{NODE}workload w {{\n  tasks t x 4 {{\n    resources {{ GPUS: 1 }}\n    duration 1 s\n  }}\n}}\n"
    ));
    assert!(
        out.contains("no node in scope offers resource `GPUS`"),
        "{out}"
    );
    assert!(out.contains("did you mean `GPU`?"), "{out}");
    let out = errs(&format!(
        "cluster c {{\n  node box x 2\n}}\n{NODE}workload w {{\n  tasks t x 4 {{\n    resources {{ GPU: 1.5 }}\n    duration 1 s\n  }}\n}}\n"
    ));
    assert!(out.contains("requests above 1 must be whole"), "{out}");
    let out = errs(&format!(
        "cluster c {{\n  node box x 2\n}}\n{NODE}workload w {{\n  tasks t x 4 {{\n    resources {{ TPU: 1 }}\n    duration 1 s\n  }}\n}}\n"
    ));
    assert!(
        out.contains("no node in scope offers resource `TPU`"),
        "{out}"
    );
}

#[test]
fn workload_references_are_checked() {
    let out = errs(
        "workload w {\n  tasks a x 1 after b {\n    duration 1 s\n  }\n  training t on pgg steps 10 {\n    compute 1 TFLOP per device bf16\n  }\n  placement_group pg strategy PACK {\n    bundle { CPU: 1 }\n  }\n}\n",
    );
    assert!(out.contains("no task group `b`"), "{out}");
    assert!(out.contains("no placement group `pgg`"), "{out}");
    assert!(out.contains("did you mean `pg`?"), "{out}");
    let out = errs(
        "workload w {\n  tasks a x 1 after b {\n    duration 1 s\n  }\n  tasks b x 1 after a {\n    duration 1 s\n  }\n}\n",
    );
    assert!(
        out.contains("cycle: a → b → a") || out.contains("cycle: b → a → b"),
        "{out}"
    );
}

#[test]
fn tenants_and_labels() {
    let out = errs(
        "tenant a {\n  never_share_node_with [bb]\n}\ntenant b {\n  only_nodes { \"zone\": \"in(x,\" }\n}\nworkload w tenant c {\n}\n",
    );
    assert!(out.contains("unknown tenant `bb`"), "{out}");
    assert!(out.contains("is not a label condition"), "{out}");
    assert!(out.contains("unknown tenant `c`"), "{out}");
}

#[test]
fn failure_targets_must_exist() {
    let out = errs(
        "cluster c {\n  rack r[0..1] { node dgx_h100 x 2 }\n}\nfailures {\n  at 1 h kill node r1.n5\n  at 2 h kill node r1n1\n  at 3 h xid device r0.n1.d8\n  at 4 h power_loss node r0.n0\n  at 5 h degrade nvlink r0.n0\n}\n",
    );
    assert!(out.contains("s.orr:5:20: no node `r1.n5`"), "{out}");
    assert!(out.contains("did you mean `r1.n1`?"), "{out}");
    assert!(out.contains("has 8 devices, numbered from 0"), "{out}");
    assert!(
        out.contains("`power_loss` does not apply to a node"),
        "{out}"
    );
    assert!(out.contains("`degrade` needs `to PERCENT`"), "{out}");
}

#[test]
fn slices_need_torus_hosts_that_divide_the_chips() {
    let s = ok("cluster c {\n  slice s[0..1] node tpu_v5p_host topology 2x2x4\n}\n");
    let c = s.cluster.as_ref().unwrap();
    assert_eq!(c.node_count(), 8);
    assert_eq!(c.nodes().next().unwrap().name, "s0.h0");
    let out = errs("cluster c {\n  slice s0 node dgx_h100 topology 2x4\n}\n");
    assert!(out.contains("not linked as a `torus`"), "{out}");
    let out = errs("cluster c {\n  slice s0 node tpu_v5p_host topology 3x3\n}\n");
    assert!(out.contains("9 chips do not fill whole"), "{out}");
}

#[test]
fn every_recoverable_error_is_reported() {
    let out = errs(
        "accelerator x {\n  vendr acme\n}\nnode n {\n  cpu sockets 2, cores 8\n  memory 1 TB/s\n  device Q x 2\n}\ncluster c {\n  node nope x 1\n}\nexperiment e {\n  metrics makespan, goodputt\n}\n",
    );
    for needle in [
        "s.orr:2:3",
        "s.orr:6:10",
        "s.orr:7:10",
        "s.orr:10:8",
        "s.orr:13:21",
    ] {
        assert!(out.contains(needle), "missing {needle} in:\n{out}");
    }
    // Syntax errors and resolution errors of the same file come together.
    let out = errs(
        "node n {\n  cpu sockets 2 cores 8 @\n  memory 1 TB\n}\ncluster c {\n  node n x 1\n  fabrik leaf_spine\n}\n",
    );
    assert!(out.contains("s.orr:2:25"), "{out}");
    assert!(out.contains("s.orr:7:3"), "{out}");
}

#[test]
fn experiments_validate_metrics_plots_and_sweeps() {
    let s = ok(
        "experiment e {\n  seeds 1..20\n  sweep policy in [ray_default, topology_aware]\n  metrics makespan, goodput\n  plot timeline, cdf(latency), bars(goodput)\n}\n",
    );
    assert_eq!(s.experiments[0].runs(), 2 * 20);
    let out = errs(
        "experiment e {\n  sweep policy in [ray_defualt]\n  sweep replicas in [1, 2]\n  plot cdf(latency), heatmap(policy, x)\n}\n",
    );
    assert!(out.contains("`replicas` cannot be swept"), "{out}");
    assert!(out.contains("did you mean `ray_default`?"), "{out}");
    assert!(out.contains("is not swept"), "{out}");
}

#[test]
fn in_memory_scenarios_cannot_include() {
    let out = errs("include \"other.orr\"\n");
    assert!(
        out.contains("only available in scenario files on disk"),
        "{out}"
    );
}

#[test]
fn includes_stay_inside_the_scenario_folder_and_do_not_cycle() {
    let dir = std::env::temp_dir().join(format!("orrery-inc-{}", std::process::id()));
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(dir.join("outside.orr"), "").unwrap();
    std::fs::write(
        sub.join("main.orr"),
        "include \"../outside.orr\"\ninclude \"a.orr\"\n",
    )
    .unwrap();
    std::fs::write(sub.join("a.orr"), "include \"b.orr\"\n").unwrap();
    std::fs::write(
        sub.join("b.orr"),
        "include \"a.orr\"\naccelerator q {\n  bogus 1\n}\n",
    )
    .unwrap();
    let l = orrery::load_file(&sub.join("main.orr")).unwrap();
    let out = l.render(false);
    assert!(out.contains("is outside the scenario's folder"), "{out}");
    assert!(out.contains("includes itself"), "{out}");
    assert!(
        out.contains("b.orr:3:3"),
        "errors in included files name that file: {out}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn calibration_statements_need_a_profile_name() {
    let out = errs("calibration\n");
    assert!(
        out.contains("s.orr:1:12") && out.contains("needs a calibration profile name"),
        "{out}"
    );
    let out = errs("calibration \"h200_datasheet\"\n");
    assert!(
        out.contains("s.orr:1:13: expected a calibration profile name, found a string"),
        "{out}"
    );
    let out = errs("accelerator a from H200 {\n  profile 3\n}\n");
    assert!(
        out.contains("s.orr:2:11: expected a calibration profile name"),
        "{out}"
    );
}

#[test]
fn zone_uplink_without_zones_is_a_warning() {
    let l = orrery::load_str(
        "t.orr",
        "cluster c {\n  rack r0 {\n    node dgx_h100 x 2\n  }\n  fabric leaf_spine zone_uplink 800 Gbps\n}\n",
    );
    assert!(!l.has_errors());
    let text = l.render(false);
    assert!(
        text.contains("t.orr:5:3") && text.contains("`zone_uplink` has no effect"),
        "{text}"
    );
}

const STORAGE_NODES: &str = "  rack r0 {\n    node dgx_h100 x 2\n  }\n  fabric leaf_spine\n";

/// A cluster with `storage` lines and a training job whose checkpoint line is `ckpt`.
fn with_storage(storage: &str, ckpt: &str) -> String {
    format!(
        "cluster c {{\n{STORAGE_NODES}{storage}}}\nworkload w {{\n  placement_group g strategy PACK {{\n    bundle {{ GPU: 8 }}\n  }}\n  training t on g steps 10 {{\n    compute 1 PFLOP per device bf16\n    {ckpt}\n  }}\n}}\n"
    )
}

#[test]
fn storage_blocks_are_checked() {
    // Line 6 is the first storage line.
    let out = errs(&with_storage(
        "  storage pfs {\n    bandwidth 100 GB/s\n    attach fabirc\n  }\n",
        "checkpoint every 1 h size 1 TB",
    ));
    assert!(
        out.contains("s.orr:8:12: unknown storage attachment `fabirc`")
            && out.contains("did you mean `fabric`?"),
        "{out}"
    );
    let out = errs(&with_storage(
        "  storage pfs {\n    bandwidth 0 GB/s\n    attach fabric\n  }\n",
        "checkpoint every 1 h size 1 TB",
    ));
    assert!(
        out.contains("s.orr:7:15: bandwidth must be greater than zero"),
        "{out}"
    );
    let out = errs(&with_storage(
        "  storage pfs {\n    bandwidth 2 TB\n    attach fabric\n  }\n",
        "checkpoint every 1 h size 1 TB",
    ));
    assert!(
        out.contains("s.orr:7:15: expected bandwidth, found bytes (`TB`)"),
        "{out}"
    );
    let out = errs(&with_storage(
        "  storage pfs {\n    attach fabric\n  }\n  storage nv {\n    bandwidth 5 GB/s\n  }\n",
        "checkpoint every 1 h size 1 TB to pfs",
    ));
    assert!(
        out.contains("s.orr:6:11: storage `pfs` needs `bandwidth`")
            && out.contains("s.orr:9:11: storage `nv` needs `attach`"),
        "{out}"
    );
    let out = errs(&with_storage(
        "  storage pfs {\n    bandwidth 1 GB/s\n    attach fabric\n  }\n  storage pfs {\n    bandwidth 2 GB/s\n    attach fabric\n  }\n",
        "checkpoint every 1 h size 1 TB",
    ));
    assert!(
        out.contains("s.orr:10:11: storage `pfs` is declared twice")
            && out.contains("first declared here"),
        "{out}"
    );
    // A fabric storage needs a fabric.
    let out = errs(
        "cluster c {\n  node dgx_h100 x 1\n  storage pfs {\n    bandwidth 1 GB/s\n    attach fabric\n  }\n}\n",
    );
    assert!(
        out.contains(
            "s.orr:5:12: storage `pfs` attaches to the fabric, but cluster `c` has no `fabric`"
        ) && out.contains("attach node_local"),
        "{out}"
    );
}

#[test]
fn checkpoints_name_a_storage() {
    let two = "  storage pfs {\n    bandwidth 100 GB/s\n    attach fabric\n  }\n  storage nvme {\n    bandwidth 12 GB/s\n    attach node_local\n  }\n";
    let out = errs(&with_storage(two, "checkpoint every 1 h size 1 TB to nvm"));
    assert!(
        out.contains("s.orr:21:39: unknown storage `nvm`") && out.contains("did you mean `nvme`?"),
        "{out}"
    );
    let out = errs(&with_storage(two, "checkpoint every 1 h size 1 TB"));
    assert!(
        out.contains(
            "s.orr:21:5: the cluster declares 2 storages; say which one the checkpoint goes to"
        ) && out.contains("add `to NAME`, one of: pfs, nvme"),
        "{out}"
    );
    let out = errs(&with_storage("", "checkpoint every 1 h size 1 TB to pfs"));
    assert!(
        out.contains("s.orr:13:39: unknown storage `pfs`")
            && out.contains("declare it in the cluster"),
        "{out}"
    );
    let ckpt = |s: &orrery::scenario::Spec| {
        s.workloads[0].training[0]
            .checkpoint
            .as_ref()
            .unwrap()
            .storage
    };
    let s = ok(&with_storage(two, "checkpoint every 1 h size 1 TB to nvme"));
    assert_eq!(ckpt(&s), Some(1));
    let c = s.cluster.as_ref().unwrap();
    assert_eq!(c.storage[1].name, "nvme");
    assert_eq!(
        c.storage[1].attach,
        orrery::scenario::cluster::Attach::NodeLocal
    );
    assert_eq!(c.storage[0].bandwidth.0, 100e9);
    assert_eq!(
        c.storage[0].latency,
        orrery::scenario::cluster::DEFAULT_STORAGE_LATENCY
    );
    // The only storage is the default; without one the checkpoint names none.
    let one = "  storage pfs {\n    bandwidth 100 GB/s\n    attach fabric\n    latency 1 ms\n  }\n";
    let s = ok(&with_storage(one, "checkpoint every 1 h size 1 TB"));
    assert_eq!(ckpt(&s), Some(0));
    assert_eq!(s.cluster.as_ref().unwrap().storage[0].latency.0, 1_000_000);
    assert_eq!(
        ckpt(&ok(&with_storage("", "checkpoint every 1 h size 1 TB"))),
        None
    );
}

#[test]
fn tenant_no_rdma_forbids_rdma_transports_where_they_are_selected() {
    let out = errs(
        "tenant secure {\n  no_rdma\n}\ntransport fast {\n  kind nixl\n}\nworkload w tenant secure {\n  transport fast\n  tasks t x 1 {\n    duration 1 s\n    transport rdma\n  }\n  actor a {\n    transport gloo\n  }\n}\n",
    );
    assert!(
        out.contains("s.orr:8:3: workload `w` may not use transport `fast`: tenant `secure` has `no_rdma` and transport `fast` (kind nixl) uses RDMA"),
        "{out}"
    );
    assert!(
        out.contains("s.orr:11:5: workload `w` may not use transport `rdma`: tenant `secure` has `no_rdma` and transport `rdma` uses RDMA"),
        "{out}"
    );
    assert!(out.contains("the tenant's rule"), "{out}");
    assert!(!out.contains("`gloo`"), "gloo is TCP: {out}");
    // NCCL counts as RDMA (see `kind_uses_rdma`).
    let out = errs(
        "tenant secure {\n  no_rdma\n}\nworkload w tenant secure {\n  actor a {\n    transport nccl\n  }\n}\n",
    );
    assert!(
        out.contains("s.orr:6:5: workload `w` may not use transport `nccl`: tenant `secure` has `no_rdma` and transport `nccl` uses RDMA"),
        "{out}"
    );
}

#[test]
fn tenant_transport_allow_list() {
    let out = errs(
        "tenant t {\n  transports [object_store, nccl]\n}\nworkload w tenant t {\n  actor a {\n    transport gloo\n  }\n  tasks x x 1 {\n    duration 1 s\n    transport object_store\n  }\n}\n",
    );
    assert!(
        out.contains("s.orr:6:5: workload `w` may not use transport `gloo`: tenant `t` allows only `transports [object_store, nccl]`; transport `gloo` is not among them"),
        "{out}"
    );
    assert_eq!(out.matches("may not use").count(), 1, "{out}");
    let out = errs("tenant t {\n  transports [object_store, ncl]\n}\n");
    assert!(
        out.contains("s.orr:2:29: unknown transport `ncl`") && out.contains("did you mean `nccl`?"),
        "{out}"
    );
    let out = errs("tenant t {\n  no_rdma\n  transports [gloo, nccl]\n}\n");
    assert!(
        out.contains(
            "s.orr:3:3: tenant `t` has `no_rdma` but allows transport `nccl`, which uses RDMA"
        ),
        "{out}"
    );
    // The object store is always allowed, even when not listed.
    ok(
        "tenant t {\n  no_rdma\n  transports [gloo]\n}\nworkload w tenant t {\n  transport object_store\n  tasks x x 1 {\n    duration 1 s\n  }\n}\n",
    );
}

#[test]
fn run_time_transport_checks_and_fallback() {
    use orrery::scenario::transport::{allowed_transport, fallback_transport, kind_uses_rdma};
    let s = ok(
        "tenant open {\n  priority 1\n}\ntenant secure {\n  no_rdma\n}\ntenant listed {\n  transports [tcp_tuned]\n}\ntransport tcp_tuned {\n  kind tcp\n}\ntransport ib {\n  kind gpudirect_rdma\n}\n",
    );
    for k in ["rdma", "gpudirect_rdma", "host_staged_rdma", "nixl", "nccl"] {
        assert!(kind_uses_rdma(k), "{k}");
    }
    for k in ["object_store", "tcp", "gloo", "nvlink_p2p"] {
        assert!(!kind_uses_rdma(k), "{k}");
    }
    assert_eq!(allowed_transport(&s, 0, "nccl"), Ok(()));
    assert_eq!(
        allowed_transport(&s, 1, "ib"),
        Err(
            "tenant `secure` has `no_rdma` and transport `ib` (kind gpudirect_rdma) uses RDMA"
                .into()
        )
    );
    assert_eq!(allowed_transport(&s, 1, "tcp_tuned"), Ok(()));
    assert_eq!(allowed_transport(&s, 2, "tcp_tuned"), Ok(()));
    assert_eq!(
        allowed_transport(&s, 2, "tcp"),
        Err("tenant `listed` allows only `transports [tcp_tuned]`; transport `tcp` is not among them".into())
    );
    for t in 0..3 {
        let f = fallback_transport(&s, t);
        assert_eq!(f, "object_store");
        assert_eq!(allowed_transport(&s, t, f), Ok(()));
    }
    // No tenant (an index past the tenants): anything goes.
    assert_eq!(allowed_transport(&s, 9, "rdma"), Ok(()));
}

#[test]
fn tenant_accelerators_must_be_known() {
    let out = errs("tenant t {\n  accelerators [H100_SXM, L40]\n}\n");
    assert!(
        out.contains("s.orr:2:27: unknown accelerator `L40`")
            && out.contains("did you mean `L40S`?"),
        "{out}"
    );
    let s = ok("tenant t {\n  accelerators [H100_SXM, L4]\n}\n");
    assert_eq!(
        s.tenants[0].accelerators,
        Some(vec!["H100_SXM".to_string(), "L4".to_string()])
    );
}

#[test]
fn work_larger_than_its_tenant_quota_is_an_error() {
    let out = errs(&format!(
        "{NODE}cluster c {{\n  node box x 2\n}}\ntenant a {{\n  quota {{ GPU: 2, memory: 8 GiB }}\n}}\nworkload w tenant a {{\n  tasks t x 1 {{\n    resources {{ GPU: 4 }}\n    duration 1 s\n  }}\n  actor big {{\n    resources {{ CPU: 1, memory: 16 GiB }}\n  }}\n  placement_group pg strategy PACK {{\n    bundle {{ GPU: 1 }} x 3\n  }}\n  tasks fine x 9 {{\n    resources {{ GPU: 2 }}\n    duration 1 s\n  }}\n}}\n"
    ));
    assert!(
        out.contains("s.orr:16:5: a task of group `t` needs 4 `GPU`, more than tenant `a`'s quota of 2; it could never be placed"),
        "{out}"
    );
    assert!(
        out.contains("s.orr:20:5: actor `big` needs 16 GiB `memory`, more than tenant `a`'s quota of 8 GiB; it could never be placed"),
        "{out}"
    );
    assert!(
        out.contains("s.orr:22:3: placement group `pg` (all its bundles together) needs 3 `GPU`, more than tenant `a`'s quota of 2; it could never be placed"),
        "{out}"
    );
    assert!(out.contains("the quota"), "{out}");
    assert_eq!(out.matches("could never be placed").count(), 3, "{out}");
    let out = errs("tenant a {\n  quota { GPUS: 2 }\n}\n");
    assert!(
        out.contains("s.orr:2:11: no node in scope offers resource `GPUS`")
            && out.contains("did you mean `GPU`?"),
        "{out}"
    );
    let out = errs("tenant a {\n  quota { GPU: -1 }\n}\n");
    assert!(
        out.contains("s.orr:2:16: a quota must not be negative"),
        "{out}"
    );
    let s = ok("tenant a {\n  quota { GPU: 2, memory: 1 GiB }\n}\n");
    assert_eq!(s.tenants[0].quota["memory"], (1u64 << 30) as f64);
}

const L4BOX: &str =
    "node l4box {\n  cpu sockets 1, cores 16\n  memory 128 GiB\n  device L4 x 4 link none\n}\n";

#[test]
fn device_memory_larger_than_every_candidate_device_is_an_error() {
    let out = errs(&format!(
        "{L4BOX}cluster c {{\n  node l4box x 2\n}}\nworkload w {{\n  tasks t x 1 {{\n    resources {{ GPU: 1 }}\n    device_memory 30 GB\n    duration 1 s\n  }}\n  tasks cpu x 1 {{\n    device_memory 1 GB\n    duration 1 s\n  }}\n  placement_group pg strategy PACK {{\n    bundle {{ GPU: 1 }}\n  }}\n  training j on pg steps 1 {{\n    compute 1 TFLOP per device bf16\n    device_memory 40 GB\n  }}\n  actor a {{\n    resources {{ GPU: 0.5 }}\n    device_memory 24 GB\n  }}\n}}\n"
    ));
    assert!(
        out.contains(
            "s.orr:12:5: task group `t` needs 27.9 GiB of device memory per device; L4 has 22.5 GiB"
        ),
        "{out}"
    );
    assert!(
        out.contains("s.orr:16:5: task group `cpu` has `device_memory` but requests no device"),
        "{out}"
    );
    assert!(
        out.contains(
            "s.orr:24:5: training `j` needs 37.3 GiB of device memory per device; L4 has 22.5 GiB"
        ),
        "{out}"
    );
    // 24 GB fits a 24 GB L4 exactly.
    assert_eq!(out.matches("device memory per device").count(), 2, "{out}");
    let out = errs(
        "workload w {\n  actor a {\n    resources { GPU: 1 }\n    device_memory 0 GB\n  }\n}\n",
    );
    assert!(
        out.contains("s.orr:4:19: device memory must be greater than zero"),
        "{out}"
    );
}

#[test]
fn device_memory_candidates_follow_the_tenant_accelerators() {
    let both = format!(
        "{L4BOX}{NODE}cluster c {{\n  node l4box x 2\n  node box x 1\n}}\ntenant t {{\n  accelerators [L4]\n}}\n"
    );
    // Without the tenant the 80 GB H100s are candidates.
    let s = ok(&format!(
        "{both}workload w {{\n  service s {{\n    resources {{ GPU: 1 }}\n    arrival poisson 10 /s\n    service_time 1 ms\n    device_memory 30 GB\n  }}\n}}\n"
    ));
    assert_eq!(
        s.workloads[0].services[0].device_memory,
        Some(orrery::units::Bytes(30_000_000_000))
    );
    let out = errs(&format!(
        "{both}workload w tenant t {{\n  service s {{\n    resources {{ GPU: 1 }}\n    arrival poisson 10 /s\n    service_time 1 ms\n    device_memory 30 GB\n  }}\n}}\n"
    ));
    assert!(
        out.contains(
            "s.orr:25:5: service `s` needs 27.9 GiB of device memory per device; L4 has 22.5 GiB"
        ),
        "{out}"
    );
    let s = ok(&format!(
        "{both}workload w {{\n  placement_group pg strategy PACK {{\n    bundle {{ GPU: 4 }}\n  }}\n  training j on pg steps 1 {{\n    compute 1 TFLOP per device bf16\n    device_memory 60 GB\n  }}\n}}\n"
    ));
    assert_eq!(
        s.workloads[0].placement_group_device_memory("pg"),
        Some(orrery::units::Bytes(60_000_000_000))
    );
}

#[test]
fn tensors_and_payloads_name_real_groups_and_positive_sizes() {
    let w = |body: &str| {
        format!(
            "{NODE}cluster c {{\n  node box x 1\n}}\nworkload w {{\n  actor prefill x 2 {{\n    resources {{ GPU: 1 }}\n{body}  }}\n  actor decode x 2 {{\n    resources {{ GPU: 1 }}\n  }}\n  service s {{\n    arrival poisson 1 /s\n    service_time 1 ms\n    request 1 KiB\n    response 2 KiB\n  }}\n}}\n"
        )
    };
    ok(&w("    tensor 1 GB to decode\n"));
    let out = errs(&w("    tensor 1 GB to decod\n"));
    assert!(
        out.contains("no actor group `decod` in workload `w`"),
        "{out}"
    );
    assert!(out.contains("did you mean `decode`?"), "{out}");
    assert!(out.contains("s.orr:14:20"), "{out}");
    let out = errs(&w("    tensor 1 GB to prefill\n"));
    assert!(
        out.contains("actor `prefill` sends its tensors to itself"),
        "{out}"
    );
    let out = errs(&w("    tensor 0 GB to decode\n"));
    assert!(
        out.contains("a tensor size must be greater than zero"),
        "{out}"
    );
    let out = errs(&w("    tensor -1 GB to decode\n"));
    assert!(out.contains("s.orr:14:12"), "{out}");
    let out = errs(&w("    tensor 1 GB\n"));
    assert!(out.contains("to ACTOR_GROUP"), "{out}");
    let out = errs(&w("").replace("request 1 KiB", "request 0 B"));
    assert!(
        out.contains("a request size must be greater than zero"),
        "{out}"
    );
}
