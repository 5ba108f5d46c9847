//! The one pass runner: batch and micro passes meet a panicking summarizer, a summary that
//! gains nothing and an extractive answer the same way.

use hermes_compaction::OneShot;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use compaction_core::Message;
use compaction_core::micro::MicroOutcomeKind;
use compaction_llm::{
    ErrorClass, ScriptedSummarizer, Summarizer, SummaryFuture, SummaryRequest, SummaryResponse,
};
use hermes_compaction::{Config, FailureKind, Outcome};

use crate::common::{builder_with, config, rt, tool_session, with_summarizer};

/// A summarizer that panics: while building its future (`eager`) or when it is polled.
#[derive(Default)]
struct Panicking {
    eager: bool,
    calls: AtomicUsize,
}

impl Summarizer for Panicking {
    fn name(&self) -> &str {
        "panicking"
    }

    fn summarize<'a>(&'a self, _req: &'a SummaryRequest) -> SummaryFuture<'a> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        assert!(!self.eager, "summarizer bug (eager)");
        Box::pin(async { panic!("summarizer bug (polled)") })
    }
}

/// A chat with no tool outputs: pruning cannot help, a batch pass must summarize.
fn chat() -> Vec<Message> {
    let mut chat = vec![Message::system("You are a helpful assistant.")];
    for i in 0..60 {
        chat.push(Message::user(format!("question {i}")));
        chat.push(Message::assistant(format!("answer {i}: ").repeat(120)));
    }
    chat
}

fn micro(mut c: Config) -> Config {
    c.compression.micro_compact = true;
    c.compression.cache_profile = "none".into();
    c
}

/// Nothing in a pass may fail the caller: a summarizer that panics is a transient failure of
/// the call, in batch and micro passes alike, whether it panics before or after returning its
/// future. Without a fallback the pass fails and changes nothing; with one, the fallback
/// writes the summary.
#[test]
fn a_panicking_summarizer_is_a_transient_failure_in_every_pass_kind() {
    let rt = rt();
    for eager in [false, true] {
        for fallback in [false, true] {
            let case = format!("eager {eager}, fallback {fallback}");
            let s = Arc::new(Panicking {
                eager,
                ..Panicking::default()
            });
            let mut cfg = micro(config(32_000));
            cfg.compression.fallback_to_extractive = fallback;
            let mut c = with_summarizer(cfg, s.clone());
            let before = chat();
            let mut t = c.transcript(before.clone());
            let b = rt
                .block_on(c.one_shot(&mut t, OneShot::batch()))
                .into_batch()
                .unwrap();
            let mut t2 = c.transcript(tool_session(60, 600));
            let before2 = t2.messages().to_vec();
            let m = rt
                .block_on(c.finalize_turn(&mut t2))
                .expect("a micro pass ran");
            assert_eq!(s.calls.load(Ordering::SeqCst), 2, "{case}");
            if fallback {
                assert_eq!(b.outcome, Outcome::Summarized, "{case}: {b:?}");
                assert_eq!(m.outcome, MicroOutcomeKind::Absorbed, "{case}: {m:?}");
                assert!(b.stats.fallback_used() && m.stats.fallback_used(), "{case}");
                assert!(!b.failed() && !m.failed(), "{case}");
            } else {
                let transient = Some(FailureKind::Summarizer(ErrorClass::Transient));
                assert_eq!(b.outcome, Outcome::Failed, "{case}: {b:?}");
                assert_eq!(b.failure_kind(), transient, "{case}");
                assert_eq!(
                    m.outcome,
                    MicroOutcomeKind::SummarizeFailed,
                    "{case}: {m:?}"
                );
                assert_eq!(m.failure_kind(), transient, "{case}");
                assert!(t.messages() == before.as_slice(), "{case}: unchanged");
                assert!(t2.messages() == before2.as_slice(), "{case}: unchanged");
            }
        }
    }
}

/// A panic counts against the circuit breaker like any transient failure, and the breaker is
/// shared: after `breaker_failures` panics (batch and micro together) the summarizer is no
/// longer called.
#[test]
fn panics_open_the_shared_breaker() {
    let rt = rt();
    let s = Arc::new(Panicking::default());
    let mut cfg = micro(config(32_000));
    cfg.compression.fallback_to_extractive = true;
    cfg.auxiliary.compression.breaker_failures = 2;
    let mut c = builder_with(cfg, s.clone())
        .clock(|| 5_000_000)
        .build()
        .unwrap();
    let mut t = c.transcript(chat());
    rt.block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    let mut t2 = c.transcript(tool_session(60, 600));
    rt.block_on(c.finalize_turn(&mut t2));
    let r = rt.block_on(c.finalize_turn(&mut t2)).expect("a pass ran");
    assert_eq!(s.calls.load(Ordering::SeqCst), 2, "{r:?}");
    assert!(
        r.stats.summarizer_skipped() && r.stats.fallback_used(),
        "{r:?}"
    );
}

