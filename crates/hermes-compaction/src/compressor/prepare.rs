//! A summary prepared ahead (`compression.prepare_at`, issue 34 item 2).
//!
//! Past `prepare_at` of the threshold (and below it), [`Compressor::before_request`] and
//! [`Compressor::after_response`] copy the transcript's messages and spawn a task on the
//! caller's tokio runtime, then return at once. The task plans the pass those messages would
//! get (a forced summary plan, uncalibrated, so the same messages give the same plan) and
//! makes its summary calls through the one call policy (`breaker`): the same pass deadline
//! (counted from the start of the task), the same circuit breaker (shared with every pass),
//! the same output guard and fallback rule. Its plan and summaries wait in the compressor.
//!
//! At a trigger the pass runner is fed the candidate instead of calling the summarizer, when
//! it still describes the pass:
//!
//! - the **generation** matches: no pass, undo or reload since it was started (the
//!   compressor's epoch), and the store generation the compressor knows is the same;
//! - the transcript has only been **appended to** since (its lineage): the task's plan is the
//!   one the pass would make over those messages, and is offered before the pass plans;
//!   otherwise the **span's digest** must match: the first `len` messages re-planned as they
//!   are now must give summary jobs (ranges, kinds, material, earlier summaries, budgets) that
//!   hash to what the candidate summarized (a candidate not finished yet cannot be checked);
//! - the pass has no focus topic and is not prune-only.
//!
//! The plan is assembled against those first `len` messages; its edit only touches messages
//! before them, so it applies to the transcript as it is now, the messages appended since
//! staying verbatim after the summary. It is applied only when that lands under the
//! threshold; otherwise, or when any check fails, it is discarded and the pass runs as it
//! would have without it. The store's optimistic concurrency covers a candidate that lost a
//! race: its commit names the generation the compressor holds, so another writer's pass makes
//! it fail with `StaleGeneration` like any pass.
//!
//! Nothing here can fail or delay a turn: starting a candidate copies the messages and
//! spawns; a candidate that failed is discarded; one still running when offered is waited for
//! (it is the very call the pass would make, begun earlier, under a deadline that began
//! earlier); one discarded while running is aborted. Without a tokio runtime nothing is
//! prepared.

use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use compaction_core::batch::{self, BatchPlan, BatchRequest, BatchStep};
use compaction_core::{Message, Transcript};
use compaction_llm::{SummaryRequest, SummaryResponse};
use tokio::sync::oneshot;

use super::Compressor;
use super::pass::{Job, Prepared};
use crate::breaker::{CallFailure, Route};
use crate::report::{
    Applied, BatchReport, DiscardReason, FailureKind, PassFailure, PreparedOutcome, PreparedTotals,
    PreparedUse, SummaryUse, Trigger,
};

/// What the task hands back: its plan and summaries, or `None` when the plan summarizes
/// nothing (nothing to prepare).
type TaskOutput = Option<Planned>;

/// What a candidate's task planned and what its calls returned.
#[derive(Debug)]
struct Planned {
    /// The transcript's first `len` messages as a transcript of their own, and the plan made
    /// over them.
    base: Transcript,
    plan: BatchPlan,
    /// The hash of the plan's summary jobs.
    digest: u64,
    /// Every summary of the plan, or the failure that stopped them.
    calls: Result<Vec<(SummaryResponse, Route)>, CallFailure>,
}

impl Planned {
    /// The summarizer tokens its calls reported.
    fn tokens(&self) -> u64 {
        self.calls.as_ref().map_or(0, |calls| {
            calls
                .iter()
                .filter_map(|(r, _)| r.usage)
                .map(|u| u.prompt_tokens + u.completion_tokens)
                .sum()
        })
    }
}

