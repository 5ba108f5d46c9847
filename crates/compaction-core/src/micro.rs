//! The micro-compaction planner (spec section 5) and its long-turn counterpart (section 4a).
//!
//! Micro-compaction pays the batch bill in instalments: after each turn, the oldest whole
//! exchange of the middle is folded into one rolling summary. Like the [batch
//! planner](crate::batch), planning is pure and split in two:
//!
//! 1. [`plan_micro`] resolves the cursor, finds the exchange(s) to absorb and prepares the
//!    summarizer material, or decides to defrag, skip, wait (gated) or do nothing;
//! 2. the caller runs the summarizer (merge prompt for [`MicroStep::Absorb`], defrag prompt for
//!    [`MicroStep::Defrag`]);
//! 3. [`assemble_micro`] turns the plan and the new summary into one [`Edit`] of the transcript
//!    the plan was made from, plus the new cursor and rolling summary.
//!
//! The caller owns a [`MicroState`] (plain, serializable data) and reports back what happened
//! with [`MicroState::record_plan`], [`MicroState::record_outcome`] and
//! [`MicroState::record_failure`]; a successful batch compaction calls [`MicroState::reset`].
//!
//! # Decisions
//!
//! - **Where the marker goes.** The new micro marker replaces the *last* absorbed exchange, in
//!   place: it sits between the two user messages that bounded that exchange, so it takes the
//!   assistant role and alternation holds. Earlier absorbed exchanges (reclaim gate) and the
//!   superseded micro marker are removed. The cursor is then the marker's index plus one, which
//!   is exactly what [`resolve_cursor`] recovers from the transcript alone (law 7).
//! - **Rehydration.** Without a usable in-memory cursor, the last micro or batch marker between
//!   the head and the end of the tail decides: the cursor resumes just after it (clamped to the
//!   middle). A micro marker also gives the rolling summary (its body, via
//!   [`marker::parse_body`]). A batch marker gives the cursor only and the rolling summary
//!   starts empty: batch markers are never deleted by a micro pass, so merging their body into
//!   the rolling summary would keep the same content twice in the transcript.
//! - **User messages** are never absorbed, rewritten or removed. Users that become adjacent
//!   when a marker or exchange between them is dropped stay separate and verbatim (the law 3
//!   exception). With [`MicroConfig::strict_alternation`] they are joined into one user message
//!   instead: the original texts in order, separated by [`USER_JOIN_SEPARATOR`], each a verbatim
//!   substring of the result; the first message's other fields are kept and the store keeps
//!   both originals as archived rows.
//! - **Progress markers.** A finished long turn's progress marker belongs to that turn's
//!   exchange: it is absorbed with it (its body goes into the material).
//! - **Defrag** rewrites the newest micro marker in place when the rolling summary exceeds
//!   [`MicroConfig::defrag_threshold_tokens`]. An output larger than
//!   [`MicroConfig::defrag_max_ratio`] of the input is [`MicroOutcome::DefragFailed`]; the
//!   state then remembers the summary size, and no defrag is planned again until the summary
//!   has grown by half the threshold, so absorption goes on (no livelock).
//! - **Failures.** The same exchange (start index plus a fingerprint of its first message)
//!   failing [`MicroConfig::max_consecutive_failures`] times is skipped: the cursor moves past
//!   it and it stays in the transcript for a batch pass. A fresh process does not know about
//!   skips and retries such an exchange once more from the transcript.
//! - **Cost.** With an in-memory cursor a pass costs O(exchange + log n) before the splice:
//!   nothing scans the whole transcript. Rehydration scans back from the end of the tail to the
//!   last marker.
//!
//! ```
//! use compaction_core::micro::{self, MicroConfig, MicroState, MicroStep};
//! use compaction_core::{Estimator, Message, Transcript, ToolCall};
//!
//! let mut msgs = vec![Message::system("You are an agent.")];
//! for i in 0..12 {
//!     let id = format!("c{i}");
//!     msgs.push(Message::user(format!("request {i}")));
//!     msgs.push(Message::assistant_tool_calls("", vec![ToolCall::function(&id, "sh", "{}")]));
//!     msgs.push(Message::tool_result(&id, "x".repeat(2_000)));
//!     msgs.push(Message::assistant(format!("done {i}")));
//! }
//! let e = Estimator::default();
//! let mut t = Transcript::new(msgs, &e);
//! let cfg = MicroConfig::default();
//! let mut state = MicroState::default();
//!
//! let plan = micro::plan_micro(&t, 10_000, &cfg, &state, true, &e);
//! let MicroStep::Absorb(job) = &plan.step else { panic!("expected an absorb") };
//! assert_eq!(job.ranges, vec![2..5]);
//! // The caller asks its summarizer to merge `job.material` into `job.previous_summary`.
//! let outcome = micro::assemble_micro(&t, &plan, "Ran sh for request 0.", &cfg, &e).unwrap();
//! state.record_outcome(&outcome);
//! outcome.edit().unwrap().clone().apply_to(&mut t, &e).unwrap();
//! assert_eq!(state.cursor, Some(3));
//! // A fresh process recovers the same cursor and summary from the transcript alone.
//! let r = compaction_core::regions::partition(&t, 10_000, &cfg.regions, true);
//! let fresh = micro::resolve_cursor(&t, &r, &MicroState::default());
//! assert_eq!(fresh.cursor, 3);
//! assert_eq!(fresh.rolling_summary.as_deref(), Some("Ran sh for request 0."));
//! ```

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::defaults;
use crate::edit::{Edit, Splice};
use crate::error::Error;
use crate::ledger::Ledger;
use crate::marker;
use crate::material::{self, MaterialConfig};
use crate::message::{Content, MarkerKind, Message, Part, Role};
use crate::regions::{self, RegionConfig, Regions};
use crate::tokens::TokenCounter;
use crate::transcript::{Transcript, groups};

/// The visible separator between user messages joined under strict alternation.
pub const USER_JOIN_SEPARATOR: &str = "\n\n[next user message]\n\n";

/// Micro-compaction policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MicroConfig {
    /// Head and tail protection (the batch window).
    pub regions: RegionConfig,
    /// Summarizer material bounds.
    pub material: MaterialConfig,
    /// Rolling summary size above which a pass defrags instead of absorbing. Default
    /// [`defaults::MICRO_DEFRAG_THRESHOLD_TOKENS`].
    pub defrag_threshold_tokens: u64,
    /// Failures of the same exchange in a row before it is skipped. Default 3 (0 means 1).
    pub max_consecutive_failures: u32,
    /// Absorb only when the absorbable exchanges reclaim at least this many tokens, then all
    /// of them in one splice. Default 0 (off).
    pub min_reclaim_tokens: u64,
    /// Join user messages made adjacent instead of leaving them separate.
    pub strict_alternation: bool,
    /// A defrag output above this fraction of its input counts as failed. Default 0.5.
    pub defrag_max_ratio: f64,
    /// Bound of the [ledger](crate::ledger) section a summary carries, in tokens (0: no
    /// ledger). Default 3,000.
    pub ledger_max_tokens: u64,
}

