//! Typed, content-free telemetry events and the per-session accumulator.
//!
//! Every event is plain data: counts, durations, model names, an opaque session id and
//! closed vocabularies (outcomes, trigger sources, failure classes). None of them has a
//! field that could hold transcript text, which is what makes the telemetry content-free by
//! construction rather than by redaction.
//!
//! Each event knows its line form through [`TelemetryEvent`]: a fixed prefix followed by a
//! JSON object whose `event` key names the event (see [`format_line`](crate::format_line)).

use compaction_core::micro::MicroOutcomeKind;
use compaction_core::regions::WindowConfig;
use compaction_core::stats::PassStats;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An event that has a one-line telemetry form.
pub trait TelemetryEvent: Serialize {
    /// Value of the `event` key in the line.
    const EVENT: &'static str;
    /// Text before the JSON object, including the trailing `": "`.
    const PREFIX: &'static str;

    /// Adds keys derived from the fields (for example a compatibility alias) to the
    /// serialized object before it is sorted. The default adds nothing.
    fn derived_fields(&self, _object: &mut Map<String, Value>) {}
}

/// The window a caller already knows; telemetry never looks it up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// The compaction threshold in tokens.
    pub threshold_tokens: u64,
    /// The model's context length in tokens.
    pub context_limit: u64,
}

impl Window {
    /// The window described by a core [`WindowConfig`] (pure arithmetic, no lookup).
    pub fn from_config(cfg: &WindowConfig) -> Window {
        Window {
            threshold_tokens: cfg.threshold_tokens(),
            context_limit: cfg.context_length,
        }
    }
}

/// `tokens` as a percentage of the threshold, rounded to one decimal; `None` when the
/// threshold is unknown or zero.
pub fn occupancy_pct(tokens: u64, threshold_tokens: Option<u64>) -> Option<f64> {
    let threshold = threshold_tokens.filter(|&t| t > 0)?;
    Some((tokens as f64 * 1000.0 / threshold as f64).round() / 10.0)
}

/// The line of one pass ([`MicroPass`], [`BatchAttempt`]): what every pass line takes from
/// the pass the same way, set in one call.
///
/// ```
/// use compaction_core::micro::MicroOutcomeKind;
/// use compaction_core::stats::PassStats;
/// use compaction_telemetry::{BatchAttempt, BatchOutcome, MicroPass, PassLine, TriggerSource, Window};
///
/// let stats = PassStats { tokens_after: 700, passes: 1, ..PassStats::at(1_000, 12) };
/// let window = Some(Window { threshold_tokens: 1_000, context_limit: 2_000 });
/// let model = Some("gpt".to_owned());
/// let micro = MicroPass::new("s", MicroOutcomeKind::Absorbed).pass(window, &stats, model.clone());
/// let batch = BatchAttempt::new("s", TriggerSource::Preflight, BatchOutcome::Compacted)
///     .pass(window, &stats, model);
/// assert_eq!((micro.occupancy_pct, batch.occupancy_pct), (Some(70.0), Some(70.0)));
/// assert_eq!(micro.main_model, batch.main_model);
/// ```
pub trait PassLine: Sized {
    /// Sets the window (or clears it with `None`), every count of `stats` (as the events'
    /// own `stats` setters do) and the main model.
    fn pass(self, window: Option<Window>, stats: &PassStats, main_model: Option<String>) -> Self;
}

/// The fields every pass line has, borrowed from one, and how each is set: written once for
/// both lines.
struct Shared<'e> {
    tokens_before: &'e mut u64,
    tokens_after: &'e mut u64,
    /// The micro line's `tokens_delta` (the batch line has none).
    tokens_delta: Option<&'e mut i64>,
    messages_before: &'e mut u64,
    messages_after: &'e mut u64,
    duration_ms: &'e mut u64,
    threshold_tokens: &'e mut Option<u64>,
    context_limit: &'e mut Option<u64>,
    occupancy_pct: &'e mut Option<f64>,
    main_model: &'e mut Option<String>,
    earliest_changed_index: &'e mut Option<u64>,
    summary_tokens: &'e mut u64,
    fallback_used: &'e mut bool,
    summarizer_skipped: &'e mut bool,
}

