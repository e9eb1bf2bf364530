//! Explicit fabrics on the link graph (`fabric explicit { ... }`, `scenario::topology`).
//!
//! Every declared switch is a [`Vertex::Fabric`]; every declared link two directed
//! [`LinkKind::Network`] links at its bandwidth and latency (the fabric's `latency` where the
//! link gives none, else [`super::graph::DEFAULT_HOP_LATENCY`]). A rack's compute NICs link
//! to its attach switch (with `rails`, NIC k of each node to the rack's k-th switch, modulo
//! their number) at the NIC's speed.
//!
//! Routes between two attach switches, in order of precedence:
//! 1. a declared `route A B via ...`, while none of its switches or links is down;
//! 2. with `routing dimension_order`, the dimension-ordered path through the grid family (first
//!    index first, the shorter way round on a torus, ties towards increasing index), while it
//!    is whole;
//! 3. else a shortest path in switch hops, one next hop chosen at each switch among those one
//!    hop nearer the destination by a hash of the flow key and the switch (per-hop ECMP, as
//!    switches hash a flow's header). Hop distances come from one breadth-first search per
//!    attach switch, recomputed when a switch or link fails or is repaired (what a subnet
//!    manager or a routing protocol does, at once here).
//!
//! Architecture invariant: this module knows switches, links and attach points; it knows
//! nothing of jobs, collectives or failures' timing (the simulator tells it what is down).

use std::collections::BTreeMap;

use super::LinkId;
use super::graph::{Graph, LinkKind, Vertex};
use crate::scenario::topology::{Routing, Topology};

/// Hop distance meaning "cannot reach".
const FAR: u16 = u16::MAX;

/// One end of a switch's link: the neighbour, the directed link to it, and whether it is up.
#[derive(Debug, Clone, Copy)]
struct Port {
    to: u32,
    link: LinkId,
    up: bool,
}

/// The routing state of an explicit fabric.
#[derive(Debug, Clone, Default)]
pub struct Explicit {
    pub names: Vec<String>,
    /// Per rack: its attach switches (empty for a rack without compute NICs).
    pub(super) attach: Vec<Vec<u32>>,
    ports: Vec<Vec<Port>>,
    /// Per switch: its row in `dist`, `u32::MAX` when it is no attach switch.
    row: Vec<u32>,
    /// `dist[row(dst) × switches + s]`: hops from `s` to attach switch `dst`.
    dist: Vec<u16>,
    down: Vec<bool>,
    routing: Option<Routing>,
    /// Grid families for dimension order: (first, dims, wrap).
    families: Vec<(u32, Vec<u32>, bool)>,
    routes: BTreeMap<(u32, u32), Vec<u32>>,
}

impl Graph {
    /// Add the switches and links of an explicit fabric (the NICs' links to their attach
    /// switches are added with the NICs).
    pub(super) fn build_explicit(&mut self, t: &Topology, hop: f64) {
        let n = t.switches.len();
        let mut x = Explicit {
            names: t.switches.clone(),
            attach: t
                .attach
                .iter()
                .map(|a| a.as_ref().map(|a| a.switches.clone()).unwrap_or_default())
                .collect(),
            ports: vec![Vec::new(); n],
            row: vec![u32::MAX; n],
            down: vec![false; n],
            routing: t.routing,
            families: t
                .families
                .iter()
                .map(|f| (f.first, f.dims.clone(), f.wrap == Some(true)))
                .collect(),
            routes: t
                .routes
                .iter()
                .map(|r| ((r.from, r.to), r.via.clone()))
                .collect(),
            dist: Vec::new(),
        };
        for l in &t.links {
            let id = self.capacity.len();
            let lat = l.latency.map_or(hop, |d| d.0 as f64 * 1e-9);
            self.link(
                Vertex::Fabric { switch: l.a },
                Vertex::Fabric { switch: l.b },
                l.bandwidth.0,
                LinkKind::Network,
                lat,
            );
            x.ports[l.a as usize].push(Port {
                to: l.b,
                link: id,
                up: true,
            });
            x.ports[l.b as usize].push(Port {
                to: l.a,
                link: id + 1,
                up: true,
            });
        }
        let mut rows = 0;
        for s in x.attach.iter().flatten() {
            if x.row[*s as usize] == u32::MAX {
                x.row[*s as usize] = rows;
                rows += 1;
            }
        }
        x.dist = vec![FAR; rows as usize * n];
        x.recompute();
        self.explicit = Some(Box::new(x));
    }

