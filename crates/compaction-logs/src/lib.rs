//! Readers of coding agents' own session logs, into hermes-compaction transcripts.
//!
//! The library's transcripts are OpenAI chat messages ([`compaction_core::Message`]); the
//! sessions people hold are the agents' own files. This crate reads four of them, line by line,
//! without writing anything:
//!
//! | [`Format`] | file | format version read |
//! |---|---|---|
//! | [`Format::CLAUDE_CODE`] | `~/.claude/projects/*/SESSION.jsonl` and `SESSION/subagents/agent-*.jsonl` | Claude Code 2.1 event lines (`user`/`assistant`/`progress`/`system`/...; `message.id`, `isSidechain`, `isCompactSummary`, `isMeta`) |
//! | [`Format::CODEX`] | `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl` | rollout lines `{timestamp, type, payload}` (`session_meta`, `response_item`, `event_msg`, `turn_context`, `compacted`) of codex-rs 0.4x and later; bare response items of the earlier rollouts |
//! | [`Format::PI`] | `~/.pi/agent/sessions/*/SESSION.jsonl` | pi coding-agent entries: version 1 (no ids) and versions 2/3 (`id`/`parentId` tree, `compaction` entries) |
//! | [`Format::GEMINI`] | `~/.gemini/tmp/<project>/chats/session-*.json` | Gemini CLI's `ConversationRecord` JSON (`messages` of type `user`/`gemini` with `toolCalls`) |
//!
//! What every reader does:
//!
//! - **Pure and streaming.** A [`Reader`] is fed one line at a time ([`Reader::push_line`]);
//!   the caller does the I/O. Claude Code, Codex and pi version 1 hold only the messages read
//!   so far; a pi tree and a Gemini document are resolved at [`Reader::finish`] (the active
//!   branch is known only at the end; a Gemini session is one JSON document).
//! - **Errors name the line** (or the Gemini message index) and the field, never the text:
//!   see [`Error`].
//! - **Tool pairing.** Each tool call's id is the id its result answers (Codex: the `call_id`),
//!   so the transcript pairs under every law of the library; results follow their call's
//!   assistant message, in call order.
//! - **The agent's own compaction summaries are summaries**, not conversation: they are
//!   returned in [`Log::summaries`] with the position they were inserted at, and left out of
//!   the messages (the messages they replaced are all in the log), unless
//!   [`Options::summaries_as_markers`] asks for them as batch markers.
//! - **Arguments** are written as the normalized fixtures write them (`{"a": 1, "b": [2, 3]}`:
//!   a space after `:` and `,`, non-ASCII text unescaped), so a session read from its raw log
//!   is byte-identical to its normalized form and simulates to the same figures.
//! - **What a chat transcript cannot hold is dropped**: thinking and reasoning blocks (providers
//!   strip them from earlier turns anyway), the tool calls of an assistant message that failed
//!   or was aborted before they ran (pi), progress, hook and UI events.
//!
//! The formats are rows of one table ([`Format`]): a format of one's own is its
//! [`LogReader`] and one row, joined with [`Format::register`]; [`detect`], [`Reader`] and the
//! command line's `--format` then know it.
//!
//! [`TranscriptFile::parse`] is the front door for a file's bytes in any format: OpenAI chat
//! or Anthropic Messages (JSONL or a JSON array) or an agent's log, recognised when asked
//! ([`TranscriptFormat::Auto`]), checked against a [`Strictness`], with errors that name the
//! file and the line or message index ([`TranscriptError`]). The caller reads the file.
//!
//! ```
//! use compaction_logs::{Format, Reader};
//!
//! let log = concat!(
//!     r#"{"type":"user","uuid":"u1","isSidechain":false,"message":{"role":"user","content":"list the files"}}"#, "\n",
//!     r#"{"type":"assistant","uuid":"a1","isSidechain":false,"message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Looking."}]}}"#, "\n",
//!     r#"{"type":"assistant","uuid":"a2","isSidechain":false,"message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}}"#, "\n",
//!     r#"{"type":"user","uuid":"u2","isSidechain":false,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.txt"}]}}"#, "\n",
//! );
//! assert_eq!(compaction_logs::detect(log), Some(Format::CLAUDE_CODE));
//! let mut reader = Reader::new(Format::CLAUDE_CODE);
//! for line in log.lines() {
//!     reader.push_line(line).unwrap();
//! }
//! let read = reader.finish().unwrap();
//! let wire: Vec<String> = read.messages.iter().map(|m| m.to_wire_json()).collect();
//! assert_eq!(wire, [
//!     r#"{"role":"user","content":"list the files"}"#,
//!     r#"{"role":"assistant","content":"Looking.","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"Bash","arguments":"{\"command\": \"ls\"}"}}]}"#,
//!     r#"{"role":"tool","tool_call_id":"toolu_1","content":"a.txt"}"#,
//! ]);
//! assert_eq!(read.lines, [1, 2, 4]); // where each message came from
//!
//! // Errors say where and why, never what the log said.
//! let mut reader = Reader::new(Format::CLAUDE_CODE);
//! reader.push_line(r#"{"type":"user","message":{"role":"user","content":"secret"}}"#).unwrap();
//! let err = reader.push_line(r#"{"type":"user","message":"secret"}"#).unwrap_err();
//! assert_eq!(err.to_string(), "line 2: field `message` must be an object");
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod claude_code;
mod codex;
mod detect;
mod error;
mod file;
mod format;
mod gemini;
mod json;
mod out;
mod pi;
mod read;

