//! Thresholds and the head / middle / tail partition of spec sections 1, 4 and 4a.
//!
//! [`partition`] splits a transcript into consecutive, disjoint regions that cover it:
//! `head`, `middle`, the pinned user message of a long turn (`turn_user`), the older part of
//! that turn (`turn_middle`), and `tail`. No cut ever splits a tool group. Only `middle` and
//! `turn_middle` are ever rewritten.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::defaults;
use crate::marker::is_visible_reply;
use crate::message::{MarkerKind, Message};
use crate::transcript::{Transcript, groups};

/// How the compaction threshold is derived from the model's window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WindowConfig {
    /// The model's context length in tokens.
    pub context_length: u64,
    /// Tokens reserved for the model's output (subtracted from the window). Default 0.
    pub output_reserve_tokens: u64,
    /// Tokens of what the host sends beside the transcript (its preamble and tool
    /// definitions), subtracted from the window like the output reservation. Default 0.
    pub host_reserve_tokens: u64,
    /// Threshold as a fraction of the effective window (facade key `compression.threshold`).
    /// Default 0.5.
    #[serde(alias = "threshold_percent")]
    pub threshold: f64,
    /// Windows below this many tokens use at least `small_window_min_threshold`. Default
    /// 512,000.
    pub small_window_tokens: u64,
    /// Minimum threshold fraction for small windows. Default
    /// 0.5.
    #[serde(alias = "small_window_min_percent")]
    pub small_window_min_threshold: f64,
    /// Absolute floor of the threshold. Default 16,000.
    pub threshold_floor_tokens: u64,
    /// How far the floor may lift the threshold: at most this fraction of the effective
    /// window, so a small window keeps the rest for a tool loop. Default
    /// 0.70.
    #[serde(alias = "floor_cap_percent")]
    pub floor_cap: f64,
    /// Absolute cap of the threshold in tokens, whatever the window (0: no cap). Default 0.
    pub threshold_cap_tokens: u64,
}

impl Default for WindowConfig {
    fn default() -> Self {
        WindowConfig {
            context_length: defaults::CONTEXT_LENGTH,
            output_reserve_tokens: 0,
            host_reserve_tokens: 0,
            threshold: defaults::THRESHOLD,
            small_window_tokens: defaults::SMALL_WINDOW_TOKENS,
            small_window_min_threshold: defaults::SMALL_WINDOW_MIN_THRESHOLD,
            threshold_floor_tokens: defaults::THRESHOLD_FLOOR_TOKENS,
            floor_cap: defaults::FLOOR_CAP,
            threshold_cap_tokens: defaults::THRESHOLD_CAP_TOKENS,
        }
    }
}

impl WindowConfig {
    /// A default configuration for a window of `context_length` tokens.
    pub fn for_context(context_length: u64) -> WindowConfig {
        WindowConfig {
            context_length,
            ..WindowConfig::default()
        }
    }

    /// The effective window: context length minus the output and host reservations.
    pub fn effective_window(&self) -> u64 {
        self.context_length
            .saturating_sub(self.output_reserve_tokens)
            .saturating_sub(self.host_reserve_tokens)
    }

    /// The threshold in tokens (spec section 4, "Trigger"), never above
    /// [`threshold_cap_tokens`](Self::threshold_cap_tokens) when that is set.
    pub fn threshold_tokens(&self) -> u64 {
        let w = self.effective_window() as f64;
        let mut pct = self.threshold;
        if self.effective_window() < self.small_window_tokens {
            pct = pct.max(self.small_window_min_threshold);
        }
        let by_pct = w * pct;
        let cap = w * self.floor_cap;
        let floor = (self.threshold_floor_tokens as f64).min(cap);
        let threshold = by_pct.max(floor).floor() as u64;
        match self.threshold_cap_tokens {
            0 => threshold,
            cap => threshold.min(cap),
        }
    }
}

/// How the head and tail are protected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RegionConfig {
    /// Messages after the system prompt kept in the head until the first compaction. Default
    /// 3.
    pub protect_first_n: usize,
    /// Minimum number of messages in the tail. Default 6.
    pub protect_last_n: usize,
    /// Tail budget as a fraction of the threshold (facade key `compression.tail_ratio`).
    /// Default 0.05.
    pub tail_ratio: f64,
    /// How far past the budget the tail may stretch to keep a tool group whole. Default
    /// 1.5.
    pub tail_soft_ceiling: f64,
    /// The tail reaches back to hold at least this many real user requests verbatim (0: only
    /// the latest, which is always kept). Default 0.
    pub min_tail_user_messages: usize,
}

