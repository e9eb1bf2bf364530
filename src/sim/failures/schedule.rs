//! Failure schedules: scheduled failures of the scenario's `failures` blocks as events, and
//! random failures as alternating renewal processes per unit, each on its own random stream.
//!
//! Architecture invariant: changes no cluster state itself: it schedules events and hands
//! each random failure to `nodes` or `devices`.

use crate::engine::{Time, rng_stream, stream_id};
use crate::placement::NodeId;
use crate::scenario::failure::{Distribution, SWITCH_LINK};
use crate::sim::FailureEv as F;
use crate::sim::World;
use crate::sim::failures::Failures;
use crate::sim::{Ev, Sim};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution as _, Exp, LogNormal, Weibull};

/// A unit a random failure process fails: its nodes, the device or NIC when the unit is one,
/// and the label of its random stream.
type Unit = (
    Vec<NodeId>,
    Option<usize>,
    Option<usize>,
    Option<u32>,
    String,
);

/// A random failure process over one unit (a node, or all nodes of a rack, slice or zone).
pub(crate) struct Process {
    nodes: Vec<NodeId>,
    /// For device failures: which device of `nodes[0]`.
    device: Option<usize>,
    /// For NIC and link failures: which NIC of `nodes[0]`.
    nic: Option<usize>,
    /// For switch failures (no nodes): which switch of the explicit fabric.
    switch: Option<u32>,
    mtbf: f64,
    dist: Distribution,
    repair: Option<f64>,
    repair_dist: Distribution,
    rng: ChaCha8Rng,
}

/// The nodes a failure target names.
fn nodes_of(
    st: &NodeIndex,
    c: &crate::scenario::Cluster,
    class: &str,
    name: &str,
) -> Option<Vec<NodeId>> {
    match class {
        "node" => st.by_name.get(name).map(|x| vec![*x]),
        "head" => Some(vec![st.head]),
        "rack" | "slice" => {
            let r = c.rack_index(name)?;
            Some((0..st.racks.len()).filter(|&i| st.racks[i] == r).collect())
        }
        "zone" => {
            let z = c.zones.iter().position(|x| x == name)?;
            Some(
                (0..st.racks.len())
                    .filter(|&i| c.racks[st.racks[i]].zone == Some(z))
                    .collect(),
            )
        }
        _ => None,
    }
}

/// `<node>.nic<i>` → (node, NIC index).
fn nic_of(st: &NodeIndex, name: &str) -> Option<(NodeId, usize)> {
    let (node, part) = name.rsplit_once('.')?;
    let nic = part.strip_prefix("nic")?.parse().ok()?;
    Some((*st.by_name.get(node)?, nic))
}

/// `<node>.d<i>` → (node, device index).
fn device_of(st: &NodeIndex, name: &str) -> Option<(NodeId, usize)> {
    let (node, part) = name.rsplit_once('.')?;
    let dev = part.strip_prefix('d')?.parse().ok()?;
    Some((*st.by_name.get(node)?, dev))
}

/// What failure targets need of the cluster state: names, racks and the head.
pub(crate) struct NodeIndex {
    by_name: std::collections::HashMap<String, NodeId>,
    racks: Vec<usize>,
    head: NodeId,
}

/// A failure event as the queue holds it.
fn ev(f: F) -> Ev {
    Ev::Failure(f)
}

impl crate::placement::ClusterState {
    fn node_index(&self) -> NodeIndex {
        NodeIndex {
            by_name: self
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name().to_string(), i))
                .collect(),
            racks: self.nodes.iter().map(|n| n.rack()).collect(),
            head: self.head,
        }
    }
}

fn sample(
    d: &Distribution,
    mean: f64,
    rng: &mut ChaCha8Rng,
    empirical: &std::collections::BTreeMap<String, Vec<f64>>,
) -> f64 {
    match d {
        Distribution::Exponential => Exp::new(1.0 / mean).map(|e| e.sample(rng)).unwrap_or(mean),
        Distribution::Weibull { shape } => {
            let scale = mean / libm::tgamma(1.0 + 1.0 / shape);
            Weibull::new(scale, *shape)
                .map(|w| w.sample(rng))
                .unwrap_or(mean)
        }
        Distribution::LogNormal { sigma } => {
            let mu = mean.ln() - sigma * sigma / 2.0;
            LogNormal::new(mu, *sigma)
                .map(|l| l.sample(rng))
                .unwrap_or(mean)
        }
        Distribution::Empirical { path, .. } => match empirical.get(path) {
            Some(xs) if !xs.is_empty() => {
                use rand::RngExt;
                let m = xs.iter().sum::<f64>() / xs.len() as f64;
                let x = xs[rng.random_range(0..xs.len())];
                if m > 0.0 { x * mean / m } else { mean }
            }
            _ => mean,
        },
    }
}