    /// The attach switch of compute NIC number `k` (among the node's compute NICs) of a node
    /// in `rack`, and its rail, in an explicit fabric.
    pub(super) fn explicit_port(&self, rack: usize, k: usize) -> Option<(u32, usize)> {
        let a = self.explicit.as_ref()?.attach.get(rack)?;
        (!a.is_empty()).then(|| (a[k % a.len()], k % a.len()))
    }

    /// The switch path from attach switch `a` to attach switch `b` (see the module docs).
    pub(super) fn switch_path(&self, a: u32, b: u32, key: u64) -> Option<Vec<LinkId>> {
        let x = self.explicit.as_deref()?;
        x.path(a, b, key)
    }

    /// Whether attach switch `b` can be reached from switch `a`.
    pub(super) fn switch_reaches(&self, a: u32, b: u32) -> bool {
        self.explicit
            .as_deref()
            .is_some_and(|x| x.hops(a, b) != FAR)
    }

    /// Take a switch out (`up` false) or put it back: its links stop (or start again)
    /// carrying routes. Give its links capacity 0 in the flow network as well.
    pub fn set_switch(&mut self, switch: u32, up: bool) {
        if let Some(x) = self.explicit.as_deref_mut()
            && let Some(d) = x.down.get_mut(switch as usize)
        {
            *d = !up;
            x.recompute();
        }
    }

    /// Take the link between two switches out of routing or put it back; `false` when no
    /// link joins them.
    pub fn set_switch_link(&mut self, a: u32, b: u32, up: bool) -> bool {
        let Some(x) = self.explicit.as_deref_mut() else {
            return false;
        };
        let mut found = false;
        for (s, t) in [(a, b), (b, a)] {
            for p in x.ports.get_mut(s as usize).into_iter().flatten() {
                if p.to == t {
                    p.up = up;
                    found = true;
                }
            }
        }
        if found {
            x.recompute();
        }
        found
    }

    /// The directed links of switch `s` (both directions, to switches and NICs).
    pub fn switch_links(&self, s: u32) -> Vec<LinkId> {
        let v = Vertex::Fabric { switch: s };
        (0..self.ends.len())
            .filter(|l| self.ends[*l].0 == v || self.ends[*l].1 == v)
            .collect()
    }

    /// The directed links between switches `a` and `b` (both directions; parallel links
    /// were merged into one when the fabric was read).
    pub fn switch_link_ids(&self, a: u32, b: u32) -> Vec<LinkId> {
        let (va, vb) = (Vertex::Fabric { switch: a }, Vertex::Fabric { switch: b });
        (0..self.ends.len())
            .filter(|l| self.ends[*l] == (va, vb) || self.ends[*l] == (vb, va))
            .collect()
    }

    /// The two switches a link joins, when it joins two switches.
    pub fn switches_of(&self, l: LinkId) -> Option<(u32, u32)> {
        match self.ends.get(l)? {
            (Vertex::Fabric { switch: a }, Vertex::Fabric { switch: b }) => Some((*a, *b)),
            _ => None,
        }
    }

    /// Every (node, NIC) whose link goes to switch `s`.
    pub fn nics_on_switch(&self, s: u32) -> Vec<(usize, usize)> {
        let v = Vertex::Fabric { switch: s };
        self.ends
            .iter()
            .filter_map(|e| match *e {
                (Vertex::Nic { node, nic }, w) if w == v => Some((node, nic)),
                _ => None,
            })
            .collect()
    }

    /// The explicit fabric's routing state, if the cluster has one.
    pub fn explicit(&self) -> Option<&Explicit> {
        self.explicit.as_deref()
    }
}

impl Explicit {
    /// The index of a switch by name.
    pub fn switch(&self, name: &str) -> Option<u32> {
        self.names.iter().position(|n| n == name).map(|i| i as u32)
    }

    fn hops(&self, from: u32, to: u32) -> u16 {
        let n = self.names.len();
        match self.row.get(to as usize) {
            Some(&r) if r != u32::MAX => self.dist[r as usize * n + from as usize],
            _ => FAR,
        }
    }

