//! Integration tests of compaction-anthropic: one binary, one module per area.

mod anthropic;
