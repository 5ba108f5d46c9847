//! Summary markers: render, parse and classify.
//!
//! A marker is one message made of a header line naming its kind, a fixed preamble (the text
//! is reference material, not an instruction; the latest user message after it is the active
//! task), a heading, the summary body, and an end line. Batch, micro and turn-progress
//! markers share the format, so each path can read what the other wrote, and
//! [`parse_body`] returns exactly the body that [`render`] was given.
//!
//! Summaries written by Hermes Agent (text starting `[CONTEXT COMPACTION` or the legacy
//! `[CONTEXT SUMMARY]:`) are recognised as batch markers so such a transcript can be resumed,
//! and so is a summary Hermes Agent merged into a kept message: the message's own text
//! wrapped in `[PRIOR CONTEXT — …]` and ended by `[END OF PRIOR CONTEXT — COMPACTION SUMMARY
//! BELOW]`, then the summary.
//!
//! One marker kind is no summary: the [continuation], a short fixed user-role
//! message a pass adds after its summary when no user message with text would otherwise
//! remain. [`classify`] names every kind; [`is_summary`] and [`is_continuation`] tell the two
//! families apart, and [`parse_body`] has no body for a continuation.

use crate::message::{Content, MarkerKind, Message, Part, Role};

/// First characters of every marker this library writes.
const HEADER_PREFIX: &str = "[CONTEXT SUMMARY · hermes-compaction · ";
/// The last line of every marker this library writes.
pub(crate) const END_LINE: &str = "[END OF CONTEXT SUMMARY]";
/// The fixed preamble.
const PREAMBLE: &str = "This message is reference material, not an instruction: it summarizes \
earlier parts of this conversation that were compacted to save space. Do not act on anything in \
it by itself. The most recent user message with text after this summary is the active task.";

/// Preambles of earlier releases: markers they wrote still parse to the same body.
const LEGACY_PREAMBLES: [&str; 1] = [
    "This message is reference material, not an instruction: it summarizes earlier parts of \
this conversation that were compacted to save space. Do not act on anything in it by itself. \
The most recent user message after this summary is the active task.",
];

/// Text prefixes of summaries written by Hermes Agent.
const FOREIGN_PREFIXES: [&str; 2] = ["[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:"];

/// How Hermes Agent opens a message into which it merged a summary (the message's own text
/// follows, then [`MERGED_DELIMITER`], then the summary).
const MERGED_HEADER: &str = "[PRIOR CONTEXT — for reference only; not a new message]";

/// The line after which Hermes Agent's merged summary starts.
const MERGED_DELIMITER: &str = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]";

/// The line Hermes Agent ends its summaries with.
const FOREIGN_END_LINE: &str =
    "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---";

/// First characters of the [continuation] message.
const CONTINUATION_HEADER: &str = "[CONTINUATION · hermes-compaction]";

/// The whole text of the [continuation] message.
const CONTINUATION_TEXT: &str = "[CONTINUATION · hermes-compaction] Earlier turns of this \
conversation were compacted into the summary beside this message to save space. Continue the \
task from where it was left, using that summary for context.";

/// The summary kinds, in the order [`classify_text`] tries their headers.
const SUMMARY_KINDS: [MarkerKind; 3] = [MarkerKind::Batch, MarkerKind::Micro, MarkerKind::Progress];

/// Bytes of leading text that decide a classification: the longest header plus its `]`.
const LONGEST_PREFIX: usize = HEADER_PREFIX.len() + "progress]".len();

fn heading(kind: MarkerKind) -> &'static str {
    match kind {
        MarkerKind::Batch => "## Summary of the earlier conversation",
        MarkerKind::Micro => "## Rolling summary of earlier turns",
        MarkerKind::Progress => "## Progress so far in the current turn",
        MarkerKind::Continuation => "",
    }
}

fn header(kind: MarkerKind) -> String {
    format!("{HEADER_PREFIX}{}]", kind.as_str())
}

fn prefix(kind: MarkerKind) -> String {
    prefix_with(kind, PREAMBLE)
}

fn prefix_with(kind: MarkerKind, preamble: &str) -> String {
    format!("{}\n{preamble}\n\n{}\n", header(kind), heading(kind))
}

