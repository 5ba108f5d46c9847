//! The workspace's root package: no library code.
//!
//! `tests/tests.rs` holds the cross-crate tests (the shared fixtures through the command
//! line, the facade and the store; the laws over every fixture in every mode; micro cursor
//! recovery across backends; `config/default.toml` against `Config`), and `benches/` the
//! criterion benchmarks.
//!
//! The README's Rust examples run as doctests of this package (`ReadmeExamples`, present
//! only while doctests are collected), so the README shows exactly the code that is tested:
//! `cargo test -p hermes-compaction-suite --doc`.

/// `README.md`, whose ` ```rust ` blocks are this package's doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExamples;
