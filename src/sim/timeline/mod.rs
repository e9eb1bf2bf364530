//! What each device did when: the data behind the Gantt timeline and the Perfetto trace.
//!
//! Spans are recorded as work is done — a task from start to finish on the device instances it
//! was given, each training step as checkpoint (when one is written before it), compute and
//! communication on the job's devices (the first `d` devices of a node holding `d`), each
//! serving batch on its replica's devices — and a device is `failed` from a crash or fault to
//! its repair. Work cut short by a failure is clipped at the failure when the timeline is
//! built. Gaps are idle. One record covers all devices of a step (a set), so a 2,000-step job
//! on 64 GPUs costs 6,000 records, not 384,000, and work that directly follows the same work
//! extends its span. A set with more than [`EXACT_PER_SET`] spans (a busy serving replica's
//! batches) is then recorded per [`WINDOW_NS`] window: one span per window of each kind, as long
//! as the busy time in it, at the window's start — exact totals, coarser placement. Recording
//! of work stops at [`MAX_SPANS`] (the timeline says it is truncated); failures are always kept.
//! Transfers on the run's network are recorded beside the spans ([`transfers`]), and the work
//! on each node's CPUs beside them ([`CpuSpan`]).

use rustc_hash::FxHashMap as HashMap;

use serde::Serialize;

pub mod transfers;

pub use transfers::{End, MAX_TRANSFERS, MoveKind, Transfer};
pub(crate) use transfers::{MoveKey, Part};

/// Most span records one run keeps.
pub const MAX_SPANS: usize = 1_000_000;
/// Spans a device set records exactly before its work is recorded per window.
pub const EXACT_PER_SET: u32 = 10_000;
/// Window of the per-window recording (1 s).
pub const WINDOW_NS: u64 = 1_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    Compute,
    Communication,
    Checkpoint,
    Failed,
}

impl SpanKind {
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::Compute => "compute",
            SpanKind::Communication => "communication",
            SpanKind::Checkpoint => "checkpoint",
            SpanKind::Failed => "failed",
        }
    }
}

/// One span over a set of devices, seconds from the start of the run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Span {
    /// Index into [`Timeline::sets`].
    pub set: u32,
    pub start: f64,
    pub end: f64,
    pub kind: SpanKind,
    /// Index into [`Timeline::labels`] (the work: `features.embed`, `pretrain.llm`, ...).
    pub label: u32,
    /// The training step it belongs to (0-based), for a training job's spans.
    pub step: Option<u32>,
}

/// CPUs of a node busy with one piece of work over an interval, seconds from the start of the
/// run (`sim::cpu` says what counts). Work that directly follows the same work with the same
/// CPUs on the node extends its span, so a node's CPU spans may overlap (concurrent tasks);
/// the Perfetto trace lays them out in lanes.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CpuSpan {
    /// The node (index into [`Timeline::nodes`]).
    pub node: u32,
    pub start: f64,
    pub end: f64,
    /// Logical CPUs the work held.
    pub cpus: f64,
    /// Index into [`Timeline::labels`].
    pub label: u32,
}

/// Device activity of one run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timeline {
    /// Device names (`r0.n1.d3`), indexed by device id.
    pub devices: Vec<String>,
    /// Node of each device (its index in the cluster's node order).
    pub device_node: Vec<u32>,
    /// Device sets spans refer to.
    pub sets: Vec<Vec<u32>>,
    /// Names of the work (`features.embed`, `pretrain.llm`, ...) and transports that spans
    /// and transfers refer to.
    pub labels: Vec<String>,
    /// Sorted by start, then set; work clipped at failures.
    pub spans: Vec<Span>,
    pub truncated: bool,
    /// Each link class's traffic over time (`sim::links`), when the run has a network.
    pub links: Option<crate::sim::links::LinkSeries>,
    /// Node names, in the cluster's order.
    pub nodes: Vec<String>,
    /// Rack of each node (index into `racks`), and the racks' names (`""`: nodes declared
    /// outside any rack).
    pub node_rack: Vec<u32>,
    pub racks: Vec<String>,
    /// Queue lengths over time: (name, (time s, length) at each change).
    pub counters: Vec<(String, Vec<(f64, f64)>)>,
    /// Transfers on the run's network that completed ([`transfers`]), the collectives'
    /// groups they name, and how many were left out at [`MAX_TRANSFERS`].
    pub transfers: Vec<Transfer>,
    pub groups: Vec<transfers::Group>,
    pub transfers_dropped: u64,
    /// Storage targets' names, in declaration order.
    pub storage: Vec<String>,
    /// Each node's logical CPUs (Ray's `CPU` resource), in the cluster's order, and the CPU
    /// work on them, sorted by start, then node.
    pub node_cpus: Vec<f64>,
    pub cpu_spans: Vec<CpuSpan>,
}

