//! Pinned messages survive every pass byte-identical and in order: batch, prune, micro,
//! turn progress and insertion-time trimming work around them.

use compaction_core::Transcript;
use compaction_core::batch::{self, BatchConfig, BatchRequest, BatchStep};
use compaction_core::laws::{self, Law, Pass, PassKind, Violation};
use compaction_core::micro::{
    self, MicroConfig, MicroEvent, MicroHook, MicroPlanner, MicroRequest, MicroStep,
};
use compaction_core::trim::{self, TrimConfig};
use compaction_core::{Estimator, Message, ToolCall, strategies};
use proptest::prelude::*;

/// Pins the messages `picks` name (indices taken modulo the length).
fn pinned(msgs: Vec<Message>, picks: &[prop::sample::Index]) -> Transcript {
    let mut t = Transcript::new(msgs, &Estimator::default());
    let n = t.len();
    if n > 0 {
        for p in picks {
            t.pin(p.index(n), true);
        }
    }
    t
}

/// Every law holds (progress aside: a forced pass over a tiny transcript may not shrink it),
/// and in particular every pin.
fn assert_laws(before: &[Message], after: &[Message], pass: &Pass) -> Result<(), TestCaseError> {
    let v: Vec<Violation> = laws::check(before, after, pass, &Estimator::default())
        .into_iter()
        .filter(|v| v.law() != Law::Progress)
        .collect();
    prop_assert!(v.is_empty(), "{:?}: {:?}", pass.kind, v);
    Ok(())
}

/// Whether `range` (of the planned-against transcript) holds or splits the group of a pin.
fn touches_pin(msgs: &[Message], range: &std::ops::Range<usize>) -> bool {
    crate::common::pinned_spans(msgs)
        .iter()
        .any(|s| s.start < range.end && range.start < s.end)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Forced batch and prune-only passes never prune, summarize, demote or move a pinned
    /// message nor cut into its tool group.
    #[test]
    fn pins_survive_batch_and_prune_passes(
        msgs in strategies::transcript_with_markers(),
        b in strategies::budget(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..5),
        prune_only in any::<bool>(),
        strict in any::<bool>(),
    ) {
        let e = Estimator::default();
        let mut t = pinned(msgs, &picks);
        let before = t.messages().to_vec();
        let cfg = BatchConfig { regions: b.regions.clone(), strict_alternation: strict, ..BatchConfig::default() };
        let req = BatchRequest { force: true, prune_only, compacted: b.compacted, ..BatchRequest::default() };
        let plan = batch::plan_batch(&t, b.threshold_tokens, &cfg, &req, &e);
        for s in &plan.prune.edit.splices {
            prop_assert!(!touches_pin(&before, &s.range), "prune splice {:?}", s.range);
        }
        let summaries: Vec<String> = match &plan.step {
            BatchStep::Summarize(jobs) => jobs
                .iter()
                .map(|j| {
                    assert!(!touches_pin(&before, &j.range), "summary job {:?}", j.range);
                    format!("summary of {} messages", j.range.len())
                })
                .collect(),
            _ => Vec::new(),
        };
        let Ok(edit) = batch::assemble(&t, &plan, &summaries, &cfg) else {
            return Ok(());
        };
        for s in &edit.splices {
            prop_assert!(!touches_pin(&before, &s.range), "splice {:?}", s.range);
        }
        edit.apply_to(&mut t, &e).unwrap();
        assert_laws(&before, t.messages(), &Pass::of_batch(&plan, &cfg, PassKind::Batch))?;
    }

    /// Micro and turn-progress passes, run until nothing is absorbable, never absorb a
    /// pinned message and keep every law.
    #[test]
    fn pins_survive_micro_passes(
        msgs in strategies::transcript(),
        b in strategies::budget(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..5),
    ) {
        micro_passes(pinned(msgs, &picks), &b, true)?;
    }

    /// The same over transcripts holding summary markers, some of them pinned: no pinned
    /// marker is rewritten or superseded. (Only the pins are checked here: a micro marker
    /// inside the protected head already makes a second rolling marker without any pin.)
    #[test]
    fn pinned_markers_survive_micro_passes(
        msgs in strategies::transcript_with_markers(),
        b in strategies::budget(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..5),
    ) {
        micro_passes(pinned(msgs, &picks), &b, false)?;
    }

    /// Insertion-time trimming leaves a pinned message alone, whatever its size.
    #[test]
    fn pins_are_never_trimmed(text in strategies::text(4_000)) {
        let cfg = TrimConfig { max_tokens: 10, head_chars: 20, tail_chars: 20, ..TrimConfig::default() };
        for mut m in [Message::tool_result("c1", text.clone()), Message::user(text.clone())] {
            m.meta_mut().pinned = true;
            prop_assert!(trim::plan_trim(&m, None, &cfg, &Estimator::default()).is_none());
        }
    }
}

