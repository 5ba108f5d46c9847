//! Redaction of what a pass hands a summarizer: [compaction-redact](compaction_redact) on
//! strings, and here its two uses on messages (a message's text and arguments, and the
//! junctions of neighbouring messages).

use std::borrow::Cow;

use serde_json::Value;

pub(crate) use compaction_redact::{looks_like_token, redact, redacted_head, redacted_tail};

use crate::message::{Content, Message};

/// A copy of `m` for a summarizer: its text (string content and text parts) and its
/// tool-call arguments redacted. Other fields are kept; an unchanged message is a cheap clone
/// (bodies are shared).
pub(crate) fn redact_message(m: &Message) -> Message {
    let content = match m.content() {
        Some(Content::Text(t)) => match redact(t) {
            Cow::Owned(r) => Some(Content::Text(r)),
            Cow::Borrowed(_) => None,
        },
        Some(Content::Parts(parts)) => {
            let mut changed = false;
            let parts = parts
                .iter()
                .map(|p| {
                    let mut p = p.clone();
                    if let Some(Value::String(t)) = p.0.get_mut("text")
                        && let Cow::Owned(r) = redact(t)
                    {
                        *t = r;
                        changed = true;
                    }
                    p
                })
                .collect();
            changed.then_some(Content::Parts(parts))
        }
        _ => None,
    };
    let mut out = match content {
        Some(c) => m.with_content(Some(c)),
        None => m.clone(),
    };
    if m.tool_calls()
        .iter()
        .any(|c| compaction_redact::contains_secret(&c.function.arguments))
    {
        for c in out.tool_calls_mut().into_iter().flatten() {
            if let Cow::Owned(r) = redact(&c.function.arguments) {
                c.function.arguments = r;
            }
        }
    }
    out
}

/// `messages` with the text of each one that a junction secret reaches rewritten (the part
/// of the secret it holds replaced by `[REDACTED]`, by
/// [`redact_junctions`](compaction_redact::redact_junctions)); the others unchanged. Only
/// messages with string or text-part content are joined.
pub(crate) fn redact_adjacent_messages(messages: &[Message]) -> Cow<'_, [Message]> {
    if messages.len() < 2 {
        return Cow::Borrowed(messages);
    }
    let texts: Vec<Cow<'_, str>> = messages.iter().map(|m| m.text()).collect();
    let refs: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
    let cut = compaction_redact::redact_junctions(&refs);
    if cut.iter().all(|t| matches!(t, Cow::Borrowed(_))) {
        return Cow::Borrowed(messages);
    }
    let mut out = messages.to_vec();
    for (m, t) in out.iter_mut().zip(cut) {
        if let Cow::Owned(s) = t {
            m.set_text(s);
        }
    }
    Cow::Owned(out)
}
