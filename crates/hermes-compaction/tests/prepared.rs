//! A summary prepared ahead (`compression.prepare_at`): started past the soft threshold off
//! the agent's path, applied at the trigger when the span and the session are unchanged, and
//! discarded (with its cost reported) when they are not; a slow or failing candidate never
//! fails or holds up a turn.

use hermes_compaction::OneShot;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use compaction_core::{Estimator, Message, Transcript, laws};
use compaction_llm::{Error, Summarizer, SummaryFuture, SummaryRequest, SummaryResponse, Usage};
use compaction_store::{Commit, Store, TranscriptStore};
use hermes_compaction::compressor::Persistence;
use hermes_compaction::{
    BatchReport, Compressor, Config, DiscardReason, FailureKind, Outcome, PreparedOutcome,
};
use tokio::sync::Semaphore;

use crate::common::{builder_with, capture_logs, config, rt};

/// Tokens each summary reports (prompt plus completion).
const SUMMARY_TOKENS: u64 = 1_100;

/// A summarizer that counts its calls, fails the first `failures` of them, and (with a gate)
/// lets each call finish only once the test adds a permit.
#[derive(Default)]
struct Gated {
    calls: AtomicUsize,
    failures: AtomicUsize,
    gate: Option<Arc<Semaphore>>,
}

impl Gated {
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Summarizer for Gated {
    fn name(&self) -> &str {
        "gated"
    }

    fn summarize<'a>(&'a self, _req: &'a SummaryRequest) -> SummaryFuture<'a> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if let Some(gate) = &self.gate {
                gate.acquire().await.expect("gate open").forget();
            }
            if n < self.failures.load(Ordering::SeqCst) {
                return Err(Error::Transient { status: Some(502) });
            }
            Ok(SummaryResponse {
                text: format!("## Goal\n- review the modules (summary {n})\n"),
                model: "gated".into(),
                usage: Some(Usage {
                    prompt_tokens: 1_000,
                    completion_tokens: SUMMARY_TOKENS - 1_000,
                }),
                extractive: false,
                fallback: None,
            })
        })
    }
}

/// An 8K window (threshold 5,600 tokens), summaries prepared from 80% of it, no fallback (a
/// failed call fails).
fn prepared_config() -> Config {
    let mut cfg = config(8_000);
    cfg.compression.prepare_at = 0.8;
    cfg.compression.fallback_to_extractive = false;
    cfg
}

/// One turn of chat (about 120 tokens): nothing to prune, so passes summarize.
fn turn(i: usize) -> [Message; 2] {
    [
        Message::user(format!("ask {i}: {}", "please review module ".repeat(20))),
        Message::assistant(format!(
            "answer {i}: {}",
            "the module looks fine ".repeat(20)
        )),
    ]
}

/// Agent turns until `stop` says so after a `before_request` (given the compressor and its
/// report), or 200 turns. Returns the last report that ran.
async fn turns_until(
    c: &mut Compressor,
    t: &mut Transcript,
    next: &mut usize,
    mut stop: impl FnMut(&Compressor, &Option<BatchReport>) -> bool,
) -> Option<BatchReport> {
    for _ in 0..200 {
        let [ask, answer] = turn(*next);
        *next += 1;
        t.push(ask, c.status().counter);
        let (_ticket, report) = c.before_request(t).await;
        // The model's answer takes a while: the prepared task gets to run.
        tokio::task::yield_now().await;
        t.push(answer, c.status().counter);
        if stop(c, &report) {
            return report;
        }
    }
    panic!("the condition was never met");
}

fn started(c: &Compressor, _: &Option<BatchReport>) -> bool {
    c.status().has_prepared
}

fn ran(_: &Compressor, r: &Option<BatchReport>) -> bool {
    r.is_some()
}

fn assert_laws(before: &[Message], t: &Transcript, r: &BatchReport) {
    let v = laws::check(before, t.messages(), &r.law, &Estimator::default());
    assert!(v.is_empty(), "{:?}: {v:?}", r.outcome);
}

