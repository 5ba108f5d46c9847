//! Lossless conversion between rig's [`Message`](RigMessage) and the library's [`Message`].
//!
//! rig's messages are content blocks much like Anthropic's, so the conversion goes through
//! the library's Anthropic dialect ([`compaction_core::anthropic`]) rather than a parallel
//! one: a rig message is written as one Anthropic message and read with
//! [`anthropic::parse_message`] (tool calls become `tool_calls`, tool results `tool`
//! messages, so every law applies), and the library's messages are written back with
//! [`anthropic::to_messages`] and read as rig messages. What the dialect does for thinking
//! blocks is what happens to rig's reasoning: a [`Reasoning`] block holding Anthropic's signed
//! `thinking` (or `redacted_thinking`) item as its provider item becomes that very block, byte
//! for byte, which no pass reads or rewrites.
//!
//! What Anthropic's blocks cannot say (a tool result's tool name, a rig-issued call id,
//! `is_error`, provider items and citations, the turn's origin and stop reason, which blocks
//! formed one rig message) travels in a `"rig"` field of the block (or of the assistant
//! message); media without an Anthropic form, reasoning that is not Anthropic's and any other
//! block are kept whole as a `{"type":"rig","block":…}` block, which the dialect keeps in place
//! and no pass reads. So [`to_rig`]`(`[`from_rig`]`(m)) == m` for every rig transcript.
//!
//! The other way, a transcript written by another dialect (OpenAI chat) converts to rig's form
//! and back to an equivalent one: the same roles, texts, call ids, names, arguments (as JSON
//! values) and results; the bytes of the second trip are the first's.
//!
//! ```
//! use hermes_compaction_rig::convert::{from_rig, to_rig};
//! use rig_core::completion::{AssistantContent, Message};
//! use rig_core::message::{ToolName, ToolResultContent};
//! use serde_json::json;
//!
//! let call = AssistantContent::tool_call("toolu_1", ToolName::new("bash")?, json!({"cmd": "ls"}));
//! let AssistantContent::ToolCall(c) = &call else { unreachable!() };
//! let rig = vec![
//!     Message::user("list the files"),
//!     Message::from(vec![AssistantContent::text("Listing."), call.clone()]),
//!     Message::tool_results(vec![c.result(vec![ToolResultContent::text("a.txt")])]),
//! ];
//! let ours = from_rig(&rig)?;
//! let roles: Vec<&str> = ours.iter().map(|m| m.role().as_str()).collect();
//! assert_eq!(roles, ["user", "assistant", "tool"]);
//! assert_eq!(ours[2].tool_call_id(), Some("toolu_1"));
//! assert_eq!(to_rig(&ours)?, rig);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;

use compaction_core::{Message, anthropic};
use rig_core::completion::Message as RigMessage;
use rig_core::completion::message::{
    AssistantContent, AssistantMessage, Image, ImageDetail, ImageMediaType, MimeType, Opaque,
    Reasoning, ToolName, ToolResultContent, UserContent,
};
use serde_json::{Map, Value, json};

use crate::{Error, Result};

/// The library's messages for a rig transcript, in order (a rig message with tool results
/// becomes one `tool` message per result and a user message per run of other blocks).
///
/// # Errors
///
/// [`Error::Convert`] naming the rig message (never its content) when the dialect refuses it.
pub fn from_rig(messages: &[RigMessage]) -> Result<Vec<Message>> {
    let mut out = Vec::with_capacity(messages.len());
    for (index, m) in messages.iter().enumerate() {
        let json = encode_message(m);
        let text = serde_json::to_string(&json).map_err(|_| Error::convert(index, "not JSON"))?;
        let members = anthropic::parse_message(index, &text)
            .map_err(|e| Error::convert(index, &e.to_string()))?;
        out.extend(members);
    }
    Ok(out)
}