/// A summary being prepared (or ready) for the next pass.
#[derive(Debug)]
pub(crate) struct Candidate {
    /// The transcript's first `len` messages are what it is planned on.
    len: usize,
    /// The compressor's epoch and store generation when it started.
    epoch: u64,
    generation: Option<u64>,
    /// The session counted as compacted when it started (the plan depends on it).
    compacted: bool,
    /// The transcript's lineage when it started: while it is the same, the transcript has
    /// only been appended to, and the task's plan still describes its first `len` messages.
    lineage: u64,
    result: oneshot::Receiver<TaskOutput>,
    task: tokio::task::AbortHandle,
}

impl Candidate {
    /// Whether its task has finished and planned no summary (nothing to prepare, for now:
    /// the transcript was small enough for a prune to do). What came back otherwise stays
    /// for the pass.
    fn came_back_empty(&mut self) -> bool {
        match self.result.try_recv() {
            Ok(out) => {
                let empty = out.is_none();
                let (tx, rx) = oneshot::channel();
                let _ = tx.send(out);
                self.result = rx;
                empty
            }
            Err(oneshot::error::TryRecvError::Empty) => false,
            Err(oneshot::error::TryRecvError::Closed) => {
                // Cancelled: a receiver that stays closed, as this one was.
                let (_, rx) = oneshot::channel();
                self.result = rx;
                false
            }
        }
    }
}

/// A candidate dropped unsettled (the compressor went away) stops its task.
impl Drop for Candidate {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A candidate that still describes the pass: its plan over the transcript's first messages
/// (`base`), and its summaries.
pub(crate) struct Ready {
    pub(crate) base: Transcript,
    pub(crate) plan: BatchPlan,
    pub(crate) summaries: Vec<String>,
    pub(crate) used: SummaryUse,
    pub(crate) waited: Duration,
}

impl Ready {
    /// The report of this candidate with `outcome`.
    pub(crate) fn report(&self, outcome: PreparedOutcome) -> PreparedUse {
        PreparedUse {
            outcome,
            summary_tokens: self.used.summary_tokens,
            waited: self.waited,
        }
    }
}

impl Compressor {
    /// Running totals of the summaries prepared ahead in this session: started, used,
    /// discarded, and the summarizer tokens of the discarded ones.
    pub(crate) fn prepared_totals(&self) -> PreparedTotals {
        self.rt.prepared_totals
    }

    /// What became of the last candidate settled (used, or discarded and why).
    pub(crate) fn last_prepared(&self) -> Option<PreparedUse> {
        self.rt.last_prepared
    }

    /// Whether a summary prepared ahead waits for the next pass (running or ready).
    pub(crate) fn has_prepared(&self) -> bool {
        self.rt.prepared.is_some()
    }

    /// After a hook made no pass: drops a candidate the session has moved past, and starts
    /// one when the transcript is past `prepare_at` of the threshold and none is waiting.
    pub(crate) fn maybe_prepare(&mut self, t: &Transcript) {
        let c = &self.settings.config.compression;
        if c.prepare_at <= 0.0 {
            return;
        }
        let soft = (self.settings.threshold as f64 * c.prepare_at) as u64;
        if let Some(cand) = &self.rt.prepared {
            if cand.epoch == self.rt.epoch && cand.generation == self.generation_now() {
                if t.len() < cand.len {
                    self.discard_waiting(DiscardReason::SpanChanged);
                } else if t.len() > cand.len
                    && self
                        .rt
                        .prepared
                        .as_mut()
                        .is_some_and(Candidate::came_back_empty)
                {
                    // It planned no summary over fewer messages: plan again over these, so
                    // the span it summarizes follows the transcript to the trigger.
                    self.discard_waiting(DiscardReason::Superseded);
                } else {
                    return;
                }
            } else {
                self.discard_waiting(DiscardReason::GenerationChanged);
            }
        }
        let tokens = t.current_tokens();
        if tokens < soft || tokens >= self.settings.threshold || !self.may_prepare(t) {
            return;
        }
        self.start_prepared(t, None);
    }

