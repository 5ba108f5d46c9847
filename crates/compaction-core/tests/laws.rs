//! The law checker: identity passes keep every law; broken passes name the right law.

use compaction_core::Transcript;
use compaction_core::exchange::exchanges_from;
use compaction_core::laws::{self, Law, LawOptions, Pass, PassKind, Protected, Violation};
use compaction_core::regions::{self, Regions};
use compaction_core::strategies;
use compaction_core::{Estimator, MarkerKind, Message, Role, ToolCall, marker};
use proptest::prelude::*;

const ALL_KINDS: [PassKind; 6] = [
    PassKind::Batch,
    PassKind::Prune,
    PassKind::Micro,
    PassKind::Defrag,
    PassKind::Failed,
    PassKind::Unchanged,
];

fn partitioned(msgs: Vec<Message>, b: &strategies::Budget) -> (Transcript, Regions) {
    let t = Transcript::new(msgs, &Estimator::default());
    let r = regions::partition(&t, b.threshold_tokens, &b.regions, b.compacted);
    (t, r)
}

fn laws_of(v: &[Violation]) -> Vec<Law> {
    let mut laws: Vec<Law> = v.iter().map(Violation::law).collect();
    laws.dedup();
    laws
}

fn check(before: &[Message], after: &[Message], pass: Pass) -> Vec<Violation> {
    laws::check(before, after, &pass, &Estimator::default())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn identity_passes_keep_every_law(
        msgs in strategies::transcript_with_markers(),
        b in strategies::budget(),
        strict in any::<bool>(),
    ) {
        let (t, r) = partitioned(msgs, &b);
        for kind in ALL_KINDS {
            let pass = Pass {
                kind,
                protected: Protected::from_regions(&r),
                options: LawOptions {
                    strict_alternation: strict,
                    ..LawOptions::default()
                },
            };
            let v = check(t.messages(), t.messages(), pass);
            prop_assert!(v.is_empty(), "{kind:?}: {v:?}");
        }
    }

    /// A micro pass built from core's own pieces (partition, oldest exchange, rendered
    /// marker) keeps laws 1 to 5, and law 8 once the exchange outweighs the marker.
    #[test]
    fn a_micro_pass_built_from_core_keeps_the_laws(
        msgs in strategies::transcript(),
        b in strategies::budget(),
        body in ".{0,60}",
    ) {
        let (t, r) = partitioned(msgs, &b);
        let Some(x) = exchanges_from(t.messages(), r.middle.clone(), 0).into_iter().next() else {
            return Ok(());
        };
        let mut after = t.messages().to_vec();
        let summary = marker::render(MarkerKind::Micro, Role::Assistant, &body);
        let marker_tokens = compaction_core::TokenCounter::count_message(&Estimator::default(), &summary);
        after.splice(x.clone(), [summary]);
        let pass = Pass {
            kind: PassKind::Micro,
            protected: Protected::from_regions(&r),
            options: LawOptions {
                expect_progress: t.tokens_in(x) > marker_tokens,
                ..LawOptions::default()
            },
        };
        let v = check(t.messages(), &after, pass);
        prop_assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn dropping_a_tool_result_breaks_law_2(msgs in strategies::transcript(), pick in any::<prop::sample::Index>()) {
        let results: Vec<usize> = (0..msgs.len()).filter(|&i| msgs[i].is_tool()).collect();
        prop_assume!(!results.is_empty());
        let drop = results[pick.index(results.len())];
        let mut after = msgs.clone();
        after.remove(drop);
        let v = check(&msgs, &after, Pass::new(PassKind::Prune, Protected::default()));
        // The call lost its result (and its assistant may now touch the next one: law 3).
        let missing = v.iter().any(|x| matches!(x, Violation::MissingToolResult { .. }));
        prop_assert!(missing, "{:?}", v);
        prop_assert!(laws_of(&v).iter().all(|l| matches!(l, Law::ToolIntegrity | Law::Roles)), "{:?}", v);
    }

    #[test]
    fn dropping_a_tool_call_orphans_its_results(msgs in strategies::transcript(), pick in any::<prop::sample::Index>()) {
        let calls: Vec<usize> = (0..msgs.len()).filter(|&i| msgs[i].has_tool_calls()).collect();
        prop_assume!(!calls.is_empty());
        let drop = calls[pick.index(calls.len())];
        let mut after = msgs.clone();
        after.remove(drop);
        let v = check(&msgs, &after, Pass::new(PassKind::Prune, Protected::default()));
        prop_assert!(v.contains(&Violation::OrphanToolResult { index: drop }), "{v:?}");
    }

    #[test]
    fn editing_a_head_message_breaks_law_1(msgs in strategies::transcript(), b in strategies::budget()) {
        let (t, r) = partitioned(msgs, &b);
        prop_assume!(!r.head.is_empty());
        let mut after = t.messages().to_vec();
        let i = r.head.end - 1;
        let edited = format!("{} (edited)", after[i].text());
        after[i].set_text(edited);
        let v = check(t.messages(), &after, Pass::new(PassKind::Batch, Protected::from_regions(&r)));
        prop_assert!(v.contains(&Violation::HeadChanged { index: i }), "{v:?}");
    }

    #[test]
    fn editing_a_tail_message_breaks_law_1(msgs in strategies::transcript(), b in strategies::budget()) {
        let (t, r) = partitioned(msgs, &b);
        prop_assume!(!r.tail.is_empty());
        let mut after = t.messages().to_vec();
        let i = r.tail.start;
        let edited = format!("{}!", after[i].text());
        after[i].set_text(edited);
        let v = check(t.messages(), &after, Pass::new(PassKind::Micro, Protected::from_regions(&r)));
        // (A changed user message also breaks law 4, and a changed same-role neighbour law 3.)
        let law1: Vec<Violation> = v.into_iter().filter(|v| v.law() == Law::HeadAndTail).collect();
        prop_assert_eq!(law1, vec![Violation::TailChanged { before_index: i, after_index: i }]);
    }

    #[test]
    fn a_failed_pass_that_changed_anything_breaks_law_6(
        msgs in strategies::transcript(),
        pick in any::<prop::sample::Index>(),
        remove in any::<bool>(),
    ) {
        let i = pick.index(msgs.len());
        let mut after = msgs.clone();
        if remove {
            after.remove(i);
        } else {
            let edited = format!("{}!", after[i].text());
            after[i].set_text(edited);
        }
        for kind in [PassKind::Failed, PassKind::Unchanged] {
            let v = check(&msgs, &after, Pass::new(kind, Protected::default()));
            prop_assert_eq!(laws_of(&v), vec![Law::FailureChangesNothing]);
        }
    }

    #[test]
    fn a_tool_result_moved_past_the_next_message_breaks_law_2(
        msgs in strategies::transcript(),
        pick in any::<prop::sample::Index>(),
    ) {
        // Results in their call's group whose id is used by one call and one result only.
        let once = |id: &str| {
            msgs.iter().filter(|m| m.tool_calls().iter().any(|c| c.call_id() == id)).count() == 1
                && msgs.iter().filter(|m| m.tool_call_id() == Some(id)).count() == 1
        };
        let grouped: Vec<usize> = (0..msgs.len())
            .filter(|&i| {
                let Some(id) = msgs[i].tool_call_id() else { return false };
                let k = (0..i).rev().find(|&k| !msgs[k].is_tool());
                once(id) && k.is_some_and(|k| msgs[k].tool_calls().iter().any(|c| c.call_id() == id))
            })
            .collect();
        if grouped.is_empty() {
            return Ok(());
        }
        let i = grouped[pick.index(grouped.len())];
        let Some(next) = (i + 1..msgs.len()).find(|&j| !msgs[j].is_tool()) else {
            return Ok(());
        };
        let mut after = msgs.clone();
        let result = after.remove(i);
        after.insert(next, result);
        for kind in [PassKind::Batch, PassKind::Prune, PassKind::Micro, PassKind::Defrag] {
            let v = check(&msgs, &after, Pass::new(kind, Protected::default()));
            prop_assert!(
                v.contains(&Violation::NonAdjacentToolResult {
                    index: next,
                    call_index: (0..i).rev().find(|&k| !msgs[k].is_tool()).unwrap(),
                }),
                "{:?}", v
            );
        }
    }

    #[test]
    fn metadata_only_changes_break_no_law(
        msgs in strategies::transcript(),
        pick in any::<prop::sample::Index>(),
    ) {
        // A store stamping row ids between the snapshot and the check (a flush).
        let i = pick.index(msgs.len());
        let mut after = msgs.clone();
        after[i].meta_mut().row_id = Some(7);
        after[i].meta_mut().trimmed_handle = Some("h".into());
        let everything = Protected { head: msgs.len(), tail: 0, pinned: None };
        for kind in ALL_KINDS {
            let v = check(&msgs, &after, Pass::new(kind, everything));
            prop_assert!(v.is_empty(), "{:?}: {:?}", kind, v);
        }
    }

    #[test]
    fn a_micro_pass_that_drops_a_user_message_breaks_law_4(msgs in strategies::transcript(), pick in any::<prop::sample::Index>()) {
        let users: Vec<usize> = (0..msgs.len()).filter(|&i| msgs[i].is_user()).collect();
        let u = users[pick.index(users.len())];
        let mut after = msgs.clone();
        let edited = format!("{}!", after[u].text());
        after[u].set_text(edited);
        let v = check(&msgs, &after, Pass::new(PassKind::Micro, Protected::default()));
        prop_assert!(v.contains(&Violation::UserMessageLost { before_index: u }), "{v:?}");
        // Batch passes may summarize user text: law 4 is not theirs.
        let v = check(&msgs, &after, Pass::new(PassKind::Batch, Protected::default()));
        prop_assert!(!laws_of(&v).contains(&Law::UserText), "{v:?}");
    }
}

fn call(id: &str) -> Message {
    Message::assistant_tool_calls("", vec![ToolCall::function(id, "sh", "{}")])
}

fn convo() -> Vec<Message> {
    vec![
        Message::system("sys"),                       // 0
        Message::user("u1"),                          // 1
        call("a"),                                    // 2
        Message::tool_result("a", "x".repeat(4_000)), // 3
        Message::assistant("done 1"),                 // 4
        Message::user("u2"),                          // 5
        Message::assistant("done 2"),                 // 6
        Message::user("u3"),                          // 7
        Message::assistant("done 3"),                 // 8
    ]
}

fn protected(head: usize, tail: usize) -> Protected {
    Protected {
        head,
        tail,
        pinned: None,
    }
}

#[test]
fn law_3_adjacent_roles_and_exceptions() {
    let before = convo();
    // A batch pass that leaves two assistants side by side.
    let mut after = before.clone();
    after.splice(5..6, []);
    let v = check(&before, &after, Pass::new(PassKind::Batch, protected(1, 2)));
    assert_eq!(v, vec![Violation::AdjacentSameRole { index: 5 }]);
    // A progress marker directly before an assistant reply is allowed, unless strict.
    let mut after = before.clone();
    after.insert(
        8,
        marker::render(MarkerKind::Progress, Role::Assistant, "so far"),
    );
    let pass = Pass::new(PassKind::Batch, protected(1, 1));
    assert_eq!(check(&before, &after, pass), vec![]);
    let strict = Pass {
        options: LawOptions {
            strict_alternation: true,
            ..LawOptions::default()
        },
        ..pass
    };
    assert_eq!(
        check(&before, &after, strict),
        vec![Violation::AdjacentSameRole { index: 9 }]
    );
    // A marker that takes the first slot after the system prompt must be a user message.
    let mut after = before.clone();
    after.splice(
        1..7,
        [marker::render(MarkerKind::Batch, Role::Assistant, "s")],
    );
    let v = check(&before, &after, Pass::new(PassKind::Batch, protected(1, 2)));
    assert!(v.contains(&Violation::FirstNotUser { index: 1 }), "{v:?}");
}

/// Law 3 judges what the pass did: a same-role pair it kept is inherited even when it rewrote
/// one of the two in place (an image placeholder, a pruned call), as the simulator's law
/// check found on a real session (two user messages, the first a pasted image). A pair it made
/// adjacent is still a violation, rewritten or not.
#[test]
fn law_3_a_pair_rewritten_in_place_is_inherited() {
    let image = Message::from_json(
        r#"{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}"#,
    )
    .unwrap();
    let before = vec![
        Message::system("sys"),
        Message::user("u1"),
        Message::assistant("a1"),
        image,
        Message::user("and this one"),
        Message::assistant("a2"),
        Message::user("u3"),
        Message::assistant("a3"),
    ];
    let placeholder = Message::user("[image removed after compaction: image/png, 3 B]");
    let mut after = before.clone();
    after[3] = placeholder.clone();
    for kind in [PassKind::Prune, PassKind::Batch] {
        assert_eq!(
            check(&before, &after, Pass::new(kind, protected(1, 2))),
            vec![]
        );
    }
    // Both of the pair rewritten in place: still the same two places.
    let mut both = after.clone();
    both[4] = Message::user("and this one (shortened)");
    assert_eq!(
        check(&before, &both, Pass::new(PassKind::Prune, protected(1, 2))),
        vec![]
    );
    // The assistant reply before the pair summarized away: the summary (user-role) now meets
    // the rewritten image message, a pair the pass made.
    let mut spliced = after.clone();
    spliced.splice(1..3, [marker::render(MarkerKind::Batch, Role::User, "s")]);
    let v = check(
        &before,
        &spliced,
        Pass::new(PassKind::Batch, protected(1, 2)),
    );
    assert!(
        v.contains(&Violation::AdjacentSameRole { index: 2 }),
        "{v:?}"
    );
    // A pair made adjacent by dropping the message between them, with one of them rewritten.
    let mut dropped = before.clone();
    dropped.remove(5);
    dropped[4] = Message::user("and this one (shortened)");
    let v = check(
        &before,
        &dropped,
        Pass::new(PassKind::Batch, protected(1, 1)),
    );
    assert!(
        v.contains(&Violation::AdjacentSameRole { index: 5 }),
        "{v:?}"
    );
}

/// Under strict alternation a micro pass joins the users it makes adjacent and leaves the
/// users that were adjacent already: the checker accepts a join next to such a neighbour, and
/// finds each user message inside its join even when the same text stands twice (the
/// simulator's law check reported both on real sessions: a Claude Code local command run
/// twice, a "continue" sent twice). A pair the pass made and did not join stays a violation.
#[test]
fn laws_3_and_4_under_strict_alternation_read_joins_next_to_inherited_pairs() {
    const SEP: &str = "\n\n[next user message]\n\n";
    let strict = Pass {
        options: LawOptions {
            strict_alternation: true,
            ..LawOptions::default()
        },
        ..Pass::new(PassKind::Micro, protected(1, 1))
    };
    let u = |s: &str| Message::user(s);
    let a = |s: &str| Message::assistant(s);
    // A join, then the user that was already next to its last part, twice over with the same
    // texts further on.
    let before = vec![
        Message::system("sys"),
        u("yes"),
        a("the reply the pass absorbs"),
        u("caveat"),
        u("run it"),
        u("it failed"),
        u("caveat"),
        u("run it"),
        u("it ran"),
        a("done"),
    ];
    let mut after = vec![Message::system("sys"), u(&format!("yes{SEP}caveat"))];
    after.extend(before[4..].iter().cloned());
    assert_eq!(check(&before, &after, strict), vec![]);
    // Two joins side by side, each made of a pair the pass made adjacent, meeting where
    // `before` had two users side by side.
    let before = vec![
        Message::system("sys"),
        u("a"),
        a("r1"),
        u("b"),
        u("c"),
        a("r2"),
        u("d"),
        a("e"),
    ];
    let after = vec![
        Message::system("sys"),
        u(&format!("a{SEP}b")),
        u(&format!("c{SEP}d")),
        a("e"),
    ];
    assert_eq!(check(&before, &after, strict), vec![]);
    // Made adjacent and not joined: a violation under strict alternation.
    let before = vec![
        Message::system("sys"),
        u("a"),
        a("r1"),
        u("b"),
        a("r2"),
        u("c"),
        a("e"),
    ];
    let unjoined = vec![
        Message::system("sys"),
        u("a"),
        u("b"),
        a("r2"),
        u("c"),
        a("e"),
    ];
    assert_eq!(
        check(&before, &unjoined, strict),
        vec![Violation::AdjacentSameRole { index: 2 }]
    );
    // A join next to a user that was not its last part's neighbour in `before`.
    let stray = vec![
        Message::system("sys"),
        u(&format!("a{SEP}b")),
        u("c"),
        a("e"),
    ];
    assert_eq!(
        check(&before, &stray, strict),
        vec![Violation::AdjacentSameRole { index: 2 }]
    );
}

/// Law 5 counts turn-progress markers inside the active turn (spec section 2): a finished
/// turn's marker before the last user message is not a second one.
#[test]
fn law_5_counts_progress_markers_in_the_active_turn() {
    let progress = |body: &str| marker::render(MarkerKind::Progress, Role::Assistant, body);
    let before = vec![
        Message::system("sys"),
        Message::user("u1"),
        progress("turn 1 so far"),
        Message::assistant("done 1"),
        Message::user("u2"),
        call("a"),
        Message::tool_result("a", "x".repeat(4_000)),
        call("b"),
        Message::tool_result("b", "y".repeat(4_000)),
    ];
    let mut after = before.clone();
    after.splice(5..7, [progress("turn 2 so far")]);
    let pass = Pass::new(PassKind::Micro, protected(1, 2));
    let v = check(&before, &after, pass);
    assert!(!laws_of(&v).contains(&Law::OneRollingMarker), "{v:?}");
    // Two inside the active turn break it.
    let mut two = after.clone();
    two.insert(6, progress("again"));
    let v = check(&before, &two, pass);
    assert!(
        v.contains(&Violation::ExtraProgressMarker { index: 6 }),
        "{v:?}"
    );
}

#[test]
fn law_5_markers() {
    let mut before = convo();
    before.insert(1, marker::render(MarkerKind::Batch, Role::User, "old"));
    before.insert(2, Message::assistant("ok"));
    // [sys, B, ok, u1, a, t, done1, u2, done2, u3, done3]
    let micro = |body: &str| marker::render(MarkerKind::Micro, Role::Assistant, body);
    let mut two = before.clone();
    two.splice(4..7, [micro("one")]);
    two.insert(7, micro("two"));
    let v = check(&before, &two, Pass::new(PassKind::Micro, protected(1, 1)));
    assert!(
        v.contains(&Violation::ExtraMicroMarker { index: 7 }),
        "{v:?}"
    );
    let mut dropped = before.clone();
    dropped.splice(1..3, []);
    let v = check(
        &before,
        &dropped,
        Pass::new(PassKind::Micro, protected(1, 1)),
    );
    assert!(
        v.contains(&Violation::BatchMarkerDeleted { before_index: 1 }),
        "{v:?}"
    );
    // A batch pass replaces the old batch marker: not a law-5 matter.
    let v = check(
        &before,
        &dropped,
        Pass::new(PassKind::Batch, protected(1, 1)),
    );
    assert!(!laws_of(&v).contains(&Law::OneRollingMarker), "{v:?}");
}

#[test]
fn law_8_progress_and_pinned_messages() {
    let before = convo();
    let mut after = before.clone();
    after.splice(
        2..5,
        [marker::render(
            MarkerKind::Micro,
            Role::Assistant,
            &"long ".repeat(5_000),
        )],
    );
    let pass = Pass {
        kind: PassKind::Micro,
        protected: protected(2, 2),
        options: LawOptions {
            expect_progress: true,
            ..LawOptions::default()
        },
    };
    let v = check(&before, &after, pass);
    assert!(
        matches!(v.as_slice(), [Violation::NoProgress { before_tokens, after_tokens }] if after_tokens > before_tokens),
        "{v:?}"
    );
    // A split turn pins its user message: dropping it breaks law 1 even outside head and tail.
    let pinned = Pass::new(
        PassKind::Batch,
        Protected {
            head: 1,
            tail: 1,
            pinned: Some(7),
        },
    );
    let mut lost = before.clone();
    lost.remove(7);
    let v = check(&before, &lost, pinned);
    assert!(
        v.contains(&Violation::PinnedMissing { before_index: 7 }),
        "{v:?}"
    );
    let mut kept = before.clone();
    kept.splice(
        1..7,
        [
            marker::render(MarkerKind::Batch, Role::User, "s"),
            Message::assistant("ok"),
        ],
    );
    assert_eq!(check(&before, &kept, pinned), vec![]);
}

#[test]
fn tail_demotion_is_allowed_only_when_reported() {
    let before = vec![
        Message::system("s"),
        Message::user("u"),
        call("a"),
        Message::tool_result("a", "big".repeat(900)),
    ];
    let mut after = before.clone();
    after[3] = Message::tool_result("a", "[output of sh: 2700 chars, omitted]");
    let pass = Pass::new(PassKind::Batch, protected(1, 3));
    assert_eq!(
        check(&before, &after, pass),
        vec![Violation::TailChanged {
            before_index: 3,
            after_index: 3
        }]
    );
    let reported = Pass {
        options: LawOptions {
            tail_demotion_reported: true,
            ..LawOptions::default()
        },
        ..pass
    };
    assert_eq!(check(&before, &after, reported), vec![]);
    // Demotion never covers a change of role or answered call.
    after[3] = Message::tool_result("b", "x");
    assert_eq!(
        laws_of(&check(&before, &after, reported))[0],
        Law::HeadAndTail
    );
}

#[test]
fn violations_never_quote_message_text() {
    let secret = "sk-do-not-print-this";
    let before = vec![
        Message::system(secret),
        Message::user(secret),
        call(secret),
        Message::tool_result(secret, secret),
    ];
    let after = vec![Message::system("x"), Message::tool_result(secret, secret)];
    let mut all = check(
        &before,
        &after,
        Pass {
            kind: PassKind::Micro,
            protected: protected(1, 1),
            options: LawOptions {
                expect_progress: true,
                strict_alternation: true,
                ..LawOptions::default()
            },
        },
    );
    all.extend(check(
        &before,
        &after,
        Pass::new(PassKind::Failed, protected(1, 1)),
    ));
    assert!(!all.is_empty());
    for v in &all {
        let shown = format!("{v} {v:?}");
        assert!(!shown.contains(secret), "{shown}");
        assert!(
            v.to_string()
                .starts_with(&format!("law {} (", v.law().number()))
        );
    }
}