#[test]
fn nothing_is_prepared_when_off() {
    let s = Arc::new(Gated::default());
    let mut cfg = prepared_config();
    cfg.compression.prepare_at = 0.0;
    let mut c = builder_with(cfg, s.clone()).build().unwrap();
    let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
    rt().block_on(async {
        let mut next = 0;
        let r = turns_until(&mut c, &mut t, &mut next, ran).await.unwrap();
        assert_eq!(r.outcome, Outcome::Summarized);
        assert_eq!(r.detail.prepared, None);
    });
    assert_eq!(c.status().prepared_totals.started, 0);
    assert_eq!(s.calls(), 1);
}

#[test]
fn a_prepared_summary_is_used_when_the_span_is_unchanged() {
    let s = Arc::new(Gated::default());
    let mut c = builder_with(prepared_config(), s.clone()).build().unwrap();
    let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
    rt().block_on(async {
        let mut next = 0;
        assert!(
            turns_until(&mut c, &mut t, &mut next, started)
                .await
                .is_none(),
            "started below the threshold, without a pass"
        );
        let soft = (c.status().threshold_tokens as f64 * 0.8) as u64;
        assert!(t.current_tokens() >= soft && t.current_tokens() < c.status().threshold_tokens);
        // The agent goes on: the transcript grows past the threshold.
        let report = turns_until(&mut c, &mut t, &mut next, ran).await.unwrap();
        assert_eq!(report.outcome, Outcome::Summarized, "{report:?}");
        let p = report.detail.prepared.expect("a candidate was waiting");
        assert_eq!(p.outcome, PreparedOutcome::Used);
        assert_eq!(p.summary_tokens, SUMMARY_TOKENS);
        assert_eq!(report.stats.summary_tokens, SUMMARY_TOKENS);
        assert!(report.stats.tokens_after < report.threshold_tokens);
    });
    // One call only: the one made ahead.
    assert_eq!(s.calls(), 1);
    let totals = c.status().prepared_totals;
    assert_eq!((totals.started, totals.used, totals.discarded), (1, 1, 0));
    assert_eq!(totals.wasted_tokens, 0);
    assert!(
        t.messages()
            .iter()
            .any(|m| m.text().contains("review the modules (summary 0)")),
        "the prepared summary is in the transcript"
    );
}

#[test]
fn a_used_candidate_keeps_the_laws_and_what_came_after_it_verbatim() {
    let s = Arc::new(Gated::default());
    let mut c = builder_with(prepared_config(), s.clone()).build().unwrap();
    let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
    rt().block_on(async {
        let mut next = 0;
        turns_until(&mut c, &mut t, &mut next, started).await;
        // Up to the turn that crosses the threshold, then the pass on its own.
        loop {
            let [ask, answer] = turn(next);
            next += 1;
            t.push(ask, c.status().counter);
            if t.current_tokens() >= c.status().threshold_tokens {
                break;
            }
            let (_, r) = c.before_request(&mut t).await;
            assert!(r.is_none());
            tokio::task::yield_now().await;
            t.push(answer, c.status().counter);
        }
        let before = t.messages().to_vec();
        let (_, report) = c.before_request(&mut t).await;
        let report = report.unwrap();
        assert_eq!(
            report.detail.prepared.map(|p| p.outcome),
            Some(PreparedOutcome::Used)
        );
        assert_laws(&before, &t, &report);
        // The latest messages (appended after the candidate started) are untouched.
        let n = before.len();
        assert_eq!(t.messages()[t.len() - 4..], before[n - 4..]);
    });
}

