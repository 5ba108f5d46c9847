//! Reading a transcript file: the bytes from disk, parsed by compaction-logs'
//! [`TranscriptFile`] (any format, errors that name the file and the line).

use std::path::Path;

use compaction_logs::{Format, TranscriptError, TranscriptFormat};
pub use compaction_logs::{Strictness, TranscriptFile};

/// The format of an input file (`--format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// Recognise it: an agent's own log (Claude Code, Codex, pi, Gemini CLI) from its first
    /// lines (or, for a log saved as one JSON array of its records, from its first records),
    /// else Anthropic Messages when a message has Anthropic tool or thinking blocks,
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

impl From<InputFormat> for TranscriptFormat {
    fn from(f: InputFormat) -> TranscriptFormat {
        match f {
            InputFormat::Auto => TranscriptFormat::Auto,
            InputFormat::Openai => TranscriptFormat::Openai,
            InputFormat::Anthropic => TranscriptFormat::Anthropic,
            InputFormat::ClaudeCode => TranscriptFormat::Log(Format::ClaudeCode),
            InputFormat::Codex => TranscriptFormat::Log(Format::Codex),
            InputFormat::Pi => TranscriptFormat::Log(Format::Pi),
            InputFormat::Gemini => TranscriptFormat::Log(Format::Gemini),
        }
    }
}

/// Reads `path` and parses it in `format` ([`TranscriptFile::parse`]).
pub fn read(
    path: &Path,
    format: InputFormat,
    strictness: Strictness,
) -> Result<TranscriptFile, TranscriptError> {
    let bytes = std::fs::read(path).map_err(|e| TranscriptError::unreadable(path, &e))?;
    TranscriptFile::parse(path, &bytes, format.into(), strictness)
}
