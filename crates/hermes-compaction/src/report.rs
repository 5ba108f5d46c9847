//! What a pass reports: one generic report, [`PassReport`], whose shared fields are declared
//! once and whose kind's own fields are its detail ([`BatchDetail`], [`MicroDetail`]), with the
//! outcomes and failures. Counts, classes and content-free causes only, never transcript text.

use std::time::Duration;

use compaction_core::Transcript;
pub use compaction_core::stats::PassStats;

use compaction_llm::ErrorClass;

/// Why a batch attempt was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The planned check before a model request.
    BeforeRequest,
    /// The model asked for a compaction ([`Compressor::request_compaction`](crate::Compressor::request_compaction));
    /// made at the next request, even below the threshold, but it waits out a failure
    /// cooldown or an anti-thrash pause like an automatic pass.
    Requested,
    /// Real usage after a response was over the threshold.
    Usage,
    /// The provider rejected a request as too large.
    Overflow,
    /// The user asked (`/compress`).
    Manual,
    /// Proactive prune below the threshold.
    Proactive,
}

impl Trigger {
    /// Whether a pass with this trigger is made even below the threshold: the user's or the
    /// model's request, the provider's refusal and the proactive prune are; the planned check
    /// and the usage check compact only when over it.
    ///
    /// ```
    /// use hermes_compaction::Trigger;
    ///
    /// assert!(Trigger::Manual.forces() && Trigger::Overflow.forces());
    /// assert!(!Trigger::BeforeRequest.forces() && !Trigger::Usage.forces());
    /// ```
    pub fn forces(self) -> bool {
        match self {
            Trigger::BeforeRequest | Trigger::Usage => false,
            Trigger::Requested | Trigger::Overflow | Trigger::Manual | Trigger::Proactive => true,
        }
    }
}

/// What a batch attempt did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing was needed (below threshold, nothing to compact).
    NotNeeded,
    /// Skipped: automatic compaction is disabled, cooling down after a failure, or paused by
    /// anti-thrash (never while the transcript is over the window: such a pass is made, as
    /// for the provider's refusal). Also the telemetry line of an automatic pass put off to
    /// the next request because its summary prepared ahead was insufficient
    /// (`compression.prepare_at`; the hook hands the host no report for it).
    Skipped,
    /// Prune-only was accepted.
    Pruned,
    /// The middle was summarized (possibly after pruning).
    Summarized,
    /// The protected messages alone exceed the threshold; nothing more can be done.
    IrreducibleFloor,
    /// The pass would not have shrunk the transcript (e.g. a summary longer than the span it
    /// replaces); nothing was committed.
    NoGain,
    /// The pass failed; the transcript is unchanged.
    Failed,
}

impl Outcome {
    /// The snake_case name (`not_needed`, `skipped`, `pruned`, `summarized`,
    /// `irreducible_floor`, `no_gain`, `failed`). The telemetry line groups these into the
    /// coarser `outcome` of spec section 8 (`compacted`, `prune_only`, `failed`, `skipped`,
    /// `irreducible_floor`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::NotNeeded => "not_needed",
            Outcome::Skipped => "skipped",
            Outcome::Pruned => "pruned",
            Outcome::Summarized => "summarized",
            Outcome::IrreducibleFloor => "irreducible_floor",
            Outcome::NoGain => "no_gain",
            Outcome::Failed => "failed",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of failure ended a pass.
///
/// ```
/// use hermes_compaction::FailureKind;
/// use hermes_compaction::llm::ErrorClass;
///
/// let kind = FailureKind::Summarizer(ErrorClass::Transient);
/// assert_eq!(kind.to_string(), "the summarizer failed (transient)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The summarizer failed with this class (a panicking summarizer is `transient`).
    Summarizer(ErrorClass),
    /// The store refused the commit because the session's rows changed since this
    /// compressor loaded them: any writer's commit (a pass, an undo, a restore, a flush of
    /// another handle), or the compressor was given an old generation. Nothing changed, and
    /// no cooldown starts: call [`Compressor::reload`](crate::Compressor::reload) and go on.
    StaleGeneration,
    /// The store failed.
    Store,
    /// The plan could not be assembled safely (e.g. it would break tool pairing).
    Plan,
}

