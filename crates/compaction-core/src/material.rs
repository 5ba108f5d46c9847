//! Serializing a span of messages as plain text for a summarizer.
//!
//! Each message becomes a role tag line and its text; tool calls become `name(args)`; a tool
//! result is tagged with the tool it answers. An assistant's inline reasoning blocks
//! (`<think>`, `<reasoning>` and the like, closed or not) are left out, and attachment
//! directives (`MEDIA:<path>` lines) and images are noted by count only. Long contents keep
//! their head and tail with an explicit `[truncated N chars]` note; when the whole material
//! would exceed its bound, the oldest-but-first messages are dropped with an explicit note.
//!
//! Secrets are redacted before anything is cut: each content and each argument string is
//! redacted around the parts that are kept ([`redacted_head`](compaction_redact::redacted_head) and
//! [`redacted_tail`](compaction_redact::redacted_tail)), so a key straddling a cut is recognised whole and a cut never
//! leaves the prefix of a key with part of its body. A secret that runs from the end of one
//! message into the start of the next is redacted in both ([`redact_adjacent`](compaction_redact::redact_adjacent)). The
//! finished material is redacted once more as a whole.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::message::Message;
use crate::prune::CallIndex;
use crate::redact;

/// Bounds of the serialized material.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MaterialConfig {
    /// Characters of a single message kept before cutting (head + tail). Default 6,000.
    pub max_message_chars: usize,
    /// Characters of what a summary job sends: the material and the previous summary
    /// together (the material gets what the summary leaves, and at least half). Default
    /// 200,000.
    pub max_total_chars: usize,
    /// Characters of one tool-call argument string shown. Default 500.
    pub max_argument_chars: usize,
}

impl Default for MaterialConfig {
    fn default() -> Self {
        MaterialConfig {
            max_message_chars: crate::defaults::MATERIAL_MAX_MESSAGE_CHARS,
            max_total_chars: crate::defaults::MATERIAL_MAX_TOTAL_CHARS,
            max_argument_chars: crate::defaults::MATERIAL_MAX_ARGUMENT_CHARS,
        }
    }
}

/// Serializes `messages` for a summarizer, redacted. `context` is the whole transcript the span
/// came from, used to name the tools that results answer.
pub fn serialize(messages: &[Message], context: &[Message], cfg: &MaterialConfig) -> String {
    let calls = CallIndex::build(context);
    // A secret split across two neighbouring messages (the end of one tool output, the start
    // of the next) is redacted in both before each is serialized on its own.
    let messages = redact::redact_adjacent_messages(messages);
    let messages: &[Message] = &messages;
    // Serialize the first message and then the newest ones until the bound is reached, so the
    // work follows the bound rather than the span.
    let mut blocks: Vec<String> = Vec::new();
    let mut used = 0usize;
    if let Some((first, rest)) = messages.split_first() {
        let b = serialize_one(first, &calls, cfg);
        used += b.len();
        let mut tail: Vec<String> = Vec::new();
        for m in rest.iter().rev() {
            if used > cfg.max_total_chars.saturating_mul(4) {
                break;
            }
            let b = serialize_one(m, &calls, cfg);
            used += b.len();
            tail.push(b);
        }
        let skipped = rest.len() - tail.len();
        blocks.push(b);
        if skipped > 0 {
            blocks.push(format!(
                "[{skipped} messages omitted here to keep the material within bounds]\n"
            ));
        }
        blocks.extend(tail.into_iter().rev());
    }
    let text = bound_total(blocks, cfg.max_total_chars);
    redact::redact(&text).into_owned()
}

