//! Assembly: a plan and the summarizer's output into one edit of the planned-against
//! transcript, with the marker placed so roles alternate (law 3).

use std::ops::Range;

use super::pairing::pairs_inside;
use super::{AbsorbJob, MicroConfig, MicroOutcome, MicroPlan, MicroStep, USER_JOIN_SEPARATOR};
use crate::edit::{Edit, Splice};
use crate::error::Error;
use crate::ledger::Ledger;
use crate::marker;
use crate::message::{Content, MarkerKind, Message, Part, Role};
use crate::tokens::TokenCounter;
use crate::transcript::Transcript;

/// Turns a plan and the summarizer's output into one edit of the planned-against transcript.
///
/// For [`MicroStep::Absorb`], `new_summary` is the merged summary; for [`MicroStep::Defrag`],
/// the shortened one (an output above [`MicroConfig::defrag_max_ratio`] of the input gives
/// [`MicroOutcome::DefragFailed`]). The summary is redacted before it is written. Other steps
/// have nothing to assemble (`Error::SummaryCount` with `expected: 0`); a transcript that
/// changed since planning gives `Error::StaleTranscript`.
pub fn assemble_micro(
    t: &Transcript,
    plan: &MicroPlan,
    new_summary: &str,
    cfg: &MicroConfig,
    counter: &dyn TokenCounter,
) -> Result<MicroOutcome, Error> {
    if t.stamp() != plan.planned_stamp {
        return Err(Error::StaleTranscript);
    }
    let body = crate::redact::redact(new_summary).into_owned();
    let msgs = t.messages();
    match &plan.step {
        MicroStep::Defrag(job) => {
            let (text, _) = Ledger::split(&body);
            let output_tokens = counter.count_text(text);
            if output_tokens as f64 > job.summary_tokens as f64 * cfg.defrag_max_ratio {
                return Ok(MicroOutcome::DefragFailed {
                    input_tokens: job.summary_tokens,
                    output_tokens,
                });
            }
            let body = job.ledger.attach(text, cfg.ledger_max_tokens);
            let i = job.marker_index;
            let role = msgs[i].role().clone();
            let edit = Edit::single(
                i..i + 1,
                vec![marker::render(MarkerKind::Micro, role, &body)],
            );
            edit.validate(msgs.len())?;
            Ok(MicroOutcome::Defrag {
                edit,
                rolling_summary: body,
            })
        }
        MicroStep::Absorb(job) if job.kind == MarkerKind::Progress => {
            let body = job.ledger.attach(&body, cfg.ledger_max_tokens);
            // The marker and the groups it absorbs are one contiguous span: the groups after
            // the marker, and any of the turn's older groups before it.
            let units = job
                .ranges
                .iter()
                .cloned()
                .chain(job.superseded_markers.iter().map(|&i| i..i + 1));
            let start = units.clone().map(|u| u.start).min().unwrap_or(0);
            let end = units.map(|u| u.end).max().unwrap_or(start);
            let edit = Edit::single(
                start..end,
                vec![marker::render(MarkerKind::Progress, Role::Assistant, &body)],
            );
            edit.validate(msgs.len())?;
            Ok(MicroOutcome::Progressed {
                edit,
                progress_summary: body,
            })
        }
        MicroStep::Absorb(job) => {
            let body = job.ledger.attach(&body, cfg.ledger_max_tokens);
            check_pairs(msgs, &job.ranges)?;
            let edit = absorb_edit(
                msgs,
                job,
                &body,
                cfg.strict_alternation,
                &plan.regions.middle,
            );
            edit.validate(msgs.len())?;
            let marker_at = edit
                .splices
                .iter()
                .find(|s| s.replacement.iter().any(|m| marker::classify(m).is_some()))
                .map_or(0, |s| s.range.start);
            let cursor = after_index(&edit, marker_at) + 1;
            Ok(MicroOutcome::Absorbed {
                edit,
                cursor,
                rolling_summary: body,
            })
        }
        _ => Err(Error::SummaryCount {
            expected: 0,
            got: 1,
        }),
    }
}

fn check_pairs(messages: &[Message], ranges: &[Range<usize>]) -> Result<(), Error> {
    if ranges.iter().all(|r| pairs_inside(messages, r.clone())) {
        Ok(())
    } else {
        Err(Error::WouldBreakToolPairs)
    }
}

/// The splices of an absorb: superseded markers and the absorbed ranges are removed and one
/// of them is replaced by the new marker, the last range unless removing an earlier unit would
/// make two same-role neighbours that law 3 does not allow (e.g. a user-role batch marker
/// followed by a user message); then the marker takes that unit's place. Under strict
/// alternation, user messages made adjacent inside the middle are joined.
fn absorb_edit(
    msgs: &[Message],
    job: &AbsorbJob,
    body: &str,
    strict: bool,
    middle: &Range<usize>,
) -> Edit {
    let (units, marker_unit, _) = arrangement(msgs, job, strict, middle);
    let prev = marker_unit.start.checked_sub(1).map(|i| &msgs[i]);
    let role =
        crate::batch::marker_role(prev, msgs.get(marker_unit.end)).unwrap_or(Role::Assistant);
    let new_marker = marker::render(MarkerKind::Micro, role, body);
    let splices: Vec<Splice> = units
        .into_iter()
        .map(|range| Splice {
            replacement: if range == marker_unit {
                vec![new_marker.clone()]
            } else {
                Vec::new()
            },
            range,
        })
        .collect();
    let splices = if strict {
        join_adjacent_users(msgs, splices, middle)
    } else {
        splices
    };
    Edit { splices }
}

