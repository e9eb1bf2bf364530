//! The discrete-event core: simulated time, an event queue with FIFO ties and cancellation,
//! and per-component random streams.
//!
//! Architecture invariant: the engine does no IO and knows nothing of files, plots or CUDA.
//! Time is integer nanoseconds. Events at the same instant run in the order they were
//! scheduled (a sequence number breaks ties), so a run is a pure function of
//! (scenario, seed, version).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

mod parked;
pub use parked::Parked;

/// Simulated time in nanoseconds.
pub type Time = u64;

pub const NS: Time = 1;
pub const US: Time = 1_000;
pub const MS: Time = 1_000_000;
pub const SEC: Time = 1_000_000_000;

/// Handle of a scheduled event, for cancellation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventId(u64);

/// A monotone priority queue of events ordered by (time, sequence): a radix heap over the
/// event's time (Ahuja, Mehlhorn, Orlin & Tarjan, "Faster algorithms for the shortest path
/// problem", 1990) whose front bucket, the events at the settled time, is FIFO. Simulation
/// time never goes backwards, which is all a radix heap needs; each element moves down at most
/// 64 buckets over its life, so push and pop are amortised O(1)-ish with sequential memory
/// access, several times faster than a binary heap once a million events are pending (`orrery
/// bench`). Events at one instant leave in the order they were scheduled: a later one has a
/// larger sequence number, so it joins the front bucket's back, and those that reach the
/// front bucket together are sorted by sequence (keying the heap on time and sequence, as it
/// once was, made every same-instant event walk down the sequence's 64 bits). Cancellation
/// marks the event's sequence number in a bitset; cancelled events are skipped when they
/// reach the front. Allocation-free once the buckets have grown.
///
/// Beside the heap, a few *streams* ([`EventQueue::at_stream`]) each hold one pending event
/// outside it: a source that schedules its next event as it handles one (a service's
/// arrivals, half of a serving run's events) skips the heap's push, settle and pop, and its
/// events still leave in (time, sequence) order with the rest. Each bucket keeps its least
/// time, so a stream's event is known to come first without settling the heap, and the heap
/// is settled only when its least event may come before the streams'. An event scheduled
/// below the time the heap settled on (after a look that took nothing) joins the front in
/// order.
pub struct EventQueue<E> {
    /// The events at time `last`, in sequence order, after any scheduled before `last` once
    /// the heap had settled on it (in (time, sequence) order, ahead of them).
    front: VecDeque<(Key, E)>,
    /// Bucket b (1 to 64) holds events whose time's highest bit differing from `last` is bit
    /// b − 1; index 0 is unused.
    buckets: Vec<Vec<(Key, E)>>,
    /// Bit b − 1 set when bucket b is not empty: the first non-empty bucket is one
    /// `trailing_zeros`, not a scan of the buckets.
    full: u64,
    last: Time,
    len: usize,
    next_seq: u64,
    cancelled: Vec<u64>,
    now: Time,
    processed: u64,
    /// Each bucket's least time (`Time::MAX` when empty): settling takes it, not a scan.
    bucket_min: [Time; 65],
    /// The streams' pending events, by stream (at most [`STREAMS`]).
    streams: Vec<Option<(Key, E)>>,
    /// The stream whose event has the least key, if any stream has one.
    stream_min: Option<usize>,
}

/// How many streams [`EventQueue::at_stream`] keeps outside the heap; events of other
/// streams go into the heap (in the same order).
pub const STREAMS: usize = 8;

/// Where the next event is: the heap's settled front, or a stream.
#[derive(Clone, Copy)]
enum Next {
    Front,
    Stream(usize),
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

/// A key `(time, seq)` kept as four 32-bit words, least significant first, at 4-byte
/// alignment: an entry is 16 bytes plus the event's size instead of being rounded up to
/// 16-byte alignment (a 20-byte event would take 36 bytes, not 48; the simulation's 16-byte
/// events take 32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key([u32; 4]);

impl Key {
    #[inline]
    fn new(time: Time, seq: u64) -> Key {
        Key([
            seq as u32,
            (seq >> 32) as u32,
            time as u32,
            (time >> 32) as u32,
        ])
    }

    #[inline]
    fn time(self) -> Time {
        u64::from(self.0[2]) | (u64::from(self.0[3]) << 32)
    }

    #[inline]
    fn seq(self) -> u64 {
        u64::from(self.0[0]) | (u64::from(self.0[1]) << 32)
    }

