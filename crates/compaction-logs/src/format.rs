//! The log-format table: each format's name, how its lines (or its document) are recognised
//! and its reader. [`detect`](crate::detect), [`check_single`](crate::check_single),
//! [`Reader`](crate::Reader), [`TranscriptFormat`](crate::TranscriptFormat) and the command
//! line's `--format` all read it; this crate's four formats are its first rows
//! ([`Format::BUILT_IN`]) and a format of one's own joins it with [`Format::register`].

use std::fmt;
use std::sync::RwLock;

use serde_json::{Map, Value};

use crate::Options;
use crate::read::LogReader;

/// Makes the reader of one log.
pub type NewReader = fn(Options) -> Box<dyn LogReader>;

/// Whether a JSON line (an object) is a line of the format.
pub type LineTest = fn(&Map<String, Value>) -> bool;

/// Whether a document that spans lines (its first line alone is not JSON) is of the format.
pub type DocumentTest = fn(&str) -> bool;

/// An agent's session-log format: a row of the log-format table. Formats are equal when their
/// names are.
///
/// ```
/// use compaction_logs::Format;
///
/// assert_eq!(Format::from_name("codex"), Some(Format::CODEX));
/// assert_eq!(Format::CLAUDE_CODE.name(), "claude-code");
/// let names: Vec<&str> = Format::all().iter().map(|f| f.name()).collect();
/// assert_eq!(names[..4], ["claude-code", "codex", "pi", "gemini"]);
/// ```
#[derive(Clone, Copy)]
pub struct Format {
    name: &'static str,
    label: &'static str,
    line: LineTest,
    document: Option<DocumentTest>,
    reader: NewReader,
}

impl Format {
    /// A Claude Code project log (or one of its subagent logs).
    pub const CLAUDE_CODE: Format = Format {
        name: "claude-code",
        label: "a Claude Code log line",
        line: crate::claude_code::is_line,
        document: None,
        reader: crate::claude_code::reader,
    };
    /// A Codex rollout.
    pub const CODEX: Format = Format {
        name: "codex",
        label: "a Codex log line",
        line: crate::codex::is_line,
        document: None,
        reader: crate::codex::reader,
    };
    /// A pi coding-agent session.
    pub const PI: Format = Format {
        name: "pi",
        label: "a pi log line",
        line: crate::pi::is_line,
        document: None,
        reader: crate::pi::reader,
    };
    /// A Gemini CLI chat recording (one JSON document).
    pub const GEMINI: Format = Format {
        name: "gemini",
        label: "a Gemini CLI record",
        line: crate::gemini::is_line,
        document: Some(crate::gemini::is_document),
        reader: crate::gemini::reader,
    };

    /// This crate's formats: the first rows of the table.
    pub const BUILT_IN: [Format; 4] = [
        Format::CLAUDE_CODE,
        Format::CODEX,
        Format::PI,
        Format::GEMINI,
    ];

    /// A JSONL format of one's own: its name (as `--format` takes it), how it is named in a
    /// message about a mixed file (`"an Acme log line"`), how one of its lines is recognised
    /// and its reader. Add it to the table with [`register`](Self::register).
    pub const fn lines(
        name: &'static str,
        label: &'static str,
        line: LineTest,
        reader: NewReader,
    ) -> Format {
        Format {
            name,
            label,
            line,
            document: None,
            reader,
        }
    }

    /// A format of one JSON document spanning lines (as Gemini's): `document` recognises it
    /// from its text, `line` when it is written on one line. Its reader gets every line,
    /// blank ones included, and reads the document at [`LogReader::finish`].
    pub const fn document(
        name: &'static str,
        label: &'static str,
        line: LineTest,
        document: DocumentTest,
        reader: NewReader,
    ) -> Format {
        Format {
            name,
            label,
            line,
            document: Some(document),
            reader,
        }
    }

    /// Adds this format to the table, after every format already in it: [`detect`](crate::detect)
    /// tries it after them, [`from_name`](Self::from_name) finds it. Registering a format
    /// of the same name and label again changes nothing; a name another format has is an
    /// error naming it, and the table is left as it was.
    ///
    /// # Errors
    ///
    /// The name is taken: the error is that name.
    pub fn register(self) -> Result<(), &'static str> {
        let mut registered = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
        if let Some(other) = Format::BUILT_IN
            .iter()
            .chain(registered.iter())
            .find(|f| f.name == self.name)
        {
            return if other.label == self.label && !Format::BUILT_IN.contains(other) {
                Ok(())
            } else {
                Err(self.name)
            };
        }
        registered.push(self);
        Ok(())
    }

    /// Every format: this crate's, then the registered ones in the order they were
    /// registered (the order [`detect`](crate::detect) tries them).
    pub fn all() -> Vec<Format> {
        let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
        Format::BUILT_IN
            .iter()
            .chain(registered.iter())
            .copied()
            .collect()
    }

    /// The name used on the command line (`claude-code`, `codex`, `pi`, `gemini`, ...).
    pub fn name(self) -> &'static str {
        self.name
    }

    /// How a line of the format is named in a message about a mixed file.
    pub fn label(self) -> &'static str {
        self.label
    }

    /// The format of a command-line name, if it is one.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::all().into_iter().find(|f| f.name == name)
    }

    /// Whether the format is one JSON document rather than JSON lines.
    pub fn is_document(self) -> bool {
        self.document.is_some()
    }

    pub(crate) fn is_line(self, obj: &Map<String, Value>) -> bool {
        (self.line)(obj)
    }

    pub(crate) fn is_document_text(self, text: &str) -> bool {
        self.document.is_some_and(|d| d(text))
    }

    pub(crate) fn reader(self, options: Options) -> Box<dyn LogReader> {
        (self.reader)(options)
    }
}

/// The formats registered at run time, after this crate's own.
static REGISTERED: RwLock<Vec<Format>> = RwLock::new(Vec::new());

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.name == other.name
    }
}

impl Eq for Format {}

impl std::hash::Hash for Format {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl fmt::Debug for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Format").field(&self.name).finish()
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}
