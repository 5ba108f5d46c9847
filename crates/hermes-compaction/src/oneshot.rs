//! One-shot passes over a whole transcript, with no agent loop around them: what
//! `hermes-compaction compact` and `session compact` run, and what a maintenance job would.
//!
//! [`Compressor::one_shot`] makes the run its [`OneShot`] mode names: one forced batch pass
//! (with an optional focus), one forced prune-only pass, or micro passes the way the
//! agent-loop micro policy makes them (whole exchanges of earlier turns into the rolling
//! summary, then the older part of the current turn into its progress marker, driven by
//! [`HookOrder`], the one hook-order driver the simulator uses too) until nothing is
//! absorbable or a pass limit is reached, and reports in one vocabulary. Every pass goes
//! through the compressor's own path: planned, summarized, committed to the store when one is
//! configured, applied, and emitted as a telemetry event. [`one_shot_session`] (feature `store`) runs
//! one over a stored session and commits every pass.

use std::time::Instant;

use compaction_core::Transcript;

use crate::compressor::Compressor;
pub use crate::compressor::OneShot;
use crate::driver::{HookOrder, Moment};
use crate::report::{BatchDetail, BatchReport, Detail, MicroReport, Outcome, PassReport};
use compaction_core::micro::MicroOutcomeKind;

/// What a one-shot run ended with: the last pass's outcome, in the vocabulary of its kind.
///
/// ```
/// use hermes_compaction::oneshot::OneShotOutcome;
/// use hermes_compaction::core::micro::MicroOutcomeKind;
/// use hermes_compaction::Outcome;
///
/// assert_eq!(OneShotOutcome::Batch(Outcome::NoGain).to_string(), "no_gain");
/// assert_eq!(OneShotOutcome::Micro(MicroOutcomeKind::Gated).to_string(), "gated");
/// assert_eq!(OneShotOutcome::NothingToPrune.to_string(), "nothing_to_prune");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OneShotOutcome {
    /// A batch or prune pass's outcome.
    Batch(Outcome),
    /// A prune pass that found nothing to shorten.
    NothingToPrune,
    /// A micro pass's outcome (`absorbed`, in-turn absorption included, `noop`, `gated`,
    /// `summarize_failed`, `store_failed`, ...).
    Micro(MicroOutcomeKind),
    /// A micro run with micro compaction off.
    Disabled,
}

impl OneShotOutcome {
    /// The snake_case name (`summarized`, `nothing_to_prune`, `absorbed`, `disabled`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            OneShotOutcome::Batch(o) => o.as_str(),
            OneShotOutcome::NothingToPrune => "nothing_to_prune",
            OneShotOutcome::Micro(k) => k.as_str(),
            OneShotOutcome::Disabled => "disabled",
        }
    }
}

impl std::fmt::Display for OneShotOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What only a one-shot run reports: its mode, the batch or prune pass it made, and why a
/// micro run stopped short.
#[derive(Clone, Debug, PartialEq)]
pub struct OneShotRun {
    /// The run (`batch`, `prune` or `micro` when displayed).
    pub mode: OneShot,
    /// What only the batch pass of a batch or prune run says (its trigger, whether it fell
    /// through, its prepared summary); its shared fields are the run's own (see
    /// [`OneShotReport::into_batch`]). `None` for a micro run.
    pub batch: Option<BatchDetail>,
    /// Why a micro run ended at or over the threshold (not the pass limit): where the
    /// tokens that micro does not rewrite are, in counts only, and what would go further.
    pub note: Option<String>,
}

impl Detail for OneShotRun {
    type Outcome = OneShotOutcome;
}

/// What a one-shot run did: the shared fields of [`PassReport`] for the whole run, and its
/// [`OneShotRun`] detail. Counts only, never content.
///
/// The [`outcome`](PassReport::outcome) is the last one: a batch outcome (`summarized`,
/// `pruned`, `not_needed`, `irreducible_floor`, `no_gain`, `failed`), `nothing_to_prune` for
/// a prune pass with nothing to shorten, or a micro outcome (`absorbed`, in-turn absorption
/// included, `noop`, `gated`, `summarize_failed`, `store_failed`, ...), `disabled` when micro
/// compaction is off. A failed run left the transcript as it was after its last successful
/// pass (and, with a store, committed exactly those passes). The stats are those of each
/// pass [`add`](crate::PassStats::add)ed to those of the transcript it was given, with the wall time
/// of the whole run. The [`law`](PassReport::law) describes the whole run: the batch or prune
/// pass's own, or for a micro run a micro pass that promised nothing of the head and tail
/// (failed or unchanged when no pass changed the transcript).
pub type OneShotReport = PassReport<OneShotRun>;

