//! Integration tests of compaction-redact: one binary, one module per area.

mod corpus;
mod rules;