impl Default for MicroConfig {
    fn default() -> Self {
        MicroConfig {
            regions: RegionConfig::default(),
            material: MaterialConfig::default(),
            defrag_threshold_tokens: defaults::MICRO_DEFRAG_THRESHOLD_TOKENS,
            max_consecutive_failures: defaults::MICRO_MAX_CONSECUTIVE_FAILURES,
            min_reclaim_tokens: defaults::MICRO_MIN_RECLAIM_TOKENS,
            strict_alternation: defaults::STRICT_ALTERNATION,
            defrag_max_ratio: defaults::MICRO_DEFRAG_MAX_RATIO,
            ledger_max_tokens: defaults::LEDGER_MAX_TOKENS,
        }
    }
}

/// What micro-compaction remembers between passes. Owned by the caller; serializable so it
/// can be persisted, but the transcript stays the source of truth (see [`resolve_cursor`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MicroState {
    /// Index of the first middle message not yet absorbed.
    pub cursor: Option<usize>,
    /// Body of the rolling micro marker.
    pub rolling_summary: Option<String>,
    /// Consecutive failures of one exchange of the middle.
    pub failures: Option<FailureRecord>,
    /// Consecutive failures of one tool group of a long turn.
    pub progress_failures: Option<FailureRecord>,
    /// Rolling summary size when the last defrag failed (livelock guard).
    pub defrag_failed_at_tokens: Option<u64>,
}

/// What earlier plans of the same transcript found, so that a plan of that transcript grown
/// only by appends resumes their scans instead of redoing them (the one-shot replay and an
/// agent loop plan once per turn). Plain data, owned by the caller next to its [`MicroState`];
/// a fresh (default) memo is always correct. Each entry is used only while the transcript's
/// lineage, its length, the cursor and the middle's start agree with what the scan saw, and
/// the middle did not shrink; otherwise the scan starts over.
#[derive(Clone, Debug, Default)]
pub struct PlanMemo {
    gate: Option<GateScan>,
    turn: Option<TurnScan>,
    no_progress: Option<Clear>,
}

/// The same for the tool groups of a long turn: one contiguous range from the first group.
#[derive(Clone, Debug)]
struct TurnScan {
    lineage: u64,
    len: usize,
    end_limit: usize,
    range: Range<usize>,
    units: usize,
}

/// A reclaim-gate scan that found every absorbable exchange of the rewritable middle and
/// still fell short of the gate.
#[derive(Clone, Debug)]
struct GateScan {
    lineage: u64,
    len: usize,
    cursor: usize,
    middle: Range<usize>,
    ranges: Vec<Range<usize>>,
    tokens: u64,
}

/// A range of the transcript known to hold no progress marker.
#[derive(Clone, Debug)]
struct Clear {
    lineage: u64,
    len: usize,
    range: Range<usize>,
}

impl PlanMemo {
    fn gate_for(
        &mut self,
        t: &Transcript,
        cursor: usize,
        middle: &Range<usize>,
        first: &Range<usize>,
    ) -> Option<GateScan> {
        let g = self.gate.take()?;
        (g.lineage == t.lineage()
            && g.len <= t.len()
            && g.cursor == cursor
            && g.middle.start == middle.start
            && g.middle.end <= middle.end
            && g.ranges.first() == Some(first))
        .then_some(g)
    }

    fn turn_for(
        &mut self,
        t: &Transcript,
        first: &Range<usize>,
        end_limit: usize,
    ) -> Option<TurnScan> {
        let s = self.turn.take()?;
        (s.lineage == t.lineage()
            && s.len <= t.len()
            && s.range.start == first.start
            && s.range.end >= first.end
            && s.end_limit <= end_limit)
            .then_some(s)
    }

    /// The known-clear range when it still applies and reaches `range`'s start.
    fn clear_for(&self, t: &Transcript, range: &Range<usize>) -> Option<&Range<usize>> {
        self.no_progress
            .as_ref()
            .filter(|c| {
                c.lineage == t.lineage()
                    && c.len <= t.len()
                    && c.range.start <= range.start
                    && range.start <= c.range.end
            })
            .map(|c| &c.range)
    }

    /// The part of `range` not yet known to hold no progress marker (may be empty).
    fn progress_unknown(&self, t: &Transcript, range: &Range<usize>) -> Range<usize> {
        match self.clear_for(t, range) {
            Some(c) => c.end.max(range.start)..range.end,
            None => range.clone(),
        }
    }

    /// Records that `range` holds no progress marker.
    fn progress_clear(&mut self, t: &Transcript, range: &Range<usize>) {
        let range = match self.clear_for(t, range) {
            Some(c) => c.start..c.end.max(range.end),
            None => range.clone(),
        };
        self.no_progress = Some(Clear {
            lineage: t.lineage(),
            len: t.len(),
            range,
        });
    }
}

/// Whether `range` holds a tool call it does not answer itself (then whether it is
/// absorbable depends on what is appended later).
fn has_open_call(messages: &[Message], range: Range<usize>) -> bool {
    let span = &messages[range];
    span.iter()
        .flat_map(|m| m.tool_calls().iter().map(|c| c.call_id()))
        .any(|c| {
            !span
                .iter()
                .any(|m| m.is_tool() && m.tool_call_id() == Some(c))
        })
}

/// Identifies an exchange (or tool group) across passes without keeping its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ExchangeId {
    /// Index of its first message.
    pub start: usize,
    /// FNV-1a hash of its first message's wire JSON.
    pub fingerprint: u64,
}

/// Consecutive failures of one exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureRecord {
    /// The failing exchange.
    pub exchange: ExchangeId,
    /// Failures in a row.
    pub count: u32,
}

/// Where a resolved cursor came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CursorSource {
    /// The in-memory cursor was inside the middle (and agreed with the transcript).
    Memory,
    /// Just after the last summary marker (rehydration).
    Marker {
        /// The marker's index.
        index: usize,
        /// Its kind (micro or batch).
        kind: MarkerKind,
    },
    /// No marker: the start of the middle.
    MiddleStart,
}

/// The cursor and rolling summary a pass works from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Index of the first middle message not yet absorbed.
    pub cursor: usize,
    /// Body of the rolling micro marker, if one exists.
    pub rolling_summary: Option<String>,
    /// Index of the rolling micro marker, if one exists.
    pub rolling_marker: Option<usize>,
    /// Where the cursor came from.
    pub source: CursorSource,
}