impl OneShotReport {
    fn begin(mode: OneShot, t: &Transcript, threshold_tokens: u64) -> OneShotReport {
        let run = OneShotRun {
            mode,
            batch: None,
            note: None,
        };
        let mut report = PassReport::start(
            OneShotOutcome::Batch(Outcome::NotNeeded),
            t,
            threshold_tokens,
            run,
        );
        report.in_turn = None;
        report
    }

    /// The run's one batch or prune pass, as the pass reported it (with the run's wall time):
    /// `None` for a micro run.
    pub fn into_batch(self) -> Option<BatchReport> {
        let outcome = match self.outcome {
            OneShotOutcome::Batch(o) => o,
            OneShotOutcome::NothingToPrune => Outcome::NotNeeded,
            OneShotOutcome::Micro(_) | OneShotOutcome::Disabled => return None,
        };
        self.detail.batch.as_ref()?;
        Some(self.into_kind(|_, run| (outcome, run.batch.expect("checked above"))))
    }

    /// The warning for a run whose passes used the extractive fallback rather than the
    /// configured summarizer (it failed, or its circuit breaker was open), so a run that
    /// succeeded on the fallback says so. `None` when every summary came from the summarizer.
    pub fn fallback_warning(&self) -> Option<String> {
        if self.stats.fallback_passes == 0 {
            return None;
        }
        let n = self.stats.fallback_passes;
        let skipped = match self.stats.skipped_passes {
            0 => String::new(),
            k => format!(
                "; {k} of them did not call it (circuit breaker open after repeated failures, see auxiliary.compression.breaker_failures)"
            ),
        };
        Some(format!(
            "warning: {n} pass{} used the extractive fallback because the summarizer failed{skipped}",
            if n == 1 { "" } else { "es" }
        ))
    }

    /// For a failed run, what failed: `the MODE pass failed[ after N successful passes]:
    /// FAILURE[: CAUSE] (outcome OUTCOME)`. Content-free like the report.
    ///
    /// ```
    /// use hermes_compaction::{FailureKind, OneShot, PassFailure};
    /// # use std::sync::Arc;
    /// # use hermes_compaction::core::{Estimator, Message};
    /// # use hermes_compaction::llm::ExtractiveSummarizer;
    /// # use hermes_compaction::{Compressor, Config};
    /// # let mut c = Compressor::builder(Config::default()).session("s1").build().unwrap();
    /// # let mut t = c.transcript(vec![Message::user("hi")]);
    /// # let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    /// let mut report = rt.block_on(c.one_shot(&mut t, OneShot::batch()));
    /// assert_eq!(report.failure_line(), None);
    /// // What a run that committed one pass and then lost its store reports:
    /// report.stats.passes = 1;
    /// report.failure = Some(PassFailure { kind: FailureKind::Store, cause: Some("disk full".into()), store_generation: None });
    /// let line = report.failure_line().unwrap();
    /// assert!(line.starts_with("the batch pass failed after 1 successful pass: "), "{line}");
    /// assert!(line.contains(": disk full (outcome "), "{line}");
    /// ```
    pub fn failure_line(&self) -> Option<String> {
        let f = self.failure.as_ref()?;
        let earlier = match self.stats.passes {
            0 => String::new(),
            n => format!(
                " after {n} successful pass{}",
                if n == 1 { "" } else { "es" }
            ),
        };
        Some(format!(
            "the {} pass failed{earlier}: {f} (outcome {})",
            self.detail.mode, self.outcome
        ))
    }

    /// The run of one batch or prune pass: the pass's report, its shared fields the run's.
    fn of_batch(mode: OneShot, r: BatchReport) -> OneShotReport {
        r.into_kind(|outcome, batch| {
            let outcome = match (&mode, outcome) {
                (OneShot::Prune, Outcome::NotNeeded) => OneShotOutcome::NothingToPrune,
                (_, o) => OneShotOutcome::Batch(o),
            };
            let run = OneShotRun {
                mode,
                batch: Some(batch),
                note: None,
            };
            (outcome, run)
        })
    }