/// Most points a counter keeps (later ones are dropped and the timeline says it is
/// truncated).
pub const MAX_COUNTER_POINTS: usize = 200_000;

impl Timeline {
    /// Spans of one device, in time order (kind, start, end, label).
    pub fn of_device(&self, d: u32) -> Vec<(SpanKind, f64, f64, &str)> {
        self.spans
            .iter()
            .filter(|s| self.sets[s.set as usize].contains(&d))
            .map(|s| {
                (
                    s.kind,
                    s.start,
                    s.end,
                    self.labels[s.label as usize].as_str(),
                )
            })
            .collect()
    }
}

/// A window being accumulated: its index and busy ns per (kind, label).
type Window = (u64, Vec<(SpanKind, u32, u64)>);

/// The recorder the simulation drives.
#[derive(Default)]
pub(crate) struct Recorder {
    pub on: bool,
    pub t: Timeline,
    /// First device id of each node.
    pub first: Vec<u32>,
    set_index: HashMap<Vec<u32>, u32>,
    label_index: HashMap<String, u32>,
    /// Open failures: device → since (ns).
    pub failed_since: HashMap<u32, u64>,
    /// The last span recorded on each set, to extend when the next one follows it directly.
    last_of_set: HashMap<u32, usize>,
    /// Spans recorded per set.
    count_of_set: HashMap<u32, u32>,
    /// Per set in window mode: (window index, busy ns per (kind, label)) being accumulated.
    window: HashMap<u32, Window>,
    /// Index of each counter by name.
    counter_index: HashMap<String, usize>,
    /// Transfers in flight: when each began, and its parts.
    moving: HashMap<MoveKey, (u64, Vec<Part>)>,
    /// Index of each collective group.
    group_index: HashMap<transfers::Group, u32>,
    /// The last CPU span of each (node, label), to extend when the next one follows it.
    last_cpu: HashMap<(u32, u32), usize>,
}

impl Recorder {
    /// `nodes`: (name, devices, rack name) of each node, in the cluster's order; `storage`:
    /// the storage targets' names.
    pub fn init(&mut self, on: bool, nodes: &[(String, usize, String)], storage: &[String]) {
        self.on = on;
        if !on {
            return;
        }
        self.t.storage = storage.to_vec();
        for (n, (name, devices, rack)) in nodes.iter().enumerate() {
            let r = match self.t.racks.iter().position(|x| x == rack) {
                Some(r) => r,
                None => {
                    self.t.racks.push(rack.clone());
                    self.t.racks.len() - 1
                }
            };
            self.t.node_rack.push(r as u32);
            self.t.nodes.push(name.clone());
            self.first.push(self.t.devices.len() as u32);
            for d in 0..*devices {
                self.t.devices.push(format!("{name}.d{d}"));
                self.t.device_node.push(n as u32);
            }
        }
    }

    /// Device id of device `d` of `node`, if it exists.
    pub fn device(&self, node: usize, d: usize) -> Option<u32> {
        let first = *self.first.get(node)?;
        let end = self
            .first
            .get(node + 1)
            .copied()
            .unwrap_or(self.t.devices.len() as u32);
        let id = first + d as u32;
        (id < end).then_some(id)
    }

    pub fn node_devices(&self, node: usize) -> Vec<u32> {
        let Some(&first) = self.first.get(node) else {
            return Vec::new();
        };
        let end = self
            .first
            .get(node + 1)
            .copied()
            .unwrap_or(self.t.devices.len() as u32);
        (first..end).collect()
    }

    /// Record `kind` work on `devices` between two instants (ns). Work that directly follows
    /// the same work on the same devices (a replica's back-to-back batches) extends its span.
    /// Failures are always kept; work stops being recorded at [`MAX_SPANS`].
    /// `label` is an interned name ([`Recorder::name`]).
    pub fn span(&mut self, devices: &[u32], start: u64, end: u64, kind: SpanKind, label: u32) {
        self.span_of(devices, start, end, kind, label, None);
    }