    /// Breadth-first hop distances to every attach switch over the switches and links up.
    fn recompute(&mut self) {
        let n = self.names.len();
        self.dist.fill(FAR);
        let mut queue = std::collections::VecDeque::new();
        for dst in 0..n {
            let r = self.row[dst];
            if r == u32::MAX || self.down[dst] {
                continue;
            }
            let d = &mut self.dist[r as usize * n..(r as usize + 1) * n];
            d[dst] = 0;
            queue.clear();
            queue.push_back(dst as u32);
            while let Some(v) = queue.pop_front() {
                let next = d[v as usize].saturating_add(1);
                // Links are full duplex and fail both ways: a port up from v is up towards v.
                for p in &self.ports[v as usize] {
                    if p.up && !self.down[p.to as usize] && d[p.to as usize] == FAR {
                        d[p.to as usize] = next;
                        queue.push_back(p.to);
                    }
                }
            }
        }
    }

    fn port(&self, a: u32, b: u32) -> Option<&Port> {
        self.ports
            .get(a as usize)?
            .iter()
            .find(|p| p.to == b && p.up && !self.down[b as usize])
    }

    /// Links along a switch sequence, `None` if a switch or link of it is down.
    fn along(&self, hops: &[u32]) -> Option<Vec<LinkId>> {
        if hops.iter().any(|h| self.down[*h as usize]) {
            return None;
        }
        hops.windows(2)
            .map(|w| self.port(w[0], w[1]).map(|p| p.link))
            .collect()
    }

    fn path(&self, a: u32, b: u32, key: u64) -> Option<Vec<LinkId>> {
        if self.down[a as usize] || self.down[b as usize] {
            return None;
        }
        if a == b {
            return Some(Vec::new());
        }
        if let Some(via) = self.routes.get(&(a, b)) {
            let hops: Vec<u32> = std::iter::once(a)
                .chain(via.iter().copied())
                .chain([b])
                .collect();
            if let Some(p) = self.along(&hops) {
                return Some(p);
            }
        }
        if let Some(Routing::DimensionOrder { family }) = self.routing
            && let Some(hops) = self.dimension_order(family, a, b)
            && let Some(p) = self.along(&hops)
        {
            return Some(p);
        }
        let mut d = self.hops(a, b);
        if d == FAR {
            return None;
        }
        let mut path = Vec::with_capacity(d as usize);
        let mut cur = a;
        while cur != b {
            let near = |p: &&Port| p.up && !self.down[p.to as usize] && self.hops(p.to, b) == d - 1;
            let count = self.ports[cur as usize].iter().filter(near).count();
            let pick = (mix(key ^ u64::from(cur).wrapping_mul(0x9E37_79B9_7F4A_7C15))
                % count.max(1) as u64) as usize;
            let p = self.ports[cur as usize].iter().filter(near).nth(pick)?;
            path.push(p.link);
            cur = p.to;
            d -= 1;
        }
        Some(path)
    }

    /// The switches of the dimension-ordered path from `a` to `b` in grid family `f`.
    fn dimension_order(&self, f: usize, a: u32, b: u32) -> Option<Vec<u32>> {
        let (first, dims, wrap) = self.families.get(f)?;
        let total: u32 = dims.iter().product();
        if a < *first || b < *first || a - first >= total || b - first >= total {
            return None;
        }
        let coord = |k: u32| {
            let mut rem = k - first;
            let mut c = vec![0u32; dims.len()];
            for d in (0..dims.len()).rev() {
                c[d] = rem % dims[d];
                rem /= dims[d];
            }
            c
        };
        let index = |c: &[u32]| first + c.iter().zip(dims).fold(0, |acc, (x, d)| acc * d + x);
        let (mut cur, to) = (coord(a), coord(b));
        let mut hops = vec![a];
        for d in 0..dims.len() {
            let n = dims[d];
            while cur[d] != to[d] {
                let fwd = (to[d] + n - cur[d]) % n;
                let up = if *wrap && n > 2 {
                    fwd <= n - fwd
                } else {
                    to[d] > cur[d]
                };
                cur[d] = if up {
                    (cur[d] + 1) % n
                } else {
                    (cur[d] + n - 1) % n
                };
                hops.push(index(&cur));
            }
        }
        Some(hops)
    }
}

/// SplitMix64's finaliser: a well-spread hash of a flow key (deterministic across runs).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
