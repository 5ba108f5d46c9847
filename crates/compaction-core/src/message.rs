//! The lossless message model.
//!
//! A [`Message`] is one OpenAI chat-completions message. The fields the library reads
//! (`role`, `content`, `tool_calls`, `tool_call_id`, `name`) are parsed into typed values;
//! every other top-level field is kept as the exact JSON text it arrived as, in its original
//! position. A message that the library has not modified serializes back to the very bytes it
//! was parsed from.
//!
//! Library metadata lives under the reserved key [`META_KEY`] and is held apart from the body:
//! [`Message::to_wire_json`] (what is sent to a model) never contains it, while
//! [`Message::to_json`] (what is written to a transcript file) appends it as the last key.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::Error;

/// The reserved top-level key under which the library keeps its own metadata.
pub const META_KEY: &str = "_hermes";

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
    pub fn is_system_like(&self) -> bool {
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
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
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
    pub fn image_count(&self) -> usize {
        match self {
            Content::Parts(parts) => parts.iter().filter(|p| p.is_image()).count(),
            _ => 0,
        }
    }

    fn to_value(&self) -> Value {
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
    pub fn is_image(&self) -> bool {
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

/// Library metadata carried under [`META_KEY`]. Never sent to a model.
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

/// Which known field occupies a slot of the original key order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    Role,
    Content,
    ToolCalls,
    ToolCallId,
    Name,
}

#[derive(Clone, Debug)]
enum Slot {
    Known(Known),
    Extra(usize),
}

/// One chat message, lossless. See the [module docs](self).
///
/// The fields live behind one shared pointer, so a message is a single word: splicing a
/// transcript moves words, not bodies, and a clone shares the body until one side writes.
#[derive(Clone)]
///
/// ```
/// use compaction_core::{Message, Role};
///
/// // Parsed fields are typed; unknown fields keep their bytes and position.
/// let line = r#"{"role":"user","ts":1700000000,"content":"fix the build"}"#;
/// let mut m = Message::from_json(line).unwrap();
/// assert_eq!(m.role(), &Role::User);
/// assert_eq!(m.text(), "fix the build");
/// assert_eq!(m.to_wire_json(), line); // byte-identical while unmodified
/// assert!(m.is_pristine());
///
/// // Library metadata is kept apart: written to transcripts, never sent to a model.
/// m.meta_mut().row_id = Some(7);
/// assert_eq!(m.to_wire_json(), line);
/// assert!(m.to_json().ends_with(r#""_hermes":{"row_id":7}}"#));
///
/// // Edits keep the key order and the unknown fields.
/// m.set_text("fix the build, then run the tests");
/// assert_eq!(
///     m.to_wire_json(),
///     r#"{"role":"user","ts":1700000000,"content":"fix the build, then run the tests"}"#
/// );
/// ```
pub struct Message {
    b: Arc<Body>,
}

/// The one shared body of [`Message::blank`].
static BLANK: std::sync::LazyLock<Arc<Body>> = std::sync::LazyLock::new(|| {
    Arc::new(Body {
        role: Role::User,
        content: None,
        tool_calls: None,
        tool_calls_null: false,
        tool_calls_raw: None,
        tool_call_id: None,
        name: None,
        extra: Vec::new(),
        order: Vec::new(),
        meta: None,
        raw: None,
    })
});

#[derive(Clone)]
struct Body {
    role: Role,
    content: Option<Content>,
    tool_calls: Option<Vec<ToolCall>>,
    /// The input said `"tool_calls": null`: written back as `null` while no call is added
    /// (providers reject an empty list).
    tool_calls_null: bool,
    /// The parsed `tool_calls` text, written back while the calls are unmodified, so the key
    /// order and bytes inside each call (a Responses `call_id`, a provider's extra keys)
    /// survive a rewrite of another field, as unknown top-level fields do.
    tool_calls_raw: Option<Box<RawValue>>,
    tool_call_id: Option<String>,
    name: Option<String>,
    extra: Vec<(String, Box<RawValue>)>,
    order: Vec<Slot>,
    /// The message library metadata, held apart from the body.
    meta: Option<Meta>,
    /// The original body text (without metadata), valid while the body is unmodified.
    raw: Option<Arc<str>>,
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Content is summarised by size so that a Debug print never leaks transcript text.
        f.debug_struct("Message")
            .field(
                "role",
                &match &self.b.role {
                    Role::Other(_) => "other",
                    known => known.as_str(),
                },
            )
            .field("content_chars", &self.content_chars())
            .field("tool_calls", &self.b.tool_calls.as_ref().map(Vec::len))
            .field("tool_call_id", &self.b.tool_call_id.is_some())
            .field("extra_keys", &self.b.extra.len())
            .field("meta", &self.b.meta)
            .finish()
    }
}

impl crate::devec::Placeholder for Message {
    fn placeholder() -> Message {
        Message::blank()
    }
}

impl PartialEq for Message {
    /// Two messages are equal when they serialize to the same bytes (metadata included).
    fn eq(&self, other: &Message) -> bool {
        self.to_json() == other.to_json()
    }
}

impl Message {
    /// A message with a role and string content.
    pub fn new(role: Role, text: impl Into<String>) -> Message {
        let mut m = Message::empty(role);
        m.set_content(Some(Content::Text(text.into())));
        m
    }

    /// `{"role":"system","content":...}`
    pub fn system(text: impl Into<String>) -> Message {
        Message::new(Role::System, text)
    }

    /// `{"role":"user","content":...}`
    pub fn user(text: impl Into<String>) -> Message {
        Message::new(Role::User, text)
    }

    /// `{"role":"assistant","content":...}`
    pub fn assistant(text: impl Into<String>) -> Message {
        Message::new(Role::Assistant, text)
    }

    /// An assistant message with tool calls and the given (possibly empty) text.
    pub fn assistant_tool_calls(text: impl Into<String>, calls: Vec<ToolCall>) -> Message {
        let mut m = Message::assistant(text);
        m.set_tool_calls(Some(calls));
        m
    }

    /// A tool result answering `call_id`.
    pub fn tool_result(call_id: impl Into<String>, text: impl Into<String>) -> Message {
        let mut m = Message::empty(Role::Tool);
        m.set_tool_call_id(Some(call_id.into()));
        m.set_content(Some(Content::Text(text.into())));
        m
    }

    fn empty(role: Role) -> Message {
        Message {
            b: Arc::new(Body {
                role,
                order: vec![Slot::Known(Known::Role)],
                ..Body::clone(&BLANK)
            }),
        }
    }

    /// A message with no fields at all, not even its role slot: never serialized, it only
    /// fills a free slot of the transcript's storage (allocates nothing: the body is shared).
    fn blank() -> Message {
        Message {
            b: Arc::clone(&BLANK),
        }
    }

    /// The body, for writing: unshared first if a clone still holds it.
    fn body_mut(&mut self) -> &mut Body {
        Arc::make_mut(&mut self.b)
    }

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

    /// The message as written to a transcript: the body, plus [`META_KEY`] as the last key
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

    fn touch(&mut self, k: Known) {
        self.body_mut().raw = None;
        if !self
            .b
            .order
            .iter()
            .any(|s| matches!(s, Slot::Known(x) if *x == k))
        {
            self.body_mut().order.push(Slot::Known(k));
        }
    }

    /// The role.
    pub fn role(&self) -> &Role {
        &self.b.role
    }

    /// Replaces the role.
    pub fn set_role(&mut self, role: Role) {
        self.body_mut().role = role;
        self.touch(Known::Role);
    }

    /// The content, `None` when the key is absent.
    pub fn content(&self) -> Option<&Content> {
        self.b.content.as_ref()
    }

    /// The visible text of the content (empty when absent or null).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match &self.b.content {
            Some(c) => c.text(),
            None => "".into(),
        }
    }

    /// Whether the content carries any non-whitespace text.
    pub fn has_visible_text(&self) -> bool {
        match &self.b.content {
            Some(Content::Text(s)) => !s.trim().is_empty(),
            Some(Content::Parts(parts)) => parts
                .iter()
                .filter_map(Part::text)
                .any(|t| !t.trim().is_empty()),
            _ => false,
        }
    }

    /// Replaces the content (`None` removes the key).
    pub fn set_content(&mut self, content: Option<Content>) {
        if Arc::get_mut(&mut self.b).is_none() {
            // Shared with a clone: unshare without copying the content about to be replaced.
            *self = self.with_content(content);
            return;
        }
        self.body_mut().content = content;
        self.touch(Known::Content);
    }

    /// A copy of this message with other content, without copying the old content first
    /// (cheaper than `clone` then [`set_content`](Self::set_content) for large messages).
    pub fn with_content(&self, content: Option<Content>) -> Message {
        let mut m = Message {
            b: Arc::new(Body {
                role: self.b.role.clone(),
                content: None,
                tool_calls: self.b.tool_calls.clone(),
                tool_call_id: self.b.tool_call_id.clone(),
                name: self.b.name.clone(),
                extra: self.b.extra.clone(),
                order: self.b.order.clone(),
                meta: self.b.meta.clone(),
                raw: None,
                tool_calls_null: self.b.tool_calls_null,
                tool_calls_raw: self.b.tool_calls_raw.clone(),
            }),
        };
        m.set_content(content);
        m
    }

    /// Replaces the content with a string.
    pub fn set_text(&mut self, text: impl Into<String>) {
        self.set_content(Some(Content::Text(text.into())));
    }

    /// The tool calls (empty when none).
    pub fn tool_calls(&self) -> &[ToolCall] {
        self.b.tool_calls.as_deref().unwrap_or(&[])
    }

    /// Whether this is an assistant message that calls tools.
    pub fn has_tool_calls(&self) -> bool {
        !self.tool_calls().is_empty()
    }

    /// Replaces the tool calls (`None` removes the key).
    pub fn set_tool_calls(&mut self, calls: Option<Vec<ToolCall>>) {
        self.body_mut().tool_calls = calls;
        self.body_mut().tool_calls_null = false;
        self.body_mut().tool_calls_raw = None;
        self.touch(Known::ToolCalls);
    }

    /// Mutable access to the tool calls; marks the body modified.
    pub fn tool_calls_mut(&mut self) -> Option<&mut Vec<ToolCall>> {
        self.touch(Known::ToolCalls);
        self.body_mut().tool_calls_raw = None;
        self.body_mut().tool_calls.as_mut()
    }

    /// The id of the call a tool result answers.
    pub fn tool_call_id(&self) -> Option<&str> {
        self.b.tool_call_id.as_deref()
    }

    /// Replaces the tool call id.
    pub fn set_tool_call_id(&mut self, id: Option<String>) {
        self.body_mut().tool_call_id = id;
        self.touch(Known::ToolCallId);
    }

    /// The `name` field.
    pub fn name(&self) -> Option<&str> {
        self.b.name.as_deref()
    }

    /// Replaces the `name` field.
    pub fn set_name(&mut self, name: Option<String>) {
        self.body_mut().name = name;
        self.touch(Known::Name);
    }

    /// Unknown top-level fields, in order, as their exact JSON text.
    pub fn extra_fields(&self) -> impl Iterator<Item = (&str, &str)> {
        self.b.extra.iter().map(|(k, v)| (k.as_str(), v.get()))
    }

    /// The library metadata marker kind, if this message is a marker the library stamped.
    pub fn marker_kind(&self) -> Option<MarkerKind> {
        self.b.meta.as_ref().and_then(|m| m.marker)
    }

    /// The store row id, if the message is stamped persisted.
    pub fn row_id(&self) -> Option<i64> {
        self.b.meta.as_ref().and_then(|m| m.row_id)
    }

    /// The library metadata, if any.
    pub fn meta(&self) -> Option<&Meta> {
        self.b.meta.as_ref()
    }

    /// Replaces the library metadata (`None` removes it). Metadata never reaches a model, so
    /// the body (and its original text) stays as it is.
    pub fn set_meta(&mut self, meta: Option<Meta>) {
        if self.b.meta.is_some() || meta.is_some() {
            self.body_mut().meta = meta;
        }
    }

    /// Whether the message is pinned ([`Meta::pinned`]): no pass prunes, trims, summarizes
    /// or reorders it.
    ///
    /// ```
    /// use compaction_core::Message;
    /// let mut m = Message::user("never forget: the API key lives in the vault");
    /// assert!(!m.is_pinned());
    /// m.set_pinned(true);
    /// assert!(m.is_pinned());
    /// // A pin is library metadata: the model never sees it.
    /// assert!(!m.to_wire_json().contains("pinned"));
    /// ```
    pub fn is_pinned(&self) -> bool {
        self.b.meta.as_ref().is_some_and(|m| m.pinned)
    }

    /// Pins or unpins the message (metadata only; the body is unchanged).
    pub fn set_pinned(&mut self, pinned: bool) {
        if self.is_pinned() != pinned {
            self.meta_mut().pinned = pinned;
        }
    }

    /// Mutable metadata, created on first use.
    pub fn meta_mut(&mut self) -> &mut Meta {
        self.body_mut().meta.get_or_insert_with(Meta::default)
    }

    /// Total characters of visible content (for sizing, never for display).
    pub(crate) fn content_chars(&self) -> usize {
        match &self.b.content {
            Some(Content::Text(s)) => s.chars().count(),
            Some(c @ Content::Parts(_)) => c.text().chars().count(),
            _ => 0,
        }
    }

    /// Whether the role is `user`.
    pub fn is_user(&self) -> bool {
        self.b.role == Role::User
    }

    /// Whether the role is `assistant`.
    pub fn is_assistant(&self) -> bool {
        self.b.role == Role::Assistant
    }

    /// Whether the role is `tool`.
    pub fn is_tool(&self) -> bool {
        self.b.role == Role::Tool
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

#[cfg(test)]
mod tests {
    use super::*;

    fn check_roundtrip(line: &str) {
        let m = Message::from_json(line).expect("parses");
        assert_eq!(m.to_json(), line.trim());
    }

    #[test]
    fn pristine_roundtrip_is_byte_identical() {
        check_roundtrip(r#"{"role":"user","content":"caf\u00e9 \/ x"}"#);
        check_roundtrip(r#"{ "role" : "assistant", "reasoning_content": "hmm", "content": null }"#);
        check_roundtrip(
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"a","type":"function","function":{"name":"ls","arguments":"{}"}}],"ts":1.50}"#,
        );
    }

    #[test]
    fn modified_body_keeps_unknown_fields_verbatim_and_in_order() {
        let line = r#"{"id":"x1","role":"assistant","content":"old","reasoning":{"a":1.50,"b":"\u00e9"},"ts":12}"#;
        let mut m = Message::from_json(line).unwrap();
        m.set_text("new");
        assert_eq!(
            m.to_json(),
            r#"{"id":"x1","role":"assistant","content":"new","reasoning":{"a":1.50,"b":"\u00e9"},"ts":12}"#
        );
    }

    #[test]
    fn meta_is_kept_apart_and_stripped_from_wire() {
        let line = r#"{"role":"assistant","content":"s","_hermes":{"marker":"micro","row_id":7}}"#;
        let m = Message::from_json(line).unwrap();
        assert_eq!(m.marker_kind(), Some(MarkerKind::Micro));
        assert_eq!(m.row_id(), Some(7));
        assert_eq!(m.to_wire_json(), r#"{"role":"assistant","content":"s"}"#);
        assert_eq!(m.to_json(), line);
    }

    #[test]
    fn multi_line_input_serializes_to_one_line() {
        let pretty = "{\n  \"role\": \"user\",\n  \"content\": \"a \\n b\",\n  \"x\": {\n    \"n\": 1.50\n  }\n}";
        let m = Message::from_json(pretty).unwrap();
        assert_eq!(
            m.to_json(),
            r#"{"role":"user","content":"a \n b","x":{"n":1.50}}"#
        );
        let mut edited = m.clone();
        edited.set_text("b");
        assert_eq!(
            edited.to_json(),
            r#"{"role":"user","content":"b","x":{"n":1.50}}"#
        );
    }

    #[test]
    fn null_tool_calls_stay_null_when_the_body_is_rewritten() {
        let mut m =
            Message::from_json(r#"{"role":"assistant","content":"a","tool_calls":null}"#).unwrap();
        assert!(!m.has_tool_calls());
        m.set_text("b");
        assert_eq!(
            m.to_json(),
            r#"{"role":"assistant","content":"b","tool_calls":null}"#
        );
        m.tool_calls_mut()
            .unwrap()
            .push(ToolCall::function("c", "f", "{}"));
        assert!(m.to_json().contains(r#""tool_calls":[{"id":"c""#));
        let mut empty =
            Message::from_json(r#"{"role":"assistant","content":"a","tool_calls":[]}"#).unwrap();
        empty.set_text("b");
        assert_eq!(
            empty.to_json(),
            r#"{"role":"assistant","content":"b","tool_calls":[]}"#
        );
    }

    #[test]
    fn errors_name_the_problem() {
        assert_eq!(
            Message::from_json(r#"{"content":"x"}"#).unwrap_err(),
            Error::MissingRole
        );
        assert_eq!(
            Message::from_json("[1]").unwrap_err(),
            Error::NotAnObject { found: "an array" }
        );
        assert!(matches!(
            Message::from_json(r#"{"role":"user","content":5}"#).unwrap_err(),
            Error::InvalidField {
                field: "content",
                ..
            }
        ));
        assert!(matches!(
            Message::from_json(r#"{"role":"user","role":"user"}"#).unwrap_err(),
            Error::DuplicateKey { .. }
        ));
        assert!(matches!(
            Message::from_json(r#"{"role":"us"#).unwrap_err(),
            Error::Json { .. }
        ));
    }

    #[test]
    fn clones_share_until_written_and_a_write_never_reaches_the_other() {
        let line = r#"{"role":"assistant","content":"original","x-extra":{"a":1}}"#;
        let original = Message::from_json(line).unwrap();
        let edits: [fn(&mut Message); 6] = [
            |m| m.set_text("changed"),
            |m| m.set_content(None),
            |m| m.set_role(Role::User),
            |m| m.set_tool_calls(Some(vec![ToolCall::function("c", "f", "{}")])),
            |m| m.meta_mut().row_id = Some(7),
            |m| {
                m.set_meta(Some(Meta {
                    row_id: Some(1),
                    ..Meta::default()
                }))
            },
        ];
        for edit in edits {
            let mut copy = original.clone();
            assert!(Arc::ptr_eq(&copy.b, &original.b), "a clone shares the body");
            edit(&mut copy);
            assert_ne!(copy.to_json(), original.to_json());
            assert_eq!(original.to_json(), line, "the original is untouched");
            assert_eq!(original.meta(), None);
        }
        // An unshared message is written in place.
        let mut alone = original.clone();
        drop(original);
        let before = Arc::as_ptr(&alone.b);
        alone.set_text("in place");
        assert_eq!(Arc::as_ptr(&alone.b), before);
        assert_eq!(alone.text(), "in place");
    }

    #[test]
    fn parts_and_unknown_roles_survive() {
        let line = r#"{"role":"critic","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:x"}},{"type":"audio","x":1}]}"#;
        let mut m = Message::from_json(line).unwrap();
        assert_eq!(m.role(), &Role::Other("critic".into()));
        assert_eq!(m.content().unwrap().image_count(), 1);
        assert_eq!(m.text(), "a");
        m.set_name(Some("n".into()));
        assert_eq!(
            m.to_json(),
            r#"{"role":"critic","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:x"}},{"type":"audio","x":1}],"name":"n"}"#
        );
    }
}
