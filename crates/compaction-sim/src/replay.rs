//! The replay: a recorded transcript through the facade's hooks in the order an agent calls
//! them, as the facade's one hook-order driver
//! ([`HookOrder`], which the one-shot micro run steps
//! through too) names them.
//!
//! Each user message starts a turn (and ends the previous one with
//! [`Compressor::finalize_turn`]); before each assistant message the model is called:
//! [`Compressor::after_tool_round`] when a tool round just finished, then
//! [`Compressor::before_request`], the prompt is measured, and [`Compressor::after_response`]
//! receives that size as the provider's usage (recorded only: the next request compacts). Tool
//! results are trimmed as [`Compressor::before_append`] trims them when the variant trims on
//! insertion. The prompt is the compacted transcript as it is at that moment.
//!
//! The prefix-cache model: a request reuses the longest run of leading messages whose wire
//! JSON is unchanged since the previous request; those tokens are cache hits, the rest misses.

use std::sync::Arc;

use serde::Serialize;

use hermes_compaction::core::{Estimator, Message, TokenCounter, Transcript, laws};
use hermes_compaction::driver::{HookOrder, Moment};
use hermes_compaction::llm::Summarizer;
use hermes_compaction::store::Store;
use hermes_compaction::trim::{find_call, trim_for_insert};
use hermes_compaction::{Compressor, PassStats, Persistence, Usage};

use crate::clock::SimClock;
use crate::counting::CountingSummarizer;
use crate::latency::{LatencyOptions, Tracker};
use crate::policy::Variant;
use crate::pricing::{self, Prices, Pricing, RequestShape};
use crate::retention::Wire;
use crate::row::Row;
use crate::score::Scorer;
use crate::{Result, time};

/// The assumed gap between requests without timestamps, seconds.
pub const DEFAULT_REQUEST_GAP_SECS: u64 = 30;

/// How one replay is priced, timed and recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayOptions {
    /// The pricing. A cache profile also drives the compressor's cache-aware decisions.
    pub pricing: Pricing,
    /// Seconds between requests when the messages carry no timestamps.
    pub request_gap_secs: u64,
    /// Record one [`TraceLine`] per request.
    pub trace: bool,
    /// Record every distinct message of the traced prompts once ([`TraceText`]).
    pub trace_text: bool,
    /// The summarizer's latency and the summary prepared ahead.
    pub latency: LatencyOptions,
    /// Check every pass against the laws ([`laws::check`]) with the transcript before and
    /// after it, and record what it broke in [`Replay::violations`].
    pub check_laws: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            pricing: Pricing::Table(Prices::default()),
            request_gap_secs: DEFAULT_REQUEST_GAP_SECS,
            trace: false,
            trace_text: false,
            latency: LatencyOptions::default(),
            check_laws: false,
        }
    }
}

/// A law a pass of a replay broke ([`ReplayOptions::check_laws`]). It names messages by
/// index, never by text, like the checker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LawFinding {
    /// Policy (variant) name.
    pub policy: String,
    /// Transcript name.
    pub transcript: String,
    /// Requests sent before the pass ran (the pass of `before_request` ran before request
    /// `request`, counted from 0).
    pub request: u64,
    /// The hook that ran the pass: `before_request`, `on_context_overflow`,
    /// `after_tool_round` or `finalize_turn`.
    pub hook: &'static str,
    /// The pass as the checker read it ([`laws::PassKind`], e.g. `Batch`).
    pub pass: String,
    /// The violation, as [`laws::Violation`] displays it.
    pub violation: String,
}

/// The law check of one replay: the transcript kept before each hook, checked against the
/// transcript after it when the hook reports a pass.
struct LawCheck {
    on: bool,
    policy: String,
    transcript: String,
    findings: Vec<LawFinding>,
}

impl LawCheck {
    fn before(&self, t: &Transcript) -> Option<Vec<Message>> {
        self.on.then(|| t.messages().to_vec())
    }

    fn after(
        &mut self,
        before: Option<Vec<Message>>,
        t: &Transcript,
        law: Option<&laws::Pass>,
        hook: &'static str,
        request: u64,
    ) {
        let (Some(before), Some(law)) = (before, law) else {
            return;
        };
        let found = laws::check(&before, t.messages(), law, &Estimator::default());
        for v in found {
            self.findings.push(LawFinding {
                policy: self.policy.clone(),
                transcript: self.transcript.clone(),
                request,
                hook,
                pass: format!("{:?}", law.kind),
                violation: v.to_string(),
            });
        }
    }
}