impl Sim<'_> {
    pub(crate) fn random_failure(&mut self, p: usize) {
        let nodes = self.failures.processes[p].nodes.clone();
        let device = self.failures.processes[p].device;
        let nic = self.failures.processes[p].nic;
        let switch = self.failures.processes[p].switch;
        if let Some(s) = switch {
            self.switch_down(s);
        }
        match (device, nic) {
            (Some(d), _) => self.device_fault(nodes[0], d),
            (None, Some(i)) => self.nic_down(nodes[0], i),
            (None, None) => {
                for &n in &nodes {
                    self.node_crash(n);
                }
            }
        }
        let f = &mut self.failures;
        let pr = &mut f.processes[p];
        if let Some(mean) = pr.repair {
            let d = sample(&pr.repair_dist, mean, &mut pr.rng, &f.empirical).max(1.0) as Time;
            let back = self.w.q.now().saturating_add(d);
            if let Some(s) = switch {
                self.w.q.at(back, ev(F::SwitchUp(s)));
            }
            for &n in &nodes {
                self.w.q.at(
                    back,
                    match (device, nic) {
                        (Some(d), _) => ev(F::DeviceRepair(n as u32, d as u32)),
                        (None, Some(i)) => ev(F::NicUp(n as u32, i as u32)),
                        (None, None) => ev(F::NodeRepair(n as u32)),
                    },
                );
            }
            // The next failure is measured from the repair (alternating renewal process).
            let x = sample(&pr.dist, pr.mtbf, &mut pr.rng, &f.empirical).max(1.0) as Time;
            self.w.q.at(back.saturating_add(x), ev(F::Random(p as u32)));
        }
    }
}