/// The rig messages a transcript of the library stands for, in order: the inverse of
/// [`from_rig`], and also what a transcript of another dialect (a summary, an imported
/// OpenAI chat session) reads as.
///
/// # Errors
///
/// [`Error::Convert`] naming the message index (never its content) for what rig cannot hold:
/// a role other than system, user, assistant and tool, a tool result that names no tool and
/// answers no call before it, a call without an id, a content block of a kind rig has no
/// place for.
pub fn to_rig(messages: &[Message]) -> Result<Vec<RigMessage>> {
    let mut out = Vec::new();
    let mut names: HashMap<String, ToolName> = HashMap::new();
    for range in groups(messages) {
        let start = range.start;
        let json = merged(&anthropic::to_messages(&messages[range])).ok_or(Error::Convert {
            index: start,
            reason: "the dialect wrote no message".into(),
        })?;
        out.push(decode_message(start, &json, &mut names)?);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// rig -> Anthropic-shaped JSON

/// Keys of a block the dialect reads itself; everything rig adds goes under this one.
const RIG: &str = "rig";

fn encode_message(m: &RigMessage) -> Value {
    match m {
        RigMessage::System { content } => json!({"role": "system", "content": content}),
        RigMessage::User { content } => {
            let content = match content.as_slice() {
                [UserContent::Text(t)] if plain_text(t) => Value::String(t.text.clone()),
                blocks => Value::Array(user_blocks(blocks)),
            };
            json!({"role": "user", "content": content})
        }
        RigMessage::Assistant(a) => {
            let content = match a.content.as_slice() {
                [AssistantContent::Text(t)]
                    if plain_text(t) && a.origin.is_none() && a.stop.is_none() =>
                {
                    Value::String(t.text.clone())
                }
                blocks => Value::Array(blocks.iter().map(assistant_block).collect()),
            };
            let mut out = Map::new();
            out.insert("role".into(), "assistant".into());
            out.insert("content".into(), content);
            let mut rig = Map::new();
            if let Some(origin) = &a.origin {
                rig.insert("origin".into(), to_value(origin));
            }
            if let Some(stop) = &a.stop {
                rig.insert("stop".into(), to_value(stop));
            }
            // The dialect moves tool calls after the other blocks; where they stood is kept
            // when that is not already so.
            let calls: Vec<usize> = a
                .content
                .iter()
                .enumerate()
                .filter(|(_, b)| matches!(b, AssistantContent::ToolCall(_)))
                .map(|(i, _)| i)
                .collect();
            let trailing = calls
                .iter()
                .enumerate()
                .all(|(k, &i)| i == a.content.len() - calls.len() + k);
            if !trailing {
                rig.insert("calls_at".into(), to_value(&calls));
            }
            if !rig.is_empty() {
                out.insert(RIG.into(), Value::Object(rig));
            }
            Value::Object(out)
        }
    }
}

fn to_value(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A text block with nothing but its text.
fn plain_text(t: &rig_core::completion::message::Text) -> bool {
    rest_of(to_value(t), &["text"]).is_empty()
}

/// The fields of a serialized rig value other than `keys` (and its `type` tag).
fn rest_of(v: Value, keys: &[&str]) -> Map<String, Value> {
    match v {
        Value::Object(mut o) => {
            o.remove("type");
            for k in keys {
                o.remove(*k);
            }
            o
        }
        _ => Map::new(),
    }
}

fn with_rig(mut block: Map<String, Value>, rig: Map<String, Value>) -> Value {
    if !rig.is_empty() {
        block.insert(RIG.into(), Value::Object(rig));
    }
    Value::Object(block)
}

fn obj(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// A block kept whole in rig's own serialization.
fn whole(v: Value) -> Value {
    json!({"type": RIG, "block": v})
}

fn text_block(t: &rig_core::completion::message::Text) -> Value {
    with_rig(
        obj(&[("type", "text".into()), ("text", t.text.clone().into())]),
        rest_of(to_value(t), &["text"]),
    )
}

fn user_blocks(blocks: &[UserContent]) -> Vec<Value> {
    // Which members the dialect will make of this message: runs of other blocks and one per
    // tool result. The first result records where it stands among them, so the message is
    // put back together from the store, which keeps bodies only.
    let mut members = 0usize;
    let mut before_first = None;
    let mut in_run = false;
    for b in blocks {
        if matches!(b, UserContent::ToolResult(_)) {
            before_first.get_or_insert(members);
            members += 1;
            in_run = false;
        } else if !in_run {
            members += 1;
            in_run = true;
        }
    }
    let mut first = true;
    blocks
        .iter()
        .map(|b| match b {
            UserContent::Text(t) => text_block(t),
            UserContent::ToolResult(r) => {
                let mut rig = Map::new();
                rig.insert("name".into(), r.name.as_str().into());
                if r.call.is_local() {
                    rig.insert("local".into(), true.into());
                }
                if std::mem::take(&mut first) {
                    rig.insert("group".into(), json!([before_first.unwrap_or(0), members]));
                }
                let content = match r.content.as_slice() {
                    [ToolResultContent::Text(t)] if plain_text(t) => Value::String(t.text.clone()),
                    parts => Value::Array(parts.iter().map(result_part).collect()),
                };
                let mut block = obj(&[
                    ("type", "tool_result".into()),
                    ("tool_use_id", r.call.wire().into_owned().into()),
                    ("content", content),
                ]);
                if r.is_error {
                    block.insert("is_error".into(), true.into());
                }
                with_rig(block, rig)
            }
            UserContent::Image(i) => image_block(i).unwrap_or_else(|| whole(to_value(b))),
            UserContent::Document(d) => {
                let full = to_value(d);
                match source(&d.data, d.media_type.as_ref().map(MimeType::to_mime_type)) {
                    Some((src, took_media)) => {
                        let keys: &[&str] = if took_media {
                            &["data", "media_type"]
                        } else {
                            &["data"]
                        };
                        with_rig(
                            obj(&[("type", "document".into()), ("source", src)]),
                            rest_of(full, keys),
                        )
                    }
                    None => whole(to_value(b)),
                }
            }
            UserContent::Audio(_) | UserContent::Video(_) => whole(to_value(b)),
        })
        .collect()
}

fn result_part(p: &ToolResultContent) -> Value {
    match p {
        ToolResultContent::Text(t) => text_block(t),
        ToolResultContent::Image(i) => image_block(i).unwrap_or_else(|| whole(to_value(p))),
        ToolResultContent::Json { value } => json!({
            "type": "text",
            "text": value.to_string(),
            RIG: {"json": true},
        }),
    }
}

/// An Anthropic source for rig data, and whether it holds the media type.
fn source(
    data: &rig_core::completion::message::DocumentSourceKind,
    media_type: Option<&str>,
) -> Option<(Value, bool)> {
    use rig_core::completion::message::DocumentSourceKind as K;
    Some(match (data, media_type) {
        (K::Base64(d), Some(mt)) => (json!({"type": "base64", "media_type": mt, "data": d}), true),
        (K::Url(u), _) => (json!({"type": "url", "url": u}), false),
        (K::FileId(f), _) => (json!({"type": "file", "file_id": f}), false),
        _ => return None,
    })
}

fn image_block(i: &Image) -> Option<Value> {
    let (src, took_media) = source(&i.data, i.media_type.as_ref().map(MimeType::to_mime_type))?;
    let keys: &[&str] = if took_media {
        &["data", "media_type"]
    } else {
        &["data"]
    };
    Some(with_rig(
        obj(&[("type", "image".into()), ("source", src)]),
        rest_of(to_value(i), keys),
    ))
}

/// Block types the dialect or this module gives a meaning to: an opaque provider item of
/// one of these types is kept whole instead, so it never reads back as something else.
const KNOWN: [&str; 8] = [
    "text",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "image",
    "document",
    RIG,
];

fn assistant_block(b: &AssistantContent) -> Value {
    match b {
        AssistantContent::Text(t) => text_block(t),
        AssistantContent::ToolCall(c) => {
            let mut rig = rest_of(to_value(c), &["id", "function"]);
            if c.id.is_local() {
                rig.insert("local".into(), true.into());
            }
            if let Some(invalid) = &c.function.invalid_arguments {
                rig.insert("invalid_arguments".into(), invalid.clone().into());
            }
            with_rig(
                obj(&[
                    ("type", "tool_use".into()),
                    ("id", c.id.wire().into_owned().into()),
                    ("name", c.function.name.as_str().into()),
                    ("input", c.function.arguments_value()),
                ]),
                rig,
            )
        }
        AssistantContent::Reasoning(r) => match signed_item(r) {
            Some(item) => item.clone(),
            None => whole(to_value(b)),
        },
        AssistantContent::Image(i) => image_block(i).unwrap_or_else(|| whole(to_value(b))),
        AssistantContent::Opaque(o) => {
            let kind = o.kind();
            if o.replay && kind.is_some_and(|k| !KNOWN.contains(&k)) {
                o.item.clone()
            } else {
                whole(to_value(b))
            }
        }
        _ => whole(to_value(b)),
    }
}

/// The Anthropic thinking block a reasoning block was decoded from, when it reads back as
/// exactly this block (current provider item, same text and redaction).
fn signed_item(r: &Reasoning) -> Option<&Value> {
    let native = r.native.as_ref()?;
    let decoded = reasoning_of(&native.item)?;
    (AssistantContent::Reasoning(decoded) == AssistantContent::Reasoning(r.clone()))
        .then_some(&native.item)
}

/// The reasoning block for an Anthropic `thinking` or `redacted_thinking` block: its text,
/// and the block itself as the provider item, verbatim.
fn reasoning_of(item: &Value) -> Option<Reasoning> {
    let (text, redacted) = match item.get("type")?.as_str()? {
        "thinking" => (item.get("thinking")?.as_str()?.to_owned(), false),
        "redacted_thinking" => (String::new(), true),
        _ => return None,
    };
    let block = AssistantContent::Reasoning(Reasoning {
        text,
        redacted,
        native: None,
    })
    .with_native(item.clone());
    match block {
        AssistantContent::Reasoning(r) => Some(r),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// The library's messages -> rig

/// The library's messages, grouped as rig messages: a tool result whose `rig` field records
/// its group (members before it, members in all) opens that group when the messages it names
/// are still there, as they were; any other run of tool messages is one rig message, and
/// every other message one of its own.
fn groups(messages: &[Message]) -> Vec<std::ops::Range<usize>> {
    let recorded: HashMap<usize, usize> = messages
        .iter()
        .enumerate()
        .filter_map(|(j, m)| {
            let (before, total) = recorded_group(m)?;
            let start = j.checked_sub(before)?;
            let end = start.checked_add(total)?;
            let fits = end <= messages.len()
                && end > j
                && messages[start..end].iter().enumerate().all(|(k, m)| {
                    let at = start + k;
                    (m.is_tool() && (at >= j))
                        || (m.is_user() && m.marker_kind().is_none() && at != j)
                })
                && messages[start..j].iter().all(|m| !m.is_tool());
            fits.then_some((start, end))
        })
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let end = match recorded.get(&i) {
            Some(&end) => end,
            None if messages[i].is_tool() => {
                let mut end = i + 1;
                while end < messages.len()
                    && messages[end].is_tool()
                    && !recorded.contains_key(&end)
                {
                    end += 1;
                }
                end
            }
            None => i + 1,
        };
        out.push(i..end);
        i = end;
    }
    out
}

fn recorded_group(m: &Message) -> Option<(usize, usize)> {
    if !m.is_tool() {
        return None;
    }
    let (_, raw) = m.extra_fields().find(|(k, _)| *k == RIG)?;
    let rig: Value = serde_json::from_str(raw).ok()?;
    let g = rig.get("group")?.as_array()?;
    let before = usize::try_from(g.first()?.as_u64()?).ok()?;
    let total = usize::try_from(g.get(1)?.as_u64()?).ok()?;
    Some((before, total))
}

/// One Anthropic message from the dialect's messages for one group (one message, or the
/// user messages of one turn, whose blocks are joined in order).
fn merged(parts: &[String]) -> Option<Value> {
    let mut iter = parts
        .iter()
        .filter_map(|p| serde_json::from_str::<Value>(p).ok());
    let mut first = iter.next()?;
    for next in iter {
        let blocks = content_blocks(next.get("content"));
        let mut have = content_blocks(first.get("content"));
        have.extend(blocks);
        if let Some(o) = first.as_object_mut() {
            o.insert("content".into(), Value::Array(have));
        }
    }
    Some(first)
}

fn content_blocks(c: Option<&Value>) -> Vec<Value> {
    match c {
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    }
}

fn decode_message(
    index: usize,
    json: &Value,
    names: &mut HashMap<String, ToolName>,
) -> Result<RigMessage> {
    let role = json
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::convert(index, "no role"))?;
    let content = json.get("content");
    match role {
        "system" | "developer" => {
            let text = match content {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(blocks)) => {
                    let mut s = String::new();
                    for b in blocks {
                        match (b.get("type").and_then(Value::as_str), b.get("text")) {
                            (Some("text"), Some(Value::String(t))) => s.push_str(t),
                            _ => {
                                return Err(Error::convert(
                                    index,
                                    "a system message holds a block other than text",
                                ));
                            }
                        }
                    }
                    s
                }
                None | Some(Value::Null) => String::new(),
                Some(_) => return Err(Error::convert(index, "content is not text or blocks")),
            };
            Ok(RigMessage::System { content: text })
        }
        "user" => {
            let blocks = blocks_of(index, content)?;
            let mut out = Vec::with_capacity(blocks.len());
            for b in &blocks {
                out.push(user_content(index, b, names)?);
            }
            Ok(RigMessage::User { content: out })
        }
        "assistant" => {
            let blocks = blocks_of(index, content)?;
            let mut out = Vec::with_capacity(blocks.len());
            for b in &blocks {
                let block = assistant_content(index, b)?;
                if let AssistantContent::ToolCall(c) = &block {
                    names.insert(c.id.wire().into_owned(), c.function.name.clone());
                }
                out.push(block);
            }
            if let Some(at) = json.get(RIG).and_then(|r| r.get("calls_at")) {
                let at: Vec<usize> = de(index, at.clone(), "where the turn's calls stood")?;
                out = interleave(out, &at);
            }
            let mut a = AssistantMessage::new(out);
            if let Some(rig) = json.get(RIG) {
                if let Some(origin) = rig.get("origin") {
                    a.origin = Some(de(index, origin.clone(), "the turn's origin")?);
                }
                if let Some(stop) = rig.get("stop") {
                    a.stop = Some(de(index, stop.clone(), "the turn's stop reason")?);
                }
            }
            Ok(RigMessage::Assistant(a))
        }
        _ => Err(Error::convert(
            index,
            "the role is not system, user, assistant or tool",
        )),
    }
}

/// `blocks` with its tool calls (in their order) at the positions `at` and the other blocks
/// (in theirs) around them; unchanged when `at` does not fit (a pass changed the calls).
fn interleave(blocks: Vec<AssistantContent>, at: &[usize]) -> Vec<AssistantContent> {
    let n = blocks.len();
    let (mut calls, mut rest): (Vec<_>, Vec<_>) = blocks
        .into_iter()
        .partition(|b| matches!(b, AssistantContent::ToolCall(_)));
    let fits = calls.len() == at.len()
        && at.windows(2).all(|w| w[0] < w[1])
        && at.last().is_none_or(|&i| i < n);
    if !fits {
        rest.append(&mut calls);
        return rest;
    }
    let mut calls = calls.into_iter();
    let mut rest = rest.into_iter();
    (0..n)
        .filter_map(|i| {
            if at.contains(&i) {
                calls.next()
            } else {
                rest.next()
            }
        })
        .collect()
}

fn de<T: serde::de::DeserializeOwned>(index: usize, v: Value, what: &str) -> Result<T> {
    serde_json::from_value(v).map_err(|_| Error::convert(index, &format!("{what} does not read")))
}

fn blocks_of(index: usize, content: Option<&Value>) -> Result<Vec<Value>> {
    match content {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![json!({"type": "text", "text": s})]),
        Some(Value::Array(a)) => Ok(a.clone()),
        Some(_) => Err(Error::convert(index, "content is not text or blocks")),
    }
}

fn block_type(b: &Value) -> Option<&str> {
    b.get("type").and_then(Value::as_str)
}

/// A block's `rig` field, as an object (empty when absent).
fn rig_of(b: &Value) -> Map<String, Value> {
    b.get(RIG)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn text_of(index: usize, b: &Value) -> Result<rig_core::completion::message::Text> {
    let mut o = rig_of(b);
    let text = b
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::convert(index, "a text block without text"))?;
    o.insert("text".into(), text.into());
    de(index, Value::Object(o), "a text block")
}

fn user_content(index: usize, b: &Value, names: &HashMap<String, ToolName>) -> Result<UserContent> {
    match block_type(b) {
        Some("text") => Ok(UserContent::Text(text_of(index, b)?)),
        Some("image") => Ok(UserContent::Image(image_of(index, b)?)),
        Some("image_url") => Ok(UserContent::Image(image_url(index, b)?)),
        Some("document") => {
            let mut o = rig_of(b);
            let src = b
                .get("source")
                .ok_or_else(|| Error::convert(index, "a document block without a source"))?;
            source_fields(index, src, &mut o)?;
            Ok(UserContent::Document(de(
                index,
                Value::Object(o),
                "a document block",
            )?))
        }
        Some("tool_result") => {
            let rig = rig_of(b);
            let id = b
                .get("tool_use_id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .ok_or_else(|| Error::convert(index, "a tool result without a call id"))?;
            let name = match rig.get("name") {
                Some(n) => de(index, n.clone(), "a tool result's tool name")?,
                None => names.get(id).cloned().ok_or_else(|| {
                    Error::convert(
                        index,
                        "a tool result names no tool and answers no call before it",
                    )
                })?,
            };
            let call = call_id(index, id, rig.get("local").and_then(Value::as_bool))?;
            let content = match b.get("content") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::String(s)) => vec![ToolResultContent::text(s.clone())],
                Some(Value::Array(parts)) => parts
                    .iter()
                    .map(|p| result_content(index, p))
                    .collect::<Result<_>>()?,
                Some(_) => return Err(Error::convert(index, "a tool result's content")),
            };
            Ok(UserContent::ToolResult(
                rig_core::completion::message::ToolResult {
                    call,
                    name,
                    content,
                    is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                },
            ))
        }
        Some(RIG) => whole_of(index, b),
        _ => Err(Error::convert(
            index,
            "a user block of a kind rig has no place for",
        )),
    }
}

fn result_content(index: usize, p: &Value) -> Result<ToolResultContent> {
    match block_type(p) {
        Some("text") => {
            let json_text = rig_of(p).get("json").and_then(Value::as_bool) == Some(true);
            let text = text_of(index, p)?;
            if json_text && let Ok(value) = serde_json::from_str(&text.text) {
                return Ok(ToolResultContent::Json { value });
            }
            Ok(ToolResultContent::Text(text))
        }
        Some("image") => Ok(ToolResultContent::Image(image_of(index, p)?)),
        Some("image_url") => Ok(ToolResultContent::Image(image_url(index, p)?)),
        Some(RIG) => whole_of(index, p),
        _ => Err(Error::convert(
            index,
            "a tool result part of a kind rig has no place for",
        )),
    }
}

fn assistant_content(index: usize, b: &Value) -> Result<AssistantContent> {
    match block_type(b) {
        Some("text") => Ok(AssistantContent::Text(text_of(index, b)?)),
        Some("tool_use") => {
            let mut rig = rig_of(b);
            let id = b
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .ok_or_else(|| Error::convert(index, "a tool call without an id"))?;
            let local = rig.remove("local").and_then(|v| v.as_bool());
            let mut function = Map::new();
            function.insert("name".into(), b.get("name").cloned().unwrap_or(Value::Null));
            function.insert(
                "arguments".into(),
                b.get("input").cloned().unwrap_or(Value::Null),
            );
            if let Some(invalid) = rig.remove("invalid_arguments") {
                function.insert("invalid_arguments".into(), invalid);
            }
            rig.insert("id".into(), to_value(&call_id(index, id, local)?));
            rig.insert("function".into(), Value::Object(function));
            Ok(AssistantContent::ToolCall(de(
                index,
                Value::Object(rig),
                "a tool call",
            )?))
        }
        Some("thinking" | "redacted_thinking") => reasoning_of(b)
            .map(AssistantContent::Reasoning)
            .ok_or_else(|| Error::convert(index, "a thinking block without its text")),
        Some("image") => Ok(AssistantContent::Image(image_of(index, b)?)),
        Some(RIG) => whole_of(index, b),
        // Any other provider block (server tool use, search results, …) is rig's opaque
        // provider item, kept as it is.
        Some(_) => Ok(AssistantContent::Opaque(Opaque {
            item: b.clone(),
            replay: true,
        })),
        None => Err(Error::convert(index, "a content block without a type")),
    }
}

fn whole_of<T: serde::de::DeserializeOwned>(index: usize, b: &Value) -> Result<T> {
    let v = b
        .get("block")
        .cloned()
        .ok_or_else(|| Error::convert(index, "a rig block without its block"))?;
    de(index, v, "a rig block")
}

fn call_id(
    index: usize,
    id: &str,
    local: Option<bool>,
) -> Result<rig_core::completion::message::CallId> {
    let v = if local == Some(true) {
        json!({"local": id})
    } else {
        json!({"provider": id})
    };
    de(index, v, "a call id")
}

/// The `data` and `media_type` of a rig image or document, from an Anthropic source.
fn source_fields(index: usize, src: &Value, o: &mut Map<String, Value>) -> Result<()> {
    let field = |k: &str| src.get(k).and_then(Value::as_str).map(str::to_owned);
    let (data, media) = match src.get("type").and_then(Value::as_str) {
        Some("base64") => (
            json!({"type": "base64", "value": field("data")}),
            field("media_type"),
        ),
        Some("url") => (json!({"type": "url", "value": field("url")}), None),
        Some("file") => (json!({"type": "fileId", "value": field("file_id")}), None),
        Some("text") => (
            json!({"type": "string", "value": field("data")}),
            field("media_type"),
        ),
        _ => return Err(Error::convert(index, "a media source of an unknown kind")),
    };
    o.entry("data").or_insert(data);
    if let Some(media) = media {
        let image = ImageMediaType::from_mime_type(&media).map(|m| to_value(&m));
        let document = rig_core::completion::message::DocumentMediaType::from_mime_type(&media)
            .map(|m| to_value(&m));
        if let Some(m) = image.or(document) {
            o.entry("media_type").or_insert(m);
        }
    }
    Ok(())
}

fn image_of(index: usize, b: &Value) -> Result<Image> {
    let mut o = rig_of(b);
    let src = b
        .get("source")
        .ok_or_else(|| Error::convert(index, "an image block without a source"))?;
    source_fields(index, src, &mut o)?;
    // An image's media type is an image type (a document's source may name others).
    if let Some(m) = o.get("media_type")
        && serde_json::from_value::<ImageMediaType>(m.clone()).is_err()
    {
        o.remove("media_type");
    }
    de(index, Value::Object(o), "an image block")
}

/// An OpenAI chat `image_url` part (an imported session): a URL, or a `data:` URL's base64.
fn image_url(index: usize, b: &Value) -> Result<Image> {
    let part = b.get("image_url");
    let url = part
        .and_then(|p| p.get("url").or(Some(p)))
        .and_then(Value::as_str)
        .ok_or_else(|| Error::convert(index, "an image_url part without a url"))?;
    let detail = part
        .and_then(|p| p.get("detail"))
        .and_then(Value::as_str)
        .and_then(|d| d.parse::<ImageDetail>().ok());
    let (data, media_type) = match url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"))
    {
        Some((mime, data)) => (
            rig_core::completion::message::DocumentSourceKind::base64(data),
            ImageMediaType::from_mime_type(mime),
        ),
        None => (
            rig_core::completion::message::DocumentSourceKind::url(url),
            None,
        ),
    };
    Ok(Image {
        data,
        media_type,
        detail,
        native: None,
    })
}