/// Runs micro and turn-progress passes in turn, checking after each that nothing pinned was
/// touched (and, with `all_laws`, every law), then the pins over the whole run.
fn micro_passes(
    mut t: Transcript,
    b: &strategies::Budget,
    all_laws: bool,
) -> Result<(), TestCaseError> {
    let e = Estimator::default();
    let original = t.messages().to_vec();
    let cfg = MicroConfig {
        regions: b.regions.clone(),
        ..MicroConfig::default()
    };
    let mut planner = MicroPlanner::default();
    let pins_only = |before: &[Message], after: &[Message], pass: &Pass| {
        let v: Vec<Violation> = laws::check(before, after, pass, &e)
            .into_iter()
            .filter(|v| matches!(v, Violation::UserPinLost { .. }))
            .collect();
        prop_assert!(v.is_empty(), "{v:?}");
        Ok(())
    };
    for round in 0..12 {
        let plan = if round % 2 == 0 {
            planner.plan(&MicroRequest {
                transcript: &t,
                hook: MicroHook::Turn,
                threshold_tokens: b.threshold_tokens,
                compacted: b.compacted,
                config: &cfg,
                counter: &e,
            })
        } else {
            planner.plan(&MicroRequest {
                transcript: &t,
                hook: MicroHook::ToolRound,
                threshold_tokens: b.threshold_tokens,
                compacted: b.compacted,
                config: &cfg,
                counter: &e,
            })
        };
        planner.record(MicroEvent::Planned(&plan));
        if !matches!(plan.step, MicroStep::Absorb(_) | MicroStep::Defrag(_)) {
            continue;
        }
        let before = t.messages().to_vec();
        let out = micro::assemble_micro(&t, &plan, "rolling summary", &cfg, &e).unwrap();
        planner.record(MicroEvent::Assembled(&out));
        if let Some(edit) = out.edit() {
            for s in &edit.splices {
                prop_assert!(
                    !before[s.range.clone()].iter().any(Message::is_pinned),
                    "splice {:?}",
                    s.range
                );
            }
            edit.clone().apply_to(&mut t, &e).unwrap();
        }
        let pass = Pass::of_micro(&plan, &cfg, Some(&out));
        if all_laws {
            assert_laws(&before, t.messages(), &pass)?;
        } else {
            pins_only(&before, t.messages(), &pass)?;
        }
    }
    let whole = Pass::new(PassKind::Micro, Default::default());
    pins_only(&original, t.messages(), &whole)
}

/// A session of `turns` turns, each a long request, a tool call with a short output and a
/// long reply (pruning alone cannot help).
fn session(turns: usize) -> Vec<Message> {
    let mut out = vec![Message::system("You are a coding agent.")];
    for i in 0..turns {
        let id = format!("c{i}");
        out.push(Message::user(format!(
            "request {i}: {}",
            "details ".repeat(300)
        )));
        out.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &id,
                "bash",
                r#"{"command":"make test"}"#,
            )],
        ));
        out.push(Message::tool_result(&id, "ok"));
        out.push(Message::assistant(format!(
            "answer {i}: {}",
            "done ".repeat(300)
        )));
    }
    out
}

