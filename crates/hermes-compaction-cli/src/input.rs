//! Reading a transcript from disk with errors that name the file and the line.
//!
//! Every problem is reported as `FILE:LINE: reason` for JSONL input and `FILE:[INDEX]: reason`
//! for a JSON array (0-based message index); problems with the file as a whole use line 0.
//! Reasons never quote message text.

use std::fmt;
use std::path::{Path, PathBuf};

use compaction_logs as logs;
use hermes_compaction::core::Message;
use hermes_compaction::core::error::Location;
use hermes_compaction::core::parse::{self, Format};
use hermes_compaction::core::validate::{self, Issue};

/// A transcript read from a file, with the line of each message.
#[derive(Clone, Debug)]
pub struct Input {
    /// The file it came from.
    pub path: PathBuf,
    /// The messages, in order.
    pub messages: Vec<Message>,
    /// The format on disk.
    pub format: Format,
    /// Read as Anthropic Messages (and written back so by `compact`).
    pub anthropic: bool,
    /// For JSONL input, the 1-based line of each message.
    lines: Vec<usize>,
}

/// Where in an input file a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// The file as a whole (printed as line 0).
    File,
    /// A 1-based line of a JSONL file.
    Line(usize),
    /// A 0-based message index of a JSON array.
    Index(usize),
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::File => f.write_str("0"),
            Position::Line(n) => write!(f, "{n}"),
            Position::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A transcript file that cannot be used: `FILE:POSITION: reason`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}:{position}: {reason}", path.display())]
pub struct InputError {
    /// The file.
    pub path: PathBuf,
    /// Where in it.
    pub position: Position,
    /// Why (no message text).
    pub reason: String,
}

/// The format of an input file (`--format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// Recognise it: an agent's own log (Claude Code, Codex, pi, Gemini CLI) from its first
    /// lines, else Anthropic Messages when a message has Anthropic tool or thinking blocks,
    /// else OpenAI chat.
    #[default]
    Auto,
    /// OpenAI chat messages, JSONL or a JSON array.
    Openai,
    /// Anthropic Messages (`tool_use`/`tool_result`/`thinking` content blocks), JSONL or a
    /// JSON array; `compact` writes the result back in the same dialect.
    Anthropic,
    /// A Claude Code project log (`~/.claude/projects/*/SESSION.jsonl`, or a subagent log).
    ClaudeCode,
    /// A Codex rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
    Codex,
    /// A pi coding-agent session.
    Pi,
    /// A Gemini CLI chat recording (`~/.gemini/tmp/*/chats/session-*.json`; positions are
    /// record indices).
    Gemini,
}

/// How strict [`Input::read`] is about the transcript's shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Strictness {
    /// Refuse tool results that answer no earlier call, lack an id, repeat, or are separated
    /// from their call (every compaction mode needs the pairing).
    pub pairing: bool,
    /// Refuse roles other than system, developer, user, assistant and tool.
    pub known_roles: bool,
}

impl Strictness {
    /// What the compaction modes require: known roles and intact tool pairing.
    pub const COMPACTION: Strictness = Strictness {
        pairing: true,
        known_roles: true,
    };
}

impl Input {
    /// Reads and parses `path` (JSONL or a JSON array), then checks the transcript against
    /// `strictness`. An empty file (or one with only blank lines) is an error.
    pub fn read(path: &Path, strictness: Strictness) -> Result<Input, InputError> {
        let bytes = std::fs::read(path).map_err(|e| InputError {
            path: path.to_owned(),
            position: Position::File,
            reason: format!("cannot read the file: {}", io_reason(&e)),
        })?;
        Input::from_bytes(path, &bytes, strictness)
    }

    /// Reads `path` in `format` (an agent's own log is converted; `auto` recognises it from
    /// the first lines), then checks it as [`Input::read`] does.
    pub fn read_format(
        path: &Path,
        format: InputFormat,
        strictness: Strictness,
    ) -> Result<Input, InputError> {
        let bytes = std::fs::read(path).map_err(|e| InputError {
            path: path.to_owned(),
            position: Position::File,
            reason: format!("cannot read the file: {}", io_reason(&e)),
        })?;
        Input::from_bytes_format(path, &bytes, format, strictness)
    }

