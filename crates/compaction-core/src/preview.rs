//! What a pass would do, before it runs: the fate of every message (kept, pinned, pruned with
//! its one-liner, demoted, summarized, merged with a summary) and the tokens before and after,
//! read from a plan alone (no summarizer is called, nothing is written).
//!
//! [`of_batch`] reads a [`BatchPlan`], [`of_micro`] a [`MicroPlan`]. The fates are the ones
//! [`assemble`](crate::batch::assemble) and [`assemble_micro`](crate::micro::assemble_micro)
//! then apply, whatever the summaries say; only the summaries' sizes are estimated (from
//! [`BatchConfig::summary_max_tokens`] and the ledger for a batch pass, from the current
//! rolling summary for a micro pass).
//!
//! ```
//! use compaction_core::batch::{self, BatchConfig, BatchRequest};
//! use compaction_core::preview::{self, Fate};
//! use compaction_core::{Estimator, Message, Transcript};
//!
//! let counter = Estimator::default();
//! let mut msgs = vec![Message::system("You are a coding agent.")];
//! for i in 0..40 {
//!     msgs.push(Message::user(format!("request {i}: {}", "details ".repeat(60))));
//!     msgs.push(Message::assistant(format!("answer {i}: {}", "done ".repeat(60))));
//! }
//! let t = Transcript::new(msgs, &counter);
//! let cfg = BatchConfig::default();
//! let plan = batch::plan_batch(&t, 6_000, &cfg, &BatchRequest::default(), &counter);
//! let p = preview::of_batch(&t, &plan, &cfg, &counter);
//! assert_eq!(p.messages.len(), t.len());
//! assert_eq!(p.messages[0].fate, Fate::Kept); // the system prompt
//! assert!(p.messages.iter().any(|m| matches!(m.fate, Fate::Summarized { .. })));
//! assert!(p.tokens_after < p.tokens_before);
//! ```

use std::ops::Range;

use serde::Serialize;

use crate::batch::{BatchConfig, BatchPlan, BatchStep};
use crate::marker;
use crate::message::{MarkerKind, Message, Role};
use crate::micro::{MicroPlan, MicroStep};
use crate::prune::CallIndex;
use crate::tokens::TokenCounter;
use crate::transcript::Transcript;

/// What a pass does to one message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "fate", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Fate {
    /// Kept verbatim.
    Kept,
    /// Kept verbatim because it is pinned (or belongs to a pinned message's tool group) and
    /// would otherwise have been rewritten.
    Pinned,
    /// Replaced one for one by a shorter form: a tool output by its one-liner (redacted),
    /// a tool call by its shortened arguments (`one_liner` is `None`).
    Pruned {
        /// The replacement text of a pruned tool output, redacted.
        one_liner: Option<String>,
    },
    /// A tool output of the protected tail or opening replaced by its one-liner (or a tool
    /// call's long arguments shortened), the last resort when the protected messages alone
    /// exceed the threshold.
    Demoted {
        /// The replacement text, redacted.
        one_liner: String,
    },
    /// Replaced by summary `summary` (an index into [`Preview::summaries`]).
    Summarized {
        /// Which summary.
        summary: usize,
    },
    /// Kept, with summary `summary` written in front of its text (no marker role fits).
    Merged {
        /// Which summary.
        summary: usize,
    },
}

/// One message of a preview.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct MessagePreview {
    /// Index in the transcript.
    pub index: usize,
    /// Its role (`other` for a role outside the five known ones, whose name is not shown).
    pub role: &'static str,
    /// For a tool call or result, the tool's name.
    pub tool: Option<String>,
    /// Its tokens (estimate).
    pub tokens: u64,
    /// What the pass does to it.
    pub fate: Fate,
}

/// One summary a pass would write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PlannedSummary {
    /// Batch, micro or progress.
    pub kind: MarkerKind,
    /// The messages it replaces (of the planned-against transcript).
    pub range: Range<usize>,
    /// Its estimated tokens.
    pub estimated_tokens: u64,
}

/// The pass a preview describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PreviewKind {
    /// The pass would change nothing.
    Nothing,
    /// Pruning only.
    Prune,
    /// Pruning and summaries.
    Batch,
    /// A micro (or turn-progress) absorb.
    Micro,
    /// A micro defrag of the rolling summary.
    Defrag,
}

