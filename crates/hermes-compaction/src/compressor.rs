//! The compressor an agent framework calls: batch compaction with cache-aware prune-first,
//! anti-thrash, failure cooldown, persistence and telemetry.
//!
//! The hooks match the moments an agent has:
//!
//! | moment | hook |
//! |---|---|
//! | before each model request (and before each call inside a tool loop) | [`Compressor::before_request`] |
//! | after a response that carried usage | [`Compressor::after_response`], then [`Compressor::check_usage`] |
//! | the provider said the context window was exceeded | [`Compressor::on_context_overflow`] |
//! | the user typed `/compress` | [`Compressor::compress`] |
//!
//! Every pass is planned by `compaction_core::batch` as pure data, summarized, committed to the
//! store (when one is configured) and only then applied to the transcript. Any failure leaves
//! the transcript byte-identical and is reported in the [`BatchReport`] and in telemetry.

use std::sync::Arc;
use std::time::{Duration, Instant};

use compaction_core::batch::{
    self, BatchConfig, BatchPlan, BatchRequest, BatchStep, NothingReason, SummaryJob,
};
use compaction_core::material::MaterialConfig;
use compaction_core::prune::PruneConfig;
use compaction_core::{MarkerKind, Message, TokenCounter, Transcript};
use compaction_llm::{Summarizer, SummaryKind, SummaryRequest};

use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::persist::PersistError;
#[cfg(feature = "store")]
pub use crate::persist::{Persistence, THRASH_STATE_KEY};
use crate::report::{BatchReport, Failure, Outcome, Trigger};

/// The share of the effective window over which an automatic pass is made even during a
/// failure cooldown or the anti-thrash pause: a prompt that close to the window may already be
/// over it in the provider's count (the estimator reads JSON-heavy prompts up to about a tenth
/// low, docs/ECONOMICS.md), and the next request would then be refused.
pub const NEAR_WINDOW_RATIO: f64 = 0.9;

/// A ticket from [`Compressor::before_request`] to hand back to
/// [`Compressor::after_response`], so usage measured before a compaction is never used after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestTicket {
    epoch: u64,
    messages: usize,
}

/// Durable anti-thrash and cooldown state.
///
/// It survives a restart through the store: [`Compressor::save_state`] writes it into the
/// session's [`CompactionState`](compaction_store::CompactionState) (mapping:
/// [`ThrashState::write_to`]) and [`Compressor::load_state`] reads it back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThrashState {
    /// Whether the session has been compacted (head protection decays).
    pub compacted: bool,
    /// Consecutive failed attempts.
    pub consecutive_failures: u32,
    /// No automatic attempt before this time (unix ms).
    pub cooldown_until_ms: Option<u64>,
    /// Ineffective compactions in a row.
    pub ineffective: u32,
    /// Automatic compaction paused until this time (unix ms).
    pub paused_until_ms: Option<u64>,
}

/// The batch compressor for one session.
///
/// Each hook where an agent loop calls it (the `agent_loop` example runs a whole session):
///
/// ```
/// use std::sync::Arc;
/// use hermes_compaction::core::{Estimator, Message, ToolCall};
/// use hermes_compaction::llm::ExtractiveSummarizer;
/// use hermes_compaction::{Compressor, Config};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let mut config = Config::default();
/// config.model.context_length = 8_000;
/// let mut c = Compressor::new(
///     config,
///     Arc::new(ExtractiveSummarizer::default()),
///     Arc::new(Estimator::default()),
///     "session-1",
/// );
/// let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
/// for turn in 0..30 {
///     t.push(Message::user(format!("request {turn}: fix module {turn}")), c.counter());
///     // Before each model request: compacts first when over the threshold.
///     let (ticket, _batch) = c.before_request(&mut t).await;
///     let prompt_tokens = t.current_tokens(); // what the provider reports
///     // After each response: calibrate with the provider's count, compact now if over.
///     c.after_response(&mut t, ticket, prompt_tokens);
///     c.check_usage(&mut t).await;
///     let id = format!("call_{turn}");
///     t.push(
///         Message::assistant_tool_calls("", vec![ToolCall::function(&id, "shell", "{}")]),
///         c.counter(),
///     );
///     t.push(Message::tool_result(&id, "ok\n".repeat(400)), c.counter());
///     // After each tool round inside a turn: long turns are compacted as they go.
///     c.after_tool_round(&mut t).await;
///     t.push(Message::assistant(format!("module {turn} fixed")), c.counter());
///     // After a turn that finished normally (micro-compaction, when enabled).
///     c.finalize_turn(&mut t).await;
/// }
/// assert!(t.current_tokens() <= c.threshold_tokens());
/// // The provider refused a request as too long: compact harder, then retry (bounded).
/// let report = c.on_context_overflow(&mut t).await;
/// assert!(report.is_some());
/// // A user's `/compress`, with a focus topic.
/// let report = c.compress(&mut t, Some("module 29".into())).await;
/// let _outcome = report.outcome; // what the pass did, for your logs
/// # });
/// ```
pub struct Compressor {
    /// What the configuration says, read once at construction and never changed.
    settings: Settings,
    counter: Arc<dyn TokenCounter>,
    summarizer: Arc<dyn Summarizer>,
    fallback: Option<Arc<dyn Summarizer>>,
    #[cfg(feature = "store")]
    persistence: Option<Persistence>,
    session_id: String,
    clock: Arc<dyn Clock>,
    /// Everything that changes as the session goes on.
    pub(crate) rt: Runtime,
}

/// The configuration and what is derived from it, fixed at construction.
struct Settings {
    config: Arc<Config>,
    batch: BatchConfig,
    micro: compaction_core::micro::MicroConfig,
    micro_every_n_turns: u64,
    threshold: u64,
    /// [`NEAR_WINDOW_RATIO`] of the effective window (context length minus the output
    /// reservation): a prompt over it may be refused.
    window_tokens: u64,
    /// How every pass calls the summarizer (budget, circuit breaker).
    call: crate::breaker::CallPolicy,
}