/// Why a pass failed, in words, without content: `the summarizer failed (timeout)`,
/// `the session's stored rows changed since they were loaded (stale generation)`, `the store failed`,
/// `the plan could not be assembled safely`.
impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FailureKind::Summarizer(class) => {
                write!(f, "the summarizer failed ({})", class.as_str())
            }
            FailureKind::StaleGeneration => f.write_str(
                "the session's stored rows changed since they were loaded (stale generation)",
            ),
            FailureKind::Store => f.write_str("the store failed"),
            FailureKind::Plan => f.write_str("the plan could not be assembled safely"),
        }
    }
}

/// Why a pass failed: its [`FailureKind`] and, for a store failure or an edit that could not
/// be applied after its commit, a content-free cause (the store error's message, which names
/// the failure and row ids or indices but never message text; also logged at `warn`).
///
/// ```
/// use hermes_compaction::{FailureKind, PassFailure, StoreGeneration};
///
/// let f = PassFailure { kind: FailureKind::Store, cause: Some("disk full".into()), store_generation: None };
/// assert_eq!(f.to_string(), "the store failed: disk full");
/// assert_eq!(PassFailure::from(FailureKind::Plan).to_string(), "the plan could not be assembled safely");
/// // After a failed commit the store is asked which generation it holds.
/// let f = PassFailure { store_generation: Some(StoreGeneration::Confirmed(18)), ..f };
/// assert_eq!(f.to_string(), "the store failed: disk full; the store holds generation 18");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassFailure {
    /// What failed.
    pub kind: FailureKind,
    /// Why, when a cause is known (content-free).
    pub cause: Option<String>,
    /// For a failed store commit: the generation the store holds, read back after the failure
    /// (a commit whose acknowledgement was lost has landed all the same), or that it could not
    /// be read. `None` for a failure before any commit.
    pub store_generation: Option<StoreGeneration>,
}

/// What the store holds after a commit failed, read back rather than assumed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreGeneration {
    /// The store answered: it holds this generation (one past the compressor's when the
    /// failed commit landed, in which case the transcript in memory is behind it: reload).
    Confirmed(u64),
    /// The store could not be read after the failure: its generation is not known (at least
    /// `last_known`, the one the compressor had confirmed before the pass).
    Unconfirmed {
        /// The last generation the compressor knew the store to hold.
        last_known: u64,
    },
}

impl std::fmt::Display for StoreGeneration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreGeneration::Confirmed(g) => write!(f, "{g}"),
            StoreGeneration::Unconfirmed { .. } => f.write_str("unconfirmed"),
        }
    }
}

impl From<FailureKind> for PassFailure {
    fn from(kind: FailureKind) -> PassFailure {
        PassFailure {
            kind,
            cause: None,
            store_generation: None,
        }
    }
}

/// `KIND[: CAUSE][; the store holds generation N | ; the store's generation is unconfirmed ...]`.
impl std::fmt::Display for PassFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.kind)?;
        if let Some(c) = &self.cause {
            write!(f, ": {c}")?;
        }
        match self.store_generation {
            Some(StoreGeneration::Confirmed(g)) => write!(f, "; the store holds generation {g}"),
            Some(StoreGeneration::Unconfirmed { .. }) => f.write_str(
                "; the store's generation is unconfirmed (it could not be read after the failure)",
            ),
            None => Ok(()),
        }
    }
}

/// Where a pass landed inside a turn: after the user's ask and before the model's final
/// answer (the last message is the ask, a tool result, or tool calls). What the host needs to
/// resume the interrupted turn, as indices into the transcript after the pass and call ids
/// (no text: read the ask with [`Resume::ask`]).
///
/// A pass never lands between a tool call and its result: when the last tool calls lack a
/// result, every hook skips its pass ([`Outcome::Skipped`], `results_complete: false`).
///
/// ```
/// use hermes_compaction::Resume;
/// use hermes_compaction::core::{Estimator, Message, ToolCall, Transcript};
///
/// let e = Estimator::default();
/// let mut t = Transcript::new(vec![Message::system("sys"), Message::user("fix the build")], &e);
/// let at_ask = Resume::at(&t).unwrap();
/// assert_eq!(at_ask.ask(&t).unwrap().text(), "fix the build");
/// t.push(Message::assistant_tool_calls("", vec![ToolCall::function("c1", "shell", "{}")]), &e);
/// let r = Resume::at(&t).unwrap();
/// assert_eq!((r.tool_calls_index, r.results_complete), (Some(2), false));
/// t.push(Message::tool_result("c1", "ok"), &e);
/// let r = Resume::at(&t).unwrap();
/// assert_eq!(r.pending_calls, vec!["c1".to_owned()]);
/// assert!(r.results_complete, "all results are in: the next step is a model call");
/// t.push(Message::assistant("fixed"), &e);
/// assert_eq!(Resume::at(&t), None, "between turns");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resume {
    /// Index of the ask being worked on (the last real user message), `None` if the
    /// transcript holds none (e.g. it was folded into a summary).
    pub ask_index: Option<usize>,
    /// Index of the last assistant message with tool calls in this turn, if any.
    pub tool_calls_index: Option<usize>,
    /// The ids of those tool calls, in order.
    pub pending_calls: Vec<String>,
    /// Whether every one of them has its result after it: the turn resumes with a model
    /// call. `false`: the host still owes results (no pass runs then).
    pub results_complete: bool,
}

