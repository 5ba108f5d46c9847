//! hermes-compaction: keeps a long-running LLM agent conversation inside a finite context
//! window, and keeps what matters.
//!
//! The facade composes the layers; each adapter is behind a cargo feature, and each feature
//! adds only what it names (`cargo xtask ci` checks the dependency tree of every set):
//!
//! | feature | adds | default |
//! |---|---|---|
//! | `llm` | the `Compressor`, the `Summarizer` extension point, the extractive summarizer; no HTTP | yes |
//! | `openai` | the OpenAI-compatible summarizer over reqwest/rustls | no |
//! | `async-openai` | `Message` conversions and a summarizer over your `async_openai::Client` | no |
//! | `store` | the session store with SQLite | yes |
//! | `sqlite` | SQLite (on with `store`) | with `store` |
//! | `postgres` | PostgreSQL as well | no |
//! | `tls` | TLS for PostgreSQL connections (rustls, aws-lc; SQLite needs none) | no |
//! | `telemetry` | content-free pass events through `tracing` | yes |
//! | `config` | `ConfigLoader` (figment: TOML, environment) | yes |
//! | `tiktoken` | exact token counts (o200k, cl100k) | no |
//!
//! The `Compressor` (feature `llm`) is what an agent framework calls.
#![cfg_attr(feature = "llm", doc = "See [`Compressor`].")]
//!
//! ```
//! # #[cfg(feature = "llm")] {
//! use std::sync::Arc;
//! use hermes_compaction::{Compressor, Config, core::{Estimator, Message}};
//! use hermes_compaction::llm::ExtractiveSummarizer;
//!
//! let mut config = Config::default();
//! config.model.context_length = 16_000;
//! let mut c = Compressor::builder(config)
//!     .summarizer(Arc::new(ExtractiveSummarizer::default()))
//!     .counter(Arc::new(Estimator::default()))
//!     .session("session-1")
//!     .build()
//!     .unwrap();
//! let mut t = c.transcript(vec![Message::system("You are terse."), Message::user("hi")]);
//! let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let (_ticket, report) = rt.block_on(c.before_request(&mut t));
//! assert!(report.is_none()); // far below the threshold
//! # }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use compaction_core as core;
#[cfg(feature = "llm")]
pub use compaction_llm as llm;
pub use compaction_redact as redact;
#[cfg(feature = "store")]
pub use compaction_store as store;
#[cfg(feature = "telemetry")]
pub use compaction_telemetry as telemetry;

#[cfg(feature = "llm")]
mod breaker;
pub mod cache;
pub mod clock;
#[cfg(feature = "llm")]
pub mod compact_tool;
#[cfg(feature = "llm")]
pub mod compressor;
pub mod config;
#[cfg(feature = "config")]
mod config_env;
#[cfg(feature = "llm")]
pub mod driver;
#[cfg(all(feature = "llm", feature = "telemetry"))]
mod events;
#[cfg(feature = "llm")]
pub mod micro;
#[cfg(feature = "llm")]
pub mod oneshot;
#[cfg(feature = "llm")]
mod persist;
#[cfg(feature = "llm")]
pub mod preview;
#[cfg(feature = "store")]
pub mod recall;
#[cfg(feature = "llm")]
mod report;
#[cfg(feature = "llm")]
mod thrash;
#[cfg(feature = "store")]
pub mod trim;
#[cfg(feature = "llm")]
pub mod undo;

pub use cache::CacheProfile;
#[cfg(all(feature = "llm", feature = "store"))]
pub use compressor::Persistence;
#[cfg(feature = "llm")]
pub use compressor::{Compressor, CompressorBuilder, RequestTicket, Status, ThrashState, Usage};
#[cfg(feature = "config")]
pub use config::ConfigLoader;
#[cfg(feature = "llm")]
pub use config::{BuildSummarizer, summarizer_from_config};
pub use config::{Config, ConfigError, Provider, ReclaimGate};
#[cfg(feature = "llm")]
pub use oneshot::OneShotRun;
#[cfg(feature = "llm")]
pub use oneshot::{OneShot, OneShotOutcome, OneShotReport};
#[cfg(feature = "store")]
pub use recall::{RecallLimits, recall, recall_tool_definition, recall_with};
#[cfg(feature = "llm")]
pub use report::{BatchDetail, Detail, MicroDetail, PassReport};
#[cfg(feature = "llm")]
pub use report::{BatchReport, MicroReport, Outcome, PassStats, Resume, Trigger};
#[cfg(feature = "llm")]
pub use report::{DiscardReason, PreparedOutcome, PreparedTotals, PreparedUse};
#[cfg(feature = "llm")]
pub use report::{FailureKind, PassFailure, StoreGeneration};
#[cfg(feature = "store")]
pub use trim::{TrimStatus, trim_for_insert};
