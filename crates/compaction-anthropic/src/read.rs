//! Reading the dialect: an Anthropic message becomes the chat messages every planner and law
//! understands, each tagged with where it came from.

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use compaction_core::{Error, Message, Result};

/// The assistant message of a reply with `tool_use` blocks (and the number of top-level
/// extras, always 0 here: they are the message's own extra fields).
pub(crate) fn assistant(
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
pub(crate) fn user_with_results(
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

pub(crate) fn has_type(blocks: &[Box<RawValue>], kind: &str) -> Result<bool> {
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
pub(crate) fn compact_json(json: &str) -> String {
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

pub(crate) fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

pub(crate) fn json_error(e: &serde_json::Error) -> Error {
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
pub(crate) fn object(json: &str) -> Result<Vec<(String, Box<RawValue>)>> {
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