impl Resume {
    /// Where `t` stands inside a turn, `None` between turns (the last message is the model's
    /// answer, or there is none).
    pub fn at(t: &Transcript) -> Option<Resume> {
        let msgs = t.messages();
        let last = msgs.last()?;
        if last.is_assistant() && !last.has_tool_calls() {
            return None;
        }
        if !(last.is_user() || last.is_tool() || last.is_assistant()) {
            return None;
        }
        let ask_index = t.last_real_user();
        let floor = ask_index.unwrap_or(0);
        let tool_calls_index = (floor..msgs.len())
            .rev()
            .find(|&i| msgs[i].is_assistant() && msgs[i].has_tool_calls());
        let (pending_calls, results_complete) = match tool_calls_index {
            None => (Vec::new(), true),
            Some(i) => {
                let ids: Vec<String> = msgs[i]
                    .tool_calls()
                    .iter()
                    .map(|c| c.call_id().to_owned())
                    .collect();
                let answered = |id: &String| {
                    msgs[i + 1..]
                        .iter()
                        .any(|m| m.is_tool() && m.tool_call_id() == Some(id.as_str()))
                };
                let complete = ids.iter().all(answered);
                (ids, complete)
            }
        };
        Some(Resume {
            ask_index,
            tool_calls_index,
            pending_calls,
            results_complete,
        })
    }

    /// The ask being worked on, read from `t` (the transcript after the pass).
    pub fn ask<'t>(&self, t: &'t Transcript) -> Option<&'t compaction_core::Message> {
        self.ask_index.and_then(|i| t.messages().get(i))
    }
}

/// What a pass that did not fail did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Applied {
    /// The assembled edit would not have gained (see the module docs): nothing was committed.
    NoGain,
    /// The edit was committed (with a store) and applied to the transcript.
    Changed {
        /// First message index the pass rewrote.
        earliest_changed_index: Option<usize>,
        /// The commit failed and the pass was applied all the same (an overflow pass).
        unpersisted: Option<PassFailure>,
    },
}

/// How the summaries of a pass were written: what both reports say about the summarizer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SummaryUse {
    /// The extractive fallback wrote a summary (or the summarizer answered extractively).
    pub fallback_used: bool,
    /// The summarizer was not called because its circuit breaker is open.
    pub summarizer_skipped: bool,
    /// Why the fallback wrote a summary: the class of the summarizer's failure it answered.
    pub fallback_cause: Option<ErrorClass>,
    /// Summarizer usage, when reported.
    pub summary_tokens: u64,
}

impl SummaryUse {
    /// Writes what the summarizer did into a report's stats and fallback cause.
    fn settle(self, stats: &mut PassStats, fallback_cause: &mut Option<ErrorClass>) {
        stats.fallback_passes = u32::from(self.fallback_used);
        stats.skipped_passes = u32::from(self.summarizer_skipped);
        stats.summary_tokens = self.summary_tokens;
        *fallback_cause = self.fallback_cause;
    }
}

/// The part of a [`PassReport`] only one kind of pass has, and the outcome vocabulary of
/// that kind: [`BatchDetail`] (with [`Outcome`]), [`MicroDetail`] (with core's
/// [`MicroOutcomeKind`]) and the one-shot run's [`OneShotRun`](crate::oneshot::OneShotRun)
/// (with [`OneShotOutcome`](crate::OneShotOutcome)).
pub trait Detail {
    /// What a pass of this kind did.
    type Outcome: Copy + std::fmt::Debug + PartialEq + Eq;
}