/// A pin in the middle of a batch pass: the tool result and its call stay verbatim where they
/// were, and the summary takes the larger side of the middle.
#[test]
fn a_pinned_tool_result_keeps_its_call_and_the_pass_still_compacts() {
    let e = Estimator::default();
    let msgs = session(30);
    let cfg = BatchConfig::default();
    let req = BatchRequest {
        force: true,
        ..BatchRequest::default()
    };
    // Without the pin the middle is summarized through message 42.
    let t = Transcript::new(msgs.clone(), &e);
    let plan = batch::plan_batch(&t, 20_000, &cfg, &req, &e);
    let BatchStep::Summarize(jobs) = &plan.step else {
        panic!("{:?}", plan.step);
    };
    assert!(jobs[0].range.contains(&43), "{:?}", jobs[0].range);

    let mut t = Transcript::new(msgs, &e);
    assert!(t.pin(43, true)); // the tool result of turn 10
    let before = t.messages().to_vec();
    let plan = batch::plan_batch(&t, 20_000, &cfg, &req, &e);
    let BatchStep::Summarize(jobs) = &plan.step else {
        panic!("{:?}", plan.step);
    };
    assert_eq!(jobs.len(), 1);
    assert!(
        jobs[0].range.end <= 42 || jobs[0].range.start >= 44,
        "{:?}",
        jobs[0].range
    );
    let summaries = vec!["summary".to_owned()];
    let edit = batch::assemble(&t, &plan, &summaries, &cfg).unwrap();
    edit.apply_to(&mut t, &e).unwrap();
    assert!(t.current_tokens() < plan.tokens_before / 2);
    let kept: Vec<&Message> = t.messages().iter().filter(|m| m.is_pinned()).collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].to_wire_json(), before[43].to_wire_json());
    let at = t.messages().iter().position(Message::is_pinned).unwrap();
    assert_eq!(
        t.messages()[at - 1].to_wire_json(),
        before[42].to_wire_json()
    );
    assert!(
        laws::check(
            &before,
            t.messages(),
            &Pass::of_batch(&plan, &cfg, PassKind::Batch),
            &e
        )
        .is_empty()
    );
    // Unpinned, the next pass may take it.
    assert!(t.pin(at, false));
    assert!(t.pinned().is_empty());
}

/// Removing, editing or reordering pinned messages is a law 1 violation naming the pin.
#[test]
fn losing_or_reordering_a_pin_breaks_law_1() {
    let e = Estimator::default();
    let mut before = session(3);
    before[2].meta_mut().pinned = true;
    before[5].meta_mut().pinned = true;
    let pass = Pass::new(PassKind::Prune, Default::default());
    let lost = |after: &[Message]| -> Vec<usize> {
        laws::check(&before, after, &pass, &e)
            .into_iter()
            .filter_map(|v| match v {
                Violation::UserPinLost { before_index } => Some(before_index),
                _ => None,
            })
            .collect()
    };
    assert!(lost(&before).is_empty());
    let mut edited = before.clone();
    edited[5].set_text("changed");
    assert_eq!(lost(&edited), vec![5]);
    let mut unpinned = before.clone();
    unpinned[2].meta_mut().pinned = false;
    assert_eq!(lost(&unpinned), vec![2]);
    let mut swapped = before.clone();
    swapped.swap(2, 5);
    assert_eq!(lost(&swapped), vec![5]);
    let mut removed = before.clone();
    removed.remove(2);
    assert_eq!(lost(&removed), vec![2]);
    assert_eq!(
        Violation::UserPinLost { before_index: 2 }.law(),
        Law::HeadAndTail
    );
}