impl Failures {
    /// Schedule the scenario's failures (every `failures` block, or only `only` when given).
    pub(in crate::sim) fn schedule_failures(
        &mut self,
        world: &mut World<'_>,
        seed: u64,
        only: Option<&str>,
        empirical: &std::collections::BTreeMap<String, Vec<f64>>,
    ) {
        let spec = world.spec;
        let n = world.node_types.len();
        self.down_since = vec![None; n];
        self.cut_off = vec![false; n];
        self.empirical = empirical.clone();
        let Some(c) = &spec.cluster else { return };
        let blocks: Vec<&crate::scenario::Failures> = spec
            .failures
            .iter()
            .filter(|f| only.is_none_or(|o| f.name.as_deref() == Some(o)))
            .collect();
        if let Some(b) = blocks.first() {
            self.detection = b.detection;
        }
        let st = world.state.node_index();
        let nodes_of = |class: &str, name: &str| nodes_of(&st, c, class, name);
        for b in &blocks {
            for f in &b.scheduled {
                // Each failure kind: the event that starts it and the one that ends it.
                let named = |name: &str| st.by_name.get(name).copied();
                let switch = |name: &str| world.explicit_fabric().and_then(|x| x.switch(name));
                let pair = match (f.target.class.as_str(), f.action.as_str()) {
                    ("device", "xid" | "kill") => device_of(&st, &f.target.name).map(|(n, d)| {
                        (
                            ev(F::DeviceFault(n as u32, d as u32)),
                            ev(F::DeviceRepair(n as u32, d as u32)),
                        )
                    }),
                    ("nvlink", "degrade") => named(&f.target.name).zip(f.to).map(|(n, to)| {
                        (
                            ev(F::NvlinkDegrade(n as u32, (to.0 * 1000.0).round() as u32)),
                            ev(F::NvlinkRestore(n as u32)),
                        )
                    }),
                    ("nic" | "link", "down" | "kill") => {
                        nic_of(&st, &f.target.name).map(|(n, i)| {
                            (
                                ev(F::NicDown(n as u32, i as u32)),
                                ev(F::NicUp(n as u32, i as u32)),
                            )
                        })
                    }
                    ("nic" | "link", "degrade") => {
                        nic_of(&st, &f.target.name).zip(f.to).map(|((n, i), to)| {
                            let (n, i, pm) = (n as u32, i as u32, (to.0 * 1000.0).round() as u16);
                            (ev(F::NicDegrade(n, i, pm)), ev(F::NicDegrade(n, i, 1000)))
                        })
                    }
                    ("switch", "down" | "kill") => {
                        switch(&f.target.name).map(|s| (ev(F::SwitchDown(s)), ev(F::SwitchUp(s))))
                    }
                    (SWITCH_LINK, "down" | "degrade") => f
                        .target
                        .name
                        .split_once(' ')
                        .and_then(|(a, b)| switch(a).zip(switch(b)))
                        .map(|(a, b)| {
                            let to = f.to.map_or(0, |t| (t.0 * 1000.0).round() as u16);
                            (ev(F::SwitchLink(a, b, to)), ev(F::SwitchLink(a, b, 1000)))
                        }),
                    ("node", "down") => named(&f.target.name)
                        .map(|n| n as u32)
                        .map(|n| (ev(F::NodeUnreachable(n)), ev(F::NodeRepair(n)))),
                    _ => None,
                };
                if let Some((down, up)) = pair {
                    world.q.at(f.at.0, down);
                    if let Some(d) = f.duration {
                        world.q.at(f.at.0.saturating_add(d.0), up);
                    }
                    continue;
                }
                let simulated = matches!(f.action.as_str(), "kill" | "power_loss");
                match (simulated, nodes_of(&f.target.class, &f.target.name)) {
                    (true, Some(nodes)) => {
                        for node in nodes {
                            world.q.at(f.at.0, ev(F::NodeCrash(node as u32)));
                            if let Some(d) = f.duration {
                                world
                                    .q
                                    .at(f.at.0.saturating_add(d.0), ev(F::NodeRepair(node as u32)));
                            }
                        }
                    }
                    _ => self.unsimulated.push(format!(
                        "at {}: {} {} {}",
                        f.at, f.action, f.target.class, f.target.name
                    )),
                }
            }
            for (k, r) in b.random.iter().enumerate() {
                // Failure units: (nodes, device, NIC, stream label). Labels name the unit, so
                // adding a unit never shifts another unit's randomness.
                let bn = b.name.as_deref().unwrap_or("");
                let whole = |units: Vec<Vec<NodeId>>| -> Vec<Unit> {
                    units
                        .into_iter()
                        .enumerate()
                        .map(|(u, nodes)| {
                            (
                                nodes,
                                None,
                                None,
                                None,
                                format!("failure/{bn}/{k}/{}/{u}", r.class),
                            )
                        })
                        .collect()
                };
                let units = match r.class.as_str() {
                    // The head has its own class (`random head`): its loss is the cluster's.
                    "node" => whole(
                        (0..n)
                            .filter(|&i| i != world.state.head)
                            .map(|i| vec![i])
                            .collect(),
                    ),
                    "head" => whole(vec![vec![world.state.head]]),
                    "rack" => whole(
                        c.racks
                            .iter()
                            .filter(|rk| rk.slice.is_none() && !rk.name.is_empty())
                            .filter_map(|rk| nodes_of("rack", &rk.name))
                            .collect(),
                    ),
                    "slice" => whole(
                        c.racks
                            .iter()
                            .filter(|rk| rk.slice.is_some())
                            .filter_map(|rk| nodes_of("slice", &rk.name))
                            .collect(),
                    ),
                    "zone" => whole(c.zones.iter().filter_map(|z| nodes_of("zone", z)).collect()),
                    "nic" | "link" => (0..n)
                        .flat_map(|node| {
                            (0..world.health.nics[node].len()).map(move |nic| (node, nic))
                        })
                        .map(|(node, nic)| {
                            (
                                vec![node],
                                None,
                                Some(nic),
                                None,
                                format!("failure/{bn}/{k}/{}/{node}/{nic}", r.class),
                            )
                        })
                        .collect(),
                    "device" => (0..n)
                        .flat_map(|node| {
                            (0..world.node_types[node].device_count() as usize)
                                .map(move |dev| (node, dev))
                        })
                        .map(|(node, dev)| {
                            (
                                vec![node],
                                Some(dev),
                                None,
                                None,
                                format!("failure/{bn}/{k}/device/{node}/{dev}"),
                            )
                        })
                        .collect(),
                    "switch" => {
                        let names = world
                            .explicit_fabric()
                            .map(|x| x.names.clone())
                            .unwrap_or_default();
                        names
                            .iter()
                            .enumerate()
                            .map(|(s, name)| {
                                let label = format!("failure/{bn}/{k}/switch/{name}");
                                (Vec::new(), None, None, Some(s as u32), label)
                            })
                            .collect()
                    }
                    other => {
                        self.unsimulated
                            .push(format!("random {other} failures (mtbf {})", r.mtbf));
                        continue;
                    }
                };
                for (nodes, device, nic, switch, label) in units {
                    let p = self.processes.len();
                    self.processes.push(Process {
                        nodes,
                        device,
                        nic,
                        switch,
                        mtbf: r.mtbf.0 as f64,
                        dist: r.distribution.clone(),
                        repair: r.repair.map(|d| d.0 as f64),
                        repair_dist: r.repair_distribution.clone(),
                        rng: rng_stream(seed, stream_id(&label)),
                    });
                    let first = self.next_ttf(world, p);
                    world.q.at(first, ev(F::Random(p as u32)));
                }
            }
        }
    }

    pub(super) fn next_ttf(&mut self, world: &World<'_>, p: usize) -> Time {
        let pr = &mut self.processes[p];
        let x = sample(&pr.dist, pr.mtbf, &mut pr.rng, &self.empirical);
        world.q.now().saturating_add(x.max(1.0) as Time)
    }
}
