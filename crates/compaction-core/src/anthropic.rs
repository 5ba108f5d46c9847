//! The Anthropic Messages dialect: read and write transcripts of `{role, content}` messages
//! whose content blocks are `text`, `image`, `document`, `tool_use`, `tool_result`,
//! `thinking`, `redacted_thinking` (and any other block, kept as it is).
//!
//! Every pass of the library works on chat messages, so an Anthropic message is read into the
//! messages the laws understand:
//!
//! - an assistant message becomes one assistant [`Message`]: its `tool_use` blocks become
//!   [`ToolCall`]s (the id, the name, the `input` text verbatim as the arguments, the block's
//!   other fields in [`ToolCall::extra`]); every other block (text, thinking, redacted
//!   thinking, unknown) stays a content [`Part`], byte for byte;
//! - a user message whose blocks include `tool_result`s becomes one `tool` message per result
//!   (answering its `tool_use_id`, with the block's `content` and other fields such as
//!   `is_error` and `cache_control`), and the runs of its other blocks become user messages, in
//!   block order; any other user message is read as it is.
//!
//! So a `tool_use` is answered by the results of the next user turn, a tool group is never
//! split, and every law of the library (spec section 2) applies. [`to_jsonl`] writes the
//! messages back: each message read from one Anthropic message carries a tag in its library
//! metadata ([`Meta::extra`](crate::Meta::extra)`["anthropic"]`, never sent to a model), and the
//! tagged messages of one original that no pass changed are written back as the original bytes.
//! A changed group is rebuilt block by block: blocks keep their order and fields, a content
//! block the pass did not change keeps its bytes (its original text is kept in the tag when its
//! JSON is not in serde_json's compact form), and a new library message (a summary) is a
//! message of its own, with no block of another message and so no `cache_control` mark.
//!
//! Thinking and redacted-thinking blocks are content parts that no pass reads or writes: the
//! summarizer's material holds only text parts ([`Part::text`] is `None` for them), pruning and
//! trimming rewrite tool results and arguments only, and a message leaves the transcript only
//! whole. Their bytes are therefore what the provider signed, after every pass that keeps their
//! message.
//!
//! Without the tags (messages that went through the store, which keeps bodies only), the
//! writer groups consecutive `tool` messages and a user message right after them into one
//! Anthropic user message, which is what the reader produced in the first place.
//!
//! ```
//! use compaction_core::anthropic;
//!
//! let text = concat!(
//!     r#"{"role":"user","content":"list the files"}"#, "\n",
//!     r#"{"role":"assistant","content":[{"type":"thinking","thinking":"ls","signature":"c2ln"},{"type":"tool_use","id":"toolu_1","name":"bash","input":{"cmd":"ls"}}]}"#, "\n",
//!     r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.txt","cache_control":{"type":"ephemeral"}},{"type":"text","text":"and?"}]}"#, "\n",
//! );
//! let messages = anthropic::parse(text).unwrap();
//! // The user turn with a result and a text is a tool message and a user message.
//! let roles: Vec<&str> = messages.iter().map(|m| m.role().as_str()).collect();
//! assert_eq!(roles, ["user", "assistant", "tool", "user"]);
//! assert_eq!(messages[1].tool_calls()[0].function.arguments, r#"{"cmd":"ls"}"#);
//! assert_eq!(messages[2].tool_call_id(), Some("toolu_1"));
//! // Unchanged, it writes back byte-identical.
//! assert_eq!(anthropic::to_jsonl(&messages), text);
//! ```

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::{Error, Location, Result};
use crate::message::{Content, Message, Part, ToolCall};

/// The key of the dialect's tag in [`Meta::extra`](crate::Meta::extra).
pub const TAG_KEY: &str = "anthropic";

