//! The crate's one integration-test binary: a module per area.

mod convert;
mod example;
mod layer;
mod memory;