/// A summary that does not shrink what it replaces commits nothing in either mode: the
/// batch outcome is `no_gain`, the micro defrag's `defrag_failed`; neither is a failure,
/// neither starts a cooldown, and the transcript is unchanged.
#[test]
fn a_batch_pass_without_gain_commits_nothing_and_is_no_failure() {
    let rt = rt();
    // A short chat: its middle is smaller than the summary the summarizer writes.
    let mut before = vec![Message::system("You are a helpful assistant.")];
    for i in 0..100 {
        before.push(Message::user(format!("question {i}")));
        before.push(Message::assistant(format!("answer {i}")));
    }
    let s = Arc::new(ScriptedSummarizer::new());
    s.push_text("The summary says a great deal about very little. ".repeat(120));
    let mut c = with_summarizer(config(32_000), s.clone());
    let mut t = c.transcript(before.clone());
    let b = rt
        .block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    assert_eq!(s.calls(), 1);
    assert_eq!(b.outcome, Outcome::NoGain, "{b:?}");
    assert!(!b.failed() && b.failure.is_none(), "{b:?}");
    assert!(t.messages() == before.as_slice());
    assert_eq!(c.status().state.consecutive_failures, 0);
    assert_eq!(c.status().state.cooldown_until_ms, None);
}

/// See [`a_batch_pass_without_gain_commits_nothing_and_is_no_failure`].
#[test]
fn a_micro_pass_without_gain_commits_nothing_and_is_no_failure() {
    let rt = rt();
    // A rolling summary over the defrag threshold (within the output guard's 1.5 budgets),
    // then a defrag that shortens it too little: under 1.5 times its budget (half the
    // summary), so the guard passes it, but over the half core asks of a defrag.
    let sentence = "The summary says a great deal about very little. ";
    let mut cfg = micro(config(32_000));
    cfg.compression.micro_compact_defrag_threshold_tokens = 300;
    let s = Arc::new(ScriptedSummarizer::new());
    s.push_text(sentence.repeat(32));
    s.push_text(sentence.repeat(20));
    let mut c = with_summarizer(cfg, s.clone());
    let mut t = c.transcript(tool_session(60, 600));
    let first = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
    assert_eq!(first.outcome, MicroOutcomeKind::Absorbed, "{first:?}");
    let before = t.messages().to_vec();
    let m = rt.block_on(c.finalize_turn(&mut t)).expect("a pass ran");
    assert_eq!(s.calls(), 2, "the defrag called the summarizer");
    assert_eq!(m.outcome, MicroOutcomeKind::DefragFailed, "{m:?}");
    assert!(!m.failed() && m.failure.is_none(), "{m:?}");
    assert!(t.messages() == before.as_slice());
    assert_eq!(c.status().state.cooldown_until_ms, None);
}

/// A summarizer that answered with its own extractive fallback (its response says so) is
/// reported as `fallback_used` by micro passes as by batch passes.
#[test]
fn an_extractive_answer_is_a_fallback_in_both_modes() {
    let rt = rt();
    let extractive = |text: &str| SummaryResponse {
        text: text.into(),
        model: "adapter".into(),
        usage: None,
        extractive: true,
        fallback: None,
    };
    let s = Arc::new(ScriptedSummarizer::new());
    s.push_response(extractive("Earlier: questions 0 to 40 were answered."));
    s.push_response(extractive("Rolling summary: step 0 ran bash."));
    let mut c = with_summarizer(micro(config(32_000)), s.clone());
    let mut t = c.transcript(chat());
    let b = rt
        .block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    assert_eq!(b.outcome, Outcome::Summarized, "{b:?}");
    let mut t2 = c.transcript(tool_session(60, 600));
    let m = rt.block_on(c.finalize_turn(&mut t2)).expect("a pass ran");
    assert_eq!(m.outcome, MicroOutcomeKind::Absorbed, "{m:?}");
    assert!(
        b.stats.fallback_used() && m.stats.fallback_used(),
        "{b:?} {m:?}"
    );
}
