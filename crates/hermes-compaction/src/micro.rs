//! Micro-compaction hooks of the [`Compressor`]: fold the oldest exchange into one rolling
//! summary after each turn ([`Compressor::finalize_turn`]), and the oldest tool group of a long
//! turn into its progress marker after each tool round ([`Compressor::after_tool_round`]).
//!
//! Best effort throughout: nothing here returns an error or panics on a summarizer, store or
//! planning failure. A failed pass leaves the transcript byte-identical, is counted (the same
//! exchange failing `micro_compact_max_consecutive_failures` times is skipped), logged without
//! content, and reported in the [`MicroReport`] and in telemetry.

use std::time::Instant;

use compaction_core::Transcript;
use compaction_core::micro::{self, MicroEvent, MicroHook, MicroRequest, MicroStep};

use crate::compressor::Compressor;
pub use crate::compressor::micro_config;
use crate::compressor::pass::Job;
use crate::config::{ReclaimGate, Timing};
use crate::report::{Applied, SummaryUse};
use crate::report::{MicroDetail, MicroReport};
use compaction_core::micro::MicroOutcomeKind;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Hook {
    Turn,
    ToolRound,
}

impl Compressor {
    /// After a turn that finished normally: absorb the oldest whole exchange of the middle
    /// into the rolling summary (or defrag it). Runs every `micro_compact_every_n_turns`-th
    /// turn when `compression.micro_compact` is on; the turn counter advances every call.
    /// Returns `None` when no pass ran. Never fails.
    pub async fn finalize_turn(&mut self, t: &mut Transcript) -> Option<MicroReport> {
        self.micro_hook(t, Hook::Turn).await
    }

    /// After a tool round inside a turn: when the active turn has outgrown the tail, absorb
    /// its oldest tool group into the turn-progress marker. Same switch, cadence and reclaim
    /// gate as [`finalize_turn`](Self::finalize_turn). Never fails.
    pub async fn after_tool_round(&mut self, t: &mut Transcript) -> Option<MicroReport> {
        self.micro_hook(t, Hook::ToolRound).await
    }

    /// The micro state (cursor, rolling summary, failure counts).
    pub(crate) fn micro_state(&self) -> &micro::MicroState {
        self.rt.micro_state()
    }

    async fn micro_hook(&mut self, t: &mut Transcript, hook: Hook) -> Option<MicroReport> {
        if !self.config().compression.micro_compact {
            return None;
        }
        // `compression.timing`: `between_turns` makes no pass inside a tool loop, `manual` none.
        match self.config().compression.timing {
            Timing::Eager => {}
            Timing::BetweenTurns if hook == Hook::Turn => {}
            Timing::BetweenTurns | Timing::Manual => return None,
        }
        let every = self.micro_every_n_turns();
        if !self.rt.micro_tick(hook == Hook::ToolRound, every) {
            return None;
        }
        self.micro_pass(t, hook).await
    }

