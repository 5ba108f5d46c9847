//! The numbers of one replay ([`Row`]), their totals and the means derived from them.

use serde::Serialize;

use hermes_compaction::core::micro::MicroOutcomeKind;
use hermes_compaction::{BatchReport, MicroReport, Outcome, PassStats};

/// The numbers of one policy over one transcript (or, for totals, over several). Everything
/// is a sum, a maximum or a list, so totals are exact; the derived means are in
/// [`Derived`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Row {
    /// Policy name.
    pub policy: String,
    /// Pricing name: a cache profile, or `prices` for the price table.
    pub profile: String,
    /// Transcript file name (`TOTAL` for totals).
    pub transcript: String,
    /// Transcripts summed in this row.
    pub transcripts: u64,
    /// Messages replayed.
    pub messages: u64,
    /// Turns (user messages).
    pub turns: u64,
    /// Model requests (assistant messages).
    pub requests: u64,
    /// Passes that changed the transcript.
    pub events: u64,
    /// Batch passes that only pruned.
    pub prune_events: u64,
    /// Batch passes that summarized.
    pub summary_events: u64,
    /// Micro passes that absorbed, progressed or defragged.
    pub micro_events: u64,
    /// Summarizer calls.
    pub summary_calls: u64,
    /// Summary calls whose tokens are estimates (the summarizer reported no usage).
    pub summary_calls_estimated: u64,
    /// Tokens removed by the events (before minus after, summed).
    pub reclaimed_tokens: u64,
    /// Largest prompt / threshold.
    pub peak_occupancy: f64,
    /// Sum of prompt / threshold over requests.
    pub occupancy_sum: f64,
    /// Requests whose prompt exceeded the context length as sent: after the overflow passes
    /// the agent made for it (a policy that compacts answers a refused prompt with
    /// `on_context_overflow` and retries, up to `compression.max_attempts` times).
    pub overflows: u64,
    /// Refusals answered with an overflow pass: prompts over the context length that the
    /// provider would have refused before the agent compacted and retried (a request can
    /// count more than once).
    pub refused: u64,
    /// Prompt tokens of all requests.
    pub prompt_tokens: u64,
    /// Prompt tokens served from the prefix cache.
    pub cache_hit_tokens: u64,
    /// Prompt tokens not in the cache.
    pub cache_miss_tokens: u64,
    /// Of the misses, tokens written to an explicit cache (charged the write premium).
    pub cache_write_tokens: u64,
    /// Prompt tokens identical to the previous request's leading messages (what a cache could
    /// serve; hits are these minus expired caches and prefixes under the provider's minimum).
    pub reused_prefix_tokens: u64,
    /// Requests sent after the cache had expired (gap since the previous one >= TTL).
    pub expired_requests: u64,
    /// The prompts' cost in input-token equivalents (price-free: cached x cached ratio +
    /// uncached + writes x (write ratio - 1)); what ranks policies for a profile without
    /// prices, like `local`.
    pub prompt_token_equivalents: f64,
    /// The summary calls' cost in the same input-token equivalents, at the summary model's
    /// price relative to the agent model's (`auxiliary.compression.price_ratio`; 1.0 for
    /// warm-cache requests): (uncached input + cached input x cached ratio + output) x ratio.
    /// With `prompt_token_equivalents`, what ranks configurations for a profile without prices.
    pub summary_token_equivalents: f64,
    /// Tool results trimmed on insertion.
    pub trimmed_results: u64,
    /// Tokens insertion-time trimming kept out of the transcript (original minus compact).
    pub trim_saved_tokens: u64,
    /// Estimated tokens of the assistant messages (the model's output).
    pub output_tokens: u64,
    /// Prompt tokens of summary calls.
    pub summary_prompt_tokens: u64,
    /// Of `summary_prompt_tokens`, those a warm-cache summary request's prefix held (the
    /// agent's last request up to the span's end, served by the provider's cache): priced at the hit price.
    pub summary_prompt_hit_tokens: u64,
    /// Output tokens of summary calls.
    pub summary_output_tokens: u64,
    /// Estimated cost in dollars: the sum of the five parts below (the summary calls include
    /// those of the summaries prepared ahead, the wasted ones
    /// ([`Waits::wasted_cost_usd`](crate::waits::Waits::wasted_cost_usd)) among them).
    pub cost_usd: f64,
    /// Uncached prompt tokens at the input price.
    pub cost_input_usd: f64,
    /// Cached prompt tokens at the cached-input price.
    pub cost_cache_read_usd: f64,
    /// The cache-write premium: written tokens x input price x (write ratio - 1).
    pub cost_cache_write_usd: f64,
    /// Output tokens of the main model.
    pub cost_output_usd: f64,
    /// Summary calls (prompt and output).
    pub cost_summary_usd: f64,
    /// Earliest changed message index of each event.
    pub earliest_changed: Vec<usize>,
    /// Wall time spent in compaction passes, milliseconds.
    pub compaction_ms: f64,
    /// Threshold and context length of the replay.
    pub threshold_tokens: u64,
    /// Context length.
    pub context_length: u64,
    /// Prompt tokens of all requests in the issue units (each message
    /// `ceil(wire JSON chars / 4)`).
    pub unit_prompt_tokens: u64,
    /// Of those, the leading messages unchanged since the previous request (hits).
    pub unit_hit_tokens: u64,
    /// Largest prompt in the issue units.
    pub unit_peak_tokens: u64,
    /// Requests whose prompt in the issue units exceeded the context length.
    pub unit_overflows: u64,
    /// Cost in the issue units: 0.1 x hit + miss + summary prompt + 5 x summary output (the
    /// summaries prepared ahead, used or wasted, among the summary tokens), the summary
    /// calls' part at the summarizer's price ratio.
    pub unit_cost: f64,
    /// Of `unit_cost`, the summary calls': 1.0 x their input + [`UNIT_HIT_PRICE`] x a
    /// warm-cache request's prefix instead + 5.0 x their output, all times the summarizer's
    /// price ratio ([`summary_price_ratio`](crate::pricing::summary_price_ratio): 1.0 for the
    /// agent's own model).
    pub summary_unit_cost: f64,
    /// Sum over requests of the share of the session's facts still in the prompt (see
    /// [`retention`](crate::retention)).
    pub retention_sum: f64,
    /// Smallest share of facts in a prompt (1 without requests).
    pub retention_min: f64,
    /// Far identifiers over all requests (see [`recall`](crate::recall)): what the recorded
    /// answers use from more than 10 messages back.
    pub far_identifiers: u64,
    /// Of those, in the prompt as sent (summaries included).
    pub far_held: u64,
    /// Of those, in a prompt message that is not a summary marker.
    pub far_held_verbatim: u64,
    /// Of those, in the prompt outside the library's names indexes (summaries included): what
    /// the content holds, not only an index that names it.
    #[serde(default)]
    pub far_held_unindexed: u64,
    /// Of those, in an unchanged original message of the prompt: *content recall* (see
    /// [`reread`](crate::reread)).
    #[serde(default)]
    pub far_held_content: u64,
    /// Requests that needed one more round to fetch content again (see
    /// [`reread`](crate::reread)).
    #[serde(default)]
    pub reread_rounds: u64,
    /// Tokens fetched again by those rounds (issue units, at the miss price).
    #[serde(default)]
    pub reread_tokens: u64,
    /// Prompt tokens re-sent by those rounds (issue units, at the hit price).
    #[serde(default)]
    pub reread_resent_tokens: u64,
    /// Re-read content carried in later prompts until the next rewrite, summed over requests
    /// (issue units, at the hit price).
    #[serde(default)]
    pub reread_carried_tokens: u64,
    /// The re-read cost in the issue units ([`reread_cost`](crate::reread::reread_cost)).
    #[serde(default)]
    pub reread_cost: f64,
    /// Effective cost in the issue units: [`unit_cost`](Self::unit_cost) + re-read cost.
    #[serde(default)]
    pub effective_cost: f64,
    /// Requests with at least one far identifier.
    pub far_requests: u64,
    /// Transcripts with at least one far identifier.
    #[serde(default)]
    pub far_sessions: u64,
    /// Sum over those transcripts of their pooled far recall (summaries included): the
    /// session-weighted figure, which one long session cannot dominate.
    #[serde(default)]
    pub far_session_share_sum: f64,
    /// Sum over those requests of their share of far identifiers held (summaries included).
    pub far_share_sum: f64,
    /// The same, verbatim.
    pub far_share_verbatim_sum: f64,
    /// Prompt / threshold at each request (for the plot).
    #[serde(skip)]
    pub occupancy: Vec<f32>,
    /// The waits compaction adds and the summaries prepared ahead (see
    /// [`latency`](crate::latency)).
    pub latency: crate::waits::Waits,
}

