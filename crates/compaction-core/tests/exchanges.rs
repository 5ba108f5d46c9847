//! Exchange boundaries.

use std::ops::Range;

use compaction_core::Transcript;
use compaction_core::exchange::exchanges_from;
use compaction_core::marker;
use compaction_core::regions;
use compaction_core::strategies;
use compaction_core::{Estimator, Message};
use proptest::prelude::*;

fn is_real_user(m: &Message) -> bool {
    m.is_user() && marker::classify(m).is_none()
}

/// The boundary laws of one returned exchange.
fn check_exchange(msgs: &[Message], middle: &Range<usize>, x: &Range<usize>) {
    assert!(!x.is_empty(), "empty exchange {x:?}");
    assert!(
        middle.start <= x.start && x.end <= middle.end,
        "{x:?} outside {middle:?}"
    );
    for i in x.clone() {
        assert!(
            msgs[i].is_assistant() || msgs[i].is_tool(),
            "message {i} of {x:?}"
        );
        assert!(
            marker::classify(&msgs[i]).is_none(),
            "marker {i} inside {x:?}"
        );
    }
    let mut j = x.end;
    while j < msgs.len() && marker::classify(&msgs[j]).is_some() {
        j += 1;
    }
    assert!(
        j < msgs.len() && is_real_user(&msgs[j]),
        "{x:?} is not followed by a user message"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn exchanges_lie_in_the_middle_and_end_at_a_user(
        msgs in strategies::transcript_with_markers(),
        b in strategies::budget(),
        cursor_pick in any::<prop::sample::Index>(),
    ) {
        let t = Transcript::new(msgs, &Estimator::default());
        let r = regions::partition(&t, b.threshold_tokens, &b.regions, b.compacted);
        let msgs = t.messages();
        let cursor = cursor_pick.index(t.len() + 1);
        let all = exchanges_from(msgs, r.middle.clone(), cursor);
        let mut prev_end = 0;
        for x in &all {
            check_exchange(msgs, &r.middle, x);
            prop_assert!(x.start >= cursor.max(r.middle.start));
            prop_assert!(x.start >= prev_end, "exchanges overlap or go backwards");
            prev_end = x.end;
        }
    }

    /// Without markers, with the whole transcript as the middle, the exchanges are exactly
    /// the turns that a later user message closes.
    #[test]
    fn every_closed_turn_is_an_exchange(msgs in strategies::transcript()) {
        let n = msgs.len();
        let users: Vec<usize> = (0..n).filter(|&i| msgs[i].is_user()).collect();
        let expected: Vec<Range<usize>> = users
            .windows(2)
            .filter(|w| w[1] > w[0] + 1)
            .map(|w| w[0] + 1..w[1])
            .collect();
        prop_assert_eq!(exchanges_from(&msgs, 0..n, 0), expected);
    }
}