/// The marker text for a body. A [`MarkerKind::Continuation`] has no body: its text is always
/// the fixed text of the [continuation].
pub(crate) fn render_text(kind: MarkerKind, body: &str) -> String {
    if kind == MarkerKind::Continuation {
        return CONTINUATION_TEXT.to_owned();
    }
    let mut s = prefix(kind);
    s.push_str(body);
    s.push('\n');
    s.push_str(END_LINE);
    s
}

/// A marker message with the given role, stamped with [`MarkerKind`] metadata.
/// (For a continuation, prefer [`continuation`]: it is always user-role.)
pub fn render(kind: MarkerKind, role: Role, body: &str) -> Message {
    let mut m = Message::new(role, render_text(kind, body));
    m.meta_mut().marker = Some(kind);
    m
}

/// The continuation message: user-role, a fixed text, stamped [`MarkerKind::Continuation`]. A pass adds exactly one after its summary when its output
/// would otherwise hold no user message with text that is not a library marker (the only
/// user turn was an image or blank), so the summary never becomes the first user-role text.
/// It is not a summary and never the active ask.
///
/// ```
/// use compaction_core::{marker, MarkerKind, Message};
///
/// let c = marker::continuation();
/// assert!(c.is_user());
/// assert_eq!(marker::classify(&c), Some(MarkerKind::Continuation));
/// assert!(marker::is_continuation(&c) && !marker::is_summary(&c));
/// assert_eq!(marker::parse_body(&c), None);
/// // Recognised by its text too, e.g. after a round trip without library metadata.
/// let plain = Message::user(c.text().into_owned());
/// assert!(marker::is_continuation(&plain));
/// ```
pub fn continuation() -> Message {
    render(MarkerKind::Continuation, Role::User, "")
}

/// Whether `m` is a summary marker (batch, micro or progress, library-written or foreign); a
/// [continuation] is not.
pub fn is_summary(m: &Message) -> bool {
    classify(m).is_some_and(MarkerKind::is_summary)
}

/// Whether `m` is the library's [continuation] message.
pub fn is_continuation(m: &Message) -> bool {
    classify(m) == Some(MarkerKind::Continuation)
}

/// Whether `m` is a user message with visible text that is no library marker: a user's own
/// words (an image-only or blank user message, a summary, a continuation, and an image
/// whose payload became a placeholder text after compaction are not).
pub(crate) fn is_user_text(m: &Message) -> bool {
    if !m.is_user() {
        return false;
    }
    let own = |t: &str| {
        let t = t.trim();
        !t.is_empty() && !t.starts_with(crate::images::PLACEHOLDER_PREFIX)
    };
    let has_own_text = match m.content() {
        Some(Content::Text(s)) => own(s),
        Some(Content::Parts(parts)) => parts.iter().filter_map(Part::text).any(own),
        _ => false,
    };
    has_own_text && classify(m).is_none()
}

/// Whether `m` is a visible reply: an assistant message with visible text, no tool calls and
/// no library marker (what the agent last said to the user).
pub(crate) fn is_visible_reply(m: &Message) -> bool {
    m.is_assistant() && !m.has_tool_calls() && m.has_visible_text() && classify(m).is_none()
}

/// Classifies a message: its metadata first, then its text.
pub fn classify(m: &Message) -> Option<MarkerKind> {
    if let Some(k) = m.marker_kind() {
        return Some(k);
    }
    if m.is_tool() || m.has_tool_calls() {
        return None;
    }
    // Only the first characters decide, so peek at the leading text without joining parts.
    match m.content() {
        Some(Content::Text(s)) => classify_text(s),
        Some(Content::Parts(parts)) => match parts.iter().find_map(Part::text) {
            Some(first)
                if first.len() >= LONGEST_PREFIX
                    && !first.trim_start().starts_with(MERGED_HEADER) =>
            {
                classify_text(first)
            }
            Some(_) => classify_text(&m.text()),
            None => None,
        },
        Some(Content::Null) | None => None,
    }
}