/// Whether `text` is an Anthropic Messages transcript rather than OpenAI chat: some message
/// has a `tool_use`, `tool_result`, `thinking` or `redacted_thinking` block (or an `image` or
/// `document` block with a `source`), and none has `tool_calls` or the role `tool`. A
/// transcript of plain text messages is the same in both dialects (`false`).
///
/// ```
/// use compaction_core::anthropic::looks_like;
/// assert!(looks_like(r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}"#));
/// assert!(!looks_like(r#"{"role":"tool","tool_call_id":"t","content":"ok"}"#));
/// assert!(!looks_like(r#"{"role":"user","content":"hi"}"#));
/// ```
pub fn looks_like(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut anthropic = false;
    let mut check = |v: &Value| -> bool {
        let Some(obj) = v.as_object() else {
            return false;
        };
        if obj.contains_key("tool_calls") || obj.get("role").and_then(Value::as_str) == Some("tool")
        {
            return true; // OpenAI: stop
        }
        if let Some(Value::Array(blocks)) = obj.get("content") {
            anthropic |= blocks.iter().any(|b| {
                matches!(
                    b.get("type").and_then(Value::as_str),
                    Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking")
                ) || (matches!(
                    b.get("type").and_then(Value::as_str),
                    Some("image" | "document")
                ) && b.get("source").is_some())
            });
        }
        false
    };
    if text.trim_start().starts_with('[') {
        let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) else {
            return false;
        };
        for v in &items {
            if check(v) {
                return false;
            }
        }
        return anthropic;
    }
    for line in text.split('\n') {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return false;
        };
        if v.get("role").is_none() || check(&v) {
            return false;
        }
    }
    anthropic
}

/// Reads an Anthropic transcript: JSONL (one message per line, blank lines allowed) or a JSON
/// array of messages. Errors carry the 1-based line or the 0-based array index and never
/// quote content.
///
/// # Errors
///
/// [`Error::Parse`] with the location and why (not JSON, not an object, no role, a block
/// without the fields the dialect needs).
pub fn parse(text: &str) -> Result<Vec<Message>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    if text.trim_start().starts_with('[') {
        let items: Vec<Box<RawValue>> = serde_json::from_str(text).map_err(|e| Error::Parse {
            location: Location::Line(e.line().max(1)),
            reason: Box::new(json_error(&e)),
        })?;
        for (i, raw) in items.iter().enumerate() {
            let members = parse_message(i, raw.get()).map_err(|e| Error::Parse {
                location: Location::Index(i),
                reason: Box::new(e),
            })?;
            out.extend(members);
        }
        return Ok(out);
    }
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let members = parse_message(i, line).map_err(|e| Error::Parse {
            location: Location::Line(i + 1),
            reason: Box::new(e),
        })?;
        out.extend(members);
    }
    Ok(out)
}

/// Reads one Anthropic message (`group` numbers it: the messages read from it carry it in
/// their tag) into the messages it stands for.
///
/// # Errors
///
/// As [`parse`], without the location.
pub fn parse_message(group: usize, json: &str) -> Result<Vec<Message>> {
    // A message of a pretty-printed array spans lines; written back, it is one JSONL line.
    let compacted;
    let original = match json.trim() {
        multi if multi.contains(['\n', '\r']) => {
            compacted = compact_json(multi);
            compacted.as_str()
        }
        one => one,
    };
    let fields = object(original)?;
    let role_raw = fields
        .iter()
        .find(|(k, _)| k == "role")
        .map(|(_, v)| v)
        .ok_or(Error::MissingRole)?;
    let role: String = serde_json::from_str(role_raw.get()).map_err(|_| Error::InvalidField {
        field: "role",
        expected: "must be a string",
    })?;
    let content = fields.iter().find(|(k, _)| k == "content").map(|(_, v)| v);
    let blocks: Option<Vec<Box<RawValue>>> = match content {
        Some(raw) if raw.get().trim_start().starts_with('[') => Some(
            serde_json::from_str(raw.get()).map_err(|_| Error::InvalidField {
                field: "content",
                expected: "must be a string or a list of content blocks",
            })?,
        ),
        _ => None,
    };
    let extras: Vec<&(String, Box<RawValue>)> = fields
        .iter()
        .filter(|(k, _)| k != "role" && k != "content")
        .collect();
    let mut members = match (role.as_str(), blocks) {
        ("assistant", Some(blocks)) if has_type(&blocks, "tool_use")? => {
            vec![assistant(role_raw, &blocks, &extras)?]
        }
        ("user", Some(blocks)) if has_type(&blocks, "tool_result")? => {
            user_with_results(&blocks, &extras)?
        }
        // Text, images, documents, thinking without calls: the message reads as it is.
        _ => vec![(Message::from_json(original)?, 0)],
    };
    let n = members.len();
    for (i, (m, top)) in members.iter_mut().enumerate() {
        let mut tag = Map::new();
        tag.insert("g".into(), Value::from(group));
        tag.insert("i".into(), Value::from(i));
        tag.insert("n".into(), Value::from(n));
        if *top > 0 {
            tag.insert("top".into(), Value::from(*top));
        }
        let raws = noncanonical_parts(m);
        if !raws.is_empty() {
            tag.insert("blocks".into(), Value::Array(raws));
        }
        m.meta_mut()
            .extra
            .insert(TAG_KEY.into(), Value::Object(tag));
    }
    let mut members: Vec<Message> = members.into_iter().map(|(m, _)| m).collect();
    if rebuild(&members) != original {
        let tag = members[0]
            .meta_mut()
            .extra
            .get_mut(TAG_KEY)
            .and_then(Value::as_object_mut);
        if let Some(tag) = tag {
            tag.insert("raw".into(), Value::String(original.to_owned()));
        }
    }
    Ok(members)
}