    /// (time, seq) as one number, for ordering.
    #[inline]
    fn ord(self) -> u128 {
        (u128::from(self.time()) << 64) | u128::from(self.seq())
    }
}

/// The bucket (1 to 64) of a time later than `last`.
#[inline]
fn bucket_of(time: Time, last: Time) -> usize {
    64 - (time ^ last).leading_zeros() as usize
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            front: VecDeque::new(),
            buckets: (0..65).map(|_| Vec::new()).collect(),
            full: 0,
            last: 0,
            len: 0,
            next_seq: 0,
            cancelled: Vec::new(),
            now: 0,
            processed: 0,
            bucket_min: [Time::MAX; 65],
            streams: Vec::new(),
            stream_min: None,
        }
    }

    pub fn with_capacity(n: usize) -> Self {
        let mut q = Self::new();
        q.buckets[64].reserve(n);
        q
    }

    /// The current simulated time (the time of the last event popped).
    pub fn now(&self) -> Time {
        self.now
    }

    /// Events popped so far (cancelled ones excluded).
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Events scheduled and not yet popped (cancelled ones included until they surface).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Schedule `event` at absolute time `at` (clamped to now: the past cannot be scheduled).
    pub fn at(&mut self, at: Time, event: E) -> EventId {
        let seq = self.next_seq;
        self.next_seq += 1;
        let time = at.max(self.now);
        let key = Key::new(time, seq);
        if time == self.last {
            // The largest sequence yet: it goes after every event at this instant.
            self.front.push_back((key, event));
        } else if time > self.last {
            self.push(key, event);
        } else {
            // Before the time the heap settled on (scheduled after a look at the queue that
            // took nothing: `peek_time`, or `pop_until` short of its limit). A radix heap
            // takes no key below the one it settled, so the event joins the front, which
            // stays in (time, sequence) order: after every event at or before its time.
            let i = self.front.partition_point(|e| e.0.time() <= time);
            self.front.insert(i, (key, event));
        }
        self.len += 1;
        EventId(seq)
    }

    /// Schedule `event` after `delay`.
    pub fn after(&mut self, delay: Time, event: E) -> EventId {
        self.at(self.now.saturating_add(delay), event)
    }

    /// Schedule `event` at `at` as stream `stream`'s pending event, kept outside the heap
    /// (see the type's docs). It runs exactly where [`EventQueue::at`] would have put it: the
    /// same sequence number, the same order. A stream past [`STREAMS`], or one whose pending
    /// event is still live, schedules into the heap instead.
    pub fn at_stream(&mut self, stream: usize, at: Time, event: E) -> EventId {
        if stream >= STREAMS {
            return self.at(at, event);
        }
        if self.streams.len() <= stream {
            self.streams.resize_with(stream + 1, || None);
        }
        if let Some((key, _)) = &self.streams[stream] {
            if !self.is_cancelled(key.seq()) {
                return self.at(at, event);
            }
            // A cancelled event gives its place up.
            self.streams[stream] = None;
            self.len -= 1;
            self.stream_min = self.least_stream();
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let key = Key::new(at.max(self.now), seq);
        self.streams[stream] = Some((key, event));
        self.len += 1;
        if self.stream_key().is_none_or(|m| key.ord() < m.ord()) {
            self.stream_min = Some(stream);
        }
        EventId(seq)
    }

    /// The least key among the streams' events.
    #[inline]
    fn stream_key(&self) -> Option<Key> {
        self.stream_min
            .and_then(|k| self.streams[k].as_ref().map(|e| e.0))
    }

    fn least_stream(&self) -> Option<usize> {
        let mut best: Option<(usize, u128)> = None;
        for (k, e) in self.streams.iter().enumerate() {
            if let Some((key, _)) = e
                && best.is_none_or(|b| key.ord() < b.1)
            {
                best = Some((k, key.ord()));
            }
        }
        best.map(|b| b.0)
    }

    /// Where the least event is, settling the heap only if its least event might come
    /// before the streams' (a bucket's least time below or at the stream's).
    #[inline]
    fn next(&mut self) -> Option<Next> {
        let stream = self.stream_key();
        if self.front.is_empty() {
            if self.full == 0 {
                return self.stream_min.map(Next::Stream);
            }
            if let Some(sk) = stream {
                let i = self.full.trailing_zeros() as usize + 1;
                if sk.time() < self.bucket_min[i] {
                    return self.stream_min.map(Next::Stream);
                }
            }
            self.settle();
        }
        let front = self.front.front().expect("settled").0;
        match (stream, self.stream_min) {
            (Some(sk), Some(k)) if sk.ord() < front.ord() => Some(Next::Stream(k)),
            _ => Some(Next::Front),
        }
    }

    /// Remove the next event (from `next`).
    #[inline]
    fn take(&mut self, from: Next) -> (Key, E) {
        match from {
            Next::Front => self.take_front(),
            Next::Stream(k) => {
                self.len -= 1;
                let e = self.streams[k].take().expect("a stream's pending event");
                self.stream_min = self.least_stream();
                e
            }
        }
    }

    /// The key of the next event (from `next`).
    #[inline]
    fn key_of(&self, from: Next) -> Key {
        match from {
            Next::Front => self.front.front().expect("settled").0,
            Next::Stream(k) => self.streams[k].as_ref().expect("pending").0,
        }
    }

    /// Cancel a scheduled event; cancelling one that already ran or was cancelled is a no-op.
    pub fn cancel(&mut self, id: EventId) {
        let (w, b) = ((id.0 / 64) as usize, id.0 % 64);
        if self.cancelled.len() <= w {
            self.cancelled.resize(w + 1, 0);
        }
        self.cancelled[w] |= 1 << b;
    }

    fn is_cancelled(&self, seq: u64) -> bool {
        let (w, b) = ((seq / 64) as usize, seq % 64);
        self.cancelled.get(w).is_some_and(|x| x & (1 << b) != 0)
    }

    /// Into the bucket of a time later than `last`.
    #[inline]
    fn push(&mut self, key: Key, event: E) {
        let b = bucket_of(key.time(), self.last);
        self.buckets[b].push((key, event));
        self.full |= 1 << (b - 1);
        self.bucket_min[b] = self.bucket_min[b].min(key.time());
    }

    /// Make `front` hold the events of the smallest time, if any event is left.
    fn settle(&mut self) {
        if !self.front.is_empty() || self.full == 0 {
            return;
        }
        let i = self.full.trailing_zeros() as usize + 1;
        let mut b = std::mem::take(&mut self.buckets[i]);
        self.full &= !(1 << (i - 1));
        self.last = std::mem::replace(&mut self.bucket_min[i], Time::MAX);
        for (key, e) in b.drain(..) {
            if key.time() == self.last {
                self.front.push_back((key, e));
            } else {
                self.push(key, e);
            }
        }
        self.buckets[i] = b; // keep the allocation
        if self.front.len() > 1 {
            self.front
                .make_contiguous()
                .sort_unstable_by_key(|e| e.0.seq());
        }
    }

    /// Remove the front event (settled).
    #[inline]
    fn take_front(&mut self) -> (Key, E) {
        self.len -= 1;
        self.front.pop_front().expect("settled")
    }

    /// The next event and its time, advancing the clock.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.pop_until(Time::MAX)
    }

    /// The next event and its time if that time is at most `limit` (the clock advancing),
    /// else `None` with the event left queued: [`EventQueue::peek_time`] and
    /// [`EventQueue::pop`] in one look at the queue.
    #[inline]
    pub fn pop_until(&mut self, limit: Time) -> Option<(Time, E)> {
        while let Some(from) = self.next() {
            let key = self.key_of(from);
            if key.time() > limit && !self.is_cancelled(key.seq()) {
                return None;
            }
            let (key, e) = self.take(from);
            if self.is_cancelled(key.seq()) {
                continue;
            }
            self.now = key.time();
            self.processed += 1;
            return Some((self.now, e));
        }
        None
    }

    /// Time of the next live event without removing it.
    pub fn peek_time(&mut self) -> Option<Time> {
        while let Some(from) = self.next() {
            let key = self.key_of(from);
            if self.is_cancelled(key.seq()) {
                self.take(from);
                continue;
            }
            return Some(key.time());
        }
        None
    }
}