#[test]
fn a_prepared_summary_is_discarded_when_the_span_changed() {
    let s = Arc::new(Gated::default());
    let mut c = builder_with(prepared_config(), s.clone()).build().unwrap();
    let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
    rt().block_on(async {
        let mut next = 0;
        turns_until(&mut c, &mut t, &mut next, started).await;
        // Let the candidate finish, then the host rewrites an old message inside its span.
        tokio::task::yield_now().await;
        t.replace(
            5,
            Message::user("ask 2: a different question altogether"),
            c.status().counter,
        );
        // At the trigger the candidate no longer describes the transcript: it is discarded
        // (paid for: it had finished), and, the prompt fitting the window, the trigger starts
        // the candidate of its own pass and lets the request go; the next request uses it.
        let report = turns_until(&mut c, &mut t, &mut next, ran).await.unwrap();
        assert_eq!(report.outcome, Outcome::Summarized, "{report:?}");
        let p = report.detail.prepared.expect("a candidate was waiting");
        assert_eq!(p.outcome, PreparedOutcome::Used);
        assert_eq!(report.stats.summary_tokens, SUMMARY_TOKENS);
    });
    assert_eq!(s.calls(), 2);
    let totals = c.status().prepared_totals;
    assert_eq!((totals.started, totals.used, totals.discarded), (2, 1, 1));
    assert_eq!(totals.wasted_tokens, SUMMARY_TOKENS, "it had finished");
}

/// A trigger met with no candidate (the prompt jumped past the soft threshold and the
/// trigger in one request) starts one and lets that request go while it fits the window;
/// the pass comes at the next request, from the candidate, without a call of its own.
#[test]
fn a_trigger_without_a_candidate_is_deferred_to_the_next_request() {
    let s = Arc::new(Gated::default());
    let mut cfg = prepared_config();
    // A soft zone too narrow for a 120-token turn to land in.
    cfg.compression.prepare_at = 0.99;
    let mut c = builder_with(cfg, s.clone()).build().unwrap();
    let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
    let threshold = c.status().threshold_tokens;
    rt().block_on(async {
        let mut next = 0;
        let mut deferred = false;
        let report = turns_until(&mut c, &mut t, &mut next, |c, r| {
            if r.is_none() && c.status().has_prepared {
                deferred = true;
            }
            r.is_some()
        })
        .await
        .unwrap();
        assert!(deferred);
        assert!(report.stats.tokens_before >= threshold);
        assert_eq!(report.outcome, Outcome::Summarized, "{report:?}");
        assert_eq!(
            report.detail.prepared.map(|p| p.outcome),
            Some(PreparedOutcome::Used)
        );
    });
    assert_eq!(s.calls(), 1, "the pass made no call of its own");
    assert_eq!(c.status().prepared_totals.used, 1);
}

/// Without room in the window the trigger is not deferred: the pass runs at once.
#[test]
fn a_trigger_is_never_deferred_past_the_window() {
    let s = Arc::new(Gated::default());
    let mut cfg = prepared_config();
    cfg.compression.prepare_at = 0.99;
    // A threshold past 90% of the effective window: a request over it may not go
    // uncompacted.
    cfg.compression.threshold = 0.95;
    let mut c = builder_with(cfg, s.clone()).build().unwrap();
    let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
    rt().block_on(async {
        let mut next = 0;
        let report = turns_until(&mut c, &mut t, &mut next, ran).await.unwrap();
        assert_eq!(report.outcome, Outcome::Summarized, "{report:?}");
        assert_eq!(report.detail.prepared, None);
    });
    assert_eq!(c.status().prepared_totals.started, 0);
}

