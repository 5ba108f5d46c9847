//! Content-free compaction telemetry for hermes-compaction.
//!
//! This crate will own the typed pass events, their one-line tracing output, and the report
//! that turns logs into answers.
