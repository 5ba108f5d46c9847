//! The typed fields of a message: its role, content and parts, tool calls, and the library
//! metadata ([`Meta`]) with the kind of marker a message is.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The role of a message.
///
/// `Debug` never prints an unknown role's text (it came from the transcript):
///
/// ```
/// use compaction_core::Role;
/// assert_eq!(format!("{:?}", Role::parse("user")), "User");
/// assert_eq!(format!("{:?}", Role::parse("my password is hunter2")), "Other(22 bytes)");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Role {
    /// `system`
    System,
    /// `developer` (the newer name some providers use for system instructions).
    Developer,
    /// `user`
    User,
    /// `assistant`
    Assistant,
    /// `tool`
    Tool,
    /// Any other role string, kept verbatim. Validation reports it.
    Other(String),
}

impl Role {
    /// Parses a role string; unknown roles become [`Role::Other`].
    pub fn parse(s: &str) -> Role {
        match s {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => Role::Other(other.to_owned()),
        }
    }

    /// The role as it appears on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Other(s) => s,
        }
    }

    /// System-like roles (system, developer) that open a transcript's head.
    pub(crate) fn is_system_like(&self) -> bool {
        matches!(self, Role::System | Role::Developer)
    }
}

impl fmt::Debug for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Role::Other(s) => write!(f, "Other({} bytes)", s.len()),
            known => f.write_str(match known {
                Role::System => "System",
                Role::Developer => "Developer",
                Role::User => "User",
                Role::Assistant => "Assistant",
                _ => "Tool",
            }),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `content` of a message.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// An explicit JSON `null`.
    Null,
    /// A plain string.
    Text(String),
    /// A list of content parts (text, image_url, or anything else, kept as-is).
    Parts(Vec<Part>),
}

impl Content {
    /// The visible text: the string, or the text parts joined with newlines.
    pub(crate) fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Content::Null => "".into(),
            Content::Text(s) => s.as_str().into(),
            Content::Parts(parts) => {
                let mut texts = parts.iter().filter_map(Part::text);
                match (texts.next(), texts.next()) {
                    (None, _) => "".into(),
                    (Some(one), None) => one.into(),
                    (Some(a), Some(b)) => {
                        let mut s = String::from(a);
                        s.push('\n');
                        s.push_str(b);
                        for t in texts {
                            s.push('\n');
                            s.push_str(t);
                        }
                        s.into()
                    }
                }
            }
        }
    }

    /// Number of image parts.
    pub(crate) fn image_count(&self) -> usize {
        match self {
            Content::Parts(parts) => parts.iter().filter(|p| p.is_image()).count(),
            _ => 0,
        }
    }

    pub(super) fn to_value(&self) -> Value {
        match self {
            Content::Null => Value::Null,
            Content::Text(s) => Value::String(s.clone()),
            Content::Parts(parts) => Value::Array(parts.iter().map(|p| p.0.clone()).collect()),
        }
    }
}

/// One content part, kept as its JSON value so unknown part types survive unchanged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Part(pub Value);

impl Part {
    /// A `{"type":"text","text":...}` part.
    pub fn text_part(text: impl Into<String>) -> Part {
        let mut m = Map::new();
        m.insert("type".into(), Value::String("text".into()));
        m.insert("text".into(), Value::String(text.into()));
        Part(Value::Object(m))
    }

    /// The part's `type`, if it has one.
    pub fn kind(&self) -> Option<&str> {
        self.0.get("type").and_then(Value::as_str)
    }

    /// The text of a text part.
    pub fn text(&self) -> Option<&str> {
        match self.kind() {
            Some("text") | Some("input_text") | Some("output_text") => {
                self.0.get("text").and_then(Value::as_str)
            }
            _ => None,
        }
    }

    /// Whether this is an image part.
    pub(crate) fn is_image(&self) -> bool {
        matches!(
            self.kind(),
            Some("image_url") | Some("input_image") | Some("image")
        )
    }
}