/// A micro (or turn-progress) plan for one transcript.
#[derive(Clone, Debug, PartialEq)]
pub struct MicroPlan {
    /// The partition the plan was made with.
    pub regions: Regions,
    /// Threshold in tokens.
    pub threshold_tokens: u64,
    /// Size before (calibrated when available).
    pub tokens_before: u64,
    /// The resolved cursor; `None` for turn-progress plans, which do not use it.
    pub resolved: Option<Resolved>,
    /// Estimated size of the rolling summary (0 when none).
    pub rolling_summary_tokens: u64,
    /// The decision.
    pub step: MicroStep,
    /// [`Transcript::stamp`] of the planned-against transcript.
    planned_stamp: u64,
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
    /// Re-summarize the rolling summary alone (defrag prompt), then [`assemble_micro`].
    Defrag(DefragJob),
    /// Merge the material into the previous summary (merge prompt), then [`assemble_micro`].
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
    /// to the new summary by [`assemble_micro`].
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
    pub exchange: ExchangeId,
}

/// The result of [`assemble_micro`].
#[derive(Clone, Debug, PartialEq)]
pub enum MicroOutcome {
    /// Exchanges absorbed into the rolling micro marker.
    Absorbed {
        /// The edit of the planned-against transcript.
        edit: Edit,
        /// The cursor after the edit (the new marker's index plus one).
        cursor: usize,
        /// The new rolling summary (the marker's body).
        rolling_summary: String,
    },
    /// Tool groups of a long turn absorbed into the turn-progress marker.
    Progressed {
        /// The edit of the planned-against transcript.
        edit: Edit,
        /// The new progress summary (the marker's body).
        progress_summary: String,
    },
    /// The rolling marker rewritten shorter in place.
    Defrag {
        /// The edit (one in-place splice).
        edit: Edit,
        /// The new rolling summary.
        rolling_summary: String,
    },
    /// The defrag output was not short enough: a failed defrag, the transcript is unchanged.
    DefragFailed {
        /// Estimated tokens of the summary given to the defrag.
        input_tokens: u64,
        /// Estimated tokens of its output.
        output_tokens: u64,
    },
}

impl MicroOutcome {
    /// The edit to commit, if the outcome changes the transcript.
    pub fn edit(&self) -> Option<&Edit> {
        match self {
            MicroOutcome::Absorbed { edit, .. }
            | MicroOutcome::Progressed { edit, .. }
            | MicroOutcome::Defrag { edit, .. } => Some(edit),
            MicroOutcome::DefragFailed { .. } => None,
        }
    }

    /// Its name in the one micro vocabulary.
    pub fn kind(&self) -> MicroOutcomeKind {
        match self {
            MicroOutcome::Absorbed { .. } => MicroOutcomeKind::Absorbed,
            MicroOutcome::Progressed { .. } => MicroOutcomeKind::Progressed,
            MicroOutcome::Defrag { .. } => MicroOutcomeKind::Defrag,
            MicroOutcome::DefragFailed { .. } => MicroOutcomeKind::DefragFailed,
        }
    }
}

/// What a micro pass did: the one vocabulary of micro outcomes, used by this module
/// ([`MicroOutcome::kind`]), the facade's micro report and the telemetry line, and rendered
/// one way, by [`as_str`](Self::as_str) (the `outcome` strings of spec section 8; serde uses
/// them too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MicroOutcomeKind {
    /// One or more exchanges were folded into the rolling summary.
    Absorbed,
    /// Tool groups of a long turn were folded into its turn-progress marker. An absorption
    /// too: it renders as `absorbed`.
    Progressed,
    /// The summarizer failed; the transcript is unchanged and the failure counted.
    SummarizeFailed,
    /// The same exchange failed too often; the cursor moved past it.
    ExchangeSkipped,
    /// The rolling summary was re-summarized shorter in place.
    Defrag,
    /// The defrag failed or did not shrink the summary enough; absorption goes on next time.
    DefragFailed,
    /// The reclaim gate held the pass back (not enough to reclaim yet).
    Gated,
    /// Nothing to do (cadence, no whole exchange in the middle).
    #[default]
    Noop,
    /// The summary was made but the store refused or failed the commit; the transcript is
    /// unchanged.
    StoreFailed,
}

impl MicroOutcomeKind {
    /// Every outcome.
    pub const ALL: [MicroOutcomeKind; 9] = [
        MicroOutcomeKind::Absorbed,
        MicroOutcomeKind::Progressed,
        MicroOutcomeKind::SummarizeFailed,
        MicroOutcomeKind::ExchangeSkipped,
        MicroOutcomeKind::Defrag,
        MicroOutcomeKind::DefragFailed,
        MicroOutcomeKind::Gated,
        MicroOutcomeKind::Noop,
        MicroOutcomeKind::StoreFailed,
    ];

    /// The snake_case name (spec section 8): `absorbed` (for [`Progressed`](Self::Progressed)
    /// too), `summarize_failed`, `exchange_skipped`, `defrag`, `defrag_failed`, `gated`,
    /// `noop`, `store_failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            MicroOutcomeKind::Absorbed | MicroOutcomeKind::Progressed => "absorbed",
            MicroOutcomeKind::SummarizeFailed => "summarize_failed",
            MicroOutcomeKind::ExchangeSkipped => "exchange_skipped",
            MicroOutcomeKind::Defrag => "defrag",
            MicroOutcomeKind::DefragFailed => "defrag_failed",
            MicroOutcomeKind::Gated => "gated",
            MicroOutcomeKind::Noop => "noop",
            MicroOutcomeKind::StoreFailed => "store_failed",
        }
    }

    /// The outcome named `s` by [`as_str`](Self::as_str) (`absorbed` gives
    /// [`Absorbed`](Self::Absorbed)).
    pub fn from_name(s: &str) -> Option<MicroOutcomeKind> {
        MicroOutcomeKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s && *k != MicroOutcomeKind::Progressed)
    }

    /// Whether the pass rewrote the transcript (absorbed, progressed, defrag).
    pub fn changed_transcript(self) -> bool {
        matches!(
            self,
            MicroOutcomeKind::Absorbed | MicroOutcomeKind::Progressed | MicroOutcomeKind::Defrag
        )
    }
}

impl std::fmt::Display for MicroOutcomeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for MicroOutcomeKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for MicroOutcomeKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        MicroOutcomeKind::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom("unknown micro outcome (expected a spec section 8 name)")
        })
    }
}

