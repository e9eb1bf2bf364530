//! Independent runs (seeds, sweep cells, scenarios) in parallel on a rayon pool of a chosen
//! size, ticking a progress bar. Results come back in input order, so the thread count never
//! changes what callers see.

use indicatif::{ParallelProgressIterator, ProgressBar};
use rayon::prelude::*;

/// `f` over every item on `threads` threads (0: one per CPU), in item order; when no pool can
/// be built, the items run here one after another (the same results).
pub fn map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    bar: &ProgressBar,
    f: impl Fn(&T) -> R + Sync + Send,
) -> Vec<R> {
    let out = match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
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
