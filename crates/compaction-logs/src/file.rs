//! A transcript file's bytes in any format, with errors that name the file and the line.
//!
//! Every problem is reported as `FILE:LINE: reason` for JSONL input and `FILE:[INDEX]: reason`
//! for a JSON array (0-based message index); problems with the file as a whole use line 0.
//! Reasons never quote message text. Pure like the readers: the caller reads the file (the
//! path only names it in errors).

use std::fmt;
use std::path::{Path, PathBuf};

use compaction_anthropic as anthropic;
use compaction_core::Location;
use compaction_core::Message;
use compaction_core::parse::{self, Format as Layout};
use compaction_core::validate::{self, Issue};

use crate::Format;

/// How a transcript file is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TranscriptFormat {
    /// Recognise it: an agent's own log ([`detect`](crate::detect)), else Anthropic Messages
    /// when a message has Anthropic tool or thinking blocks, else OpenAI chat.
    #[default]
    Auto,
    /// OpenAI chat messages, JSONL or a JSON array.
    Openai,
    /// Anthropic Messages (`tool_use`/`tool_result`/`thinking` content blocks), JSONL or a
    /// JSON array.
    Anthropic,
    /// An agent's own session log.
    Log(Format),
}

impl TranscriptFormat {
    /// Every name [`from_name`](Self::from_name) takes, in order: `auto`, `openai`,
    /// `anthropic`, then the log-format table's ([`Format::all`]), so a command line's
    /// `--format` lists a registered format with no change of its own.
    ///
    /// ```
    /// use compaction_logs::{Format, TranscriptFormat};
    ///
    /// assert_eq!(TranscriptFormat::names()[..4], ["auto", "openai", "anthropic", "claude-code"]);
    /// assert_eq!(TranscriptFormat::from_name("pi"), Some(TranscriptFormat::Log(Format::PI)));
    /// assert_eq!(TranscriptFormat::from_name("yaml"), None);
    /// ```
    pub fn names() -> Vec<&'static str> {
        ["auto", "openai", "anthropic"]
            .into_iter()
            .chain(Format::all().into_iter().map(Format::name))
            .collect()
    }

    /// The format of a name from [`names`](Self::names).
    pub fn from_name(name: &str) -> Option<TranscriptFormat> {
        match name {
            "auto" => Some(TranscriptFormat::Auto),
            "openai" => Some(TranscriptFormat::Openai),
            "anthropic" => Some(TranscriptFormat::Anthropic),
            _ => Format::from_name(name).map(TranscriptFormat::Log),
        }
    }

    /// The name [`from_name`](Self::from_name) reads back.
    pub fn name(self) -> &'static str {
        match self {
            TranscriptFormat::Auto => "auto",
            TranscriptFormat::Openai => "openai",
            TranscriptFormat::Anthropic => "anthropic",
            TranscriptFormat::Log(f) => f.name(),
        }
    }
}

/// How strict [`TranscriptFile::parse`] is about the transcript's shape.
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

/// Where in a transcript file a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TranscriptPosition {
    /// The file as a whole (printed as line 0).
    File,
    /// A 1-based line of a JSONL file (or of an agent's log).
    Line(usize),
    /// A 0-based message index of a JSON array (or a Gemini record index).
    Index(usize),
}

impl fmt::Display for TranscriptPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TranscriptPosition::File => f.write_str("0"),
            TranscriptPosition::Line(n) => write!(f, "{n}"),
            TranscriptPosition::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A transcript file that cannot be used: `FILE:POSITION: reason`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}:{position}: {reason}", path.display())]
pub struct TranscriptError {
    /// The file.
    pub path: PathBuf,
    /// Where in it.
    pub position: TranscriptPosition,
    /// Why (no message text).
    pub reason: String,
}

impl TranscriptError {
    /// The file could not be read (`FILE:0: cannot read the file: no such file`): the
    /// caller's I/O error, worded without the platform's message where a plain one exists.
    ///
    /// ```
    /// use compaction_logs::TranscriptError;
    /// let io = std::io::Error::from(std::io::ErrorKind::NotFound);
    /// let e = TranscriptError::unreadable("t.jsonl".as_ref(), &io);
    /// assert_eq!(e.to_string(), "t.jsonl:0: cannot read the file: no such file");
    /// ```
    pub fn unreadable(path: &Path, e: &std::io::Error) -> TranscriptError {
        let reason = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".into(),
            std::io::ErrorKind::PermissionDenied => "permission denied".into(),
            std::io::ErrorKind::IsADirectory => "is a directory".into(),
            _ => e.to_string(),
        };
        TranscriptError {
            path: path.to_owned(),
            position: TranscriptPosition::File,
            reason: format!("cannot read the file: {reason}"),
        }
    }
}