impl ExchangeId {
    /// The identity of the exchange starting at `range.start`.
    pub fn of(messages: &[Message], range: Range<usize>) -> ExchangeId {
        ExchangeId {
            start: range.start,
            fingerprint: messages
                .get(range.start)
                .map(|m| fnv1a(m.to_wire_json().as_bytes()))
                .unwrap_or(0),
        }
    }
}

impl MicroState {
    /// Forgets everything (after a successful batch compaction): the next pass rehydrates
    /// from the transcript.
    pub fn reset(&mut self) {
        *self = MicroState::default();
    }

    /// Records a plan: adopts its resolved cursor and rolling summary, and for
    /// [`MicroStep::Skip`] moves the cursor past the skipped exchange. Call it for every plan;
    /// for noop, gated and skip plans it is the whole pass.
    pub fn record_plan(&mut self, plan: &MicroPlan) {
        if let Some(r) = &plan.resolved {
            self.cursor = Some(r.cursor);
            self.rolling_summary = r.rolling_summary.clone();
        }
        if let MicroStep::Skip { range, .. } = &plan.step {
            self.cursor = Some(range.end);
            self.failures = None;
        }
    }

    /// Records a successful [`assemble_micro`] whose edit the caller applied (or, for
    /// [`MicroOutcome::DefragFailed`], a failed defrag).
    pub fn record_outcome(&mut self, outcome: &MicroOutcome) {
        match outcome {
            MicroOutcome::Absorbed {
                cursor,
                rolling_summary,
                ..
            } => {
                self.cursor = Some(*cursor);
                self.rolling_summary = Some(rolling_summary.clone());
                self.failures = None;
            }
            MicroOutcome::Progressed { .. } => self.progress_failures = None,
            MicroOutcome::Defrag {
                rolling_summary, ..
            } => {
                self.rolling_summary = Some(rolling_summary.clone());
                self.defrag_failed_at_tokens = None;
            }
            MicroOutcome::DefragFailed { input_tokens, .. } => {
                self.defrag_failed_at_tokens = Some(*input_tokens);
            }
        }
    }

    /// Records that the summarizer (or the store commit) failed for `plan`: the transcript is
    /// unchanged and the failure is counted against the exchange, or the defrag guard engages.
    pub fn record_failure(&mut self, plan: &MicroPlan) {
        self.record_plan(plan);
        match &plan.step {
            MicroStep::Absorb(job) => {
                let slot = match job.kind {
                    MarkerKind::Progress => &mut self.progress_failures,
                    _ => &mut self.failures,
                };
                let count = match slot {
                    Some(f) if f.exchange == job.exchange => f.count + 1,
                    _ => 1,
                };
                *slot = Some(FailureRecord {
                    exchange: job.exchange,
                    count,
                });
            }
            MicroStep::Defrag(job) => self.defrag_failed_at_tokens = Some(job.summary_tokens),
            _ => {}
        }
    }
}

/// Resolves the cursor and rolling summary (spec section 5, step 2).
///
/// The in-memory cursor is used when it lies inside the middle (`middle.start..=middle.end`)
/// and, if the state holds a rolling summary, the nearest micro marker before it carries
/// exactly that body. Otherwise the transcript decides: just after the last micro or batch
/// marker between the head and the end of the tail (clamped to the middle), else the start of
/// the middle. A micro marker gives the rolling summary; a batch marker does not (see the
/// [module docs](self)).
pub fn resolve_cursor(t: &Transcript, r: &Regions, state: &MicroState) -> Resolved {
    let msgs = t.messages();
    let middle = &r.middle;
    if let Some(c) = state
        .cursor
        .filter(|c| middle.start <= *c && *c <= middle.end)
    {
        match &state.rolling_summary {
            None => {
                return Resolved {
                    cursor: c,
                    rolling_summary: None,
                    rolling_marker: None,
                    source: CursorSource::Memory,
                };
            }
            Some(body) => {
                let found = (middle.start..c)
                    .rev()
                    .find_map(|i| match marker::classify(&msgs[i]) {
                        Some(MarkerKind::Micro) => Some(Some(i)),
                        Some(MarkerKind::Batch) => Some(None),
                        _ => None,
                    })
                    .flatten();
                if let Some(i) = found
                    && marker::parse_body(&msgs[i]).as_deref() == Some(body.as_str())
                {
                    return Resolved {
                        cursor: c,
                        rolling_summary: Some(body.clone()),
                        rolling_marker: Some(i),
                        source: CursorSource::Memory,
                    };
                }
            }
        }
    }
    let last = (r.head.end..r.tail.end).rev().find_map(|i| {
        marker::classify(&msgs[i])
            .filter(|k| matches!(k, MarkerKind::Batch | MarkerKind::Micro))
            .map(|k| (i, k))
    });
    match last {
        Some((i, kind)) => {
            let cursor = (i + 1).clamp(middle.start, middle.end);
            let micro = kind == MarkerKind::Micro;
            Resolved {
                cursor,
                rolling_summary: if micro {
                    marker::parse_body(&msgs[i])
                } else {
                    None
                },
                rolling_marker: micro.then_some(i),
                source: CursorSource::Marker { index: i, kind },
            }
        }
        None => Resolved {
            cursor: middle.start,
            rolling_summary: None,
            rolling_marker: None,
            source: CursorSource::MiddleStart,
        },
    }
}

/// Plans a micro pass (spec section 5, steps 2 to 7).
///
/// `compacted` says whether the session has been compacted before (head protection decays),
/// exactly as for [`regions::partition`].
pub fn plan_micro(
    t: &Transcript,
    threshold_tokens: u64,
    cfg: &MicroConfig,
    state: &MicroState,
    compacted: bool,
    counter: &dyn TokenCounter,
) -> MicroPlan {
    let mut memo = PlanMemo::default();
    plan_micro_memo(
        t,
        threshold_tokens,
        cfg,
        state,
        compacted,
        counter,
        &mut memo,
    )
}

