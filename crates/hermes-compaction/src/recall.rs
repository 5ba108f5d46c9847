//! Recall of compacted content, as a tool an agent registers.
//!
//! Compaction never deletes: archived rows and the originals of trimmed results stay in the
//! store. [`recall_tool_definition`] is an OpenAI function tool, `recall_compacted`, that the
//! agent adds to its tool list; when the model calls it, [`recall`] executes the call against
//! the session's store and returns the tool result text: bounded, clearly labelled excerpts
//! (`[recalled from archived message 123]`, `[recalled from trimmed original trim-…]`), with
//! secrets redacted. A call
//! the model got wrong (bad JSON, no `query` or `handle`, an unknown handle) is answered with
//! an explanation the model can act on, not an error; only a failing store is an `Err`.
//!
//! Summaries written while a store is configured end with
//! the recall note ([`with_recall_note`](compaction_core::marker::with_recall_note)), so the model knows the tool exists.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use hermes_compaction::core::Message;
//! use hermes_compaction::recall::{recall, recall_tool_definition};
//! use hermes_compaction::store::Store;
//!
//! let store = Store::connect("sqlite::memory:").await.unwrap();
//! store.create_session("s").await.unwrap();
//! let original = Message::tool_result("c1", "full test log ... 3 failures");
//! store.store_original("s", "trim-00000000000000a1", &original).await.unwrap();
//!
//! assert_eq!(recall_tool_definition()["function"]["name"], "recall_compacted");
//! let text = recall(&*store, "s", r#"{"handle":"trim-00000000000000a1"}"#).await.unwrap();
//! assert_eq!(
//!     text,
//!     "[recalled from trimmed original trim-00000000000000a1, chars 0-28 of 28]\nfull test log ... 3 failures"
//! );
//! # }
//! ```

use serde::Deserialize;
use serde_json::{Value, json};

use compaction_core::Message;
use compaction_core::trim::RECALL_TOOL_NAME;
use compaction_store::{HitSource, RowId, StoreError, TranscriptStore};

/// How much one recall returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecallLimits {
    /// Characters of text one call returns at most (labels not counted). Default 8,000.
    pub max_chars: usize,
    /// Search hits shown at most. Default 5.
    pub max_hits: usize,
    /// Characters of each search excerpt. Default 1,200.
    pub excerpt_chars: usize,
}

impl Default for RecallLimits {
    fn default() -> Self {
        RecallLimits {
            max_chars: 8_000,
            max_hits: 5,
            excerpt_chars: 1_200,
        }
    }
}

/// The `recall_compacted` tool, in the OpenAI chat-completions `tools` format.
pub fn recall_tool_definition() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": RECALL_TOOL_NAME,
            "description": "Read conversation content that was compacted away to save context: \
                search earlier archived messages and trimmed tool outputs by words, or read a \
                trimmed output in full by the handle shown in its elision note. Give either \
                `query` or `handle` (or `message_id` from a search result).",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "Words that must all occur in the archived text (case-insensitive)."
                    },
                    "handle": {
                        "type": "string",
                        "description": "The handle of a trimmed output, like trim-0123456789abcdef."
                    },
                    "message_id": {
                        "type": "integer",
                        "description": "The id of an archived message, from a search result label."
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "With handle or message_id: the character to start reading at, for long texts."
                    }
                },
                "additionalProperties": false
            }
        }
    })
}

/// Executes a `recall_compacted` call with default [`RecallLimits`]. `arguments_json` is the
/// call's `function.arguments` string.
pub async fn recall(
    store: &dyn TranscriptStore,
    session: &str,
    arguments_json: &str,
) -> Result<String, StoreError> {
    recall_with(store, session, arguments_json, &RecallLimits::default()).await
}

/// Executes a `recall_compacted` call with the given limits.
pub async fn recall_with(
    store: &dyn TranscriptStore,
    session: &str,
    arguments_json: &str,
    limits: &RecallLimits,
) -> Result<String, StoreError> {
    let Ok(args) = serde_json::from_str::<Args>(arguments_json) else {
        return Ok(usage(
            "the arguments are not a JSON object of the documented fields",
        ));
    };
    let offset = args.offset.unwrap_or(0);
    if let Some(handle) = args
        .handle
        .as_deref()
        .map(str::trim)
        .filter(|h| !h.is_empty())
    {
        if !valid_handle(handle) {
            return Ok(usage("the handle is not valid"));
        }
        return Ok(match store.load_original(session, handle).await? {
            Some(m) => page(
                &format!("trimmed original {handle}"),
                &display_text(&m),
                offset,
                limits.max_chars,
                &format!("\"handle\":\"{handle}\""),
            ),
            None => format!(
                "[{RECALL_TOOL_NAME}: nothing is stored under handle {handle} in this session]"
            ),
        });
    }
    if let Some(id) = args.message_id {
        let rows = store.load_rows(session, &[id]).await?;
        return Ok(match rows.first() {
            Some(row) => page(
                &row_label(row.id, row.active),
                &display_text(&row.message),
                offset,
                limits.max_chars,
                &format!("\"message_id\":{id}"),
            ),
            None => format!("[{RECALL_TOOL_NAME}: this session has no message {id}]"),
        });
    }
    let Some(query) = args
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
    else {
        return Ok(usage("give `query` or `handle`"));
    };
    let hits = store
        .search_archived(session, query, limits.max_hits)
        .await?;
    if hits.is_empty() {
        return Ok(format!(
            "[{RECALL_TOOL_NAME}: no archived content of this session contains all of: {}]",
            clip_chars(&compaction_redact::redact(query), 200)
        ));
    }
    let terms: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let per_hit = limits
        .excerpt_chars
        .min(limits.max_chars / hits.len().max(1))
        .max(1);
    let mut out = String::new();
    for hit in &hits {
        let (label, follow) = match &hit.source {
            HitSource::Row(id) => (row_label(*id, false), format!("\"message_id\":{id}")),
            HitSource::Original(h) => (
                format!("trimmed original {h}"),
                format!("\"handle\":\"{h}\""),
            ),
            _ => continue,
        };
        let text = display_text(&hit.message);
        let total = text.chars().count();
        let (excerpt, start, end) = excerpt(&text, &terms, per_hit);
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&format!(
            "[recalled from {label}, chars {start}-{end} of {total}]\n"
        ));
        out.push_str(&excerpt);
        if end - start < total {
            out.push_str(&format!(
                "\n[excerpt; call {RECALL_TOOL_NAME} with {{{follow}}} to read it whole]"
            ));
        }
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    query: Option<String>,
    handle: Option<String>,
    message_id: Option<RowId>,
    offset: Option<usize>,
}

