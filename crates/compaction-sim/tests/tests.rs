//! compaction-sim's tests: the trace re-prices to the totals, retention, the tuner's front,
//! the waits compaction adds.

mod common;
mod foresight;
mod latency;
mod overflow;
mod recall;
mod reread;
mod trace;
mod ttl;
mod tune;
