//! Independent runs (seeds, sweep cells, scenarios) in parallel on a rayon pool of a chosen
//! size, ticking a progress bar. Results come back in input order, so the thread count never
//! changes what callers see.
//!
//! Every pool is sized here, never by rayon's default: rayon reads `RAYON_NUM_THREADS` for a
//! pool built with no count, and `RAYON_NUM_THREADS=100000` started 1,500 threads past the
//! `--threads` cap (issue 42). [`map`] always names a count within [`max_threads`], and
//! [`init_global`] sizes the global pool (used by the commands that run `par_iter` directly)
//! the same way before anything uses it.

use indicatif::{ParallelProgressIterator, ProgressBar};
use rayon::prelude::*;

/// Most worker threads per CPU a pool may have: more only adds scheduling overhead (runs are
/// CPU-bound), and a huge count would spend minutes starting threads.
pub const THREADS_PER_CPU: usize = 4;

/// CPUs here (at least 1).
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The most threads any pool of this process may have: [`THREADS_PER_CPU`] × [`cpus`].
pub fn max_threads() -> usize {
    THREADS_PER_CPU * cpus()
}

/// The thread count a pool asked for `threads` gets: one per CPU for 0, never more than
/// [`max_threads`], whatever the environment says.
pub fn pool_size(threads: usize) -> usize {
    if threads == 0 {
        cpus()
    } else {
        threads.min(max_threads())
    }
}

/// Sizes rayon's global pool at one thread per CPU, unless it was already built (then it was
/// built here, or by a caller that chose its own size). Call before the first `par_iter`
/// outside [`map`].
pub fn init_global() {
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(pool_size(0))
        .build_global();
}

/// `f` over every item on `threads` threads (0: one per CPU; at most [`max_threads`]), in
/// item order; when no pool can be built, the items run here one after another (the same
/// results).
pub fn map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    bar: &ProgressBar,
    f: impl Fn(&T) -> R + Sync + Send,
) -> Vec<R> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(pool_size(threads))
        .build();
    let out = match pool {
        Ok(pool) => pool.install(|| {
            items
                .par_iter()
                .progress_with(bar.clone())
                .map(&f)
                .collect()
        }),
        Err(_) => items
            .iter()
            .map(|x| {
                let r = f(x);
                bar.inc(1);
                r
            })
            .collect(),
    };
    bar.finish_and_clear();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_keep_to_the_cap() {
        assert_eq!(pool_size(0), cpus());
        assert_eq!(pool_size(1), 1);
        assert_eq!(pool_size(usize::MAX), max_threads());
        let bar = ProgressBar::hidden();
        let seen = map(&[(); 64], usize::MAX, &bar, |_| {
            rayon::current_num_threads()
        });
        assert!(seen.iter().all(|&n| n <= max_threads()), "{seen:?}");
    }
}