/// What a pass would do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Preview {
    /// The kind of pass.
    pub kind: PreviewKind,
    /// Every message, in order.
    pub messages: Vec<MessagePreview>,
    /// The summaries it would write, in order.
    pub summaries: Vec<PlannedSummary>,
    /// Whether the pass would add the [continuation](crate::marker::continuation) beside a
    /// summary (no user message with text would otherwise remain; issue 21, item 14).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub continuation: bool,
    /// Tokens before (the plan's, calibrated when the transcript carries a measurement).
    pub tokens_before: u64,
    /// Estimated tokens after.
    pub tokens_after: u64,
}

impl Preview {
    /// How many messages have a fate matching `f`.
    pub(crate) fn count(&self, f: impl Fn(&Fate) -> bool) -> usize {
        self.messages.iter().filter(|m| f(&m.fate)).count()
    }
}

fn kept(t: &Transcript) -> Vec<MessagePreview> {
    let msgs = t.messages();
    let calls = CallIndex::build(msgs);
    msgs.iter()
        .enumerate()
        .map(|(i, m)| MessagePreview {
            index: i,
            role: match m.role() {
                Role::System => "system",
                Role::Developer => "developer",
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::Tool => "tool",
                Role::Other(_) => "other",
            },
            tool: if m.is_tool() {
                calls.for_result(m).map(|c| c.name.to_owned())
            } else {
                m.tool_calls().first().map(|c| c.function.name.clone())
            },
            tokens: t.tokens_of(i),
            fate: Fate::Kept,
        })
        .collect()
}

/// Marks the pinned messages the pass leaves alone inside `ranges` (what it would otherwise
/// have rewritten).
fn mark_pins(out: &mut [MessagePreview], msgs: &[Message], ranges: &[Range<usize>]) {
    for r in ranges {
        for s in crate::pins::pinned_spans(msgs, r.clone()) {
            for m in &mut out[s.start.min(msgs.len())..s.end.min(msgs.len())] {
                if m.fate == Fate::Kept {
                    m.fate = Fate::Pinned;
                }
            }
        }
    }
}

fn one_liner(m: &Message) -> String {
    crate::redact::redact(&m.text()).into_owned()
}

