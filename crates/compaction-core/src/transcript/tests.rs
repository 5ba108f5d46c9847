use super::*;
use crate::message::ToolCall;
use crate::tokens::Estimator;

fn sample() -> Vec<Message> {
    vec![
        Message::system("sys"),
        Message::user("hello there"),
        Message::assistant_tool_calls("", vec![ToolCall::function("c1", "ls", "{}")]),
        Message::tool_result("c1", "a".repeat(400)),
        Message::assistant("done"),
    ]
}

#[test]
fn prefix_sums_follow_splices() {
    let e = Estimator::default();
    let mut t = Transcript::new(sample(), &e);
    let total = t.estimated_total();
    assert_eq!(t.tokens_in(0..t.len()), total);
    let big = t.tokens_of(3);
    t.replace(3, Message::tool_result("c1", "short"), &e);
    assert_eq!(
        t.estimated_total(),
        total - big + e.count_message(&t.messages()[3])
    );
    let fresh = Transcript::new(t.messages().to_vec(), &e);
    assert_eq!(fresh.estimated_total(), t.estimated_total());
    for i in 0..t.len() {
        assert_eq!(fresh.tokens_of(i), t.tokens_of(i));
    }
}

#[test]
fn calibration_counts_only_the_delta_and_dies_on_rewrite() {
    let e = Estimator::default();
    let mut t = Transcript::new(sample(), &e);
    t.calibrate(1000, 4);
    assert_eq!(t.current_tokens(), 1000 + t.tokens_of(4));
    t.push(Message::user("more"), &e);
    assert_eq!(t.current_tokens(), 1000 + t.tokens_in(4..6));
    t.splice(5..6, vec![], &e);
    assert_eq!(t.calibration().map(|c| c.messages), Some(4));
    t.replace(2, Message::assistant("x"), &e);
    assert_eq!(t.calibration(), None);
    assert_eq!(t.current_tokens(), t.estimated_total());
}

#[test]
fn insertion_at_the_calibration_boundary_is_counted_as_new() {
    let e = Estimator::default();
    let mut t = Transcript::new(sample(), &e);
    t.calibrate(1000, 4);
    let added = Message::user("appended after the measured request");
    let added_tokens = e.count_message(&added);
    t.splice(4..4, vec![added], &e);
    assert_eq!(t.calibration().map(|c| c.messages), Some(4));
    assert_eq!(t.current_tokens(), 1000 + added_tokens + t.tokens_of(5));
}

#[test]
fn the_stamp_changes_with_content_and_only_with_content() {
    let e = Estimator::default();
    let mut t = Transcript::new(sample(), &e);
    let same = Transcript::new(sample(), &e);
    assert_ne!(
        t.stamp(),
        same.stamp(),
        "separately built transcripts differ"
    );
    let clone = t.clone();
    assert_eq!(clone.stamp(), t.stamp(), "an unchanged clone is the same");
    let mut seen = vec![t.stamp()];
    let mut changed = |t: &Transcript, what: &str| {
        assert!(!seen.contains(&t.stamp()), "{what} kept or reused a stamp");
        seen.push(t.stamp());
    };
    t.push(Message::user("more"), &e);
    changed(&t, "push");
    t.splice(1..2, vec![Message::user("other")], &e);
    changed(&t, "splice");
    t.replace(1, Message::user("again"), &e);
    changed(&t, "replace");
    t.splice_many(vec![(0..0, vec![]), (2..3, vec![])], &e);
    changed(&t, "splice_many");
    t.meta_mut(0);
    changed(&t, "meta_mut");
    let before = t.stamp();
    t.set_row_id(0, 9);
    t.calibrate(100, 1);
    assert_eq!(
        t.stamp(),
        before,
        "a row id or a calibration is not a content change"
    );
}

