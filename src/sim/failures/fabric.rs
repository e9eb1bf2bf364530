//! Fabric faults of an explicit fabric (`fabric explicit { ... }`): a switch down, a link
//! between two switches down or degraded, and their repair.
//!
//! Model:
//! - Routing converges at once (a subnet manager or routing protocol recomputing paths,
//!   `network::topology`): new flows and jobs started afterwards avoid what is down.
//! - A switch down takes the links of the NICs attached to it, exactly as if each NIC had
//!   gone down (`nic_down`: jobs on the node restart with less bandwidth; a node that loses
//!   every NIC it is reached by is cut off); they come back with the switch.
//! - A training job whose collectives' routes cross a link that stopped (its switch or the
//!   link itself) sees NCCL error out, as on a broken connection: it restarts from its last
//!   checkpoint over the new routes. Jobs priced in closed form are priced from their nodes'
//!   NIC bandwidth, so only their NICs' losses reach them.
//! - A job whose nodes the fabric no longer connects cannot initialise its communicator: it
//!   waits (stopped, its devices stalled) until a repair reconnects them.
//! - Object fetches, tensors and service payloads stuck on a stopped link are sent again over
//!   the new routes (`reroute_stalled`).
//! - A degraded link carries that fraction of its bandwidth; routes do not change.
//!
//! Architecture invariant: the link graph's routing state changes only here and in
//! `devices.rs` (NICs); capacities of the run's network follow it.

use super::devices::NicLoss;
use crate::network::LinkId;
use crate::sim::Sim;
use crate::sim::World;
use crate::sim::failures::Failures;
use crate::sim::placement_groups::PlacementGroups;
use crate::sim::training::Jobs;

impl Sim<'_> {
    pub(crate) fn switch_down(&mut self, s: u32) {
        if self.failures.switches_down.contains(&s) {
            return;
        }
        let Some(g) = &mut self.w.wire.graph else {
            return;
        };
        g.set_switch(s, false);
        let links: Vec<LinkId> = g.switch_links(s);
        let nics = g.nics_on_switch(s);
        self.failures.switches_down.insert(s);
        let now = self.w.now();
        for &l in &links {
            self.w.wire.set_capacity(now, l, 0.0);
        }
        self.w.mark("switch_down", self.w.switch_name(s));
        // Its NICs' links are gone: each NIC as if it had failed (held until the switch is
        // back, whatever else repairs it).
        let mut held = Vec::new();
        for (n, i) in nics {
            if self.w.state.nodes[n].alive() && !self.w.health.nics_down[n].contains(&i) {
                held.push((n, i));
            }
        }
        self.failures.switch_nics.insert(s, held.clone());
        // All of them first, so the jobs restarted below route around every one.
        let mut lost = Vec::new();
        for (n, i) in held {
            match self.nic_off(n, i) {
                Some(NicLoss::CutOff) => {
                    self.failures.cut_off[n] = true;
                    self.node_crash_with(n, true);
                }
                Some(NicLoss::Compute) => lost.push(n),
                _ => {}
            }
        }
        lost.dedup();
        self.restart_jobs_on(&lost);
        self.fabric_changed(&links);
    }

    pub(crate) fn switch_up(&mut self, s: u32) {
        if !self.failures.switches_down.remove(&s) {
            return;
        }
        let Some(g) = &mut self.w.wire.graph else {
            return;
        };
        g.set_switch(s, true);
        let links = g.switch_links(s);
        let now = self.w.now();
        for l in links {
            if let Some(c) = self.failures.fabric_capacity(&self.w, l) {
                self.w.wire.set_capacity(now, l, c);
            }
        }
        self.w.mark("switch_up", self.w.switch_name(s));
        for (n, i) in self.failures.switch_nics.remove(&s).unwrap_or_default() {
            self.nic_up(n, i);
        }
        self.fabric_repaired();
    }

    /// The link between switches `a` and `b` at fraction `f` of its bandwidth: 0 is down
    /// (routes avoid it), 1 repaired.
    pub(crate) fn switch_link(&mut self, a: u32, b: u32, f: f64) {
        let Some(g) = &mut self.w.wire.graph else {
            return;
        };
        let k = (a.min(b), a.max(b));
        let was = self.failures.fabric_links.get(&k).copied().unwrap_or(1.0);
        if was == f {
            return;
        }
        g.set_switch_link(a, b, f > 0.0);
        let links = g.switch_link_ids(a, b);
        if f >= 1.0 {
            self.failures.fabric_links.remove(&k);
        } else {
            self.failures.fabric_links.insert(k, f);
        }
        let now = self.w.now();
        for &l in &links {
            if let Some(c) = self.failures.fabric_capacity(&self.w, l) {
                self.w.wire.set_capacity(now, l, c);
            }
        }
        let what = if f == 0.0 {
            "switch_link_down"
        } else if f < 1.0 {
            "switch_link_degraded"
        } else if was == 0.0 {
            "switch_link_up"
        } else {
            "switch_link_restored"
        };
        self.w.mark(
            what,
            format!("{} {}", self.w.switch_name(a), self.w.switch_name(b)),
        );
        if f == 0.0 {
            self.fabric_changed(&links);
        } else if was == 0.0 {
            self.fabric_repaired();
        } else {
            self.w.rearm_wire();
        }
    }

    /// Links stopped: stuck transfers go again over the new routes; jobs whose collectives
    /// crossed them restart; jobs the fabric no longer connects wait for a repair.
    fn fabric_changed(&mut self, dead: &[LinkId]) {
        self.reroute_stalled();
        for j in 0..self.jobs.list.len() {
            let job = &self.jobs[j];
            if job.started.is_none() || job.finished.is_some() || job.stopped_at.is_some() {
                continue;
            }
            let crosses = |rounds: &[crate::network::collective::Round]| {
                rounds
                    .iter()
                    .flat_map(|r| &r.chains)
                    .any(|c| c.path.iter().any(|l| dead.contains(l)))
            };
            let hit = job.on_wire
                && (crosses(&job.rounds)
                    || job
                        .overlap
                        .as_ref()
                        .is_some_and(|o| o.streams.iter().any(|s| crosses(&s.rounds))));
            if hit || self.jobs.fabric_cuts(&self.w, &self.pgs, j as u32) {
                self.stop_job(j);
                self.jobs.start_job(&mut self.w, &self.pgs, j as u32);
            }
        }
        self.w.rearm_wire();
    }

    /// A switch or link is back: new routes may use it; jobs waiting for the fabric try again.
    fn fabric_repaired(&mut self) {
        self.w.net_routes_changed();
        for j in std::mem::take(&mut self.jobs.waiting_fabric) {
            self.jobs.start_job(&mut self.w, &self.pgs, j);
        }
        self.w.rearm_wire();
    }
}