    fn end(mut self, t: &Transcript, started: Instant) -> OneShotReport {
        self.stats.messages_after = t.len();
        self.stats.tokens_after = t.current_tokens();
        self.stats.duration = started.elapsed();
        self
    }

    /// The law description of a micro run from what its passes did: a micro pass (nothing of
    /// the head and tail promised: the passes planned their own) once one changed the
    /// transcript, else failed or unchanged.
    fn micro_law(&mut self, strict_alternation: bool) {
        use compaction_core::laws::{LawOptions, Pass, PassKind, Protected};
        let kind = match (self.stats.passes, self.failed()) {
            (0, true) => PassKind::Failed,
            (0, false) => PassKind::Unchanged,
            _ => PassKind::Micro,
        };
        self.law = Pass {
            kind,
            protected: Protected::default(),
            options: LawOptions {
                strict_alternation,
                ..LawOptions::default()
            },
        };
    }
}

/// The one-line summary of a run: `mode=... outcome=... passes=... messages=A->B tokens=A->B
/// earliest_changed=... demoted_tail_outputs=... ms=... threshold=... over_threshold=...`.
/// Counts only ([`note`](OneShotRun::note) is not part of it).
impl std::fmt::Display for OneShotReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "mode={} outcome={} passes={} messages={}->{} tokens={}->{} earliest_changed={} demoted_tail_outputs={} ms={} threshold={} over_threshold={}",
            self.detail.mode,
            self.outcome,
            self.stats.passes,
            self.stats.messages_before,
            self.stats.messages_after,
            self.stats.tokens_before,
            self.stats.tokens_after,
            self.stats
                .earliest_changed_index
                .map_or("-".to_owned(), |i| i.to_string()),
            self.stats.demoted_tail_outputs,
            self.stats.duration.as_millis(),
            self.threshold_tokens,
            self.over_threshold(),
        )
    }
}

#[cfg(feature = "store")]
impl crate::compressor::Persistence {
    /// Opens stored session `session` for compaction: its active messages (row ids stamped)
    /// and the persistence naming the generation they reflect, to give the compressor with
    /// [`CompressorBuilder::store`](crate::CompressorBuilder::store).
    pub async fn load(
        store: std::sync::Arc<dyn compaction_store::TranscriptStore>,
        session: &str,
    ) -> Result<
        (
            crate::compressor::Persistence,
            Vec<compaction_core::Message>,
        ),
        compaction_store::StoreError,
    > {
        // One snapshot: a commit planned from these loses a race as `StaleGeneration`.
        let (messages, generation) = store.load_active_with_generation(session).await?;
        let persistence = crate::compressor::Persistence {
            store,
            session: session.to_owned(),
            generation,
        };
        Ok((persistence, messages))
    }
}

/// What [`one_shot_session`] did: the run's report and the session's generation before the
/// run and after the passes it committed. Counts and ids only, never content.
#[cfg(feature = "store")]
#[derive(Clone, Debug, PartialEq)]
pub struct SessionOneShot {
    /// The stored session.
    pub session: String,
    /// What the run did (a failed pass is here, not an error).
    pub report: OneShotReport,
    /// The generation the run started from.
    pub generation_before: u64,
    /// The generation the store holds after the run: as the compressor counted its own
    /// commits, or, when a commit failed, as the store answered when asked after the failure
    /// (a commit whose acknowledgement was lost has landed all the same). When the store could
    /// not be asked, the last generation the compressor knew, and
    /// [`generation_confirmed`](Self::generation_confirmed) is false.
    pub generation_after: u64,
    /// Whether [`generation_after`](Self::generation_after) is known: false when a commit
    /// failed and the store could not be read after it.
    pub generation_confirmed: bool,
}

#[cfg(feature = "store")]
impl SessionOneShot {
    /// `BEFORE->AFTER`, or `BEFORE->unconfirmed` when the store could not say what it holds
    /// after a failed commit (never a guess).
    pub fn generations(&self) -> String {
        if self.generation_confirmed {
            format!("{}->{}", self.generation_before, self.generation_after)
        } else {
            format!("{}->unconfirmed", self.generation_before)
        }
    }
}

/// The one-line summary of a stored run: `session=ID`, the report's line
/// ([`OneShotReport`]'s `Display`), then `generation=`[`generations`](SessionOneShot::generations).
#[cfg(feature = "store")]
impl std::fmt::Display for SessionOneShot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "session={} {} generation={}",
            self.session,
            self.report,
            self.generations()
        )
    }
}

