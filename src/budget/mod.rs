//! Bounds on a run's work and memory (issue 16), in two layers:
//!
//! - **Before the run** ([`estimate`]): lower bounds on the events and the memory a scenario
//!   needs, from what the scenario itself fixes (arrivals over the window, tasks, calls, steps,
//!   failures, nodes). A command refuses a scenario whose lower bound already exceeds its
//!   [`Limits`], pointing at the statement that contributes most. Being lower bounds, they
//!   never refuse a run that would have fitted.
//! - **During the run** ([`guard`]): what no estimate can know before the run (how long work
//!   without a horizon lasts while random failures recur, how many rounds a job's collectives
//!   take once placed) is bounded by the engine itself: every 2¹⁶ events it compares the
//!   events handled with `max_events` and the process's memory ([`memory_in_use`]) with
//!   `max_memory`, and the first run past either [`trip`]s: every run of the command stops, and
//!   the command writes nothing and exits 2. Building the run's state before its first event
//!   and writing its outputs are checked too ([`memory_guard`]).
//!
//! The limits are the process's one setting ([`set`]; the binary sets them from `--max-events`
//! and `--max-memory`); a library user who sets none gets no runtime bound.

pub mod alloc;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Default `--max-events`: half a billion, 3 to 20 minutes of the engine on a 2-core machine
/// (its 0.4–3.5 M events/s, `orrery bench`).
pub const DEFAULT_MAX_EVENTS: u64 = 500_000_000;

/// Default `--max-memory`: 8 GiB, a third of a 24 GB machine, so a sweep's parallel runs share
/// it and the rest of the machine keeps room.
pub const DEFAULT_MAX_MEMORY: u64 = 8 << 30;

/// Most events one simulation may handle, and most resident memory (bytes) the process may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_events: u64,
    pub max_memory: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_events: DEFAULT_MAX_EVENTS,
            max_memory: DEFAULT_MAX_MEMORY,
        }
    }
}

/// 0: unlimited.
static MAX_EVENTS: AtomicU64 = AtomicU64::new(0);
static MAX_MEMORY: AtomicU64 = AtomicU64::new(0);
static TRIPPED: AtomicBool = AtomicBool::new(false);
static WHY: Mutex<Option<String>> = Mutex::new(None);

/// Sets the runtime bounds of every later run (`None`: unlimited) and clears a trip.
pub fn set(limits: Option<Limits>) {
    let l = limits.unwrap_or(Limits {
        max_events: 0,
        max_memory: 0,
    });
    MAX_EVENTS.store(l.max_events, Ordering::Relaxed);
    MAX_MEMORY.store(l.max_memory, Ordering::Relaxed);
    TRIPPED.store(false, Ordering::Relaxed);
    *WHY.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Records the first reason a run stopped; every running simulation stops at its next check.
pub fn trip(why: String) {
    let mut w = WHY.lock().unwrap_or_else(|e| e.into_inner());
    if w.is_none() {
        *w = Some(why);
    }
    TRIPPED.store(true, Ordering::Relaxed);
}

/// Why a run of this process stopped early, if one did: its results are not to be used.
pub fn tripped() -> Option<String> {
    if !TRIPPED.load(Ordering::Relaxed) {
        return None;
    }
    WHY.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// A memory figure of this process in bytes from `/proc/self/status` (Linux; `None`
/// elsewhere): `VmRSS:` now, `VmHWM:` at its peak.
pub fn proc_status_bytes(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The machine's load averages over 1, 5 and 15 minutes, as `/proc/loadavg` gives them
/// ("unknown" elsewhere): what `bench` notes beside its timings.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| {
            let f: Vec<&str> = s.split_whitespace().take(3).collect();
            (f.len() == 3).then(|| f.join(" "))
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The process's resident memory in bytes, now.
pub fn resident_bytes() -> Option<u64> {
    proc_status_bytes("VmRSS:")
}

/// The memory `--max-memory` bounds, in bytes: the heap the process holds when the counting
/// allocator ([`alloc::Counting`]) is installed (the binary installs it), else its resident
/// memory (`None` where neither is known).
pub fn memory_in_use() -> Option<u64> {
    if alloc::installed() {
        Some(alloc::live() as u64)
    } else {
        resident_bytes()
    }
}

/// Compares the process's memory with `--max-memory` outside the event loop (after a run's
/// state is built, between output files): `true`, having [`trip`]ped, when it is over, or when
/// a run tripped already. `doing` names the step for the message ("writing tasks.csv").
pub fn memory_guard(doing: &str) -> bool {
    over_memory(|| format!("while {doing}"), "make the scenario smaller")
}

/// Trips, `when()` and `else_` completing the message, if the process is past `--max-memory`
/// or a run tripped already. The message is formatted only then: the engine calls this every
/// 2¹⁶ events.
fn over_memory(when: impl FnOnce() -> String, else_: &str) -> bool {
    if TRIPPED.load(Ordering::Relaxed) {
        return true;
    }
    let max_memory = MAX_MEMORY.load(Ordering::Relaxed);
    if max_memory > 0
        && let Some(used) = memory_in_use()
        && used > max_memory
    {
        trip(format!(
            "the process passed --max-memory {} ({} in use) {}; raise --max-memory, run \
             fewer runs at once (`--threads`), or {else_}",
            crate::units::fmt_bytes(max_memory as f64),
            crate::units::fmt_bytes(used as f64),
            when()
        ));
        return true;
    }
    false
}

/// The engine's check, every 2¹⁶ events: `true` when the run must stop (this run passed a
/// bound, or another run of the process did). `now_s` is the simulated clock, for the message.
pub fn guard(handled: u64, now_s: f64) -> bool {
    if TRIPPED.load(Ordering::Relaxed) {
        return true;
    }
    let max_events = MAX_EVENTS.load(Ordering::Relaxed);
    if max_events > 0 && handled > max_events {
        trip(format!(
            "a run passed --max-events {max_events} at simulated time {now_s:.3} s; raise \
             --max-events, or shorten the window (`--horizon`, or the work)"
        ));
        return true;
    }
    over_memory(
        || format!("at simulated time {now_s:.3} s of a run, after {handled} events"),
        "shorten the window",
    )
}
