//! The summarizer circuit breaker every pass shares: a summarizer that keeps failing is paid
//! for a few times, then skipped until a probe interval has passed on the compressor's clock.

use hermes_compaction::OneShot;
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
        assert!(
            r.stats.fallback_used(),
            "the fallback wrote every summary: {r:?}"
        );
        skipped.push(r.stats.summarizer_skipped());
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
    assert!(
        !r.stats.summarizer_skipped() && r.stats.fallback_used(),
        "{r:?}"
    );
    assert_eq!(s.calls(), 4);
    let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
    assert!(r.stats.summarizer_skipped(), "{r:?}");
    assert_eq!(s.calls(), 4);

    // The summarizer is back: the next probe succeeds and closes the breaker.
    s.fail_always(None);
    for i in 0..3 {
        s.push_text(format!("Rolling summary {i}: the steps so far."));
    }
    now.fetch_add(121_000, Ordering::SeqCst);
    for expected in [5, 6, 7] {
        let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
        assert!(
            !r.stats.fallback_used() && !r.stats.summarizer_skipped(),
            "{r:?}"
        );
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
    assert!(r.stats.summarizer_skipped(), "{r:?}");
    assert!(t.messages() == before.as_slice(), "failure changes nothing");
    // A batch pass over a chat without tool outputs (pruning cannot help) is skipped too.
    let mut chat = vec![Message::system("You are a helpful assistant.")];
    for i in 0..60 {
        chat.push(Message::user(format!("question {i}")));
        chat.push(Message::assistant(format!("answer {i}: ").repeat(120)));
    }
    let mut t = c.transcript(chat.clone());
    let b = rt
        .block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    assert!(b.failed(), "{b:?}");
    assert!(b.stats.summarizer_skipped(), "{b:?}");
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
        assert!(!r.stats.summarizer_skipped());
    }
    assert_eq!(s.calls(), 6);
}

/// A summarizer whose calls take `call_ms` on the test's clock and fail (or succeed) as told,
/// counting its calls.
struct Timed {
    now: Arc<AtomicU64>,
    call_ms: u64,
    fail: std::sync::atomic::AtomicBool,
    calls: std::sync::atomic::AtomicUsize,
}

impl compaction_llm::Summarizer for Timed {
    fn name(&self) -> &str {
        "timed"
    }

    fn summarize<'a>(
        &'a self,
        req: &'a compaction_llm::SummaryRequest,
    ) -> compaction_llm::SummaryFuture<'a> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.now.fetch_add(self.call_ms, Ordering::SeqCst);
        let out = if self.fail.load(Ordering::SeqCst) {
            Err(Error::Transient { status: None })
        } else {
            Ok(compaction_llm::SummaryResponse {
                text: format!("## Goal\n- work through {} of the span", req.kind.as_str()),
                model: "timed".into(),
                usage: None,
                extractive: false,
                fallback: None,
            })
        };
        Box::pin(std::future::ready(out))
    }
}

/// The breaker holds at the defaults: one failure that took a whole request timeout (30 s
/// here, as a hang or a slow drip takes) opens it at once; it stays open for the probe
/// interval counted from the END of that call, not its start; then one call probes (half
/// open), whose failure re-opens it from the probe's end and whose success closes it.
#[test]
fn one_slow_failure_opens_the_breaker_for_the_interval_after_its_end() {
    let rt = rt();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let s = Arc::new(Timed {
        now: now.clone(),
        call_ms: 60_000,
        fail: true.into(),
        calls: 0.into(),
    });
    let calls = || s.calls.load(Ordering::SeqCst);
    let mut cfg = micro_config();
    // The defaults of the time bound.
    let defaults = hermes_compaction::Config::default().auxiliary.compression;
    assert_eq!(
        (
            defaults.timeout,
            defaults.max_retries,
            defaults.deadline_secs,
            defaults.breaker_probe_secs
        ),
        (30, 1, 60, 120)
    );
    cfg.auxiliary.compression = hermes_compaction::config::SummarizerConfig {
        provider: "extractive".into(),
        ..defaults
    };
    let clock = now.clone();
    let mut c = builder_with(cfg, s.clone())
        .clock(move || clock.load(Ordering::SeqCst))
        .build()
        .unwrap();
    let mut t = c.transcript(tool_session(60, 600));
    // The first pass pays the slow failure (the call ran from 1_000_000 to 1_060_000).
    let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
    assert!(
        r.stats.fallback_used() && !r.stats.summarizer_skipped(),
        "{r:?}"
    );
    assert_eq!(r.fallback_cause, Some(ErrorClass::Transient));
    assert_eq!(calls(), 1);
    let ended = now.load(Ordering::SeqCst);
    // Under the old rule (interval from the call's start) the breaker would let the next
    // pass probe at start + 120 s = end + 60 s; it must hold until end + 120 s.
    for at in [ended, ended + 60_000, ended + 119_999] {
        now.store(at, Ordering::SeqCst);
        let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
        assert!(
            r.stats.summarizer_skipped() && r.stats.fallback_used(),
            "at {at}: {r:?}"
        );
        assert_eq!(r.fallback_cause, Some(ErrorClass::Transient));
    }
    assert_eq!(calls(), 1, "no call while the breaker is open");
    // Half open at end + 120 s: one probe, which fails slowly and re-opens it from its end.
    now.store(ended + 120_000, Ordering::SeqCst);
    let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
    assert!(
        !r.stats.summarizer_skipped() && r.stats.fallback_used(),
        "{r:?}"
    );
    assert_eq!(calls(), 2);
    let probe_end = now.load(Ordering::SeqCst);
    now.store(probe_end + 119_999, Ordering::SeqCst);
    let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
    assert!(r.stats.summarizer_skipped(), "{r:?}");
    assert_eq!(calls(), 2);
    // The endpoint recovers: the next probe succeeds and closes the breaker.
    s.fail.store(false, Ordering::SeqCst);
    now.store(probe_end + 120_000, Ordering::SeqCst);
    for expected in [3, 4] {
        let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
        assert!(
            !r.stats.fallback_used() && !r.stats.summarizer_skipped(),
            "{r:?}"
        );
        assert_eq!(r.fallback_cause, None);
        assert_eq!(calls(), expected);
    }
}

