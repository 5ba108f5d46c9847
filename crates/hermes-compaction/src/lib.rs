//! hermes-compaction: keeps a long-running LLM agent conversation inside a finite context
//! window.
//!
//! The facade composes the layers; each adapter is behind a cargo feature.

pub use compaction_core as core;
#[cfg(feature = "llm")]
pub use compaction_llm as llm;
#[cfg(feature = "store")]
pub use compaction_store as store;
#[cfg(feature = "telemetry")]
pub use compaction_telemetry as telemetry;

pub mod config;

pub use config::{Config, ConfigError};