    /// At a trigger (with `prepare_at` set) that no waiting candidate can serve: when this
    /// prompt fits the window and a pass over it would summarize, starts the candidate of
    /// that pass and returns `true`, the request going as it is and the pass coming at the
    /// next request, from the candidate. Once per trigger: the next pass runs whatever
    /// became of it. A candidate that came back empty counts as none.
    pub(crate) fn defer_to_prepared(&mut self, t: &Transcript) -> bool {
        if self.settings.config.compression.prepare_at <= 0.0
            || self.rt.prepared_deferred
            || t.current_tokens() > self.settings.window_tokens
            || !self.may_prepare(t)
        {
            return false;
        }
        if self.prepared_current(t)
            && !self
                .rt
                .prepared
                .as_mut()
                .is_some_and(Candidate::came_back_empty)
        {
            return false;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return false;
        }
        // The pass's plan, made now (a plan is quick; the summary is what takes time): only
        // one that summarizes is worth a request's wait.
        let planned = plan_prepared(
            t.messages().to_vec(),
            self.rt.state.compacted,
            self.counter.as_ref(),
            self.settings.threshold,
            &self.settings.batch,
        );
        if digest(&planned.1, planned.0.len()).is_none() {
            return false;
        }
        if let Some(cand) = &self.rt.prepared {
            let reason = if cand.epoch != self.rt.epoch || cand.generation != self.generation_now()
            {
                DiscardReason::GenerationChanged
            } else if self.prepared_current(t) {
                // It came back empty.
                DiscardReason::Superseded
            } else {
                DiscardReason::SpanChanged
            };
            self.discard_waiting(reason);
        }
        self.start_prepared(t, Some(planned));
        self.rt.prepared_deferred = self.rt.prepared.is_some();
        self.rt.prepared_deferred
    }

    /// Inside an automatic pass (`trigger` [`Trigger::BeforeRequest`] or [`Trigger::Usage`])
    /// whose waiting candidate was just discarded as insufficient (`report` says so):
    /// that is a trigger without a usable candidate, put off once like one
    /// ([`defer_to_prepared`](Self::defer_to_prepared)) unless this trigger was put off
    /// already (`deferred`, the flag as the pass found it). `true` when it was: the report
    /// becomes [`Outcome::Skipped`](crate::report::Outcome::Skipped), its candidate still
    /// named, and no pass runs.
    pub(crate) fn defer_insufficient(
        &mut self,
        t: &Transcript,
        trigger: Trigger,
        deferred: bool,
        report: &mut BatchReport,
    ) -> bool {
        let insufficient = report
            .detail
            .prepared
            .is_some_and(|p| p.outcome == PreparedOutcome::Discarded(DiscardReason::Insufficient));
        if !insufficient
            || deferred
            || !matches!(trigger, Trigger::BeforeRequest | Trigger::Usage)
            || !self.defer_to_prepared(t)
        {
            return false;
        }
        report.outcome = crate::report::Outcome::Skipped;
        // Nothing of the plan the pass may have made was done.
        report.detail.fell_through = false;
        report.stats.demoted_tail_outputs = 0;
        tracing::debug!(
            session = %self.session_id,
            "summary prepared ahead: insufficient, trigger put off to the next request"
        );
        true
    }

    /// Whether a candidate may start now: automatic compaction allowed, no cooldown or
    /// pause, no manual pass or model request waiting, no tool result owed.
    fn may_prepare(&self, t: &Transcript) -> bool {
        if !self.automatic_allowed(t) {
            return false;
        }
        let now = self.now_ms();
        let blocked = self.rt.state.cooldown_until_ms.is_some_and(|u| now < u)
            || self.rt.state.paused_until_ms.is_some_and(|u| now < u);
        !(blocked
            || self.rt.prune_only_once
            || self.rt.requested.is_some()
            || crate::report::Resume::at(t).is_some_and(|r| !r.results_complete))
    }

