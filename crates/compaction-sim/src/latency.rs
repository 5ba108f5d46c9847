//! How long the agent waits for compaction (issue 34, items 5 and 2): a summarizer latency
//! model, the added wait of each pass that calls the summarizer, and a summary prepared
//! ahead of the trigger, with the cost of the candidates it throws away.
//!
//! - **Latency.** A summarizer call takes [`LatencyModel::fixed_ms`] plus
//!   [`LatencyModel::per_output_token_ms`] per output token (the tokens the replay counted for
//!   that call). A pass's calls run one after another, so a pass takes the sum.
//! - **The wait at the trigger.** A batch pass runs in `before_request`, on the agent's
//!   critical path: the request waits for the whole pass ([`Waits::trigger_ms`], one entry per
//!   pass that called the summarizer).
//! - **Micro passes.** One after a tool round (`after_tool_round`) runs inside the turn,
//!   before the next request: that request waits for all of it. One after a turn
//!   (`finalize_turn`) starts when the turn's last response arrived and runs while the user
//!   reads and types: the next request waits only for what is left of it when it is sent, 0
//!   when the session ends first ([`Waits::micro_ms`], one entry per micro pass that called the
//!   summarizer).
//! - **A summary prepared ahead** ([`LatencyOptions::prepare_at`]). The replay sets
//!   `compression.prepare_at` on the compressor it replays, so the facade's own mechanism
//!   prepares (`hermes_compaction`'s `compressor::prepare`), and reads what it did: a
//!   candidate started by a hook runs to its end at once (the replay yields to the spawned
//!   task on its current-thread runtime), so its calls are made at a known moment and the
//!   replay is reproducible; it counts as
//!   started at that request's time and takes the model's latency of its own calls. A pass
//!   that used it ([`BatchDetail::prepared`](hermes_compaction::BatchDetail::prepared)) makes the request wait only for what is left of
//!   that latency after the time since it started (0 once the next request comes later than
//!   the calls take). A trigger the compressor put off to the next request (its candidate
//!   missing, stale or insufficient: it starts one from the pass's plan) returns no report:
//!   it is no pass and adds no wait. A candidate the compressor discarded (for the reason
//!   the pass's report gives, else the one `Status::last_prepared` gives) or that no pass used
//!   before the session ended is *wasted*: its calls were made, so their tokens are in the
//!   replay's summary tokens and its cost; they are also reported apart as the
//!   wasted-candidate cost.
//!
//! Simulated time is not shifted by the waits: request times come from the messages'
//! timestamps or the assumed gap between requests, as for pricing.

use serde::Serialize;

use hermes_compaction::{
    BatchReport, Compressor, DiscardReason, PreparedOutcome, PreparedTotals, PreparedUse,
};

use crate::counting::{CountingSummarizer, SummaryUsage};
use crate::pricing::Pricing;
use crate::row::{Row, UNIT_HIT_PRICE, UNIT_SUMMARY_OUTPUT_PRICE};
use crate::{Error, Result};

/// The fixed part of a summarizer call, milliseconds: the time to first token of a
/// frontier model (1.80 s, Artificial Analysis' figure for Claude Sonnet 4.5; see
/// `docs/ECONOMICS.md`).
pub const DEFAULT_FIXED_MS: u64 = 1_800;

/// Milliseconds per output token of a summarizer call: 63 output tokens per second
/// (Artificial Analysis' figure for Claude Sonnet 4.5), rounded to 16 ms.
pub const DEFAULT_PER_OUTPUT_TOKEN_MS: f64 = 16.0;

/// How long a summarizer call takes: a fixed part plus a part per output token.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LatencyModel {
    /// Milliseconds per call (time to first token, the prompt's prefill included).
    pub fixed_ms: u64,
    /// Milliseconds per output token.
    pub per_output_token_ms: f64,
}

impl Default for LatencyModel {
    /// [`DEFAULT_FIXED_MS`] and [`DEFAULT_PER_OUTPUT_TOKEN_MS`].
    fn default() -> Self {
        LatencyModel {
            fixed_ms: DEFAULT_FIXED_MS,
            per_output_token_ms: DEFAULT_PER_OUTPUT_TOKEN_MS,
        }
    }
}