/// Means and ratios of a [`Row`], computed from its sums.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Derived {
    /// Events per 100 turns.
    pub events_per_100_turns: f64,
    /// Turns / events (`None` without events).
    pub mean_turns_between_compressions: Option<f64>,
    /// Reclaimed tokens / events.
    pub reclaimed_per_event: Option<f64>,
    /// Occupancy sum / requests.
    pub mean_occupancy: f64,
    /// Cache hits / prompt tokens.
    pub cache_hit_rate: f64,
    /// Smallest earliest changed index.
    pub earliest_changed_min: Option<usize>,
    /// Median earliest changed index.
    pub earliest_changed_median: Option<f64>,
    /// `prune : summary` events.
    pub prune_to_summary: String,
    /// Retention sum / requests (1 without requests).
    pub mean_retention: f64,
    /// Far recall with summaries, pooled: far held / far identifiers (1 without any).
    pub far_recall: f64,
    /// Far recall verbatim, pooled.
    pub far_recall_verbatim: f64,
    /// Far recall with summaries but without the library's names indexes, pooled.
    pub far_recall_unindexed: f64,
    /// Content recall, pooled: far identifiers held by unchanged original messages.
    pub far_recall_content: f64,
    /// Far recall with summaries, the mean of the transcripts' pooled figures (1 without any).
    pub far_recall_session_mean: f64,
    /// Far recall with summaries, the mean of the per-request shares (1 without any).
    pub far_recall_request_mean: f64,
    /// Far recall verbatim, the mean of the per-request shares.
    pub far_recall_verbatim_request_mean: f64,
}