#[test]
fn a_failing_or_slow_prepared_call_never_fails_or_holds_up_a_turn() {
    // The prepared call hangs until the test lets it go: the turns go on meanwhile.
    let gate = Arc::new(Semaphore::new(0));
    let s = Arc::new(Gated {
        gate: Some(gate.clone()),
        ..Gated::default()
    });
    let mut c = builder_with(prepared_config(), s.clone()).build().unwrap();
    let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
    rt().block_on(async {
        let mut next = 0;
        turns_until(&mut c, &mut t, &mut next, started).await;
        let mut turns = 0;
        // Turns below the trigger return while the call is still running.
        while t.current_tokens() + 300 < c.status().threshold_tokens {
            turns += 1;
            let [ask, answer] = turn(next);
            next += 1;
            t.push(ask, c.status().counter);
            let (_, r) = c.before_request(&mut t).await;
            assert!(r.is_none());
            t.push(answer, c.status().counter);
        }
        assert!(turns > 0);
        assert_eq!(s.calls(), 1, "one call, still running");
        // Released late (just before the trigger): the pass uses it.
        gate.add_permits(100);
        let report = turns_until(&mut c, &mut t, &mut next, ran).await.unwrap();
        assert_eq!(
            report.detail.prepared.map(|p| p.outcome),
            Some(PreparedOutcome::Used)
        );
    });
    assert_eq!(s.calls(), 1);

    // A prepared call that fails: discarded, the pass then calls as usual and succeeds, and
    // the turn never sees the failure.
    let s = Arc::new(Gated::default());
    s.failures.store(1, Ordering::SeqCst);
    let mut c = builder_with(prepared_config(), s.clone()).build().unwrap();
    let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
    rt().block_on(async {
        let mut next = 0;
        turns_until(&mut c, &mut t, &mut next, started).await;
        let report = turns_until(&mut c, &mut t, &mut next, ran).await.unwrap();
        assert_eq!(report.outcome, Outcome::Summarized, "{report:?}");
        assert_eq!(report.failure, None);
        let p = report.detail.prepared.expect("a candidate was waiting");
        assert_eq!(p.outcome, PreparedOutcome::Discarded(DiscardReason::Failed));
        assert_eq!(p.wasted_tokens(), 0);
    });
    // One transient failure is below `breaker_failures`: the pass called again.
    assert_eq!(s.calls(), 2);
}

/// Another writer compacts the session while a candidate waits: the commit of the pass that
/// uses it is refused (stale generation), nothing changes, and the report says the candidate
/// lost the race. After a reload, a candidate from before is discarded as stale.
#[test]
fn a_prepared_summary_that_lost_a_race_is_refused_by_the_store() {
    rt().block_on(async {
        let store = Store::connect("sqlite::memory:").await.unwrap();
        let dyn_store: Arc<dyn TranscriptStore> = store.clone().into_dyn();
        dyn_store.create_session("s").await.unwrap();
        let (persistence, messages) = Persistence::load(dyn_store.clone(), "s").await.unwrap();
        let s = Arc::new(Gated::default());
        let mut c = builder_with(prepared_config(), s.clone())
            .store(persistence)
            .build()
            .unwrap();
        let mut t = c.transcript(messages);
        t.push(
            Message::system("You are a coding agent."),
            c.status().counter,
        );
        let mut next = 0;
        turns_until(&mut c, &mut t, &mut next, started).await;
        c.flush(&mut t).await.unwrap();
        // Up to just before the trigger, flushing each turn.
        while t.current_tokens() + 300 < c.status().threshold_tokens {
            let [ask, answer] = turn(next);
            next += 1;
            t.push(ask, c.status().counter);
            assert!(c.before_request(&mut t).await.1.is_none());
            t.push(answer, c.status().counter);
            c.flush(&mut t).await.unwrap();
        }
        // Another process drops one row of the session.
        let (rows, generation) = dyn_store.load_active_with_generation("s").await.unwrap();
        let edit = compaction_core::Edit::single(rows.len() - 1..rows.len(), vec![]);
        let mut commit = Commit::from_edit(generation, &edit, &rows).unwrap();
        dyn_store
            .archive_and_compact("s", &mut commit)
            .await
            .unwrap();

        let before = t.messages().to_vec();
        let report = turns_until(&mut c, &mut t, &mut next, ran).await.unwrap();
        assert_eq!(report.outcome, Outcome::Failed, "{report:?}");
        assert_eq!(report.failure_kind(), Some(FailureKind::StaleGeneration));
        let p = report.detail.prepared.expect("a candidate was waiting");
        assert_eq!(
            p.outcome,
            PreparedOutcome::Discarded(DiscardReason::LostRace)
        );
        assert_eq!(p.wasted_tokens(), SUMMARY_TOKENS);
        assert_eq!(
            &t.messages()[..before.len()],
            &before[..],
            "nothing changed"
        );
        assert_eq!(s.calls(), 1, "no second call: it would lose the same race");

        // Recover, and carry on: the next pass is made.
        c.reload(&mut t).await.unwrap();
        assert!(
            !c.status().has_prepared,
            "the candidate was settled at the trigger"
        );
        let report = turns_until(&mut c, &mut t, &mut next, ran).await.unwrap();
        assert_eq!(report.outcome, Outcome::Summarized, "{report:?}");
        assert_eq!(report.failure, None);

        // A candidate started before a reload is stale after it: the next hook drops it
        // (generation changed) and starts afresh.
        turns_until(&mut c, &mut t, &mut next, started).await;
        let totals = c.status().prepared_totals;
        c.flush(&mut t).await.unwrap();
        c.reload(&mut t).await.unwrap();
        let [ask, _] = turn(next);
        t.push(ask, c.status().counter);
        assert!(c.before_request(&mut t).await.1.is_none());
        let after = c.status().prepared_totals;
        assert_eq!(after.discarded, totals.discarded + 1);
        assert_eq!(after.started, totals.started + 1);
        assert!(c.status().has_prepared);
    });
}