fn serialize_one(m: &Message, calls: &CallIndex<'_>, cfg: &MaterialConfig) -> String {
    let mut out = String::new();
    let tag = if m.is_tool() {
        match calls.for_result(m) {
            Some(info) => format!("[tool result: {}]", info.name),
            None => "[tool result]".to_owned(),
        }
    } else if crate::marker::classify(m).is_some() {
        "[earlier summary]".to_owned()
    } else {
        format!("[{}]", m.role())
    };
    out.push_str(&tag);
    out.push('\n');
    let text = m.text();
    // An assistant's inline reasoning is private, like its reasoning field.
    let text = if m.is_assistant() && crate::marker::classify(m).is_none() {
        strip_inline_reasoning(&text)
    } else {
        Cow::Borrowed(&*text)
    };
    let (text, media) = strip_media_directives(&text);
    if !text.trim().is_empty() {
        out.push_str(&cut_middle(&text, cfg.max_message_chars));
        out.push('\n');
    }
    let images = m.content().map(|c| c.image_count()).unwrap_or(0);
    if images > 0 {
        out.push_str(&format!("[{images} image(s) omitted]\n"));
    }
    if media > 0 {
        out.push_str(&format!("[{media} media attachment(s) omitted]\n"));
    }
    for c in m.tool_calls() {
        out.push_str("-> ");
        out.push_str(&c.function.name);
        out.push('(');
        out.push_str(&cut_middle(&c.function.arguments, cfg.max_argument_chars));
        out.push_str(")\n");
    }
    out
}

/// The bounds for the material of a job that also sends a previous summary of
/// `previous_chars` characters: the two share [`MaterialConfig::max_total_chars`] (spec
/// section 9: the compaction request itself must fit the summarizer's window, however large
/// the summary it folds has grown). The material gets what the summary leaves, and never less
/// than half; [`bound_previous`] then gives the summary what the material left.
pub(crate) fn share(previous_chars: usize, cfg: &MaterialConfig) -> MaterialConfig {
    let max = cfg.max_total_chars;
    MaterialConfig {
        max_total_chars: max - previous_chars.min(max / 2),
        ..cfg.clone()
    }
}

/// `previous` cut to what `material` leaves of [`MaterialConfig::max_total_chars`] (at least a
/// quarter of it), keeping its head and tail around an explicit note, redacted before it is
/// cut ([`cut_middle`]); unchanged when it fits.
pub(crate) fn bound_previous(previous: &str, material: &str, cfg: &MaterialConfig) -> String {
    let max = cfg.max_total_chars;
    let room = max.saturating_sub(material.chars().count()).max(max / 4);
    if previous.chars().count() <= room {
        return previous.to_owned();
    }
    // The note takes a few dozen characters of the room.
    cut_middle(previous, room.saturating_sub(40).max(1))
}

/// Removes the inline reasoning of an assistant's content (`<think>`, `<thinking>`,
/// `<thought>`, `<reasoning>`, `<reasoning_scratchpad>` and `<reflection>` blocks, any case),
/// which a summarizer must not see any more than the separate reasoning field:
///
/// - a closed block goes wherever it is, with everything nested in it (tags of any of these
///   names nest and close each other);
/// - an opening tag that is never closed swallows the rest of the text when it starts a line
///   (the model never finished thinking), and is prose otherwise;
/// - a closing tag without an opening one drops everything before it when it starts or ends a
///   line (the server stripped the opening tag), and is prose otherwise.
///
/// Linear in the text.
pub(crate) fn strip_inline_reasoning(text: &str) -> Cow<'_, str> {
    static TAG: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)<(/?)\s*(?:think|thinking|thought|reasoning|reasoning_scratchpad|reflection)\s*>",
        )
        .expect("valid reasoning tag regex")
    });
    if !text.contains('<') {
        return Cow::Borrowed(text);
    }
    // (start, end, closing) of every tag, and the tag each one is paired with.
    let tags: Vec<(usize, usize, bool)> = TAG
        .captures_iter(text)
        .filter_map(|c| {
            let m = c.get(0)?;
            Some((m.start(), m.end(), !c[1].is_empty()))
        })
        .collect();
    if tags.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut paired = vec![false; tags.len()];
    let mut open: Vec<usize> = Vec::new();
    for (i, &(_, _, closing)) in tags.iter().enumerate() {
        if !closing {
            open.push(i);
        } else if let Some(o) = open.pop() {
            paired[o] = true;
            paired[i] = true;
        }
    }
    // Whether only spaces separate `at` from the start (end) of its line: each check walks
    // the whitespace next to one tag, so the checks together stay linear.
    let line_start = |at: usize| {
        text[..at]
            .chars()
            .rev()
            .find(|c| *c == '\n' || !c.is_whitespace())
            .is_none_or(|c| c == '\n')
    };
    let line_end = |at: usize| {
        text[at..]
            .chars()
            .find(|c| *c == '\n' || !c.is_whitespace())
            .is_none_or(|c| c == '\n')
    };
    // Removed byte ranges in order; `keep_from` is where the kept text starts.
    let mut removed: Vec<(usize, usize)> = Vec::new();
    let mut keep_from = 0;
    let mut keep_to = text.len();
    let mut depth = 0usize;
    let mut block_start = 0;
    for (i, &(start, end, closing)) in tags.iter().enumerate() {
        match (paired[i], closing) {
            (true, false) => {
                if depth == 0 {
                    block_start = start;
                }
                depth += 1;
            }
            (true, true) => {
                depth -= 1;
                if depth == 0 {
                    removed.push((block_start, end));
                }
            }
            // Never closed: the rest is reasoning when the tag starts a line.
            (false, false) if depth == 0 && line_start(start) => {
                keep_to = start;
                break;
            }
            // Closed without an opening tag: what precedes it is reasoning.
            (false, true) if depth == 0 && (line_start(start) || line_end(end)) => {
                keep_from = end;
                removed.clear();
            }
            _ => {}
        }
    }
    let mut out = String::with_capacity(keep_to.saturating_sub(keep_from));
    let mut at = keep_from;
    for (s, e) in removed {
        if s >= keep_to {
            break;
        }
        out.push_str(&text[at.max(keep_from)..s.max(at)]);
        at = e;
    }
    if at < keep_to {
        out.push_str(&text[at..keep_to]);
    }
    Cow::Owned(out.trim().to_owned())
}

