//! Tests of the engine's scheduler (`engine.rs`).

use super::*;

fn cfg(budget: u32, seqs: u32, chunked: bool) -> EngineConfig {
    EngineConfig {
        token_budget: budget,
        max_seqs: seqs,
        chunked_prefill: chunked,
        kv_block: 4,
        ..EngineConfig::default()
    }
}

fn run(e: &mut Engine, now: Time) -> (Batch, Vec<Finished>) {
    let b = e.schedule();
    let mut out = Vec::new();
    e.complete(&b, now, |_| {}, |f| out.push(f));
    (b, out)
}

#[test]
fn chunked_prefill_splits_a_prompt_over_the_budget() {
    let mut e = Engine::new(cfg(8, 4, true), 100);
    e.arrive(Seq::new(0, 20, 2));
    let sizes: Vec<u32> = (1..=4).map(|t| run(&mut e, t).0.scheduled[0].1).collect();
    // 8 + 8 + 4 of the prompt (the first token sampled after the third), then a decode.
    assert_eq!(sizes, vec![8, 8, 4, 1]);
    assert!(e.running.is_empty());
    assert_eq!(e.free_blocks, 100);
}

#[test]
fn unchunked_prompts_are_admitted_whole_or_wait() {
    let mut e = Engine::new(cfg(8, 4, false), 100);
    e.arrive(Seq::new(0, 6, 3));
    e.arrive(Seq::new(0, 6, 1));
    let (b, _) = run(&mut e, 1);
    // The second prompt (6) does not fit the 2 tokens left: it waits.
    assert_eq!(b.scheduled, vec![(0, 6)]);
    let (b, _) = run(&mut e, 2);
    assert_eq!(b.scheduled, vec![(0, 1), (1, 6)]);
}

#[test]
fn a_second_batch_in_flight_skips_the_first_ones_sequences() {
    let mut e = Engine::new(cfg(8, 8, true), 100);
    e.arrive(Seq::new(0, 2, 3));
    e.arrive(Seq::new(0, 20, 2));
    // Batch A: the short prompt whole, 6 tokens of the long one.
    let a = e.schedule();
    assert_eq!(a.scheduled, vec![(0, 2), (1, 6)]);
    // Batch B while A is in flight: the short one waits for its token; the long prompt's
    // next chunk follows its first, over its 6 pending tokens.
    let b = e.schedule();
    assert_eq!(b.scheduled, vec![(1, 8)]);
    assert_eq!(b.shape.context_tokens, 6.0);
    e.complete(&a, 1, |_| {}, |_| {});
    let c = e.schedule();
    assert_eq!(c.scheduled, vec![(0, 1), (1, 6)]);
    e.complete(&b, 2, |_| {}, |_| {});
    e.complete(&c, 3, |_| {}, |_| {});
    assert_eq!(e.running[1].computed, 20);
    assert!(e.running.iter().all(|s| s.pending == 0));
}

#[test]
fn reserve_prompt_admits_a_chunked_prompt_only_when_all_its_blocks_fit() {
    // 5 blocks of 4 tokens. A (8 + 4) prefills in iteration 1 (2 blocks) and decodes from
    // iteration 2 (a third block for its 9th token), leaving 2 blocks and 7 tokens of
    // budget; B's prompt of 12 tokens takes 3 blocks whole.
    let both = |reserve: Reserve| {
        let mut e = Engine::new(
            EngineConfig {
                reserve,
                ..cfg(8, 4, true)
            },
            5,
        );
        e.arrive(Seq::new(0, 8, 4));
        e.arrive(Seq::new(0, 12, 1));
        assert_eq!(run(&mut e, 1).0.scheduled, vec![(0, 8)]);
        (run(&mut e, 2).0.scheduled, e)
    };
    // vLLM's admission takes a chunk's 2 blocks: B's first 7 tokens run.
    assert_eq!(both(Reserve::Off).0, vec![(0, 1), (1, 7)]);
    // TensorRT-LLM's MAX_UTILIZATION wants all 3 of the prompt's at once: B waits, and is
    // admitted whole (its 3 blocks) once A finishes and frees its own.
    let (b, mut e) = both(Reserve::Prompt);
    assert_eq!(b, vec![(0, 1)]);
    let mut t = 3;
    while e.running.first().is_some_and(|s| s.prompt == 8) {
        run(&mut e, t);
        t += 1;
    }
    let (b, _) = run(&mut e, t);
    assert_eq!(b.scheduled, vec![(0, 8)]);
    assert_eq!(e.running[0].blocks, 3);
}

#[test]
fn lookahead_counts_each_finish_as_sglang_does() {
    // Running: (2 left, 10 held) and (5 left, 20 held); the candidate (3 left) brings a
    // prompt of 4. Sorted by what is left: 2, 3, 5. Free 30 − 4 = 26: 26 − 3 × 3 = 17 > 0,
    // then 26 + 10 − 5 × 2 = 26 > 0, then 26 + 10 + 4 − 5 × 1 = 35 > 0: it fits.
    let running = [(2, 10), (5, 20)];
    assert!(lasts(&running, Some((3, 4)), 30, 4));
    // With 13 free, 13 − 4 − 9 = 0 at the first step: it does not.
    assert!(!lasts(&running, Some((3, 4)), 13, 4));
    assert!(lasts(&running, Some((3, 4)), 14, 4));
}

#[test]
fn unmixed_batches_are_all_prefill_or_all_decode_and_lookahead_never_preempts() {
    // SGLang's engine: 64 tokens a batch, blocks of one token, room for 60 tokens.
    let mut e = Engine::new(
        EngineConfig {
            kv_block: 1,
            mixed: false,
            reserve: Reserve::Lookahead,
            ..cfg(64, 16, true)
        },
        60,
    );
    for _ in 0..6 {
        e.arrive(Seq::new(0, 6, 8));
    }
    // The look-ahead admits 4 (4 × 14 = 56 tokens of 60); a fifth would run out before
    // the first finishes (60 − 24 − 6 − 5 × 7 < 0).
    let (b, _) = run(&mut e, 1);
    assert_eq!(b.scheduled.len(), 4);
    let mut t = 2;
    let mut finished = 0;
    while finished < 6 {
        let (b, done) = run(&mut e, t);
        // Whole prompts of 6 only, or decodes only.
        let n: Vec<u32> = b.scheduled.iter().map(|&(_, n)| n).collect();
        assert!(
            n.iter().all(|&n| n == 6) || n.iter().all(|&n| n == 1),
            "{n:?}"
        );
        assert!(!n.is_empty());
        finished += done.len();
        t += 1;
    }
    assert_eq!(e.preemptions, 0);
    assert_eq!(e.free_blocks, 60);
}

#[test]
fn exhausted_blocks_preempt_the_latest_and_everything_finishes() {
    // 4 blocks of 4 tokens: two sequences of 5 + 6 tokens cannot both grow.
    let mut e = Engine::new(cfg(64, 4, true), 4);
    e.arrive(Seq::new(0, 5, 6));
    e.arrive(Seq::new(0, 5, 6));
    let mut done = 0;
    for t in 1..100 {
        done += run(&mut e, t).1.len();
        assert!(e.used_blocks() <= e.total_blocks);
    }
    assert_eq!(done, 2);
    assert!(e.preemptions > 0);
    assert_eq!(e.free_blocks, 4);
}