#[test]
fn latest_user_index_follows_every_mutation() {
    let e = Estimator::default();
    let fresh = |t: &Transcript| Transcript::new(t.messages().to_vec(), &e).last_real_user();
    let mut t = Transcript::new(sample(), &e);
    assert_eq!(t.last_real_user(), Some(1));
    t.push(Message::user("next"), &e);
    assert_eq!(t.last_real_user(), Some(5));
    // Removed: found again before the splice.
    t.splice(4..6, vec![], &e);
    assert_eq!(t.last_real_user(), fresh(&t));
    assert_eq!(t.last_real_user(), Some(1));
    // Shifted by a splice before it.
    t.splice(
        0..0,
        vec![Message::assistant("a"), Message::assistant("b")],
        &e,
    );
    assert_eq!(t.last_real_user(), Some(3));
    // A marker is not a real user message; a replacement's user is.
    let m = crate::marker::render(crate::MarkerKind::Micro, crate::Role::User, "s");
    t.push(m, &e);
    assert_eq!(t.last_real_user(), Some(3));
    t.splice(3..4, vec![Message::user("x"), Message::assistant("y")], &e);
    assert_eq!(t.last_real_user(), Some(3));
    t.replace(3, Message::assistant("no user"), &e);
    assert_eq!(t.last_real_user(), None);
    assert_eq!(fresh(&t), None);
    // Stamping a user message as a marker through its metadata is seen at once.
    t.push(Message::user("real"), &e);
    let last = t.len() - 1;
    assert_eq!(t.last_real_user(), Some(last));
    t.meta_mut(last).marker = Some(crate::MarkerKind::Batch);
    assert_eq!(t.last_real_user(), None);
    t.push(Message::assistant("after"), &e);
    assert_eq!(t.last_real_user(), None);
    t.meta_mut(last).marker = None;
    t.splice(0..0, vec![], &e);
    assert_eq!(t.last_real_user(), Some(last));
    // A row id stamp keeps the index known.
    t.set_row_id(last, 42);
    assert_eq!(t.last_user, Some(Some(last)));
    assert_eq!(t.messages()[last].row_id(), Some(42));
}

#[test]
fn suffix_search() {
    let e = Estimator::default();
    let t = Transcript::new(sample(), &e);
    let n = t.len();
    for budget in [0, 1, 5, 50, 200, 10_000] {
        let s = t.suffix_start_within(n, budget);
        assert!(t.tokens_in(s..n) <= budget);
        if s > 0 {
            assert!(t.tokens_in(s - 1..n) > budget);
        }
    }
}

#[test]
fn group_alignment() {
    let m = sample();
    assert!(groups::splits_group(&m, 3));
    assert_eq!(groups::group_start(&m, 3), 2);
    assert_eq!(groups::align_forward(&m, 3), 4);
    assert_eq!(groups::units(&m, 0..5), vec![0..1, 1..2, 2..4, 4..5]);
}

#[test]
fn a_tool_loop_after_the_last_visible_reply_does_not_move_it() {
    let e = Estimator::default();
    let mut t = Transcript::new(
        vec![Message::user("fix it"), Message::assistant("Fixed.")],
        &e,
    );
    assert_eq!(t.last_visible_reply(), Some(1));
    t.push(
        Message::assistant_tool_calls("", vec![ToolCall::function("c1", "sh", "{}")]),
        &e,
    );
    t.push(Message::tool_result("c1", "ok"), &e);
    assert_eq!(t.last_visible_reply(), Some(1));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

    #[test]
    fn suffix_search_is_the_tightest_fit(
        msgs in crate::strategies::transcript(),
        budget in 0u64..20_000,
    ) {
        let t = Transcript::new(msgs, &Estimator::default());
        let n = t.len();
        let s = t.suffix_start_within(n, budget);
        proptest::prop_assert!(t.tokens_in(s..n) <= budget);
        if s > 0 {
            proptest::prop_assert!(t.tokens_in(s - 1..n) > budget);
        }
    }
}

