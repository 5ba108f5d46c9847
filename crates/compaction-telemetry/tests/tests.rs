//! Integration tests of compaction-telemetry (one binary, one module per area).

mod common;
mod content_free;
mod line_format;
mod report;
mod robustness;
mod trim;

#[cfg(feature = "svg")]
mod chart;