/// One entry of an assistant message's `tool_calls`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's `id` (empty when the call has only a `call_id`, and then not written). A
    /// tool result's `tool_call_id` answers [`ToolCall::call_id`], which is this unless the
    /// call also carries a `call_id`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// Usually `"function"`.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// The function called.
    pub function: FunctionCall,
    /// Fields the library does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `function` of a tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Tool name.
    pub name: String,
    /// Arguments as a JSON-encoded string (as the API sends them).
    #[serde(default)]
    pub arguments: String,
    /// Fields the library does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn function_kind() -> String {
    "function".to_owned()
}

impl ToolCall {
    /// A function tool call.
    pub fn function(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: function_kind(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
                extra: Map::new(),
            },
            extra: Map::new(),
        }
    }

    /// The id a tool result's `tool_call_id` answers: the call's `call_id` when it carries a
    /// non-empty one (Responses-style items stored as chat messages, `{"id": "fc_1",
    /// "call_id": "call_1", ...}`), otherwise its `id`. Every pairing of calls and results in
    /// the library goes through this; both fields are kept as they were.
    ///
    /// ```
    /// use compaction_core::Message;
    ///
    /// let line = r#"{"role":"assistant","content":null,"tool_calls":[{"id":"fc_1","call_id":"call_1","type":"function","function":{"name":"ls","arguments":"{}"}}]}"#;
    /// let m = Message::from_json(line).unwrap();
    /// let call = &m.tool_calls()[0];
    /// assert_eq!((call.id.as_str(), call.call_id()), ("fc_1", "call_1"));
    /// assert_eq!(m.to_wire_json(), line);
    /// ```
    pub fn call_id(&self) -> &str {
        match self.extra.get("call_id") {
            Some(Value::String(s)) if !s.is_empty() => s,
            _ => &self.id,
        }
    }
}

/// What kind of library-written marker a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkerKind {
    /// A batch compaction summary.
    Batch,
    /// The rolling micro-compaction summary.
    Micro,
    /// A turn-progress summary inside a long turn.
    Progress,
    /// Not a summary: the short user-role message a pass adds after its summary when no user
    /// message with text would otherwise remain (the only user turn was an image or blank),
    /// so the summary never becomes the first user-role text
    /// ([`marker::continuation`](crate::marker::continuation)). It carries nothing: a later
    /// pass drops or replaces it, never stacks a second.
    Continuation,
}

impl MarkerKind {
    /// The stable lower-case name (`batch`, `micro`, `progress`, `continuation`).
    pub fn as_str(self) -> &'static str {
        match self {
            MarkerKind::Batch => "batch",
            MarkerKind::Micro => "micro",
            MarkerKind::Progress => "progress",
            MarkerKind::Continuation => "continuation",
        }
    }

    /// Whether a marker of this kind holds a summary (batch, micro, progress); a
    /// [`Continuation`](MarkerKind::Continuation) does not.
    ///
    /// ```
    /// use compaction_core::MarkerKind;
    ///
    /// assert!(MarkerKind::Batch.is_summary());
    /// assert!(!MarkerKind::Continuation.is_summary());
    /// ```
    pub fn is_summary(self) -> bool {
        !matches!(self, MarkerKind::Continuation)
    }
}

/// Library metadata carried under the reserved key `_hermes`. Never sent to a model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// Set on summary markers the library wrote, and on its continuation message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<MarkerKind>,
    /// The store row id once the message is persisted. A message carrying one is skipped by
    /// the append-only flush.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_id: Option<i64>,
    /// Handle of the full original when the content was trimmed at insertion time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trimmed_handle: Option<String>,
    /// Pinned by the user or the agent: no pass prunes, trims, summarizes or reorders it
    /// (its tool group stays whole with it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// Anything a newer version wrote, kept as-is.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Meta {
    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        self.marker.is_none()
            && self.row_id.is_none()
            && self.trimmed_handle.is_none()
            && !self.pinned
            && self.extra.is_empty()
    }
}
