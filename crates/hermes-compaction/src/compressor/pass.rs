//! The one pass pipeline. Every pass the compressor makes (batch, prune-only, proactive and
//! overflow passes; micro absorptions, turn progress and defrags) is planned by its hook and
//! then fed to [`Compressor::run_pass`] as a [`Job`], which runs the same steps for all of
//! them:
//!
//! 1. **summarize** each request under the one call policy (`breaker`): auth and quota abort,
//!    another failure (a panicking summarizer included: it is caught and counts as transient)
//!    uses the extractive fallback when configured, and one circuit breaker is shared by every
//!    pass;
//! 2. **assemble** the edit (a panic in assembly is caught: a plan failure);
//! 3. **gain check**: a pass that does not gain commits nothing ([`Applied::NoGain`]; the
//!    rule is the job's: a batch pass must shrink the transcript, a defrag must shrink the
//!    rolling summary as core measures it, an absorption may add the marker's scaffolding);
//! 4. **commit** with `archive_and_compact` (with a store), then **apply** in memory, keeping
//!    the inverse for `undo_last`;
//! 5. **record** the outcome in the runtime state (cooldown, micro state, epoch).
//!
//! An undo is a job too ([`Job::Undo`]): the inverse of the last pass, with no summary, no
//! gain check, committed with the history label `restore`, applied, and recorded by putting
//! back the state from before the pass it reverts.
//!
//! The result is one `Result<Applied, PassFailure>`; the hooks derive their reports from it
//! and emit the telemetry line, so a report's outcome and failure cannot disagree.

use compaction_core::batch::{self, BatchPlan, SummaryJob};
use compaction_core::micro::{
    self, MicroConfig, MicroEvent, MicroOutcome, MicroPlan, MicroState, MicroStep,
};
use compaction_core::{Edit, MarkerKind, Message, Splice, Transcript};
use compaction_llm::{ErrorClass, SummaryKind, SummaryRequest, WarmPrefix};

use super::{Compressor, ThrashState};
use crate::report::{Applied, FailureKind, PassFailure, SummaryUse};

/// What reverting the last pass needs: the inverse edit (in the coordinates of the transcript
/// the pass produced), what the pass wrote (to check, by wire bytes, that the transcript still
/// holds it: the messages share their bodies, so keeping them costs no copy), and the
/// compressor state from before the pass.
#[derive(Debug)]
pub(crate) struct LastPass {
    pub(crate) inverse: Edit,
    pub(crate) written: Vec<Vec<Message>>,
    pub(crate) thrash: ThrashState,
    pub(crate) micro: MicroState,
}

/// A planned pass, as the runner takes it.
pub(crate) enum Job<'p> {
    /// A batch pass (threshold, manual, proactive prune, prune-only or overflow).
    Batch {
        /// The plan; assembly takes its prune edit.
        plan: &'p mut BatchPlan,
        /// The plan summarizes (the session is compacted once it is applied).
        summarize: bool,
        /// An overflow pass: applied even when its commit fails.
        overflow: bool,
        /// The summaries were prepared ahead (`prepare`): the plan was made over `base` (the
        /// transcript's first messages) and is assembled against it, with no summarizer call.
        prepared: Option<Prepared<'p>>,
    },
    /// A micro pass (absorb, turn progress or defrag).
    Micro {
        /// The plan.
        plan: &'p MicroPlan,
        /// The configuration it was planned with.
        cfg: &'p MicroConfig,
        /// What assembly produced (set by the runner).
        outcome: Option<MicroOutcome>,
    },
    /// The reversal of the last pass (`undo_last`), checked against the transcript by the
    /// caller.
    Undo {
        /// What the runner remembered of the pass: its inverse edit and the state from before
        /// it. Taken by the runner.
        last: Option<LastPass>,
    },
}

/// Summaries prepared ahead, and the transcript prefix their plan was made over.
pub(crate) struct Prepared<'p> {
    pub(crate) base: &'p Transcript,
    pub(crate) summaries: Vec<String>,
}

/// The step of the pipeline at which a pass failed (what the runtime records differs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Summarize,
    Assemble,
    Commit,
    Apply,
}

