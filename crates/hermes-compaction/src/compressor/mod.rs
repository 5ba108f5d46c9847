//! The compressor an agent framework calls: batch compaction with cache-aware prune-first,
//! anti-thrash, failure cooldown, persistence and telemetry.
//!
//! The hooks match the moments an agent has:
//!
//! | moment | hook |
//! |---|---|
//! | a tool result or a user message is about to be appended | [`Compressor::before_append`] |
//! | before each model request (and before each call inside a tool loop) | [`Compressor::before_request`] |
//! | after a response that carried usage | [`Compressor::after_response`] |
//! | the provider said the context window was exceeded | [`Compressor::on_context_overflow`] |
//! | after a tool round inside a turn | [`Compressor::after_tool_round`] |
//! | at the end of a turn | [`Compressor::finalize_turn`] |
//! | the user typed `/compress`, or a maintenance job runs | [`Compressor::one_shot`] |
//!
//! Every pass is planned by `compaction_core::batch` as pure data, summarized, committed to the
//! store (when one is configured) and only then applied to the transcript. Any failure leaves
//! the transcript byte-identical and is reported in the [`BatchReport`] and in telemetry.

use std::sync::Arc;
use std::time::Instant;

use compaction_core::batch::{
    self, BatchConfig, BatchPlan, BatchRequest, BatchStep, NothingReason,
};
use compaction_core::material::MaterialConfig;
use compaction_core::prune::PruneConfig;
use compaction_core::{Message, TokenCounter, Transcript};
use compaction_llm::Summarizer;

use crate::clock::{Clock, SystemClock};
use crate::config::Config;
#[cfg(feature = "store")]
pub use crate::persist::Persistence;
use crate::report::{BatchDetail, BatchReport, Outcome, Resume, Trigger};
#[cfg(feature = "store")]
pub use crate::thrash::THRASH_STATE_KEY;
pub use crate::thrash::ThrashState;

mod builder;
pub(crate) mod pass;
mod prepare;
mod runtime;
mod status;
mod store;

pub use builder::{CompressorBuilder, OneShot};
pub use status::Status;

pub(crate) use runtime::{Requested, Runtime, SentRequest};

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

/// The provider's usage for one response, handed to [`Compressor::after_response`].
///
/// ```
/// use hermes_compaction::compressor::Usage;
///
/// let u = Usage::prompt(41_000);
/// assert!(u.compact_now);
/// assert!(!u.record_only().compact_now);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// The prompt tokens the provider counted for the request.
    pub prompt_tokens: u64,
    /// Compact at once when the count is at or over the threshold (trigger
    /// [`Trigger::Usage`]); otherwise only record it, and the next
    /// [`before_request`](Compressor::before_request) compacts.
    pub compact_now: bool,
}

impl Usage {
    /// `prompt_tokens` as the provider counted them, compacting at once when over.
    pub fn prompt(prompt_tokens: u64) -> Usage {
        Usage {
            prompt_tokens,
            compact_now: true,
        }
    }

    /// The same count, recorded only: no pass runs before the next request.
    pub fn record_only(self) -> Usage {
        Usage {
            compact_now: false,
            ..self
        }
    }
}

