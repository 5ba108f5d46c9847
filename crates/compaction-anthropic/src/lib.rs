//! The Anthropic Messages dialect for hermes-compaction: read and write transcripts of `{role, content}` messages
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
//! metadata ([`Meta::extra`](compaction_core::Meta::extra)`["anthropic"]`, never sent to a model), and the
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
//! [`ToolCall`]: compaction_core::ToolCall
//! [`ToolCall::extra`]: compaction_core::ToolCall::extra
//! [`Part`]: compaction_core::Part
//! [`Part::text`]: compaction_core::Part::text
//!
//! Without the tags (messages that went through the store, which keeps bodies only), the
//! writer groups consecutive `tool` messages and a user message right after them into one
//! Anthropic user message, which is what the reader produced in the first place.
//!
//! ```
//! use compaction_anthropic as anthropic;
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
#![cfg_attr(docsrs, feature(doc_cfg))]

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use compaction_core::{Error, Location, Message, Result};

mod read;
mod write;

use read::{assistant, compact_json, has_type, json_error, object, user_with_results};
use write::{group_end, noncanonical_parts, original, rebuild};

/// The key of the dialect's tag in [`Meta::extra`](compaction_core::Meta::extra).
pub const TAG_KEY: &str = "anthropic";

/// Whether `text` is an Anthropic Messages transcript rather than OpenAI chat: some message
/// has a `tool_use`, `tool_result`, `thinking` or `redacted_thinking` block (or an `image` or
/// `document` block with a `source`), and none has `tool_calls` or the role `tool`. A
/// transcript of plain text messages is the same in both dialects (`false`).
///
/// ```
/// use compaction_anthropic::looks_like;
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
/// use compaction_anthropic::{self as anthropic, strategies};
/// use proptest::prelude::*;
///
/// proptest!(ProptestConfig::with_cases(8), |(lines in strategies::transcript())| {
///     let text = lines.join("\n") + "\n";
///     let messages = anthropic::parse(&text).unwrap();
///     prop_assert_eq!(anthropic::to_jsonl(&messages), text);
/// });
/// ```
#[cfg(feature = "proptest")]
pub mod strategies;