/// The cause a report gives when an edit the store may already have committed could not be
/// applied to the transcript (unreachable: assembly validates the edit first).
pub(crate) const APPLY_AFTER_COMMIT: &str = "the pass could not be applied to the transcript after it was committed: the store may be ahead of the transcript (call `reload`)";

impl Compressor {
    /// Runs a planned pass through the pipeline (see the [module docs](self)) and records its
    /// outcome in the runtime state. `used` says how its summaries were written, also when it
    /// failed. Never panics on a summarizer or an assembly panic.
    pub(crate) async fn run_pass(
        &mut self,
        t: &mut Transcript,
        job: &mut Job<'_>,
        used: &mut SummaryUse,
    ) -> Result<Applied, PassFailure> {
        let tokens_before = t.current_tokens();
        // 1. Summarize (unless the summaries were prepared ahead).
        let (requests, mut summaries) = match job {
            Job::Batch {
                prepared: Some(p), ..
            } => (Vec::new(), std::mem::take(&mut p.summaries)),
            _ => (self.requests(job, t), Vec::new()),
        };
        // One deadline over every summarizer call of the pass (`auxiliary.compression.deadline_secs`),
        // carried by the requests themselves.
        let deadline = self.settings.call.pass_deadline();
        let requests = requests.into_iter().map(|r| r.with_deadline(deadline));
        for req in requests {
            match self.summarize_under_policy(&req, used).await {
                Ok(text) => summaries.push(text),
                Err(class) => {
                    return Err(self.failed(job, Stage::Summarize, FailureKind::Summarizer(class)));
                }
            }
        }
        // 2. Assemble; a panic in core is a plan failure, never the caller's.
        let counter = self.counter_arc();
        let assembled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match job {
            Job::Batch { plan, prepared, .. } => {
                // A prepared plan was made over the transcript's first messages: its edit
                // touches only them, so it applies to the transcript as it is.
                let base = prepared.as_ref().map_or(&*t, |p| p.base);
                batch::assemble_taking_prune(base, plan, &summaries, self.batch_settings())
                    .map(Some)
                    .map_err(drop)
            }
            Job::Micro { plan, cfg, outcome } => {
                let summary = summaries.first().map_or("", String::as_str);
                micro::assemble_micro(t, plan, summary, cfg, counter.as_ref())
                    .map(|o| {
                        let edit = o.edit().cloned();
                        *outcome = Some(o);
                        edit
                    })
                    .map_err(drop)
            }
            Job::Undo { last } => Ok(last.as_ref().map(|l| l.inverse.clone())),
        }));
        let edit = match assembled {
            Ok(Ok(edit)) => edit,
            Ok(Err(())) | Err(_) => {
                return Err(self.failed(job, Stage::Assemble, FailureKind::Plan));
            }
        };
        // 3. Gain check.
        let threshold = self.threshold_tokens();
        let Some(mut edit) = edit.filter(|e| gains(t, e, job, counter.as_ref(), threshold)) else {
            if let Job::Micro {
                outcome: Some(o), ..
            } = job
            {
                // Core counts a defrag that did not shrink enough against the next one.
                self.rt.micro_record(MicroEvent::Assembled(o));
            }
            return Ok(Applied::NoGain);
        };
        // 4. Commit, then apply.
        let mut unpersisted = None;
        let committed = match job {
            Job::Undo { .. } => self.persist_restore(t, &mut edit).await,
            _ => self.persist_edit(t, &mut edit).await,
        };
        if let Err(e) = committed {
            let overflow = matches!(job, Job::Batch { overflow: true, .. });
            let f = PassFailure::from(e);
            if !overflow {
                return Err(self.failed_with(job, Stage::Commit, f));
            }
            // An overflow pass goes on in memory: the agent cannot continue otherwise. The
            // store keeps the rows from before until the next store write resynchronises it.
            self.keep_unpersisted(t, &edit);
            unpersisted = Some(f);
        }
        let earliest_changed_index = edit.earliest_changed_index();
        if !matches!(job, Job::Undo { .. }) {
            // One level of undo: an undo itself is not remembered.
            self.remember_pass(t, &edit);
        }
        if edit.apply_to(t, counter.as_ref()).is_err() {
            // Unreachable: assembly validated the edit against this transcript. Flagged all
            // the same: a store may already hold the pass the transcript lacks.
            tracing::warn!("{APPLY_AFTER_COMMIT}");
            let f = PassFailure {
                kind: FailureKind::Plan,
                cause: Some(APPLY_AFTER_COMMIT.into()),
                store_generation: None,
            };
            return Err(self.failed_with(job, Stage::Apply, f));
        }
        // 5. Record.
        self.applied(job, tokens_before, t.current_tokens());
        Ok(Applied::Changed {
            earliest_changed_index,
            unpersisted,
        })
    }

    /// The summary requests of a job, in order. A batch job whose span lies within the
    /// agent's last request is a warm-cache request over it, when those are on
    /// ([`Compressor::warm_prefix`]); micro passes stay standalone (their spans are small).
    pub(super) fn requests(&self, job: &Job<'_>, t: &Transcript) -> Vec<SummaryRequest> {
        match job {
            Job::Batch { plan, .. } => match &plan.step {
                batch::BatchStep::Summarize(jobs) => {
                    let prefix = self.warm_prefix(t);
                    jobs.iter()
                        .map(|j| {
                            let warm = prefix
                                .clone()
                                .and_then(|p| WarmPrefix::new(p, j.range.clone()));
                            self.batch_request(j).with_warm(warm)
                        })
                        .collect()
                }
                _ => Vec::new(),
            },
            Job::Micro { plan, .. } => self.micro_request(plan).into_iter().collect(),
            Job::Undo { .. } => Vec::new(),
        }
    }

    fn batch_request(&self, job: &SummaryJob) -> SummaryRequest {
        batch_request(
            job,
            self.config().compression.summary_max_tokens,
            self.today(),
        )
    }

    /// The one request of a micro plan that summarizes (absorb or defrag).
    fn micro_request(&self, plan: &MicroPlan) -> Option<SummaryRequest> {
        let c = &self.config().compression;
        let (kind, previous, material, messages, budget, ledger_kept) = match &plan.step {
            MicroStep::Defrag(job) => (
                SummaryKind::Defrag,
                Some(job.summary_text.clone()),
                String::new(),
                Vec::new(),
                (job.summary_tokens / 2).max(64) as u32,
                false,
            ),
            MicroStep::Absorb(job) => (
                match job.kind {
                    MarkerKind::Progress => SummaryKind::TurnProgress,
                    _ => SummaryKind::MicroMerge,
                },
                job.previous_summary.clone(),
                job.material.clone(),
                job.messages.clone(),
                c.micro_compact_defrag_threshold_tokens.max(256) as u32,
                c.ledger_max_tokens > 0 && !job.ledger.is_empty(),
            ),
            _ => return None,
        };
        let mut req =
            SummaryRequest::new(kind, material, budget, self.today()).with_messages(messages);
        req.ledger_kept = ledger_kept;
        req.previous_summary =
            previous.map(|p| compaction_core::marker::without_recall_note(&p).to_owned());
        Some(req)
    }

    /// One summary under the policy every pass shares, tallied in `used`; the text carries
    /// the recall note when the compacted content stays in a store.
    async fn summarize_under_policy(
        &self,
        req: &SummaryRequest,
        used: &mut SummaryUse,
    ) -> Result<String, ErrorClass> {
        let (resp, route) = self.summarize_one(req).await.map_err(|f| {
            used.summarizer_skipped |= f.skipped;
            f.class
        })?;
        Ok(self.tally(resp, route, used))
    }

    /// A summary that came back (now or prepared ahead), tallied in `used`; the text carries
    /// the recall note when the compacted content stays in a store.
    pub(crate) fn tally(
        &self,
        resp: compaction_llm::SummaryResponse,
        route: crate::breaker::Route,
        used: &mut SummaryUse,
    ) -> String {
        if let crate::breaker::Route::Fallback { skipped, class } = route {
            used.fallback_used = true;
            used.summarizer_skipped |= skipped;
            used.fallback_cause.get_or_insert(class);
        }
        if resp.extractive
            && self.summarizer().name() != compaction_llm::extractive::EXTRACTIVE_MODEL
        {
            used.fallback_used = true;
        }
        if let Some(u) = resp.usage {
            used.summary_tokens += u.prompt_tokens + u.completion_tokens;
        }
        if self.has_store() {
            // What was compacted stays in the store and can be recalled.
            compaction_core::marker::with_recall_note(&resp.text)
        } else {
            resp.text
        }
    }

    fn failed(&mut self, job: &Job<'_>, stage: Stage, kind: FailureKind) -> PassFailure {
        self.failed_with(job, stage, kind.into())
    }

    /// Records a failed pass in the runtime state and returns its failure. A batch pass
    /// starts the escalating cooldown (not for a stale generation, which `reload` cures, nor
    /// after an apply failure); a micro pass counts the failure against its exchange (a store
    /// failure only records the plan: the exchange is not to blame).
    fn failed_with(&mut self, job: &Job<'_>, stage: Stage, f: PassFailure) -> PassFailure {
        match (job, stage) {
            (_, Stage::Apply) | (Job::Undo { .. }, _) => {}
            // A prepared plan that did not assemble is discarded and the pass runs as usual.
            (
                Job::Batch {
                    prepared: Some(_), ..
                },
                Stage::Assemble,
            ) => {}
            (Job::Batch { .. }, Stage::Commit) if f.kind == FailureKind::StaleGeneration => {}
            (Job::Batch { .. }, _) => self.record_failure(),
            (Job::Micro { plan, .. }, Stage::Commit) => {
                self.rt.micro_record(MicroEvent::Planned(plan));
            }
            (Job::Micro { plan, .. }, _) => {
                self.rt.micro_record(MicroEvent::Failed(plan));
                if let FailureKind::Summarizer(class) = f.kind {
                    tracing::warn!(
                        class = class.as_str(),
                        "Micro-compaction: summarizer failed"
                    );
                }
            }
        }
        f
    }

    /// Records an applied pass in the runtime state.
    fn applied(&mut self, job: &mut Job<'_>, tokens_before: u64, tokens_after: u64) {
        match job {
            Job::Undo { last } => {
                // The state from before the reverted pass; automatic passes then wait
                // `failure_cooldown_secs`, so the next request does not compact again at once.
                if let Some(last) = last.take() {
                    let pause = self.settings.config.compression.failure_cooldown_secs * 1_000;
                    let mut thrash = last.thrash;
                    thrash.paused_until_ms = Some(
                        thrash
                            .paused_until_ms
                            .unwrap_or(0)
                            .max(self.now_ms() + pause),
                    );
                    self.rt.restore(thrash, last.micro);
                }
            }
            Job::Batch { summarize, .. } => {
                self.rt.state.consecutive_failures = 0;
                self.rt.state.cooldown_until_ms = None;
                if *summarize {
                    self.rt.state.compacted = true;
                    // The next micro pass resumes from the batch marker.
                    self.rt.micro_record(MicroEvent::Reset);
                }
                self.rt.epoch += 1;
                self.rt.awaiting_effect = true;
                // Proactive prune re-arms only after the transcript has grown again by what
                // this pass reclaimed.
                self.rt.proactive_rearm_at =
                    Some(tokens_after + tokens_before.saturating_sub(tokens_after));
            }
            Job::Micro { outcome, .. } => {
                if let Some(o) = outcome {
                    self.rt.micro_record(MicroEvent::Assembled(o));
                }
                // Usage measured before the rewrite no longer applies.
                self.rt.epoch += 1;
            }
        }
    }

    /// One summary under the policy every pass shares (`breaker`): the fallback rule, the
    /// call's time budget (the request's deadline) and the circuit breaker.
    async fn summarize_one(
        &self,
        req: &SummaryRequest,
    ) -> Result<(compaction_llm::SummaryResponse, crate::breaker::Route), crate::breaker::CallFailure>
    {
        crate::breaker::summarize(self.calls.as_ref(), req).await
    }

    fn record_failure(&mut self) {
        self.rt.state.consecutive_failures += 1;
        let c = &self.settings.config.compression;
        let factor = 1u64 << (self.rt.state.consecutive_failures - 1).min(16);
        let secs =
            (c.failure_cooldown_secs.saturating_mul(factor)).min(c.failure_cooldown_max_secs);
        self.rt.state.cooldown_until_ms = Some(self.now_ms() + secs * 1_000);
    }

    /// Remembers how to revert `edit`, about to be applied to `t` (costs what the edit
    /// replaces, not the transcript).
    fn remember_pass(&mut self, t: &Transcript, edit: &Edit) {
        let (inverse, written) = inverse(t.messages(), edit);
        self.rt.keep_last_pass(LastPass {
            inverse,
            written,
            thrash: self.state().clone(),
            micro: self.rt.micro_state().clone(),
        });
    }
}