/// [`plan_micro`] resuming what earlier plans of the same transcript found (see [`PlanMemo`]):
/// the same plan, but while the reclaim gate holds and the transcript only grows, a plan
/// reads only the exchanges appended since the last one instead of every exchange after the
/// cursor again.
pub fn plan_micro_memo(
    t: &Transcript,
    threshold_tokens: u64,
    cfg: &MicroConfig,
    state: &MicroState,
    compacted: bool,
    counter: &dyn TokenCounter,
    memo: &mut PlanMemo,
) -> MicroPlan {
    let r = regions::partition_calibrated(t, threshold_tokens, &cfg.regions, compacted);
    let resolved = resolve_cursor(t, &r, state);
    if resolved
        .rolling_marker
        .is_some_and(|i| t.messages()[i].is_pinned())
    {
        // A pinned rolling marker is never rewritten nor superseded: micro waits until it is
        // unpinned (a second rolling marker would break law 5).
        return MicroPlan {
            regions: r,
            threshold_tokens,
            tokens_before: t.current_tokens(),
            resolved: Some(resolved),
            rolling_summary_tokens: 0,
            step: MicroStep::Noop(NoopReason::NothingToAbsorb),
            planned_stamp: t.stamp(),
        };
    }
    // The ledger is the library's, not the summarizer's: sizes and requests see the text only.
    let (rolling_text, rolling_ledger) = split_summary(resolved.rolling_summary.as_deref());
    let summary_tokens = rolling_text.as_deref().map_or(0, |s| counter.count_text(s));
    let mut plan = MicroPlan {
        regions: r.clone(),
        threshold_tokens,
        tokens_before: t.current_tokens(),
        resolved: None,
        rolling_summary_tokens: summary_tokens,
        step: MicroStep::Noop(NoopReason::NothingToAbsorb),
        planned_stamp: t.stamp(),
    };
    let msgs = t.messages();

    // Step 4: defrag when the rolling summary is too large (and the guard allows).
    if let (Some(i), Some(text)) = (resolved.rolling_marker, &rolling_text)
        && summary_tokens > cfg.defrag_threshold_tokens
        && r.middle.contains(&i)
        && defrag_allowed(state, summary_tokens, cfg)
    {
        plan.step = MicroStep::Defrag(DefragJob {
            marker_index: i,
            // Bounded like any request (spec section 9).
            summary_text: material::bound_previous(text, "", &cfg.material),
            summary_tokens,
            ledger: rolling_ledger,
        });
        plan.resolved = Some(resolved);
        return plan;
    }

    // Step 3: the oldest whole exchange at or after the cursor (before the last reply the user
    // saw, which stays verbatim).
    let Some(first) = next_micro_exchange(msgs, r.rewritable_middle(), resolved.cursor) else {
        plan.resolved = Some(resolved);
        return plan;
    };
    let exchange = ExchangeId::of(msgs, first.clone());
    let limit = cfg.max_consecutive_failures.max(1);
    if let Some(f) = &state.failures
        && f.exchange == exchange
        && f.count >= limit
    {
        plan.step = MicroStep::Skip {
            range: first,
            failures: f.count,
        };
        plan.resolved = Some(resolved);
        return plan;
    }

    // Step 6: the reclaim gate gathers consecutive exchanges until they reclaim enough.
    let superseded: Vec<usize> = resolved
        .rolling_marker
        .filter(|i| r.middle.contains(i))
        .into_iter()
        .collect();
    let superseded_tokens: u64 = superseded.iter().map(|&i| t.tokens_of(i)).sum();
    let new_marker_tokens = counter.count_message(&marker::render(
        MarkerKind::Micro,
        Role::Assistant,
        resolved.rolling_summary.as_deref().unwrap_or(""),
    ));
    let reclaim = |out: u64| -> i64 { (out + superseded_tokens) as i64 - new_marker_tokens as i64 };
    let gate = cfg.min_reclaim_tokens as i64;
    let rewritable = r.rewritable_middle();
    // The sum over `ranges` is kept as they grow; a scan that fell short before resumes after
    // the last exchange it found.
    // `checked`: how many of `ranges` are known to hold no open call (remembered ones were
    // checked when they were found).
    let (mut ranges, mut out, checked) =
        match memo.gate_for(t, resolved.cursor, &rewritable, &first) {
            Some(g) if gate > 0 => {
                let checked = g.ranges.len();
                (g.ranges, g.tokens, checked)
            }
            _ => {
                let out = t.tokens_in(first.clone());
                (vec![first], out, 0)
            }
        };
    if gate > 0 && reclaim(out) >= gate && ranges.len() > 1 {
        // A lower gate than the remembered scan's: the first exchanges that reach it.
        out = 0;
        let mut keep = 0;
        for x in &ranges {
            out += t.tokens_in(x.clone());
            keep += 1;
            if reclaim(out) >= gate {
                break;
            }
        }
        ranges.truncate(keep);
    }
    if gate > 0 {
        while reclaim(out) < gate {
            let from = ranges.last().map_or(resolved.cursor, |x| x.end);
            match next_micro_exchange(msgs, rewritable.clone(), from) {
                Some(next) => {
                    out += t.tokens_in(next.clone());
                    ranges.push(next);
                }
                None => {
                    plan.step = MicroStep::Gated {
                        reclaimable_tokens: reclaim(out),
                        exchanges: ranges.len(),
                    };
                    // Absorbability of an exchange with a call it does not answer depends on
                    // what is appended: such a scan is not remembered.
                    if !ranges[checked..]
                        .iter()
                        .any(|x| has_open_call(msgs, x.clone()))
                    {
                        memo.gate = Some(GateScan {
                            lineage: t.lineage(),
                            len: t.len(),
                            cursor: resolved.cursor,
                            middle: rewritable,
                            ranges,
                            tokens: out,
                        });
                    }
                    plan.resolved = Some(resolved);
                    return plan;
                }
            }
        }
    }

    let (messages, material, rolling_text) =
        material_for(msgs, &ranges, &cfg.material, rolling_text);
    let ledger = ledger_of(rolling_ledger, msgs, &ranges);
    let job = AbsorbJob {
        kind: MarkerKind::Micro,
        exchange_tokens: out,
        expected_reclaim_tokens: reclaim(out),
        ranges,
        material,
        previous_summary: rolling_text,
        ledger,
        messages,
        superseded_markers: superseded,
        exchange,
    };
    plan.step = if arrangement(msgs, &job, cfg.strict_alternation, &r.middle).2 {
        MicroStep::Absorb(job)
    } else {
        MicroStep::Noop(NoopReason::RolesWouldBreak)
    };
    plan.resolved = Some(resolved);
    plan
}

/// Plans a turn-progress pass for the hook the agent calls after each tool round (spec
/// section 4a): when the active turn is split, the oldest whole tool group of `turn_middle`
/// (or, with the reclaim gate, as many consecutive groups as needed) is absorbed into the one
/// progress marker directly after the turn's user message, updated in place.
///
/// Returns [`NoopReason::EarlierProgressMarker`] while a finished turn's progress marker is
/// still in the middle (the micro pass absorbs it with its exchange), so there is never more
/// than one progress marker.
pub fn plan_turn_progress(
    t: &Transcript,
    threshold_tokens: u64,
    cfg: &MicroConfig,
    state: &MicroState,
    compacted: bool,
    counter: &dyn TokenCounter,
) -> MicroPlan {
    let mut memo = PlanMemo::default();
    plan_turn_progress_memo(
        t,
        threshold_tokens,
        cfg,
        state,
        compacted,
        counter,
        &mut memo,
    )
}

