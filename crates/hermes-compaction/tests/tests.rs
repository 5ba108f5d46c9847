//! Integration tests of the facade compressor.
#![allow(clippy::print_stderr)]

mod batch;
mod breaker;
mod common;
mod compact_tool;
#[cfg(feature = "openai")]
mod configured;
mod in_turn;
mod micro;
mod own_provider;
mod parity;
mod pass;
mod persistence;
mod prepared;
mod recall;
mod replay;
mod resume;
mod trim_telemetry;
mod undo;
mod warm;
