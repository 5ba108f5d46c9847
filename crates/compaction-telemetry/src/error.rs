//! The crate's error type.

use std::path::PathBuf;

/// Errors of the telemetry crate.
///
/// Malformed log lines are never errors (the report counts them); these are the failures a
/// caller has to act on. No variant carries transcript text or log line content.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A log file could not be opened or read.
    #[error("cannot read log {path}")]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A reader passed to the report failed (not a file, so no path).
    #[error("cannot read log input #{index}")]
    Read {
        /// Position of the input in the list given to the report, from 0.
        index: usize,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A gzip-compressed log was given but the crate was built without the `gzip` feature.
    #[error("{path} is gzip-compressed; enable the `gzip` feature of compaction-telemetry")]
    GzipDisabled {
        /// The compressed file.
        path: PathBuf,
    },
    /// The env-filter directive given to [`init_subscriber`](crate::init_subscriber) is invalid.
    #[cfg(feature = "subscriber")]
    #[error("invalid log filter directive")]
    Filter(#[source] tracing_subscriber::filter::ParseError),
    /// A global tracing subscriber is already installed.
    #[cfg(feature = "subscriber")]
    #[error("a global tracing subscriber is already installed")]
    SubscriberAlreadySet(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The report could not be serialized to JSON.
    #[error("cannot serialize the report")]
    Json(#[source] serde_json::Error),
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