impl LatencyModel {
    /// Milliseconds `calls` calls take, one after another, writing `output_tokens` in all.
    ///
    /// ```
    /// use compaction_sim::latency::LatencyModel;
    ///
    /// let m = LatencyModel { fixed_ms: 2_000, per_output_token_ms: 10.0 };
    /// assert_eq!(m.calls_ms(2, 300), 2 * 2_000 + 3_000);
    /// assert_eq!(m.calls_ms(0, 0), 0);
    /// ```
    pub fn calls_ms(&self, calls: u64, output_tokens: u64) -> u64 {
        let per_token = (self.per_output_token_ms * output_tokens as f64).round();
        self.fixed_ms
            .saturating_mul(calls)
            .saturating_add(per_token as u64)
    }
}

/// The latency options of a simulation: the model and the prepared summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatencyOptions {
    /// How long a summarizer call takes.
    pub model: LatencyModel,
    /// Prepare the summary ahead once the prompt reaches this share of the threshold
    /// (more than 0, less than 1); `None`: no preparation.
    pub prepare_at: Option<f64>,
}

impl LatencyOptions {
    /// Checks the options, naming the command line's flags.
    ///
    /// ```
    /// use compaction_sim::latency::LatencyOptions;
    ///
    /// assert!(LatencyOptions::default().check().is_ok());
    /// let e = LatencyOptions { prepare_at: Some(1.0), ..LatencyOptions::default() };
    /// assert_eq!(
    ///     e.check().unwrap_err().to_string(),
    ///     "--prepare-at must be more than 0 and less than 1 (got 1)"
    /// );
    /// ```
    ///
    /// # Errors
    ///
    /// `prepare_at` outside (0, 1), or a per-token latency that is negative or not finite.
    pub fn check(&self) -> Result<()> {
        if let Some(p) = self.prepare_at
            && !(p > 0.0 && p < 1.0)
        {
            return Err(Error::Config(format!(
                "--prepare-at must be more than 0 and less than 1 (got {p})"
            )));
        }
        let ms = self.model.per_output_token_ms;
        if !ms.is_finite() || ms < 0.0 {
            return Err(Error::Config(format!(
                "--summary-ms-per-token must be a finite number of at least 0 (got {ms})"
            )));
        }
        Ok(())
    }
}

pub use crate::waits::{WaitSummary, Waits};

/// The summary prepared ahead that waits for the next pass, as the replay saw it start.
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// When it started: the time of the request whose hook started it, milliseconds.
    started_ms: u64,
    /// How long its calls take under the model.
    ms: u64,
    /// What its calls cost.
    usage: SummaryUsage,
}

/// What a replay feeds as it calls the hooks (see the [module docs](self)).
pub(crate) struct Tracker {
    options: LatencyOptions,
    /// The compressor prepares summaries ahead (`compression.prepare_at` is set).
    preparing: bool,
    waits: Waits,
    pending: Option<Pending>,
    /// The compressor's prepared totals as last seen.
    seen: PreparedTotals,
    /// The summarizer usage of the wasted candidates.
    wasted: SummaryUsage,
    /// When the running between-turns micro pass ends, milliseconds.
    between_turns_end: Option<u64>,
}

impl Tracker {
    /// A tracker for a compressor that prepares summaries ahead when `preparing`.
    pub(crate) fn new(options: LatencyOptions, preparing: bool) -> Tracker {
        Tracker {
            options,
            preparing,
            waits: Waits::default(),
            pending: None,
            seen: PreparedTotals::default(),
            wasted: SummaryUsage::default(),
            between_turns_end: None,
        }
    }

    /// A request is sent at `now`: it waits for what is left of a between-turns pass.
    pub(crate) fn request_at(&mut self, now: u64) {
        if let Some(end) = self.between_turns_end.take() {
            self.between_turns_wait(end.saturating_sub(now));
        }
    }

    /// A micro pass after a turn, started at `start` (the turn's last request), made the
    /// calls between `before` and `after`.
    pub(crate) fn turn_end(&mut self, before: SummaryUsage, after: SummaryUsage, start: u64) {
        let ms = self.pass_ms(before, after);
        if ms.is_none() {
            return;
        }
        // A pass still running when the next one starts delays it (no request in between).
        let start = match self.between_turns_end.take() {
            Some(end) => {
                self.between_turns_wait(0);
                end.max(start)
            }
            None => start,
        };
        self.between_turns_end = Some(start.saturating_add(ms.unwrap_or(0)));
    }

    /// A micro pass after a tool round made the calls between `before` and `after`: the
    /// next request waits for all of it.
    pub(crate) fn in_turn(&mut self, before: SummaryUsage, after: SummaryUsage) {
        if let Some(ms) = self.pass_ms(before, after) {
            self.waits.micro_ms.push(ms);
        }
    }

