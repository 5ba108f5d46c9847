//! Helpers shared by the test modules: the shared fixtures and the region laws.

use compaction_core::Transcript;
use compaction_core::marker;
use compaction_core::regions::{RegionConfig, Regions};
use compaction_core::{Message, Role};

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
        .take_while(|m| matches!(m.role(), Role::System | Role::Developer))
        .count();
    assert!(r.head.end >= sys, "{r:?} (system block of {sys})");
    // No cut splits a tool group.
    for cut in [r.head.end, r.middle.end, r.turn_middle.start, r.tail.start] {
        assert!(
            !splits_group(msgs, cut),
            "cut {cut} splits a tool group: {r:?}"
        );
    }
    // The latest real user request (visible text; spec section 1, "Tail") is kept verbatim
    // somewhere protected; without one, the latest user message of any kind is.
    let real = |m: &Message| m.is_user() && m.has_visible_text() && marker::classify(m).is_none();
    let latest = msgs.iter().rposition(real);
    assert_eq!(t.last_real_user(), latest);
    let anchor = latest.or_else(|| {
        msgs.iter()
            .rposition(|m| m.is_user() && marker::classify(m).is_none())
    });
    if let Some(u) = anchor {
        assert!(
            r.tail.contains(&u) || r.turn_user == Some(u) || r.head.contains(&u),
            "latest user {u} unprotected: {r:?}"
        );
    }
    // The last assistant reply the user saw is kept verbatim: protected, or marked as the
    // reply the rewritable part ends before.
    let reply = msgs.iter().rposition(|m| {
        m.is_assistant()
            && !m.has_tool_calls()
            && m.has_visible_text()
            && marker::classify(m).is_none()
    });
    if let Some(a) = reply.filter(|&a| a >= r.head.end) {
        assert!(
            r.tail.contains(&a) || r.reply == Some(a),
            "last visible reply {a} unprotected: {r:?}"
        );
        assert!(
            r.reply == Some(a) || !(r.middle.contains(&a) || r.turn_middle.contains(&a)),
            "{r:?}"
        );
    }
    // The last `min_tail_user_messages` real requests are protected.
    if cfg.min_tail_user_messages > 1 {
        let users: Vec<usize> = (0..n).rev().filter(|&i| real(&msgs[i])).collect();
        for &u in users.iter().take(cfg.min_tail_user_messages) {
            assert!(
                r.tail.contains(&u) || r.head.contains(&u),
                "request {u} of the last {} unprotected: {r:?}",
                cfg.min_tail_user_messages
            );
        }
    }
    // The tail holds at least the minimum count (what the head leaves of it), unless it starts
    // right after an older summary that the pass folds into the new one.
    let min = cfg.protect_last_n.min(n - r.head.end);
    let after_summary = r.tail.start > 0 && marker::classify(&msgs[r.tail.start - 1]).is_some();
    assert!(
        r.tail.len() >= min || after_summary,
        "tail shorter than {min}: {r:?}"
    );
}

/// Whether a cut at `at` (between `at - 1` and `at`) separates tool results from the assistant
/// message whose calls they answer: `at` is a tool result, and the nearest message before it
/// that is not one is an assistant with tool calls (orphan results form no group).
fn splits_group(msgs: &[Message], at: usize) -> bool {
    if at == 0 || at >= msgs.len() || !msgs[at].is_tool() {
        return false;
    }
    msgs[..at]
        .iter()
        .rev()
        .find(|m| !m.is_tool())
        .is_some_and(Message::has_tool_calls)
}

/// The spans the pins of `msgs` keep whole (a test oracle, written apart from the planners'
/// own): each pinned message with its tool group (a pinned call keeps its results, a pinned
/// result its call and the other results of that call), overlapping spans merged.
pub fn pinned_spans(msgs: &[Message]) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for i in (0..msgs.len()).filter(|&i| msgs[i].is_pinned()) {
        // A result belongs to the nearest non-tool message before it, when that one calls.
        let mut start = i;
        while start > 0 && msgs[start].is_tool() {
            start -= 1;
        }
        if msgs[start].is_tool() || (start < i && !msgs[start].has_tool_calls()) {
            start = i;
        }
        let mut end = start + 1;
        if msgs[start].has_tool_calls() {
            while end < msgs.len() && msgs[end].is_tool() {
                end += 1;
            }
        }
        let end = end.max(i + 1);
        match out.last_mut() {
            Some(last) if start <= last.end => last.end = last.end.max(end),
            _ => out.push(start..end),
        }
    }
    out
}
