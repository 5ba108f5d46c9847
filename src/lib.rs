//! The workspace's root package: no library code.
//!
//! `tests/tests.rs` holds the cross-crate tests (the shared fixtures through the command
//! line, the facade and the store; the laws over every fixture in every mode; micro cursor
//! recovery across backends; `config/default.toml` against `Config`), and `benches/` the
//! criterion benchmarks.
//!
//! # Using the crates as a library
//!
//! These are the README's library examples, compile-checked here as doctests (the root package
//! has the crates as dev-dependencies).
//!
//! `compaction-core`: parse a transcript losslessly, validate it, find what a pass may rewrite:
//!
//! ```
//! use hermes_compaction::core::{parse, regions, validate, Estimator, Transcript};
//!
//! let jsonl = "{\"role\":\"system\",\"content\":\"be brief\"}\n{\"role\":\"user\",\"content\":\"hi\",\"x-trace\":7}\n";
//! let msgs = parse::parse_jsonl(jsonl).unwrap();
//! assert_eq!(parse::to_jsonl(&msgs), jsonl); // unknown fields survive byte for byte
//! assert!(validate::validate(&msgs).is_clean());
//! let t = Transcript::new(msgs, &Estimator::default());
//! let threshold = regions::WindowConfig::for_context(128_000).threshold_tokens();
//! let r = regions::partition(&t, threshold, &Default::default(), false);
//! assert!(r.middle.is_empty()); // nothing to rewrite in a two-message transcript
//! ```
//!
//! `compaction-llm`: any `Summarizer`; the extractive
//! one needs no network:
//!
//! ```
//! use hermes_compaction::core::Message;
//! use hermes_compaction::llm::{ExtractiveSummarizer, Summarizer, SummaryKind, SummaryRequest};
//!
//! let req = SummaryRequest::new(SummaryKind::BatchFirst, "", 300, "2026-01-01")
//!     .with_messages(vec![Message::user("rename Thing to Record"), Message::assistant("done")]);
//! let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let out = rt.block_on(ExtractiveSummarizer::default().summarize(&req)).unwrap();
//! assert!(out.text.contains("rename Thing to Record"));
//! ```
//!
//! `hermes-compaction` (the facade):
//!
//! Compact a transcript in memory with the facade and the embedded defaults (extractive
//! summarizer, estimator), and check the pass against the laws:
//!
//! ```
//! use std::sync::Arc;
//! use hermes_compaction::core::{laws, parse, regions, Estimator, Message, ToolCall};
//! use hermes_compaction::llm::ExtractiveSummarizer;
//! use hermes_compaction::{Compressor, Config, Outcome};
//!
//! let mut msgs = vec![Message::system("You are a coding agent.")];
//! for i in 0..40 {
//!     let id = format!("call_{i}");
//!     msgs.push(Message::user(format!("step {i}: run the tests")));
//!     msgs.push(Message::assistant_tool_calls("", vec![ToolCall::function(&id, "shell", "{\"cmd\":\"cargo test\"}")]));
//!     msgs.push(Message::tool_result(&id, "test output line\n".repeat(200)));
//!     msgs.push(Message::assistant(format!("step {i} passes")));
//! }
//! let mut config = Config::default();
//! config.model.context_length = 32_000;
//! let mut c = Compressor::builder(config)
//!     .summarizer(Arc::new(ExtractiveSummarizer::default()))
//!     .counter(Arc::new(Estimator::default()))
//!     .session("doc-session")
//!     .build()
//!     .unwrap();
//! let mut t = c.transcript(msgs.clone());
//! let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let report = rt.block_on(c.compress(&mut t, None)); // what `/compress` does
//! assert!(matches!(report.outcome, Outcome::Summarized | Outcome::Pruned));
//! assert!(report.tokens_after < report.tokens_before);
//!
//! let protected = laws::Protected::from_regions(report.regions.as_ref().unwrap());
//! let pass = laws::Pass::new(laws::PassKind::Batch, protected);
//! assert!(laws::check(&msgs, t.messages(), &pass, &Estimator::default()).is_empty());
//! let jsonl = parse::to_jsonl(t.messages()); // what `compact --output` writes
//! assert_eq!(jsonl.lines().count(), t.len());
//! ```
//!
//! `compaction-store`: store a session (SQLite here; a `postgres://` URL works the same):
//!
//! ```
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! # rt.block_on(async {
//! use hermes_compaction::core::Message;
//! use hermes_compaction::store::{Store, TranscriptStore};
//!
//! let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
//! store.create_session("s1").await.unwrap();
//! let mut msgs = vec![Message::user("hi"), Message::assistant("hello")];
//! store.append("s1", &mut msgs).await.unwrap(); // stamps row ids
//! assert_eq!(store.load_active("s1").await.unwrap().len(), 2);
//! # });
//! ```
//!
//! `compaction-telemetry`: read logs back into numbers (what `hermes-compaction report`
//! prints):
//!
//! ```
//! use hermes_compaction::telemetry::{report, ReportOptions};
//! # let dir = tempfile::tempdir().unwrap();
//! # std::env::set_current_dir(dir.path()).unwrap();
//! # std::fs::write("run.log", "an ordinary log line\n").unwrap();
//!
//! let options = ReportOptions { per_session: true, json: false };
//! let table = report::run(&["run.log"], options).unwrap();
//! assert!(!table.is_empty());
//! ```
