//! The crate's one error: where (line or record) and why, never what the log said.

use std::fmt;

/// Where in a log a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Position {
    /// The log as a whole.
    File,
    /// A 1-based line.
    Line(usize),
    /// The 0-based index of a record in a Gemini session's `messages`.
    Record(usize),
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::File => f.write_str("log"),
            Position::Line(n) => write!(f, "line {n}"),
            Position::Record(i) => write!(f, "messages[{i}]"),
        }
    }
}

/// Why a log could not be read. Never holds transcript text: fields are named by the reader,
/// JSON errors by category and column.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Reason {
    /// The line (or document) is not valid JSON.
    #[error("invalid JSON at column {column} ({category})")]
    Json {
        /// 1-based column reported by the JSON parser.
        column: usize,
        /// `syntax`, `unexpected end`, `data` or `I/O`.
        category: &'static str,
    },
    /// The line is JSON but not an object.
    #[error("expected a JSON object, found {found}")]
    NotAnObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// A field the reader needs has the wrong shape.
    #[error("field `{field}` {expected}")]
    Field {
        /// The field's name (the reader's own spelling, never a key read from the log).
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A pi session's last entry names a parent that is not in the log, or the tree loops.
    #[error("entry names a parent id that is not an earlier entry (broken session tree)")]
    BrokenTree,
}

/// A log that could not be read: `POSITION: reason`.
///
/// ```
/// use compaction_logs::{Format, Position};
/// let err = compaction_logs::read(Format::CODEX, "{\"type\":\"response_item\",\"payload\":7}\n", Default::default())
///     .unwrap_err();
/// assert_eq!(err.position, Position::Line(1));
/// assert_eq!(err.to_string(), "line 1: field `payload` must be an object");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{position}: {reason}")]
pub struct Error {
    /// Where.
    pub position: Position,
    /// Why.
    pub reason: Reason,
}

impl Error {
    pub(crate) fn line(line: usize, reason: Reason) -> Error {
        Error {
            position: Position::Line(line),
            reason,
        }
    }
}

impl Reason {
    pub(crate) fn field(field: &'static str, expected: &'static str) -> Reason {
        Reason::Field { field, expected }
    }
}