fn usage(problem: &str) -> String {
    format!(
        "[{RECALL_TOOL_NAME}: {problem}. Call it with {{\"query\": \"words to search for\"}} or \
         {{\"handle\": \"trim-…\"}} (optionally \"offset\" to read further), or \
         {{\"message_id\": 123}} from a search result.]"
    )
}

fn valid_handle(h: &str) -> bool {
    h.len() <= 128 && !h.chars().any(char::is_control)
}

fn row_label(id: RowId, active: bool) -> String {
    if active {
        format!("message {id}")
    } else {
        format!("archived message {id}")
    }
}

/// What a recalled message shows: its text, then its tool calls.
/// The text of a recalled message, redacted ([`compaction_redact`]) as a whole before
/// any page or excerpt is cut from it, so a cut never shows part of a secret and offsets stay
/// consistent between calls.
fn display_text(m: &Message) -> String {
    let s = display_unredacted(m);
    match compaction_redact::redact(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(r) => r,
    }
}

fn display_unredacted(m: &Message) -> String {
    let mut s = m.text().into_owned();
    for c in m.tool_calls() {
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str(&format!(
            "[tool call {} {}]",
            c.function.name, c.function.arguments
        ));
    }
    s
}

/// `max` characters of `text` from character `offset`, labelled, with a pointer to the rest.
fn page(label: &str, text: &str, offset: usize, max: usize, follow: &str) -> String {
    let total = text.chars().count();
    let start = offset.min(total);
    let body: String = text.chars().skip(start).take(max).collect();
    let end = start + body.chars().count();
    let mut out = format!("[recalled from {label}, chars {start}-{end} of {total}]\n{body}");
    if end < total {
        out.push_str(&format!(
            "\n[{} more chars: call {RECALL_TOOL_NAME} with {{{follow},\"offset\":{end}}} to read on]",
            total - end
        ));
    }
    out
}

/// About `width` characters of `text` around the first occurrence of any term (a third of the
/// window before it), as `(excerpt, start char, end char)`; the start when no term is found.
fn excerpt(text: &str, terms: &[String], width: usize) -> (String, usize, usize) {
    let chars: Vec<char> = text.chars().collect();
    let lower: Vec<char> = chars
        .iter()
        .map(|c| c.to_lowercase().next().unwrap_or(*c))
        .collect();
    let hit = terms
        .iter()
        .filter_map(|t| {
            let t: Vec<char> = t.chars().collect();
            (!t.is_empty() && t.len() <= lower.len())
                .then(|| lower.windows(t.len()).position(|w| w == t.as_slice()))
                .flatten()
        })
        .min()
        .unwrap_or(0);
    let start = hit
        .saturating_sub(width / 3)
        .min(chars.len().saturating_sub(width));
    let end = (start + width).min(chars.len());
    let mut s = String::new();
    if start > 0 {
        s.push('…');
    }
    s.extend(&chars[start..end]);
    if end < chars.len() {
        s.push('…');
    }
    (s, start, end)
}

fn clip_chars(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_center_on_the_first_term() {
        let text = format!("{}needle here{}", "a".repeat(100), "b".repeat(100));
        let (s, start, end) = excerpt(&text, &["needle".into()], 30);
        assert_eq!((start, end), (90, 120));
        assert_eq!(
            s,
            format!("…{}needle here{}…", "a".repeat(10), "b".repeat(9))
        );
        // Case-insensitive, and the start when nothing matches.
        assert_eq!(excerpt("Needle", &["needle".into()], 10).0, "Needle");
        assert_eq!(excerpt("abcdef", &["zz".into()], 3), ("abc…".into(), 0, 3));
    }

    #[test]
    fn pages_point_to_the_rest() {
        assert_eq!(
            page("x", "abcdef", 2, 3, "\"handle\":\"h\""),
            "[recalled from x, chars 2-5 of 6]\ncde\n[1 more chars: call recall_compacted with {\"handle\":\"h\",\"offset\":5} to read on]"
        );
        assert_eq!(
            page("x", "ab", 9, 3, ""),
            "[recalled from x, chars 2-2 of 2]\n"
        );
    }

    #[test]
    fn the_tool_definition_is_a_valid_function_schema() {
        let d = recall_tool_definition();
        assert_eq!(d["type"], "function");
        let props = d["function"]["parameters"]["properties"]
            .as_object()
            .unwrap();
        assert_eq!(
            props.keys().collect::<Vec<_>>(),
            ["query", "handle", "message_id", "offset"]
        );
    }
}
