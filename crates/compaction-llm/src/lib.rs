//! Summarizer adapters for hermes-compaction.
//!
//! The summarizer is where compaction meets the outside world. This crate owns:
//!
//! - the [`Summarizer`] extension point (dyn-compatible, `Send + Sync`), with its
//!   [`SummaryRequest`] and [`SummaryResponse`];
//! - the classified [`Error`]: the class decides what a caller does (auth and quota abort a
//!   batch pass, the rest may retry or fall back);
//! - the OpenAI-compatible adapter `openai` (feature `openai`, over reqwest/rustls): explicit
//!   base URL and key, bounded retries, summary-model fallback, context-length shrink, output
//!   guards;
//! - async-openai `interop` (feature `async-openai`): conversions between [`Message`] and
//!   async-openai's chat request messages, and a summarizer over a caller-supplied
//!   `async_openai::Client` with the same rules as the `openai` adapter (the two share one
//!   engine);
//! - the deterministic [extractive summarizer](extractive): no network, the embedded default and
//!   the fallback when a model fails;
//! - the scripted summarizer `scripted` for tests (feature `testing`);
//! - the [prompts] and the [output guards](guard);
//! - summarizer policy as [layers](layer): panic guard, deadline, output guard and the
//!   fallback rule (written once), composed by a [`layer::Stack`].
//!
//! No feature is on by default: without one the crate has no HTTP client in its tree.
//!
//! Secret redaction is pure text algebra and lives in [`compaction_redact`]; every
//! adapter here redacts what it sends and what it returns.
//!
//! [`Message`]: compaction_core::Message
//!
//! ```
//! use compaction_core::Message;
//! use compaction_llm::{ExtractiveSummarizer, Summarizer, SummaryKind, SummaryRequest};
//!
//! let mut req = SummaryRequest::new(SummaryKind::BatchFirst, "", 400, "2026-01-02");
//! req.messages = vec![Message::user("please fix the build"), Message::assistant("done")];
//! let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let out = rt.block_on(ExtractiveSummarizer::default().summarize(&req)).unwrap();
//! assert!(out.extractive);
//! assert!(out.text.contains("please fix the build"));
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod chat;
mod deadline;
pub mod error;
pub mod extractive;
mod fallback;
pub mod guard;
mod guards;
#[cfg(feature = "async-openai")]
pub mod interop;
pub mod layer;
#[cfg(feature = "openai")]
pub mod openai;
pub mod prompts;
#[cfg(feature = "testing")]
pub mod scripted;
pub mod summarizer;

pub use chat::{ChatOptions, RetryConfig, shrink_middle};
pub use deadline::{Deadline, DeadlineLayer};
pub use error::{Error, ErrorClass, Result};
pub use extractive::ExtractiveSummarizer;
pub use fallback::{FallbackLayer, FallbackSummarizer};
pub use guards::{OutputGuard, OutputGuardLayer, PanicGuard, PanicGuardLayer};
#[cfg(feature = "async-openai")]
pub use interop::AsyncOpenAiSummarizer;
#[cfg(feature = "openai")]
pub use openai::{ApiKey, OpenAiConfig, OpenAiSummarizer};
#[cfg(feature = "testing")]
pub use scripted::ScriptedSummarizer;
pub use summarizer::{
    FallbackCause, Summarizer, SummaryFuture, SummaryKind, SummaryRequest, SummaryResponse, Usage,
    WarmPrefix,
};