/// The preview of a batch plan (see the [module](self) documentation).
pub fn of_batch(
    t: &Transcript,
    plan: &BatchPlan,
    cfg: &BatchConfig,
    counter: &dyn TokenCounter,
) -> Preview {
    let msgs = t.messages();
    let mut out = kept(t);
    let r = &plan.regions;
    let jobs: &[crate::batch::SummaryJob] = match &plan.step {
        BatchStep::Summarize(jobs) => jobs,
        _ => &[],
    };
    let kind = match &plan.step {
        BatchStep::Nothing(_) => PreviewKind::Nothing,
        BatchStep::PruneOnly { .. } => PreviewKind::Prune,
        BatchStep::Summarize(_) => PreviewKind::Batch,
    };
    if kind != PreviewKind::Nothing {
        mark_pins(
            &mut out,
            msgs,
            &[r.middle.clone(), r.turn_middle.clone(), r.tail.clone()],
        );
    }
    // Estimated-token delta of the pass, before calibration.
    let (mut removed, mut added) = (0u64, 0u64);
    for s in &plan.prune.edit.splices {
        if jobs
            .iter()
            .any(|j| j.range.start <= s.range.start && s.range.end <= j.range.end)
        {
            continue;
        }
        for (i, new) in s.range.clone().zip(&s.replacement) {
            removed += t.tokens_of(i);
            added += counter.count_message(new);
            out[i].fate = if r.tail.contains(&i) || r.head.contains(&i) {
                Fate::Demoted {
                    one_liner: one_liner(new),
                }
            } else if msgs[i].is_tool() {
                Fate::Pruned {
                    one_liner: Some(one_liner(new)),
                }
            } else {
                Fate::Pruned { one_liner: None }
            };
        }
    }
    let mut summaries = Vec::with_capacity(jobs.len());
    let continuation = crate::batch::continuation_plan(msgs, jobs).map(|(k, _)| k);
    if continuation.is_some() {
        added += counter.count_message(&marker::continuation());
    }
    for (k, job) in jobs.iter().enumerate() {
        let ledger = job.ledger.render(cfg.ledger_max_tokens).unwrap_or_default();
        let prev = job.range.start.checked_sub(1).map(|i| &msgs[i]);
        let next = msgs.get(job.range.end);
        let role = match job.kind {
            _ if continuation == Some(k) => Some(Role::Assistant),
            MarkerKind::Progress => crate::batch::progress_role(prev, next, cfg.strict_alternation),
            _ => crate::batch::marker_role(prev, next),
        };
        let scaffold = counter.count_message(&marker::render(
            job.kind,
            role.clone().unwrap_or(Role::Assistant),
            &ledger,
        ));
        let estimated = scaffold + cfg.summary_max_tokens;
        // As the assembly decides: a summary that would have to join a pinned message or
        // the protected tail is not applied, and its span (with what prune would have
        // rewritten inside it) stays as it is.
        let stays = role.is_none()
            && next.is_some_and(|n| crate::batch::merge_refused(n, job.range.end, r.tail.start));
        if !stays {
            for i in job.range.clone() {
                removed += t.tokens_of(i);
                out[i].fate = Fate::Summarized { summary: k };
            }
            added += estimated;
            if role.is_none() && next.is_some() {
                // The summary joins the next message, which grows by the summary's size.
                out[job.range.end].fate = Fate::Merged { summary: k };
            }
        }
        summaries.push(PlannedSummary {
            kind: job.kind,
            range: job.range.clone(),
            estimated_tokens: estimated,
        });
    }
    let scale = t.calibration_scale();
    let delta = |x: u64| (x as f64 * scale).round() as u64;
    Preview {
        kind,
        messages: out,
        summaries,
        continuation: continuation.is_some(),
        tokens_before: plan.tokens_before,
        tokens_after: (plan.tokens_before + delta(added)).saturating_sub(delta(removed)),
    }
}

/// The preview of a micro or turn-progress plan (see the [module](self) documentation).
pub fn of_micro(t: &Transcript, plan: &MicroPlan, counter: &dyn TokenCounter) -> Preview {
    let mut out = kept(t);
    let mut summaries = Vec::new();
    let mut kind = PreviewKind::Nothing;
    let mut tokens_after = plan.tokens_before;
    match &plan.step {
        MicroStep::Absorb(job) => {
            kind = PreviewKind::Micro;
            let body = job.previous_summary.as_deref().unwrap_or("");
            let estimated = counter.count_message(&marker::render(job.kind, Role::Assistant, body));
            let mut first: Option<usize> = None;
            let mut last = 0;
            for i in job
                .ranges
                .iter()
                .flat_map(Clone::clone)
                .chain(job.superseded_markers.iter().copied())
            {
                out[i].fate = Fate::Summarized { summary: 0 };
                first = Some(first.map_or(i, |f| f.min(i)));
                last = last.max(i + 1);
            }
            summaries.push(PlannedSummary {
                kind: job.kind,
                range: first.unwrap_or(0)..last,
                estimated_tokens: estimated,
            });
            let removed = job.exchange_tokens
                + job
                    .superseded_markers
                    .iter()
                    .map(|&i| t.tokens_of(i))
                    .sum::<u64>();
            tokens_after = (tokens_after + estimated).saturating_sub(removed);
        }
        MicroStep::Defrag(job) => {
            kind = PreviewKind::Defrag;
            let i = job.marker_index;
            out[i].fate = Fate::Summarized { summary: 0 };
            let estimated = t.tokens_of(i) / 2;
            summaries.push(PlannedSummary {
                kind: MarkerKind::Micro,
                range: i..i + 1,
                estimated_tokens: estimated,
            });
            tokens_after = tokens_after.saturating_sub(t.tokens_of(i) - estimated);
        }
        _ => {}
    }
    Preview {
        kind,
        messages: out,
        summaries,
        continuation: false,
        tokens_before: plan.tokens_before,
        tokens_after,
    }
}