impl Shared<'_> {
    fn tokens(&mut self, before: u64, after: u64) {
        *self.tokens_before = before;
        *self.tokens_after = after;
        if let Some(d) = self.tokens_delta.as_deref_mut() {
            *d = signed_delta(before, after);
        }
        *self.occupancy_pct = occupancy_pct(after, *self.threshold_tokens);
    }

    fn messages(&mut self, before: u64, after: u64) {
        *self.messages_before = before;
        *self.messages_after = after;
    }

    fn stats(&mut self, stats: &PassStats) {
        self.tokens(stats.tokens_before, stats.tokens_after);
        self.messages(stats.messages_before as u64, stats.messages_after as u64);
        *self.duration_ms = stats.duration.as_millis() as u64;
        *self.earliest_changed_index = stats.earliest_changed_index.map(|i| i as u64);
        *self.summary_tokens = stats.summary_tokens;
        *self.fallback_used = stats.fallback_used();
        *self.summarizer_skipped = stats.summarizer_skipped();
    }

    fn window(&mut self, window: Option<Window>) {
        *self.threshold_tokens = window.map(|w| w.threshold_tokens);
        *self.context_limit = window.map(|w| w.context_limit);
        *self.occupancy_pct = occupancy_pct(*self.tokens_after, *self.threshold_tokens);
    }

    fn pass(&mut self, window: Option<Window>, stats: &PassStats, main_model: Option<String>) {
        self.window(window);
        self.stats(stats);
        *self.main_model = main_model;
    }
}

/// One micro-compaction pass: every field of spec section 8, plus the cache-break depth and
/// the summarizer's token use so the report can price the pass.
///
/// Build it with [`MicroPass::new`] and the setters, then let
/// [`SessionAccumulator::record`] fill the session totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MicroPass {
    /// Opaque session id.
    pub session_id: String,
    /// What the pass did.
    pub outcome: MicroOutcomeKind,
    /// Messages in the transcript before the pass.
    pub messages_before: u64,
    /// Messages after the pass.
    pub messages_after: u64,
    /// Transcript tokens before the pass.
    pub tokens_before: u64,
    /// Transcript tokens after the pass.
    pub tokens_after: u64,
    /// `tokens_after - tokens_before`: negative when the transcript shrank.
    pub tokens_delta: i64,
    /// Tokens of the absorbed exchange(s); 0 when nothing was absorbed.
    pub exchange_tokens: u64,
    /// Tokens of the rolling summary after the pass.
    pub rolling_summary_tokens: u64,
    /// The cursor after the pass (index of the first middle message not yet absorbed).
    pub cursor: u64,
    /// Passes so far in this session, this one included.
    pub passes_total: u64,
    /// Net tokens saved by micro passes so far in this session (negative while the first
    /// marker's scaffolding has not paid for itself).
    pub tokens_saved_total: i64,
    /// Wall time of the pass in milliseconds.
    pub duration_ms: u64,
    /// The compaction threshold, or `None` when the caller did not supply the window.
    pub threshold_tokens: Option<u64>,
    /// The model's context length, or `None` when unknown.
    pub context_limit: Option<u64>,
    /// `tokens_after / threshold_tokens x 100`, one decimal; `None` when the window is unknown.
    pub occupancy_pct: Option<f64>,
    /// The main (conversation) model.
    pub main_model: Option<String>,
    /// The auxiliary (summarizer) model.
    pub aux_model: Option<String>,
    /// Index of the first message the pass changed (how deep the prompt-cache break went);
    /// `None` when the transcript did not change.
    pub earliest_changed_index: Option<u64>,
    /// Prompt plus completion tokens the summarizer used in this pass.
    pub summary_tokens: u64,
    /// The deterministic fallback summary replaced a failed (or skipped) summarizer call.
    /// Written only when true, so the line of an ordinary pass keeps its fields.
    #[serde(skip_serializing_if = "is_false")]
    pub fallback_used: bool,
    /// The summarizer was not called: its circuit breaker is open after repeated transient
    /// failures, so the fallback wrote the summary (or the pass failed at once). Written only
    /// when true.
    #[serde(skip_serializing_if = "is_false")]
    pub summarizer_skipped: bool,
}

