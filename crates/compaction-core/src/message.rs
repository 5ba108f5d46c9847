//! The lossless message model: [`Message`] (documented there) and its typed fields
//! (`fields.rs`), reached at the crate root.

use std::fmt;
use std::sync::Arc;

use serde_json::value::RawValue;

pub(crate) mod fields;
mod json;

pub(crate) use fields::{Content, MarkerKind, Meta, Part, Role, ToolCall};

/// The reserved top-level key under which the library keeps its own metadata.
pub(crate) const META_KEY: &str = "_hermes";

/// One chat message, lossless.
///
/// A message is one OpenAI chat-completions message. The fields the library reads (`role`,
/// `content`, `tool_calls`, `tool_call_id`, `name`) are parsed into typed values; every other
/// top-level field is kept as the exact JSON text it arrived as, in its original position. A
/// message that the library has not modified serializes back to the very bytes it was parsed
/// from.
///
/// Library metadata ([`Meta`]) lives under the reserved key `_hermes` and is held apart from
/// the body: [`Message::to_wire_json`] (what is sent to a model) never contains it, while
/// [`Message::to_json`] (what is written to a transcript file) appends it as the last key.
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

    /// Replaces the role (tests only: no pass changes a role).
    #[cfg(test)]
    pub(crate) fn set_role(&mut self, role: Role) {
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
    pub(crate) fn with_content(&self, content: Option<Content>) -> Message {
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
    pub(crate) fn tool_calls_mut(&mut self) -> Option<&mut Vec<ToolCall>> {
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
    pub(crate) fn name(&self) -> Option<&str> {
        self.b.name.as_deref()
    }

    /// Replaces the `name` field (tests only: no pass changes a name).
    #[cfg(test)]
    pub(crate) fn set_name(&mut self, name: Option<String>) {
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

    /// The library metadata, if any: `None` when nothing is set ([`Meta::is_empty`]), as
    /// [`to_json`](Message::to_json) then writes none.
    pub fn meta(&self) -> Option<&Meta> {
        self.b.meta.as_ref().filter(|m| !m.is_empty())
    }

    /// Whether the message is pinned ([`Meta::pinned`]): no pass prunes, trims, summarizes
    /// or reorders it. A message is pinned through its metadata; one a transcript holds,
    /// with [`Transcript::pin`](crate::Transcript::pin) (which a store then persists).
    ///
    /// ```
    /// use compaction_core::{Message, Meta};
    /// let mut m = Message::user("never forget: the API key lives in the vault");
    /// assert!(!m.is_pinned());
    /// m.meta_mut().pinned = true;
    /// assert!(m.is_pinned());
    /// // A pin is library metadata: the model never sees it.
    /// assert!(!m.to_wire_json().contains("pinned"));
    /// // Metadata with nothing set is none.
    /// *m.meta_mut() = Meta::default();
    /// assert_eq!(m.meta(), None);
    /// ```
    pub fn is_pinned(&self) -> bool {
        self.b.meta.as_ref().is_some_and(|m| m.pinned)
    }

    /// Mutable metadata, created on first use. Metadata never reaches a model, so the body
    /// (and its original text) stays as it is. To replace all of it, assign
    /// (`*m.meta_mut() = meta`); to remove it, assign [`Meta::default()`].
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

#[cfg(test)]
mod tests;
