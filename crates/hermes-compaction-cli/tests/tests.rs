//! End-to-end tests of the `hermes-compaction` binary (std::process on the built binary), and
//! of its path checks called directly (`paths`).
#![allow(clippy::print_stderr)]

mod bad_input;
mod common;
mod compact;
mod dry_run;
mod exit_codes;
mod failures;
mod fake_openai;
mod logs;
mod paths;
mod secrets;
mod session;
mod simulate;
mod tables;
mod undo;