impl MicroPass {
    /// A pass of `session_id` with `outcome` and every count at zero.
    pub fn new(session_id: impl Into<String>, outcome: MicroOutcomeKind) -> MicroPass {
        MicroPass {
            session_id: session_id.into(),
            outcome,
            ..MicroPass::default()
        }
    }

    /// Sets the token counts, the delta and the occupancy.
    pub fn tokens(mut self, before: u64, after: u64) -> MicroPass {
        self.shared().tokens(before, after);
        self
    }

    /// Sets the message counts.
    pub fn messages(mut self, before: u64, after: u64) -> MicroPass {
        self.shared().messages(before, after);
        self
    }

    /// Sets every count a pass report shares ([`PassStats`]): tokens (with the delta and the
    /// occupancy, so set the window first), messages, the first index rewritten, summarizer
    /// usage, whether the fallback wrote the summary or the summarizer was skipped, the wall
    /// time.
    ///
    /// ```
    /// use compaction_core::micro::MicroOutcomeKind;
    /// use compaction_core::stats::PassStats;
    /// use compaction_telemetry::{MicroPass, Window};
    ///
    /// let stats = PassStats { tokens_after: 700, messages_after: 8, passes: 1, fallback_passes: 1, ..PassStats::at(1_000, 12) };
    /// let window = Window { threshold_tokens: 1_000, context_limit: 2_000 };
    /// let ev = MicroPass::new("s", MicroOutcomeKind::Absorbed).window(Some(window)).stats(&stats);
    /// assert_eq!((ev.tokens_delta, ev.messages_after, ev.fallback_used), (-300, 8, true));
    /// assert_eq!(ev.occupancy_pct, Some(70.0));
    /// ```
    pub fn stats(mut self, stats: &PassStats) -> MicroPass {
        self.shared().stats(stats);
        self
    }

    /// Sets the window (or clears it with `None`) and recomputes the occupancy.
    pub fn window(mut self, window: Option<Window>) -> MicroPass {
        self.shared().window(window);
        self
    }

    fn shared(&mut self) -> Shared<'_> {
        Shared {
            tokens_before: &mut self.tokens_before,
            tokens_after: &mut self.tokens_after,
            tokens_delta: Some(&mut self.tokens_delta),
            messages_before: &mut self.messages_before,
            messages_after: &mut self.messages_after,
            duration_ms: &mut self.duration_ms,
            threshold_tokens: &mut self.threshold_tokens,
            context_limit: &mut self.context_limit,
            occupancy_pct: &mut self.occupancy_pct,
            main_model: &mut self.main_model,
            earliest_changed_index: &mut self.earliest_changed_index,
            summary_tokens: &mut self.summary_tokens,
            fallback_used: &mut self.fallback_used,
            summarizer_skipped: &mut self.summarizer_skipped,
        }
    }
}

impl PassLine for MicroPass {
    fn pass(
        mut self,
        window: Option<Window>,
        stats: &PassStats,
        main_model: Option<String>,
    ) -> Self {
        self.shared().pass(window, stats, main_model);
        self
    }
}

impl TelemetryEvent for MicroPass {
    const EVENT: &'static str = "micro_compaction";
    const PREFIX: &'static str = "micro compaction telemetry: ";
}

