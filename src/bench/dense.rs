//! The dense flow-level benchmark: flows between the hosts of a saturated leaf-spine, on
//! today's set (`--dense-flows`) and on sets generated with other fan-in, oversubscription and
//! arrival spread (`--dense-sets`, issue 44).

use super::{check_sizes, leaf_spine_text_at};
use crate::engine::rng_stream;
use crate::network::drive::Step;
use rand::RngExt;
use std::time::Instant;

/// Hosts of the dense case's leaf-spine (32 racks of 32, [`leaf_spine_text_at`]).
const HOSTS: usize = 1024;

/// What [`dense_flows`] measured.
pub struct DenseRun {
    /// Flow events (arrivals and completions).
    pub events: u64,
    pub seconds: f64,
    pub peak_active: usize,
    /// Simulated seconds until the last flow finished.
    pub makespan: f64,
    /// Each flow's finish time (simulated seconds), in arrival order: what a change to the
    /// solver must leave the same (to 1e-9 relative, issue 44).
    pub finish: Vec<f64>,
    /// The solver's counts over the run.
    pub stats: crate::network::SolverStats,
}

/// Dense flow-level benchmark: `flows` transfers (10–200 MB, uniform) between random distinct
/// hosts of a 1,024-host leaf-spine ([`leaf_spine_text`](super::leaf_spine_text)), arriving
/// at uniform random times over 2 s, driven as an event loop — the next event is the next arrival or the next
/// completion, whichever is first. The spine saturates, so a thousand flows or more share it
/// at once and every event disturbs many of them. Seeded: the same run every time.
pub fn dense_flows(flows: usize) -> Result<DenseRun, String> {
    dense_flows_in(flows, &DenseSet::TODAY)
}

/// How a dense set is generated: the leaf-spine's oversubscription, how many hosts the flows
/// go to (1,024: any; fewer: an incast onto that many, fan-in flows / hosts each) and over how
/// long they arrive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DenseSet {
    pub oversubscription: u32,
    pub destinations: usize,
    pub spread_s: f64,
}

impl DenseSet {
    /// How bench names the set: `4:1, incast onto 64 hosts, over 2 s`.
    pub fn name(&self) -> String {
        let to = if self.destinations >= HOSTS {
            "any host".to_string()
        } else {
            format!("incast onto {} hosts", self.destinations)
        };
        format!(
            "{}:1, {to}, over {} s",
            self.oversubscription, self.spread_s
        )
    }

    /// The set `--dense-flows` has always run.
    pub const TODAY: DenseSet = DenseSet {
        oversubscription: 4,
        destinations: HOSTS,
        spread_s: 2.0,
    };
    /// `--dense-sets`: today's and sets that differ in fan-in, oversubscription and arrival
    /// spread (issue 44).
    pub const ALL: [DenseSet; 5] = [
        DenseSet::TODAY,
        DenseSet {
            oversubscription: 4,
            destinations: 64,
            spread_s: 2.0,
        },
        DenseSet {
            oversubscription: 2,
            destinations: HOSTS,
            spread_s: 0.5,
        },
        DenseSet {
            oversubscription: 8,
            destinations: HOSTS,
            spread_s: 8.0,
        },
        DenseSet {
            oversubscription: 1,
            destinations: 16,
            spread_s: 1.0,
        },
    ];
}

/// [`dense_flows`] on set `set`: sources any host, destinations the first
/// `set.destinations` hosts spread over the racks (every 1024/destinations-th host).
pub fn dense_flows_in(flows: usize, set: &DenseSet) -> Result<DenseRun, String> {
    check_sizes(1, 1, 0, flows, 0)?;
    use crate::network::Vertex;
    let loaded = crate::load_str("<dense>", &leaf_spine_text_at(set.oversubscription));
    let spec = loaded.spec.ok_or_else(|| {
        format!(
            "generated leaf-spine is invalid:\n{}",
            crate::diag::render(&loaded.sources, &loaded.diags, false)
        )
    })?;
    let g = crate::network::Graph::build(&spec);
    let hosts = HOSTS;
    debug_assert!(set.destinations >= 2, "an incast needs two hot hosts");
    let mut rng = rng_stream(3, 3);
    let mut arrivals = Vec::with_capacity(flows);
    let stride = hosts / set.destinations.clamp(1, hosts);
    for k in 0..flows {
        let a = rng.random_range(0..hosts);
        let b = if set.destinations >= hosts {
            let b = rng.random_range(0..hosts - 1);
            if b >= a { b + 1 } else { b }
        } else {
            // An incast: onto one of the hot hosts (another one when the source is hot).
            let mut b = rng.random_range(0..set.destinations) * stride;
            if b == a {
                b = (b + stride) % (set.destinations * stride);
            }
            b
        };
        let nic = |node| Vertex::Nic { node, nic: 0 };
        let path = g
            .route_vertices(nic(a), nic(b), k as u64)
            .ok_or("no route")?;
        let at: f64 = rng.random_range(0.0..set.spread_s);
        arrivals.push((at, path, rng.random_range(10e6..200e6)));
    }
    arrivals.sort_by(|x, y| x.0.total_cmp(&y.0));
    let t0 = Instant::now();
    let mut net = crate::network::FlowNet::new(g.capacity.clone());
    let (mut now, mut events, mut peak, mut active) = (0.0f64, 0u64, 0usize, 0usize);
    let mut next = arrivals.into_iter().peekable();
    // Flow id → arrival index (ids are reused once flows finish).
    let (mut index, mut finish, mut arrived) = (Vec::new(), vec![0.0; flows], 0usize);
    loop {
        match net.step(&mut now, next.peek().map(|a| a.0)) {
            Step::Finished(f) => {
                net.remove(f);
                finish[index[f.0 as usize]] = now;
                active -= 1;
            }
            Step::Reached => {
                let (_, path, bytes) = next.next().expect("peeked");
                let f = net.add(path, bytes).0 as usize;
                if index.len() <= f {
                    index.resize(f + 1, 0);
                }
                index[f] = arrived;
                arrived += 1;
                active += 1;
                peak = peak.max(active);
            }
            Step::Stuck => break,
        }
        events += 1;
    }
    Ok(DenseRun {
        events,
        seconds: t0.elapsed().as_secs_f64(),
        peak_active: peak,
        makespan: now,
        finish,
        stats: net.solver_stats(),
    })
}