/// A fast failure does not open the breaker by itself (it costs little); three in a row do.
#[test]
fn fast_failures_open_it_after_the_configured_count() {
    let rt = rt();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let s = Arc::new(Timed {
        now: now.clone(),
        call_ms: 500,
        fail: true.into(),
        calls: 0.into(),
    });
    let clock = now.clone();
    let mut c = builder_with(micro_config(), s.clone())
        .clock(move || clock.load(Ordering::SeqCst))
        .build()
        .unwrap();
    let mut t = c.transcript(tool_session(60, 600));
    let skipped: Vec<bool> = (0..5)
        .map(|_| {
            rt.block_on(c.finalize_turn(&mut t))
                .expect("a pass ran")
                .stats
                .summarizer_skipped()
        })
        .collect();
    assert_eq!(skipped, [false, false, false, true, true]);
    assert_eq!(s.calls.load(Ordering::SeqCst), 3);
}

/// A summarizer that never answers is abandoned at the pass's deadline
/// (`auxiliary.compression.deadline_secs`): the fallback writes the summary, the failure is a
/// timeout (`transient`), and, having taken a whole deadline, it opens the breaker at once.
#[test]
fn a_hanging_summarizer_is_cut_at_the_pass_deadline() {
    struct Hang(std::sync::atomic::AtomicUsize);
    impl compaction_llm::Summarizer for Hang {
        fn name(&self) -> &str {
            "hang"
        }
        fn summarize<'a>(
            &'a self,
            _req: &'a compaction_llm::SummaryRequest,
        ) -> compaction_llm::SummaryFuture<'a> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(std::future::pending())
        }
    }
    let rt = rt();
    let s = Arc::new(Hang(0.into()));
    let mut cfg = micro_config();
    cfg.auxiliary.compression.deadline_secs = 1;
    let mut c = builder_with(cfg, s.clone())
        .clock(|| 5_000_000)
        .build()
        .unwrap();
    let mut t = c.transcript(tool_session(60, 600));
    let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
    assert_eq!(r.outcome, MicroOutcomeKind::Absorbed, "{r:?}");
    assert!(
        r.stats.fallback_used() && !r.stats.summarizer_skipped(),
        "{r:?}"
    );
    assert_eq!(r.fallback_cause, Some(ErrorClass::Transient));
    let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
    assert!(
        r.stats.summarizer_skipped(),
        "the deadline opened the breaker: {r:?}"
    );
    assert_eq!(s.0.load(Ordering::SeqCst), 1);
    // Without the fallback the pass fails as a timeout and changes nothing.
    let mut cfg = micro_config();
    cfg.auxiliary.compression.deadline_secs = 1;
    cfg.compression.fallback_to_extractive = false;
    let mut c = builder_with(cfg, s.clone())
        .clock(|| 5_000_000)
        .build()
        .unwrap();
    let mut t = c.transcript(tool_session(60, 600));
    let before = t.messages().to_vec();
    let r = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
    assert_eq!(
        r.failure_kind(),
        Some(FailureKind::Summarizer(ErrorClass::Transient))
    );
    assert!(t.messages() == before.as_slice());
}
