//! Data-driven tests over every shared fixture transcript.

use compaction_core::Transcript;
use compaction_core::exchange::exchanges_from;
use compaction_core::laws::{self, Pass, PassKind, Protected};
use compaction_core::parse::{self, Format};
use compaction_core::regions::{self, RegionConfig, WindowConfig};
use compaction_core::validate::{self, Issue};
use compaction_core::{Estimator, Message};

use crate::common::{self, assert_region_laws};

/// The fixtures known to validate clean (all 21 at the time of writing). A fixture added
/// later is parsed, partitioned and summarized, but only these are held to a clean report.
const KNOWN_CLEAN: &[&str] = &[
    "claude-code__spotter-258c7280.jsonl",
    "claude-code__spotter-4d5611e5.jsonl",
    "claude-code__spotter-8463c716.jsonl",
    "claude-code__spotter-ae4a77f8.jsonl",
    "claude-code__spotter-fa812bfe.jsonl",
    "claude-code__spotter-short.jsonl",
    "claude-code__spotter-subagent-a2898e3.jsonl",
    "claude-code__spotter-subagent-aa84377.jsonl",
    "claude-code__spotter-subagent-fixture.jsonl",
    "claude-code__spotter-tool-heavy.jsonl",
    "mini-swe-agent__github-issue.jsonl",
    "openhands-v1__oas-safety-metrics-gpt4o.jsonl",
    "openhands-v1__oas-safety-unauth-discount-gpt4o.jsonl",
    "openhands__basic-gui-mode.jsonl",
    "pi__before-compaction.jsonl",
    "pi__large-session.jsonl",
    "swe-agent__ctf-crypto-katy.jsonl",
    "swe-agent__ctf-web-i-got-id.jsonl",
    "swe-agent__marshmallow-1867-fc.jsonl",
    "swe-agent__pydicom-1458-gpt4.jsonl",
    "swe-agent__test-repo-i1-gpt4.jsonl",
];

const CONTEXTS: [u64; 5] = [16_000, 64_000, 128_000, 200_000, 1_000_000];

fn parsed(name: &str, bytes: &[u8]) -> Vec<Message> {
    let (msgs, format) = parse::parse_transcript(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(format, Format::Jsonl, "{name}");
    assert!(!msgs.is_empty(), "{name}");
    msgs
}

#[test]
fn fixtures_parse_and_serialize_back_byte_identical() {
    let Some(files) = common::fixtures() else {
        return;
    };
    for (name, bytes) in &files {
        let msgs = parsed(name, bytes);
        let text = std::str::from_utf8(bytes).expect("fixtures are UTF-8");
        assert_eq!(
            msgs.len(),
            text.lines().filter(|l| !l.trim().is_empty()).count(),
            "{name}"
        );
        assert!(
            parse::to_jsonl(&msgs) == text,
            "{name}: serialized bytes differ from the file"
        );
        assert!(msgs.iter().all(Message::is_pristine), "{name}");
    }
}

#[test]
#[allow(
    clippy::print_stderr,
    reason = "the per-file summary is the point of this test"
)]
fn fixtures_validate() {
    let Some(files) = common::fixtures() else {
        return;
    };
    for (name, bytes) in &files {
        let msgs = parsed(name, bytes);
        let report = validate::validate(&msgs);
        let count = |f: fn(&Issue) -> bool| report.issues.iter().filter(|i| f(i)).count();
        eprintln!(
            "{name}: {} messages, {} issues (orphan {}, unanswered {}, duplicate id {}, non-adjacent {}, duplicate result {}, no id {}, unknown role {})",
            msgs.len(),
            report.issues.len(),
            count(|i| matches!(i, Issue::OrphanToolResult { .. })),
            count(|i| matches!(i, Issue::UnansweredToolCall { .. })),
            count(|i| matches!(i, Issue::DuplicateToolCallId { .. })),
            count(|i| matches!(i, Issue::NonAdjacentToolResult { .. })),
            count(|i| matches!(i, Issue::DuplicateToolResult { .. })),
            count(|i| matches!(i, Issue::ToolResultWithoutId { .. })),
            count(|i| matches!(i, Issue::UnknownRole { .. })),
        );
        assert!(!report.issues.contains(&Issue::Empty), "{name}");
        if KNOWN_CLEAN.contains(&name.as_str()) {
            assert!(report.tool_pairing_ok(), "{name}: {:?}", report.issues);
            assert!(report.is_clean(), "{name}: {:?}", report.issues);
        }
    }
}

#[test]
fn fixtures_partition_at_several_context_sizes() {
    let Some(files) = common::fixtures() else {
        return;
    };
    let e = Estimator::default();
    let cfg = RegionConfig::default();
    for (name, bytes) in &files {
        let t = Transcript::new(parsed(name, bytes), &e);
        for context in CONTEXTS {
            let threshold = WindowConfig::for_context(context).threshold_tokens();
            for compacted in [false, true] {
                let r = regions::partition(&t, threshold, &cfg, compacted);
                assert_region_laws(&t, &r, &cfg);
                // Exchanges found in the middle end at user messages and stay inside it.
                for x in exchanges_from(t.messages(), r.middle.clone(), 0) {
                    assert!(r.middle.start <= x.start && x.end <= r.middle.end, "{name}");
                }
                // Doing nothing keeps every law the checker decides.
                let pass = Pass::new(PassKind::Batch, Protected::from_regions(&r));
                let v = laws::check(t.messages(), t.messages(), &pass, &e);
                assert!(v.is_empty(), "{name} at {context}: {v:?}");
                if t.estimated_total() <= (threshold as f64 * cfg.tail_ratio).floor() as u64 {
                    assert!(
                        r.middle.is_empty() && r.turn_middle.is_empty(),
                        "{name}: small transcripts have nothing to rewrite"
                    );
                }
            }
        }
    }
}