/// One request as sent, for re-pricing with any model: one JSON line of `simulate --trace`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceLine {
    /// Policy (variant) name.
    pub policy: String,
    /// Transcript name.
    pub transcript: String,
    /// Request number within the transcript, from 0.
    pub request: u64,
    /// Per message of the prompt: Unicode scalar values of its compact wire JSON.
    pub chars: Vec<u64>,
    /// Per message of the prompt: FNV-1a 64 of its compact wire JSON, 16 hex digits.
    pub hashes: Vec<String>,
}

/// One distinct message of the traced prompts: one JSON line of `simulate --trace-text`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceText {
    /// FNV-1a 64 of `wire`, 16 hex digits (as in [`TraceLine::hashes`]).
    pub hash: String,
    /// The message's compact wire JSON.
    pub wire: String,
}

/// What one replay produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    /// The numbers.
    pub row: Row,
    /// One line per request when [`ReplayOptions::trace`] is set, else empty.
    pub trace: Vec<TraceLine>,
    /// Each distinct message of the prompts once, in order of first appearance, when
    /// [`ReplayOptions::trace_text`] is set, else empty.
    pub texts: Vec<TraceText>,
    /// What the passes broke, when [`ReplayOptions::check_laws`] is set (else empty).
    pub violations: Vec<LawFinding>,
}

/// The mutable state of one replay: the prompt's wire forms (kept in step with the
/// transcript) and the scorer.
struct Prompt {
    wires: Vec<Wire>,
    scorer: Scorer,
}

impl Prompt {
    fn rewrite(&mut self, t: &Transcript) {
        self.wires.clear();
        self.wires.extend(t.messages().iter().map(Wire::of));
        self.scorer.rewritten();
    }
}