/// Per-session running totals carried by every micro pass line, so a whole run can be
/// summarised from its last line. The facade owns one per session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionAccumulator {
    /// Micro passes recorded so far (every outcome counts, no-ops included).
    pub passes_total: u64,
    /// Net tokens saved so far: the sum of `-tokens_delta`.
    pub tokens_saved_total: i64,
}

impl SessionAccumulator {
    /// Counts `pass` and writes the updated totals into it.
    pub fn record(&mut self, pass: &mut MicroPass) {
        self.passes_total += 1;
        self.tokens_saved_total = self.tokens_saved_total.saturating_sub(pass.tokens_delta);
        pass.passes_total = self.passes_total;
        pass.tokens_saved_total = self.tokens_saved_total;
    }
}

/// What started a batch compaction attempt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TriggerSource {
    /// The pre-turn threshold check.
    #[default]
    Threshold,
    /// The check before a model call inside a tool loop.
    Preflight,
    /// Real usage reported by a response crossed the threshold.
    Usage,
    /// The provider rejected a request as over the context window.
    OverflowError,
    /// The user or the host asked for it.
    Manual,
    /// Proactive pruning below the threshold.
    Proactive,
}

/// How a batch compaction attempt ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BatchOutcome {
    /// The middle was summarized (possibly with the fallback summary) and committed.
    #[default]
    Compacted,
    /// Pruning alone reached the low-water mark and was committed; no summary call.
    PruneOnly,
    /// The attempt failed; the transcript is unchanged ([`BatchAttempt::failure_class`] says why).
    Failed,
    /// The attempt was not made (cooldown, anti-thrash pause, nothing to compact).
    Skipped,
    /// Head plus protected tail alone exceed the threshold; reported instead of looping.
    IrreducibleFloor,
}

impl BatchOutcome {
    /// The snake_case name used in the telemetry line.
    pub fn as_str(self) -> &'static str {
        match self {
            BatchOutcome::Compacted => "compacted",
            BatchOutcome::PruneOnly => "prune_only",
            BatchOutcome::Failed => "failed",
            BatchOutcome::Skipped => "skipped",
            BatchOutcome::IrreducibleFloor => "irreducible_floor",
        }
    }

    /// Whether the transcript was rewritten (a cache-breaking compression event).
    pub fn is_committed(self) -> bool {
        matches!(self, BatchOutcome::Compacted | BatchOutcome::PruneOnly)
    }
}

/// Why a pass failed. Classes, never messages: a provider's error body stays out of logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureClass {
    /// The summarizer rejected the credentials.
    Auth,
    /// The summarizer's quota or billing limit was reached.
    Quota,
    /// The summarizer rate-limited the request.
    RateLimited,
    /// A retryable server-side failure (5xx, overloaded).
    Transient,
    /// Connection, DNS or TLS failure.
    Network,
    /// The request or the summarizer call timed out.
    Timeout,
    /// The summarization request itself exceeded the summarizer's window.
    ContextLength,
    /// The summarizer's response could not be understood.
    Malformed,
    /// The summary was empty.
    Empty,
    /// The summary was cut by the output token limit.
    Truncated,
    /// The summary issued instructions to the next context.
    Directive,
    /// The store refused or failed the commit.
    Store,
    /// The commit named a stale generation; the pass was discarded.
    StaleGeneration,
    /// The attempt was cancelled by the host.
    Cancelled,
    /// Anything else.
    Other,
}

