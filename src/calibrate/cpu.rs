//! The CPU backend (always available): memcpy over sizes, cross-thread hand-off latency, a
//! memory-bound triad and a compute-bound FMA-free multiply–add kernel (both rayon, over all
//! threads), NUMA nodes from /sys. Methodology as nvbandwidth / nccl-tests: one warm-up, then
//! timed repetitions, each long enough (many copies per repetition for small sizes) that the
//! clock's resolution does not matter; the fit takes medians.

use super::fit::Point;
use super::{ComputeMeasure, LaunchMeasure, Measurement, MemoryMeasure, Options, PathMeasure};
use rayon::prelude::*;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Sizes measured: powers of two from 4 KiB (fitted) and the sizes half-way between them on a
/// log scale, 1.5 × 2^k (held back, to measure the prediction error).
pub fn sizes(max_bytes: u64) -> Vec<(u64, bool)> {
    let mut v = Vec::new();
    let mut s = 4096u64;
    while s <= max_bytes {
        v.push((s, false));
        if s * 2 <= max_bytes {
            v.push((s / 2 * 3, true));
        }
        s *= 2;
    }
    v
}

/// How long the sweep may take, per mode.
struct Plan {
    max_bytes: u64,
    min_rep_s: f64,
    size_budget_s: f64,
    min_reps: usize,
    max_reps: usize,
}

fn plan(quick: bool) -> Plan {
    if quick {
        Plan {
            max_bytes: 16 << 20,
            min_rep_s: 2e-4,
            size_budget_s: 0.02,
            min_reps: 7,
            max_reps: 25,
        }
    } else {
        Plan {
            max_bytes: 1 << 30,
            min_rep_s: 2e-3,
            size_budget_s: 1.0,
            min_reps: 11,
            max_reps: 101,
        }
    }
}

/// The largest cache of CPU 0 (bytes), from /sys (None when not visible).
pub fn last_level_cache() -> Option<u64> {
    let mut best = None;
    for i in 0..8 {
        let Ok(s) =
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size"))
        else {
            continue;
        };
        let s = s.trim();
        let (num, mult) = match s.strip_suffix('K') {
            Some(n) => (n, 1024),
            None => match s.strip_suffix('M') {
                Some(n) => (n, 1 << 20),
                None => (s, 1),
            },
        };
        if let Ok(n) = num.parse::<u64>() {
            best = best.max(Some(n * mult));
        }
    }
    best
}

/// Most of the four-times-the-cache rule a pool follows: 4 × the 105 MiB L3 of a large EPYC
/// socket fits, while a VM that reports its host's whole shared cache as its own (480 MiB seen
/// on a 2-vCPU VM, which made 3.8 GB of pools) does not make the pools grow with it.
const MAX_CACHE_POOL: u64 = 512 << 20;

/// Size of each of the two memcpy buffer pools: at least the largest copy, four times the
/// last-level cache (at most [`MAX_CACHE_POOL`]) and 64 MiB, so that by the time a copy comes
/// back to the same offset its data has left the caches.
pub fn pool_bytes(max_copy: u64) -> usize {
    let llc = last_level_cache().unwrap_or(32 << 20);
    max_copy.max((4 * llc).min(MAX_CACHE_POOL)).max(64 << 20) as usize
}

/// Buffers for memcpy, filled (so every page is mapped and none is the shared zero page).
/// Copies walk through the pools (each starting where the last ended, page-aligned, wrapping
/// at the end), so they are memory to memory rather than cache to cache: the regime a
/// simulated object copy sees, and the same for a sweep and for any sequence of copies.
pub struct Buffers {
    src: Vec<u8>,
    dst: Vec<u8>,
    cursor: usize,
}

impl Buffers {
    pub fn new(pool_bytes: usize) -> Buffers {
        let mut b = Buffers {
            src: vec![0x5a; pool_bytes],
            dst: vec![0xa5; pool_bytes],
            cursor: 0,
        };
        // Walk the whole pool once: the first pass over fresh memory pays for page-table and
        // huge-page work (seen as 30 µs 4 KiB copies on a VM), which no measurement should.
        for _ in 0..2 {
            for _ in 0..pool_bytes.div_ceil(1 << 20) {
                b.copy((1 << 20).min(pool_bytes));
            }
        }
        b.cursor = 0;
        b
    }

