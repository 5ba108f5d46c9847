//! rig -> Anthropic-shaped JSON: a rig message as the one Anthropic message
//! [`anthropic::parse_message`](compaction_anthropic::parse_message) reads, with what
//! Anthropic's blocks cannot say in `"rig"` fields and `{"type":"rig","block":…}` blocks.

use rig_core::completion::Message as RigMessage;
use rig_core::completion::message::{
    AssistantContent, Image, MimeType, Reasoning, ToolResultContent, UserContent,
};
use serde_json::{Map, Value, json};

use super::{RIG, reasoning_of, to_value};

/// The Anthropic-shaped JSON of one rig message.
pub(super) fn encode_message(m: &RigMessage) -> Value {
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