/// A transcript parsed from a file's bytes, with the line of each message.
///
/// ```
/// use compaction_logs::{Strictness, TranscriptFile, TranscriptFormat, TranscriptPosition};
///
/// let text = "{\"role\":\"user\",\"content\":\"hi\"}\n\n{\"role\":\"assistant\",\"content\":\"hello\"}\n";
/// let file = TranscriptFile::parse("t.jsonl".as_ref(), text.as_bytes(), TranscriptFormat::Auto, Strictness::COMPACTION)
///     .unwrap();
/// assert_eq!(file.messages.len(), 2);
/// assert!(!file.anthropic);
/// assert_eq!(file.position_of(1), TranscriptPosition::Line(3));
///
/// // Errors name the file and the line, never the text.
/// let bad = "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"tool\",\"tool_call_id\":\"c9\",\"content\":\"secret\"}\n";
/// let e = TranscriptFile::parse("t.jsonl".as_ref(), bad.as_bytes(), TranscriptFormat::Openai, Strictness::COMPACTION)
///     .unwrap_err();
/// assert_eq!(e.to_string(), "t.jsonl:2: tool result answers no earlier tool call (orphan tool result)");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TranscriptFile {
    /// The file it came from.
    pub path: PathBuf,
    /// The messages, in order.
    pub messages: Vec<Message>,
    /// The layout on disk (an agent's log counts as JSONL).
    pub layout: Layout,
    /// Read as Anthropic Messages (a caller writing it back uses the same dialect).
    pub anthropic: bool,
    /// For JSONL input, the 1-based line of each message.
    lines: Vec<usize>,
}

impl TranscriptFile {
    /// Parses `bytes` read from `path` in `format` (an agent's own log is converted; `Auto`
    /// recognises it from the first lines), then checks the transcript against `strictness`.
    ///
    /// # Errors
    ///
    /// Bytes that do not parse in `format`, a file with no messages (empty or only blank
    /// lines), or a transcript `strictness` refuses: [`TranscriptError`] with the position.
    pub fn parse(
        path: &Path,
        bytes: &[u8],
        format: TranscriptFormat,
        strictness: Strictness,
    ) -> Result<TranscriptFile, TranscriptError> {
        let err = |position, reason: String| TranscriptError {
            path: path.to_owned(),
            position,
            reason,
        };
        let text = std::str::from_utf8(bytes).ok();
        // An agent's log saved as one JSON array of its records (as some exporters write a
        // Claude Code session): read as the same records one per line, positions given as
        // record indexes.
        let records = match format {
            TranscriptFormat::Auto | TranscriptFormat::Log(_) => text.and_then(records_as_lines),
            _ => None,
        };
        let anthropic = match format {
            TranscriptFormat::Anthropic => true,
            TranscriptFormat::Auto => text.is_some_and(|t| {
                crate::detect(t).is_none()
                    && records.as_deref().and_then(crate::detect).is_none()
                    && anthropic::looks_like(t)
            }),
            _ => false,
        };
        let log_format = match format {
            TranscriptFormat::Openai | TranscriptFormat::Anthropic => None,
            TranscriptFormat::Auto => match &records {
                Some(r) => crate::detect(r),
                None => text.and_then(crate::detect),
            },
            TranscriptFormat::Log(f) => Some(f),
        };
        let (messages, layout, lines) = match (log_format, &records) {
            (Some(f), Some(records)) => {
                let at = |line: usize| TranscriptPosition::Index(line.saturating_sub(1));
                crate::check_single(records, f).map_err(|m| err(at(m.line), m.to_string()))?;
                let log = crate::read(f, records, crate::Options::default()).map_err(|e| {
                    let position = match e.position {
                        crate::Position::Line(n) => at(n),
                        crate::Position::Record(i) => TranscriptPosition::Index(i),
                        crate::Position::File => TranscriptPosition::File,
                    };
                    err(
                        position,
                        format!("{} log (JSON array): {}", f.name(), e.reason),
                    )
                })?;
                (log.messages, Layout::JsonArray, Vec::new())
            }
            (Some(f), None) => {
                let text = std::str::from_utf8(bytes).map_err(|e| {
                    let offset = e.valid_up_to();
                    let line = bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
                    err(
                        TranscriptPosition::Line(line),
                        format!("input is not valid UTF-8 (byte offset {offset})"),
                    )
                })?;
                let text = text.strip_prefix('\u{feff}').unwrap_or(text);
                // A second log (or chat messages) after the first would be read as the first
                // one's format and dropped: refused, at its first line.
                crate::check_single(text, f)
                    .map_err(|m| err(TranscriptPosition::Line(m.line), m.to_string()))?;
                let log = crate::read(f, text, crate::Options::default()).map_err(|e| {
                    let position = match e.position {
                        crate::Position::Line(n) => TranscriptPosition::Line(n),
                        crate::Position::Record(i) => TranscriptPosition::Index(i),
                        crate::Position::File => TranscriptPosition::File,
                    };
                    err(position, format!("{} log: {}", f.name(), e.reason))
                })?;
                (log.messages, Layout::Jsonl, log.lines)
            }
            (None, _) if anthropic => {
                let text = text.ok_or_else(|| {
                    parse::parse_transcript(bytes)
                        .err()
                        .map(|e| parse_error(path, &e))
                        .unwrap_or_else(|| {
                            err(TranscriptPosition::File, "input is not valid UTF-8".into())
                        })
                })?;
                let messages = anthropic::parse(text).map_err(|e| parse_error(path, &e))?;
                let array = text.trim_start().starts_with('[');
                let layout = if array {
                    Layout::JsonArray
                } else {
                    Layout::Jsonl
                };
                // Each message's line is its Anthropic message's line.
                let lines = if array {
                    Vec::new()
                } else {
                    anthropic_lines(text, &messages)
                };
                (messages, layout, lines)
            }
            (None, _) => {
                let (messages, layout) =
                    parse::parse_transcript(bytes).map_err(|e| parse_error(path, &e))?;
                let lines = match layout {
                    // The input parsed, so it is UTF-8.
                    Layout::Jsonl => jsonl_lines(std::str::from_utf8(bytes).unwrap_or_default()),
                    Layout::JsonArray => Vec::new(),
                };
                (messages, layout, lines)
            }
        };
        if messages.is_empty() {
            return Err(err(
                TranscriptPosition::File,
                "the file holds no messages (empty transcript)".into(),
            ));
        }
        let file = TranscriptFile {
            path: path.to_owned(),
            messages,
            layout,
            anthropic,
            lines,
        };
        for issue in validate::validate(&file.messages).issues {
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
                return Err(err(file.position_of(index), reason));
            }
        }
        Ok(file)
    }

    /// Where message `index` is in the file.
    pub fn position_of(&self, index: usize) -> TranscriptPosition {
        match self.layout {
            Layout::Jsonl => self
                .lines
                .get(index)
                .map_or(TranscriptPosition::File, |&l| TranscriptPosition::Line(l)),
            Layout::JsonArray => TranscriptPosition::Index(index),
        }
    }
}

