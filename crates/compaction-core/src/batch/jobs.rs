//! The summary jobs of a batch pass: the span each summarizes (the largest piece of the middle
//! a marker role fits around, folding the older summaries it reaches), the job's material,
//! previous summary and ledger, and the budgets that make the pass land under the threshold.

use std::ops::Range;

use super::assembly::marker_role;
use super::continuation::{ContinuationNeed, pair_layout};
use super::{BatchConfig, FOLD_BUDGET_FACTOR, SummaryJob};
use crate::ledger::Ledger;
use crate::marker;
use crate::material;
use crate::message::{Content, MarkerKind, Message, Role};
use crate::prune::PrunePlan;
use crate::regions::Regions;
use crate::tokens::TokenCounter;
use crate::transcript::{Transcript, groups};

pub(super) fn batch_range(
    t: &Transcript,
    r: &Regions,
    keep_reply: bool,
    need: &ContinuationNeed,
) -> Option<Range<usize>> {
    // Pinned messages split the middle; the summary takes the largest span of one piece.
    let mut best: Option<Range<usize>> = None;
    let middle = if keep_reply {
        r.rewritable_middle()
    } else {
        r.middle.clone()
    };
    for piece in crate::pins::free_ranges(t.messages(), middle) {
        if let Some(found) = batch_range_in(t, piece, need)
            && best.as_ref().is_none_or(|b| found.len() > b.len())
        {
            best = Some(found);
        }
    }
    best
}

fn batch_range_in(
    t: &Transcript,
    middle: Range<usize>,
    need: &ContinuationNeed,
) -> Option<Range<usize>> {
    // Find the largest span of the middle, cut on unit boundaries, around which a marker role
    // fits without creating a same-role pair: shrink the end first (moving whole units into the
    // kept tail side), then, if nothing fits, keep leading units verbatim as well. A span that
    // reaches more of the middle's older summaries wins over a longer one, so an older summary
    // at an edge is folded into the new one rather than left beside it. The span ends before
    // the last reply the user saw ([`Regions::rewritable_middle`]). When the pass must add the
    // continuation ([`ContinuationNeed`]), the span's neighbours must take the pair.
    let msgs = t.messages();
    let fits = |span: &Range<usize>| {
        let prev = span.start.checked_sub(1).map(|i| &msgs[i]);
        let next = msgs.get(span.end);
        if need.after_replacing(std::slice::from_ref(span)) {
            pair_layout(prev, next).is_some()
        } else {
            marker_role(prev, next).is_some()
        }
    };
    let markers: Vec<usize> = middle
        .clone()
        .filter(|&i| marker::classify(&msgs[i]).is_some())
        .collect();
    let covered = |x: &Range<usize>| markers.iter().filter(|&&i| x.contains(&i)).count();
    let unit_starts: Vec<usize> = groups::units(msgs, middle.clone())
        .into_iter()
        .map(|u| u.start)
        .collect();
    let mut best: Option<(usize, Range<usize>)> = None;
    for &start in &unit_starts {
        let mut end = middle.end;
        while end > start {
            if fits(&(start..end)) {
                let span = start..end;
                let key = covered(&span);
                if best
                    .as_ref()
                    .is_none_or(|(k, b)| (key, span.len()) > (*k, b.len()))
                {
                    best = Some((key, span));
                }
                break;
            }
            end = if end > 0 && msgs[end - 1].is_tool() {
                groups::group_start(msgs, end - 1)
            } else {
                end - 1
            };
        }
        let left = markers.iter().filter(|&&i| i >= start).count();
        if best
            .as_ref()
            .is_some_and(|(k, b)| b.len() >= middle.end - start && *k >= left)
        {
            break;
        }
    }
    // Nothing new to fold: a span of summaries and blank messages alone would cost a
    // summarizer call for a summary of a summary, or of nothing.
    best.map(|(_, b)| b)
        .filter(|b| b.clone().any(|i| has_substance(&msgs[i])))
}

