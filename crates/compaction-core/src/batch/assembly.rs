//! Assembling a batch plan: the summaries (and the continuation) become splices, merged with
//! the prune edit, checked against the planned-against transcript and the tool pairs.

use super::continuation::{Pair, continuation_plan};
use super::{BatchConfig, BatchPlan, BatchStep, SummaryJob};
use crate::edit::{Edit, Splice};
use crate::error::Error;
use crate::marker;
use crate::message::{Content, MarkerKind, Message, Part, Role};
use crate::transcript::{Transcript, groups};

pub(super) fn assemble_from(
    t: &Transcript,
    plan: &BatchPlan,
    prune: Vec<Splice>,
    summaries: &[String],
    cfg: &BatchConfig,
) -> Result<Edit, Error> {
    if t.stamp() != plan.planned_stamp {
        return Err(Error::StaleTranscript);
    }
    let jobs: &[SummaryJob] = match &plan.step {
        BatchStep::Summarize(jobs) => jobs,
        _ => &[],
    };
    if jobs.len() != summaries.len() {
        return Err(Error::SummaryCount {
            expected: jobs.len(),
            got: summaries.len(),
        });
    }
    let msgs = t.messages();
    let continuation = continuation_plan(msgs, jobs);
    let mut splices: Vec<Splice> = Vec::new();
    let mut prune_iter = prune.into_iter().peekable();
    for (k, (job, body)) in jobs.iter().zip(summaries).enumerate() {
        // Prune splices before this job's range pass through; those inside are subsumed.
        while let Some(s) = prune_iter.next_if(|s| s.range.start < job.range.start) {
            splices.push(s);
        }
        while prune_iter
            .peek()
            .is_some_and(|s| s.range.start < job.range.end)
        {
            prune_iter.next();
        }
        let layout = continuation.filter(|(j, _)| *j == k).map(|(_, l)| l);
        let tail_start = plan.regions.tail.start;
        splices.extend(summary_splices(msgs, job, body, cfg, layout, tail_start));
    }
    splices.extend(prune_iter);
    let edit = Edit { splices };
    edit.validate(msgs.len())?;
    if breaks_pairs(msgs, &edit) {
        return Err(Error::WouldBreakToolPairs);
    }
    Ok(edit)
}

/// The role a marker placed between `prev` and `next` should take so that no new same-role
/// pair appears, or `None` when no role fits.
pub(crate) fn marker_role(prev: Option<&Message>, next: Option<&Message>) -> Option<Role> {
    let candidates = match prev.map(Message::role) {
        // Right after the system prompt, providers want a user message.
        None | Some(Role::System) | Some(Role::Developer) => vec![Role::User],
        Some(_) => vec![Role::User, Role::Assistant],
    };
    candidates.into_iter().find(|r| {
        prev.is_none_or(|p| p.role() != r) && next.is_none_or(|n| n.role() != r && !n.is_tool())
    })
}

/// The role of a turn-progress marker between `prev` and `next`: assistant (it sits right
/// after the turn's user message, and an assistant message may follow it, law 3); under strict
/// alternation the role that alternates with both neighbours, or `None` (the summary is then
/// merged into `next`). When the turn's user message lies in the head, the turn's older part
/// starts after the head and `prev` may be a tool result: a user-role marker then fits where
/// merging into `next` (a tool call in the tail) could not.
pub(crate) fn progress_role(
    prev: Option<&Message>,
    next: Option<&Message>,
    strict: bool,
) -> Option<Role> {
    if strict {
        marker_role(prev, next)
    } else {
        Some(Role::Assistant)
    }
}

/// Whether a summary that no role fits beside (it would be merged into `next`, the message
/// after its span ending at `span_end`) must instead leave its span as it is: `next` is pinned
/// or lies in the protected tail starting at `tail_start`, and both stay byte-identical (law
/// 1). The assembly and the preview both decide with it.
pub(crate) fn merge_refused(next: &Message, span_end: usize, tail_start: usize) -> bool {
    next.is_pinned() || span_end >= tail_start
}

fn summary_splices(
    msgs: &[Message],
    job: &SummaryJob,
    body: &str,
    cfg: &BatchConfig,
    continuation: Option<Pair>,
    tail_start: usize,
) -> Vec<Splice> {
    let body = job
        .ledger
        .attach(&crate::redact::redact(body), job.ledger_max_tokens);
    let prev = job.range.start.checked_sub(1).map(|i| &msgs[i]);
    let next = msgs.get(job.range.end);
    let role = match (continuation, job.kind) {
        // Beside the continuation (user-role), the summary is assistant-role.
        (Some(_), _) => Some(Role::Assistant),
        (None, MarkerKind::Progress) => progress_role(prev, next, cfg.strict_alternation),
        (None, _) => marker_role(prev, next),
    };
    match (role, next) {
        (Some(role), _) => {
            let summary = marker::render(job.kind, role, &body);
            let replacement = match continuation {
                None => vec![summary],
                Some(Pair::SummaryFirst) => vec![summary, marker::continuation()],
                Some(Pair::ContinuationFirst) => vec![marker::continuation(), summary],
            };
            vec![Splice {
                range: job.range.clone(),
                replacement,
            }]
        }
        // A pinned message and the protected tail stay byte-identical (law 1): no summary is
        // merged into them. The span then stays as it is (no role fits beside it under strict
        // alternation), and the rest of the pass goes on.
        (None, Some(next)) if merge_refused(next, job.range.end, tail_start) => Vec::new(),
        (None, Some(next)) => {
            // Merge the summary into the following message, which keeps every other field.
            let mut merged = next.clone();
            let text = marker::render_text(job.kind, &body);
            let content = match next.content() {
                Some(Content::Parts(parts)) => {
                    let mut p = vec![Part::text_part(text)];
                    p.extend(parts.iter().cloned());
                    Content::Parts(p)
                }
                _ if next.has_visible_text() => Content::Text(format!("{text}\n\n{}", next.text())),
                _ => Content::Text(text),
            };
            merged.set_content(Some(content));
            merged.meta_mut().marker = Some(job.kind);
            vec![Splice {
                range: job.range.start..job.range.end + 1,
                replacement: vec![merged],
            }]
        }
        (None, None) => vec![Splice {
            range: job.range.clone(),
            replacement: vec![marker::render(job.kind, Role::Assistant, &body)],
        }],
    }
}

/// Whether applying `edit` would separate a tool call from its result. Only splice
/// boundaries can do that: a replaced range must not start on a result whose call lies before
/// it, nor end before a result whose call lies inside it, and its replacement must keep the
/// same tool-call ids as the messages it replaces (prune copies) or carry none (markers).
fn breaks_pairs(msgs: &[Message], edit: &Edit) -> bool {
    edit.splices.iter().any(|s| {
        if s.range.is_empty() {
            return false;
        }
        let ids = |m: &[Message]| -> (Vec<String>, Vec<String>) {
            let calls = m
                .iter()
                .flat_map(|x| x.tool_calls().iter().map(|c| c.call_id().to_owned()))
                .collect();
            let results = m
                .iter()
                .filter_map(|x| x.tool_call_id().map(str::to_owned))
                .collect();
            (calls, results)
        };
        let (old_calls, old_results) = ids(&msgs[s.range.clone()]);
        let (new_calls, new_results) = ids(&s.replacement);
        let same = new_calls == old_calls && new_results == old_results;
        let none = new_calls.is_empty() && new_results.is_empty();
        if same {
            return false;
        }
        if !none {
            return true;
        }
        groups::splits_group(msgs, s.range.start) || groups::splits_group(msgs, s.range.end)
    })
}
