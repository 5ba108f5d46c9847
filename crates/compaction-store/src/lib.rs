//! Session storage for hermes-compaction.
//!
//! This crate will own the async `TranscriptStore` extension point and its SQLite (embedded
//! default) and PostgreSQL implementations of `archive_and_compact`.