    /// `before_request` at `now` made the calls between `before` and `after` and returned
    /// `report`: the request waits for the pass, or, when the pass used the summary prepared
    /// ahead, for what is left of that summary's calls.
    pub(crate) fn trigger(
        &mut self,
        c: &Compressor,
        report: Option<&BatchReport>,
        before: SummaryUsage,
        after: SummaryUsage,
        now: u64,
    ) {
        let prepared = report.and_then(|r| r.detail.prepared.as_ref());
        let used = self.settle(c, prepared);
        let full = self.pass_ms(before, after);
        let wait = match used {
            Some(cand) => {
                let left = cand.ms.saturating_sub(now.saturating_sub(cand.started_ms));
                Some(left.saturating_add(full.unwrap_or(0)))
            }
            None => full,
        };
        if let Some(ms) = wait {
            self.waits.trigger_ms.push(ms);
        }
    }

    /// After any other hook: a candidate it discarded is wasted.
    pub(crate) fn hook(&mut self, c: &Compressor) {
        self.settle(c, None);
    }

    /// After a hook at `now`: when it started a summary prepared ahead, lets that summary's
    /// task run to its end and notes what its calls cost, through `counting`. On the replay's
    /// current-thread runtime a yield runs the spawned task until it ends or waits for a
    /// call; so the calls are made at a known moment and the replay is reproducible.
    pub(crate) async fn started(
        &mut self,
        c: &Compressor,
        counting: &CountingSummarizer,
        now: u64,
    ) {
        if !self.preparing {
            return;
        }
        let totals = c.status().prepared_totals;
        if totals.started == self.seen.started {
            return;
        }
        self.seen.started = totals.started;
        let before = counting.usage();
        tokio::task::yield_now().await;
        // A summarizer that really waits (a provider): until its calls are back.
        while counting.in_flight() > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let usage = counting.usage().minus(before);
        self.waits.prepared += 1;
        self.pending = Some(Pending {
            started_ms: now,
            ms: self
                .options
                .model
                .calls_ms(usage.calls, usage.output_tokens),
            usage,
        });
    }

    /// Closes the replay: a candidate still pending is wasted, a between-turns pass still
    /// running delayed nothing; the waits go into `row`, with the wasted candidates' cost
    /// (already in the row's summary tokens and so in its cost: call after the row is priced
    /// and scored).
    /// The summary calls are priced at `summary_price_ratio` times the pricing's summary
    /// prices, as the row's.
    pub(crate) fn finish(mut self, row: &mut Row, pricing: &Pricing, summary_price_ratio: f64) {
        if self.pending.is_some() {
            self.waste(Waste::Unused);
        }
        if self.between_turns_end.take().is_some() {
            self.between_turns_wait(0);
        }
        let w = &mut self.waits;
        w.wasted_prompt_tokens = self.wasted.prompt_tokens;
        w.wasted_prompt_hit_tokens = self.wasted.prompt_hit_tokens;
        w.wasted_output_tokens = self.wasted.output_tokens;
        let hit = w.wasted_prompt_hit_tokens.min(w.wasted_prompt_tokens);
        let miss = w.wasted_prompt_tokens - hit;
        let out = w.wasted_output_tokens;
        let mtok = |tokens: u64, per_mtok: f64| tokens as f64 * per_mtok / 1e6;
        w.wasted_cost_usd = summary_price_ratio
            * match pricing {
                Pricing::Table(p) => {
                    mtok(miss, p.summary_input_per_mtok)
                        + mtok(hit, p.cached_input_per_mtok)
                        + mtok(out, p.summary_output_per_mtok)
                }
                Pricing::Profile(p) => {
                    mtok(miss, p.input_price_per_mtok)
                        + mtok(hit, p.cached_input_price_per_mtok)
                        + mtok(out, p.output_price_per_mtok)
                }
            };
        w.wasted_unit_cost = summary_price_ratio
            * (miss as f64 + UNIT_HIT_PRICE * hit as f64 + UNIT_SUMMARY_OUTPUT_PRICE * out as f64);
        row.latency = self.waits;
    }

