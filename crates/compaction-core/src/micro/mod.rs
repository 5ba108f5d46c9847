//! The micro-compaction planner (spec section 5) and its long-turn counterpart (section 4a).
//!
//! Micro-compaction pays the batch bill in instalments: after each turn, the oldest whole
//! exchange of the middle is folded into one rolling summary. Like the [batch
//! planner](crate::batch), planning is pure and split in two:
//!
//! 1. [`MicroPlanner::plan`] takes one [`MicroRequest`] (the transcript, the hook, the
//!    threshold, the configuration), resolves the cursor, finds the exchange(s) to absorb and
//!    prepares the summarizer material, or decides to defrag, skip, wait (gated) or do nothing;
//! 2. the caller runs the summarizer (merge prompt for [`MicroStep::Absorb`], defrag prompt for
//!    [`MicroStep::Defrag`]);
//! 3. [`assemble_micro`] turns the plan and the new summary into one [`Edit`](crate::Edit) of
//!    the transcript the plan was made from, plus the new cursor and rolling summary.
//!
//! The caller owns a [`MicroPlanner`] (its [`MicroState`] is plain, serializable data) and
//! reports back what became of each plan with one step, [`MicroPlanner::record`] and a
//! [`MicroEvent`]: the failure and skip policy is the planner's, not the caller's. A successful
//! batch compaction or a reload records [`MicroEvent::Reset`].
//!
//! # Decisions
//!
//! - **Where the marker goes.** The new micro marker replaces the *last* absorbed exchange, in
//!   place: it sits between the two user messages that bounded that exchange, so it takes the
//!   assistant role and alternation holds. Earlier absorbed exchanges (reclaim gate) and the
//!   superseded micro marker are removed. The cursor is then the marker's index plus one, which
//!   is exactly what a fresh planner recovers from the transcript alone (law 7).
//! - **Rehydration.** Without a usable in-memory cursor, the last micro or batch marker between
//!   the head and the end of the tail decides: the cursor resumes just after it (clamped to the
//!   middle). A micro marker also gives the rolling summary (its body, via
//!   [`marker::parse_body`](crate::marker::parse_body)). A batch marker gives the cursor only
//!   and the rolling summary starts empty: batch markers are never deleted by a micro pass, so
//!   merging their body into the rolling summary would keep the same content twice in the
//!   transcript.
//! - **User messages** are never absorbed, rewritten or removed. Users that become adjacent
//!   when a marker or exchange between them is dropped stay separate and verbatim (the law 3
//!   exception). With [`MicroConfig::strict_alternation`] they are joined into one user message
//!   instead: the original texts in order, separated by a `[next user message]` line, each a verbatim
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
//! use compaction_core::micro::{self, MicroConfig, MicroEvent, MicroHook, MicroPlanner, MicroRequest, MicroStep};
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
//! let mut planner = MicroPlanner::default();
//! fn request<'a>(t: &'a Transcript, cfg: &'a MicroConfig, e: &'a Estimator) -> MicroRequest<'a> {
//!     MicroRequest {
//!         transcript: t,
//!         hook: MicroHook::Turn,
//!         threshold_tokens: 10_000,
//!         compacted: true,
//!         config: cfg,
//!         counter: e,
//!     }
//! }
//!
//! let plan = planner.plan(&request(&t, &cfg, &e));
//! let MicroStep::Absorb(job) = &plan.step else { panic!("expected an absorb") };
//! assert_eq!(job.ranges, vec![2..5]);
//! // The caller asks its summarizer to merge `job.material` into `job.previous_summary`.
//! let outcome = micro::assemble_micro(&t, &plan, "Ran sh for request 0.", &cfg, &e).unwrap();
//! planner.record(MicroEvent::Assembled(&outcome));
//! outcome.edit().unwrap().clone().apply_to(&mut t, &e).unwrap();
//! assert_eq!(planner.state.cursor, Some(3));
//! // A fresh process recovers the same cursor and summary from the transcript alone.
//! let mut fresh = MicroPlanner::default();
//! let plan = fresh.plan(&request(&t, &cfg, &e));
//! assert_eq!(plan.cursor, Some(3));
//! assert_eq!(plan.rehydrated_from, Some((2, compaction_core::MarkerKind::Micro)));
//! fresh.record(MicroEvent::Planned(&plan));
//! assert_eq!(fresh.state.rolling_summary.as_deref(), Some("Ran sh for request 0."));
//! ```

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::defaults;
use crate::material::MaterialConfig;
use crate::message::{MarkerKind, Message};
use crate::regions::RegionConfig;
use crate::tokens::TokenCounter;
use crate::transcript::Transcript;

mod absorb;
mod assemble;
mod cursor;
mod memo;
mod outcome;
mod pairing;
mod plan;
mod progress;

pub use self::{
    assemble::assemble_micro,
    outcome::{MicroOutcome, MicroOutcomeKind},
    plan::{AbsorbJob, DefragJob, MicroPlan, MicroStep, NoopReason},
};
use self::{cursor::resolve_cursor, memo::PlanMemo};

