//! Persistence through the compressor: `flush` mid-session, overflow passes that go on when
//! the store fails (and the resync after them), and store failure causes in reports and logs.

use hermes_compaction::{OneShot, ReclaimGate, Usage};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use compaction_core::{Message, ToolCall, Transcript};
use compaction_llm::{Error, ScriptedSummarizer};
use compaction_store::{FaultPoint, Store, TranscriptStore};
use hermes_compaction::compressor::Persistence;
use hermes_compaction::{Compressor, FailureKind, Outcome};

use crate::common::{
    builder, builder_with, capture_logs, config, extractive, rt, stores, tool_session,
};

fn persistence(store: &Store, session: &str) -> Persistence {
    Persistence {
        store: store.clone().into_dyn(),
        session: session.into(),
        generation: 0,
    }
}

fn wire(m: &[Message]) -> Vec<String> {
    m.iter().map(Message::to_wire_json).collect()
}

/// The store's active rows are exactly the transcript, row ids included.
async fn assert_mirrored(store: &Store, session: &str, t: &Transcript, at: &str) {
    let active = store.load_active(session).await.unwrap();
    assert_eq!(
        active.len(),
        t.len(),
        "{at}: active rows vs transcript length"
    );
    assert_eq!(wire(&active), wire(t.messages()), "{at}");
    let ids = |m: &[Message]| m.iter().map(Message::row_id).collect::<Vec<_>>();
    assert_eq!(ids(&active), ids(t.messages()), "{at}: row ids");
}

