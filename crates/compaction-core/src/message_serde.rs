//! serde for [`Message`] (the impls and their documentation: see [`Message`]'s trait
//! implementations).

use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::Error;
use crate::message::Message;

/// serde for [`Message`], so a framework can embed messages in its own types.
///
/// The impls carry exactly what [`Message::to_json`] writes and [`Message::from_json`] reads:
/// unknown fields, their key order and their bytes, and the library metadata under
/// `_hermes`. A message serialized with `serde_json` and read
/// back is equal to the original, and a pristine message serializes to the very bytes it was
/// parsed from, inside any struct that holds it.
///
/// ```
/// use compaction_core::Message;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Turn {
///     id: u32,
///     messages: Vec<Message>,
/// }
///
/// let line = r#"{"role":"user","ts":1700000000,"content":"hi"}"#;
/// let turn = Turn { id: 7, messages: vec![Message::from_json(line).unwrap()] };
/// let json = serde_json::to_string(&turn).unwrap();
/// // The message is written as it was read: unknown `ts` kept, key order kept.
/// assert_eq!(json, format!(r#"{{"id":7,"messages":[{line}]}}"#));
/// let back: Turn = serde_json::from_str(&json).unwrap();
/// assert_eq!(back.messages[0].to_json(), line);
///
/// // From a JSON value (key order survives: serde_json's `preserve_order` is on).
/// let v = serde_json::json!({"role": "assistant", "content": "ok", "vendor": {"x": 1}});
/// let m = Message::try_from(v).unwrap();
/// assert_eq!(m.to_json(), r#"{"role":"assistant","content":"ok","vendor":{"x":1}}"#);
/// ```
///
/// In `serde_json`, the format chat messages live in, a message is carried as its JSON text (a
/// [`RawValue`]), which is what keeps it byte-exact; serializing to `serde_json::Value` and
/// reading from one work too. Binary formats (those whose serializer says it is not human
/// readable: CBOR through ciborium, MessagePack through rmp-serde, bincode, postcard) carry
/// the same JSON text as one string, so a message round-trips through them byte-exact as well:
///
/// ```
/// # use compaction_core::Message;
/// let m = Message::from_json(r#"{"role":"tool","tool_call_id":"c1","content":"ok","x":[1]}"#).unwrap();
/// let mut cbor = Vec::new();
/// ciborium::into_writer(&m, &mut cbor).unwrap();
/// let back: Message = ciborium::from_reader(cbor.as_slice()).unwrap();
/// assert_eq!(back.to_json(), m.to_json());
/// ```
///
/// Human-readable formats other than JSON (YAML, TOML) are not supported: serialize the
/// message through [`Message::to_json`] there. Errors name the problem, never the message
/// text.
impl Serialize for Message {
    /// Writes [`Message::to_json`] verbatim: as raw JSON in a human-readable format, as one
    /// string holding it in a binary one.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !serializer.is_human_readable() {
            return serializer.serialize_str(&self.to_json());
        }
        let raw = RawValue::from_string(self.to_json())
            .map_err(|_| S::Error::custom("message did not serialize to JSON"))?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Message {
    /// Reads one JSON object with [`Message::from_json`] (in a binary format, the string
    /// [`Serialize`] wrote).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Message, D::Error> {
        if !deserializer.is_human_readable() {
            let text = String::deserialize(deserializer)?;
            return Message::from_json(&text).map_err(D::Error::custom);
        }
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Message::from_json(raw.get()).map_err(D::Error::custom)
    }
}

impl TryFrom<Value> for Message {
    type Error = Error;

    /// Parses a JSON value as a message (its key order is the value's).
    fn try_from(value: Value) -> Result<Message, Error> {
        Message::try_from(&value)
    }
}

impl TryFrom<&Value> for Message {
    type Error = Error;

    /// Parses a JSON value as a message (its key order is the value's).
    fn try_from(value: &Value) -> Result<Message, Error> {
        match value {
            Value::Object(_) => Message::from_json(&value.to_string()),
            other => Err(Error::NotAnObject {
                found: json_type(other),
            }),
        }
    }
}

impl From<&Message> for Value {
    /// [`Message::to_json`] as a value, metadata included (use
    /// [`Message::to_wire_value`] for what a model is sent).
    fn from(m: &Message) -> Value {
        serde_json::from_str(&m.to_json()).unwrap_or(Value::Null)
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
