//! The one error type of compaction-core, and its [`Result`] alias.
//!
//! Every fallible operation of the crate (reading a message or a transcript, assembling a
//! plan, applying an edit) returns [`Error`], under that one name (the per-module aliases
//! `ParseError`, `MessageError`, `PlanError` and `EditError` are gone).
//!
//! An error never carries transcript text: not a key, not a role, not a value. It names the
//! field and the position (line, message index, key index) instead.

use std::fmt;

/// Everything that can go wrong in compaction-core. Never contains transcript text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A transcript could not be read: where, and why (`reason` is one of the message-level
    /// variants below, [`Error::NotUtf8`] or [`Error::NotATranscript`]).
    #[error("{location}: {reason}")]
    Parse {
        /// Where in the input.
        location: Location,
        /// Why.
        reason: Box<Error>,
    },
    /// The bytes are not UTF-8.
    #[error("input is not valid UTF-8 (byte offset {offset})")]
    NotUtf8 {
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// The input is a JSON value that is neither a message nor an array of messages.
    #[error("expected JSONL messages or a JSON array of messages")]
    NotATranscript,
    /// A message is not valid JSON.
    #[error("invalid JSON at column {column}: {reason}")]
    Json {
        /// 1-based column reported by the JSON parser.
        column: usize,
        /// The parser's category of error.
        reason: &'static str,
    },
    /// A message is valid JSON but not an object.
    #[error("a message must be a JSON object, found {found}")]
    NotAnObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// A message has the same top-level key twice. The key itself is not quoted.
    #[error("{} (key index {index})", DuplicateKeyName(*field))]
    DuplicateKey {
        /// The name of the field when it is one the library knows (`role`, `content`, ...);
        /// `None` for any other key, whose text is never repeated.
        field: Option<&'static str>,
        /// 0-based position of the repeated key among the message's keys.
        index: usize,
    },
    /// A message has no `role`.
    #[error("message has no `role`")]
    MissingRole,
    /// A known message field of the wrong shape.
    #[error("field `{field}` {expected}")]
    InvalidField {
        /// The field name.
        field: &'static str,
        /// What was expected.
        expected: &'static str,
    },
    /// The transcript is not the one the plan was made from.
    #[error("the transcript changed since the plan was made")]
    StaleTranscript,
    /// The number of summaries does not match the jobs of a plan.
    #[error("expected {expected} summaries, got {got}")]
    SummaryCount {
        /// Jobs in the plan.
        expected: usize,
        /// Summaries given.
        got: usize,
    },
    /// Applying the plan would break tool-call pairing; nothing is changed.
    #[error("the plan would leave a tool call without its result or a result without its call")]
    WouldBreakToolPairs,
    /// Splices of an edit overlap or are out of order.
    #[error("splice {index} overlaps or precedes the previous splice")]
    Overlap {
        /// Index of the offending splice.
        index: usize,
    },
    /// A splice reaches past the end of the transcript.
    #[error("splice {index} ends at {end}, past the transcript length {len}")]
    OutOfRange {
        /// Index of the offending splice.
        index: usize,
        /// Its end.
        end: usize,
        /// Transcript length.
        len: usize,
    },
}

/// The result of a fallible compaction-core operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Where in a transcript the error is, for [`Error::Parse`].
    pub fn location(&self) -> Option<Location> {
        match self {
            Error::Parse { location, .. } => Some(*location),
            _ => None,
        }
    }

    /// The reason without the location: the inner reason of [`Error::Parse`], else itself.
    pub fn reason(&self) -> &Error {
        match self {
            Error::Parse { reason, .. } => reason,
            other => other,
        }
    }
}

/// Where in a transcript a problem was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// 1-based line of a JSONL input.
    Line(usize),
    /// 0-based element index of a JSON array input.
    Index(usize),
    /// The input as a whole.
    Input,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line(n) => write!(f, "line {n}"),
            Location::Index(i) => write!(f, "message index {i}"),
            Location::Input => f.write_str("input"),
        }
    }
}

struct DuplicateKeyName(Option<&'static str>);

impl fmt::Display for DuplicateKeyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(field) => write!(f, "duplicate key `{field}`"),
            None => f.write_str("duplicate key"),
        }
    }
}