/// The pattern of issue 15: an agent loop that persists mid-session after every append, with
/// micro passes after each turn and tool round, batch passes before requests and overflow
/// recovery. Rows are never duplicated, every commit succeeds (so nothing cools down), and no
/// request exceeds the window.
#[test]
fn flushing_mid_session_never_duplicates_rows() {
    const CONTEXT: u64 = 32_000;
    rt().block_on(async {
        for store in stores("flush_mid_session").await {
            store.create_session("agent").await.unwrap();
            let mut cfg = config(CONTEXT);
            cfg.compression.micro_compact = true;
            // Every pass the loop can make, ungated by the cache economics.
            cfg.compression.cache_profile = "none".into();
            let mut c = builder(cfg)
                .store(persistence(&store, "agent"))
                .build()
                .unwrap();
            let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
            assert_eq!(c.flush(&mut t).await.unwrap(), 1);
            let mut reports = Vec::new();
            let mut largest = 0;
            let mut micro_passes = 0;
            for turn in 0..30 {
                if turn % 10 == 9 {
                    // A `/compress` now and then: batch commits mid-session too.
                    reports.push(
                        c.one_shot(&mut t, OneShot::batch())
                            .await
                            .into_batch()
                            .unwrap(),
                    );
                }
                t.push(
                    Message::user(format!("request {turn}: fix it")),
                    c.status().counter,
                );
                assert_eq!(c.flush(&mut t).await.unwrap(), 1);
                // Idempotent: nothing new, nothing written.
                assert_eq!(c.flush(&mut t).await.unwrap(), 0);
                for round in 0..4 {
                    let (ticket, r) = c.before_request(&mut t).await;
                    reports.extend(r);
                    let mut prompt = t.current_tokens();
                    while prompt > CONTEXT {
                        let r = c
                            .on_context_overflow(&mut t)
                            .await
                            .expect("an attempt left");
                        reports.push(r);
                        prompt = t.current_tokens();
                    }
                    largest = largest.max(prompt);
                    reports.extend(
                        c.after_response(&mut t, ticket, Usage::prompt(prompt))
                            .await,
                    );
                    let id = format!("call_{turn}_{round}");
                    t.push(
                        Message::assistant_tool_calls(
                            "",
                            vec![ToolCall::function(&id, "bash", r#"{"command":"make"}"#)],
                        ),
                        c.status().counter,
                    );
                    t.push(
                        Message::tool_result(&id, format!("line {turn} {round}\n").repeat(150)),
                        c.status().counter,
                    );
                    assert_eq!(c.flush(&mut t).await.unwrap(), 2);
                    if let Some(r) = c.after_tool_round(&mut t).await {
                        assert_eq!(r.failure, None, "{r:?}");
                        micro_passes += usize::from(r.stats.earliest_changed_index.is_some());
                    }
                    assert_mirrored(&store, "agent", &t, &format!("turn {turn} round {round}"))
                        .await;
                }
                t.push(
                    Message::assistant(format!("done {turn}")),
                    c.status().counter,
                );
                c.flush(&mut t).await.unwrap();
                if let Some(r) = c.finalize_turn(&mut t).await {
                    assert_eq!(r.failure, None, "{r:?}");
                    micro_passes += usize::from(r.stats.earliest_changed_index.is_some());
                }
                assert_mirrored(&store, "agent", &t, &format!("end of turn {turn}")).await;
            }
            assert!(largest <= CONTEXT, "{largest}");
            let passes = reports
                .iter()
                .filter(|r| matches!(r.outcome, Outcome::Summarized | Outcome::Pruned))
                .count();
            assert!(passes >= 3 && micro_passes > 0, "{passes} {micro_passes}");
            for r in &reports {
                assert!(
                    r.failure.is_none() && r.outcome != Outcome::Skipped,
                    "{r:?}"
                );
            }
            assert!(c.status().state.cooldown_until_ms.is_none());
            assert!(c.status().in_sync(&t));
            crate::common::finish(store).await;
        }
    });
}

static NOW: AtomicU64 = AtomicU64::new(5_000_000);

#[test]
fn an_overflow_pass_ignores_the_cooldown_and_the_pause() {
    let rt = rt();
    let s = Arc::new(ScriptedSummarizer::new());
    let mut cfg = config(16_000);
    cfg.compression.fallback_to_extractive = false;
    let mut c = builder_with(cfg, s.clone())
        .clock(|| NOW.load(Ordering::SeqCst))
        .build()
        .unwrap();
    s.fail_always(Some(Error::Transient { status: Some(503) }));
    // The estimate fits the window (a transcript over it is compacted before the request even
    // while cooling down, issue 20 item 4); the provider counts more and refuses.
    let mut t = c.transcript(crate::common::over_threshold_within_window(&c, 100));
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert_eq!(r.unwrap().outcome, Outcome::Failed);
    assert!(c.status().state.cooldown_until_ms.is_some());
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert_eq!(r.unwrap().outcome, Outcome::Skipped);
    // The provider refuses the request: the overflow hook tries at once.
    s.fail_always(None);
    let before = t.current_tokens();
    let r = rt.block_on(c.on_context_overflow(&mut t)).unwrap();
    assert_eq!(r.outcome, Outcome::Summarized, "{r:?}");
    assert!(t.current_tokens() < before);

    // Paused by anti-thrash: the same.
    let mut c = builder_with(config(16_000), s.clone())
        .clock(|| NOW.load(Ordering::SeqCst))
        .state(hermes_compaction::ThrashState {
            paused_until_ms: Some(NOW.load(Ordering::SeqCst) + 60_000),
            ..Default::default()
        })
        .build()
        .unwrap();
    let mut t = c.transcript(crate::common::over_threshold_within_window(&c, 100));
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert_eq!(r.unwrap().outcome, Outcome::Skipped);
    let r = rt.block_on(c.on_context_overflow(&mut t)).unwrap();
    assert_eq!(r.outcome, Outcome::Summarized, "{r:?}");
    // Still bounded by max_attempts.
    for _ in 1..c.status().config.compression.max_attempts {
        assert!(rt.block_on(c.on_context_overflow(&mut t)).is_some());
    }
    assert!(rt.block_on(c.on_context_overflow(&mut t)).is_none());
}

/// A store failure during an overflow pass: the pass is applied in memory, the report says it
/// was not persisted and why, and the next flush resynchronises the store (nothing lost).
#[test]
fn an_overflow_pass_goes_on_when_the_store_fails_and_the_store_resyncs() {
    let ((), logs) = capture_logs(async || {
        for store in stores("overflow_store_failure").await {
            store.create_session("s").await.unwrap();
            let mut c = builder(config(16_000))
                .store(persistence(&store, "s"))
                .build()
                .unwrap();
            let mut t = c.transcript(tool_session(120, 100));
            c.flush(&mut t).await.unwrap();
            let appended = t.len();
            store.inject_fault(FaultPoint::AfterArchive);
            let before = t.current_tokens();
            let r = c.on_context_overflow(&mut t).await.unwrap();
            assert_eq!(r.outcome, Outcome::Summarized, "{r:?}");
            assert!(r.detail.applied_unpersisted);
            assert_eq!(r.failure_kind(), Some(FailureKind::Store));
            assert_eq!(r.failure_cause(), Some("injected fault"));
            assert!(t.current_tokens() < before);
            assert!(!c.status().in_sync(&t));
            // No cooldown: the pass did what the agent needed.
            assert!(c.status().state.cooldown_until_ms.is_none());
            // The store still holds the rows from before the pass.
            assert_eq!(store.load_active("s").await.unwrap().len(), appended);

            // The agent goes on appending; the next flush resyncs.
            t.push(Message::user("next request"), c.status().counter);
            let written = c.flush(&mut t).await.unwrap();
            assert!(written > 0);
            assert!(c.status().in_sync(&t));
            assert_mirrored(&store, "s", &t, "after the resync").await;
            assert_eq!(c.flush(&mut t).await.unwrap(), 0);
            // Law 9: every message ever appended is still in the store.
            let all = store.load_all("s").await.unwrap();
            assert_eq!(
                all.len(),
                appended + 1 + 1,
                "one marker and one user message added"
            );
            // Later passes commit normally.
            for m in tool_session(60, 100).into_iter().skip(1) {
                t.push(m, c.status().counter);
            }
            let r = c
                .one_shot(&mut t, OneShot::batch())
                .await
                .into_batch()
                .unwrap();
            assert_eq!(
                (r.outcome, r.failure_kind()),
                (Outcome::Summarized, None),
                "{r:?}"
            );
            assert_mirrored(&store, "s", &t, "after the next pass").await;
            crate::common::finish(store).await;
        }
    });
    assert!(
        logs.iter()
            .any(|(_, m)| m.contains("compaction store commit failed: injected fault")),
        "{logs:?}"
    );
}

/// The resync refuses to overwrite another writer's changes: the store stays as that writer
/// left it, the failure is reported, and the compressor keeps saying it is out of sync.
#[test]
fn a_resync_after_another_writer_changed_the_session_is_refused() {
    rt().block_on(async {
        let store = Store::connect("sqlite::memory:").await.unwrap();
        store.create_session("s").await.unwrap();
        let mut c = builder(config(16_000))
            .store(persistence(&store, "s"))
            .build()
            .unwrap();
        let mut t = c.transcript(tool_session(120, 100));
        c.flush(&mut t).await.unwrap();
        store.inject_fault(FaultPoint::AfterArchive);
        let r = c.on_context_overflow(&mut t).await.unwrap();
        assert!(r.detail.applied_unpersisted);
        // Another writer compacts the session meanwhile.
        let theirs = store.load_active("s").await.unwrap();
        let g = store.generation("s").await.unwrap();
        let edit = compaction_core::Edit::single(1..3, vec![]);
        let mut commit = compaction_store::Commit::from_edit(g, &edit, &theirs).unwrap();
        store.archive_and_compact("s", &mut commit).await.unwrap();
        let err = c.flush(&mut t).await.unwrap_err();
        assert!(!err.to_string().is_empty());
        assert!(!c.status().in_sync(&t));
        assert_eq!(
            store.load_active("s").await.unwrap().len(),
            theirs.len() - 2,
            "the other writer's state is kept"
        );
        // A later automatic pass fails cleanly (and the transcript is unchanged).
        let r = c
            .one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        assert!(r.failure.is_some(), "{r:?}");
        assert!(r.failure_cause().is_some());
    });
}

#[test]
fn a_failed_commit_reports_its_cause() {
    let ((), logs) = capture_logs(async || {
        let store = Store::connect("sqlite::memory:").await.unwrap();
        store.create_session("s").await.unwrap();
        let mut c = builder(config(16_000))
            .store(persistence(&store, "s"))
            .build()
            .unwrap();
        let mut t = c.transcript(tool_session(120, 100));
        let before = wire(t.messages());
        store.inject_fault(FaultPoint::AfterArchive);
        let r = c
            .one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Failed);
        assert_eq!(r.failure_kind(), Some(FailureKind::Store));
        assert_eq!(r.failure_cause(), Some("injected fault"));
        assert!(!r.detail.applied_unpersisted);
        assert_eq!(wire(t.messages()), before);
        assert!(c.status().in_sync(&t));
    });
    assert!(
        logs.iter()
            .any(|(_, m)| m.contains("compaction store commit failed: injected fault")),
        "{logs:?}"
    );
}

#[test]
fn flush_without_a_store_writes_nothing() {
    let rt = rt();
    let mut c: Compressor = extractive(config(16_000));
    let mut t = c.transcript(tool_session(3, 10));
    assert_eq!(rt.block_on(c.flush(&mut t)).unwrap(), 0);
    assert!(t.messages().iter().all(|m| m.row_id().is_none()));
}

/// A law check whose `before` was taken before the compressor flushed (stamping row ids on
/// every message) holds: metadata is not content.
#[test]
fn a_law_check_taken_before_a_flush_holds() {
    rt().block_on(async {
        let store = Store::connect("sqlite::memory:").await.unwrap();
        store.create_session("s").await.unwrap();
        let mut c = builder(config(16_000))
            .store(persistence(&store, "s"))
            .build()
            .unwrap();
        let mut t = c.transcript(tool_session(120, 100));
        let before = t.messages().to_vec();
        let r = c
            .one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Summarized);
        assert!(t.messages()[0].row_id().is_some(), "the pass flushed first");
        let v = compaction_core::laws::check(&before, t.messages(), &r.law, c.status().counter);
        assert!(v.is_empty(), "{v:?}");
        // And a failed pass after a flush: unchanged but for the stamped ids.
        let before = t.messages().to_vec();
        for m in tool_session(40, 100).into_iter().skip(1) {
            t.push(m, c.status().counter);
        }
        let before_len = before.len();
        let snapshot = t.messages().to_vec();
        store.inject_fault(FaultPoint::AfterArchive);
        let r = c
            .one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        assert!(r.failed());
        assert!(t.messages()[before_len].row_id().is_some());
        let v = compaction_core::laws::check(&snapshot, t.messages(), &r.law, c.status().counter);
        assert!(v.is_empty(), "{v:?}");
    });
}

