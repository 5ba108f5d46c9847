//! The working set a batch summary carries verbatim.
//!
//! A summary keeps the gist of what it replaces, never the text: after a pass, the file the
//! agent is in the middle of editing is gone unless the protected tail happens to hold its
//! last read, and the agent reads it again (one more tool round, its content at the miss
//! price). So a batch pass keeps, right after its summary and in their order, the newest tool
//! groups of the summarized span that act on what the kept messages still act on: a group
//! whose calls name a file (or a path-like word of a command) that a tool call after the span
//! names too. Each kept group is whole (the assistant message with its calls and every
//! result) and byte-identical to the original; together they stay within a token budget
//! (`BatchConfig::carry_ratio` of the threshold). A group with an image, a pinned message or
//! a summary marker is never carried.
//!
//! The choice reads tool-call arguments only, the same fields the [ledger](crate::ledger)
//! reads (keys ending in `path`, `file`, `filename`, `paths`, `files`, and the words of a
//! `command` or `cmd` that look like paths), so it follows what the agent works on, not what
//! any score counts.

use std::collections::HashSet;
use std::ops::Range;

use serde_json::Value;

use crate::marker;
use crate::message::Message;
use crate::transcript::{Transcript, groups};

/// The targets `m`'s tool calls name: file arguments and path-like command words.
pub(crate) fn targets(m: &Message, out: &mut HashSet<String>) {
    for call in m.tool_calls() {
        let Ok(Value::Object(args)) = serde_json::from_str::<Value>(&call.function.arguments)
        else {
            continue;
        };
        for (key, value) in &args {
            let key = key.to_ascii_lowercase();
            if key == "command" || key == "cmd" {
                let mut words = |s: &str| {
                    for w in s.split_whitespace() {
                        let w = w.trim_matches(|c| matches!(c, '"' | '\'' | '`' | ';' | '(' | ')'));
                        if path_like(w) {
                            out.insert(normal(w).to_owned());
                        }
                    }
                };
                match value {
                    Value::String(s) => words(s),
                    Value::Array(items) => items.iter().filter_map(Value::as_str).for_each(words),
                    _ => {}
                }
            } else if key.ends_with("path") || key == "file" || key == "filename" {
                if let Value::String(s) = value
                    && !s.trim().is_empty()
                {
                    out.insert(normal(s.trim()).to_owned());
                }
            } else if key == "paths" || key == "files" {
                let items: Vec<&str> = match value {
                    Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
                    Value::String(s) => vec![s.as_str()],
                    _ => Vec::new(),
                };
                for s in items.into_iter().map(str::trim).filter(|s| !s.is_empty()) {
                    out.insert(normal(s).to_owned());
                }
            }
        }
    }
}

/// A command word that names a file: holds a `/` or a `.` between other characters, is not
/// an option, a URL or a number.
fn path_like(w: &str) -> bool {
    w.len() >= 3
        && w.len() <= 300
        && !w.starts_with('-')
        && !w.contains("://")
        && (w.contains('/') || w.trim_matches('.').contains('.'))
        && w.chars().any(|c| c.is_ascii_alphabetic())
        && !w.contains(['|', '>', '<', '&', '$', '*', '='])
}

fn normal(p: &str) -> &str {
    p.strip_prefix("./").unwrap_or(p)
}

/// The tool groups of `span` to carry verbatim after its summary, in order: the newest groups
/// whose calls name a target that a tool call after `span` names, within `budget` tokens.
pub(crate) fn plan_carry(t: &Transcript, span: Range<usize>, budget: u64) -> Vec<Range<usize>> {
    if budget == 0 || span.is_empty() {
        return Vec::new();
    }
    let msgs = t.messages();
    if std::env::var("HERMES_CARRY_MODE").as_deref() == Ok("ids") {
        return plan_carry_ids(t, span, budget);
    }
    let mut active = HashSet::new();
    for m in &msgs[span.end..] {
        targets(m, &mut active);
    }
    if active.is_empty() {
        return Vec::new();
    }
    let mut chosen = Vec::new();
    let mut left = budget;
    let mut end = span.end;
    while end > span.start {
        let start = groups::group_start(msgs, end - 1);
        let group = start..end;
        end = start;
        if start < span.start || !msgs[start].has_tool_calls() || group.len() < 2 {
            continue;
        }
        let tokens = t.tokens_in(group.clone());
        if tokens > left || !carriable(msgs, group.clone()) {
            continue;
        }
        let mut named = HashSet::new();
        targets(&msgs[start], &mut named);
        if named.iter().any(|x| active.contains(x)) {
            left -= tokens;
            chosen.push(group);
        }
    }
    chosen.reverse();
    chosen
}

/// A complete group (every call answered inside it, nothing else) with no image, pin or
/// marker.
fn carriable(msgs: &[Message], group: Range<usize>) -> bool {
    let ids: Vec<&str> = msgs[group.start]
        .tool_calls()
        .iter()
        .map(|c| c.call_id())
        .collect();
    let results: Vec<&str> = msgs[group.start + 1..group.end]
        .iter()
        .filter_map(Message::tool_call_id)
        .collect();
    results.len() == group.len() - 1
        && ids.iter().all(|id| results.contains(id))
        && results.iter().all(|id| ids.contains(id))
        && msgs[group.clone()].iter().all(|m| {
            !m.is_pinned()
                && marker::classify(m).is_none()
                && m.content().is_none_or(|c| c.image_count() == 0)
        })
}

fn message_ids<'a>(m: &'a Message, out: &mut HashSet<String>) {
    let text = m.text();
    for w in crate::ledger::identifiers(&text) {
        out.insert(w.to_owned());
    }
    for c in m.tool_calls() {
        for w in crate::ledger::identifiers(&c.function.arguments) {
            out.insert(w.to_owned());
        }
    }
}

fn plan_carry_ids(t: &Transcript, span: Range<usize>, budget: u64) -> Vec<Range<usize>> {
    let msgs = t.messages();
    let mut later = HashSet::new();
    for m in &msgs[span.end..] {
        message_ids(m, &mut later);
    }
    let min: usize = std::env::var("HERMES_CARRY_MIN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let mut cands: Vec<(usize, usize, Range<usize>, u64)> = Vec::new();
    let mut end = span.end;
    while end > span.start {
        let start = groups::group_start(msgs, end - 1);
        let group = start..end;
        end = start;
        if start < span.start || !msgs[start].has_tool_calls() || group.len() < 2 {
            continue;
        }
        if !carriable(msgs, group.clone()) {
            continue;
        }
        let mut ids = HashSet::new();
        for m in &msgs[group.clone()] {
            message_ids(m, &mut ids);
        }
        let score = ids.iter().filter(|x| later.contains(*x)).count();
        if score >= min {
            cands.push((score, start, group.clone(), t.tokens_in(group)));
        }
    }
    cands.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    let mut left = budget;
    let mut chosen = Vec::new();
    for (_, _, g, tok) in cands {
        if tok <= left {
            left -= tok;
            chosen.push(g);
        }
    }
    chosen.sort_by_key(|g| g.start);
    chosen
}