/// A pass the candidate does not serve (a `/compress` with a focus topic) discards it.
#[test]
fn a_candidate_a_pass_cannot_use_is_discarded() {
    let s = Arc::new(Gated::default());
    let mut c = builder_with(prepared_config(), s.clone()).build().unwrap();
    let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
    rt().block_on(async {
        let mut next = 0;
        turns_until(&mut c, &mut t, &mut next, started).await;
        tokio::task::yield_now().await;
        // A user's /compress with a focus: the candidate does not serve it.
        let r = c
            .one_shot(
                &mut t,
                OneShot::Batch {
                    focus: Some("module 3".into()),
                },
            )
            .await
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Summarized, "{r:?}");
        assert_eq!(
            r.detail.prepared.map(|p| p.outcome),
            Some(PreparedOutcome::Discarded(DiscardReason::Superseded))
        );
    });
    let totals = c.status().prepared_totals;
    assert_eq!((totals.used, totals.discarded), (0, 1));
    assert_eq!(totals.wasted_tokens, SUMMARY_TOKENS);
}

#[test]
fn prepare_at_is_bounded() {
    let mut cfg = Config::default();
    cfg.compression.prepare_at = 1.2;
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("compression.prepare_at"), "{e}");
    cfg.compression.prepare_at = 0.8;
    cfg.validate().unwrap();
}

/// A 32K window whose threshold (a quarter of it, 8,000 tokens) leaves room under the window
/// (90% of it, 28,800 tokens) for a request more than a threshold past a candidate's span:
/// such a candidate, applied, cannot land under the threshold (insufficient), whatever its
/// summary.
fn roomy_config() -> Config {
    let mut cfg = config(32_000);
    cfg.compression.threshold = 0.25;
    cfg.compression.threshold_floor_tokens = 0;
    cfg.compression.small_window_min_threshold = 0.25;
    cfg.compression.prepare_at = 0.3;
    cfg.compression.fallback_to_extractive = false;
    cfg
}

/// The tokens over which a request may go uncompacted (`NEAR_WINDOW_RATIO` of the window).
fn window_tokens(c: &Compressor) -> u64 {
    (c.status().config.window().effective_window() as f64
        * hermes_compaction::compressor::NEAR_WINDOW_RATIO) as u64
}

/// After an answer, the agent works through turns without a request (a tool loop the host
/// does not check) until the transcript holds `tokens`, then asks: the request that follows
/// is that far past whatever a candidate waiting since saw.
fn burst(c: &Compressor, t: &mut Transcript, next: &mut usize, tokens: u64) {
    while t.current_tokens() < tokens {
        for m in turn(*next) {
            t.push(m, c.status().counter);
        }
        *next += 1;
    }
    let [ask, _] = turn(*next);
    *next += 1;
    t.push(ask, c.status().counter);
}

