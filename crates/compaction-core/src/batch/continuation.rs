//! The continuation beside a batch summary (issue 21, item 14): whether a pass needs one, and
//! how it is laid out with its summary.

use std::ops::Range;

use super::SummaryJob;
use crate::marker;
use crate::message::{Message, Role};

/// Where the [continuation](marker::continuation) goes beside a summary: after it (the
/// natural place) or before it. Either way the summary is assistant-role and the continuation
/// user-role, so roles alternate across the pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pair {
    /// `[summary (assistant), continuation (user)]`.
    SummaryFirst,
    /// `[continuation (user), summary (assistant)]`.
    ContinuationFirst,
}

/// The layout of a summary with the continuation between `prev` and `next` that makes no new
/// same-role pair, puts a user message first after the system prompt, and puts nothing but a
/// tool call's own results after it; `None` when neither layout fits.
pub(crate) fn pair_layout(prev: Option<&Message>, next: Option<&Message>) -> Option<Pair> {
    let next_fits = |role: Role| next.is_none_or(|n| *n.role() != role && !n.is_tool());
    let after_system = prev.is_none_or(|p| p.role().is_system_like());
    if !after_system && prev.is_some_and(|p| !p.is_assistant()) && next_fits(Role::User) {
        return Some(Pair::SummaryFirst);
    }
    if prev.is_none_or(|p| !p.is_user()) && next_fits(Role::Assistant) {
        return Some(Pair::ContinuationFirst);
    }
    None
}

/// Whether a pass over a transcript must add the continuation next to its summary: the
/// transcript holds no user text of the user's own ([`marker::is_user_text`]), and the
/// continuations it already holds are all inside what the pass replaces (one that survives
/// elsewhere is kept, never stacked).
#[derive(Clone, Debug, Default)]
pub(crate) struct ContinuationNeed {
    pub(crate) lacks_user_text: bool,
    existing: Vec<usize>,
}

impl ContinuationNeed {
    pub(crate) fn of(msgs: &[Message]) -> ContinuationNeed {
        let lacks_user_text = !msgs.iter().any(marker::is_user_text);
        let existing = if lacks_user_text {
            (0..msgs.len())
                .filter(|&i| marker::is_continuation(&msgs[i]))
                .collect()
        } else {
            Vec::new()
        };
        ContinuationNeed {
            lacks_user_text,
            existing,
        }
    }

    /// Whether replacing `ranges` (and nothing else holding user text) needs a continuation.
    pub(crate) fn after_replacing(&self, ranges: &[Range<usize>]) -> bool {
        self.lacks_user_text
            && self
                .existing
                .iter()
                .all(|i| ranges.iter().any(|r| r.contains(i)))
    }
}

/// Which job of a batch pass takes the continuation, and how, when the pass needs one: the
/// first whose neighbours fit a [`Pair`] (a turn-progress summary after its user message takes
/// it after itself, which alternates even under strict alternation). `None` when the pass
/// needs none or no job can take it.
pub(crate) fn continuation_plan(msgs: &[Message], jobs: &[SummaryJob]) -> Option<(usize, Pair)> {
    let ranges: Vec<Range<usize>> = jobs.iter().map(|j| j.range.clone()).collect();
    if jobs.is_empty() || !ContinuationNeed::of(msgs).after_replacing(&ranges) {
        return None;
    }
    jobs.iter().enumerate().find_map(|(k, job)| {
        let prev = job.range.start.checked_sub(1).map(|i| &msgs[i]);
        let next = msgs.get(job.range.end);
        pair_layout(prev, next).map(|l| (k, l))
    })
}
