//! The replay's simulated time: the one place the simulator touches the compressor's clock.
//!
//! The facade takes a plain `fn() -> u64` clock, so each worker thread keeps the time of the
//! replay it is running in a thread-local (each runs one replay at a time on its own
//! current-thread runtime). When the compressor takes a clock value, [`attach`] becomes the
//! only line to change.

use std::cell::Cell;

use hermes_compaction::Compressor;

thread_local! {
    /// Unix milliseconds of the replay running on this thread.
    static NOW_MS: Cell<u64> = const { Cell::new(0) };
}

fn now() -> u64 {
    NOW_MS.with(Cell::get)
}

/// Sets this thread's simulated time, unix milliseconds.
pub fn set(ms: u64) {
    NOW_MS.with(|c| c.set(ms));
}

/// `c` reading this thread's simulated time.
pub fn attach(c: Compressor) -> Compressor {
    c.with_clock(now)
}