/// What a pass (or a one-shot run) reports: the fields every kind shares, declared once, and
/// the kind's own in [`detail`](Self::detail). Counts, classes and content-free causes only,
/// never transcript text. [`BatchReport`], [`MicroReport`] and
/// [`OneShotReport`](crate::OneShotReport) are this struct with their kind's detail.
///
/// ```
/// use hermes_compaction::{FailureKind, PassFailure};
/// # use std::sync::Arc;
/// # use hermes_compaction::core::Message;
/// # use hermes_compaction::{Compressor, Config, OneShot};
/// # let mut c = Compressor::builder(Config::default()).session("s1").build().unwrap();
/// # let mut t = c.transcript(vec![Message::user("hi")]);
/// # let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
/// let mut report = rt.block_on(c.one_shot(&mut t, OneShot::batch()));
/// assert!(!report.failed());
/// report.failure = Some(PassFailure { kind: FailureKind::Store, cause: Some("disk full".into()), store_generation: None });
/// assert_eq!(report.failure_kind(), Some(FailureKind::Store));
/// assert_eq!(report.failure_cause(), Some("disk full"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PassReport<D: Detail> {
    /// What happened, in the kind's vocabulary.
    pub outcome: D::Outcome,
    /// Why it failed, when it did, with the store error's content-free message as its cause
    /// (also set for an overflow pass applied without its commit, see
    /// [`BatchDetail::applied_unpersisted`]).
    pub failure: Option<PassFailure>,
    /// The counts: tokens and messages before and after, the first index rewritten, whether
    /// the fallback wrote the summary (`fallback_passes`) or the summarizer was skipped
    /// (`skipped_passes`: its circuit breaker open, or the pass's deadline passed), tail
    /// outputs demoted, summarizer usage, wall time. For a one-shot run, the stats of each
    /// pass [`add`](PassStats::add)ed to those of the transcript it was given.
    pub stats: PassStats,
    /// The compaction threshold in tokens.
    pub threshold_tokens: u64,
    /// When the fallback wrote a summary: the class of the summarizer's failure it answered
    /// (`echoed_prompt`, `transient`, ...; for a skipped call, the failure that opened the
    /// breaker). A pass the fallback wrote is never reported as the summarizer's.
    pub fallback_cause: Option<ErrorClass>,
    /// The partition the pass was planned with (what it promised not to touch); `None` when
    /// it was not planned (skipped) or for a micro run.
    pub regions: Option<compaction_core::regions::Regions>,
    /// The pass landed inside a turn (after a tool result or an unanswered ask): where the
    /// turn stands in the transcript after the pass, so the host resumes it. `None` between
    /// turns.
    pub in_turn: Option<Resume>,
    /// The pass as the law checker reads it, set by the pass runner from its plan and how
    /// the pass ended: give it to [`laws::check`](compaction_core::laws::check) with the
    /// transcript before and after the pass. Its options carry the strict-alternation
    /// setting the pass ran with (`law.options.strict_alternation`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use hermes_compaction::core::{laws, Estimator, Message, ToolCall};
    /// use hermes_compaction::llm::ExtractiveSummarizer;
    /// use hermes_compaction::{Compressor, Config, OneShot};
    ///
    /// let mut msgs = vec![Message::system("sys")];
    /// for i in 0..40 {
    ///     let id = format!("c{i}");
    ///     msgs.push(Message::user(format!("step {i}")));
    ///     msgs.push(Message::assistant_tool_calls("", vec![ToolCall::function(&id, "sh", "{}")]));
    ///     msgs.push(Message::tool_result(&id, "output\n".repeat(300)));
    ///     msgs.push(Message::assistant("ok"));
    /// }
    /// let mut config = Config::default();
    /// config.model.context_length = 16_000;
    /// let mut c = Compressor::builder(config)
    ///     .summarizer(Arc::new(ExtractiveSummarizer::default()))
    ///     .counter(Arc::new(Estimator::default()))
    ///     .session("s")
    ///     .build()
    ///     .unwrap();
    /// let mut t = c.transcript(msgs.clone());
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let report = rt.block_on(c.one_shot(&mut t, OneShot::batch()));
    /// // Tool outputs this long are pruned first: a prune pass, which must shrink the transcript.
    /// assert_eq!(report.law.kind, laws::PassKind::Prune);
    /// assert!(report.law.options.expect_progress);
    /// assert!(laws::check(&msgs, t.messages(), &report.law, c.status().counter).is_empty());
    /// ```
    pub law: compaction_core::laws::Pass,
    /// What only this kind of pass says.
    pub detail: D,
}

