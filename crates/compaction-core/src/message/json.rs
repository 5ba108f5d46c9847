//! The lossless JSON of a message: reading keeps every unknown field's text and position (and
//! the parsed `tool_calls` text), writing gives back the bytes read while the body is
//! unmodified, with the library metadata under [`META_KEY`] kept apart from what a model is
//! sent.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{BLANK, Body, Content, Known, META_KEY, Message, Meta, Part, Role, Slot, ToolCall};
use crate::error::Error;

impl Message {
    /// Parses one message from JSON text.
    pub fn from_json(text: &str) -> Result<Message, Error> {
        let fields: Fields = serde_json::from_str(text).map_err(|e| json_error(&e))?;
        let fields = match fields {
            Fields::Object(f) => f,
            Fields::Other(found) => return Err(Error::NotAnObject { found }),
        };
        check_unique_keys(&fields)?;
        let mut role = None;
        let mut msg = Body::clone(&BLANK);
        let mut had_meta = false;
        for (key, raw) in fields {
            let known = match key.as_str() {
                "role" => Some(Known::Role),
                "content" => Some(Known::Content),
                "tool_calls" => Some(Known::ToolCalls),
                "tool_call_id" => Some(Known::ToolCallId),
                "name" => Some(Known::Name),
                META_KEY => {
                    had_meta = true;
                    let meta: Meta =
                        serde_json::from_str(raw.get()).map_err(|_| Error::InvalidField {
                            field: META_KEY,
                            expected: "must be an object of library metadata",
                        })?;
                    msg.meta = Some(meta);
                    continue;
                }
                _ => None,
            };
            match known {
                Some(k) => {
                    msg.order.push(Slot::Known(k));
                    match k {
                        Known::Role => {
                            let s: String = serde_json::from_str(raw.get()).map_err(|_| {
                                Error::InvalidField {
                                    field: "role",
                                    expected: "must be a string",
                                }
                            })?;
                            role = Some(Role::parse(&s));
                        }
                        Known::Content => msg.content = Some(parse_content(raw.get())?),
                        Known::ToolCalls => {
                            let v: Option<Vec<ToolCall>> = serde_json::from_str(raw.get())
                                .map_err(|_| Error::InvalidField {
                                    field: "tool_calls",
                                    expected: "must be null or a list of {id, type, function: {name, arguments}}",
                                })?;
                            msg.tool_calls_null = v.is_none();
                            msg.tool_calls = Some(v.unwrap_or_default());
                            msg.tool_calls_raw = Some(single_line(raw));
                        }
                        Known::ToolCallId => {
                            msg.tool_call_id =
                                Some(serde_json::from_str(raw.get()).map_err(|_| {
                                    Error::InvalidField {
                                        field: "tool_call_id",
                                        expected: "must be a string",
                                    }
                                })?)
                        }
                        Known::Name => {
                            msg.name = Some(serde_json::from_str(raw.get()).map_err(|_| {
                                Error::InvalidField {
                                    field: "name",
                                    expected: "must be a string",
                                }
                            })?)
                        }
                    }
                }
                None => {
                    msg.order.push(Slot::Extra(msg.extra.len()));
                    msg.extra.push((key, single_line(raw)));
                }
            }
        }
        msg.role = role.ok_or(Error::MissingRole)?;
        if !had_meta {
            // A message read from a pretty-printed array spans lines; one JSONL line must not.
            let body = text.trim();
            msg.raw = Some(if body.contains(['\n', '\r']) {
                Arc::from(compact_json(body))
            } else {
                Arc::from(body)
            });
        }
        Ok(Message { b: Arc::new(msg) })
    }

    /// The message as written to a transcript: the body, plus `_hermes` as the last key
    /// when metadata is present.
    pub fn to_json(&self) -> String {
        let body = self.to_wire_json();
        match &self.b.meta {
            Some(meta) if !meta.is_empty() => {
                let meta_json = serde_json::to_string(meta).unwrap_or_else(|_| "{}".into());
                let mut s = String::with_capacity(body.len() + meta_json.len() + 16);
                s.push_str(&body[..body.len() - 1]);
                if body.len() > 2 {
                    s.push(',');
                }
                s.push('"');
                s.push_str(META_KEY);
                s.push_str("\":");
                s.push_str(&meta_json);
                s.push('}');
                s
            }
            _ => body,
        }
    }

    /// The message as sent to a model: the body without library metadata. Byte-identical to
    /// the parsed input while the body is unmodified.
    pub fn to_wire_json(&self) -> String {
        if let Some(raw) = &self.b.raw {
            return raw.to_string();
        }
        self.serialize_body()
    }

    /// The same as [`to_wire_json`](Self::to_wire_json), as a JSON value.
    pub fn to_wire_value(&self) -> Value {
        serde_json::from_str(&self.to_wire_json()).unwrap_or(Value::Null)
    }

    /// Whether the body is still exactly what was parsed.
    pub fn is_pristine(&self) -> bool {
        self.b.raw.is_some()
    }