/// The edit that turns `edit.apply(before)` back into `before`, in the coordinates of the
/// edited transcript, with what each of its splices must find there.
fn inverse(before: &[Message], edit: &Edit) -> (Edit, Vec<Vec<Message>>) {
    let mut offset = 0isize;
    let mut splices = Vec::with_capacity(edit.splices.len());
    let mut written = Vec::with_capacity(edit.splices.len());
    for s in &edit.splices {
        let start = (s.range.start as isize + offset) as usize;
        splices.push(Splice {
            range: start..start + s.replacement.len(),
            replacement: before[s.range.clone()].to_vec(),
        });
        written.push(s.replacement.clone());
        offset += s.replacement.len() as isize - s.range.len() as isize;
    }
    (Edit { splices }, written)
}

/// The summary request of a batch job, `summary_max_tokens` its configured budget and `today`
/// the date for the prompt.
pub(crate) fn batch_request(
    job: &SummaryJob,
    summary_max_tokens: u32,
    today: String,
) -> SummaryRequest {
    let kind = match (job.kind, &job.previous_summary) {
        (MarkerKind::Progress, _) => SummaryKind::TurnProgress,
        (_, Some(_)) => SummaryKind::BatchUpdate,
        (_, None) => SummaryKind::BatchFirst,
    };
    // The job's budget: `summary_max_tokens`, or less when the window leaves less room (core
    // sizes it so the pass lands under the threshold); a job that folds older summaries up to
    // `FOLD_BUDGET_FACTOR` times that, to keep what they held.
    let factor = match kind {
        SummaryKind::BatchUpdate => batch::FOLD_BUDGET_FACTOR as u32,
        _ => 1,
    };
    let budget = u32::try_from(job.budget_tokens)
        .unwrap_or(u32::MAX)
        .min(summary_max_tokens.max(1).saturating_mul(factor));
    let mut req = SummaryRequest::new(kind, job.material.clone(), budget, today)
        .with_messages(job.messages.clone())
        .with_ledger_kept(job.ledger_max_tokens > 0 && !job.ledger.is_empty());
    req.previous_summary = job
        .previous_summary
        .as_deref()
        .map(|p| compaction_core::marker::without_recall_note(p).to_owned());
    req.focus = job.focus.clone();
    req
}

