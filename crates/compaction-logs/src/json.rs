//! JSON helpers shared by the readers: content-free errors, typed field access, and the
//! argument text of a tool call.

use serde_json::{Map, Value};

use crate::error::Reason;

/// Parses one line into an object.
pub(crate) fn parse_line(line: &str) -> Result<Map<String, Value>, Reason> {
    match serde_json::from_str::<Value>(line).map_err(|e| json_reason(&e))? {
        Value::Object(m) => Ok(m),
        other => Err(Reason::NotAnObject {
            found: kind(&other),
        }),
    }
}

/// A JSON error by category and column (serde_json's own message can quote the input).
pub(crate) fn json_reason(e: &serde_json::Error) -> Reason {
    use serde_json::error::Category;
    Reason::Json {
        column: e.column(),
        category: match e.classify() {
            Category::Syntax => "syntax",
            Category::Eof => "unexpected end",
            Category::Data => "data",
            Category::Io => "I/O",
        },
    }
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `obj[field]` as a string: `Ok(None)` when absent or null, an error when of another type.
pub(crate) fn opt_str<'a>(
    obj: &'a Map<String, Value>,
    field: &'static str,
) -> Result<Option<&'a str>, Reason> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Reason::field(field, "must be a string")),
    }
}

/// `obj[field]` as a string, required.
pub(crate) fn req_str<'a>(
    obj: &'a Map<String, Value>,
    field: &'static str,
) -> Result<&'a str, Reason> {
    opt_str(obj, field)?.ok_or(Reason::field(field, "must be a string"))
}

/// `obj[field]` as an object, required.
pub(crate) fn req_obj<'a>(
    obj: &'a Map<String, Value>,
    field: &'static str,
) -> Result<&'a Map<String, Value>, Reason> {
    match obj.get(field) {
        Some(Value::Object(m)) => Ok(m),
        _ => Err(Reason::field(field, "must be an object")),
    }
}

/// `obj[field]` as a boolean (absent or null: false).
pub(crate) fn flag(obj: &Map<String, Value>, field: &'static str) -> Result<bool, Reason> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(Reason::field(field, "must be a boolean")),
    }
}

/// `obj[field]` as an array of objects (absent or null: empty).
pub(crate) fn blocks<'a>(
    obj: &'a Map<String, Value>,
    field: &'static str,
) -> Result<Vec<&'a Map<String, Value>>, Reason> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_object()
                    .ok_or(Reason::field(field, "must be a list of objects"))
            })
            .collect(),
        Some(_) => Err(Reason::field(field, "must be a list of objects")),
    }
}

/// The `type` of a block (`""` when it has none).
pub(crate) fn block_type(b: &Map<String, Value>) -> &str {
    b.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The arguments text of a tool call whose input is `input`: JSON with a space after every
/// `:` and `,` and non-ASCII text unescaped (the form the normalized fixtures use); a string
/// input is used as it is (a free-form tool's input).
pub(crate) fn arguments(input: &Value) -> String {
    if let Value::String(s) = input {
        return s.clone();
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Spaced);
    match serde::Serialize::serialize(input, &mut ser) {
        Ok(()) => String::from_utf8(out).unwrap_or_default(),
        Err(_) => input.to_string(),
    }
}

/// A compact JSON formatter with `", "` and `": "` separators.
struct Spaced;

impl serde_json::ser::Formatter for Spaced {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

/// The text blocks of a content value joined by `sep`: a string is itself; a list contributes
/// its `text` blocks (`type` `text`, `input_text` or `output_text`); anything else is empty.
pub(crate) fn joined_text(content: Option<&Value>, sep: &str) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => {
            let mut out = String::new();
            let mut first = true;
            for item in items {
                let Some(obj) = item.as_object() else {
                    continue;
                };
                if !matches!(block_type(obj), "text" | "input_text" | "output_text") {
                    continue;
                }
                if let Some(t) = obj.get("text").and_then(Value::as_str) {
                    if !first {
                        out.push_str(sep);
                    }
                    out.push_str(t);
                    first = false;
                }
            }
            out
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_spaced_and_unescaped() {
        let v: Value =
            serde_json::from_str(r#"{"a":1,"b":[1,{"c":"é\n\"q\""}],"d":{},"e":[],"f":-0.5}"#)
                .unwrap();
        assert_eq!(
            arguments(&v),
            r#"{"a": 1, "b": [1, {"c": "é\n\"q\""}], "d": {}, "e": [], "f": -0.5}"#
        );
        assert_eq!(
            arguments(&Value::String("*** Begin Patch".into())),
            "*** Begin Patch"
        );
    }

    #[test]
    fn json_errors_do_not_quote() {
        let e = parse_line(r#"{"role": "user", "content": secret}"#).unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
        assert_eq!(
            parse_line("[1]").unwrap_err(),
            Reason::NotAnObject { found: "an array" }
        );
    }
}
