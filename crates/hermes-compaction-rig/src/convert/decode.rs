//! The library's messages -> rig: the Anthropic messages
//! [`anthropic::to_messages`](compaction_anthropic::to_messages) writes, grouped as rig
//! messages and read back as rig's blocks.

use std::collections::HashMap;

use compaction_core::Message;
use rig_core::completion::Message as RigMessage;
use rig_core::completion::message::{
    AssistantContent, AssistantMessage, Image, ImageDetail, ImageMediaType, MimeType, Opaque,
    ToolName, ToolResultContent, UserContent,
};
use serde_json::{Map, Value, json};

use super::{RIG, reasoning_of, to_value};
use crate::{Error, Result};

/// The library's messages, grouped as rig messages: a tool result whose `rig` field records
/// its group (members before it, members in all) opens that group when the messages it names
/// are still there, as they were; any other run of tool messages is one rig message, and
/// every other message one of its own.
pub(super) fn groups(messages: &[Message]) -> Vec<std::ops::Range<usize>> {
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
pub(super) fn merged(parts: &[String]) -> Option<Value> {
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

pub(super) fn decode_message(
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