#[test]
fn a_one_shot_run_keeps_the_store_failure_cause() {
    rt().block_on(async {
        let store = Store::connect("sqlite::memory:").await.unwrap();
        store.create_session("s").await.unwrap();
        let mut c = builder(config(16_000))
            .store(persistence(&store, "s"))
            .build()
            .unwrap();
        let mut t = c.transcript(tool_session(120, 100));
        store.inject_fault(FaultPoint::AfterArchive);
        let r = c.one_shot(&mut t, OneShot::batch()).await;
        assert!(r.failed());
        assert_eq!(r.failure_kind(), Some(FailureKind::Store));
        assert_eq!(r.failure_cause(), Some("injected fault"));
    });
}

/// A micro run whose commit fails names the generation the store holds, read back after the
/// failure: a commit whose acknowledgement was lost (the database died after committing) has
/// landed, and the report says so rather than counting it out; when the store cannot be read
/// either, the generation is reported unconfirmed, never guessed. The micro hooks' own report
/// carries the same read-back.
#[test]
fn a_failed_micro_commit_names_the_generation_the_store_holds() {
    use hermes_compaction::oneshot::one_shot_session;
    use hermes_compaction::{OneShot, StoreGeneration};
    rt().block_on(async {
        for store in stores("micro_generation").await {
            let dyn_store: Arc<dyn TranscriptStore> = store.clone().into_dyn();
            let mut messages = tool_session(120, 100);
            store.import_session("s", &mut messages).await.unwrap();
            let micro_mode = |n| OneShot::Micro {
                max_passes: Some(n),
            };
            // Every pass absorbs (no reclaim gate): the generations count the passes.
            let mut cfg = config(16_000);
            cfg.compression.micro_compact_min_reclaim_tokens = ReclaimGate::Off;
            let micro = |n| builder(cfg.clone()).one_shot(micro_mode(n));
            let run = one_shot_session(micro(3), dyn_store.clone(), "s", micro_mode(3))
                .await
                .unwrap();
            assert!(!run.report.failed(), "{run}");
            assert_eq!(
                (run.generation_before, run.generation_after),
                (0, 3),
                "{run}"
            );
            // The next commit lands but is reported failed.
            store.inject_fault(FaultPoint::AfterCommit);
            let run = one_shot_session(micro(3), dyn_store.clone(), "s", micro_mode(3))
                .await
                .unwrap();
            assert!(run.report.failed(), "{run}");
            let f = run.report.failure.clone().unwrap();
            assert_eq!(f.kind, FailureKind::Store);
            assert_eq!(f.store_generation, Some(StoreGeneration::Confirmed(4)));
            assert_eq!(store.generation("s").await.unwrap(), 4);
            assert_eq!(
                (run.generation_before, run.generation_after),
                (3, 4),
                "{run}"
            );
            assert!(run.generation_confirmed);
            assert!(run.to_string().ends_with(" generation=3->4"), "{run}");
            assert!(
                f.to_string().ends_with("; the store holds generation 4"),
                "{f}"
            );
            // The store cannot be read after the failure either: unconfirmed, not a guess.
            store.inject_fault(FaultPoint::AfterCommit);
            store.inject_fault(FaultPoint::GenerationRead);
            let run = one_shot_session(micro(3), dyn_store.clone(), "s", micro_mode(3))
                .await
                .unwrap();
            let f = run.report.failure.clone().unwrap();
            assert_eq!(
                f.store_generation,
                Some(StoreGeneration::Unconfirmed { last_known: 4 })
            );
            assert!(!run.generation_confirmed);
            assert!(
                run.to_string().ends_with(" generation=4->unconfirmed"),
                "{run}"
            );
            assert!(f.to_string().contains("unconfirmed"), "{f}");
            assert_eq!(store.generation("s").await.unwrap(), 5, "it had landed");

            // The agent-loop hook: the micro report itself names what the store holds, and the
            // transcript stays as it was (the next commit would be stale: reload).
            let mut cfg = config(16_000);
            cfg.compression.micro_compact = true;
            cfg.compression.cache_profile = "none".into();
            let (p, rows) = Persistence::load(dyn_store.clone(), "s").await.unwrap();
            let mut c = builder(cfg).store(p).build().unwrap();
            let mut t = c.transcript(rows);
            let before = wire(t.messages());
            store.inject_fault(FaultPoint::AfterCommit);
            let r = c.finalize_turn(&mut t).await.expect("a pass ran");
            assert_eq!(r.outcome.as_str(), "store_failed", "{r:?}");
            assert_eq!(
                r.failure.as_ref().and_then(|f| f.store_generation),
                Some(StoreGeneration::Confirmed(6))
            );
            assert_eq!(wire(t.messages()), before);
            crate::common::finish(store).await;
        }
    });
}

