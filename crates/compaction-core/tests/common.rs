//! Helpers shared by the test modules: the shared fixtures and the region laws.

use compaction_core::marker;
use compaction_core::regions::{RegionConfig, Regions};
use compaction_core::transcript::{Transcript, groups};

/// The shared fixture transcripts as `(file name, bytes)`, sorted by name, or `None` (after
/// printing why) when the directory is missing and `HERMES_REQUIRE_SHARED` is not `1`.
pub fn fixtures() -> Option<Vec<(String, Vec<u8>)>> {
    test_support::fixture_bytes()
}

/// Asserts the region laws of a partition of `t` made with `cfg` (messages named by index
/// only).
pub fn assert_region_laws(t: &Transcript, r: &Regions, cfg: &RegionConfig) {
    let msgs = t.messages();
    let n = t.len();
    // Consecutive, disjoint and covering.
    assert_eq!(r.head.start, 0, "{r:?}");
    assert_eq!(r.head.end, r.middle.start, "{r:?}");
    let after_middle = match r.turn_user {
        Some(u) => {
            assert_eq!(u, r.middle.end, "{r:?}");
            u + 1
        }
        None => r.middle.end,
    };
    assert_eq!(after_middle, r.turn_middle.start, "{r:?}");
    assert_eq!(r.turn_middle.end, r.tail.start, "{r:?}");
    assert_eq!(r.tail.end, n, "{r:?}");
    for range in [&r.head, &r.middle, &r.turn_middle, &r.tail] {
        assert!(range.start <= range.end, "{r:?}");
    }
    // The head holds the whole leading system block.
    let sys = msgs
        .iter()
        .take_while(|m| m.role().is_system_like())
        .count();
    assert!(r.head.end >= sys, "{r:?} (system block of {sys})");
    // No cut splits a tool group.
    for cut in [r.head.end, r.middle.end, r.turn_middle.start, r.tail.start] {
        assert!(
            !groups::splits_group(msgs, cut),
            "cut {cut} splits a tool group: {r:?}"
        );
    }
    // The latest real user message is kept verbatim somewhere protected.
    let latest = msgs
        .iter()
        .rposition(|m| m.is_user() && marker::classify(m).is_none());
    if let Some(u) = latest {
        assert_eq!(t.last_real_user(), Some(u));
        assert!(
            r.tail.contains(&u) || r.turn_user == Some(u) || r.head.contains(&u),
            "latest user {u} unprotected: {r:?}"
        );
    }
    // The tail holds at least the minimum count (what the head leaves of it).
    let min = cfg.protect_last_n.min(n - r.head.end);
    assert!(r.tail.len() >= min, "tail shorter than {min}: {r:?}");
}
