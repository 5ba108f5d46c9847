//! Recognising a log's format from its first lines.

use serde_json::{Map, Value};

use crate::Format;

/// How many non-blank lines [`detect`] looks at, at most.
const LINES: usize = 32;

/// The agent log format of `text` (its first lines suffice), or `None` when it is none of
/// them (an OpenAI chat transcript, an Anthropic Messages transcript, or not a log at all).
///
/// - Claude Code: event lines with a `uuid`/`sessionId` and a `type` among `user`,
///   `assistant`, `progress`, `system`, `summary`, `file-history-snapshot`,
///   `queue-operation`.
/// - Codex: `{type, payload}` lines with a rollout type (`session_meta`, `response_item`,
///   `event_msg`, `turn_context`, `compacted`), or the earlier header `{id, timestamp,
///   instructions}`.
/// - pi: a `{type: "session"}` header with `cwd`, or `message` entries whose message role is
///   `toolResult`/`bashExecution` or whose entry has a `parentId`.
/// - Gemini CLI: a JSON document (spanning lines, or one line) with `sessionId` and a
///   `messages` list.
///
/// ```
/// use compaction_logs::{detect, Format};
/// assert_eq!(detect("{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{}}\n"), Some(Format::Codex));
/// assert_eq!(detect("{\"role\":\"user\",\"content\":\"hi\"}\n"), None);
/// assert_eq!(detect("{\n  \"sessionId\": \"s\",\n  \"messages\": []\n}\n"), Some(Format::Gemini));
/// ```
pub fn detect(text: &str) -> Option<Format> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut seen = 0;
    for line in text.split('\n') {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        seen += 1;
        if seen > LINES {
            break;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(obj)) => {
                if let Some(f) = of_line(&obj) {
                    return Some(f);
                }
            }
            // A document that spans lines: `{` alone (or an opening line that does not close)
            // is a pretty-printed JSON object; only Gemini's recordings are written so.
            Err(_) if seen == 1 && line.starts_with('{') => {
                return gemini_document(text).then_some(Format::Gemini);
            }
            _ => return None,
        }
    }
    None
}

fn of_line(obj: &Map<String, Value>) -> Option<Format> {
    let kind = obj.get("type").and_then(Value::as_str);
    if obj.contains_key("payload")
        && matches!(
            kind,
            Some("session_meta" | "response_item" | "event_msg" | "turn_context" | "compacted")
        )
    {
        return Some(Format::Codex);
    }
    if kind.is_none()
        && obj.contains_key("instructions")
        && obj.contains_key("id")
        && obj.contains_key("timestamp")
    {
        return Some(Format::Codex);
    }
    if obj.contains_key("sessionId") && obj.get("messages").is_some_and(Value::is_array) {
        return Some(Format::Gemini);
    }
    if (obj.contains_key("uuid") || obj.contains_key("sessionId") || obj.contains_key("messageId"))
        && matches!(
            kind,
            Some(
                "user"
                    | "assistant"
                    | "progress"
                    | "system"
                    | "summary"
                    | "file-history-snapshot"
                    | "queue-operation"
            )
        )
    {
        return Some(Format::ClaudeCode);
    }
    if kind == Some("summary") && obj.contains_key("leafUuid") {
        return Some(Format::ClaudeCode);
    }
    if kind == Some("session") && obj.contains_key("cwd") {
        return Some(Format::Pi);
    }
    if kind == Some("message") {
        let role = obj
            .get("message")
            .and_then(|m| m.get("role"))
            .and_then(Value::as_str);
        if obj.contains_key("parentId") || matches!(role, Some("toolResult" | "bashExecution")) {
            return Some(Format::Pi);
        }
        if obj.get("message").is_some_and(Value::is_object) && obj.contains_key("timestamp") {
            return Some(Format::Pi);
        }
    }
    None
}

/// Whether a multi-line document is a Gemini recording: its top-level keys (found without
/// parsing the whole document) include `sessionId` and `messages`.
fn gemini_document(text: &str) -> bool {
    let head: String = text.chars().take(64 * 1024).collect();
    head.contains("\"sessionId\"") && head.contains("\"messages\"")
}
