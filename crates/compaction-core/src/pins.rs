//! Pinned messages ([`Meta::pinned`](crate::Meta::pinned)): what no pass may prune, trim,
//! summarize or reorder. Crate-private: a caller pins with `Meta::pinned`
//! (`m.meta_mut().pinned = true`) or `Transcript::pin`, and the planners keep the pins.
//!
//! The planners treat a pinned message like a protected head message: its tool group (the
//! assistant message with the calls and all their results) is kept whole and verbatim, and
//! the rewritable regions are cut around it. [`free_ranges`] is that cut.
//!

use std::ops::Range;

use crate::message::Message;
use crate::transcript::groups;

/// Whether any message of `range` is pinned.
pub(crate) fn any_pinned(messages: &[Message], range: Range<usize>) -> bool {
    messages[range].iter().any(Message::is_pinned)
}

/// The spans the pinned messages of `range` keep whole, in order and disjoint: each pinned
/// message with its tool group (a pinned call keeps its results, a pinned result its call and
/// the other results of that call). A span may reach outside `range`.
pub(crate) fn pinned_spans(messages: &[Message], range: Range<usize>) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for i in range {
        if !messages[i].is_pinned() {
            continue;
        }
        let start = groups::group_start(messages, i);
        let end = groups::group_end(messages, start).max(i + 1);
        match out.last_mut() {
            Some(last) if start <= last.end => last.end = last.end.max(end),
            _ => out.push(start..end),
        }
    }
    out
}

/// `range` without the [pinned spans](pinned_spans) it holds: the non-empty pieces a pass
/// may rewrite, in order.
pub(crate) fn free_ranges(messages: &[Message], range: Range<usize>) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut from = range.start;
    // A pin just outside `range` still keeps the part of its group inside it.
    let lo = if range.start < range.end {
        groups::group_start(messages, range.start)
    } else {
        range.start
    };
    let hi = groups::align_forward(messages, range.end);
    for span in pinned_spans(messages, lo..hi) {
        if span.start > from {
            out.push(from..span.start.min(range.end));
        }
        from = from.max(span.end);
    }
    if from < range.end {
        out.push(from..range.end);
    }
    out
}

/// [`free_ranges`] of each range, in order.
pub(crate) fn free_ranges_of(messages: &[Message], ranges: &[Range<usize>]) -> Vec<Range<usize>> {
    ranges
        .iter()
        .flat_map(|r| free_ranges(messages, r.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn convo() -> Vec<Message> {
        vec![
            Message::system("s"),
            Message::user("u1"),
            Message::assistant_tool_calls(
                "",
                vec![
                    ToolCall::function("a", "ls", "{}"),
                    ToolCall::function("b", "ls", "{}"),
                ],
            ),
            Message::tool_result("a", "x"),
            Message::tool_result("b", "y"),
            Message::assistant("done"),
            Message::user("u2"),
            Message::assistant("ok"),
        ]
    }

    #[test]
    fn a_pin_keeps_its_whole_group() {
        for pinned in [2, 3, 4] {
            let mut m = convo();
            m[pinned].meta_mut().pinned = true;
            assert_eq!(pinned_spans(&m, 0..8), vec![2..5], "pin at {pinned}");
            assert_eq!(free_ranges(&m, 1..8), vec![1..2, 5..8]);
            // A range that starts inside the group loses the group's rest.
            assert_eq!(free_ranges(&m, 4..8), vec![5..8]);
            assert_eq!(free_ranges(&m, 0..3), vec![0..2]);
        }
    }

    #[test]
    fn adjacent_and_edge_pins() {
        let mut m = convo();
        m[0].meta_mut().pinned = true;
        m[1].meta_mut().pinned = true;
        m[7].meta_mut().pinned = true;
        assert_eq!(pinned_spans(&m, 0..8), vec![0..2, 7..8]);
        assert_eq!(free_ranges(&m, 0..8), vec![2..7]);
        assert_eq!(free_ranges(&m, 0..0), Vec::<Range<usize>>::new());
        assert!(any_pinned(&m, 6..8) && !any_pinned(&m, 2..7));
        let none = convo();
        assert_eq!(free_ranges(&none, 1..8), vec![1..8]);
        assert_eq!(free_ranges_of(&m, &[0..3, 5..8]), vec![2..3, 5..7]);
    }
}
