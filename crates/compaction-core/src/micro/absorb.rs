//! The absorb planner: defrag, skip, the reclaim gate, and the oldest whole exchanges of the
//! middle folded into the rolling marker.

use std::ops::Range;

use super::assemble::arrangement;
use super::memo::GateScan;
use super::pairing::{has_open_call, pairs_inside};
use super::{
    AbsorbJob, DefragJob, ExchangeId, MicroConfig, MicroPlan, MicroRequest, MicroState, MicroStep,
    NoopReason, PlanMemo, age_limit, resolve_cursor,
};
use crate::ledger::Ledger;
use crate::marker;
use crate::material::{self, MaterialConfig};
use crate::message::{MarkerKind, Message, Role};
use crate::regions;

/// Plans a micro pass (spec section 5, steps 2 to 7), resuming what earlier plans of the same
/// transcript found (see [`PlanMemo`]): while the reclaim gate holds and the transcript only
/// grows, a plan reads only the exchanges appended since the last one instead of every
/// exchange after the cursor again.
pub(super) fn plan(req: &MicroRequest<'_>, state: &MicroState, memo: &mut PlanMemo) -> MicroPlan {
    let MicroRequest {
        transcript: t,
        threshold_tokens,
        compacted,
        config: cfg,
        counter,
        ..
    } = *req;
    let r = regions::partition(t, threshold_tokens, &cfg.regions, compacted);
    let resolved = resolve_cursor(t, &r, state);
    if resolved
        .rolling_marker
        .is_some_and(|i| t.messages()[i].is_pinned())
    {
        // A pinned rolling marker is never rewritten nor superseded: micro waits until it is
        // unpinned (a second rolling marker would break law 5).
        return MicroPlan {
            regions: r,
            threshold_tokens,
            tokens_before: t.current_tokens(),
            cursor: None,
            rehydrated_from: None,
            resolved: Some(resolved),
            rolling_summary_tokens: 0,
            step: MicroStep::Noop(NoopReason::NothingToAbsorb),
            planned_stamp: t.stamp(),
        };
    }
    // The ledger is the library's, not the summarizer's: sizes and requests see the text only.
    let (rolling_text, rolling_ledger) = split_summary(resolved.rolling_summary.as_deref());
    let summary_tokens = rolling_text.as_deref().map_or(0, |s| counter.count_text(s));
    let mut plan = MicroPlan {
        regions: r.clone(),
        threshold_tokens,
        tokens_before: t.current_tokens(),
        cursor: None,
        rehydrated_from: None,
        resolved: None,
        rolling_summary_tokens: summary_tokens,
        step: MicroStep::Noop(NoopReason::NothingToAbsorb),
        planned_stamp: t.stamp(),
    };
    let msgs = t.messages();

    // Step 4: defrag when the rolling summary is too large (and the guard allows).
    if let (Some(i), Some(text)) = (resolved.rolling_marker, &rolling_text)
        && summary_tokens > cfg.defrag_threshold_tokens
        && r.middle.contains(&i)
        && defrag_allowed(state, summary_tokens, cfg)
    {
        plan.step = MicroStep::Defrag(DefragJob {
            marker_index: i,
            // Bounded like any request (spec section 9).
            summary_text: material::bound_previous(text, "", &cfg.material),
            summary_tokens,
            ledger: rolling_ledger,
        });
        plan.resolved = Some(resolved);
        return plan;
    }

    // A micro marker that a batch marker after it cut off from the cursor is not the rolling
    // marker, and is still there: a second one must not be written (law 5).
    if resolved.rolling_marker.is_none()
        && (r.middle.start..resolved.cursor.min(msgs.len()))
            .any(|i| marker::classify(&msgs[i]) == Some(MarkerKind::Micro))
    {
        plan.step = MicroStep::Noop(NoopReason::EarlierMicroMarker);
        plan.resolved = Some(resolved);
        return plan;
    }

    // Step 3: the oldest whole exchange at or after the cursor (before the last reply the user
    // saw, which stays verbatim).
    // Only exchanges old enough (`min_age_answers`) may go.
    let rewritable = {
        let m = r.rewritable_middle();
        m.start..m.end.min(age_limit(msgs, cfg.min_age_answers)).max(m.start)
    };
    let Some(first) = next_micro_exchange(msgs, rewritable.clone(), resolved.cursor) else {
        plan.resolved = Some(resolved);
        return plan;
    };
    let exchange = ExchangeId::of(msgs, first.clone());
    let limit = cfg.max_consecutive_failures.max(1);
    if let Some(f) = &state.failures
        && f.exchange == exchange
        && f.count >= limit
    {
        plan.step = MicroStep::Skip {
            range: first,
            failures: f.count,
        };
        plan.resolved = Some(resolved);
        return plan;
    }

    // Step 6: the reclaim gate gathers consecutive exchanges until they reclaim enough.
    let superseded: Vec<usize> = resolved
        .rolling_marker
        .filter(|i| r.middle.contains(i))
        .into_iter()
        .collect();
    let superseded_tokens: u64 = superseded.iter().map(|&i| t.tokens_of(i)).sum();
    let new_marker_tokens = counter.count_message(&marker::render(
        MarkerKind::Micro,
        Role::Assistant,
        resolved.rolling_summary.as_deref().unwrap_or(""),
    ));
    let reclaim = |out: u64| -> i64 { (out + superseded_tokens) as i64 - new_marker_tokens as i64 };
    let gate = cfg.min_reclaim_tokens as i64;
    // The sum over `ranges` is kept as they grow; a scan that fell short before resumes after
    // the last exchange it found.
    // `checked`: how many of `ranges` are known to hold no open call (remembered ones were
    // checked when they were found).
    let (mut ranges, mut out, checked) =
        match memo.gate_for(t, resolved.cursor, &rewritable, &first) {
            Some(g) if gate > 0 => {
                let checked = g.ranges.len();
                (g.ranges, g.tokens, checked)
            }
            _ => {
                let out = t.tokens_in(first.clone());
                (vec![first], out, 0)
            }
        };
    if gate > 0 && reclaim(out) >= gate && ranges.len() > 1 {
        // A lower gate than the remembered scan's: the first exchanges that reach it.
        out = 0;
        let mut keep = 0;
        for x in &ranges {
            out += t.tokens_in(x.clone());
            keep += 1;
            if reclaim(out) >= gate {
                break;
            }
        }
        ranges.truncate(keep);
    }
    if gate > 0 {
        while reclaim(out) < gate {
            let from = ranges.last().map_or(resolved.cursor, |x| x.end);
            match next_micro_exchange(msgs, rewritable.clone(), from) {
                Some(next) => {
                    out += t.tokens_in(next.clone());
                    ranges.push(next);
                }
                None => {
                    plan.step = MicroStep::Gated {
                        reclaimable_tokens: reclaim(out),
                        exchanges: ranges.len(),
                    };
                    // Absorbability of an exchange with a call it does not answer depends on
                    // what is appended: such a scan is not remembered.
                    if !ranges[checked..]
                        .iter()
                        .any(|x| has_open_call(msgs, x.clone()))
                    {
                        memo.gate = Some(GateScan {
                            lineage: t.lineage(),
                            len: t.len(),
                            cursor: resolved.cursor,
                            middle: rewritable,
                            ranges,
                            tokens: out,
                        });
                    }
                    plan.resolved = Some(resolved);
                    return plan;
                }
            }
        }
    }

    let (messages, material, rolling_text) =
        material_for(msgs, &ranges, &cfg.material, rolling_text);
    let ledger = ledger_of(rolling_ledger, msgs, &ranges);
    let job = AbsorbJob {
        kind: MarkerKind::Micro,
        exchange_tokens: out,
        expected_reclaim_tokens: reclaim(out),
        ranges,
        material,
        previous_summary: rolling_text,
        ledger,
        messages,
        superseded_markers: superseded,
        exchange,
    };
    plan.step = if arrangement(msgs, &job, cfg.strict_alternation, &r.middle).2 {
        MicroStep::Absorb(job)
    } else {
        MicroStep::Noop(NoopReason::RolesWouldBreak)
    };
    plan.resolved = Some(resolved);
    plan
}

