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
//! - **A summary prepared ahead** ([`LatencyOptions::prepare_at`]). After each request whose
//!   prompt reaches `prepare_at` x the threshold, when no candidate is pending, the summary
//!   of the span a batch pass would compact now (the compressor's
//!   [`preview`](hermes_compaction::Compressor::preview)) is started at that request's time.
//!   At the next batch pass that calls the summarizer, the candidate is *used* when no pass
//!   changed the transcript since it started and the pass would summarize the same messages
//!   (the same span digest): the request waits only for what is left of the pass's latency
//!   after the time elapsed since the candidate started. Otherwise the candidate is
//!   *wasted*: the pass waits its whole latency and the candidate's own summary tokens are
//!   counted as wasted-candidate cost (added to the replay's cost). A candidate is also
//!   wasted when a pass changes the transcript before the trigger (the session's
//!   generation moved) or when the session ends before the trigger.
//!
//! A wasted candidate's tokens, per summary the preview plans: the mean input and output of
//! the replay's summary calls (the input's warm-cache prefix at the hit price), or, when
//! the replay made none, the preview's summarized messages as input (the whole prompt just
//! sent, at the hit price, for a warm-cache request) and its estimate of the output (from
//! `summary_max_tokens`). Simulated time is not shifted by the waits: request times come
//! from the messages' timestamps or the assumed gap between requests, as for pricing.

use serde::Serialize;

use hermes_compaction::core::Transcript;
use hermes_compaction::preview::Fate;
use hermes_compaction::{Compressor, OneShot};

use crate::counting::SummaryUsage;
use crate::pricing::Pricing;
use crate::retention::Wire;
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

/// The messages a batch pass would summarize now: their wire digests, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Span {
    hashes: Vec<u64>,
}

/// A summary prepared ahead.
#[derive(Clone, Debug)]
struct Candidate {
    started_ms: u64,
    /// The replay's pass count when it started (a pass since: the generation moved).
    passes: u64,
    span: Span,
    prompt_tokens: u64,
    prompt_hit_tokens: u64,
    /// The summaries the preview plans.
    calls: u64,
    /// The preview's estimate of their output.
    estimated_output_tokens: u64,
}

#[derive(Clone, Copy)]
enum Waste {
    PassBetween,
    SpanChanged { grew: bool },
    Unused,
}

/// What a replay feeds as it calls the hooks (see the [module docs](self)).
pub(crate) struct Tracker {
    options: LatencyOptions,
    threshold: u64,
    warm: bool,
    waits: Waits,
    candidate: Option<Candidate>,
    /// When the running between-turns micro pass ends, milliseconds.
    between_turns_end: Option<u64>,
    /// The span a trigger pass would summarize, taken just before `before_request`.
    trigger_span: Option<Span>,
    /// Summaries the wasted candidates planned, and the preview's estimate of their output.
    wasted_calls: u64,
    wasted_estimated_output_tokens: u64,
}