    /// Compares the compressor's prepared totals with those last seen: the pending candidate
    /// was used (returned) or discarded (wasted, for the reason `prepared` gives when a pass
    /// reported it, else the one the compressor's `last_prepared` gives: a trigger put off to
    /// the next request reports no pass, and a candidate dropped before a trigger neither).
    fn settle(&mut self, c: &Compressor, prepared: Option<&PreparedUse>) -> Option<Pending> {
        if !self.preparing {
            return None;
        }
        let totals = c.status().prepared_totals;
        let used = totals.used > self.seen.used;
        let discarded = totals.discarded > self.seen.discarded;
        self.seen = PreparedTotals {
            started: self.seen.started,
            ..totals
        };
        if discarded {
            let last = c.status().last_prepared;
            let why = match prepared.copied().or(last).map(|p| p.outcome) {
                Some(PreparedOutcome::Discarded(r)) => Waste::Discarded(r),
                _ => Waste::Discarded(DiscardReason::GenerationChanged),
            };
            self.waste(why);
        }
        if used {
            self.waits.prepared_used += 1;
            return self.pending.take();
        }
        None
    }

    fn between_turns_wait(&mut self, ms: u64) {
        self.waits.micro_ms.push(ms);
        self.waits.micro_between_turns += 1;
        self.waits.micro_between_turns_waited += u64::from(ms > 0);
    }

    /// The latency of the calls between `before` and `after`; `None` without a call.
    fn pass_ms(&self, before: SummaryUsage, after: SummaryUsage) -> Option<u64> {
        let calls = after.calls.saturating_sub(before.calls);
        let output = after.output_tokens.saturating_sub(before.output_tokens);
        (calls > 0).then(|| self.options.model.calls_ms(calls, output))
    }

    fn waste(&mut self, why: Waste) {
        let Some(cand) = self.pending.take() else {
            return;
        };
        let w = &mut self.waits;
        if cand.usage.calls == 0 {
            // It planned no summary: nothing was called, nothing paid.
            w.prepared_empty += 1;
            return;
        }
        w.prepared_wasted += 1;
        match why {
            Waste::Discarded(DiscardReason::GenerationChanged) => w.wasted_pass_between += 1,
            Waste::Discarded(DiscardReason::SpanChanged) => w.wasted_span_changed += 1,
            Waste::Discarded(DiscardReason::Superseded) => w.wasted_superseded += 1,
            Waste::Discarded(DiscardReason::Insufficient) => w.wasted_insufficient += 1,
            Waste::Discarded(_) => w.wasted_failed += 1,
            Waste::Unused => w.wasted_unused += 1,
        }
        self.wasted = self.wasted.plus(cand.usage);
    }
}

/// Why a candidate was wasted.
#[derive(Clone, Copy)]
enum Waste {
    /// The compressor discarded it.
    Discarded(DiscardReason),
    /// The session ended first.
    Unused,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(calls: u64, output_tokens: u64) -> SummaryUsage {
        SummaryUsage {
            calls,
            output_tokens,
            ..SummaryUsage::default()
        }
    }

    fn tracker() -> Tracker {
        let model = LatencyModel {
            fixed_ms: 5_000,
            per_output_token_ms: 0.0,
        };
        Tracker::new(
            LatencyOptions {
                model,
                prepare_at: None,
            },
            false,
        )
    }

    #[test]
    fn a_between_turns_pass_delays_only_a_request_sent_before_it_ends() {
        let mut w = tracker();
        w.turn_end(usage(0, 0), usage(1, 100), 10_000);
        w.request_at(12_000);
        w.turn_end(usage(1, 100), usage(2, 200), 20_000);
        w.request_at(60_000);
        w.in_turn(usage(2, 200), usage(3, 300));
        w.in_turn(usage(3, 300), usage(3, 300));
        assert_eq!(w.waits.micro_ms, [3_000, 0, 5_000]);
        assert_eq!(
            (
                w.waits.micro_between_turns,
                w.waits.micro_between_turns_waited
            ),
            (2, 1)
        );
    }

    /// A wasted candidate's usage is priced as the wasted-candidate cost.
    #[test]
    fn a_wasted_candidate_is_priced_from_its_own_calls() {
        let mut w = tracker();
        w.pending = Some(Pending {
            started_ms: 0,
            ms: 5_000,
            usage: SummaryUsage {
                calls: 1,
                prompt_tokens: 1_000,
                output_tokens: 100,
                ..SummaryUsage::default()
            },
        });
        w.waste(Waste::Discarded(DiscardReason::SpanChanged));
        let mut row = Row::default();
        w.finish(
            &mut row,
            &Pricing::Table(crate::pricing::Prices::default()),
            1.0,
        );
        let l = &row.latency;
        assert_eq!((l.prepared_wasted, l.wasted_span_changed), (1, 1));
        assert_eq!(
            (l.wasted_prompt_tokens, l.wasted_output_tokens),
            (1_000, 100)
        );
        assert_eq!(l.wasted_unit_cost, 1_000.0 + 5.0 * 100.0);
    }

