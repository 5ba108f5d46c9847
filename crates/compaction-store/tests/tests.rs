//! compaction-store integration tests. Every test body runs on SQLite (a temporary file) and,
//! when `HERMES_TEST_DATABASE_URL` is set, on PostgreSQL (a fresh schema per test).

#[macro_use]
mod common;

mod cjk;
mod compact;
mod concurrency;
mod errors;
mod failures;
mod history;
mod read_only;
mod recall;
mod roundtrip;
mod state;
