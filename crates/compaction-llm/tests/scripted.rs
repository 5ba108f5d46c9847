//! The scripted summarizer and the fallback combinator.

use compaction_llm::{
    Error, ExtractiveSummarizer, FallbackSummarizer, ScriptedSummarizer, Summarizer, SummaryKind,
    SummaryRequest,
};

fn req(material: &str) -> SummaryRequest {
    SummaryRequest::new(SummaryKind::MicroMerge, material, 300, "2026-01-01")
}

#[tokio::test]
async fn queue_then_extractive_default_and_requests_recorded() {
    let s = ScriptedSummarizer::new();
    let handle = s.clone();
    s.push_text("first")
        .push_error(Error::Transient { status: Some(502) });
    assert_eq!(s.remaining(), 2);
    assert_eq!(s.summarize(&req("a")).await.unwrap().text, "first");
    assert_eq!(
        s.summarize(&req("b")).await.unwrap_err(),
        Error::Transient { status: Some(502) }
    );
    let third = s.summarize(&req("[user] hello there")).await.unwrap();
    assert!(third.extractive);
    assert!(third.text.contains("> hello there"));
    let seen = handle.requests();
    assert_eq!(handle.calls(), 3);
    assert_eq!(
        seen.iter().map(|r| r.material.as_str()).collect::<Vec<_>>(),
        ["a", "b", "[user] hello there"]
    );
}

#[tokio::test]
async fn fail_always_and_seeded_random_failures() {
    let s = ScriptedSummarizer::new();
    s.fail_always(Some(Error::Quota { status: 402 }));
    assert_eq!(
        s.summarize(&req("x")).await.unwrap_err(),
        Error::Quota { status: 402 }
    );
    s.fail_always(None);
    assert!(s.summarize(&req("x")).await.is_ok());

    let pattern = |seed: u64| async move {
        let s = ScriptedSummarizer::new();
        s.fail_randomly(0.5, seed, Error::Network { connect: false });
        let mut out = Vec::new();
        for _ in 0..64 {
            out.push(s.summarize(&req("x")).await.is_ok());
        }
        out
    };
    let a = pattern(7).await;
    assert_eq!(a, pattern(7).await, "same seed, same failures");
    assert_ne!(a, pattern(8).await);
    let fails = a.iter().filter(|ok| !**ok).count();
    assert!((10..=54).contains(&fails), "{fails} failures of 64");
}

#[tokio::test]
async fn fallback_covers_non_fatal_failures_only() {
    let primary = ScriptedSummarizer::new();
    let f = FallbackSummarizer {
        primary: primary.clone(),
        fallback: ExtractiveSummarizer::default(),
    };
    primary.push_error(Error::Transient { status: None });
    let r = f.summarize(&req("[user] keep going")).await.unwrap();
    assert!(r.extractive);
    assert_eq!(r.model, "extractive");

    primary.push_error(Error::Auth { status: Some(401) });
    assert_eq!(
        f.summarize(&req("x")).await.unwrap_err(),
        Error::Auth { status: Some(401) }
    );
    // Dyn-compatible.
    let dynamic: std::sync::Arc<dyn Summarizer> = std::sync::Arc::new(f);
    assert_eq!(dynamic.name(), "scripted");
}