impl Jobs {
    /// Whether the fabric fails to connect job `j`'s nodes (its communicator cannot form).
    pub(crate) fn fabric_cuts(&self, world: &World<'_>, pgs: &PlacementGroups, j: u32) -> bool {
        let Some(g) = &world.wire.graph else {
            return false;
        };
        if g.explicit().is_none() {
            return false;
        }
        let ranks = pgs.ranks(world, self[j as usize].pg);
        let Some(&r0) = ranks.first() else {
            return false;
        };
        // Ranks are node-major: the first rank of each other node.
        ranks
            .windows(2)
            .filter(|w| w[0].0 != w[1].0)
            .map(|w| w[1])
            .any(|r| g.route(r0, r, 0).is_none() || g.route(r, r0, 0).is_none())
    }
}

impl Failures {
    /// The capacity of switch-to-switch link `l` from the fabric's failure state.
    fn fabric_capacity(&self, world: &World<'_>, l: LinkId) -> Option<f64> {
        let g = world.wire.graph.as_ref()?;
        let (a, b) = g.switches_of(l)?;
        let f = &self;
        if f.switches_down.contains(&a) || f.switches_down.contains(&b) {
            return Some(0.0);
        }
        let k = (a.min(b), a.max(b));
        Some(g.capacity[l] * f.fabric_links.get(&k).copied().unwrap_or(1.0))
    }
}

impl World<'_> {
    /// The run's explicit fabric (`fabric explicit { ... }`), when it has one.
    pub(super) fn explicit_fabric(&self) -> Option<&crate::network::topology::Explicit> {
        self.wire.graph.as_ref().and_then(|g| g.explicit())
    }

    fn switch_name(&self, s: u32) -> String {
        self.explicit_fabric()
            .and_then(|x| x.names.get(s as usize).cloned())
            .unwrap_or_default()
    }
}
