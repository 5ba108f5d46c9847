//! Session economics for `hermes-compaction`: what a compaction policy costs over real
//! sessions, and what the prompt still remembers.
//!
//! - [`replay`](mod@replay): the replay driver, the one place that calls the facade's hooks
//!   in the order an agent does (turn starts, tool rounds, requests, responses, turn ends),
//!   measuring every prompt as sent. Its [`Row`] carries the counts, the cache split, the
//!   cost and the [retention](mod@retention); optionally one [`TraceLine`] per request.
//! - [`pricing`]: the built-in price table and the provider cache profiles.
//! - [`run`](mod@run): every transcript under every policy and pricing, in parallel, with
//!   the totals ([`Simulation`]).
//! - [`render`]: the side-by-side table, the cost-by-profile summary and the JSON.
//! - [`plot`]: occupancy over requests as SVG (drawn with `compaction-telemetry`'s `svg`).
//! - [`score`]: the one scorer of a prompt sequence (cost in the issue units, far and
//!   content recall, the [re-read](mod@reread) model, retention), used by the replay and by
//!   [`score::score_foreign`] for another compressor's trace.
//! - [`latency`]: the summarizer's latency model, the added wait at the trigger and a
//!   summary prepared ahead, with the cost of wasted candidates.
//! - [`foresight`]: pins what the recorded answers of the next `k` requests need: what a
//!   policy could reach if it knew them ([`Variant::foresight`]).
//! - [`tune`]: searches the policy space, returns the Pareto front (cost, retention, summary
//!   calls) and writes a configuration file.
//!
//! Cost in the *issue units* (the model of `docs/ECONOMICS.md`, and what
//! `tools/price_trace.py` recomputes from a trace): each message counts
//! `ceil(chars of its compact wire JSON / 4)`; a request reuses the longest run of leading
//! messages whose wire JSON is unchanged since the previous request (hits), the rest misses;
//! cost = 0.1 x hit + miss + summarizer input + 5 x summarizer output.

pub mod clock;
pub mod counting;
pub mod example;
pub mod foresight;
pub mod latency;
pub mod plot;
pub mod policy;
pub mod pricing;
pub mod recall;
pub mod render;
pub mod replay;
pub mod reread;
pub mod retention;
pub mod row;
pub mod run;
pub mod score;
pub mod time;
pub mod tune;
pub mod waits;

pub use counting::{CountingSummarizer, SummaryUsage};
pub use policy::{Policy, Variant};
pub use pricing::{Prices, Pricing};
pub use replay::{LawFinding, ReplayOptions, TraceLine, TraceText, replay};
pub use row::{Derived, Row};
pub use run::{Options, Simulation, simulate};

/// Why a simulation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration, a price table or an option is invalid.
    #[error("{0}")]
    Config(String),
    /// The in-memory store of the trimming policies failed.
    #[error("store: {0}")]
    Store(#[from] hermes_compaction::store::StoreError),
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The summarizer of a replay: called once per replay (each replay counts its own calls).
pub type SummarizerFactory<'a> =
    &'a (dyn Fn() -> Result<std::sync::Arc<dyn hermes_compaction::llm::Summarizer>> + Sync);

/// A current-thread tokio runtime (one per worker thread; the simulated clock is per thread).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}
