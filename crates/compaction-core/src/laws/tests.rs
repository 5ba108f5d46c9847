use super::*;
use crate::marker;
use crate::message::{MarkerKind, Role, ToolCall};
use crate::tokens::Estimator;

fn convo() -> Vec<Message> {
    vec![
        Message::system("sys"),
        Message::user("u1"),
        Message::assistant_tool_calls("", vec![ToolCall::function("a", "ls", "{}")]),
        Message::tool_result("a", "x".repeat(2_000)),
        Message::assistant("done 1"),
        Message::user("u2"),
        Message::assistant("done 2"),
        Message::user("u3"),
    ]
}

fn laws_of(before: &[Message], after: &[Message], pass: Pass) -> Vec<u8> {
    check(before, after, &pass, &Estimator::default())
        .iter()
        .map(|v| v.law().number())
        .collect()
}

fn micro(head: usize, tail: usize) -> Pass {
    Pass::new(
        PassKind::Micro,
        Protected {
            head,
            tail,
            pinned: None,
        },
    )
}

#[test]
fn a_good_micro_pass_keeps_every_law() {
    let before = convo();
    let mut after = before.clone();
    after.splice(
        2..5,
        [marker::render(MarkerKind::Micro, Role::Assistant, "did ls")],
    );
    let pass = Pass {
        options: LawOptions {
            expect_progress: true,
            ..LawOptions::default()
        },
        ..micro(2, 1)
    };
    assert_eq!(laws_of(&before, &after, pass), Vec::<u8>::new());
}

#[test]
fn micro_users_may_become_adjacent_unless_strict() {
    let before = convo();
    let mut after = before.clone();
    after.splice(2..5, []);
    assert_eq!(laws_of(&before, &after, micro(2, 1)), Vec::<u8>::new());
    let strict = Pass {
        options: LawOptions {
            strict_alternation: true,
            ..LawOptions::default()
        },
        ..micro(2, 1)
    };
    assert_eq!(laws_of(&before, &after, strict), vec![3]);
    // Joined with a separator under strict alternation: law 4 finds both users inside.
    let mut joined = before.clone();
    joined.splice(1..6, [Message::user("u1\n\n---\n\nu2")]);
    let strict = Pass {
        protected: Protected {
            head: 1,
            tail: 1,
            pinned: None,
        },
        ..strict
    };
    assert_eq!(laws_of(&before, &joined, strict), Vec::<u8>::new());
    // Without strict alternation a join is a lost user message.
    assert_eq!(laws_of(&before, &joined, micro(1, 1)), vec![4, 4]);
}

#[test]
fn inherited_imperfections_are_not_held_against_the_pass() {
    let before = vec![
        Message::tool_result("ghost", "orphan"),
        Message::user("a"),
        Message::user("b"),
        Message::assistant_tool_calls("", vec![ToolCall::function("x", "f", "{}")]),
    ];
    let pass = Pass::new(PassKind::Batch, Protected::default());
    assert_eq!(laws_of(&before, &before, pass), Vec::<u8>::new());
}

#[test]
fn metadata_is_not_content() {
    // A store stamping row ids (a flush) between the snapshot and the check.
    let before = convo();
    let mut after = before.clone();
    for (i, m) in after.iter_mut().enumerate() {
        m.meta_mut().row_id = Some(100 + i as i64);
    }
    for kind in [PassKind::Batch, PassKind::Micro, PassKind::Failed] {
        let pass = Pass::new(
            kind,
            Protected {
                head: 2,
                tail: 2,
                pinned: Some(5),
            },
        );
        assert_eq!(laws_of(&before, &after, pass), Vec::<u8>::new(), "{kind:?}");
    }
    // Content changes are still changes.
    after[0].set_text("other");
    let pass = Pass::new(
        PassKind::Batch,
        Protected {
            head: 1,
            tail: 0,
            pinned: None,
        },
    );
    assert_eq!(
        check(&before, &after, &pass, &Estimator::default()),
        vec![Violation::HeadChanged { index: 0 }]
    );
}