/// Replays one transcript under one variant.
///
/// Time is simulated: a request happens at the latest `timestamp` (or `created_at`) a message
/// since the previous request carries (see [`time::timestamp_ms`]), else `request_gap_secs`
/// after the previous request. The compressor's clock follows it, so its time-to-live rule
/// sees the same gaps the pricing does.
pub async fn replay(
    name: &str,
    msgs: &[Message],
    variant: &Variant,
    summarizer: Arc<dyn Summarizer>,
    options: &ReplayOptions,
) -> Result<Replay> {
    let mut config = variant.config.clone();
    if let Some(share) = options.latency.prepare_at {
        // The facade's own mechanism prepares the summary ahead.
        config.compression.prepare_at = share;
    }
    match &options.pricing {
        Pricing::Profile(p) => {
            config.compression.cache_profile = "custom".into();
            config.compression.cache_custom = p.clone();
        }
        // The price table has no cache lifetime (every reused prefix is a hit, whatever the
        // gap), so a compressor that treats an idle gap as a cold cache would be priced for a
        // cache break the table never charges: the time-to-live rule is off under it.
        Pricing::Table(_) => config.compression.cold_cache_rewrites = false,
    }
    let trims = variant.trims();
    let summary_price_ratio = pricing::summary_price_ratio(&config);
    let counting = Arc::new(CountingSummarizer::new(summarizer));
    let counter = Estimator::default();
    let context_length = config.model.context_length;
    // A policy that compacts answers a refused prompt as an agent does: the overflow hook,
    // then the request again.
    let retries_overflow = config.compression.enabled;
    let session = format!("sim-{}-{name}", variant.name);
    let sim_clock = SimClock::new();
    let mut c = Compressor::builder(config)
        .summarizer(counting.clone())
        .counter(Arc::new(Estimator::default()))
        .session(session.clone())
        .clock(sim_clock.clone())
        .build()
        .map_err(|e| crate::Error::Config(e.to_string()))?;
    let persistence = if trims {
        let store = Store::connect("sqlite::memory:").await?.into_dyn();
        store.create_session(&session).await?;
        Some(Persistence {
            store,
            session,
            generation: 0,
        })
    } else {
        None
    };
    let trim_cfg = c.status().config.trim();
    let threshold = c.status().threshold_tokens.max(1);
    let mut row = Row {
        policy: variant.name.clone(),
        profile: options.pricing.name().into(),
        transcript: name.into(),
        transcripts: 1,
        messages: msgs.len() as u64,
        threshold_tokens: threshold,
        context_length,
        retention_min: 1.0,
        ..Row::default()
    };
    let mut trace = Vec::new();
    let mut texts = Vec::new();
    let mut texts_seen = std::collections::HashSet::new();
    let gap_ms = options.request_gap_secs.saturating_mul(1_000);
    let mut requests: Vec<RequestShape> = Vec::new();
    let mut last_request_ms: Option<u64> = None;
    let mut seen_ms: Option<u64> = None;
    let mut t = c.transcript(Vec::new());
    let mut prompt = Prompt {
        wires: Vec::with_capacity(msgs.len()),
        scorer: Scorer::default(),
    };
    let mut order = HookOrder::default();
    let preparing = {
        let c = &c.status().config.compression;
        c.enabled && c.prepare_at > 0.0
    };
    let mut waits = Tracker::new(options.latency, preparing);
    let mut check = LawCheck {
        on: options.check_laws,
        policy: variant.name.clone(),
        transcript: name.into(),
        findings: Vec::new(),
    };
    let foresight =
        (variant.foresight > 0).then(|| crate::foresight::Foresight::new(msgs, variant.foresight));
    for (k, m) in msgs.iter().enumerate() {
        if let Some(f) = &foresight {
            // Before this message's hooks: what the next answers need is pinned.
            f.pin(&mut t, &prompt.wires, k);
        }
        let original = Wire::of(m);
        if let Some(ts) = time::timestamp_ms(m) {
            seen_ms = Some(seen_ms.map_or(ts, |s| s.max(ts)));
        }
        // The hooks in the order an agent calls them (the facade's one driver).
        let moments = order.before(&t, m);
        let (mut now, mut round_start) = (0, counting.usage());
        if m.is_assistant() {
            now = match (seen_ms.take(), last_request_ms) {
                (Some(ts), Some(last)) => ts.max(last),
                (Some(ts), None) => ts,
                (None, Some(last)) => last.saturating_add(gap_ms),
                (None, None) => 0,
            };
            sim_clock.set(now);
            waits.request_at(now);
            round_start = counting.usage();
        }
        for moment in moments {
            match moment {
                Moment::TurnEnd => {
                    let before = counting.usage();
                    finalize(&mut c, &mut t, &mut row, &mut prompt, &mut check).await;
                    waits.turn_end(before, counting.usage(), last_request_ms.unwrap_or(0));
                    waits.hook(&c);
                }
                Moment::ToolRound => {
                    let kept = check.before(&t);
                    let report = c.after_tool_round(&mut t).await;
                    let law = report.as_ref().map(|r| &r.law);
                    check.after(kept, &t, law, "after_tool_round", row.requests);
                    if let Some(r) = report
                        && (row.record_micro(&r) || changed(&r.stats))
                    {
                        prompt.rewrite(&t);
                    }
                    waits.hook(&c);
                }
                Moment::Request => {
                    waits.in_turn(round_start, counting.usage());
                    let before = counting.usage();
                    let kept = check.before(&t);
                    let (ticket, report) = c.before_request(&mut t).await;
                    let law = report.as_ref().map(|r| &r.law);
                    check.after(kept, &t, law, "before_request", row.requests);
                    waits.trigger(&c, report.as_ref(), before, counting.usage(), now);
                    waits.started(&c, &counting, now).await;
                    if let Some(r) = report
                        && (row.record_batch(&r) || changed(&r.stats))
                    {
                        prompt.rewrite(&t);
                    }
                    if prompt.wires.len() != t.len() {
                        prompt.rewrite(&t);
                    }
                    // The provider refuses a prompt over the context length (before any
                    // cost); the agent calls the overflow hook (at most
                    // `compression.max_attempts` times) and sends the request again.
                    // `overflows` counts the requests still over after that.
                    while retries_overflow && t.current_tokens() > context_length {
                        row.refused += 1;
                        let kept = check.before(&t);
                        let Some(r) = c.on_context_overflow(&mut t).await else {
                            break;
                        };
                        check.after(kept, &t, Some(&r.law), "on_context_overflow", row.requests);
                        if !(row.record_batch(&r) || changed(&r.stats)) {
                            break;
                        }
                        prompt.rewrite(&t);
                    }
                    let tokens = t.current_tokens();
                    let common = prompt.scorer.request(&mut row, &original, &prompt.wires);
                    let reused = t.tokens_in(0..common).min(tokens);
                    let output = counter.count_message(m);
                    requests.push(RequestShape {
                        prompt_tokens: tokens,
                        reused_prefix_tokens: reused,
                        output_tokens: output,
                        secs_since_previous: last_request_ms.map(|last| (now - last) / 1_000),
                    });
                    last_request_ms = Some(now);
                    if options.trace {
                        trace.push(TraceLine {
                            policy: variant.name.clone(),
                            transcript: name.into(),
                            request: row.requests,
                            chars: prompt.wires.iter().map(|w| w.chars).collect(),
                            hashes: prompt
                                .wires
                                .iter()
                                .map(|w| format!("{:016x}", w.hash))
                                .collect(),
                        });
                    }
                    if options.trace_text {
                        for w in &prompt.wires {
                            if texts_seen.insert(w.hash) {
                                texts.push(TraceText {
                                    hash: format!("{:016x}", w.hash),
                                    wire: w.json.clone(),
                                });
                            }
                        }
                    }
                    row.requests += 1;
                    row.prompt_tokens += tokens;
                    row.reused_prefix_tokens += reused;
                    let occ = tokens as f64 / threshold as f64;
                    row.occupancy_sum += occ;
                    row.peak_occupancy = row.peak_occupancy.max(occ);
                    row.occupancy.push(occ as f32);
                    if tokens > context_length {
                        row.overflows += 1;
                    }
                    c.after_response(&mut t, ticket, Usage::prompt(tokens).record_only())
                        .await;
                    waits.hook(&c);
                    waits.started(&c, &counting, now).await;
                    row.output_tokens += output;
                }
            }
        }
        if m.is_user() {
            row.turns += 1;
        }
        prompt.scorer.observe(m, &original);
        let mut m = m.clone();
        let mut wire = original;
        if m.is_tool() && trims {
            // The originals go to the simulator's own store; its passes are not persisted
            // (a compressor with a store would add recall notes to its summaries).
            let (trimmed, status) = trim_for_insert(
                persistence
                    .as_ref()
                    .map(|p| (&*p.store, p.session.as_str())),
                &trim_cfg,
                c.status().counter,
                find_call(&t, &m).as_ref(),
                m,
            )
            .await;
            if status.saved_tokens() > 0 {
                row.trimmed_results += 1;
                row.trim_saved_tokens += status.saved_tokens();
            }
            m = trimmed;
            wire = Wire::of(&m);
        }
        prompt.wires.push(wire);
        t.push(m, c.status().counter);
    }
    if order.finish() == Some(Moment::TurnEnd) {
        let before = counting.usage();
        finalize(&mut c, &mut t, &mut row, &mut prompt, &mut check).await;
        waits.turn_end(before, counting.usage(), last_request_ms.unwrap_or(0));
        waits.hook(&c);
    }
    let usage = counting.usage();
    row.summary_calls = usage.calls;
    row.summary_calls_estimated = usage.estimated_calls;
    row.summary_prompt_tokens = usage.prompt_tokens;
    row.summary_prompt_hit_tokens = usage.prompt_hit_tokens;
    row.summary_output_tokens = usage.output_tokens;
    Scorer::finish_at(&mut row, summary_price_ratio);
    price(&mut row, &options.pricing, &requests, summary_price_ratio);
    waits.finish(&mut row, &options.pricing, summary_price_ratio);
    Ok(Replay {
        row,
        trace,
        texts,
        violations: check.findings,
    })
}