impl Tracker {
    pub(crate) fn new(options: LatencyOptions, threshold: u64, warm: bool) -> Tracker {
        Tracker {
            options,
            threshold,
            warm,
            waits: Waits::default(),
            candidate: None,
            between_turns_end: None,
            trigger_span: None,
            wasted_calls: 0,
            wasted_estimated_output_tokens: 0,
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

    /// Just before `before_request`, with `passes` the replay's pass count so far: a
    /// candidate a pass made stale is wasted; otherwise, when the prompt is at the trigger,
    /// the span its pass would summarize is taken.
    pub(crate) fn before_trigger(&mut self, c: &Compressor, t: &Transcript, passes: u64) {
        self.trigger_span = None;
        let Some(cand) = &self.candidate else {
            return;
        };
        if cand.passes != passes {
            self.waste(Waste::PassBetween);
        } else if t.current_tokens() >= self.threshold {
            self.trigger_span = span(c, t);
        }
    }

    /// `before_request` at `now` made the calls between `before` and `after`.
    pub(crate) fn trigger(&mut self, before: SummaryUsage, after: SummaryUsage, now: u64) {
        let span = self.trigger_span.take();
        let Some(full) = self.pass_ms(before, after) else {
            return;
        };
        let wait = match self.candidate.as_ref() {
            Some(cand) if span.as_ref() == Some(&cand.span) => {
                let left = full.saturating_sub(now.saturating_sub(cand.started_ms));
                self.candidate = None;
                self.waits.prepared_used += 1;
                left
            }
            Some(cand) => {
                let grew = span
                    .as_ref()
                    .is_some_and(|s| s.hashes.starts_with(&cand.span.hashes));
                self.waste(Waste::SpanChanged { grew });
                full
            }
            None => full,
        };
        self.waits.trigger_ms.push(wait);
    }

    /// A request at `now` was measured, with `passes` the replay's pass count: past the soft
    /// threshold, a summary is prepared when none is pending.
    pub(crate) fn after_request(&mut self, c: &Compressor, t: &Transcript, now: u64, passes: u64) {
        let Some(share) = self.options.prepare_at else {
            return;
        };
        if let Some(cand) = &self.candidate {
            if cand.passes == passes {
                return;
            }
            self.waste(Waste::PassBetween);
        }
        if (t.current_tokens() as f64) < share * self.threshold as f64 {
            return;
        }
        let preview = c.preview(t, OneShot::batch());
        let summarized: Vec<usize> = preview
            .messages
            .iter()
            .filter(|m| matches!(m.fate, Fate::Summarized { .. }))
            .map(|m| m.index)
            .collect();
        if summarized.is_empty() {
            return;
        }
        let (prompt_tokens, prompt_hit_tokens) = if self.warm {
            (t.current_tokens(), t.current_tokens())
        } else {
            let tokens = preview
                .messages
                .iter()
                .filter(|m| matches!(m.fate, Fate::Summarized { .. }))
                .map(|m| m.tokens)
                .sum();
            (tokens, 0)
        };
        self.waits.prepared += 1;
        self.candidate = Some(Candidate {
            started_ms: now,
            passes,
            span: Span {
                hashes: hashes(t, &summarized),
            },
            prompt_tokens,
            prompt_hit_tokens,
            calls: preview.summaries.len() as u64,
            estimated_output_tokens: preview.summaries.iter().map(|s| s.estimated_tokens).sum(),
        });
    }

    /// Closes the replay: a candidate still pending is wasted, a between-turns pass still
    /// running delayed nothing; the waits go into `row` and the wasted candidates' cost into
    /// its cost (call after the row is priced and scored, its summary usage filled).
    pub(crate) fn finish(mut self, row: &mut Row, pricing: &Pricing) {
        if self.candidate.is_some() {
            self.waste(Waste::Unused);
        }
        if self.between_turns_end.take().is_some() {
            self.between_turns_wait(0);
        }
        let w = &mut self.waits;
        let calls = row.summary_calls;
        if calls > 0 {
            let per_call = |tokens: u64| self.wasted_calls * tokens / calls;
            w.wasted_prompt_tokens = per_call(row.summary_prompt_tokens);
            w.wasted_prompt_hit_tokens = per_call(row.summary_prompt_hit_tokens);
            w.wasted_output_tokens = per_call(row.summary_output_tokens);
        } else {
            w.wasted_output_tokens = self.wasted_estimated_output_tokens;
        }
        let hit = w.wasted_prompt_hit_tokens.min(w.wasted_prompt_tokens);
        let miss = w.wasted_prompt_tokens - hit;
        let out = w.wasted_output_tokens;
        let mtok = |tokens: u64, per_mtok: f64| tokens as f64 * per_mtok / 1e6;
        w.wasted_cost_usd = match pricing {
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
        w.wasted_unit_cost =
            miss as f64 + UNIT_HIT_PRICE * hit as f64 + UNIT_SUMMARY_OUTPUT_PRICE * out as f64;
        row.cost_usd += w.wasted_cost_usd;
        row.unit_cost += w.wasted_unit_cost;
        row.effective_cost += w.wasted_unit_cost;
        row.latency = self.waits;
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
        let Some(cand) = self.candidate.take() else {
            return;
        };
        let w = &mut self.waits;
        w.prepared_wasted += 1;
        match why {
            Waste::PassBetween => w.wasted_pass_between += 1,
            Waste::SpanChanged { grew } => {
                w.wasted_span_changed += 1;
                w.wasted_span_grew += u64::from(grew);
            }
            Waste::Unused => w.wasted_unused += 1,
        }
        w.wasted_prompt_tokens += cand.prompt_tokens;
        w.wasted_prompt_hit_tokens += cand.prompt_hit_tokens;
        self.wasted_calls += cand.calls;
        self.wasted_estimated_output_tokens += cand.estimated_output_tokens;
    }
}

/// The span the batch pass [`preview`](Compressor::preview) would summarize on `t` now.
fn span(c: &Compressor, t: &Transcript) -> Option<Span> {
    let summarized: Vec<usize> = c
        .preview(t, OneShot::batch())
        .messages
        .iter()
        .filter(|m| matches!(m.fate, Fate::Summarized { .. }))
        .map(|m| m.index)
        .collect();
    (!summarized.is_empty()).then(|| Span {
        hashes: hashes(t, &summarized),
    })
}

fn hashes(t: &Transcript, indices: &[usize]) -> Vec<u64> {
    let msgs = t.messages();
    indices
        .iter()
        .filter_map(|&i| msgs.get(i))
        .map(|m| Wire::of(m).hash)
        .collect()
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
            1_000,
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

    fn candidate(started_ms: u64, hashes: Vec<u64>) -> Candidate {
        Candidate {
            started_ms,
            passes: 0,
            span: Span { hashes },
            prompt_tokens: 900,
            prompt_hit_tokens: 0,
            calls: 1,
            estimated_output_tokens: 100,
        }
    }

    /// The same span: the trigger waits what is left of its pass after the time the
    /// candidate had. Another span: the whole pass, and the candidate is wasted.
    #[test]
    fn a_candidate_is_used_for_the_same_span_only() {
        let mut w = tracker();
        w.candidate = Some(candidate(10_000, vec![1, 2, 3]));
        w.trigger_span = Some(Span {
            hashes: vec![1, 2, 3],
        });
        w.trigger(usage(0, 0), usage(1, 100), 12_000);
        w.candidate = Some(candidate(20_000, vec![1, 2, 3]));
        w.trigger_span = Some(Span {
            hashes: vec![1, 2, 3, 4],
        });
        w.trigger(usage(1, 100), usage(2, 200), 40_000);
        w.candidate = Some(candidate(50_000, vec![1, 2, 3]));
        w.trigger_span = Some(Span { hashes: vec![2, 3] });
        w.trigger(usage(2, 200), usage(3, 300), 90_000);
        assert_eq!(w.waits.trigger_ms, [3_000, 5_000, 5_000]);
        assert_eq!((w.waits.prepared_used, w.waits.prepared_wasted), (1, 2));
        assert_eq!(
            (w.waits.wasted_span_changed, w.waits.wasted_span_grew),
            (2, 1)
        );
        let mut row = Row {
            summary_calls: 3,
            summary_prompt_tokens: 3_000,
            summary_output_tokens: 300,
            ..Row::default()
        };
        w.finish(&mut row, &Pricing::Table(crate::pricing::Prices::default()));
        let l = &row.latency;
        // Two wasted candidates of one summary each, at the replay's mean call.
        assert_eq!(
            (l.wasted_prompt_tokens, l.wasted_output_tokens),
            (2_000, 200)
        );
        assert_eq!(l.wasted_unit_cost, 2_000.0 + 5.0 * 200.0);
        assert_eq!(row.unit_cost, l.wasted_unit_cost);
    }

    #[test]
    fn without_a_candidate_the_trigger_waits_the_whole_pass() {
        let mut w = tracker();
        w.trigger(usage(0, 0), usage(2, 50), 1_000);
        w.trigger(usage(2, 50), usage(2, 50), 2_000);
        assert_eq!(w.waits.trigger_ms, [10_000]);
    }
}