/// The units an absorb removes (ranges and superseded markers, ascending), the one the new
/// marker replaces, and whether every other removal is allowed by law 3. A removal is blocked
/// when its neighbours share a visible role and are not two real user messages (or, under
/// strict alternation, two real user messages that cannot be joined because one of them is
/// protected).
pub(super) fn arrangement(
    msgs: &[Message],
    job: &AbsorbJob,
    strict: bool,
    middle: &Range<usize>,
) -> (Vec<Range<usize>>, Range<usize>, bool) {
    let mut units: Vec<Range<usize>> = job.ranges.clone();
    units.extend(job.superseded_markers.iter().map(|&i| i..i + 1));
    units.sort_by_key(|r| r.start);
    let last_range = job.ranges.last().cloned().unwrap_or(0..0);
    let blocked = |r: &Range<usize>| {
        let (Some(prev), Some(next)) = (r.start.checked_sub(1).map(|i| &msgs[i]), msgs.get(r.end))
        else {
            return false;
        };
        let visible = matches!(prev.role(), Role::User | Role::Assistant);
        if !visible || prev.role() != next.role() {
            return false;
        }
        let real_users =
            prev.is_user() && marker::classify(prev).is_none() && marker::classify(next).is_none();
        let joinable = r.start > middle.start && r.end < middle.end;
        !(real_users && (!strict || joinable))
    };
    let marker_unit = units
        .iter()
        .find(|u| **u != last_range && blocked(u))
        .cloned()
        .unwrap_or(last_range);
    let ok = units.iter().all(|u| *u == marker_unit || !blocked(u));
    (units, marker_unit, ok)
}

/// Under strict alternation: a removal between two real user messages of the middle joins
/// them (and any further user made adjacent) into one user message. Protected neighbours (the
/// head's last or the tail's first message) are never rewritten.
fn join_adjacent_users(
    msgs: &[Message],
    splices: Vec<Splice>,
    middle: &Range<usize>,
) -> Vec<Splice> {
    let is_real_user = |m: &Message| m.is_user() && marker::classify(m).is_none();
    let starts: Vec<usize> = splices.iter().map(|s| s.range.start).collect();
    // (splice, whether it is a join this function made)
    let mut out: Vec<(Splice, bool)> = Vec::with_capacity(splices.len());
    for s in splices {
        let (a, b) = (s.range.start, s.range.end);
        let removal = s.replacement.is_empty() && a < b;
        if !(removal
            && a > middle.start
            && b < middle.end
            && !starts.contains(&b)
            && is_real_user(&msgs[b]))
        {
            out.push((s, false));
            continue;
        }
        match out.last_mut() {
            // A join that ends right where this removal starts: join the next user into it.
            Some((prev, true)) if prev.range.end == a => {
                prev.replacement = vec![join_users(&prev.replacement[0], &msgs[b])];
                prev.range.end = b + 1;
            }
            Some((prev, _)) if prev.range.end >= a => out.push((s, false)),
            _ if is_real_user(&msgs[a - 1]) => out.push((
                Splice {
                    range: a - 1..b + 1,
                    replacement: vec![join_users(&msgs[a - 1], &msgs[b])],
                },
                true,
            )),
            _ => out.push((s, false)),
        }
    }
    out.into_iter().map(|(s, _)| s).collect()
}

/// One user message holding `a` then `b`, verbatim, separated by [`USER_JOIN_SEPARATOR`].
/// Keeps `a`'s other fields; drops any store row id (it is a new row).
fn join_users(a: &Message, b: &Message) -> Message {
    let mut joined = a.clone();
    let content = match (a.content(), b.content()) {
        (Some(Content::Text(x)), Some(Content::Text(y))) => {
            Content::Text(format!("{x}{USER_JOIN_SEPARATOR}{y}"))
        }
        (x, y) => {
            let mut parts = as_parts(x);
            parts.push(Part::text_part(USER_JOIN_SEPARATOR));
            parts.extend(as_parts(y));
            Content::Parts(parts)
        }
    };
    joined.set_content(Some(content));
    if joined.meta().is_some() {
        joined.meta_mut().row_id = None;
    }
    joined
}

fn as_parts(c: Option<&Content>) -> Vec<Part> {
    match c {
        Some(Content::Parts(p)) => p.clone(),
        Some(Content::Text(s)) => vec![Part::text_part(s.clone())],
        Some(Content::Null) | None => Vec::new(),
    }
}

/// Where message `i` of the planned-against transcript lands after `edit`, when no splice
/// covers it or it starts a splice (then: where the splice's first replacement lands).
fn after_index(edit: &Edit, i: usize) -> usize {
    let shift: isize = edit
        .splices
        .iter()
        .filter(|s| s.range.end <= i && s.range.start < i)
        .map(|s| s.replacement.len() as isize - s.range.len() as isize)
        .sum();
    (i as isize + shift).max(0) as usize
}
