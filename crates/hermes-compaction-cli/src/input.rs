//! Reading a transcript file: the bytes from disk, parsed by compaction-logs'
//! [`TranscriptFile`] (any format, errors that name the file and the line).

use std::path::Path;

use compaction_logs::TranscriptError;
pub use compaction_logs::{Strictness, TranscriptFile, TranscriptFormat};

/// The `--format` parser: `auto`, `openai`, `anthropic`, then every row of the log-format
/// table ([`TranscriptFormat::names`]), so a format added there is accepted and listed in
/// `--help` with no change here.
pub fn format_parser() -> impl clap::builder::TypedValueParser<Value = TranscriptFormat> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(TranscriptFormat::names()).map(|name| {
        TranscriptFormat::from_name(&name).expect("a name from TranscriptFormat::names")
    })
}

/// Reads `path` and parses it in `format` ([`TranscriptFile::parse`]).
pub fn read(
    path: &Path,
    format: TranscriptFormat,
    strictness: Strictness,
) -> Result<TranscriptFile, TranscriptError> {
    let bytes = std::fs::read(path).map_err(|e| TranscriptError::unreadable(path, &e))?;
    TranscriptFile::parse(path, &bytes, format, strictness)
}
