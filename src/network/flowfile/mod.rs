//! Flow files (`orrery flows FILE`): links and timed flows in plain text, run on [`FlowNet`],
//! so Orrery's network model can be compared with another flow-level simulator on the same
//! input without writing Rust (grammar/orrery.md §4 is the reference).
//!
//! ```text
//! link L1 10GB/s 1us            # link ID BANDWIDTH LATENCY
//! flow a 1GB 0s L1 L2           # flow ID BYTES START LINK...
//! ```
//!
//! Model: a flow declared at START joins the max-min sharing at START + the sum of its path's
//! link latencies (a link listed twice is paid, and loaded, twice), is then served at its
//! max-min rate, and completes when its last byte is served; a zero-byte flow completes when
//! it would join. Times are f64 seconds (not rounded to nanoseconds as a scenario's are).
//!
//! Work is bounded before it starts: at most [`MAX_LINKS`] links, [`MAX_FLOWS`] flows and
//! [`MAX_PATH`] links per path (and the 16 MiB of the file), so a run has at most two events
//! per flow.

mod parse;

use super::drive::Step;
use super::flows::{FlowId, FlowNet, LinkId};
use crate::diag::{Diagnostic, FileId};

/// Most links in one file.
pub const MAX_LINKS: usize = 1_000_000;
/// Most flows in one file.
pub const MAX_FLOWS: usize = 1_000_000;
/// Most links in one flow's path (repeats counted).
pub const MAX_PATH: usize = 4_096;

/// A directed link.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub id: String,
    /// Bytes per second, finite and positive.
    pub bandwidth: f64,
    /// Seconds, finite and at least 0.
    pub latency: f64,
}

/// A timed flow.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    pub id: String,
    /// Finite and at least 0.
    pub bytes: f64,
    /// Seconds, finite and at least 0.
    pub start: f64,
    /// Indices into [`FlowFile::links`], in the file's order; never empty.
    pub path: Vec<LinkId>,
}

/// A parsed flow file: links and flows in the file's order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowFile {
    pub links: Vec<Link>,
    pub flows: Vec<Flow>,
}

impl FlowFile {
    /// Parse a flow file (`file` locates its diagnostics). If any line is wrong, the errors in
    /// file order, one per line: the first [`MAX_ERRORS`](crate::syntax::parse::MAX_ERRORS),
    /// then one saying it stopped there.
    pub fn parse(text: &str, file: FileId) -> Result<FlowFile, Vec<Diagnostic>> {
        parse::parse(text, file)
    }

    /// Every flow's completion time in seconds from 0, in the file's order (module docs: the
    /// model). A flow whose time is past f64's range (or whose rate rounds to zero) reads
    /// infinity.
    pub fn simulate(&self) -> Vec<f64> {
        let n = self.flows.len();
        let mut done = vec![f64::INFINITY; n];
        // When each flow joins the sharing, and the order they do (ties: file order).
        let join: Vec<f64> = self
            .flows
            .iter()
            .map(|f| {
                f.path
                    .iter()
                    .fold(f.start, |t, &l| t + self.links[l].latency)
            })
            .collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| join[a].total_cmp(&join[b]).then(a.cmp(&b)));
        let mut net = FlowNet::new(self.links.iter().map(|l| l.bandwidth).collect());
        // The flow each network id stands for (the network reuses ids of removed flows).
        let mut owner: Vec<usize> = Vec::new();
        let mut next = 0;
        let mut now = 0.0f64;
        let mut finished: Vec<FlowId> = Vec::new();
        let mut batch: Vec<usize> = Vec::new();
        loop {
            let arrival = order.get(next).map(|&i| join[i]);
            // Completions first at a tie: a finished flow shares nothing from then on.
            match net.step(&mut now, arrival) {
                Step::Finished(f) => {
                    finished.clear();
                    net.take_finished(&mut finished);
                    if !finished.contains(&f) {
                        // Rounding left it a hair short: it is the flow that finishes now.
                        finished.push(f);
                    }
                    finished.sort_unstable();
                    net.remove_batch(&finished);
                    for g in &finished {
                        done[owner[g.0 as usize]] = now;
                    }
                }
                Step::Reached => {
                    let a = now;
                    // Every flow joining at this instant joins in one refill, in file order.
                    batch.clear();
                    while let Some(&i) = order.get(next).filter(|&&i| join[i] == a) {
                        next += 1;
                        if self.flows[i].bytes > 0.0 {
                            batch.push(i);
                        } else {
                            done[i] = a;
                        }
                    }
                    if batch.is_empty() {
                        continue;
                    }
                    let ids = net.add_batch(
                        batch
                            .iter()
                            .map(|&i| (self.flows[i].path.clone(), self.flows[i].bytes)),
                    );
                    for (&i, id) in batch.iter().zip(ids) {
                        let k = id.0 as usize;
                        if owner.len() <= k {
                            owner.resize(k + 1, usize::MAX);
                        }
                        owner[k] = i;
                    }
                }
                // Nothing left to join, and nothing that moves.
                Step::Stuck => break,
            }
        }
        done
    }

    /// Indices of the flows ordered by id, byte-wise (`10` before `9`).
    pub fn by_id(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.flows.len()).collect();
        order.sort_unstable_by(|&a, &b| self.flows[a].id.cmp(&self.flows[b].id));
        order
    }
}
