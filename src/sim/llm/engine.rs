//! One replica's LLM engine: its KV blocks, its waiting and running sequences, and the
//! continuous-batching scheduler that picks each iteration's batch. Pure (no clock, no
//! events, no network): `schedule` picks a batch, `complete` applies it at a given time.
//!
//! Modelled on vLLM V1's scheduler (`vllm/v1/core/sched/scheduler.py`, `schedule()`, read
//! at commit 00024d31 of vllm-project/vllm) and its block pool (`kv_cache_manager.py`,
//! `allocate_slots`):
//! - A sequence has `tokens` (prompt + generated) and `computed` (tokens whose KV is
//!   cached); each iteration gives it up to `tokens − computed` new tokens (1 when
//!   decoding). When it has computed all its tokens it samples the next one.
//! - Running sequences are scheduled first, in admission order, within the token budget;
//!   each needs ⌈(computed + n) / kv_block⌉ blocks. When the pool cannot give them, the most
//!   recently admitted running sequence is preempted (`self.running.pop()`), until the
//!   request fits or is itself the one preempted.
//! - Then, only if nothing was preempted this iteration, waiting sequences in order while
//!   the budget lasts and fewer than `max_seqs` run. With chunked prefill a prompt takes
//!   what budget is left; without, it is admitted only whole (`num_new_tokens >
//!   token_budget` stops the waiting loop, as vLLM does). Admission takes the blocks of the
//!   tokens it computes now (vLLM), of all it has not computed yet even when chunked
//!   (TensorRT-LLM's MAX_UTILIZATION), or of its whole prompt and output (TensorRT-LLM's
//!   GUARANTEED_NO_EVICT): [`Reserve`]. The first waiting sequence that does not get them
//!   stops admission (both engines break there).
//! - Recompute preemption frees the blocks and puts the sequence at the front of the
//!   waiting queue with nothing computed; its prompt and generated tokens are recomputed as
//!   one prefill. Swap preemption (vLLM V0) keeps its KV in host memory: it resumes at the
//!   front of the queue with its KV copied back ([`Batch::swap_in_blocks`]).
//! - Several batches in flight (pipeline parallelism, `sim::llm::pipeline`): tokens
//!   scheduled but not yet computed are a sequence's `pending`; as vLLM advances
//!   `num_computed_tokens` when it schedules, a sequence gets `tokens − computed − pending`
//!   new tokens, so one decoding, or whose prompt is all scheduled, is skipped until its
//!   batch completes (`num_new_tokens == 0`: "PP>1 and we have already scheduled all prompt
//!   tokens but they are not finished yet", `scheduler.py` read at commit b4622cf9), while
//!   a long prompt's next chunk may follow its previous one. A sequence in flight is never
//!   preempted (here; vLLM pops the latest running one regardless): the latest admitted
//!   one not in flight is. With one batch at a time nothing is pending when scheduling.

use crate::engine::Time;
use crate::model::serving::BatchShape;
use crate::scenario::serving::{EngineConfig, Preempt, Reserve};
use std::collections::VecDeque;

/// Most requests waiting at one replica; more arrivals are dropped (and counted).
pub const MAX_WAITING: usize = 1_000_000;

/// One request in the engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Seq {
    /// The engine's number for it (given by [`Engine::arrive`]).
    pub id: u64,
    pub arrival: Time,
    pub prompt: u32,
    /// Tokens to generate.
    pub output: u32,
    pub generated: u32,
    /// Tokens whose KV is cached (on the device, or in host memory while swapped).
    pub computed: u32,
    /// Tokens scheduled in batches still in flight (pipeline parallelism).
    pub pending: u32,
    /// KV blocks it holds on the device.
    pub blocks: u32,
    /// Its KV is in host memory (swap preemption).
    pub swapped: bool,
    pub first_token: Option<Time>,
    pub last_token: Time,
    /// A prefill-pool sequence (`disaggregate`): the tokens its decode replica generates
    /// once its KV cache has moved there. The engine only carries it to [`Finished`].
    pub handoff: Option<u32>,
    /// It has been admitted to a batch before (its wait for one is over).
    pub admitted: bool,
}