/// Writes messages as Anthropic JSONL, one message a line, `\n`-terminated.
pub fn to_jsonl(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in to_messages(messages) {
        out.push_str(&m);
        out.push('\n');
    }
    out
}

/// The Anthropic messages the transcript stands for, each as JSON text (what is sent, in
/// order, as the request's `messages`).
pub fn to_messages(messages: &[Message]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let end = group_end(messages, i);
        let group = &messages[i..end];
        out.push(match original(group) {
            Some(raw) => raw,
            None => rebuild(group),
        });
        i = end;
    }
    out
}

/// The end of the group that starts at `start`: the messages with the same tag, or, untagged,
/// a run of tool messages and the user message right after it.
fn group_end(messages: &[Message], start: usize) -> usize {
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
fn original(group: &[Message]) -> Option<String> {
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
fn rebuild(group: &[Message]) -> String {
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
fn noncanonical_parts(m: &Message) -> Vec<Value> {
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

/// The assistant message of a reply with `tool_use` blocks (and the number of top-level
/// extras, always 0 here: they are the message's own extra fields).
fn assistant(
    role_raw: &RawValue,
    blocks: &[Box<RawValue>],
    extras: &[&(String, Box<RawValue>)],
) -> Result<(Message, usize)> {
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    for raw in blocks {
        let b = object(raw.get())?;
        if block_type(&b)? == Some("tool_use") {
            calls.push(tool_call(&b)?);
        } else {
            parts.push(raw.get());
        }
    }
    let mut json = String::from("{\"role\":");
    json.push_str(role_raw.get());
    json.push_str(",\"content\":[");
    json.push_str(&parts.join(","));
    json.push_str("],\"tool_calls\":[");
    json.push_str(&calls.join(","));
    json.push(']');
    push_fields(&mut json, extras.iter().map(|(k, v)| (k.as_str(), v.get())));
    json.push('}');
    Ok((Message::from_json(&json)?, 0))
}

/// A call as chat JSON text: the block's `input` text verbatim as the arguments string.
fn tool_call(b: &[(String, Box<RawValue>)]) -> Result<String> {
    let get = |key: &str| b.iter().find(|(k, _)| k == key).map(|(_, v)| v.get());
    let id = get("id").ok_or(Error::InvalidField {
        field: "id",
        expected: "a tool_use block must have an id",
    })?;
    let name = get("name").ok_or(Error::InvalidField {
        field: "name",
        expected: "a tool_use block must have a name",
    })?;
    for (field, raw) in [("id", id), ("name", name)] {
        serde_json::from_str::<String>(raw).map_err(|_| Error::InvalidField {
            field,
            expected: "must be a string",
        })?;
    }
    let input = get("input").unwrap_or("{}");
    let mut json = String::from("{\"id\":");
    json.push_str(id);
    json.push_str(",\"type\":\"function\",\"function\":{\"name\":");
    json.push_str(name);
    json.push_str(",\"arguments\":");
    json.push_str(&json_str(input));
    json.push('}');
    push_fields(
        &mut json,
        b.iter()
            .filter(|(k, _)| !matches!(k.as_str(), "type" | "id" | "name" | "input"))
            .map(|(k, v)| (k.as_str(), v.get())),
    );
    json.push('}');
    Ok(json)
}

/// The messages of a user turn holding `tool_result` blocks: one tool message per result, and
/// one user message per run of other blocks. The top-level extras go on the first message.
fn user_with_results(
    blocks: &[Box<RawValue>],
    extras: &[&(String, Box<RawValue>)],
) -> Result<Vec<(Message, usize)>> {
    let mut out = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let top = |first: bool| -> Vec<(&str, &str)> {
        if first {
            extras.iter().map(|(k, v)| (k.as_str(), v.get())).collect()
        } else {
            Vec::new()
        }
    };
    let flush_run = |run: &mut Vec<&str>, out: &mut Vec<(Message, usize)>| -> Result<()> {
        if run.is_empty() {
            return Ok(());
        }
        let mut json = String::from("{\"role\":\"user\",\"content\":[");
        json.push_str(&run.join(","));
        json.push(']');
        push_fields(&mut json, top(out.is_empty()).into_iter());
        json.push('}');
        out.push((Message::from_json(&json)?, 0));
        run.clear();
        Ok(())
    };
    for raw in blocks {
        let b = object(raw.get())?;
        if block_type(&b)? != Some("tool_result") {
            run.push(raw.get());
            continue;
        }
        flush_run(&mut run, &mut out)?;
        let get = |key: &str| b.iter().find(|(k, _)| k == key).map(|(_, v)| v.get());
        let id = get("tool_use_id").ok_or(Error::InvalidField {
            field: "tool_use_id",
            expected: "a tool_result block must have a tool_use_id",
        })?;
        serde_json::from_str::<String>(id).map_err(|_| Error::InvalidField {
            field: "tool_use_id",
            expected: "must be a string",
        })?;
        let mut json = String::from("{\"role\":\"tool\",\"tool_call_id\":");
        json.push_str(id);
        if let Some(c) = get("content") {
            json.push_str(",\"content\":");
            json.push_str(c);
        }
        let own: Vec<(&str, &str)> = b
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "type" | "tool_use_id" | "content"))
            .map(|(k, v)| (k.as_str(), v.get()))
            .collect();
        let top_fields = top(out.is_empty());
        let n_top = top_fields.len();
        push_fields(&mut json, own.into_iter().chain(top_fields));
        json.push('}');
        out.push((Message::from_json(&json)?, n_top));
    }
    flush_run(&mut run, &mut out)?;
    Ok(out)
}

fn push_fields<'a>(json: &mut String, fields: impl Iterator<Item = (&'a str, &'a str)>) {
    for (k, v) in fields {
        json.push(',');
        json.push_str(&json_str(k));
        json.push(':');
        json.push_str(v);
    }
}

fn has_type(blocks: &[Box<RawValue>], kind: &str) -> Result<bool> {
    for raw in blocks {
        if block_type(&object(raw.get())?)? == Some(kind) {
            return Ok(true);
        }
    }
    Ok(false)
}

fn block_type(b: &[(String, Box<RawValue>)]) -> Result<Option<&'static str>> {
    let Some((_, raw)) = b.iter().find(|(k, _)| k == "type") else {
        return Ok(None);
    };
    let t: String = serde_json::from_str(raw.get()).map_err(|_| Error::InvalidField {
        field: "type",
        expected: "a content block's type must be a string",
    })?;
    Ok(match t.as_str() {
        "tool_use" => Some("tool_use"),
        "tool_result" => Some("tool_result"),
        _ => Some("other"),
    })
}