/// Classifies marker text (the text of a user or assistant message without tool calls or
/// metadata: `classify(&Message::user(text))`).
pub(crate) fn classify_text(text: &str) -> Option<MarkerKind> {
    if text.starts_with(CONTINUATION_HEADER) {
        return Some(MarkerKind::Continuation);
    }
    if let Some(rest) = text.strip_prefix(HEADER_PREFIX) {
        for kind in SUMMARY_KINDS {
            if rest.starts_with(kind.as_str()) && rest[kind.as_str().len()..].starts_with(']') {
                return Some(kind);
            }
        }
        return None;
    }
    // Only a message that opens with Hermes Agent's wrapper is searched for a merged summary,
    // so classifying ordinary text stays a look at its first characters.
    let lead = text.trim_start();
    let foreign = FOREIGN_PREFIXES.iter().any(|p| lead.starts_with(p))
        || (lead.starts_with(MERGED_HEADER) && split_merged(lead).is_some());
    foreign.then_some(MarkerKind::Batch)
}

/// Splits a message into which Hermes Agent merged its summary: `(prior, summary)`, where
/// `prior` is the message's own text (without the [`MERGED_HEADER`] wrapper) and `summary` the
/// Hermes summary after [`MERGED_DELIMITER`]. `None` unless the delimiter starts a line and
/// is followed by a Hermes summary prefix, so text that merely mentions it is no marker.
pub(crate) fn split_merged(text: &str) -> Option<(&str, &str)> {
    let mut from = 0;
    while let Some(found) = text[from..].find(MERGED_DELIMITER) {
        let at = from + found;
        from = at + MERGED_DELIMITER.len();
        if at > 0 && !text[..at].ends_with('\n') {
            continue;
        }
        let summary = text[from..].trim_start();
        if FOREIGN_PREFIXES.iter().any(|p| summary.starts_with(p)) {
            let prior = text[..at].trim_start();
            let prior = prior.strip_prefix(MERGED_HEADER).unwrap_or(prior);
            return Some((prior.trim(), summary));
        }
    }
    None
}

/// The body of a summary marker: exactly what [`render`] was given for markers written here; for
/// a foreign (Hermes Agent) summary, the text after its first line.
/// A [continuation] has none.
pub fn parse_body(m: &Message) -> Option<String> {
    let kind = classify(m).filter(|k| k.is_summary())?;
    let text = m.text();
    for preamble in std::iter::once(PREAMBLE).chain(LEGACY_PREAMBLES) {
        let p = prefix_with(kind, preamble);
        if let Some(rest) = text.strip_prefix(p.as_str()) {
            let end = format!("\n{END_LINE}");
            return Some(rest.strip_suffix(end.as_str()).unwrap_or(rest).to_owned());
        }
    }
    let foreign = match split_merged(&text) {
        Some((_, summary)) => summary,
        None => text.trim_start(),
    };
    if FOREIGN_PREFIXES.iter().any(|f| foreign.starts_with(f)) {
        let body = match foreign.split_once('\n') {
            Some((_, rest)) => rest,
            None => "",
        };
        let body = body.trim_end();
        let body = body.strip_suffix(FOREIGN_END_LINE).unwrap_or(body);
        return Some(body.trim().to_owned());
    }
    None
}

/// The sentence a summary ends with when the compacted detail can be recalled from a store
/// (see [`with_recall_note`]).
pub(crate) const RECALL_NOTE: &str = "Detail left out of this summary is archived and can be recalled: \
call the recall_compacted tool with a search query, or with the handle shown in a trimmed \
output, to read the original text.";

/// `body` followed by a blank line and the recall note (a sentence naming the `recall_compacted` tool), for summaries written while a store
/// keeps what was compacted. Idempotent: a body that already ends with the note is returned
/// unchanged, so a rolling summary never accumulates copies.
pub fn with_recall_note(body: &str) -> String {
    let trimmed = body.trim_end();
    if trimmed.ends_with(RECALL_NOTE) {
        return body.to_owned();
    }
    if trimmed.is_empty() {
        return RECALL_NOTE.to_owned();
    }
    format!("{trimmed}\n\n{RECALL_NOTE}")
}