/// One batch compaction attempt (spec section 4).
///
/// Keys shared with Hermes Agent's `compression_attempt` line keep their names there
/// (`trigger_source`, `failure_class`, `fallback_used`, `total_duration_ms`, and the derived
/// `commit_status`), so existing tooling reads both.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BatchAttempt {
    /// Opaque session id.
    pub session_id: String,
    /// What started the attempt.
    pub trigger_source: TriggerSource,
    /// How it ended.
    pub outcome: BatchOutcome,
    /// Why it failed, when it did.
    pub failure_class: Option<FailureClass>,
    /// Pruning alone reached the low-water mark and was accepted.
    pub prune_accepted: bool,
    /// Pruning did not reach the low-water mark and the attempt fell through to a summary.
    pub fell_through: bool,
    /// The deterministic fallback summary replaced a failed summarizer call.
    pub fallback_used: bool,
    /// The summarizer was not called: its circuit breaker is open after repeated transient
    /// failures, so the fallback wrote the summary (or the attempt failed at once). Written
    /// only when true, so the line of an ordinary attempt keeps its fields.
    #[serde(skip_serializing_if = "is_false")]
    pub summarizer_skipped: bool,
    /// What became of a summary prepared ahead for this attempt (`used`, or `discarded_` and
    /// the reason: `span_changed`, `generation_changed`, `lost_race`, `failed`, `insufficient`,
    /// `superseded`). Written only when one was waiting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prepared: Option<String>,
    /// Summarizer tokens (prompt plus completion) of a prepared summary discarded at this
    /// attempt: paid for nothing. Written only when not zero.
    #[serde(skip_serializing_if = "is_zero")]
    pub prepared_wasted_tokens: u64,
    /// Transcript tokens before the attempt.
    pub tokens_before: u64,
    /// Transcript tokens after it (equal to `tokens_before` when nothing was committed).
    pub tokens_after: u64,
    /// Tokens of the protected head.
    pub head_tokens: u64,
    /// Tokens of the middle (what could be rewritten).
    pub middle_tokens: u64,
    /// Tokens of the protected tail.
    pub tail_tokens: u64,
    /// Messages before the attempt.
    pub messages_before: u64,
    /// Messages after it.
    pub messages_after: u64,
    /// The compaction threshold, or `None` when the caller did not supply the window.
    pub threshold_tokens: Option<u64>,
    /// The model's context length, or `None` when unknown.
    pub context_limit: Option<u64>,
    /// `tokens_after / threshold_tokens x 100`, one decimal; `None` when the window is unknown.
    pub occupancy_pct: Option<f64>,
    /// Index of the first message the attempt changed (cache-break depth); `None` when
    /// nothing changed.
    pub earliest_changed_index: Option<u64>,
    /// Prompt plus completion tokens the summarizer used (0 for prune-only).
    pub summary_tokens: u64,
    /// The summarizer model, when one was called.
    pub summary_model: Option<String>,
    /// The main (conversation) model.
    pub main_model: Option<String>,
    /// Milliseconds spent pruning.
    pub prune_ms: u64,
    /// Milliseconds spent in the summarizer.
    pub summarize_ms: u64,
    /// Milliseconds for the whole attempt.
    pub total_duration_ms: u64,
}

impl BatchAttempt {
    /// An attempt of `session_id` started by `trigger` that ended with `outcome`.
    pub fn new(
        session_id: impl Into<String>,
        trigger: TriggerSource,
        outcome: BatchOutcome,
    ) -> BatchAttempt {
        BatchAttempt {
            session_id: session_id.into(),
            trigger_source: trigger,
            outcome,
            ..BatchAttempt::default()
        }
    }

    /// Sets the token counts and the occupancy.
    pub fn tokens(mut self, before: u64, after: u64) -> BatchAttempt {
        self.shared().tokens(before, after);
        self
    }

    /// Sets the head, middle and tail token counts.
    pub fn regions(mut self, head: u64, middle: u64, tail: u64) -> BatchAttempt {
        self.head_tokens = head;
        self.middle_tokens = middle;
        self.tail_tokens = tail;
        self
    }

    /// Sets the message counts.
    pub fn messages(mut self, before: u64, after: u64) -> BatchAttempt {
        self.shared().messages(before, after);
        self
    }

