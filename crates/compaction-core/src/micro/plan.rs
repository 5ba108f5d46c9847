//! What a micro plan decides: the plan, its step, and the jobs the caller runs.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::ExchangeId;
use super::cursor::Resolved;
use crate::ledger::Ledger;
use crate::message::{MarkerKind, Message};
use crate::regions::Regions;

/// A micro (or turn-progress) plan for one transcript.
#[derive(Clone, Debug, PartialEq)]
pub struct MicroPlan {
    /// The partition the plan was made with.
    pub regions: Regions,
    /// Threshold in tokens.
    pub threshold_tokens: u64,
    /// Size before (calibrated when available).
    pub tokens_before: u64,
    /// Where the plan resumes: the first middle message not yet absorbed, from the planner's
    /// state or, when that does not agree with the transcript, after the last summary marker;
    /// `None` for turn-progress plans, which do not use it.
    pub cursor: Option<usize>,
    /// The summary marker (index and kind) the cursor was recovered from, when the transcript
    /// decided it rather than the planner's state (a fresh planner, a reload, a state that no
    /// longer agrees with the transcript).
    pub rehydrated_from: Option<(usize, MarkerKind)>,
    /// The resolved cursor; `None` for turn-progress plans, which do not use it.
    pub(crate) resolved: Option<Resolved>,
    /// Estimated size of the rolling summary (0 when none).
    pub rolling_summary_tokens: u64,
    /// The decision.
    pub step: MicroStep,
    /// [`Transcript::stamp`] of the planned-against transcript.
    pub(super) planned_stamp: u64,
}

/// What a micro plan decided.
#[derive(Clone, Debug, PartialEq)]
pub enum MicroStep {
    /// Nothing to do.
    Noop(NoopReason),
    /// The reclaim gate holds: the absorbable exchanges do not reclaim enough yet.
    Gated {
        /// What absorbing all of them would reclaim (negative: it would grow the transcript).
        reclaimable_tokens: i64,
        /// How many exchanges (or tool groups) are absorbable.
        exchanges: usize,
    },
    /// Re-summarize the rolling summary alone (defrag prompt), then
    /// [`assemble_micro`](super::assemble_micro).
    Defrag(DefragJob),
    /// Merge the material into the previous summary (merge prompt), then
    /// [`assemble_micro`](super::assemble_micro).
    Absorb(AbsorbJob),
    /// The exchange failed too often: move the cursor past it, change nothing.
    Skip {
        /// The skipped exchange.
        range: Range<usize>,
        /// Its failures in a row.
        failures: u32,
    },
}

/// Why a plan does nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NoopReason {
    /// No whole exchange (or tool group) at or after the cursor.
    NothingToAbsorb,
    /// Turn progress: the active turn fits in the tail.
    NotALongTurn,
    /// Turn progress: the oldest tool group failed too often; it waits for a batch pass.
    ProgressStalled,
    /// Turn progress: an earlier turn's progress marker is still in the middle; the micro
    /// pass absorbs it first (at most one progress marker at any time).
    EarlierProgressMarker,
    /// Turn progress under strict alternation is not supported yet.
    StrictAlternation,
    /// A rolling micro marker stands before the batch marker the cursor resumes after (a
    /// batch pass folded the exchanges after it but could not take it): a new rolling marker
    /// beside it would make two (law 5), so micro waits until a batch pass folds it.
    EarlierMicroMarker,
    /// No placement of the new marker keeps law 3 (e.g. under strict alternation, users that
    /// would become adjacent across the protected tail boundary cannot be joined); the pass
    /// waits until the exchange's closing user message is inside the middle.
    RolesWouldBreak,
}

/// A defrag the caller must run.
#[derive(Clone, Debug, PartialEq)]
pub struct DefragJob {
    /// Index of the rolling micro marker, rewritten in place.
    pub marker_index: usize,
    /// The rolling summary to shorten, without its ledger.
    pub summary_text: String,
    /// Its estimated size.
    pub summary_tokens: u64,
    /// The rolling summary's ledger, attached again to the shortened text.
    pub ledger: Ledger,
}

/// An absorption the caller must run.
#[derive(Clone, Debug, PartialEq)]
pub struct AbsorbJob {
    /// `Micro` for exchanges of the middle, `Progress` for tool groups of a long turn.
    pub kind: MarkerKind,
    /// The absorbed ranges of the planned-against transcript, ascending.
    pub ranges: Vec<Range<usize>>,
    /// Serialized, redacted material (each exchange after the user request it answers).
    pub material: String,
    /// The summary to merge into (rolling or progress), if any, without its ledger.
    pub previous_summary: Option<String>,
    /// The previous summary's ledger with the absorbed messages' files and commands, attached
    /// to the new summary by [`assemble_micro`](super::assemble_micro).
    pub ledger: Ledger,
    /// The absorbed messages (a progress marker among them replaced by its body), redacted, for
    /// deterministic summarizers.
    pub messages: Vec<Message>,
    /// Markers removed because the new one supersedes them.
    pub superseded_markers: Vec<usize>,
    /// Tokens of the absorbed ranges.
    pub exchange_tokens: u64,
    /// Estimated tokens reclaimed (negative: the pass grows the transcript, e.g. the first
    /// marker's scaffolding), assuming the summary keeps the previous one's size.
    pub expected_reclaim_tokens: i64,
    /// Identity of the first absorbed exchange, for failure counting.
    pub(crate) exchange: ExchangeId,
}