/// Whether a summary of `m` would have anything to say: `m` is no library marker and carries
/// visible text, a tool call, a tool result or a non-text part (an image). A blank or
/// whitespace message (the empty user turn a messaging platform echoes after the real ask) is
/// no span of its own: summarizing it alone would cost a summarizer call and leave a second
/// summary for nothing (issue 33, item 9).
pub(super) fn has_substance(m: &Message) -> bool {
    if marker::classify(m).is_some() {
        return false;
    }
    let other_part = match m.content() {
        Some(Content::Parts(parts)) => parts.iter().any(|p| p.text().is_none()),
        _ => false,
    };
    m.has_visible_text() || m.has_tool_calls() || m.is_tool() || other_part
}

pub(super) fn job(
    t: &Transcript,
    prune: &PrunePlan,
    range: Range<usize>,
    kind: MarkerKind,
    focus: Option<String>,
    cfg: &BatchConfig,
) -> SummaryJob {
    // The span as pruning leaves it (pruning is one-for-one, so indices match), by reference.
    let mut span: Vec<&Message> = t.messages()[range.clone()].iter().collect();
    for s in &prune.edit.splices {
        if s.range.start >= range.start && s.range.end <= range.end && s.replacement.len() == 1 {
            span[s.range.start - range.start] = &s.replacement[0];
        }
    }
    // The ledger follows the span in order: a summary inside it contributes the ledger it
    // carries, other messages their own tool calls (as written, before pruning cut them).
    let mut ledger = Ledger::default();
    let mut previous: Vec<String> = Vec::new();
    for (m, original) in span.iter().zip(&t.messages()[range.clone()]) {
        if marker::classify(m).is_some() {
            if let Some(body) = marker::parse_body(m) {
                let (text, carried) = Ledger::split(&body);
                ledger.extend(&carried);
                if !text.trim().is_empty() {
                    previous.push(text.to_owned());
                }
            }
            // A message Hermes Agent merged its summary into keeps its own text before the
            // summary: carried into the update, not lost with the marker.
            if let Some((prior, _)) = marker::split_merged(&m.text())
                && !prior.is_empty()
            {
                previous.push(format!(
                    "Earlier message kept with that summary ({}): {}",
                    m.role(),
                    crate::redact::redact(prior)
                ));
            }
        } else if cfg.ledger_max_tokens > 0 {
            ledger.observe(original);
        }
    }
    // The previous summaries and the material share one bound (spec section 9).
    let previous = (!previous.is_empty()).then(|| previous.join("\n\n"));
    let bounds = material::share(
        previous.as_deref().map_or(0, |p| p.chars().count()),
        &cfg.material,
    );
    // Only what the bounded material can show is cloned: the first message and the newest
    // ones up to a few times the material bound, so the work follows the bound, not the span.
    let plain: Vec<&Message> = span
        .into_iter()
        .filter(|m| marker::classify(m).is_none())
        .collect();
    let mut chosen: Vec<Message> = Vec::new();
    if let Some((first, rest)) = plain.split_first() {
        let limit = cfg.material.max_total_chars.saturating_mul(2);
        let mut used = first.content_chars();
        let mut newest: Vec<Message> = Vec::new();
        for m in rest.iter().rev() {
            if used > limit {
                break;
            }
            used += m.content_chars().min(cfg.material.max_message_chars);
            newest.push((*m).clone());
        }
        chosen.push((*first).clone());
        chosen.extend(newest.into_iter().rev());
    }
    let material = material::serialize(&chosen, t.messages(), &bounds);
    let previous_summary = previous.map(|p| material::bound_previous(&p, &material, &cfg.material));
    SummaryJob {
        kind,
        range,
        material,
        previous_summary,
        focus,
        // Redacted like the material: deterministic summarizers read these.
        // A secret split across two neighbouring messages is redacted in both.
        messages: crate::redact::redact_adjacent_messages(&chosen)
            .iter()
            .map(crate::redact::redact_message)
            .collect(),
        ledger,
        budget_tokens: cfg.summary_max_tokens,
        ledger_max_tokens: cfg.ledger_max_tokens,
    }
}