/// The result of one batch attempt.
pub type BatchReport = PassReport<BatchDetail>;

/// The result of one micro pass.
pub type MicroReport = PassReport<MicroDetail>;

impl<D: Detail> PassReport<D> {
    /// A report of a pass over `t` that has not run yet: `outcome`, the stats of `t`, where
    /// `t` stands inside a turn, and a law description of a pass that changes nothing.
    pub(crate) fn start(
        outcome: D::Outcome,
        t: &Transcript,
        threshold_tokens: u64,
        detail: D,
    ) -> PassReport<D> {
        use compaction_core::laws::{Pass, PassKind, Protected};
        PassReport {
            outcome,
            failure: None,
            stats: PassStats::at(t.current_tokens(), t.len()),
            threshold_tokens,
            fallback_cause: None,
            regions: None,
            in_turn: Resume::at(t),
            law: Pass::new(PassKind::Unchanged, Protected::default()),
            detail,
        }
    }

    /// The counts.
    pub fn stats(&self) -> &PassStats {
        &self.stats
    }

    /// Whether the pass could not do what was asked: the summarizer (and the extractive
    /// fallback, when configured), the store or the plan failed, and
    /// [`failure`](Self::failure) says which and why. True also for an overflow pass applied
    /// in memory without its commit. Not a failure: a pass with nothing to do, gated or
    /// skipped. A command line exits non-zero on it.
    pub fn failed(&self) -> bool {
        self.failure.is_some()
    }

    /// The kind of the failure, when there was one.
    pub fn failure_kind(&self) -> Option<FailureKind> {
        self.failure.as_ref().map(|f| f.kind)
    }

    /// The failure's content-free cause (the store error's message), when it has one.
    pub fn failure_cause(&self) -> Option<&str> {
        self.failure.as_ref().and_then(|f| f.cause.as_deref())
    }

    /// Whether the result is still at or over the compaction threshold.
    pub fn over_threshold(&self) -> bool {
        self.stats.tokens_after >= self.threshold_tokens
    }

    /// The same report with another kind's outcome and detail, made from this one's: every
    /// shared field moves over as it is.
    pub(crate) fn into_kind<E: Detail>(
        self,
        kind: impl FnOnce(D::Outcome, D) -> (E::Outcome, E),
    ) -> PassReport<E> {
        let (outcome, detail) = kind(self.outcome, self.detail);
        PassReport {
            outcome,
            failure: self.failure,
            stats: self.stats,
            threshold_tokens: self.threshold_tokens,
            fallback_cause: self.fallback_cause,
            regions: self.regions,
            in_turn: self.in_turn,
            law: self.law,
            detail,
        }
    }

    /// Where the turn stands after a pass that changed `t` (it landed inside one).
    fn resume_after(&mut self, t: &Transcript) {
        if self.in_turn.is_some() {
            self.in_turn = Resume::at(t).or(self.in_turn.take());
        }
    }
}

/// A pass's stats once it changed `t`: one pass, ending at `earliest` and at `t`'s size.
trait Changed {
    fn changed(&mut self, earliest: Option<usize>, t: &Transcript);
}

impl Changed for PassStats {
    fn changed(&mut self, earliest: Option<usize>, t: &Transcript) {
        self.earliest_changed_index = earliest;
        self.tokens_after = t.current_tokens();
        self.messages_after = t.len();
        self.passes = u32::from(earliest.is_some());
    }
}

/// What only a batch attempt reports.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchDetail {
    /// Why it ran.
    pub trigger: Trigger,
    /// Whether prune-only was tried and rejected in favour of a summary.
    pub fell_through: bool,
    /// The pass was applied to the transcript although the store failed to persist it (an
    /// overflow pass: the provider refused the request, so the agent needs the smaller
    /// transcript whatever the store says). The store still holds the rows from before; the
    /// compressor resynchronises it with its next store write (see
    /// [`Compressor::flush`](crate::Compressor::flush)).
    pub applied_unpersisted: bool,
    /// What became of the summary prepared ahead for this pass (`compression.prepare_at`):
    /// used, or discarded and why, with what it cost. `None` when no candidate was waiting.
    pub prepared: Option<PreparedUse>,
}

