//! What a format's reader implements ([`LogReader`]) and the line parser readers share.

use serde_json::{Map, Value};

use crate::Log;
use crate::error::{Error, Reason};

/// A reader of one log, fed line by line ([`Reader`](crate::Reader) drives it). A format's
/// row makes one per log with its [`NewReader`](crate::NewReader).
pub trait LogReader: std::fmt::Debug + Send {
    /// Reads line `at` (1-based; a trailing `\r` already removed; blank lines included, so a
    /// document format can keep them). A line format usually starts with
    /// [`parse_line`](crate::parse_line).
    ///
    /// # Errors
    ///
    /// The line (or a field of it) is not what the format allows.
    fn push_line(&mut self, at: usize, line: &str) -> Result<(), Error>;

    /// Ends the log.
    ///
    /// # Errors
    ///
    /// What could only be judged at the end (a document, a tree).
    fn finish(self: Box<Self>) -> Result<Log, Error>;
}

/// One line of a JSONL log as an object, for a [`LogReader`]: `None` for a blank line; a line
/// that is not a JSON object is an [`Error`] naming line `at` (never quoting it).
///
/// # Errors
///
/// Not JSON, or JSON that is not an object.
pub fn parse_line(at: usize, line: &str) -> Result<Option<Map<String, Value>>, Error> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    crate::json::parse_line(line)
        .map(Some)
        .map_err(|reason: Reason| Error::line(at, reason))
}
