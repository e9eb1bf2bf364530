//! A scratch view of the cluster for one placement-group attempt ([`super::bundle`]): the
//! current availabilities, or the alive cluster as if empty, with what the attempt's bundles
//! took so far kept in overlays of the nodes they touched (`ClusterState` is never changed).

use super::NodeId;
use super::resources::{
    Request, SCALE, domain_rank, instances_fit, instances_fit_full, mask_by_memory,
    try_allocate_ray, try_allocate_topo,
};
use super::state::ClusterState;

/// Scratch availabilities of the nodes a placement attempt touched.
#[derive(Clone)]
pub(super) struct Overlay {
    avail: Vec<i64>,
    inst: Vec<(usize, Vec<i64>)>,
}

/// A view of the cluster for one placement attempt: the current state (with tenant
/// conflicts), or the alive cluster as if empty (to tell Wait from Infeasible).
pub(super) struct View<'a> {
    pub(super) st: &'a ClusterState,
    pub(super) empty: bool,
    topo: bool,
    tenant: Option<usize>,
    slot: Vec<u32>,
    over: Vec<Overlay>,
}

impl<'a> View<'a> {
    pub(super) fn new(
        st: &'a ClusterState,
        empty: bool,
        topo: bool,
        tenant: Option<usize>,
    ) -> View<'a> {
        View {
            st,
            empty,
            topo,
            tenant,
            slot: vec![u32::MAX; st.nodes.len()],
            over: Vec::new(),
        }
    }

    pub(super) fn overlay(&self, n: NodeId) -> Option<&Overlay> {
        let s = self.slot[n];
        (s != u32::MAX).then(|| &self.over[s as usize])
    }

    pub(super) fn avail(&self, n: NodeId, id: usize) -> i64 {
        match self.overlay(n) {
            Some(o) => o.avail.get(id).copied().unwrap_or(0),
            None if self.empty => self.st.nodes[n].total(id),
            None => self.st.nodes[n].available(id),
        }
    }

    pub(super) fn fits(&self, n: NodeId, req: &Request) -> bool {
        if !self.empty && self.st.tenant_conflict(n, self.tenant).is_some() {
            return false;
        }
        let node = &self.st.nodes[n];
        if !node.fits_device_memory(req) {
            return false;
        }
        let o = self.overlay(n);
        let dm = req.device_memory;
        let fit = |id: usize, inst: &[i64], a: i64| match node.device_memory_free(id) {
            Some(mem) if dm > 0 => {
                let mut m = Vec::new();
                mask_by_memory(inst, mem, dm, &mut m);
                instances_fit(&m, a)
            }
            _ => instances_fit(inst, a),
        };
        req.amounts
            .iter()
            .all(|&(id, a)| match (o, node.instances(id)) {
                (Some(o), Some(_)) => {
                    let inst = &o.inst.iter().find(|e| e.0 == id).expect("copied").1;
                    fit(id, inst, a)
                }
                // (Device memory on an empty node: `fits_device_memory` above.)
                (None, Some(inst)) if self.empty => instances_fit_full(inst.len(), a),
                (None, Some(inst)) => fit(id, inst, a),
                (_, None) => self.avail(n, id) >= a,
            })
    }

    /// Ray `LeastResourceScorer::Score` (`scorer.cc`): −1 if the bundle does not fit, else the
    /// sum over requested resources of `(available − requested) / available` (0 where nothing
    /// is available). Higher is better: the emptiest node.
    pub(super) fn score(&self, n: NodeId, req: &Request) -> f64 {
        if !self.fits(n, req) {
            return -1.0;
        }
        req.amounts
            .iter()
            .map(|&(id, a)| {
                let av = self.avail(n, id);
                if av == 0 {
                    0.0
                } else {
                    (av - a) as f64 / av as f64
                }
            })
            .sum()
    }

    /// Topology rank of the bundle's devices on the node (0 best; see `domain_rank`).
    pub(super) fn rank(&self, n: NodeId, req: &Request) -> u8 {
        let node = &self.st.nodes[n];
        let mut worst = 0;
        for &(id, a) in &req.amounts {
            let Some(base) = node.instances(id) else {
                continue;
            };
            let inst: &[i64] = match self.overlay(n) {
                Some(o) => &o.inst.iter().find(|e| e.0 == id).expect("copied").1,
                None => base,
            };
            let r = domain_rank(inst, node.topology().devices_of(id), a).unwrap_or(u8::MAX);
            worst = worst.max(r);
        }
        worst
    }

    /// Drop what this attempt took on `n`, when `n` was the last node it touched.
    pub(super) fn forget(&mut self, n: NodeId) {
        let s = self.slot[n];
        if s != u32::MAX && s as usize + 1 == self.over.len() {
            self.over.pop();
            self.slot[n] = u32::MAX;
        }
    }

    /// Whether this attempt took anything on `n` (so far).
    pub(super) fn touched(&self, n: NodeId) -> bool {
        self.slot[n] != u32::MAX
    }

    /// What this attempt holds on `n` now, to put back with [`View::restore`].
    pub(super) fn save(&self, n: NodeId) -> Option<Overlay> {
        self.overlay(n).cloned()
    }

    /// Put `n` back as [`View::save`] found it. Restores must come in the reverse order of
    /// the saves (a search undoing its steps), so a node first touched since its save holds
    /// the last overlay.
    pub(super) fn restore(&mut self, n: NodeId, saved: Option<Overlay>) {
        let s = self.slot[n];
        match saved {
            Some(o) => self.over[s as usize] = o,
            None if s == u32::MAX => {}
            None if s as usize + 1 == self.over.len() => {
                self.over.pop();
                self.slot[n] = u32::MAX;
            }
            None => self.over[s as usize] = self.base(n),
        }
    }

    /// `n` as this view starts it: its availabilities now, or its totals when empty.
    fn base(&self, n: NodeId) -> Overlay {
        let node = &self.st.nodes[n];
        let avail: Vec<i64> = (0..self.st.ids.len())
            .map(|id| {
                if self.empty {
                    node.total(id)
                } else {
                    node.available(id)
                }
            })
            .collect();
        let inst = node
            .topology()
            .devices
            .iter()
            .map(|(id, _)| {
                let v = match node.instances(*id) {
                    Some(x) if !self.empty => x.to_vec(),
                    Some(x) => vec![SCALE; x.len()],
                    None => Vec::new(),
                };
                (*id, v)
            })
            .collect();
        Overlay { avail, inst }
    }

    pub(super) fn subtract(&mut self, n: NodeId, req: &Request) {
        if self.slot[n] == u32::MAX {
            let o = self.base(n);
            self.slot[n] = self.over.len() as u32;
            self.over.push(o);
        }
        let topo = self.topo;
        let locs_node = &self.st.nodes[n];
        let o = &mut self.over[self.slot[n] as usize];
        let empty = self.empty;
        for &(id, a) in &req.amounts {
            if let Some(e) = o.inst.iter_mut().find(|e| e.0 == id) {
                let mut out = vec![0; e.1.len()];
                // Device memory: choose among the instances with enough free memory now (the
                // node's, not less what earlier bundles of this attempt took there).
                let mut masked = Vec::new();
                let mem = locs_node
                    .device_memory_free(id)
                    .filter(|_| !empty && req.device_memory > 0);
                let masked_used = mem.is_some();
                let target: &mut [i64] = match mem {
                    Some(m) => {
                        mask_by_memory(&e.1, m, req.device_memory, &mut masked);
                        &mut masked
                    }
                    None => &mut e.1,
                };
                if topo {
                    try_allocate_topo(target, locs_node.topology().devices_of(id), a, &mut out);
                } else {
                    try_allocate_ray(target, a, &mut out);
                }
                if masked_used {
                    for (k, o) in out.iter().enumerate() {
                        e.1[k] -= o;
                    }
                }
            }
            if let Some(v) = o.avail.get_mut(id) {
                *v -= a;
            }
        }
    }

    /// Every candidate position as good as [`View::best`]'s pick (the same topology rank and
    /// score), in node-id order: the nodes among which Ray's hash-set order breaks the tie.
    pub(super) fn tied(
        &self,
        req: &Request,
        cands: &[NodeId],
        active: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        let Some(b) = self.best(req, cands, &active) else {
            return Vec::new();
        };
        let key = |p: usize| {
            let n = cands[p];
            (
                if self.topo { self.rank(n, req) } else { 0 },
                self.score(n, req),
            )
        };
        let top = key(b);
        (0..cands.len())
            .filter(|&p| active(p) && key(p) == top)
            .collect()
    }

    /// Ray `BundleSchedulingPolicy::GetBestNode`: the highest-scoring node among candidate
    /// positions `pos` for which `active(pos)` holds, if any fits. Ray iterates a hash set and
    /// keeps the first strictly better node; here ties go to the lowest node id. Under the
    /// topology-aware policy the topology rank comes first.
    pub(super) fn best(
        &self,
        req: &Request,
        cands: &[NodeId],
        active: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let mut best: Option<(u8, f64, usize)> = None;
        for (p, &n) in cands.iter().enumerate() {
            if !active(p) {
                continue;
            }
            let s = self.score(n, req);
            if s < 0.0 {
                continue;
            }
            let r = if self.topo { self.rank(n, req) } else { 0 };
            if best.is_none_or(|(br, bs, _)| r < br || (r == br && s > bs)) {
                best = Some((r, s, p));
            }
        }
        best.map(|b| b.2)
    }
}
