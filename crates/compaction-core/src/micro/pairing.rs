//! Tool-call pairing of a span: whether an exchange can be removed whole. A leaf of the micro
//! module (the planner and the assembler both ask it; neither imports the other for it).

use std::ops::Range;

use crate::message::Message;

/// Whether removing `range` leaves no tool result without its call and no call that had a
/// result without it: every result inside answers a call inside, and no call inside is
/// answered outside.
pub(super) fn pairs_inside(messages: &[Message], range: Range<usize>) -> bool {
    let span = &messages[range.clone()];
    let calls: Vec<&str> = span
        .iter()
        .flat_map(|m| m.tool_calls().iter().map(|c| c.call_id()))
        .collect();
    let answered: Vec<&str> = span
        .iter()
        .filter(|m| m.is_tool())
        .filter_map(Message::tool_call_id)
        .collect();
    if span.iter().any(|m| m.is_tool())
        && answered.len() != span.iter().filter(|m| m.is_tool()).count()
    {
        return false;
    }
    if answered.iter().any(|a| !calls.contains(a)) {
        return false;
    }
    let unanswered: Vec<&str> = calls
        .iter()
        .copied()
        .filter(|c| !answered.contains(c))
        .collect();
    // Rare: a call whose result is not inside. Only then look at the rest of the transcript.
    unanswered.is_empty()
        || !messages[range.end..]
            .iter()
            .filter_map(Message::tool_call_id)
            .any(|id| unanswered.contains(&id))
}

/// Whether `range` holds a tool call it does not answer itself (then whether it is
/// absorbable depends on what is appended later).
pub(super) fn has_open_call(messages: &[Message], range: Range<usize>) -> bool {
    let span = &messages[range];
    span.iter()
        .flat_map(|m| m.tool_calls().iter().map(|c| c.call_id()))
        .any(|c| {
            !span
                .iter()
                .any(|m| m.is_tool() && m.tool_call_id() == Some(c))
        })
}
