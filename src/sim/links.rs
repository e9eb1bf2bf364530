//! What crossed each class of links of the run's network, recorded by [`super::wire::Wire`]
//! where flows join and leave (the max-min solver is only read through its public API).
//!
//! - **Bytes** per class are exact: a flow's bytes are counted on every link of its path when
//!   it joins the network; a cancelled flow (and one still moving when the run ends) gives back
//!   what it had not moved. Summed over the links of a class ("link-bytes": a flow crossing two
//!   spine links counts twice), so that link-bytes ÷ (summed capacity × time) is the class's
//!   mean utilization.
//! - **Peak** per class: the highest load ÷ capacity any one link of the class carried during
//!   the run, exact: the solver records each link's peak itself after every change of rates
//!   ([`FlowNet::peak_utilization`]), so nothing here reads loads as the run goes.
//! - **Over time** (only when the timeline is recorded): each class's link-bytes per window,
//!   exact — at each window boundary every live flow's progress is its bytes less what it has
//!   left at its current rate (rates are constant between changes). Windows start at 1 ms and
//!   double (neighbours merged) whenever there would be more than [`MAX_WINDOWS`], so a run of
//!   any length keeps at most that many and costs O(live flows) per boundary.

use crate::network::{FlowId, FlowNet, Graph, LinkId, LinkKind, Vertex};

/// The link classes, in report order: `scale_up` (NVLink, NVSwitch, Infinity Fabric, NeuronLink
/// inside a node), `pcie` (devices, switches and NICs to the host), `socket` (between NUMA
/// domains), `ici` (slice torus links), `nic` (a node's NIC to its leaf and back), `leaf_spine`
/// (leaf ↔ spine: where oversubscription applies), `core` (spine ↔ inter-zone core), `storage`
/// (to and from storage targets and node drives), `fabric` (between switches of an explicit
/// fabric).
pub const CLASSES: [&str; 9] = [
    "scale_up",
    "pcie",
    "socket",
    "ici",
    "nic",
    "leaf_spine",
    "core",
    "storage",
    "fabric",
];
const N: usize = CLASSES.len();

/// Most windows the time series keeps (neighbours merge when it would hold more).
pub const MAX_WINDOWS: usize = 512;
/// The first window, ns (1 ms).
const FIRST_WINDOW_NS: u64 = 1_000_000;

/// The class of a link from its kind and ends.
pub fn class_of(kind: LinkKind, ends: (Vertex, Vertex)) -> usize {
    use Vertex as V;
    match kind {
        LinkKind::ScaleUp => 0,
        LinkKind::Pcie => 1,
        LinkKind::Socket => 2,
        LinkKind::Ici => 3,
        LinkKind::Storage => 7,
        LinkKind::Network => match ends {
            (V::Nic { .. }, _) | (_, V::Nic { .. }) => 4,
            (V::Core, _) | (_, V::Core) => 6,
            (V::Fabric { .. }, V::Fabric { .. }) => 8,
            _ => 5,
        },
    }
}

/// Each class's link-bytes per window over the run (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct LinkSeries {
    /// Window length, seconds; window `k` is `[k × window_s, (k + 1) × window_s)`, the last
    /// one cut at the end of the run.
    pub window_s: f64,
    /// Per class with links: (name, summed capacity bytes/s, link-bytes per window).
    pub classes: Vec<(String, f64, Vec<f64>)>,
    /// End of the run, seconds.
    pub end_s: f64,
}

impl LinkSeries {
    /// Per class: (name, (window start s, mean utilization of the class's links) per window).
    pub fn utilization(&self) -> Vec<(String, Vec<(f64, f64)>)> {
        self.classes
            .iter()
            .filter(|(_, cap, _)| *cap > 0.0)
            .map(|(name, cap, bytes)| {
                let pts = bytes
                    .iter()
                    .enumerate()
                    .map(|(k, b)| {
                        let t0 = k as f64 * self.window_s;
                        let w = (self.end_s.min(t0 + self.window_s) - t0).max(0.0);
                        let u = if w > 0.0 { b / (cap * w) } else { 0.0 };
                        (t0, u.clamp(0.0, 1.0))
                    })
                    .collect();
                (name.clone(), pts)
            })
            .collect()
    }
}