/// The gain check: whether committing `edit` is worth it. A batch pass must shrink the
/// transcript (one from summaries prepared ahead, to under the `threshold`: it leaves what
/// was appended since verbatim); a micro edit is the one core kept (a defrag that did not
/// shrink the rolling summary enough has none), and an absorption may add the marker's
/// scaffolding.
fn gains(
    t: &Transcript,
    edit: &Edit,
    job: &Job<'_>,
    counter: &dyn compaction_core::TokenCounter,
    threshold: u64,
) -> bool {
    match job {
        Job::Micro { .. } | Job::Undo { .. } => true,
        Job::Batch { prepared, .. } => {
            let (removed, added) = edit.token_change(t, counter);
            added < removed
                && (prepared.is_none()
                    || t.current_tokens().saturating_sub(removed) + added < threshold)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inverse_of_an_edit_restores_the_original() {
        let before: Vec<Message> = (0..8).map(|i| Message::user(format!("m{i}"))).collect();
        let edit = Edit {
            splices: vec![
                Splice {
                    range: 0..0,
                    replacement: vec![Message::assistant("new first")],
                },
                Splice {
                    range: 1..4,
                    replacement: vec![Message::assistant("summary")],
                },
                Splice {
                    range: 5..6,
                    replacement: vec![Message::user("a"), Message::user("b")],
                },
                Splice {
                    range: 7..8,
                    replacement: vec![],
                },
            ],
        };
        let after = edit.apply(&before).unwrap();
        let (inv, written) = inverse(&before, &edit);
        assert_eq!(inv.apply(&after).unwrap(), before);
        assert_eq!(written[2].len(), 2);
    }
}