#[test]
fn a_tool_result_moved_past_the_next_assistant_breaks_law_2() {
    let before = convo();
    let mut after = before.clone();
    let result = after.remove(3);
    after.insert(4, result); // after "done 1"
    let v = check(&before, &after, &micro(1, 1), &Estimator::default());
    // (The two assistant messages made adjacent also break law 3.)
    assert_eq!(
        v[0],
        Violation::NonAdjacentToolResult {
            index: 4,
            call_index: 2
        }
    );
    assert_eq!(v[0].law(), Law::ToolIntegrity);
    // Inherited from before: not the pass's doing.
    assert_eq!(laws_of(&after, &after, micro(1, 1)), Vec::<u8>::new());
    // Several results of one call group stay adjacent to it.
    let group = vec![
        Message::user("u"),
        Message::assistant_tool_calls(
            "",
            vec![
                ToolCall::function("a", "f", "{}"),
                ToolCall::function("b", "g", "{}"),
            ],
        ),
        Message::tool_result("a", "1"),
        Message::tool_result("b", "2"),
        Message::assistant("ok"),
    ];
    let pass = Pass::new(PassKind::Batch, Protected::default());
    assert_eq!(laws_of(&group, &group, pass), Vec::<u8>::new());
    let mut moved = group.clone();
    moved.swap(3, 4);
    assert_eq!(laws_of(&group, &moved, pass), vec![2]);
}

/// Issue 21, item 14: the law checker's view of the continuation.
#[test]
fn continuation_laws() {
    let image = || {
        let mut m = Message::user("");
        m.set_content(Some(crate::Content::Parts(vec![crate::Part(
            serde_json::json!({"type": "image_url", "image_url": {"url": "https://x/s.png"}}),
        )])));
        m
    };
    let before = vec![
        Message::system("sys"),
        image(),
        Message::assistant_tool_calls("", vec![ToolCall::function("a", "ls", "{}")]),
        Message::tool_result("a", "x".repeat(2_000)),
        Message::assistant_tool_calls("", vec![ToolCall::function("b", "ls", "{}")]),
        Message::tool_result("b", "y".repeat(2_000)),
        Message::assistant("looked"),
    ];
    let batch = Pass::new(
        PassKind::Batch,
        Protected {
            head: 4,
            tail: 1,
            pinned: None,
        },
    );
    let summary = |role| marker::render(MarkerKind::Batch, role, "s");
    // A user-role summary with no user text anywhere: the summary is the first user text.
    let mut bare = before.clone();
    bare.splice(4..6, [summary(Role::User)]);
    assert_eq!(
        check(&before, &bare, &batch, &Estimator::default()),
        vec![Violation::NoUserText { summary_index: 4 }]
    );
    // Summary then continuation: every law holds.
    let mut good = before.clone();
    good.splice(4..6, [summary(Role::Assistant), marker::continuation()]);
    assert_eq!(laws_of(&before, &good, batch), Vec::<u8>::new());
    // The continuation is not one of the user's: law 4 does not ask for it back.
    let mut lost = Vec::new();
    check_user_text(&good, &bare, false, &mut lost);
    assert_eq!(lost, Vec::new());
    // Two stacked.
    let mut two = good.clone();
    two.splice(6..6, [summary(Role::Assistant), marker::continuation()]);
    assert!(
        check(&good, &two, &batch, &Estimator::default())
            .contains(&Violation::ExtraContinuation { index: 7 })
    );
    // Added beside user text of the user's own.
    let mut with_text = before.clone();
    with_text.push(Message::user("fix it"));
    let mut needless = with_text.clone();
    needless.splice(4..6, [summary(Role::Assistant), marker::continuation()]);
    let batch = Pass {
        protected: Protected {
            head: 4,
            tail: 2,
            pinned: None,
        },
        ..batch
    };
    assert_eq!(
        check(&with_text, &needless, &batch, &Estimator::default()),
        vec![Violation::NeedlessContinuation { index: 5 }]
    );
    // Inherited from before: not the pass's doing.
    assert_eq!(laws_of(&needless, &needless, batch), Vec::<u8>::new());
}

#[test]
fn marker_and_failure_laws() {
    let mut before = convo();
    before.insert(1, marker::render(MarkerKind::Batch, Role::User, "old"));
    before.insert(2, Message::assistant("ok"));
    let mut after = before.clone();
    after[1] = Message::user("rewritten");
    let v = check(&before, &after, &micro(1, 1), &Estimator::default());
    assert!(
        v.contains(&Violation::BatchMarkerDeleted { before_index: 1 }),
        "{v:?}"
    );
    let failed = Pass::new(PassKind::Failed, Protected::default());
    assert_eq!(
        check(&before, &after, &failed, &Estimator::default()),
        vec![Violation::ChangedOnFailure {
            first_difference: 1
        }]
    );
    assert_eq!(laws_of(&before, &before, failed), Vec::<u8>::new());
}
