//! Content-free compaction telemetry for hermes-compaction.
//!
//! Compaction is judged on a session's trajectory, not on one turn, so every pass leaves one
//! line of counts in the log and `report` (feature `report`) turns logs back into numbers.
//!
//! - [`event`]: typed events for a micro pass ([`MicroPass`]), a batch attempt
//!   ([`BatchAttempt`]), a turn ([`Turn`]) and an insertion-time trim that was due ([`Trim`]:
//!   trimmed, or kept whole for want of a store or after a failed store write), plus the
//!   per-session running totals [`SessionAccumulator`] and [`TrimAccumulator`].
//!   They hold counts, durations, model names, an opaque session id and closed vocabularies,
//!   never transcript text, trim handles or tool names. `occupancy_pct` and
//!   `threshold_tokens` are `None` unless the caller passes a [`Window`] it already knows:
//!   nothing here looks a window up.
//! - [`emit`](mod@emit): one INFO line per event under the `tracing` target
//!   [`TARGET`], in the forms existing tooling reads (keys sorted, compact separators):
//!   `micro compaction telemetry: {json}`, `context compression attempt telemetry: {json}`,
//!   `compaction turn telemetry: {json}` and `insert trim telemetry: {json}`;
//!   `init_subscriber` (feature `subscriber`) for binaries.
//! - `report` (feature `report`; `gzip` adds compressed input): streams plain, tracing-JSON or
//!   gzip logs (ours or Hermes Agent's) in bounded memory and prints the outcome mix, tokens
//!   saved, durations, occupancy, batch counts, insertion-time trims and the session-economics
//!   metrics, as a table or JSON.
//! - `chart` (feature `svg`, which implies `report`): occupancy over turns per session as a
//!   standalone SVG.
//!
//! Emitting and reporting are separate concerns: with default features the crate is the
//! events and their `tracing` lines only, so a framework that emits compiles no log reader
//! (no `flate2`) and no subscriber (no `tracing-subscriber`: the host installs its own). The
//! command line turns `report` and `gzip` on; `subscriber` adds `init_subscriber`.
//! - `svg` (feature `svg`): the one SVG writer (line and scatter charts) the charts and the
//!   simulator draw with.
//! - [`FileSink`] (feature `file`): a binary's telemetry lines written to a file, a lost
//!   write reported at [`FileSink::finish`] (the command line's `--telemetry`).
//!
//! ```
//! use compaction_core::micro::MicroOutcomeKind;
//! use compaction_telemetry::{format_line, MicroPass, SessionAccumulator, Window};
//!
//! let mut totals = SessionAccumulator::default();
//! let mut pass = MicroPass::new("s1", MicroOutcomeKind::Absorbed)
//!     .tokens(12_739, 12_060)
//!     .window(Some(Window { threshold_tokens: 34_816, context_limit: 40_960 }));
//! totals.record(&mut pass);
//! let line = format_line(&pass);
//! assert!(line.starts_with("micro compaction telemetry: {\"aux_model\":null,"));
//! assert!(line.contains("\"occupancy_pct\":34.6,"));
//! assert!(line.ends_with("\"tokens_saved_total\":679}"));
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod emit;
pub mod error;
pub mod event;
#[cfg(feature = "report")]
pub mod report;

#[cfg(feature = "svg")]
pub mod chart;
#[cfg(feature = "file")]
mod file;
#[cfg(feature = "report")]
mod scan;
#[cfg(feature = "report")]
mod stats;
#[cfg(feature = "svg")]
pub mod svg;

#[cfg(feature = "subscriber")]
pub use emit::{LogFormat, init_subscriber};
pub use emit::{TARGET, emit, emit_batch, emit_micro, emit_trim, emit_turn, format_line};
pub use error::{Error, Result};
pub use event::{
    BatchAttempt, BatchOutcome, FailureClass, MicroPass, PassLine, SessionAccumulator,
    TelemetryEvent, TriggerSource, Trim, TrimAccumulator, TrimOutcome, TrimSource, Turn, Window,
    occupancy_pct,
};
#[cfg(feature = "file")]
pub use file::FileSink;
#[cfg(feature = "report")]
pub use report::{Report, ReportBuilder, ReportOptions};
#[cfg(feature = "report")]
pub use scan::MAX_LINE_BYTES;
