//! The one-for-one rewrites a batch plan adds to its prune edit besides pruning itself: old
//! image payloads of the rewritable regions, and the demotion of the protected messages'
//! largest tool outputs and arguments, the last resort when they alone exceed the threshold.

use std::ops::Range;

use super::{BatchConfig, BatchPlan};
use crate::edit::Splice;
use crate::marker;
use crate::message::Message;
use crate::prune::{self, PrunePlan};
use crate::regions::Regions;
use crate::tokens::TokenCounter;
use crate::transcript::Transcript;

/// Adds to the prune plan the replacement of old image payloads in `ranges` (all but the
/// transcript's newest [`BatchConfig::keep_recent_images`]; the last visible reply is left
/// verbatim), merged with a prune rewrite of the same message.
pub(super) fn strip_old_images(
    t: &Transcript,
    r: &Regions,
    ranges: &[Range<usize>],
    cfg: &BatchConfig,
    counter: &dyn TokenCounter,
    prune: &mut PrunePlan,
) {
    let skip: Vec<usize> = r.reply.into_iter().collect();
    let msgs = t.messages();
    let strips = crate::images::strip_old_images(msgs, ranges, cfg.keep_recent_images, &skip);
    if strips.is_empty() {
        return;
    }
    for (i, stripped) in strips {
        let existing = prune
            .edit
            .splices
            .iter_mut()
            .find(|s| s.range == (i..i + 1) && s.replacement.len() == 1);
        match existing {
            Some(s) => {
                // Pruning rewrote another field (the call's arguments): carry the stripped
                // content into its copy. A rewritten content holds no image any more.
                let old = &mut s.replacement[0];
                if old.content() == msgs[i].content() {
                    let before = counter.count_message(old);
                    *old = old.with_content(stripped.content().cloned());
                    prune.reclaimed_tokens += before.saturating_sub(counter.count_message(old));
                }
            }
            None => {
                prune.reclaimed_tokens += t
                    .tokens_of(i)
                    .saturating_sub(counter.count_message(&stripped));
                prune.edit.splices.push(Splice {
                    range: i..i + 1,
                    replacement: vec![stripped],
                });
            }
        }
    }
    prune.edit.splices.sort_by_key(|s| s.range.start);
}

/// Demotes the protected messages' largest tool outputs and tool-call arguments (largest
/// first) while `tokens`, the size they are part of, is over `limit`; returns that size after
/// the demotions. Candidates are the tail and the protected opening (never a system message,
/// a summary or a pinned group): a tool output becomes its informative one-liner, an
/// assistant's tool call keeps its id and name with its long string arguments shortened as
/// pruning shortens them. The demotions join the plan's prune edit, so the store archives each
/// original.
#[allow(clippy::too_many_arguments)]
pub(super) fn demote_tail(
    t: &Transcript,
    r: &Regions,
    tokens: u64,
    limit: u64,
    scale: f64,
    cfg: &BatchConfig,
    counter: &dyn TokenCounter,
    plan: &mut BatchPlan,
) -> u64 {
    let msgs = t.messages();
    let calls = prune::CallIndex::build(msgs);
    let free = crate::pins::free_ranges(msgs, r.head.clone())
        .into_iter()
        .chain(crate::pins::free_ranges(msgs, r.tail.clone()));
    let mut candidates: Vec<(usize, Message)> = free
        .flatten()
        .filter(|&i| {
            let m = &msgs[i];
            !m.role().is_system_like()
                && marker::classify(m).is_none()
                && t.tokens_of(i) > cfg.prune.tool_output_min_tokens
                && !plan.prune.edit.splices.iter().any(|s| s.range.contains(&i))
        })
        .filter_map(|i| {
            let m = &msgs[i];
            if m.is_tool() {
                if calls
                    .for_result(m)
                    .is_some_and(|c| prune::is_protected(&cfg.prune, c.name))
                {
                    return None;
                }
                let mut new = m.clone();
                let text = m.text();
                let line = prune::describe_tool_output(calls.for_result(m), &text);
                new.set_text(prune::with_names(line, &text, &cfg.prune));
                Some((i, new))
            } else if m.is_assistant() && !m.tool_calls().is_empty() {
                prune::shorten_arguments(m, &cfg.prune).map(|new| (i, new))
            } else {
                None
            }
        })
        .collect();
    // Largest first; among equals, older first so the newest output is demoted last.
    candidates.sort_by(|(a, _), (b, _)| t.tokens_of(*b).cmp(&t.tokens_of(*a)).then(a.cmp(b)));
    let mut tokens = tokens;
    let mut saved_est = 0u64;
    let mut chosen = Vec::new();
    for (i, new) in candidates {
        if tokens <= limit {
            break;
        }
        let saved = t.tokens_of(i).saturating_sub(counter.count_message(&new));
        saved_est += saved;
        tokens = tokens.saturating_sub((saved as f64 * scale).round() as u64);
        chosen.push(Splice {
            range: i..i + 1,
            replacement: vec![new],
        });
    }
    plan.demoted_tail_outputs += chosen.len();
    plan.prune.reclaimed_tokens += saved_est;
    plan.prune.edit.splices.extend(chosen);
    plan.prune.edit.splices.sort_by_key(|s| s.range.start);
    tokens
}