impl Default for RegionConfig {
    fn default() -> Self {
        RegionConfig {
            protect_first_n: defaults::PROTECT_FIRST_N,
            protect_last_n: defaults::PROTECT_LAST_N,
            tail_ratio: defaults::TAIL_RATIO,
            tail_soft_ceiling: defaults::TAIL_SOFT_CEILING,
            min_tail_user_messages: defaults::MIN_TAIL_USER_MESSAGES,
        }
    }
}

impl RegionConfig {
    /// The tail budget for a threshold.
    pub(crate) fn tail_budget(&self, threshold_tokens: u64) -> u64 {
        (threshold_tokens as f64 * self.tail_ratio).floor() as u64
    }
}

/// The partition of a transcript. The ranges are consecutive and cover `0..len`:
/// `head`, `middle`, `turn_user` (0 or 1 message), `turn_middle`, `tail`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Regions {
    /// System prompt(s) and the protected opening.
    pub head: Range<usize>,
    /// Rewritable history before the active turn.
    pub middle: Range<usize>,
    /// The latest real user message, pinned verbatim, when the active turn is split.
    pub turn_user: Option<usize>,
    /// The older, rewritable part of a split long turn (empty when not split).
    pub turn_middle: Range<usize>,
    /// The protected recent messages.
    pub tail: Range<usize>,
    /// The last assistant reply the user saw (visible text, no tool calls, not a summary) when
    /// it lies in `middle` or `turn_middle`. It is kept verbatim in place: passes rewrite only
    /// what lies before it in its region; pruning never touches it (it has no tool call and is
    /// no tool output).
    pub reply: Option<usize>,
}

impl Regions {
    /// The part of `middle` a summary may replace: all of it, or what lies before
    /// [`reply`](Self::reply) when the reply sits in the middle.
    pub(crate) fn rewritable_middle(&self) -> Range<usize> {
        match self.reply {
            Some(a) if self.middle.contains(&a) => self.middle.start..a,
            _ => self.middle.clone(),
        }
    }

    /// The part of `turn_middle` a progress summary may replace: all of it, or what lies
    /// before [`reply`](Self::reply) when the reply sits there.
    pub(crate) fn rewritable_turn_middle(&self) -> Range<usize> {
        match self.reply {
            Some(a) if self.turn_middle.contains(&a) => self.turn_middle.start..a,
            _ => self.turn_middle.clone(),
        }
    }

    /// The protected ranges: head, the pinned user message, tail.
    pub fn protected(&self) -> [Range<usize>; 3] {
        let pinned = match self.turn_user {
            Some(u) => u..u + 1,
            None => self.middle.end..self.middle.end,
        };
        [self.head.clone(), pinned, self.tail.clone()]
    }
}

/// Partitions `t` for a threshold, as every pass of the library does.
///
/// `compacted` says whether the session has been compacted before; head protection then
/// decays to the system prompt alone. When the transcript carries a
/// [calibration](Transcript::calibration), the threshold is converted into estimate units
/// first (divided by the calibrated size over the estimate): when the provider counts more
/// than the estimator, the budgets shrink accordingly.
///
/// ```
/// use compaction_core::regions::{self, RegionConfig};
/// use compaction_core::{Estimator, Message, Transcript};
///
/// let mut msgs = vec![Message::system("You are a coding agent.")];
/// for i in 0..40 {
///     msgs.push(Message::user(format!("request {i}: {}", "details ".repeat(50))));
///     msgs.push(Message::assistant(format!("answer {i}: {}", "done ".repeat(50))));
/// }
/// let t = Transcript::new(msgs, &Estimator::default());
/// let r = regions::partition(&t, 4_000, &RegionConfig::default(), false);
/// // Consecutive ranges covering the transcript: the system prompt and opening stay, the
/// // recent tail stays, the middle is what a pass may rewrite.
/// assert_eq!(r.head.start, 0);
/// assert_eq!(r.head.end, r.middle.start);
/// assert!(!r.middle.is_empty());
/// assert_eq!(r.tail.end, t.len());
/// ```
pub fn partition(
    t: &Transcript,
    threshold_tokens: u64,
    cfg: &RegionConfig,
    compacted: bool,
) -> Regions {
    let threshold = (threshold_tokens as f64 / t.calibration_scale()) as u64;
    partition_estimated(t, threshold, cfg, compacted)
}