/// `json` without the whitespace outside its strings.
fn compact_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn json_error(e: &serde_json::Error) -> Error {
    Error::Json {
        column: e.column(),
        reason: match e.classify() {
            serde_json::error::Category::Io => "I/O error",
            serde_json::error::Category::Syntax => "syntax error",
            serde_json::error::Category::Data => "data error",
            serde_json::error::Category::Eof => "unexpected end of input",
        },
    }
}

/// A JSON object's fields in order, with their raw values; an error for anything else.
fn object(json: &str) -> Result<Vec<(String, Box<RawValue>)>> {
    match serde_json::from_str::<Fields>(json).map_err(|e| json_error(&e))? {
        Fields::Object(f) => Ok(f),
        Fields::Other(found) => Err(Error::NotAnObject { found }),
    }
}

enum Fields {
    Object(Vec<(String, Box<RawValue>)>),
    Other(&'static str),
}

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Fields, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Fields, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                    out.push((k, v));
                }
                Ok(Fields::Object(out))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Fields, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(Fields::Other("an array"))
            }
            fn visit_str<E>(self, _: &str) -> std::result::Result<Fields, E> {
                Ok(Fields::Other("a string"))
            }
            fn visit_bool<E>(self, _: bool) -> std::result::Result<Fields, E> {
                Ok(Fields::Other("a boolean"))
            }
            fn visit_i64<E>(self, _: i64) -> std::result::Result<Fields, E> {
                Ok(Fields::Other("a number"))
            }
            fn visit_u64<E>(self, _: u64) -> std::result::Result<Fields, E> {
                Ok(Fields::Other("a number"))
            }
            fn visit_f64<E>(self, _: f64) -> std::result::Result<Fields, E> {
                Ok(Fields::Other("a number"))
            }
            fn visit_unit<E>(self) -> std::result::Result<Fields, E> {
                Ok(Fields::Other("null"))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_blocks_fields_and_odd_spacing_round_trip() {
        let lines = [
            r#"{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}],"id":"u1"}"#,
            r#"{ "role" : "assistant", "content" : [ {"type":"thinking","thinking":"caf\u00e9","signature":"c2ln"}, {"type":"server_tool_use","id":"s1","name":"web_search","input":{"q":"x"}}, {"type":"tool_use","id":"t1","name":"sh","input":{ "cmd" : "ls" },"cache_control":{"type":"ephemeral"}} ], "model":"m" }"#,
            r#"{"content":[{"tool_use_id":"t1","type":"tool_result","is_error":true,"content":[{"type":"text","text":"no"}]}],"role":"user","ts":3}"#,
            r#"{"role":"assistant","content":"done"}"#,
        ];
        let text = lines.join("\n") + "\n";
        let msgs = parse(&text).unwrap();
        assert_eq!(to_jsonl(&msgs), text);
        assert_eq!(
            msgs[1].tool_calls()[0].function.arguments,
            r#"{ "cmd" : "ls" }"#
        );
        assert_eq!(msgs[2].tool_call_id(), Some("t1"));
    }

    #[test]
    fn a_pretty_printed_array_writes_one_line_per_message() {
        let array = "[\n  {\n    \"role\": \"user\",\n    \"content\": \"a b\"\n  },\n  {\"role\":\"assistant\",\n   \"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"x\",\"input\":{\n \"k\": \"v w\"}}]},\n  {\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"r\"}]}\n]";
        let msgs = parse(array).unwrap();
        let out = to_jsonl(&msgs);
        assert_eq!(
            out,
            concat!(
                r#"{"role":"user","content":"a b"}"#,
                "\n",
                r#"{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"x","input":{"k":"v w"}}]}"#,
                "\n",
                r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}"#,
                "\n",
            )
        );
        assert_eq!(to_jsonl(&parse(&out).unwrap()), out);
    }

    #[test]
    fn errors_name_the_place_never_the_text() {
        let e = parse("{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"name\":\"secret\"}]}\n").unwrap_err();
        assert_eq!(e.location(), Some(Location::Line(2)));
        assert!(!e.to_string().contains("secret"), "{e}");
        let e = parse(
            "[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"content\":\"secret\"}]}]",
        )
        .unwrap_err();
        assert_eq!(e.location(), Some(Location::Index(0)));
        assert!(e.to_string().contains("tool_use_id"), "{e}");
        let e = parse("{\"content\":\"secret\"}").unwrap_err();
        assert!(e.to_string().contains("no `role`"), "{e}");
        let e = parse("{\"role\":\"user\",\"content\":[\"secret\"]}\n{\"role\":\"assistant\",\"content\":[1]}").unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
    }
}

