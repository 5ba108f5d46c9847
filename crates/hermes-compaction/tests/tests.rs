//! Integration tests of the facade compressor.

mod batch;
mod common;
mod replay;