/// [`partition`] for a threshold already in estimate units.
fn partition_estimated(
    t: &Transcript,
    threshold_tokens: u64,
    cfg: &RegionConfig,
    compacted: bool,
) -> Regions {
    let msgs = t.messages();
    let n = msgs.len();

    // Head: leading system-like messages, then protect_first_n more until the first compaction.
    let sys = msgs
        .iter()
        .take_while(|m| m.role().is_system_like())
        .count();
    let mut head_end = if compacted {
        sys
    } else {
        (sys + cfg.protect_first_n).min(n)
    };
    // A summary marker among the first messages says the session was compacted before,
    // whatever the caller knows (a resumed session, a fresh compressor): head protection has
    // decayed, and the head may not hide the marker from the passes that resume it.
    if !compacted && msgs[sys..head_end].iter().any(crate::marker::is_summary) {
        head_end = sys;
    }
    head_end = groups::align_forward(msgs, head_end);

    // Tail by token budget, then at least protect_last_n messages.
    let budget = cfg.tail_budget(threshold_tokens);
    let ceiling = (budget as f64 * cfg.tail_soft_ceiling) as u64;
    let mut tail_start = t.suffix_start_within(n, budget);
    let min_start = n.saturating_sub(cfg.protect_last_n);
    let forced = tail_start > min_start;
    tail_start = tail_start.min(min_start);
    if groups::splits_group(msgs, tail_start) {
        let back = groups::group_start(msgs, tail_start);
        let forward = groups::align_forward(msgs, tail_start);
        // Moving forward sheds the group's results; it may not shrink the tail below the
        // minimum message count.
        tail_start = if forced || forward > min_start || t.tokens_in(back..n) <= ceiling {
            back
        } else {
            forward
        };
    }
    tail_start = tail_start.max(head_end);

    // The latest real user request (visible text); without one, the latest user message of
    // any kind (image-only, blank), so the user's turn survives and a summary never becomes
    // the first user-role text.
    let anchor = t.last_real_user().or_else(|| {
        msgs.iter()
            .rposition(|m| m.is_user() && crate::marker::classify(m).is_none())
    });

    // An older summary in the tail is folded into the new one rather than left beside it:
    // the tail starts after it, as long as something before it is rewritable and the latest
    // request stays after it.
    let budget_start = tail_start;
    let mut folded = None;
    if let Some(k) = last_summary_in(msgs, tail_start..n)
        && k > head_end
        && anchor.is_none_or(|u| u > k)
    {
        folded = Some(k);
        tail_start = groups::align_forward(msgs, k + 1).min(n);
    }

    // The tail reaches back to hold the last `min_tail_user_messages` real requests. When
    // that takes the older summary back into it, there is nothing to fold and the tail is
    // what the budget chose (or more).
    if cfg.min_tail_user_messages > 1
        && let Some(k) = nth_last_real_user(msgs, cfg.min_tail_user_messages, head_end)
    {
        tail_start = tail_start.min(k.max(head_end));
        if folded.is_some_and(|f| tail_start <= f) {
            tail_start = tail_start.min(budget_start);
        }
    }

    let mut regions = Regions {
        head: 0..head_end,
        middle: head_end..tail_start,
        turn_user: None,
        turn_middle: tail_start..tail_start,
        tail: tail_start..n,
        reply: None,
    };
    place_anchor(t, &mut regions, anchor, ceiling);
    // Cached in the transcript: no scan back over a long tool-only turn on every pass.
    regions.reply = t
        .last_visible_reply()
        .filter(|a| regions.middle.contains(a) || regions.turn_middle.contains(a));
    regions
}

