//! Region laws for arbitrary transcripts and budgets.

use compaction_core::Transcript;
use compaction_core::regions::{self, RegionConfig};
use compaction_core::strategies::{self, TranscriptConfig};
use compaction_core::{Estimator, Message, ToolCall};
use proptest::prelude::*;

use crate::common::assert_region_laws;

fn check(msgs: Vec<Message>, b: &strategies::Budget) -> regions::Regions {
    let t = Transcript::new(msgs, &Estimator::default());
    let r = regions::partition(&t, b.threshold_tokens, &b.regions, b.compacted);
    assert_region_laws(&t, &r, &b.regions);
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn region_laws_hold(msgs in strategies::transcript(), b in strategies::budget()) {
        check(msgs, &b);
    }

    #[test]
    fn region_laws_hold_with_markers(
        msgs in strategies::transcript_with_markers(),
        b in strategies::budget(),
    ) {
        check(msgs, &b);
    }

    #[test]
    fn region_laws_hold_for_long_tool_loops(
        msgs in strategies::transcript_with(TranscriptConfig {
            max_turns: 3,
            max_tool_rounds: 20,
            max_parallel_calls: 4,
            max_text_chars: 200,
            large_output_weight: 0,
            ..TranscriptConfig::default()
        }),
        b in strategies::budget(),
    ) {
        check(msgs, &b);
    }

    /// Arbitrary role sequences, including orphan results and results far from their call:
    /// the laws hold for imperfect transcripts too.
    #[test]
    fn region_laws_hold_for_imperfect_transcripts(
        shape in prop::collection::vec(0u8..6, 0..60),
        b in strategies::budget(),
    ) {
        let msgs: Vec<Message> = shape
            .iter()
            .enumerate()
            .map(|(i, k)| match k {
                0 => Message::user(format!("u{i}")),
                1 => Message::assistant("x".repeat(i * 37 % 900)),
                2 => Message::assistant_tool_calls("", vec![ToolCall::function(format!("c{i}"), "f", "{}")]),
                3 => Message::tool_result(format!("c{}", i.saturating_sub(1)), "y".repeat(i * 53 % 4000)),
                4 => Message::system("s"),
                _ => Message::tool_result("nowhere", "z"),
            })
            .collect();
        check(msgs, &b);
    }
}

#[test]
fn growing_the_budget_never_shrinks_the_tail_of_an_ordinary_transcript() {
    let mut msgs = vec![Message::system("sys")];
    for i in 0..30 {
        msgs.push(Message::user(format!("question {i}")));
        msgs.push(Message::assistant("answer ".repeat(50 + i)));
    }
    let t = Transcript::new(msgs, &Estimator::default());
    // A 0.20 tail, so the largest threshold below covers the whole transcript.
    let cfg = RegionConfig {
        tail_ratio: 0.2,
        ..RegionConfig::default()
    };
    let mut last = 0;
    for threshold in (0..40).map(|k| k * 1_000) {
        let r = regions::partition(&t, threshold, &cfg, true);
        assert_region_laws(&t, &r, &cfg);
        assert!(r.tail.len() >= last, "threshold {threshold}: {r:?}");
        last = r.tail.len();
    }
    assert_eq!(
        last,
        t.len() - 1,
        "a large budget keeps everything after the system prompt"
    );
}
