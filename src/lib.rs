//! The workspace's root package: no library code.
//!
//! `tests/tests.rs` holds the cross-crate tests (the shared fixtures through the command
//! line, the facade and the store; the laws over every fixture in every mode; micro cursor
//! recovery across backends; `config/default.toml` against `Config`), and `benches/` the
//! criterion benchmarks.
