//! The checks behind [`check`](super::check), one per law, each judged relative to `before`.

use std::collections::{HashMap, HashSet};

use super::{Pass, PassKind, Protected, Violation};
use crate::marker;
use crate::message::{MarkerKind, Message, Role};

/// Law 6 alone: every message of `after` has the content of the same message of `before`
/// (library metadata such as row ids aside).
pub(crate) fn check_unchanged(before: &[Message], after: &[Message], out: &mut Vec<Violation>) {
    let common = before.len().min(after.len());
    let first = (0..common).find(|&i| !same_content(&before[i], &after[i]));
    match first {
        Some(i) => out.push(Violation::ChangedOnFailure {
            first_difference: i,
        }),
        None if before.len() != after.len() => out.push(Violation::ChangedOnFailure {
            first_difference: common,
        }),
        None => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers, one per law.

/// Whether two messages have the same content: what a model sees, library metadata aside.
fn same_content(a: &Message, b: &Message) -> bool {
    a.to_wire_json() == b.to_wire_json()
}

/// Law 1 for pinned messages: each survives with its content, still pinned, after the
/// previous one (a greedy match in order decides whether they form a subsequence).
pub(super) fn check_pins(before: &[Message], after: &[Message], out: &mut Vec<Violation>) {
    let mut from = 0;
    for (i, m) in before.iter().enumerate().filter(|(_, m)| m.is_pinned()) {
        let found = after[from.min(after.len())..]
            .iter()
            .position(|a| a.is_pinned() && same_content(m, a));
        match found {
            Some(k) => from += k + 1,
            None => out.push(Violation::UserPinLost { before_index: i }),
        }
    }
}

/// Law 1. Head, tail and pinned messages compare by content (metadata aside).
pub(super) fn check_protected(
    before: &[Message],
    after: &[Message],
    pass: &Pass,
    out: &mut Vec<Violation>,
) {
    let Protected { head, tail, pinned } = pass.protected;
    let head = head.min(before.len());
    let tail = tail.min(before.len() - head);
    if after.len() < head + tail {
        out.push(Violation::ProtectedLost {
            protected: head + tail,
            after_len: after.len(),
        });
        return;
    }
    let demoted =
        |b: &Message, a: &Message| pass.options.tail_demotion_reported && demoted_in_place(b, a);
    for i in 0..head {
        if !same_content(&before[i], &after[i]) && !demoted(&before[i], &after[i]) {
            out.push(Violation::HeadChanged { index: i });
        }
    }
    let (b0, a0) = (before.len() - tail, after.len() - tail);
    for k in 0..tail {
        let (b, a) = (&before[b0 + k], &after[a0 + k]);
        if same_content(b, a) {
            continue;
        }
        if !demoted(b, a) {
            out.push(Violation::TailChanged {
                before_index: b0 + k,
                after_index: a0 + k,
            });
        }
    }
    if let Some(p) = pinned.filter(|&p| p < before.len()) {
        let want = before[p].to_wire_json();
        if !after[head..a0].iter().any(|m| m.to_wire_json() == want) {
            out.push(Violation::PinnedMissing { before_index: p });
        }
    }
}

/// The last-resort demotion of section 4a rewrites a protected message in place: a tool result
/// keeps its call id (its text becomes a one-liner), an assistant's tool calls keep their ids,
/// names and order and its text (long arguments shortened). Nothing else qualifies.
fn demoted_in_place(b: &Message, a: &Message) -> bool {
    if b.is_tool() && a.is_tool() {
        return b.tool_call_id() == a.tool_call_id();
    }
    b.is_assistant()
        && a.is_assistant()
        && !b.tool_calls().is_empty()
        && b.text() == a.text()
        && b.tool_calls().len() == a.tool_calls().len()
        && b.tool_calls()
            .iter()
            .zip(a.tool_calls())
            .all(|(x, y)| x.call_id() == y.call_id() && x.function.name == y.function.name)
}

/// Results each call id has, in order of the calls, for law 2.
struct Pairing<'a> {
    /// Tool results whose call id no earlier call in the transcript has.
    orphans: Vec<(usize, Option<&'a str>)>,
    /// Calls in order: (message index, position, id, number of later results).
    calls: Vec<(usize, usize, &'a str, usize)>,
    /// Results that answer an already answered call: (index, id).
    repeats: Vec<(usize, &'a str)>,
    /// First results outside their call's group: (index, id, index of the call's message).
    non_adjacent: Vec<(usize, &'a str, usize)>,
}

fn pairing(messages: &[Message]) -> Pairing<'_> {
    let mut p = Pairing {
        orphans: Vec::new(),
        calls: Vec::new(),
        repeats: Vec::new(),
        non_adjacent: Vec::new(),
    };
    // call id -> position in p.calls (the latest call with that id).
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    // The assistant message whose result group we are in (only tool results since it).
    let mut group: Option<usize> = None;
    for (i, m) in messages.iter().enumerate() {
        if m.is_tool() {
            match m
                .tool_call_id()
                .and_then(|id| by_id.get(id).map(|&c| (id, c)))
            {
                Some((id, c)) => {
                    p.calls[c].3 += 1;
                    if p.calls[c].3 > 1 {
                        p.repeats.push((i, id));
                    } else if group != Some(p.calls[c].0) {
                        p.non_adjacent.push((i, id, p.calls[c].0));
                    }
                }
                None => p.orphans.push((i, m.tool_call_id())),
            }
            continue;
        }
        group = m.has_tool_calls().then_some(i);
        for (pos, call) in m.tool_calls().iter().enumerate() {
            by_id.insert(call.call_id(), p.calls.len());
            p.calls.push((i, pos, call.call_id(), 0));
        }
    }
    p
}

/// Law 2, judged relative to `before`: only what the pass made worse is a violation.
pub(super) fn check_tools(before: &[Message], after: &[Message], out: &mut Vec<Violation>) {
    let b = pairing(before);
    let a = pairing(after);
    let orphan_before: HashSet<Option<&str>> = b.orphans.iter().map(|(_, id)| *id).collect();
    // Results per call id in before (summed over calls sharing an id).
    let mut results_before: HashMap<&str, usize> = HashMap::new();
    for (_, _, id, n) in &b.calls {
        *results_before.entry(id).or_default() += n;
    }
    let mut found = Vec::new();
    for (index, id) in &a.orphans {
        if !orphan_before.contains(id) {
            found.push(Violation::OrphanToolResult { index: *index });
        }
    }
    for (index, pos, id, n) in &a.calls {
        let had = results_before.get(id).copied().unwrap_or(0);
        if *n == 0 && had > 0 {
            found.push(Violation::MissingToolResult {
                index: *index,
                call: *pos,
            });
        }
    }
    let non_adjacent_before: HashSet<&str> = b.non_adjacent.iter().map(|(_, id, _)| *id).collect();
    for (index, id, call_index) in &a.non_adjacent {
        if !non_adjacent_before.contains(id) {
            found.push(Violation::NonAdjacentToolResult {
                index: *index,
                call_index: *call_index,
            });
        }
    }
    let mut repeats_by_id: HashMap<&str, usize> = HashMap::new();
    for (index, id) in &a.repeats {
        let seen = repeats_by_id.entry(id).or_default();
        *seen += 1;
        // The n-th extra result is allowed only if before had at least n + 1 results.
        if results_before.get(id).copied().unwrap_or(0) < *seen + 1 {
            found.push(Violation::DuplicateToolResult { index: *index });
        }
    }
    found.sort_by_key(violation_index);
    out.extend(found);
}

fn violation_index(v: &Violation) -> usize {
    match v {
        Violation::OrphanToolResult { index }
        | Violation::MissingToolResult { index, .. }
        | Violation::DuplicateToolResult { index }
        | Violation::NonAdjacentToolResult { index, .. } => *index,
        _ => 0,
    }
}

/// The roles law 3 compares: user and assistant. System blocks and tool results legitimately
/// repeat.
fn visible(role: &Role) -> bool {
    matches!(role, Role::User | Role::Assistant)
}

/// Law 3.
pub(super) fn check_roles(
    before: &[Message],
    after: &[Message],
    pass: &Pass,
    out: &mut Vec<Violation>,
) {
    let strict = pass.options.strict_alternation;
    let wire_before: Vec<String> = before.iter().map(Message::to_wire_json).collect();
    let wire_after: Vec<String> = after.iter().map(Message::to_wire_json).collect();
    let adjacent_before: HashSet<(&str, &str)> = (1..before.len())
        .filter(|&i| visible(before[i].role()) && before[i - 1].role() == before[i].role())
        .map(|i| (wire_before[i - 1].as_str(), wire_before[i].as_str()))
        .collect();
    let origin = positions(&wire_before, &wire_after);
    for i in 1..after.len() {
        let (x, y) = (&after[i - 1], &after[i]);
        if !visible(y.role()) || x.role() != y.role() {
            continue;
        }
        if adjacent_before.contains(&(wire_after[i - 1].as_str(), wire_after[i].as_str())) {
            continue;
        }
        // The same two places of `before`, rewritten one for one (a pruned call, an image
        // placeholder): the pass kept a pair it inherited.
        if let (Some(a), Some(b)) = (origin[i - 1], origin[i])
            && b == a + 1
            && before[a].role() == x.role()
            && before[b].role() == y.role()
        {
            continue;
        }
        // Under strict alternation, a pair of which one (or both) is a join the pass made:
        // the first ends with, the second starts with, two neighbours of `before` (the pass
        // joined users it made adjacent, and kept a pair that was adjacent in `before`). Text
        // decides, not the line-up: a join has no place of its own there, and the same text
        // may stand twice (a "continue" sent twice).
        if strict && x.is_user() && (origin[i - 1].is_none() || origin[i].is_none()) {
            let (tx, ty) = (x.text(), y.text());
            if (1..before.len()).any(|b| {
                before[b - 1].role() == x.role()
                    && before[b].role() == y.role()
                    && tx.ends_with(before[b - 1].text().as_ref())
                    && ty.starts_with(before[b].text().as_ref())
            }) {
                continue;
            }
        }
        let (kx, ky) = (marker::classify(x), marker::classify(y));
        let micro_users =
            pass.kind == PassKind::Micro && y.is_user() && kx.is_none() && ky.is_none();
        let progress_then_reply =
            kx == Some(MarkerKind::Progress) && y.is_assistant() && ky.is_none();
        if !strict && (micro_users || progress_then_reply) {
            continue;
        }
        out.push(Violation::AdjacentSameRole { index: i });
    }
    let first_after_system = |ms: &[Message]| ms.iter().position(|m| !m.role().is_system_like());
    if let (Some(b), Some(a)) = (first_after_system(before), first_after_system(after))
        && b > 0
        && before[b].is_user()
        && !after[a].is_user()
    {
        out.push(Violation::FirstNotUser { index: a });
    }
}

/// Where each message of `after` stood in `before`, as far as the two line up: the messages
/// that kept their content (the longest run of them a greedy match in order finds), and,
/// between two of those, the messages of a stretch that has as many messages on both sides
/// (rewritten one for one, in place). `None` for a message a pass wrote in place of a
/// different number of messages (a summary).
fn positions(before: &[String], after: &[String]) -> Vec<Option<usize>> {
    let mut at: HashMap<&str, Vec<usize>> = HashMap::new();
    for (j, w) in before.iter().enumerate() {
        at.entry(w.as_str()).or_default().push(j);
    }
    let mut origin: Vec<Option<usize>> = vec![None; after.len()];
    // Kept messages: each at the first place after the previous one's.
    let mut next = 0;
    for (i, w) in after.iter().enumerate() {
        if let Some(js) = at.get(w.as_str()) {
            let k = js.partition_point(|&j| j < next);
            if let Some(&j) = js.get(k) {
                origin[i] = Some(j);
                next = j + 1;
            }
        }
    }
    // Stretches between two kept messages (or an end) with as many messages on both sides.
    let mut anchors: Vec<(usize, usize)> = origin
        .iter()
        .enumerate()
        .filter_map(|(i, j)| j.map(|j| (i, j)))
        .collect();
    anchors.push((after.len(), before.len()));
    let (mut pi, mut pj) = (0usize, 0usize);
    for (ai, bj) in anchors {
        if ai - pi == bj.saturating_sub(pj) && bj >= pj {
            for k in 0..ai - pi {
                origin[pi + k] = Some(pj + k);
            }
        }
        (pi, pj) = (ai + 1, bj + 1);
    }
    origin
}

/// Law 3, the continuation (issue 21, item 14).
pub(super) fn check_continuation(
    before: &[Message],
    after: &[Message],
    pass: &Pass,
    out: &mut Vec<Violation>,
) {
    let count = |ms: &[Message]| ms.iter().filter(|m| marker::is_continuation(m)).count();
    let (had, has) = (count(before), count(after));
    let conts = || (0..after.len()).filter(|&i| marker::is_continuation(&after[i]));
    if has > had.max(1) {
        out.extend(
            conts()
                .skip(had.max(1))
                .map(|index| Violation::ExtraContinuation { index }),
        );
    }
    let user_text = after.iter().any(marker::is_user_text);
    if user_text && has > had {
        out.extend(
            conts()
                .take(1)
                .map(|index| Violation::NeedlessContinuation { index }),
        );
    }
    if pass.kind == PassKind::Batch && !user_text && has == 0 {
        // Only a summary the pass wrote is held against it.
        let old: HashSet<String> = before
            .iter()
            .filter(|m| marker::is_summary(m))
            .map(Message::to_wire_json)
            .collect();
        if let Some(summary_index) = after
            .iter()
            .position(|m| marker::is_summary(m) && !old.contains(&m.to_wire_json()))
        {
            out.push(Violation::NoUserText { summary_index });
        }
    }
}

/// Law 4: every real user message of `before`, in order, is in `after`: as a user message
/// with identical wire JSON, or (strict alternation only) as a verbatim substring of a user
/// message's text at or after the previous match, for user messages joined with a separator.
pub(super) fn check_user_text(
    before: &[Message],
    after: &[Message],
    strict: bool,
    out: &mut Vec<Violation>,
) {
    let users_after: Vec<&Message> = after
        .iter()
        .filter(|m| m.is_user() && marker::classify(m).is_none())
        .collect();
    let wire_after: Vec<String> = users_after.iter().map(|m| m.to_wire_json()).collect();
    // Position in users_after: message k, byte offset `off` into its text (joins only).
    let (mut k, mut off) = (0usize, 0usize);
    for (bi, u) in before.iter().enumerate() {
        if !u.is_user() || marker::classify(u).is_some() {
            continue;
        }
        // Inside a join, the next user message continues it when its text comes next there
        // (before a verbatim copy further on: the same text may occur twice, e.g. a command
        // run twice).
        if strict && off > 0 && k < users_after.len() {
            let needle = u.text();
            if let Some(pos) = users_after[k]
                .text()
                .get(off..)
                .and_then(|t| t.find(needle.as_ref()))
            {
                off += pos + needle.len();
                continue;
            }
        }
        let wire = u.to_wire_json();
        let from = if off == 0 { k } else { k + 1 };
        if let Some(p) = (from..users_after.len()).find(|&p| wire_after[p] == wire) {
            (k, off) = (p + 1, 0);
            continue;
        }
        if strict {
            let needle = u.text();
            let hit = (k..users_after.len()).find_map(|p| {
                let text = users_after[p].text();
                let start = if p == k { off } else { 0 };
                text.get(start..)
                    .and_then(|t| t.find(needle.as_ref()))
                    .map(|pos| (p, start + pos + needle.len()))
            });
            if let Some((p, end)) = hit {
                (k, off) = (p, end);
                continue;
            }
        }
        out.push(Violation::UserMessageLost { before_index: bi });
    }
}

/// Law 5.
pub(super) fn check_markers(before: &[Message], after: &[Message], out: &mut Vec<Violation>) {
    let (mut micro, mut progress) = (0, 0);
    // The active turn: from the last user message of the user's own (a library marker or
    // continuation is not one). A finished turn's progress marker may still stand before it.
    let turn = after
        .iter()
        .rposition(|m| m.is_user() && marker::classify(m).is_none())
        .unwrap_or(0);
    for (i, m) in after.iter().enumerate() {
        match marker::classify(m) {
            Some(MarkerKind::Micro) => {
                micro += 1;
                if micro > 1 {
                    out.push(Violation::ExtraMicroMarker { index: i });
                }
            }
            Some(MarkerKind::Progress) if i > turn => {
                progress += 1;
                if progress > 1 {
                    out.push(Violation::ExtraProgressMarker { index: i });
                }
            }
            _ => {}
        }
    }
    let batch_after: Vec<String> = after
        .iter()
        .filter(|m| marker::classify(m) == Some(MarkerKind::Batch))
        .map(Message::to_wire_json)
        .collect();
    let mut next = 0;
    for (bi, m) in before.iter().enumerate() {
        if marker::classify(m) != Some(MarkerKind::Batch) {
            continue;
        }
        let wire = m.to_wire_json();
        match (next..batch_after.len()).find(|&p| batch_after[p] == wire) {
            Some(p) => next = p + 1,
            None => out.push(Violation::BatchMarkerDeleted { before_index: bi }),
        }
    }
}
