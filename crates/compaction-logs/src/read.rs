//! What a format's reader implements ([`LogReader`]) and the line parser readers share.

use serde_json::{Map, Value};

use crate::error::{Error, Reason};
use crate::{Log, Options};

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

/// The state of a JSONL format's reader: what it has read so far, fed one object per
/// non-blank line. [`JsonLines`] does the rest (parsing each line, naming the line in an
/// error), so a line format writes only what is its own.
pub(crate) trait LineState: Default + std::fmt::Debug + Send + 'static {
    /// Reads the object of line `at`.
    fn push(&mut self, at: usize, line: Map<String, Value>, options: Options)
    -> Result<(), Reason>;

    /// Ends the log.
    fn finish(self, options: Options) -> Result<Log, Error>;
}

/// The [`LogReader`] of every JSONL format: each non-blank line parsed to an object
/// ([`parse_line`]) and pushed into the format's [`LineState`]; a reason the state gives is
/// reported at the line it came from.
#[derive(Debug)]
pub(crate) struct JsonLines<S> {
    state: Box<S>,
    options: Options,
}

impl<S: LineState> JsonLines<S> {
    /// A reader for one log, as a format's row makes it.
    pub(crate) fn reader(options: Options) -> Box<dyn LogReader> {
        Box::new(JsonLines::<S> {
            state: Box::default(),
            options,
        })
    }
}

impl<S: LineState> LogReader for JsonLines<S> {
    fn push_line(&mut self, at: usize, line: &str) -> Result<(), Error> {
        match parse_line(at, line)? {
            Some(obj) => self
                .state
                .push(at, obj, self.options)
                .map_err(|reason| Error::line(at, reason)),
            None => Ok(()),
        }
    }

    fn finish(self: Box<Self>) -> Result<Log, Error> {
        let JsonLines { state, options } = *self;
        state.finish(options)
    }
}
