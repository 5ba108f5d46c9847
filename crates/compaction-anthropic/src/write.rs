//! Writing the dialect: a group of messages read from one Anthropic message is written back
//! as its original bytes while no pass changed it, else rebuilt block by block; untagged
//! messages are regrouped by rule.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use compaction_core::{Content, Message, Part, ToolCall};

use crate::TAG_KEY;
use crate::read::{json_str, object};

/// The end of the group that starts at `start`: the messages with the same tag, or, untagged,
/// a run of tool messages and the user message right after it.
pub(crate) fn group_end(messages: &[Message], start: usize) -> usize {
    let first = &messages[start];
    let mut end = start + 1;
    match tag(first).map(|t| (t.get("g").cloned(), t.get("n").cloned())) {
        Some((g, n)) => {
            // The same original: same group and size, member indices increasing (a group
            // number can repeat when messages were read in separate calls).
            let mut last = tag(first).and_then(|t| t.get("i")).and_then(Value::as_u64);
            while let Some(t) = messages.get(end).and_then(tag) {
                let i = t.get("i").and_then(Value::as_u64);
                if t.get("g").cloned() != g || t.get("n").cloned() != n || i <= last {
                    break;
                }
                last = i;
                end += 1;
            }
        }
        None if first.is_tool() => {
            while end < messages.len() && tag(&messages[end]).is_none() {
                let m = &messages[end];
                if m.is_tool() {
                    end += 1;
                } else {
                    if m.is_user() && m.marker_kind().is_none() {
                        end += 1;
                    }
                    break;
                }
            }
        }
        None => {}
    }
    end
}

/// The original bytes of a group no pass changed: every member present, in order, unmodified.
pub(crate) fn original(group: &[Message]) -> Option<String> {
    let first = tag(&group[0])?;
    let n = first.get("n")?.as_u64()? as usize;
    if group.len() != n {
        return None;
    }
    for (i, m) in group.iter().enumerate() {
        let t = tag(m)?;
        if t.get("i")?.as_u64()? as usize != i || !m.is_pristine() {
            return None;
        }
    }
    Some(match first.get("raw").and_then(Value::as_str) {
        Some(raw) => raw.to_owned(),
        None => rebuild(group),
    })
}

fn tag(m: &Message) -> Option<&Map<String, Value>> {
    m.meta()?.extra.get(TAG_KEY)?.as_object()
}

/// One Anthropic message from a group of messages, block by block.
pub(crate) fn rebuild(group: &[Message]) -> String {
    let first = &group[0];
    let role = if first.is_tool() {
        "user"
    } else {
        first.role().as_str()
    };
    // Top-level fields: a tool message holds its result block's fields first and then the
    // `top` top-level ones; another message's extra fields are all top-level.
    let mut top: Vec<(&str, &str)> = Vec::new();
    if first.is_tool() {
        let n = tag(first)
            .and_then(|t| t.get("top"))
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        let extras: Vec<(&str, &str)> = first.extra_fields().collect();
        top.extend(extras[extras.len().saturating_sub(n)..].iter().copied());
    } else {
        top.extend(first.extra_fields());
    }
    let mut out = String::from("{\"role\":");
    out.push_str(&json_str(role));
    // A single message of string content keeps it a string.
    let single_text = group.len() == 1 && !first.is_tool() && !first.has_tool_calls();
    match (single_text, first.content()) {
        (true, Some(Content::Text(s))) => {
            out.push_str(",\"content\":");
            out.push_str(&json_str(s));
        }
        (true, Some(Content::Null)) => out.push_str(",\"content\":null"),
        (true, None) => {}
        _ => {
            out.push_str(",\"content\":[");
            let mut blocks = Vec::new();
            for m in group {
                member_blocks(m, &mut blocks);
            }
            out.push_str(&blocks.join(","));
            out.push(']');
        }
    }
    for (k, v) in top {
        out.push(',');
        out.push_str(&json_str(k));
        out.push(':');
        out.push_str(v);
    }
    out.push('}');
    out
}