/// `one_shot_session` loads a stored session, commits its pass and reports the generations;
/// a failed commit is in the report with the generation unchanged; an unknown session and a
/// bad configuration are errors that commit nothing.
#[test]
fn a_stored_session_runs_one_shot() {
    use hermes_compaction::OneShot;
    use hermes_compaction::oneshot::{SessionOneShotError, one_shot_session};
    rt().block_on(async {
        for store in stores("one_shot_session").await {
            let dyn_store: Arc<dyn TranscriptStore> = store.clone().into_dyn();
            let mut messages = tool_session(120, 100);
            store.import_session("s", &mut messages).await.unwrap();
            let run = one_shot_session(
                builder(config(16_000)),
                dyn_store.clone(),
                "s",
                OneShot::batch(),
            )
            .await
            .unwrap();
            assert_eq!(run.report.outcome.as_str(), "summarized", "{run}");
            assert_eq!((run.generation_before, run.generation_after), (0, 1));
            assert_eq!(store.generation("s").await.unwrap(), 1);
            let active = store.load_active("s").await.unwrap();
            assert_eq!(active.len(), run.report.stats.messages_after);
            assert!(
                run.to_string()
                    .starts_with("session=s mode=batch outcome=summarized ")
            );
            // The next pass fails at its commit: reported, generation unchanged.
            let mut more = tool_session(60, 100)
                .into_iter()
                .skip(1)
                .collect::<Vec<_>>();
            store.append("s", &mut more).await.unwrap();
            store.inject_fault(FaultPoint::AfterArchive);
            let batch = builder(config(16_000));
            let run = one_shot_session(batch, dyn_store.clone(), "s", OneShot::batch())
                .await
                .unwrap();
            assert!(run.report.failed(), "{run}");
            assert_eq!(run.report.failure_cause(), Some("injected fault"));
            // The store was asked after the failure: the commit did not land.
            assert_eq!(
                run.report.failure.as_ref().and_then(|f| f.store_generation),
                Some(hermes_compaction::StoreGeneration::Confirmed(1))
            );
            assert_eq!((run.generation_before, run.generation_after), (1, 1));
            assert_eq!(store.generation("s").await.unwrap(), 1);
            // Errors before any pass.
            let e = one_shot_session(
                builder(config(16_000)),
                dyn_store.clone(),
                "missing",
                OneShot::batch(),
            )
            .await
            .unwrap_err();
            assert!(matches!(e, SessionOneShotError::Store(_)), "{e}");
            let e = one_shot_session(
                builder(config(10)),
                dyn_store.clone(),
                "s",
                OneShot::batch(),
            )
            .await
            .unwrap_err();
            assert!(matches!(e, SessionOneShotError::Config(_)), "{e}");
            assert!(e.to_string().contains("model.context_length"), "{e}");
            assert_eq!(store.generation("s").await.unwrap(), 1);
            crate::common::finish(store).await;
        }
    });
}

