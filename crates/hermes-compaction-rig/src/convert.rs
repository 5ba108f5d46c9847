//! Lossless conversion between rig's [`Message`](RigMessage) and the library's [`Message`].
//!
//! rig's messages are content blocks much like Anthropic's, so the conversion goes through
//! the library's Anthropic dialect ([`compaction_anthropic`]) rather than a parallel
//! one: a rig message is written as one Anthropic message and read with
//! [`anthropic::parse_message`] (tool calls become `tool_calls`, tool results `tool`
//! messages, so every law applies), and the library's messages are written back with
//! [`anthropic::to_messages`] and read as rig messages. What the dialect does for thinking
//! blocks is what happens to rig's reasoning: a [`Reasoning`] block holding Anthropic's signed
//! `thinking` (or `redacted_thinking`) item as its provider item becomes that very block, byte
//! for byte, which no pass reads or rewrites.
//!
//! What Anthropic's blocks cannot say (a tool result's tool name, a rig-issued call id,
//! `is_error`, provider items and citations, the turn's origin and stop reason, which blocks
//! formed one rig message) travels in a `"rig"` field of the block (or of the assistant
//! message); media without an Anthropic form, reasoning that is not Anthropic's and any other
//! block are kept whole as a `{"type":"rig","block":…}` block, which the dialect keeps in place
//! and no pass reads. So [`to_rig`]`(`[`from_rig`]`(m)) == m` for every rig transcript.
//!
//! The other way, a transcript written by another dialect (OpenAI chat) converts to rig's form
//! and back to an equivalent one: the same roles, texts, call ids, names, arguments (as JSON
//! values) and results; the bytes of the second trip are the first's.
//!
//! ```
//! use hermes_compaction_rig::convert::{from_rig, to_rig};
//! use rig_core::completion::{AssistantContent, Message};
//! use rig_core::message::{ToolName, ToolResultContent};
//! use serde_json::json;
//!
//! let call = AssistantContent::tool_call("toolu_1", ToolName::new("bash")?, json!({"cmd": "ls"}));
//! let AssistantContent::ToolCall(c) = &call else { unreachable!() };
//! let rig = vec![
//!     Message::user("list the files"),
//!     Message::from(vec![AssistantContent::text("Listing."), call.clone()]),
//!     Message::tool_results(vec![c.result(vec![ToolResultContent::text("a.txt")])]),
//! ];
//! let ours = from_rig(&rig)?;
//! let roles: Vec<&str> = ours.iter().map(|m| m.role().as_str()).collect();
//! assert_eq!(roles, ["user", "assistant", "tool"]);
//! assert_eq!(ours[2].tool_call_id(), Some("toolu_1"));
//! assert_eq!(to_rig(&ours)?, rig);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod decode;
mod encode;

use std::collections::HashMap;

use compaction_anthropic as anthropic;
use compaction_core::Message;
use rig_core::completion::Message as RigMessage;
use rig_core::completion::message::{AssistantContent, Reasoning, ToolName};
use serde_json::Value;

use crate::{Error, Result};

use decode::{decode_message, groups, merged};
use encode::encode_message;

/// The library's messages for a rig transcript, in order (a rig message with tool results
/// becomes one `tool` message per result and a user message per run of other blocks).
///
/// # Errors
///
/// [`Error::Convert`] naming the rig message (never its content) when the dialect refuses it.
pub fn from_rig(messages: &[RigMessage]) -> Result<Vec<Message>> {
    let mut out = Vec::with_capacity(messages.len());
    for (index, m) in messages.iter().enumerate() {
        let json = encode_message(m);
        let text = serde_json::to_string(&json).map_err(|_| Error::convert(index, "not JSON"))?;
        let members = anthropic::parse_message(index, &text)
            .map_err(|e| Error::convert(index, &e.to_string()))?;
        out.extend(members);
    }
    Ok(out)
}

/// The rig messages a transcript of the library stands for, in order: the inverse of
/// [`from_rig`], and also what a transcript of another dialect (a summary, an imported
/// OpenAI chat session) reads as.
///
/// # Errors
///
/// [`Error::Convert`] naming the message index (never its content) for what rig cannot hold:
/// a role other than system, user, assistant and tool, a tool result that names no tool and
/// answers no call before it, a call without an id, a content block of a kind rig has no
/// place for.
pub fn to_rig(messages: &[Message]) -> Result<Vec<RigMessage>> {
    let mut out = Vec::new();
    let mut names: HashMap<String, ToolName> = HashMap::new();
    for range in groups(messages) {
        let start = range.start;
        let json = merged(&anthropic::to_messages(&messages[range])).ok_or(Error::Convert {
            index: start,
            reason: "the dialect wrote no message".into(),
        })?;
        out.push(decode_message(start, &json, &mut names)?);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Shared by both directions

/// Keys of a block the dialect reads itself; everything rig adds goes under this one.
const RIG: &str = "rig";

fn to_value(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// The reasoning block for an Anthropic `thinking` or `redacted_thinking` block: its text,
/// and the block itself as the provider item, verbatim.
fn reasoning_of(item: &Value) -> Option<Reasoning> {
    let (text, redacted) = match item.get("type")?.as_str()? {
        "thinking" => (item.get("thinking")?.as_str()?.to_owned(), false),
        "redacted_thinking" => (String::new(), true),
        _ => return None,
    };
    let block = AssistantContent::Reasoning(Reasoning {
        text,
        redacted,
        native: None,
    })
    .with_native(item.clone());
    match block {
        AssistantContent::Reasoning(r) => Some(r),
        _ => None,
    }
}