/// The compressor's runtime state.
#[derive(Debug, Default)]
pub(crate) struct Runtime {
    state: ThrashState,
    epoch: u64,
    awaiting_effect: bool,
    overflow_attempts: u32,
    /// Proactive prune stays disarmed until the transcript reaches this size again.
    proactive_rearm_at: Option<u64>,
    /// When the last model request was made (unix ms), for the cache time-to-live rule.
    last_request_ms: Option<u64>,
    /// A pass was applied in memory after its commit failed: the store's active rows no longer
    /// match the transcript until the next store write resynchronises them.
    #[cfg(feature = "store")]
    resync_pending: bool,
    /// Messages the store never saw that an overflow pass applied without its commit removed
    /// from the transcript: [`Compressor::reload`] writes them, so they are not lost. Cleared
    /// by a successful resync (which stores the pass's summary of them instead).
    #[cfg(feature = "store")]
    unpersisted_removed: Vec<Message>,
    /// The next manual pass is prune-only (set by `Compressor::prune_only`).
    pub(crate) prune_only_once: bool,
    pub(crate) micro: MicroRuntime,
    /// The summarizer circuit breaker every pass shares (a lock: batch summaries are written
    /// under `&self`).
    pub(crate) breaker: std::sync::Mutex<crate::breaker::Breaker>,
    /// What `undo_last` needs to revert the last pass applied in memory.
    pub(crate) last_pass: Option<crate::undo::LastPass>,
    /// A compaction the model asked for (`compact_context`), run at the next `before_request`.
    pub(crate) requested: Option<crate::compact_tool::Requested>,
    /// A hash of the latest real user message when the model last asked: one request per
    /// user turn.
    pub(crate) requested_turn: Option<Option<u64>>,
    /// Running insertion-trim totals for telemetry (a lock: the trim hooks take `&self`).
    #[cfg(all(feature = "store", feature = "telemetry"))]
    pub(crate) trim_totals: std::sync::Mutex<compaction_telemetry::TrimAccumulator>,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("session_id", &self.session_id)
            .field("threshold", &self.settings.threshold)
            .field("summarizer", &self.summarizer.name())
            .field("state", &self.rt.state)
            .finish_non_exhaustive()
    }
}

impl Compressor {
    /// A compressor for `session_id` with the given summarizer. The extractive fallback is
    /// used when `compression.fallback_to_extractive` is set.
    pub fn new(
        config: Config,
        summarizer: Arc<dyn Summarizer>,
        counter: Arc<dyn TokenCounter>,
        session_id: impl Into<String>,
    ) -> Compressor {
        let settings = Settings {
            batch: batch_config(&config),
            micro: micro_config(&config),
            micro_every_n_turns: config.micro_every_n_turns(),
            threshold: config.window().threshold_tokens(),
            window_tokens: (config.window().effective_window() as f64 * NEAR_WINDOW_RATIO) as u64,
            call: crate::breaker::CallPolicy::from_config(&config.auxiliary.compression),
            config: Arc::new(config),
        };
        let fallback: Option<Arc<dyn Summarizer>> = settings
            .config
            .compression
            .fallback_to_extractive
            .then(|| Arc::new(compaction_llm::ExtractiveSummarizer::default()) as _);
        Compressor {
            settings,
            counter,
            summarizer,
            fallback,
            #[cfg(feature = "store")]
            persistence: None,
            session_id: session_id.into(),
            clock: Arc::new(SystemClock),
            rt: Runtime::default(),
        }
    }

    /// Persist every pass with `archive_and_compact`.
    #[cfg(feature = "store")]
    pub fn with_store(mut self, persistence: Persistence) -> Compressor {
        self.persistence = Some(persistence);
        self
    }

    /// Replaces the clock every time the compressor reads comes from (cooldowns, pauses, the
    /// cache time-to-live rule, the date in summary prompts). Any `Fn() -> u64 + Send + Sync`
    /// returning unix milliseconds is a [`Clock`], so a plain `fn` still works.
    pub fn with_clock(self, clock: impl Clock + 'static) -> Compressor {
        self.with_shared_clock(Arc::new(clock))
    }

    /// [`with_clock`](Self::with_clock) with a clock shared by several compressors.
    pub fn with_shared_clock(mut self, clock: Arc<dyn Clock>) -> Compressor {
        self.clock = clock;
        self
    }

