//! Prompts and output guards.

use compaction_llm::prompts::{SECTIONS, build};
use compaction_llm::{SummaryKind, SummaryRequest, guard};

#[test]
fn every_kind_names_the_sections_date_and_budget() {
    for kind in [
        SummaryKind::BatchFirst,
        SummaryKind::BatchUpdate,
        SummaryKind::MicroMerge,
        SummaryKind::Defrag,
        SummaryKind::TurnProgress,
    ] {
        let req =
            SummaryRequest::new(kind, "MATERIAL", 777, "2026-05-06").with_previous("PREVIOUS");
        let p = build(&req, "MATERIAL");
        for h in SECTIONS {
            assert!(p.system.contains(h), "{kind:?} lacks {h}");
        }
        assert!(p.system.contains("2026-05-06"));
        assert!(p.system.contains("777 tokens"));
        assert!(p.system.contains("[REDACTED]"));
        assert!(p.system.contains("verbatim"));
        assert!(p.user.contains("PREVIOUS"));
        assert_eq!(
            p.user.contains("MATERIAL"),
            kind != SummaryKind::Defrag,
            "{kind:?}"
        );
        assert!(!p.system.contains("Focus topic"));
    }
}

#[test]
fn defrag_asks_for_half_and_focus_is_included() {
    let summary = "x".repeat(4_000);
    let req = SummaryRequest::new(SummaryKind::Defrag, "", 500, "2026-05-06")
        .with_previous(summary)
        .with_focus("database migrations");
    let p = build(&req, "");
    assert!(p.system.contains("at most half as long"));
    assert!(p.system.contains("stay under 500"), "{}", p.system);
    assert!(p.system.contains("Focus topic: database migrations"));
}

#[test]
fn prompts_do_not_trip_the_directive_guard_on_their_headings() {
    // A summary that follows the prompt's structure must pass the guard.
    let body = SECTIONS
        .iter()
        .map(|h| format!("{h}\n- none"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(guard::check(&body, Some("stop")).unwrap(), body);
}