impl Seq {
    pub fn new(arrival: Time, prompt: u32, output: u32) -> Seq {
        Seq {
            id: 0,
            arrival,
            prompt,
            output,
            generated: 0,
            computed: 0,
            pending: 0,
            blocks: 0,
            swapped: false,
            first_token: None,
            last_token: arrival,
            handoff: None,
            admitted: false,
        }
    }

    fn tokens(&self) -> u32 {
        self.prompt + self.generated
    }
}

/// One iteration's batch: how many new tokens each running sequence (by position in
/// `running`) computes, and the shape the roofline prices.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    pub scheduled: Vec<(usize, u32)>,
    /// The scheduled sequences' ids, in the order of `scheduled`.
    pub ids: Vec<u64>,
    pub shape: BatchShape,
    /// Blocks preempted sequences move to host memory this iteration, and blocks resumed
    /// ones move back (swap preemption).
    pub swap_out_blocks: u64,
    pub swap_in_blocks: u64,
    pub preempted: u32,
    /// Arrival times of the sequences this batch admits for the first time (their wait for a
    /// batch ends when it starts).
    pub admitted: Vec<Time>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.scheduled.is_empty()
    }
}

/// What happened to a sequence when a batch completed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Emitted {
    /// Its first token, `ttft` after its arrival.
    First { ttft: Time },
    /// A later token, `gap` after the one before.
    Next { gap: Time },
}

/// A request that generated its last token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Finished {
    pub arrival: Time,
    pub first_token: Time,
    pub done: Time,
    pub prompt: u32,
    pub output: u32,
    /// Blocks it held until now (freed).
    pub blocks: u32,
    pub handoff: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct Engine {
    pub cfg: EngineConfig,
    pub total_blocks: u64,
    pub free_blocks: u64,
    pub waiting: VecDeque<Seq>,
    /// In admission order (the last is the most recently admitted).
    pub running: Vec<Seq>,
    pub preemptions: u64,
    pub dropped: u64,
    next_id: u64,
}

impl Engine {
    pub fn new(cfg: EngineConfig, total_blocks: u64) -> Engine {
        Engine {
            cfg,
            total_blocks,
            free_blocks: total_blocks,
            waiting: VecDeque::new(),
            running: Vec::with_capacity(cfg.max_seqs as usize),
            preemptions: 0,
            dropped: 0,
            next_id: 0,
        }
    }

    /// A request arrives; `false` when the waiting queue is full and it is dropped.
    pub fn arrive(&mut self, mut s: Seq) -> bool {
        if self.waiting.len() >= MAX_WAITING {
            self.dropped += 1;
            return false;
        }
        s.id = self.next_id;
        self.next_id += 1;
        self.waiting.push_back(s);
        true
    }

    /// Requests waiting or running.
    pub fn outstanding(&self) -> usize {
        self.waiting.len() + self.running.len()
    }

    /// Keep `n` blocks out of the pool (a prefill replica's KV cache until its transfer to a
    /// decode replica is done: vLLM's `NixlConnector` delays freeing the blocks of a request
    /// handed off, `request_finished` returning `delay_free_blocks`). At most the free ones.
    pub fn hold(&mut self, n: u64) -> u64 {
        let n = n.min(self.free_blocks);
        self.free_blocks -= n;
        n
    }

    /// Give back `n` blocks kept by [`Engine::hold`].
    pub fn release(&mut self, n: u64) {
        self.free_blocks = (self.free_blocks + n).min(self.total_blocks);
    }

    pub fn used_blocks(&self) -> u64 {
        self.total_blocks - self.free_blocks
    }

    fn blocks_for(&self, tokens: u32) -> u32 {
        tokens.div_ceil(self.cfg.kv_block)
    }

    /// Give `s` blocks for `computed + pending + n` tokens, if the pool has them.
    fn allocate(&mut self, s: usize, n: u32, running: bool) -> bool {
        let seq = if running {
            &self.running[s]
        } else {
            &self.waiting[s]
        };
        let need = u64::from(
            self.blocks_for(seq.computed + seq.pending + n)
                .saturating_sub(seq.blocks),
        );
        if need > self.free_blocks {
            return false;
        }
        self.free_blocks -= need;
        let seq = if running {
            &mut self.running[s]
        } else {
            &mut self.waiting[s]
        };
        seq.blocks += need as u32;
        true
    }