/// Which hook a micro plan serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MicroHook {
    /// After a finished turn: absorb the oldest whole exchange(s) of the middle into the
    /// rolling summary, or defrag it (spec section 5).
    Turn,
    /// After a tool round inside a turn: fold the oldest tool group(s) of a turn that outgrew
    /// the tail into the turn's progress marker (spec section 4a). Returns
    /// [`NoopReason::EarlierProgressMarker`] while a finished turn's progress marker is still in
    /// the middle (the next [`Turn`](Self::Turn) plan absorbs it with its exchange), so there is
    /// never more than one progress marker.
    ToolRound,
}

/// Everything one micro plan depends on besides the planner's own state.
#[derive(Clone, Copy)]
#[allow(missing_debug_implementations)] // the counter is any `TokenCounter`
pub struct MicroRequest<'a> {
    /// The transcript to plan for.
    pub transcript: &'a Transcript,
    /// The hook the plan serves.
    pub hook: MicroHook,
    /// The compaction threshold, tokens (the partition's, as for
    /// [`regions::partition`](crate::regions::partition)).
    pub threshold_tokens: u64,
    /// Whether the session has been compacted before (head protection decays), as for
    /// [`regions::partition`](crate::regions::partition).
    pub compacted: bool,
    /// The micro configuration (with the reclaim gate the caller settled on).
    pub config: &'a MicroConfig,
    /// What sizes messages and summaries.
    pub counter: &'a dyn TokenCounter,
}

/// What became of a plan, reported with [`MicroPlanner::record`].
#[derive(Clone, Copy, Debug)]
pub enum MicroEvent<'a> {
    /// The plan ran no summary (noop, gated, a skipped exchange), or its edit could not be
    /// stored: the cursor moves as the plan says (past a skipped exchange), nothing is counted.
    Planned(&'a MicroPlan),
    /// The plan's summary or assembly failed. Counted against its exchange: after
    /// [`MicroConfig::max_consecutive_failures`] in a row the next plan skips it. A failed defrag
    /// is not planned again until the summary has grown.
    Failed(&'a MicroPlan),
    /// The plan assembled to this outcome (applied, or kept out by the caller's gain check).
    Assembled(&'a MicroOutcome),
    /// The transcript was rewritten outside micro-compaction (a batch summary, a reload): the
    /// next plan resolves its cursor and rolling summary from the transcript.
    Reset,
}

/// The micro planner a session keeps between passes: its [`MicroState`] (cursor, rolling
/// summary, failure counts; plain, serializable data) and what earlier plans of a transcript
/// that only grew found, so a plan resumes their scans (a fresh planner is always correct,
/// only slower).
///
/// ```
/// use compaction_core::micro::{MicroConfig, MicroEvent, MicroHook, MicroPlanner, MicroRequest, MicroStep};
/// use compaction_core::{Estimator, Message, Transcript};
///
/// let e = Estimator::default();
/// let t = Transcript::new(vec![Message::system("sys"), Message::user("hi")], &e);
/// let cfg = MicroConfig::default();
/// let mut planner = MicroPlanner::default();
/// let plan = planner.plan(&MicroRequest {
///     transcript: &t,
///     hook: MicroHook::Turn,
///     threshold_tokens: 10_000,
///     compacted: false,
///     config: &cfg,
///     counter: &e,
/// });
/// assert!(matches!(plan.step, MicroStep::Noop(_)));
/// planner.record(MicroEvent::Planned(&plan));
/// ```
#[derive(Clone, Debug, Default)]
pub struct MicroPlanner {
    /// Cursor, rolling summary and failure counts.
    pub state: MicroState,
    memo: PlanMemo,
}

impl MicroPlanner {
    /// Plans a micro (or turn-progress) pass: the decision, and for a pass that summarizes,
    /// the job the caller hands its summarizer before [`assemble_micro`].
    pub fn plan(&mut self, req: &MicroRequest<'_>) -> MicroPlan {
        // Taken for the plan: a plan that panics leaves a fresh memo behind.
        let mut memo = std::mem::take(&mut self.memo);
        let step = |req: &MicroRequest<'_>, memo: &mut PlanMemo| match req.hook {
            MicroHook::Turn => absorb::plan(req, &self.state, memo),
            MicroHook::ToolRound => progress::plan(req, &self.state, memo),
        };
        let mut plan = step(req, &mut memo);
        // At or over the threshold with nothing old enough to fold, the age floor is waived:
        // a batch pass would summarize the young messages anyway, and folding them may spare
        // it. (A gate that holds old exchanges back is not waived: they may still go.)
        if req.config.min_age_answers > 0
            && req.transcript.current_tokens() >= req.threshold_tokens
            && plan.step == MicroStep::Noop(NoopReason::NothingToAbsorb)
        {
            let cfg = MicroConfig {
                min_age_answers: 0,
                ..req.config.clone()
            };
            plan = step(
                &MicroRequest {
                    config: &cfg,
                    ..*req
                },
                &mut memo,
            );
        }
        self.memo = memo;
        if let Some(r) = &plan.resolved {
            plan.cursor = Some(r.cursor);
            plan.rehydrated_from = match r.source {
                cursor::CursorSource::Marker { index, kind } => Some((index, kind)),
                cursor::CursorSource::Memory | cursor::CursorSource::MiddleStart => None,
            };
        }
        plan
    }

    /// Records what became of a plan: the one step between two plans.
    pub fn record(&mut self, event: MicroEvent<'_>) {
        match event {
            MicroEvent::Planned(plan) => self.state.record_plan(plan),
            MicroEvent::Failed(plan) => self.state.record_failure(plan),
            MicroEvent::Assembled(outcome) => self.state.record_outcome(outcome),
            MicroEvent::Reset => self.state = MicroState::default(),
        }
    }
}

/// The end of what a micro pass may fold under [`MicroConfig::min_age_answers`]: every
/// message before it is followed by at least `min_age_answers` answers (assistant messages
/// that are not markers). `messages.len()` when the floor is 0; 0 when the session has fewer
/// answers. Reads back from the end only as far as the floor reaches.
pub(crate) fn age_limit(messages: &[Message], min_age_answers: usize) -> usize {
    if min_age_answers == 0 {
        return messages.len();
    }
    let mut answers = 0;
    for (i, m) in messages.iter().enumerate().rev() {
        if m.is_assistant() && crate::marker::classify(m).is_none() {
            answers += 1;
            if answers == min_age_answers {
                return i;
            }
        }
    }
    0
}

/// The visible separator between user messages joined under strict alternation.
pub(crate) const USER_JOIN_SEPARATOR: &str = "\n\n[next user message]\n\n";

/// Micro-compaction policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MicroConfig {
    /// Head and tail protection (the batch window).
    pub regions: RegionConfig,
    /// Summarizer material bounds.
    pub material: MaterialConfig,
    /// Rolling summary size above which a pass defrags instead of absorbing. Default
    /// 1,000.
    pub defrag_threshold_tokens: u64,
    /// Failures of the same exchange in a row before it is skipped. Default 3 (0 means 1).
    pub max_consecutive_failures: u32,
    /// Absorb only when the absorbable exchanges reclaim at least this many tokens, then all
    /// of them in one splice. Default 0 (off).
    pub min_reclaim_tokens: u64,
    /// Fold only messages at least this many answers old: an exchange (or a tool group of a
    /// long turn) is absorbed only when that many assistant messages, markers not counted,
    /// come after its last message. Young messages are the ones the next answers need most
    /// (docs/ECONOMICS.md, "What predicts the next answers' needs"). At or over the threshold,
    /// when no exchange (or group) is old enough to fold, the floor is waived: a batch pass
    /// would summarize the young ones anyway. Default 8; 0 folds any age.
    pub min_age_answers: usize,
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
            min_age_answers: defaults::MICRO_MIN_AGE_ANSWERS,
            strict_alternation: defaults::STRICT_ALTERNATION,
            defrag_max_ratio: defaults::MICRO_DEFRAG_MAX_RATIO,
            ledger_max_tokens: defaults::LEDGER_MAX_TOKENS,
        }
    }
}

