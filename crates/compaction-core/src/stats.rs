//! [`PassStats`]: the counts every compaction pass reports, shared by the facade's pass
//! reports, the one-shot aggregate and the telemetry events. Counts only, never content.

use std::time::Duration;

/// What a pass (or a run of passes) did to a transcript, in counts.
///
/// One pass fills it once; a run of passes starts from the transcript it was given
/// ([`PassStats::at`]) and [`add`](PassStats::add)s each pass in order, as ripgrep's printer
/// adds the stats of each search.
///
/// ```
/// use compaction_core::stats::PassStats;
///
/// let mut run = PassStats::at(10_000, 40);
/// let first = PassStats { tokens_after: 7_000, messages_after: 30, earliest_changed_index: Some(12), passes: 1, ..PassStats::at(10_000, 40) };
/// let second = PassStats { tokens_after: 5_500, messages_after: 24, earliest_changed_index: Some(9), passes: 1, fallback_passes: 1, ..PassStats::at(7_000, 30) };
/// run.add(&first);
/// run.add(&second);
/// assert_eq!((run.tokens_before, run.tokens_after), (10_000, 5_500));
/// assert_eq!((run.messages_before, run.messages_after), (40, 24));
/// assert_eq!(run.earliest_changed_index, Some(9));
/// assert_eq!((run.passes, run.fallback_passes), (2, 1));
/// assert!(run.fallback_used() && !run.summarizer_skipped());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassStats {
    /// Tokens before (calibrated when the provider's count is known).
    pub tokens_before: u64,
    /// Tokens after (estimated).
    pub tokens_after: u64,
    /// Messages before.
    pub messages_before: usize,
    /// Messages after.
    pub messages_after: usize,
    /// The first message index rewritten (where the prompt cache breaks); `None` when nothing
    /// changed.
    pub earliest_changed_index: Option<usize>,
    /// Passes that changed the transcript.
    pub passes: u32,
    /// Passes whose summary the extractive fallback wrote (the summarizer failed, or was not
    /// called).
    pub fallback_passes: u32,
    /// Passes that did not call the summarizer at all: its circuit breaker was open or the
    /// pass's deadline had passed.
    pub skipped_passes: u32,
    /// Tool outputs in the protected tail demoted as a last resort (law 1's exception; batch
    /// passes only).
    pub demoted_tail_outputs: usize,
    /// Prompt plus completion tokens the summarizer reported.
    pub summary_tokens: u64,
    /// Wall time.
    pub duration: Duration,
}

impl PassStats {
    /// The stats of nothing done yet to a transcript of `tokens` tokens and `messages`
    /// messages: before and after alike, every count zero.
    pub fn at(tokens: u64, messages: usize) -> PassStats {
        PassStats {
            tokens_before: tokens,
            tokens_after: tokens,
            messages_before: messages,
            messages_after: messages,
            ..PassStats::default()
        }
    }

    /// Adds the stats of a pass that came after these: the "after" counts become the later
    /// pass's, the earliest changed index is the smaller of the two, the rest is summed.
    pub fn add(&mut self, later: &PassStats) {
        self.tokens_after = later.tokens_after;
        self.messages_after = later.messages_after;
        self.earliest_changed_index =
            match (self.earliest_changed_index, later.earliest_changed_index) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        self.passes += later.passes;
        self.fallback_passes += later.fallback_passes;
        self.skipped_passes += later.skipped_passes;
        self.demoted_tail_outputs += later.demoted_tail_outputs;
        self.summary_tokens += later.summary_tokens;
        self.duration += later.duration;
    }

    /// Whether the extractive fallback wrote a summary in any pass.
    pub fn fallback_used(&self) -> bool {
        self.fallback_passes > 0
    }

    /// Whether any pass left the summarizer uncalled (breaker open, deadline passed).
    pub fn summarizer_skipped(&self) -> bool {
        self.skipped_passes > 0
    }
}