/// Why [`one_shot_session`] could not start a run (nothing was committed).
#[cfg(feature = "store")]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionOneShotError {
    /// The session could not be loaded (unknown session, store failure).
    #[error(transparent)]
    Store(#[from] compaction_store::StoreError),
    /// The compressor could not be built: the configuration, with the one-shot mode applied,
    /// is invalid (the error names the key).
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}

/// Runs the one-shot run `mode` over stored session `session` (the compressor is built for it:
/// [`CompressorBuilder::one_shot`](crate::CompressorBuilder::one_shot)), committing every pass: what `hermes-compaction session
/// compact` and a maintenance job do. The session is loaded in one snapshot
/// ([`Persistence::load`](crate::compressor::Persistence::load)), the compressor is built
/// from `builder` with the session's id and one [`Persistence`](crate::compressor::Persistence)
/// for every pass, and [`Compressor::one_shot`] runs. A pass that fails ends the run and is in
/// the report ([`OneShotReport::failed`]); the store then holds what the earlier passes
/// committed, up to [`SessionOneShot::generation_after`].
///
/// ```
/// use std::sync::Arc;
/// use hermes_compaction::core::{Message, ToolCall};
/// use hermes_compaction::oneshot::one_shot_session;
/// use hermes_compaction::store::{Store, TranscriptStore};
/// use hermes_compaction::{Compressor, Config, OneShot, PassReport};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
/// let mut messages = vec![Message::system("You are a coding agent.")];
/// for i in 0..30 {
///     let id = format!("call_{i}");
///     messages.push(Message::user(format!("step {i}")));
///     messages.push(Message::assistant_tool_calls("", vec![ToolCall::function(&id, "shell", "{}")]));
///     messages.push(Message::tool_result(&id, "ok\n".repeat(2_000)));
///     messages.push(Message::assistant(format!("step {i} done")));
/// }
/// store.import_session("s1", &mut messages).await.unwrap();
/// let mut config = Config::default();
/// config.model.context_length = 16_000;
/// let builder = Compressor::builder(config);
/// let run = one_shot_session(builder, store.clone(), "s1", OneShot::Prune).await.unwrap();
/// assert!(!run.report.failed());
/// assert_eq!((run.generation_before, run.generation_after), (0, 1));
/// assert_eq!(store.generation("s1").await.unwrap(), 1);
/// assert!(run.to_string().starts_with("session=s1 mode=prune outcome=pruned passes=1 "));
/// assert!(run.to_string().ends_with(" generation=0->1"));
/// // An unknown session is an error, not a report.
/// let builder = Compressor::builder(Config::default());
/// assert!(one_shot_session(builder, store, "s2", OneShot::batch()).await.is_err());
/// # });
/// ```
#[cfg(feature = "store")]
pub async fn one_shot_session(
    builder: crate::CompressorBuilder,
    store: std::sync::Arc<dyn compaction_store::TranscriptStore>,
    session: &str,
    mode: OneShot,
) -> Result<SessionOneShot, SessionOneShotError> {
    let (persistence, messages) = crate::compressor::Persistence::load(store, session).await?;
    let generation_before = persistence.generation;
    let mut c = builder
        .session(session)
        .store(persistence)
        .one_shot(mode.clone())
        .build()?;
    let mut t = c.transcript(messages);
    let report = c.one_shot(&mut t, mode).await;
    let counted = c.status().store_generation.unwrap_or(generation_before);
    // After a failed commit, what the store said it holds (asked once, by the pass runner).
    let (generation_after, generation_confirmed) =
        match report.failure.as_ref().and_then(|f| f.store_generation) {
            Some(crate::report::StoreGeneration::Confirmed(g)) => (g, true),
            Some(crate::report::StoreGeneration::Unconfirmed { .. }) => (counted, false),
            None => (counted, true),
        };
    Ok(SessionOneShot {
        session: session.to_owned(),
        report,
        generation_after,
        generation_confirmed,
        generation_before,
    })
}