/// Random streams: component `stream` of a run seeded with `seed` gets its own ChaCha8
/// stream, so adding a component never shifts another component's randomness.
pub fn rng_stream(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}

/// Stable stream ids from names (FNV-1a), so a component keeps its stream when others are
/// added or reordered.
pub fn stream_id(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn ties_are_fifo_and_time_is_monotone() {
        let mut q = EventQueue::new();
        q.at(5, "b1");
        q.at(1, "a");
        q.at(5, "b2");
        q.at(5, "b3");
        let order: Vec<&str> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["a", "b1", "b2", "b3"]);
        assert_eq!(q.now(), 5);
    }

    #[test]
    fn cancelled_events_never_run() {
        let mut q = EventQueue::new();
        let a = q.at(1, 1);
        q.at(2, 2);
        let c = q.at(3, 3);
        q.cancel(a);
        q.cancel(c);
        q.cancel(c);
        assert_eq!(q.pop(), Some((2, 2)));
        assert_eq!(q.pop(), None);
        assert_eq!(q.processed(), 1);
    }

    #[test]
    fn matches_a_sorted_order_under_random_interleaving() {
        // Reference: every (time, seq) pushed, popped in sorted order, with pushes between pops.
        let mut rng = rng_stream(3, 0);
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeSet::new();
        let mut seq = 0u64;
        for _ in 0..20_000 {
            if rng.random_range(0..3) > 0 || reference.is_empty() {
                let t = q.now() + rng.random_range(0..1_000u64) * rng.random_range(0..3u64);
                q.at(t, seq);
                reference.insert((t, seq));
                seq += 1;
            } else {
                let (t, e) = q.pop().unwrap();
                let r = reference.pop_first().unwrap();
                assert_eq!((t, e), r);
            }
        }
        while let Some(x) = q.pop() {
            assert_eq!(Some(x), reference.pop_first());
        }
        assert!(reference.is_empty());
    }

    /// Events scheduled on streams leave in exactly the order, and with the ids, that
    /// scheduling them with `at` gives, and both in (time, sequence) order (a sorted map's):
    /// random times (ties included), streams past `STREAMS`, a stream scheduled again while
    /// its event is pending, cancellations, and events scheduled after a look at the queue
    /// that took nothing (`peek_time`, `pop_until` short of its limit), before the time it
    /// settled on.
    #[test]
    fn streams_keep_the_order_of_the_heap() {
        for seed in 0..20 {
            let mut rng = rng_stream(seed, 5);
            let (mut a, mut b) = (EventQueue::new(), EventQueue::new());
            let mut reference = std::collections::BTreeMap::new();
            let mut ids = Vec::new();
            let mut popped = 0;
            for step in 0..20_000u32 {
                let r = rng.random_range(0..10);
                let dt = match rng.random_range(0..3) {
                    0 => 0,
                    1 => rng.random_range(0..4u64),
                    _ => {
                        let bits = rng.random_range(1..40);
                        rng.random_range(0..1u64 << bits)
                    }
                };
                let t = a.now() + dt;
                if r < 6 {
                    let x = if r < 3 {
                        a.at(t, step)
                    } else {
                        a.at_stream(rng.random_range(0..STREAMS + 2), t, step)
                    };
                    assert_eq!(x, b.at(t, step));
                    reference.insert((t, x.0), step);
                    ids.push(x);
                } else if r == 6 && !ids.is_empty() {
                    let id = ids[rng.random_range(0..ids.len())];
                    a.cancel(id);
                    b.cancel(id);
                    reference.retain(|k, _| k.1 != id.0);
                } else {
                    let first = reference.first_key_value().map(|(k, v)| (k.0, *v));
                    if rng.random_range(0..2) == 0 {
                        assert_eq!(a.peek_time(), first.map(|f| f.0));
                        assert_eq!(b.peek_time(), first.map(|f| f.0));
                    }
                    let (x, y, want) = if rng.random_range(0..2) == 0 {
                        let limit = a.now() + rng.random_range(0..1u64 << 20);
                        let want = first.filter(|f| f.0 <= limit);
                        (a.pop_until(limit), b.pop_until(limit), want)
                    } else {
                        (a.pop(), b.pop(), first)
                    };
                    assert_eq!(x, want, "seed {seed} step {step}");
                    assert_eq!(y, want, "seed {seed} step {step}");
                    if want.is_some() {
                        reference.pop_first();
                        popped += 1;
                    }
                    assert_eq!(a.now(), b.now());
                }
            }
            while let Some(x) = b.pop() {
                assert_eq!(a.pop(), Some(x));
                assert_eq!(reference.pop_first().map(|(k, v)| (k.0, v)), Some(x));
            }
            assert_eq!(a.pop(), None);
            assert!(a.is_empty() && reference.is_empty() && popped > 1000);
        }
    }

    #[test]
    fn the_past_cannot_be_scheduled() {
        let mut q = EventQueue::new();
        q.at(10, ());
        q.pop();
        q.at(3, ());
        assert_eq!(q.pop().unwrap().0, 10);
    }

    #[test]
    fn streams_are_independent_and_reproducible() {
        let a: Vec<u64> = (0..4).map(|_| rng_stream(7, 1).random()).collect();
        let mut r1 = rng_stream(7, 1);
        let mut r2 = rng_stream(7, 2);
        let x: u64 = r1.random();
        let y: u64 = r2.random();
        assert_ne!(x, y);
        assert_eq!(a[0], x);
        assert_ne!(rng_stream(8, 1).random::<u64>(), x);
        assert_eq!(stream_id("tasks"), stream_id("tasks"));
        assert_ne!(stream_id("tasks"), stream_id("actors"));
    }
}
