//! Transfers on the run's network, for the trace: what moved, from where to where, how many
//! bytes, with which transport, and when.
//!
//! Every kind of data movement the simulation puts on the shared network is recorded when it
//! completes: input fetches (one record per holder node), restores of spilled inputs (holder
//! disk → holder memory) and spills (node → its disk), checkpoint writes and loads (one record
//! per node of the job, node ↔ storage target), actor calls' tensors, and service request and
//! response payloads. A transfer is recorded from the moment it begins — its fixed part (the
//! transport's setup, the critical path's latency) included — to the moment its last byte has
//! arrived; one cancelled by a failure, or restarted over new routes, keeps only its completed
//! attempt. A training step's collectives are one record per step, over the job's group of
//! nodes, from the end of its compute to the end of the step (on the shared network or in
//! closed form, and the record says which); their per-round flows are not recorded (a ring
//! step of p ranks has 2(p−1) rounds of p flows each).
//!
//! Bound: at most [`MAX_TRANSFERS`] records; later ones are counted in
//! [`Timeline::transfers_dropped`], not kept (the same policy as spans: the beginning of a
//! long run is shown whole, the rest is counted).

use serde::Serialize;

use super::{Recorder, Timeline};

/// Most transfer records a timeline keeps.
pub const MAX_TRANSFERS: usize = 200_000;

/// What a transfer moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveKind {
    /// A task's inputs from a holder node.
    Fetch,
    /// A task's spilled inputs, from a holder's disk back into its memory.
    Restore,
    /// A task's output, from its node's memory to its disk.
    Spill,
    CheckpointWrite,
    CheckpointLoad,
    /// A training step's collectives over its group's nodes.
    Collective,
    /// An actor call's tensor.
    Tensor,
    /// A batch's requests, from the ingress to the replica.
    Request,
    /// A batch's responses, from the replica to the ingress.
    Response,
}

impl MoveKind {
    pub fn name(self) -> &'static str {
        match self {
            MoveKind::Fetch => "fetch",
            MoveKind::Restore => "restore",
            MoveKind::Spill => "spill",
            MoveKind::CheckpointWrite => "checkpoint write",
            MoveKind::CheckpointLoad => "checkpoint load",
            MoveKind::Collective => "collective",
            MoveKind::Tensor => "tensor",
            MoveKind::Request => "request",
            MoveKind::Response => "response",
        }
    }

    /// What kind of work the record's label names: `task`, `job`, `actor` or `service`.
    pub fn owner(self) -> &'static str {
        match self {
            MoveKind::Fetch | MoveKind::Restore | MoveKind::Spill => "task",
            MoveKind::CheckpointWrite | MoveKind::CheckpointLoad | MoveKind::Collective => "job",
            MoveKind::Tensor => "actor",
            MoveKind::Request | MoveKind::Response => "service",
        }
    }
}

/// One end of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// A node's memory (host or device), by index in the cluster's node order.
    Node(u32),
    /// A declared storage target (index into [`Timeline::storage`]).
    Storage(u32),
    /// A node's own spill disk (none declared: `network::SPILL_DISK_BW`).
    Disk(u32),
}

/// One transfer that completed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Transfer {
    pub kind: MoveKind,
    /// The work that moved it (index into [`Timeline::labels`]): the task (`w.b[7]`), job
    /// (`w.train`), actor (`w.a[0]`) or service (`w.s`).
    pub label: u32,
    /// The instance of the labelled item (task or actor index; [`Timeline::transfer_label`]).
    pub instance: Option<u32>,
    /// A collective's source and destination are both its group's first node.
    pub from: End,
    pub to: End,
    /// Seconds: from its beginning (fixed part included) to its last byte's arrival.
    pub start: f64,
    pub end: f64,
    /// Bytes it moved (a collective: the sum of its collectives' declared sizes).
    pub bytes: f64,
    /// Index into [`Timeline::labels`]: the transport (`object_store`, ...), `storage
    /// (fabric)`, `disk`, or for a collective how it was priced.
    pub transport: u32,
    /// A training job's step: for a collective the step it ends, for a checkpoint the step
    /// it precedes (a load: the step the job resumes at), 0-based.
    pub step: Option<u32>,
    /// A collective's group (index into [`Timeline::groups`]).
    pub group: Option<u32>,
}