impl Compressor {
    /// A one-shot run over `t` with no agent loop around it (see the [module](self)
    /// documentation): one forced batch pass (with its focus), one forced prune-only pass, or
    /// micro passes until nothing is absorbable (at most `max_passes` that change the
    /// transcript). Every pass goes through the compressor's own path (planned, summarized,
    /// committed with a store, applied, emitted as telemetry) and the report speaks one
    /// vocabulary whatever the mode.
    ///
    /// A micro run needs `compression.micro_compact` (a compressor built with
    /// [`CompressorBuilder::one_shot`](crate::compressor::CompressorBuilder::one_shot) for a
    /// micro run has it); without it the report says `disabled`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use hermes_compaction::core::{Estimator, Message, ToolCall};
    /// use hermes_compaction::llm::ExtractiveSummarizer;
    /// use hermes_compaction::{Compressor, Config, OneShot};
    ///
    /// let mut msgs = vec![Message::system("You are a coding agent.")];
    /// for i in 0..30 {
    ///     let id = format!("call_{i}");
    ///     msgs.push(Message::user(format!("request {i}: run the tests")));
    ///     msgs.push(Message::assistant_tool_calls("", vec![ToolCall::function(&id, "shell", "{}")]));
    ///     msgs.push(Message::tool_result(&id, "ok\n".repeat(2_000)));
    ///     msgs.push(Message::assistant(format!("request {i} done")));
    /// }
    /// let mut config = Config::default();
    /// config.model.context_length = 16_000;
    /// let mut c = Compressor::builder(config)
    ///     .summarizer(Arc::new(ExtractiveSummarizer::default()))
    ///     .counter(Arc::new(Estimator::default()))
    ///     .build()
    ///     .unwrap();
    /// let mut t = c.transcript(msgs);
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let r = rt.block_on(c.one_shot(&mut t, OneShot::Prune));
    /// assert_eq!((r.outcome.as_str(), r.stats.passes), ("pruned", 1));
    /// let r = rt.block_on(c.one_shot(&mut t, OneShot::Batch { focus: Some("request 29".into()) }));
    /// assert_eq!(r.outcome.as_str(), "summarized");
    /// assert!(r.stats.tokens_after < r.stats.tokens_before);
    /// ```
    pub async fn one_shot(&mut self, t: &mut Transcript, mode: OneShot) -> OneShotReport {
        let started = Instant::now();
        let run = mode.without_focus();
        let r = match mode {
            OneShot::Micro { max_passes } => return self.micro_run(t, max_passes).await,
            OneShot::Batch { focus } => self.compress(t, focus).await,
            OneShot::Prune => self.prune_only(t).await,
        };
        OneShotReport::of_batch(run, r).end(t, started)
    }

    /// One forced prune-only pass: old tool outputs and long arguments shortened, no
    /// summarizer. Committed (with a store), applied and reported like any batch pass
    /// (trigger `Manual`, outcome `Pruned` or why not).
    async fn prune_only(&mut self, t: &mut Transcript) -> BatchReport {
        self.rt.prune_next(true);
        let report = self.compress(t, None).await;
        self.rt.prune_next(false);
        report
    }

    /// Micro passes as the agent-loop micro policy makes them, at most `max_passes` that
    /// change the transcript. The transcript is replayed as an agent lives it: before each
    /// user message that ends a turn, [`finalize_turn`](Self::finalize_turn) (the oldest whole
    /// exchange of the middle into the rolling summary); before each assistant message that
    /// follows a tool round, [`after_tool_round`](Self::after_tool_round) (the oldest tool
    /// group of a long current turn into its progress marker). Then passes go on over the
    /// whole transcript until nothing is absorbable. The first failed pass ends the passes
    /// (the rest of the transcript is appended unchanged) and the report names it. Needs
    /// `compression.micro_compact` (a compressor built with
    /// [`CompressorBuilder::one_shot`](crate::compressor::CompressorBuilder::one_shot) for a
    /// micro run has it); without it the report says `disabled`.
    async fn micro_run(&mut self, t: &mut Transcript, max_passes: Option<u32>) -> OneShotReport {
        let started = Instant::now();
        let mut report =
            OneShotReport::begin(OneShot::Micro { max_passes }, t, self.threshold_tokens());
        if !self.config().compression.micro_compact {
            report.outcome = OneShotOutcome::Disabled;
            return report.end(t, started);
        }
        report.outcome = OneShotOutcome::Micro(MicroOutcomeKind::Noop);
        let mut report = self.micro_replay(t, max_passes, report).await;
        let limited = max_passes.is_some_and(|m| report.stats.passes >= m);
        if !limited && !report.failed() && t.current_tokens() >= self.threshold_tokens() {
            report.detail.note = Some(self.micro_shortfall(t, report.outcome));
        }
        report.micro_law(self.micro_settings().strict_alternation);
        report.in_turn = crate::report::Resume::at(t);
        report.end(t, started)
    }