    /// [`Recorder::span`] of training step `step` (kept on the span unless it is recorded per
    /// window).
    pub fn span_of(
        &mut self,
        devices: &[u32],
        start: u64,
        end: u64,
        kind: SpanKind,
        label: u32,
        step: Option<u32>,
    ) {
        if !self.on || devices.is_empty() || end <= start {
            return;
        }
        if self.t.spans.len() >= MAX_SPANS && kind != SpanKind::Failed {
            self.t.truncated = true;
            return;
        }
        let next = self.t.sets.len() as u32;
        let set = match self.set_index.get(devices) {
            Some(s) => *s,
            None => {
                self.set_index.insert(devices.to_vec(), next);
                self.t.sets.push(devices.to_vec());
                next
            }
        };
        let n = self.count_of_set.entry(set).or_insert(0);
        if *n >= EXACT_PER_SET && kind != SpanKind::Failed {
            self.accumulate(set, start, end, kind, label);
            return;
        }
        self.push(set, start, end, kind, label, step);
    }

    fn push(
        &mut self,
        set: u32,
        start: u64,
        end: u64,
        kind: SpanKind,
        label: u32,
        step: Option<u32>,
    ) {
        if self.t.spans.len() >= MAX_SPANS && kind != SpanKind::Failed {
            self.t.truncated = true;
            return;
        }
        let (start, end) = (start as f64 / 1e9, end as f64 / 1e9);
        if let Some(&i) = self.last_of_set.get(&set) {
            let last = &mut self.t.spans[i];
            if last.kind == kind && last.label == label && last.end == start && last.step == step {
                last.end = end;
                return;
            }
        }
        self.last_of_set.insert(set, self.t.spans.len());
        *self.count_of_set.entry(set).or_insert(0) += 1;
        self.t.spans.push(Span {
            set,
            start,
            end,
            kind,
            label,
            step,
        });
    }

    /// Window mode: add `[start, end)` to the busy time of the windows it covers, flushing a
    /// set's window when work reaches a later one.
    ///
    /// Whole windows that the work fills alone are recorded in one step, as the span their
    /// flushes would have merged into: window by window, one task of 10⁹ s took 10⁹ turns of
    /// this loop inside one event, where `--max-events` never looks (issue 42).
    fn accumulate(&mut self, set: u32, start: u64, end: u64, kind: SpanKind, label: u32) {
        let mut at = start;
        while at < end {
            let w = at / WINDOW_NS;
            let cur = self.window.get(&set).map(|x| x.0);
            // The last whole window stays for the loop, so the set's open window after this
            // call is the one the window-by-window walk leaves.
            let last_whole = (end / WINDOW_NS)
                .saturating_sub(1)
                .saturating_mul(WINDOW_NS);
            if at.is_multiple_of(WINDOW_NS) && last_whole > at && cur != Some(w) {
                self.flush(set);
                self.push(set, at, last_whole, kind, label, None);
                at = last_whole;
                continue;
            }
            let until = end.min((w + 1).saturating_mul(WINDOW_NS));
            if cur.is_some_and(|c| c != w) {
                self.flush(set);
            }
            let entry = self.window.entry(set).or_insert((w, Vec::new()));
            match entry
                .1
                .iter_mut()
                .find(|(k, l, _)| *k == kind && *l == label)
            {
                Some(x) => x.2 += until - at,
                None => entry.1.push((kind, label, until - at)),
            }
            at = until;
        }
    }

    /// Write a set's accumulated window as spans from the window's start, kind after kind.
    fn flush(&mut self, set: u32) {
        let Some((w, parts)) = self.window.remove(&set) else {
            return;
        };
        let mut at = w.saturating_mul(WINDOW_NS);
        for (kind, label, busy) in parts {
            self.push(set, at, at + busy, kind, label, None);
            at += busy;
        }
    }