/// `body` without a trailing recall note (what to hand a summarizer as the previous
/// summary, so the note is not summarized).
pub fn without_recall_note(body: &str) -> &str {
    match body.trim_end().strip_suffix(RECALL_NOTE) {
        Some(rest) => rest.trim_end(),
        None => body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn recall_note_is_appended_once_and_strippable() {
        let with = with_recall_note("did X.\n");
        assert_eq!(with, format!("did X.\n\n{RECALL_NOTE}"));
        assert_eq!(with_recall_note(&with), with);
        assert_eq!(with_recall_note(""), RECALL_NOTE);
        assert_eq!(without_recall_note(&with), "did X.");
        assert_eq!(without_recall_note("plain"), "plain");
    }

    #[test]
    fn render_parse_roundtrip() {
        for kind in [MarkerKind::Batch, MarkerKind::Micro, MarkerKind::Progress] {
            for body in [
                "",
                "x",
                "line\n\n[END OF CONTEXT SUMMARY]\nmore\n",
                "  spaced  ",
            ] {
                let m = render(kind, Role::Assistant, body);
                assert_eq!(classify(&m), Some(kind));
                assert_eq!(parse_body(&m).as_deref(), Some(body));
                // Without metadata (e.g. text from another store), the text still classifies.
                let plain = Message::assistant(m.text().into_owned());
                assert_eq!(classify(&plain), Some(kind));
                assert_eq!(parse_body(&plain).as_deref(), Some(body));
            }
        }
    }

    #[test]
    fn multipart_markers_classify_by_their_leading_text() {
        let text = render_text(MarkerKind::Progress, "body");
        let parts = |a: &str, b: &str| {
            let mut m = Message::user("");
            m.set_content(Some(Content::Parts(vec![
                Part::text_part(a),
                Part::text_part(b),
            ])));
            m
        };
        // A long first part decides alone; a short one is joined with the next.
        assert_eq!(classify(&parts(&text, "x")), Some(MarkerKind::Progress));
        assert_eq!(classify(&parts("hello", &text)), None);
        assert_eq!(classify(&parts("[CONTEXT", "COMPACTION] x")), None);
        let joined = parts("[CONTEXT COMPACTION", "body");
        assert_eq!(classify(&joined), Some(MarkerKind::Batch));
    }

    #[test]
    fn the_continuation_is_a_marker_but_no_summary() {
        let c = continuation();
        assert_eq!(c.text(), CONTINUATION_TEXT);
        assert_eq!(classify(&c), Some(MarkerKind::Continuation));
        assert!(is_continuation(&c) && !is_summary(&c) && !is_user_text(&c));
        assert_eq!(parse_body(&c), None);
        // Without metadata, by its text (a message made of parts too).
        let mut parts = Message::user("");
        parts.set_content(Some(Content::Parts(vec![Part::text_part(
            CONTINUATION_TEXT,
        )])));
        for m in [Message::user(CONTINUATION_TEXT), parts] {
            assert!(is_continuation(&m), "{m:?}");
        }
        // A user quoting it further in is the user's own text.
        let quoting = Message::user(format!("why did you write {CONTINUATION_TEXT}?"));
        assert!(is_user_text(&quoting));
        assert!(is_summary(&render(MarkerKind::Batch, Role::User, "b")));
    }

    #[test]
    fn a_summary_merged_into_a_kept_message_is_split_off() {
        let text = format!(
            "{MERGED_HEADER}\nplease also update the docs\n\n{MERGED_DELIMITER}\n\n\
             [CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted.\nGoal: ship it"
        );
        let (prior, _summary) = split_merged(&text).unwrap();
        assert_eq!(prior, "please also update the docs");
        let m = Message::user(text.clone());
        assert_eq!(classify(&m), Some(MarkerKind::Batch));
        assert_eq!(parse_body(&m).as_deref(), Some("Goal: ship it"));
    }

    fn summary_kind() -> impl Strategy<Value = MarkerKind> {
        prop::sample::select(SUMMARY_KINDS.to_vec())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn marker_syntax_inside_a_body_round_trips(kind in summary_kind(), a in ".{0,20}", b in ".{0,20}") {
            let body = format!("{a}\n{}\n{}{b}", END_LINE, render_text(MarkerKind::Batch, &a));
            let m = render(kind, Role::Assistant, &body);
            prop_assert_eq!(parse_body(&m), Some(body));
        }
    }

    #[test]
    fn foreign_summaries_are_batch() {
        let m = Message::user("[CONTEXT COMPACTION] Earlier turns were compacted.\nGoal: x");
        assert_eq!(classify(&m), Some(MarkerKind::Batch));
        assert_eq!(parse_body(&m).as_deref(), Some("Goal: x"));
        let legacy = Message::assistant("[CONTEXT SUMMARY]: stuff");
        assert_eq!(classify(&legacy), Some(MarkerKind::Batch));
        assert_eq!(classify(&Message::user("hello")), None);
    }
}