impl Detail for BatchDetail {
    type Outcome = Outcome;
}

impl BatchDetail {
    /// The detail of an attempt started by `trigger`, before it ran.
    pub(crate) fn new(trigger: Trigger) -> BatchDetail {
        BatchDetail {
            trigger,
            fell_through: false,
            applied_unpersisted: false,
            prepared: None,
        }
    }
}

/// What a pass did with the summary prepared ahead (`compression.prepare_at`): whether it
/// was used, and what it cost. Counts only.
///
/// ```
/// use std::time::Duration;
/// use hermes_compaction::{DiscardReason, PreparedOutcome, PreparedUse};
///
/// let used = PreparedUse { outcome: PreparedOutcome::Used, summary_tokens: 900, waited: Duration::ZERO };
/// assert_eq!(used.wasted_tokens(), 0);
/// let lost = PreparedUse { outcome: PreparedOutcome::Discarded(DiscardReason::SpanChanged), ..used };
/// assert_eq!(lost.wasted_tokens(), 900);
/// assert_eq!(lost.outcome.as_str(), "discarded_span_changed");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreparedUse {
    /// Used or discarded (and why).
    pub outcome: PreparedOutcome,
    /// The summarizer usage of the candidate (prompt plus completion), when reported; 0 for
    /// a candidate discarded before it finished (its call is abandoned).
    pub summary_tokens: u64,
    /// How long the pass waited for a candidate still being written (zero when it was ready).
    pub waited: Duration,
}

impl PreparedUse {
    /// The candidate's tokens when it was discarded (paid for nothing), else 0.
    pub fn wasted_tokens(&self) -> u64 {
        match self.outcome {
            PreparedOutcome::Used => 0,
            PreparedOutcome::Discarded(_) => self.summary_tokens,
        }
    }
}

/// Whether a prepared summary was used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreparedOutcome {
    /// Applied at the trigger in place of a summarizer call.
    Used,
    /// Not applied; the pass ran as it would have without it (or failed, for a lost race).
    Discarded(DiscardReason),
}

impl PreparedOutcome {
    /// `used`, or `discarded_` and the reason (`discarded_span_changed`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            PreparedOutcome::Used => "used",
            PreparedOutcome::Discarded(r) => r.as_str(),
        }
    }
}

/// Why a prepared summary was discarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DiscardReason {
    /// The span it summarized (or the plan over it) is no longer what the pass would compact:
    /// a message in it changed, or the transcript shrank.
    SpanChanged,
    /// The session moved on since it was started: another pass, an undo or a reload.
    GenerationChanged,
    /// The store refused the commit: the session's rows changed since the compressor loaded
    /// them (stale generation). The pass failed as it would have without the candidate.
    LostRace,
    /// Its summarizer call failed (or the pass could not be assembled from it).
    Failed,
    /// Applied now, it would not bring the transcript under the threshold.
    Insufficient,
    /// The pass at the trigger does not summarize that span (prune-only, a focus topic, or
    /// nothing needed).
    Superseded,
}

impl DiscardReason {
    /// `discarded_` and the snake_case reason.
    pub fn as_str(self) -> &'static str {
        match self {
            DiscardReason::SpanChanged => "discarded_span_changed",
            DiscardReason::GenerationChanged => "discarded_generation_changed",
            DiscardReason::LostRace => "discarded_lost_race",
            DiscardReason::Failed => "discarded_failed",
            DiscardReason::Insufficient => "discarded_insufficient",
            DiscardReason::Superseded => "discarded_superseded",
        }
    }
}

/// Running totals of summaries prepared ahead in a session
/// ([`Status::prepared_totals`](crate::Status::prepared_totals)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreparedTotals {
    /// Candidates started.
    pub started: u64,
    /// Candidates applied at a trigger.
    pub used: u64,
    /// Candidates discarded (at a trigger or before one).
    pub discarded: u64,
    /// Summarizer tokens of the discarded candidates.
    pub wasted_tokens: u64,
}

