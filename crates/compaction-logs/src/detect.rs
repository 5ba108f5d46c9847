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
/// - then the formats registered with [`Format::register`], in their order.
///
/// ```
/// use compaction_logs::{detect, Format};
/// assert_eq!(detect("{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{}}\n"), Some(Format::CODEX));
/// assert_eq!(detect("{\"role\":\"user\",\"content\":\"hi\"}\n"), None);
/// assert_eq!(detect("{\n  \"sessionId\": \"s\",\n  \"messages\": []\n}\n"), Some(Format::GEMINI));
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
                return Format::all().into_iter().find(|f| f.is_document_text(text));
            }
            _ => return None,
        }
    }
    None
}

/// A line of another format inside an agent's log: a mixed or concatenated file
/// ([`check_single`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MixedLog {
    /// The 1-based line (after a byte-order mark) of the first line of the other format.
    pub line: usize,
    /// The log's format (its first recognised lines).
    pub format: Format,
    /// The other line's format; `None` for a chat message (`role` and no `type`: OpenAI chat
    /// or Anthropic Messages).
    pub other: Option<Format>,
}

impl std::fmt::Display for MixedLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let other = self.other.map_or("a chat message", Format::label);
        write!(
            f,
            "{other} inside a {} log (a mixed or concatenated file would lose one of them): \
             split it into one file per log",
            self.format.name()
        )
    }
}

/// Checks that every line of a JSONL log in `format` that any reader recognises is of that
/// format: a line recognised as another agent's log, or a chat message (`role` without
/// `type`), is the first line of another log, when the file holds lines of `format` too. A Gemini recording (one JSON document) is not
/// checked line by line.
///
/// ```
/// use compaction_logs::{check_single, Format};
/// let codex = "{\"type\":\"session_meta\",\"payload\":{}}\n";
/// let claude = "{\"type\":\"user\",\"uuid\":\"u1\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n";
/// assert!(check_single(codex, Format::CODEX).is_ok());
/// let mixed = format!("{codex}{codex}{claude}");
/// let e = check_single(&mixed, Format::CODEX).unwrap_err();
/// assert_eq!((e.line, e.other), (3, Some(Format::CLAUDE_CODE)));
/// ```
///
/// # Errors
///
/// [`MixedLog`] names the first line of another format.
pub fn check_single(text: &str, format: Format) -> Result<(), MixedLog> {
    if format.is_document() {
        return Ok(());
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // A file with no line of `format` at all is left to the reader (it finds no messages);
    // a mixture is refused at the first line of the other format.
    let mut own = false;
    let mut first_other: Option<MixedLog> = None;
    for (i, line) in text.split('\n').enumerate() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let other = match of_line(&obj) {
            Some(f) if f == format => {
                own = true;
                continue;
            }
            Some(f) => Some(f),
            None if obj.contains_key("role") && !obj.contains_key("type") => None,
            None => continue,
        };
        first_other.get_or_insert(MixedLog {
            line: i + 1,
            format,
            other,
        });
        if own {
            break;
        }
    }
    match first_other {
        Some(mixed) if own => Err(mixed),
        _ => Ok(()),
    }
}

/// The first format of the table whose line test accepts `obj`.
fn of_line(obj: &Map<String, Value>) -> Option<Format> {
    Format::all().into_iter().find(|f| f.is_line(obj))
}