    fn serialize_body(&self) -> String {
        let mut out = String::with_capacity(64 + self.content_chars());
        out.push('{');
        let mut first = true;
        let mut push_key = |out: &mut String, key: &str| {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&serde_json::to_string(key).unwrap_or_default());
            out.push(':');
        };
        for slot in &self.b.order {
            match slot {
                Slot::Known(k) => match k {
                    Known::Role => {
                        push_key(&mut out, "role");
                        out.push_str(&json_string(self.b.role.as_str()));
                    }
                    Known::Content => {
                        if let Some(c) = &self.b.content {
                            push_key(&mut out, "content");
                            match c {
                                Content::Text(s) => out.push_str(&json_string(s)),
                                other => out.push_str(
                                    &serde_json::to_string(&other.to_value()).unwrap_or_default(),
                                ),
                            }
                        }
                    }
                    Known::ToolCalls => {
                        if let Some(calls) = &self.b.tool_calls {
                            push_key(&mut out, "tool_calls");
                            if let Some(raw) = &self.b.tool_calls_raw {
                                out.push_str(raw.get());
                            } else if calls.is_empty() && self.b.tool_calls_null {
                                out.push_str("null");
                            } else {
                                out.push_str(&serde_json::to_string(calls).unwrap_or_default());
                            }
                        }
                    }
                    Known::ToolCallId => {
                        if let Some(id) = &self.b.tool_call_id {
                            push_key(&mut out, "tool_call_id");
                            out.push_str(&json_string(id));
                        }
                    }
                    Known::Name => {
                        if let Some(n) = &self.b.name {
                            push_key(&mut out, "name");
                            out.push_str(&json_string(n));
                        }
                    }
                },
                Slot::Extra(i) => {
                    let (k, v) = &self.b.extra[*i];
                    push_key(&mut out, k);
                    out.push_str(v.get());
                }
            }
        }
        out.push('}');
        out
    }
}

/// Valid JSON text without whitespace outside strings. Strings, numbers and escapes keep
/// their exact spelling.
fn compact_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    out
}

/// A raw extra field as one line (see [`compact_json`]); unchanged when it already is.
fn single_line(raw: Box<RawValue>) -> Box<RawValue> {
    if !raw.get().contains(['\n', '\r']) {
        return raw;
    }
    let compact = compact_json(raw.get());
    RawValue::from_string(compact).unwrap_or(raw)
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn json_error(e: &serde_json::Error) -> Error {
    let reason = match e.classify() {
        serde_json::error::Category::Io => "I/O error",
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Data => "unexpected data",
        serde_json::error::Category::Eof => "unexpected end of input (truncated?)",
    };
    Error::Json {
        column: e.column(),
        reason,
    }
}

/// The name of a key the library knows, for errors (any other key is never quoted).
fn known_key_name(key: &str) -> Option<&'static str> {
    [
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "name",
        META_KEY,
    ]
    .into_iter()
    .find(|k| *k == key)
}

/// Fails on the first key that repeats an earlier one. Linear in the number of keys: a set
/// of the keys seen (a message with a million unknown keys reads in one pass), or pairwise
/// comparison for the few keys of an ordinary message.
fn check_unique_keys(fields: &[(String, Box<RawValue>)]) -> Result<(), Error> {
    let repeat = |index: usize| Error::DuplicateKey {
        field: known_key_name(&fields[index].0),
        index,
    };
    if fields.len() <= 16 {
        for (i, (k, _)) in fields.iter().enumerate() {
            if fields[..i].iter().any(|(e, _)| e == k) {
                return Err(repeat(i));
            }
        }
        return Ok(());
    }
    let mut seen = foldhash::HashSet::with_capacity_and_hasher(fields.len(), Default::default());
    for (i, (k, _)) in fields.iter().enumerate() {
        if !seen.insert(k.as_str()) {
            return Err(repeat(i));
        }
    }
    Ok(())
}

fn parse_content(raw: &str) -> Result<Content, Error> {
    let v: Value = serde_json::from_str(raw).map_err(|_| Error::InvalidField {
        field: "content",
        expected: "must be valid JSON",
    })?;
    match v {
        Value::Null => Ok(Content::Null),
        Value::String(s) => Ok(Content::Text(s)),
        Value::Array(items) => Ok(Content::Parts(items.into_iter().map(Part).collect())),
        _ => Err(Error::InvalidField {
            field: "content",
            expected: "must be a string, null, or a list of parts",
        }),
    }
}

/// A JSON object read as ordered `(key, raw value)` pairs, or the type of whatever else it was.
enum Fields {
    Object(Vec<(String, Box<RawValue>)>),
    Other(&'static str),
}

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fields, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
                let mut out = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let raw: Box<RawValue> = map.next_value()?;
                    out.push((key, raw));
                }
                Ok(Fields::Object(out))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Fields, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(Fields::Other("an array"))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Fields, E> {
                Ok(Fields::Other("a string"))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Fields, E> {
                Ok(Fields::Other("a boolean"))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Fields, E> {
                Ok(Fields::Other("a number"))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Fields, E> {
                Ok(Fields::Other("a number"))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Fields, E> {
                Ok(Fields::Other("a number"))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Fields, E> {
                Ok(Fields::Other("null"))
            }
        }
        d.deserialize_any(V)
    }
}