    /// Preempt the most recently admitted running sequence at position `from` or later that
    /// is not in flight (the last one, with one batch at a time); its position in `running`,
    /// `None` when there is none.
    fn preempt_last(&mut self, b: &mut Batch, from: usize) -> Option<usize> {
        let at = (from..self.running.len())
            .rev()
            .find(|&j| self.running[j].pending == 0)?;
        let mut s = self.running.remove(at);
        self.free_blocks += u64::from(s.blocks);
        match self.cfg.preempt {
            Preempt::Recompute => s.computed = 0,
            Preempt::Swap => {
                b.swap_out_blocks += u64::from(s.blocks);
                s.swapped = true;
            }
        }
        s.blocks = 0;
        self.preemptions += 1;
        b.preempted += 1;
        self.waiting.push_front(s);
        Some(at)
    }

    /// The next iteration's batch (empty: nothing to run). Unmixed (SGLang), a prefill batch
    /// when there is prompt work to continue or admit, else a decode batch.
    pub fn schedule(&mut self) -> Batch {
        if self.cfg.mixed {
            return self.schedule_phase(Phase::Any);
        }
        let b = self.schedule_phase(Phase::Prefill);
        if !b.is_empty() {
            return b;
        }
        let mut d = self.schedule_phase(Phase::Decode);
        d.admitted.extend(b.admitted);
        d.preempted += b.preempted;
        d.swap_out_blocks += b.swap_out_blocks;
        d.swap_in_blocks += b.swap_in_blocks;
        d
    }

    fn schedule_phase(&mut self, phase: Phase) -> Batch {
        let mut b = Batch::default();
        let mut budget = self.cfg.token_budget;
        let mut i = 0;
        while i < self.running.len() && budget > 0 {
            let s = &self.running[i];
            let n = (s.tokens() - s.computed - s.pending).min(budget);
            if n == 0 || !phase.takes(s) {
                // In flight with nothing left to schedule (pipeline parallelism), or not
                // of this batch's phase.
                i += 1;
                continue;
            }
            let mut fits = true;
            while !self.allocate(i, n, true) {
                if self.preempt_last(&mut b, i).is_none_or(|at| at == i) {
                    fits = false;
                    break;
                }
            }
            if !fits {
                break;
            }
            b.scheduled.push((i, n));
            budget -= n;
            i += 1;
        }
        // SGLang's look-ahead states, built at the first admission it checks.
        let mut ahead: Option<Vec<(u32, u32)>> = None;
        while phase != Phase::Decode
            && b.preempted == 0
            && budget > 0
            && self.running.len() < self.cfg.max_seqs as usize
            && let Some(s) = self.waiting.front()
        {
            let want = s.tokens() - s.computed;
            if !self.cfg.chunked_prefill && want > budget {
                break;
            }
            let n = want.min(budget);
            let hold = match self.cfg.reserve {
                Reserve::Off | Reserve::Lookahead => n,
                Reserve::Prompt => want,
                Reserve::Request => (s.prompt + s.output).saturating_sub(s.computed).max(n),
            };
            if self.cfg.reserve == Reserve::Lookahead {
                let states = ahead.get_or_insert_with(|| {
                    let mut v: Vec<(u32, u32)> = self.running.iter().filter_map(left).collect();
                    v.sort_unstable();
                    v
                });
                let free = self.free_blocks * u64::from(self.cfg.kv_block);
                if !lasts(states, left(s), free, want) {
                    break;
                }
            }
            if !self.allocate(0, hold, false) {
                break;
            }
            let mut s = self.waiting.pop_front().expect("front");
            if !s.admitted {
                s.admitted = true;
                b.admitted.push(s.arrival);
            }
            if s.swapped {
                s.swapped = false;
                b.swap_in_blocks += u64::from(self.blocks_for(s.computed));
            }
            if let (Some(states), Some(st)) = (ahead.as_mut(), left(&s)) {
                let at = states.partition_point(|x| x.0 < st.0);
                states.insert(at, st);
            }
            self.running.push(s);
            b.scheduled.push((self.running.len() - 1, n));
            budget -= n;
        }
        for &(k, n) in &b.scheduled {
            let s = &mut self.running[k];
            let c = s.computed + s.pending;
            b.shape.add(u64::from(n), u64::from(c), c + n == s.tokens());
            s.pending += n;
            b.ids.push(s.id);
        }
        b
    }