use std::fmt;

use compaction_core::Message;

pub use detect::{MixedLog, check_single, detect};
pub use error::{Error, Position, Reason};
pub use file::{Strictness, TranscriptError, TranscriptFile, TranscriptFormat, TranscriptPosition};
pub use format::{DocumentTest, Format, LineTest, NewReader};
pub use read::{LogReader, parse_line};
/// The JSON types a [`LogReader`] and a [`LineTest`] meet (this crate's `serde_json`).
pub use serde_json;

/// How a [`Reader`] reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Write the agent's own compaction summaries into the transcript as batch summary markers
    /// (a user message with [`MarkerKind::Batch`](compaction_core::MarkerKind::Batch)) where
    /// the agent inserted them. Off by default: the messages they replaced are in the log, so
    /// the transcript is the whole session and the summaries are returned apart, in
    /// [`Log::summaries`].
    pub summaries_as_markers: bool,
}

impl Options {
    /// The default options with [`summaries_as_markers`](Options::summaries_as_markers) set.
    pub fn with_summaries_as_markers(mut self, on: bool) -> Options {
        self.summaries_as_markers = on;
        self
    }
}

/// One of the agent's own compaction summaries.
#[derive(Clone, PartialEq, Eq)]
pub struct NativeSummary {
    /// The index in [`Log::messages`] of the first message after it (where the agent put it).
    pub before_message: usize,
    /// The 1-based line it was read from (for Gemini, 0).
    pub line: usize,
    /// The summary text as the agent wrote it.
    pub text: String,
}

impl fmt::Debug for NativeSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Sizes only: the text is transcript content.
        f.debug_struct("NativeSummary")
            .field("before_message", &self.before_message)
            .field("line", &self.line)
            .field("text_chars", &self.text.chars().count())
            .finish()
    }
}

/// What a log read into.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Log {
    /// The transcript, in order.
    pub messages: Vec<Message>,
    /// The 1-based line each message was read from (for Gemini, the 0-based index of its
    /// record in `messages`, plus one).
    pub lines: Vec<usize>,
    /// The agent's own compaction summaries, in order.
    pub summaries: Vec<NativeSummary>,
}

/// A streaming reader of one log: the format's [`LogReader`], fed one line at a time. See the
/// [crate docs](crate).
#[derive(Debug)]
pub struct Reader {
    line: usize,
    inner: Box<dyn LogReader>,
}

impl Reader {
    /// A reader of `format` with the default [`Options`].
    pub fn new(format: Format) -> Reader {
        Reader::with_options(format, Options::default())
    }

    /// A reader of `format`.
    pub fn with_options(format: Format, options: Options) -> Reader {
        Reader {
            line: 0,
            inner: format.reader(options),
        }
    }

    /// Reads the next line (without its `\n`; a trailing `\r` and blank lines are allowed).
    ///
    /// # Errors
    ///
    /// A line that is not JSON, or a known field of the wrong shape: [`Error`] with the line.
    pub fn push_line(&mut self, line: &str) -> Result<(), Error> {
        self.line += 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        self.inner.push_line(self.line, line)
    }

    /// Ends the log and returns what it read.
    ///
    /// # Errors
    ///
    /// A Gemini document that is not valid, or a pi tree whose last entry's ancestry is broken.
    pub fn finish(self) -> Result<Log, Error> {
        self.inner.finish()
    }
}

/// Reads a whole log held in memory (`text` split at `\n`).
///
/// # Errors
///
/// As [`Reader::push_line`] and [`Reader::finish`].
pub fn read(format: Format, text: &str, options: Options) -> Result<Log, Error> {
    let mut reader = Reader::with_options(format, options);
    for line in text.split('\n') {
        reader.push_line(line)?;
    }
    reader.finish()
}