    /// Record `cpus` of `node` working for `label` between two instants (ns): extends the
    /// node's last span of that label when it ends at `start` with the same CPUs. Stops at
    /// [`MAX_SPANS`] CPU spans (the timeline says it is truncated).
    pub fn cpu_span(&mut self, node: usize, start: u64, end: u64, cpus: f64, label: u32) {
        if !self.on || end <= start || cpus <= 0.0 {
            return;
        }
        let (s, e) = (start as f64 / 1e9, end as f64 / 1e9);
        let key = (node as u32, label);
        if let Some(&i) = self.last_cpu.get(&key) {
            let last = &mut self.t.cpu_spans[i];
            if last.end == s && last.cpus == cpus {
                last.end = e;
                return;
            }
        }
        if self.t.cpu_spans.len() >= MAX_SPANS {
            self.t.truncated = true;
            return;
        }
        self.last_cpu.insert(key, self.t.cpu_spans.len());
        self.t.cpu_spans.push(CpuSpan {
            node: node as u32,
            start: s,
            end: e,
            cpus,
            label,
        });
    }

    /// Counter `name` (a queue) is `value` from `now` on; a change at the same instant
    /// replaces the last point, an unchanged value adds none.
    pub fn counter(&mut self, name: &str, now: u64, value: f64) {
        if !self.on {
            return;
        }
        let i = self.counter_id(name);
        self.counter_at(i, now, value);
    }

    /// The index of counter `name`, created on first use: callers that update a counter per
    /// event keep it, so a long name is hashed once.
    pub fn counter_id(&mut self, name: &str) -> usize {
        match self.counter_index.get(name) {
            Some(i) => *i,
            None => {
                self.counter_index
                    .insert(name.to_string(), self.t.counters.len());
                self.t.counters.push((name.to_string(), vec![(0.0, 0.0)]));
                self.t.counters.len() - 1
            }
        }
    }

    /// [`Recorder::counter`] of the counter at index `i` ([`Recorder::counter_id`]).
    pub fn counter_at(&mut self, i: usize, now: u64, value: f64) {
        if !self.on {
            return;
        }
        let t = now as f64 / 1e9;
        let pts = &mut self.t.counters[i].1;
        let full = pts.len() >= MAX_COUNTER_POINTS;
        match pts.last_mut() {
            Some(l) if l.1 == value => {}
            Some(l) if l.0 == t => l.1 = value,
            _ if full => self.t.truncated = true,
            _ => pts.push((t, value)),
        }
    }

    pub fn fail(&mut self, devices: &[u32], now: u64) {
        if !self.on {
            return;
        }
        for d in devices {
            self.failed_since.entry(*d).or_insert(now);
        }
    }

    pub fn repair(&mut self, devices: &[u32], now: u64) {
        if !self.on {
            return;
        }
        for d in devices {
            if let Some(since) = self.failed_since.remove(d) {
                let failed = self.name("failed");
                self.span(&[*d], since, now, SpanKind::Failed, failed);
            }
        }
    }

