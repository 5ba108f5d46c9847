//! Integration tests of compaction-telemetry (one binary, one module per area).

mod common;
mod content_free;
mod line_format;
#[cfg(feature = "report")]
mod report;
#[cfg(feature = "report")]
mod robustness;
#[cfg(feature = "report")]
mod trim;

#[cfg(feature = "svg")]
mod chart;