    /// Why micro passes cannot go further: the tokens held by what micro never rewrites.
    fn micro_shortfall(&self, t: &Transcript, last: OneShotOutcome) -> String {
        let compacted = self.state().compacted;
        let r = compaction_core::regions::partition(
            t,
            self.threshold_tokens(),
            &self.micro_settings().regions,
            compacted,
        );
        let msgs = t.messages();
        let protected: u64 = r.protected().iter().map(|p| t.tokens_in(p.clone())).sum();
        let outside = |i: &usize| !r.protected().iter().any(|p| p.contains(i));
        let users: u64 = (0..msgs.len())
            .filter(outside)
            .filter(|&i| msgs[i].is_user() && compaction_core::marker::classify(&msgs[i]).is_none())
            .map(|i| t.tokens_of(i))
            .sum();
        let summaries: u64 = (0..msgs.len())
            .filter(outside)
            .filter(|&i| compaction_core::marker::is_summary(&msgs[i]))
            .map(|i| t.tokens_of(i))
            .sum();
        format!(
            "micro passes cannot bring this transcript under the threshold ({} tokens, threshold \
             {}): user messages outside the protected head and tail hold {users} tokens and \
             micro never rewrites them, the protected head and tail hold {protected}, summaries \
             {summaries}, and the last micro outcome was {last} (nothing more absorbable, or not \
             worth a pass); batch mode (--mode batch) summarizes user messages too",
            t.current_tokens(),
            self.threshold_tokens(),
        )
    }

    async fn micro_replay(
        &mut self,
        t: &mut Transcript,
        max_passes: Option<u32>,
        mut report: OneShotReport,
    ) -> OneShotReport {
        // Without a limit, stop at the latest when every message could have been absorbed.
        let limit = max_passes
            .unwrap_or(u32::MAX)
            .min((t.len() as u32).saturating_mul(2).saturating_add(4));
        let messages =
            std::mem::replace(t, Transcript::new(Vec::new(), self.counter())).into_messages();
        let mut order = HookOrder::default();
        let mut going = limit > 0;
        for m in messages {
            for moment in order.before(t, &m) {
                let in_turn = match moment {
                    Moment::TurnEnd => false,
                    Moment::ToolRound => true,
                    Moment::Request => continue,
                };
                if going {
                    going = self
                        .micro_step(t, in_turn, limit, &mut report)
                        .await
                        .is_some();
                }
            }
            t.push(m, self.counter());
        }
        // What the next turns of an agent loop would still absorb.
        let mut rounds = 0u32;
        while going && rounds < limit.saturating_mul(2) {
            rounds += 1;
            let mut again = false;
            for in_turn in [false, true] {
                match self.micro_step(t, in_turn, limit, &mut report).await {
                    None => going = false,
                    Some(true) => again = true,
                    Some(false) => continue,
                }
                break;
            }
            going &= again;
        }
        report
    }

    /// One due micro hook: `None` when passes must stop (a failure, or the limit reached),
    /// else whether the run should go on trying (`false`: nothing absorbable here).
    async fn micro_step(
        &mut self,
        t: &mut Transcript,
        in_turn: bool,
        limit: u32,
        report: &mut OneShotReport,
    ) -> Option<bool> {
        let Some(r) = self.micro_due(t, in_turn).await else {
            return Some(false);
        };
        report.stats.add(&r.stats);
        report.fallback_cause = report.fallback_cause.or(r.fallback_cause);
        if r.failure.is_some() {
            report.outcome = OneShotOutcome::Micro(r.outcome);
            report.failure = r.failure;
            return None;
        }
        if r.stats.passes > 0 {
            report.outcome = OneShotOutcome::Micro(r.outcome);
            return (report.stats.passes < limit).then_some(true);
        }
        if report.stats.passes == 0 {
            report.outcome = OneShotOutcome::Micro(r.outcome);
        }
        // A skipped exchange or a rejected defrag: the next attempt moves on.
        Some(!matches!(
            r.outcome,
            MicroOutcomeKind::Noop | MicroOutcomeKind::Gated
        ))
    }