    fn copy(&mut self, bytes: usize) {
        if self.cursor + bytes > self.src.len() {
            self.cursor = 0;
        }
        let r = self.cursor..self.cursor + bytes;
        self.dst[r.clone()].copy_from_slice(black_box(&self.src[r]));
        black_box(&mut self.dst);
        self.cursor += bytes.div_ceil(4096) * 4096;
    }

    /// Seconds per copy of `bytes`, `reps` repetitions of `inner` copies each, after one
    /// warm-up repetition.
    pub fn time_copies(&mut self, bytes: usize, inner: usize, reps: usize) -> Vec<f64> {
        let mut out = Vec::with_capacity(reps);
        for r in 0..=reps {
            let t0 = Instant::now();
            for _ in 0..inner {
                self.copy(bytes);
            }
            if r > 0 {
                out.push(t0.elapsed().as_secs_f64() / inner as f64);
            }
        }
        out
    }

    /// Seconds for one chain of copies (each size once, in order), `reps` repetitions after
    /// one warm-up: the composite workload the prediction check measures.
    pub fn time_chain(&mut self, chain: &[usize], reps: usize) -> Vec<f64> {
        let mut out = Vec::with_capacity(reps);
        for r in 0..=reps {
            let t0 = Instant::now();
            for &b in chain {
                self.copy(b);
            }
            if r > 0 {
                out.push(t0.elapsed().as_secs_f64());
            }
        }
        out
    }
}

fn memcpy(o: &Options) -> PathMeasure {
    let p = plan(o.quick);
    let sizes = sizes(p.max_bytes);
    let mut buf = Buffers::new(pool_bytes(p.max_bytes));
    let mut points = Vec::new();
    for (bytes, held_out) in sizes {
        let b = bytes as usize;
        // Probe: how long one copy takes (warm), to size the repetitions.
        let probe = buf.time_copies(b, 1, 3);
        let one = super::stats::median(&probe).max(1e-9);
        let inner = ((p.min_rep_s / one).ceil() as usize).max(1);
        let rep_s = one * inner as f64;
        let reps = ((p.size_budget_s / rep_s) as usize).clamp(p.min_reps, p.max_reps);
        points.push(Point {
            bytes,
            reps: buf.time_copies(b, inner, reps),
            held_out,
        });
        o.tick(&format!("memcpy {}", super::human_bytes(bytes)));
    }
    PathMeasure {
        path: "memcpy".into(),
        source: format!(
            "copy_from_slice, one thread, memory to memory (copies walk two {} MiB pools, 4 x \
             the last-level cache); per size a warm-up then timed repetitions of back-to-back \
             copies, medians; 1.5x2^k sizes held out",
            pool_bytes(p.max_bytes) >> 20
        ),
        points,
    }
}

/// One-way hand-off latency between two threads: an atomic counter passed back and forth
/// (spinning, yielding after a while so a busy machine still progresses).
fn handoff(o: &Options) -> LaunchMeasure {
    let (reps, trips) = if o.quick { (7, 500u64) } else { (15, 5000u64) };
    let flag = Arc::new(AtomicU64::new(0));
    let total = (reps as u64 + 1) * trips;
    let peer = {
        let flag = Arc::clone(&flag);
        std::thread::spawn(move || {
            for i in 0..total {
                wait_for(&flag, 2 * i + 1);
                flag.store(2 * i + 2, Ordering::Release);
            }
        })
    };
    let mut out = Vec::new();
    let mut n = 0u64;
    for r in 0..=reps {
        let t0 = Instant::now();
        for _ in 0..trips {
            flag.store(2 * n + 1, Ordering::Release);
            wait_for(&flag, 2 * n + 2);
            n += 1;
        }
        if r > 0 {
            out.push(t0.elapsed().as_secs_f64() / (2 * trips) as f64);
        }
    }
    let _ = peer.join();
    o.tick("hand-off latency");
    LaunchMeasure {
        reps: out,
        source: format!(
            "one-way cross-thread hand-off: atomic ping-pong, {trips} round trips per repetition, \
             median of {reps}"
        ),
    }
}

