//! The one error type of compaction-redact, and its [`Result`] alias.

/// What can go wrong in compaction-redact: only reading a ruleset. Never contains the text
/// being redacted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A redaction ruleset (gitleaks' TOML format) could not be read: the parser's message,
    /// which names the line and column (never transcript text).
    #[error("the redaction ruleset could not be read: {reason}")]
    Ruleset {
        /// What is wrong, and where in the file.
        reason: String,
    },
}

/// The result of compaction-redact's fallible operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