/// Windowed recording (module docs).
#[derive(Default)]
struct Windows {
    ns: u64,
    /// Link-bytes per class moved in each closed window.
    closed: Vec<[f64; N]>,
    /// Link-bytes per class moved by the start of the open window.
    at_start: [f64; N],
}

/// The recorder [`super::wire::Wire`] drives.
#[derive(Default)]
pub(crate) struct LinkTraffic {
    class: Vec<u8>,
    /// Links and summed nominal capacity per class.
    links: [u64; N],
    capacity: [f64; N],
    /// Link-bytes per class counted so far (joined flows in full, less what cancels gave back).
    bytes: [f64; N],
    /// Per flow id: its links per class (a reused buffer: no allocation once warm), and those
    /// of the flows about to join.
    mult: Vec<[f64; N]>,
    pending: Vec<[f64; N]>,
    windows: Option<Windows>,
}

impl LinkTraffic {
    pub fn new(graph: &Graph, series: bool) -> LinkTraffic {
        let mut t = LinkTraffic {
            class: Vec::with_capacity(graph.kind.len()),
            windows: series.then(|| Windows {
                ns: FIRST_WINDOW_NS,
                ..Windows::default()
            }),
            ..LinkTraffic::default()
        };
        for l in 0..graph.kind.len() {
            let c = class_of(graph.kind[l], graph.ends[l]);
            t.class.push(c as u8);
            t.links[c] += 1;
            t.capacity[c] += graph.capacity[l];
        }
        t
    }

    /// A flow of `bytes` over `path` is about to join (the next in [`LinkTraffic::joined`]'s
    /// order): its bytes on each class of its path, and its links to read after it joined.
    pub fn joining(&mut self, path: &[LinkId], bytes: f64) {
        if self.class.is_empty() {
            return;
        }
        let mut mult = [0.0; N];
        for &l in path {
            mult[self.class[l] as usize] += 1.0;
        }
        for (b, m) in self.bytes.iter_mut().zip(&mult) {
            *b += bytes * m;
        }
        self.pending.push(mult);
    }

    /// The flows announced by [`LinkTraffic::joining`] joined as `ids`, in the same order.
    pub fn joined(&mut self, ids: &[FlowId]) {
        if self.class.is_empty() {
            return;
        }
        for (f, mult) in ids.iter().zip(&self.pending) {
            let k = f.0 as usize;
            if self.mult.len() <= k {
                self.mult.resize(k + 1, [0.0; N]);
            }
            self.mult[k] = *mult;
        }
        self.pending.clear();
    }

    /// Flow `f` leaves with `left` bytes not moved (0 when it finished).
    pub fn leave(&mut self, f: FlowId, left: f64) {
        let Some(mult) = self.mult.get_mut(f.0 as usize) else {
            return;
        };
        if left > 0.0 {
            for (b, m) in self.bytes.iter_mut().zip(mult.iter()) {
                *b -= left * m;
            }
        }
        *mult = [0.0; N];
    }

    /// Link-bytes per class moved by `t_ns`, the network being at `clock_ns` with constant
    /// rates since: counted bytes less what the live flows have left at `t_ns`.
    fn moved_by(&self, net: &FlowNet, live: impl Iterator<Item = FlowId>, dt_s: f64) -> [f64; N] {
        let mut out = self.bytes;
        for f in live {
            let left = (net.remaining(f) - net.rate(f) * dt_s).max(0.0);
            if left > 0.0 {
                for (o, m) in out.iter_mut().zip(&self.mult[f.0 as usize]) {
                    *o -= left * m;
                }
            }
        }
        out
    }