/// The model's answer to the last ask.
fn answer(c: &Compressor, t: &mut Transcript, next: usize) {
    let [_, answer] = turn(next - 1);
    t.push(answer, c.status().counter);
}

fn insufficient() -> Option<PreparedOutcome> {
    Some(PreparedOutcome::Discarded(DiscardReason::Insufficient))
}

/// Up to a candidate that has finished, then a request a threshold past it (within the
/// window): the candidate, applied, would leave the transcript over the threshold.
async fn up_to_an_insufficient_candidate(
    c: &mut Compressor,
    t: &mut Transcript,
    next: &mut usize,
    s: &Gated,
) {
    turns_until(c, t, next, started).await;
    tokio::task::yield_now().await;
    assert_eq!(s.calls(), 1, "the candidate's call");
    let to = t.current_tokens() + c.status().threshold_tokens;
    burst(c, t, next, to);
}

/// A candidate that, applied at the trigger, would leave the transcript over the threshold
/// (insufficient) is a trigger without a usable candidate: it is discarded (wasted, and
/// counted), the trigger starts the candidate of its own pass and lets the request go with no
/// report, and the next request's pass applies that one without a summarizer call of its own.
#[test]
fn an_insufficient_candidate_puts_the_trigger_off_to_a_new_one() {
    let s = Arc::new(Gated::default());
    let mut c = builder_with(roomy_config(), s.clone()).build().unwrap();
    let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
    let threshold = c.status().threshold_tokens;
    let ((), logs) = capture_logs(async || {
        let mut next = 0;
        up_to_an_insufficient_candidate(&mut c, &mut t, &mut next, &s).await;
        assert!(t.current_tokens() <= window_tokens(&c));
        let (_, report) = c.before_request(&mut t).await;
        assert!(report.is_none(), "put off, no pass: {report:?}");
        let status = c.status();
        let last = status.last_prepared.expect("the candidate was settled");
        assert_eq!(Some(last.outcome), insufficient());
        assert_eq!(last.wasted_tokens(), SUMMARY_TOKENS);
        let totals = status.prepared_totals;
        assert_eq!((totals.started, totals.used, totals.discarded), (2, 0, 1));
        assert_eq!(totals.wasted_tokens, SUMMARY_TOKENS);
        assert!(status.has_prepared, "the pass's own candidate");
        assert_eq!(s.calls(), 1, "nothing called on the request's path");
        // The model answers meanwhile: the new candidate's call is made off the path.
        tokio::task::yield_now().await;
        assert_eq!(s.calls(), 2);
        answer(&c, &mut t, next);
        let [ask, _] = turn(next);
        t.push(ask, c.status().counter);
        let before = t.messages().to_vec();
        let (_, report) = c.before_request(&mut t).await;
        let report = report.expect("the pass lands at the next request");
        assert_eq!(report.outcome, Outcome::Summarized, "{report:?}");
        assert_eq!(
            report.detail.prepared.map(|p| p.outcome),
            Some(PreparedOutcome::Used)
        );
        assert!(report.stats.tokens_after < threshold);
        assert_laws(&before, &t, &report);
    });
    assert_eq!(s.calls(), 2, "the pass made no call of its own");
    let totals = c.status().prepared_totals;
    assert_eq!((totals.started, totals.used, totals.discarded), (2, 1, 1));
    // The put-off attempt's telemetry line still names the candidate and what it cost.
    let lines: Vec<_> = logs
        .iter()
        .filter_map(|(_, m)| m.strip_prefix("context compression attempt telemetry: "))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let line: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(line["outcome"], "skipped", "{line}");
    assert_eq!(line["prepared"], "discarded_insufficient", "{line}");
    assert_eq!(line["prepared_wasted_tokens"], SUMMARY_TOKENS, "{line}");
    assert_eq!(line["tokens_after"], line["tokens_before"], "{line}");
}