    /// Sets every count a pass report shares ([`PassStats`]), as
    /// [`MicroPass::stats`] does (set the window first: the occupancy follows the tokens).
    ///
    /// ```
    /// use compaction_core::stats::PassStats;
    /// use compaction_telemetry::{BatchAttempt, BatchOutcome, TriggerSource};
    ///
    /// let stats = PassStats { tokens_after: 4_000, earliest_changed_index: Some(3), passes: 1, ..PassStats::at(9_000, 50) };
    /// let ev = BatchAttempt::new("s", TriggerSource::Preflight, BatchOutcome::Compacted).stats(&stats);
    /// assert_eq!((ev.tokens_before, ev.tokens_after, ev.earliest_changed_index), (9_000, 4_000, Some(3)));
    /// assert!(!ev.fallback_used);
    /// ```
    pub fn stats(mut self, stats: &PassStats) -> BatchAttempt {
        self.shared().stats(stats);
        self
    }

    /// Sets the window (or clears it with `None`) and recomputes the occupancy.
    pub fn window(mut self, window: Option<Window>) -> BatchAttempt {
        self.shared().window(window);
        self
    }

    fn shared(&mut self) -> Shared<'_> {
        Shared {
            tokens_before: &mut self.tokens_before,
            tokens_after: &mut self.tokens_after,
            tokens_delta: None,
            messages_before: &mut self.messages_before,
            messages_after: &mut self.messages_after,
            duration_ms: &mut self.total_duration_ms,
            threshold_tokens: &mut self.threshold_tokens,
            context_limit: &mut self.context_limit,
            occupancy_pct: &mut self.occupancy_pct,
            main_model: &mut self.main_model,
            earliest_changed_index: &mut self.earliest_changed_index,
            summary_tokens: &mut self.summary_tokens,
            fallback_used: &mut self.fallback_used,
            summarizer_skipped: &mut self.summarizer_skipped,
        }
    }

    /// Hermes Agent's `commit_status` for this outcome: `committed`, `aborted` or `skipped`.
    pub fn commit_status(&self) -> &'static str {
        match self.outcome {
            BatchOutcome::Compacted | BatchOutcome::PruneOnly => "committed",
            BatchOutcome::Failed => "aborted",
            BatchOutcome::Skipped | BatchOutcome::IrreducibleFloor => "skipped",
        }
    }
}

impl PassLine for BatchAttempt {
    fn pass(
        mut self,
        window: Option<Window>,
        stats: &PassStats,
        main_model: Option<String>,
    ) -> Self {
        self.shared().pass(window, stats, main_model);
        self
    }
}

impl TelemetryEvent for BatchAttempt {
    const EVENT: &'static str = "compression_attempt";
    const PREFIX: &'static str = "context compression attempt telemetry: ";

    fn derived_fields(&self, object: &mut Map<String, Value>) {
        object.insert("commit_status".into(), self.commit_status().into());
    }
}

/// One finished turn, so per-turn rates can be computed from the log alone.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Turn {
    /// Opaque session id.
    pub session_id: String,
    /// Turn index in the session, from 0.
    pub turn: u64,
    /// The provider's reported `prompt_tokens` for the turn's last request, when it gave one.
    pub prompt_tokens: Option<u64>,
    /// The library's own estimate of the transcript's tokens at the end of the turn.
    pub estimated_tokens: u64,
    /// The compaction threshold, or `None` when the caller did not supply the window.
    pub threshold_tokens: Option<u64>,
    /// The model's context length, or `None` when unknown.
    pub context_limit: Option<u64>,
    /// Prompt tokens (reported, else estimated) as a percentage of the threshold; `None`
    /// when the window is unknown.
    pub occupancy_pct: Option<f64>,
}

