//! Cross-crate tests of the hermes-compaction workspace (one binary, a module per area).
//!
//! Each crate tests itself under `crates/*/tests/`; what lives here needs several crates at
//! once: the shared fixtures replayed through the command line, the facade and the store
//! together ([`replay`]), the laws over every shared fixture in every mode ([`laws`]), micro
//! cursor recovery when a session moves between backends ([`recovery`]), and the check that
//! `config/default.toml` and the facade's `Config` describe the same keys ([`config_keys`]), and
//! no credential of the issue 22 corpus leaving through a real pass ([`secrets`]).
//! The shared-fixture and PostgreSQL lookup is `test-support`'s, as in every crate.
#![allow(
    clippy::print_stderr,
    reason = "tests say what they skipped or measured"
)]

mod common;
mod config_keys;
mod laws;
mod recovery;
mod replay;
mod secrets;