    /// Parses bytes as if read from `path` (for tests and embedded sessions).
    pub fn from_bytes(
        path: &Path,
        bytes: &[u8],
        strictness: Strictness,
    ) -> Result<Input, InputError> {
        Input::from_bytes_format(path, bytes, InputFormat::Openai, strictness)
    }

    /// Parses bytes in `format` as if read from `path`.
    pub fn from_bytes_format(
        path: &Path,
        bytes: &[u8],
        format: InputFormat,
        strictness: Strictness,
    ) -> Result<Input, InputError> {
        let err = |position, reason: String| InputError {
            path: path.to_owned(),
            position,
            reason,
        };
        let text = std::str::from_utf8(bytes).ok();
        let anthropic = match format {
            InputFormat::Anthropic => true,
            InputFormat::Auto => text.is_some_and(|t| {
                logs::detect(t).is_none() && hermes_compaction::core::anthropic::looks_like(t)
            }),
            _ => false,
        };
        let log_format = match format {
            InputFormat::Openai | InputFormat::Anthropic => None,
            InputFormat::Auto => text.and_then(logs::detect),
            InputFormat::ClaudeCode => Some(logs::Format::ClaudeCode),
            InputFormat::Codex => Some(logs::Format::Codex),
            InputFormat::Pi => Some(logs::Format::Pi),
            InputFormat::Gemini => Some(logs::Format::Gemini),
        };
        let (messages, format, lines) = match log_format {
            Some(f) => {
                let text = std::str::from_utf8(bytes).map_err(|e| {
                    let offset = e.valid_up_to();
                    let line = bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
                    err(
                        Position::Line(line),
                        format!("input is not valid UTF-8 (byte offset {offset})"),
                    )
                })?;
                let text = text.strip_prefix('\u{feff}').unwrap_or(text);
                let log = logs::read(f, text, logs::Options::default()).map_err(|e| {
                    let position = match e.position {
                        logs::Position::Line(n) => Position::Line(n),
                        logs::Position::Record(i) => Position::Index(i),
                        _ => Position::File,
                    };
                    err(position, format!("{} log: {}", f.name(), e.reason))
                })?;
                (log.messages, Format::Jsonl, log.lines)
            }
            None if anthropic => {
                let text = text.ok_or_else(|| {
                    parse::parse_transcript(bytes)
                        .err()
                        .map(|e| parse_error(path, &e))
                        .unwrap_or_else(|| err(Position::File, "input is not valid UTF-8".into()))
                })?;
                let messages = hermes_compaction::core::anthropic::parse(text)
                    .map_err(|e| parse_error(path, &e))?;
                let array = text.trim_start().starts_with('[');
                let format = if array {
                    Format::JsonArray
                } else {
                    Format::Jsonl
                };
                // Each message's line is its Anthropic message's line.
                let lines = if array {
                    Vec::new()
                } else {
                    anthropic_lines(text, &messages)
                };
                (messages, format, lines)
            }
            None => {
                let (messages, format) =
                    parse::parse_transcript(bytes).map_err(|e| parse_error(path, &e))?;
                let lines = match format {
                    // The input parsed, so it is UTF-8.
                    Format::Jsonl => jsonl_lines(std::str::from_utf8(bytes).unwrap_or_default()),
                    Format::JsonArray => Vec::new(),
                };
                (messages, format, lines)
            }
        };
        if messages.is_empty() {
            return Err(err(
                Position::File,
                "the file holds no messages (empty transcript)".into(),
            ));
        }
        let input = Input {
            path: path.to_owned(),
            messages,
            format,
            anthropic,
            lines,
        };
        for issue in validate::validate(&input.messages).issues {
            let refused = match &issue {
                Issue::UnknownRole { .. } => strictness.known_roles,
                Issue::OrphanToolResult { .. }
                | Issue::ToolResultWithoutId { .. }
                | Issue::DuplicateToolCallId { .. }
                | Issue::NonAdjacentToolResult { .. }
                | Issue::DuplicateToolResult { .. } => strictness.pairing,
                // A call without a result is what an interrupted turn leaves; the planners
                // keep such a group whole.
                _ => false,
            };
            if refused {
                let (index, reason) = describe(&issue);
                return Err(err(input.position_of(index), reason));
            }
        }
        Ok(input)
    }

    /// Where message `index` is in the file.
    pub fn position_of(&self, index: usize) -> Position {
        match self.format {
            Format::Jsonl => self
                .lines
                .get(index)
                .map_or(Position::File, |&l| Position::Line(l)),
            Format::JsonArray => Position::Index(index),
        }
    }
}