fn defrag_allowed(state: &MicroState, summary_tokens: u64, cfg: &MicroConfig) -> bool {
    match state.defrag_failed_at_tokens {
        None => true,
        Some(at) => summary_tokens >= at + (cfg.defrag_threshold_tokens / 2).max(1),
    }
}

/// The oldest absorbable exchange at or after `cursor`: an [`exchange`](crate::exchange)
/// whose tool calls and results pair up inside it, extended backwards over a finished turn's
/// progress marker directly before it.
fn next_micro_exchange(
    messages: &[Message],
    middle: Range<usize>,
    cursor: usize,
) -> Option<Range<usize>> {
    let floor = cursor.max(middle.start);
    let mut from = cursor;
    loop {
        let mut r = crate::exchange::next_exchange(messages, middle.clone(), from)?;
        from = r.end;
        if r.start > floor && marker::classify(&messages[r.start - 1]) == Some(MarkerKind::Progress)
        {
            r.start -= 1;
        }
        // An exchange holding a pinned message stays as it is; later ones may still go.
        if pairs_inside(messages, r.clone()) && !crate::pins::any_pinned(messages, r.clone()) {
            return Some(r);
        }
    }
}

/// A summary body's text (without its ledger) and the ledger it carries; `(None, empty)` for
/// no body.
pub(super) fn split_summary(body: Option<&str>) -> (Option<String>, Ledger) {
    match body {
        Some(body) => {
            let (text, ledger) = Ledger::split(body);
            (Some(text.to_owned()), ledger)
        }
        None => (None, Ledger::default()),
    }
}