/// What micro-compaction remembers between passes. Owned by the caller; serializable so it
/// can be persisted, but the transcript stays the source of truth (a fresh state resolves the cursor from it).
/// Besides the cursor and the rolling summary it holds the planner's own failure counts and
/// defrag guard, private: [`MicroPlanner::record`] keeps them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MicroState {
    /// Index of the first middle message not yet absorbed.
    pub cursor: Option<usize>,
    /// Body of the rolling micro marker.
    pub rolling_summary: Option<String>,
    /// Consecutive failures of one exchange of the middle (the planner's skip policy).
    pub(crate) failures: Option<FailureRecord>,
    /// Consecutive failures of one tool group of a long turn.
    pub(crate) progress_failures: Option<FailureRecord>,
    /// Rolling summary size when the last defrag failed (livelock guard).
    pub(crate) defrag_failed_at_tokens: Option<u64>,
}

impl MicroState {
    /// Records a plan: adopts its resolved cursor and rolling summary, and for
    /// [`MicroStep::Skip`] moves the cursor past the skipped exchange.
    fn record_plan(&mut self, plan: &MicroPlan) {
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
    fn record_outcome(&mut self, outcome: &MicroOutcome) {
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
    fn record_failure(&mut self, plan: &MicroPlan) {
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

/// Identifies an exchange (or tool group) across passes without keeping its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct ExchangeId {
    /// Index of its first message.
    pub(crate) start: usize,
    /// FNV-1a hash of its first message's wire JSON.
    pub(crate) fingerprint: u64,
}

impl ExchangeId {
    /// The identity of the exchange starting at `range.start`.
    pub(crate) fn of(messages: &[Message], range: Range<usize>) -> ExchangeId {
        ExchangeId {
            start: range.start,
            fingerprint: messages
                .get(range.start)
                .map(|m| fnv1a(m.to_wire_json().as_bytes()))
                .unwrap_or(0),
        }
    }
}

/// Consecutive failures of one exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FailureRecord {
    /// The failing exchange.
    pub(crate) exchange: ExchangeId,
    /// Failures in a row.
    pub(crate) count: u32,
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
