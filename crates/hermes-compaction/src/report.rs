//! What a pass reports: the batch and micro reports, their outcomes and failures. Counts,
//! classes and content-free causes only, never transcript text.

use std::time::Duration;

/// Why a batch attempt was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The planned check before a model request.
    BeforeRequest,
    /// Real usage after a response was over the threshold.
    Usage,
    /// The provider rejected a request as too large.
    Overflow,
    /// The user asked (`/compress`).
    Manual,
    /// Proactive prune below the threshold.
    Proactive,
}

/// What a batch attempt did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing was needed (below threshold, nothing to compact).
    NotNeeded,
    /// Skipped: automatic compaction is disabled, cooling down after a failure, or paused by
    /// anti-thrash (never while the transcript is over the window: such a pass is made, as
    /// for the provider's refusal).
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

/// Why a pass failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The summarizer failed with this class.
    Summarizer(compaction_llm::ErrorClass),
    /// The store refused the commit because another writer compacted (or restored) the
    /// session first, or the compressor was given an old generation. Nothing changed, and no
    /// cooldown starts: call [`Compressor::reload`](crate::Compressor::reload) and go on.
    StaleGeneration,
    /// The store failed.
    Store,
    /// The plan could not be assembled safely (e.g. it would break tool pairing).
    Plan,
}

/// Why a pass failed, in words, without content: `the summarizer failed (timeout)`,
/// `another writer compacted the session first (stale generation)`, `the store failed`,
/// `the plan could not be assembled safely`.
impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Summarizer(class) => write!(f, "the summarizer failed ({})", class.as_str()),
            Failure::StaleGeneration => {
                f.write_str("another writer compacted the session first (stale generation)")
            }
            Failure::Store => f.write_str("the store failed"),
            Failure::Plan => f.write_str("the plan could not be assembled safely"),
        }
    }
}

/// The result of one batch attempt. Counts only, never content.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchReport {
    /// Why it ran.
    pub trigger: Trigger,
    /// What happened.
    pub outcome: Outcome,
    /// Why it failed, when it did.
    pub failure: Option<Failure>,
    /// Tokens before (calibrated when available) and after (estimated).
    pub tokens_before: u64,
    /// Tokens after.
    pub tokens_after: u64,
    /// Messages before and after.
    pub messages_before: usize,
    /// Messages after.
    pub messages_after: usize,
    /// Threshold in tokens.
    pub threshold_tokens: u64,
    /// First message index the pass rewrote (where the prompt cache breaks).
    pub earliest_changed_index: Option<usize>,
    /// Whether the extractive fallback produced a summary.
    pub fallback_used: bool,
    /// Whether the summarizer was skipped because its circuit breaker is open (repeated
    /// transient failures; `auxiliary.compression.breaker_failures`).
    pub summarizer_skipped: bool,
    /// Tool outputs demoted inside the tail as a last resort (law 1 exception).
    pub demoted_tail_outputs: usize,
    /// Whether prune-only was tried and rejected in favour of a summary.
    pub fell_through: bool,
    /// Summarizer usage, when reported.
    pub summary_tokens: u64,
    /// Wall time of the attempt.
    pub duration: Duration,
    /// The partition the pass was planned with (what it promised not to touch).
    pub regions: Option<compaction_core::regions::Regions>,
    /// Why the store failed, when it did: the store error's message, which names the failure
    /// (and row ids or indices) but never message text. Also logged at `warn`.
    pub failure_cause: Option<String>,
    /// The pass was applied to the transcript although the store failed to persist it (an
    /// overflow pass: the provider refused the request, so the agent needs the smaller
    /// transcript whatever the store says). The store still holds the rows from before; the
    /// compressor resynchronises it with its next store write (see
    /// [`Compressor::flush`](crate::Compressor::flush)).
    pub applied_unpersisted: bool,
    /// The strict-alternation option the pass ran with (what law 3 demands of it).
    pub strict_alternation: bool,
}

impl BatchReport {
    /// Whether the pass could not do what was asked: the summarizer, the store or the plan
    /// failed ([`failure`](Self::failure) says which, [`failure_cause`](Self::failure_cause)
    /// why). True also for an overflow pass applied in memory without its commit. A command
    /// line exits non-zero on it.
    pub fn failed(&self) -> bool {
        self.failure.is_some()
    }

