//! The public strategies generate what they promise.

use compaction_core::marker;
use compaction_core::strategies::{self, TranscriptConfig};
use compaction_core::validate::validate;
use compaction_core::{Content, MarkerKind, Role};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn transcripts_validate_clean(msgs in strategies::transcript()) {
        let report = validate(&msgs);
        prop_assert!(report.is_clean(), "{:?}", report.issues);
        prop_assert!(msgs.iter().any(|m| m.is_user()));
        prop_assert!(msgs.iter().all(|m| marker::classify(m).is_none()));
    }

    #[test]
    fn transcripts_with_markers_validate_clean(msgs in strategies::transcript_with_markers()) {
        let report = validate(&msgs);
        prop_assert!(report.is_clean(), "{:?}", report.issues);
        for kind in [MarkerKind::Batch, MarkerKind::Micro, MarkerKind::Progress] {
            let count = msgs.iter().filter(|m| m.marker_kind() == Some(kind)).count();
            prop_assert!(count <= 1);
        }
    }

    #[test]
    fn budgets_are_sane(b in strategies::budget()) {
        prop_assert!(b.regions.tail_soft_ceiling >= 1.0);
        prop_assert!(b.window.output_reserve_tokens <= b.window.context_length);
    }
}

/// Over many cases, every feature the strategies promise shows up.
#[test]
fn transcripts_cover_what_they_promise() {
    let mut runner = TestRunner::deterministic();
    let strategy = strategies::transcript_with(TranscriptConfig {
        large_output_weight: 4,
        ..TranscriptConfig::default()
    });
    let mut seen = [false; 9];
    for _ in 0..200 {
        let msgs = strategy
            .new_tree(&mut runner)
            .expect("strategy generates")
            .current();
        let mut tool_rounds_in_turn = 0;
        for m in &msgs {
            if m.role() == &Role::System {
                seen[0] = true;
            }
            if m.is_user() {
                tool_rounds_in_turn = 0;
            }
            if m.has_tool_calls() {
                tool_rounds_in_turn += 1;
                seen[1] |= m.tool_calls().len() > 1;
                seen[2] |= tool_rounds_in_turn > 1;
            }
            if m.is_assistant() && !m.has_tool_calls() {
                seen[3] = true;
            }
            if let Some(Content::Parts(parts)) = m.content() {
                seen[4] |= parts
                    .iter()
                    .any(|p| matches!(p.kind(), Some("image_url" | "input_image" | "image")));
            }
            let text = m.text();
            seen[5] |= text.chars().any(|c| {
                ('\u{2E80}'..='\u{9FFF}').contains(&c) || ('\u{AC00}'..='\u{D7AF}').contains(&c)
            });
            seen[6] |= text.len() >= 50_000;
            seen[7] |= m.extra_fields().any(|(k, _)| k == "reasoning_content");
            seen[8] |= m.extra_fields().any(|(k, _)| k == "timestamp");
        }
    }
    let names = [
        "system prompt",
        "parallel calls",
        "multi-round tool loop",
        "assistant without calls",
        "image part",
        "CJK text",
        "large tool output",
        "reasoning_content",
        "timestamp",
    ];
    for (name, seen) in names.iter().zip(seen) {
        assert!(seen, "never generated: {name}");
    }
}