/// The `FILE:LINE: reason` of a parse error.
pub fn parse_error(path: &Path, e: &hermes_compaction::core::Error) -> InputError {
    InputError {
        path: path.to_owned(),
        position: match e.location() {
            Some(Location::Line(n)) => Position::Line(n),
            Some(Location::Index(i)) => Position::Index(i),
            _ => Position::File,
        },
        reason: e.reason().to_string(),
    }
}

/// 1-based line numbers of the non-blank lines, which is where `parse_jsonl` finds messages.
fn jsonl_lines(text: &str) -> Vec<usize> {
    text.split('\n')
        .enumerate()
        .filter(|(_, l)| !l.strip_suffix('\r').unwrap_or(l).trim().is_empty())
        .map(|(i, _)| i + 1)
        .collect()
}

/// The line of each message read from Anthropic JSONL: the messages of one original carry its
/// group number (its 0-based line) in their tag.
fn anthropic_lines(text: &str, messages: &[Message]) -> Vec<usize> {
    let lines = jsonl_lines(text);
    messages
        .iter()
        .map(|m| {
            m.meta()
                .and_then(|meta| meta.extra.get(hermes_compaction::core::anthropic::TAG_KEY))
                .and_then(|t| t.get("g"))
                .and_then(serde_json::Value::as_u64)
                .map_or(lines.first().copied().unwrap_or(0), |g| g as usize + 1)
        })
        .collect()
}

/// The message index of an issue and its reason without the index (the position says where).
fn describe(issue: &Issue) -> (usize, String) {
    match issue {
        // The role itself is not quoted: it is transcript text.
        Issue::UnknownRole { index } => (
            *index,
            "unknown role (known: system, developer, user, assistant, tool)".into(),
        ),
        Issue::OrphanToolResult { index } => (
            *index,
            "tool result answers no earlier tool call (orphan tool result)".into(),
        ),
        Issue::ToolResultWithoutId { index } => (*index, "tool result has no tool_call_id".into()),
        Issue::DuplicateToolCallId { index } => (*index, "tool call id used before".into()),
        Issue::NonAdjacentToolResult { index, call_index } => (
            *index,
            format!("tool result is not adjacent to its call (message index {call_index})"),
        ),
        Issue::DuplicateToolResult { index } => {
            (*index, "a second result for the same tool call".into())
        }
        Issue::UnansweredToolCall { index, .. } => (*index, issue.to_string()),
        other => (0, other.to_string()),
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        std::io::ErrorKind::IsADirectory => "is a directory".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Input, InputError> {
        Input::from_bytes(
            Path::new("t.jsonl"),
            text.as_bytes(),
            Strictness::COMPACTION,
        )
    }

    #[test]
    fn lines_skip_blanks() {
        let i = read("\n{\"role\":\"user\",\"content\":\"a\"}\n\n{\"role\":\"x\"}\n").unwrap_err();
        assert_eq!(i.position, Position::Line(4));
        assert!(i.reason.starts_with("unknown role ("), "{}", i.reason);
        assert_eq!(i.to_string().split(": ").next(), Some("t.jsonl:4"));
    }

    #[test]
    fn orphan_is_refused_only_when_pairing_is_needed() {
        let text = "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"tool\",\"tool_call_id\":\"c9\",\"content\":\"r\"}\n";
        let e = read(text).unwrap_err();
        assert_eq!(e.position, Position::Line(2));
        let ok = Input::from_bytes(Path::new("t"), text.as_bytes(), Strictness::default());
        assert_eq!(ok.unwrap().messages.len(), 2);
    }

    #[test]
    fn array_positions_are_indices() {
        let e = Input::from_bytes(
            Path::new("a.json"),
            b"[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"robot\"}]",
            Strictness::COMPACTION,
        )
        .unwrap_err();
        assert_eq!(e.position, Position::Index(1));
        assert!(e.to_string().starts_with("a.json:[1]: unknown role"));
    }

    #[test]
    fn empty_and_blank_files_are_refused() {
        for text in ["", "\n\n  \n"] {
            let e = read(text).unwrap_err();
            assert_eq!(e.position, Position::File);
            assert!(e.reason.contains("empty"));
        }
    }
}