    async fn micro_pass(&mut self, t: &mut Transcript, hook: Hook) -> Option<MicroReport> {
        let started = Instant::now();
        if crate::report::Resume::at(t).is_some_and(|r| !r.results_complete) {
            // Never between a tool call and its result: the host still owes results.
            return None;
        }
        let mut cfg = self.micro_settings().clone();
        if self.config().compression.micro_compact_min_reclaim_tokens == ReclaimGate::Auto {
            cfg.min_reclaim_tokens = self.cache_gate(t);
        }
        let compacted = self.state().compacted;
        // Nothing in a micro pass may fail the turn: a bug in planning is caught, logged
        // (without content) and the pass skipped.
        // Core's planner resumes the scans of its previous plans (a panic drops them).
        let counter = self.counter_arc();
        let req = MicroRequest {
            transcript: t,
            hook: match hook {
                Hook::Turn => MicroHook::Turn,
                Hook::ToolRound => MicroHook::ToolRound,
            },
            threshold_tokens: self.threshold_tokens(),
            compacted,
            config: &cfg,
            counter: counter.as_ref(),
        };
        let planned =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.rt.micro_plan(&req)));
        let Ok(plan) = planned else {
            tracing::error!("Micro-compaction: planning panicked; pass skipped");
            return None;
        };
        if let (Some(cursor), Some((index, kind))) = (plan.cursor, plan.rehydrated_from)
            && self.rt.micro_state().cursor.is_none()
        {
            tracing::info!(
                cursor,
                marker_index = index,
                marker_kind = kind.as_str(),
                "Micro-compaction: cursor and rolling summary rehydrated from the transcript"
            );
        }
        let mut report = MicroReport::start(
            MicroOutcomeKind::Noop,
            t,
            self.threshold_tokens(),
            MicroDetail {
                rolling_summary_tokens: plan.rolling_summary_tokens,
                ..MicroDetail::default()
            },
        );
        report.planned_with(&plan, &cfg, None);
        match &plan.step {
            MicroStep::Noop(_) => {
                self.rt.micro_record(MicroEvent::Planned(&plan));
                return Some(self.micro_finish(report, started));
            }
            MicroStep::Gated { .. } => {
                self.rt.micro_record(MicroEvent::Planned(&plan));
                report.outcome = MicroOutcomeKind::Gated;
                return Some(self.micro_finish(report, started));
            }
            MicroStep::Skip { .. } => {
                self.rt.micro_record(MicroEvent::Planned(&plan));
                report.outcome = MicroOutcomeKind::ExchangeSkipped;
                tracing::info!(
                    cursor = self.rt.micro_state().cursor,
                    "Micro-compaction: skipping exchange after consecutive failures"
                );
                return Some(self.micro_finish(report, started));
            }
            MicroStep::Defrag(_) => {}
            MicroStep::Absorb(job) => report.detail.exchange_tokens = job.exchange_tokens,
        }
        let defrag = matches!(plan.step, MicroStep::Defrag(_));
        let mut used = SummaryUse::default();
        let mut job = Job::Micro {
            plan: &plan,
            cfg: &cfg,
            outcome: None,
        };
        let result = self.run_pass(t, &mut job, &mut used).await;
        let assembled = match &job {
            Job::Micro { outcome, .. } => outcome.as_ref(),
            Job::Batch { .. } | Job::Undo { .. } => None,
        };
        let changed = matches!(result, Ok(Applied::Changed { .. }));
        let kind = assembled.map(micro::MicroOutcome::kind);
        report.settle(result, used, kind, defrag, t);
        report.planned_with(&plan, &cfg, assembled);
        if !changed {
            return Some(self.micro_finish(report, started));
        }
        report.detail.rolling_summary_tokens = self
            .rt
            .micro_state()
            .rolling_summary
            .as_deref()
            .map(compaction_core::tokens::estimate_text)
            .unwrap_or(0);
        match report.outcome {
            MicroOutcomeKind::Defrag => tracing::info!(
                chars = self
                    .rt
                    .micro_state()
                    .rolling_summary
                    .as_deref()
                    .map(str::len),
                "Micro-compaction defrag: rolling summary re-summarized"
            ),
            _ => tracing::info!(
                before = report.stats.messages_before,
                after = report.stats.messages_after,
                "Micro-compaction: messages before -> after"
            ),
        }
        Some(self.micro_finish(report, started))
    }

    /// The reclaim gate the provider's cache economics suggest, used with
    /// `micro_compact_min_reclaim_tokens = "auto"` (spec: the rewrite must save
    /// more than re-caching the prefix it invalidates costs), over a horizon of
    /// `micro_compact_gate_horizon_requests` requests. A provider whose profile is unknown
    /// (`cache_profile = "auto"` with an unrecognised model) is assumed to price cached reads
    /// at [`ASSUMED_CACHED_READ_RATIO`] of the input price, as most providers now do. The gate
    /// is 0 with `cache_profile = "none"`, with `cache_aware` off, or for a profile without a
    /// cache. It charges the prefix after the cache has expired too: the time-to-live rule
    /// (`cold_cache_rewrites`) leaves it alone, as a free micro pass raised the cost measured
    /// on the raw logs.
    pub(crate) fn cache_gate(&self, t: &Transcript) -> u64 {
        let c = &self.config().compression;
        if !c.cache_aware || c.cache_profile == "none" {
            return 0;
        }
        let profile = self
            .config()
            .cache_profile()
            .unwrap_or_else(assumed_profile);
        // The prefix a pass invalidates runs from the cursor (or the start) to the end. It is
        // charged even after the cache has expired: a free micro pass there raised the cost
        // on the raw logs (docs/ECONOMICS.md, "Free rewrites after the cache has gone cold").
        let from = self.rt.micro_state().cursor.unwrap_or(0).min(t.len());
        let prefix = t.tokens_in(from..t.len());
        let horizon = c
            .micro_compact_gate_horizon_requests
            .max(self.micro_every_n_turns());
        // The summarizer re-writes the rolling summary (its text, not the ledger) each pass.
        let summary = self
            .rt
            .micro_state()
            .rolling_summary
            .as_deref()
            .map_or(0, |b| {
                self.counter()
                    .count_text(compaction_core::ledger::Ledger::split(b).0)
            })
            .max(MIN_SUMMARY_TOKENS);
        crate::cache::micro_reclaim_gate(&profile, prefix, summary, horizon)
    }

    fn micro_finish(&mut self, mut report: MicroReport, started: Instant) -> MicroReport {
        report.stats.duration = started.elapsed();
        report.detail.cursor = self.rt.micro_state().cursor;
        let (passes_total, tokens_saved_total) = self
            .rt
            .count_micro_pass(report.stats.tokens_before as i64 - report.stats.tokens_after as i64);
        #[cfg(feature = "telemetry")]
        crate::events::emit_micro(
            self.session_id(),
            self.config(),
            &report,
            passes_total,
            tokens_saved_total,
            self.summarizer().name(),
        );
        #[cfg(not(feature = "telemetry"))]
        let _ = (passes_total, tokens_saved_total);
        report
    }
}

pub use crate::config::ASSUMED_CACHED_READ_RATIO;
use crate::config::assumed_profile;

/// The smallest rolling summary the gate assumes a pass writes, in tokens.
const MIN_SUMMARY_TOKENS: u64 = 256;
