//! Integration tests of compaction-core: one binary, one module per area.

mod common;
mod continuation;
mod errors;
mod exchanges;
mod fixtures;
mod fuzz;
mod laws;
mod markers;
mod message_serde;
mod micro;
mod parity;
mod pins;
mod preview;
mod regions;
mod requests;
mod responses;
mod roundtrip;
mod secrets;
mod strategies;
mod tokens;
mod trim;