proptest::proptest! {
    /// Whichever side a splice moves, every prefix sum, the suffix search, the latest
    /// user index and the last visible reply agree with a transcript counted from scratch
    /// (replies among tool calls, tool results, blank replies and summary markers; pushes,
    /// splices, one-splice `splice_many` and marker kinds set through `meta_mut`).
    #[test]
    fn token_cache_survives_any_sequence_of_splices_and_pushes(
        len in 0usize..200,
        ops in proptest::collection::vec((0usize..260, 0usize..6, 0usize..4, 0u8..6), 1..40),
    ) {
        let e = Estimator::default();
        let text = |i: usize| format!("m{i} {}", "x".repeat(i % 23 * 9));
        let msg = |i: usize| match i % 7 {
            0 | 4 => Message::user(text(i)),
            2 => Message::assistant_tool_calls(
                "",
                vec![ToolCall::function(format!("c{i}"), "sh", "{}")],
            ),
            3 => Message::tool_result(format!("c{i}"), text(i)),
            5 => Message::assistant("  "),
            6 => crate::marker::render(crate::MarkerKind::Batch, crate::Role::Assistant, "s"),
            _ => Message::assistant(text(i)),
        };
        let mut t = Transcript::new((0..len).map(msg).collect(), &e);
        let mut next = len;
        for (at, del, ins, kind) in ops {
            let start = at.min(t.len());
            let end = (start + del).min(t.len());
            let replacement: Vec<Message> = (0..ins).map(|k| msg(next + k)).collect();
            match kind {
                0 => {
                    t.push(msg(next), &e);
                    next += 1;
                }
                1 => {
                    next += ins;
                    t.splice_many(vec![(start..end, replacement)], &e);
                }
                2 if start < t.len() => {
                    let m = t.meta_mut(start);
                    m.marker = match m.marker {
                        Some(_) => None,
                        None => Some(crate::MarkerKind::Micro),
                    };
                }
                _ => {
                    next += ins;
                    t.splice(start..end, replacement, &e);
                }
            }
            let fresh = Transcript::new(t.messages().to_vec(), &e);
            for i in 0..=t.len() {
                proptest::prop_assert_eq!(t.tokens_in(0..i), fresh.tokens_in(0..i));
                proptest::prop_assert_eq!(t.tokens_in(i..t.len()), fresh.tokens_in(i..t.len()));
            }
            proptest::prop_assert_eq!(t.estimated_total(), fresh.estimated_total());
            for budget in [0u64, 7, 40, 300, 5_000] {
                proptest::prop_assert_eq!(
                    t.suffix_start_within(t.len(), budget),
                    fresh.suffix_start_within(t.len(), budget)
                );
            }
            proptest::prop_assert_eq!(t.last_real_user(), fresh.last_real_user());
            proptest::prop_assert_eq!(t.last_visible_reply(), fresh.last_visible_reply());
            proptest::prop_assert_eq!(
                t.last_visible_reply(),
                crate::regions::last_visible_reply(t.messages(), 0)
            );
        }
        let fresh = Transcript::new(t.messages().to_vec(), &e);
        proptest::prop_assert_eq!(t.into_messages(), fresh.into_messages());
    }
}

proptest::proptest! {
    #[test]
    fn splice_many_matches_applying_one_by_one(
        len in 0usize..30,
        cuts in proptest::collection::vec((0usize..30, 0usize..4, 0usize..3), 0..8),
    ) {
        let e = Estimator::default();
        let msgs: Vec<Message> = (0..len)
            .map(|i| Message::user(format!("m{i} {}", "x".repeat(i * 7))))
            .collect();
        // Ascending, non-overlapping splices from the random cuts.
        let mut splices = Vec::new();
        let mut at = 0;
        for (gap, del, ins) in cuts {
            let start = (at + gap % 5).min(len);
            let end = (start + del).min(len);
            let replacement: Vec<Message> =
                (0..ins).map(|k| Message::assistant(format!("r{start}-{k}"))).collect();
            splices.push((start..end, replacement));
            at = end;
        }
        let expected = crate::edit::Edit {
            splices: splices
                .iter()
                .map(|(r, m)| crate::edit::Splice { range: r.clone(), replacement: m.clone() })
                .collect(),
        }
        .apply(&msgs)
        .unwrap();
        let mut t = Transcript::new(msgs.clone(), &e);
        let removed = t.splice_many(splices.clone(), &e);
        proptest::prop_assert_eq!(t.messages(), &expected[..]);
        let fresh = Transcript::new(expected.clone(), &e);
        for i in 0..=t.len() {
            proptest::prop_assert_eq!(t.tokens_in(0..i), fresh.tokens_in(0..i));
        }
        let removed_expected: usize = splices.iter().map(|(r, _)| r.len()).sum();
        proptest::prop_assert_eq!(removed.len(), removed_expected);
        proptest::prop_assert_eq!(t.last_real_user(), fresh.last_real_user());
        proptest::prop_assert_eq!(t.last_visible_reply(), fresh.last_visible_reply());
    }
}