impl BatchReport {
    /// The outcome, failure and summarizer fields from the pass runner's one result:
    /// `planned` (summarized or pruned) once applied, `no_gain`, or `failed` with its
    /// failure. Where the turn stands after it, when it landed inside one.
    pub(crate) fn settle(
        &mut self,
        planned: Outcome,
        result: Result<Applied, PassFailure>,
        used: SummaryUse,
        t: &Transcript,
    ) {
        used.settle(&mut self.stats, &mut self.fallback_cause);
        match result {
            Ok(Applied::NoGain) => self.outcome = Outcome::NoGain,
            Ok(Applied::Changed {
                earliest_changed_index,
                unpersisted,
            }) => {
                self.outcome = planned;
                self.stats.changed(earliest_changed_index, t);
                self.detail.applied_unpersisted = unpersisted.is_some();
                self.failure = unpersisted;
            }
            Err(f) => {
                self.outcome = Outcome::Failed;
                self.failure = Some(f);
            }
        }
        self.resume_after(t);
    }

    /// The regions and the law description of the pass from the plan it was made with
    /// (`None`: it was not planned) and its outcome.
    pub(crate) fn planned_with(
        &mut self,
        plan: Option<&compaction_core::batch::BatchPlan>,
        cfg: &compaction_core::batch::BatchConfig,
    ) {
        use compaction_core::laws::{Pass, PassKind};
        let Some(plan) = plan else { return };
        let ended = match self.outcome {
            Outcome::Summarized => PassKind::Batch,
            Outcome::Pruned => PassKind::Prune,
            Outcome::Failed => PassKind::Failed,
            Outcome::NotNeeded | Outcome::Skipped | Outcome::IrreducibleFloor | Outcome::NoGain => {
                PassKind::Unchanged
            }
        };
        self.law = Pass::of_batch(plan, cfg, ended);
        self.regions = Some(plan.regions.clone());
    }
}

/// What a micro pass did: the core's one micro vocabulary, also the telemetry's.
use compaction_core::micro::MicroOutcomeKind;

/// What only a micro pass reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MicroDetail {
    /// Tokens of the absorbed exchanges.
    pub exchange_tokens: u64,
    /// Estimated tokens of the rolling summary after the pass.
    pub rolling_summary_tokens: u64,
    /// The cursor after the pass.
    pub cursor: Option<usize>,
}

impl Detail for MicroDetail {
    type Outcome = MicroOutcomeKind;
}

impl MicroReport {
    /// The outcome, failure and summarizer fields from the pass runner's one result:
    /// core's outcome of what was applied or rejected (`defrag_failed` for a defrag that did
    /// not shrink enough), or the failure's outcome (`summarize_failed`, `defrag_failed` for
    /// a failed defrag call, `store_failed`) with the failure. Where the turn stands after a
    /// pass that changed the transcript, when it landed inside one.
    pub(crate) fn settle(
        &mut self,
        result: Result<Applied, PassFailure>,
        used: SummaryUse,
        assembled: Option<MicroOutcomeKind>,
        defrag: bool,
        t: &Transcript,
    ) {
        used.settle(&mut self.stats, &mut self.fallback_cause);
        match result {
            Ok(applied) => {
                self.outcome = assembled.unwrap_or(MicroOutcomeKind::Noop);
                if let Applied::Changed {
                    earliest_changed_index,
                    ..
                } = applied
                {
                    self.stats.changed(earliest_changed_index, t);
                    self.resume_after(t);
                }
            }
            Err(f) => {
                self.outcome = match f.kind {
                    FailureKind::Summarizer(_) if defrag => MicroOutcomeKind::DefragFailed,
                    FailureKind::Summarizer(_) | FailureKind::Plan => {
                        MicroOutcomeKind::SummarizeFailed
                    }
                    FailureKind::Store | FailureKind::StaleGeneration => {
                        MicroOutcomeKind::StoreFailed
                    }
                };
                self.failure = Some(f);
            }
        }
    }

    /// The regions and the law description of the pass from its plan and what assembly
    /// produced (`None` for a pass that failed or never assembled). Law 8 is left off: a
    /// first micro pass may grow the transcript (the marker's scaffolding); set
    /// `law.options.expect_progress` yourself from the second pass on.
    pub(crate) fn planned_with(
        &mut self,
        plan: &compaction_core::micro::MicroPlan,
        cfg: &compaction_core::micro::MicroConfig,
        assembled: Option<&compaction_core::micro::MicroOutcome>,
    ) {
        let assembled = assembled.filter(|_| self.failure.is_none());
        self.law = compaction_core::laws::Pass::of_micro(plan, cfg, assembled);
        self.regions = Some(plan.regions.clone());
    }
}