/// Generators of Anthropic-shaped transcripts (feature `proptest`), for downstream property
/// tests of code that reads or writes the dialect.
///
/// ```
/// use compaction_core::anthropic::{self, strategies};
/// use proptest::prelude::*;
///
/// proptest!(ProptestConfig::with_cases(8), |(lines in strategies::transcript())| {
///     let text = lines.join("\n") + "\n";
///     let messages = anthropic::parse(&text).unwrap();
///     prop_assert_eq!(anthropic::to_jsonl(&messages), text);
/// });
/// ```
#[cfg(feature = "proptest")]
pub mod strategies {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// Text with the characters that stress escaping and token estimates.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z ]{1,40}",
            "[a-z]{1,8}( [a-z]{1,8}){0,60}",
            Just("café \"quoted\" \\ back\nslash\ttab".to_owned()),
            Just("日本語のテキスト、한국어 텍스트".to_owned()),
            (1usize..40).prop_map(|n| "output line\n".repeat(n * 10)),
        ]
    }

    fn cache_control() -> impl Strategy<Value = Option<Value>> {
        prop_oneof![3 => Just(None), 1 => Just(Some(json!({"type": "ephemeral"})))]
    }

    fn with_cache(mut block: Value, cc: Option<Value>) -> Value {
        if let (Some(cc), Some(obj)) = (cc, block.as_object_mut()) {
            obj.insert("cache_control".into(), cc);
        }
        block
    }

    /// A `thinking` block with a signature, or a `redacted_thinking` block.
    fn thinking() -> impl Strategy<Value = Value> {
        prop_oneof![
            (text(), "[A-Za-z0-9+/]{16,64}").prop_map(
                |(t, s)| json!({"type": "thinking", "thinking": t, "signature": format!("{s}==")})
            ),
            "[A-Za-z0-9+/]{16,64}".prop_map(|d| json!({"type": "redacted_thinking", "data": d})),
        ]
    }

    /// One tool round: the assistant's reply (optional thinking and text, 1-3 calls) and the
    /// user turn with the results (optionally followed by a text block).
    fn round(n: usize) -> impl Strategy<Value = (Value, Value)> {
        (
            proptest::option::of(thinking()),
            proptest::option::of(text()),
            proptest::collection::vec((text(), text(), any::<bool>(), cache_control()), 1..4),
            proptest::option::of(text()),
        )
            .prop_map(move |(think, say, calls, after)| {
                let mut reply = Vec::new();
                reply.extend(think);
                if let Some(say) = say {
                    reply.push(json!({"type": "text", "text": say}));
                }
                let mut results = Vec::new();
                for (k, (arg, out, error, cc)) in calls.into_iter().enumerate() {
                    let id = format!("toolu_{n:03}_{k}");
                    reply.push(json!({"type": "tool_use", "id": id, "name": "bash", "input": {"command": arg}}));
                    let mut r = json!({"type": "tool_result", "tool_use_id": id, "content": out});
                    if error {
                        r["is_error"] = Value::Bool(true);
                    }
                    results.push(with_cache(r, cc));
                }
                if let Some(after) = after {
                    results.push(json!({"type": "text", "text": after}));
                }
                (
                    json!({"role": "assistant", "content": reply}),
                    json!({"role": "user", "content": results}),
                )
            })
    }

    /// A user turn: a string, or text blocks (with an optional mark and image).
    fn user_turn() -> impl Strategy<Value = Value> {
        prop_oneof![
            text().prop_map(|t| json!({"role": "user", "content": t})),
            (text(), cache_control(), any::<bool>()).prop_map(|(t, cc, image)| {
                let mut blocks = vec![with_cache(json!({"type": "text", "text": t}), cc)];
                if image {
                    blocks.push(json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}));
                }
                json!({"role": "user", "content": blocks})
            }),
        ]
    }

    /// A valid Anthropic transcript as JSON lines: turns of a user message, tool rounds and a
    /// closing reply (thinking optional). About one line in five escapes its non-ASCII text
    /// (`\u00e9`), as some writers do, so the byte-exact paths are exercised too.
    pub fn transcript() -> impl Strategy<Value = Vec<String>> {
        proptest::collection::vec(
            (
                user_turn(),
                proptest::collection::vec(round(0), 0..4),
                proptest::option::of(thinking()),
                text(),
            ),
            1..10,
        )
        .prop_flat_map(|turns| {
            let n = turns.iter().map(|t| t.1.len() * 2 + 2).sum::<usize>();
            (Just(turns), proptest::collection::vec(0u8..5, n))
        })
        .prop_map(|(turns, escapes)| {
            let mut values = Vec::new();
            let mut round_no = 0;
            for (user, rounds, think, close) in turns {
                values.push(user);
                for (reply, results) in rounds {
                    // Unique ids across the transcript.
                    let renumber = |v: &Value| {
                        let s = v
                            .to_string()
                            .replace("toolu_000_", &format!("toolu_{round_no:03}_"));
                        serde_json::from_str::<Value>(&s).unwrap_or(Value::Null)
                    };
                    values.push(renumber(&reply));
                    values.push(renumber(&results));
                    round_no += 1;
                }
                let mut blocks = Vec::new();
                blocks.extend(think);
                blocks.push(json!({"type": "text", "text": close}));
                values.push(json!({"role": "assistant", "content": blocks}));
            }
            values
                .iter()
                .zip(escapes.iter().chain(std::iter::repeat(&1)))
                .map(|(v, &e)| {
                    let s = v.to_string();
                    if e == 0 { escape_non_ascii(&s) } else { s }
                })
                .collect()
        })
    }

    /// JSON text with every non-ASCII character written as `\uXXXX` (valid: such characters
    /// occur only inside strings).
    fn escape_non_ascii(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            if c.is_ascii() {
                out.push(c);
            } else {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
        out
    }
}