/// Removes `MEDIA:<path>` directive lines (Hermes Agent's attachment convention: a line
/// naming a file the platform sends as an attachment) and counts them: like an image, an
/// attachment is noted by count, never sent as text. Only whole lines with a non-empty
/// target count; a mention in prose is text.
pub(crate) fn strip_media_directives(text: &str) -> (Cow<'_, str>, usize) {
    if !text.contains("MEDIA:") {
        return (Cow::Borrowed(text), 0);
    }
    let is_directive = |line: &str| {
        line.trim()
            .strip_prefix("MEDIA:")
            .is_some_and(|target| !target.trim().is_empty())
    };
    let mut count = 0;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if is_directive(line) {
            count += 1;
        } else {
            out.push_str(line);
        }
    }
    if count == 0 {
        return (Cow::Borrowed(text), 0);
    }
    (Cow::Owned(out), count)
}

/// Keeps the head and tail of `text` within `max` characters, with an explicit note of what
/// was cut. The text is redacted first (see the [module docs](self)), so the result never
/// holds a secret, whole or in part, that [`redact`](compaction_redact::redact) recognises.
pub fn cut_middle(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return redact::redact(text).into_owned();
    }
    let head_n = max * 2 / 3;
    let tail_n = max - head_n;
    let head = redact::redacted_head(text, head_n);
    let tail = redact::redacted_tail(text, tail_n);
    format!(
        "{head}\n[truncated {} chars]\n{tail}",
        total - head_n - tail_n
    )
}