/// The smallest summary budget a job is given, however little room the window leaves.
const MIN_SUMMARY_BUDGET_TOKENS: u64 = 128;

/// Where a summarizing pass aims to land, as a fraction of the threshold: the runway the
/// default prune acceptance asks for (15%), independent of how a caller tunes that
/// acceptance.
pub(super) const SUMMARY_LANDING_RATIO: f64 = 0.85;

/// Sizes each job's summary budget and ledger bound so the pass lands at or below `landing`
/// ([`SUMMARY_LANDING_RATIO`] of the threshold) when that is possible: the room the kept
/// messages leave under it (minus
/// each marker's fixed text) is shared by the jobs, a third at most for the ledger, and
/// neither exceeds its configured size ([`BatchConfig::summary_max_tokens`],
/// [`BatchConfig::ledger_max_tokens`]) nor the budget falls below
/// [`MIN_SUMMARY_BUDGET_TOKENS`]. Large windows therefore get the configured sizes; a tiny
/// window gets summaries that fit it.
pub(super) fn size_jobs(
    jobs: &mut [SummaryJob],
    kept: u64,
    landing: u64,
    scale: f64,
    cfg: &BatchConfig,
    counter: &dyn TokenCounter,
) {
    if jobs.is_empty() {
        return;
    }
    let overhead = |kind: MarkerKind| {
        counter.count_message(&marker::render(kind, Role::User, marker::RECALL_NOTE))
    };
    let overheads: u64 = jobs.iter().map(|j| overhead(j.kind)).sum();
    let room = (landing.saturating_sub(kept) as f64 / scale.max(f64::MIN_POSITIVE)) as u64;
    let share = room.saturating_sub(overheads) / jobs.len() as u64;
    for j in jobs.iter_mut() {
        j.ledger_max_tokens = cfg.ledger_max_tokens.min(share / 3);
        let ledger = j
            .ledger
            .render(j.ledger_max_tokens)
            .map_or(0, |s| counter.count_text(&s));
        // A job that folds older summaries may keep what they held beside what is new, up to
        // FOLD_BUDGET_FACTOR times the configured size: folding (one summary remains) then
        // does not squeeze the session's memory into the budget of a first summary.
        let folded = j
            .previous_summary
            .as_deref()
            .map_or(0, |s| counter.count_text(s));
        let cap = cfg
            .summary_max_tokens
            .saturating_add(folded)
            .min(cfg.summary_max_tokens.saturating_mul(FOLD_BUDGET_FACTOR));
        j.budget_tokens = share.saturating_sub(ledger).clamp(
            MIN_SUMMARY_BUDGET_TOKENS,
            cap.max(MIN_SUMMARY_BUDGET_TOKENS),
        );
    }
}

pub(super) fn pruned_tokens(
    t: &Transcript,
    prune: &PrunePlan,
    range: Range<usize>,
    counter: &dyn TokenCounter,
) -> u64 {
    let mut total = t.tokens_in(range.clone());
    for s in &prune.edit.splices {
        if s.range.start >= range.start && s.range.end <= range.end {
            let old = t.tokens_in(s.range.clone());
            let new: u64 = s.replacement.iter().map(|m| counter.count_message(m)).sum();
            total = total + new - old;
        }
    }
    total
}

/// Characters of a caller's focus topic kept (head and tail, see [`material::cut_middle`]).
pub(super) const MAX_FOCUS_CHARS: usize = 1_000;

pub(super) fn derive_focus(t: &Transcript) -> Option<String> {
    let u = t.last_real_user()?;
    let text = t.messages()[u].text();
    let text = text.trim();
    (!text.is_empty()).then(|| material::cut_middle(text, 300))
}