    /// Runs the hook once it is due (the cadence counter advances on every call).
    async fn micro_due(&mut self, t: &mut Transcript, in_turn: bool) -> Option<MicroReport> {
        for _ in 0..self.config().micro_every_n_turns() {
            let r = if in_turn {
                self.after_tool_round(t).await
            } else {
                self.finalize_turn(t).await
            };
            if r.is_some() {
                return r;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use compaction_core::{Estimator, Message, ToolCall, marker};
    use compaction_llm::ExtractiveSummarizer;

    use super::*;
    use crate::config::Config;

    fn session(turns: usize, output_chars: usize) -> Vec<Message> {
        let mut msgs = vec![Message::system("You are a coding agent.")];
        for i in 0..turns {
            let id = format!("call_{i}");
            msgs.push(Message::user(format!("request {i}: run the tests")));
            msgs.push(Message::assistant_tool_calls(
                "",
                vec![ToolCall::function(&id, "shell", "{\"cmd\":\"cargo test\"}")],
            ));
            msgs.push(Message::tool_result(&id, "ok\n".repeat(output_chars / 3)));
            msgs.push(Message::assistant(format!("request {i} done")));
        }
        msgs
    }

    /// One user message, then `rounds` tool rounds: a long single turn.
    fn single_turn(rounds: usize) -> Vec<Message> {
        let mut msgs = vec![
            Message::system("You are a coding agent."),
            Message::user("fix every failing test"),
        ];
        for i in 0..rounds {
            let id = format!("call_{i}");
            msgs.push(Message::assistant_tool_calls(
                "",
                vec![ToolCall::function(&id, "shell", "{\"cmd\":\"cargo test\"}")],
            ));
            msgs.push(Message::tool_result(&id, format!("run {i}\n").repeat(400)));
        }
        msgs.push(Message::assistant("all green"));
        msgs
    }

    fn compressor(mode: OneShot) -> Compressor {
        let mut config = Config::default();
        config.model.context_length = 16_000;
        Compressor::builder(config)
            .summarizer(Arc::new(ExtractiveSummarizer::default()))
            .counter(Arc::new(Estimator::default()))
            .session("oneshot")
            .one_shot(mode)
            .build()
            .unwrap()
    }

    fn run(c: &mut Compressor, t: &mut Transcript, mode: OneShot) -> OneShotReport {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(c.one_shot(t, mode))
    }

    #[test]
    fn prune_only_never_summarizes_and_then_finds_nothing() {
        let mode = OneShot::Prune;
        let mut c = compressor(mode.clone());
        let mut t = c.transcript(session(30, 6_000));
        let r = run(&mut c, &mut t, mode.clone());
        assert_eq!((r.outcome.as_str(), r.stats.passes), ("pruned", 1), "{r:?}");
        assert!(r.stats.tokens_after < r.stats.tokens_before);
        assert!(t.messages().iter().all(|m| marker::classify(m).is_none()));
        let again = run(&mut c, &mut t, OneShot::Prune);
        assert_eq!(
            (again.outcome, again.stats.passes),
            (OneShotOutcome::NothingToPrune, 0)
        );
    }

    #[test]
    fn micro_absorbs_inside_a_long_single_turn() {
        let mode = OneShot::Micro { max_passes: None };
        let mut c = compressor(mode.clone());
        let mut t = c.transcript(single_turn(60));
        let r = run(&mut c, &mut t, mode.clone());
        assert!(r.stats.passes > 0, "{r:?}");
        assert!(r.stats.tokens_after < r.stats.tokens_before, "{r:?}");
        assert!(
            t.messages()
                .iter()
                .any(|m| marker::classify(m) == Some(compaction_core::MarkerKind::Progress))
        );
        assert!(!r.failed());
    }

    #[test]
    fn micro_respects_the_pass_limit_and_says_when_still_over() {
        let mode = OneShot::Micro {
            max_passes: Some(1),
        };
        let mut c = compressor(mode.clone());
        let mut t = c.transcript(single_turn(120));
        let r = run(&mut c, &mut t, mode.clone());
        assert_eq!(r.stats.passes, 1, "{r:?}");
        assert!(r.over_threshold(), "{r:?}");
    }

    #[test]
    fn micro_without_the_switch_is_disabled() {
        let mut c = compressor(OneShot::batch());
        let mut t = c.transcript(session(30, 6_000));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let r = rt.block_on(c.one_shot(&mut t, OneShot::Micro { max_passes: None }));
        assert_eq!((r.outcome, r.stats.passes), (OneShotOutcome::Disabled, 0));
    }
}