    /// The clock's current time in unix milliseconds.
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_unix_ms()
    }

    /// The clock's date, for summary prompts.
    pub(crate) fn today(&self) -> String {
        self.clock.today()
    }

    /// Restores durable state (e.g. loaded from the store after a restart).
    pub fn with_state(mut self, state: ThrashState) -> Compressor {
        self.rt.state = state;
        self
    }

    /// The current anti-thrash and cooldown state.
    pub fn state(&self) -> &ThrashState {
        &self.rt.state
    }

    /// The threshold in tokens.
    pub fn threshold_tokens(&self) -> u64 {
        self.settings.threshold
    }

    /// The token counter.
    pub fn counter(&self) -> &dyn TokenCounter {
        self.counter.as_ref()
    }

    /// The configuration (read at construction; it does not change).
    pub fn config(&self) -> &Config {
        &self.settings.config
    }

    /// The core micro configuration derived from it.
    pub(crate) fn batch_settings(&self) -> &BatchConfig {
        &self.settings.batch
    }

    pub(crate) fn micro_settings(&self) -> &compaction_core::micro::MicroConfig {
        &self.settings.micro
    }

    /// `compression.micro_compact_every_n_turns`, at least 1.
    pub(crate) fn micro_every_n_turns(&self) -> u64 {
        self.settings.micro_every_n_turns
    }

    /// Seconds since the last model request, `None` before the first.
    pub(crate) fn secs_since_last_request(&self) -> Option<u64> {
        self.rt
            .last_request_ms
            .map(|at| self.now_ms().saturating_sub(at) / 1_000)
    }

    /// Whether passes are persisted (summaries then say that detail can be recalled).
    pub(crate) fn has_store(&self) -> bool {
        #[cfg(feature = "store")]
        return self.persistence.is_some();
        #[cfg(not(feature = "store"))]
        return false;
    }

    /// The summarizer.
    pub fn summarizer(&self) -> &dyn Summarizer {
        self.summarizer.as_ref()
    }

    /// The session id used in telemetry.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The anti-thrash state, for `undo_last`.
    pub(crate) fn thrash_mut(&mut self) -> &mut ThrashState {
        &mut self.rt.state
    }

    /// A pass other than a batch one rewrote history: usage measured before it no longer
    /// applies.
    pub(crate) fn note_rewrite(&mut self) {
        self.rt.epoch += 1;
    }

    /// Builds a transcript with this compressor's counter, marking the session compacted when
    /// it already holds a summary marker.
    pub fn transcript(&mut self, messages: Vec<Message>) -> Transcript {
        if messages.iter().any(compaction_core::marker::is_summary) {
            self.rt.state.compacted = true;
        }
        Transcript::new(messages, self.counter.as_ref())
    }

    /// The planned check before a model request: compacts when the transcript is at or over
    /// the threshold (or proactive prune applies). Returns the ticket for
    /// [`after_response`](Self::after_response) and the report of a pass, if one ran.
    ///
    /// A failure cooldown or the anti-thrash pause skips the pass ([`Outcome::Skipped`]) while
    /// the transcript is within [`NEAR_WINDOW_RATIO`] of the window (context length minus the
    /// output reservation); beyond it the pass is made all the same, as
    /// [`on_context_overflow`](Self::on_context_overflow) would make it after the provider's
    /// refusal, since the request could not be sent otherwise. The same holds for
    /// [`check_usage`](Self::check_usage).
    pub async fn before_request(
        &mut self,
        t: &mut Transcript,
    ) -> (RequestTicket, Option<BatchReport>) {
        let mut report = None;
        let enabled = self.settings.config.compression.enabled;
        if let Some(requested) = self.rt.requested.take().filter(|_| enabled) {
            // The model asked (compact_context): forced, but it waits out cooldowns and pauses
            // like an automatic pass.
            report = Some(
                self.run(t, Trigger::BeforeRequest, true, requested.focus)
                    .await,
            );
        } else if self.settings.config.compression.enabled
            && t.current_tokens() >= self.settings.threshold
        {
            report = Some(self.run(t, Trigger::BeforeRequest, false, None).await);
        } else if self.settings.config.compression.enabled && self.proactive_due(t) {
            report = Some(self.run(t, Trigger::Proactive, false, None).await);
        }
        self.rt.last_request_ms = Some(self.now_ms());
        (
            RequestTicket {
                epoch: self.rt.epoch,
                messages: t.len(),
            },
            report,
        )
    }

    /// Records the provider's usage for the request the ticket describes. Usage from before
    /// the last compaction is ignored. Detects ineffective compactions (still over the
    /// threshold on the first real usage after one) and pauses automatic compaction after
    /// `anti_thrash_max_ineffective` in a row.
    pub fn after_response(
        &mut self,
        t: &mut Transcript,
        ticket: RequestTicket,
        prompt_tokens: u64,
    ) {
        if ticket.epoch != self.rt.epoch {
            return;
        }
        t.calibrate(prompt_tokens, ticket.messages.min(t.len()));
        self.rt.overflow_attempts = 0;
        if self.rt.awaiting_effect {
            self.rt.awaiting_effect = false;
            if prompt_tokens >= self.settings.threshold {
                self.rt.state.ineffective += 1;
                if self.rt.state.ineffective
                    >= self.settings.config.compression.anti_thrash_max_ineffective
                {
                    self.rt.state.paused_until_ms = Some(
                        self.now_ms()
                            + self.settings.config.compression.anti_thrash_probe_secs * 1_000,
                    );
                }
            } else {
                self.rt.state.ineffective = 0;
            }
        }
    }

    /// After [`after_response`](Self::after_response): when the real usage the provider just
    /// reported puts the transcript at or over the threshold, compact now (trigger `usage`)
    /// instead of waiting for the next request. Returns `None` when no pass was needed.
    pub async fn check_usage(&mut self, t: &mut Transcript) -> Option<BatchReport> {
        if !self.settings.config.compression.enabled
            || t.calibration().is_none()
            || t.current_tokens() < self.settings.threshold
        {
            return None;
        }
        Some(self.run(t, Trigger::Usage, false, None).await)
    }

    /// The provider rejected a request as too large: compact (forced) and let the caller retry,
    /// at most `compression.max_attempts` times in a row (the count resets with the next
    /// [`after_response`](Self::after_response)). Returns `None` when attempts are used up.
    ///
    /// Unlike the automatic hooks it ignores the failure cooldown and the anti-thrash pause.
    /// When the store fails to commit the pass, the pass is applied to `t` all the same (the
    /// report says so: [`BatchReport::applied_unpersisted`], with the failure and its cause);
    /// the compressor then resynchronises the store with its next store write
    /// ([`flush`](Self::flush) or the next pass), and until that succeeds
    /// [`store_in_sync`](Self::store_in_sync) is `false`.
    pub async fn on_context_overflow(&mut self, t: &mut Transcript) -> Option<BatchReport> {
        if self.rt.overflow_attempts >= self.settings.config.compression.max_attempts {
            return None;
        }
        self.rt.overflow_attempts += 1;
        Some(self.run(t, Trigger::Overflow, true, None).await)
    }

    /// A user's explicit `/compress`, with an optional focus topic. Ignores cooldown and pauses.
    pub async fn compress(&mut self, t: &mut Transcript, focus: Option<String>) -> BatchReport {
        self.run(t, Trigger::Manual, true, focus).await
    }

    /// Runs one batch attempt.
    async fn run(
        &mut self,
        t: &mut Transcript,
        trigger: Trigger,
        force: bool,
        focus: Option<String>,
    ) -> BatchReport {
        let started = Instant::now();
        let mut report = BatchReport {
            trigger,
            outcome: Outcome::NotNeeded,
            failure: None,
            tokens_before: t.current_tokens(),
            tokens_after: t.current_tokens(),
            messages_before: t.len(),
            messages_after: t.len(),
            threshold_tokens: self.settings.threshold,
            earliest_changed_index: None,
            fallback_used: false,
            summarizer_skipped: false,
            demoted_tail_outputs: 0,
            fell_through: false,
            summary_tokens: 0,
            duration: Duration::ZERO,
            regions: None,
            failure_cause: None,
            applied_unpersisted: false,
            strict_alternation: self.settings.batch.strict_alternation,
        };
        let manual = matches!(trigger, Trigger::Manual);
        // The provider refused the request: waiting is no option, so an overflow pass ignores
        // the cooldown and the anti-thrash pause (`max_attempts` bounds it instead).
        let overflow = matches!(trigger, Trigger::Overflow);
        // A prompt at the window would be refused: skipping the pass only turns the next
        // request into that refusal, so an automatic pass over `NEAR_WINDOW_RATIO` of the
        // window (not a proactive prune) is made like an overflow pass, past the cooldown and
        // the pause.
        let over_window = !matches!(trigger, Trigger::Proactive)
            && t.current_tokens() > self.settings.window_tokens;
        let now = self.now_ms();
        let blocked = self.rt.state.cooldown_until_ms.is_some_and(|u| now < u)
            || self.rt.state.paused_until_ms.is_some_and(|u| now < u);
        if blocked && !manual && !overflow && !over_window {
            report.outcome = Outcome::Skipped;
            return self.finish(report, started, None);
        }
        if manual {
            self.rt.state.paused_until_ms = None;
            self.rt.state.ineffective = 0;
        }

        let req = BatchRequest {
            force: force || matches!(trigger, Trigger::Proactive),
            prune_only: matches!(trigger, Trigger::Proactive)
                || std::mem::take(&mut self.rt.prune_only_once),
            focus,
            compacted: self.rt.state.compacted,
        };
        let mut plan = batch::plan_batch(
            t,
            self.settings.threshold,
            &self.settings.batch,
            &req,
            self.counter.as_ref(),
        );
        report.demoted_tail_outputs = plan.demoted_tail_outputs;
        let summaries = match &plan.step {
            BatchStep::Nothing(reason) => {
                report.outcome = match reason {
                    NothingReason::IrreducibleFloor => Outcome::IrreducibleFloor,
                    _ => Outcome::NotNeeded,
                };
                return self.finish(report, started, Some(&plan));
            }
            BatchStep::PruneOnly { .. } => {
                let min = self
                    .settings
                    .config
                    .compression
                    .proactive_prune_min_reclaim_tokens;
                if matches!(trigger, Trigger::Proactive) && plan.prune.reclaimed_tokens < min {
                    // Not worth a cache break yet: wait until the transcript has grown by
                    // what is still missing.
                    self.rt.proactive_rearm_at =
                        Some(report.tokens_before + (min - plan.prune.reclaimed_tokens));
                    report.outcome = Outcome::NotNeeded;
                    return self.finish(report, started, Some(&plan));
                }
                report.outcome = Outcome::Pruned;
                Vec::new()
            }
            BatchStep::Summarize(jobs) => {
                report.fell_through = !plan.prune.edit.is_empty();
                report.outcome = Outcome::Summarized;
                match self.summarize_jobs(jobs, &mut report).await {
                    Ok(s) => s,
                    Err(class) => {
                        report.outcome = Outcome::Failed;
                        report.failure = Some(Failure::Summarizer(class));
                        self.record_failure();
                        return self.finish(report, started, Some(&plan));
                    }
                }
            }
        };
        let mut edit =
            match batch::assemble_taking_prune(t, &mut plan, &summaries, &self.settings.batch) {
                Ok(e) => e,
                Err(_) => {
                    report.outcome = Outcome::Failed;
                    report.failure = Some(Failure::Plan);
                    self.record_failure();
                    return self.finish(report, started, Some(&plan));
                }
            };
        let removed: u64 = edit
            .splices
            .iter()
            .map(|s| t.tokens_in(s.range.clone()))
            .sum();
        let added: u64 = edit
            .splices
            .iter()
            .flat_map(|s| s.replacement.iter())
            .map(|m| self.counter.count_message(m))
            .sum();
        if added >= removed {
            report.outcome = Outcome::NoGain;
            return self.finish(report, started, Some(&plan));
        }
        if let Err(e) = self.persist_edit(t, &mut edit).await {
            report.failure = Some(e.failure);
            report.failure_cause = Some(e.cause);
            if !overflow {
                report.outcome = Outcome::Failed;
                // A stale generation is cured by `reload`, not by waiting: no cooldown.
                if e.failure != Failure::StaleGeneration {
                    self.record_failure();
                }
                return self.finish(report, started, Some(&plan));
            }
            // An overflow pass goes on in memory: the agent cannot continue otherwise. The
            // store keeps the rows from before until the next store write resynchronises it.
            self.mark_unpersisted();
            #[cfg(feature = "store")]
            self.rt.unpersisted_removed.extend(
                edit.splices
                    .iter()
                    .flat_map(|s| t.messages()[s.range.clone()].iter())
                    .filter(|m| m.row_id().is_none())
                    .cloned(),
            );
            report.applied_unpersisted = true;
        }
        report.earliest_changed_index = edit.earliest_changed_index();
        self.remember_pass(t, &edit);
        if edit.apply_to(t, self.counter.as_ref()).is_err() {
            // Unreachable: assemble validated the edit against this transcript. Flagged all
            // the same: a store may already hold the pass the transcript lacks.
            report.outcome = Outcome::Failed;
            report.failure = Some(Failure::Plan);
            report.failure_cause = Some(APPLY_AFTER_COMMIT.into());
            tracing::warn!("{APPLY_AFTER_COMMIT}");
            return self.finish(report, started, Some(&plan));
        }
        self.rt.state.consecutive_failures = 0;
        self.rt.state.cooldown_until_ms = None;
        if matches!(report.outcome, Outcome::Summarized) {
            self.rt.state.compacted = true;
            // The next micro pass resumes from the batch marker.
            self.rt.micro.state.reset();
        }
        self.rt.epoch += 1;
        self.rt.awaiting_effect = true;
        report.tokens_after = t.current_tokens();
        // Proactive prune re-arms only after the transcript has grown again by what this pass
        // reclaimed.
        self.rt.proactive_rearm_at =
            Some(report.tokens_after + report.tokens_before.saturating_sub(report.tokens_after));
        report.messages_after = t.len();
        self.finish(report, started, Some(&plan))
    }

    async fn summarize_jobs(
        &self,
        jobs: &[SummaryJob],
        report: &mut BatchReport,
    ) -> Result<Vec<String>, compaction_llm::ErrorClass> {
        let mut out = Vec::with_capacity(jobs.len());
        for job in jobs {
            let kind = match (job.kind, &job.previous_summary) {
                (MarkerKind::Progress, _) => SummaryKind::TurnProgress,
                (_, Some(_)) => SummaryKind::BatchUpdate,
                (_, None) => SummaryKind::BatchFirst,
            };
            // The job's budget: `summary_max_tokens`, or less when the window leaves less room
            // (core sizes it so the pass lands under the threshold); a job that folds older
            // summaries up to `FOLD_BUDGET_FACTOR` times that, to keep what they held.
            let factor = match kind {
                SummaryKind::BatchUpdate => batch::FOLD_BUDGET_FACTOR as u32,
                _ => 1,
            };
            let budget = u32::try_from(job.budget_tokens).unwrap_or(u32::MAX).min(
                self.settings
                    .config
                    .compression
                    .summary_max_tokens
                    .max(1)
                    .saturating_mul(factor),
            );
            let mut req = SummaryRequest::new(kind, job.material.clone(), budget, self.today())
                .with_messages(job.messages.clone())
                .with_ledger_kept(job.ledger_max_tokens > 0 && !job.ledger.is_empty());
            req.previous_summary = job
                .previous_summary
                .as_deref()
                .map(|p| compaction_core::marker::without_recall_note(p).to_owned());
            req.focus = job.focus.clone();
            let (resp, route) = self.summarize_one(&req).await.map_err(|f| {
                report.summarizer_skipped |= f.skipped;
                f.class
            })?;
            if let crate::breaker::Route::Fallback { skipped } = route {
                report.fallback_used = true;
                report.summarizer_skipped |= skipped;
            }
            if resp.extractive
                && self.summarizer.name() != compaction_llm::extractive::EXTRACTIVE_MODEL
            {
                report.fallback_used = true;
            }
            if let Some(u) = resp.usage {
                report.summary_tokens += u.prompt_tokens + u.completion_tokens;
            }
            out.push(if self.has_store() {
                // What was compacted stays in the store and can be recalled.
                compaction_core::marker::with_recall_note(&resp.text)
            } else {
                resp.text
            });
        }
        Ok(out)
    }

    /// One summary under the policy every pass shares (`breaker`): the fallback rule, the
    /// call's time budget and the circuit breaker.
    pub(crate) async fn summarize_one(
        &self,
        req: &SummaryRequest,
    ) -> Result<(compaction_llm::SummaryResponse, crate::breaker::Route), crate::breaker::CallFailure>
    {
        crate::breaker::summarize(
            self.summarizer.as_ref(),
            self.fallback.as_deref(),
            &self.rt.breaker,
            &self.settings.call,
            self.now_ms(),
            req,
        )
        .await
    }

    /// Persists what the agent appended to `t` since the last flush and stamps the new row
    /// ids on `t` itself, so the next flush skips them: idempotent, and the cost is what was
    /// appended, not the transcript. Returns how many rows were written (0 without a store).
    ///
    /// Call it whenever the agent wants its messages durable (after each turn, or after each
    /// append). The compressor also flushes before each commit, so a pass never replaces a
    /// message the store has not seen. The agent appends at the end, so "not persisted yet" is
    /// the suffix after the last stamped message; a message inserted elsewhere without a row
    /// id makes the next commit fail cleanly (`MissingRowId`).
    ///
    /// After an overflow pass that the store could not commit, the first flush resynchronises
    /// the store instead: in one `archive_and_compact` it archives the active rows the
    /// transcript no longer holds and inserts the messages the store has not seen, at their
    /// positions. That fails (and the store stays as it was) when another writer changed the
    /// session meanwhile.
    ///
    /// Every write names the generation the transcript reflects: when another writer compacted
    /// or restored the session since (or the compressor was built with an old generation),
    /// the flush is refused with
    /// [`StoreError::StaleGeneration`](compaction_store::StoreError::StaleGeneration) and
    /// writes nothing. Carrying on would never store anything again: call
    /// [`reload`](Self::reload), which adopts the store's transcript and writes what the agent
    /// appended, then continue. (A flush with nothing to write does not contact the store; the
    /// next one that writes reports the stale generation.)
    ///
    /// Do not append copies of the transcript's messages to the store yourself: the copies
    /// get the row ids, the transcript does not, and the next commit writes them again.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use hermes_compaction::compressor::Persistence;
    /// use hermes_compaction::core::{Estimator, Message};
    /// use hermes_compaction::llm::ExtractiveSummarizer;
    /// use hermes_compaction::store::{Store, TranscriptStore};
    /// use hermes_compaction::{Compressor, Config};
    ///
    /// let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
    /// store.create_session("s1").await.unwrap();
    /// let persistence = Persistence {
    ///     store: store.clone(),
    ///     session: "s1".into(),
    ///     generation: store.generation("s1").await.unwrap(),
    /// };
    /// let mut c = Compressor::new(
    ///     Config::default(),
    ///     Arc::new(ExtractiveSummarizer::default()),
    ///     Arc::new(Estimator::default()),
    ///     "s1",
    /// )
    /// .with_store(persistence);
    /// let mut t = c.transcript(vec![Message::system("be brief")]);
    /// t.push(Message::user("hi"), c.counter());
    /// assert_eq!(c.flush(&mut t).await.unwrap(), 2); // both written, ids stamped on `t`
    /// assert_eq!(c.flush(&mut t).await.unwrap(), 0); // idempotent
    /// t.push(Message::assistant("hello"), c.counter());
    /// assert_eq!(c.flush(&mut t).await.unwrap(), 1);
    /// assert_eq!(store.load_active("s1").await.unwrap().len(), t.len());
    /// # }
    /// ```
    #[cfg(feature = "store")]
    pub async fn flush(
        &mut self,
        t: &mut Transcript,
    ) -> Result<usize, compaction_store::StoreError> {
        let Some(p) = &mut self.persistence else {
            return Ok(0);
        };
        let result = if self.rt.resync_pending {
            crate::persist::resync(p, t).await
        } else {
            crate::persist::append_unstamped(p, t).await
        };
        match &result {
            Ok(_) => {
                // The resync wrote the pass's summary in their place: they are no longer
                // "unseen" for a later reload (see `reload`).
                self.rt.unpersisted_removed.clear();
                self.rt.resync_pending = false;
            }
            Err(e) if self.rt.resync_pending => tracing::warn!(
                session = %self.session_id,
                "compaction store resync failed (the store keeps the rows from before the \
                 last overflow pass): {e}"
            ),
            Err(e) => {
                tracing::warn!(session = %self.session_id, "compaction store flush failed: {e}")
            }
        }
        result
    }

    /// Recovers from a stale generation: another writer compacted or restored the session
    /// since the transcript was loaded (or the compressor was given an old generation, e.g.
    /// resuming from a snapshot), so [`flush`](Self::flush) and every commit are refused with
    /// [`StoreError::StaleGeneration`](compaction_store::StoreError::StaleGeneration) (a pass
    /// reports [`Failure::StaleGeneration`]).
    ///
    /// In one snapshot it reads the session's active rows and generation, appends after them
    /// what `t` holds that the store never saw (the messages the agent appended since its last
    /// successful flush, and the ones an overflow pass applied without its commit removed),
    /// then replaces `t` with the result and adopts the generation. State that described the
    /// old transcript is reset: usage tickets from before (the next
    /// [`after_response`](Self::after_response) with one is ignored), the micro state, the
    /// proactive-prune re-arm point and a pending resync. The [`ThrashState`] is kept (the
    /// session counts as compacted when the reloaded rows hold a summary). Returns how many
    /// messages it appended. On error (the store is unreachable, or moved on again between
    /// the read and the append) nothing changes and it can be called again. Without a store
    /// it does nothing.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use hermes_compaction::compressor::Persistence;
    /// use hermes_compaction::core::{Edit, Estimator, Message};
    /// use hermes_compaction::llm::ExtractiveSummarizer;
    /// use hermes_compaction::store::{Commit, Store, StoreError, TranscriptStore};
    /// use hermes_compaction::{Compressor, Config};
    ///
    /// let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
    /// store.create_session("s1").await.unwrap();
    /// let (persistence, messages) = Persistence::load(store.clone(), "s1").await.unwrap();
    /// let mut c = Compressor::new(
    ///     Config::default(),
    ///     Arc::new(ExtractiveSummarizer::default()),
    ///     Arc::new(Estimator::default()),
    ///     "s1",
    /// )
    /// .with_store(persistence);
    /// let mut t = c.transcript(messages);
    /// t.push(Message::user("one"), c.counter());
    /// t.push(Message::assistant("two"), c.counter());
    /// c.flush(&mut t).await.unwrap();
    ///
    /// // Another process compacts the session: it drops the first message.
    /// let (rows, generation) = store.load_active_with_generation("s1").await.unwrap();
    /// let mut commit = Commit::from_edit(generation, &Edit::single(0..1, vec![]), &rows).unwrap();
    /// store.archive_and_compact("s1", &mut commit).await.unwrap();
    ///
    /// t.push(Message::user("three"), c.counter());
    /// match c.flush(&mut t).await {
    ///     // Refused, nothing written: reload (it writes "three" too), then go on.
    ///     Err(StoreError::StaleGeneration { .. }) => assert_eq!(c.reload(&mut t).await.unwrap(), 1),
    ///     other => panic!("{other:?}"),
    /// }
    /// assert_eq!(t.len(), 2); // "two" and "three"
    /// assert_eq!(store.load_active("s1").await.unwrap().len(), 2);
    /// assert_eq!(c.flush(&mut t).await.unwrap(), 0);
    /// # }
    /// ```
    #[cfg(feature = "store")]
    pub async fn reload(
        &mut self,
        t: &mut Transcript,
    ) -> Result<usize, compaction_store::StoreError> {
        let Some(p) = &mut self.persistence else {
            return Ok(0);
        };
        let (mut messages, generation) = p.store.load_active_with_generation(&p.session).await?;
        let first_unstamped = t
            .messages()
            .iter()
            .rposition(|m| m.row_id().is_some())
            .map_or(0, |i| i + 1);
        // What the store never saw, in the order the agent had it.
        let mut fresh: Vec<Message> = self.rt.unpersisted_removed.clone();
        fresh.extend(t.messages()[first_unstamped..].iter().cloned());
        let written = fresh.len();
        if !fresh.is_empty() {
            p.store
                .append_at(&p.session, generation, &mut fresh)
                .await
                .inspect_err(|e| {
                    tracing::warn!(session = %self.session_id, "compaction store reload failed: {e}")
                })?;
        }
        p.generation = generation;
        messages.append(&mut fresh);
        self.rt.unpersisted_removed.clear();
        self.rt.resync_pending = false;
        self.rt.micro.state.reset();
        self.rt.proactive_rearm_at = None;
        self.rt.awaiting_effect = false;
        self.rt.epoch += 1;
        *t = self.transcript(messages);
        Ok(written)
    }

    /// Writes the [`ThrashState`] (cooldowns, the anti-thrash pause, the compacted flag) into
    /// the session's [`CompactionState`](compaction_store::CompactionState), keeping what
    /// else its `extra` holds (see [`ThrashState::write_to`]), so
    /// [`load_state`](Self::load_state) restores it after a restart. Call it when the agent
    /// makes its turn durable, next to [`flush`](Self::flush). Two store calls (a read, then a
    /// write); a no-op without a store.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use hermes_compaction::compressor::{Persistence, ThrashState};
    /// use hermes_compaction::core::Estimator;
    /// use hermes_compaction::llm::ExtractiveSummarizer;
    /// use hermes_compaction::store::{Store, TranscriptStore};
    /// use hermes_compaction::{Compressor, Config};
    ///
    /// let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
    /// store.create_session("s1").await.unwrap();
    /// let new = |p: Persistence| {
    ///     Compressor::new(
    ///         Config::default(),
    ///         Arc::new(ExtractiveSummarizer::default()),
    ///         Arc::new(Estimator::default()),
    ///         "s1",
    ///     )
    ///     .with_store(p)
    /// };
    /// let paused = ThrashState { ineffective: 2, paused_until_ms: Some(1_700_000_000_000), ..Default::default() };
    /// let (p, _) = Persistence::load(store.clone(), "s1").await.unwrap();
    /// new(p).with_state(paused.clone()).save_state().await.unwrap();
    /// // After a restart:
    /// let (p, _) = Persistence::load(store.clone(), "s1").await.unwrap();
    /// let mut c = new(p);
    /// assert_eq!(c.load_state().await.unwrap(), &paused);
    /// # }
    /// ```
    #[cfg(feature = "store")]
    pub async fn save_state(&self) -> Result<(), compaction_store::StoreError> {
        let Some(p) = &self.persistence else {
            return Ok(());
        };
        let mut stored = p.store.compaction_state(&p.session).await?;
        self.rt.state.write_to(&mut stored);
        p.store.set_compaction_state(&p.session, &stored).await
    }

    /// Replaces the [`ThrashState`] with the one the session's
    /// [`CompactionState`](compaction_store::CompactionState) holds (written by
    /// [`save_state`](Self::save_state); read with [`ThrashState::read_from`]), keeping the
    /// session compacted when the transcript already showed it was. A no-op without a store.
    #[cfg(feature = "store")]
    pub async fn load_state(&mut self) -> Result<&ThrashState, compaction_store::StoreError> {
        if let Some(p) = &self.persistence {
            let stored = p.store.compaction_state(&p.session).await?;
            let compacted = self.rt.state.compacted;
            self.rt.state = ThrashState::read_from(&stored);
            self.rt.state.compacted |= compacted;
        }
        Ok(&self.rt.state)
    }

    /// The session generation the transcript reflects in the store: the one the compressor
    /// was given, advanced by each pass it committed; `None` without a store. Read it instead
    /// of asking the store after a run: it needs no connection, so a store that went away
    /// after the last commit cannot hide what was committed.
    #[cfg(feature = "store")]
    pub fn store_generation(&self) -> Option<u64> {
        self.persistence.as_ref().map(|p| p.generation)
    }

    /// Whether the store's active rows are known to match what the transcript has persisted:
    /// `false` after an overflow pass was applied without its commit, until a store write
    /// resynchronised them (always `true` without a store).
    pub fn store_in_sync(&self) -> bool {
        #[cfg(feature = "store")]
        return !self.rt.resync_pending;
        #[cfg(not(feature = "store"))]
        return true;
    }

    fn mark_unpersisted(&mut self) {
        #[cfg(feature = "store")]
        {
            self.rt.resync_pending = self.persistence.is_some();
        }
    }

    /// Commits `edit` with `archive_and_compact` (flushing unpersisted messages first) and
    /// stamps its new rows; a no-op without a store. A failure is logged (without content)
    /// and returned with its cause.
    #[cfg(feature = "store")]
    pub(crate) async fn persist_edit(
        &mut self,
        t: &mut Transcript,
        edit: &mut compaction_core::Edit,
    ) -> Result<(), PersistError> {
        self.persist_edit_as(t, edit, None).await
    }

    /// [`persist_edit`](Self::persist_edit) with the history label given rather than read
    /// from the edit.
    #[cfg(feature = "store")]
    pub(crate) async fn persist_edit_as(
        &mut self,
        t: &mut Transcript,
        edit: &mut compaction_core::Edit,
        label: Option<compaction_store::PassLabel>,
    ) -> Result<(), PersistError> {
        use compaction_store::{Commit, StoreError, stamp_edit};
        if self.persistence.is_none() {
            return Ok(());
        }
        // Flush what the agent has not persisted yet (or resync), so every replaced row has
        // an id.
        self.flush(t).await.map_err(PersistError::store)?;
        let Some(p) = &mut self.persistence else {
            return Ok(());
        };
        let label = label.unwrap_or_else(|| pass_label(t, edit, self.counter.as_ref()));
        let committed = async {
            let mut commit = Commit::from_edit(p.generation, edit, t.messages())?.with_label(label);
            let ids = p.store.archive_and_compact(&p.session, &mut commit).await?;
            p.generation += 1;
            if !stamp_edit(edit, &ids) {
                return Err(StoreError::OutOfRange {
                    what: crate::persist::ROW_COUNT,
                });
            }
            Ok(())
        }
        .await;
        committed.map_err(|e| {
            tracing::warn!(session = %self.session_id, "compaction store commit failed: {e}");
            PersistError::store(e)
        })
    }

    #[cfg(not(feature = "store"))]
    pub(crate) async fn persist_edit(
        &mut self,
        _t: &mut Transcript,
        _edit: &mut compaction_core::Edit,
    ) -> Result<(), PersistError> {
        Ok(())
    }

    fn record_failure(&mut self) {
        self.rt.state.consecutive_failures += 1;
        let c = &self.settings.config.compression;
        let factor = 1u64 << (self.rt.state.consecutive_failures - 1).min(16);
        let secs =
            (c.failure_cooldown_secs.saturating_mul(factor)).min(c.failure_cooldown_max_secs);
        self.rt.state.cooldown_until_ms = Some(self.now_ms() + secs * 1_000);
    }

    fn proactive_due(&self, t: &Transcript) -> bool {
        let c = &self.settings.config.compression;
        let now = t.current_tokens();
        c.proactive_prune_tokens > 0
            && now >= c.proactive_prune_tokens
            && self.rt.proactive_rearm_at.is_none_or(|at| now >= at)
    }

    fn finish(
        &mut self,
        mut report: BatchReport,
        started: Instant,
        plan: Option<&BatchPlan>,
    ) -> BatchReport {
        report.duration = started.elapsed();
        report.regions = plan.map(|p| p.regions.clone());
        #[cfg(feature = "telemetry")]
        crate::events::emit_batch(
            &self.session_id,
            &self.settings.config,
            &report,
            plan,
            self.summarizer.name(),
        );
        #[cfg(not(feature = "telemetry"))]
        let _ = plan;
        report
    }
}