    /// Copies the messages and spawns the candidate's task (which plans, unless `planned`
    /// holds the plan made over these messages already, and writes the summaries).
    fn start_prepared(&mut self, t: &Transcript, planned: Option<(Transcript, BatchPlan)>) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let compacted = self.rt.state.compacted;
        // The task plans (a forced summary plan, as the pass would make over these messages)
        // and writes the summaries; the hook only copies the messages and spawns.
        let messages = if planned.is_some() {
            Vec::new()
        } else {
            t.messages().to_vec()
        };
        let len = t.len();
        let counter = self.counter_arc();
        let threshold = self.settings.threshold;
        let batch_cfg = self.settings.batch.clone();
        // A warm-cache request over the agent's last request, when those are on.
        let warm = self.warm_prefix(t);
        let summary_max = self.settings.config.compression.summary_max_tokens;
        let today = self.today();
        let (tx, rx) = oneshot::channel();
        let calls = self.calls.clone();
        let deadline = self.settings.call.pass_deadline();
        let task = handle.spawn(async move {
            let (base, plan) = match planned {
                Some(p) => p,
                None => plan_prepared(messages, compacted, counter.as_ref(), threshold, &batch_cfg),
            };
            let Some(digest) = digest(&plan, base.len()) else {
                let _ = tx.send(None);
                return;
            };
            let requests: Vec<SummaryRequest> = match &plan.step {
                BatchStep::Summarize(jobs) => jobs
                    .iter()
                    .map(|j| {
                        let w = warm
                            .clone()
                            .and_then(|p| compaction_llm::WarmPrefix::new(p, j.range.clone()));
                        super::pass::batch_request(j, summary_max, today.clone())
                            .with_warm(w)
                            .with_deadline(deadline)
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let calls = summarize_all(&requests, calls.as_ref()).await;
            let _ = tx.send(Some(Planned {
                base,
                plan,
                digest,
                calls,
            }));
        });
        self.rt.prepared_totals.started += 1;
        self.rt.prepared = Some(Candidate {
            len,
            epoch: self.rt.epoch,
            generation: self.generation_now(),
            compacted,
            lineage: t.lineage(),
            result: rx,
            task: task.abort_handle(),
        });
        tracing::debug!(
            session = %self.session_id,
            messages = len,
            "summary prepared ahead: started"
        );
    }

    /// Whether the waiting candidate belongs to the session as it is and the transcript has
    /// only been appended to since it started: it can be offered to the pass before the pass
    /// plans (its plan is the one the pass would re-make for those messages).
    pub(crate) fn prepared_current(&self, t: &Transcript) -> bool {
        self.rt.prepared.as_ref().is_some_and(|c| {
            c.epoch == self.rt.epoch
                && c.generation == self.generation_now()
                && c.lineage == t.lineage()
                && t.len() >= c.len
        })
    }

    /// At a trigger whose plan summarizes (or before planning, when
    /// [`prepared_current`](Self::prepared_current)): the waiting candidate, when it still describes the
    /// pass (`Ok`), or what became of it (`Err`, discarded); `None` when none waits.
    pub(crate) async fn take_prepared(
        &mut self,
        t: &Transcript,
        req: &BatchRequest,
    ) -> Option<Result<Ready, PreparedUse>> {
        let cand = self.rt.prepared.take()?;
        let reason = if req.focus.is_some() || req.prune_only {
            Some(DiscardReason::Superseded)
        } else if cand.epoch != self.rt.epoch || cand.generation != self.generation_now() {
            Some(DiscardReason::GenerationChanged)
        } else if t.len() < cand.len {
            Some(DiscardReason::SpanChanged)
        } else {
            None
        };
        if let Some(reason) = reason {
            return Some(Err(self.discard(cand, reason)));
        }
        let mut cand = cand;
        let appended_only = cand.lineage == t.lineage();
        let started = Instant::now();
        let received = if appended_only {
            // Ready already, or the call this pass would make, begun earlier under a deadline
            // that began earlier: waiting for it is never longer than calling again.
            (&mut cand.result).await.ok()
        } else {
            // Changed otherwise (a pin, a rewrite): only a finished candidate can be checked.
            match cand.result.try_recv() {
                Ok(out) => Some(out),
                Err(oneshot::error::TryRecvError::Empty) => {
                    return Some(Err(self.discard(cand, DiscardReason::SpanChanged)));
                }
                Err(oneshot::error::TryRecvError::Closed) => None,
            }
        };
        let waited = started.elapsed();
        let compacted = cand.compacted;
        drop(cand);
        let settle = |c: &mut Self, reason, tokens| {
            c.settled(PreparedUse {
                outcome: PreparedOutcome::Discarded(reason),
                summary_tokens: tokens,
                waited,
            })
        };
        let out = match received {
            Some(Some(out)) => out,
            // The plan needed no summary.
            Some(None) => return Some(Err(settle(self, DiscardReason::Superseded, 0))),
            // The task was cancelled by its runtime (shut down): as if it failed.
            None => return Some(Err(settle(self, DiscardReason::Failed, 0))),
        };
        let tokens = out.tokens();
        let Planned {
            base: mut snapshot,
            plan,
            digest: prepared_digest,
            calls,
        } = out;
        let (base, plan) = if appended_only {
            // Its first messages are the candidate's own, save the row ids a flush has
            // stamped since (which keep a plan valid).
            for (i, m) in t.messages()[..snapshot.len()].iter().enumerate() {
                if let Some(id) = m.row_id()
                    && snapshot.messages()[i].row_id() != Some(id)
                {
                    snapshot.set_row_id(i, id);
                }
            }
            (snapshot, plan)
        } else {
            // Re-planned as they are now, they must give the same summary jobs.
            let (base, plan) = plan_prepared(
                t.messages()[..snapshot.len()].to_vec(),
                compacted,
                self.counter.as_ref(),
                self.settings.threshold,
                &self.settings.batch,
            );
            if digest(&plan, base.len()) != Some(prepared_digest) {
                return Some(Err(settle(self, DiscardReason::SpanChanged, tokens)));
            }
            (base, plan)
        };
        // Its call failed (the breaker counted it): the pass calls as it would have.
        let Ok(calls) = calls else {
            return Some(Err(settle(self, DiscardReason::Failed, 0)));
        };
        let mut used = SummaryUse::default();
        let summaries = calls
            .into_iter()
            .map(|(resp, route)| self.tally(resp, route, &mut used))
            .collect();
        Some(Ok(Ready {
            base,
            plan,
            summaries,
            used,
            waited,
        }))
    }

    /// Runs the pass from a ready candidate through the pass runner. `Err` when it was not
    /// applied and the pass should run as usual (it would not gain enough, or its plan did
    /// not assemble); otherwise the runner's result, the summary use, the plan (for the
    /// report) and what became of the candidate (used; discarded as a lost race when the
    /// store refused the commit).
    pub(crate) async fn run_prepared(
        &mut self,
        t: &mut Transcript,
        mut ready: Ready,
        overflow: bool,
    ) -> Result<
        (
            Result<Applied, PassFailure>,
            SummaryUse,
            BatchPlan,
            PreparedUse,
        ),
        PreparedUse,
    > {
        let mut used = ready.used;
        let summaries = std::mem::take(&mut ready.summaries);
        let mut job = Job::Batch {
            plan: &mut ready.plan,
            summarize: true,
            overflow,
            prepared: Some(Prepared {
                base: &ready.base,
                summaries,
            }),
        };
        let result = self.run_pass(t, &mut job, &mut used).await;
        let outcome = match &result {
            Ok(Applied::NoGain) => {
                return Err(self.settled(
                    ready.report(PreparedOutcome::Discarded(DiscardReason::Insufficient)),
                ));
            }
            // Not assembled (an apply failure after the commit carries a cause): nothing was
            // committed and no cooldown started.
            Err(f) if f.kind == FailureKind::Plan && f.cause.is_none() => {
                return Err(
                    self.settled(ready.report(PreparedOutcome::Discarded(DiscardReason::Failed)))
                );
            }
            Err(f) if f.kind == FailureKind::StaleGeneration => {
                PreparedOutcome::Discarded(DiscardReason::LostRace)
            }
            Err(_) => PreparedOutcome::Discarded(DiscardReason::Failed),
            Ok(Applied::Changed { .. }) => PreparedOutcome::Used,
        };
        let prepared = self.settled(ready.report(outcome));
        Ok((result, used, ready.plan, prepared))
    }

    /// Records what became of a candidate (used, or discarded at a trigger) in the totals.
    pub(crate) fn settled(&mut self, u: PreparedUse) -> PreparedUse {
        self.rt.last_prepared = Some(u);
        match u.outcome {
            PreparedOutcome::Used => self.rt.prepared_totals.used += 1,
            PreparedOutcome::Discarded(reason) => {
                self.rt.prepared_totals.discarded += 1;
                self.rt.prepared_totals.wasted_tokens += u.summary_tokens;
                tracing::debug!(
                    session = %self.session_id,
                    reason = reason.as_str(),
                    wasted_tokens = u.summary_tokens,
                    "summary prepared ahead: discarded"
                );
            }
        }
        u
    }

    /// Discards the waiting candidate, if any (an undo or a reload makes it stale).
    pub(crate) fn discard_waiting(&mut self, reason: DiscardReason) {
        if let Some(cand) = self.rt.prepared.take() {
            self.discard(cand, reason);
        }
    }

    /// Discards `cand`: aborts its task, and counts what it cost when it had finished.
    fn discard(&mut self, mut cand: Candidate, reason: DiscardReason) -> PreparedUse {
        cand.task.abort();
        // A call that had finished was paid for; one cut short is not known.
        let summary_tokens = match cand.result.try_recv() {
            Ok(Some(out)) => out.tokens(),
            _ => 0,
        };
        self.settled(PreparedUse {
            outcome: PreparedOutcome::Discarded(reason),
            summary_tokens,
            waited: Duration::ZERO,
        })
    }

    /// The store generation the compressor holds (`None` without a store).
    fn generation_now(&self) -> Option<u64> {
        #[cfg(feature = "store")]
        return self.store_generation();
        #[cfg(not(feature = "store"))]
        return None;
    }
}

/// The plan a candidate is made from (and checked against at the trigger): a forced summary
/// plan of `messages` alone, uncalibrated, so the same messages give the same plan whatever the
/// provider reported meanwhile.
fn plan_prepared(
    messages: Vec<Message>,
    compacted: bool,
    counter: &dyn compaction_core::TokenCounter,
    threshold: u64,
    cfg: &batch::BatchConfig,
) -> (Transcript, BatchPlan) {
    let base = Transcript::new(messages, counter);
    let req = BatchRequest {
        force: true,
        prune_only: false,
        focus: None,
        compacted,
    };
    let plan = batch::plan_batch(&base, threshold, cfg, &req, counter);
    (base, plan)
}

/// The hash of a plan's summary jobs (what the summaries were written from), or `None` when
/// the plan does not summarize, or a job reaches the end of the `len` planned-against
/// messages (its summary would then border messages appended later, which the plan did not
/// see).
fn digest(plan: &BatchPlan, len: usize) -> Option<u64> {
    let BatchStep::Summarize(jobs) = &plan.step else {
        return None;
    };
    if jobs.is_empty() || jobs.iter().any(|j| j.range.end >= len) {
        return None;
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for j in jobs {
        format!("{:?}", j.kind).hash(&mut h);
        j.range.hash(&mut h);
        j.material.hash(&mut h);
        j.previous_summary.hash(&mut h);
        j.focus.hash(&mut h);
        j.budget_tokens.hash(&mut h);
        j.ledger_max_tokens.hash(&mut h);
    }
    Some(h.finish())
}

/// Every request in order under the one call policy, as a pass makes them (each carrying the
/// pass's deadline); the first failure stops it.
async fn summarize_all(
    requests: &[SummaryRequest],
    calls: &dyn compaction_llm::Summarizer,
) -> Result<Vec<(SummaryResponse, Route)>, CallFailure> {
    let mut out = Vec::with_capacity(requests.len());
    for req in requests {
        out.push(crate::breaker::summarize(calls, req).await?);
    }
    Ok(out)
}