/// The batch compressor for one session.
///
/// Each hook where an agent loop calls it (the `agent_loop` example runs a whole session):
///
/// ```
/// use std::sync::Arc;
/// use hermes_compaction::core::{Estimator, Message, ToolCall};
/// use hermes_compaction::llm::ExtractiveSummarizer;
/// use hermes_compaction::{Compressor, Config, OneShot, Usage};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let mut config = Config::default();
/// config.model.context_length = 8_000;
/// let mut c = Compressor::builder(config)
///     .summarizer(Arc::new(ExtractiveSummarizer::default()))
///     .counter(Arc::new(Estimator::default()))
///     .session("session-1")
///     .build()
///     .unwrap();
/// let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
/// for turn in 0..30 {
///     t.push(Message::user(format!("request {turn}: fix module {turn}")), c.status().counter);
///     // Before each model request: compacts first when over the threshold.
///     let (ticket, _batch) = c.before_request(&mut t).await;
///     let prompt_tokens = t.current_tokens(); // what the provider reports
///     // After each response: calibrate with the provider's count, compact now if over.
///     c.after_response(&mut t, ticket, Usage::prompt(prompt_tokens)).await;
///     let id = format!("call_{turn}");
///     t.push(
///         Message::assistant_tool_calls("", vec![ToolCall::function(&id, "shell", "{}")]),
///         c.status().counter,
///     );
///     t.push(Message::tool_result(&id, "ok\n".repeat(400)), c.status().counter);
///     // After each tool round inside a turn: long turns are compacted as they go.
///     c.after_tool_round(&mut t).await;
///     t.push(Message::assistant(format!("module {turn} fixed")), c.status().counter);
///     // After a turn that finished normally (micro-compaction, when enabled).
///     c.finalize_turn(&mut t).await;
/// }
/// assert!(t.current_tokens() <= c.status().threshold_tokens);
/// // The provider refused a request as too long: compact harder, then retry (bounded).
/// let report = c.on_context_overflow(&mut t).await;
/// assert!(report.is_some());
/// // A user's `/compress`, with a focus topic.
/// let report = c.one_shot(&mut t, OneShot::Batch { focus: Some("module 29".into()) }).await;
/// let _outcome = report.outcome; // what the pass did, for your logs
/// # });
/// ```
pub struct Compressor {
    /// What the configuration says, read once at construction and never changed.
    settings: Settings,
    counter: Arc<dyn TokenCounter>,
    summarizer: Arc<dyn Summarizer>,
    /// `summarizer` inside the call policy's layers (`breaker::compose`), built once.
    calls: Arc<dyn Summarizer>,
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
    /// `batch` as a proactive prune uses it: only what is too big to carry
    /// (`proactive_prune_output_min_tokens`).
    proactive_batch: BatchConfig,
    micro: compaction_core::micro::MicroConfig,
    micro_every_n_turns: u64,
    threshold: u64,
    /// [`NEAR_WINDOW_RATIO`] of the effective window (context length minus the output
    /// reservation): a prompt over it may be refused.
    window_tokens: u64,
    /// How every pass calls the summarizer (budget, circuit breaker).
    call: crate::breaker::CallPolicy,
    /// Batch summary requests reuse the agent's last request (`Config::warm_cache_on`).
    warm_cache: bool,
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
    /// The clock's current time in unix milliseconds.
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_unix_ms()
    }

    /// The clock's date, for summary prompts.
    pub(crate) fn today(&self) -> String {
        self.clock.today()
    }

    /// The current anti-thrash and cooldown state.
    pub(crate) fn state(&self) -> &ThrashState {
        &self.rt.state
    }

    /// The threshold in tokens.
    pub(crate) fn threshold_tokens(&self) -> u64 {
        self.settings.threshold
    }

    /// The token counter.
    pub(crate) fn counter(&self) -> &dyn TokenCounter {
        self.counter.as_ref()
    }

    /// The token counter, shared (for a pass that holds it while the compressor changes).
    pub(crate) fn counter_arc(&self) -> Arc<dyn TokenCounter> {
        self.counter.clone()
    }

    /// The configuration (read at construction; it does not change).
    pub(crate) fn config(&self) -> &Config {
        &self.settings.config
    }

    /// The core batch configuration derived from it.
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

    /// The time-to-live rule (`compression.cold_cache_rewrites`): whether the provider's cache
    /// has gone cold, so that a rewrite now costs nothing extra. True when the gap since the
    /// last request (on the compressor's clock) has reached the cache profile's time-to-live (an unknown provider's is assumed, as for the micro gate); false
    /// with `cold_cache_rewrites` or `cache_aware` off or `cache_profile = "none"`.
    pub(crate) fn cache_cold(&self) -> bool {
        let c = &self.config().compression;
        if !c.cold_cache_rewrites || !c.cache_aware || c.cache_profile == "none" {
            return false;
        }
        let profile = self
            .config()
            .cache_profile()
            .unwrap_or_else(crate::config::assumed_profile);
        // Before the first request nothing says how old the provider's cache is (a resumed
        // session may have sent this prefix a minute ago): warm.
        let secs = self.secs_since_last_request();
        secs.is_some() && crate::cache::rewrite_is_free(&profile, secs)
    }

    /// Whether passes are persisted (summaries then say that detail can be recalled).
    pub(crate) fn has_store(&self) -> bool {
        #[cfg(feature = "store")]
        return self.persistence.is_some();
        #[cfg(not(feature = "store"))]
        return false;
    }

    /// The agent's last request as the prefix of a warm-cache summary request: the first
    /// messages of `t` that [`before_request`](Self::before_request) last saw sent, when
    /// warm-cache requests are on and `t` has only grown since (same lineage).
    pub(crate) fn warm_prefix(&self, t: &Transcript) -> Option<Arc<[Message]>> {
        let sent = self.rt.last_sent.filter(|_| self.settings.warm_cache)?;
        (sent.lineage == t.lineage() && sent.len <= t.len() && sent.len > 0)
            .then(|| Arc::from(&t.messages()[..sent.len]))
    }

    /// The summarizer.
    pub(crate) fn summarizer(&self) -> &dyn Summarizer {
        self.summarizer.as_ref()
    }

    /// The session id used in telemetry.
    pub(crate) fn session_id(&self) -> &str {
        &self.session_id
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
    /// [`after_response`](Self::after_response).
    ///
    /// With `compression.prepare_at`, a trigger met without a usable summary prepared ahead
    /// (none, stale, empty, or one that applied would leave the transcript over the
    /// threshold) may be put off once to the next request, when the prompt fits the window:
    /// the hook starts the pass's candidate and returns no report, as when no pass was due
    /// ([`Status::prepared_totals`](crate::Status::prepared_totals) and
    /// [`Status::last_prepared`](crate::Status::last_prepared) count a candidate discarded
    /// on the way).
    pub async fn before_request(
        &mut self,
        t: &mut Transcript,
    ) -> (RequestTicket, Option<BatchReport>) {
        let mut report = None;
        let enabled = self.settings.config.compression.enabled;
        if t.current_tokens() < self.settings.threshold {
            // Under the threshold the trigger that was put off is over: the next may be too.
            self.rt.prepared_deferred = false;
        }
        if let Some(requested) = self.rt.requested.take().filter(|_| enabled) {
            // The model asked (compact_context): forced, but it waits out cooldowns and pauses
            // like an automatic pass.
            report = Some(self.run(t, Trigger::Requested, requested.focus).await);
        } else if self.automatic_allowed(t) && t.current_tokens() >= self.settings.threshold {
            // With `prepare_at`, a trigger met without a usable candidate starts one and lets
            // this request go as it is, when it fits the window: the pass comes at the next
            // request, from the candidate. A waiting candidate found insufficient inside the
            // pass is put off the same way (`run` then reports no pass).
            if !self.defer_to_prepared(t) {
                report = self.run_automatic(t, Trigger::BeforeRequest).await;
            }
        } else if self.automatic_allowed(t) && self.proactive_due(t) && !self.prepared_current(t) {
            // A prune-only pass would change the transcript under a summary prepared ahead
            // and discard it: while one waits, the trigger's pass takes the outputs with it.
            report = Some(self.run(t, Trigger::Proactive, None).await);
        }
        if report.is_none() {
            // Past `prepare_at` of the threshold: start the next pass's summary off the path.
            self.maybe_prepare(t);
        }
        self.rt.last_request_ms = Some(self.now_ms());
        // What the agent sends now: its first `len` messages, known by the transcript's
        // lineage (two integers, no copy; a pass copies them once if it reuses them).
        self.rt.last_sent = Some(SentRequest {
            lineage: t.lineage(),
            len: t.len(),
        });
        (
            RequestTicket {
                epoch: self.rt.epoch,
                messages: t.len(),
            },
            report,
        )
    }

    /// After a response: records the provider's usage for the request the ticket describes
    /// and, when [`Usage::compact_now`] is set (the default of [`Usage::prompt`]) and the real
    /// count puts the transcript at or over the threshold, compacts at once (trigger
    /// [`Trigger::Usage`]) instead of waiting for the next request. Returns the report of
    /// that pass, `None` when none ran.
    ///
    /// Usage from before the last compaction is ignored (the ticket is stale). The first real
    /// usage after a compaction that is still over the threshold counts as an ineffective
    /// compaction; `anti_thrash_max_ineffective` in a row pause automatic compaction.
    pub async fn after_response(
        &mut self,
        t: &mut Transcript,
        ticket: RequestTicket,
        usage: Usage,
    ) -> Option<BatchReport> {
        self.record_usage(t, ticket, usage.prompt_tokens);
        if !usage.compact_now {
            return None;
        }
        if !self.automatic_allowed(t)
            || t.calibration().is_none()
            || t.current_tokens() < self.settings.threshold
        {
            self.maybe_prepare(t);
            return None;
        }
        if self.defer_to_prepared(t) {
            // The next request's pass applies the candidate (see `before_request`).
            return None;
        }
        self.run_automatic(t, Trigger::Usage).await
    }

    /// An automatic pass (`trigger`: [`Trigger::BeforeRequest`] or [`Trigger::Usage`]): its
    /// report, or `None` when the pass found the waiting candidate insufficient and put the
    /// trigger off to the next request with a candidate of its own (no pass ran; the report
    /// still went to telemetry, as [`Outcome::Skipped`] with the discarded candidate).
    async fn run_automatic(&mut self, t: &mut Transcript, trigger: Trigger) -> Option<BatchReport> {
        let report = self.run(t, trigger, None).await;
        // `run` clears the flag as it starts; set again, the pass was put off.
        (!self.rt.prepared_deferred).then_some(report)
    }

    /// The bookkeeping half of [`after_response`](Self::after_response): calibration, the
    /// overflow count, the anti-thrash measure.
    fn record_usage(&mut self, t: &mut Transcript, ticket: RequestTicket, prompt_tokens: u64) {
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

    /// The provider rejected a request as too large: compact (forced) and let the caller retry,
    /// at most `compression.max_attempts` times in a row (the count resets with the next
    /// [`after_response`](Self::after_response)). Returns `None` when attempts are used up.
    ///
    /// Unlike the automatic hooks it ignores the failure cooldown and the anti-thrash pause.
    /// When the store fails to commit the pass, the pass is applied to `t` all the same (the
    /// report says so: [`BatchDetail::applied_unpersisted`](crate::report::BatchDetail::applied_unpersisted), with the failure and its cause);
    /// the compressor then resynchronises the store with its next store write
    /// ([`flush`](Self::flush) or the next pass), and until that succeeds
    /// [`Status::in_sync`](crate::Status::in_sync) is `false`.
    pub async fn on_context_overflow(&mut self, t: &mut Transcript) -> Option<BatchReport> {
        if self.rt.overflow_attempts >= self.settings.config.compression.max_attempts {
            return None;
        }
        self.rt.overflow_attempts += 1;
        Some(self.run(t, Trigger::Overflow, None).await)
    }

    /// A user's explicit `/compress` (or a one-shot batch or prune run), with an optional
    /// focus topic. Ignores cooldown and pauses.
    pub(crate) async fn compress(
        &mut self,
        t: &mut Transcript,
        focus: Option<String>,
    ) -> BatchReport {
        self.run(t, Trigger::Manual, focus).await
    }

    /// Runs one batch attempt: the checks and the plan, then the pass runner (`pass`).
    async fn run(
        &mut self,
        t: &mut Transcript,
        trigger: Trigger,
        focus: Option<String>,
    ) -> BatchReport {
        let started = Instant::now();
        // Whether this trigger was put off to this request already: once per trigger.
        let deferred = std::mem::take(&mut self.rt.prepared_deferred);
        let mut report = BatchReport::start(
            Outcome::NotNeeded,
            t,
            self.settings.threshold,
            BatchDetail::new(trigger),
        );
        if report.in_turn.as_ref().is_some_and(|r| !r.results_complete) {
            // Never between a tool call and its result: the host still owes results.
            report.outcome = Outcome::Skipped;
            return self.finish(report, started, None);
        }
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
            force: trigger.forces(),
            prune_only: matches!(trigger, Trigger::Proactive)
                || std::mem::take(&mut self.rt.prune_only_once),
            focus,
            compacted: self.rt.state.compacted,
        };
        // A summary prepared ahead for a transcript only appended to since is the pass the
        // plan would make: offered first, it spares the plan too.
        if req.focus.is_none() && !req.prune_only && self.prepared_current(t) {
            if let Some(p) = self.try_prepared(t, &req, overflow, &mut report).await {
                return self.finish(report, started, Some(&p));
            }
            if self.defer_insufficient(t, trigger, deferred, &mut report) {
                return self.finish(report, started, None);
            }
        }
        let cfg = if matches!(trigger, Trigger::Proactive) {
            &self.settings.proactive_batch
        } else {
            &self.settings.batch
        };
        let mut plan =
            batch::plan_batch(t, self.settings.threshold, cfg, &req, self.counter.as_ref());
        report.stats.demoted_tail_outputs = plan.demoted_tail_outputs;
        let planned = match &plan.step {
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
                if matches!(trigger, Trigger::Proactive)
                    && plan.prune.reclaimed_tokens < min
                    && !self.proactive_waived(t)
                {
                    // Not worth a cache break yet: wait until the transcript has grown by
                    // what is still missing. Once the cache has gone cold the break is free,
                    // so whatever the prune reclaims is taken.
                    self.rt.proactive_rearm_at =
                        Some(report.stats.tokens_before + (min - plan.prune.reclaimed_tokens));
                    report.outcome = Outcome::NotNeeded;
                    return self.finish(report, started, Some(&plan));
                }
                Outcome::Pruned
            }
            BatchStep::Summarize(_) => {
                report.detail.fell_through = !plan.prune.edit.is_empty();
                Outcome::Summarized
            }
        };
        if planned == Outcome::Summarized && self.has_prepared() {
            if let Some(p) = self.try_prepared(t, &req, overflow, &mut report).await {
                return self.finish(report, started, Some(&p));
            }
            if self.defer_insufficient(t, trigger, deferred, &mut report) {
                return self.finish(report, started, None);
            }
        }
        let mut used = crate::report::SummaryUse::default();
        let mut job = pass::Job::Batch {
            plan: &mut plan,
            summarize: planned == Outcome::Summarized,
            overflow,
            prepared: None,
        };
        let result = self.run_pass(t, &mut job, &mut used).await;
        report.settle(planned, result, used, t);
        self.finish(report, started, Some(&plan))
    }

    /// The pass from the summary prepared ahead, when there is one that still describes it:
    /// `Some(plan)` when it ran (the report settled; `plan` is what it was planned with),
    /// `None` when the pass should plan and run as usual (`report.detail.prepared` then says what
    /// became of the candidate, if one waited).
    async fn try_prepared(
        &mut self,
        t: &mut Transcript,
        req: &BatchRequest,
        overflow: bool,
        report: &mut BatchReport,
    ) -> Option<BatchPlan> {
        let ready = match self.take_prepared(t, req).await? {
            Ok(ready) => ready,
            Err(prepared) => {
                report.detail.prepared = Some(prepared);
                return None;
            }
        };
        match self.run_prepared(t, ready, overflow).await {
            Ok((result, used, mut plan, prepared)) => {
                report.detail.prepared = Some(prepared);
                report.stats.demoted_tail_outputs = plan.demoted_tail_outputs;
                report.detail.fell_through = !plan.prune.edit.is_empty();
                report.settle(Outcome::Summarized, result, used, t);
                // The prepared plan's tail ended with the messages it saw; the ones appended
                // since stay verbatim after it.
                plan.regions.tail.end = report.stats.messages_before;
                Some(plan)
            }
            // Not applied (not enough gain, or not assembled): the pass runs as usual.
            Err(prepared) => {
                report.detail.prepared = Some(prepared);
                None
            }
        }
    }

    /// Whether an automatic batch pass may run now: compaction is enabled and
    /// `compression.timing` allows it here (`between_turns`: not inside a tool loop unless
    /// the prompt is over [`NEAR_WINDOW_RATIO`] of the window; `manual`: never).
    fn automatic_allowed(&self, t: &Transcript) -> bool {
        let c = &self.settings.config.compression;
        c.enabled
            && match c.timing {
                crate::config::Timing::Eager => true,
                crate::config::Timing::BetweenTurns => {
                    !in_tool_loop(t) || t.current_tokens() > self.settings.window_tokens
                }
                crate::config::Timing::Manual => false,
            }
    }

    /// The time-to-live rule for the proactive prune: its minimum reclaim and its re-arm point
    /// are waived once the cache has gone cold ([`cache_cold`](Self::cache_cold)), but only
    /// under the low-water mark and without micro-compaction. Over the mark a threshold pass
    /// is near, and its prune-first needs the outputs a free prune would take now (without
    /// them it summarizes where it would have pruned); with micro on, the micro gate weighs
    /// what an exchange reclaims, and a free prune of its outputs holds absorption back. Both
    /// raised the cost on the raw logs (docs/ECONOMICS.md).
    fn proactive_waived(&self, t: &Transcript) -> bool {
        !self.settings.config.compression.micro_compact
            && t.current_tokens() < self.settings.batch.low_water_mark(self.settings.threshold)
            && self.cache_cold()
    }

    /// Whether a proactive prune is due: over `proactive_prune_tokens`, and past the re-arm
    /// point of the last one that was not worth a cache break, unless that is waived
    /// ([`proactive_waived`](Self::proactive_waived)).
    fn proactive_due(&self, t: &Transcript) -> bool {
        let c = &self.settings.config.compression;
        let now = t.current_tokens();
        c.proactive_prune_tokens > 0
            && now >= c.proactive_prune_tokens
            && (self.rt.proactive_rearm_at.is_none_or(|at| now >= at) || self.proactive_waived(t))
    }

    fn finish(
        &mut self,
        mut report: BatchReport,
        started: Instant,
        plan: Option<&BatchPlan>,
    ) -> BatchReport {
        report.stats.duration = started.elapsed();
        report.planned_with(plan, &self.settings.batch);
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

/// Whether `t` stands inside a tool loop: the current turn has made tool calls and not yet
/// answered.
pub(crate) fn in_tool_loop(t: &Transcript) -> bool {
    Resume::at(t).is_some_and(|r| r.tool_calls_index.is_some())
}

/// Core micro configuration from the facade configuration.
pub fn micro_config(config: &Config) -> compaction_core::micro::MicroConfig {
    let c = &config.compression;
    compaction_core::micro::MicroConfig {
        regions: config.regions(),
        material: Default::default(),
        defrag_threshold_tokens: c.micro_compact_defrag_threshold_tokens,
        max_consecutive_failures: c.micro_compact_max_consecutive_failures,
        min_reclaim_tokens: c.micro_compact_min_reclaim_tokens.fixed_tokens(),
        min_age_answers: usize::try_from(c.micro_compact_min_age_answers).unwrap_or(usize::MAX),
        strict_alternation: c.strict_alternation,
        defrag_max_ratio: compaction_core::micro::MicroConfig::default().defrag_max_ratio,
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
                .max(crate::cache::suggested_prune_runway_ratio(&p)),
            None => c.prune_runway_ratio,
        },
        summary_max_tokens: u64::from(c.summary_max_tokens),
        strict_alternation: c.strict_alternation,
        ledger_max_tokens: c.ledger_max_tokens,
        keep_recent_images: BatchConfig::default().keep_recent_images,
    }
}

/// [`batch_config`] for a proactive prune: tool outputs above
/// `compression.proactive_prune_output_min_tokens` and arguments above four characters a token
/// of it, the rest left whole.
pub(crate) fn proactive_batch_config(config: &Config) -> BatchConfig {
    let mut cfg = batch_config(config);
    let min = config.compression.proactive_prune_output_min_tokens;
    if min > cfg.prune.tool_output_min_tokens {
        cfg.prune.tool_output_min_tokens = min;
        let chars = usize::try_from(min.saturating_mul(4)).unwrap_or(usize::MAX);
        cfg.prune.argument_max_chars = cfg.prune.argument_max_chars.max(chars);
    }
    cfg
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock. The compressor itself reads the
/// date from its [`Clock`].
pub fn today() -> String {
    SystemClock.today()
}