/// The nodes and ranks of a collective's group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Group {
    /// The placement group's name.
    pub name: String,
    /// Nodes taking part (those where it holds devices), ascending.
    pub nodes: Vec<u32>,
    pub ranks: u32,
    /// Each collective of the step, e.g. `allreduce ring`, joined by ` + `.
    pub algorithm: String,
}

/// A part of a transfer in flight (all but its times).
pub(crate) struct Part {
    pub kind: MoveKind,
    pub label: u32,
    /// Which of the item's instances moved it (task `7` of `w.b`: `w.b[7]`).
    pub instance: Option<u32>,
    pub from: End,
    pub to: End,
    pub bytes: f64,
    pub transport: u32,
    pub step: Option<u32>,
}

/// What moves a transfer: one at a time each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum MoveKey {
    Fetch(u32),
    Restore(u32),
    Spill(u32),
    Checkpoint(u32),
    Tensor(u32),
    Request(u32),
    Response(u32),
}

impl Recorder {
    /// A string of the label table (work and transport names), by index.
    pub(crate) fn name(&mut self, s: &str) -> u32 {
        match self.label_index.get(s) {
            Some(l) => *l,
            None => {
                let next = self.t.labels.len() as u32;
                self.label_index.insert(s.to_string(), next);
                self.t.labels.push(s.to_string());
                next
            }
        }
    }

    /// A part of a transfer, its names interned.
    #[allow(clippy::too_many_arguments)]
    /// `label` is an interned name ([`Recorder::name`]), so a long name costs nothing per part.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn part(
        &mut self,
        kind: MoveKind,
        label: u32,
        instance: Option<u32>,
        from: End,
        to: End,
        bytes: f64,
        transport: &str,
        step: Option<u32>,
    ) -> Part {
        Part {
            kind,
            label,
            instance,
            from,
            to,
            bytes,
            transport: self.name(transport),
            step,
        }
    }

    /// `key` began moving `parts` at `now` (ns); a transfer of `key` already in flight (one a
    /// failure cancelled) is forgotten.
    pub(crate) fn begin(&mut self, key: MoveKey, now: u64, parts: Vec<Part>) {
        if self.on && !parts.is_empty() {
            self.moving.insert(key, (now, parts));
        }
    }

    /// `key`'s transfer in flight has arrived at `now` (ns).
    pub(crate) fn arrived(&mut self, key: MoveKey, now: u64) {
        let Some((start, parts)) = self.moving.remove(&key) else {
            return;
        };
        for p in parts {
            self.keep(Transfer {
                kind: p.kind,
                label: p.label,
                instance: p.instance,
                from: p.from,
                to: p.to,
                start: start as f64 / 1e9,
                end: now as f64 / 1e9,
                bytes: p.bytes,
                transport: p.transport,
                step: p.step,
                group: None,
            });
        }
    }

    /// Training job `label`'s step `step` communicated over `group` from `start` to `end`
    /// (ns), `bytes` declared, priced as `model` says.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn collective(
        &mut self,
        label: u32,
        step: u32,
        group: Group,
        start: u64,
        end: u64,
        bytes: f64,
        model: &str,
    ) {
        if !self.on || end <= start || group.nodes.is_empty() {
            return;
        }
        if self.t.transfers.len() >= MAX_TRANSFERS {
            self.t.transfers_dropped += 1;
            return;
        }
        let first = End::Node(group.nodes[0]);
        let g = match self.group_index.get(&group) {
            Some(g) => *g,
            None => {
                let next = self.t.groups.len() as u32;
                self.group_index.insert(group.clone(), next);
                self.t.groups.push(group);
                next
            }
        };
        let transport = self.name(model);
        self.keep(Transfer {
            kind: MoveKind::Collective,
            label,
            instance: None,
            from: first,
            to: first,
            start: start as f64 / 1e9,
            end: end as f64 / 1e9,
            bytes,
            transport,
            step: Some(step),
            group: Some(g),
        });
    }

    fn keep(&mut self, x: Transfer) {
        if self.t.transfers.len() >= MAX_TRANSFERS {
            self.t.transfers_dropped += 1;
        } else {
            self.t.transfers.push(x);
        }
    }
}