/// The cache-read price relative to an uncached prompt token.
pub const UNIT_HIT_PRICE: f64 = 0.1;
/// The price of a summarizer output token relative to an uncached prompt token.
pub const UNIT_SUMMARY_OUTPUT_PRICE: f64 = 5.0;

/// Cost in the issue units: `0.1 x hit + 1.0 x miss + 1.0 x summary in + 5.0 x summary out`.
pub fn unit_cost(prompt: u64, hit: u64, summary_in: u64, summary_out: u64) -> f64 {
    UNIT_HIT_PRICE * hit as f64
        + prompt.saturating_sub(hit) as f64
        + summary_in as f64
        + UNIT_SUMMARY_OUTPUT_PRICE * summary_out as f64
}

/// The summary calls' cost in the issue units at the agent model's prices: `1.0 x input
/// missed + 0.1 x input a warm-cache request's prefix held + 5.0 x output` (`hit` is capped
/// at `input`).
pub fn summary_unit_cost(input: u64, hit: u64, output: u64) -> f64 {
    let hit = hit.min(input);
    (input - hit) as f64 + UNIT_HIT_PRICE * hit as f64 + UNIT_SUMMARY_OUTPUT_PRICE * output as f64
}

impl Row {
    /// The derived metrics.
    pub fn derived(&self) -> Derived {
        let per = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
        let mut idx = self.earliest_changed.clone();
        idx.sort_unstable();
        let median = match idx.len() {
            0 => None,
            n if n % 2 == 1 => Some(idx[n / 2] as f64),
            n => Some((idx[n / 2 - 1] + idx[n / 2]) as f64 / 2.0),
        };
        Derived {
            events_per_100_turns: per(self.events * 100, self.turns).unwrap_or(0.0),
            mean_turns_between_compressions: per(self.turns, self.events),
            reclaimed_per_event: per(self.reclaimed_tokens, self.events),
            mean_occupancy: if self.requests > 0 {
                self.occupancy_sum / self.requests as f64
            } else {
                0.0
            },
            cache_hit_rate: per(self.cache_hit_tokens, self.prompt_tokens).unwrap_or(0.0),
            earliest_changed_min: idx.first().copied(),
            earliest_changed_median: median,
            prune_to_summary: format!("{}:{}", self.prune_events, self.summary_events),
            mean_retention: if self.requests > 0 {
                self.retention_sum / self.requests as f64
            } else {
                1.0
            },
            far_recall: per(self.far_held, self.far_identifiers).unwrap_or(1.0),
            far_recall_verbatim: per(self.far_held_verbatim, self.far_identifiers).unwrap_or(1.0),
            far_recall_unindexed: per(self.far_held_unindexed, self.far_identifiers).unwrap_or(1.0),
            far_recall_content: per(self.far_held_content, self.far_identifiers).unwrap_or(1.0),
            far_recall_session_mean: if self.far_sessions > 0 {
                self.far_session_share_sum / self.far_sessions as f64
            } else {
                1.0
            },
            far_recall_request_mean: self.far_request_mean(self.far_share_sum),
            far_recall_verbatim_request_mean: self.far_request_mean(self.far_share_verbatim_sum),
        }
    }