    /// The batch ran and ended at `now`: tokens computed, tokens sampled (`emit` for each),
    /// finished requests freed and returned through `done`.
    pub fn complete(
        &mut self,
        b: &Batch,
        now: Time,
        mut emit: impl FnMut(Emitted),
        mut done: impl FnMut(Finished),
    ) {
        // Where the batch's sequences are now: other batches may have completed (and removed
        // finished sequences) since it was scheduled; their order in `running` is kept.
        let mut from = 0;
        for (&(pos, n), &id) in b.scheduled.iter().zip(&b.ids) {
            let k = if self.running.get(pos).is_some_and(|s| s.id == id) {
                pos
            } else {
                match self.running[from..].iter().position(|s| s.id == id) {
                    Some(p) => from + p,
                    None => continue,
                }
            };
            from = k + 1;
            let s = &mut self.running[k];
            s.pending -= n;
            s.computed += n;
            if s.computed < s.tokens() {
                continue;
            }
            s.generated += 1;
            match s.first_token {
                None => {
                    s.first_token = Some(now);
                    emit(Emitted::First {
                        ttft: now - s.arrival,
                    });
                }
                Some(_) => emit(Emitted::Next {
                    gap: now - s.last_token,
                }),
            }
            s.last_token = now;
        }
        let mut k = 0;
        while k < self.running.len() {
            let s = &self.running[k];
            if s.generated < s.output {
                k += 1;
                continue;
            }
            let s = self.running.remove(k);
            self.free_blocks += u64::from(s.blocks);
            done(Finished {
                arrival: s.arrival,
                first_token: s.first_token.unwrap_or(now),
                done: now,
                prompt: s.prompt,
                output: s.output,
                blocks: s.blocks,
                handoff: s.handoff,
            });
        }
    }
}

/// Which sequences an iteration takes: all (mixed), or only those computing their prompt
/// (prefill batches, which also admit) or only decoding ones (SGLang's two kinds of batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Any,
    Prefill,
    Decode,
}

impl Phase {
    fn takes(self, s: &Seq) -> bool {
        // A sequence decodes once it has sampled a token and has one token left to compute
        // (one recomputing after preemption with one left is taken as decoding).
        let decoding = s.generated > 0 && s.tokens() - s.computed - s.pending <= 1;
        match self {
            Phase::Any => true,
            Phase::Prefill => !decoding,
            Phase::Decode => decoding,
        }
    }
}

/// A sequence's (output tokens left, tokens it holds now): SGLang's
/// `(tokens_left, tokens_occupied)`, `None` when it has nothing left to generate.
fn left(s: &Seq) -> Option<(u32, u32)> {
    let l = s.output.saturating_sub(s.generated);
    (l > 0).then_some((l, s.tokens()))
}

/// SGLang's look-ahead (`add_one_req_ignore_eos`, `schedule_policy.py`): with the running
/// sequences' states sorted by output left and the candidate's among them, the pool's
/// `free` tokens less the candidate's `input` must stay positive while the batch decodes
/// to each next finish, freeing the tokens of each that finishes. The step count is the
/// next state's (as SGLang writes it, a little conservative).
fn lasts(states: &[(u32, u32)], cand: Option<(u32, u32)>, free: u64, input: u32) -> bool {
    // The candidate goes before the first state with as much left (as `partition_point`
    // inserts it); walked in place, no copy of the states.
    let at = cand.map_or(states.len(), |c| states.partition_point(|x| x.0 < c.0));
    let n = states.len() + usize::from(cand.is_some());
    let nth = |i: usize| match cand {
        Some(c) if i == at => c,
        Some(_) if i > at => states[i - 1],
        _ => states[i],
    };
    let rem = free as i64 - i64::from(input);
    let mut freed = 0i64;
    for i in 0..n {
        let (l, occupied) = nth(i);
        let steps = if i + 1 < n { nth(i + 1).0 } else { l };
        let bs = (n - i) as i64;
        if rem + freed - i64::from(steps) * bs <= 0 {
            return false;
        }
        freed += i64::from(occupied);
    }
    true
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