/// Micro state the compressor keeps between passes.
#[derive(Clone, Debug, Default)]
pub(crate) struct MicroRuntime {
    pub(crate) state: compaction_core::micro::MicroState,
    /// What earlier plans found, resumed while the transcript only grows (content-free).
    pub(crate) memo: compaction_core::micro::PlanMemo,
    pub(crate) turns: u64,
    pub(crate) rounds: u64,
    pub(crate) passes_total: u64,
    pub(crate) tokens_saved_total: i64,
}

/// The cause a report gives when an edit the store may already have committed could not be
/// applied to the transcript (unreachable: assembly validates the edit first).
pub(crate) const APPLY_AFTER_COMMIT: &str = "the pass could not be applied to the transcript after it was committed: the store may be ahead of the transcript (call `reload`)";

/// Core micro configuration from the facade configuration.
pub fn micro_config(config: &Config) -> compaction_core::micro::MicroConfig {
    let c = &config.compression;
    compaction_core::micro::MicroConfig {
        regions: config.regions(),
        material: Default::default(),
        defrag_threshold_tokens: c.micro_compact_defrag_threshold_tokens,
        max_consecutive_failures: c.micro_compact_max_consecutive_failures,
        min_reclaim_tokens: c.micro_compact_min_reclaim_tokens.fixed_tokens(),
        strict_alternation: c.strict_alternation,
        defrag_max_ratio: compaction_core::defaults::MICRO_DEFRAG_MAX_RATIO,
        ledger_max_tokens: c.ledger_max_tokens,
    }
}