    /// Whether the time series has a window ending by `now` to close (before the network
    /// moves there).
    pub fn crosses(&self, now: u64) -> bool {
        self.windows.as_ref().is_some_and(|w| {
            (w.closed.len() as u64 + 1)
                .checked_mul(w.ns)
                .is_some_and(|e| e <= now)
        })
    }

    /// Closes every window that ends in `(clock, now]`, the network being at `clock`.
    pub fn windows_to<I: Iterator<Item = FlowId> + Clone>(
        &mut self,
        net: &FlowNet,
        live: I,
        clock: u64,
        now: u64,
    ) {
        let Some(mut w) = self.windows.take() else {
            return;
        };
        loop {
            let k = w.closed.len() as u64;
            // Past u64::MAX no window can end: a run whose clock saturated there (a huge
            // `compute`) looped here forever (issue 42).
            let Some(end) = (k + 1).checked_mul(w.ns).filter(|&e| e <= now) else {
                break;
            };
            let dt = end.saturating_sub(clock) as f64 / 1e9;
            let moved = self.moved_by(net, live.clone(), dt);
            let mut win = [0.0; N];
            for c in 0..N {
                win[c] = moved[c] - w.at_start[c];
            }
            w.closed.push(win);
            w.at_start = moved;
            if w.closed.len() >= MAX_WINDOWS {
                let merged = w
                    .closed
                    .chunks(2)
                    .map(|p| {
                        let mut s = p[0];
                        if let Some(q) = p.get(1) {
                            for c in 0..N {
                                s[c] += q[c];
                            }
                        }
                        s
                    })
                    .collect();
                w.closed = merged;
                w.ns = w.ns.saturating_mul(2);
            }
        }
        self.windows = Some(w);
    }

    /// The run's classes with links at `end` (ns), the network being at `clock`: metrics and,
    /// when recorded, the time series.
    pub fn finish<I: Iterator<Item = FlowId> + Clone>(
        mut self,
        net: &FlowNet,
        live: I,
        clock: u64,
        end: u64,
    ) -> (
        std::collections::BTreeMap<String, super::metrics::LinkClassMetrics>,
        Option<LinkSeries>,
    ) {
        let mut peak = [0.0f64; N];
        for (l, &c) in self.class.iter().enumerate() {
            peak[c as usize] = peak[c as usize].max(net.peak_utilization(l));
        }
        self.windows_to(net, live.clone(), clock, end);
        let moved = self.moved_by(net, live, end.saturating_sub(clock) as f64 / 1e9);
        let secs = end as f64 / 1e9;
        let mut out = std::collections::BTreeMap::new();
        for c in (0..N).filter(|c| self.links[*c] > 0) {
            let denom = self.capacity[c] * secs;
            out.insert(
                CLASSES[c].to_string(),
                super::metrics::LinkClassMetrics {
                    links: self.links[c],
                    capacity_bytes_per_s: self.capacity[c],
                    link_bytes: moved[c].max(0.0),
                    mean_utilization: if denom > 0.0 {
                        (moved[c] / denom).clamp(0.0, 1.0)
                    } else {
                        0.0
                    },
                    peak_utilization: peak[c],
                },
            );
        }
        let series = self.windows.map(|mut w| {
            let mut last = [0.0; N];
            for c in 0..N {
                last[c] = moved[c] - w.at_start[c];
            }
            if end > w.closed.len() as u64 * w.ns {
                w.closed.push(last);
            }
            LinkSeries {
                window_s: w.ns as f64 / 1e9,
                classes: (0..N)
                    .filter(|c| self.links[*c] > 0)
                    .map(|c| {
                        (
                            CLASSES[c].to_string(),
                            self.capacity[c],
                            w.closed.iter().map(|x| x[c].max(0.0)).collect(),
                        )
                    })
                    .collect(),
                end_s: secs,
            }
        });
        (out, series)
    }
}