    /// Close open failures at `end`, clip work at failures, sort.
    pub fn finish(mut self, end: u64) -> Timeline {
        if !self.on {
            return Timeline::default();
        }
        let mut sets: Vec<u32> = self.window.keys().copied().collect();
        sets.sort_unstable();
        for set in sets {
            self.flush(set);
        }
        let mut open: Vec<(u32, u64)> = self.failed_since.drain().collect();
        open.sort_unstable();
        for (d, since) in open {
            let failed = self.name("failed");
            self.span(&[d], since, end.max(since + 1), SpanKind::Failed, failed);
        }
        let mut t = self.t;
        // Failure intervals per device, to clip work that was cut short.
        let mut fails: HashMap<u32, Vec<(f64, f64)>> = HashMap::default();
        for s in t.spans.iter().filter(|s| s.kind == SpanKind::Failed) {
            for d in &t.sets[s.set as usize] {
                fails.entry(*d).or_default().push((s.start, s.end));
            }
        }
        if !fails.is_empty() {
            for s in t.spans.iter_mut().filter(|s| s.kind != SpanKind::Failed) {
                for d in &t.sets[s.set as usize] {
                    for &(a, _) in fails.get(d).map(Vec::as_slice).unwrap_or(&[]) {
                        if a > s.start && a < s.end {
                            s.end = a;
                        }
                    }
                }
            }
        }
        t.spans.sort_by(|a, b| {
            a.start
                .total_cmp(&b.start)
                .then(a.set.cmp(&b.set))
                .then(a.end.total_cmp(&b.end))
        });
        t.cpu_spans.sort_by(|a, b| {
            a.start
                .total_cmp(&b.start)
                .then(a.node.cmp(&b.node))
                .then(a.end.total_cmp(&b.end))
                .then(a.label.cmp(&b.label))
        });
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder() -> Recorder {
        let mut r = Recorder::default();
        r.init(true, &[("n0".into(), 2, String::new())], &[]);
        r
    }

    #[test]
    fn back_to_back_work_extends_one_span() {
        let mut r = recorder();
        let svc = r.name("svc");
        for i in 0..5u64 {
            r.span(&[0], i * 10, (i + 1) * 10, SpanKind::Compute, svc);
        }
        r.span(&[0], 60, 70, SpanKind::Compute, svc);
        let t = r.finish(100);
        let spans: Vec<_> = t.of_device(0).iter().map(|s| (s.1, s.2)).collect();
        assert_eq!(spans, vec![(0.0, 50e-9), (60e-9, 70e-9)]);
    }

    #[test]
    fn long_work_in_window_mode_is_recorded_as_window_by_window() {
        // Past EXACT_PER_SET, long spans (partial windows at both ends, whole ones between)
        // give the same timeline recorded whole as cut at every window boundary, which the
        // loop walks one window at a time; and a span of 10⁹ s (10⁹ windows) is one step.
        let spans: Vec<(u64, u64)> = (0..EXACT_PER_SET as u64)
            .map(|i| (i * 10, i * 10 + 5))
            .chain([
                (200_000, 7_300_000_000),
                (7_300_000_000, 7_900_000_000),
                (9_000_000_000, 20_000_000_000),
                (21_000_000_000, 21_500_000_000),
                (22_000_000_000, 1_000_000_000_000_000_000),
            ])
            .collect();
        let (mut whole, mut cut) = (recorder(), recorder());
        let (a, b) = (whole.name("w"), cut.name("w"));
        for &(s, e) in &spans {
            whole.span(&[0], s, e, SpanKind::Compute, a);
            let mut at = s;
            while at < e {
                let to = e.min((at / WINDOW_NS + 1) * WINDOW_NS);
                if e - s > 1_000_000_000_000 && at > 30 * WINDOW_NS {
                    // Past a few windows the walk would take 10⁹ turns here too: stop it.
                    cut.span(&[0], at, e, SpanKind::Compute, b);
                    break;
                }
                cut.span(&[0], at, to, SpanKind::Compute, b);
                at = to;
            }
        }
        let end = 1_000_000_000_000_000_000;
        let (w, c) = (whole.finish(end), cut.finish(end));
        assert_eq!(w.of_device(0), c.of_device(0));
        let total: f64 = w.of_device(0).iter().map(|s| s.2 - s.1).sum();
        let expected: u64 = spans.iter().map(|(s, e)| e - s).sum();
        assert!((total - expected as f64 / 1e9).abs() < 1e-3, "{total}");
    }

    #[test]
    fn busy_sets_switch_to_windows_with_exact_totals() {
        // 30,000 batches of 0.3 s every 0.5 s on device 0: the first EXACT_PER_SET are kept
        // as they are, the rest per 1 s window; busy time is exact either way, and a failure
        // is still recorded.
        let mut r = recorder();
        let svc = r.name("svc");
        let (n, busy, every) = (30_000u64, 300_000_000u64, 500_000_000u64);
        for i in 0..n {
            r.span(&[0], i * every, i * every + busy, SpanKind::Compute, svc);
        }
        r.fail(&[1], 0);
        let t = r.finish(n * every);
        let d0 = t.of_device(0);
        let total: f64 = d0.iter().map(|s| s.2 - s.1).sum();
        assert!((total - n as f64 * 0.3).abs() < 1e-6, "{total}");
        assert!(
            d0.len() < 10_000 + (n * every / WINDOW_NS) as usize + 1,
            "{}",
            d0.len()
        );
        assert!(!t.truncated);
        let d1 = t.of_device(1);
        assert_eq!(d1.len(), 1);
        assert_eq!(d1[0].0, SpanKind::Failed);
        // Spans never overlap.
        for w in d0.windows(2) {
            assert!(w[0].2 <= w[1].1 + 1e-12, "{:?} then {:?}", w[0], w[1]);
        }
    }
}
