//! The replay's simulated time: each replay owns one [`SimClock`] and hands it to its
//! compressor (the facade's injected [`Clock`]), so replays running side by side on worker
//! threads never share a time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hermes_compaction::clock::Clock;

/// A settable clock in unix milliseconds; clones share the time.
#[derive(Clone, Debug, Default)]
pub struct SimClock(Arc<AtomicU64>);

impl SimClock {
    /// A clock at unix time 0.
    pub fn new() -> SimClock {
        SimClock::default()
    }

    /// Sets the simulated time, unix milliseconds.
    pub fn set(&self, ms: u64) {
        self.0.store(ms, Ordering::Relaxed);
    }
}

impl Clock for SimClock {
    fn now_unix_ms(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_time() {
        let a = SimClock::new();
        let b = a.clone();
        a.set(86_400_000);
        assert_eq!(b.now_unix_ms(), 86_400_000);
        assert_eq!(b.today(), "1970-01-02");
    }
}