/// `text` as JSONL when it is one JSON array whose elements are all objects (a log's records
/// saved as one document): each record re-serialized on its own line, in order.
fn records_as_lines(text: &str) -> Option<String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if !text.trim_start().starts_with('[') {
        return None;
    }
    let records: Vec<serde_json::Value> = serde_json::from_str(text).ok()?;
    if records.is_empty() || !records.iter().all(serde_json::Value::is_object) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    for r in &records {
        out.push_str(&r.to_string());
        out.push('\n');
    }
    Some(out)
}

/// The `FILE:LINE: reason` of a parse error.
fn parse_error(path: &Path, e: &compaction_core::Error) -> TranscriptError {
    TranscriptError {
        path: path.to_owned(),
        position: match e.location() {
            Some(Location::Line(n)) => TranscriptPosition::Line(n),
            Some(Location::Index(i)) => TranscriptPosition::Index(i),
            _ => TranscriptPosition::File,
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
                .and_then(|meta| meta.extra.get(anthropic::TAG_KEY))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<TranscriptFile, TranscriptError> {
        TranscriptFile::parse(
            Path::new("t.jsonl"),
            text.as_bytes(),
            TranscriptFormat::Openai,
            Strictness::COMPACTION,
        )
    }

    #[test]
    fn lines_skip_blanks() {
        let i = read("\n{\"role\":\"user\",\"content\":\"a\"}\n\n{\"role\":\"x\"}\n").unwrap_err();
        assert_eq!(i.position, TranscriptPosition::Line(4));
        assert!(i.reason.starts_with("unknown role ("), "{}", i.reason);
        assert_eq!(i.to_string().split(": ").next(), Some("t.jsonl:4"));
    }

    #[test]
    fn orphan_is_refused_only_when_pairing_is_needed() {
        let text = "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"tool\",\"tool_call_id\":\"c9\",\"content\":\"r\"}\n";
        let e = read(text).unwrap_err();
        assert_eq!(e.position, TranscriptPosition::Line(2));
        let ok = TranscriptFile::parse(
            Path::new("t"),
            text.as_bytes(),
            TranscriptFormat::Openai,
            Strictness::default(),
        );
        assert_eq!(ok.unwrap().messages.len(), 2);
    }

    #[test]
    fn array_positions_are_indices() {
        let e = TranscriptFile::parse(
            Path::new("a.json"),
            b"[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"robot\"}]",
            TranscriptFormat::Openai,
            Strictness::COMPACTION,
        )
        .unwrap_err();
        assert_eq!(e.position, TranscriptPosition::Index(1));
        assert!(e.to_string().starts_with("a.json:[1]: unknown role"));
    }

    #[test]
    fn empty_and_blank_files_are_refused() {
        for text in ["", "\n\n  \n"] {
            let e = read(text).unwrap_err();
            assert_eq!(e.position, TranscriptPosition::File);
            assert!(e.reason.contains("empty"));
        }
    }
}
