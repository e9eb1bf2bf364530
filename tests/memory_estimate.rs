//! The memory `check` estimates bounds what a run uses (issue 42): over generated scenarios
//! (node types of every kind, fabrics built-in and explicit, TPU slices and rack-scale
//! NVSwitch domains, tasks, actors, training and overloaded services), the estimate is at most
//! the heap the run holds at its peak, and within a stated factor of it where the cluster is
//! most of the memory. Measured with the counting allocator the binary uses for
//! `--max-memory` (`orrery::budget::alloc`), installed here too; this file has one test so
//! that no other test allocates while it measures.

use orrery::budget::alloc::{self, Counting};
use orrery::sim::{SimConfig, simulate};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::collections::BTreeMap;

#[global_allocator]
static HEAP: Counting = Counting;

const BOX: &str = "node box {\n  cpu sockets 1, cores 32, numa 1, threads 64, model \"t\"\n  memory 256 GiB\n  pcie gen5\n  source \"test\"\n}\n";

/// (node type, nodes per rack it fits as: a slice's topology or a rack's count).
const TYPES: &[&str] = &[
    "box",
    "dgx_h100",
    "hgx_a100",
    "mi300x_8",
    "g6_l4",
    "trn2_48xlarge",
    "gb200_nvl72_tray",
    "tpu_v5p_host",
];

#[derive(Debug, Clone)]
struct Gen {
    kind: usize,
    racks: u32,
    per_rack: u32,
    fabric: usize,
    tasks: u32,
    actors: u32,
    service: Option<(u32, u32)>,
    training: bool,
}

fn scenario(g: &Gen) -> String {
    let nt = TYPES[g.kind];
    let mut s = String::from(BOX);
    s += "cluster c {\n";
    if nt == "tpu_v5p_host" {
        // A 2x2x4 slice is 4 hosts of 4 chips.
        s += &format!(
            "  rack ctl {{\n    node box x 1\n  }}\n  slice s[0..{}] node tpu_v5p_host topology 2x2x4\n  head ctl.n0\n",
            g.racks - 1
        );
    } else {
        let per = if nt == "gb200_nvl72_tray" {
            g.per_rack.min(18)
        } else {
            g.per_rack
        };
        s += &format!(
            "  rack r[0..{}] {{\n    node {nt} x {per}\n  }}\n",
            g.racks - 1
        );
    }
    let explicit = format!(
        "  fabric explicit latency 1 us {{\n    switch g grid 4x4\n    link g 50 GB/s pattern clique\n    \
         attach r[0..{}] g.1.2\n  }}\n",
        g.racks - 1
    );
    s += match g.fabric {
        0 => "",
        1 => "  fabric rail_optimized oversubscription 2:1\n",
        3 if nt != "tpu_v5p_host" => &explicit,
        _ => "  fabric leaf_spine\n",
    };
    s += "}\nworkload w {\n";
    if g.tasks > 0 {
        s += &format!(
            "  tasks t x {} {{\n    resources {{ CPU: 1 }}\n    duration 1 s\n  }}\n",
            g.tasks
        );
    }
    if g.actors > 0 {
        s += &format!(
            "  actor a x {} {{\n    resources {{ CPU: 1 }}\n    calls 3\n    call_duration 1 s\n  }}\n",
            g.actors
        );
    }
    if let Some((rate, ms)) = g.service {
        s += &format!(
            "  service s {{\n    replicas 1\n    resources {{ CPU: 1 }}\n    arrival poisson {rate} /s\n    service_time {ms} ms\n  }}\n"
        );
    }
    if g.training {
        s += "  placement_group pg strategy PACK {\n    bundle { CPU: 1 } x 2\n  }\n  training j on pg steps 20 {\n    compute 1 TFLOP per device bf16\n  }\n";
    }
    s += "}\n";
    if g.service.is_some() {
        s += "experiment e {\n  horizon 60 s\n}\n";
    }
    s
}

fn generator() -> impl Strategy<Value = Gen> {
    (
        0..TYPES.len(),
        1u32..=6,
        1u32..=12,
        0usize..4,
        prop_oneof![Just(0u32), 1u32..3000],
        prop_oneof![Just(0u32), 1u32..300],
        proptest::option::of((1u32..400, 1u32..50)),
        any::<bool>(),
    )
        .prop_map(
            |(kind, racks, per_rack, fabric, tasks, actors, service, training)| Gen {
                kind,
                racks,
                per_rack,
                fabric,
                tasks,
                actors,
                service,
                training,
            },
        )
}

/// The estimate's bytes and the heap the run held at its peak beyond what was held before it.
fn measure(text: &str) -> Result<(f64, f64), String> {
    let l = orrery::load_str("gen.orr", text);
    let rendered = l.render(false);
    let spec = l.spec.ok_or(rendered)?;
    let window = orrery::sim::window(&spec, None).seconds;
    let e = orrery::sim::estimate::estimate(&spec, window, &BTreeMap::new());
    let cfg = SimConfig {
        timeline: true,
        ..Default::default()
    };
    let before = alloc::live();
    alloc::reset_peak();
    let r = simulate(&spec, &cfg);
    let used = alloc::peak().saturating_sub(before) as f64;
    drop(r);
    Ok((e.bytes(), used))
}

/// A run holds at most this many times the estimate, plus [`FIXED`]: the estimate counts each
/// node's links and state, each task, call and request at their smallest, and a run adds the
/// vectors' spare capacity, the placement index and the timeline's spans.
const TIGHT: f64 = 3.0;
/// What every run keeps whatever it declares: histograms, binned series, the report's tables.
const FIXED: f64 = 2.0 * 1024.0 * 1024.0;

#[test]
fn the_memory_estimate_is_at_most_what_a_run_uses_and_close_for_clusters() {
    assert!(alloc::installed(), "the counting allocator is this test's");
    // A large cluster first: its links and nodes are nearly all of the run's memory.
    let big =
        "cluster c {\n  rack r[0..624] {\n    node dgx_h100 x 8\n  }\n  fabric rail_optimized\n}\n";
    let (est, used) = measure(big).unwrap();
    assert!(
        est <= used && used <= 1.5 * est,
        "5,000 DGX H100: estimate {est} B, used {used} B"
    );
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: std::env::var("ORRERY_CASES")
                .ok()
                .and_then(|c| c.parse().ok())
                .unwrap_or(40),
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let rows = std::cell::RefCell::new(Vec::new());
    runner
        .run(&generator(), |g| {
            let text = scenario(&g);
            let (est, used) = measure(&text).map_err(TestCaseError::fail)?;
            rows.borrow_mut()
                .push(format!("{g:?}: estimate {est:.0} B, used {used:.0} B"));
            prop_assert!(
                est <= used,
                "the estimate {est} B is over what the run used, {used} B:\n{text}"
            );
            prop_assert!(
                used <= TIGHT * est + FIXED,
                "the run used {used} B, over {TIGHT} x the estimate {est} B + {FIXED} B:\n{text}"
            );
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", rows.borrow().join("\n")));
    if std::env::var_os("ORRERY_SHOW").is_some() {
        eprintln!("{}", rows.borrow().join("\n"));
    }
}