fn wait_for(flag: &AtomicU64, v: u64) {
    let mut spins = 0u32;
    while flag.load(Ordering::Acquire) != v {
        spins += 1;
        if spins < 20_000 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// STREAM triad a = b + s·c over f64 arrays on every thread; bytes/s per repetition (24 bytes
/// per element, STREAM's count).
fn triad(o: &Options) -> MemoryMeasure {
    let (n, reps) = if o.quick {
        (4 << 20, 7)
    } else {
        (32 << 20, 15)
    };
    let mut a = vec![0.0f64; n];
    let b = vec![1.0f64; n];
    let c = vec![2.0f64; n];
    let s = black_box(3.0);
    let mut out = Vec::new();
    for r in 0..=reps {
        let t0 = Instant::now();
        a.par_chunks_mut(1 << 16)
            .zip(b.par_chunks(1 << 16))
            .zip(c.par_chunks(1 << 16))
            .for_each(|((a, b), c)| {
                for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                    *a = b + s * c;
                }
            });
        black_box(&mut a);
        if r > 0 {
            out.push(24.0 * n as f64 / t0.elapsed().as_secs_f64());
        }
    }
    o.tick("memory-bound triad");
    let mib = (8 * n) >> 20;
    MemoryMeasure {
        reps: out,
        peak: None,
        source: format!(
            "STREAM triad a = b + s·c, 3 × {mib} MiB f64 arrays, rayon on {} threads, median of {reps}",
            rayon::current_num_threads()
        ),
        by_size: Vec::new(),
    }
}

macro_rules! fma_kernel {
    ($name:ident, $t:ty, $lanes:expr) => {
        /// Multiply–add chains held in registers: FLOP per call = 2 × lanes × iters.
        fn $name(iters: u64) -> $t {
            let a: $t = black_box(0.999_9);
            let b: $t = black_box(0.000_1);
            let mut acc: [$t; $lanes] = std::array::from_fn(|i| i as $t * 0.01);
            for _ in 0..iters {
                for x in acc.iter_mut() {
                    *x = *x * a + b;
                }
            }
            acc.iter().sum()
        }
    };
}
fma_kernel!(kernel_f32, f32, 32);
fma_kernel!(kernel_f64, f64, 16);

fn compute(o: &Options, dtype: &str) -> ComputeMeasure {
    let (lanes, run): (u64, fn(u64) -> f64) = match dtype {
        "fp32" => (32, |i| f64::from(kernel_f32(i))),
        _ => (16, kernel_f64),
    };
    let tasks = rayon::current_num_threads() * 4;
    let (target, reps) = if o.quick { (0.01, 7) } else { (0.1, 15) };
    let timed = |iters: u64| {
        let t0 = Instant::now();
        let s: f64 = (0..tasks).into_par_iter().map(|_| run(iters)).sum();
        black_box(s);
        t0.elapsed().as_secs_f64()
    };
    // Size the work so one repetition takes about `target` seconds.
    let probe = 10_000u64;
    let t = timed(probe).max(1e-6);
    let iters = ((probe as f64 * target / t) as u64).max(probe);
    let flop = 2.0 * lanes as f64 * iters as f64 * tasks as f64;
    let mut out = Vec::new();
    for r in 0..=reps {
        let t = timed(iters);
        if r > 0 {
            out.push(flop / t);
        }
    }
    o.tick(&format!("compute {dtype}"));
    ComputeMeasure {
        dtype: dtype.into(),
        reps: out,
        peak: None,
        source: format!(
            "{lanes} independent multiply-add chains per task in registers, {tasks} rayon tasks \
             on {} threads, median of {reps}",
            rayon::current_num_threads()
        ),
        by_size: Vec::new(),
    }
}

/// Steps the progress bar counts.
pub fn steps(quick: bool) -> u64 {
    sizes(plan(quick).max_bytes).len() as u64 + 4
}

/// Every CPU measurement.
pub fn measure(o: &Options, host: &super::detect::Host) -> Measurement {
    let transfers = vec![memcpy(o)];
    let launch = handoff(o);
    let memory = triad(o);
    let compute = vec![compute(o, "fp32"), compute(o, "fp64")];
    let mut notes = vec![format!(
        "CPU backend: {} threads, {} NUMA node(s) visible",
        host.threads,
        host.numa_nodes
            .map_or_else(|| "no".to_string(), |n| n.to_string())
    )];
    notes.push("peaks are the best repetition (no datasheet peak for this CPU); launch is the cross-thread hand-off".into());
    Measurement {
        accelerator: "cpu".into(),
        device: host
            .cpu_model
            .clone()
            .unwrap_or_else(|| "unknown CPU".into()),
        driver: host.kernel.clone(),
        transfers,
        compute,
        memory,
        launch,
        p2p: Vec::new(),
        notes,
    }
}