/// [`plan_turn_progress`] resuming what earlier plans of the same transcript found (see
/// [`PlanMemo`]): the same plan, but the middle is searched for an earlier turn's progress
/// marker only where earlier plans did not search it already.
pub fn plan_turn_progress_memo(
    t: &Transcript,
    threshold_tokens: u64,
    cfg: &MicroConfig,
    state: &MicroState,
    compacted: bool,
    counter: &dyn TokenCounter,
    memo: &mut PlanMemo,
) -> MicroPlan {
    let r = regions::partition_calibrated(t, threshold_tokens, &cfg.regions, compacted);
    let mut plan = MicroPlan {
        regions: r.clone(),
        threshold_tokens,
        tokens_before: t.current_tokens(),
        resolved: None,
        rolling_summary_tokens: 0,
        step: MicroStep::Noop(NoopReason::NotALongTurn),
        planned_stamp: t.stamp(),
    };
    let msgs = t.messages();
    // The message the progress marker follows: the pinned user message, or, when the head
    // already holds the turn's user message, the last message of the head.
    let u = match r.turn_user {
        Some(u) => u,
        None if !r.turn_middle.is_empty() && r.turn_middle.start > 0 => r.turn_middle.start - 1,
        None => return plan,
    };
    if cfg.strict_alternation {
        plan.step = MicroStep::Noop(NoopReason::StrictAlternation);
        return plan;
    }
    if memo
        .progress_unknown(t, &r.middle)
        .any(|i| marker::classify(&msgs[i]) == Some(MarkerKind::Progress))
    {
        plan.step = MicroStep::Noop(NoopReason::EarlierProgressMarker);
        return plan;
    }
    memo.progress_clear(t, &r.middle);
    let progress = (u + 1 < msgs.len()
        && marker::classify(&msgs[u + 1]) == Some(MarkerKind::Progress))
    .then_some(u + 1);
    if progress.is_some_and(|p| msgs[p].is_pinned()) {
        // A pinned progress marker is never rewritten.
        plan.step = MicroStep::Noop(NoopReason::NothingToAbsorb);
        return plan;
    }
    let previous_body = progress.and_then(|p| marker::parse_body(&msgs[p]));
    let (previous, previous_ledger) = split_summary(previous_body.as_deref());
    plan.rolling_summary_tokens = previous.as_deref().map_or(0, |s| counter.count_text(s));
    let start = progress.map_or(u + 1, |p| p + 1);
    // The last reply the user saw stays verbatim: absorption stops before it.
    let end_limit = r.rewritable_turn_middle().end;

    let next_unit = |from: usize| -> Option<Range<usize>> {
        if from >= end_limit || marker::classify(&msgs[from]).is_some() || msgs[from].is_user() {
            return None;
        }
        let e = groups::group_end(msgs, from);
        // The progress marker absorbs the turn's groups in order, up to the first pinned one.
        (e <= end_limit && !crate::pins::any_pinned(msgs, from..e)).then_some(from..e)
    };
    let Some(first) = next_unit(start) else {
        plan.step = MicroStep::Noop(NoopReason::NothingToAbsorb);
        return plan;
    };
    let exchange = ExchangeId::of(msgs, first.clone());
    if let Some(f) = &state.progress_failures
        && f.exchange == exchange
        && f.count >= cfg.max_consecutive_failures.max(1)
    {
        plan.step = MicroStep::Noop(NoopReason::ProgressStalled);
        return plan;
    }
    let superseded_tokens = progress.map_or(0, |p| t.tokens_of(p));
    let new_marker_tokens = counter.count_message(&marker::render(
        MarkerKind::Progress,
        Role::Assistant,
        previous_body.as_deref().unwrap_or(""),
    ));
    let reclaim = |range: &Range<usize>| -> i64 {
        (t.tokens_in(range.clone()) + superseded_tokens) as i64 - new_marker_tokens as i64
    };
    let gate = cfg.min_reclaim_tokens as i64;
    // A scan that fell short before resumes after the last group it found (a lower gate
    // than its sum starts over: the plan then absorbs).
    let (mut range, mut units) = match memo.turn_for(t, &first, end_limit) {
        Some(s) if gate > 0 && reclaim(&s.range) < gate => (s.range, s.units),
        _ => (first, 1),
    };
    if gate > 0 {
        while reclaim(&range) < gate {
            match next_unit(range.end) {
                Some(next) => {
                    range.end = next.end;
                    units += 1;
                }
                None => {
                    plan.step = MicroStep::Gated {
                        reclaimable_tokens: reclaim(&range),
                        exchanges: units,
                    };
                    // A group ending at the transcript's end may still gain results.
                    if range.end < t.len() {
                        memo.turn = Some(TurnScan {
                            lineage: t.lineage(),
                            len: t.len(),
                            end_limit,
                            range,
                            units,
                        });
                    }
                    return plan;
                }
            }
        }
    }
    let ranges = vec![range.clone()];
    let (messages, material, previous) = material_for(msgs, &ranges, &cfg.material, previous);
    let ledger = ledger_of(previous_ledger, msgs, &ranges);
    plan.step = MicroStep::Absorb(AbsorbJob {
        kind: MarkerKind::Progress,
        exchange_tokens: t.tokens_in(range.clone()),
        expected_reclaim_tokens: reclaim(&range),
        ranges,
        material,
        previous_summary: previous,
        ledger,
        messages,
        superseded_markers: progress.into_iter().collect(),
        exchange,
    });
    plan
}

