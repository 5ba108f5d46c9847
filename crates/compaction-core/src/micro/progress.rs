//! Turn progress (spec section 4a): the tool groups of a long turn folded into one progress
//! marker after the turn's user message.

use std::ops::Range;

use super::absorb::{ledger_of, material_for, split_summary};
use super::memo::TurnScan;
use super::{
    AbsorbJob, ExchangeId, MicroPlan, MicroRequest, MicroState, MicroStep, NoopReason, PlanMemo,
    age_limit,
};
use crate::marker;
use crate::message::{MarkerKind, Role};
use crate::regions;
use crate::transcript::groups;

/// Plans a turn-progress pass for the hook the agent calls after each tool round (spec
/// section 4a): when the active turn is split, the oldest whole tool group of `turn_middle`
/// (or, with the reclaim gate, as many consecutive groups as needed) is absorbed into the one
/// progress marker directly after the turn's user message, updated in place.
///
/// Returns [`NoopReason::EarlierProgressMarker`] while a finished turn's progress marker is
/// still in the middle (the micro pass absorbs it with its exchange), so there is never more
/// than one progress marker. The middle is searched for such a marker only where earlier plans
/// (see [`PlanMemo`]) did not search it already.
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
    let mut plan = MicroPlan {
        regions: r.clone(),
        threshold_tokens,
        tokens_before: t.current_tokens(),
        cursor: None,
        rehydrated_from: None,
        resolved: None,
        rolling_summary_tokens: 0,
        step: MicroStep::Noop(NoopReason::NotALongTurn),
        planned_stamp: t.stamp(),
    };
    let msgs = t.messages();
    // The message the progress marker follows: the pinned user message, or, when the head
    // already holds the turn's user message, the last message of the head.
    let u = match r.turn_user {
        Some(u) => u,
        None if !r.turn_middle.is_empty() && r.turn_middle.start > 0 => r.turn_middle.start - 1,
        None => return plan,
    };
    if cfg.strict_alternation {
        plan.step = MicroStep::Noop(NoopReason::StrictAlternation);
        return plan;
    }
    if memo
        .progress_unknown(t, &r.middle)
        .any(|i| marker::classify(&msgs[i]) == Some(MarkerKind::Progress))
    {
        plan.step = MicroStep::Noop(NoopReason::EarlierProgressMarker);
        return plan;
    }
    memo.progress_clear(t, &r.middle);
    // The last reply the user saw stays verbatim: absorption stops before it, and before the
    // groups younger than `min_age_answers`.
    let end_limit = r
        .rewritable_turn_middle()
        .end
        .min(age_limit(msgs, cfg.min_age_answers));
    let next_unit = |from: usize| -> Option<Range<usize>> {
        if from >= end_limit || marker::classify(&msgs[from]).is_some() || msgs[from].is_user() {
            return None;
        }
        let e = groups::group_end(msgs, from);
        // The progress marker absorbs the turn's groups in order, up to the first pinned one.
        (e <= end_limit && !crate::pins::any_pinned(msgs, from..e)).then_some(from..e)
    };
    // The turn's progress marker: right after the turn's user message, or after the turn's
    // oldest tool groups when a pass wrote it while they were protected (a head that has
    // shrunk since, once the session was compacted). Those groups are then absorbed first,
    // with the marker, so the turn keeps one marker, right after its user message. The turn
    // is searched only where earlier plans did not search it already (see [`PlanMemo`]).
    let is_progress = |i: usize| marker::classify(&msgs[i]) == Some(MarkerKind::Progress);
    let (progress, lead) = if u + 1 < msgs.len() && is_progress(u + 1) {
        (Some(u + 1), None)
    } else {
        let turn = u + 1..msgs.len();
        match memo
            .turn_progress_unknown(t, &turn)
            .find(|&i| is_progress(i))
        {
            None => {
                memo.turn_progress_clear(t, &turn);
                (None, None)
            }
            Some(p) => {
                // Reachable: whole groups of the turn, up to it, inside the rewritable part.
                let mut i = u + 1;
                let mut units = 0;
                while i < p {
                    match next_unit(i) {
                        Some(unit) => {
                            i = unit.end;
                            units += 1;
                        }
                        None => break,
                    }
                }
                if i != p || p >= end_limit {
                    // A marker this pass cannot reach (past a pinned group or another
                    // marker, or in the protected tail) is left alone, and no second one is
                    // written beside it (law 5).
                    plan.step = MicroStep::Noop(NoopReason::NothingToAbsorb);
                    return plan;
                }
                (Some(p), Some((u + 1..p, units)))
            }
        }
    };
    if progress.is_some_and(|p| msgs[p].is_pinned()) {
        // A pinned progress marker is never rewritten.
        plan.step = MicroStep::Noop(NoopReason::NothingToAbsorb);
        return plan;
    }
    let previous_body = progress.and_then(|p| marker::parse_body(&msgs[p]));
    let (previous, previous_ledger) = split_summary(previous_body.as_deref());
    plan.rolling_summary_tokens = previous.as_deref().map_or(0, |s| counter.count_text(s));
    let start = progress.map_or(u + 1, |p| p + 1);

    let first = match &lead {
        Some((groups, _)) => groups.clone(),
        None => match next_unit(start) {
            Some(first) => first,
            None => {
                plan.step = MicroStep::Noop(NoopReason::NothingToAbsorb);
                return plan;
            }
        },
    };
    let exchange = ExchangeId::of(msgs, first.clone());
    if let Some(f) = &state.progress_failures
        && f.exchange == exchange
        && f.count >= cfg.max_consecutive_failures.max(1)
    {
        plan.step = MicroStep::Noop(NoopReason::ProgressStalled);
        return plan;
    }
    let superseded_tokens = progress.map_or(0, |p| t.tokens_of(p));
    let new_marker_tokens = counter.count_message(&marker::render(
        MarkerKind::Progress,
        Role::Assistant,
        previous_body.as_deref().unwrap_or(""),
    ));
    let lead_tokens = lead.as_ref().map_or(0, |(g, _)| t.tokens_in(g.clone()));
    // `range`: the groups absorbed after the marker (after the lead, when there is one).
    let reclaim = |range: &Range<usize>| -> i64 {
        (lead_tokens + t.tokens_in(range.clone()) + superseded_tokens) as i64
            - new_marker_tokens as i64
    };
    let gate = cfg.min_reclaim_tokens as i64;
    // A scan that fell short before resumes after the last group it found (a lower gate
    // than its sum starts over: the plan then absorbs).
    let (mut range, mut units) = match &lead {
        Some((_, n)) => (start..start, *n),
        None => match memo.turn_for(t, &first, end_limit) {
            Some(s) if gate > 0 && reclaim(&s.range) < gate => (s.range, s.units),
            _ => (first, 1),
        },
    };
    if gate > 0 {
        while reclaim(&range) < gate {
            match next_unit(range.end) {
                Some(next) => {
                    range.end = next.end;
                    units += 1;
                }
                None => {
                    plan.step = MicroStep::Gated {
                        reclaimable_tokens: reclaim(&range),
                        exchanges: units,
                    };
                    // A group ending at the transcript's end may still gain results.
                    if range.end < t.len() && lead.is_none() {
                        memo.turn = Some(TurnScan {
                            lineage: t.lineage(),
                            len: t.len(),
                            end_limit,
                            range,
                            units,
                        });
                    }
                    return plan;
                }
            }
        }
    }
    let expected_reclaim_tokens = reclaim(&range);
    let ranges: Vec<Range<usize>> = lead
        .map(|(g, _)| g)
        .into_iter()
        .chain(Some(range).filter(|x| !x.is_empty()))
        .collect();
    let (messages, material, previous) = material_for(msgs, &ranges, &cfg.material, previous);
    let ledger = ledger_of(previous_ledger, msgs, &ranges);
    plan.step = MicroStep::Absorb(AbsorbJob {
        kind: MarkerKind::Progress,
        exchange_tokens: ranges.iter().map(|x| t.tokens_in(x.clone())).sum(),
        expected_reclaim_tokens,
        ranges,
        material,
        previous_summary: previous,
        ledger,
        messages,
        superseded_markers: progress.into_iter().collect(),
        exchange,
    });
    plan
}
