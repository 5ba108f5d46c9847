//! The clock the [`Compressor`](crate::Compressor) reads: every time it looks at (cooldowns,
//! anti-thrash pauses, the cache time-to-live rule, the date in summary prompts) comes from the
//! one [`Clock`] value it was given, so a simulation or a test can give each compressor its own
//! time.
//!
//! Any `Fn() -> u64 + Send + Sync` returning unix milliseconds is a clock, so a plain function
//! or a closure over a shared counter works:
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use hermes_compaction::clock::Clock;
//!
//! let now = Arc::new(AtomicU64::new(86_400_000)); // 1970-01-02
//! let clock = { let now = now.clone(); move || now.load(Ordering::Relaxed) };
//! assert_eq!(clock.today(), "1970-01-02");
//! now.store(0, Ordering::Relaxed);
//! assert_eq!(clock.now_unix_ms(), 0);
//! ```

use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// The current time in unix milliseconds.
    fn now_unix_ms(&self) -> u64;

    /// Today's date (UTC) as `YYYY-MM-DD`, from [`now_unix_ms`](Self::now_unix_ms).
    fn today(&self) -> String {
        date_of(self.now_unix_ms())
    }
}

/// The system clock (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }
}

/// A function or closure returning unix milliseconds is a clock (the form
/// [`CompressorBuilder::clock`](crate::CompressorBuilder::clock) took before the trait existed).
impl<F> Clock for F
where
    F: Fn() -> u64 + Send + Sync,
{
    fn now_unix_ms(&self) -> u64 {
        self()
    }
}

/// The UTC date of a unix time in milliseconds, as `YYYY-MM-DD`.
pub fn date_of(unix_ms: u64) -> String {
    let days = (unix_ms / 86_400_000) as i64;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(date_of(0), "1970-01-01");
        // 2024-02-29 00:00:00 UTC (a leap day) and the millisecond before it.
        assert_eq!(date_of(1_709_164_800_000), "2024-02-29");
        assert_eq!(date_of(1_709_164_799_999), "2024-02-28");
        let fixed = || 1_709_164_800_000u64;
        assert_eq!(fixed.today(), "2024-02-29");
        assert_eq!(SystemClock.today(), date_of(SystemClock.now_unix_ms()));
    }
}