impl Turn {
    /// Turn `turn` of `session_id` with its token counts and the window, if known.
    pub fn new(
        session_id: impl Into<String>,
        turn: u64,
        prompt_tokens: Option<u64>,
        estimated_tokens: u64,
        window: Option<Window>,
    ) -> Turn {
        let threshold_tokens = window.map(|w| w.threshold_tokens);
        Turn {
            session_id: session_id.into(),
            turn,
            prompt_tokens,
            estimated_tokens,
            threshold_tokens,
            context_limit: window.map(|w| w.context_limit),
            occupancy_pct: occupancy_pct(
                prompt_tokens.unwrap_or(estimated_tokens),
                threshold_tokens,
            ),
        }
    }
}

impl TelemetryEvent for Turn {
    const EVENT: &'static str = "compaction_turn";
    const PREFIX: &'static str = "compaction turn telemetry: ";
}

/// What an insertion-time trim that was due ended as. A message that did not need trimming
/// has no event at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TrimOutcome {
    /// The message was replaced by its compact form; the original is in the store.
    #[default]
    Trimmed,
    /// No store was configured to keep the original, so the message was kept whole.
    KeptNoStore,
    /// The store failed to write the original, so the message was kept whole.
    KeptStoreFailed,
}

impl TrimOutcome {
    /// The snake_case name used in the telemetry line.
    pub fn as_str(self) -> &'static str {
        match self {
            TrimOutcome::Trimmed => "trimmed",
            TrimOutcome::KeptNoStore => "kept_no_store",
            TrimOutcome::KeptStoreFailed => "kept_store_failed",
        }
    }
}

/// Which hook a trimmed (or kept) message came through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TrimSource {
    /// A tool result about to be appended.
    #[default]
    ToolResult,
    /// A user message (a large paste) about to be appended.
    UserPaste,
}

impl TrimSource {
    /// The snake_case name used in the telemetry line.
    pub fn as_str(self) -> &'static str {
        match self {
            TrimSource::ToolResult => "tool_result",
            TrimSource::UserPaste => "user_paste",
        }
    }
}

/// One insertion-time trim that was due: a message over the trim limit, trimmed or kept whole.
///
/// Counts only. The stored original's handle is left out on purpose (it is derived from the
/// content), and so is the tool's name: no other event names tools, and the content-free
/// tests treat a tool call's name as message content. Build it with [`Trim::new`] and
/// [`Trim::tokens`], then let [`TrimAccumulator::record`] fill the session totals.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Trim {
    /// Opaque session id.
    pub session_id: String,
    /// How the trim ended.
    pub outcome: TrimOutcome,
    /// Which hook the message came through.
    pub source: TrimSource,
    /// Tokens of the message as it arrived.
    pub original_tokens: u64,
    /// Tokens of the message appended: the compact form when trimmed, the original (equal to
    /// `original_tokens`) when kept whole.
    pub trimmed_tokens: u64,
    /// `original_tokens - trimmed_tokens`: 0 unless trimmed.
    pub tokens_saved: u64,
    /// Trims that were due so far in this session, this one included (every outcome counts,
    /// as every outcome counts in `passes_total`).
    pub trims_total: u64,
    /// Tokens saved by trimming so far in this session: the sum of `tokens_saved`.
    pub tokens_saved_total: u64,
}

impl Trim {
    /// A trim of `session_id` through `source` that ended with `outcome`, every count at zero.
    pub fn new(session_id: impl Into<String>, outcome: TrimOutcome, source: TrimSource) -> Trim {
        Trim {
            session_id: session_id.into(),
            outcome,
            source,
            ..Trim::default()
        }
    }

    /// Sets the token counts and the saving (`original - trimmed`, never negative).
    pub fn tokens(mut self, original: u64, trimmed: u64) -> Trim {
        self.original_tokens = original;
        self.trimmed_tokens = trimmed;
        self.tokens_saved = original.saturating_sub(trimmed);
        self
    }
}

impl TelemetryEvent for Trim {
    const EVENT: &'static str = "insert_trim";
    const PREFIX: &'static str = "insert trim telemetry: ";
}

