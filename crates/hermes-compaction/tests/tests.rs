//! Integration tests of the facade compressor.
#![allow(clippy::print_stderr)]

mod batch;
mod common;
mod compact_tool;
mod micro;
mod persistence;
mod recall;
mod replay;
mod trim_telemetry;
mod undo;