/// The preview for people: one header line, the planned summaries, then one line per message
/// that the pass changes or keeps because it is pinned, and one line per run of kept
/// messages. One-liners are cut to 100 characters on one line (they are redacted already).
///
/// ```
/// use compaction_core::batch::{self, BatchConfig, BatchRequest};
/// use compaction_core::{Estimator, Message, Transcript, preview};
///
/// let counter = Estimator::default();
/// let t = Transcript::new(vec![Message::user("hi"), Message::assistant("hello")], &counter);
/// let cfg = BatchConfig::default();
/// let plan = batch::plan_batch(&t, 6_000, &cfg, &BatchRequest::default(), &counter);
/// let text = preview::of_batch(&t, &plan, &cfg, &counter).to_string();
/// let lines: Vec<&str> = text.lines().collect();
/// assert!(lines[0].starts_with("dry run: pass=nothing messages=2 tokens="), "{text}");
/// assert!(lines[1].trim_start().starts_with("0-1  kept verbatim: 2 messages ("), "{text}");
/// ```
impl std::fmt::Display for Preview {
    fn fmt(&self, s: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = self;
        let kind = match p.kind {
            PreviewKind::Nothing => "nothing",
            PreviewKind::Prune => "prune",
            PreviewKind::Batch => "batch",
            PreviewKind::Micro => "micro",
            PreviewKind::Defrag => "defrag",
        };
        writeln!(
            s,
            "dry run: pass={kind} messages={} tokens={}->{} (estimated) summaries={} pruned={} pinned={}",
            p.messages.len(),
            p.tokens_before,
            p.tokens_after,
            p.summaries.len(),
            p.count(|f| matches!(f, Fate::Pruned { .. } | Fate::Demoted { .. })),
            p.count(|f| *f == Fate::Pinned),
        )?;
        for (k, sum) in p.summaries.iter().enumerate() {
            writeln!(
                s,
                "summary {k}: {} marker for messages {}..{} (~{} tokens)",
                sum.kind.as_str(),
                sum.range.start,
                sum.range.end,
                sum.estimated_tokens
            )?;
        }
        if p.continuation {
            writeln!(
                s,
                "continuation: a user-role continuation message beside the summary (no user \
                 message with text would remain)"
            )?;
        }
        let mut i = 0;
        while i < p.messages.len() {
            let m = &p.messages[i];
            if m.fate == Fate::Kept {
                let mut j = i;
                let mut tokens = 0;
                while j < p.messages.len() && p.messages[j].fate == Fate::Kept {
                    tokens += p.messages[j].tokens;
                    j += 1;
                }
                writeln!(
                    s,
                    "{:>6}  kept verbatim: {} message{} ({tokens} tokens)",
                    if j - i == 1 {
                        format!("{i}")
                    } else {
                        format!("{i}-{}", j - 1)
                    },
                    j - i,
                    if j - i == 1 { "" } else { "s" }
                )?;
                i = j;
                continue;
            }
            let fate = match &m.fate {
                Fate::Pinned => "pinned, kept".to_owned(),
                Fate::Pruned { one_liner: Some(l) } => format!("pruned -> {}", clip(l)),
                Fate::Pruned { one_liner: None } => "pruned (arguments shortened)".to_owned(),
                Fate::Demoted { one_liner } => format!("demoted -> {}", clip(one_liner)),
                Fate::Summarized { summary } => format!("summarized (summary {summary})"),
                Fate::Merged { summary } => format!("kept, summary {summary} merged in front"),
                Fate::Kept => "kept".to_owned(),
            };
            writeln!(
                s,
                "{i:>6}  {:<9} {:<16} {:>7} tokens  {fate}",
                m.role,
                m.tool
                    .as_deref()
                    .map_or("-".to_owned(), |n| n.chars().take(16).collect()),
                m.tokens
            )?;
            i += 1;
        }
        Ok(())
    }
}

/// `text` on one line, cut to 100 characters (the last one an ellipsis).
fn clip(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= 100 {
        one_line
    } else {
        let cut: String = one_line.chars().take(99).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn clip_keeps_100_characters_on_one_line() {
        assert_eq!(clip("a\n  b\tc"), "a b c");
        let exact = "é".repeat(100);
        assert_eq!(clip(&exact), exact);
        let long = clip(&"é".repeat(101));
        assert_eq!(long.chars().count(), 100);
        assert!(long.ends_with("é…"), "{long}");
    }
}
