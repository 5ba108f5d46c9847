//! Exchanges: whole agent turns, the unit micro-compaction absorbs.
//!
//! An exchange is a maximal run of non-user messages (assistant messages and tool results)
//! that starts after a user message (or a summary marker, or the start of the middle) and
//! ends right before the next real user message. An exchange whose next user message lies
//! beyond the middle is cut short by the tail and is not returned: it waits.
//! User messages and summary markers are walked past, never part of an exchange.

use std::ops::Range;

use crate::marker;
use crate::message::Message;

/// The oldest whole exchange at or after `cursor` inside `middle`.
///
/// The returned range lies inside `middle`, and `messages[range.end]` is a real user message.
pub(crate) fn next_exchange(
    messages: &[Message],
    middle: Range<usize>,
    cursor: usize,
) -> Option<Range<usize>> {
    let mut i = cursor.max(middle.start);
    loop {
        // Walk past user messages, system messages and markers.
        while i < middle.end && !is_absorbable(&messages[i]) {
            i += 1;
        }
        if i >= middle.end {
            return None;
        }
        let start = i;
        while i < messages.len() && is_absorbable(&messages[i]) && !is_marker(&messages[i]) {
            i += 1;
        }
        // A marker in the middle of a run of non-user messages ends the run; what follows
        // the marker starts a new run.
        if i < messages.len() && is_marker(&messages[i]) && i < middle.end {
            if i > start && ends_at_user(messages, i) {
                return Some(start..i);
            }
            continue;
        }
        if i > middle.end {
            return None;
        }
        if i < messages.len() && messages[i].is_user() && !is_marker(&messages[i]) {
            return Some(start..i);
        }
        // A system or unknown-role message inside the middle interrupts the run: it is not
        // bounded by a user message, so it is no exchange, but later runs may still be.
        if i < middle.end {
            continue;
        }
        return None;
    }
}

/// Every whole exchange at or after `cursor` in `middle`, oldest first.
pub fn exchanges_from(
    messages: &[Message],
    middle: Range<usize>,
    cursor: usize,
) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut c = cursor;
    while let Some(r) = next_exchange(messages, middle.clone(), c) {
        c = r.end;
        out.push(r);
    }
    out
}

fn is_marker(m: &Message) -> bool {
    marker::classify(m).is_some()
}

/// Messages that may be part of an exchange: assistant and tool messages that are not markers.
fn is_absorbable(m: &Message) -> bool {
    (m.is_assistant() || m.is_tool()) && !is_marker(m)
}

fn ends_at_user(messages: &[Message], mut i: usize) -> bool {
    // A run interrupted by a marker counts only if the marker is followed by a user message.
    while i < messages.len() && is_marker(&messages[i]) {
        i += 1;
    }
    i < messages.len() && messages[i].is_user()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{MarkerKind, Role, ToolCall};

    fn convo() -> Vec<Message> {
        vec![
            Message::system("s"), // 0
            Message::user("u1"),  // 1
            Message::assistant_tool_calls("", vec![ToolCall::function("a", "ls", "{}")]), // 2
            Message::tool_result("a", "out"), // 3
            Message::assistant("done 1"), // 4
            Message::user("u2"),  // 5
            Message::assistant("done 2"), // 6
            Message::user("u3"),  // 7
            Message::assistant("working"), // 8
        ]
    }

    #[test]
    fn finds_whole_exchanges_only() {
        let m = convo();
        assert_eq!(next_exchange(&m, 1..9, 0), Some(2..5));
        assert_eq!(next_exchange(&m, 1..9, 5), Some(6..7));
        // The last exchange has no closing user message: it waits.
        assert_eq!(next_exchange(&m, 1..9, 7), None);
        // Cut short by the tail.
        assert_eq!(next_exchange(&m, 1..4, 0), None);
        // Ends exactly where the tail starts with a user message.
        assert_eq!(next_exchange(&m, 1..5, 0), Some(2..5));
        assert_eq!(exchanges_from(&m, 1..9, 0), vec![2..5, 6..7]);
    }

    #[test]
    fn a_mid_transcript_system_message_does_not_stop_the_search() {
        let mut m = convo();
        // [s, u1, a, t, SYS, a, u2, a, u3, a]: the interrupted run is skipped, the rest found.
        m.insert(4, Message::system("mode switched"));
        assert_eq!(next_exchange(&m, 1..10, 0), Some(5..6));
        assert_eq!(exchanges_from(&m, 1..10, 0), vec![5..6, 7..8]);
    }

    #[test]
    fn walks_past_markers() {
        let mut m = convo();
        m.insert(2, marker::render(MarkerKind::Micro, Role::Assistant, "sum"));
        // [s, u1, M, a, t, a, u2, ...]: the run after the marker is the exchange.
        assert_eq!(next_exchange(&m, 1..10, 0), Some(3..6));
        assert_eq!(next_exchange(&m, 1..10, 3), Some(3..6));
    }
}