/// Per-session running totals carried by every trim line, the counterpart of
/// [`SessionAccumulator`] for insertion-time trimming. The facade owns one per session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimAccumulator {
    /// Trims recorded so far (every outcome counts).
    pub trims_total: u64,
    /// Tokens saved so far: the sum of `tokens_saved`.
    pub tokens_saved_total: u64,
}

impl TrimAccumulator {
    /// Counts `trim` and writes the updated totals into it.
    pub fn record(&mut self, trim: &mut Trim) {
        self.trims_total += 1;
        self.tokens_saved_total = self.tokens_saved_total.saturating_add(trim.tokens_saved);
        trim.trims_total = self.trims_total;
        trim.tokens_saved_total = self.tokens_saved_total;
    }
}

fn signed_delta(before: u64, after: u64) -> i64 {
    let d = i128::from(after) - i128::from(before);
    d.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// `skip_serializing_if` for counts written only when not zero.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `skip_serializing_if` for flags written only when set.
fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancy_rounds_to_one_decimal_and_needs_a_threshold() {
        assert_eq!(occupancy_pct(12060, Some(34816)), Some(34.6));
        assert_eq!(occupancy_pct(1, Some(3)), Some(33.3));
        assert_eq!(occupancy_pct(500, None), None);
        assert_eq!(occupancy_pct(500, Some(0)), None);
    }

    #[test]
    fn window_and_tokens_commute() {
        let w = Some(Window {
            threshold_tokens: 1000,
            context_limit: 2000,
        });
        let a = MicroPass::new("s", MicroOutcomeKind::Absorbed)
            .tokens(900, 500)
            .window(w);
        let b = MicroPass::new("s", MicroOutcomeKind::Absorbed)
            .window(w)
            .tokens(900, 500);
        assert_eq!(a, b);
        assert_eq!(a.occupancy_pct, Some(50.0));
        assert_eq!(a.tokens_delta, -400);
        assert_eq!(a.clone().window(None).occupancy_pct, None);
    }

    #[test]
    fn accumulator_fills_running_totals() {
        let mut acc = SessionAccumulator::default();
        let mut first = MicroPass::new("s", MicroOutcomeKind::Absorbed).tokens(1000, 1330);
        acc.record(&mut first);
        assert_eq!((first.passes_total, first.tokens_saved_total), (1, -330));
        let mut second = MicroPass::new("s", MicroOutcomeKind::Absorbed).tokens(1330, 700);
        acc.record(&mut second);
        assert_eq!((second.passes_total, second.tokens_saved_total), (2, 300));
        assert_eq!(
            acc,
            SessionAccumulator {
                passes_total: 2,
                tokens_saved_total: 300
            }
        );
    }

    #[test]
    fn trim_accumulator_counts_every_outcome_and_sums_savings() {
        let mut acc = TrimAccumulator::default();
        let mut first =
            Trim::new("s", TrimOutcome::Trimmed, TrimSource::ToolResult).tokens(900, 100);
        acc.record(&mut first);
        assert_eq!(first.tokens_saved, 800);
        assert_eq!((first.trims_total, first.tokens_saved_total), (1, 800));
        let mut kept =
            Trim::new("s", TrimOutcome::KeptNoStore, TrimSource::UserPaste).tokens(700, 700);
        acc.record(&mut kept);
        assert_eq!((kept.trims_total, kept.tokens_saved_total), (2, 800));
        // A compact form larger than the original never counts as a negative saving.
        assert_eq!(Trim::default().tokens(10, 20).tokens_saved, 0);
    }

    #[test]
    fn commit_status_follows_outcome() {
        let s = |o| BatchAttempt::new("s", TriggerSource::Threshold, o).commit_status();
        assert_eq!(s(BatchOutcome::Compacted), "committed");
        assert_eq!(s(BatchOutcome::PruneOnly), "committed");
        assert_eq!(s(BatchOutcome::Failed), "aborted");
        assert_eq!(s(BatchOutcome::Skipped), "skipped");
    }
}
