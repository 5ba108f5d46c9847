//! Cached token counts (and the cached latest user index) stay equal to fresh recounts after
//! any splices.

use compaction_core::Transcript;
use compaction_core::strategies;
use compaction_core::tokens::{Estimator, estimate_text};
use compaction_core::{Content, MarkerKind, Message, Role, TokenCounter, marker};
use compaction_core::{Edit, Splice};
use proptest::prelude::*;

/// One splice, drawn relative to the current length.
#[derive(Clone, Debug)]
struct Op {
    start: prop::sample::Index,
    remove: usize,
    insert: Vec<Message>,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = (
        any::<prop::sample::Index>(),
        0usize..6,
        prop::collection::vec(
            prop_oneof![
                3 => strategies::text(300).prop_map(Message::assistant),
                1 => strategies::text(300).prop_map(Message::user),
                1 => ".{0,200}".prop_map(|b| marker::render(MarkerKind::Micro, Role::User, &b)),
            ],
            0..4,
        ),
    )
        .prop_map(|(start, remove, insert)| Op {
            start,
            remove,
            insert,
        });
    prop::collection::vec(op, 1..12)
}

fn assert_fresh(t: &Transcript, e: &Estimator) {
    let fresh = Transcript::new(t.messages().to_vec(), e);
    assert_eq!(t.estimated_total(), fresh.estimated_total());
    assert_eq!(t.last_real_user(), fresh.last_real_user());
    for i in 0..t.len() {
        assert_eq!(t.tokens_of(i), fresh.tokens_of(i), "message {i}");
        assert_eq!(t.tokens_in(0..i), fresh.tokens_in(0..i), "prefix {i}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn prefix_sums_equal_fresh_counts_after_splices(msgs in strategies::transcript(), ops in ops()) {
        let e = Estimator::default();
        let mut t = Transcript::new(msgs, &e);
        let mut shadow: Vec<Message> = t.messages().to_vec();
        for op in ops {
            let start = op.start.index(t.len() + 1);
            let end = (start + op.remove).min(t.len());
            let removed = t.splice(start..end, op.insert.clone(), &e);
            let expected: Vec<Message> = shadow.splice(start..end, op.insert).collect();
            prop_assert_eq!(removed, expected);
            prop_assert_eq!(t.messages(), &shadow[..]);
            assert_fresh(&t, &e);
        }
    }

    #[test]
    fn edits_applied_in_place_match_fresh_counts(msgs in strategies::transcript(), ops in ops()) {
        let e = Estimator::default();
        // Turn the ops into ascending, non-overlapping splices of the original.
        let n = msgs.len();
        let mut splices = Vec::new();
        let mut at = 0;
        for op in ops {
            let start = at + op.start.index(n + 1 - at).min(2);
            let end = (start + op.remove).min(n);
            splices.push(Splice { range: start..end, replacement: op.insert });
            at = end;
            if at >= n {
                break;
            }
        }
        let edit = Edit { splices };
        let after = edit.apply(&msgs).expect("valid edit");
        let mut t = Transcript::new(msgs, &e);
        edit.apply_to(&mut t, &e).expect("valid edit");
        prop_assert_eq!(t.messages(), &after[..]);
        assert_fresh(&t, &e);
    }

    #[test]
    fn ascii_estimate_is_ceil_quarter(s in "[ -~]{0,400}") {
        prop_assert_eq!(estimate_text(&s), (s.len() as u64).div_ceil(4));
    }

    #[test]
    fn wide_text_costs_one_token_per_character(s in "[\u{4e00}-\u{9fa5}\u{ac00}-\u{d7a3}\u{3041}-\u{30ff}]{0,100}") {
        prop_assert_eq!(estimate_text(&s), s.chars().count() as u64);
    }

    #[test]
    fn messages_cost_at_least_their_string_content(m in strategies::transcript()) {
        let e = Estimator::default();
        for msg in &m {
            if let Some(Content::Text(s)) = msg.content() {
                prop_assert!(e.count_message(msg) > estimate_text(s));
            }
        }
    }
}