    /// One request of an agent loop through the compressor, as the replay makes it.
    async fn request(
        c: &mut Compressor,
        t: &mut hermes_compaction::core::Transcript,
        w: &mut Tracker,
        counting: &CountingSummarizer,
        now: u64,
    ) -> Option<BatchReport> {
        w.request_at(now);
        let before = counting.usage();
        let (_, report) = c.before_request(t).await;
        w.trigger(c, report.as_ref(), before, counting.usage(), now);
        w.started(c, counting, now).await;
        report
    }

    /// A trigger the compressor puts off because its candidate is insufficient (applied, it
    /// would leave the prompt over the threshold) returns no report: it is no pass and adds
    /// no wait, the candidate is wasted as insufficient (the reason the compressor gives
    /// without a report), and the next request's pass uses the new candidate, waiting nothing.
    #[test]
    fn a_trigger_put_off_for_an_insufficient_candidate_is_no_pass() {
        use hermes_compaction::core::{Estimator, Message};
        use std::sync::Arc;

        // A threshold of a quarter of a 32K window (8,000 tokens): a request a threshold past
        // a candidate still fits the window (28,800 tokens).
        let mut config = hermes_compaction::Config::default();
        config.model.context_length = 32_000;
        config.compression.threshold = 0.25;
        config.compression.threshold_floor_tokens = 0;
        config.compression.small_window_min_threshold = 0.25;
        config.compression.prepare_at = 0.3;
        let counting = Arc::new(CountingSummarizer::new(Arc::new(
            hermes_compaction::llm::ExtractiveSummarizer::default(),
        )));
        let mut c = Compressor::builder(config)
            .summarizer(counting.clone())
            .counter(Arc::new(Estimator::default()))
            .session("s")
            .build()
            .unwrap();
        let options = LatencyOptions {
            model: LatencyModel {
                fixed_ms: 5_000,
                per_output_token_ms: 0.0,
            },
            prepare_at: Some(0.3),
        };
        let mut w = Tracker::new(options, true);
        let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
        let threshold = c.status().threshold_tokens;
        let turn = |i: usize| {
            [
                Message::user(format!("ask {i}: {}", "please review module ".repeat(20))),
                Message::assistant(format!("answer {i}: {}", "the module is fine ".repeat(20))),
            ]
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (mut i, mut now) = (0, 0);
            // Requests 30 s apart until a candidate starts.
            while !c.status().has_prepared {
                let [ask, answer] = turn(i);
                i += 1;
                t.push(ask, c.status().counter);
                now += 30_000;
                assert!(
                    request(&mut c, &mut t, &mut w, &counting, now)
                        .await
                        .is_none()
                );
                t.push(answer, c.status().counter);
            }
            // A tool loop the host does not check: the next request is a threshold past it.
            let to = t.current_tokens() + threshold;
            while t.current_tokens() < to {
                for m in turn(i) {
                    t.push(m, c.status().counter);
                }
                i += 1;
            }
            let [ask, answer] = turn(i);
            t.push(ask, c.status().counter);
            now += 30_000;
            let put_off = request(&mut c, &mut t, &mut w, &counting, now).await;
            assert!(put_off.is_none(), "{put_off:?}");
            assert!(w.waits.trigger_ms.is_empty(), "no pass, no wait");
            assert_eq!((w.waits.prepared, w.waits.prepared_wasted), (2, 1));
            assert_eq!(w.waits.wasted_insufficient, 1, "{:?}", w.waits);
            t.push(answer, c.status().counter);
            let [ask, _] = turn(i + 1);
            t.push(ask, c.status().counter);
            now += 30_000;
            let pass = request(&mut c, &mut t, &mut w, &counting, now).await;
            assert!(pass.is_some_and(|r| {
                r.detail
                    .prepared
                    .is_some_and(|p| p.outcome == PreparedOutcome::Used)
            }));
        });
        assert_eq!(w.waits.trigger_ms, [0], "the pass used the candidate");
        assert_eq!(w.waits.prepared_used, 1);
    }
}