/// The latest request stays verbatim: in the tail, or pinned for a long turn.
fn place_anchor(t: &Transcript, regions: &mut Regions, anchor: Option<usize>, ceiling: u64) {
    let n = t.len();
    let (head_end, tail_start) = (regions.head.end, regions.tail.start);
    let Some(u) = anchor else {
        return;
    };
    if u >= tail_start {
        keep_previous_reply(t, regions, u);
        return;
    }
    if u >= head_end && t.tokens_in(u..n) <= ceiling {
        regions.middle = head_end..u;
        regions.tail = u..n;
        regions.turn_middle = u..u;
        keep_previous_reply(t, regions, u);
        return;
    }
    // Long turn: pin the user message (unless the head already holds it) and make the older
    // part of the turn rewritable.
    if u >= head_end {
        regions.middle = head_end..u;
        regions.turn_user = Some(u);
        regions.turn_middle = u + 1..tail_start;
    } else {
        regions.middle = head_end..head_end;
        regions.turn_user = None;
        regions.turn_middle = head_end..tail_start;
    }
}

/// The last batch or micro summary marker in `range`.
fn last_summary_in(msgs: &[Message], range: Range<usize>) -> Option<usize> {
    range.rev().find(|&i| {
        matches!(
            crate::marker::classify(&msgs[i]),
            Some(MarkerKind::Batch | MarkerKind::Micro)
        )
    })
}

/// The earliest of the last `n` real user requests (visible text, not a summary) at or after
/// `floor` (fewer when fewer exist).
fn nth_last_real_user(msgs: &[Message], n: usize, floor: usize) -> Option<usize> {
    (floor..msgs.len())
        .rev()
        .filter(|&i| {
            msgs[i].is_user()
                && msgs[i].has_visible_text()
                && crate::marker::classify(&msgs[i]).is_none()
        })
        .take(n)
        .last()
}

/// The last assistant reply the user saw: visible text, no tool calls, not a summary marker,
/// at or after `floor`. A scan back from the end; `Transcript::last_visible_reply` keeps the
/// same index current in O(1); this is the reference its property test checks it against.
#[cfg(test)]
pub(crate) fn last_visible_reply(msgs: &[Message], floor: usize) -> Option<usize> {
    (floor..msgs.len())
        .rev()
        .find(|&i| is_visible_reply(&msgs[i]))
}