    /// The [`Pass`](compaction_core::laws::Pass) this report describes, for
    /// [`laws::check`](compaction_core::laws::check) of the transcript before and after it:
    /// kind from the outcome, protected regions, the tail demotion it reported, strict
    /// alternation, and law 8 for a pass that changed the transcript.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use hermes_compaction::core::{laws, Estimator, Message, ToolCall};
    /// use hermes_compaction::llm::ExtractiveSummarizer;
    /// use hermes_compaction::{Compressor, Config};
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
    /// let mut c = Compressor::new(config, Arc::new(ExtractiveSummarizer::default()),
    ///                             Arc::new(Estimator::default()), "s");
    /// let mut t = c.transcript(msgs.clone());
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let report = rt.block_on(c.compress(&mut t, None));
    /// assert!(laws::check(&msgs, t.messages(), &report.law_pass(), c.counter()).is_empty());
    /// ```
    pub fn law_pass(&self) -> compaction_core::laws::Pass {
        use compaction_core::laws::{LawOptions, Pass, PassKind, Protected};
        let kind = match self.outcome {
            Outcome::Summarized => PassKind::Batch,
            Outcome::Pruned => PassKind::Prune,
            Outcome::Failed => PassKind::Failed,
            Outcome::NotNeeded | Outcome::Skipped | Outcome::IrreducibleFloor | Outcome::NoGain => {
                PassKind::Unchanged
            }
        };
        let changed = matches!(kind, PassKind::Batch | PassKind::Prune);
        let protected = self
            .regions
            .as_ref()
            .map(Protected::from_regions)
            .unwrap_or_default();
        Pass::new(kind, protected).with_options(LawOptions {
            strict_alternation: self.strict_alternation,
            expect_progress: changed,
            tail_demotion_reported: changed && self.demoted_tail_outputs > 0,
        })
    }
}

/// What a micro pass did: the core's one micro vocabulary, also the telemetry's.
use compaction_core::micro::MicroOutcomeKind;

/// The result of one micro pass. Counts only, never content.
#[derive(Clone, Debug, PartialEq)]
pub struct MicroReport {
    /// What happened.
    pub outcome: MicroOutcomeKind,
    /// Why the summarizer or store failed, when it did.
    pub failure: Option<Failure>,
    /// The store error's message when the store failed (content-free; also logged).
    pub failure_cause: Option<String>,
    /// The summarizer failed with a non-fatal error and the extractive fallback
    /// (`compression.fallback_to_extractive`) made the summary, as in a batch pass.
    pub fallback_used: bool,
    /// The summarizer was skipped because its circuit breaker is open (repeated transient
    /// failures; `auxiliary.compression.breaker_failures`).
    pub summarizer_skipped: bool,
    /// Tokens before and after.
    pub tokens_before: u64,
    /// Tokens after.
    pub tokens_after: u64,
    /// Messages before and after.
    pub messages_before: usize,
    /// Messages after.
    pub messages_after: usize,
    /// Tokens of the absorbed exchanges.
    pub exchange_tokens: u64,
    /// Estimated tokens of the rolling summary after the pass.
    pub rolling_summary_tokens: u64,
    /// The cursor after the pass.
    pub cursor: Option<usize>,
    /// First message index the pass rewrote.
    pub earliest_changed_index: Option<usize>,
    /// Summarizer usage, when reported.
    pub summary_tokens: u64,
    /// Wall time.
    pub duration: Duration,
    /// The partition the pass was planned with.
    pub regions: compaction_core::regions::Regions,
    /// The strict-alternation option the pass ran with (what laws 3 and 4 demand of it).
    pub strict_alternation: bool,
}

impl MicroReport {
    /// Whether the pass could not do what was asked: the summarizer (and the extractive
    /// fallback, when configured), the store or the plan failed; the transcript is unchanged
    /// and [`failure`](Self::failure) says which (outcome `summarize_failed`, `store_failed`,
    /// or `defrag_failed` for a failed defrag call). Not a failure: noop, gated, an exchange
    /// skipped after earlier failures, a defrag output that was merely not short enough. A
    /// command line exits non-zero on it.
    pub fn failed(&self) -> bool {
        self.failure.is_some()
    }

    /// The [`Pass`](compaction_core::laws::Pass) this report describes, for
    /// [`laws::check`](compaction_core::laws::check) of the transcript before and after it.
    /// Law 8 is left off: a first micro pass may grow the transcript (the marker's
    /// scaffolding); set `options.expect_progress` yourself from the second pass on.
    pub fn law_pass(&self) -> compaction_core::laws::Pass {
        use compaction_core::laws::{LawOptions, Pass, PassKind, Protected};
        let kind = match self.outcome {
            MicroOutcomeKind::Absorbed | MicroOutcomeKind::Progressed => PassKind::Micro,
            MicroOutcomeKind::Defrag => PassKind::Defrag,
            _ if self.failure.is_some() => PassKind::Failed,
            _ => PassKind::Unchanged,
        };
        Pass::new(kind, Protected::from_regions(&self.regions)).with_options(LawOptions {
            strict_alternation: self.strict_alternation,
            ..LawOptions::default()
        })
    }
}