    fn far_request_mean(&self, sum: f64) -> f64 {
        if self.far_requests > 0 {
            sum / self.far_requests as f64
        } else {
            1.0
        }
    }

    /// The totals of `rows` (sums, maxima, concatenated lists).
    pub fn total(policy: &str, rows: &[&Row]) -> Row {
        let mut t = Row {
            policy: policy.into(),
            transcript: "TOTAL".into(),
            profile: rows.first().map(|r| r.profile.clone()).unwrap_or_default(),
            retention_min: 1.0,
            ..Row::default()
        };
        for r in rows {
            t.transcripts += r.transcripts;
            t.messages += r.messages;
            t.turns += r.turns;
            t.requests += r.requests;
            t.events += r.events;
            t.prune_events += r.prune_events;
            t.summary_events += r.summary_events;
            t.micro_events += r.micro_events;
            t.summary_calls += r.summary_calls;
            t.summary_calls_estimated += r.summary_calls_estimated;
            t.reclaimed_tokens += r.reclaimed_tokens;
            t.peak_occupancy = t.peak_occupancy.max(r.peak_occupancy);
            t.occupancy_sum += r.occupancy_sum;
            t.overflows += r.overflows;
            t.refused += r.refused;
            t.prompt_tokens += r.prompt_tokens;
            t.cache_hit_tokens += r.cache_hit_tokens;
            t.cache_miss_tokens += r.cache_miss_tokens;
            t.cache_write_tokens += r.cache_write_tokens;
            t.reused_prefix_tokens += r.reused_prefix_tokens;
            t.expired_requests += r.expired_requests;
            t.prompt_token_equivalents += r.prompt_token_equivalents;
            t.summary_token_equivalents += r.summary_token_equivalents;
            t.trimmed_results += r.trimmed_results;
            t.trim_saved_tokens += r.trim_saved_tokens;
            t.output_tokens += r.output_tokens;
            t.summary_prompt_tokens += r.summary_prompt_tokens;
            t.summary_prompt_hit_tokens += r.summary_prompt_hit_tokens;
            t.summary_output_tokens += r.summary_output_tokens;
            t.cost_usd += r.cost_usd;
            t.cost_input_usd += r.cost_input_usd;
            t.cost_cache_read_usd += r.cost_cache_read_usd;
            t.cost_cache_write_usd += r.cost_cache_write_usd;
            t.cost_output_usd += r.cost_output_usd;
            t.cost_summary_usd += r.cost_summary_usd;
            t.earliest_changed.extend(&r.earliest_changed);
            t.compaction_ms += r.compaction_ms;
            t.unit_prompt_tokens += r.unit_prompt_tokens;
            t.unit_hit_tokens += r.unit_hit_tokens;
            t.unit_peak_tokens = t.unit_peak_tokens.max(r.unit_peak_tokens);
            t.unit_overflows += r.unit_overflows;
            t.unit_cost += r.unit_cost;
            t.summary_unit_cost += r.summary_unit_cost;
            t.retention_sum += r.retention_sum;
            t.far_identifiers += r.far_identifiers;
            t.far_held += r.far_held;
            t.far_held_verbatim += r.far_held_verbatim;
            t.far_held_unindexed += r.far_held_unindexed;
            t.far_held_content += r.far_held_content;
            t.reread_rounds += r.reread_rounds;
            t.reread_tokens += r.reread_tokens;
            t.reread_resent_tokens += r.reread_resent_tokens;
            t.reread_carried_tokens += r.reread_carried_tokens;
            t.reread_cost += r.reread_cost;
            t.effective_cost += r.effective_cost;
            t.far_requests += r.far_requests;
            t.far_sessions += r.far_sessions;
            t.far_session_share_sum += r.far_session_share_sum;
            t.far_share_sum += r.far_share_sum;
            t.far_share_verbatim_sum += r.far_share_verbatim_sum;
            t.latency.add(&r.latency);
            if r.requests > 0 {
                t.retention_min = t.retention_min.min(r.retention_min);
            }
            t.threshold_tokens = r.threshold_tokens;
            t.context_length = r.context_length;
        }
        t
    }