/// When the tail starts exactly at the latest user message, also keep the assistant reply the
/// user saw just before it.
fn keep_previous_reply(t: &Transcript, r: &mut Regions, u: usize) {
    let msgs = t.messages();
    if r.tail.start == u && u > r.head.end && is_visible_reply(&msgs[u - 1]) {
        r.tail.start = u - 1;
        r.middle.end = u - 1;
        r.turn_middle = u - 1..u - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Message, ToolCall};
    use crate::tokens::Estimator;

    #[test]
    fn thresholds() {
        // The spec's original parameters: small windows at least 75%, a 64K floor.
        let spec = |context_length| WindowConfig {
            small_window_min_threshold: 0.75,
            threshold_floor_tokens: 64_000,
            floor_cap: 0.85,
            ..WindowConfig::for_context(context_length)
        };
        // Small window: at least 75%, floor capped at 85%.
        assert_eq!(spec(64_000).threshold_tokens(), 54_400);
        // 128K: 75% = 96K beats the 64K floor.
        assert_eq!(spec(128_000).threshold_tokens(), 96_000);
        // 1M window: 50%.
        assert_eq!(spec(1_000_000).threshold_tokens(), 500_000);
        // Tiny window: floor would swallow it, so 85%.
        assert_eq!(spec(8_000).threshold_tokens(), 6_800);
        let reserved = WindowConfig {
            output_reserve_tokens: 8_000,
            ..spec(1_000_000)
        };
        assert_eq!(reserved.threshold_tokens(), 496_000);
        // The defaults (crate::defaults, the facade's too): half the window above the 16K floor.
        assert_eq!(WindowConfig::for_context(64_000).threshold_tokens(), 32_000);
        assert_eq!(
            WindowConfig::for_context(128_000).threshold_tokens(),
            64_000
        );
        // Small windows: the floor lifts the threshold to 70% at most, leaving 30% of the
        // window for a tool loop (issue 33, item 7).
        assert_eq!(WindowConfig::for_context(24_000).threshold_tokens(), 16_000);
        assert_eq!(WindowConfig::for_context(20_000).threshold_tokens(), 14_000);
        assert_eq!(WindowConfig::for_context(16_000).threshold_tokens(), 11_200);
        assert_eq!(WindowConfig::for_context(8_000).threshold_tokens(), 5_600);
        // The host's preamble and tool definitions come off the window first.
        let host = WindowConfig {
            host_reserve_tokens: 2_000,
            ..WindowConfig::for_context(16_000)
        };
        assert_eq!(host.effective_window(), 14_000);
        assert_eq!(host.threshold_tokens(), 9_800);
        let both = WindowConfig {
            output_reserve_tokens: 4_000,
            ..host
        };
        assert_eq!(both.threshold_tokens(), 7_000);
    }

    fn turn(i: usize, tool_chars: usize) -> Vec<Message> {
        let id = format!("c{i}");
        vec![
            Message::user(format!("request {i}")),
            Message::assistant_tool_calls("", vec![ToolCall::function(&id, "sh", "{}")]),
            Message::tool_result(&id, "x".repeat(tool_chars)),
            Message::assistant(format!("answer {i}")),
        ]
    }

    fn check(msgs: Vec<Message>, threshold: u64, compacted: bool) -> Regions {
        let t = Transcript::new(msgs, &Estimator::default());
        let r = partition(&t, threshold, &RegionConfig::default(), compacted);
        assert_eq!(r.head.start, 0);
        assert_eq!(r.head.end, r.middle.start);
        let after_middle = match r.turn_user {
            Some(u) => {
                assert_eq!(u, r.middle.end);
                u + 1
            }
            None => r.middle.end,
        };
        assert_eq!(after_middle, r.turn_middle.start);
        assert_eq!(r.turn_middle.end, r.tail.start);
        assert_eq!(r.tail.end, t.len());
        for cut in [r.head.end, r.middle.end, r.turn_middle.start, r.tail.start] {
            assert!(
                !groups::splits_group(t.messages(), cut),
                "cut {cut} splits a group"
            );
        }
        r
    }

    #[test]
    fn ordinary_partition_keeps_latest_user_in_tail() {
        let mut msgs = vec![Message::system("sys")];
        for i in 0..20 {
            msgs.extend(turn(i, 2_000));
        }
        let r = check(msgs.clone(), 10_000, false);
        assert_eq!(r.head, 0..4);
        assert!(r.turn_user.is_none());
        let last_user = msgs.iter().rposition(Message::is_user).unwrap();
        assert!(r.tail.start <= last_user);
        let decayed = check(msgs, 10_000, true);
        assert_eq!(decayed.head, 0..1);
    }

    #[test]
    fn tail_keeps_its_minimum_count_when_a_huge_group_ends_the_transcript() {
        let mut msgs = vec![Message::system("sys"), Message::user("go")];
        // Twenty parallel results: the budget covers the last eight, the group is far over
        // the soft ceiling, and aligning forward would leave no tail at all.
        let calls = (0..20)
            .map(|i| ToolCall::function(format!("p{i}"), "sh", "{}"))
            .collect();
        msgs.push(Message::assistant_tool_calls("", calls));
        for i in 0..20 {
            msgs.push(Message::tool_result(format!("p{i}"), "z".repeat(2_000)));
        }
        let n = msgs.len();
        let r = check(msgs, 20_000, true);
        assert!(
            r.tail.len() >= RegionConfig::default().protect_last_n,
            "{r:?}"
        );
        assert_eq!(r.tail, 2..n);
    }

    #[test]
    fn long_turn_is_split_with_user_pinned() {
        let mut msgs = vec![
            Message::system("sys"),
            Message::user("old"),
            Message::assistant("ok"),
        ];
        msgs.push(Message::user("do a long task"));
        for i in 0..40 {
            let id = format!("t{i}");
            msgs.push(Message::assistant_tool_calls(
                "",
                vec![ToolCall::function(&id, "sh", "{}")],
            ));
            msgs.push(Message::tool_result(&id, "y".repeat(4_000)));
        }
        let r = check(msgs, 20_000, true);
        assert_eq!(r.turn_user, Some(3));
        assert!(!r.turn_middle.is_empty());
        assert_eq!(r.middle, 1..3);
    }
}