/// Once per trigger: when the candidate the trigger was put off for is insufficient too,
/// the next request's pass summarizes at once. The next trigger may be put off again.
#[test]
fn a_trigger_is_put_off_once_even_when_the_next_candidate_is_insufficient_too() {
    let s = Arc::new(Gated::default());
    let mut c = builder_with(roomy_config(), s.clone()).build().unwrap();
    let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
    let threshold = c.status().threshold_tokens;
    rt().block_on(async {
        let mut next = 0;
        up_to_an_insufficient_candidate(&mut c, &mut t, &mut next, &s).await;
        assert!(c.before_request(&mut t).await.1.is_none(), "put off");
        tokio::task::yield_now().await;
        assert_eq!(s.calls(), 2);
        // The next request is a threshold past the new candidate too, still in the window.
        answer(&c, &mut t, next);
        let to = t.current_tokens() + threshold;
        burst(&c, &mut t, &mut next, to);
        assert!(t.current_tokens() <= window_tokens(&c));
        let (_, report) = c.before_request(&mut t).await;
        let report = report.expect("not put off twice");
        assert_eq!(report.outcome, Outcome::Summarized, "{report:?}");
        let p = report.detail.prepared.expect("a candidate was waiting");
        assert_eq!(Some(p.outcome), insufficient());
        assert_eq!(p.wasted_tokens(), SUMMARY_TOKENS);
        assert!(s.calls() > 2, "the pass called the summarizer itself");
        let totals = c.status().prepared_totals;
        assert_eq!((totals.started, totals.used, totals.discarded), (2, 0, 2));
        assert_eq!(totals.wasted_tokens, 2 * SUMMARY_TOKENS);
        assert!(!c.status().has_prepared);

        // The pass ended that trigger: the next one, insufficient again, is put off again.
        tokio::task::yield_now().await;
        answer(&c, &mut t, next);
        let calls = s.calls();
        turns_until(&mut c, &mut t, &mut next, started).await;
        tokio::task::yield_now().await;
        assert_eq!(s.calls(), calls + 1);
        let to = t.current_tokens() + threshold;
        burst(&c, &mut t, &mut next, to);
        assert!(t.current_tokens() <= window_tokens(&c));
        assert!(c.before_request(&mut t).await.1.is_none(), "put off");
        assert_eq!(c.status().prepared_totals.discarded, 3);
    });
}

/// An overflow pass, a prompt over the window and a manual pass are never put off: with an
/// insufficient candidate they summarize at once and start none.
#[test]
fn an_overflow_or_a_prompt_over_the_window_is_never_put_off() {
    enum Case {
        Overflow,
        OverWindow,
        Manual,
    }
    for case in [Case::Overflow, Case::OverWindow, Case::Manual] {
        let s = Arc::new(Gated::default());
        let mut c = builder_with(roomy_config(), s.clone()).build().unwrap();
        let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
        rt().block_on(async {
            let mut next = 0;
            up_to_an_insufficient_candidate(&mut c, &mut t, &mut next, &s).await;
            let report = match case {
                Case::Overflow => c.on_context_overflow(&mut t).await.expect("an attempt"),
                Case::OverWindow => {
                    let window = window_tokens(&c);
                    answer(&c, &mut t, next);
                    burst(&c, &mut t, &mut next, window + 1);
                    c.before_request(&mut t).await.1.expect("the pass, at once")
                }
                Case::Manual => c
                    .one_shot(&mut t, OneShot::Batch { focus: None })
                    .await
                    .into_batch()
                    .unwrap(),
            };
            assert_eq!(report.outcome, Outcome::Summarized, "{report:?}");
            assert_eq!(report.detail.prepared.map(|p| p.outcome), insufficient());
        });
        assert!(s.calls() > 1, "the pass called the summarizer itself");
        let totals = c.status().prepared_totals;
        assert_eq!((totals.started, totals.discarded), (1, 1), "none started");
        assert!(!c.status().has_prepared);
    }
}