/// The content blocks a message stands for.
fn member_blocks(m: &Message, out: &mut Vec<String>) {
    let raws = block_raws(m);
    if m.is_tool() {
        let mut b = String::from("{\"type\":\"tool_result\",\"tool_use_id\":");
        b.push_str(&json_str(m.tool_call_id().unwrap_or("")));
        if let Some(c) = m.content() {
            b.push_str(",\"content\":");
            match c {
                Content::Text(s) => b.push_str(&json_str(s)),
                Content::Null => b.push_str("null"),
                Content::Parts(parts) => {
                    b.push('[');
                    let items: Vec<String> = parts.iter().map(|p| part_json(p, &raws)).collect();
                    b.push_str(&items.join(","));
                    b.push(']');
                }
            }
        }
        let n = tag(m)
            .and_then(|t| t.get("top"))
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        let extras: Vec<(&str, &str)> = m.extra_fields().collect();
        for (k, v) in &extras[..extras.len().saturating_sub(n)] {
            b.push(',');
            b.push_str(&json_str(k));
            b.push(':');
            b.push_str(v);
        }
        b.push('}');
        out.push(b);
        return;
    }
    match m.content() {
        Some(Content::Text(s)) if !s.is_empty() || !m.has_tool_calls() => {
            out.push(format!("{{\"type\":\"text\",\"text\":{}}}", json_str(s)));
        }
        Some(Content::Parts(parts)) => {
            out.extend(parts.iter().map(|p| part_json(p, &raws)));
        }
        _ => {}
    }
    for call in m.tool_calls() {
        out.push(tool_use_json(call));
    }
}

/// A `tool_use` block from a call: the arguments are the `input` when they are a JSON object,
/// else (a call written by another dialect) `{"arguments": TEXT}`.
fn tool_use_json(call: &ToolCall) -> String {
    let mut b = String::from("{\"type\":\"tool_use\",\"id\":");
    b.push_str(&json_str(&call.id));
    b.push_str(",\"name\":");
    b.push_str(&json_str(&call.function.name));
    b.push_str(",\"input\":");
    let args = call.function.arguments.trim();
    let is_object = args.starts_with('{') && serde_json::from_str::<&RawValue>(args).is_ok();
    if is_object {
        b.push_str(args);
    } else {
        b.push_str("{\"arguments\":");
        b.push_str(&json_str(&call.function.arguments));
        b.push('}');
    }
    for (k, v) in &call.extra {
        b.push(',');
        b.push_str(&json_str(k));
        b.push(':');
        b.push_str(&serde_json::to_string(v).unwrap_or_else(|_| "null".into()));
    }
    b.push('}');
    b
}

/// A part as JSON: its original text when the tag kept one for this very value, else
/// serde_json's compact form.
fn part_json(p: &Part, raws: &[(Value, String)]) -> String {
    raws.iter()
        .find(|(v, _)| *v == p.0)
        .map(|(_, raw)| raw.clone())
        .unwrap_or_else(|| serde_json::to_string(&p.0).unwrap_or_else(|_| "null".into()))
}

/// The original texts the tag kept for this message's parts, with their values.
fn block_raws(m: &Message) -> Vec<(Value, String)> {
    let Some(Value::Array(items)) = tag(m).and_then(|t| t.get("blocks")) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(Value::as_str)
        .filter_map(|raw| Some((serde_json::from_str::<Value>(raw).ok()?, raw.to_owned())))
        .collect()
}

/// The original texts of the parts whose JSON is not serde_json's compact form (so a rebuild
/// can still write them as they were).
pub(crate) fn noncanonical_parts(m: &Message) -> Vec<Value> {
    let Some(Content::Parts(_)) = m.content() else {
        return Vec::new();
    };
    // The parts' original texts are in the message's own original body.
    let body = m.to_wire_json();
    let Ok(fields) = object(&body) else {
        return Vec::new();
    };
    let Some((_, content)) = fields.iter().find(|(k, _)| k == "content") else {
        return Vec::new();
    };
    let Ok(items) = serde_json::from_str::<Vec<Box<RawValue>>>(content.get()) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|raw| {
            let v: Value = serde_json::from_str(raw.get()).ok()?;
            let canonical = serde_json::to_string(&v).ok()?;
            (canonical != raw.get()).then(|| Value::String(raw.get().to_owned()))
        })
        .collect()
}
