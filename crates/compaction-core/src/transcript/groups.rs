use std::ops::Range;

use crate::message::Message;

/// If `i` is a tool result, the index of the assistant message whose call group it
/// belongs to: the nearest preceding non-tool message, when that is an assistant with
/// tool calls. Consecutive tool results after one assistant are one group.
pub(crate) fn group_start(messages: &[Message], i: usize) -> usize {
    let mut j = i;
    while j > 0 && messages[j].is_tool() {
        j -= 1;
    }
    if messages[j].is_tool() || (j < i && !messages[j].has_tool_calls()) {
        // Orphan results with no calling assistant: treat each as its own unit.
        return i;
    }
    j
}

/// The end (exclusive) of the group starting at `i`: an assistant with tool calls is
/// followed by its consecutive tool results.
pub(crate) fn group_end(messages: &[Message], i: usize) -> usize {
    let mut j = i + 1;
    if messages[i].has_tool_calls() {
        while j < messages.len() && messages[j].is_tool() {
            j += 1;
        }
    }
    j
}

/// Whether a cut at `at` (between `at - 1` and `at`) would split a tool group.
pub(crate) fn splits_group(messages: &[Message], at: usize) -> bool {
    at > 0 && at < messages.len() && messages[at].is_tool() && {
        let s = group_start(messages, at);
        s < at
    }
}

/// Moves a cut forward past the results of the group it splits.
pub(crate) fn align_forward(messages: &[Message], at: usize) -> usize {
    let mut j = at;
    if splits_group(messages, at) {
        while j < messages.len() && messages[j].is_tool() {
            j += 1;
        }
    }
    j
}

/// The tool groups and single messages of `range`, as consecutive units.
pub(crate) fn units(messages: &[Message], range: Range<usize>) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = range.start;
    while i < range.end {
        let e = group_end(messages, i).min(range.end);
        out.push(i..e);
        i = e;
    }
    out
}