impl Timeline {
    /// The name at `i` of the label table.
    pub fn label(&self, i: u32) -> &str {
        self.labels.get(i as usize).map_or("?", String::as_str)
    }

    /// What moved transfer `x`: its item's label, with the instance (`w.b[7]`) when it has one.
    pub fn transfer_label(&self, x: &Transfer) -> String {
        match x.instance {
            Some(i) => format!("{}[{i}]", self.label(x.label)),
            None => self.label(x.label).to_string(),
        }
    }

    /// What a run's timeline left out, for the run's header: empty when nothing was.
    pub fn limits(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.truncated {
            out.push(format!(
                "span recording stopped at its limit ({} spans, {} points per counter)",
                super::MAX_SPANS,
                super::MAX_COUNTER_POINTS
            ));
        }
        if self.transfers_dropped > 0 {
            out.push(format!(
                "{} network transfers after the first {} were not recorded",
                self.transfers_dropped,
                self.transfers.len()
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_beyond_the_limit_are_counted_not_kept() {
        let mut r = Recorder::default();
        r.init(
            true,
            &[
                ("n0".into(), 1, String::new()),
                ("n1".into(), 1, String::new()),
            ],
            &[],
        );
        let n = MAX_TRANSFERS as u32 + 7;
        for k in 0..n {
            let (label, transport) = (r.name("w.t"), r.name("object_store"));
            let part = Part {
                kind: MoveKind::Fetch,
                label,
                instance: Some(k),
                from: End::Node(0),
                to: End::Node(1),
                bytes: 1.0,
                transport,
                step: None,
            };
            r.begin(MoveKey::Fetch(k), u64::from(k), vec![part]);
            r.arrived(MoveKey::Fetch(k), u64::from(k) + 5);
        }
        // A collective past the limit is counted too.
        let g = Group {
            name: "pg".into(),
            nodes: vec![0, 1],
            ranks: 2,
            algorithm: "allreduce ring".into(),
        };
        let job = r.name("w.job");
        r.collective(job, 0, g, 10, 20, 1e9, "flow model");
        let t = r.finish(1_000_000);
        assert_eq!(t.transfers.len(), MAX_TRANSFERS);
        assert_eq!(t.transfers_dropped, 8);
        assert!(t.groups.is_empty());
        assert_eq!(t.labels.len(), 3, "labels are shared, not repeated");
        assert_eq!(t.transfer_label(&t.transfers[3]), "w.t[3]");
        let limits = t.limits();
        assert_eq!(limits.len(), 1);
        assert!(limits[0].starts_with("8 network transfers after the first 200000"));
        // The first ones are kept whole, in completion order.
        assert_eq!((t.transfers[3].start, t.transfers[3].end), (3e-9, 8e-9));
    }

    #[test]
    fn an_attempt_that_began_again_keeps_only_its_own_start() {
        let mut r = Recorder::default();
        r.init(true, &[("n0".into(), 0, String::new())], &["nfs".into()]);
        let part = |r: &mut Recorder| Part {
            kind: MoveKind::CheckpointWrite,
            label: r.name("w.job"),
            instance: None,
            from: End::Node(0),
            to: End::Storage(0),
            bytes: 5.0,
            transport: r.name("storage (fabric)"),
            step: Some(3),
        };
        let p = part(&mut r);
        r.begin(MoveKey::Checkpoint(0), 100, vec![p]);
        let p = part(&mut r);
        r.begin(MoveKey::Checkpoint(0), 300, vec![p]);
        r.arrived(MoveKey::Checkpoint(0), 400);
        // Nothing in flight for another key: nothing recorded.
        r.arrived(MoveKey::Checkpoint(1), 500);
        let t = r.finish(1000);
        assert_eq!(t.transfers.len(), 1);
        assert_eq!((t.transfers[0].start, t.transfers[0].end), (300e-9, 400e-9));
        assert_eq!(t.storage, vec!["nfs".to_string()]);
    }
}
