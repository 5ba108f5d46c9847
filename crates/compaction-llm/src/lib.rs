//! Summarizer adapters for hermes-compaction.
//!
//! This crate will own the async `Summarizer` extension point, the OpenAI-compatible adapter
//! (async-openai), the deterministic extractive summarizer, the scripted summarizer for tests,
//! the prompts, the output guards, and secret redaction.