/// A pin set on the transcript lasts: the next flush writes it (a generation of its own), a
/// fresh load of the session holds it, and a pass that follows neither removes the pinned
/// message nor fails on the generation the pin wrote. A pin set through the store's session
/// controls is adopted by the next flush (one pin, seen from two sides); any other
/// store-side change is reported (stale generation, `store_in_sync` false) until a reload.
#[test]
fn transcript_pins_persist_and_store_pins_are_noticed() {
    rt().block_on(async {
        for store in stores("pins_persist").await {
            store.create_session("p").await.unwrap();
            let mut c = builder(config(32_000))
                .store(persistence(&store, "p"))
                .build()
                .unwrap();
            let mut t = c.transcript(tool_session(12, 40));
            assert!(!c.status().in_sync(&t));
            c.flush(&mut t).await.unwrap();
            assert!(c.status().in_sync(&t));
            let generation = c.status().store_generation.unwrap();

            // Pin an old tool output on the transcript: pending until the next flush.
            let pinned = t.messages().iter().position(Message::is_tool).unwrap();
            let text = t.messages()[pinned].to_wire_json();
            assert!(t.pin(pinned, true));
            assert!(!c.status().in_sync(&t));
            assert_eq!(c.flush(&mut t).await.unwrap(), 1);
            assert!(c.status().in_sync(&t));
            assert_eq!(c.status().store_generation, Some(generation + 1));
            assert_mirrored(&store, "p", &t, "after the pin's flush").await;
            let (_, again) = Persistence::load(store.clone().into_dyn(), "p")
                .await
                .unwrap();
            assert_eq!(
                again.iter().filter(|m| m.is_pinned()).count(),
                1,
                "a fresh load holds the pin"
            );

            // A forced pass commits against the pin's generation and keeps the message.
            let r = c
                .one_shot(&mut t, OneShot::batch())
                .await
                .into_batch()
                .unwrap();
            assert!(r.failure.is_none(), "{r:?}");
            assert!(
                t.messages()
                    .iter()
                    .any(|m| m.is_pinned() && m.to_wire_json() == text),
                "the pinned output survived the pass"
            );
            assert_mirrored(&store, "p", &t, "after the pass").await;

            // A pin through the store's session controls is the same pin: the next flush
            // adopts it (the store's row ids and generation), alongside a pin the transcript
            // set meanwhile, and the pass after it plans with both.
            let session = compaction_store::Session::new(&*store, "p");
            let last = t.len() - 1;
            let other = t.messages().iter().position(Message::is_user).unwrap();
            let pinned_last = t.messages()[last].to_wire_json();
            session.pin_at(last, true).await.unwrap();
            assert!(t.pin(other, true));
            assert_eq!(
                c.flush(&mut t).await.unwrap(),
                1,
                "the transcript's own pin"
            );
            assert!(t.messages()[last].is_pinned() && t.messages()[other].is_pinned());
            assert!(c.status().in_sync(&t));
            assert_eq!(
                c.status().store_generation,
                Some(session.generation().await.unwrap())
            );
            assert_mirrored(&store, "p", &t, "after adopting the store's pin").await;
            let r = c
                .one_shot(&mut t, OneShot::batch())
                .await
                .into_batch()
                .unwrap();
            assert!(r.failure.is_none(), "{r:?}");
            assert!(t.messages().last().unwrap().is_pinned());
            assert_mirrored(&store, "p", &t, "after the pass with both pins").await;

            // Any other store-side change (another writer's pass) is not adopted: the flush
            // says so, the transcript is known not to be the store's, and a pass names the
            // way out.
            let (rows, generation) = session.load_active_with_generation().await.unwrap();
            let edit = compaction_core::Edit::single(1..2, vec![]);
            let mut commit = compaction_store::Commit::from_edit(generation, &edit, &rows).unwrap();
            session.archive_and_compact(&mut commit).await.unwrap();
            match c.flush(&mut t).await {
                Err(compaction_store::StoreError::StaleGeneration { .. }) => {}
                other => panic!("a flush after a store-side undo: {other:?}"),
            }
            assert!(
                !c.status().in_sync(&t),
                "the store holds another transcript"
            );
            for i in 0..12 {
                let id = format!("late-{i}");
                let call = ToolCall::function(&id, "bash", r#"{"command":"make"}"#);
                t.push(Message::user(format!("late {i}")), c.status().counter);
                t.push(
                    Message::assistant_tool_calls("", vec![call]),
                    c.status().counter,
                );
                t.push(
                    Message::tool_result(&id, format!("{i} ").repeat(400)),
                    c.status().counter,
                );
                t.push(Message::assistant("ok"), c.status().counter);
            }
            let r = c
                .one_shot(&mut t, OneShot::batch())
                .await
                .into_batch()
                .unwrap();
            assert_eq!(r.failure_kind(), Some(FailureKind::StaleGeneration));
            let cause = r.failure.as_ref().unwrap().cause.clone().unwrap();
            assert!(cause.contains("`reload`"), "{cause}");
            assert!(!c.status().in_sync(&t));
            c.reload(&mut t).await.unwrap();
            assert!(
                t.messages()
                    .iter()
                    .any(|m| m.is_pinned() && m.to_wire_json() == pinned_last)
            );
            assert_eq!(c.flush(&mut t).await.unwrap(), 0);
            assert!(c.status().in_sync(&t));
            assert_mirrored(&store, "p", &t, "after the reload").await;
            crate::common::finish(store).await;
        }
    });
}