fn bound_total(blocks: Vec<String>, max: usize) -> String {
    let total: usize = blocks.iter().map(|b| b.chars().count() + 1).sum();
    if total <= max || blocks.len() < 3 {
        return blocks.join("\n");
    }
    // Keep the first block and as many of the newest blocks as fit.
    let first = &blocks[0];
    let mut budget = max.saturating_sub(first.chars().count() + 64);
    let mut keep_from = blocks.len();
    while keep_from > 1 {
        let len = blocks[keep_from - 1].chars().count() + 1;
        if len > budget {
            break;
        }
        budget -= len;
        keep_from -= 1;
    }
    let dropped = keep_from - 1;
    let mut out = first.clone();
    out.push('\n');
    if dropped > 0 {
        out.push_str(&format!(
            "[{dropped} messages omitted here to keep the material within bounds]\n\n"
        ));
    }
    out.push_str(&blocks[keep_from..].join("\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    #[test]
    fn tags_roles_calls_and_results() {
        let msgs = vec![
            Message::user("please list"),
            Message::assistant_tool_calls(
                "listing",
                vec![ToolCall::function("a", "ls", r#"{"path":"/tmp"}"#)],
            ),
            Message::tool_result("a", "f1\nf2"),
        ];
        let s = serialize(&msgs, &msgs, &MaterialConfig::default());
        assert_eq!(
            s,
            "[user]\nplease list\n\n[assistant]\nlisting\n-> ls({\"path\":\"/tmp\"})\n\n[tool result: ls]\nf1\nf2\n"
        );
    }

    #[test]
    fn long_content_is_cut_with_a_note() {
        let text = "a".repeat(100) + &"b".repeat(100);
        let cut = cut_middle(&text, 30);
        assert!(cut.starts_with(&"a".repeat(20)));
        assert!(cut.ends_with(&"b".repeat(10)));
        assert!(cut.contains("[truncated 170 chars]"));
    }

    #[test]
    fn total_is_bounded_keeping_first_and_newest() {
        let msgs: Vec<Message> = (0..50)
            .map(|i| Message::user(format!("msg {i} {}", "x".repeat(100))))
            .collect();
        let cfg = MaterialConfig {
            max_total_chars: 1_000,
            ..MaterialConfig::default()
        };
        let s = serialize(&msgs, &msgs, &cfg);
        assert!(s.chars().count() <= 1_100);
        assert!(s.contains("msg 0 "));
        assert!(s.contains("msg 49 "));
        assert!(s.contains("messages omitted here"));
    }

    /// The bounds of a job's material and previous summary (the examples of [`share`] and
    /// [`bound_previous`]).
    #[test]
    fn the_material_and_the_previous_summary_share_one_bound() {
        let cfg = MaterialConfig {
            max_total_chars: 1_000,
            ..MaterialConfig::default()
        };
        assert_eq!(share(100, &cfg).max_total_chars, 900);
        assert_eq!(share(5_000, &cfg).max_total_chars, 500);
        let material = "m".repeat(500);
        let previous = bound_previous(&"p".repeat(5_000), &material, &cfg);
        assert!(previous.chars().count() + material.len() <= 1_050);
        assert!(previous.contains("[truncated"));
    }

    #[test]
    fn the_share_and_the_bound_hold_at_every_size() {
        let cfg = MaterialConfig {
            max_total_chars: 10_000,
            ..MaterialConfig::default()
        };
        for previous in [0, 1, 4_999, 5_000, 5_001, 9_999, 10_000, 50_000] {
            let room = share(previous, &cfg).max_total_chars;
            assert!((5_000..=10_000).contains(&room), "{previous}: {room}");
            assert_eq!(room, 10_000 - previous.min(5_000));
            for material_len in [0, 100, room] {
                let p = bound_previous(&"p".repeat(previous), &"m".repeat(material_len), &cfg);
                let total = p.chars().count() + material_len;
                assert!(
                    total <= 10_000 || p.len() == previous,
                    "{previous}/{material_len}: {total}"
                );
                assert!(p.chars().count() <= previous.max(1), "{previous}: grew");
            }
        }
    }

    /// Closed, unclosed and stray tags (the examples of [`strip_inline_reasoning`]).
    #[test]
    fn inline_reasoning_is_stripped() {
        assert_eq!(
            strip_inline_reasoning("<think>plan</think>The fix is in lexer.rs."),
            "The fix is in lexer.rs."
        );
        assert_eq!(
            strip_inline_reasoning("Done.\n<reasoning>never closed"),
            "Done."
        );
        assert_eq!(strip_inline_reasoning("plan\n</think>\nDone."), "Done.");
        assert_eq!(
            strip_inline_reasoning("the <think> tag marks reasoning"),
            "the <think> tag marks reasoning"
        );
    }

    #[test]
    fn reasoning_stripping_is_linear_on_hostile_input() {
        let hostile = "<think>".repeat(20_000) + &"</think>x".repeat(20_000);
        let text = strip_inline_reasoning(&hostile);
        assert!(text.len() <= hostile.len());
        let stray = "a</think>".repeat(50_000) + "b";
        assert!(strip_inline_reasoning(&stray).contains("a</think>a"));
    }
}
