//! What a replay's passes made the agent wait, and the summaries prepared ahead: lists and
//! sums only, so totals add exactly. Filled by [`latency`](crate::latency), carried by a
//! [`Row`](crate::row::Row); a leaf module, so the two need not import each other.

use serde::Serialize;

/// The waits and prepared candidates of a replay (or, for totals, of several). Lists and
/// sums only, so totals are exact.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Waits {
    /// Added wait of each batch pass that called the summarizer or used a summary prepared
    /// ahead, milliseconds.
    #[serde(skip)]
    pub trigger_ms: Vec<u64>,
    /// Added wait of each micro pass that called the summarizer, milliseconds.
    #[serde(skip)]
    pub micro_ms: Vec<u64>,
    /// Of the micro passes, those after a turn (the others ran after a tool round).
    pub micro_between_turns: u64,
    /// Of those, the ones the next request still had to wait for.
    pub micro_between_turns_waited: u64,
    /// Summaries prepared ahead (candidates the compressor started).
    pub prepared: u64,
    /// Of those, applied at the trigger.
    pub prepared_used: u64,
    /// Of those, discarded or never used after their calls were made (the causes below).
    pub prepared_wasted: u64,
    /// Of those, discarded without a call: they planned no summary (a prune would do).
    pub prepared_empty: u64,
    /// Wasted because the session moved on before the trigger (a pass since it started).
    pub wasted_pass_between: u64,
    /// Wasted because a message of its span changed (or the transcript shrank).
    pub wasted_span_changed: u64,
    /// Wasted because the trigger's pass does not summarize (prune-only or nothing needed).
    pub wasted_superseded: u64,
    /// Wasted because applied it would not bring the prompt under the threshold.
    pub wasted_insufficient: u64,
    /// Wasted because a call failed, the plan did not assemble or the store refused it.
    pub wasted_failed: u64,
    /// Wasted because the session ended before a trigger.
    pub wasted_unused: u64,
    /// Prompt tokens of the wasted candidates.
    pub wasted_prompt_tokens: u64,
    /// Of those, a warm-cache request's prefix (at the hit price).
    pub wasted_prompt_hit_tokens: u64,
    /// Output tokens of the wasted candidates.
    pub wasted_output_tokens: u64,
    /// The wasted candidates' cost, dollars (included in the row's `cost_usd`: their calls
    /// were made, so their tokens are in its summary tokens).
    pub wasted_cost_usd: f64,
    /// The wasted candidates' cost in the issue units (included in the row's `unit_cost` and
    /// `effective_cost` the same way).
    pub wasted_unit_cost: f64,
}

/// Percentiles of a list of waits, milliseconds (all 0 for an empty list).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WaitSummary {
    /// Passes in the list.
    pub passes: u64,
    /// Median (nearest rank).
    pub p50_ms: u64,
    /// 95th percentile (nearest rank).
    pub p95_ms: u64,
    /// Largest.
    pub max_ms: u64,
    /// Sum.
    pub total_ms: u64,
}

impl WaitSummary {
    /// The summary of `waits`.
    ///
    /// ```
    /// use compaction_sim::waits::WaitSummary;
    ///
    /// let s = WaitSummary::of(&[0, 5_000, 20, 0]);
    /// assert_eq!((s.passes, s.p50_ms, s.p95_ms, s.max_ms, s.total_ms), (4, 0, 5_000, 5_000, 5_020));
    /// assert_eq!(WaitSummary::of(&[]), WaitSummary::default());
    /// ```
    pub fn of(waits: &[u64]) -> WaitSummary {
        let mut sorted = waits.to_vec();
        sorted.sort_unstable();
        WaitSummary {
            passes: sorted.len() as u64,
            p50_ms: percentile(&sorted, 50),
            p95_ms: percentile(&sorted, 95),
            max_ms: sorted.last().copied().unwrap_or(0),
            total_ms: sorted.iter().sum(),
        }
    }

    /// `p50 / p95 / max` in seconds with one decimal, and the passes: what the table shows.
    pub fn cell(&self) -> String {
        let s = |ms: u64| ms as f64 / 1e3;
        format!(
            "{:.1} / {:.1} / {:.1} s ({})",
            s(self.p50_ms),
            s(self.p95_ms),
            s(self.max_ms),
            self.passes
        )
    }
}

impl Waits {
    /// The summary of the waits at the trigger.
    pub fn trigger(&self) -> WaitSummary {
        WaitSummary::of(&self.trigger_ms)
    }

    /// The summary of the micro passes' waits.
    pub fn micro(&self) -> WaitSummary {
        WaitSummary::of(&self.micro_ms)
    }

    /// Adds `other` to these totals.
    pub fn add(&mut self, other: &Waits) {
        self.trigger_ms.extend(&other.trigger_ms);
        self.micro_ms.extend(&other.micro_ms);
        self.micro_between_turns += other.micro_between_turns;
        self.micro_between_turns_waited += other.micro_between_turns_waited;
        self.prepared += other.prepared;
        self.prepared_used += other.prepared_used;
        self.prepared_wasted += other.prepared_wasted;
        self.prepared_empty += other.prepared_empty;
        self.wasted_pass_between += other.wasted_pass_between;
        self.wasted_span_changed += other.wasted_span_changed;
        self.wasted_superseded += other.wasted_superseded;
        self.wasted_insufficient += other.wasted_insufficient;
        self.wasted_failed += other.wasted_failed;
        self.wasted_unused += other.wasted_unused;
        self.wasted_prompt_tokens += other.wasted_prompt_tokens;
        self.wasted_prompt_hit_tokens += other.wasted_prompt_hit_tokens;
        self.wasted_output_tokens += other.wasted_output_tokens;
        self.wasted_cost_usd += other.wasted_cost_usd;
        self.wasted_unit_cost += other.wasted_unit_cost;
    }
}

/// Nearest-rank percentile of an ascending list (0 when empty).
fn percentile(sorted: &[u64], p: u64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p as usize * sorted.len()).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}