/// Core batch configuration from the facade configuration.
pub fn batch_config(config: &Config) -> BatchConfig {
    let c = &config.compression;
    BatchConfig {
        regions: config.regions(),
        prune: PruneConfig {
            tool_output_min_tokens: c.prune_tool_output_min_tokens,
            argument_max_chars: c.prune_argument_max_chars,
            protected_tools: c.protected_tools.clone(),
            keep_cited: c.prune_keep_cited,
            names_max_chars: c.prune_names_max_chars,
        },
        material: MaterialConfig::default(),
        prune_minimum_tokens: c.prune_minimum_tokens,
        prune_runway_ratio: match config.cache_profile().filter(|_| c.cache_aware) {
            // Prune-only must buy at least the runway the provider's cache economics justify.
            Some(p) => c
                .prune_runway_ratio
                .max(compaction_core::cache::suggested_prune_runway_ratio(&p)),
            None => c.prune_runway_ratio,
        },
        summary_max_tokens: u64::from(c.summary_max_tokens),
        strict_alternation: c.strict_alternation,
        ledger_max_tokens: c.ledger_max_tokens,
        keep_recent_images: BatchConfig::default().keep_recent_images,
    }
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock. The compressor itself reads the
/// date from its [`Clock`].
pub fn today() -> String {
    SystemClock.today()
}

/// What the store's history records for a pass: its kind, read from the markers it writes (a
/// batch marker: batch; a micro or progress marker: micro; none: prune), and the estimated
/// tokens before and after.
#[cfg(feature = "store")]
fn pass_label(
    t: &Transcript,
    edit: &compaction_core::Edit,
    counter: &dyn TokenCounter,
) -> compaction_store::PassLabel {
    use compaction_store::{GenerationKind, PassLabel};
    let markers: Vec<MarkerKind> = edit
        .splices
        .iter()
        .flat_map(|s| s.replacement.iter())
        .filter_map(Message::marker_kind)
        .collect();
    let kind = if markers.contains(&MarkerKind::Batch) {
        GenerationKind::Batch
    } else if markers.is_empty() {
        GenerationKind::Prune
    } else {
        GenerationKind::Micro
    };
    let before = t.current_tokens();
    let removed: u64 = edit
        .splices
        .iter()
        .map(|s| t.tokens_in(s.range.clone()))
        .sum();
    let added: u64 = edit
        .splices
        .iter()
        .flat_map(|s| s.replacement.iter())
        .map(|m| counter.count_message(m))
        .sum();
    PassLabel::new(kind).with_tokens(before, (before + added).saturating_sub(removed))
}