/// `carried` followed by the files and commands of `ranges` (a summary marker inside them
/// contributes the ledger it carries).
pub(super) fn ledger_of(mut carried: Ledger, msgs: &[Message], ranges: &[Range<usize>]) -> Ledger {
    for m in ranges.iter().flat_map(|r| &msgs[r.clone()]) {
        if marker::classify(m).is_some() {
            if let Some(body) = marker::parse_body(m) {
                carried.extend(&Ledger::split(&body).1);
            }
        } else {
            carried.observe(m);
        }
    }
    carried
}

/// The redacted messages and the material of `ranges`, and `previous` (the summary they are
/// merged into) bounded with the material ([`material::share`]). A progress marker among the
/// messages is replaced by its body, and each exchange is preceded in the material by the user
/// request it answers (context only: it is not absorbed).
pub(super) fn material_for(
    msgs: &[Message],
    ranges: &[Range<usize>],
    cfg: &MaterialConfig,
    previous: Option<String>,
) -> (Vec<Message>, String, Option<String>) {
    let mut messages = Vec::new();
    let mut with_context = Vec::new();
    for r in ranges {
        if let Some(u) = r.start.checked_sub(1).map(|i| &msgs[i])
            && u.is_user()
            && marker::classify(u).is_none()
        {
            with_context.push(u.clone());
        }
        for m in &msgs[r.clone()] {
            let m = match marker::classify(m) {
                Some(MarkerKind::Progress) => Message::assistant(format!(
                    "(summary of the earlier progress of this turn)\n{}",
                    Ledger::split(&marker::parse_body(m).unwrap_or_default()).0
                )),
                _ => m.clone(),
            };
            with_context.push(m.clone());
            messages.push(crate::redact::redact_message(&m));
        }
    }
    let bounds = material::share(previous.as_deref().map_or(0, |p| p.chars().count()), cfg);
    let material = material::serialize(&with_context, &with_context, &bounds);
    let previous = previous.map(|p| material::bound_previous(&p, &material, cfg));
    // A secret split across two neighbouring messages is redacted in both.
    let messages = crate::redact::redact_adjacent_messages(&messages).into_owned();
    (messages, material, previous)
}
