//! The summarizer circuit breaker every pass shares: a summarizer that keeps failing is paid
//! for a few times, then skipped until a probe interval has passed on the compressor's clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use compaction_core::Message;
use compaction_llm::{Error, ErrorClass, ScriptedSummarizer};
use hermes_compaction::FailureKind;
use hermes_compaction::core::micro::MicroOutcomeKind;

use crate::common::{builder_with, config, rt, tool_session};

const DOWN: Error = Error::Transient { status: Some(503) };

fn micro_config() -> hermes_compaction::Config {
    let mut c = config(32_000);
    c.compression.micro_compact = true;
    c.compression.cache_profile = "none".into();
    c.compression.fallback_to_extractive = true;
    c.auxiliary.compression.breaker_failures = 3;
    c.auxiliary.compression.breaker_probe_secs = 120;
    c
}

#[test]
fn micro_passes_stop_calling_a_dead_summarizer_until_the_probe() {
    let rt = rt();
    let s = Arc::new(ScriptedSummarizer::new());
    s.fail_always(Some(DOWN));
    let now = Arc::new(AtomicU64::new(1_000_000));
    let clock = now.clone();
    let mut c = builder_with(micro_config(), s.clone())
        .clock(move || clock.load(Ordering::SeqCst))
        .build()
        .unwrap();
    let mut t = c.transcript(tool_session(60, 600));
    let mut skipped = Vec::new();
    for _ in 0..10 {
        let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
        assert_eq!(r.outcome, MicroOutcomeKind::Absorbed, "{r:?}");
        assert!(r.fallback_used, "the fallback wrote every summary: {r:?}");
        skipped.push(r.summarizer_skipped);
        now.fetch_add(1_000, Ordering::SeqCst);
    }
    assert_eq!(s.calls(), 3, "three failures open the breaker");
    assert_eq!(
        skipped,
        [
            false, false, false, true, true, true, true, true, true, true
        ]
    );

    // After the probe interval one call probes; a failure re-opens the breaker.
    now.fetch_add(120_000, Ordering::SeqCst);
    let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
    assert!(!r.summarizer_skipped && r.fallback_used, "{r:?}");
    assert_eq!(s.calls(), 4);
    let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
    assert!(r.summarizer_skipped, "{r:?}");
    assert_eq!(s.calls(), 4);

    // The summarizer is back: the next probe succeeds and closes the breaker.
    s.fail_always(None);
    for i in 0..3 {
        s.push_text(format!("Rolling summary {i}: the steps so far."));
    }
    now.fetch_add(121_000, Ordering::SeqCst);
    for expected in [5, 6, 7] {
        let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
        assert!(!r.fallback_used && !r.summarizer_skipped, "{r:?}");
        assert_eq!(s.calls(), expected);
    }
}

/// Without a fallback an open breaker fails the pass at once, with the class of the failure
/// that opened it, and changes nothing; batch and micro passes share one breaker.
#[test]
fn without_a_fallback_an_open_breaker_fails_fast_for_every_pass_kind() {
    let rt = rt();
    let s = Arc::new(ScriptedSummarizer::new());
    s.fail_always(Some(DOWN));
    let mut cfg = micro_config();
    cfg.compression.fallback_to_extractive = false;
    cfg.compression.failure_cooldown_secs = 0;
    // No poison-exchange skip in between: every pass needs the summarizer.
    cfg.compression.micro_compact_max_consecutive_failures = 100;
    let mut c = builder_with(cfg, s.clone())
        .clock(|| 5_000_000)
        .build()
        .unwrap();
    let mut t = c.transcript(tool_session(60, 600));
    for _ in 0..3 {
        let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
        assert_eq!(
            r.failure_kind(),
            Some(FailureKind::Summarizer(ErrorClass::Transient))
        );
    }
    assert_eq!(s.calls(), 3);
    let before = t.messages().to_vec();
    let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
    assert_eq!(
        r.failure_kind(),
        Some(FailureKind::Summarizer(ErrorClass::Transient))
    );
    assert!(r.summarizer_skipped, "{r:?}");
    assert!(t.messages() == before.as_slice(), "failure changes nothing");
    // A batch pass over a chat without tool outputs (pruning cannot help) is skipped too.
    let mut chat = vec![Message::system("You are a helpful assistant.")];
    for i in 0..60 {
        chat.push(Message::user(format!("question {i}")));
        chat.push(Message::assistant(format!("answer {i}: ").repeat(120)));
    }
    let mut t = c.transcript(chat.clone());
    let b = rt.block_on(c.compress(&mut t, None));
    assert!(b.failed(), "{b:?}");
    assert!(b.summarizer_skipped, "{b:?}");
    assert_eq!(s.calls(), 3, "no call while the breaker is open");
    assert!(t.messages() == chat.as_slice(), "failure changes nothing");
}

/// `breaker_failures = 0` turns the breaker off: every pass calls the summarizer.
#[test]
fn a_zero_threshold_never_opens() {
    let rt = rt();
    let s = Arc::new(ScriptedSummarizer::new());
    s.fail_always(Some(DOWN));
    let mut cfg = micro_config();
    cfg.auxiliary.compression.breaker_failures = 0;
    let mut c = builder_with(cfg, s.clone())
        .clock(|| 5_000_000)
        .build()
        .unwrap();
    let mut t = c.transcript(tool_session(60, 600));
    for _ in 0..6 {
        let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
        assert!(!r.summarizer_skipped);
    }
    assert_eq!(s.calls(), 6);
}
