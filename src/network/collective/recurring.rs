//! One collective called again and again at sizes that change call to call (a serving
//! replica's tensor-parallel all-reduce, whose bytes follow each iteration's tokens). NCCL
//! picks the algorithm and protocol by size ([`super::configure`]: NCCL's pick, or a
//! calibration profile's measurement), and tree and in-switch
//! schedules are chunked pipelines whose rounds are not linear in the bytes, so each size is
//! scheduled as it is and the rounds kept per size (a bounded memo: sizes repeat, since they
//! are tokens × a constant).

use std::cell::RefCell;
use std::collections::HashMap;

use super::{Algorithm, Op, Options, Protocol, Rank, Round, configure, schedule};
use crate::network::Graph;

/// Most sizes kept; past it the memo starts over (memory stays bounded on any run).
const MEMO: usize = 4096;

#[derive(Debug, Clone)]
pub struct Recurring {
    op: Op,
    ranks: Vec<Rank>,
    algorithm: Option<Algorithm>,
    protocol: Option<Protocol>,
    memo: RefCell<HashMap<u64, Vec<Round>>>,
}

impl Recurring {
    /// `op` over `ranks` on `graph`, the algorithm and protocol NCCL's choice by size unless
    /// fixed; `Err` when the flow model cannot run it there (checked on a ring of 1 MiB and
    /// on NCCL's pick at 1 MiB).
    pub fn new(
        graph: &Graph,
        op: Op,
        ranks: &[Rank],
        algorithm: Option<Algorithm>,
        protocol: Option<Protocol>,
    ) -> Result<Recurring, String> {
        let r = Recurring {
            op,
            ranks: ranks.to_vec(),
            algorithm,
            protocol,
            memo: RefCell::new(HashMap::new()),
        };
        if algorithm.is_none() {
            schedule(
                graph,
                op,
                fallback(op),
                ranks,
                1048576.0,
                &Options::default(),
            )?;
        }
        r.schedule(graph, 1048576.0)?;
        Ok(r)
    }

    /// The calibration measurement that prices its calls, in words, when one does: NCCL
    /// chooses (neither algorithm nor protocol fixed) and the ranks' profile timed this op on
    /// a communicator of this shape ([`super::measured::lookup`]).
    pub fn measured(&self, graph: &Graph) -> Option<String> {
        if self.algorithm.is_some() || self.protocol.is_some() {
            return None;
        }
        super::measured::lookup(graph, self.op, &self.ranks)
            .map(|(fit, profile)| super::measured::describe(fit, profile))
    }

    fn schedule(&self, graph: &Graph, bytes: f64) -> Result<Vec<Round>, String> {
        let c = configure(
            graph,
            self.op,
            &self.ranks,
            bytes,
            self.algorithm,
            self.protocol,
        )?;
        schedule(graph, self.op, c.algorithm, &self.ranks, bytes, &c.options)
    }

    /// The rounds of one call of `bytes` per rank. Should NCCL's pick not run at this size
    /// (the checks in [`Recurring::new`] make that unlikely), the op's plain ring (or
    /// pairwise) schedule, which `new` checked; no rounds only if that fails too.
    pub fn rounds(&self, graph: &Graph, bytes: f64) -> Vec<Round> {
        let key = bytes.to_bits();
        if let Some(r) = self.memo.borrow().get(&key) {
            return r.clone();
        }
        let r = self.schedule(graph, bytes).unwrap_or_else(|_| {
            schedule(
                graph,
                self.op,
                fallback(self.op),
                &self.ranks,
                bytes,
                &Options::default(),
            )
            .unwrap_or_default()
        });
        let mut m = self.memo.borrow_mut();
        if m.len() >= MEMO {
            m.clear();
        }
        m.insert(key, r.clone());
        r
    }
}

fn fallback(op: Op) -> Algorithm {
    match op {
        Op::AllToAll | Op::SendRecv => Algorithm::Pairwise,
        _ => Algorithm::Ring,
    }
}
