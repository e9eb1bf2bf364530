//! What each device did when: the data behind the Gantt timeline and the Perfetto trace.
//!
//! Spans are recorded as work is done — a task from start to finish on the device instances it
//! was given, each training step as checkpoint (when one is written before it), compute and
//! communication on the job's devices (the first `d` devices of a node holding `d`), each
//! serving batch on its replica's devices — and a device is `failed` from a crash or fault to
//! its repair. Work cut short by a failure is clipped at the failure when the timeline is
//! built. Gaps are idle. One record covers all devices of a step (a set), so a 2,000-step job
//! on 64 GPUs costs 6,000 records, not 384,000; recording stops at [`MAX_SPANS`] (the
//! timeline says it is truncated).

use std::collections::HashMap;

use serde::Serialize;

/// Most span records one run keeps.
pub const MAX_SPANS: usize = 1_000_000;

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
    pub labels: Vec<String>,
    /// Sorted by start, then set; work clipped at failures.
    pub spans: Vec<Span>,
    pub truncated: bool,
}

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
}

impl Recorder {
    pub fn init(&mut self, on: bool, nodes: &[(String, usize)]) {
        self.on = on;
        if !on {
            return;
        }
        for (n, (name, devices)) in nodes.iter().enumerate() {
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

    /// Record `kind` work on `devices` between two instants (ns).
    pub fn span(&mut self, devices: Vec<u32>, start: u64, end: u64, kind: SpanKind, label: &str) {
        if !self.on || devices.is_empty() || end <= start {
            return;
        }
        if self.t.spans.len() >= MAX_SPANS {
            self.t.truncated = true;
            return;
        }
        let next = self.t.sets.len() as u32;
        let set = match self.set_index.get(&devices) {
            Some(s) => *s,
            None => {
                self.set_index.insert(devices.clone(), next);
                self.t.sets.push(devices);
                next
            }
        };
        let next = self.t.labels.len() as u32;
        let label = match self.label_index.get(label) {
            Some(l) => *l,
            None => {
                self.label_index.insert(label.to_string(), next);
                self.t.labels.push(label.to_string());
                next
            }
        };
        self.t.spans.push(Span {
            set,
            start: start as f64 / 1e9,
            end: end as f64 / 1e9,
            kind,
            label,
        });
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
                self.span(vec![*d], since, now, SpanKind::Failed, "failed");
            }
        }
    }

    /// Close open failures at `end`, clip work at failures, sort.
    pub fn finish(mut self, end: u64) -> Timeline {
        if !self.on {
            return Timeline::default();
        }
        let mut open: Vec<(u32, u64)> = self.failed_since.drain().collect();
        open.sort_unstable();
        for (d, since) in open {
            self.span(
                vec![d],
                since,
                end.max(since + 1),
                SpanKind::Failed,
                "failed",
            );
        }
        let mut t = self.t;
        // Failure intervals per device, to clip work that was cut short.
        let mut fails: HashMap<u32, Vec<(f64, f64)>> = HashMap::new();
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
        t
    }
}