    /// Closes a transcript's far-recall counts: it becomes one session of the session mean.
    pub(crate) fn close_session_recall(&mut self) {
        if self.far_identifiers > 0 {
            self.far_sessions = 1;
            self.far_session_share_sum = self.far_held as f64 / self.far_identifiers as f64;
        }
    }

    pub(crate) fn record_recall(&mut self, r: crate::recall::RequestRecall) {
        if r.far == 0 {
            return;
        }
        self.far_identifiers += r.far;
        self.far_held += r.held;
        self.far_held_verbatim += r.held_verbatim;
        self.far_held_unindexed += r.held_unindexed;
        self.far_held_content += r.held_content;
        self.far_requests += 1;
        self.far_share_sum += r.held as f64 / r.far as f64;
        self.far_share_verbatim_sum += r.held_verbatim as f64 / r.far as f64;
    }

    pub(crate) fn record_batch(&mut self, r: &BatchReport) -> bool {
        self.compaction_ms += r.stats.duration.as_secs_f64() * 1e3;
        let changed = match r.outcome {
            Outcome::Pruned => {
                self.prune_events += 1;
                true
            }
            Outcome::Summarized => {
                self.summary_events += 1;
                true
            }
            _ => false,
        };
        if changed {
            self.event(&r.stats);
        }
        changed
    }

    pub(crate) fn record_micro(&mut self, r: &MicroReport) -> bool {
        self.compaction_ms += r.stats.duration.as_secs_f64() * 1e3;
        let changed = matches!(
            r.outcome,
            MicroOutcomeKind::Absorbed | MicroOutcomeKind::Progressed | MicroOutcomeKind::Defrag
        );
        if changed {
            self.micro_events += 1;
            self.event(&r.stats);
        }
        changed
    }

    fn event(&mut self, stats: &PassStats) {
        let (before, after, earliest) = (
            stats.tokens_before,
            stats.tokens_after,
            stats.earliest_changed_index,
        );
        self.events += 1;
        self.reclaimed_tokens += before.saturating_sub(after);
        if let Some(i) = earliest {
            self.earliest_changed.push(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_weight_means_by_requests_and_turns() {
        let a = Row {
            turns: 10,
            requests: 10,
            events: 1,
            occupancy_sum: 5.0,
            earliest_changed: vec![4],
            retention_sum: 9.0,
            retention_min: 0.8,
            ..Row::default()
        };
        let b = Row {
            turns: 30,
            requests: 90,
            events: 5,
            occupancy_sum: 81.0,
            earliest_changed: vec![2, 9],
            retention_sum: 72.0,
            retention_min: 0.5,
            ..Row::default()
        };
        let t = Row::total("p", &[&a, &b]);
        let d = t.derived();
        assert_eq!(d.events_per_100_turns, 15.0);
        assert_eq!(d.mean_occupancy, 0.86);
        assert_eq!(d.mean_turns_between_compressions, Some(40.0 / 6.0));
        assert_eq!(d.earliest_changed_min, Some(2));
        assert_eq!(d.earliest_changed_median, Some(4.0));
        assert_eq!(t.retention_min, 0.5);
        assert!((d.mean_retention - 0.81).abs() < 1e-12);
    }

    /// One long session cannot set the session mean: a 1,000-identifier session held whole
    /// and a 10-identifier one held at 10% pool to 99.1% but average to 55%.
    #[test]
    fn the_session_mean_weighs_sessions_equally() {
        let mut big = Row {
            far_identifiers: 1_000,
            far_held: 1_000,
            ..Row::default()
        };
        let mut small = Row {
            far_identifiers: 10,
            far_held: 1,
            ..Row::default()
        };
        let mut none = Row::default();
        for r in [&mut big, &mut small, &mut none] {
            r.close_session_recall();
        }
        let t = Row::total("batch", &[&big, &small, &none]);
        let d = t.derived();
        assert_eq!(t.far_sessions, 2);
        assert!((d.far_recall - 1_001.0 / 1_010.0).abs() < 1e-12);
        assert!((d.far_recall_session_mean - 0.55).abs() < 1e-12);
    }
}