async fn finalize(
    c: &mut Compressor,
    t: &mut Transcript,
    row: &mut Row,
    prompt: &mut Prompt,
    check: &mut LawCheck,
) {
    let kept = check.before(t);
    let report = c.finalize_turn(t).await;
    check.after(
        kept,
        t,
        report.as_ref().map(|r| &r.law),
        "finalize_turn",
        row.requests,
    );
    if let Some(r) = report
        && (row.record_micro(&r) || changed(&r.stats))
    {
        prompt.rewrite(t);
    }
}

/// Whether a pass changed the number of messages (the prompt is then rewritten even when the
/// row does not count it).
fn changed(stats: &PassStats) -> bool {
    stats.messages_after != stats.messages_before
}

/// Fills the cache split and the cost of `row` from its requests and summary tokens, the
/// summary calls at `summary_price_ratio` times the pricing's summary prices
/// ([`summary_price_ratio`](pricing::summary_price_ratio)).
pub fn price(
    row: &mut Row,
    pricing: &Pricing,
    requests: &[RequestShape],
    summary_price_ratio: f64,
) {
    let mtok = |tokens: u64, per_mtok: f64| tokens as f64 * per_mtok / 1e6;
    let (summary_in, summary_out) = (row.summary_prompt_tokens, row.summary_output_tokens);
    // A warm-cache summary request's prefix is a cache hit of the agent's own model.
    let summary_hit = row.summary_prompt_hit_tokens.min(summary_in);
    let summary_in = summary_in - summary_hit;
    match pricing {
        Pricing::Table(p) => {
            let hit: u64 = requests.iter().map(|r| r.reused_prefix_tokens).sum();
            let prompt: u64 = requests.iter().map(|r| r.prompt_tokens).sum();
            row.cache_hit_tokens = hit;
            row.cache_miss_tokens = prompt - hit;
            row.cache_write_tokens = 0;
            row.expired_requests = 0;
            row.prompt_token_equivalents = if p.input_per_mtok > 0.0 {
                row.cache_miss_tokens as f64
                    + hit as f64 * p.cached_input_per_mtok / p.input_per_mtok
            } else {
                prompt as f64
            };
            row.cost_input_usd = mtok(row.cache_miss_tokens, p.input_per_mtok);
            row.cost_cache_read_usd = mtok(hit, p.cached_input_per_mtok);
            row.cost_cache_write_usd = 0.0;
            row.cost_output_usd = mtok(row.output_tokens, p.output_per_mtok);
            row.summary_token_equivalents = summary_price_ratio
                * (summary_in as f64
                    + if p.input_per_mtok > 0.0 {
                        summary_hit as f64 * p.cached_input_per_mtok / p.input_per_mtok
                    } else {
                        summary_hit as f64
                    }
                    + summary_out as f64);
            row.cost_summary_usd = summary_price_ratio
                * (mtok(summary_in, p.summary_input_per_mtok)
                    + mtok(summary_hit, p.cached_input_per_mtok)
                    + mtok(summary_out, p.summary_output_per_mtok));
        }
        Pricing::Profile(p) => {
            let total = pricing::price_session(p, requests);
            row.cache_hit_tokens = total.cached_tokens;
            row.cache_miss_tokens = total.uncached_tokens;
            row.cache_write_tokens = total.cache_write_tokens;
            row.expired_requests = requests
                .iter()
                .filter(|r| {
                    p.has_cache()
                        && r.secs_since_previous
                            .is_some_and(|s| pricing::cache_expired(p, s))
                })
                .count() as u64;
            row.prompt_token_equivalents = total.input_token_equivalents(p);
            row.cost_input_usd = mtok(total.uncached_tokens, p.input_price_per_mtok);
            row.cost_cache_read_usd = mtok(total.cached_tokens, p.cached_input_price_per_mtok);
            row.cost_cache_write_usd = mtok(total.cache_write_tokens, p.input_price_per_mtok)
                * (p.cache_write_price_ratio - 1.0);
            row.cost_output_usd = mtok(total.output_tokens, p.output_price_per_mtok);
            row.summary_token_equivalents = summary_price_ratio
                * (summary_in as f64
                    + summary_hit as f64 * p.cached_input_price_ratio
                    + summary_out as f64);
            row.cost_summary_usd = summary_price_ratio
                * (mtok(summary_in, p.input_price_per_mtok)
                    + mtok(summary_hit, p.cached_input_price_per_mtok)
                    + mtok(summary_out, p.output_price_per_mtok));
        }
    }
    row.cost_usd = row.cost_input_usd
        + row.cost_cache_read_usd
        + row.cost_cache_write_usd
        + row.cost_output_usd
        + row.cost_summary_usd;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;
    use hermes_compaction::Config;
    use hermes_compaction::cache::CacheProfile;
    use hermes_compaction::llm::ExtractiveSummarizer;

    fn replay_now(msgs: &[Message], policy: Policy) -> Row {
        replay_with(msgs, policy, 8_000)
    }

    fn replay_with(msgs: &[Message], policy: Policy, insert_trim_tokens: u64) -> Row {
        let rt = crate::runtime().unwrap();
        let mut config = Config::default();
        config.model.context_length = 16_000;
        let variant = policy.variant(&config, insert_trim_tokens);
        rt.block_on(replay(
            "t",
            msgs,
            &variant,
            Arc::new(ExtractiveSummarizer::default()),
            &ReplayOptions::default(),
        ))
        .unwrap()
        .row
    }

    #[test]
    fn the_prefix_cache_hits_what_the_previous_request_sent() {
        let msgs = vec![
            Message::system("sys"),
            Message::user("first question"),
            Message::assistant("first answer"),
            Message::user("second question"),
            Message::assistant("second answer"),
        ];
        let row = replay_now(&msgs, Policy::None);
        let e = Estimator::default();
        let tok =
            |r: std::ops::Range<usize>| -> u64 { msgs[r].iter().map(|m| e.count_message(m)).sum() };
        assert_eq!((row.turns, row.requests), (2, 2));
        assert_eq!(row.prompt_tokens, tok(0..2) + tok(0..4));
        // The second request reuses the two messages of the first.
        assert_eq!(row.cache_hit_tokens, tok(0..2));
        assert_eq!(row.cache_miss_tokens, tok(0..2) + tok(2..4));
        assert_eq!(row.output_tokens, tok(2..3) + tok(4..5));
        assert_eq!(row.events, 0);
        let cost = Prices::default().cost(
            row.cache_miss_tokens,
            row.cache_hit_tokens,
            row.output_tokens,
            0,
            0,
        );
        assert!((row.cost_usd - cost).abs() < 1e-12);
    }

    fn big_tool_session(turns: usize, output_chars: usize) -> Vec<Message> {
        use hermes_compaction::core::ToolCall;
        let mut msgs = vec![Message::system("You are a coding agent.")];
        for i in 0..turns {
            let id = format!("call_{i}");
            msgs.push(Message::user(format!("request {i}: run the tests")));
            msgs.push(Message::assistant_tool_calls(
                "",
                vec![ToolCall::function(
                    &id,
                    "run_shell",
                    "{\"cmd\":\"cargo test\"}",
                )],
            ));
            let line = format!("test case {i} line ok\n");
            msgs.push(Message::tool_result(
                &id,
                line.repeat(output_chars / line.len()),
            ));
            msgs.push(Message::assistant(format!("request {i} done")));
        }
        msgs
    }

    #[test]
    fn trimming_on_insert_shrinks_the_prompts_and_keeps_the_turns() {
        let msgs = big_tool_session(12, 24_000);
        let plain = replay_with(&msgs, Policy::Batch, 2_000);
        let trimmed = replay_with(&msgs, Policy::BatchTrim, 2_000);
        assert_eq!(plain.trimmed_results, 0);
        assert_eq!(trimmed.trimmed_results, 12);
        assert!(trimmed.trim_saved_tokens > 12 * 3_000);
        assert_eq!(
            (trimmed.turns, trimmed.requests),
            (plain.turns, plain.requests)
        );
        assert!(trimmed.prompt_tokens < plain.prompt_tokens);
        assert!(trimmed.events <= plain.events);
    }

    #[test]
    fn profile_pricing_splits_the_cost_of_core_price_session() {
        let requests = [
            RequestShape {
                prompt_tokens: 20_000,
                reused_prefix_tokens: 0,
                output_tokens: 1_000,
                secs_since_previous: None,
            },
            RequestShape {
                prompt_tokens: 22_000,
                reused_prefix_tokens: 20_000,
                output_tokens: 500,
                secs_since_previous: Some(30),
            },
            RequestShape {
                prompt_tokens: 23_000,
                reused_prefix_tokens: 22_000,
                output_tokens: 500,
                secs_since_previous: Some(400),
            },
        ];
        for p in pricing::profiles() {
            let mut row = Row {
                output_tokens: 2_000,
                summary_prompt_tokens: 10_000,
                summary_output_tokens: 1_000,
                ..Row::default()
            };
            price(&mut row, &Pricing::Profile(p.clone()), &requests, 1.0);
            let core = pricing::price_session(&p, &requests);
            let summaries =
                (10_000.0 * p.input_price_per_mtok + 1_000.0 * p.output_price_per_mtok) / 1e6;
            assert!(
                (row.cost_usd - core.dollars - summaries).abs() < 1e-12,
                "{}",
                p.name
            );
            assert!((row.cost_summary_usd - summaries).abs() < 1e-12);
            assert_eq!(row.cache_hit_tokens + row.cache_miss_tokens, 65_000);
            let expired = u64::from(p.has_cache());
            assert_eq!(row.expired_requests, expired, "{}", p.name);
        }
        let mut row = Row::default();
        price(
            &mut row,
            &Pricing::Profile(CacheProfile::named("anthropic").unwrap()),
            &requests,
            1.0,
        );
        // Only the second request reads the cache; the third comes after the 300 s TTL.
        assert_eq!(row.cache_hit_tokens, 20_000);
        assert_eq!(row.cache_write_tokens, 45_000);
    }
}
