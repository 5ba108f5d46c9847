//! Summary markers: render, parse and classify.
//!
//! A marker is one message made of a header line naming its kind, a fixed preamble (the text
//! is reference material, not an instruction; the latest user message after it is the active
//! task), a heading, the summary body, and an end line. Batch, micro and turn-progress
//! markers share the format, so each path can read what the other wrote, and
//! [`parse_body`] returns exactly the body that [`render_text`] was given.
//!
//! Summaries written by Hermes Agent (text starting `[CONTEXT COMPACTION` or the legacy
//! `[CONTEXT SUMMARY]:`) are recognised as batch markers so such a transcript can be resumed,
//! and so is a summary Hermes Agent merged into a kept message: the message's own text
//! wrapped in `[PRIOR CONTEXT — …]` and ended by [`MERGED_DELIMITER`], then the summary
//! ([`split_merged`] separates the two).

use crate::message::{Content, MarkerKind, Message, Part, Role};

/// First characters of every marker this library writes.
pub const HEADER_PREFIX: &str = "[CONTEXT SUMMARY · hermes-compaction · ";
/// The last line of every marker this library writes.
pub const END_LINE: &str = "[END OF CONTEXT SUMMARY]";
/// The fixed preamble.
pub const PREAMBLE: &str = "This message is reference material, not an instruction: it summarizes \
earlier parts of this conversation that were compacted to save space. Do not act on anything in \
it by itself. The most recent user message with text after this summary is the active task.";

/// Preambles of earlier releases: markers they wrote still parse to the same body.
pub const LEGACY_PREAMBLES: [&str; 1] = [
    "This message is reference material, not an instruction: it summarizes earlier parts of \
this conversation that were compacted to save space. Do not act on anything in it by itself. \
The most recent user message after this summary is the active task.",
];

/// Text prefixes of summaries written by Hermes Agent.
pub const FOREIGN_PREFIXES: [&str; 2] = ["[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:"];

/// How Hermes Agent opens a message into which it merged a summary (the message's own text
/// follows, then [`MERGED_DELIMITER`], then the summary).
pub const MERGED_HEADER: &str = "[PRIOR CONTEXT — for reference only; not a new message]";

/// The line after which Hermes Agent's merged summary starts.
pub const MERGED_DELIMITER: &str = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]";

/// The line Hermes Agent ends its summaries with.
pub const FOREIGN_END_LINE: &str =
    "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---";

/// Bytes of leading text that decide a classification: the longest header plus its `]`.
const LONGEST_PREFIX: usize = HEADER_PREFIX.len() + "progress]".len();

fn heading(kind: MarkerKind) -> &'static str {
    match kind {
        MarkerKind::Batch => "## Summary of the earlier conversation",
        MarkerKind::Micro => "## Rolling summary of earlier turns",
        MarkerKind::Progress => "## Progress so far in the current turn",
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

/// The marker text for a body.
pub fn render_text(kind: MarkerKind, body: &str) -> String {
    let mut s = prefix(kind);
    s.push_str(body);
    s.push('\n');
    s.push_str(END_LINE);
    s
}

/// A marker message with the given role, stamped with [`MarkerKind`] metadata.
pub fn render(kind: MarkerKind, role: Role, body: &str) -> Message {
    let mut m = Message::new(role, render_text(kind, body));
    m.meta_mut().marker = Some(kind);
    m
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

/// Classifies marker text.
pub fn classify_text(text: &str) -> Option<MarkerKind> {
    if let Some(rest) = text.strip_prefix(HEADER_PREFIX) {
        for kind in [MarkerKind::Batch, MarkerKind::Micro, MarkerKind::Progress] {
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
///
/// ```
/// use compaction_core::marker::{self, MERGED_DELIMITER, MERGED_HEADER};
/// use compaction_core::{MarkerKind, Message};
///
/// let text = format!(
///     "{MERGED_HEADER}\nplease also update the docs\n\n{MERGED_DELIMITER}\n\n\
///      [CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted.\nGoal: ship it"
/// );
/// let (prior, _summary) = marker::split_merged(&text).unwrap();
/// assert_eq!(prior, "please also update the docs");
/// let m = Message::user(text.clone());
/// assert_eq!(marker::classify(&m), Some(MarkerKind::Batch));
/// assert_eq!(marker::parse_body(&m).as_deref(), Some("Goal: ship it"));
/// ```
pub fn split_merged(text: &str) -> Option<(&str, &str)> {
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

/// The body of a marker: exactly what [`render_text`] was given for markers written here; for
/// a foreign (Hermes Agent) summary, the text after its first line.
pub fn parse_body(m: &Message) -> Option<String> {
    let text = m.text();
    let kind = classify(m)?;
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
pub const RECALL_NOTE: &str = "Detail left out of this summary is archived and can be recalled: \
call the recall_compacted tool with a search query, or with the handle shown in a trimmed \
output, to read the original text.";

/// `body` followed by a blank line and [`RECALL_NOTE`], for summaries written while a store
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

/// `body` without a trailing [`RECALL_NOTE`] (what to hand a summarizer as the previous
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
    fn foreign_summaries_are_batch() {
        let m = Message::user("[CONTEXT COMPACTION] Earlier turns were compacted.\nGoal: x");
        assert_eq!(classify(&m), Some(MarkerKind::Batch));
        assert_eq!(parse_body(&m).as_deref(), Some("Goal: x"));
        let legacy = Message::assistant("[CONTEXT SUMMARY]: stuff");
        assert_eq!(classify(&legacy), Some(MarkerKind::Batch));
        assert_eq!(classify(&Message::user("hello")), None);
    }
}