/// Turns a plan and the summarizer's output into one edit of the planned-against transcript.
///
/// For [`MicroStep::Absorb`], `new_summary` is the merged summary; for [`MicroStep::Defrag`],
/// the shortened one (an output above [`MicroConfig::defrag_max_ratio`] of the input gives
/// [`MicroOutcome::DefragFailed`]). The summary is redacted before it is written. Other steps
/// have nothing to assemble (`Error::SummaryCount` with `expected: 0`); a transcript that
/// changed since planning gives `Error::StaleTranscript`.
pub fn assemble_micro(
    t: &Transcript,
    plan: &MicroPlan,
    new_summary: &str,
    cfg: &MicroConfig,
    counter: &dyn TokenCounter,
) -> Result<MicroOutcome, Error> {
    if t.stamp() != plan.planned_stamp {
        return Err(Error::StaleTranscript);
    }
    let body = crate::redact::redact(new_summary).into_owned();
    let msgs = t.messages();
    match &plan.step {
        MicroStep::Defrag(job) => {
            let (text, _) = Ledger::split(&body);
            let output_tokens = counter.count_text(text);
            if output_tokens as f64 > job.summary_tokens as f64 * cfg.defrag_max_ratio {
                return Ok(MicroOutcome::DefragFailed {
                    input_tokens: job.summary_tokens,
                    output_tokens,
                });
            }
            let body = job.ledger.attach(text, cfg.ledger_max_tokens);
            let i = job.marker_index;
            let role = msgs[i].role().clone();
            let edit = Edit::single(
                i..i + 1,
                vec![marker::render(MarkerKind::Micro, role, &body)],
            );
            edit.validate(msgs.len())?;
            Ok(MicroOutcome::Defrag {
                edit,
                rolling_summary: body,
            })
        }
        MicroStep::Absorb(job) if job.kind == MarkerKind::Progress => {
            let body = job.ledger.attach(&body, cfg.ledger_max_tokens);
            let range = &job.ranges[0];
            let start = job
                .superseded_markers
                .first()
                .copied()
                .unwrap_or(range.start);
            let edit = Edit::single(
                start..range.end,
                vec![marker::render(MarkerKind::Progress, Role::Assistant, &body)],
            );
            edit.validate(msgs.len())?;
            Ok(MicroOutcome::Progressed {
                edit,
                progress_summary: body,
            })
        }
        MicroStep::Absorb(job) => {
            let body = job.ledger.attach(&body, cfg.ledger_max_tokens);
            check_pairs(msgs, &job.ranges)?;
            let edit = absorb_edit(
                msgs,
                job,
                &body,
                cfg.strict_alternation,
                &plan.regions.middle,
            );
            edit.validate(msgs.len())?;
            let marker_at = edit
                .splices
                .iter()
                .find(|s| s.replacement.iter().any(|m| marker::classify(m).is_some()))
                .map_or(0, |s| s.range.start);
            let cursor = after_index(&edit, marker_at) + 1;
            Ok(MicroOutcome::Absorbed {
                edit,
                cursor,
                rolling_summary: body,
            })
        }
        _ => Err(Error::SummaryCount {
            expected: 0,
            got: 1,
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers.

fn defrag_allowed(state: &MicroState, summary_tokens: u64, cfg: &MicroConfig) -> bool {
    match state.defrag_failed_at_tokens {
        None => true,
        Some(at) => summary_tokens >= at + (cfg.defrag_threshold_tokens / 2).max(1),
    }
}

/// The oldest absorbable exchange at or after `cursor`: an [`exchange`](crate::exchange)
/// whose tool calls and results pair up inside it, extended backwards over a finished turn's
/// progress marker directly before it.
fn next_micro_exchange(
    messages: &[Message],
    middle: Range<usize>,
    cursor: usize,
) -> Option<Range<usize>> {
    let floor = cursor.max(middle.start);
    let mut from = cursor;
    loop {
        let mut r = crate::exchange::next_exchange(messages, middle.clone(), from)?;
        from = r.end;
        if r.start > floor && marker::classify(&messages[r.start - 1]) == Some(MarkerKind::Progress)
        {
            r.start -= 1;
        }
        // An exchange holding a pinned message stays as it is; later ones may still go.
        if pairs_inside(messages, r.clone()) && !crate::pins::any_pinned(messages, r.clone()) {
            return Some(r);
        }
    }
}

/// Whether removing `range` leaves no tool result without its call and no call that had a
/// result without it: every result inside answers a call inside, and no call inside is
/// answered outside.
fn pairs_inside(messages: &[Message], range: Range<usize>) -> bool {
    let span = &messages[range.clone()];
    let calls: Vec<&str> = span
        .iter()
        .flat_map(|m| m.tool_calls().iter().map(|c| c.call_id()))
        .collect();
    let answered: Vec<&str> = span
        .iter()
        .filter(|m| m.is_tool())
        .filter_map(Message::tool_call_id)
        .collect();
    if span.iter().any(|m| m.is_tool())
        && answered.len() != span.iter().filter(|m| m.is_tool()).count()
    {
        return false;
    }
    if answered.iter().any(|a| !calls.contains(a)) {
        return false;
    }
    let unanswered: Vec<&str> = calls
        .iter()
        .copied()
        .filter(|c| !answered.contains(c))
        .collect();
    // Rare: a call whose result is not inside. Only then look at the rest of the transcript.
    unanswered.is_empty()
        || !messages[range.end..]
            .iter()
            .filter_map(Message::tool_call_id)
            .any(|id| unanswered.contains(&id))
}

fn check_pairs(messages: &[Message], ranges: &[Range<usize>]) -> Result<(), Error> {
    if ranges.iter().all(|r| pairs_inside(messages, r.clone())) {
        Ok(())
    } else {
        Err(Error::WouldBreakToolPairs)
    }
}

/// The absorbed messages (a progress marker replaced by its body) and their material, each
/// exchange preceded by the user request it answers (context only: it is not absorbed).
/// A summary body's text (without its ledger) and the ledger it carries; `(None, empty)` for
/// no body.
fn split_summary(body: Option<&str>) -> (Option<String>, Ledger) {
    match body {
        Some(body) => {
            let (text, ledger) = Ledger::split(body);
            (Some(text.to_owned()), ledger)
        }
        None => (None, Ledger::default()),
    }
}

/// `carried` followed by the files and commands of `ranges` (a summary marker inside them
/// contributes the ledger it carries).
fn ledger_of(mut carried: Ledger, msgs: &[Message], ranges: &[Range<usize>]) -> Ledger {
    for m in ranges.iter().flat_map(|r| &msgs[r.clone()]) {
        if marker::classify(m).is_some() {
            if let Some(body) = marker::parse_body(m) {
                carried.extend(&Ledger::split(&body).1);
            }
        } else {
            carried.observe(m);
        }
    }
    carried
}

/// The redacted messages and the material of `ranges`, and `previous` (the summary they are
/// merged into) bounded with the material ([`material::share`]).
fn material_for(
    msgs: &[Message],
    ranges: &[Range<usize>],
    cfg: &MaterialConfig,
    previous: Option<String>,
) -> (Vec<Message>, String, Option<String>) {
    let mut messages = Vec::new();
    let mut with_context = Vec::new();
    for r in ranges {
        if let Some(u) = r.start.checked_sub(1).map(|i| &msgs[i])
            && u.is_user()
            && marker::classify(u).is_none()
        {
            with_context.push(u.clone());
        }
        for m in &msgs[r.clone()] {
            let m = match marker::classify(m) {
                Some(MarkerKind::Progress) => Message::assistant(format!(
                    "(summary of the earlier progress of this turn)\n{}",
                    Ledger::split(&marker::parse_body(m).unwrap_or_default()).0
                )),
                _ => m.clone(),
            };
            with_context.push(m.clone());
            messages.push(crate::redact::redact_message(&m));
        }
    }
    let bounds = material::share(previous.as_deref().map_or(0, |p| p.chars().count()), cfg);
    let material = material::serialize(&with_context, &with_context, &bounds);
    let previous = previous.map(|p| material::bound_previous(&p, &material, cfg));
    (messages, material, previous)
}

/// The splices of an absorb: superseded markers and the absorbed ranges are removed and one
/// of them is replaced by the new marker, the last range unless removing an earlier unit would
/// make two same-role neighbours that law 3 does not allow (e.g. a user-role batch marker
/// followed by a user message); then the marker takes that unit's place. Under strict
/// alternation, user messages made adjacent inside the middle are joined.
fn absorb_edit(
    msgs: &[Message],
    job: &AbsorbJob,
    body: &str,
    strict: bool,
    middle: &Range<usize>,
) -> Edit {
    let (units, marker_unit, _) = arrangement(msgs, job, strict, middle);
    let prev = marker_unit.start.checked_sub(1).map(|i| &msgs[i]);
    let role =
        crate::batch::marker_role(prev, msgs.get(marker_unit.end)).unwrap_or(Role::Assistant);
    let new_marker = marker::render(MarkerKind::Micro, role, body);
    let splices: Vec<Splice> = units
        .into_iter()
        .map(|range| Splice {
            replacement: if range == marker_unit {
                vec![new_marker.clone()]
            } else {
                Vec::new()
            },
            range,
        })
        .collect();
    let splices = if strict {
        join_adjacent_users(msgs, splices, middle)
    } else {
        splices
    };
    Edit { splices }
}

/// The units an absorb removes (ranges and superseded markers, ascending), the one the new
/// marker replaces, and whether every other removal is allowed by law 3. A removal is blocked
/// when its neighbours share a visible role and are not two real user messages (or, under
/// strict alternation, two real user messages that cannot be joined because one of them is
/// protected).
fn arrangement(
    msgs: &[Message],
    job: &AbsorbJob,
    strict: bool,
    middle: &Range<usize>,
) -> (Vec<Range<usize>>, Range<usize>, bool) {
    let mut units: Vec<Range<usize>> = job.ranges.clone();
    units.extend(job.superseded_markers.iter().map(|&i| i..i + 1));
    units.sort_by_key(|r| r.start);
    let last_range = job.ranges.last().cloned().unwrap_or(0..0);
    let blocked = |r: &Range<usize>| {
        let (Some(prev), Some(next)) = (r.start.checked_sub(1).map(|i| &msgs[i]), msgs.get(r.end))
        else {
            return false;
        };
        let visible = matches!(prev.role(), Role::User | Role::Assistant);
        if !visible || prev.role() != next.role() {
            return false;
        }
        let real_users =
            prev.is_user() && marker::classify(prev).is_none() && marker::classify(next).is_none();
        let joinable = r.start > middle.start && r.end < middle.end;
        !(real_users && (!strict || joinable))
    };
    let marker_unit = units
        .iter()
        .find(|u| **u != last_range && blocked(u))
        .cloned()
        .unwrap_or(last_range);
    let ok = units.iter().all(|u| *u == marker_unit || !blocked(u));
    (units, marker_unit, ok)
}

/// Under strict alternation: a removal between two real user messages of the middle joins
/// them (and any further user made adjacent) into one user message. Protected neighbours (the
/// head's last or the tail's first message) are never rewritten.
fn join_adjacent_users(
    msgs: &[Message],
    splices: Vec<Splice>,
    middle: &Range<usize>,
) -> Vec<Splice> {
    let is_real_user = |m: &Message| m.is_user() && marker::classify(m).is_none();
    let starts: Vec<usize> = splices.iter().map(|s| s.range.start).collect();
    // (splice, whether it is a join this function made)
    let mut out: Vec<(Splice, bool)> = Vec::with_capacity(splices.len());
    for s in splices {
        let (a, b) = (s.range.start, s.range.end);
        let removal = s.replacement.is_empty() && a < b;
        if !(removal
            && a > middle.start
            && b < middle.end
            && !starts.contains(&b)
            && is_real_user(&msgs[b]))
        {
            out.push((s, false));
            continue;
        }
        match out.last_mut() {
            // A join that ends right where this removal starts: join the next user into it.
            Some((prev, true)) if prev.range.end == a => {
                prev.replacement = vec![join_users(&prev.replacement[0], &msgs[b])];
                prev.range.end = b + 1;
            }
            Some((prev, _)) if prev.range.end >= a => out.push((s, false)),
            _ if is_real_user(&msgs[a - 1]) => out.push((
                Splice {
                    range: a - 1..b + 1,
                    replacement: vec![join_users(&msgs[a - 1], &msgs[b])],
                },
                true,
            )),
            _ => out.push((s, false)),
        }
    }
    out.into_iter().map(|(s, _)| s).collect()
}

/// One user message holding `a` then `b`, verbatim, separated by [`USER_JOIN_SEPARATOR`].
/// Keeps `a`'s other fields; drops any store row id (it is a new row).
fn join_users(a: &Message, b: &Message) -> Message {
    let mut joined = a.clone();
    let content = match (a.content(), b.content()) {
        (Some(Content::Text(x)), Some(Content::Text(y))) => {
            Content::Text(format!("{x}{USER_JOIN_SEPARATOR}{y}"))
        }
        (x, y) => {
            let mut parts = as_parts(x);
            parts.push(Part::text_part(USER_JOIN_SEPARATOR));
            parts.extend(as_parts(y));
            Content::Parts(parts)
        }
    };
    joined.set_content(Some(content));
    if joined.meta().is_some() {
        joined.meta_mut().row_id = None;
    }
    joined
}

fn as_parts(c: Option<&Content>) -> Vec<Part> {
    match c {
        Some(Content::Parts(p)) => p.clone(),
        Some(Content::Text(s)) => vec![Part::text_part(s.clone())],
        Some(Content::Null) | None => Vec::new(),
    }
}

/// Where message `i` of the planned-against transcript lands after `edit`, when no splice
/// covers it or it starts a splice (then: where the splice's first replacement lands).
fn after_index(edit: &Edit, i: usize) -> usize {
    let shift: isize = edit
        .splices
        .iter()
        .filter(|s| s.range.end <= i && s.range.start < i)
        .map(|s| s.replacement.len() as isize - s.range.len() as isize)
        .sum();
    (i as isize + shift).max(0) as usize
}

/// 64-bit FNV-1a: stable across processes and versions, unlike `DefaultHasher`.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
